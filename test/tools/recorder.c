/* recorder: a test-only LD_PRELOAD object that writes the process's allocation readings as a
 * trace (policy/rt_trace.h), scaffolding for the detector's workloads until the library's own
 * readings replace it. Each thread counts its own allocations, bytes requested, frees and usable
 * bytes freed in a slot of its own, as the library's counters do; one thread of ours sums the
 * slots every RT_RECORD_INTERVAL_MS (default 50) and appends a reading to the file RT_RECORD,
 * with the live heap from mallinfo2 (unless RT_RECORD_LIVE=0), the RSS from statm and the
 * process's CPU time. A "%p" in RT_RECORD stands for the process's id: then every program the
 * process execs (NVFlare's client starts its job process so) records to a file of its own, and
 * each file's second line, a comment, names its process ("# process PID PPID COMMAND LINE").
 * Without it, only the first process records. Not for production: it calls mallinfo2 at every
 * reading and malloc_usable_size in every free. */
#include "rt_trace.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

void *__libc_malloc(size_t size);
void __libc_free(void *ptr);
void *__libc_calloc(size_t count, size_t size);
void *__libc_realloc(void *ptr, size_t size);
void *__libc_memalign(size_t alignment, size_t size);
void *__libc_valloc(size_t size);
void *__libc_pvalloc(size_t size);

#define EXPORT __attribute__((visibility("default")))
#define SLOTS 4096

/* One writer each (its thread), read by the recording thread: relaxed atomics suffice. */
struct slot {
	_Atomic uint64_t allocations, bytes_requested, frees, bytes_freed, bytes_sent;
} __attribute__((aligned(64)));

static struct slot slots[SLOTS];
/* Threads beyond SLOTS share the last slot, with atomic additions. */
static _Atomic unsigned next_slot;
static __thread struct slot *my_slot __attribute__((tls_model("initial-exec")));
static __thread int my_slot_shared __attribute__((tls_model("initial-exec")));
static int out_fd = -1;
static long interval_ms = 50;
static int with_live = 1;

static void
add(_Atomic uint64_t *counter, uint64_t n)
{
	if (my_slot_shared)
		atomic_fetch_add_explicit(counter, n, memory_order_relaxed);
	else
		atomic_store_explicit(counter,
		                      atomic_load_explicit(counter, memory_order_relaxed) + n,
		                      memory_order_relaxed);
}

static struct slot *
slot(void)
{
	if (!my_slot) {
		unsigned i = atomic_fetch_add_explicit(&next_slot, 1, memory_order_relaxed);
		my_slot_shared = i >= SLOTS - 1;
		my_slot = &slots[my_slot_shared ? SLOTS - 1 : i];
	}
	return my_slot;
}

static void
count_alloc(size_t size)
{
	struct slot *s = slot();
	add(&s->allocations, 1);
	add(&s->bytes_requested, size);
}

static void
count_free(void *ptr, int is_free)
{
	struct slot *s = slot();
	if (is_free)
		add(&s->frees, 1);
	add(&s->bytes_freed, malloc_usable_size(ptr));
}

EXPORT void *
malloc(size_t size)
{
	count_alloc(size);
	return __libc_malloc(size);
}

EXPORT void
free(void *ptr)
{
	if (ptr)
		count_free(ptr, 1);
	__libc_free(ptr);
}

EXPORT void *
calloc(size_t count, size_t size)
{
	count_alloc(count * size);
	return __libc_calloc(count, size);
}

/* As the library counts it: one allocation of the new size, or one free for size 0. */
EXPORT void *
realloc(void *ptr, size_t size)
{
	if (ptr)
		count_free(ptr, size == 0);
	if (size || !ptr)
		count_alloc(size);
	return __libc_realloc(ptr, size);
}

EXPORT void *
reallocarray(void *ptr, size_t count, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(count, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(ptr, total);
}

EXPORT int
posix_memalign(void **out, size_t alignment, size_t size)
{
	if (alignment % sizeof(void *) || (alignment & (alignment - 1)))
		return EINVAL;
	count_alloc(size);
	void *p = __libc_memalign(alignment, size);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

EXPORT void *
aligned_alloc(size_t alignment, size_t size)
{
	count_alloc(size);
	return __libc_memalign(alignment, size);
}

EXPORT void *
memalign(size_t alignment, size_t size)
{
	count_alloc(size);
	return __libc_memalign(alignment, size);
}

EXPORT void *
valloc(size_t size)
{
	count_alloc(size);
	return __libc_valloc(size);
}

EXPORT void *
pvalloc(size_t size)
{
	count_alloc(size);
	return __libc_pvalloc(size);
}

/* The bytes the kernel took from send(2) and its kin: what a client's upload or a server's model
 * broadcast costs, gRPC's sendmsg included. */
static void
count_sent(ssize_t n)
{
	if (n > 0)
		add(&slot()->bytes_sent, (uint64_t)n);
}

typedef ssize_t (*send_fn)(int, const void *, size_t, int);
typedef ssize_t (*sendto_fn)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
typedef ssize_t (*sendmsg_fn)(int, const struct msghdr *, int);
typedef int (*sendmmsg_fn)(int, struct mmsghdr *, unsigned int, int);

#define REAL(name)                                                                                 \
	static name##_fn real_##name;                                                              \
	if (!real_##name)                                                                          \
		real_##name = (name##_fn)dlsym(RTLD_NEXT, #name);

EXPORT ssize_t
send(int fd, const void *buf, size_t len, int flags)
{
	REAL(send);
	ssize_t n = real_send(fd, buf, len, flags);
	count_sent(n);
	return n;
}

EXPORT ssize_t
sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to, socklen_t tolen)
{
	REAL(sendto);
	ssize_t n = real_sendto(fd, buf, len, flags, to, tolen);
	count_sent(n);
	return n;
}

EXPORT ssize_t
sendmsg(int fd, const struct msghdr *msg, int flags)
{
	REAL(sendmsg);
	ssize_t n = real_sendmsg(fd, msg, flags);
	count_sent(n);
	return n;
}

EXPORT int
sendmmsg(int fd, struct mmsghdr *msgs, unsigned int count, int flags)
{
	REAL(sendmmsg);
	int sent = real_sendmmsg(fd, msgs, count, flags);
	for (int i = 0; i < sent; i++)
		count_sent((ssize_t)msgs[i].msg_len);
	return sent;
}

static uint64_t
now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static uint64_t
rss_kib(void)
{
	char buf[128];
	uint64_t resident = 0;
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return RT_TRACE_UNKNOWN;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return RT_TRACE_UNKNOWN;
	buf[n] = '\0';
	const char *p = strchr(buf, ' ');
	if (!p)
		return RT_TRACE_UNKNOWN;
	for (p++; *p >= '0' && *p <= '9'; p++)
		resident = resident * 10 + (uint64_t)(*p - '0');
	return resident * (uint64_t)sysconf(_SC_PAGESIZE) / 1024;
}

static void
write_all(const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(out_fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

static void
record(void)
{
	struct rt_reading r = {0};
	r.t_us = now_us();
	unsigned used = atomic_load_explicit(&next_slot, memory_order_relaxed);
	for (unsigned i = 0; i < used && i < SLOTS; i++) {
		r.allocations += atomic_load_explicit(&slots[i].allocations, memory_order_relaxed);
		r.bytes_requested +=
		    atomic_load_explicit(&slots[i].bytes_requested, memory_order_relaxed);
		r.frees += atomic_load_explicit(&slots[i].frees, memory_order_relaxed);
		r.bytes_freed += atomic_load_explicit(&slots[i].bytes_freed, memory_order_relaxed);
		r.bytes_sent += atomic_load_explicit(&slots[i].bytes_sent, memory_order_relaxed);
	}
	r.live_bytes = RT_TRACE_UNKNOWN;
	if (with_live) {
		struct mallinfo2 mi = mallinfo2();
		r.live_bytes = mi.uordblks + mi.hblkhd;
	}
	r.rss_kib = rss_kib();
	struct timespec cpu;
	r.cpu_us = clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu) == 0
	               ? (uint64_t)cpu.tv_sec * 1000000 + (uint64_t)cpu.tv_nsec / 1000
	               : RT_TRACE_UNKNOWN;
	char line[RT_TRACE_LINE_MAX];
	write_all(line, rt_trace_format(line, sizeof(line), &r));
}

static void *
recorder_main(void *arg)
{
	(void)arg;
	uint64_t next = now_us();
	for (;;) {
		next += (uint64_t)interval_ms * 1000;
		/* Late (a loaded machine): the next deadline, not a burst of catching up. */
		uint64_t now = now_us();
		if (next < now)
			next = now + (uint64_t)interval_ms * 1000;
		struct timespec at = {(time_t)(next / 1000000), (long)(next % 1000000) * 1000};
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR)
			;
		record();
	}
	return NULL;
}

/* "# process PID PPID COMMAND LINE": which process the trace is. */
static void
write_process_line(void)
{
	char cmd[512], line[640];
	ssize_t n = 0;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, cmd, sizeof(cmd) - 1);
		close(fd);
	}
	if (n < 0)
		n = 0;
	for (ssize_t i = 0; i < n; i++)
		if (cmd[i] == '\0' || cmd[i] == '\n')
			cmd[i] = ' ';
	cmd[n] = '\0';
	int len = snprintf(line, sizeof(line), "# process %d %d %s\n", (int)getpid(),
	                   (int)getppid(), cmd);
	if (len > 0)
		write_all(line, (size_t)len < sizeof(line) ? (size_t)len : sizeof(line) - 1);
}

__attribute__((constructor)) static void
recorder_start(void)
{
	const char *path = getenv("RT_RECORD");
	const char *interval = getenv("RT_RECORD_INTERVAL_MS");
	const char *live = getenv("RT_RECORD_LIVE");
	if (!path || !*path)
		return;
	if (interval && atol(interval) > 0)
		interval_ms = atol(interval);
	if (live && !strcmp(live, "0"))
		with_live = 0;
	char own[4096];
	const char *pid_at = strstr(path, "%p");
	if (pid_at) {
		int n = snprintf(own, sizeof(own), "%.*s%d%s", (int)(pid_at - path), path,
		                 (int)getpid(), pid_at + 2);
		if (n < 0 || n >= (int)sizeof(own))
			return;
		path = own;
	} else {
		/* Children (a shell's, Python's) must not append to the same file. */
		unsetenv("RT_RECORD");
	}
	out_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out_fd < 0)
		return;
	write_all(RT_TRACE_HEADER, sizeof(RT_TRACE_HEADER) - 1);
	write_process_line();
	record();
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t thread;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_create(&thread, &attr, recorder_main, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}
