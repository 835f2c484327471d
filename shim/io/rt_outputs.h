/* rt_outputs: the files the library writes for people and tools: stats, log, Prometheus, trace
 * and sites; opened at start-up, named with their first record, removed at exit when unused. */
#ifndef RT_OUTPUTS_H
#define RT_OUTPUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct rt_config;
struct rt_fd;

/* At start-up, in the thread that starts the library: opens each output whose template the
 * configuration sets; one that cannot be had says so in one line and stays off. */
void rt_outputs_open(const struct rt_config *cfg);
/* The descriptors went to a table of the library's own, out of the program's reach, or are
 * closed: the unnamed files need no other hold, and their mappings go. */
void rt_outputs_drop_holds(void);

/* Appends one line to the stats file, or to the log (stderr when no log file). */
void rt_outputs_stats_line(const char *line, size_t len);
void rt_outputs_log_line(const char *line, size_t len);
/* Whether stats (trace) records are made: the file is open, or was lost after start-up and
 * counts each record meant for it (status lost_records). */
bool rt_outputs_have_stats(void);
const char *rt_outputs_stats_path(void); /* "" when none */
/* Replaces the Prometheus file's content in place (its last line, "# end", tells a reader it
 * has all of it); a per-process one gets its name with its first content. */
void rt_outputs_write_prom(const char *text, size_t len);
/* One line of the sites file (ROUNDTRIM_SITES), beside the stats file; true once it is there. */
bool rt_outputs_sites_line(const char *line, size_t len);
bool rt_outputs_have_sites(void);
/* One line of the detector's readings (ROUNDTRIM_TRACE). */
void rt_outputs_trace_line(const char *line, size_t len);
bool rt_outputs_have_trace(void);

/* Whether a per-process output still waits for its name (read by any thread). */
bool rt_outputs_unnamed(void);
/* In the worker, before a credential change of the program's, while the library still holds
 * what it held: every output still unnamed becomes the file of the user (uid) and group (gid)
 * that the change installs, -1 for unchanged, so that the library, which follows the program,
 * may still link it at its first record (fs.protected_hardlinks lets a user link a file it
 * owns). Where it cannot, the file stays as it is. */
void rt_outputs_give_to(uid_t uid, gid_t gid);

/* Its descriptors, to be listed, closed and forgotten with the library's others. */
struct rt_fd *const *rt_outputs_fds(size_t *n);
/* On the way out, in the process that opened them: removes a per-process file made empty at
 * start-up and never written, and a per-process Prometheus file. */
void rt_outputs_remove(void);
/* In a fork child, inside fork: closes the parent's descriptors (those a private table held
 * are forgotten before) and forgets its files. */
void rt_outputs_forget_parent(void);

#endif
