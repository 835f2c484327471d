#include "rt_preload.h"

#include "rt_procfs.h"

#include <stdio.h>
#include <string.h>

#define RT_PRELOAD_NAME "libroundtrim.so"
/* ld.so splits LD_PRELOAD on both. */
#define RT_PRELOAD_SEPARATORS ": "

/* The library's name in the len bytes at path. */
static bool
rt_preload_names_library_n(const char *path, size_t len)
{
	const char *base = path;
	for (size_t i = 0; i < len; i++)
		if (path[i] == '/')
			base = path + i + 1;
	size_t base_len = len - (size_t)(base - path);
	size_t name_len = sizeof(RT_PRELOAD_NAME) - 1;
	if (base_len < name_len || memcmp(base, RT_PRELOAD_NAME, name_len) != 0)
		return false;
	/* Then nothing, or a version: each dot followed by digits. */
	for (size_t i = name_len; i < base_len;) {
		if (base[i++] != '.' || i == base_len || base[i] < '0' || base[i] > '9')
			return false;
		while (i < base_len && base[i] >= '0' && base[i] <= '9')
			i++;
	}
	return true;
}

bool
rt_preload_names_library(const char *path)
{
	return rt_preload_names_library_n(path, strlen(path));
}

bool
rt_preload_maps_line_has_library(const char *line)
{
	/* address perms offset dev inode, then the path after blanks. */
	const char *s = line;
	for (int field = 0; field < 5; field++) {
		s += strspn(s, " ");
		size_t len = strcspn(s, " \n");
		if (len == 0)
			return false;
		s += len;
	}
	s += strspn(s, " ");
	if (*s != '/')
		return false;
	size_t len = strcspn(s, "\n");
	bool deleted;
	return rt_preload_names_library_n(s, rt_procfs_link_len(s, len, &deleted));
}

bool
rt_preload_has_library(const char *ld_preload)
{
	for (const char *s = ld_preload ? ld_preload : ""; *s;) {
		size_t len = strcspn(s, RT_PRELOAD_SEPARATORS);
		if (len > 0 && rt_preload_names_library_n(s, len))
			return true;
		s += len;
		s += strspn(s, RT_PRELOAD_SEPARATORS);
	}
	return false;
}

/* Appends the entries of list that are not the library to out (holding *w bytes). */
static bool
rt_preload_append_others(char *out, size_t size, size_t *w, const char *list)
{
	for (const char *s = list ? list : ""; *s;) {
		size_t len = strcspn(s, RT_PRELOAD_SEPARATORS);
		if (len > 0 && !rt_preload_names_library_n(s, len)) {
			size_t sep = *w > 0;
			if (*w + sep + len >= size)
				return false;
			if (sep)
				out[(*w)++] = ':';
			memcpy(out + *w, s, len);
			*w += len;
		}
		s += len;
		s += strspn(s, RT_PRELOAD_SEPARATORS);
	}
	out[*w] = '\0';
	return true;
}

bool
rt_preload_without_library(char *out, size_t size, const char *ld_preload)
{
	size_t w = 0;
	if (size == 0)
		return false;
	return rt_preload_append_others(out, size, &w, ld_preload);
}

bool
rt_preload_with_library(char *out, size_t size, const char *lib, const char *ld_preload)
{
	int n = snprintf(out, size, "%s", lib);
	if (n < 0 || (size_t)n >= size)
		return false;
	size_t w = (size_t)n;
	return rt_preload_append_others(out, size, &w, ld_preload);
}

bool
rt_preload_path_valid(const char *path)
{
	static const char allowed[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	                              "0123456789_./+@,=-";
	return path[0] == '/' && path[strspn(path, allowed)] == '\0';
}
