/* rt_detect: round boundaries found in the process's own allocation rhythm, from readings.
 * Owns what counts as a burst, a quiet period and a round's release, and their parameters. */
#ifndef RT_DETECT_H
#define RT_DETECT_H

#include "rt_trace.h"

#include <stdbool.h>
#include <stdint.h>

/* The detector's whole state lives in struct rt_detect, owned by the caller; it allocates
 * nothing and makes no call. A boundary is where a burst of allocation that gave back what it
 * took goes quiet:
 *  - an interval between two readings is active when its event rate (allocations + frees per
 *    second) or its rate of bytes requested exceeds quiet_permille of its recent peak (a peak
 *    that halves every peak_half_life_us, so that start-up or an unusual burst is forgotten),
 *    or, when the readings carry the CPU time, when the process used more than
 *    quiet_cpu_permille of its recent CPU peak and more than idle_cpu_permille of one CPU
 *    (computing between allocations is not a pause; a share of the peak rather than of a CPU,
 *    because a process starved on a busy machine computes at a fraction of one);
 *  - a burst is the activity since the last quiet period; a quiet period is confirmed once no
 *    interval has been active for quiet_us;
 *  - at a confirmed quiet period, a burst of at least min_burst_events and min_burst_bytes is a
 *    round's end when, since some base, the heap kept at most max_kept_permille of what was
 *    requested. Bases are the last boundary (or the first reading) and the start of each
 *    earlier quiet period that did not qualify (up to RT_DETECT_CHECKPOINTS of them), so that a
 *    server's arrivals, each kept, still add up to the round that frees them all.
 * What was kept is measured with the best input the readings carry: the live heap (its change
 * since the base; only a value read during the quiet period counts), else the bytes freed,
 * else the counts (allocations not matched by a free, per allocation). */
struct rt_detect_params {
	uint64_t min_interval_us;    /* 10000: a reading sooner after the last one is skipped */
	uint64_t quiet_us;           /* 400000: longer than a pause inside a round's work */
	uint32_t quiet_permille;     /* 20: activity below 2 % of the peak is quiet */
	uint64_t peak_half_life_us;  /* 5000000 */
	uint32_t quiet_cpu_permille; /* 250: a quarter of the peak; 0 = CPU time not used */
	uint32_t idle_cpu_permille;  /* 50: 5 % of one CPU is idle whatever the peak */
	uint64_t min_burst_events;   /* 64 */
	uint64_t min_burst_bytes;    /* 1 MiB */
	uint32_t max_kept_permille;  /* 250: bytes kept (live heap or bytes freed) per requested */
	uint32_t max_kept_count_permille; /* 250: allocations kept per allocation (counts only) */
	/* With the counts only: RSS growth since the base, per byte requested, above which the
	 * heap is taken to have kept the burst; 0 = RSS not used. */
	uint32_t max_rss_growth_permille; /* 0 */
	/* A round's end must close a round's worth of work: since the last boundary the process
	 * requested at least this share of the median of the last RT_DETECT_HISTORY rounds found
	 * (none before the first); 0 = off. What a round ends with (sending the update, fetching
	 * the next model, a checkpoint) is a burst of its own, and its quiet is no round's end. */
	uint32_t min_round_share_permille; /* 100 */
	/* The rhythm: rounds are near-periodic, and each ends with the period's largest return.
	 * A release that qualifies (a candidate) is a round's end only when the work it closes is
	 * at least min_weight_permille of the most that any of the last RT_DETECT_WEIGHTS
	 * candidates closed, or, once the period is known (RT_DETECT_LOCK_ROUNDS intervals
	 * between rounds found: their median), when it comes at least in_phase_permille of a
	 * period after the last round's end; but within half a period of it only when it weighs
	 * a whole round (at least the scale: a faster round), so that a period has one end. What
	 * a round ends or starts with (the update sent, the next model arriving) closes a small
	 * part of a round's work, and comes early: it is no round's end. 0 = off (every
	 * candidate is a round's end). */
	uint32_t min_weight_permille; /* 300 */
	uint32_t in_phase_permille;   /* 750 */
	/* Once the period is known, a quiet period that begins in phase is looked at after this
	 * long already, and is a round's end then if the work it closes weighs a round's (at least
	 * min_weight_permille); else it waits for quiet_us like any other. 0 = off. */
	uint64_t early_quiet_us; /* 250000 */
	/* A round's end is the quiet after the round's largest return: the burst that ends there
	 * must be at least this share (bytes requested) of the largest burst given back since the
	 * last boundary. A small burst (a heartbeat, a poll) after which the heap is found to have
	 * given back what an earlier burst kept (a thread that freed it meanwhile) is no round's
	 * end. 0 = off. */
	uint32_t min_burst_share_permille; /* 100 */
	/* The rhythm alone: when the last rhythm_bursts significant bursts (this one included) are
	 * alike, each within rhythm_spread_permille of their median size, evenly spaced, each
	 * interval between their quiet periods within as much of the intervals' median, and the
	 * heap gave back after at least one of them, the process does one burst a round, and the
	 * quiet after this one is a round's end whatever the heap kept (a program that leaves
	 * cyclic garbage for a later collection keeps part of every round, and gives it back every
	 * few rounds). Alike bursts that are all kept are parts of a round that a burst of another
	 * kind gives back (a server's arrivals, then its aggregation). It must still close a
	 * round's worth of work (min_round_share_permille). At most RT_DETECT_RHYTHM_MAX bursts;
	 * 0 = off. */
	uint32_t rhythm_bursts;          /* 4 */
	uint32_t rhythm_spread_permille; /* 250 */
	/* The sends, where the readings carry bytes_sent: a client ends its round by sending its
	 * update, and nothing else it does each round sends as much. Once
	 * RT_DETECT_SENT_LOCK_ROUNDS of the last RT_DETECT_HISTORY rounds found each sent at least
	 * min_round_sent_bytes while their closing burst ran or its quiet was confirmed, a
	 * candidate is a round's end only when its own burst and quiet sent at least
	 * min_sent_share_permille of those rounds' median: the next model's arrival, a mid-round
	 * pause (an epoch's end, a DataLoader's restart) and start-up send next to nothing. A
	 * process whose rounds do not send (a relay, a loop with no peer) never locks on; one whose
	 * rounds stop sending what they did (a smaller update, one sent where the readings do not
	 * see it) is let go once, since the last round found, it went on for twice the longest
	 * interval between the last rounds found and did two rounds' work (a round that only
	 * waited or only worked longer does neither), and judged as one that does not send until
	 * its rounds show it again.
	 * Before the first round found, a process that has sent anything at all (it has a peer)
	 * ends no round with a burst that sent less than min_round_sent_bytes, for its first
	 * RT_DETECT_LOCK_ROUNDS such candidates: start-up (imports, the first model's arrival) is
	 * no round's end. 0 = off. */
	uint32_t min_sent_share_permille; /* 500 */
	uint64_t min_round_sent_bytes;    /* 64 KiB: more than a heartbeat or a poll */
	/* true: ask (RT_DETECT_WANT_LIVE) for the live heap in the next reading, at the start and
	 * when a quiet period after a significant burst is about to be confirmed. */
	bool want_live; /* false */
};

#define RT_DETECT_CHECKPOINTS 7
#define RT_DETECT_HISTORY 5
#define RT_DETECT_WEIGHTS 8
#define RT_DETECT_LOCK_ROUNDS 3
#define RT_DETECT_SENT_LOCK_ROUNDS 2
#define RT_DETECT_RHYTHM_MAX 8

enum rt_detect_result {
	RT_DETECT_NOTHING,
	/* Put the live heap in the next reading, if it can be had: at the start, and once per
	 * quiet period after a significant burst, one reading before the quiet period is
	 * confirmed, so that the decision has a value read after the burst at no added delay.
	 * A reading without it makes the decision fall back on the bytes freed or the counts. */
	RT_DETECT_WANT_LIVE,
	RT_DETECT_BOUNDARY, /* a round ended; rt_detect.boundary_us says when its quiet began */
};

/* What decided a boundary. */
enum rt_detect_basis {
	RT_DETECT_BY_NONE,
	RT_DETECT_BY_LIVE,
	RT_DETECT_BY_FREED,
	RT_DETECT_BY_COUNTS,
	RT_DETECT_BY_RHYTHM, /* the rhythm alone (rhythm_bursts), whatever the heap kept */
};

/* The recent peaks that an interval's activity is judged against (see struct rt_detect_params):
 * the one rule of activity that every detector of rounds shares. */
struct rt_detect_peaks {
	uint64_t events_per_s;
	uint64_t bytes_per_s;
	uint64_t cpu_permille;
};

struct rt_detect {
	struct rt_detect_params params;
	bool started;
	struct rt_reading last;
	struct rt_detect_peaks peaks;
	bool in_quiet;             /* no active interval since quiet_since_us */
	uint64_t quiet_since_us;   /* the end of the last active interval */
	bool quiet_handled;        /* this quiet period already fired, asked or made a checkpoint */
	bool early_tried;          /* this quiet period was looked at early */
	bool live_asked;           /* this quiet period already asked for the live heap */
	uint64_t quiet_live_bytes; /* the live heap read during this quiet period, or UNKNOWN */
	uint64_t burst_events;     /* the current or last burst's volume */
	uint64_t burst_bytes;
	uint64_t largest_burst_bytes; /* of the releases since the last boundary */
	struct rt_reading base;       /* the last boundary, or the first reading */
	bool base_wants_live;         /* the first base lacks the live heap it asked for */
	struct rt_reading checkpoints[RT_DETECT_CHECKPOINTS];
	unsigned ncheckpoints; /* ring: the oldest is overwritten */
	unsigned next_checkpoint;
	/* Bytes requested by each of the last rounds found (a ring, as the checkpoints). */
	uint64_t round_bytes[RT_DETECT_HISTORY];
	/* And what each sent (its closing burst's, as min_sent_share_permille measures it;
	 * RT_TRACE_UNKNOWN where the readings did not say), in the same ring. */
	uint64_t round_sent[RT_DETECT_HISTORY];
	unsigned nrounds;
	unsigned next_round;
	uint64_t burst_sent_from; /* bytes_sent when the current burst began, or UNKNOWN */
	unsigned start_refusals;  /* candidates before the first round refused for sending little */
	/* The work each of the last candidates closed, and the intervals between the last rounds'
	 * ends (rings, as the checkpoints). */
	uint64_t weights[RT_DETECT_WEIGHTS];
	unsigned nweights;
	unsigned next_weight;
	uint64_t intervals_us[RT_DETECT_HISTORY];
	unsigned nintervals;
	unsigned next_interval;
	/* The last significant bursts: their bytes requested, where their quiet periods began and
	 * whether the heap had given back at its end (rings, as the checkpoints). */
	uint64_t burst_sizes[RT_DETECT_RHYTHM_MAX];
	uint64_t burst_quiets_us[RT_DETECT_RHYTHM_MAX];
	bool burst_gave_back[RT_DETECT_RHYTHM_MAX];
	unsigned nbursts;
	unsigned next_burst;
	/* Outputs */
	uint64_t boundaries;        /* boundaries found so far */
	uint64_t boundary_us;       /* the last boundary: when its quiet period began */
	enum rt_detect_basis basis; /* what decided the last boundary */
	/* How sure the detector is of the last boundary, 0 to 1000: the mean of how large the
	 * work it closed is against the largest recent candidate's (capped at 1000), and how close
	 * it came to a period after the last boundary (1000 at one period, 0 at none or two; 500
	 * while the period is not known). A round found by the rhythm alone weighs a round. */
	uint32_t confidence_permille;
	uint64_t period_us; /* the rounds' period; 0 while not known */
	/* The last candidate weighed, a round's end or not, so that a replay can show where rounds
	 * are found and missed: how many so far, when its quiet period began, the work it closed
	 * (bytes requested since its round's start), that work against the recent candidates'
	 * (permille, as min_weight_permille reads it) and where it came in the period (permille of
	 * the period since the last boundary; 0 while the period is not known). */
	uint64_t candidates;
	uint64_t candidate_quiet_us;
	uint64_t candidate_work_bytes;
	uint32_t candidate_weight_permille;
	uint32_t candidate_phase_permille;
};

void rt_detect_default_params(struct rt_detect_params *params);

void rt_detect_init(struct rt_detect *detect, const struct rt_detect_params *params);

/* Feeds the next reading (cumulative counters). One that comes less than min_interval_us after
 * the last is skipped; one whose counters or time went back restarts the detector's history. */
enum rt_detect_result rt_detect_feed(struct rt_detect *detect, const struct rt_reading *reading);

const char *rt_detect_basis_name(enum rt_detect_basis basis);

/* Whether the interval from last to r (r later, no counter gone back) was active, with the
 * peaks updated: its event or byte rate above quiet_permille of their decaying peaks (halving
 * every peak_half_life_us), or, where both readings carry the CPU time and quiet_cpu_permille
 * is not 0, its CPU use above idle_cpu_permille of one CPU and quiet_cpu_permille of its peak.
 * The parameters are struct rt_detect_params's of the same names. */
bool rt_detect_active(struct rt_detect_peaks *peaks, const struct rt_reading *last,
                      const struct rt_reading *r, uint32_t quiet_permille,
                      uint64_t peak_half_life_us, uint32_t quiet_cpu_permille,
                      uint32_t idle_cpu_permille);

/* Whether a process that sent bytes_sent so far has a peer: it sent anything at all (not where
 * it was not measured). Both detectors refuse start-up's ends only in such a process. */
bool rt_detect_has_a_peer(uint64_t bytes_sent);

/* value * num / den without overflow for the magnitudes of rates and times (saturates). */
uint64_t rt_detect_scale(uint64_t value, uint64_t num, uint64_t den);

/* Appends value to a ring of `size` values holding *n, the next at *next. */
void rt_detect_ring_push(uint64_t *ring, unsigned size, unsigned *n, unsigned *next,
                         uint64_t value);

/* The longest ring whose median rt_detect_median takes: each detector asserts that its rings fit
 * at compile time, since a longer one would have its median taken over its first values only. */
#define RT_DETECT_MEDIAN_MAX 8

/* values[0..n) into sorted[0..n), in ascending order (an insertion sort: n is a ring's). */
void rt_detect_sort(const uint64_t *values, unsigned n, uint64_t *sorted);

/* The median of n values, n at most RT_DETECT_MEDIAN_MAX (the lower middle of an even count); 0
 * when n is 0. */
uint64_t rt_detect_median(const uint64_t *values, unsigned n);

/* Whether every one of n values (n at most RT_DETECT_MEDIAN_MAX) is within spread_permille of
 * their median. */
bool rt_detect_alike(const uint64_t *values, unsigned n, uint32_t spread_permille);

#endif
