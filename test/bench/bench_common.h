/* bench_common: what the benchmark programs of test/bench share. Owns the clock, failing with a
 * message, sorting samples into percentiles, FIFO writes and inotify waits. */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

/* Set by main: the program name that bench_die prints. */
static const char *bench_name __attribute__((unused)) = "bench";

static inline void
bench_die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", bench_name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static inline int64_t
bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A positive decimal option value, or the program dies naming the option. */
static inline long
bench_arg_long(const char *name, const char *value, long min, long max)
{
	char *end;
	errno = 0;
	long v = value ? strtol(value, &end, 10) : 0;
	if (!value || errno || end == value || *end || v < min || v > max)
		bench_die("%s takes a number from %ld to %ld", name, min, max);
	return v;
}

static inline int
bench_cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* The q-quantile (0..1) of n sorted samples, nearest rank. */
static inline int64_t
bench_quantile(const int64_t *sorted, size_t n, double q)
{
	size_t rank = (size_t)(q * (double)n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return sorted[rank - 1];
}

/* Reads a small file into buf (NUL-terminated) without the stdio allocations; -1 when absent. */
static inline ssize_t
bench_read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t len = 0, n;
	while ((size_t)len < size - 1 && (n = read(fd, buf + len, size - 1 - (size_t)len)) > 0)
		len += n;
	close(fd);
	buf[len] = '\0';
	return len;
}

/* This process's RSS from /proc/self/statm, in KiB; 0 when it cannot be read. */
static inline long
bench_rss_kib(void)
{
	char buf[256];
	long size = 0, resident = 0;
	if (bench_read_file("/proc/self/statm", buf, sizeof(buf)) < 0 ||
	    sscanf(buf, "%ld %ld", &size, &resident) != 2)
		return 0;
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Opens a FIFO for writing without blocking forever: -1 when nobody reads it. */
static inline int
bench_fifo_open(const char *path)
{
	int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	/* Blocking from here on: a reader exists, and a trigger must never be dropped. */
	if (fd >= 0)
		fcntl(fd, F_SETFL, 0);
	return fd;
}

/* An inotify descriptor watching path's directory for the events of mask. */
static inline int
bench_watch_dir(const char *path, uint32_t mask)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		bench_die("not an absolute path: %s", path);
	*slash = '\0';
	int ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (ifd < 0 || inotify_add_watch(ifd, *dir ? dir : "/", mask) < 0)
		bench_die("inotify on %s: %s", dir, strerror(errno));
	return ifd;
}

/* Waits until done says yes of the text of the file at path, re-reading it after every inotify
 * event of its directory; the text stays in buf. Returns the clock (bench_now_ns) of the read
 * that done accepted, taken before done's own cost; 0 after timeout_ms. */
static inline int64_t
bench_wait_file(int ifd, const char *path, bool (*done)(const char *text, void *ctx), void *ctx,
                char *buf, size_t size, int timeout_ms)
{
	int64_t deadline = bench_now_ns() + (int64_t)timeout_ms * 1000000;
	for (;;) {
		bool got = bench_read_file(path, buf, size) >= 0;
		int64_t now = bench_now_ns();
		if (got && done(buf, ctx))
			return now;
		int64_t left_ms = (deadline - now) / 1000000;
		if (left_ms <= 0)
			return 0;
		struct pollfd pfd = {.fd = ifd, .events = POLLIN};
		if (poll(&pfd, 1, (int)left_ms) > 0) {
			char events[4096];
			while (read(ifd, events, sizeof(events)) > 0)
				;
		}
	}
}

#endif
