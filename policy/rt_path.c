#include "rt_path.h"

#include <stdio.h>
#include <string.h>

bool
rt_path_template_valid(const char *tmpl)
{
	if (tmpl[0] != '/')
		return false;
	for (const char *s = tmpl; *s; s++) {
		if (*s != '%')
			continue;
		if (s[1] != 'p' && s[1] != '%')
			return false;
		s++;
	}
	return true;
}

bool
rt_path_template_per_pid(const char *tmpl)
{
	for (const char *s = tmpl; *s; s++) {
		if (*s == '%') {
			if (s[1] == 'p')
				return true;
			if (s[1] == '%')
				s++;
		}
	}
	return false;
}

bool
rt_path_expand(char *out, size_t size, const char *tmpl, int pid)
{
	if (size == 0 || !rt_path_template_valid(tmpl))
		return false;
	size_t w = 0;
	for (const char *s = tmpl; *s; s++) {
		char piece[16];
		size_t len;
		if (*s == '%' && s[1] == 'p') {
			len = (size_t)snprintf(piece, sizeof(piece), "%d", pid);
			s++;
		} else {
			piece[0] = *s;
			len = 1;
			if (*s == '%')
				s++;
		}
		if (w + len >= size)
			return false;
		memcpy(out + w, piece, len);
		w += len;
	}
	out[w] = '\0';
	return true;
}

bool
rt_path_absolute(char *out, size_t size, const char *cwd, const char *path)
{
	if (path[0] == '/' || path[0] == '\0') {
		int n = snprintf(out, size, "%s", path);
		return n >= 0 && (size_t)n < size;
	}
	if (!cwd || cwd[0] != '/')
		return false;
	size_t w = 0;
	for (const char *s = cwd; *s; s++) {
		size_t len = *s == '%' ? 2 : 1;
		if (w + len >= size)
			return false;
		out[w++] = *s;
		if (*s == '%')
			out[w++] = '%';
	}
	/* The root directory already ends in its slash. */
	int n = snprintf(out + w, size - w, "%s%s", w > 1 ? "/" : "", path);
	return n >= 0 && (size_t)n < size - w;
}

bool
rt_path_split(const char *path, char *dir, size_t dir_size, char *base, size_t base_size)
{
	const char *slash = strrchr(path, '/');
	if (!slash || slash[1] == '\0')
		return false;
	size_t dir_len = slash == path ? 1 : (size_t)(slash - path);
	size_t base_len = strlen(slash + 1);
	if (dir_len >= dir_size || base_len >= base_size)
		return false;
	memcpy(dir, path, dir_len);
	dir[dir_len] = '\0';
	memcpy(base, slash + 1, base_len + 1);
	return true;
}

bool
rt_path_default_fifo(char *out, size_t size, const char *xdg_runtime_dir, unsigned uid)
{
	int n;
	if (xdg_runtime_dir && xdg_runtime_dir[0] == '/' && !strchr(xdg_runtime_dir, '%'))
		n = snprintf(out, size, "%s/roundtrim/%%p.fifo", xdg_runtime_dir);
	else
		n = snprintf(out, size, "/tmp/roundtrim-%u/%%p.fifo", uid);
	return n > 0 && (size_t)n < size;
}

bool
rt_path_status_for_fifo(char *out, size_t size, const char *fifo_path)
{
	static const char fifo_suffix[] = ".fifo";
	size_t len = strlen(fifo_path), suffix = sizeof(fifo_suffix) - 1;
	if (len > suffix && strcmp(fifo_path + len - suffix, fifo_suffix) == 0)
		len -= suffix;
	int n = snprintf(out, size, "%.*s.status", (int)len, fifo_path);
	return n > 0 && (size_t)n < size;
}

#define RT_PATH_ASIDE_SUFFIX ".exec"

bool
rt_path_exec_aside(char *out, size_t size, const char *path)
{
	int n = snprintf(out, size, "%s" RT_PATH_ASIDE_SUFFIX, path);
	return n > 0 && (size_t)n < size;
}

bool
rt_path_stale_candidate(const char *fifo_template, const char *name, int *pid, bool *aside)
{
	static const char *const ours[] = {".fifo", ".status", ".status.tmp", NULL};
	static const char *const set_aside[] = {".fifo" RT_PATH_ASIDE_SUFFIX,
	                                        ".status" RT_PATH_ASIDE_SUFFIX, NULL};
	const char *base = strrchr(fifo_template, '/');
	if (!base || strcmp(base + 1, "%p.fifo") != 0)
		return false;
	long value = 0;
	const char *s = name;
	for (; *s >= '0' && *s <= '9' && value < 1L << 31; s++)
		value = value * 10 + (*s - '0');
	if (s == name || value <= 0 || value >= 1L << 31)
		return false;
	bool is_ours = false, is_aside = false;
	for (size_t i = 0; ours[i]; i++)
		is_ours |= strcmp(s, ours[i]) == 0;
	for (size_t i = 0; set_aside[i]; i++)
		is_aside |= strcmp(s, set_aside[i]) == 0;
	if (!is_ours && !is_aside)
		return false;
	*pid = (int)value;
	*aside = is_aside;
	return true;
}
