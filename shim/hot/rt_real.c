/* Resolution reads the dynamic symbol tables of the objects loaded after this one (policy/rt_elf),
 * in load order, which for the objects loaded at start-up is ld.so's global lookup order: the
 * answer dlsym(RTLD_NEXT) gives, for about a tenth of its cost, with no loader lock and no
 * allocation. dlsym is asked only what the tables cannot answer (roundtrim(7), OVERHEAD).
 *
 * free and realloc are reached through slots that the hot path calls without a test. Until
 * resolution, and for good once a bootstrap block has been handed out, they hold the slow
 * versions below, which tell bootstrap blocks apart; otherwise the allocator's own functions. */
#include "rt_real.h"
#include "rt_elf.h"
#include "rt_pages.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static void rt_real_free_slow(void *ptr);
static void *rt_real_realloc_slow(void *ptr, size_t size);

struct rt_real_fns rt_real = {.free = rt_real_free_slow, .realloc = rt_real_realloc_slow};
bool rt_real_ready;

/* The allocator's free and realloc, behind the slow versions. */
static void (*rt_real_next_free)(void *);
static void *(*rt_real_next_realloc)(void *, size_t);

static __thread bool rt_real_in_resolve;

/* dlsym of a missing symbol makes two small allocations on glibc 2.36; a few KiB is plenty. */
#define RT_BOOTSTRAP_HEADER 16
RT_PAGES_APART unsigned char rt_real_bootstrap[RT_BOOTSTRAP_SIZE];
static atomic_size_t rt_bootstrap_used;
/* Set before a bootstrap block is handed out; read after rt_real_ready is published. */
static atomic_bool rt_bootstrap_given;

void *
rt_real_bootstrap_alloc(size_t size, size_t alignment)
{
	if (alignment < RT_BOOTSTRAP_HEADER)
		alignment = RT_BOOTSTRAP_HEADER;
	if (size > RT_BOOTSTRAP_SIZE || alignment > 4096)
		return NULL;
	/* With rt_real_resolve's publication, in the opposite order (both sequentially
	 * consistent): either that thread sees this flag and keeps the slow free and realloc, or
	 * this one sees the allocator ready and hands out nothing (dlsym, the only caller, copes
	 * with a NULL), so that no bootstrap block ever reaches the allocator's free. */
	atomic_store(&rt_bootstrap_given, true);
	if (__atomic_load_n(&rt_real_ready, __ATOMIC_SEQ_CST))
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

/* Bootstrap blocks are never reused, and the allocator never saw them. */
static void
rt_real_free_slow(void *ptr)
{
	if (!ptr || rt_real_is_bootstrap(ptr))
		return;
	if (!rt_real_is_ready())
		rt_real_resolve();
	void (*next)(void *) = __atomic_load_n(&rt_real_next_free, __ATOMIC_ACQUIRE);
	/* NULL only inside this thread's own resolution: the block is left. */
	if (next)
		next(ptr);
}

static void *
rt_real_realloc_slow(void *ptr, size_t size)
{
	if (ptr && rt_real_is_bootstrap(ptr)) {
		size_t old = rt_real_bootstrap_size(ptr);
		void *p =
		    rt_real_is_ready() ? rt_real.malloc(size) : rt_real_bootstrap_alloc(size, 0);
		if (p)
			memcpy(p, ptr, old < size ? old : size);
		return p;
	}
	if (!rt_real_is_ready())
		rt_real_resolve();
	void *(*next)(void *, size_t) = __atomic_load_n(&rt_real_next_realloc, __ATOMIC_ACQUIRE);
	if (next)
		return next(ptr, size);
	return ptr ? NULL : rt_real_bootstrap_alloc(size, 0);
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

/* --- The objects after this one. */

#define RT_REAL_OBJECTS 32

/* This object's dynamic section, from the linker. */
extern ElfW(Dyn) _DYNAMIC[] __attribute__((visibility("hidden")));

struct rt_real_scope {
	struct rt_elf_object objects[RT_REAL_OBJECTS];
	unsigned count;
	bool self_seen;
	bool complete; /* every object after this one is in objects */
};

static int
rt_real_collect(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct rt_real_scope *scope = arg;
	const ElfW(Dyn) *dyn = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	if (!scope->self_seen) {
		scope->self_seen = dyn == _DYNAMIC;
		return 0;
	}
	if (scope->count == RT_REAL_OBJECTS) {
		scope->complete = false;
		return 1;
	}
	/* An object without tables answers RT_ELF_ASK to every name. */
	rt_elf_object_init(&scope->objects[scope->count++], dyn, info->dlpi_addr);
	return 0;
}

/* name's next definition, as dlsym(RTLD_NEXT, name) finds it. */
static void *
rt_real_next(const struct rt_real_scope *scope, const char *name)
{
	uint32_t hash = rt_elf_hash(name);
	for (unsigned i = 0; scope->self_seen && i < scope->count; i++) {
		uintptr_t addr;
		switch (rt_elf_lookup(&scope->objects[i], name, hash, &addr)) {
		case RT_ELF_DEFINED:
			return (void *)addr;
		case RT_ELF_ABSENT:
			continue;
		case RT_ELF_ASK:
			return dlsym(RTLD_NEXT, name);
		}
	}
	/* Not found where this object could look (it was not found itself, under dlmopen; or it
	 * was loaded by dlopen, after the objects that define these names). */
	if (!scope->self_seen || !scope->complete)
		return dlsym(RTLD_NEXT, name);
	return NULL;
}

void *
rt_real_lookup_next(const char *name)
{
	struct rt_real_scope scope = {.complete = true};
	dl_iterate_phdr(rt_real_collect, &scope);
	return rt_real_next(&scope, name);
}

void *
rt_real_lookup_next_once(void *_Atomic *slot, const char *name)
{
	void *fn = atomic_load_explicit(slot, memory_order_acquire);
	if (!fn) {
		fn = rt_real_lookup_next(name);
		atomic_store_explicit(slot, fn, memory_order_release);
	}
	return fn;
}

/* Assigning a void * to a function pointer is what dlsym(3) prescribes. Two threads may resolve
 * at once (before the constructor): each stores what the other does. */
#define RT_RESOLVE(field, name) *(void **)(&rt_real.field) = rt_real_next(&scope, name)

void
rt_real_resolve(void)
{
	if (rt_real_is_ready() || rt_real_in_resolve)
		return;
	/* Reached from the program's free, realloc and other calls, which leave errno alone. */
	int saved_errno = errno;
	rt_real_in_resolve = true;
	struct rt_real_scope scope = {.complete = true};
	dl_iterate_phdr(rt_real_collect, &scope);
	/* free and realloc have slots of their own, published below. */
	void (*next_free)(void *);
	void *(*next_realloc)(void *, size_t);
	*(void **)&next_free = rt_real_next(&scope, "free");
	*(void **)&next_realloc = rt_real_next(&scope, "realloc");
	RT_RESOLVE(malloc, "malloc");
	RT_RESOLVE(calloc, "calloc");
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
	/* glibc's own entry points, for the unlikely case where nothing after this object
	 * defines the four. */
	if (!rt_real.malloc || !next_free || !rt_real.calloc || !next_realloc) {
		RT_RESOLVE(malloc, "__libc_malloc");
		RT_RESOLVE(calloc, "__libc_calloc");
		RT_RESOLVE(memalign, "__libc_memalign");
		*(void **)&next_free = rt_real_next(&scope, "__libc_free");
		*(void **)&next_realloc = rt_real_next(&scope, "__libc_realloc");
	}
	__atomic_store_n(&rt_real_next_free, next_free, __ATOMIC_RELEASE);
	__atomic_store_n(&rt_real_next_realloc, next_realloc, __ATOMIC_RELEASE);
	__atomic_store_n(&rt_real_ready, true, __ATOMIC_SEQ_CST);
	/* See rt_real_bootstrap_alloc. A slot that no longer holds the slow version holds a hook
	 * (the sampler's), which calls whatever it found there. */
	if (!atomic_load(&rt_bootstrap_given)) {
		void (*slow_free)(void *) = rt_real_free_slow;
		void *(*slow_realloc)(void *, size_t) = rt_real_realloc_slow;
		__atomic_compare_exchange_n(&rt_real.free, &slow_free, next_free, false,
		                            __ATOMIC_RELEASE, __ATOMIC_RELAXED);
		__atomic_compare_exchange_n(&rt_real.realloc, &slow_realloc, next_realloc, false,
		                            __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	}
	rt_real_in_resolve = false;
	errno = saved_errno;
}
