/* rt_allocator: which allocator serves malloc, and which action returns its memory.
 * Owns the decision from what the shim found in the object that provides malloc. */
#ifndef RT_ALLOCATOR_H
#define RT_ALLOCATOR_H

#include <stdbool.h>

#include "rt_config.h"

enum rt_allocator_kind {
	RT_ALLOCATOR_UNKNOWN,
	RT_ALLOCATOR_GLIBC,
	RT_ALLOCATOR_JEMALLOC,
	RT_ALLOCATOR_TCMALLOC,
	RT_ALLOCATOR_MIMALLOC,
};

enum rt_action {
	RT_ACTION_NONE,
	RT_ACTION_MALLOC_TRIM,
	RT_ACTION_JEMALLOC_PURGE,
	RT_ACTION_JEMALLOC_DECAY,
};

/* Each field: the named entry point exists and lives in the same object as the malloc that wins.
 * Symbol presence alone is not enough: glibc still exports malloc_trim under a preloaded
 * jemalloc. */
struct rt_allocator_facts {
	bool mallctl;
	bool malloc_trim;
	bool tcmalloc_release;
	bool mi_collect;
};

enum rt_allocator_kind rt_allocator_decide(const struct rt_allocator_facts *facts);
enum rt_action rt_allocator_action(enum rt_allocator_kind kind, enum rt_jemalloc_action jemalloc);
const char *rt_allocator_name(enum rt_allocator_kind kind);
const char *rt_action_name(enum rt_action action);

#endif
