#include "rt_heap.h"

#include "rt_glibc.h"
#include "rt_real.h"
#include "rt_shim.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* jemalloc's MALLCTL_ARENAS_ALL: "arena.4096.purge" acts on every arena. */
#define RT_JEMALLOC_ARENAS_ALL "4096"

static int (*rt_mallctl)(const char *, void *, size_t *, void *, size_t);
static int (*rt_malloc_trim)(size_t);
static struct mallinfo2 (*rt_mallinfo2)(void);
static int (*rt_mallopt)(int, int);
static void (*rt_tc_release)(size_t);
static int (*rt_tc_property)(const char *, size_t *);
static void (*rt_mi_collect)(bool);

/* The symbol `name` when it lives in the object whose base is `base`, else NULL. */
static void *
rt_heap_symbol_in(const char *name, const void *base)
{
	void *sym = dlsym(RTLD_DEFAULT, name);
	Dl_info info;
	if (!sym || !dladdr(sym, &info) || info.dli_fbase != base)
		return NULL;
	return sym;
}

/* Whether sym is a real definition, not an executable's canonical PLT entry: an executable
 * that takes malloc's address (CPython does) exports an undefined "malloc" with a value, and
 * dlsym(RTLD_DEFAULT) returns that stub. */
static bool
rt_heap_defined(void *sym)
{
	Dl_info info;
	const ElfW(Sym) *entry = NULL;
	return sym && dladdr1(sym, &info, (void **)&entry, RTLD_DL_SYMENT) && entry &&
	       entry->st_shndx != SHN_UNDEF;
}

/* dl_iterate_phdr visits objects in load order, which is the global lookup order: the first
 * object after the executable that defines malloc is the one the executable's stub jumps to. */
static int
rt_heap_first_definer(struct dl_phdr_info *obj, size_t size, void *ctx)
{
	(void)size;
	void **winner = ctx;
	if (!obj->dlpi_name || !obj->dlpi_name[0])
		return 0; /* the executable itself, or the vDSO */
	void *handle = dlopen(obj->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
	if (!handle)
		return 0;
	void *sym = dlsym(handle, "malloc");
	dlclose(handle);
	Dl_info info;
	if (!rt_heap_defined(sym) || !dladdr(sym, &info) ||
	    (uintptr_t)info.dli_fbase != (uintptr_t)obj->dlpi_addr)
		return 0;
	*winner = sym;
	return 1;
}

enum rt_allocator_kind
rt_heap_detect(void)
{
	/* The malloc that wins: ours when we come first in the lookup order (then the next one
	 * serves), someone else's when a preloaded allocator precedes us. */
	void *winner = dlsym(RTLD_DEFAULT, "malloc");
	if (!rt_heap_defined(winner)) {
		winner = NULL;
		dl_iterate_phdr(rt_heap_first_definer, &winner);
	}
	if (winner == (void *)rt_malloc_self)
		winner = (void *)rt_real.malloc;
	Dl_info info;
	struct rt_allocator_facts facts = {0};
	if (winner && dladdr(winner, &info)) {
		const void *base = info.dli_fbase;
		*(void **)&rt_mallctl = rt_heap_symbol_in("mallctl", base);
		*(void **)&rt_malloc_trim = rt_heap_symbol_in("malloc_trim", base);
		*(void **)&rt_mallinfo2 = rt_heap_symbol_in("mallinfo2", base);
		*(void **)&rt_mallopt = rt_heap_symbol_in("mallopt", base);
		facts.mallctl = rt_mallctl != NULL;
		facts.malloc_trim = rt_malloc_trim != NULL;
		*(void **)&rt_tc_release =
		    rt_heap_symbol_in("MallocExtension_ReleaseToSystem", base);
		*(void **)&rt_tc_property =
		    rt_heap_symbol_in("MallocExtension_GetNumericProperty", base);
		*(void **)&rt_mi_collect = rt_heap_symbol_in("mi_collect", base);
		facts.tcmalloc_release =
		    rt_heap_symbol_in("MallocExtension_ReleaseFreeMemory", base) != NULL;
		facts.mi_collect = rt_mi_collect != NULL;
	}
	return rt_allocator_decide(&facts);
}

void
rt_heap_prepare(enum rt_action action)
{
	/* Only for the release: with ROUNDTRIM_GLIBC=trim nothing of it runs, not even the count
	 * before a live-heap reading. */
	if (action == RT_ACTION_GLIBC_RELEASE)
		rt_glibc_init(rt_real.malloc, rt_real.free);
}

void
rt_heap_set_arena_max(unsigned arena_max)
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
void
rt_heap_take_arena(enum rt_allocator_kind kind)
{
	if (kind == RT_ALLOCATOR_GLIBC)
		rt_real.free(rt_real.malloc(1));
}

/* A jemalloc control that takes and returns nothing, such as a purge of every arena. */
static int
rt_heap_arenas_do(const char *name)
{
	return rt_mallctl && rt_mallctl(name, NULL, NULL, NULL, 0) == 0 ? 0 : -1;
}

/* tcmalloc holds its page-heap lock for a whole ReleaseToSystem call: release it in pieces, so
 * that each hold is short, until its free page heap is empty (facts: the lock is held for the
 * whole ReleaseFreeMemory, 47-113 ms per GiB). */
#define RT_HEAP_TCMALLOC_PIECE (16u << 20)
#define RT_HEAP_TCMALLOC_PIECES_MAX 65536

static int
rt_heap_tcmalloc_release(void)
{
	if (!rt_tc_release || !rt_tc_property)
		return -1;
	for (unsigned i = 0; i < RT_HEAP_TCMALLOC_PIECES_MAX; i++) {
		size_t free_bytes = 0;
		if (!rt_tc_property("tcmalloc.pageheap_free_bytes", &free_bytes) || free_bytes == 0)
			return 0;
		rt_tc_release(RT_HEAP_TCMALLOC_PIECE);
	}
	return 0;
}

int
rt_heap_act(enum rt_action action, uint64_t trim_pad, enum rt_action *done)
{
	*done = action;
	switch (action) {
	case RT_ACTION_GLIBC_RELEASE:
		if (rt_glibc_release((size_t)trim_pad) == 0)
			return 0;
		/* Stood down (it said why once): malloc_trim returns what it can. */
		*done = RT_ACTION_MALLOC_TRIM;
		/* fall through */
	case RT_ACTION_MALLOC_TRIM:
		if (!rt_malloc_trim)
			return -1;
		rt_malloc_trim((size_t)trim_pad);
		return 0;
	case RT_ACTION_JEMALLOC_PURGE:
		return rt_heap_arenas_do("arena." RT_JEMALLOC_ARENAS_ALL ".purge");
	case RT_ACTION_JEMALLOC_DECAY:
		return rt_heap_arenas_do("arena." RT_JEMALLOC_ARENAS_ALL ".decay");
	case RT_ACTION_TCMALLOC_RELEASE:
		return rt_heap_tcmalloc_release();
	case RT_ACTION_MI_COLLECT:
		if (!rt_mi_collect)
			return -1;
		rt_mi_collect(true);
		return 0;
	case RT_ACTION_NONE:
		break;
	}
	return 0;
}

bool
rt_heap_has_live(void)
{
	return rt_mallctl || rt_mallinfo2;
}

static int64_t rt_heap_live_cost_ns;

/* The walk's own cost: the worker's CPU time, which a preemption in the middle does not
 * inflate (one unlucky reading would otherwise stop them all). */
static int64_t
rt_heap_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

uint64_t
rt_heap_live_bytes(void)
{
	if (rt_mallctl) {
		/* Statistics are cached until the epoch advances. */
		uint64_t epoch = 1;
		size_t allocated = 0, len = sizeof(allocated);
		if (rt_mallctl("epoch", NULL, NULL, &epoch, sizeof(epoch)) != 0 ||
		    rt_mallctl("stats.allocated", &allocated, &len, NULL, 0) != 0)
			return UINT64_MAX;
		return allocated;
	}
	if (!rt_mallinfo2)
		return UINT64_MAX;
	/* The count is a walk too: made only while the last reading's cost allows a reading. */
	if (!rt_allocator_live_affordable(RT_ALLOCATOR_GLIBC, RT_ALLOCATOR_CHUNKS_UNKNOWN,
	                                  rt_heap_live_cost_ns) ||
	    !rt_allocator_live_affordable(RT_ALLOCATOR_GLIBC,
	                                  rt_glibc_free_chunks(RT_ALLOCATOR_LIVE_CHUNKS_MAX),
	                                  rt_heap_live_cost_ns))
		return UINT64_MAX;
	int64_t start = rt_heap_now_ns();
	struct mallinfo2 mi = rt_mallinfo2();
	rt_heap_live_cost_ns = rt_heap_now_ns() - start;
	return mi.uordblks + mi.hblkhd;
}
