/* rt_pressure: where the memory in use and its limit are read (the cgroup's files, v2 or v1, or
 * the machine's /proc/meminfo) and how their text is read. */
#ifndef RT_PRESSURE_H
#define RT_PRESSURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum rt_pressure_source {
	RT_PRESSURE_NONE,
	RT_PRESSURE_CGROUP_V2, /* DIR/memory.current against DIR/memory.max */
	RT_PRESSURE_CGROUP_V1, /* DIR/memory.usage_in_bytes against DIR/memory.limit_in_bytes */
};

/* From /proc/self/cgroup and /proc/self/mountinfo: the directory of this process's memory
 * cgroup (v1's memory controller when it has one, else v2's unified hierarchy) as it is
 * mounted here, into dir. RT_PRESSURE_NONE when neither can be found. */
enum rt_pressure_source rt_pressure_cgroup_dir(const char *proc_cgroup, const char *mountinfo,
                                               char *dir, size_t size);
/* The names of the two files in that directory. */
const char *rt_pressure_used_file(enum rt_pressure_source source);
const char *rt_pressure_limit_file(enum rt_pressure_source source);

/* A cgroup file's value: a number of bytes, or "max" (v2). *limited is false for "max" and for
 * v1's "no limit" (a value at or above 2^62, the page-rounded LONG_MAX). */
bool rt_pressure_read_value(const char *text, uint64_t *bytes, bool *limited);
/* /proc/meminfo: memory in use (MemTotal - MemAvailable) and MemTotal, in bytes. */
bool rt_pressure_read_meminfo(const char *text, uint64_t *used, uint64_t *total);

#endif
