#include "rt_procfs.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool
rt_procfs_statm_rss_kib(const char *text, uint64_t page_size, uint64_t *rss_kib)
{
	uint64_t size, resident;
	if (sscanf(text, "%" SCNu64 " %" SCNu64, &size, &resident) != 2)
		return false;
	*rss_kib = resident * page_size / 1024;
	return true;
}

/* The text after "Key:" at a line's start, or NULL. */
static const char *
rt_procfs_field(const char *text, const char *key)
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
rt_procfs_kib_field(const char *text, const char *key, uint64_t *kib)
{
	const char *value = rt_procfs_field(text, key);
	return value && sscanf(value, " %" SCNu64 " kB", kib) == 1;
}

enum rt_procfs_seccomp
rt_procfs_seccomp(const char *status)
{
	const char *value = rt_procfs_field(status, "Seccomp");
	int mode;
	if (!value || sscanf(value, " %d", &mode) != 1)
		return RT_PROCFS_SECCOMP_UNKNOWN;
	return mode == 0 ? RT_PROCFS_SECCOMP_NONE : RT_PROCFS_SECCOMP_FILTERED;
}

bool
rt_procfs_smaps_rollup(const char *text, struct rt_procfs_rss *out)
{
	uint64_t rss, anon, lazyfree;
	if (!rt_procfs_kib_field(text, "Rss", &rss) ||
	    !rt_procfs_kib_field(text, "Anonymous", &anon) ||
	    !rt_procfs_kib_field(text, "LazyFree", &lazyfree) || anon > rss || lazyfree > anon)
		return false;
	out->rss_kib = rss;
	out->anon_kib = anon - lazyfree;
	out->file_kib = rss - anon;
	out->lazyfree_kib = lazyfree;
	return true;
}

bool
rt_procfs_stat(const char *text, struct rt_procfs_stat *out)
{
	char *end;
	long pid = strtol(text, &end, 10);
	const char *close = strrchr(text, ')');
	if (end == text || pid <= 0 || pid > INT_MAX || strncmp(end, " (", 2) != 0 || !close ||
	    close < end + 1 || close[1] != ' ' || !close[2] || close[3] != ' ')
		return false;
	/* PPID, PGRP, SESSION: numbers from 0 up. */
	const char *at = close + 4;
	long fields[3];
	for (int i = 0; i < 3; i++) {
		if (*at < '0' || *at > '9')
			return false;
		fields[i] = strtol(at, &end, 10);
		if ((*end != ' ' && *end != '\n' && *end != '\0') || fields[i] > INT_MAX)
			return false;
		at = *end == ' ' ? end + 1 : end;
	}
	*out = (struct rt_procfs_stat){
	    .pid = (int)pid, .ppid = (int)fields[0], .sid = (int)fields[2], .state = close[2]};
	/* From SESSION (field 6) on to num_threads (field 20). */
	for (int field = 7; field < 20; field++) {
		at += strspn(at, " ");
		size_t len = strcspn(at, " \n");
		if (len == 0)
			return true;
		at += len;
	}
	uint64_t threads;
	if (sscanf(at, " %" SCNu64, &threads) == 1)
		out->threads = threads;
	return true;
}

bool
rt_procfs_stat_alone(const struct rt_procfs_stat *st, unsigned library_tasks)
{
	return st->threads == library_tasks ||
	       (st->threads == library_tasks + 1 && st->state == 'Z');
}

bool
rt_procfs_last_thread(uint64_t threads, unsigned library_tasks, bool self_is_main, bool main_gone)
{
	return threads == 1 + library_tasks + (uint64_t)(!self_is_main && main_gone);
}

/* The next space-separated field of a mountinfo line, octal escapes (\040) undone. */
static const char *
rt_procfs_field_unescaped(const char *at, char *out, size_t size)
{
	size_t w = 0;
	bool fits = true;
	while (*at == ' ')
		at++;
	if (!*at || *at == '\n')
		return NULL;
	for (; *at && *at != ' ' && *at != '\n'; at++) {
		char c = *at;
		if (c == '\\' && at[1] >= '0' && at[1] <= '3' && at[2] >= '0' && at[2] <= '7' &&
		    at[3] >= '0' && at[3] <= '7') {
			c = (char)((at[1] - '0') * 64 + (at[2] - '0') * 8 + (at[3] - '0'));
			at += 3;
		}
		if (w + 1 < size)
			out[w++] = c;
		else
			fits = false;
	}
	out[w] = '\0';
	return fits ? at : NULL;
}

bool
rt_procfs_mount(const char *line, struct rt_procfs_mount *out)
{
	char field[PATH_MAX];
	const char *at = line;
	/* mount ID, parent ID, major:minor, root, mount point, mount options, optional fields,
	 * "-", filesystem type, source, super options. */
	for (int i = 0; i < 3; i++)
		if (!(at = rt_procfs_field_unescaped(at, field, sizeof(field))))
			return false;
	if (!(at = rt_procfs_field_unescaped(at, out->root, sizeof(out->root))) ||
	    !(at = rt_procfs_field_unescaped(at, out->point, sizeof(out->point))))
		return false;
	do {
		if (!(at = rt_procfs_field_unescaped(at, field, sizeof(field))))
			return false;
	} while (strcmp(field, "-") != 0);
	return (at = rt_procfs_field_unescaped(at, out->fstype, sizeof(out->fstype))) &&
	       (at = rt_procfs_field_unescaped(at, field, sizeof(field))) &&
	       rt_procfs_field_unescaped(at, out->super, sizeof(out->super));
}

bool
rt_procfs_cgroup_next(const char **at, struct rt_procfs_cgroup *out)
{
	while (**at) {
		const char *line = *at, *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		*at = line + len + (end != NULL);
		const char *c1 = memchr(line, ':', len);
		const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
		if (!c2)
			continue;
		out->controllers = c1 + 1;
		out->controllers_len = (size_t)(c2 - c1 - 1);
		out->path = c2 + 1;
		out->path_len = len - (size_t)(c2 + 1 - line);
		out->v2 = out->controllers_len == 0 && c1 - line == 1 && line[0] == '0';
		return true;
	}
	return false;
}

bool
rt_procfs_list_has(const char *list, size_t len, const char *name)
{
	size_t n = strlen(name);
	for (size_t at = 0; at < len;) {
		size_t item = strcspn(list + at, ",");
		item = item > len - at ? len - at : item;
		if (item == n && !strncmp(list + at, name, n))
			return true;
		at += item + 1;
	}
	return false;
}

/* The cgroup path of the /proc/self/cgroup line whose controllers include want (v2: want ""
 * names the unified hierarchy's line), into out. */
static bool
rt_procfs_cgroup_path(const char *proc_cgroup, const char *want, char *out, size_t size)
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
rt_procfs_cgroup_mount(const char *mountinfo, const char *fstype, const char *controller,
                       char *root, char *point, size_t size)
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
rt_procfs_cgroup_join(const char *root, const char *point, const char *path, char *out, size_t size,
                      size_t *mount_len)
{
	size_t rlen = strcmp(root, "/") ? strlen(root) : 0;
	if (strncmp(path, root, rlen) || (path[rlen] && path[rlen] != '/'))
		return false;
	int n = snprintf(out, size, "%s%s", point, path + rlen);
	/* The root cgroup: "/sys/fs/cgroup/memory/" reads as well without its slash. */
	if (n > 1 && out[n - 1] == '/')
		out[--n] = '\0';
	*mount_len = strlen(point);
	if (*mount_len > 1 && point[*mount_len - 1] == '/')
		--*mount_len;
	return n > 0 && (size_t)n < size;
}

enum rt_procfs_cgroup_version
rt_procfs_cgroup_dir(const char *proc_cgroup, const char *mountinfo, const char *controller,
                     char *dir, size_t size, size_t *mount_len)
{
	char path[512], root[512], point[512];
	if (rt_procfs_cgroup_path(proc_cgroup, controller, path, sizeof(path)) &&
	    rt_procfs_cgroup_mount(mountinfo, "cgroup", controller, root, point, sizeof(root)) &&
	    rt_procfs_cgroup_join(root, point, path, dir, size, mount_len))
		return RT_PROCFS_CGROUP_V1;
	if (rt_procfs_cgroup_path(proc_cgroup, "", path, sizeof(path)) &&
	    rt_procfs_cgroup_mount(mountinfo, "cgroup2", NULL, root, point, sizeof(root)) &&
	    rt_procfs_cgroup_join(root, point, path, dir, size, mount_len))
		return RT_PROCFS_CGROUP_V2;
	return RT_PROCFS_CGROUP_NONE;
}

size_t
rt_procfs_link_len(const char *text, size_t len, bool *deleted)
{
	static const char suffix[] = " (deleted)";
	size_t n = sizeof(suffix) - 1;
	*deleted = len > n && memcmp(text + len - n, suffix, n) == 0;
	return *deleted ? len - n : len;
}
