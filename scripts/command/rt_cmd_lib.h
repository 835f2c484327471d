/* rt_cmd_lib: which libroundtrim.so the command preloads (run) and writes into launchers (patch).
 * Owns the order: $ROUNDTRIM_LIB, the build tree's library beside a built command, the installed.
 */
#ifndef RT_CMD_LIB_H
#define RT_CMD_LIB_H

#include <stdbool.h>
#include <stddef.h>

/* The library's absolute path into out; false with the reason in why. */
bool rt_cmd_lib_find(char *out, size_t size, char *why, size_t why_size);

#endif
