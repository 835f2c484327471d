/* rt_cmd_select: which carriers round, trim and status reach without a PID (roundtrim(1)).
 * Owns the options --all, --under, --cgroup, --match, --any-session and what they read. */
#ifndef RT_CMD_SELECT_H
#define RT_CMD_SELECT_H

#include <stdbool.h>
#include <stddef.h>

#include "rt_cmd_opt.h"
#include "rt_target.h"

struct rt_cmd_select {
	const char *first;      /* the first selection option given, NULL with none */
	bool all;               /* --all */
	const char *cgroup_arg; /* --cgroup as typed */
	struct rt_target_cgroup cgroup;
	struct rt_target_filter filter;
	struct rt_procfs_stat *procs; /* every process, from rt_cmd_select_begin */
	size_t nprocs;
	size_t other_session; /* carriers the session rule left out so far */
};

/* Takes the option when it is one of the selection's: true then, with *i past its value. */
bool rt_cmd_select_option(struct rt_cmd_select *s, const struct rt_cmd_opt *opt, int argc,
                          char **argv, int *i);
/* A usage error for --any-session without --all or --match. */
void rt_cmd_select_check(const struct rt_cmd_select *s);
/* Checks the values (a usage error for a bad one), reads the process table, the mounts for
 * --cgroup and the caller's session; with session_rule false (status) no session bounds it.
 * Exits 1 when the --under process does not exist. */
void rt_cmd_select_begin(struct rt_cmd_select *s, bool session_rule);
/* Whether the carrier pid, named program, is selected; counts those the session rule leaves
 * out. */
bool rt_cmd_select_takes(struct rt_cmd_select *s, int pid, const char *program);
/* The selection in words, after "carries libroundtrim.so with a FIFO". */
void rt_cmd_select_text(const struct rt_cmd_select *s, char *out, size_t size);
void rt_cmd_select_end(struct rt_cmd_select *s);

#endif
