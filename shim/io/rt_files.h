/* rt_files: the library's files and descriptors as one set (rt_fifo, rt_procread, rt_outputs):
 * opened at start-up, listed for the worker's table, closed, forgotten in a fork child, removed. */
#ifndef RT_FILES_H
#define RT_FILES_H

#include <stdbool.h>
#include <stddef.h>

#include "rt_config.h"

/* At start-up, in the thread that starts the library (the constructor, or the thread of a fork
 * child that starts its worker): opens everything the configuration asks for. Every descriptor
 * is lifted above the floor before it returns (rt_fd); afterwards nothing is ever opened. A
 * feature that cannot be had says so in one line and stays off. forked: the process is a fork
 * child of one where the library was active (its FIFO is named anew). */
void rt_files_open(const struct rt_config *cfg, const char *program, bool forked);
/* In a fork child, inside fork: closes the parent's descriptors and forgets its files. */
void rt_files_forget_parent(void);
/* The numbers of the descriptors kept, for the worker to keep them in its own table. */
size_t rt_files_numbers(int *out, size_t size);
/* In the starting thread, once the worker or the keeper has its own table with copies of them:
 * closes the starter's (the program's) copies. */
void rt_files_went_private(void);
/* In the starting thread, where the library does not start after all: removes what it made and
 * closes every descriptor it opened. */
void rt_files_close(void);
/* On the way out (destructor, _exit): removes the FIFO and status file this process made, and
 * the outputs that go with it (rt_outputs_remove). */
void rt_files_remove(void);

#endif
