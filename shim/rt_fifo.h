/* rt_fifo: the FIFO trigger's file: a 0600 FIFO in a 0700 directory of the user's own.
 * Owns creation, the checks against symlinks and foreign or open directories, and removal. */
#ifndef RT_FIFO_H
#define RT_FIFO_H

#include <stddef.h>

/* Creates (or replaces our own stale) FIFO at path and opens it for reading, non-blocking,
 * close-on-exec. Returns the descriptor, or -1 after writing the reason into why. */
int rt_fifo_open(const char *path, char *why, size_t why_size);

/* Removes what dead processes of this user left in the FIFO's directory (killed by a signal,
 * they never ran their destructor). Only names rt_path_stale_candidate calls ours. */
void rt_fifo_sweep(const char *fifo_template, const char *fifo_path);

#endif
