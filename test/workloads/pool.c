/* pool: the thread-pool round workload. A persistent pool of threads (8 by default), each in its
 * own glibc arena, as PyTorch's intra-op threads are. Each round every thread frees last round's
 * small live block, takes a new one, then allocates and frees one large block (its first free
 * unmaps it, which raises glibc's dynamic mmap threshold to its size and the trim threshold to
 * twice that), then allocates its round's churn in blocks of random sizes below that threshold,
 * touches them and frees them all, so that they merge into its arena's free top chunk. Live heap
 * at the end of a round: one small block per thread. After each round it prints
 *   round R live_kib=L rss_kib=S
 * and, with --wait, reads one line from stdin before the next round (EOF ends the program).
 * --exiting starts the round's threads afresh each round and lets them exit at its end, as
 * data-loading threads come and go: glibc puts each exited thread's arena, with its free top, on
 * its free list, and gives it to the next thread that has none.
 * --self-trim calls malloc_trim(0) after each round, as NVFlare's in-process cleanup does;
 * --self-purge calls jemalloc's mallctl("arena.4096.purge") instead (when jemalloc serves).
 * --arenas prints, before and after that malloc_trim(0), one line per glibc arena:
 *   arena round=R when=before|after nr=N kind=main|thread heaps=H system_kib=S top_kib=T
 *         bins_kib=B fast_kib=F rss_kib=X pool_threads=P
 * from glibc's own malloc_info (free bytes in the top chunk, in the normal bins and in the
 * fastbins, bytes taken from the system), /proc/self/smaps (resident bytes of the arena's
 * heaps; for the main arena, of [heap]) and the pool itself (how many of its threads' live
 * blocks lie in the arena: 0 for an arena that none of them uses, such as one that another
 * library's thread took), then one line with the process's totals:
 *   arenas round=R when=before|after rss_kib=S heaps_rss_kib=H lazyfree_kib=Z
 * The arenas are numbered as malloc_info numbers them: the main arena first, then the ring
 * (the newest arena first). --arenas-next prints the same lines with when=before at the end of
 * each round, without trimming, and with when=next for that round just before the next one
 * starts (after the line read with --wait; after the last round's line, before the program
 * exits): what an outside release, such as roundtrim's action on that round, left. */
#include "options.h"
#include "workload.h"

#include "rt_arena.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define POOL_MAX_ARENAS 256

struct pool_opts {
	int threads;
	long mib;       /* churn per thread per round */
	long raise_mib; /* the large block that raises the thresholds; 0: none */
	int rounds;
	size_t min_size;
	size_t max_size;
	size_t live_size;
	int wait;
	int self_trim;
	int self_purge;
	int arenas;
	int arenas_next;
	int exiting;
};

struct pool_thread {
	pthread_t thread;
	int index;
	uint64_t rng;
	void *live;
};

static struct pool_opts opts = {8, 24, 16, 5, 64 * 1024, 1024 * 1024, 4096, 0, 0, 0, 0, 0, 0};
static pthread_barrier_t start_barrier, done_barrier;
static struct pool_thread *pool;

static void *
pool_alloc(size_t size)
{
	void *p = malloc(size);
	if (!p) {
		fprintf(stderr, "pool: out of memory\n");
		exit(1);
	}
	memset(p, 0x5a, size);
	return p;
}

static void
pool_round(struct pool_thread *t)
{
	free(t->live);
	t->live = pool_alloc(opts.live_size);
	if (opts.raise_mib) {
		/* volatile: clang elides a malloc+memset+free, and the thresholds never rise */
		void *volatile raise = pool_alloc((size_t)opts.raise_mib << 20);
		free(raise);
	}
	size_t budget = (size_t)opts.mib << 20, cap = 256, count = 0;
	void **blocks = malloc(cap * sizeof(*blocks));
	for (size_t used = 0; blocks && used < budget;) {
		if (count == cap) {
			void **grown = realloc(blocks, (cap *= 2) * sizeof(*blocks));
			if (!grown)
				break;
			blocks = grown;
		}
		size_t size = wl_log_uniform(&t->rng, opts.min_size, opts.max_size);
		blocks[count++] = pool_alloc(size);
		used += size;
	}
	/* In a random order: glibc merges each freed block with its free neighbours, and the last
	 * ones with the top chunk. */
	for (size_t i = count; i > 1; i--) {
		size_t j = wl_next(&t->rng) % i;
		void *swap = blocks[i - 1];
		blocks[i - 1] = blocks[j];
		blocks[j] = swap;
	}
	for (size_t i = 0; i < count; i++)
		free(blocks[i]);
	free(blocks);
}

static void *
pool_worker(void *arg)
{
	struct pool_thread *t = arg;
	for (;;) {
		pthread_barrier_wait(&start_barrier);
		pool_round(t);
		pthread_barrier_wait(&done_barrier);
	}
	return NULL;
}

static void *
pool_once(void *arg)
{
	pool_round(arg);
	return NULL;
}

/* One round of every thread: the persistent pool's, or threads of their own that exit. */
static void
pool_run_round(void)
{
	if (!opts.exiting) {
		pthread_barrier_wait(&start_barrier);
		pthread_barrier_wait(&done_barrier);
		return;
	}
	for (int i = 0; i < opts.threads; i++)
		pthread_create(&pool[i].thread, NULL, pool_once, &pool[i]);
	for (int i = 0; i < opts.threads; i++)
		pthread_join(pool[i].thread, NULL);
}

static long
pool_rss_kib(void)
{
	long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%ld %ld", &size, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return resident * sysconf(_SC_PAGESIZE) / 1024;
}

/* One arena as malloc_info and smaps describe it. */
struct pool_arena {
	uintptr_t addr; /* 0 for the main arena when no thread arena shows where it is */
	int heaps;
	uint64_t system, top, bins, fast, rss_kib;
	int pool_threads;
};

/* malloc_info's figures per <heap nr=...>, in its order (the ring from the main arena). */
static int
pool_malloc_info(struct pool_arena *out, int max)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return 0;
	malloc_info(0, f);
	fclose(f);
	int n = -1, in_heap = 0;
	uint64_t listed = 0; /* every <size> and <unsorted> total: fast and binned chunks */
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		unsigned long long v, total;
		int nr;
		if (sscanf(line, "<heap nr=\"%d\">", &nr) == 1) {
			if (nr >= max)
				break;
			n = nr;
			in_heap = 1;
			memset(&out[n], 0, sizeof(out[n]));
			listed = 0;
		} else if (!strcmp(line, "</heap>")) {
			if (n + 1 >= max)
				break;
			in_heap = 0;
		} else if (!in_heap) {
			continue;
		} else if (sscanf(line, " <size from=\"%*u\" to=\"%*u\" total=\"%llu\"", &total) ==
		               1 ||
		           sscanf(line, " <unsorted from=\"%*u\" to=\"%*u\" total=\"%llu\"",
		                  &total) == 1) {
			listed += total;
		} else if (sscanf(line, "<total type=\"fast\" count=\"%*u\" size=\"%llu\"", &v) ==
		           1) {
			out[n].fast = v;
		} else if (sscanf(line, "<total type=\"rest\" count=\"%*u\" size=\"%llu\"", &v) ==
		           1) {
			/* rest = top + binned; listed = fast + binned */
			out[n].bins = listed - out[n].fast;
			out[n].top = v - out[n].bins;
		} else if (sscanf(line, "<system type=\"current\" size=\"%llu\"", &v) == 1) {
			out[n].system = v;
		} else if (sscanf(line, "<aspace type=\"subheaps\" size=\"%llu\"", &v) == 1) {
			out[n].heaps = (int)v;
		}
	}
	free(text);
	return n + 1;
}

/* The arenas' addresses in malloc_info's order: thread arenas are found at the start of their
 * first heap (a mapping aligned to the heap size whose heap_info points just past itself), and
 * the ring they form passes through the main arena, the one member that is not among them. */
static void
pool_arena_addresses(struct pool_arena *arenas, int n)
{
	uintptr_t thread_arenas[POOL_MAX_ARENAS];
	int nthreads = 0;
	FILE *maps = fopen("/proc/self/maps", "r");
	char line[512];
	while (maps && fgets(line, sizeof(line), maps)) {
		uintptr_t start, end;
		char perms[8];
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s", &start, &end, perms) != 3 ||
		    strcmp(perms, "rw-p") || start % RT_ARENA_HEAP_MAX)
			continue;
		uintptr_t ar = *(const uintptr_t *)start;
		if (ar == start + RT_ARENA_HEAP_INFO_SIZE && nthreads < POOL_MAX_ARENAS)
			thread_arenas[nthreads++] = ar;
	}
	if (maps)
		fclose(maps);
	uintptr_t main_arena = 0;
	for (int i = 0; i < nthreads && !main_arena; i++) {
		uintptr_t next = *(const uintptr_t *)(thread_arenas[i] + RT_ARENA_NEXT);
		int known = 0;
		for (int j = 0; j < nthreads; j++)
			known |= thread_arenas[j] == next;
		if (!known)
			main_arena = next;
	}
	uintptr_t a = main_arena;
	for (int i = 0; i < n; i++) {
		arenas[i].addr = a;
		if (a)
			a = *(const uintptr_t *)(a + RT_ARENA_NEXT);
		if (a == main_arena)
			a = 0;
	}
}

/* The arena whose heaps hold addr: a thread arena's heap, found through heap_info.prev from its
 * top's heap, else the main arena. */
static struct pool_arena *
pool_arena_of(struct pool_arena *arenas, int n, uintptr_t addr)
{
	uintptr_t base = addr & ~(RT_ARENA_HEAP_MAX - 1);
	for (int i = 1; i < n; i++) {
		if (!arenas[i].addr)
			continue;
		uintptr_t top = *(const uintptr_t *)(arenas[i].addr + RT_ARENA_TOP);
		for (uintptr_t h = top & ~(RT_ARENA_HEAP_MAX - 1); h;
		     h = *(const uintptr_t *)(h + RT_ARENA_HEAP_PREV))
			if (h == base)
				return &arenas[i];
	}
	return &arenas[0];
}

/* Resident KiB per arena from /proc/self/smaps: a thread heap's mappings lie inside the heap's
 * aligned reservation; the main arena's is [heap]. Also the process's LazyFree. */
static void
pool_arena_rss(struct pool_arena *arenas, int n, uint64_t *heaps_kib, uint64_t *lazyfree_kib)
{
	*heaps_kib = *lazyfree_kib = 0;
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	struct pool_arena *owner = NULL;
	while (f && fgets(line, sizeof(line), f)) {
		uintptr_t start, end;
		unsigned long long kib;
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &start, &end) == 2) {
			owner = NULL;
			if (strstr(line, "[heap]")) {
				owner = &arenas[0];
				continue;
			}
			struct pool_arena *a = pool_arena_of(arenas, n, start);
			if (a != &arenas[0])
				owner = a;
		} else if (sscanf(line, "Rss: %llu kB", &kib) == 1) {
			if (owner) {
				owner->rss_kib += kib;
				*heaps_kib += kib;
			}
		} else if (sscanf(line, "LazyFree: %llu kB", &kib) == 1) {
			*lazyfree_kib += kib;
		}
	}
	if (f)
		fclose(f);
}

static void
pool_print_arenas(int round, const char *when)
{
	static struct pool_arena arenas[POOL_MAX_ARENAS];
	int n = pool_malloc_info(arenas, POOL_MAX_ARENAS);
	pool_arena_addresses(arenas, n);
	uint64_t heaps_kib, lazyfree_kib;
	pool_arena_rss(arenas, n, &heaps_kib, &lazyfree_kib);
	if (n > 0)
		for (int t = 0; t < opts.threads; t++)
			pool_arena_of(arenas, n, (uintptr_t)pool[t].live)->pool_threads++;
	for (int i = 0; i < n; i++)
		printf("arena round=%d when=%s nr=%d kind=%s heaps=%d system_kib=%" PRIu64
		       " top_kib=%" PRIu64 " bins_kib=%" PRIu64 " fast_kib=%" PRIu64
		       " rss_kib=%" PRIu64 " pool_threads=%d\n",
		       round, when, i, i ? "thread" : "main", i ? arenas[i].heaps : 1,
		       arenas[i].system / 1024, arenas[i].top / 1024, arenas[i].bins / 1024,
		       arenas[i].fast / 1024, arenas[i].rss_kib, arenas[i].pool_threads);
	printf("arenas round=%d when=%s rss_kib=%ld heaps_rss_kib=%" PRIu64 " lazyfree_kib=%" PRIu64
	       "\n",
	       round, when, pool_rss_kib(), heaps_kib, lazyfree_kib);
}

static int
pool_usage(void)
{
	fprintf(stderr, "usage: pool [--threads T] [--mib M] [--raise-mib R] [--rounds R] "
	                "[--min BYTES] [--max BYTES] [--live BYTES] [--wait] [--self-trim] "
	                "[--self-purge] [--arenas] [--arenas-next] [--exiting]\n");
	return 2;
}

int
main(int argc, char **argv)
{
	const struct wl_option options[] = {
	    {"threads", WL_OPT_INT, &opts.threads},
	    {"mib", WL_OPT_LONG, &opts.mib},
	    {"raise-mib", WL_OPT_LONG, &opts.raise_mib},
	    {"rounds", WL_OPT_INT, &opts.rounds},
	    {"min", WL_OPT_SIZE, &opts.min_size},
	    {"max", WL_OPT_SIZE, &opts.max_size},
	    {"live", WL_OPT_SIZE, &opts.live_size},
	    {"wait", WL_OPT_SET, &opts.wait},
	    {"self-trim", WL_OPT_SET, &opts.self_trim},
	    {"self-purge", WL_OPT_SET, &opts.self_purge},
	    {"arenas", WL_OPT_SET, &opts.arenas},
	    {"arenas-next", WL_OPT_SET, &opts.arenas_next},
	    {"exiting", WL_OPT_SET, &opts.exiting},
	};
	if (!WL_PARSE_OPTIONS(argc, argv, options))
		return pool_usage();
	if (opts.threads < 1 || opts.mib < 0 || opts.raise_mib < 0 || opts.raise_mib > 32 ||
	    opts.min_size < 1 || opts.max_size < opts.min_size || opts.live_size < 1)
		return pool_usage();
	int (*mallctl)(const char *, void *, size_t *, void *, size_t) = NULL;
	*(void **)&mallctl = dlsym(RTLD_DEFAULT, "mallctl");
	if (opts.self_purge && !mallctl) {
		fprintf(stderr, "pool: --self-purge: jemalloc does not serve malloc here\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	pool = calloc((size_t)opts.threads, sizeof(*pool));
	pthread_barrier_init(&start_barrier, NULL, (unsigned)opts.threads + 1);
	pthread_barrier_init(&done_barrier, NULL, (unsigned)opts.threads + 1);
	for (int i = 0; i < opts.threads; i++) {
		pool[i].index = i;
		pool[i].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		if (!opts.exiting)
			pthread_create(&pool[i].thread, NULL, pool_worker, &pool[i]);
	}
	char line[64];
	int done = 0; /* the last round whose next line was read */
	for (int r = 1; opts.rounds == 0 || r <= opts.rounds; r++) {
		if (opts.arenas_next && done)
			pool_print_arenas(done, "next");
		pool_run_round();
		if (opts.arenas || opts.arenas_next)
			pool_print_arenas(r, "before");
		if (opts.self_trim || opts.arenas)
			malloc_trim(0);
		if (opts.self_purge)
			mallctl("arena.4096.purge", NULL, NULL, NULL, 0);
		if (opts.arenas)
			pool_print_arenas(r, "after");
		size_t live = (size_t)opts.threads * opts.live_size;
		printf("round %d live_kib=%zu rss_kib=%ld\n", r, live / 1024, pool_rss_kib());
		if (opts.wait && !fgets(line, sizeof(line), stdin))
			break;
		done = r;
	}
	if (opts.arenas_next && opts.wait && done)
		pool_print_arenas(done, "next");
	/* The pool threads block in the barrier; exit ends them. */
	return 0;
}
