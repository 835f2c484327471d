/* steady: a loop with no rounds, for round detection's false alarms. Every tick it allocates
 * blocks of random sizes and frees as many of the oldest, keeping a constant live set: the
 * allocation rate is constant and nothing ever ends. Prints "start T" (CLOCK_MONOTONIC
 * microseconds) and no boundary.
 *
 * usage: steady [--live-mib L] [--mib-per-s R] [--tick-ms MS] [--duration S] [--seed S] */
#include "options.h"
#include "workload.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_BLOCK 256
#define MAX_BLOCK (64 * 1024)

struct steady_opts {
	long live_mib;
	double mib_per_s;
	double tick_ms;
	double duration;
	uint64_t seed;
};

static struct steady_opts opts = {32, 64, 5, 60, 1};

static int
usage(void)
{
	fprintf(stderr, "usage: steady [--live-mib L] [--mib-per-s R] [--tick-ms MS] "
	                "[--duration S] [--seed S]\n");
	return 2;
}

int
main(int argc, char **argv)
{
	const struct wl_option options[] = {
	    {"live-mib", WL_OPT_LONG, &opts.live_mib},
	    {"mib-per-s", WL_OPT_DOUBLE, &opts.mib_per_s},
	    {"tick-ms", WL_OPT_DOUBLE, &opts.tick_ms},
	    {"duration", WL_OPT_DOUBLE, &opts.duration},
	    {"seed", WL_OPT_U64, &opts.seed},
	};
	if (!WL_PARSE_OPTIONS(argc, argv, options))
		return usage();
	if (opts.live_mib < 1 || opts.mib_per_s <= 0 || opts.tick_ms <= 0 || opts.duration <= 0)
		return usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	uint64_t rng = wl_seed(opts.seed);
	/* A ring of live blocks, oldest first out; average block (MIN+MAX)/2. */
	size_t slots = (size_t)opts.live_mib * 1024 * 1024 / ((MIN_BLOCK + MAX_BLOCK) / 2);
	void **ring = calloc(slots, sizeof(*ring));
	size_t head = 0;
	double per_tick = opts.mib_per_s * 1024 * 1024 * opts.tick_ms / 1000, owed = 0;
	uint64_t tick_us = (uint64_t)(opts.tick_ms * 1000), started = wl_now_us();
	uint64_t next = started;
	wl_print_start();
	while (wl_now_us() - started < (uint64_t)(opts.duration * 1e6)) {
		for (owed += per_tick; owed > 0;) {
			size_t size = MIN_BLOCK + wl_next(&rng) % (MAX_BLOCK - MIN_BLOCK);
			free(ring[head]);
			ring[head] = malloc(size);
			memset(ring[head], 1, size);
			head = (head + 1) % slots;
			owed -= (double)size;
		}
		next += tick_us;
		wl_sleep_until_us(next);
	}
	return 0;
}
