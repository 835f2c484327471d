/* stall: the longest single malloc+free that an allocating thread sees while the heap is given
 * back to the OS. T threads build a fragmented heap of M MiB (blocks of 64 B..256 KiB, log-
 * uniform, touched; nine in ten freed, interleaved) and stay alive. Then thread 0, in its own
 * fragmented arena, loops malloc+free (a ring of 64 blocks of the same sizes) and times every pair
 * while the main thread runs the action:
 *   self       the program calls the allocator's release itself: malloc_trim(0) on glibc,
 *              mallctl("arena.4096.purge") on jemalloc (what a program could do itself)
 *   roundtrim  one "round" line to the FIFO of the roundtrim loaded in this process (the caller
 *              sets LD_PRELOAD, ROUNDTRIM_FIFO, ROUNDTRIM_STATS, ROUNDTRIM_GC_ROUNDS=1); the action
 *              ends when the round's stats line appears; its duration is the line's duration_us
 *   none       nothing, for 200 ms: the machine's own worst op, as a control
 * Prints one line:
 *   action=A allocator=glibc|jemalloc heap_mib=M rss_before_kib=B rss_after_kib=C action_ms=D
 *   worst_op_ms=W p99_op_us=P ops=N worst_unpreempted_op_ms=U preempted_ops=K op_fault_kib=F
 * U is the worst op during which the measured thread was never preempted (no involuntary context
 * switch, from getrusage): time it spent waiting for a lock or in the kernel, not time another
 * process took its core, except the wait for a core after a wake-up from a lock's wait, which
 * getrusage counts with neither (8.6 to 19.2 ms seen with no hold over 0.6 ms). On a busy machine W
 * is mostly the latter; U is what the release itself costs the thread (a lock holder that is
 * preempted still counts, as it should). F is what the measured thread's ops in the window faulted
 * in (minor faults, KiB): its own new memory, part of C. A release that keeps the thread waiting
 * lets it fault in less than one it lets run. B and C leave out the pages of the bench's own log of
 * op durations (stall_log_kib).
 *
 * --min and --max set the blocks' sizes (log-uniform; 64 B..256 KiB), --keep N keeps one block in
 * N (10). --idle: thread 0 stays alive without allocating, as the others do (the release's own
 * time with nobody waiting for a lock; the op figures are then 0).
 *
 * W and N count every op of the window; P only the first --max-ops (4,194,304 at most: the log's
 * size). W was the log's largest once: at 4 GiB of 16-128 B blocks the log filled before
 * malloc_trim(0) reached the measured thread's arena, and a 5-6.8 s wait read as 4-8 ms.
 *
 * usage: stall --mib M [--threads T] [--min BYTES] [--max BYTES] [--keep N] [--idle]
 *              [--max-ops N] --action self|roundtrim|none */
#include "bench_heap.h"
#include "bench_read.h"

#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/resource.h>

#define STALL_RING 64
#define STALL_MAX_OPS (1 << 22)
/* A release of 4 GiB of small blocks with a thread allocating took up to 56 s. */
#define STALL_TIMEOUT_MS 300000

enum stall_phase { STALL_BUILD, STALL_RUN, STALL_STOP };

struct stall_thread {
	pthread_t thread;
	int index;
	uint64_t rng;
	size_t bytes;
};

static _Atomic int stall_phase = STALL_BUILD;
/* 0 before the action's window, 1 while it is open, 2 after: an op overlaps the window when the
 * value was at most 1 at its start and at least 1 at its end, even if the whole window passed
 * while the op was blocked. */
static atomic_int stall_window;
static atomic_int stall_built;
/* The measured thread's op durations, ns: a mapping of its own, whose pages that the ops wrote
 * are taken out of the RSS figures (stall_log_kib). */
static int64_t *stall_ops;
static atomic_long stall_nops;
/* How many ops the log keeps (--max-ops): later ones are counted in the worst figures alone. */
static long stall_max_ops = STALL_MAX_OPS;
static long stall_measured;
static int64_t stall_worst;             /* ns: every op of the window, logged or not */
static int64_t stall_worst_unpreempted; /* ns */
static long stall_preempted;
/* Pages the measured thread faulted in during the window's ops (minor faults): its own new
 * memory, part of the RSS after, whoever gave those pages back before. */
static long stall_faults;

/* The blocks' sizes (log-uniform between them) and which of them stay: one in stall_keep. */
static double stall_min = 64, stall_max = 256 * 1024;
static long stall_keep = 10;
static bool stall_idle;

static size_t
stall_size(uint64_t *rng)
{
	return bench_heap_size(rng, stall_min, stall_max);
}

static void
stall_build(struct stall_thread *t)
{
	size_t cap = 1 << 16, n = 0;
	/* As after a program's first round: freeing one mmapped block raises glibc's dynamic mmap
	 * threshold, so that the large blocks below come from the arena, not from mmap. */
	free(malloc(256 * 1024));
	void **blocks = malloc(cap * sizeof(*blocks));
	for (size_t used = 0; used < t->bytes; n++) {
		if (n == cap)
			blocks = realloc(blocks, (cap *= 2) * sizeof(*blocks));
		size_t size = stall_size(&t->rng);
		blocks[n] = malloc(size);
		if (!blocks || !blocks[n])
			bench_die("out of memory");
		memset(blocks[n], 1, size);
		used += size;
	}
	/* The survivors are leaked on purpose: they pin the heap until the program exits. */
	for (size_t i = 0; i < n; i++)
		if (i % (size_t)stall_keep)
			free(blocks[i]);
}

static void
stall_measure(struct stall_thread *t)
{
	void *ring[STALL_RING] = {0};
	size_t slot = 0;
	while (atomic_load(&stall_phase) != STALL_STOP) {
		size_t size = stall_size(&t->rng);
		struct rusage r0, r1;
		getrusage(RUSAGE_THREAD, &r0);
		int w0 = atomic_load(&stall_window);
		int64_t t0 = bench_now_ns();
		free(ring[slot]);
		ring[slot] = malloc(size);
		int64_t dt = bench_now_ns() - t0;
		int measuring = w0 <= 1 && atomic_load(&stall_window) >= 1;
		getrusage(RUSAGE_THREAD, &r1);
		if (measuring) {
			stall_faults += r1.ru_minflt - r0.ru_minflt;
			stall_measured++;
			if (dt > stall_worst)
				stall_worst = dt;
		}
		if (measuring && r1.ru_nivcsw != r0.ru_nivcsw)
			stall_preempted++;
		else if (measuring && dt > stall_worst_unpreempted)
			stall_worst_unpreempted = dt;
		if (!ring[slot])
			bench_die("out of memory");
		*(volatile char *)ring[slot] = 1;
		slot = (slot + 1) % STALL_RING;
		long k = atomic_load(&stall_nops);
		if (measuring && k < stall_max_ops) {
			stall_ops[k] = dt;
			atomic_store(&stall_nops, k + 1);
		}
	}
	for (size_t i = 0; i < STALL_RING; i++)
		free(ring[i]);
}

static void *
stall_main(void *arg)
{
	struct stall_thread *t = arg;
	stall_build(t);
	atomic_fetch_add(&stall_built, 1);
	if (t->index == 0 && !stall_idle) {
		stall_measure(t);
		return NULL;
	}
	/* The other builders stay alive, as a persistent pool does, without allocating. */
	while (atomic_load(&stall_phase) != STALL_STOP) {
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* The resident KiB of the op log: the more ops the window holds, the more of it (8 bytes an
 * op, 32 MiB at most); a release that keeps the measured thread waiting would otherwise leave
 * less RSS than one that lets it run (1.2 MiB of 1.5 at 256 MiB of 1-128 KiB blocks). */
static long
stall_log_kib(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = STALL_MAX_OPS * sizeof(*stall_ops);
	size_t pages = (bytes + page - 1) / page, resident = 0;
	unsigned char *vec = malloc(pages);
	if (!vec || mincore(stall_ops, bytes, vec) != 0)
		bench_die("mincore of the op log: %s", strerror(errno));
	for (size_t i = 0; i < pages; i++)
		resident += vec[i] & 1;
	free(vec);
	return (long)(resident * page / 1024);
}

static void
stall_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Asks the roundtrim loaded in this process for one round and waits for the round's stats line;
 * returns the action's duration in ns as the library measured it. */
static int64_t
stall_roundtrim(void)
{
	struct bench_files f;
	char buf[8192];
	bench_files_of_this_process(&f, "--action roundtrim");
	bench_wait_started(&f, buf, sizeof(buf), STALL_TIMEOUT_MS);
	int fd = bench_fifo_open(f.fifo);
	int stats_fd = bench_watch_dir(f.stats, IN_MODIFY | IN_CREATE);
	atomic_store(&stall_window, 1);
	if (fd < 0 || write(fd, "round\n", 6) != 6)
		bench_die("cannot write to %s: %s", f.fifo, strerror(errno));
	struct bench_stats_wait round = {.round = 1};
	if (!bench_wait_file(stats_fd, f.stats, bench_stats_has_round, &round, buf, sizeof(buf),
	                     STALL_TIMEOUT_MS))
		bench_die("round 1 never reached %s", f.stats);
	atomic_store(&stall_window, 2);
	close(fd);
	close(stats_fd);
	if (!strcmp(round.found.action, "none"))
		bench_die("roundtrim took no action: %s", buf);
	return (int64_t)round.found.rec.duration_us * 1000;
}

int
main(int argc, char **argv)
{
	long mib = 1024, threads = 2;
	const char *action = NULL;
	bench_name = "stall";
	for (int i = 1; i < argc; i += 2) {
		if (!strcmp(argv[i], "--idle")) {
			stall_idle = true;
			i--;
		} else if (!strcmp(argv[i], "--mib"))
			mib = bench_arg_long(argv[i], argv[i + 1], 1, 1 << 20);
		else if (!strcmp(argv[i], "--threads"))
			threads = bench_arg_long(argv[i], argv[i + 1], 1, 64);
		else if (!strcmp(argv[i], "--min"))
			stall_min = (double)bench_arg_long(argv[i], argv[i + 1], 16, 1 << 30);
		else if (!strcmp(argv[i], "--max"))
			stall_max = (double)bench_arg_long(argv[i], argv[i + 1], 16, 1 << 30);
		else if (!strcmp(argv[i], "--keep"))
			stall_keep = bench_arg_long(argv[i], argv[i + 1], 1, 1 << 20);
		else if (!strcmp(argv[i], "--max-ops"))
			stall_max_ops = bench_arg_long(argv[i], argv[i + 1], 1, STALL_MAX_OPS);
		else if (!strcmp(argv[i], "--action") && i + 1 < argc)
			action = argv[i + 1];
		else
			bench_die("usage: stall --mib M [--threads T] [--min BYTES] [--max BYTES] "
			          "[--keep N] [--idle] [--max-ops N] --action self|roundtrim|none");
	}
	if (stall_max < stall_min)
		bench_die("--max is below --min");
	if (!action ||
	    (strcmp(action, "self") && strcmp(action, "roundtrim") && strcmp(action, "none")))
		bench_die("--action takes self, roundtrim or none");
	/* jemalloc exports mallctl; under glibc alone nothing does (see facts: symbol presence
	 * decides here because the program chooses its own preloads). */
	int (*mallctl)(const char *, void *, size_t *, void *, size_t) =
	    (int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT, "mallctl");
	const char *allocator = mallctl ? "jemalloc" : "glibc";

	stall_ops = mmap(NULL, STALL_MAX_OPS * sizeof(*stall_ops), PROT_READ | PROT_WRITE,
	                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct stall_thread *pool = calloc((size_t)threads, sizeof(*pool));
	if (stall_ops == MAP_FAILED || !pool)
		bench_die("out of memory");
	for (int i = 0; i < threads; i++) {
		pool[i].index = i;
		pool[i].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		pool[i].bytes = (size_t)mib * 1024 * 1024 / (size_t)threads;
		int err = pthread_create(&pool[i].thread, NULL, stall_main, &pool[i]);
		if (err)
			bench_die("pthread_create: %s", strerror(err));
	}
	while (atomic_load(&stall_built) < threads)
		stall_sleep_ms(5);
	atomic_store(&stall_phase, STALL_RUN);
	/* The measured thread runs a while before the window opens: its ring is full, its
	 * caches warm. */
	stall_sleep_ms(50);

	long rss_before = bench_rss_kib() - stall_log_kib();
	int64_t action_ns;
	if (!strcmp(action, "roundtrim")) {
		action_ns = stall_roundtrim();
	} else {
		atomic_store(&stall_window, 1);
		int64_t t0 = bench_now_ns();
		if (!strcmp(action, "none"))
			stall_sleep_ms(200);
		else if (mallctl)
			mallctl("arena.4096.purge", NULL, NULL, NULL, 0);
		else
			malloc_trim(0);
		action_ns = bench_now_ns() - t0;
		atomic_store(&stall_window, 2);
	}
	long rss_after = bench_rss_kib() - stall_log_kib();
	atomic_store(&stall_phase, STALL_STOP);
	for (int i = 0; i < threads; i++)
		pthread_join(pool[i].thread, NULL);

	/* With no op at all in the window (the thread was not scheduled), the figures are 0. */
	size_t n = (size_t)atomic_load(&stall_nops);
	if (n == 0)
		stall_ops[n++] = 0;
	qsort(stall_ops, n, sizeof(*stall_ops), bench_cmp_i64);
	printf(
	    "action=%s allocator=%s heap_mib=%ld rss_before_kib=%ld rss_after_kib=%ld "
	    "action_ms=%.3f worst_op_ms=%.3f p99_op_us=%.1f ops=%zu worst_unpreempted_op_ms=%.3f "
	    "preempted_ops=%ld op_fault_kib=%ld\n",
	    action, allocator, mib, rss_before, rss_after, (double)action_ns / 1e6,
	    (double)stall_worst / 1e6, (double)bench_quantile(stall_ops, n, 0.99) / 1e3,
	    (size_t)stall_measured, (double)stall_worst_unpreempted / 1e6, stall_preempted,
	    stall_faults * (long)(sysconf(_SC_PAGESIZE) / 1024));
	munmap(stall_ops, STALL_MAX_OPS * sizeof(*stall_ops));
	free(pool);
	return 0;
}
