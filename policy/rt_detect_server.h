/* rt_detect_server: the server role's round boundaries, one a period, from its allocation rhythm.
 * Owns what makes a burst a server's round end, the period and phase it locks on, and their
 * parameters. */
#ifndef RT_DETECT_SERVER_H
#define RT_DETECT_SERVER_H

#include "rt_detect.h"
#include "rt_trace.h"

#include <stdbool.h>
#include <stdint.h>

/* A federated server's round is near-periodic: the clients train while it waits (heartbeats,
 * polls), their updates arrive and are aggregated, the round ends, and the next model goes out
 * to every client. The round's end falls inside that activity, and what follows it (the sends)
 * gives back no less than what came before it, so the client detector's rule (the quiet after
 * a burst that gave back what it took) fires at every part of it. This detector counts periods
 * instead:
 *  - activity, bursts and quiet periods are rt_detect's (the same rates, peaks and CPU rule):
 *    a burst is confirmed over once no interval has been active for quiet_us;
 *  - a burst's weight is its allocation events (allocations + frees): aggregating the updates
 *    is many small objects, while a model sent or relayed is few large blocks;
 *  - a burst of at least min_burst_events is a round's end when it weighs at least
 *    min_weight_permille of the median of the last rounds' ends (RT_DETECT_SERVER_HISTORY;
 *    none before the second) and, once the period is known (the median of the last
 *    intervals between ends, after RT_DETECT_LOCK_ROUNDS of them), when it comes at least
 *    min_phase_permille of a period after the last end: one end a period;
 *  - a burst inside that part of the period that weighs more than the last end moves the
 *    phase to itself without a new boundary (the period's heaviest burst is its aggregation),
 *    so that a first lock on the wrong burst of a period does not last.
 * The live heap and the bytes freed are not used: the detector never asks for the live heap. */
struct rt_detect_server_params {
	uint64_t min_interval_us;    /* 10000: a reading sooner after the last one is skipped */
	uint64_t quiet_us;           /* 400000 */
	uint32_t quiet_permille;     /* 20 */
	uint64_t peak_half_life_us;  /* 5000000 */
	uint32_t quiet_cpu_permille; /* 250; 0 = CPU time not used */
	uint32_t idle_cpu_permille;  /* 50 */
	uint64_t min_burst_events;   /* 500: heartbeats and polls weigh less */
	uint32_t min_weight_permille; /* 600 */
	uint32_t min_phase_permille;  /* 500 */
};

#define RT_DETECT_SERVER_HISTORY 5

struct rt_detect_server {
	struct rt_detect_server_params params;
	bool started;
	struct rt_reading last;
	uint64_t peak_events_per_s;
	uint64_t peak_bytes_per_s;
	uint64_t peak_cpu_permille;
	bool in_quiet;           /* no active interval since quiet_since_us */
	uint64_t quiet_since_us; /* the end of the last active interval */
	bool quiet_handled;      /* this quiet period was already decided */
	uint64_t burst_events;   /* the current or last burst's weight */
	/* The weights of the last rounds' ends (the first, start-up's, left out) and the intervals
	 * between them: rings, the oldest overwritten. */
	uint64_t weights[RT_DETECT_SERVER_HISTORY];
	unsigned nweights;
	unsigned next_weight;
	uint64_t intervals_us[RT_DETECT_SERVER_HISTORY];
	unsigned nintervals;
	unsigned next_interval;
	uint64_t last_weight; /* the weight of the burst the phase is locked on */
	/* Outputs, as rt_detect's */
	uint64_t boundaries;
	uint64_t boundary_us; /* where the phase is locked: the quiet after the last end */
	uint32_t confidence_permille;
	uint64_t period_us; /* 0 while not known */
};

void rt_detect_server_default_params(struct rt_detect_server_params *params);

void rt_detect_server_init(struct rt_detect_server *detect,
                           const struct rt_detect_server_params *params);

/* Feeds the next reading, as rt_detect_feed (skipped when too soon, a restart of the history
 * when a counter or the time went back). Returns RT_DETECT_NOTHING or RT_DETECT_BOUNDARY. */
enum rt_detect_result rt_detect_server_feed(struct rt_detect_server *detect,
                                            const struct rt_reading *reading);

#endif
