/* rt_path: path templates (%p for the pid, %% for a percent sign) and their validation.
 * Owns the expansion rules and the default FIFO location. */
#ifndef RT_PATH_H
#define RT_PATH_H

#include <stdbool.h>
#include <stddef.h>

/* A template is valid when it is absolute, and every '%' starts "%p" or "%%". */
bool rt_path_template_valid(const char *tmpl);
/* Whether the template names a distinct file for each process (contains %p). */
bool rt_path_template_per_pid(const char *tmpl);
/* Expands tmpl for pid into out. Returns false when the template is invalid or out is too small. */
bool rt_path_expand(char *out, size_t size, const char *tmpl, int pid);
/* A path as the command hands it to the library: an absolute or empty one unchanged, a relative
 * one after cwd (absolute), each '%' of cwd doubled so that the template expands to cwd itself
 * (roundtrim(1), run). False when cwd is not absolute or out is too small. */
bool rt_path_absolute(char *out, size_t size, const char *cwd, const char *path);
/* Splits an absolute path into its directory and final component, both into caller buffers. */
bool rt_path_split(const char *path, char *dir, size_t dir_size, char *base, size_t base_size);
/* The default FIFO template: $XDG_RUNTIME_DIR/roundtrim/%p.fifo when xdg_runtime_dir is an
 * absolute path, else /tmp/roundtrim-<uid>/%p.fifo. */
bool rt_path_default_fifo(char *out, size_t size, const char *xdg_runtime_dir, unsigned uid);

/* The status file beside a FIFO: "x.fifo" -> "x.status", any other name gets ".status" added. */
bool rt_path_status_for_fifo(char *out, size_t size, const char *fifo_path);

/* Where a process's FIFO or status file waits while the process execs another program: the
 * path with ".exec" added. If the exec fails they are moved back; if it succeeds the names are
 * stale (roundtrim(7), FORK AND EXEC). */
bool rt_path_exec_aside(char *out, size_t size, const char *path);

/* For a FIFO template whose file name is exactly "%p.fifo": whether name is one of the files
 * such a process leaves ("PID.fifo", "PID.status", those two with ".exec" added, and the
 * "PID.status.tmp" of versions before 0.2); sets *pid, and *aside for the ".exec" names. Other
 * templates have no names the library may call its own. */
bool rt_path_stale_candidate(const char *fifo_template, const char *name, int *pid, bool *aside);

#endif
