#include "rt_real.h"

#include <dlfcn.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static void rt_real_free_early(void *ptr);

/* free() forwards without a check: until resolution it lands here. */
struct rt_real_fns rt_real = {.free = rt_real_free_early};
bool rt_real_ready;

static __thread bool rt_real_in_resolve;

/* dlsym of a missing symbol makes two small allocations on glibc 2.36; a few KiB is plenty. */
#define RT_BOOTSTRAP_HEADER 16
alignas(64) unsigned char rt_real_bootstrap[RT_BOOTSTRAP_SIZE];
static atomic_size_t rt_bootstrap_used;

void *
rt_real_bootstrap_alloc(size_t size, size_t alignment)
{
	if (alignment < RT_BOOTSTRAP_HEADER)
		alignment = RT_BOOTSTRAP_HEADER;
	if (size > RT_BOOTSTRAP_SIZE || alignment > 4096)
		return NULL;
	size_t need = size + alignment + RT_BOOTSTRAP_HEADER;
	size_t start = atomic_fetch_add(&rt_bootstrap_used, need);
	if (start + need > RT_BOOTSTRAP_SIZE)
		return NULL;
	uintptr_t base = (uintptr_t)(rt_real_bootstrap + start + RT_BOOTSTRAP_HEADER);
	uintptr_t aligned = (base + alignment - 1) & ~(uintptr_t)(alignment - 1);
	memcpy((void *)(aligned - sizeof(size_t)), &size, sizeof(size_t));
	return (void *)aligned; /* zero already: the buffer is static and never reused */
}

size_t
rt_real_bootstrap_size(const void *ptr)
{
	size_t size;
	memcpy(&size, (const unsigned char *)ptr - sizeof(size_t), sizeof(size_t));
	return size;
}

static void
rt_real_free_early(void *ptr)
{
	if (!ptr)
		return;
	rt_real_resolve();
	if (rt_real.free && rt_real.free != rt_real_free_early)
		rt_real.free(ptr);
}

bool
rt_real_resolving(void)
{
	return rt_real_in_resolve;
}

void *
rt_real_lazy(void **slot, const char *name)
{
	void *fn = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (!fn) {
		/* Two threads may both look it up: they find the same address. */
		fn = dlsym(RTLD_NEXT, name);
		__atomic_store_n(slot, fn, __ATOMIC_RELEASE);
	}
	return fn;
}

/* Assigning dlsym's void * to a function pointer is what dlsym(3) prescribes. */
#define RT_RESOLVE(field, name) *(void **)(&rt_real.field) = dlsym(RTLD_NEXT, name)
/* glibc's own entry points, for the unlikely case where RTLD_NEXT finds nothing. */
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

void
rt_real_resolve(void)
{
	if (rt_real_ready || rt_real_in_resolve)
		return;
	rt_real_in_resolve = true;
	RT_RESOLVE(malloc, "malloc");
	RT_RESOLVE(free, "free");
	RT_RESOLVE(calloc, "calloc");
	RT_RESOLVE(realloc, "realloc");
	RT_RESOLVE(reallocarray, "reallocarray");
	RT_RESOLVE(posix_memalign, "posix_memalign");
	RT_RESOLVE(aligned_alloc, "aligned_alloc");
	RT_RESOLVE(memalign, "memalign");
	RT_RESOLVE(valloc, "valloc");
	RT_RESOLVE(pvalloc, "pvalloc");
	RT_RESOLVE(malloc_usable_size, "malloc_usable_size");
	RT_RESOLVE(exit_now, "_exit");
	RT_RESOLVE(exit_now_c, "_Exit");
	RT_RESOLVE(execve, "execve");
	RT_RESOLVE(execv, "execv");
	RT_RESOLVE(execvp, "execvp");
	RT_RESOLVE(execvpe, "execvpe");
	RT_RESOLVE(fexecve, "fexecve");
	RT_RESOLVE(execveat, "execveat");
	RT_RESOLVE(posix_spawn, "posix_spawn");
	RT_RESOLVE(posix_spawnp, "posix_spawnp");
	RT_RESOLVE(system, "system");
	RT_RESOLVE(popen, "popen");
	RT_RESOLVE(sigaction, "sigaction");
	RT_RESOLVE(signal, "signal");
	RT_RESOLVE(bsd_signal, "bsd_signal");
	RT_RESOLVE(sysv_signal, "sysv_signal");
	RT_RESOLVE(sigset, "sigset");
	RT_RESOLVE(pthread_create, "pthread_create");
	RT_RESOLVE(fork, "fork");
	if (!rt_real.malloc || !rt_real.free || !rt_real.calloc || !rt_real.realloc) {
		rt_real.malloc = __libc_malloc;
		rt_real.free = __libc_free;
		rt_real.calloc = __libc_calloc;
		rt_real.realloc = __libc_realloc;
		rt_real.memalign = __libc_memalign;
	}
	__atomic_store_n(&rt_real_ready, true, __ATOMIC_RELEASE);
	rt_real_in_resolve = false;
}
