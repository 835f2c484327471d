/* rt_malloc: the malloc family's wrappers, each thread's budget of bytes before its cold path,
 * and the library's own malloc address. */
#ifndef RT_MALLOC_H
#define RT_MALLOC_H

#include <stddef.h>
#include <stdint.h>

/* The budget of allocated bytes after which the calling thread next enters the cold path (and
 * the hooks' allocation events); RT_PERIOD_NONE when nothing needs it. */
#define RT_PERIOD_NONE (UINT64_C(1) << 62)
void rt_malloc_set_budget(uint64_t period);

/* Our own malloc's address, bound inside this object (rt_heap tells it apart from the malloc
 * that wins the lookup). */
void *rt_malloc_self(size_t size);

#endif
