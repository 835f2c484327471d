/* workload: what the round workloads share for round detection. Owns the truth lines
 * ("start T" and "boundary R T", T in CLOCK_MONOTONIC microseconds), a seeded generator, ranges
 * given as MIN:MAX on the command line, sleeping until a deadline, and a thread's heap churn. */
#ifndef WORKLOAD_H
#define WORKLOAD_H

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct wl_range {
	double min, max;
};

static inline uint64_t
wl_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* xorshift64*, seeded through splitmix64 so that any seed, 0 included, gives a good state. */
static inline uint64_t
wl_seed(uint64_t seed)
{
	uint64_t z = seed + 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return z ? z : 1;
}

static inline uint64_t
wl_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* Uniform in [0, 1). */
static inline double
wl_unit(uint64_t *s)
{
	return (double)(wl_next(s) >> 11) / (double)(1ull << 53);
}

static inline double
wl_uniform(uint64_t *s, struct wl_range r)
{
	return r.min + (r.max - r.min) * wl_unit(s);
}

/* Log-uniform in [lo, hi): many small blocks, most bytes in larger ones, as in a real heap. */
static inline size_t
wl_log_uniform(uint64_t *s, size_t lo, size_t hi)
{
	return (size_t)((double)lo * exp(wl_unit(s) * log((double)hi / (double)lo)));
}

/* Until *stop: frees and allocates blocks of 64 B to 64 KiB at random among 4096 slots, each
 * touched, as a thread that keeps the heap busy; frees them all at the end. */
static inline void
wl_churn(const atomic_int *stop)
{
	void *slots[4096] = {0};
	uint64_t x = wl_seed(0);
	while (!atomic_load(stop)) {
		uint64_t r = wl_next(&x);
		size_t i = r % 4096;
		free(slots[i]);
		slots[i] = malloc(64 + (r >> 12) % 65536);
		memset(slots[i], 1, 64);
	}
	for (size_t i = 0; i < 4096; i++)
		free(slots[i]);
}

/* "MIN:MAX" or a single value; both >= 0 and MIN <= MAX. */
static inline bool
wl_parse_range(const char *text, struct wl_range *out)
{
	char *end;
	errno = 0;
	double lo = strtod(text, &end), hi = lo;
	if (end == text || errno)
		return false;
	if (*end == ':') {
		const char *rest = end + 1;
		hi = strtod(rest, &end);
		if (end == rest || errno)
			return false;
	}
	if (*end || lo < 0 || hi < lo)
		return false;
	out->min = lo;
	out->max = hi;
	return true;
}

static inline void
wl_sleep_until_us(uint64_t deadline_us)
{
	struct timespec at = {(time_t)(deadline_us / 1000000),
	                      (long)(deadline_us % 1000000) * 1000};
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR)
		;
}

static inline void
wl_sleep_s(double seconds)
{
	if (seconds > 0)
		wl_sleep_until_us(wl_now_us() + (uint64_t)(seconds * 1e6));
}

/* The truth lines; stdout must be line-buffered. */
static inline void
wl_print_start(void)
{
	printf("start %llu\n", (unsigned long long)wl_now_us());
}

static inline void
wl_print_boundary(int round, uint64_t t_us)
{
	printf("boundary %d %llu\n", round, (unsigned long long)t_us);
}

#endif
