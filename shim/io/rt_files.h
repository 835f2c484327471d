/* rt_files: every file and descriptor the library keeps: the FIFO and the status file beside it,
 * /proc's statm, the stats, sites and log files; made at start-up, set aside around exec,
 * removed at exit. */
#ifndef RT_FILES_H
#define RT_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* At start-up, in the thread that starts the library (the constructor, or the thread of a fork
 * child that starts its worker): opens everything the configuration asks for. Every descriptor
 * is lifted above the floor before it returns (rt_fd); afterwards nothing is ever opened. A
 * feature that cannot be had says so in one line and stays off. */
void rt_files_open(void);
/* Reads a small file (/proc, a cgroup's) whole into buf, NUL-terminated; false when it cannot
 * or it is empty. At start-up only: the descriptor is this thread's for an instant. */
bool rt_files_slurp(const char *path, char *buf, size_t size);
/* In a fork child, inside fork: closes the parent's descriptors and forgets its files. */
void rt_files_forget_parent(void);
/* The numbers of the descriptors kept, for the worker to keep them in its own table. */
size_t rt_files_numbers(int *out, size_t size);
/* In the starting thread, once the worker or the keeper has its own table with copies of them:
 * closes the starter's (the program's) copies. */
void rt_files_went_private(void);
/* In the starting thread, where the library does not start after all: removes what it made and
 * closes every descriptor it opened. */
void rt_files_close(void);
/* Whether the calling thread (the worker) is the last of the process's that runs, the library's
 * `held` tasks (rt_tasks_held) left out. */
bool rt_files_alone(unsigned held);

/* The FIFO's descriptor for the worker's wait, -1 when there is none (or it was lost). */
int rt_files_fifo_fd(void);
/* Reads what the FIFO holds (non-blocking): >0 bytes, 0 when empty, -1 when the FIFO is gone. */
ssize_t rt_files_fifo_read(char *buf, size_t size);
/* Wakes a worker that waits on the FIFO: an empty line, which the protocol ignores.
 * Async-signal-safe; from any thread. */
void rt_files_fifo_poke(void);
const char *rt_files_fifo_path(void); /* "" when none */
bool rt_files_have_status(void);

/* Replaces the status file's content in place (seq fields let readers catch a write half done);
 * whole, or not at all. */
void rt_files_write_status(const char *json, size_t len);
/* Replaces the Prometheus file's content in place (its last line, "# end", tells a reader it
 * has all of it); a per-process one gets its name with its first content. */
void rt_files_write_prom(const char *text, size_t len);
/* Records the files could not take whole (a full volume, a file-size limit), dropped: each file
 * holds whole records only, and the first drop of each is said once on stderr. */
uint64_t rt_files_lost_records(void);
/* Appends one line to the stats file, or to the log (stderr when no log file). */
void rt_files_stats_line(const char *line, size_t len);
void rt_files_log_line(const char *line, size_t len);
bool rt_files_have_stats(void);
const char *rt_files_stats_path(void); /* "" when none */

/* RSS from /proc/self/statm, in KiB; 0 when unreadable. */
uint64_t rt_files_rss_kib(void);
/* RSS split from /proc/self/smaps_rollup; false when unreadable. */
struct rt_procfs_rss;
bool rt_files_rss_split(struct rt_procfs_rss *out);
/* Memory in use and its limit, in bytes: the memory cgroup's when it has a limit, else the
 * machine's (ROUNDTRIM_PRESSURE); false when neither can be read. */
bool rt_files_memory(uint64_t *used, uint64_t *limit);
/* One line of the sites file (ROUNDTRIM_SITES), beside the stats file; true once it is there. */
bool rt_files_sites_line(const char *line, size_t len);
bool rt_files_have_sites(void);
/* One line of the detector's readings (ROUNDTRIM_TRACE). */
void rt_files_trace_line(const char *line, size_t len);
bool rt_files_have_trace(void);

/* Around an exec of this process: the FIFO and status file are moved aside (the next program
 * would not know them) and moved back if the exec returns. Renames only: no descriptor. */
bool rt_files_before_exec(void);
void rt_files_after_failed_exec(bool moved);
/* On the way out (destructor, _exit): removes the FIFO and status file this process made. */
void rt_files_remove(void);

#endif
