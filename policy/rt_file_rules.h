/* rt_file_rules: which directories, paths and descriptor numbers the library may use for the
 * files it makes (the FIFO, the status file beside it, the stats and log files). */
#ifndef RT_FILE_RULES_H
#define RT_FILE_RULES_H

#include <stdbool.h>
#include <stdint.h>

/* The worker thread's name (comm), and the keeper's (the task that holds the library's
 * descriptors where the worker cannot have a table of its own): the command finds the library's
 * descriptors in the listing of either's own descriptor table. */
#define RT_FILE_WORKER_THREAD "roundtrim"
#define RT_FILE_KEEPER_THREAD "roundtrim-fds"

/* What lstat(2) (fstat(2) for an open directory) said of a path, reduced to what the rules
 * look at. */
struct rt_file_facts {
	bool exists;
	bool is_symlink;
	bool is_dir;
	bool is_fifo;
	bool is_regular;
	unsigned uid;
	unsigned mode; /* permission bits */
};

enum rt_file_kind {
	RT_FILE_FIFO,   /* the trigger FIFO, in a 0700 directory of the user's own */
	RT_FILE_STATUS, /* the status file beside the FIFO */
	RT_FILE_OUTPUT, /* a stats or log file the user named */
};

enum rt_file_verdict {
	RT_FILE_CREATE,  /* nothing there: create it */
	RT_FILE_REPLACE, /* our own stale FIFO or status file: make it anew */
	RT_FILE_USE,     /* an output file that may be appended to */
	RT_FILE_REFUSE,
};

/* NULL when the directory may hold a file of this kind, else the reason for refusing it. A
 * missing FIFO directory is acceptable: the caller creates it 0700 and asks again. */
const char *rt_file_dir_refusal(enum rt_file_kind kind, const struct rt_file_facts *dir,
                                unsigned uid);

/* What to do with whatever exists at the path itself, in a directory the rule above accepted;
 * *why is set when refusing. Nothing is ever followed: a symbolic link is refused. */
enum rt_file_verdict rt_file_node_verdict(enum rt_file_kind kind, const struct rt_file_facts *dir,
                                          const struct rt_file_facts *node, unsigned uid,
                                          const char **why);

/* Whether a write of len bytes at offset stays within RLIMIT_FSIZE's limit (UINT64_MAX: none).
 * A record that would not is dropped unwritten: past the limit the kernel writes part of it, or
 * raises SIGXFSZ, which ends a program that did not ignore it (setrlimit(2)). */
bool rt_file_write_fits(uint64_t offset, uint64_t len, uint64_t limit);

/* The lowest number the library's descriptors may take, for a soft RLIMIT_NOFILE of
 * nofile_limit (roundtrim(7), DESCRIPTORS): far above the numbers programs use and juggle,
 * below the limit, and below 1024. */
int rt_file_fd_floor(uint64_t nofile_limit);

/* Whose descriptor table holds the library's files (roundtrim(7), DESCRIPTORS). */
enum rt_file_table {
	RT_FILE_TABLE_NONE,    /* none: the library stays inactive */
	RT_FILE_TABLE_PRIVATE, /* the worker's own (unshare CLONE_FILES) */
	RT_FILE_TABLE_KEEPER,  /* the keeper's, a task of the library's made without CLONE_FILES */
	RT_FILE_TABLE_SHARED,  /* the program's, with checks and races (ROUNDTRIM_SHARED_TABLE) */
};
/* The first that can be had: the worker's own, else the keeper's, else the program's where the
 * user accepts its races, else none. */
enum rt_file_table rt_file_table_choose(bool unshared, bool keeper, bool shared_accepted);
/* The tasks the library runs with it: the worker, and the keeper. */
unsigned rt_file_table_tasks(enum rt_file_table table);
/* Its word in the status file and the stats records: "private", "keeper", "shared", "none". */
const char *rt_file_table_word(enum rt_file_table table);

#endif
