/* rt_target: the processes and files that the command's round, trim and status act on.
 * Owns the FIFO and status file that answer, --match, --under, --cgroup, the session rule. */
#ifndef RT_TARGET_H
#define RT_TARGET_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "rt_procfs.h"
#include "rt_proto.h"
#include "rt_report.h"

/* Whether a descriptor's link (readlink of /proc/PID/fd/N) can name the library's FIFO: an
 * absolute path that still names the file (no " (deleted)"). Writes the path of the status
 * file that answers for it (rt_path_status_for_fifo). The caller checks that it is a FIFO. */
bool rt_target_fifo_status(const char *link, char *status, size_t size);
/* Whether a thread's comm (a line of /proc/PID/task/TID/comm) names a task of the library's
 * that may hold its descriptors in a table of its own: the worker, or the keeper. */
bool rt_target_is_library_comm(const char *comm);
/* Whether the status file found beside a FIFO that pid holds open is pid's own: a FIFO another
 * process made, or a status file left by a process that is gone, is not. */
bool rt_target_status_is_of(const struct rt_status_record *st, int pid);
/* Whether --match globs (NULL when not given) select a process named program (its status
 * file's): fnmatch(3), as ROUNDTRIM_MATCH. */
bool rt_target_selected(const char *program, const char *globs);
/* Whether a process told `kind` (RT_PROTO_ROUND or RT_PROTO_TRIM) has handled it: its rounds
 * (round) or actions (trim) moved past what they were before the line was written. *acted
 * tells whether an action ran meanwhile. */
bool rt_target_answered(enum rt_proto_kind kind, const struct rt_status_record *before,
                        const struct rt_status_record *now, bool *acted);

/* ---- Processes: /proc/PID/stat, read by rt_procfs_stat. */

/* Whether the process still runs: not a zombie, not dead. */
bool rt_target_alive(const struct rt_procfs_stat *p);
/* The entry of pid in procs (n of them, sorted by pid), or NULL. */
const struct rt_procfs_stat *rt_target_lookup(const struct rt_procfs_stat *procs, size_t n,
                                              int pid);
/* Whether pid is root or descends from it through the parents in procs (n of them, sorted by
 * pid): false when the chain leaves the table (a process gone, or outside the namespace),
 * reaches pid 0, or loops. A process whose parent exited has been adopted by a reaper and no
 * longer descends from that parent's ancestors. */
bool rt_target_descends(const struct rt_procfs_stat *procs, size_t n, int pid, int root);

/* ---- Control groups: /proc/self/mountinfo and /proc/PID/cgroup. */

#define RT_TARGET_CONTROLLERS_MAX 256

/* A cgroup hierarchy: a v1 hierarchy by its controllers (and "name=X"), or the v2 one. */
struct rt_target_hierarchy {
	bool v2;
	char controllers[RT_TARGET_CONTROLLERS_MAX]; /* v1: comma-separated; "" for v2 */
};

/* A mount of a cgroup filesystem. */
struct rt_target_mount {
	char point[PATH_MAX]; /* where it is mounted (octal escapes undone) */
	char root[PATH_MAX];  /* the cgroup shown at the mount point */
	struct rt_target_hierarchy hierarchy;
};

/* Reads a line of /proc/self/mountinfo; false when it is not a cgroup or cgroup2 mount. */
bool rt_target_parse_mount(const char *line, struct rt_target_mount *out);

/* What --cgroup selects: the cgroup at path and those below it, in one hierarchy, or in any. */
struct rt_target_cgroup {
	char path[PATH_MAX]; /* as /proc/PID/cgroup shows it: "/" or "/a/b", no trailing '/' */
	bool any_hierarchy;
	struct rt_target_hierarchy hierarchy; /* when not any_hierarchy */
};

/* --cgroup's value: a directory where a cgroup filesystem is mounted (under one of mounts, the
 * longest mount point that holds it: that hierarchy, the mount's root joined with the rest), or
 * else a cgroup path as /proc/PID/cgroup shows it ("/system.slice/nvflare.service"), in any
 * hierarchy. NULL when understood, else why not, to follow "--cgroup ARG: ". */
const char *rt_target_cgroup_parse(const char *arg, const struct rt_target_mount *mounts,
                                   size_t nmounts, struct rt_target_cgroup *out);
/* Whether a process whose /proc/PID/cgroup holds text ("ID:CONTROLLERS:PATH" lines) is in cg or
 * in a cgroup below it. */
bool rt_target_in_cgroup(const char *text, const struct rt_target_cgroup *cg);

/* ---- The selection: which of the caller's processes that carry the library are targets. */

struct rt_target_filter {
	int under;                             /* --under PID, 0 when not given */
	const struct rt_target_cgroup *cgroup; /* --cgroup, NULL when not given */
	const char *globs;                     /* --match, NULL when not given */
	bool any_session;                      /* --any-session */
	int session;                           /* the caller's session: getsid(0) */
};

enum rt_target_verdict {
	RT_TARGET_IN,
	RT_TARGET_NOT_UNDER,
	RT_TARGET_NOT_IN_CGROUP,
	RT_TARGET_NOT_MATCHED,
	RT_TARGET_OTHER_SESSION, /* would be in, but is outside the caller's session */
};

/* Whether the session rule holds: round and trim reach only the caller's session unless
 * --under or --cgroup names the job, or --any-session lifts it. */
bool rt_target_session_bound(const struct rt_target_filter *f);
/* Whether --cgroup needs the process's /proc/PID/cgroup. */
bool rt_target_needs_cgroup(const struct rt_target_filter *f);
/* The verdict on process p (its entry in procs, which holds every process, sorted by pid),
 * named program (the status file's, or /proc/PID/comm for one without a FIFO), with cgroup the
 * text of its /proc/PID/cgroup (NULL: unreadable, which no --cgroup selects). The filters
 * combine: a target passes each one given. */
enum rt_target_verdict rt_target_verdict(const struct rt_target_filter *f,
                                         const struct rt_procfs_stat *procs, size_t n,
                                         const struct rt_procfs_stat *p, const char *program,
                                         const char *cgroup);
/* The filters in words, after "carries libroundtrim.so with a FIFO": " under pid 42",
 * " in cgroup /a/b", " matching 'python*'", " in this session"; "" with none. */
void rt_target_filter_text(const struct rt_target_filter *f, char *out, size_t size);

#endif
