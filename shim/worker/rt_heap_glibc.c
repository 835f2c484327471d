/* glibc: the release of every arena (rt_glibc), malloc_trim where it stands down or is asked for,
 * mallinfo2 for the live heap while it stays cheap (neither on a heap found damaged), and the
 * arena cap. */
#include "rt_glibc.h"
#include "rt_heap_ops.h"
#include "rt_real.h"

#include <malloc.h>
#include <stddef.h>
#include <time.h>

static int (*rt_malloc_trim)(size_t);
static struct mallinfo2 (*rt_mallinfo2)(void);
static int (*rt_mallopt)(int, int);
static int64_t rt_glibc_live_cost_ns;

static bool
rt_glibc_resolve(const void *base)
{
	*(void **)&rt_malloc_trim = rt_heap_symbol_in("malloc_trim", base);
	*(void **)&rt_mallinfo2 = rt_heap_symbol_in("mallinfo2", base);
	*(void **)&rt_mallopt = rt_heap_symbol_in("mallopt", base);
	return rt_mallinfo2 != NULL;
}

/* Only for the release: with ROUNDTRIM_GLIBC=trim nothing of it runs, not even the count before
 * a live-heap reading. */
static void
rt_glibc_prepare(enum rt_action action)
{
	if (action == RT_ACTION_GLIBC_RELEASE)
		rt_glibc_init(rt_real.malloc, rt_real.free);
}

static int
rt_glibc_act(enum rt_action action, uint64_t keep, enum rt_action *done)
{
	*done = action;
	if (action == RT_ACTION_GLIBC_RELEASE) {
		if (rt_glibc_release((size_t)keep) == 0)
			return 0;
		/* On a damaged heap malloc_trim would abort the program: the round goes on without
		 * an action. */
		if (rt_glibc_damaged()) {
			*done = RT_ACTION_NONE;
			return 0;
		}
		/* Stood down (it said why once): malloc_trim returns what it can. */
		*done = RT_ACTION_MALLOC_TRIM;
	}
	if (!rt_malloc_trim)
		return -1;
	rt_malloc_trim((size_t)keep);
	return 0;
}

/* The walk's own cost: the worker's CPU time, which a preemption in the middle does not
 * inflate (one unlucky reading would otherwise stop them all). */
static int64_t
rt_heap_glibc_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t
rt_glibc_live(void)
{
	if (!rt_mallinfo2 || rt_glibc_damaged())
		return UINT64_MAX;
	/* The count is a walk too: made only while the last reading's cost allows a reading. */
	if (!rt_allocator_live_affordable(RT_ALLOCATOR_GLIBC, RT_ALLOCATOR_CHUNKS_UNKNOWN,
	                                  rt_glibc_live_cost_ns))
		return UINT64_MAX;
	uint64_t chunks = rt_glibc_free_chunks(RT_ALLOCATOR_LIVE_CHUNKS_MAX);
	/* mallinfo2 would abort on the chunks that made the count find the heap damaged. */
	if (rt_glibc_damaged() ||
	    !rt_allocator_live_affordable(RT_ALLOCATOR_GLIBC, chunks, rt_glibc_live_cost_ns))
		return UINT64_MAX;
	int64_t start = rt_heap_glibc_now_ns();
	struct mallinfo2 mi = rt_mallinfo2();
	rt_glibc_live_cost_ns = rt_heap_glibc_now_ns() - start;
	return mi.uordblks + mi.hblkhd;
}

static void
rt_glibc_set_arena_max(unsigned arena_max)
{
	if (rt_mallopt && arena_max > 0)
		rt_mallopt(M_ARENA_MAX, (int)arena_max);
}

/* glibc attaches a thread to an arena at its first malloc: an exited thread's arena from its free
 * list first, with whatever free top that thread left in it, else a new one. A worker whose first
 * malloc came at its first action (a dlsym that misses, the release's check) took the arena of a
 * thread that had exited by then, held it for good, and the program's next thread grew a new one
 * instead: with malloc_trim as the action, which never returns a thread arena's top, that top
 * stayed resident (roundtrim(7), ALLOCATORS). At start no thread of the program has exited yet:
 * the worker's arena is a new one of its own, holding only the library's few blocks. */
static void
rt_glibc_take_arena(void)
{
	rt_real.free(rt_real.malloc(1));
}

const struct rt_heap_ops rt_heap_glibc_ops = {
    .resolve = rt_glibc_resolve,
    .act = rt_glibc_act,
    .live = rt_glibc_live,
    .prepare = rt_glibc_prepare,
    .set_arena_max = rt_glibc_set_arena_max,
    .take_arena = rt_glibc_take_arena,
};
