/* stress: hosts for the stress tests. Every allocating thread fills each block with a pattern
 * derived from its address and the thread's seed and checks it before it frees the block
 * (calloc blocks are checked zero, realloc keeps the prefix), so that a damaged heap shows.
 *
 * Storm modes print "ready PID", start the churn threads (allocating, checking and, every
 * API_EVERY steps, calling roundtrim_round()), wait for a line "go", do their work, stop the
 * churn and print "done errors=E verified=V api=A eintr=I DETAIL", then wait for EOF on stdin.
 * Their exit status is 0, or 3 when any check failed. eintr counts the EINTR that a thread in
 * poll and one in read saw.
 *   churn              the work is waiting for a line "stop"
 *   threads N K        N threads, at most K alive, allocate, hand blocks to each other, exit
 *   dlopen N PATH      N times dlopen, call and dlclose the object at PATH, in 2 threads
 *   forkexec N DIR     N children in 2 threads, by fork+exec (half of them close every
 *                      descriptor first), vfork+exec and posix_spawn of "stress child HOW";
 *                      one in 2000 is a fork child that keeps allocating until its status file
 *                      appears in DIR, counts 100 rounds of its own FIFO and exits 0
 *   hostile HOW FLOOR  after "go", HOW=closeall: close_range(3, ~0U), then a file of the
 *                      host's on each number the library held (those at or above FLOOR, in
 *                      the program's table or else in the worker's own);
 *                      HOW=dupover: the same files dup2'd over them. Prints "hostile fds=N",
 *                      waits for a line "check" and checks that no file of the host was read,
 *                      written or closed: DETAIL is intact=K/N. The churn calls
 *                      roundtrim_round() every 64 steps here
 * Other modes:
 *   execchain N DIR    replaces itself N times (execv of itself, while the churn runs); every
 *                      third image first execs a missing program and checks that its FIFO and
 *                      status file in DIR are back. The last image checks that nothing of an
 *                      earlier one is left in DIR and prints a done line (DETAIL: chain=ok)
 *   child HOW          allocate and check a little, then leave by HOW: exit (status 7), _exit
 *                      (8) or return from main (9)
 *   exitrace HOW DIR   make a fragmented heap, print "ready PID", after "go" ask for a trim
 *                      (roundtrim_trim) and leave by HOW a random moment later, within about
 *                      twice a trim's duration; prints "exiting actions=N" first, N from the
 *                      status file in DIR (0: the action had not finished) */
#include "pattern.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define SLOTS 256
#define CHURNERS 2
#define ERRORS_SHOWN 5

struct slot {
	unsigned char *p;
	size_t size;
	uintptr_t base; /* the address the block had when it was filled */
};

struct verifier {
	uint64_t rng;
	uint64_t seed;
	unsigned long steps;
	struct slot slot[SLOTS];
};

static atomic_bool churn_stop;
static atomic_ulong verified, errors, api_rounds;
static atomic_int eintr_seen, errors_shown;
static int (*api_round)(void);
static int (*api_trim)(void);
static unsigned long api_every = 4096;
static char self_path[PATH_MAX];

static int64_t
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static uint64_t
next_random(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static void
verifier_init(struct verifier *v, uint64_t seed)
{
	memset(v, 0, sizeof(*v));
	v->seed = seed * 0x9E3779B97F4A7C15ULL + 1;
	v->rng = v->seed | 1;
}

static void
report(const struct verifier *v, const char *what, const void *p, size_t size, long offset)
{
	atomic_fetch_add(&errors, 1);
	if (atomic_fetch_add(&errors_shown, 1) < ERRORS_SHOWN)
		fprintf(stderr, "stress: %s: block %p size %zu offset %ld seed %llx\n", what, p,
		        size, offset, (unsigned long long)v->seed);
}

static size_t
pick_size(struct verifier *v)
{
	uint64_t r = next_random(&v->rng);
	unsigned class = r % 1000;
	r >>= 10;
	if (class < 900)
		return 1 + r % 1024;
	if (class < 995)
		return 1024 + r % 65536;
	return 65536 + r % (1 << 20);
}

static bool
check_slot(struct verifier *v, const struct slot *s)
{
	atomic_fetch_add_explicit(&verified, 1, memory_order_relaxed);
	long off = pattern_check(s->p, s->size, s->base, v->seed);
	if (off >= 0)
		report(v, "damaged block", s->p, s->size, off);
	return off < 0;
}

/* Takes a block fresh from the allocator: checks what can be checked, then fills it. */
static void
adopt_block(struct verifier *v, struct slot *s, void *p, size_t size, size_t align, bool zero)
{
	if (!p) {
		report(v, "allocation failed", p, size, -1);
		return;
	}
	if (align && (uintptr_t)p % align)
		report(v, "misaligned block", p, size, (long)align);
	if (malloc_usable_size(p) < size)
		report(v, "usable size below the size asked", p, size, (long)malloc_usable_size(p));
	if (zero && !pattern_is_zero(p, size))
		report(v, "calloc block not zero", p, size, -1);
	pattern_fill(p, size, (uintptr_t)p, v->seed);
	s->p = p;
	s->size = size;
	s->base = (uintptr_t)p;
}

static void
alloc_slot(struct verifier *v, struct slot *s)
{
	size_t size = pick_size(v);
	uint64_t r = next_random(&v->rng);
	size_t align = (size_t)16 << (r % 9);
	void *p = NULL;
	switch ((r >> 8) % 8) {
	case 0:
		adopt_block(v, s, malloc(size), size, 0, false);
		return;
	case 1:
		adopt_block(v, s, calloc(1 + size / 16, 16), size, 0, true);
		return;
	case 2:
		adopt_block(v, s, realloc(NULL, size), size, 0, false);
		return;
	case 3:
		adopt_block(v, s, reallocarray(NULL, size, 1), size, 0, false);
		return;
	case 4:
		if (posix_memalign(&p, align, size) != 0)
			p = NULL;
		adopt_block(v, s, p, size, align, false);
		return;
	case 5:
		size = (size + align - 1) / align * align;
		adopt_block(v, s, aligned_alloc(align, size), size, align, false);
		return;
	case 6:
		adopt_block(v, s, memalign(align, size), size, align, false);
		return;
	default:
		adopt_block(v, s, valloc(size), size, 4096, false);
		return;
	}
}

static void
release_slot(struct verifier *v, struct slot *s)
{
	check_slot(v, s);
	free(s->p);
	s->p = NULL;
}

/* realloc or reallocarray to a new size: the prefix must survive a move. */
static void
resize_slot(struct verifier *v, struct slot *s)
{
	if (!check_slot(v, s))
		return;
	size_t size = pick_size(v);
	bool array = next_random(&v->rng) % 2;
	unsigned char *q = array ? reallocarray(s->p, size, 1) : realloc(s->p, size);
	if (!q) {
		report(v, "realloc failed", s->p, size, -1);
		return; /* the old block is still there, still filled */
	}
	size_t keep = size < s->size ? size : s->size;
	atomic_fetch_add_explicit(&verified, 1, memory_order_relaxed);
	long off = pattern_check(q, keep, s->base, v->seed);
	if (off >= 0)
		report(v, "realloc lost the prefix", q, keep, off);
	s->p = q;
	s->size = size;
	s->base = (uintptr_t)q;
	pattern_fill(q, size, s->base, v->seed);
}

static void
verifier_step(struct verifier *v)
{
	uint64_t r = next_random(&v->rng);
	struct slot *s = &v->slot[r % SLOTS];
	v->steps++;
	if (!s->p) {
		alloc_slot(v, s);
		return;
	}
	switch ((r >> 16) % 4) {
	case 0:
	case 1:
		release_slot(v, s);
		break;
	case 2:
		resize_slot(v, s);
		break;
	default:
		check_slot(v, s);
		break;
	}
	if (api_every && api_round && v->steps % api_every == 0 && api_round() == 0)
		atomic_fetch_add(&api_rounds, 1);
}

static void
verifier_finish(struct verifier *v)
{
	for (size_t i = 0; i < SLOTS; i++)
		if (v->slot[i].p)
			release_slot(v, &v->slot[i]);
}

static struct verifier churn_state[CHURNERS];
static pthread_t churn_threads[CHURNERS];

/* How many churners have made their first step: the storm is not over before each has worked
 * (on a loaded machine a short run could end before a churner ran at all, and check nothing). */
static pthread_mutex_t churn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t churn_started_cond = PTHREAD_COND_INITIALIZER;
static int churn_started;

static void *
churn_main(void *arg)
{
	struct verifier *v = arg;
	verifier_step(v);
	pthread_mutex_lock(&churn_lock);
	churn_started++;
	pthread_cond_broadcast(&churn_started_cond);
	pthread_mutex_unlock(&churn_lock);
	while (!atomic_load_explicit(&churn_stop, memory_order_relaxed))
		verifier_step(v);
	verifier_finish(v);
	return NULL;
}

/* Threads that sit in poll and in read until the end: a signal that reached them would show as
 * EINTR. */
static int eintr_pipes[2][2];
static pthread_t eintr_threads[2];

static void *
eintr_poller(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd pfd = {.fd = eintr_pipes[0][0], .events = POLLIN};
		int n = poll(&pfd, 1, -1);
		if (n < 0 && errno == EINTR) {
			atomic_fetch_add(&eintr_seen, 1);
			continue;
		}
		return NULL;
	}
}

static void *
eintr_reader(void *arg)
{
	(void)arg;
	char c;
	for (;;) {
		ssize_t n = read(eintr_pipes[1][0], &c, 1);
		if (n < 0 && errno == EINTR) {
			atomic_fetch_add(&eintr_seen, 1);
			continue;
		}
		return NULL;
	}
}

static void
background_start(bool watchers)
{
	for (int i = 0; i < CHURNERS; i++) {
		verifier_init(&churn_state[i], (uint64_t)getpid() * 16 + (uint64_t)i);
		pthread_create(&churn_threads[i], NULL, churn_main, &churn_state[i]);
	}
	if (!watchers)
		return;
	if (pipe2(eintr_pipes[0], O_CLOEXEC) != 0 || pipe2(eintr_pipes[1], O_CLOEXEC) != 0)
		exit(1);
	pthread_create(&eintr_threads[0], NULL, eintr_poller, NULL);
	pthread_create(&eintr_threads[1], NULL, eintr_reader, NULL);
}

static void
background_stop(bool watchers)
{
	pthread_mutex_lock(&churn_lock);
	while (churn_started < CHURNERS)
		pthread_cond_wait(&churn_started_cond, &churn_lock);
	pthread_mutex_unlock(&churn_lock);
	atomic_store(&churn_stop, true);
	for (int i = 0; i < CHURNERS; i++)
		pthread_join(churn_threads[i], NULL);
	if (!watchers)
		return;
	for (int i = 0; i < 2; i++) {
		if (write(eintr_pipes[i][1], "x", 1) != 1)
			exit(1);
		pthread_join(eintr_threads[i], NULL);
	}
}

/* Reads one line of stdin into buf (without the newline); false at EOF. */
static bool
read_line(char *buf, size_t size)
{
	size_t n = 0;
	char c;
	for (;;) {
		ssize_t got = read(0, &c, 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return false;
		if (c == '\n')
			break;
		if (n + 1 < size)
			buf[n++] = c;
	}
	buf[n] = '\0';
	return true;
}

static bool
expect_line(const char *want)
{
	char line[64];
	return read_line(line, sizeof(line)) && !strcmp(line, want);
}

static void
wait_eof(void)
{
	char buf[256];
	while (read(0, buf, sizeof(buf)) > 0)
		;
}

/* ----- threads: thread churn ----- */

#define HANDOFF_MAX 256

struct handoff {
	struct slot s;
	uint64_t seed;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t done_cond;
	struct handoff pool[HANDOFF_MAX];
	int count;
	long done;
	sem_t alive;
	int steps;
} storm = {.lock = PTHREAD_MUTEX_INITIALIZER, .done_cond = PTHREAD_COND_INITIALIZER};

static void *
storm_thread(void *arg)
{
	struct verifier v;
	verifier_init(&v, (uint64_t)(uintptr_t)arg * 7919 + (uint64_t)getpid());
	for (int i = 0; i < storm.steps; i++)
		verifier_step(&v);
	/* Leave some blocks to the threads after us, take some of those before us. */
	struct handoff taken[4];
	int n_taken = 0;
	pthread_mutex_lock(&storm.lock);
	for (int i = 0; i < 4 && storm.count > 0; i++)
		taken[n_taken++] = storm.pool[--storm.count];
	for (size_t i = 0, left = 0; i < SLOTS && left < 4 && storm.count < HANDOFF_MAX; i++) {
		if (!v.slot[i].p)
			continue;
		storm.pool[storm.count++] = (struct handoff){v.slot[i], v.seed};
		v.slot[i].p = NULL;
		left++;
	}
	pthread_mutex_unlock(&storm.lock);
	for (int i = 0; i < n_taken; i++) {
		struct verifier other = {.seed = taken[i].seed};
		release_slot(&other, &taken[i].s);
	}
	verifier_finish(&v);
	pthread_mutex_lock(&storm.lock);
	storm.done++;
	pthread_cond_signal(&storm.done_cond);
	pthread_mutex_unlock(&storm.lock);
	sem_post(&storm.alive);
	return NULL;
}

static struct timespec
deadline_in(int seconds)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += seconds;
	return ts;
}

static long
work_threads(long n, int alive, char *detail, size_t size)
{
	long failed = 0;
	storm.steps = 200;
	sem_init(&storm.alive, 0, (unsigned)alive);
	pthread_t joinable[64];
	int pending = 0;
	for (long i = 0; i < n; i++) {
		struct timespec until = deadline_in(60);
		if (sem_timedwait(&storm.alive, &until) != 0) {
			fprintf(stderr, "stress: no thread ended within 60 s\n");
			return failed + 1;
		}
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		bool detached = i % 2;
		pthread_attr_setdetachstate(&attr, detached ? PTHREAD_CREATE_DETACHED
		                                            : PTHREAD_CREATE_JOINABLE);
		pthread_t t;
		int err = pthread_create(&t, &attr, storm_thread, (void *)(uintptr_t)i);
		pthread_attr_destroy(&attr);
		if (err != 0) {
			fprintf(stderr, "stress: pthread_create: %s\n", strerror(err));
			sem_post(&storm.alive);
			failed++;
			continue;
		}
		if (detached)
			continue;
		if (pending == 64) {
			pthread_join(joinable[0], NULL);
			memmove(joinable, joinable + 1, sizeof(joinable[0]) * 63);
			pending--;
		}
		joinable[pending++] = t;
	}
	for (int i = 0; i < pending; i++)
		pthread_join(joinable[i], NULL);
	struct timespec until = deadline_in(60);
	pthread_mutex_lock(&storm.lock);
	while (storm.done + failed < n &&
	       pthread_cond_timedwait(&storm.done_cond, &storm.lock, &until) == 0)
		;
	long done = storm.done;
	for (int i = 0; i < storm.count; i++) {
		struct verifier other = {.seed = storm.pool[i].seed};
		release_slot(&other, &storm.pool[i].s);
	}
	storm.count = 0;
	pthread_mutex_unlock(&storm.lock);
	snprintf(detail, size, "threads=%ld", done);
	return failed + (done + failed < n);
}

/* ----- dlopen: a shared object that allocates in its constructor and destructor ----- */

static struct {
	const char *path;
	long iterations;
	atomic_long done;
	atomic_long failed;
} dl;

static void *
dl_thread(void *arg)
{
	uint64_t seed = (uint64_t)(uintptr_t)arg;
	for (long i = 0; i < dl.iterations; i++) {
		void *h = dlopen(dl.path, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			fprintf(stderr, "stress: dlopen: %s\n", dlerror());
			atomic_fetch_add(&dl.failed, 1);
			return NULL;
		}
		long (*touch)(uint64_t) =
		    (long (*)(uint64_t))(uintptr_t)dlsym(h, "stress_dso_touch");
		long damaged = touch ? touch(seed + (uint64_t)i) : 1;
		if (damaged) {
			fprintf(stderr, "stress: the shared object found %ld damaged blocks\n",
			        damaged);
			atomic_fetch_add(&dl.failed, damaged);
		}
		dlclose(h);
		atomic_fetch_add(&dl.done, 1);
	}
	return NULL;
}

static long
work_dlopen(long n, const char *path, char *detail, size_t size)
{
	pthread_t t[2];
	dl.path = path;
	dl.iterations = n / 2;
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, dl_thread, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	snprintf(detail, size, "dlopen=%ld", atomic_load(&dl.done));
	return atomic_load(&dl.failed);
}

/* ----- forkexec: children that exec at once, and a few that stay ----- */

static const char *const exit_ways[] = {"exit", "_exit", "return"};

static struct {
	const char *dir;
	long iterations;
	long stay_every;
	atomic_long children, stays, failed;
} fx;

static bool
file_has(const char *path, const char *needle)
{
	char buf[4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return strstr(buf, needle) != NULL;
}

/* Under make check-asan: LeakSanitizer cannot judge a fork child of this multithreaded
 * program. A block that one of the parent's other threads (gone in the child) held only in its
 * registers or stack looks unreferenced (LeakSanitizer warns "False leaks are possible"), and
 * the symbolizer it starts to match such blocks against the suppressions outlives the child.
 * Its check at exit is off in the children that stay; the parent's is not. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
static volatile int lsan_off;
int __lsan_is_turned_off(void);
int
__lsan_is_turned_off(void)
{
	return lsan_off;
}
#define LSAN_OFF() (lsan_off = 1)
#endif
#endif
#ifndef LSAN_OFF
#define LSAN_OFF() ((void)0)
#endif

/* A fork child that keeps allocating: its library starts after a second, with a FIFO of its
 * own, which must count the child's own rounds. Returns the child's exit status. */
static int
stay_child(uint64_t seed)
{
	char status[PATH_MAX], fifo[PATH_MAX];
	LSAN_OFF();
	api_every = 0; /* an API call would start the library at once: let the allocations do it */
	snprintf(status, sizeof(status), "%s/%d.status", fx.dir, getpid());
	snprintf(fifo, sizeof(fifo), "%s/%d.fifo", fx.dir, getpid());
	struct verifier v;
	verifier_init(&v, seed);
	int64_t deadline = now_ns() + 30 * 1000000000LL;
	while (access(status, F_OK) != 0) {
		for (int i = 0; i < 64; i++)
			verifier_step(&v);
		if (now_ns() > deadline)
			return 5;
	}
	static const char rounds[] = "round\nround\nround\nround\nround\n";
	int fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	for (int i = 0; i < 20; i++)
		if (fd < 0 || write(fd, rounds, sizeof(rounds) - 1) != sizeof(rounds) - 1)
			return 6;
	close(fd);
	while (!file_has(status, "\"rounds\":100,")) {
		for (int i = 0; i < 64; i++)
			verifier_step(&v);
		if (now_ns() > deadline)
			return 6;
	}
	verifier_finish(&v);
	return atomic_load(&errors) ? 3 : 0;
}

static pid_t
start_child(long i, const char *how)
{
	char *const argv[] = {"stress", "child", (char *)how, NULL};
	pid_t pid = -1;
	switch ((i / 3) % 3) {
	case 0:
		pid = fork();
		if (pid == 0) {
			if (i % 2)
				syscall(SYS_close_range, 3, ~0U, 0);
			execv(self_path, argv);
			_exit(127);
		}
		return pid;
	case 1:
		pid = vfork();
		if (pid == 0) {
			execv(self_path, argv);
			_exit(127);
		}
		return pid;
	default:
		if (posix_spawn(&pid, self_path, NULL, NULL, argv, environ) != 0)
			return -1;
		return pid;
	}
}

static void *
fx_thread(void *arg)
{
	long first = (long)(uintptr_t)arg;
	for (long i = first; i < fx.iterations; i += 2) {
		bool stay = fx.stay_every && i % fx.stay_every == fx.stay_every / 2;
		int want = stay ? 0 : 7 + (int)(i % 3);
		pid_t pid;
		if (stay) {
			pid = fork();
			if (pid == 0)
				exit(stay_child((uint64_t)i));
		} else {
			pid = start_child(i, exit_ways[i % 3]);
		}
		int status = 0;
		pid_t got;
		while (pid > 0 && (got = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
			;
		if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != want) {
			fprintf(stderr, "stress: child %ld (%s): status %#x, expected exit %d\n", i,
			        stay ? "stay" : exit_ways[i % 3], status, want);
			atomic_fetch_add(&fx.failed, 1);
		}
		atomic_fetch_add(stay ? &fx.stays : &fx.children, 1);
	}
	return NULL;
}

static long
work_forkexec(long n, const char *dir, char *detail, size_t size)
{
	fx.dir = dir;
	fx.iterations = n;
	fx.stay_every = 2000;
	if (n < fx.stay_every)
		fx.stay_every = n; /* at least one that stays */
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, fx_thread, (void *)(uintptr_t)i);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	snprintf(detail, size, "children=%ld stays=%ld", atomic_load(&fx.children),
	         atomic_load(&fx.stays));
	return atomic_load(&fx.failed);
}

/* ----- hostile: the host closes or replaces every descriptor of the library's ----- */

#define HOSTILE_MAX 16

struct host_file {
	int fd;
	int writer; /* the pipe's other end, or -1 for a file */
	dev_t dev;
	ino_t ino;
	char text[32];
};

static int
fds_at_or_above(const char *dir, int floor, int *fds, int max)
{
	int n = 0;
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL) {
		int fd = atoi(e->d_name);
		if (fd >= floor && fd != dirfd(d) && n < max)
			fds[n++] = fd;
	}
	if (d)
		closedir(d);
	return n;
}

/* The numbers the library holds: in the program's table, or else in the table of the worker's
 * own (the thread named roundtrim) or of the keeper (roundtrim-fds), where the host's closing and
 * replacing cannot reach them. */
static int
library_fds(int floor, int *fds, int max)
{
	int n = fds_at_or_above("/proc/self/fd", floor, fds, max);
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	while (n == 0 && d && (e = readdir(d)) != NULL) {
		char path[300], comm[32] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		bool worker = fgets(comm, sizeof(comm), f) &&
		              (!strcmp(comm, "roundtrim\n") || !strcmp(comm, "roundtrim-fds\n"));
		fclose(f);
		snprintf(path, sizeof(path), "/proc/self/task/%s/fd", e->d_name);
		if (worker)
			n = fds_at_or_above(path, floor, fds, max);
	}
	if (d)
		closedir(d);
	return n;
}

/* Puts a file of the host's on number fd: a pipe holding a line, or an unnamed file holding
 * it at offset 0. */
static bool
host_file_on(struct host_file *h, int fd, bool use_pipe)
{
	int p[2], own;
	h->fd = fd;
	h->writer = -1;
	snprintf(h->text, sizeof(h->text), "host-%d\n", fd);
	size_t len = strlen(h->text);
	if (use_pipe) {
		if (pipe2(p, O_CLOEXEC) != 0 || write(p[1], h->text, len) != (ssize_t)len)
			return false;
		own = p[0];
		h->writer = p[1];
	} else {
		own = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		if (own < 0 || write(own, h->text, len) != (ssize_t)len ||
		    lseek(own, 0, SEEK_SET) != 0)
			return false;
	}
	if (dup2(own, fd) != fd)
		return false;
	close(own);
	struct stat st;
	if (fstat(fd, &st) != 0)
		return false;
	h->dev = st.st_dev;
	h->ino = st.st_ino;
	return true;
}

static bool
host_file_intact(const struct host_file *h)
{
	struct stat st;
	char buf[64];
	size_t len = strlen(h->text);
	if (fstat(h->fd, &st) != 0 || st.st_dev != h->dev || st.st_ino != h->ino) {
		fprintf(stderr, "stress: host descriptor %d was closed or replaced\n", h->fd);
		return false;
	}
	if (h->writer >= 0) {
		fcntl(h->fd, F_SETFL, O_NONBLOCK);
		ssize_t n = read(h->fd, buf, sizeof(buf));
		ssize_t more = read(h->fd, buf + (n > 0 ? n : 0), 1);
		if (n != (ssize_t)len || memcmp(buf, h->text, len) || more >= 0) {
			fprintf(stderr, "stress: host pipe %d was read or written (%zd bytes)\n",
			        h->fd, n);
			return false;
		}
		return true;
	}
	ssize_t n = pread(h->fd, buf, sizeof(buf), 0);
	if (lseek(h->fd, 0, SEEK_CUR) != 0 || n != (ssize_t)len || memcmp(buf, h->text, len)) {
		fprintf(stderr, "stress: host file %d was read or written (offset %lld)\n", h->fd,
		        (long long)lseek(h->fd, 0, SEEK_CUR));
		return false;
	}
	return true;
}

static long
work_hostile(const char *how, int floor, char *detail, size_t size)
{
	int fds[HOSTILE_MAX];
	struct host_file host[HOSTILE_MAX];
	int n = library_fds(floor, fds, HOSTILE_MAX);
	if (!strcmp(how, "closeall") && syscall(SYS_close_range, 3, ~0U, 0) != 0) {
		snprintf(detail, size, "close_range: %s", strerror(errno));
		return 1;
	}
	for (int i = 0; i < n; i++)
		if (!host_file_on(&host[i], fds[i], i % 2 == 0)) {
			snprintf(detail, size, "a file of the host's on %d: %s", fds[i],
			         strerror(errno));
			return 1;
		}
	printf("hostile fds=%d\n", n);
	if (!expect_line("check"))
		return 1;
	int intact = 0;
	for (int i = 0; i < n; i++)
		intact += host_file_intact(&host[i]);
	snprintf(detail, size, "intact=%d/%d", intact, n);
	return n - intact;
}

/* ----- execchain: the process replaces itself ----- */

static bool
own_files_there(const char *dir)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%d.fifo", dir, getpid());
	if (access(path, F_OK) != 0)
		return false;
	snprintf(path, sizeof(path), "%s/%d.status", dir, getpid());
	return access(path, F_OK) == 0;
}

/* Files of this pid in dir other than its FIFO and status file: what an earlier image set
 * aside and the library should have removed. */
static int
earlier_files(const char *dir)
{
	char prefix[32], fifo[32], status[32];
	snprintf(prefix, sizeof(prefix), "%d.", getpid());
	snprintf(fifo, sizeof(fifo), "%d.fifo", getpid());
	snprintf(status, sizeof(status), "%d.status", getpid());
	int n = 0;
	DIR *d = opendir(dir);
	for (struct dirent *e; d && (e = readdir(d)) != NULL;)
		n += !strncmp(e->d_name, prefix, strlen(prefix)) && strcmp(e->d_name, fifo) &&
		     strcmp(e->d_name, status);
	if (d)
		closedir(d);
	return n;
}

/* One image of the chain: checks, some work, then the next image (or, the last, the result). */
static int
mode_execchain(long left, const char *dir, bool first)
{
	background_start(false);
	if (first) {
		printf("ready %d\n", getpid());
		if (!expect_line("go"))
			return 1;
	}
	if (!own_files_there(dir) || earlier_files(dir)) {
		fprintf(stderr,
		        "stress: image %ld: FIFO or status missing, or an earlier one left\n",
		        left);
		return 3;
	}
	struct verifier v;
	verifier_init(&v, (uint64_t)left);
	for (int i = 0; i < 1000; i++)
		verifier_step(&v);
	verifier_finish(&v);
	if (left == 0) {
		background_stop(false);
		printf("done errors=%lu verified=%lu api=%lu eintr=0 chain=ok\n",
		       atomic_load(&errors), atomic_load(&verified), atomic_load(&api_rounds));
		wait_eof();
		return atomic_load(&errors) ? 3 : 0;
	}
	if (atomic_load(&errors))
		return 3;
	if (left % 3 == 0) {
		char *const missing[] = {"missing", NULL};
		if (execv("/nonexistent/stress-missing", missing) == 0 || !own_files_there(dir)) {
			fprintf(stderr,
			        "stress: image %ld: FIFO or status gone after a failed exec\n",
			        left);
			return 3;
		}
	}
	char next[32];
	snprintf(next, sizeof(next), "%ld", left - 1);
	char *const argv[] = {"stress", "execchain", next, (char *)dir, "next", NULL};
	execv(self_path, argv);
	fprintf(stderr, "stress: execv %s: %s\n", self_path, strerror(errno));
	return 3;
}

/* ----- the modes ----- */

static int
storm_mode(int argc, char **argv)
{
	const char *mode = argv[1];
	bool hostile = !strcmp(mode, "hostile");
	if (hostile)
		api_every = 64; /* API rounds poke the FIFO while the host replaces it */
	background_start(!hostile);
	printf("ready %d\n", getpid());
	if (!expect_line("go"))
		return 1;
	char detail[128] = "";
	long failed = 0;
	if (!strcmp(mode, "churn"))
		failed = !expect_line("stop");
	else if (!strcmp(mode, "threads") && argc > 3)
		failed = work_threads(atol(argv[2]), atoi(argv[3]), detail, sizeof(detail));
	else if (!strcmp(mode, "dlopen") && argc > 3)
		failed = work_dlopen(atol(argv[2]), argv[3], detail, sizeof(detail));
	else if (!strcmp(mode, "forkexec") && argc > 3)
		failed = work_forkexec(atol(argv[2]), argv[3], detail, sizeof(detail));
	else if (hostile && argc > 3)
		failed = work_hostile(argv[2], atoi(argv[3]), detail, sizeof(detail));
	else
		return 2;
	background_stop(!hostile);
	unsigned long bad = atomic_load(&errors) + (unsigned long)failed;
	printf("done errors=%lu verified=%lu api=%lu eintr=%d %s\n", bad, atomic_load(&verified),
	       atomic_load(&api_rounds), atomic_load(&eintr_seen), detail);
	wait_eof();
	return bad ? 3 : 0;
}

static int
mode_child(const char *how)
{
	struct verifier v;
	verifier_init(&v, (uint64_t)getpid());
	api_every = 0;
	for (int i = 0; i < 64; i++)
		verifier_step(&v);
	verifier_finish(&v);
	if (atomic_load(&errors))
		return 3;
	if (!strcmp(how, "exit"))
		exit(7);
	if (!strcmp(how, "_exit"))
		_exit(8);
	return 9;
}

static long
status_actions(const char *dir)
{
	char path[PATH_MAX], buf[4096];
	snprintf(path, sizeof(path), "%s/%d.status", dir, getpid());
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	const char *at = strstr(buf, "\"actions\":");
	return at ? atol(at + 10) : -1;
}

static int
mode_exitrace(const char *how, const char *dir)
{
	enum { blocks = 2048, block_size = 16384 };
	static unsigned char *heap[blocks];
	for (int i = 0; i < blocks; i++) {
		heap[i] = malloc(block_size);
		memset(heap[i], i, block_size);
	}
	for (int i = 1; i < blocks; i += 2)
		free(heap[i]);
	int64_t start = now_ns();
	malloc_trim(0);
	int64_t trim_ns = now_ns() - start;
	/* The holes again, resident, for the library's trim to return. */
	for (int i = 1; i < blocks; i += 2) {
		heap[i] = malloc(block_size);
		memset(heap[i], i, block_size);
	}
	for (int i = 1; i < blocks; i += 2)
		free(heap[i]);
	background_start(false);
	printf("ready %d\n", getpid());
	if (!expect_line("go") || !api_trim || api_trim() != 0)
		return 1;
	uint64_t rng = (uint64_t)now_ns() | 1;
	int64_t until = now_ns() + (int64_t)(next_random(&rng) % (uint64_t)(2 * trim_ns + 100000));
	while (now_ns() < until)
		;
	printf("exiting actions=%ld\n", status_actions(dir));
	if (!strcmp(how, "exit"))
		exit(7);
	if (!strcmp(how, "_exit"))
		_exit(8);
	return 9;
}

int
main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	*(void **)&api_round = dlsym(RTLD_DEFAULT, "roundtrim_round");
	*(void **)&api_trim = dlsym(RTLD_DEFAULT, "roundtrim_trim");
	ssize_t n = readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);
	self_path[n > 0 ? n : 0] = '\0';
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "child") && argc > 2)
		return mode_child(argv[2]);
	if (!strcmp(mode, "execchain") && argc > 3)
		return mode_execchain(atol(argv[2]), argv[3], argc == 4);
	if (!strcmp(mode, "exitrace") && argc > 3)
		return mode_exitrace(argv[2], argv[3]);
	if (!strcmp(mode, "churn") || !strcmp(mode, "threads") || !strcmp(mode, "dlopen") ||
	    !strcmp(mode, "forkexec") || !strcmp(mode, "hostile"))
		return storm_mode(argc, argv);
	fprintf(stderr, "stress: unknown mode %s\n", mode);
	return 2;
}
