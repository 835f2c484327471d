/* rt_fifo_rules: which directories and existing files the FIFO trigger may use.
 * Owns the refusals (symlink, foreign owner, group/world-writable directory, not a FIFO). */
#ifndef RT_FIFO_RULES_H
#define RT_FIFO_RULES_H

#include <stdbool.h>

/* What lstat(2) said of a path, reduced to what the rules look at. */
struct rt_file_facts {
	bool exists;
	bool is_symlink;
	bool is_dir;
	bool is_fifo;
	unsigned uid;
	unsigned mode; /* permission bits */
};

enum rt_fifo_verdict {
	RT_FIFO_CREATE,  /* nothing there: create it */
	RT_FIFO_REPLACE, /* our own stale FIFO (same pid after exec, or a dead process): recreate */
	RT_FIFO_REFUSE,
};

/* NULL when the directory may hold the FIFO, else the reason for refusing it. A missing
 * directory is acceptable: the caller creates it 0700 and asks again. */
const char *rt_fifo_dir_refusal(const struct rt_file_facts *dir, unsigned uid);

/* What to do with whatever exists at the FIFO's own path; *why is set when refusing. */
enum rt_fifo_verdict rt_fifo_node_verdict(const struct rt_file_facts *node, unsigned uid,
                                          const char **why);

#endif
