/* rt_procread: the library's readings of the process and its memory: RSS (/proc/self/statm,
 * smaps_rollup), its threads (/proc/self/stat), and the memory cgroup's or the machine's use. */
#ifndef RT_PROCREAD_H
#define RT_PROCREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rt_fd;
struct rt_procfs_rss;

/* At start-up, in the thread that starts the library: opens what the RSS and thread readings need.
 */
void rt_procread_open(void);
/* At start-up, where ROUNDTRIM_PRESSURE asks for it: opens the memory's use and limit. */
void rt_procread_open_pressure(void);
/* Reads a small file (/proc, a cgroup's) whole into buf, NUL-terminated; false when it cannot
 * or it is empty. At start-up only: the descriptor is this thread's for an instant. */
bool rt_procread_slurp(const char *path, char *buf, size_t size);

/* RSS from /proc/self/statm, in KiB; 0 when unreadable. */
uint64_t rt_procread_rss_kib(void);
/* RSS split from /proc/self/smaps_rollup; false when unreadable. */
bool rt_procread_rss_split(struct rt_procfs_rss *out);
/* Memory in use and its limit, in bytes: the memory cgroup's when it has a limit, else the
 * machine's (ROUNDTRIM_PRESSURE); false when neither can be read. */
bool rt_procread_memory(uint64_t *used, uint64_t *limit);
/* Whether the calling thread (the worker) is the last of the process's that runs, the library's
 * `held` tasks (rt_tasks_held) left out. */
bool rt_procread_alone(unsigned held);

/* Its descriptors, to be listed, closed and forgotten with the library's others. */
struct rt_fd *const *rt_procread_fds(size_t *n);
/* In a fork child, inside fork: closes the parent's descriptors (those a private table held
 * are forgotten before) and forgets what was read from them. */
void rt_procread_forget_parent(void);

#endif
