/* rt_detect_server: the server role's round boundaries, one a round, from its allocation rhythm.
 * Owns what ends a server's round, the rounds' work and period, and their parameters. */
#ifndef RT_DETECT_SERVER_H
#define RT_DETECT_SERVER_H

#include "rt_detect.h"
#include "rt_trace.h"

#include <stdbool.h>
#include <stdint.h>

/* A federated server's round: it waits while the clients train (heartbeats, polls), their
 * updates arrive and are aggregated, the round ends, and the next model goes out to every client.
 * The round's end falls inside that activity, and what follows it (the model sent) gives back no
 * less than what came before it, so the client detector's rule (the quiet after a burst that
 * gave back what it took) fires at every part of it. This detector counts the work that comes
 * in instead:
 *  - activity, bursts and quiet periods are rt_detect's (the same rates, decaying peaks and CPU
 *    rule); a burst is over once no interval has been active for quiet_us;
 *  - a burst's weight is its allocation events (allocations + frees): receiving and aggregating
 *    updates is many small objects, sending a model a few large blocks;
 *  - the process's first burst is its start-up; a burst under min_burst_events, or under
 *    min_share_permille of the typical round's heaviest burst (while fewer than
 *    RT_DETECT_LOCK_ROUNDS rounds make it, or none, of the heaviest of the last
 *    RT_DETECT_SERVER_RECENT bursts when that is lighter) is noise:
 *    heartbeats, polls, a relay of a few messages. A lower
 *    share lets a relay's polls (a twentieth of a round) open rounds of their own before the
 *    first round is known, and their work then sets the typical round's;
 *  - the rounds can shrink (start-up's work, a smaller model, fewer clients), and then all their
 *    bursts are noise and no round closes to bring the typical down. So the bursts judged
 *    noise, but for the noise's own noise (under min_share_permille of min_share_permille of
 *    the typical heaviest: heartbeats, polls), group into activities as a round's do (idle
 *    gaps of gap_us, or open_gap_period_permille of the period: no round ended in them). When
 *    RT_DETECT_LOCK_ROUNDS intervals in a row between their starts are even (each within
 *    rhythm_spread_permille of the one before) and none shorter than a round (the period
 *    learnt so far, less that spread), with no burst that was no noise since, they are the
 *    rounds: the typical round's work and heaviest burst are forgotten and learnt again from
 *    the next. Polls recur sooner than rounds, and a straggler's wait is one pause with
 *    polls in it, not activities a period apart; rounds that shrank more than sixteenfold
 *    stay noise;
 *  - the rounds can come faster too (fewer clients, shorter training): the period learnt
 *    from the slow ones then scales the idle gap over the new training, and the activity
 *    under way never closes again (1 end in the 30 rounds after a fivefold speed-up). So
 *    where the activity whose round ended two periods ago gathers round_permille of the
 *    typical round's work again, in bursts after that end, the last after a pause of gap_us
 *    or more that is no idle gap only by the period's share (nor by the pauses' split
 *    below), the period and the pauses are forgotten, and that pause parts a new activity.
 *    Round-sized bursts 1 s to a fifth of a period apart for more than two periods look the
 *    same: a long evaluation every fifth round (30 bursts of a round's work 1.5 s apart) is
 *    taken for rounds that came faster, each burst a round (174 ends for 30 rounds, 9 in
 *    place; 30 before), and the rounds after it are learnt again;
 *  - a round's activity is the bursts between two idle gaps (no burst for gap_us, or
 *    gap_period_permille of the period once known: the clients training; while no round ended
 *    in it yet and a round's work is known, open_gap_period_permille: it still waits for a
 *    slow client's update, and a pause before that is no idle gap; or, once the period is
 *    known, the pause between the two groups of the last RT_DETECT_SERVER_PAUSES pauses
 *    between bursts that were no noise, where they fall in two: two neighbours in order
 *    pause_split_ratio apart, two of the longer group even (within rhythm_spread_permille of
 *    its median: the training, recurring; one straggler's wait is not), and the heaviest
 *    burst before a pause of the shorter group under (1000 - rhythm_spread_permille) permille
 *    of the lightest before one of the longer group
 *    (the training follows the aggregation, an update's wait an update: where whole rounds
 *    come before both, the longer are a checkpoint or a straggler every few rounds, and
 *    taken for the gap they fused the rounds between them: 6 of 30 found), the gap their
 *    geometric mean; the widest such step. Updates that arrive further apart than gap_us
 *    were each a round, and the period learnt from their ends was theirs); once it is over, its
 *    work is the weight of its bursts from its start up to and with its heaviest (the
 *    aggregation: what comes after it, the model sent, is not the round's), each counted only
 *    if it is no noise against that heaviest, as the next rounds will count theirs; the typical
 *    round's work and heaviest burst are the medians of the last RT_DETECT_SERVER_HISTORY
 *    rounds';
 *  - a round ends at the quiet after the burst with which its activity reached round_permille of
 *    the typical round's work: once per round's activity. Before a round's work is known, at the
 *    quiet after its heaviest burst so far once hold_us passed with no heavier one (a burst
 *    begun within the hold is weighed first: whole, or for another hold_us).
 * The period (the median of the last intervals between round ends, after RT_DETECT_LOCK_ROUNDS
 * of them) only scales the idle gap. The live heap and the bytes freed are not used: the
 * detector never asks for the live heap.
 *
 * Where the readings carry the bytes sent, the model going out can mark the rounds too: once a
 * round ends, the server sends the next model to each client as the client asks for its task,
 * a broadcast of readings that each sent at least min_send_bytes (64 KiB, rt_detect's
 * min_round_sent_bytes: more than a heartbeat or a poll), none further apart than
 * send_gap_us (2 s), or send_gap_period_permille of the broadcasts' period once
 * RT_DETECT_LOCK_ROUNDS intervals between their starts are known (the clients training lie
 * between two broadcasts, the clients' polls within one); a new one begins only after readings
 * that sent no model for half that gap (a reading late by seconds splits none), and one that
 * goes on past a period and its spread is none (the rounds came faster and their broadcasts
 * fused, or a stream): what the broadcasts were like is forgotten. The broadcasts mark the
 * rounds only while locked on them: the last RT_DETECT_LOCK_ROUNDS intervals between their
 * starts are even (each within rhythm_spread_permille of their median), the last as many
 * broadcasts sent about as much (within half of their median: a model to each client), the
 * work found at most one end between each two of them, and its own last ends, where they are
 * even and fresh (one within two of their periods), keep the same period (sends of something
 * else, a second broadcast a round or one of another rhythm do not lock); and only until the
 * next broadcast is overdue by the spread (they stopped, or one never ends). After a round's end
 * the work found in a broadcast, send_gap_us parts the next send from it (the rounds came
 * faster than the period says). While locked, one round ends between the end of a broadcast and
 * the end of the next, so:
 *  - a round's end found by the work is not reported when one was already reported for the
 *    round the broadcast under way closes (an end within the gap after its start), or since
 *    the last one ended;
 *  - a broadcast that begins when none was reported since the last one ended, after a burst
 *    that was no noise went quiet since the last one began (the updates, their aggregation),
 *    reports the round's end the work missed, at its first send.
 * The first broadcasts are the first rounds' models, before any lock; after the last round
 * none comes, and the last round's end is the work's to find.
 *
 * A server's rounds begin with its models going out (a reading that sent min_send_bytes, or
 * readings that sent as much in all within quiet_us of the first of them). So, where the
 * readings carry the bytes sent and the process has sent anything (it has a peer), an end the
 * work finds before the first models went out (the job deployed, its process started, the
 * clients registered), until the first round is reported, or at the quiet of the burst that
 * sent the first models (the last reading of min_send_bytes since they began at most quiet_us
 * before the end, within send_gap_us of them: where their broadcast runs on into the next
 * rounds, those rounds' ends are no start-up's), where at most RT_DETECT_LOCK_ROUNDS ends were
 * reported before them (clients that join slowly), is start-up's: not reported, for the first
 * RT_DETECT_LOCK_ROUNDS such ends of each kind. The period learnt before such first models is
 * forgotten as they go out: start-up's rhythm (registrations 30 s apart) is no round's, and
 * rounds far shorter than it would fuse into one activity. Where more ends were reported, the
 * rounds were under way with models under min_send_bytes, and a first reading of it mid-job
 * (two clients that fetched at once) changes nothing. A server whose models are smaller than
 * min_send_bytes, or go out by calls the readings do not count, loses at most
 * RT_DETECT_LOCK_ROUNDS rounds at its start; models that take more than send_gap_us to go out
 * (NVFlare's s3 relay: 3.3 s) leave their end counted.
 *
 * A relay (NVFlare's server parent) passes each model on to the clients as they ask for it, and
 * each client's update on as it comes: the same clients get the model and return the update, so
 * a round's two halves, the models out and the updates in, carry the same bytes even when fewer
 * clients take part, and the clients training lie between them, the round's clearly longest
 * pause in sending. So, in the bytes of readings that sent at least min_send_bytes (a run: such
 * readings in a row; its onset: its first), at each onset c and for an earlier onset a:
 *  - the halves: from a up to the first run after the longest pause in (a, c), and from there up
 *    to c, sent the same bytes (within a sixty-fourth of both), and that pause was at least one
 *    and a half times every other pause in (a, c), the one before c too (the aggregation), and
 *    no pause between the last RT_DETECT_SERVER_CANDIDATES runs before a was one and a half
 *    times as long (the span from the last updates to the next models, across the aggregation,
 *    is no round);
 *  - the relay sends the updates on as they come, a server job receives them, without sending,
 *    and aggregates them: where the pause before the updates' half held at least as many
 *    allocation events as that half (up to c), it is no relay's round (only that span: one odd
 *    round, a collection or a checkpoint, must not mark a relay a job for good);
 *  - each such span extends the chain of them that ends at its a, or begins one; with models
 *    and updates alike, spans from a late model to an early update lie nested inside each
 *    round, so a span drops the chains of one span nested in it and, of the new ones that end
 *    at c, only the longest begins a chain (at most RT_DETECT_SERVER_CHAINS kept: a chain whose
 *    end left the last RT_DETECT_SERVER_CANDIDATES onsets goes first, then the shortest, the
 *    oldest first); a chain whose last two rounds are even (the shorter at least half the
 *    longer, in length and in the pause between their halves) locks, and its round ends at c:
 *    the updates passed on, the next models going out;
 *  - while locked only its end is tried as a, once c lies half its period (the median of its
 *    intervals) after it, and there, where the last halves were even, c two halves after it
 *    ends a round too (a fast client's update can part the models from the rest; sooner, equal
 *    sends inside one phase would end a round every two sends);
 *  - past one and a quarter periods without an end (a round whose halves differed: a client
 *    dropped out, a straggler), an onset a after a pause as long as half the chain's training
 *    (the median of its pauses between halves) re-links the chain where a to c is a round of
 *    at most one and a half periods with more than half the chain's typical half (the median
 *    of its last three; a span from a late model to an early update is less), and where no
 *    pause in its updates' half is longer than the one before c (c is the next models, not
 *    the next update); the missed round is mostly not reported;
 *  - the lock lapses when no round ended (nor re-linked) for two and a half periods, and
 *    everything is forgotten when a reading does not say the bytes sent, or they, a counter or
 *    the time went back.
 * While locked and not lapsed, the relay's ends are the rounds': the work's and the broadcasts'
 * are not reported, and the lock's first is not when one was reported since its updates began.
 * Limits (measured on synthetic relays and jobs; at 100 ms readings unless said):
 *  - sends of equal size after random pauses, with no rounds at all, lock now and then: 1 MiB
 *    sends allocating 1,000 events each, 0.1-2 s apart, gave 4,613 ends in 20,000 s (none
 *    before the rule); a split pause four times a quarter of the recent pauses cut that to 365
 *    but cost s5_sends 3 matched at 200 ms and doubled s2-like synthetic relays at 200 ms;
 *    beside a server job's own rounds, such a stream takes the job's count over (4 clients, 20 s
 *    rounds: 101 ends for 24 rounds, 10 matched; 30 before the rule; 60 s rounds: 196 for 12),
 *    where the stream's sends allocate (the gate holds where they do not);
 *  - a relay whose rounds exceed RT_DETECT_SERVER_CANDIDATES runs (more than 16 clients, each
 *    send its own run) locks inside a phase, if at all; so do heartbeats of min_send_bytes or
 *    more among 8 clients with spread asks, and a job's such heartbeats now and then (64 KiB
 *    every few seconds: 17 ends for 12 rounds, 14 before the rule); updates of another size
 *    than the models (compressed, diffs) and an ack per update leave the rule silent;
 *  - the gate counts allocation events: a job that receives and averages in place, with few
 *    events, and broadcasts an evaluation can be taken for a relay (its ends then fall on the
 *    models, not the aggregation; one round lost at 200 ms on a synthetic job);
 *  - a round whose halves differ is mostly not reported (the re-link reports the next): a relay
 *    of 4 losing a client every fifth round counts 21 of 24 (the old rules' 26, 3 of them
 *    matched); of 8 clients with spread updates losing one every tenth round, 51 of 60 (the
 *    re-link can link a part of a round and then re-link every other round); after dropouts the
 *    two-halves path can keep the ends at the first update, about 2 s early, for good;
 *  - an unknown bytes reading or a counter restart forgets the lock (two rounds to lock again);
 *  - training shorter than the aggregation (s2): the right count at best, in the wrong phase
 *    (the updates' onset), and s2_sends' parent still locks on half rounds now and then;
 *  - an onset costs up to ~3 us at the 99th percentile (random equal sends: candidate spans
 *    and re-links); the detector is 6,632 bytes.
 * Work per reading: none but a few counts except at an onset; there, while locked, one span
 * tried (two passes over at most RT_DETECT_SERVER_RUNS runs), and past one and a quarter
 * periods at most RT_DETECT_SERVER_CANDIDATES more; otherwise at most
 * RT_DETECT_SERVER_CANDIDATES, each with a look over the chains; and at a burst's quiet, one
 * sort of the last RT_DETECT_SERVER_PAUSES pauses, two where a burst judged noise turns out to
 * be the rounds that shrank. */
struct rt_detect_server_params {
	uint64_t min_interval_us;     /* 10000: a reading sooner after the last one is skipped */
	uint64_t quiet_us;            /* 400000 */
	uint32_t quiet_permille;      /* 20 */
	uint64_t peak_half_life_us;   /* 5000000 */
	uint32_t quiet_cpu_permille;  /* 250; 0 = CPU time not used */
	uint32_t idle_cpu_permille;   /* 50 */
	uint64_t min_burst_events;    /* 500 */
	uint32_t min_share_permille;  /* 250 */
	uint64_t gap_us;              /* 1000000 */
	uint32_t gap_period_permille; /* 200 */
	uint32_t open_gap_period_permille; /* 350 */
	uint32_t round_permille;           /* 900 */
	uint64_t hold_us;                  /* 1000000 */
	uint32_t rhythm_spread_permille;   /* 250, rt_detect's */
	uint64_t min_send_bytes;           /* 64 KiB, rt_detect's min_round_sent_bytes */
	uint64_t send_gap_us;              /* 2000000 */
	uint32_t send_gap_period_permille; /* 500 */
	uint32_t pause_split_ratio;        /* 3; 0 = the pauses not used */
};

#define RT_DETECT_SERVER_HISTORY 5
#define RT_DETECT_SERVER_BURSTS 32
#define RT_DETECT_SERVER_RECENT 5
#define RT_DETECT_SERVER_RUNS 64
#define RT_DETECT_SERVER_CANDIDATES 32
#define RT_DETECT_SERVER_CHAINS 8
#define RT_DETECT_SERVER_LINKS 8
#define RT_DETECT_SERVER_PAUSES 16

/* A relay's run of sends (see the header): its first and last readings, the relay's bytes and
 * allocation events before its first and after its last. */
struct rt_detect_server_run {
	uint64_t start_us;
	uint64_t end_us;
	uint64_t bytes;
	uint64_t end_bytes;
	uint64_t events;
	uint64_t end_events;
};

/* A chain of a relay's rounds: the onsets that part them (the oldest dropped), each round's
 * half and the pause between its halves (the clients training). */
struct rt_detect_server_chain {
	uint64_t at_us[RT_DETECT_SERVER_LINKS];
	uint64_t bytes[RT_DETECT_SERVER_LINKS];
	uint64_t halves[RT_DETECT_SERVER_LINKS];
	uint64_t pauses_us[RT_DETECT_SERVER_LINKS];
	unsigned n;
};

struct rt_detect_server {
	struct rt_detect_server_params params;
	bool started;
	struct rt_reading last;
	struct rt_detect_peaks peaks;
	bool in_quiet;           /* no active interval since quiet_since_us */
	uint64_t quiet_since_us; /* the end of the last active interval */
	bool quiet_handled;      /* this quiet period was already decided */
	uint64_t burst_events;   /* the current or last burst's weight */
	uint64_t burst_start_us; /* when it began */
	bool seen_start_up;      /* the first burst is over */
	/* The last bursts since start-up (a ring, as the rounds' below): noise is judged against
	 * their heaviest at most, so that one outlier is soon forgotten. */
	uint64_t recent[RT_DETECT_SERVER_RECENT];
	unsigned nrecent;
	unsigned next_recent;
	/* The round's activity under way: since when (false before the first idle gap), its
	 * weight, its heaviest burst, its weight up to and with that burst, and whether a round
	 * ended in it. last_end_us: when the last burst that was no noise ended (0: none yet). */
	bool in_round;
	uint64_t round_work;
	uint64_t round_bursts[RT_DETECT_SERVER_BURSTS]; /* the last one takes any more */
	unsigned nround_bursts;
	bool round_ended;
	uint64_t work_since_end; /* the weight of its bursts since its round ended */
	uint64_t last_end_us;
	/* The activity of bursts judged noise under way (see the header): when it began (0: none
	 * since the last burst that was no noise), when its last burst ended, the interval from the
	 * start of the one before (0: none), and how many such intervals in a row were even. */
	uint64_t noise_start_us;
	uint64_t noise_end_us;
	uint64_t noise_interval_us;
	unsigned noise_in_rhythm;
	/* Before a round's work is known: the heaviest burst waiting for hold_us. */
	bool pending;
	uint64_t pending_weight;
	uint64_t pending_us; /* its quiet's start */
	/* The last rounds' work and heaviest bursts and the intervals between their ends: rings,
	 * the oldest overwritten. */
	uint64_t works[RT_DETECT_SERVER_HISTORY];
	unsigned nworks;
	unsigned next_work;
	uint64_t heavies[RT_DETECT_SERVER_HISTORY]; /* each round's heaviest burst */
	unsigned nheavies;
	unsigned next_heavy;
	uint64_t intervals_us[RT_DETECT_SERVER_HISTORY];
	unsigned nintervals;
	unsigned next_interval;
	/* The pauses before the last bursts that were no noise, each from the end of the one
	 * before (a ring). */
	uint64_t pauses_us[RT_DETECT_SERVER_PAUSES];
	uint64_t pause_after[RT_DETECT_SERVER_PAUSES]; /* the weight of the burst before each */
	uint64_t last_weight;                          /* the last burst that was no noise */
	unsigned npauses;
	unsigned next_pause;
	/* The broadcasts (see the header): the bytes sent at the last reading (RT_TRACE_UNKNOWN
	 * when not measured), the last reading that sent a model (0: none yet), when the broadcast
	 * under way or last began, the intervals between their starts (a ring), and whether a
	 * round's end was reported for the round the broadcast under way or last closed, and for
	 * the round since it ended. */
	uint64_t sent;
	uint64_t send_last_us;
	uint64_t send_start_us;
	uint64_t send_quiet_us; /* the last reading that sent no model */
	uint64_t send_intervals_us[RT_DETECT_SERVER_HISTORY];
	unsigned nsend_intervals;
	unsigned next_send_interval;
	uint64_t send_bytes; /* what the broadcast under way or last sent */
	uint64_t send_totals[RT_DETECT_SERVER_HISTORY]; /* what the last ones sent (a ring) */
	unsigned nsend_totals;
	unsigned next_send_total;
	bool locked; /* the broadcasts mark the rounds (see the header) */
	bool reported_closing;
	bool reported_open;
	bool worked; /* a burst that was no noise went quiet since the last broadcast began */
	/* The work's own ends (counted or not): how many since the last broadcast began, how many
	 * between each two of the last ones (a ring), the last, and the intervals between them (a
	 * ring). */
	uint64_t work_ends;
	uint64_t ends_between[RT_DETECT_SERVER_HISTORY];
	unsigned nends_between;
	unsigned next_ends_between;
	uint64_t work_end_us;
	uint64_t work_intervals_us[RT_DETECT_SERVER_HISTORY];
	unsigned nwork_intervals;
	unsigned next_work_interval;
	/* The relay (see the header): the bytes of readings that sent a model and all readings'
	 * allocation events since the last forget, whether the last reading sent one, the last
	 * runs (a ring), the chains (the locked one first), and whether the process is a job. */
	uint64_t relay_bytes;
	uint64_t relay_events;
	bool relay_sending;
	struct rt_detect_server_run runs[RT_DETECT_SERVER_RUNS];
	unsigned nruns;
	unsigned next_run;
	struct rt_detect_server_chain chains[RT_DETECT_SERVER_CHAINS];
	unsigned nchains;
	bool relay_locked;
	/* Start-up (see the header): when the first model went out (0: not yet), what the sends
	 * since start_sent_us sent before it, and how many of the work's ends were refused before
	 * the first models and at them, each its own budget. */
	uint64_t first_models_us;
	uint64_t start_sent;
	uint64_t start_sent_us;
	unsigned start_refusals;
	unsigned models_refusals;
	bool models_in_start_up; /* at most RT_DETECT_LOCK_ROUNDS ends were reported before them */
	/* Outputs, as rt_detect's */
	uint64_t boundaries;
	uint64_t boundary_us; /* the last round's end: when its quiet began */
	/* 0 to 1000: the mean of how much of the typical round's work the round's activity had
	 * reached (capped at 1000; 500 while none is known) and how close the end came to a
	 * period after the last one (1000 at one period, 0 at none or two; 500 while the period
	 * is not known). */
	uint32_t confidence_permille;
	uint64_t period_us; /* 0 while not known */
};

void rt_detect_server_default_params(struct rt_detect_server_params *params);

void rt_detect_server_init(struct rt_detect_server *detect,
                           const struct rt_detect_server_params *params);

/* Feeds the next reading, as rt_detect_feed (skipped when too soon, a restart of the rhythm's
 * reading when a counter or the time went back). Returns RT_DETECT_NOTHING or
 * RT_DETECT_BOUNDARY, never RT_DETECT_WANT_LIVE. */
enum rt_detect_result rt_detect_server_feed(struct rt_detect_server *detect,
                                            const struct rt_reading *reading);

#endif
