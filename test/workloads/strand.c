/* strand: whether the library's glibc release ever leaves a thread of the program asleep on a
 * free arena lock. Two threads allocate and free blocks of 1.1-4 KiB in glibc's only arena (run
 * it with MALLOC_ARENA_MAX=1 and GLIBC_TUNABLES=glibc.malloc.tcache_count=0, so that every
 * malloc and free takes main_arena's mutex through glibc's own lock code), while the main
 * thread asks for a release (roundtrim_trim) every GAP ms and watches: a thread that made no
 * progress for 100 ms and sleeps in futex(2) on that mutex's word while the word is not 2 (so
 * that no unlock will wake it), three looks in a row 10 ms apart, is stranded. A wake the worker
 * took while waiting for a waiter's turn, and never passed on, did that (review-s9 H1: 8 times in
 * 7 runs of 30 s before it was passed on). --fork: the second thread forks in a loop instead
 * (glibc's fork takes every arena lock).
 * Prints "seconds=S releases=R stranded=N" and exits 1 when N > 0.
 *
 * usage: strand SECONDS GAP_MS [--fork] */
#include "asleep.h"
#include "rt_arena.h"

#include <dlfcn.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STRAND_THREADS 2

static int *strand_word;
static atomic_long strand_progress[STRAND_THREADS];
static atomic_int strand_tid[STRAND_THREADS], strand_stop;
static bool strand_fork;

static int64_t
strand_now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void *
strand_thread(void *arg)
{
	int i = (int)(intptr_t)arg;
	atomic_store(&strand_tid[i], (int)syscall(SYS_gettid));
	if (strand_fork && i == STRAND_THREADS - 1) {
		while (!atomic_load(&strand_stop)) {
			pid_t child = fork();
			if (child == 0)
				_exit(0);
			if (child > 0)
				waitpid(child, NULL, 0);
			atomic_fetch_add(&strand_progress[i], 1);
		}
		return NULL;
	}
	void *keep[64] = {0};
	unsigned r = 12345u * (unsigned)(i + 1);
	while (!atomic_load(&strand_stop)) {
		r = r * 1103515245u + 12345u;
		unsigned slot = (r >> 8) % 64;
		free(keep[slot]);
		keep[slot] = malloc(1100 + (r >> 16) % 3000);
		atomic_fetch_add(&strand_progress[i], 1);
	}
	for (int s = 0; s < 64; s++)
		free(keep[s]);
	return NULL;
}

/* main_arena's address, from a chunk freed into the unsorted bin (no tcache: the free goes to
 * the arena), checked by the ring of one arena pointing back at it. */
static int *
strand_main_arena(void)
{
	void *(*volatile alloc)(size_t) = malloc;
	void (*volatile release)(void *) = free;
	char *p = alloc(2000), *guard = alloc(2000);
	release(p);
	/* Its fd is the unsorted bin's header, bin_at(1), whose fd overlays bins[0]. */
	uintptr_t arena = *(volatile uintptr_t *)(uintptr_t)p - (RT_ARENA_BINS - RT_ARENA_CHUNK_FD);
	(void)guard;
	return *(uintptr_t *)(arena + RT_ARENA_NEXT) == arena ? (int *)arena : NULL;
}

int
main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: strand SECONDS GAP_MS [--fork]\n");
		return 2;
	}
	long seconds = atol(argv[1]), gap_ms = atol(argv[2]);
	strand_fork = argc > 3 && !strcmp(argv[3], "--fork");
	int (*trim)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "roundtrim_trim");
	if (!trim) {
		fprintf(stderr, "strand: roundtrim_trim not found: preload the library\n");
		return 2;
	}
	strand_word = strand_main_arena();
	if (!strand_word) {
		fprintf(stderr, "strand: main_arena not found (MALLOC_ARENA_MAX=1, no tcache?)\n");
		return 2;
	}
	/* A heap worth a few holds: 64 MiB of blocks, most of them freed. */
	enum { BLOCKS = 40000 };
	static void *blocks[BLOCKS];
	for (int i = 0; i < BLOCKS; i++)
		blocks[i] = malloc(1600);
	for (int i = 0; i < BLOCKS; i++)
		if (i % 8)
			free(blocks[i]);
	pthread_t threads[STRAND_THREADS];
	for (int i = 0; i < STRAND_THREADS; i++)
		pthread_create(&threads[i], NULL, strand_thread, (void *)(intptr_t)i);
	long last[STRAND_THREADS] = {0};
	int64_t since[STRAND_THREADS], stranded_since[STRAND_THREADS] = {0};
	int64_t end = strand_now_ns() + (int64_t)seconds * 1000000000, next_release = 0;
	int looks[STRAND_THREADS] = {0}, stranded = 0, releases = 0;
	for (int i = 0; i < STRAND_THREADS; i++)
		since[i] = strand_now_ns();
	while (strand_now_ns() < end) {
		if (strand_now_ns() >= next_release) {
			trim();
			releases++;
			next_release = strand_now_ns() + gap_ms * 1000000;
		}
		struct timespec look = {0, 10 * 1000 * 1000};
		nanosleep(&look, NULL);
		for (int i = 0; i < STRAND_THREADS; i++) {
			long now_progress = atomic_load(&strand_progress[i]);
			int64_t now = strand_now_ns();
			if (now_progress != last[i]) {
				stranded_since[i] = 0;
				last[i] = now_progress;
				since[i] = now;
				looks[i] = 0;
				continue;
			}
			bool asleep = now - since[i] > 100000000 && !stranded_since[i] &&
			              asleep_on(atomic_load(&strand_tid[i]), strand_word) &&
			              __atomic_load_n(strand_word, __ATOMIC_SEQ_CST) != 2;
			looks[i] = asleep ? looks[i] + 1 : 0;
			if (looks[i] >= 3) {
				stranded++;
				stranded_since[i] = since[i];
				fprintf(
				    stderr,
				    "strand: thread %d asleep on main_arena's mutex for %lld ms, "
				    "word %d\n",
				    i, (long long)((now - since[i]) / 1000000),
				    __atomic_load_n(strand_word, __ATOMIC_SEQ_CST));
				looks[i] = 0;
			}
		}
	}
	atomic_store(&strand_stop, 1);
	/* A stranded thread sleeps on: wake every sleeper so that all can be joined. */
	syscall(SYS_futex, strand_word, FUTEX_WAKE_PRIVATE, 64, NULL, NULL, 0);
	for (int i = 0; i < STRAND_THREADS; i++)
		pthread_join(threads[i], NULL);
	printf("seconds=%ld releases=%d stranded=%d\n", seconds, releases, stranded);
	return stranded != 0;
}
