/* churn: the integrity workload. Checker threads, each in its own glibc arena, allocate blocks
 * of many sizes (tcache and fastbin sizes, binned sizes, blocks carved from and merged back into
 * the top chunk, blocks above the mmap threshold), by malloc, calloc and realloc, fill each with
 * a pattern derived from its address and a counter, check the pattern before every realloc and
 * free, and free in random and in stack order. Meanwhile one thread asks the roundtrim loaded in
 * the process for a trim again and again (roundtrim_trim, found with dlsym), so that releases run
 * back to back in the very arenas being used, and another forks: each child allocates, checks
 * and frees in the arena it inherited, then exits; a child that does not exit within 10 s counts
 * as hung (a lock left held). Under ASan or TSan it does not fork: their allocators do not take
 * their locks around fork (a child that allocates can hang on one a parent thread held) and TSan
 * kills a child that starts a thread. At the end every block is checked and freed, and it prints
 *   churn seconds=S threads=T ops=N checked_bytes=B trims=R forks=F errors=E hung=H sanitizer=Z
 * with the first wrong bytes on stderr; it exits 0 only when E and H are 0.
 *
 * usage: churn [--threads T] [--seconds S] [--no-trim] [--no-fork] */
#include "options.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
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

#define CHURN_SLOTS 128
#define CHURN_STACK 8
#define CHURN_HUGE ((size_t)40 << 20) /* above DEFAULT_MMAP_THRESHOLD_MAX: always mmapped */

struct churn_block {
	unsigned char *p;
	size_t size;
	uint64_t seed;
};

struct churn_thread {
	pthread_t thread;
	int index;
	uint64_t rng;
	uint64_t ops;
	uint64_t checked;
	struct churn_block slots[CHURN_SLOTS];
};

static atomic_int churn_stop;
static atomic_uint_fast64_t churn_errors;
static atomic_uint_fast64_t churn_trims;
static pthread_mutex_t churn_report_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t
churn_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static inline unsigned char
churn_byte(uint64_t seed, size_t i)
{
	uint64_t x = (seed + (i >> 3)) * 0x9e3779b97f4a7c15ull;
	return (unsigned char)(x >> ((i & 7) * 8));
}

static void
churn_fill(const struct churn_block *b, size_t from)
{
	size_t i = from;
	for (; i < b->size && (i & 7); i++)
		b->p[i] = churn_byte(b->seed, i);
	for (; i + 8 <= b->size; i += 8) {
		uint64_t w = (b->seed + (i >> 3)) * 0x9e3779b97f4a7c15ull;
		memcpy(b->p + i, &w, 8);
	}
	for (; i < b->size; i++)
		b->p[i] = churn_byte(b->seed, i);
}

/* Checks the first n bytes; reports the first wrong one. */
static bool
churn_check(const char *who, const struct churn_block *b, size_t n, uint64_t *checked)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w, want = (b->seed + (i >> 3)) * 0x9e3779b97f4a7c15ull;
		memcpy(&w, b->p + i, 8);
		if (w != want)
			break;
	}
	for (; i < n; i++)
		if (b->p[i] != churn_byte(b->seed, i))
			break;
	*checked += n;
	if (i >= n)
		return true;
	atomic_fetch_add(&churn_errors, 1);
	pthread_mutex_lock(&churn_report_lock);
	fprintf(stderr, "churn: %s: block %p of %zu bytes: byte %zu is 0x%02x, not 0x%02x\n", who,
	        (void *)b->p, b->size, i, b->p[i], churn_byte(b->seed, i));
	pthread_mutex_unlock(&churn_report_lock);
	return false;
}

/* Sizes from every part of glibc's malloc: tcache and fastbins, small and large bins, the top
 * chunk, and mmap. */
static size_t
churn_size(uint64_t *rng)
{
	uint64_t r = churn_next(rng);
	unsigned kind = (unsigned)(r % 100);
	r >>= 8;
	if (kind < 45)
		return 1 + r % 1024;
	if (kind < 75)
		return 1024 + r % (63 * 1024);
	if (kind < 93)
		return 64 * 1024 + r % (960 * 1024);
	if (kind < 99)
		return (1 << 20) + r % (7 << 20);
	return CHURN_HUGE;
}

static bool
churn_alloc(struct churn_thread *t, struct churn_block *b, size_t size)
{
	b->size = size;
	b->seed = churn_next(&t->rng);
	bool zeroed = churn_next(&t->rng) % 8 == 0;
	b->p = zeroed ? calloc(1, size) : malloc(size);
	if (!b->p)
		return false;
	if (zeroed)
		for (size_t i = 0; i < size; i++)
			if (b->p[i]) {
				atomic_fetch_add(&churn_errors, 1);
				fprintf(stderr, "churn: calloc(%zu) byte %zu is not 0\n", size, i);
				break;
			}
	churn_fill(b, 0);
	return true;
}

static void
churn_free(struct churn_thread *t, struct churn_block *b)
{
	if (!b->p)
		return;
	churn_check("before free", b, b->size, &t->checked);
	free(b->p);
	b->p = NULL;
}

/* Grows or shrinks in place when glibc can (into a free neighbour or the top), else moves. */
static void
churn_realloc(struct churn_thread *t, struct churn_block *b)
{
	size_t size = churn_size(&t->rng);
	if (size == CHURN_HUGE)
		size = 4096;
	churn_check("before realloc", b, b->size, &t->checked);
	unsigned char *p = realloc(b->p, size);
	if (!p)
		return;
	size_t kept = size < b->size ? size : b->size;
	b->p = p;
	churn_check("after realloc", b, kept, &t->checked);
	b->size = size;
	churn_fill(b, kept);
}

/* Blocks carved one after another, most often from the top chunk, freed in reverse so that
 * each one merges back into it. */
static void
churn_stack(struct churn_thread *t)
{
	struct churn_block stack[CHURN_STACK] = {{0}};
	for (int i = 0; i < CHURN_STACK; i++)
		churn_alloc(t, &stack[i], 16 * 1024 + churn_next(&t->rng) % (512 * 1024));
	for (int i = CHURN_STACK - 1; i >= 0; i--)
		churn_free(t, &stack[i]);
}

static void *
churn_checker(void *arg)
{
	struct churn_thread *t = arg;
	/* As after a tensor's first free: the thresholds rise, big blocks come from the arena
	 * and its top may hold tens of MiB. volatile: compilers elide a bare malloc+free. */
	void *volatile raise = malloc(16 << 20);
	free(raise);
	while (!atomic_load_explicit(&churn_stop, memory_order_relaxed)) {
		struct churn_block *b = &t->slots[churn_next(&t->rng) % CHURN_SLOTS];
		unsigned what = (unsigned)(churn_next(&t->rng) % 16);
		if (what == 0) {
			churn_stack(t);
		} else if (what < 3 && b->p) {
			churn_realloc(t, b);
		} else {
			churn_free(t, b);
			size_t size = churn_size(&t->rng);
			if (churn_alloc(t, b, size) && size == CHURN_HUGE)
				churn_free(t, b);
		}
		t->ops++;
	}
	for (int i = 0; i < CHURN_SLOTS; i++)
		churn_free(t, &t->slots[i]);
	return NULL;
}

static void *
churn_trimmer(void *arg)
{
	int (*trim)(void) = (int (*)(void))arg;
	struct timespec pause = {0, 200 * 1000};
	while (!atomic_load(&churn_stop)) {
		if (trim() == 0)
			atomic_fetch_add(&churn_trims, 1);
		nanosleep(&pause, NULL);
	}
	return NULL;
}

/* In a fork child: allocate, check and free in the inherited arena, then leave at once. */
static void
churn_child(uint64_t seed)
{
	struct churn_thread t = {.rng = seed | 1};
	for (int i = 0; i < 64; i++) {
		struct churn_block *b = &t.slots[i % 16];
		churn_free(&t, b);
		size_t size = churn_size(&t.rng);
		churn_alloc(&t, b, size == CHURN_HUGE ? 100 : size);
	}
	for (int i = 0; i < 16; i++)
		churn_free(&t, &t.slots[i]);
	_exit(atomic_load(&churn_errors) ? 3 : 0);
}

/* Whether the child exited 0 within 10 s (its pidfd turns readable when it exits); a hung one
 * is killed. */
static bool
churn_reap(pid_t pid, bool *hung)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	int ready = 1; /* without pidfds (before Linux 5.3): a plain wait */
	if (pidfd >= 0) {
		struct pollfd pfd = {.fd = pidfd, .events = POLLIN};
		while ((ready = poll(&pfd, 1, 10000)) < 0 && errno == EINTR)
			;
		close(pidfd);
	}
	int status;
	if (ready > 0 && waitpid(pid, &status, 0) == pid)
		return WIFEXITED(status) && WEXITSTATUS(status) == 0;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	*hung = true;
	return false;
}

int
main(int argc, char **argv)
{
	int threads = 4, seconds = 3, trims = 1, forks = 1;
	const struct wl_option options[] = {
	    {"threads", WL_OPT_INT, &threads},
	    {"seconds", WL_OPT_INT, &seconds},
	    {"no-trim", WL_OPT_CLEAR, &trims},
	    {"no-fork", WL_OPT_CLEAR, &forks},
	};
	if (!WL_PARSE_OPTIONS(argc, argv, options))
		threads = 0;
	if (threads < 1 || threads > 64 || seconds < 1) {
		fprintf(stderr,
		        "usage: churn [--threads T] [--seconds S] [--no-trim] [--no-fork]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct churn_thread *pool = calloc((size_t)threads, sizeof(*pool));
	if (!pool)
		return 1;
	for (int i = 0; i < threads; i++) {
		pool[i].index = i;
		pool[i].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		pthread_create(&pool[i].thread, NULL, churn_checker, &pool[i]);
	}
	int sanitizer = dlsym(RTLD_DEFAULT, "__asan_init") || dlsym(RTLD_DEFAULT, "__tsan_init");
	if (sanitizer)
		forks = 0;
	pthread_t trimmer;
	void *trim = trims ? dlsym(RTLD_DEFAULT, "roundtrim_trim") : NULL;
	if (trim)
		pthread_create(&trimmer, NULL, churn_trimmer, trim);
	uint64_t nforks = 0, rng = 42;
	bool hung = false, child_failed = false;
	struct timespec start, now, step = {0, 20 * 1000 * 1000};
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		nanosleep(&step, NULL);
		if (forks && !hung) {
			pid_t pid = fork();
			if (pid == 0)
				churn_child(churn_next(&rng));
			if (pid > 0) {
				nforks++;
				child_failed |= !churn_reap(pid, &hung);
			}
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) <
	         seconds * 1000000000L);
	atomic_store(&churn_stop, 1);
	uint64_t ops = 0, checked = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(pool[i].thread, NULL);
		ops += pool[i].ops;
		checked += pool[i].checked;
	}
	if (trim)
		pthread_join(trimmer, NULL);
	uint64_t errors = atomic_load(&churn_errors) + child_failed;
	printf("churn seconds=%d threads=%d ops=%" PRIu64 " checked_bytes=%" PRIu64
	       " trims=%" PRIu64 " forks=%" PRIu64 " errors=%" PRIu64 " hung=%d sanitizer=%d\n",
	       seconds, threads, ops, checked, (uint64_t)atomic_load(&churn_trims), nforks, errors,
	       hung, sanitizer);
	free(pool);
	return errors || hung ? 1 : 0;
}
