/* The OS-facing half of the glibc release (the rules, and why they are safe, are in
 * policy/rt_arena.c): where glibc's main arena is, reads that cannot fault, glibc's own lock
 * protocol on an arena's mutex, the pauses between holds, and madvise. */
#include "rt_glibc.h"
#include "rt_glibc_lock.h"
#include "rt_out.h"
#include "rt_pages.h"
#include "rt_probe.h"
#include "rt_proc.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* Where policy/rt_arena's offsets were read with `ptype /o` against glibc's debug symbols. */
#if defined(__x86_64__)
#define RT_GLIBC_LAYOUT_CHECKED 1
#else
#define RT_GLIBC_LAYOUT_CHECKED 0
#endif
/* An arena's bins are mostly empty when the library starts; a main arena shows at least this
 * many of its 127 bins pointing at themselves. */
#define RT_GLIBC_MIN_EMPTY_BINS 32
/* After an unlock that woke a waiter, how long the worker stays away from the lock at most when
 * the waiter does not come (the timer slack makes it about 100 us); it comes back as soon as the
 * waiter gives the lock back (rt_glibc_wait_turn). A fixed 200 us cost the release a tenth of
 * its time once its holds that a thread waits for last 0.5 ms (256 MiB of 16-128 B blocks, one
 * in 16 kept, a thread allocating: 820-893 ms against 719-778 ms, 5 runs each at a load of 1),
 * and the allocating thread did as many ops a millisecond. */
#define RT_GLIBC_HANDOVER_NS (50 * 1000)

static struct {
	bool ready;       /* found at start and not stood down since */
	bool validated;   /* every arena was locked, read and checked once, on the worker */
	bool damaged;     /* a check found the program's heap damaged: nothing walks it any more */
	bool consolidate; /* glibc's malloc_consolidate is the one rt_arena follows */
	void *(*malloc_fn)(size_t);
	void (*free_fn)(void *);
	pid_t pid; /* for process_vm_readv: a live task of this process */
	size_t page;
	uintptr_t main_arena;
	struct rt_arena_view view;
	struct rt_arena_result last;
} rt_g RT_PAGES_APART;

static uint64_t
rt_glibc_load(void *ctx, uintptr_t addr)
{
	(void)ctx;
	return __atomic_load_n((const uint64_t *)addr, __ATOMIC_ACQUIRE);
}

/* A read that fails instead of faulting: the kernel copies from our own address space. */
static bool
rt_glibc_peek(void *ctx, uintptr_t addr, uint64_t *out, size_t nwords)
{
	(void)ctx;
	return rt_proc_read_self(rt_g.pid, out, addr, nwords * 8);
}

/* The same, at each of n addresses, RT_GLIBC_PEEK_EACH of them a call (a short read: one of
 * them is not mapped). */
#define RT_GLIBC_PEEK_EACH 64

static bool
rt_glibc_peek_each(void *ctx, const uintptr_t *addrs, size_t n, size_t nwords, uint64_t *out)
{
	(void)ctx;
	struct iovec local[RT_GLIBC_PEEK_EACH], remote[RT_GLIBC_PEEK_EACH];
	for (size_t at = 0; at < n;) {
		size_t k = 0;
		for (; k < RT_GLIBC_PEEK_EACH && at + k < n; k++) {
			local[k] = (struct iovec){out + (at + k) * nwords, nwords * 8};
			remote[k] = (struct iovec){(void *)addrs[at + k], nwords * 8};
		}
		if (process_vm_readv(rt_g.pid, local, k, remote, k, 0) != (ssize_t)(k * nwords * 8))
			return false;
		at += k;
	}
	return true;
}

static void
rt_glibc_store(void *ctx, uintptr_t addr, uint64_t value)
{
	(void)ctx;
	__atomic_store_n((uint64_t *)addr, value, __ATOMIC_RELEASE);
}

/* As glibc's catomic_compare_and_exchange_val_acq on a fastbin's head. */
static bool
rt_glibc_cas(void *ctx, uintptr_t addr, uint64_t expected, uint64_t desired)
{
	(void)ctx;
	return __atomic_compare_exchange_n((uint64_t *)addr, &expected, desired, false,
	                                   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

static void
rt_glibc_lock(void *ctx, uintptr_t addr)
{
	(void)ctx;
	rt_glibc_lock_word((int *)addr);
}

static bool
rt_glibc_unlock(void *ctx, uintptr_t addr)
{
	(void)ctx;
	return rt_glibc_unlock_word((int *)addr);
}

static int64_t
rt_glibc_now_ns(void *ctx)
{
	(void)ctx;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The thread we woke must run before we take the lock again, or it finds it taken and sleeps
 * once more, as long as a hold each time. */
static void
rt_glibc_let_waiter_in(void *ctx, uintptr_t addr)
{
	(void)ctx;
	rt_glibc_wait_turn((int *)addr, RT_GLIBC_HANDOVER_NS);
}

static void
rt_glibc_yield(void *ctx)
{
	(void)ctx;
	sched_yield();
}

static void
rt_glibc_release_pages(void *ctx, uintptr_t start, uintptr_t end)
{
	(void)ctx;
	madvise((void *)start, end - start, MADV_DONTNEED);
}

static const struct rt_arena_ops rt_glibc_ops = {
    .direct = true,
    .load = rt_glibc_load,
    .peek = rt_glibc_peek,
    .peek_each = rt_glibc_peek_each,
    .store = rt_glibc_store,
    .cas = rt_glibc_cas,
    .lock = rt_glibc_lock,
    .unlock = rt_glibc_unlock,
    .let_waiter_in = rt_glibc_let_waiter_in,
    .yield = rt_glibc_yield,
    .release = rt_glibc_release_pages,
    .now_ns = rt_glibc_now_ns,
};

static struct rt_arena_env
rt_glibc_env(void)
{
	return (struct rt_arena_env){
	    .ops = &rt_glibc_ops,
	    .budget = rt_arena_default_budget(),
	    .page = rt_g.page,
	    .heap_max = RT_ARENA_HEAP_MAX,
	    .consolidate = rt_g.consolidate,
	};
}

static bool
rt_glibc_off(const char *why, const char *detail)
{
	rt_warn("glibc arena release off: %s%s%s; malloc_trim returns what it can", why,
	        detail ? ": " : "", detail ? detail : "");
	rt_g.ready = false;
	return false;
}

/* A check failed. Where that says the program's heap is damaged, malloc_trim and mallinfo2 would
 * walk the same chunks, and glibc aborts the program (malloc_printerr) on a chunk that breaks its
 * invariants, although the program itself may never walk them again: every action and reading
 * that walks the heap stops for good. */
static bool
rt_glibc_failed(const char *why)
{
	if (!rt_arena_damaged(why, rt_g.validated))
		return rt_glibc_off(why, NULL);
	/* A word the walk could not read is no damage of the heap's: the reads themselves may
	 * have stopped working since the start (a seccomp filter installed later refuses
	 * process_vm_readv, the task went away). The heap is sound as far as anyone knows. */
	uint64_t probe = 0x726f756e64747269, seen = 0;
	if (!rt_glibc_peek(NULL, (uintptr_t)&probe, &seen, 1) || seen != probe)
		return rt_glibc_off("process_vm_readv no longer reads this process", why);
	rt_warn("glibc heap actions off: %s: the program's heap looks damaged; malloc_trim would "
	        "abort on it",
	        why);
	rt_g.damaged = true;
	rt_g.ready = false;
	return false;
}

struct rt_glibc_scan {
	uintptr_t inside; /* an address in libc's text: which object to look at */
	bool seen;
	size_t candidates;
	uintptr_t found;
};

/* In libc's writable segments (.data holds main_arena), every place that looks like a main
 * arena. */
static int
rt_glibc_scan_object(struct dl_phdr_info *obj, size_t size, void *arg)
{
	(void)size;
	struct rt_glibc_scan *scan = arg;
	bool mine = false;
	for (int i = 0; i < obj->dlpi_phnum && !mine; i++) {
		const ElfW(Phdr) *ph = &obj->dlpi_phdr[i];
		uintptr_t start = obj->dlpi_addr + ph->p_vaddr;
		mine = ph->p_type == PT_LOAD && scan->inside - start < ph->p_memsz;
	}
	if (!mine)
		return 0;
	scan->seen = true;
	for (int i = 0; i < obj->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &obj->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
			continue;
		uintptr_t start = (obj->dlpi_addr + ph->p_vaddr + 7) & ~(uintptr_t)7;
		uintptr_t end = (obj->dlpi_addr + ph->p_vaddr + ph->p_memsz) & ~(uintptr_t)7;
		if (end <= start)
			continue;
		/* A copy, so that the rules read a snapshot, not words that change under them. */
		size_t bytes = end - start;
		void *copy =
		    mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (copy == MAP_FAILED)
			continue;
		memcpy(copy, (const void *)start, bytes);
		uintptr_t found = 0;
		size_t n =
		    rt_arena_find_main(copy, bytes / 8, start, RT_GLIBC_MIN_EMPTY_BINS, &found);
		if (n && !scan->candidates)
			scan->found = found;
		scan->candidates += n;
		munmap(copy, bytes);
	}
	return 1;
}

bool
rt_glibc_init(void *(*malloc_fn)(size_t), void (*free_fn)(void *))
{
	rt_g.ready = false;
	if (!RT_GLIBC_LAYOUT_CHECKED)
		return rt_glibc_off("its layout of glibc's arenas is only checked on x86_64", NULL);
	const char *version = gnu_get_libc_version();
	if (!rt_arena_version_supported(version))
		return rt_glibc_off("glibc's version is not one of 2.35 to 2.41", version);
	Dl_info libc, served;
	if (!dladdr((void *)gnu_get_libc_version, &libc) || !dladdr((void *)malloc_fn, &served) ||
	    libc.dli_fbase != served.dli_fbase)
		return rt_glibc_off("malloc is not served by glibc's libc itself",
		                    served.dli_fname);
	rt_g.consolidate = rt_arena_consolidation_checked(version);
	rt_g.page = (size_t)sysconf(_SC_PAGESIZE);
	rt_g.pid = getpid();
	uint64_t probe = 0x726f756e64747269, seen = 0;
	if (rt_probe_kills(SYS_process_vm_readv))
		return rt_glibc_off("a seccomp filter kills the process on process_vm_readv", NULL);
	if (!rt_glibc_peek(NULL, (uintptr_t)&probe, &seen, 1))
		return rt_glibc_off("process_vm_readv cannot read this process", strerror(errno));
	if (seen != probe)
		return rt_glibc_off("process_vm_readv read back another value", NULL);

	/* The main arena's bins are set up by the first malloc (ptmalloc_init). */
	free_fn(malloc_fn(1));
	struct rt_glibc_scan scan = {.inside = (uintptr_t)gnu_get_libc_version};
	dl_iterate_phdr(rt_glibc_scan_object, &scan);
	const char *why = NULL;
	unsigned narenas = 0;
	struct rt_arena_env env = rt_glibc_env();
	if (!scan.seen)
		why = "libc's segments were not found";
	else if (scan.candidates != 1)
		why = scan.candidates ? "more than one place in libc looks like the main arena"
		                      : "no place in libc looks like the main arena";
	else
		why = rt_arena_check_ring(&env, scan.found, &narenas);
	if (why)
		return rt_glibc_off(why, NULL);
	rt_g.malloc_fn = malloc_fn;
	rt_g.free_fn = free_fn;
	rt_g.main_arena = scan.found;
	rt_g.validated = false;
	rt_g.ready = true;
	return true;
}

/* Before the first release (on the worker, or in an API caller): every arena, locked as a
 * release locks it, read and checked, nothing given back; and a chunk the acting thread just
 * allocated must lie in one of them. The walk goes round until it is back at the main arena, not a
 * number of steps: glibc puts each new arena right after the main one, so that a program thread's
 * arena made meanwhile would push the last one, the worker's own (taken as it started), out of a
 * counted walk. */
static const char *
rt_glibc_validate(void)
{
	struct rt_arena_env env = rt_glibc_env();
	char *mine = rt_g.malloc_fn(200);
	if (!mine)
		return "malloc failed";
	unsigned narenas = 0;
	const char *why = rt_arena_check_ring(&env, rt_g.main_arena, &narenas);
	bool found_mine = false;
	uintptr_t a = rt_g.main_arena;
	for (unsigned i = 0; !why; i++) {
		if (i >= env.budget.max_arenas) {
			why = "the arena ring does not close through the main arena";
			break;
		}
		why = rt_arena_dry_run(&env, a, i == 0, &rt_g.view);
		found_mine |= !why && rt_arena_view_holds(&rt_g.view, (uintptr_t)mine - 16);
		a = (uintptr_t)rt_glibc_load(NULL, a + RT_ARENA_NEXT);
		if (a == rt_g.main_arena)
			break;
	}
	rt_g.free_fn(mine);
	if (!why && !found_mine)
		why = "a chunk just allocated lies in none of the arenas found";
	return why;
}

bool
rt_glibc_ready(void)
{
	return rt_g.ready;
}

bool
rt_glibc_damaged(void)
{
	return rt_g.damaged;
}

/* Ready, and every arena checked once. */
static bool
rt_glibc_usable(void)
{
	if (!rt_g.ready)
		return false;
	/* The acting thread's own task (the worker's, or an API caller's), not the process's id:
	 * once the main thread has ended (pthread_exit), the thread-group leader is a zombie
	 * without memory, and a read through it fails (process_vm_readv: ESRCH). */
	rt_g.pid = gettid();
	const char *why = rt_g.validated ? NULL : rt_glibc_validate();
	if (why)
		return rt_glibc_failed(why);
	rt_g.validated = true;
	return true;
}

uint64_t
rt_glibc_free_chunks(uint64_t most)
{
	if (!rt_glibc_usable())
		return RT_ALLOCATOR_CHUNKS_UNKNOWN;
	struct rt_arena_env env = rt_glibc_env();
	struct rt_arena_result counted;
	if (rt_arena_count(&env, rt_g.main_arena, most, &rt_g.view, &counted) == 0)
		return counted.chunks;
	rt_glibc_failed(counted.failure);
	return RT_ALLOCATOR_CHUNKS_UNKNOWN;
}

int
rt_glibc_release(size_t keep)
{
	if (!rt_glibc_usable())
		return -1;
	struct rt_arena_env env = rt_glibc_env();
	if (rt_arena_release(&env, rt_g.main_arena, keep, &rt_g.view, &rt_g.last) == 0)
		return 0;
	rt_glibc_failed(rt_g.last.failure);
	return -1;
}
