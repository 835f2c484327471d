/* rt_procfs: how the text of /proc is read: statm for RSS, smaps_rollup for RSS split into
 * anonymous and file-backed with LazyFree apart, stat for a process's parent, session and threads,
 * cgroup and mountinfo for where its control groups are. */
#ifndef RT_PROCFS_H
#define RT_PROCFS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* /proc/self/statm: resident pages times the page size, in KiB. */
bool rt_procfs_statm_rss_kib(const char *text, uint64_t page_size, uint64_t *rss_kib);

/* The length of a /proc link's text (/proc/PID/maps, /proc/PID/fd/N) of len bytes without the
 * " (deleted)" the kernel appends when the file was removed; *deleted says whether it did. */
size_t rt_procfs_link_len(const char *text, size_t len, bool *deleted);

/* The N of the line "Key:   N kB" at a line's start in text (smaps_rollup, meminfo, status). */
bool rt_procfs_kib_field(const char *text, const char *key, uint64_t *kib);

/* /proc/self/status's "Seccomp:" line: whether a seccomp filter (or strict mode) holds the
 * process, which then may be killed by a system call it makes; UNKNOWN without that line (a
 * kernel without seccomp, a /proc that hides it). */
enum rt_procfs_seccomp {
	RT_PROCFS_SECCOMP_NONE,
	RT_PROCFS_SECCOMP_FILTERED,
	RT_PROCFS_SECCOMP_UNKNOWN,
};
enum rt_procfs_seccomp rt_procfs_seccomp(const char *status);

/* /proc/self/smaps_rollup, in KiB. anon excludes lazyfree (pages the allocator gave back with
 * MADV_FREE, still counted resident until the kernel reclaims them); file is Rss less
 * Anonymous (file-backed and shared memory). */
struct rt_procfs_rss {
	uint64_t rss_kib;
	uint64_t anon_kib;
	uint64_t file_kib;
	uint64_t lazyfree_kib;
};
bool rt_procfs_smaps_rollup(const char *text, struct rt_procfs_rss *out);

/* /proc/PID/stat: "PID (NAME) STATE PPID PGRP SESSION ..." (NAME may hold anything, the last
 * ')' ends it); false when the text is not such a line. threads (field 20) is 0 when the line
 * stops before it. */
struct rt_procfs_stat {
	int pid;
	int ppid;
	int sid; /* its session (setsid(2)): the session leader's pid */
	char state;
	uint64_t threads;
};
bool rt_procfs_stat(const char *text, struct rt_procfs_stat *out);
/* Whether the library's tasks (library_tasks of them: the worker, and its keeper where one runs)
 * are all that runs of the process whose stat the worker reads: they alone, or beside a
 * thread-group leader that has exited (its state 'Z': the main thread called pthread_exit and
 * stays a zombie until the group ends). */
bool rt_procfs_stat_alone(const struct rt_procfs_stat *st, unsigned library_tasks);
/* Whether a program thread that is exiting is the program's last, from the threads the kernel
 * counts (st_nlink of /proc/self/task less 2): itself, the library's tasks (library_tasks), and
 * the main thread when it ended before this one (a zombie leader stays counted until the group
 * ends). */
bool rt_procfs_last_thread(uint64_t threads, unsigned library_tasks, bool self_is_main,
                           bool main_gone);

/* A line of /proc/PID/cgroup, "ID:CONTROLLERS:PATH": the controllers and the path as spans of
 * the text; v2 for the unified hierarchy's line "0::PATH". */
struct rt_procfs_cgroup {
	const char *controllers;
	size_t controllers_len;
	const char *path;
	size_t path_len;
	bool v2;
};
/* The next such line from *at, which moves past it; false at the end. Other lines are skipped. */
bool rt_procfs_cgroup_next(const char **at, struct rt_procfs_cgroup *out);
/* Whether a comma-separated list of len bytes holds name. */
bool rt_procfs_list_has(const char *list, size_t len, const char *name);

/* A line of /proc/PID/mountinfo (proc(5)), octal escapes (\040) undone; false when it is not
 * one or a field does not fit. */
struct rt_procfs_mount {
	char root[PATH_MAX];  /* the part of the filesystem shown at the mount point */
	char point[PATH_MAX]; /* where it is mounted */
	char fstype[32];
	char super[512]; /* the super options ("rw,memory" for a cgroup v1 hierarchy) */
};
bool rt_procfs_mount(const char *line, struct rt_procfs_mount *out);

/* From /proc/PID/cgroup and /proc/PID/mountinfo: the directory of the process's cgroup for a
 * controller ("memory", "pids") as it is mounted here, into dir: v1's hierarchy of that
 * controller when one is mounted, else v2's unified one. *mount_len is the length of the mount
 * point, the top of dir: the ancestors the mount shows end there. */
enum rt_procfs_cgroup_version {
	RT_PROCFS_CGROUP_NONE,
	RT_PROCFS_CGROUP_V1,
	RT_PROCFS_CGROUP_V2,
};
enum rt_procfs_cgroup_version rt_procfs_cgroup_dir(const char *proc_cgroup, const char *mountinfo,
                                                   const char *controller, char *dir, size_t size,
                                                   size_t *mount_len);

#endif
