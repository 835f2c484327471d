#include "rt_pressure.h"

#include "rt_procfs.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define RT_PRESSURE_V1_UNLIMITED (UINT64_C(1) << 62)

/* The cgroup path of the /proc/self/cgroup line whose controllers include want (v2: want ""
 * names the unified hierarchy's line), into out. */
static bool
rt_pressure_cgroup_path(const char *proc_cgroup, const char *want, char *out, size_t size)
{
	struct rt_procfs_cgroup line;
	for (const char *at = proc_cgroup; rt_procfs_cgroup_next(&at, &line);) {
		bool match = *want
		                 ? rt_procfs_list_has(line.controllers, line.controllers_len, want)
		                 : line.v2;
		if (match && line.path_len < size) {
			memcpy(out, line.path, line.path_len);
			out[line.path_len] = '\0';
			return true;
		}
	}
	return false;
}

/* From mountinfo: the mount point and root of a cgroup mount (fstype "cgroup2", or "cgroup"
 * whose super options name the controller). */
static bool
rt_pressure_mount(const char *mountinfo, const char *fstype, const char *controller, char *root,
                  char *point, size_t size)
{
	struct rt_procfs_mount m;
	for (const char *at = mountinfo; at && *at;) {
		const char *end = strchr(at, '\n');
		bool found =
		    rt_procfs_mount(at, &m) && !strcmp(m.fstype, fstype) &&
		    (!controller || rt_procfs_list_has(m.super, strlen(m.super), controller)) &&
		    strlen(m.root) < size && strlen(m.point) < size;
		at = end ? end + 1 : NULL;
		if (found) {
			strcpy(root, m.root);
			strcpy(point, m.point);
			return true;
		}
	}
	return false;
}

/* point + (path less root): the cgroup's directory as this mount shows it. */
static bool
rt_pressure_join(const char *root, const char *point, const char *path, char *out, size_t size)
{
	size_t rlen = strcmp(root, "/") ? strlen(root) : 0;
	if (strncmp(path, root, rlen) || (path[rlen] && path[rlen] != '/'))
		return false;
	int n = snprintf(out, size, "%s%s", point, path + rlen);
	/* The root cgroup: "/sys/fs/cgroup/memory/" reads as well without its slash. */
	if (n > 1 && out[n - 1] == '/')
		out[--n] = '\0';
	return n > 0 && (size_t)n < size;
}

enum rt_pressure_source
rt_pressure_cgroup_dir(const char *proc_cgroup, const char *mountinfo, char *dir, size_t size)
{
	char path[512], root[512], point[512];
	if (rt_pressure_cgroup_path(proc_cgroup, "memory", path, sizeof(path)) &&
	    rt_pressure_mount(mountinfo, "cgroup", "memory", root, point, sizeof(root)) &&
	    rt_pressure_join(root, point, path, dir, size))
		return RT_PRESSURE_CGROUP_V1;
	if (rt_pressure_cgroup_path(proc_cgroup, "", path, sizeof(path)) &&
	    rt_pressure_mount(mountinfo, "cgroup2", NULL, root, point, sizeof(root)) &&
	    rt_pressure_join(root, point, path, dir, size))
		return RT_PRESSURE_CGROUP_V2;
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
