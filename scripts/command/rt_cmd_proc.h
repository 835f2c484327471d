/* rt_cmd_proc: the user's processes that carry the library, as /proc shows them.
 * Owns reading /proc (owner, maps, descriptors, name, stat, cgroup, mounts) and the reasons a
 * pid is refused. */
#ifndef RT_CMD_PROC_H
#define RT_CMD_PROC_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_cmd_status_file.h"
#include "rt_target.h"

enum rt_cmd_proc_result {
	RT_CMD_PROC_TARGET,     /* carries the library, its FIFO open, its status file read */
	RT_CMD_PROC_GONE,       /* no such process */
	RT_CMD_PROC_OTHER_USER, /* not the caller's */
	RT_CMD_PROC_NO_LIBRARY, /* does not carry the library */
	RT_CMD_PROC_NO_FIFO,    /* carries it, inactive or without a FIFO */
};

struct rt_cmd_target {
	int pid;
	char fifo[PATH_MAX];
	char status_path[PATH_MAX];
	struct rt_cmd_status_file status;
};

/* Looks at pid; a target is filled in, anything else is worded in why. */
enum rt_cmd_proc_result rt_cmd_proc_target(int pid, struct rt_cmd_target *t, char *why,
                                           size_t why_size);
/* The caller's processes that carry the library, this one aside, by ascending pid; *n of them.
 * Free the array. */
int *rt_cmd_proc_carriers(size_t *n);
/* The process's name (/proc/PID/comm), "?" when it cannot be read. */
void rt_cmd_proc_name(int pid, char *out, size_t size);
/* The process's RSS now (/proc/PID/statm), in KiB; false when it is gone. */
bool rt_cmd_proc_rss_kib(int pid, uint64_t *kib);
/* Whether the process is a fork child of its parent that has not exec'd: its status record says
 * fork_of, and that process is still its parent (policy/rt_child). */
bool rt_cmd_proc_is_fork_child(int pid, int fork_of);
/* Whether a thread of the library's runs in the process: its library has started, with or
 * without a FIFO. */
bool rt_cmd_proc_has_library_thread(int pid);
/* Whether the process still runs (not gone, not a zombie). */
bool rt_cmd_proc_alive(int pid);
/* The process's /proc/PID/stat fields; false when it is gone. */
bool rt_cmd_proc_stat(int pid, struct rt_procfs_stat *out);
/* Every process /proc shows, whoever owns it, sorted by pid; *n of them. Free the array. */
struct rt_procfs_stat *rt_cmd_proc_table(size_t *n);
/* The text of /proc/PID/cgroup into out (NUL-terminated); false when it cannot be read. */
bool rt_cmd_proc_cgroup(int pid, char *out, size_t size);
/* The cgroup filesystems mounted here (/proc/self/mountinfo); *n of them. Free the array. */
struct rt_target_mount *rt_cmd_proc_cgroup_mounts(size_t *n);

#endif
