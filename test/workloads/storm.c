/* storm: threads that allocate and free through every malloc entry point while the test sends
 * rounds (test/integration/test_storm.c; make check-tsan and check-asan run it sanitized).
 *   storm THREADS API_ROUNDS
 * Prints "ready PID" once every thread is made; "api done" once each thread has asked for
 * API_ROUNDS rounds with roundtrim_round() (found with dlsym: none without the library); at EOF
 * on stdin stops the threads and prints "ops=N corrupt=C". Every block carries its owner's tag
 * at both ends, checked before it is freed or resized: exit status 1 if one lost it. */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STRESS_SLOTS 64
#define STRESS_TAG_BYTES 16
#define STRESS_OPS_PER_API_ROUND 2000

struct stress_thread {
	pthread_t thread;
	unsigned char tag;
	uint64_t rng;
	void *block[STRESS_SLOTS];
	size_t size[STRESS_SLOTS];
	uint64_t ops;
	uint64_t corrupt;
};

static atomic_bool stop;
static atomic_int api_calls;
static pthread_barrier_t started;
static int threads, api_rounds;
static int (*api_round)(void);

static uint64_t
stress_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* 8 B to 64 KiB, log-uniform: mostly small blocks, some above glibc's tcache and fastbins. */
static size_t
stress_size(uint64_t *rng)
{
	return (size_t)8 << (stress_next(rng) % 14) | (stress_next(rng) & 7);
}

static void
stress_mark(struct stress_thread *t, int slot)
{
	size_t n = t->size[slot] < STRESS_TAG_BYTES ? t->size[slot] : STRESS_TAG_BYTES;
	unsigned char *p = t->block[slot];
	memset(p, t->tag, n);
	memset(p + t->size[slot] - n, t->tag, n);
}

static void
stress_check(struct stress_thread *t, int slot, size_t size)
{
	size_t n = size < STRESS_TAG_BYTES ? size : STRESS_TAG_BYTES;
	const unsigned char *p = t->block[slot];
	for (size_t i = 0; i < n; i++)
		if (p[i] != t->tag || p[size - n + i] != t->tag) {
			t->corrupt++;
			return;
		}
}

static void *
stress_alloc(struct stress_thread *t, size_t size)
{
	void *p = NULL;
	switch (stress_next(&t->rng) % 5) {
	case 0:
		return malloc(size);
	case 1:
		return calloc(1, size);
	case 2:
		return realloc(NULL, size);
	case 3:
		return posix_memalign(&p, 64, size) == 0 ? p : NULL;
	default:
		return aligned_alloc(16, (size + 15) & ~(size_t)15);
	}
}

static void
stress_step(struct stress_thread *t)
{
	int slot = (int)(stress_next(&t->rng) % STRESS_SLOTS);
	if (!t->block[slot]) {
		size_t size = stress_size(&t->rng);
		if ((t->block[slot] = stress_alloc(t, size)) != NULL) {
			t->size[slot] = size;
			stress_mark(t, slot);
		}
		return;
	}
	stress_check(t, slot, t->size[slot]);
	if (stress_next(&t->rng) % 4 == 0) {
		/* realloc keeps the smaller of the two sizes' worth of contents. */
		size_t size = stress_size(&t->rng);
		void *p = realloc(t->block[slot], size);
		if (!p)
			return;
		size_t kept = size < t->size[slot] ? size : t->size[slot];
		t->block[slot] = p;
		if (kept >= STRESS_TAG_BYTES)
			stress_check(t, slot, STRESS_TAG_BYTES);
		t->size[slot] = size;
		stress_mark(t, slot);
		return;
	}
	free(t->block[slot]);
	t->block[slot] = NULL;
}

static void *
stress_main(void *arg)
{
	struct stress_thread *t = arg;
	int asked = 0;
	pthread_barrier_wait(&started);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		stress_step(t);
		if (++t->ops % STRESS_OPS_PER_API_ROUND == 0 && asked < api_rounds) {
			asked++;
			if (api_round && api_round() == 0 &&
			    atomic_fetch_add(&api_calls, 1) + 1 == threads * api_rounds) {
				printf("api done\n");
				fflush(stdout);
			}
		}
	}
	for (int i = 0; i < STRESS_SLOTS; i++)
		free(t->block[i]);
	return NULL;
}

int
main(int argc, char **argv)
{
	threads = argc > 1 ? atoi(argv[1]) : 4;
	api_rounds = argc > 2 ? atoi(argv[2]) : 0;
	if (threads < 1 || threads > 64 || api_rounds < 0) {
		fprintf(stderr, "usage: stress THREADS API_ROUNDS\n");
		return 2;
	}
	*(void **)&api_round = dlsym(RTLD_DEFAULT, "roundtrim_round");
	struct stress_thread *pool = calloc((size_t)threads, sizeof(*pool));
	pthread_barrier_init(&started, NULL, (unsigned)threads + 1);
	for (int i = 0; i < threads; i++) {
		pool[i].tag = (unsigned char)(0x41 + i);
		pool[i].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		pthread_create(&pool[i].thread, NULL, stress_main, &pool[i]);
	}
	/* Before the threads go: their "api done" can come at once, and must come second. */
	printf("ready %d\n", getpid());
	fflush(stdout);
	pthread_barrier_wait(&started);

	char buf[256];
	while (read(0, buf, sizeof(buf)) > 0)
		;
	atomic_store(&stop, true);
	uint64_t ops = 0, corrupt = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(pool[i].thread, NULL);
		ops += pool[i].ops;
		corrupt += pool[i].corrupt;
	}
	free(pool);
	printf("ops=%llu corrupt=%llu\n", (unsigned long long)ops, (unsigned long long)corrupt);
	return corrupt ? 1 : 0;
}
