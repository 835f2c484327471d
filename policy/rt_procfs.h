/* rt_procfs: what the library reads of /proc about itself, and how its text is read: statm for
 * RSS, smaps_rollup for RSS split into anonymous and file-backed, with LazyFree apart. */
#ifndef RT_PROCFS_H
#define RT_PROCFS_H

#include <stdbool.h>
#include <stdint.h>

/* /proc/self/statm: resident pages times the page size, in KiB. */
bool rt_procfs_statm_rss_kib(const char *text, uint64_t page_size, uint64_t *rss_kib);

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

/* /proc/self/stat: the number of threads (field 20; the command name before it may hold blanks
 * and parentheses, so fields count from the last ')'). */
bool rt_procfs_stat_threads(const char *text, uint64_t *threads);
/* /proc/self/stat: whether the worker is the last thread that runs: the only one, or one of
 * two beside a thread-group leader that has exited (its state 'Z': the main thread called
 * pthread_exit and stays a zombie until the group ends). */
bool rt_procfs_stat_alone(const char *text);

#endif
