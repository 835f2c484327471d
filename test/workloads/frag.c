/* frag: the fragmenting round workload. Each round, every thread of a persistent pool allocates
 * its share of the churn in blocks of random sizes, touches them, and frees all but one in K,
 * interleaved, so that long-lived survivors pin the pages around them. A round's survivors are
 * freed during the next round, after its allocations. After each round the program prints
 *   round R live_kib=L rss_kib=S
 * and, with --wait, reads one line from stdin before the next round (EOF ends the program).
 * --self-trim calls malloc_trim(0) after each round, as NVFlare's in-process cleanup does;
 * --self-purge calls jemalloc's mallctl("arena.4096.purge") instead (when jemalloc serves).
 *
 * For round detection (none of these changes the default run): --pause MIN:MAX sleeps a random
 * number of seconds before the first round and after each one, as a client waits for its server;
 * --mib-range MIN:MAX draws each round's churn; --seed S reseeds every random choice;
 * --duration S starts no round after S seconds; --boundaries prints "start T" before the first
 * pause and "boundary R T" once round R's frees are done (T: CLOCK_MONOTONIC microseconds). */
#include "options.h"
#include "workload.h"

#include <dlfcn.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct frag_opts {
	int threads;
	long mib;
	int rounds;
	int keep_one_in;
	size_t min_size;
	size_t max_size;
	int wait;
	int self_trim;
	int self_purge;
	uint64_t seed; /* FRAG_UNSEEDED: each thread's fixed generator */
	struct wl_range pause;
	struct wl_range mib_range;
	double duration;
	int boundaries;
};

struct frag_thread {
	pthread_t thread;
	int index;
	uint64_t rng;
	void **survivors;
	size_t *survivor_sizes;
	size_t nsurvivors;
	size_t survivors_cap;
	size_t live;
};

#define FRAG_UNSEEDED UINT64_MAX

static struct frag_opts opts = {.threads = 2,
                                .mib = 256,
                                .rounds = 5,
                                .keep_one_in = 10,
                                .min_size = 4096,
                                .max_size = 120 * 1024,
                                .seed = FRAG_UNSEEDED};
/* This round's churn in MiB, set by the main thread before the start barrier. */
static long round_mib;
static pthread_barrier_t start_barrier, done_barrier;
static struct frag_thread *pool;

static void
frag_round(struct frag_thread *t)
{
	size_t budget = (size_t)round_mib * 1024 * 1024 / (size_t)opts.threads;
	size_t old_count = t->nsurvivors;
	void **old = t->survivors;
	size_t *old_sizes = t->survivor_sizes;
	size_t cap = 1024, count = 0, nkept = 0;
	void **blocks = malloc(cap * sizeof(*blocks));
	size_t *sizes = malloc(cap * sizeof(*sizes));
	for (size_t used = 0; used < budget;) {
		if (count == cap) {
			cap *= 2;
			blocks = realloc(blocks, cap * sizeof(*blocks));
			sizes = realloc(sizes, cap * sizeof(*sizes));
		}
		size_t size = wl_log_uniform(&t->rng, opts.min_size, opts.max_size);
		blocks[count] = malloc(size);
		memset(blocks[count], (int)count, size);
		sizes[count++] = size;
		used += size;
	}
	/* The previous round's survivors go only now, after this round's allocations. */
	for (size_t i = 0; i < old_count; i++)
		free(old[i]);
	free(old);
	free(old_sizes);
	t->live = 0;
	for (size_t i = 0; i < count; i++) {
		if (i % (size_t)opts.keep_one_in == 0) {
			blocks[nkept] = blocks[i];
			sizes[nkept++] = sizes[i];
			t->live += sizes[i];
		} else {
			free(blocks[i]);
		}
	}
	t->survivors = realloc(blocks, (nkept ? nkept : 1) * sizeof(*blocks));
	t->survivor_sizes = realloc(sizes, (nkept ? nkept : 1) * sizeof(*sizes));
	t->nsurvivors = nkept;
}

static void *
frag_worker(void *arg)
{
	struct frag_thread *t = arg;
	for (;;) {
		pthread_barrier_wait(&start_barrier);
		frag_round(t);
		pthread_barrier_wait(&done_barrier);
	}
	return NULL;
}

static long
frag_rss_kib(void)
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

static int
frag_usage(void)
{
	fprintf(stderr, "usage: frag [--threads T] [--mib M] [--rounds R] [--keep-one-in K] "
	                "[--min BYTES] [--max BYTES] [--wait] [--self-trim] [--self-purge] "
	                "[--seed S] [--pause MIN:MAX] [--mib-range MIN:MAX] [--duration S] "
	                "[--boundaries]\n");
	return 2;
}

int
main(int argc, char **argv)
{
	const struct wl_option options[] = {
	    {"threads", WL_OPT_INT, &opts.threads},
	    {"mib", WL_OPT_LONG, &opts.mib},
	    {"rounds", WL_OPT_INT, &opts.rounds},
	    {"keep-one-in", WL_OPT_INT, &opts.keep_one_in},
	    {"min", WL_OPT_SIZE, &opts.min_size},
	    {"max", WL_OPT_SIZE, &opts.max_size},
	    {"seed", WL_OPT_U64, &opts.seed},
	    {"duration", WL_OPT_DOUBLE, &opts.duration},
	    {"pause", WL_OPT_RANGE, &opts.pause},
	    {"mib-range", WL_OPT_RANGE, &opts.mib_range},
	    {"wait", WL_OPT_SET, &opts.wait},
	    {"self-trim", WL_OPT_SET, &opts.self_trim},
	    {"self-purge", WL_OPT_SET, &opts.self_purge},
	    {"boundaries", WL_OPT_SET, &opts.boundaries},
	};
	if (!WL_PARSE_OPTIONS(argc, argv, options))
		return frag_usage();
	if (opts.threads < 1 || opts.mib < 1 || opts.keep_one_in < 1 || opts.min_size < 1 ||
	    opts.max_size < opts.min_size || opts.duration < 0 ||
	    (opts.mib_range.max > 0 && opts.mib_range.min < 1))
		return frag_usage();
	int (*mallctl)(const char *, void *, size_t *, void *, size_t) = NULL;
	*(void **)&mallctl = dlsym(RTLD_DEFAULT, "mallctl");
	if (opts.self_purge && !mallctl) {
		fprintf(stderr, "frag: --self-purge: jemalloc does not serve malloc here\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	pool = calloc((size_t)opts.threads, sizeof(*pool));
	pthread_barrier_init(&start_barrier, NULL, (unsigned)opts.threads + 1);
	pthread_barrier_init(&done_barrier, NULL, (unsigned)opts.threads + 1);
	for (int i = 0; i < opts.threads; i++) {
		pool[i].index = i;
		pool[i].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		if (opts.seed != FRAG_UNSEEDED)
			pool[i].rng = wl_seed(opts.seed * 1000 + (uint64_t)i + 1);
		pthread_create(&pool[i].thread, NULL, frag_worker, &pool[i]);
	}
	char line[64];
	uint64_t rng = wl_seed(opts.seed == FRAG_UNSEEDED ? 0 : opts.seed);
	uint64_t started = wl_now_us();
	if (opts.boundaries)
		wl_print_start();
	wl_sleep_s(wl_uniform(&rng, opts.pause));
	for (int r = 1; opts.rounds == 0 || r <= opts.rounds; r++) {
		if (opts.duration > 0 && wl_now_us() - started >= (uint64_t)(opts.duration * 1e6))
			break;
		round_mib =
		    opts.mib_range.max > 0 ? (long)wl_uniform(&rng, opts.mib_range) : opts.mib;
		pthread_barrier_wait(&start_barrier);
		pthread_barrier_wait(&done_barrier);
		if (opts.self_trim)
			malloc_trim(0);
		if (opts.self_purge)
			mallctl("arena.4096.purge", NULL, NULL, NULL, 0);
		if (opts.boundaries)
			wl_print_boundary(r, wl_now_us());
		size_t live = 0;
		for (int i = 0; i < opts.threads; i++)
			live += pool[i].live;
		printf("round %d live_kib=%zu rss_kib=%ld\n", r, live / 1024, frag_rss_kib());
		if (opts.wait && !fgets(line, sizeof(line), stdin))
			break;
		wl_sleep_s(wl_uniform(&rng, opts.pause));
	}
	/* The pool threads block in the barrier; exit ends them. */
	return 0;
}
