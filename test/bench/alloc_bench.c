/* alloc_bench: an allocation-heavy microbenchmark, run with and without roundtrim preloaded to
 * measure what the interposed malloc family costs. Each of T threads performs N operations on its
 * own table of slots: malloc ~45%, free ~40%, realloc ~10%, calloc ~5%, on blocks of 16..512
 * bytes (~5% of them 513..8192). The program prints one line:
 *   threads=T ops=N seconds=X cpu_seconds=C
 * X being the wall time of the longest thread's operation loop: thread creation and the final
 * frees are outside it. C is the CPU time of the whole process (every thread, a preloaded
 * library's own included) from before the threads start to after they are joined: unlike X, it
 * does not grow while other processes of a busy machine hold the cores. With --rss, the
 * line has " max_rss_kib=M" before " cpu_seconds", its own peak RSS (getrusage). With --calls, it
 * ends with " calls=K", the malloc-family calls its threads made (free(NULL) included): what
 * scripts/instructions.sh divides a difference of instruction counts by. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define BENCH_SLOTS 4096
#define BENCH_MAX_THREADS 256

struct bench_thread {
	pthread_t thread;
	uint64_t rng;
	void **slots;
	struct timespec start;
	struct timespec end;
	uint64_t calls;
};

static long bench_ops;
static pthread_barrier_t bench_start;

static uint64_t
bench_next(uint64_t *s)
{
	/* xorshift64*: the same sequence in every run, so runs with and without roundtrim do
	 * exactly the same calls. */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* splitmix64, to turn (seed, thread) into well-spread, non-zero xorshift states. */
static uint64_t
bench_seed(uint64_t seed, int index)
{
	uint64_t z = seed + (uint64_t)(index + 1) * 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return z ? z : 1;
}

static size_t
bench_size(uint64_t *rng)
{
	uint64_t r = bench_next(rng);
	uint64_t hi = r >> 32;
	if (r % 100 < 5)
		return 513 + (size_t)(hi % (8192 - 512));
	return 16 + (size_t)(hi % (512 - 16 + 1));
}

static void *
bench_check(void *p)
{
	if (!p) {
		fprintf(stderr, "alloc_bench: out of memory\n");
		exit(1);
	}
	return p;
}

static void *
bench_touch(void *p)
{
	bench_check(p);
	/* A store through volatile: the compiler may not drop the allocation as unused. */
	*(volatile unsigned char *)p = 1;
	return p;
}

static void *
bench_thread_main(void *arg)
{
	struct bench_thread *t = arg;
	void **slots = t->slots;
	uint64_t rng = t->rng, calls = 0;
	pthread_barrier_wait(&bench_start);
	clock_gettime(CLOCK_MONOTONIC, &t->start);
	for (long i = 0; i < bench_ops; i++) {
		uint64_t r = bench_next(&rng);
		unsigned op = (unsigned)((r >> 32) % 100);
		void **slot = &slots[(r >> 8) % BENCH_SLOTS];
		/* malloc and calloc replace an occupied slot, free skips an empty one: the table
		 * settles at about 60% occupancy instead of filling up or draining. */
		if (op < 45) {
			free(*slot);
			*slot = bench_touch(malloc(bench_size(&rng)));
			calls += 2;
		} else if (op < 85) {
			if (*slot) {
				free(*slot);
				*slot = NULL;
				calls++;
			}
		} else if (op < 95) {
			*slot = bench_touch(realloc(*slot, bench_size(&rng)));
			calls++;
		} else {
			free(*slot);
			*slot = bench_touch(calloc(1, bench_size(&rng)));
			calls += 2;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t->end);
	for (size_t i = 0; i < BENCH_SLOTS; i++)
		free(slots[i]);
	t->calls = calls + BENCH_SLOTS;
	return NULL;
}

static int
bench_parse_long(const char *text, long min, long max, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(text, &end, 10);
	if (errno || end == text || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static void
bench_usage(void)
{
	fprintf(stderr, "usage: alloc_bench --threads T --ops N [--seed S] [--rss] [--calls]\n");
	exit(2);
}

static double
bench_seconds(const struct timespec *ts)
{
	return (double)ts->tv_sec + (double)ts->tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	long threads = 1, seed = 1;
	bool rss = false, count_calls = false;
	bench_ops = 1000000;
	for (int i = 1; i < argc; i += 2) {
		const char *name = argv[i], *value = argv[i + 1];
		if (!strcmp(name, "--rss") || !strcmp(name, "--calls")) {
			if (!strcmp(name, "--rss"))
				rss = true;
			else
				count_calls = true;
			i--;
			continue;
		}
		int bad = -1;
		if (!value)
			bench_usage();
		if (!strcmp(name, "--threads"))
			bad = bench_parse_long(value, 1, BENCH_MAX_THREADS, &threads);
		else if (!strcmp(name, "--ops"))
			bad = bench_parse_long(value, 1, LONG_MAX, &bench_ops);
		else if (!strcmp(name, "--seed"))
			bad = bench_parse_long(value, 0, LONG_MAX, &seed);
		if (bad)
			bench_usage();
	}

	struct timespec cpu_start, cpu_end;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu_start);
	struct bench_thread *pool = calloc((size_t)threads, sizeof(*pool));
	if (!pool)
		bench_check(NULL);
	pthread_barrier_init(&bench_start, NULL, (unsigned)threads);
	for (int i = 0; i < threads; i++) {
		pool[i].rng = bench_seed((uint64_t)seed, i);
		pool[i].slots = bench_check(calloc(BENCH_SLOTS, sizeof(void *)));
		int err = pthread_create(&pool[i].thread, NULL, bench_thread_main, &pool[i]);
		if (err) {
			fprintf(stderr, "alloc_bench: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}
	/* The longest loop, each timed by its own thread. Not the span from the first start to the
	 * last end, which compares clock readings of different threads: on a 2-vCPU VM with the TSC
	 * as clocksource, such spans came out as low as 0.003 s for 20 million operations. The
	 * threads leave one barrier together, so both ways agree wherever the clocks do. */
	double longest = 0;
	uint64_t calls = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(pool[i].thread, NULL);
		double d = bench_seconds(&pool[i].end) - bench_seconds(&pool[i].start);
		if (d > longest)
			longest = d;
		calls += pool[i].calls;
		free(pool[i].slots);
	}
	pthread_barrier_destroy(&bench_start);
	free(pool);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu_end);
	printf("threads=%ld ops=%ld seconds=%.6f", threads, bench_ops, longest);
	struct rusage usage;
	if (rss && getrusage(RUSAGE_SELF, &usage) == 0)
		printf(" max_rss_kib=%ld", usage.ru_maxrss);
	printf(" cpu_seconds=%.6f", bench_seconds(&cpu_end) - bench_seconds(&cpu_start));
	if (count_calls)
		printf(" calls=%llu", (unsigned long long)calls);
	printf("\n");
	return 0;
}
