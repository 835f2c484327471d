/* The malloc family, interposed. The hot path adds to the real call a thread-local budget that
 * counts down the bytes asked for, a thread-local count, and one predictable branch: no lock,
 * no syscall, no shared cache line written (rt_tally). When the budget runs out (at a thread's
 * first allocation, whose budget starts at zero, and then every `period` bytes) the cold path
 * runs the library's per-thread work: resolving the real functions, joining the registry of
 * tallies, the sampler's event, and, in a fork child still waiting to start its library,
 * rt_main's allocation event. */
#include "rt_malloc.h"
#include "roundtrim.h"
#include "rt_hooks.h"
#include "rt_real.h"
#include "rt_tally.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RT_LOAD(x) RT_TALLY_LOAD(x)
#define RT_STORE(x, v) RT_TALLY_STORE(x, v)
#define RT_COLD __attribute__((noinline, cold))

/* Folds what the budget counted since it was armed into bytes_before, then arms it again. */
static void
rt_rearm(uint64_t period)
{
	uint64_t used = RT_LOAD(rt_t.armed) - RT_LOAD(rt_t.left);
	RT_STORE(rt_t.bytes_before, RT_LOAD(rt_t.bytes_before) + used);
	RT_STORE(rt_t.armed, period);
	RT_STORE(rt_t.left, period);
}

/* The library's per-thread work of the cold path; false while resolving. */
static bool
rt_cold_work(void)
{
	if (!rt_real_is_ready()) {
		/* Budgets are armed once resolved: this is still a new thread's, zero, less this
		 * allocation's size. Zero again meanwhile, so that allocations made while resolving
		 * (dlsym's) come here too, not to the hot path. */
		uint64_t left = RT_LOAD(rt_t.left);
		RT_STORE(rt_t.left, 0);
		rt_real_resolve();
		if (!rt_real_is_ready())
			return false;
		RT_STORE(rt_t.left, left);
	}
	RT_STORE(rt_t.allocations, RT_LOAD(rt_t.allocations) + 1);
	if (!rt_t.registered)
		rt_tally_register();
	/* What the budget counted since it was armed, this allocation included. */
	uint64_t consumed = RT_LOAD(rt_t.armed) - RT_LOAD(rt_t.left);
	/* Allocations made by the event itself (starting a worker allocates) take the hot path
	 * under a large budget and never start a second event. */
	rt_rearm(RT_PERIOD_NONE);
	if (!rt_t.in_event) {
		rt_t.in_event = true;
		uint64_t period = RT_PERIOD_NONE;
		uint64_t (*event)(void) =
		    atomic_load_explicit(&rt_hooks.allocation_event, memory_order_relaxed);
		if (event)
			period = event();
		if (rt_hooks.sample)
			period = rt_hooks.sample(consumed, period);
		rt_t.in_event = false;
		rt_rearm(period);
	}
	return true;
}

/* The cold path of every allocating entry point, once RT_TALLY_TAKE found the budget used up
 * (this allocation's size already taken from it). False while this thread is resolving the
 * real functions (dlsym allocating): the caller serves the request from the bootstrap buffer.
 * errno is the program's: a malloc that succeeds leaves it as it was, whatever the work done
 * here (resolving, a fork child's deferred start, the sampler) set it to. */
RT_COLD static bool
rt_cold(void)
{
	int saved_errno = errno;
	bool ready = rt_cold_work();
	errno = saved_errno;
	return ready;
}

/* The sampler's look at what the real allocator answered, when it registered one; errno stays
 * what the allocator left. */
static inline void *
rt_malloc_took(void *p, size_t size)
{
	if (!rt_hooks.took)
		return p;
	int saved_errno = errno;
	p = rt_hooks.took(p, size);
	errno = saved_errno;
	return p;
}

RT_COLD static void *
rt_malloc_cold(size_t size)
{
	if (!rt_cold())
		return rt_real_bootstrap_alloc(size, 0);
	return rt_malloc_took(rt_real.malloc(size), size);
}

/* The hot paths: the budget, a count, and a tail call through a pointer that resolution
 * filled (roundtrim(7), OVERHEAD, says what each instruction pays for). */
RT_EXPORT void *
malloc(size_t size)
{
	RT_TALLY_TAKE(size, cold);
	RT_TALLY_COUNT(allocations);
	return rt_real.malloc(size);
cold:
	return rt_malloc_cold(size);
}

/* No test of the pointer: until resolution, or once a bootstrap block was handed out, the slot
 * holds rt_real's slow free, which tells bootstrap blocks apart. */
RT_EXPORT void
free(void *ptr)
{
	RT_TALLY_COUNT(frees);
	rt_real.free(ptr);
}

RT_COLD static void *
rt_calloc_cold(size_t count, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(count, size, &total)) {
		/* The wrapped product the hot path took goes back: nothing was allocated. */
		RT_STORE(rt_t.left, RT_LOAD(rt_t.left) + count * size);
		errno = ENOMEM;
		return NULL;
	}
	if (!rt_cold())
		return rt_real_bootstrap_alloc(total, 0); /* static, hence zeroed */
	return rt_malloc_took(rt_real.calloc(count, size), total);
}

RT_EXPORT void *
calloc(size_t count, size_t size)
{
	/* An overflowing product only mis-counts: the real calloc refuses the call. */
	RT_TALLY_TAKE(count * size, cold);
	RT_TALLY_COUNT(allocations);
	return rt_real.calloc(count, size);
cold:
	return rt_calloc_cold(count, size);
}

RT_COLD static void *
rt_realloc_cold(void *ptr, size_t size)
{
	/* Until resolution the slot holds the slow realloc, which copies bootstrap blocks. */
	if (!rt_cold())
		return rt_real.realloc(ptr, size);
	return rt_malloc_took(rt_real.realloc(ptr, size), size);
}

RT_EXPORT void *
realloc(void *ptr, size_t size)
{
	/* realloc(p, n) frees p's block and gives another (roundtrim.h): one free, and one
	 * allocation unless n is 0. */
	if (ptr) {
		RT_TALLY_COUNT(frees);
		if (size == 0)
			return rt_real.realloc(ptr, size);
	}
	RT_TALLY_TAKE(size, cold);
	RT_TALLY_COUNT(allocations);
	return rt_real.realloc(ptr, size);
cold:
	return rt_realloc_cold(ptr, size);
}

/* The program's reallocarray comes here also where an allocator without one (jemalloc) is
 * preloaded before this library: the block must then come from that allocator's realloc, the
 * one the program's lookup finds, not from ours, which hands out the allocator after us (glibc).
 * A plain call to realloc is bound to ours by clang, which inlines it. Looked up once; dlsym of
 * a defined name allocates nothing. */
RT_EXPORT void *
reallocarray(void *ptr, size_t count, size_t size)
{
	static void *winner;
	size_t total;
	if (__builtin_mul_overflow(count, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	void *fn = __atomic_load_n(&winner, __ATOMIC_ACQUIRE);
	if (!fn && rt_real_is_ready()) {
		fn = dlsym(RTLD_DEFAULT, "realloc");
		__atomic_store_n(&winner, fn, __ATOMIC_RELEASE);
	}
	if (!fn)
		return realloc(ptr, total);
	void *(*call)(void *, size_t);
	*(void **)&call = fn;
	return call(ptr, total);
}

/* The aligned entry points share one path: they are rare before resolution. */
enum rt_aligned_kind { RT_POSIX_MEMALIGN, RT_ALIGNED_ALLOC, RT_MEMALIGN, RT_VALLOC, RT_PVALLOC };

static void *
rt_aligned_call(enum rt_aligned_kind kind, size_t alignment, size_t size, int *err)
{
	switch (kind) {
	case RT_POSIX_MEMALIGN: {
		void *p = NULL;
		*err = rt_real.posix_memalign(&p, alignment, size);
		return p;
	}
	case RT_ALIGNED_ALLOC:
		return rt_real.aligned_alloc(alignment, size);
	case RT_MEMALIGN:
		return rt_real.memalign(alignment, size);
	case RT_VALLOC:
		return rt_real.valloc(size);
	case RT_PVALLOC:
		return rt_real.pvalloc(size);
	}
	return NULL;
}

RT_COLD static void *
rt_aligned_cold(enum rt_aligned_kind kind, size_t alignment, size_t size, int *err)
{
	if (!rt_cold()) {
		if (kind == RT_PVALLOC)
			size = (size + 4095) & ~(size_t)4095;
		void *p = rt_real_bootstrap_alloc(size, alignment);
		*err = p ? 0 : ENOMEM;
		return p;
	}
	return rt_malloc_took(rt_aligned_call(kind, alignment, size, err), size);
}

static inline __attribute__((always_inline)) void *
rt_aligned(enum rt_aligned_kind kind, size_t alignment, size_t size, int *err)
{
	*err = 0;
	RT_TALLY_TAKE(size, cold);
	RT_TALLY_COUNT(allocations);
	return rt_aligned_call(kind, alignment, size, err);
cold:
	return rt_aligned_cold(kind, alignment, size, err);
}

RT_EXPORT int
posix_memalign(void **out, size_t alignment, size_t size)
{
	int err;
	void *p = rt_aligned(RT_POSIX_MEMALIGN, alignment, size, &err);
	if (err == 0)
		*out = p;
	return err;
}

RT_EXPORT void *
aligned_alloc(size_t alignment, size_t size)
{
	int err;
	return rt_aligned(RT_ALIGNED_ALLOC, alignment, size, &err);
}

RT_EXPORT void *
memalign(size_t alignment, size_t size)
{
	int err;
	return rt_aligned(RT_MEMALIGN, alignment, size, &err);
}

RT_EXPORT void *
valloc(size_t size)
{
	int err;
	return rt_aligned(RT_VALLOC, 4096, size, &err);
}

RT_EXPORT void *
pvalloc(size_t size)
{
	int err;
	return rt_aligned(RT_PVALLOC, 4096, size, &err);
}

RT_EXPORT size_t
malloc_usable_size(void *ptr)
{
	if (!ptr)
		return 0;
	if (rt_real_is_bootstrap(ptr))
		return rt_real_bootstrap_size(ptr);
	if (!rt_real_is_ready())
		rt_real_resolve();
	return rt_real.malloc_usable_size ? rt_real.malloc_usable_size(ptr) : 0;
}

void
rt_malloc_set_budget(uint64_t period)
{
	rt_rearm(period);
}

RT_EXPORT void
roundtrim_thread_counts(struct roundtrim_thread_counts *out)
{
	out->allocations = RT_LOAD(rt_t.allocations);
	out->frees = RT_LOAD(rt_t.frees);
	out->bytes_requested = rt_tally_bytes(&rt_t);
}

/* Our own malloc's address, bound inside this object: references to `malloc` itself resolve to
 * whichever malloc wins the lookup, which the allocator's detection must tell apart from ours. */
void *rt_malloc_self(size_t size) __attribute__((alias("malloc"), copy(malloc)));
