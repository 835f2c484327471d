#include "rt_target.h"

#include "rt_config.h"
#include "rt_file_rules.h"
#include "rt_path.h"
#include "rt_procfs.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool
rt_target_fifo_status(const char *link, char *status, size_t size)
{
	bool deleted;
	rt_procfs_link_len(link, strlen(link), &deleted);
	if (link[0] != '/' || deleted)
		return false;
	return rt_path_status_for_fifo(status, size, link);
}

bool
rt_target_status_is_of(const struct rt_status_record *st, int pid)
{
	return st->pid == pid;
}

bool
rt_target_selected(const char *program, const char *globs)
{
	return !globs || rt_config_match(globs, program);
}

bool
rt_target_answered(enum rt_proto_kind kind, const struct rt_status_record *before,
                   const struct rt_status_record *now, bool *acted)
{
	*acted = now->actions > before->actions;
	if (kind == RT_PROTO_TRIM)
		return *acted;
	return now->rounds > before->rounds;
}

static bool
rt_target_comm_is(const char *comm, const char *name)
{
	size_t len = strlen(name);
	return strncmp(comm, name, len) == 0 && (comm[len] == '\0' || comm[len] == '\n');
}

bool
rt_target_is_library_comm(const char *comm)
{
	return rt_target_comm_is(comm, RT_FILE_WORKER_THREAD) ||
	       rt_target_comm_is(comm, RT_FILE_KEEPER_THREAD);
}

/* ---- Processes. */

bool
rt_target_alive(const struct rt_procfs_stat *p)
{
	return p->state != 'Z' && p->state != 'X' && p->state != 'x';
}

static int
rt_target_proc_cmp(const void *key, const void *entry)
{
	int pid = *(const int *)key, other = ((const struct rt_procfs_stat *)entry)->pid;
	return (pid > other) - (pid < other);
}

const struct rt_procfs_stat *
rt_target_lookup(const struct rt_procfs_stat *procs, size_t n, int pid)
{
	if (n == 0)
		return NULL;
	return bsearch(&pid, procs, n, sizeof(*procs), rt_target_proc_cmp);
}

bool
rt_target_descends(const struct rt_procfs_stat *procs, size_t n, int pid, int root)
{
	/* Each step moves to another process: a chain longer than the table loops. */
	for (size_t steps = 0; steps <= n; steps++) {
		if (pid == root)
			return true;
		const struct rt_procfs_stat *p = pid > 0 ? rt_target_lookup(procs, n, pid) : NULL;
		if (!p)
			return false;
		pid = p->ppid;
	}
	return false;
}

/* ---- Control groups. */

/* Whether a cgroup v1 super option names the hierarchy (a controller or name=X) rather than
 * being a mount option (cgroup1_show_options in the kernel). */
static bool
rt_target_is_controller(const char *opt)
{
	static const char *const mount_options[] = {
	    "rw",           "ro",   "xattr", "noprefix", "clone_children", "cpuset_v2_mode",
	    "favordynmods", "none", NULL};
	if (!strncmp(opt, "name=", 5))
		return opt[5] != '\0';
	if (strchr(opt, '='))
		return false;
	for (size_t i = 0; mount_options[i]; i++)
		if (!strcmp(opt, mount_options[i]))
			return false;
	return opt[0] != '\0';
}

bool
rt_target_parse_mount(const char *line, struct rt_target_mount *out)
{
	struct rt_procfs_mount m;
	if (!rt_procfs_mount(line, &m))
		return false;
	memcpy(out->root, m.root, sizeof(out->root));
	memcpy(out->point, m.point, sizeof(out->point));
	const char *fstype = m.fstype;
	char *options = m.super;
	if (!strcmp(fstype, "cgroup2")) {
		out->hierarchy = (struct rt_target_hierarchy){.v2 = true};
		return true;
	}
	if (strcmp(fstype, "cgroup") != 0)
		return false;
	out->hierarchy = (struct rt_target_hierarchy){.v2 = false};
	size_t w = 0;
	char *state = NULL;
	for (char *opt = strtok_r(options, ",", &state); opt; opt = strtok_r(NULL, ",", &state)) {
		if (!rt_target_is_controller(opt))
			continue;
		int len =
		    snprintf(out->hierarchy.controllers + w, sizeof(out->hierarchy.controllers) - w,
		             "%s%s", w ? "," : "", opt);
		if (len < 0 || (size_t)len >= sizeof(out->hierarchy.controllers) - w)
			return false;
		w += (size_t)len;
	}
	return w > 0;
}

/* Whether comma-separated lists a and b (b of length blen) hold the same names. */
static bool
rt_target_same_set(const char *a, const char *b, size_t blen)
{
	size_t na = 0, nb = 0;
	for (const char *s = a; *s;) {
		size_t len = strcspn(s, ",");
		bool found = false;
		for (size_t at = 0; at < blen && !found;) {
			size_t other = strcspn(b + at, ",");
			other = other > blen - at ? blen - at : other;
			found = other == len && !strncmp(s, b + at, len);
			at += other + 1;
		}
		if (!found)
			return false;
		na++;
		s += len;
		s += *s == ',';
	}
	for (size_t at = 0; at < blen; at += strcspn(b + at, ",") + 1)
		nb++;
	return na == nb;
}

/* path with its trailing slashes dropped ("/" stays), into out. */
static bool
rt_target_clean_path(const char *path, char *out, size_t size)
{
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		len--;
	if (len >= size)
		return false;
	memcpy(out, path, len);
	out[len] = '\0';
	return true;
}

/* Whether path is dir or lies below it. */
static bool
rt_target_path_under(const char *path, size_t path_len, const char *dir)
{
	size_t len = strlen(dir);
	if (len == 1 && dir[0] == '/')
		return path_len > 0 && path[0] == '/';
	return path_len >= len && !strncmp(path, dir, len) && (path_len == len || path[len] == '/');
}

const char *
rt_target_cgroup_parse(const char *arg, const struct rt_target_mount *mounts, size_t nmounts,
                       struct rt_target_cgroup *out)
{
	char path[PATH_MAX];
	if (arg[0] != '/')
		return "not an absolute path: a cgroup directory (/sys/fs/cgroup/...) or a cgroup "
		       "path as /proc/PID/cgroup shows it";
	if (!rt_target_clean_path(arg, path, sizeof(path)))
		return "too long";
	const struct rt_target_mount *best = NULL;
	for (size_t i = 0; i < nmounts; i++) {
		char point[PATH_MAX];
		if (rt_target_clean_path(mounts[i].point, point, sizeof(point)) &&
		    rt_target_path_under(path, strlen(path), point) &&
		    (!best || strlen(mounts[i].point) > strlen(best->point)))
			best = &mounts[i];
	}
	memset(out, 0, sizeof(*out));
	if (!best) {
		out->any_hierarchy = true;
		snprintf(out->path, sizeof(out->path), "%s", path);
		return NULL;
	}
	char point[PATH_MAX], root[PATH_MAX];
	rt_target_clean_path(best->point, point, sizeof(point));
	rt_target_clean_path(best->root, root, sizeof(root));
	const char *rest = path + (strcmp(point, "/") ? strlen(point) : 0);
	int len = snprintf(out->path, sizeof(out->path), "%s%s",
	                   strcmp(root, "/") || !rest[0] ? root : "", rest);
	if (len < 0 || (size_t)len >= sizeof(out->path))
		return "too long";
	out->hierarchy = best->hierarchy;
	return NULL;
}

bool
rt_target_in_cgroup(const char *text, const struct rt_target_cgroup *cg)
{
	struct rt_procfs_cgroup line;
	for (const char *at = text; rt_procfs_cgroup_next(&at, &line);) {
		bool hierarchy =
		    cg->any_hierarchy ||
		    (cg->hierarchy.v2
		         ? line.v2
		         : !line.v2 && rt_target_same_set(cg->hierarchy.controllers,
		                                          line.controllers, line.controllers_len));
		if (hierarchy && rt_target_path_under(line.path, line.path_len, cg->path))
			return true;
	}
	return false;
}

/* ---- The selection. */

bool
rt_target_session_bound(const struct rt_target_filter *f)
{
	return !f->any_session && f->under == 0 && !f->cgroup;
}

bool
rt_target_needs_cgroup(const struct rt_target_filter *f)
{
	return f->cgroup != NULL;
}

enum rt_target_verdict
rt_target_verdict(const struct rt_target_filter *f, const struct rt_procfs_stat *procs, size_t n,
                  const struct rt_procfs_stat *p, const char *program, const char *cgroup)
{
	if (f->under && !rt_target_descends(procs, n, p->pid, f->under))
		return RT_TARGET_NOT_UNDER;
	if (f->cgroup && (!cgroup || !rt_target_in_cgroup(cgroup, f->cgroup)))
		return RT_TARGET_NOT_IN_CGROUP;
	if (!rt_target_selected(program, f->globs))
		return RT_TARGET_NOT_MATCHED;
	if (rt_target_session_bound(f) && p->sid != f->session)
		return RT_TARGET_OTHER_SESSION;
	return RT_TARGET_IN;
}

/* Appends to out (size bytes, w used so far) what fits; returns the new length. */
static size_t __attribute__((format(printf, 4, 5)))
rt_target_append(char *out, size_t size, size_t w, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int len = vsnprintf(out + w, size - w, fmt, ap);
	va_end(ap);
	if (len < 0)
		return w;
	return w + (size_t)len >= size ? size - 1 : w + (size_t)len;
}

void
rt_target_filter_text(const struct rt_target_filter *f, char *out, size_t size)
{
	size_t w = 0;
	out[0] = '\0';
	if (f->under)
		w = rt_target_append(out, size, w, " under pid %d", f->under);
	if (f->cgroup) {
		const struct rt_target_cgroup *cg = f->cgroup;
		if (cg->any_hierarchy)
			w = rt_target_append(out, size, w, " in cgroup %s", cg->path);
		else if (cg->hierarchy.v2)
			w = rt_target_append(out, size, w, " in cgroup %s (v2)", cg->path);
		else
			w = rt_target_append(out, size, w, " in cgroup %s:%s",
			                     cg->hierarchy.controllers, cg->path);
	}
	if (f->globs)
		w = rt_target_append(out, size, w, " matching '%s'", f->globs);
	if (rt_target_session_bound(f))
		rt_target_append(out, size, w, " in this session");
}
