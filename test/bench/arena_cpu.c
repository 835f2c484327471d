/* arena_cpu: the glibc release's own cost against malloc_trim(0)'s, in this process, with no
 * library loaded: T threads build stall's heap (blocks of --min..--max bytes, log-uniform,
 * touched, one in --keep kept, interleaved; the same seeds as stall) and stay alive without
 * allocating; then the main thread either calls malloc_trim(0) or runs policy/rt_arena's
 * release itself, with the shim's accesses (inline words, glibc's lock protocol, madvise) and
 * nobody waiting for a lock. Under callgrind with --toggle-collect=malloc_trim or
 * --toggle-collect=rt_arena_release, only the action's instructions are counted. The library's
 * own figure (stall --action roundtrim) adds the FIFO, the worker's first check of every arena
 * and the wall clock of a shared machine; this one is the thread's CPU time alone.
 * Prints one line:
 *   action=A heap_mib=M rss_before_kib=B rss_after_kib=C cpu_ms=P user_ms=U sys_ms=S
 *       wall_ms=W fast_chunks=F holds=H
 *
 * usage: arena_cpu --mib M [--threads T] [--min BYTES] [--max BYTES] [--keep N]
 *                  --action trim|release */
#include "bench_common.h"
#include "bench_heap.h"
#include "rt_arena.h"
#include "worker/rt_glibc_lock.h"

#include <gnu/libc-version.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/uio.h>

struct ac_thread {
	pthread_t thread;
	uint64_t rng;
	size_t bytes;
};

static double ac_min = 32, ac_max = 2048;
static long ac_keep = 16;
static pthread_barrier_t ac_built;
static pthread_mutex_t ac_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ac_cond = PTHREAD_COND_INITIALIZER;
static bool ac_stop;

static void *
ac_build(void *arg)
{
	struct ac_thread *t = arg;
	size_t cap = 1 << 16, n = 0;
	free(malloc(256 * 1024));
	void **blocks = malloc(cap * sizeof(*blocks));
	if (!blocks)
		bench_die("out of memory");
	for (size_t used = 0; used < t->bytes; n++) {
		if (n == cap) {
			void **more = realloc(blocks, (cap *= 2) * sizeof(*blocks));
			if (!more)
				bench_die("out of memory");
			blocks = more;
		}
		/* stall's sizes, so that the heap is stall's. */
		size_t size = bench_heap_size(&t->rng, ac_min, ac_max);
		blocks[n] = malloc(size);
		if (!blocks[n])
			bench_die("out of memory");
		memset(blocks[n], 1, size);
		used += size;
	}
	for (size_t i = 0; i < n; i++)
		if (i % (size_t)ac_keep)
			free(blocks[i]);
	pthread_barrier_wait(&ac_built);
	pthread_mutex_lock(&ac_mutex);
	while (!ac_stop)
		pthread_cond_wait(&ac_cond, &ac_mutex);
	pthread_mutex_unlock(&ac_mutex);
	return NULL;
}

/* The shim's accesses (shim/worker/rt_glibc.c): reads that cannot fault, glibc's lock. */
static bool
ac_peek(void *ctx, uintptr_t addr, uint64_t *out, size_t nwords)
{
	(void)ctx;
	struct iovec local = {out, nwords * 8}, remote = {(void *)addr, nwords * 8};
	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)(nwords * 8);
}

static void
ac_lock(void *ctx, uintptr_t addr)
{
	(void)ctx;
	rt_glibc_lock_word((int *)addr);
}

static bool
ac_unlock(void *ctx, uintptr_t addr)
{
	(void)ctx;
	return rt_glibc_unlock_word((int *)addr);
}

static void
ac_let_waiter_in(void *ctx, uintptr_t addr)
{
	(void)ctx;
	(void)addr;
}

static void
ac_release_pages(void *ctx, uintptr_t start, uintptr_t end)
{
	(void)ctx;
	madvise((void *)start, end - start, MADV_DONTNEED);
}

static int64_t
ac_now_ns(void *ctx)
{
	(void)ctx;
	return bench_now_ns();
}

static const struct rt_arena_ops ac_ops = {
    .direct = true,
    .peek = ac_peek,
    .lock = ac_lock,
    .unlock = ac_unlock,
    .let_waiter_in = ac_let_waiter_in,
    .release = ac_release_pages,
    .now_ns = ac_now_ns,
};

static int64_t
ac_clock_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t
ac_tv_ns(struct timeval tv)
{
	return (int64_t)tv.tv_sec * 1000000000 + (int64_t)tv.tv_usec * 1000;
}

int
main(int argc, char **argv)
{
	bench_name = "arena_cpu";
	long mib = 0, threads = 2;
	const char *action = NULL;
	for (int i = 1; i < argc; i += 2) {
		if (!strcmp(argv[i], "--mib"))
			mib = bench_arg_long(argv[i], argv[i + 1], 1, 1 << 20);
		else if (!strcmp(argv[i], "--threads"))
			threads = bench_arg_long(argv[i], argv[i + 1], 1, 64);
		else if (!strcmp(argv[i], "--min"))
			ac_min = (double)bench_arg_long(argv[i], argv[i + 1], 16, 1 << 30);
		else if (!strcmp(argv[i], "--max"))
			ac_max = (double)bench_arg_long(argv[i], argv[i + 1], 16, 1 << 30);
		else if (!strcmp(argv[i], "--keep"))
			ac_keep = bench_arg_long(argv[i], argv[i + 1], 1, 1 << 20);
		else if (!strcmp(argv[i], "--action") && i + 1 < argc)
			action = argv[i + 1];
		else
			bench_die(
			    "usage: arena_cpu --mib M [--threads T] [--min BYTES] [--max BYTES] "
			    "[--keep N] --action trim|release");
	}
	if (!mib || !action || (strcmp(action, "trim") && strcmp(action, "release")))
		bench_die("--mib and --action trim|release are needed");
	if (!strcmp(action, "release") && !rt_arena_consolidation_checked(gnu_get_libc_version()))
		bench_die("the release empties fastbins on glibc 2.36 only; this is %s",
		          gnu_get_libc_version());

	/* The main arena, from a chunk in its unsorted bin: its fd is the bin's header, which
	 * lies RT_ARENA_BINS - RT_ARENA_CHUNK_FD bytes into the arena (too large for the tcache
	 * and the fastbins, and a block after it keeps it from the top). */
	uint64_t *probe = malloc(40000);
	void *fence = malloc(16);
	free(probe);
	uintptr_t main_arena =
	    (uintptr_t)__atomic_load_n(probe, __ATOMIC_RELAXED) - rt_arena_bin_at(0, 1);
	(void)fence;

	pthread_barrier_init(&ac_built, NULL, (unsigned)threads + 1);
	struct ac_thread *pool = calloc((size_t)threads, sizeof(*pool));
	if (!pool)
		bench_die("out of memory");
	for (long i = 0; i < threads; i++) {
		pool[i].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		pool[i].bytes = (size_t)mib * 1024 * 1024 / (size_t)threads;
		int err = pthread_create(&pool[i].thread, NULL, ac_build, &pool[i]);
		if (err)
			bench_die("pthread_create: %s", strerror(err));
	}
	pthread_barrier_wait(&ac_built);

	static struct rt_arena_view view;
	struct rt_arena_result res = {0};
	struct rt_arena_env env = {
	    .ops = &ac_ops,
	    .budget = rt_arena_default_budget(),
	    .page = (size_t)sysconf(_SC_PAGESIZE),
	    .heap_max = RT_ARENA_HEAP_MAX,
	    .consolidate = true,
	};
	long rss_before = bench_rss_kib();
	struct rusage r0, r1;
	getrusage(RUSAGE_THREAD, &r0);
	int64_t cpu0 = ac_clock_ns(CLOCK_THREAD_CPUTIME_ID), wall0 = bench_now_ns();
	if (!strcmp(action, "trim"))
		malloc_trim(0);
	else if (rt_arena_release(&env, main_arena, 0, &view, &res) != 0)
		bench_die("the release stopped: %s", res.failure);
	int64_t cpu = ac_clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0, wall = bench_now_ns() - wall0;
	getrusage(RUSAGE_THREAD, &r1);
	long rss_after = bench_rss_kib();

	pthread_mutex_lock(&ac_mutex);
	ac_stop = true;
	pthread_cond_broadcast(&ac_cond);
	pthread_mutex_unlock(&ac_mutex);
	for (long i = 0; i < threads; i++)
		pthread_join(pool[i].thread, NULL);
	printf("action=%s heap_mib=%ld rss_before_kib=%ld rss_after_kib=%ld cpu_ms=%.1f "
	       "user_ms=%.1f sys_ms=%.1f wall_ms=%.1f fast_chunks=%llu holds=%u\n",
	       action, mib, rss_before, rss_after, (double)cpu / 1e6,
	       (double)(ac_tv_ns(r1.ru_utime) - ac_tv_ns(r0.ru_utime)) / 1e6,
	       (double)(ac_tv_ns(r1.ru_stime) - ac_tv_ns(r0.ru_stime)) / 1e6, (double)wall / 1e6,
	       (unsigned long long)res.fast_chunks, res.holds);
	free(pool);
	return 0;
}
