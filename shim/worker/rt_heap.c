#include "rt_heap.h"
#include "rt_glibc.h"
#include "rt_heap_ops.h"
#include "rt_malloc.h"
#include "rt_out.h"
#include "rt_real.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* The shim's row for each kind of policy's allocator table; NULL: unknown, no action. */
static const struct rt_heap_ops *const rt_heap_rows[RT_ALLOCATOR_KINDS] = {
    [RT_ALLOCATOR_GLIBC] = &rt_heap_glibc_ops,
    [RT_ALLOCATOR_JEMALLOC] = &rt_heap_jemalloc_ops,
    [RT_ALLOCATOR_TCMALLOC] = &rt_heap_tcmalloc_ops,
    [RT_ALLOCATOR_MIMALLOC] = &rt_heap_mimalloc_ops,
};

static const struct rt_heap_ops *rt_heap_winner;
static bool rt_heap_live_kept;
/* The state of the actions and readings (glibc's arena views, its stand-down) belongs to whoever
 * holds this: the worker, or an API caller that releases before it returns. Never taken on the
 * malloc path; inside it only the allocator's own locks are taken, as the worker always took
 * them, so no thread waits for it while holding one of them. */
static pthread_mutex_t rt_heap_lock = PTHREAD_MUTEX_INITIALIZER;

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
	if (!winner || !dladdr(winner, &info))
		return RT_ALLOCATOR_UNKNOWN;
	struct rt_allocator_facts facts = {0};
	size_t n = 0;
	const struct rt_allocator_row *rows = rt_allocator_rows(&n);
	for (size_t i = 0; i < n; i++)
		facts.has_marker[rows[i].kind] =
		    rt_heap_symbol_in(rows[i].marker, info.dli_fbase) != NULL;
	enum rt_allocator_kind kind = rt_allocator_decide(&facts);
	rt_heap_winner = rt_heap_rows[kind];
	if (rt_heap_winner)
		rt_heap_live_kept = rt_heap_winner->resolve(info.dli_fbase);
	return kind;
}

void
rt_heap_prepare(enum rt_action action)
{
	if (rt_heap_winner && rt_heap_winner->prepare)
		rt_heap_winner->prepare(action);
}

void
rt_heap_set_arena_max(unsigned arena_max)
{
	if (rt_heap_winner && rt_heap_winner->set_arena_max)
		rt_heap_winner->set_arena_max(arena_max);
}

void
rt_heap_take_arena(void)
{
	if (rt_heap_winner && rt_heap_winner->take_arena)
		rt_heap_winner->take_arena();
}

static int
rt_heap_act_locked(enum rt_action action, uint64_t trim_pad, enum rt_action *done)
{
	*done = action;
	if (action == RT_ACTION_NONE || !rt_heap_winner)
		return 0;
	return rt_heap_winner->act(action, trim_pad, done);
}

int
rt_heap_act(enum rt_action action, uint64_t trim_pad, enum rt_action *done)
{
	pthread_mutex_lock(&rt_heap_lock);
	int rc = rt_heap_act_locked(action, trim_pad, done);
	pthread_mutex_unlock(&rt_heap_lock);
	return rc;
}

bool
rt_heap_act_here(enum rt_action action, uint64_t trim_pad, enum rt_action *done, int *rc)
{
	/* A call from a signal handler that interrupted this thread's own action would wait for
	 * itself: the worker acts for it. */
	static _Thread_local bool acting;
	if (action == RT_ACTION_NONE || action == RT_ACTION_MI_COLLECT || !rt_heap_winner || acting)
		return false;
	acting = true;
	pthread_mutex_lock(&rt_heap_lock);
	bool here = action != RT_ACTION_GLIBC_RELEASE || rt_glibc_ready();
	if (here) {
		rt_out_hold(true);
		*rc = rt_heap_act_locked(action, trim_pad, done);
		rt_out_hold(false);
	}
	pthread_mutex_unlock(&rt_heap_lock);
	acting = false;
	return here;
}

void
rt_heap_say_held(void)
{
	pthread_mutex_lock(&rt_heap_lock);
	rt_out_say_held();
	pthread_mutex_unlock(&rt_heap_lock);
}

void
rt_heap_forget_parent(void)
{
	pthread_mutex_init(&rt_heap_lock, NULL);
}

bool
rt_heap_has_live(void)
{
	return rt_heap_live_kept;
}

uint64_t
rt_heap_live_bytes(void)
{
	if (!rt_heap_live_kept)
		return UINT64_MAX;
	pthread_mutex_lock(&rt_heap_lock);
	uint64_t live = rt_heap_winner->live();
	pthread_mutex_unlock(&rt_heap_lock);
	return live;
}
