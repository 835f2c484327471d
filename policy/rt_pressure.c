#include "rt_pressure.h"

#include "rt_procfs.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define RT_PRESSURE_V1_UNLIMITED (UINT64_C(1) << 62)

enum rt_pressure_source
rt_pressure_cgroup_dir(const char *proc_cgroup, const char *mountinfo, char *dir, size_t size)
{
	size_t mount_len;
	switch (rt_procfs_cgroup_dir(proc_cgroup, mountinfo, "memory", dir, size, &mount_len)) {
	case RT_PROCFS_CGROUP_V1:
		return RT_PRESSURE_CGROUP_V1;
	case RT_PROCFS_CGROUP_V2:
		return RT_PRESSURE_CGROUP_V2;
	case RT_PROCFS_CGROUP_NONE:
		break;
	}
	return RT_PRESSURE_NONE;
}

const char *
rt_pressure_used_file(enum rt_pressure_source source)
{
	switch (source) {
	case RT_PRESSURE_CGROUP_V2:
		return "memory.current";
	case RT_PRESSURE_CGROUP_V1:
		return "memory.usage_in_bytes";
	case RT_PRESSURE_NONE:
		break;
	}
	return NULL;
}

const char *
rt_pressure_limit_file(enum rt_pressure_source source)
{
	switch (source) {
	case RT_PRESSURE_CGROUP_V2:
		return "memory.max";
	case RT_PRESSURE_CGROUP_V1:
		return "memory.limit_in_bytes";
	case RT_PRESSURE_NONE:
		break;
	}
	return NULL;
}

bool
rt_pressure_read_value(const char *text, uint64_t *bytes, bool *limited)
{
	uint64_t value;
	int used = 0;
	if (!strncmp(text, "max", 3) && strspn(text + 3, "\n") == strlen(text + 3)) {
		*bytes = UINT64_MAX;
		*limited = false;
		return true;
	}
	if (sscanf(text, "%" SCNu64 "%n", &value, &used) != 1 || text[0] < '0' || text[0] > '9' ||
	    strspn(text + used, "\n") != strlen(text + used))
		return false;
	*bytes = value;
	*limited = value < RT_PRESSURE_V1_UNLIMITED;
	return true;
}

bool
rt_pressure_read_meminfo(const char *text, uint64_t *used, uint64_t *total)
{
	uint64_t t, avail;
	if (!rt_procfs_kib_field(text, "MemTotal", &t) ||
	    !rt_procfs_kib_field(text, "MemAvailable", &avail) || avail > t)
		return false;
	*total = t * 1024;
	*used = (t - avail) * 1024;
	return true;
}
