/* rt_heap_ops: what the shim does with one allocator, one row of entry points per row of
 * policy's allocator table. Owns the interface that each allocator's file fills. */
#ifndef RT_HEAP_OPS_H
#define RT_HEAP_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "rt_allocator.h"

struct rt_heap_ops {
	/* Takes its entry points from the object whose base is `base`, the one that serves malloc.
	 * True when it keeps a live-heap figure that `live` reads. */
	bool (*resolve)(const void *base);
	/* Runs the action; 0, or -1 when the allocator refused it; *done is the action that ran. */
	int (*act)(enum rt_action action, uint64_t keep, enum rt_action *done);
	/* Live heap bytes; UINT64_MAX when skipped or unreadable. */
	uint64_t (*live)(void);
	/* Each may be NULL: at start, once the action is known; the arena cap; the worker's own
	 * arena, taken as it starts. */
	void (*prepare)(enum rt_action action);
	void (*set_arena_max)(unsigned arena_max);
	void (*take_arena)(void);
};

extern const struct rt_heap_ops rt_heap_glibc_ops;
extern const struct rt_heap_ops rt_heap_jemalloc_ops;
extern const struct rt_heap_ops rt_heap_tcmalloc_ops;
extern const struct rt_heap_ops rt_heap_mimalloc_ops;

/* The symbol `name` when it lives in the object whose base is `base`, else NULL. */
void *rt_heap_symbol_in(const char *name, const void *base);

#endif
