#include "rt_allocator.h"

enum rt_allocator_kind
rt_allocator_decide(const struct rt_allocator_facts *facts)
{
	if (facts->mallctl)
		return RT_ALLOCATOR_JEMALLOC;
	if (facts->tcmalloc_release)
		return RT_ALLOCATOR_TCMALLOC;
	if (facts->mi_collect)
		return RT_ALLOCATOR_MIMALLOC;
	if (facts->malloc_trim)
		return RT_ALLOCATOR_GLIBC;
	return RT_ALLOCATOR_UNKNOWN;
}

enum rt_action
rt_allocator_action(enum rt_allocator_kind kind, enum rt_jemalloc_action jemalloc,
                    enum rt_glibc_action glibc)
{
	switch (kind) {
	case RT_ALLOCATOR_GLIBC:
		return glibc == RT_GLIBC_TRIM ? RT_ACTION_MALLOC_TRIM : RT_ACTION_GLIBC_RELEASE;
	case RT_ALLOCATOR_JEMALLOC:
		return jemalloc == RT_JEMALLOC_DECAY ? RT_ACTION_JEMALLOC_DECAY
		                                     : RT_ACTION_JEMALLOC_PURGE;
	case RT_ALLOCATOR_TCMALLOC:
		return RT_ACTION_TCMALLOC_RELEASE;
	case RT_ALLOCATOR_MIMALLOC:
		return RT_ACTION_MI_COLLECT;
	case RT_ALLOCATOR_UNKNOWN:
		break;
	}
	return RT_ACTION_NONE;
}

const char *
rt_action_limits(enum rt_action action)
{
	switch (action) {
	case RT_ACTION_TCMALLOC_RELEASE:
		return "tcmalloc releases its page heap only; the thread and central caches stay";
	case RT_ACTION_MI_COLLECT:
		return "mimalloc 2.0 lets another thread collect only its own heap and abandoned "
		       "segments; the program's threads free their pages on their own activity";
	case RT_ACTION_MALLOC_TRIM:
		return "malloc_trim never returns the free tops of thread arenas";
	default:
		return NULL;
	}
}

#define RT_ALLOCATOR_LIVE_COST_MAX_NS 1000000

bool
rt_allocator_live_affordable(enum rt_allocator_kind kind, uint64_t free_chunks,
                             int64_t last_cost_ns)
{
	if (kind != RT_ALLOCATOR_GLIBC)
		return true;
	/* Both must allow it: a count says nothing of a machine where a chunk costs more. */
	return (free_chunks == RT_ALLOCATOR_CHUNKS_UNKNOWN ||
	        free_chunks <= RT_ALLOCATOR_LIVE_CHUNKS_MAX) &&
	       last_cost_ns <= RT_ALLOCATOR_LIVE_COST_MAX_NS;
}

const char *
rt_allocator_name(enum rt_allocator_kind kind)
{
	switch (kind) {
	case RT_ALLOCATOR_GLIBC:
		return "glibc";
	case RT_ALLOCATOR_JEMALLOC:
		return "jemalloc";
	case RT_ALLOCATOR_TCMALLOC:
		return "tcmalloc";
	case RT_ALLOCATOR_MIMALLOC:
		return "mimalloc";
	case RT_ALLOCATOR_UNKNOWN:
		break;
	}
	return "unknown";
}

const char *
rt_action_name(enum rt_action action)
{
	switch (action) {
	case RT_ACTION_MALLOC_TRIM:
		return "malloc_trim";
	case RT_ACTION_JEMALLOC_PURGE:
		return "jemalloc_purge";
	case RT_ACTION_JEMALLOC_DECAY:
		return "jemalloc_decay";
	case RT_ACTION_GLIBC_RELEASE:
		return "glibc_release";
	case RT_ACTION_TCMALLOC_RELEASE:
		return "tcmalloc_release";
	case RT_ACTION_MI_COLLECT:
		return "mi_collect";
	case RT_ACTION_NONE:
		break;
	}
	return "none";
}
