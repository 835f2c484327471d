/* rt_preload: the library's place in LD_PRELOAD and in a process's memory map.
 * Owns which file names are the library, how ld.so splits LD_PRELOAD and which paths it carries. */
#ifndef RT_PRELOAD_H
#define RT_PRELOAD_H

#include <stdbool.h>
#include <stddef.h>

/* Whether the last component of path is libroundtrim.so, bare or with a version after it
 * ("libroundtrim.so.0", "libroundtrim.so.0.1.0"). */
bool rt_preload_names_library(const char *path);
/* Whether a line of /proc/PID/maps maps the library (also a file since deleted or replaced). */
bool rt_preload_maps_line_has_library(const char *line);
/* Whether one of LD_PRELOAD's entries (NULL: none) is the library. */
bool rt_preload_has_library(const char *ld_preload);
/* LD_PRELOAD's entries (ld.so splits on ':' and ' ') but the library's, joined by ':';
 * ld_preload may be NULL. False when out is too small. */
bool rt_preload_without_library(char *out, size_t size, const char *ld_preload);
/* lib first, then the other entries of ld_preload (which may be NULL). */
bool rt_preload_with_library(char *out, size_t size, const char *lib, const char *ld_preload);
/* Whether LD_PRELOAD can carry path as one entry, and a shell script hold it unquoted: an
 * absolute path of letters, digits and _./+@,=- only. */
bool rt_preload_path_valid(const char *path);

#endif
