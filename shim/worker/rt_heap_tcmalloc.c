/* tcmalloc: its page heap released in bounded pieces; it keeps no live-heap figure we read. */
#include "rt_heap_ops.h"

#include <stddef.h>

/* tcmalloc holds its page-heap lock for a whole ReleaseToSystem call: release it in pieces, so
 * that each hold is short, until its free page heap is empty (facts: the lock is held for the
 * whole ReleaseFreeMemory, 47-113 ms per GiB). */
#define RT_TCMALLOC_PIECE (16u << 20)
#define RT_TCMALLOC_PIECES_MAX 65536

static void (*rt_tc_release)(size_t);
static int (*rt_tc_property)(const char *, size_t *);

static bool
rt_tcmalloc_resolve(const void *base)
{
	*(void **)&rt_tc_release = rt_heap_symbol_in("MallocExtension_ReleaseToSystem", base);
	*(void **)&rt_tc_property = rt_heap_symbol_in("MallocExtension_GetNumericProperty", base);
	return false;
}

static int
rt_tcmalloc_act(enum rt_action action, uint64_t keep, enum rt_action *done)
{
	(void)keep;
	*done = action;
	if (!rt_tc_release || !rt_tc_property)
		return -1;
	for (unsigned i = 0; i < RT_TCMALLOC_PIECES_MAX; i++) {
		size_t free_bytes = 0;
		if (!rt_tc_property("tcmalloc.pageheap_free_bytes", &free_bytes) || free_bytes == 0)
			return 0;
		rt_tc_release(RT_TCMALLOC_PIECE);
	}
	return 0;
}

const struct rt_heap_ops rt_heap_tcmalloc_ops = {
    .resolve = rt_tcmalloc_resolve,
    .act = rt_tcmalloc_act,
};
