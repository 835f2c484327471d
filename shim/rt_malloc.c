/* The malloc family, interposed. The hot path adds one predictable branch and thread-local
 * counter increments to the real call: no lock, no syscall, no shared cache line written.
 * Everything before resolution lives in cold, out-of-line functions, so that the hot path
 * needs no stack frame and ends in a tail call. */
#include "roundtrim.h"
#include "rt_real.h"
#include "rt_shim.h"

#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static __thread struct roundtrim_thread_counts rt_counts;

#define RT_HOT(x) __builtin_expect(!!(x), 1)
#define RT_COLD __attribute__((noinline, cold))

static inline void
rt_count_alloc(size_t size)
{
	rt_counts.allocations++;
	rt_counts.bytes_requested += size;
}

/* True once the real functions can be called. While this thread resolves (dlsym allocating),
 * it stays false and the caller serves the request from the bootstrap buffer. */
static bool
rt_resolved(void)
{
	rt_real_resolve();
	return rt_real_is_ready();
}

RT_COLD static void *
rt_malloc_cold(size_t size)
{
	if (!rt_resolved())
		return rt_real_bootstrap_alloc(size, 0);
	rt_count_alloc(size);
	return rt_real.malloc(size);
}

RT_EXPORT void *
malloc(size_t size)
{
	if (!RT_HOT(rt_real_is_ready()))
		return rt_malloc_cold(size);
	rt_count_alloc(size);
	return rt_real.malloc(size);
}

RT_EXPORT void
free(void *ptr)
{
	/* Bootstrap blocks are never reused; nothing else can be freed before resolution. */
	if (__builtin_expect(rt_real_is_bootstrap(ptr), 0) || !RT_HOT(rt_real_is_ready()))
		return;
	rt_counts.frees++;
	rt_real.free(ptr);
}

RT_COLD static void *
rt_calloc_cold(size_t count, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(count, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	if (!rt_resolved())
		return rt_real_bootstrap_alloc(total, 0); /* static, hence zeroed */
	rt_count_alloc(total);
	return rt_real.calloc(count, size);
}

RT_EXPORT void *
calloc(size_t count, size_t size)
{
	if (!RT_HOT(rt_real_is_ready()))
		return rt_calloc_cold(count, size);
	rt_count_alloc(count * size);
	return rt_real.calloc(count, size);
}

RT_COLD static void *
rt_realloc_cold(void *ptr, size_t size)
{
	if (ptr && rt_real_is_bootstrap(ptr)) {
		size_t old = rt_real_bootstrap_size(ptr);
		void *p = rt_resolved() ? (rt_count_alloc(size), rt_real.malloc(size))
		                        : rt_real_bootstrap_alloc(size, 0);
		if (p)
			memcpy(p, ptr, old < size ? old : size);
		return p;
	}
	if (!rt_resolved())
		return rt_real_bootstrap_alloc(size, 0);
	return realloc(ptr, size);
}

RT_EXPORT void *
realloc(void *ptr, size_t size)
{
	if (__builtin_expect(rt_real_is_bootstrap(ptr), 0) || !RT_HOT(rt_real_is_ready()))
		return rt_realloc_cold(ptr, size);
	if (size == 0 && ptr)
		rt_counts.frees++;
	else
		rt_count_alloc(size);
	return rt_real.realloc(ptr, size);
}

RT_EXPORT void *
reallocarray(void *ptr, size_t count, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(count, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	if (!RT_HOT(rt_real_is_ready()) || rt_real_is_bootstrap(ptr) || !rt_real.reallocarray)
		return realloc(ptr, total);
	rt_count_alloc(total);
	return rt_real.reallocarray(ptr, count, size);
}

/* The aligned entry points share one cold path: they are rare before resolution. */
enum rt_aligned_kind { RT_POSIX_MEMALIGN, RT_ALIGNED_ALLOC, RT_MEMALIGN, RT_VALLOC, RT_PVALLOC };

static void *
rt_aligned(enum rt_aligned_kind kind, size_t alignment, size_t size, int *err)
{
	*err = 0;
	if (!RT_HOT(rt_real_is_ready()) && !rt_resolved()) {
		if (kind == RT_PVALLOC)
			size = (size + 4095) & ~(size_t)4095;
		void *p = rt_real_bootstrap_alloc(size, alignment);
		*err = p ? 0 : ENOMEM;
		return p;
	}
	rt_count_alloc(size);
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
	if (!RT_HOT(rt_real_is_ready()))
		rt_real_resolve();
	return rt_real.malloc_usable_size ? rt_real.malloc_usable_size(ptr) : 0;
}

RT_EXPORT void
roundtrim_thread_counts(struct roundtrim_thread_counts *out)
{
	*out = rt_counts;
}

/* Our own malloc's address, bound inside this object: references to `malloc` itself resolve to
 * whichever malloc wins the lookup, which rt_heap_detect must tell apart from ours. */
void *rt_malloc_self(size_t size) __attribute__((alias("malloc"), copy(malloc)));
