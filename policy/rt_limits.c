#include "rt_limits.h"

#include "rt_pressure.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* capability.h's numbers: the two that lift RLIMIT_NPROC. */
#define RT_LIMITS_CAP_SYS_ADMIN 21
#define RT_LIMITS_CAP_SYS_RESOURCE 24

uint64_t
rt_limits_room(uint64_t max, uint64_t current)
{
	if (max == RT_LIMITS_NONE)
		return RT_LIMITS_NONE;
	return current < max ? max - current : 0;
}

bool
rt_limits_fits(uint64_t room, unsigned tasks)
{
	return room == RT_LIMITS_NONE || room >= (uint64_t)tasks + RT_LIMITS_PROGRAM_RESERVE;
}

bool
rt_limits_read_count(const char *text, uint64_t *count)
{
	/* The same text as a memory cgroup's limit: a number or "max". */
	bool limited;
	if (!rt_pressure_read_value(text, count, &limited))
		return false;
	if (!limited)
		*count = RT_LIMITS_NONE;
	return true;
}

bool
rt_limits_cgroup_parent(char *dir, size_t top)
{
	size_t len = strlen(dir);
	if (len <= top)
		return false;
	char *slash = strrchr(dir, '/');
	if (!slash || (size_t)(slash - dir) < top)
		return false;
	*slash = '\0';
	return true;
}

bool
rt_limits_nproc_binds(const struct rt_limits_user *u)
{
	uint64_t lifting =
	    (UINT64_C(1) << RT_LIMITS_CAP_SYS_ADMIN) | (UINT64_C(1) << RT_LIMITS_CAP_SYS_RESOURCE);
	if (u->nproc == RT_LIMITS_NONE || u->real_root)
		return false;
	/* Capabilities count only in the initial namespace (capable() asks there). */
	return !(u->initial_ns && (u->cap_effective & lifting));
}

bool
rt_limits_nproc_fits_anyway(uint64_t nproc, uint64_t machine_tasks, unsigned tasks)
{
	return rt_limits_fits(rt_limits_room(nproc, machine_tasks), tasks);
}

enum rt_limits_verdict
rt_limits_decide(uint64_t cgroup_room, uint64_t nproc_room, unsigned tasks)
{
	if (!rt_limits_fits(cgroup_room, tasks))
		return RT_LIMITS_CGROUP_FULL;
	if (!rt_limits_fits(nproc_room, tasks))
		return RT_LIMITS_NPROC_FULL;
	return RT_LIMITS_START;
}

bool
rt_limits_loadavg_tasks(const char *text, uint64_t *tasks)
{
	/* "0.42 0.64 0.54 2/611 23049" */
	double a, b, c;
	uint64_t running;
	return sscanf(text, "%lf %lf %lf %" SCNu64 "/%" SCNu64, &a, &b, &c, &running, tasks) == 5;
}

/* The text after "Key:" at a line's start, or NULL. */
static const char *
rt_limits_status_field(const char *text, const char *key)
{
	size_t klen = strlen(key);
	for (const char *line = text; line && *line;) {
		if (!strncmp(line, key, klen) && line[klen] == ':')
			return line + klen + 1;
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	return NULL;
}

bool
rt_limits_status_tasks(const char *text, unsigned *real_uid, uint64_t *threads)
{
	const char *uid = rt_limits_status_field(text, "Uid");
	const char *n = rt_limits_status_field(text, "Threads");
	return uid && n && sscanf(uid, " %u", real_uid) == 1 &&
	       sscanf(n, " %" SCNu64, threads) == 1;
}

bool
rt_limits_uid_map(const char *text, unsigned uid, uint64_t *outside, bool *initial_ns)
{
	/* user_namespaces(7): "INSIDE OUTSIDE COUNT" per line; the initial namespace maps every
	 * uid to itself in one line. */
	bool found = false;
	unsigned lines = 0;
	*initial_ns = false;
	for (const char *line = text; line && *line; lines++) {
		uint64_t inside, out, count;
		if (sscanf(line, " %" SCNu64 " %" SCNu64 " %" SCNu64, &inside, &out, &count) == 3) {
			if (inside == 0 && out == 0 && count == UINT32_MAX)
				*initial_ns = true;
			if (!found && uid >= inside && uid - inside < count) {
				*outside = out + (uid - inside);
				found = true;
			}
		}
		line = strchr(line, '\n');
		line = line && line[1] ? line + 1 : NULL;
	}
	*initial_ns = *initial_ns && lines == 1;
	return found;
}
