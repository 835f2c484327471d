/* rt_limits: whether the library may take its tasks (threads) in a process under a task limit,
 * a pids cgroup (v2 or v1, the process's cgroup and every ancestor) or RLIMIT_NPROC, and how the
 * texts that tell the room are read. */
#ifndef RT_LIMITS_H
#define RT_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Room under no limit at all. */
#define RT_LIMITS_NONE UINT64_MAX
/* The tasks the program must still be able to start once the library has taken its own: at a
 * limit that would leave it less than one thread, the library does not start. */
#define RT_LIMITS_PROGRAM_RESERVE 1

/* The room a limit leaves: max - current, 0 at or over it; RT_LIMITS_NONE for no limit. */
uint64_t rt_limits_room(uint64_t max, uint64_t current);
/* Whether `room` holds the library's `tasks` and the program's reserve. */
bool rt_limits_fits(uint64_t room, unsigned tasks);

/* A pids cgroup file (pids.max, pids.current): a count, or "max" (RT_LIMITS_NONE). */
bool rt_limits_read_count(const char *text, uint64_t *count);
/* A cgroup's parent directory, in place, never above the mount point (dir's first top bytes):
 * false, dir unchanged, once dir is the mount point. */
bool rt_limits_cgroup_parent(char *dir, size_t top);

/* RLIMIT_NPROC binds where the process's real user is not the initial namespace's root and it
 * holds neither CAP_SYS_RESOURCE nor CAP_SYS_ADMIN there (copy_process, kernel/fork.c). */
struct rt_limits_user {
	uint64_t nproc;         /* the soft limit; RT_LIMITS_NONE for RLIM_INFINITY */
	bool real_root;         /* the real uid maps to uid 0 of the initial user namespace */
	bool initial_ns;        /* the process's user namespace is the initial one */
	uint64_t cap_effective; /* the calling thread's effective set, bit n for capability n */
};
bool rt_limits_nproc_binds(const struct rt_limits_user *u);
/* Whether the tasks of the whole machine (/proc/loadavg), an upper bound of the user's, leave
 * room enough: then the user's own need not be counted. */
bool rt_limits_nproc_fits_anyway(uint64_t nproc, uint64_t machine_tasks, unsigned tasks);

/* The decision: start, or the limit that leaves too little room. */
enum rt_limits_verdict {
	RT_LIMITS_START,
	RT_LIMITS_CGROUP_FULL,
	RT_LIMITS_NPROC_FULL,
};
enum rt_limits_verdict rt_limits_decide(uint64_t cgroup_room, uint64_t nproc_room, unsigned tasks);

/* /proc/loadavg: its fourth field, RUNNING/TOTAL: the machine's tasks. */
bool rt_limits_loadavg_tasks(const char *text, uint64_t *tasks);
/* /proc/PID/status: the real uid (first of "Uid:") and "Threads:". */
bool rt_limits_status_tasks(const char *text, unsigned *real_uid, uint64_t *threads);
/* /proc/self/uid_map: what uid is outside the namespace (*outside), and whether the map is the
 * initial namespace's identity over every uid. False when no line maps uid. */
bool rt_limits_uid_map(const char *text, unsigned uid, uint64_t *outside, bool *initial_ns);

#endif
