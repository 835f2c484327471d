/* mimalloc: mi_collect(true), what its API lets a thread other than the owner do. It keeps no
 * live-heap figure (mi_process_info counts commit, not live blocks). mi_collect(true) purges
 * regardless of mi_option_purge_delay (2.1 and later; reset_delay before), so the library
 * changes no option of the program's. */
#include "rt_heap_ops.h"

static void (*rt_mi_collect)(bool);

static bool
rt_mimalloc_resolve(const void *base)
{
	*(void **)&rt_mi_collect = rt_heap_symbol_in("mi_collect", base);
	return false;
}

static int
rt_mimalloc_act(enum rt_action action, uint64_t keep, enum rt_action *done)
{
	(void)keep;
	*done = action;
	if (!rt_mi_collect)
		return -1;
	rt_mi_collect(true);
	return 0;
}

const struct rt_heap_ops rt_heap_mimalloc_ops = {
    .resolve = rt_mimalloc_resolve,
    .act = rt_mimalloc_act,
};
