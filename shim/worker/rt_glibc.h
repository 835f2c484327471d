/* rt_glibc: returns to the OS what malloc_trim(0) leaves in glibc's arenas, on the worker thread
 * (or an API caller's, under rt_heap's lock), in short lock holds. Owns finding glibc's arenas,
 * taking their locks as glibc does, and madvise; every rule it follows is in policy/rt_arena. */
#ifndef RT_GLIBC_H
#define RT_GLIBC_H

#include <stdbool.h>
#include <stddef.h>

#include "rt_allocator.h"
#include "rt_arena.h"

/* At start, once glibc's malloc is known to win (malloc_fn is the malloc that serves the
 * program, free_fn its free): checks the running glibc (version, where its main arena is, the
 * ring of arenas), reading only, taking no lock. False when it stood down, after one line on
 * stderr naming the cause. */
bool rt_glibc_init(void *(*malloc_fn)(size_t), void (*free_fn)(void *));
/* Found at start and not stood down since. */
bool rt_glibc_ready(void);
/* A check found the program's heap damaged (one line on stderr said so): from then on nothing
 * may walk glibc's heap, neither malloc_trim nor mallinfo2 (glibc would abort on it). */
bool rt_glibc_damaged(void);
/* Gives back the free pages of every arena, the tops of thread arenas included, keeping `keep`
 * bytes at each top; the first call first locks and checks every arena without giving anything
 * back. 0 when done; -1 when it is not ready or stood down now (one line on stderr the first
 * time): the caller falls back to malloc_trim, unless the heap was found damaged. Under rt_heap's
 * lock (the worker, or an API caller). */
int rt_glibc_release(size_t keep);
/* The free chunks of every arena that mallinfo2 would walk, counted in the release's short
 * holds up to one more than `most`; RT_ALLOCATOR_CHUNKS_UNKNOWN when the release is not ready or
 * stood down now. Under rt_heap's lock. */
uint64_t rt_glibc_free_chunks(uint64_t most);

#endif
