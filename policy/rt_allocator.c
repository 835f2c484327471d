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
rt_allocator_action(enum rt_allocator_kind kind, enum rt_jemalloc_action jemalloc)
{
	switch (kind) {
	case RT_ALLOCATOR_GLIBC:
		return RT_ACTION_MALLOC_TRIM;
	case RT_ALLOCATOR_JEMALLOC:
		return jemalloc == RT_JEMALLOC_DECAY ? RT_ACTION_JEMALLOC_DECAY
		                                     : RT_ACTION_JEMALLOC_PURGE;
	default:
		/* tcmalloc and mimalloc are recognised so that the message can name them, but no
		 * action of theirs is taken (see roundtrim(7)). */
		return RT_ACTION_NONE;
	}
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
	case RT_ACTION_NONE:
		break;
	}
	return "none";
}
