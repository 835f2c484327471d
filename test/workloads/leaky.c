/* leaky: rounds whose memory is known, for ROUNDTRIM_SITES. Each line on stdin is one round: it
 * churns (allocates CHURN bytes in blocks of 64 B to 4 KiB through leaky_churn and frees them
 * all), fills a cache of CACHE bytes in 1 KiB blocks in the first round and turns over a quarter
 * of it in each later one (leaky_cache: same size after every round), with --leak keeps LEAK more
 * bytes in 256 B blocks (leaky_keep), and with
 * --threads T does the churn in T threads at once; then it announces the round to the library
 * (roundtrim_round, found with dlsym) and prints "round N". EOF ends it. With --closeall, the
 * first round starts by closing every descriptor above stderr (close_range) and writing "mine" to
 * a file of its own, and ends by reading it back: "mine=TEXT" before "round 1".
 *
 * usage: leaky [--leak BYTES] [--churn BYTES] [--cache BYTES] [--threads T] [--closeall] */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "workload.h"

#define LEAKY_CACHE_BLOCK 1024
#define LEAKY_LEAK_BLOCK 256
#define LEAKY_THREADS_MAX 16

struct leaky_kept {
	struct leaky_kept *next;
};

static struct leaky_kept *leaky_kept;
static void **leaky_cache_slots;
static size_t leaky_cache_n;
static uint64_t leaky_rng;

static void *
leaky_check(void *p)
{
	if (!p) {
		fprintf(stderr, "leaky: out of memory\n");
		exit(1);
	}
	/* Touched, so that nothing can drop the allocation. */
	*(volatile char *)p = 1;
	return p;
}

/* The leak: blocks kept on a list for good. */
__attribute__((noinline)) static void
leaky_keep(size_t bytes)
{
	for (size_t done = 0; done < bytes; done += LEAKY_LEAK_BLOCK) {
		struct leaky_kept *k = leaky_check(malloc(LEAKY_LEAK_BLOCK));
		k->next = leaky_kept;
		leaky_kept = k;
	}
}

/* Churn: everything allocated is freed before the round ends. */
__attribute__((noinline)) static void
leaky_churn(size_t bytes, uint64_t seed)
{
	enum { HELD = 256 };
	void *held[HELD] = {0};
	uint64_t rng = wl_seed(seed);
	for (size_t done = 0; done < bytes;) {
		size_t size = 64 + wl_next(&rng) % 4033;
		unsigned slot = (unsigned)(wl_next(&rng) % HELD);
		free(held[slot]);
		held[slot] = leaky_check(malloc(size));
		done += size;
	}
	for (unsigned i = 0; i < HELD; i++)
		free(held[i]);
}

/* The cache: filled in the first round, then a quarter of its blocks replaced each round, its
 * size unchanged; both through the same call, so that the blocks stay one site's. */
__attribute__((noinline)) static void
leaky_cache(void)
{
	bool fill = leaky_cache_n && !leaky_cache_slots[0];
	size_t turns = fill ? leaky_cache_n : leaky_cache_n / 4;
	for (size_t i = 0; i < turns; i++) {
		size_t slot = fill ? i : (size_t)(wl_next(&leaky_rng) % leaky_cache_n);
		free(leaky_cache_slots[slot]);
		leaky_cache_slots[slot] = leaky_check(malloc(LEAKY_CACHE_BLOCK));
	}
}

struct leaky_job {
	size_t bytes;
	uint64_t seed;
};

static void *
leaky_thread(void *arg)
{
	struct leaky_job *job = arg;
	leaky_churn(job->bytes, job->seed);
	return NULL;
}

static size_t
leaky_size(const char *text)
{
	char *end;
	unsigned long long v = strtoull(text, &end, 10);
	if (end == text || (*end && strcmp(end, "K") && strcmp(end, "M"))) {
		fprintf(stderr, "leaky: bad size %s\n", text);
		exit(2);
	}
	return (size_t)v << (*end == 'K' ? 10 : *end == 'M' ? 20 : 0);
}

int
main(int argc, char **argv)
{
	size_t leak = 0, churn = 16 << 20, cache = 8 << 20;
	long threads = 1;
	bool closeall = false;
	for (int i = 1; i < argc; i += 2) {
		if (!strcmp(argv[i], "--closeall")) {
			closeall = true;
			i--;
		} else if (i + 1 == argc) {
			break;
		} else if (!strcmp(argv[i], "--leak"))
			leak = leaky_size(argv[i + 1]);
		else if (!strcmp(argv[i], "--churn"))
			churn = leaky_size(argv[i + 1]);
		else if (!strcmp(argv[i], "--cache"))
			cache = leaky_size(argv[i + 1]);
		else if (!strcmp(argv[i], "--threads"))
			threads = strtol(argv[i + 1], NULL, 10);
		else
			break;
	}
	if (threads < 1 || threads > LEAKY_THREADS_MAX) {
		fprintf(stderr, "usage: leaky [--leak B] [--churn B] [--cache B] [--threads T] "
		                "[--closeall]\n");
		return 2;
	}
	int (*announce)(void) = NULL;
	*(void **)&announce = dlsym(RTLD_DEFAULT, "roundtrim_round");
	leaky_rng = wl_seed(1);
	leaky_cache_n = cache / LEAKY_CACHE_BLOCK;
	leaky_cache_slots = calloc(leaky_cache_n + 1, sizeof(void *));
	if (!leaky_cache_slots)
		return 1;
	printf("ready\n");
	fflush(stdout);
	char line[64];
	for (unsigned long round = 1; fgets(line, sizeof(line), stdin); round++) {
		pthread_t tid[LEAKY_THREADS_MAX];
		struct leaky_job jobs[LEAKY_THREADS_MAX];
		int mine = -1;
		if (closeall && round == 1) {
			char path[] = "/tmp/leaky-XXXXXX";
			if (syscall(SYS_close_range, 3, ~0U, 0) != 0 ||
			    (mine = mkstemp(path)) < 0 || unlink(path) != 0 ||
			    write(mine, "mine", 4) != 4 || lseek(mine, 0, SEEK_SET) != 0)
				return 1;
		}
		for (long t = 1; t < threads; t++) {
			jobs[t] = (struct leaky_job){churn, round * 100 + (uint64_t)t};
			if (pthread_create(&tid[t], NULL, leaky_thread, &jobs[t]) != 0)
				return 1;
		}
		leaky_churn(churn, round * 100);
		for (long t = 1; t < threads; t++)
			pthread_join(tid[t], NULL);
		leaky_cache();
		if (leak)
			leaky_keep(leak);
		if (mine >= 0) {
			char text[16] = "";
			ssize_t n = read(mine, text, sizeof(text) - 1);
			text[n > 0 ? n : 0] = '\0';
			printf("mine=%s\n", text);
			close(mine);
		}
		if (announce)
			announce();
		printf("round %lu\n", round);
		fflush(stdout);
	}
	return 0;
}
