/* jemalloc: its arenas purged or decayed through mallctl, its statistics for the live heap. */
#include "rt_heap_ops.h"

#include <stddef.h>

/* jemalloc's MALLCTL_ARENAS_ALL: "arena.4096.purge" acts on every arena. */
#define RT_JEMALLOC_ARENAS_ALL "4096"

static int (*rt_mallctl)(const char *, void *, size_t *, void *, size_t);

static bool
rt_jemalloc_resolve(const void *base)
{
	*(void **)&rt_mallctl = rt_heap_symbol_in("mallctl", base);
	return rt_mallctl != NULL;
}

/* A control that takes and returns nothing, such as a purge of every arena. */
static int
rt_jemalloc_do(const char *name)
{
	return rt_mallctl && rt_mallctl(name, NULL, NULL, NULL, 0) == 0 ? 0 : -1;
}

static int
rt_jemalloc_act(enum rt_action action, uint64_t keep, enum rt_action *done)
{
	(void)keep;
	*done = action;
	if (action == RT_ACTION_JEMALLOC_DECAY)
		return rt_jemalloc_do("arena." RT_JEMALLOC_ARENAS_ALL ".decay");
	return rt_jemalloc_do("arena." RT_JEMALLOC_ARENAS_ALL ".purge");
}

static uint64_t
rt_jemalloc_live(void)
{
	/* Statistics are cached until the epoch advances. */
	uint64_t epoch = 1;
	size_t allocated = 0, len = sizeof(allocated);
	if (!rt_mallctl || rt_mallctl("epoch", NULL, NULL, &epoch, sizeof(epoch)) != 0 ||
	    rt_mallctl("stats.allocated", &allocated, &len, NULL, 0) != 0)
		return UINT64_MAX;
	return allocated;
}

const struct rt_heap_ops rt_heap_jemalloc_ops = {
    .resolve = rt_jemalloc_resolve,
    .act = rt_jemalloc_act,
    .live = rt_jemalloc_live,
};
