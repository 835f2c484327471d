/* rt_probe: which of the system calls that the library makes, and a program of its kind may not,
 * a seccomp filter answers by killing the process; found before the library makes any of them. */
#ifndef RT_PROBE_H
#define RT_PROBE_H

#include <stdbool.h>
#include <stddef.h>

/* In the thread that starts the library, before it makes any call of its own: where a seccomp
 * filter holds the process, makes each such call in a throwaway child. False, with the first
 * call the library cannot do without in why, when the filter kills on one. */
bool rt_probe_system_calls(char *why, size_t size);
/* Whether the probe saw the filter kill on system call nr (false where none was probed). */
bool rt_probe_kills(long nr);

#endif
