/* The malloc family, interposed. The hot path adds one predictable branch and two increments of
 * thread-local counters to the real call: no lock, no syscall, no shared cache line written. */
#include "roundtrim.h"
#include "rt_real.h"
#include "rt_shim.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static __thread struct roundtrim_thread_counts rt_counts;

#define RT_LIKELY(x) __builtin_expect(!!(x), 1)

static inline void
rt_count_alloc(size_t size)
{
	rt_counts.allocations++;
	rt_counts.bytes_requested += size;
}

/* Before resolution, or re-entered from dlsym while resolving: serve from the bootstrap buffer. */
static void *
rt_early_alloc(size_t size, size_t alignment)
{
	if (!rt_real_resolving())
		rt_real_resolve();
	if (rt_real_resolving() || !rt_real_ready)
		return rt_real_bootstrap_alloc(size, alignment);
	return NULL;
}

RT_EXPORT void *
malloc(size_t size)
{
	if (!RT_LIKELY(rt_real_ready)) {
		void *p = rt_early_alloc(size, 0);
		if (p || !rt_real_ready)
			return p;
	}
	rt_count_alloc(size);
	return rt_real.malloc(size);
}

RT_EXPORT void
free(void *ptr)
{
	if (!RT_LIKELY(rt_real_ready) || rt_real_is_bootstrap(ptr)) {
		/* Bootstrap blocks are never reused; nothing else can be freed before resolution. */
		if (!ptr || rt_real_is_bootstrap(ptr) || !rt_real_ready)
			return;
	}
	rt_counts.frees++;
	rt_real.free(ptr);
}

RT_EXPORT void *
calloc(size_t count, size_t size)
{
	if (!RT_LIKELY(rt_real_ready)) {
		size_t total;
		if (__builtin_mul_overflow(count, size, &total)) {
			errno = ENOMEM;
			return NULL;
		}
		void *p = rt_early_alloc(total, 0);
		if (p || !rt_real_ready)
			return p;
	}
	rt_count_alloc(count * size);
	return rt_real.calloc(count, size);
}

static void *
rt_realloc_bootstrap(void *ptr, size_t size)
{
	size_t old = rt_real_bootstrap_size(ptr);
	void *p = malloc(size);
	if (p)
		memcpy(p, ptr, old < size ? old : size);
	return p;
}

RT_EXPORT void *
realloc(void *ptr, size_t size)
{
	if (!RT_LIKELY(rt_real_ready) || rt_real_is_bootstrap(ptr)) {
		if (ptr && rt_real_is_bootstrap(ptr))
			return rt_realloc_bootstrap(ptr, size);
		if (!rt_real_ready) {
			void *p = rt_early_alloc(size, 0);
			if (p || !rt_real_ready)
				return p;
		}
	}
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
	if (!RT_LIKELY(rt_real_ready) || rt_real_is_bootstrap(ptr) || !rt_real.reallocarray)
		return realloc(ptr, total);
	rt_count_alloc(total);
	return rt_real.reallocarray(ptr, count, size);
}

RT_EXPORT int
posix_memalign(void **out, size_t alignment, size_t size)
{
	if (!RT_LIKELY(rt_real_ready)) {
		void *p = rt_early_alloc(size, alignment);
		if (p || !rt_real_ready) {
			*out = p;
			return p ? 0 : ENOMEM;
		}
	}
	rt_count_alloc(size);
	return rt_real.posix_memalign(out, alignment, size);
}

RT_EXPORT void *
aligned_alloc(size_t alignment, size_t size)
{
	if (!RT_LIKELY(rt_real_ready)) {
		void *p = rt_early_alloc(size, alignment);
		if (p || !rt_real_ready)
			return p;
	}
	rt_count_alloc(size);
	return rt_real.aligned_alloc(alignment, size);
}

RT_EXPORT void *
memalign(size_t alignment, size_t size)
{
	if (!RT_LIKELY(rt_real_ready)) {
		void *p = rt_early_alloc(size, alignment);
		if (p || !rt_real_ready)
			return p;
	}
	rt_count_alloc(size);
	return rt_real.memalign(alignment, size);
}

RT_EXPORT void *
valloc(size_t size)
{
	if (!RT_LIKELY(rt_real_ready)) {
		void *p = rt_early_alloc(size, 4096);
		if (p || !rt_real_ready)
			return p;
	}
	rt_count_alloc(size);
	return rt_real.valloc(size);
}

RT_EXPORT void *
pvalloc(size_t size)
{
	if (!RT_LIKELY(rt_real_ready)) {
		void *p = rt_early_alloc((size + 4095) & ~(size_t)4095, 4096);
		if (p || !rt_real_ready)
			return p;
	}
	rt_count_alloc(size);
	return rt_real.pvalloc(size);
}

RT_EXPORT size_t
malloc_usable_size(void *ptr)
{
	if (!ptr)
		return 0;
	if (rt_real_is_bootstrap(ptr))
		return rt_real_bootstrap_size(ptr);
	if (!RT_LIKELY(rt_real_ready))
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
void *rt_malloc_self(size_t size) __attribute__((alias("malloc")));
