#include <criterion/criterion.h>
#include <stdio.h>

#include "../bench/detect_server_match.h"
#include "rt_detect_server.h"

/* Synthetic readings of a server: each step advances the clock and the cumulative counters. */
struct sgen {
	struct rt_detect_server d;
	struct rt_reading r;
	size_t boundaries;
	size_t asks;
	size_t step;       /* steps fed so far */
	size_t last_fired; /* the step whose reading returned the last boundary */
	size_t at_reading; /* boundaries whose end is their reading's own time (a broadcast's) */
	/* Where the readings carry the bytes sent: side_kib KiB sent every side_every steps besides
	 * what the steps send (a stream at every step, metrics every few seconds). */
	uint64_t side_kib;
	size_t side_every;
	uint64_t last_quiet; /* when the last burst fed went quiet (sgen_burst) */
	size_t thin;         /* only every thin-th step is read (1: every 50 ms, 4: every 200) */
};

#define SMIB ((uint64_t)1024 * 1024)
#define SSTEP_US 50000

static struct rt_detect_server_params
sdefaults(void)
{
	struct rt_detect_server_params p;
	rt_detect_server_default_params(&p);
	return p;
}

static void
sgen_init(struct sgen *g, const struct rt_detect_server_params *p)
{
	rt_detect_server_init(&g->d, p);
	struct rt_reading r = {
	    1000000,         0, 0, 0, RT_TRACE_UNKNOWN, RT_TRACE_UNKNOWN, RT_TRACE_UNKNOWN, 0,
	    RT_TRACE_UNKNOWN};
	g->r = r;
	g->boundaries = g->asks = g->step = g->last_fired = g->at_reading = 0;
	g->side_kib = 0;
	g->side_every = 1;
	g->last_quiet = 0;
	g->thin = 1;
	rt_detect_server_feed(&g->d, &g->r);
}

/* One step: events allocation/free pairs (half each) of bytes in all, busy or not. */
static void
sgen_step(struct sgen *g, uint64_t events, uint64_t bytes, bool busy)
{
	g->r.t_us += SSTEP_US;
	g->r.allocations += events / 2;
	g->r.frees += events - events / 2;
	g->r.bytes_requested += bytes;
	g->r.cpu_us += busy ? SSTEP_US : 0;
	if (g->r.bytes_sent != RT_TRACE_UNKNOWN)
		g->r.bytes_sent += g->step % g->side_every ? 0 : g->side_kib << 10;
	enum rt_detect_result got =
	    g->step % g->thin ? RT_DETECT_NOTHING : rt_detect_server_feed(&g->d, &g->r);
	g->step++;
	if (got == RT_DETECT_BOUNDARY) {
		g->boundaries++;
		g->last_fired = g->step;
		g->at_reading += g->d.boundary_us == g->r.t_us;
	}
	g->asks += got == RT_DETECT_WANT_LIVE;
}

/* A burst of `steps` steps of events each (a MiB per 100 events), then the quiet starts. */
static void
sgen_burst(struct sgen *g, int steps, uint64_t events)
{
	for (int i = 0; i < steps; i++)
		sgen_step(g, events, events / 100 * SMIB, true);
	g->last_quiet = g->r.t_us;
}

static void
sgen_idle(struct sgen *g, int steps)
{
	for (int i = 0; i < steps; i++)
		sgen_step(g, 0, 0, false);
}

/* The process's start-up, then the wait for the clients' first training. */
static void
sgen_start_up(struct sgen *g)
{
	sgen_burst(g, 20, 5000);
	sgen_idle(g, 60);
}

/* As sgen_round, with the first client's update `update` events. */
static uint64_t
sgen_round_with(struct sgen *g, uint64_t update, int apart, int idle)
{
	sgen_burst(g, 3, update / 3);
	sgen_idle(g, apart);
	sgen_burst(g, 4, 2000);
	uint64_t end = g->last_quiet;
	sgen_idle(g, apart);
	for (int i = 0; i < 3; i++)
		sgen_step(g, 500, 200 * SMIB, true);
	sgen_idle(g, idle);
	return end;
}

/* One round as a server has it: a first client's update arrives (3,000 events), the second's
 * `apart` steps later together with the aggregation (8,000: the round ends at its quiet), the
 * model goes out `apart` steps after that (1,500 events in few large blocks), then the clients
 * train for `idle` steps. Returns when the aggregation's quiet began. */
static uint64_t
sgen_round(struct sgen *g, int apart, int idle)
{
	sgen_burst(g, 3, 1000);
	sgen_idle(g, apart);
	sgen_burst(g, 4, 2000);
	uint64_t end = g->last_quiet;
	sgen_idle(g, apart);
	for (int i = 0; i < 3; i++)
		sgen_step(g, 500, 200 * SMIB, true);
	sgen_idle(g, idle);
	return end;
}

/* As sgen_round, every burst `times` as heavy. */
static uint64_t
sgen_round_times(struct sgen *g, uint64_t times, int apart, int idle)
{
	sgen_burst(g, 3, 1000 * times);
	sgen_idle(g, apart);
	sgen_burst(g, 4, 2000 * times);
	uint64_t end = g->last_quiet;
	sgen_idle(g, apart);
	for (int i = 0; i < 3; i++)
		sgen_step(g, 500 * times, 200 * SMIB, true);
	sgen_idle(g, idle);
	return end;
}

/* A step that sends kib KiB (where the readings carry the bytes sent) besides its events. */
static void
sgen_send_step(struct sgen *g, uint64_t events, uint64_t kib)
{
	if (g->r.bytes_sent != RT_TRACE_UNKNOWN)
		g->r.bytes_sent += kib << 10;
	sgen_step(g, events, 200 * SMIB, true);
}

/* As sgen_round, with an aggregation of agg_events a step, the next model sent as 400 KiB a
 * step (counted where the readings carry the bytes sent; a reading late by late_steps steps
 * after the first), and nothing sent before; then the clients train for train steps, while the
 * server does work like a round's (a checkpoint read and written) when asked. */
static void
sgen_round_sent_with(struct sgen *g, uint64_t agg_events, size_t late_steps, int train,
                     bool checkpoint)
{
	sgen_burst(g, 3, 1000);
	sgen_idle(g, 12);
	sgen_burst(g, 4, agg_events);
	sgen_idle(g, 12);
	sgen_send_step(g, 500, 400);
	g->r.t_us += late_steps * SSTEP_US;
	for (int i = 0; i < 2; i++)
		sgen_send_step(g, 500, 400);
	if (checkpoint) {
		sgen_idle(g, 20);
		sgen_burst(g, 3, 1000);
		sgen_idle(g, 12);
		sgen_burst(g, 4, 2000);
		train -= 39;
	}
	sgen_idle(g, train);
}

static void
sgen_round_sent(struct sgen *g, uint64_t agg_events)
{
	sgen_round_sent_with(g, agg_events, 0, 100, false);
}

/* A server whose readings carry the bytes sent (sends), or not. */
static void
sgen_init_sent(struct sgen *g, const struct rt_detect_server_params *p, bool sends)
{
	sgen_init(g, p);
	if (sends)
		g->r.bytes_sent = 0;
	sgen_start_up(g);
}

Test(detect_server, documented_defaults)
{
	struct rt_detect_server_params p = sdefaults();
	cr_assert_eq(p.min_interval_us, 10000);
	cr_assert_eq(p.quiet_us, 400000);
	cr_assert_eq(p.quiet_permille, 20);
	cr_assert_eq(p.peak_half_life_us, 5000000);
	cr_assert_eq(p.quiet_cpu_permille, 250);
	cr_assert_eq(p.idle_cpu_permille, 50);
	cr_assert_eq(p.min_burst_events, 500);
	cr_assert_eq(p.min_share_permille, 250);
	cr_assert_eq(p.gap_us, 1000000);
	cr_assert_eq(p.gap_period_permille, 200);
	cr_assert_eq(p.open_gap_period_permille, 350);
	cr_assert_eq(p.round_permille, 900);
	cr_assert_eq(p.hold_us, 1000000);
	cr_assert_eq(p.rhythm_spread_permille, 250);
	cr_assert_eq(p.min_send_bytes, 64 << 10);
	cr_assert_eq(p.send_gap_us, 2000000);
	cr_assert_eq(p.send_gap_period_permille, 500);
	cr_assert_eq(p.pause_split_ratio, 3);
}

Test(detect_server, start_up_is_no_round)
{
	struct sgen g;
	struct rt_detect_server_params p = sdefaults();
	sgen_init(&g, &p);
	sgen_start_up(&g);
	sgen_idle(&g, 200);
	cr_assert_eq(g.boundaries, 0);
}

/* Each round ends once, at the aggregation's quiet, however the update before it and the model
 * sent after it weigh; the first once hold_us passed with no heavier burst, the next ones as
 * soon as the quiet is confirmed. */
Test(detect_server, each_round_ends_once_at_the_aggregation)
{
	struct sgen g;
	struct rt_detect_server_params p = sdefaults();
	sgen_init(&g, &p);
	sgen_start_up(&g);
	for (size_t round = 1; round <= 8; round++) {
		uint64_t end = sgen_round(&g, 12, 100);
		cr_assert_eq(g.boundaries, round, "round %zu: %zu boundaries", round, g.boundaries);
		cr_assert_eq(g.d.boundary_us, end, "round %zu", round);
		uint64_t wait_us = 1000000 + g.last_fired * SSTEP_US - end;
		if (round == 1)
			cr_assert_geq(wait_us, p.hold_us, "round 1 found after %lu us",
			              (unsigned long)wait_us);
		else
			cr_assert_leq(wait_us, p.quiet_us + SSTEP_US,
			              "round %zu found after %lu us", round,
			              (unsigned long)wait_us);
	}
	cr_assert_eq(g.asks, 0, "the server's detector never asks for the live heap");
}

/* Before any round's work is known, the first round ends at its heaviest burst: a heavier one
 * begun within the hold but not yet heavier when the hold runs out is weighed whole first (the
 * s1 server job's first round: an update, then the second with the aggregation 0.5 s later,
 * slowly, under load). */
Test(detect_server, the_first_round_s_hold_weighs_a_burst_begun_within_it)
{
	struct sgen g;
	struct rt_detect_server_params p = sdefaults();
	sgen_init(&g, &p);
	sgen_start_up(&g);
	sgen_burst(&g, 3, 1000);
	sgen_idle(&g, 12);
	sgen_burst(&g, 20, 200);
	uint64_t end = g.last_quiet;
	sgen_idle(&g, 100);
	cr_assert_eq(g.boundaries, 1);
	cr_assert_eq(g.d.boundary_us, end, "the round ended at the update, not the aggregation");
}

/* ... but not for longer than a second hold: a lighter burst still under way then is what follows
 * the round's end (the s3 server job's first round: the 1.4 GiB model sent for 7 s). */
Test(detect_server, the_first_round_s_hold_waits_one_more_hold_at_most)
{
	struct sgen g;
	struct rt_detect_server_params p = sdefaults();
	sgen_init(&g, &p);
	sgen_start_up(&g);
	sgen_burst(&g, 4, 2000);
	uint64_t end = g.last_quiet;
	sgen_idle(&g, 10);
	for (int i = 0; i < 80; i++)
		sgen_step(&g, 90, 40 * SMIB, true);
	cr_assert_eq(g.boundaries, 1, "the round's end waited for the model sent");
	cr_assert_eq(g.d.boundary_us, end);
	uint64_t wait_us = 1000000 + g.last_fired * SSTEP_US - end;
	cr_assert_leq(wait_us, 2 * p.hold_us + SSTEP_US, "found after %lu us",
	              (unsigned long)wait_us);
}

/* One burst after start-up far heavier than any round's (a dataset loaded, a checkpoint read)
 * judges noise only until five more bursts have come: then the rounds are found. */
Test(detect_server, an_outlier_before_the_first_round_is_soon_forgotten)
{
	struct sgen g;
	struct rt_detect_server_params p = sdefaults();
	sgen_init(&g, &p);
	sgen_start_up(&g);
	sgen_burst(&g, 20, 10000);
	sgen_idle(&g, 60);
	for (size_t round = 1; round <= 10; round++)
		sgen_round(&g, 12, 100);
	cr_assert_geq(g.boundaries, 7, "%zu rounds found of 10", g.boundaries);
	cr_assert_leq(g.boundaries, 10);
}

/* A first update under a quarter of the aggregation is noise from the second round on: the
 * first round's work, measured before that was known, must not count it either, or the second
 * round never reaches nine tenths of it (test/workloads/server_rounds lost its second round). */
Test(detect_server, a_round_s_work_counts_what_the_next_rounds_will_count)
{
	struct sgen g;
	struct rt_detect_server_params p = sdefaults();
	sgen_init(&g, &p);
	sgen_start_up(&g);
	for (size_t round = 1; round <= 6; round++) {
		uint64_t end = sgen_round_with(&g, 1500, 12, 100);
		cr_assert_eq(g.boundaries, round, "round %zu: %zu boundaries", round, g.boundaries);
		cr_assert_eq(g.d.boundary_us, end, "round %zu", round);
	}
}

/* A burst lighter than a quarter of a round's heaviest (a heartbeat, a poll) neither ends a
 * round nor splits or joins rounds, from the first round on. */
Test(detect_server, heartbeats_are_noise)
{
	struct sgen g;
	struct rt_detect_server_params p = sdefaults();
	sgen_init(&g, &p);
	sgen_start_up(&g);
	for (size_t round = 1; round <= 6; round++) {
		uint64_t end = sgen_round(&g, 12, 10);
		for (int beat = 0; beat < 4; beat++) {
			sgen_step(&g, 520, SMIB, false);
			sgen_idle(&g, 20);
		}
		cr_assert_eq(g.boundaries, round, "round %zu: %zu boundaries", round, g.boundaries);
		cr_assert_eq(g.d.boundary_us, end, "round %zu", round);
	}
}

/* Rounds that shrank after the first ones (start-up's work, a model or a client count that
 * shrank): 4 rounds whose bursts are 10 times heavier make the typical round, and every burst
 * of the 12 rounds that follow at the same rhythm is noise against it. They recur at the
 * period, so after a few of them lost the rounds are learnt again from them (issue 27: the live
 * server parent found 4 rounds in the job's first minute, then none for 9 minutes). */
Test(detect_server, rounds_that_shrank_are_learnt_again)
{
	struct sgen g;
	struct rt_detect_server_params p = sdefaults();
	sgen_init(&g, &p);
	sgen_start_up(&g);
	for (size_t round = 1; round <= 4; round++)
		sgen_round_times(&g, 10, 12, 100);
	cr_assert_eq(g.boundaries, 4);
	size_t found = 0, before = g.boundaries;
	for (size_t round = 1; round <= 12; round++) {
		size_t was = g.boundaries;
		uint64_t end = sgen_round(&g, 12, 100);
		found += g.boundaries == was + 1 && g.d.boundary_us == end;
	}
	cr_assert_geq(found, 12 - RT_DETECT_LOCK_ROUNDS - 1, "%zu of the 12 rounds found", found);
	cr_assert_leq(g.boundaries - before, 12, "%zu boundaries in 12 rounds",
	              g.boundaries - before);
}

/* A round as sgen_round_times, then `polls` polls (520 events, noise whatever the rounds weigh)
 * 1.7 s apart, the last ending the round. */
static uint64_t
sgen_round_polled(struct sgen *g, uint64_t times, int polls)
{
	uint64_t end = sgen_round_times(g, times, 12, 0);
	for (int poll = 0; poll < polls; poll++) {
		sgen_idle(g, 33);
		sgen_step(g, 520, SMIB, false);
	}
	return end;
}

/* As live (run 3's server parent replayed with its first minute 10 times heavier): the heavy
 * first rounds came faster than the later ones (3.4 s, then 6.8 s), so the period learnt from
 * them is not theirs, and polls come between the rounds all along. The polls are noise to the
 * rounds that shrank too, so they neither make nor break their rhythm. */
Test(detect_server, rounds_that_shrank_and_slowed_among_polls_are_learnt_again)
{
	struct sgen g;
	struct rt_detect_server_params p = sdefaults();
	sgen_init(&g, &p);
	sgen_start_up(&g);
	for (size_t round = 1; round <= 5; round++)
		sgen_round_polled(&g, 10, 1);
	cr_assert_eq(g.boundaries, 5);
	size_t found = 0, before = g.boundaries;
	for (size_t round = 1; round <= 12; round++) {
		size_t was = g.boundaries;
		uint64_t end = sgen_round_polled(&g, 1, 3);
		found += g.boundaries == was + 1 && g.d.boundary_us == end;
	}
	cr_assert_geq(found, 12 - RT_DETECT_LOCK_ROUNDS - 2, "%zu of the 12 rounds found", found);
	cr_assert_leq(g.boundaries - before, 12, "%zu boundaries in 12 rounds",
	              g.boundaries - before);
}

/* A round waiting for a straggler: the first update, then for about six periods the other
 * clients' task polls (noise, each an activity of its own, every 2 s), then the straggler's
 * update and the aggregation. Returns the boundaries during the wait; *after: whether the
 * round then ended once at most (a wait that long splits its activity, as without polls) and
 * each of the next 3 rounds once, at its aggregation. */
static size_t
sgen_straggler(const struct rt_detect_server_params *p, bool *after)
{
	struct sgen g;
	sgen_init(&g, p);
	sgen_start_up(&g);
	for (size_t round = 1; round <= 5; round++)
		sgen_round(&g, 12, 100);
	size_t before = g.boundaries;
	sgen_burst(&g, 3, 1000);
	for (int poll = 0; poll < 14; poll++) {
		sgen_idle(&g, 59);
		sgen_step(&g, 700, SMIB, false);
	}
	size_t during = g.boundaries - before;
	sgen_idle(&g, 12);
	sgen_burst(&g, 4, 2000);
	sgen_idle(&g, 12);
	for (int i = 0; i < 3; i++)
		sgen_step(&g, 500, 200 * SMIB, true);
	sgen_idle(&g, 100);
	*after = g.boundaries - before - during <= 1;
	for (size_t round = 1; round <= 3; round++) {
		size_t was = g.boundaries;
		uint64_t end = sgen_round(&g, 12, 100);
		*after = *after && g.boundaries == was + 1 && g.d.boundary_us == end;
	}
	return during;
}

/* The polls keep coming for several periods with no round, but at their own interval: they are
 * not taken for rounds that shrank (they would count as rounds, one a poll), and the rounds
 * after the straggler's are found as before. With any interval taken for the period, they
 * are. */
Test(detect_server, polls_while_a_straggler_trains_are_no_rounds)
{
	struct rt_detect_server_params p = sdefaults();
	bool after;
	size_t during = sgen_straggler(&p, &after);
	cr_assert_eq(during, 0, "%zu rounds counted during the wait", during);
	cr_assert(after, "the rounds after the straggler's ended each at its aggregation");
	p.rhythm_spread_permille = 1000;
	cr_assert_gt(sgen_straggler(&p, &after), 0, "without the rhythm, the polls count");
}

/* Once the period is known, a pause inside a round's activity longer than gap_us (a slow
 * client) but under gap_period_permille of the period does not split it. */
Test(detect_server, the_period_scales_the_idle_gap)
{
	struct sgen g;
	struct rt_detect_server_params p = sdefaults();
	sgen_init(&g, &p);
	sgen_start_up(&g);
	for (size_t round = 1; round <= 5; round++)
		sgen_round(&g, 12, 300);
	cr_assert_eq(g.boundaries, 5);
	cr_assert_gt(g.d.period_us, 15000000);
	for (size_t round = 6; round <= 10; round++) {
		uint64_t end = sgen_round(&g, 40, 300);
		cr_assert_eq(g.boundaries, round, "round %zu: %zu boundaries", round, g.boundaries);
		cr_assert_eq(g.d.boundary_us, end, "round %zu", round);
	}
}

/* A round whose first update comes long before the second (a slow client): from the second
 * round on, rounds of `idle` steps' training whose updates come `apart` steps apart. Returns
 * how many of the 5 rounds after the first five ended at their aggregation. */
static int
sgen_slow_client_rounds(const struct rt_detect_server_params *p, int apart)
{
	struct sgen g;
	sgen_init(&g, p);
	sgen_start_up(&g);
	for (size_t round = 1; round <= 5; round++)
		sgen_round(&g, 12, 300);
	int found = 0;
	for (size_t round = 6; round <= 10; round++) {
		size_t before = g.boundaries;
		sgen_burst(&g, 3, 1000);
		sgen_idle(&g, apart);
		sgen_burst(&g, 4, 2000);
		uint64_t end = g.last_quiet;
		sgen_idle(&g, 12);
		for (int i = 0; i < 3; i++)
			sgen_step(&g, 500, 200 * SMIB, true);
		sgen_idle(&g, 300 - apart);
		found += g.boundaries == before + 1 && g.d.boundary_us == end;
	}
	return found;
}

/* While no round ended in a round's activity, a pause in it closes it only at
 * open_gap_period_permille of the period: a 4.5-s wait for the second client in rounds of
 * about 17 s (a fifth of the period is 3.4 s) does not split the round (the s1 and s2 server
 * jobs' slow clients). */
Test(detect_server, a_round_waiting_for_a_slow_client_is_not_split)
{
	struct rt_detect_server_params p = sdefaults();
	cr_assert_eq(sgen_slow_client_rounds(&p, 90), 5);
	p.open_gap_period_permille = p.gap_period_permille;
	cr_assert_lt(sgen_slow_client_rounds(&p, 90), 5, "the same pause splits it without");
}

/* Without a period or the pauses' two groups to scale it, the same 2-s pause splits a round
 * in two: each part is a round's activity of its own. */
Test(detect_server, without_the_period_a_long_pause_splits_a_round)
{
	struct sgen g;
	struct rt_detect_server_params p = sdefaults();
	p.gap_period_permille = 0;
	p.open_gap_period_permille = 0;
	p.pause_split_ratio = 0;
	sgen_init(&g, &p);
	sgen_start_up(&g);
	for (size_t round = 1; round <= 5; round++)
		sgen_round(&g, 12, 300);
	size_t before = g.boundaries;
	for (size_t round = 6; round <= 10; round++)
		sgen_round(&g, 40, 300);
	cr_assert_gt(g.boundaries - before, 5, "%zu boundaries in 5 rounds", g.boundaries - before);
}

/* A round whose clients' updates arrive `apart` steps apart, each its own activity before the
 * gap knows better: the updates of `clients` clients, the aggregation, the model in three sends
 * of 12 KiB (under min_send_bytes: no broadcast marks the rounds), then `train` steps of
 * training.
 * Returns how many rounds ended in it, and in *at_aggregation whether the last end came from
 * the aggregation's start to the model's last send. */
static size_t
sgen_spread_round(struct sgen *g, int clients, int apart, int train, bool *at_aggregation)
{
	size_t was = g->boundaries;
	for (int c = 0; c < clients; c++) {
		sgen_burst(g, 3, 1000);
		sgen_idle(g, apart);
	}
	uint64_t from = g->r.t_us;
	sgen_burst(g, 4, 2000);
	for (int i = 0; i < 3; i++)
		sgen_send_step(g, 500, 12);
	uint64_t to = g->r.t_us;
	sgen_idle(g, train);
	*at_aggregation = g->d.boundary_us > from && g->d.boundary_us <= to;
	return g->boundaries - was;
}

/* 20 rounds of 4 clients whose updates come 1.5 s apart, 15 s training: counts the rounds from
 * the third on that ended once, those from the sixth on that ended once at their aggregation,
 * and all ends. */
static void
sgen_spread_rounds(const struct rt_detect_server_params *p, bool sends, size_t *once,
                   size_t *at_aggregation, size_t *ends)
{
	struct sgen g;
	sgen_init_sent(&g, p, sends);
	*once = *at_aggregation = 0;
	for (int round = 1; round <= 20; round++) {
		bool at;
		size_t n = sgen_spread_round(&g, 4, 30, 300, &at);
		*once += round >= 3 && n == 1;
		*at_aggregation += round >= 6 && n == 1 && at;
	}
	*ends = g.boundaries;
}

/* Updates 1.5 s apart are longer apart than gap_us, and the period learnt from their ends is
 * theirs, so each update was a round of its own: 100 ends for 20 rounds. The pauses fall in two
 * groups, the updates' and the training's: once two training pauses and a period are known,
 * the pause between the groups parts the rounds, and once the rounds' work is learnt again,
 * each ends at its aggregation. */
Test(detect_server, updates_spread_over_seconds_are_one_round)
{
	struct rt_detect_server_params p = sdefaults();
	size_t once, at_aggregation, ends;
	for (int sends = 0; sends <= 1; sends++) {
		sgen_spread_rounds(&p, sends, &once, &at_aggregation, &ends);
		cr_assert_eq(once, 18, "sends %d: %zu of 18 rounds ended once", sends, once);
		cr_assert_eq(at_aggregation, 15, "sends %d: %zu of 15", sends, at_aggregation);
		cr_assert_leq(ends, 28, "sends %d: %zu ends for 20 rounds", sends, ends);
	}
	p.pause_split_ratio = 0;
	sgen_spread_rounds(&p, true, &once, &at_aggregation, &ends);
	cr_assert_gt(ends, 80, "without the pauses' groups: %zu ends for 20 rounds", ends);
}

/* As sgen_spread_round, where only the count matters. */
static size_t
sgen_plain_round(struct sgen *g, int clients, int apart, int train)
{
	bool at_aggregation;
	return sgen_spread_round(g, clients, apart, train, &at_aggregation);
}

/* 2 clients' updates and the aggregation in one burst, 4 s training, and every fifth round a
 * 60 s checkpoint or evaluation: the pauses fall in two groups, the training's and the
 * checkpoint's (three or four of the last 16), but whole rounds come before both, so theirs is
 * no idle gap (taken for one, it fused the five rounds between two: 6 of 30 ended once). */
Test(detect_server, a_checkpoint_every_fifth_round_fuses_no_rounds)
{
	struct rt_detect_server_params p = sdefaults();
	for (int sends = 0; sends <= 1; sends++) {
		struct sgen g;
		sgen_init_sent(&g, &p, sends);
		size_t once = 0;
		for (int round = 1; round <= 40; round++)
			once += sgen_plain_round(&g, 2, 4, 80 + (round % 5 ? 0 : 1200)) == 1 &&
			        round > 10;
		cr_assert_geq(once, 29, "sends %d: %zu of 30 rounds ended once", sends, once);
	}
}

/* One client, 3 s training, every fourth round 12 s late, readings every 200 ms: the
 * straggler's waits are no idle gap either (taken for one: 7 of 30). */
Test(detect_server, a_recurring_straggler_fuses_no_rounds)
{
	struct rt_detect_server_params p = sdefaults();
	struct sgen g;
	sgen_init_sent(&g, &p, false);
	g.thin = 4;
	size_t once = 0;
	for (int round = 1; round <= 40; round++)
		once += sgen_plain_round(&g, 1, 12, 60 + (round % 4 ? 0 : 240)) == 1 && round > 10;
	cr_assert_geq(once, 28, "%zu of 30 rounds ended once", once);
}

/* 10 rounds of one shape, then 30 of a faster one (fewer clients or a shorter training): counts the
 * rounds from the 11th on that ended once, and all ends. */
static size_t
sgen_speedup(const int before[3], const int after[3], bool sends, size_t *ends)
{
	struct rt_detect_server_params p = sdefaults();
	struct sgen g;
	sgen_init_sent(&g, &p, sends);
	size_t once = 0;
	for (int round = 1; round <= 40; round++) {
		const int *s = round <= 10 ? before : after;
		once += sgen_plain_round(&g, s[0], s[1], s[2]) == 1 && round > 10;
	}
	*ends = g.boundaries;
	return once;
}

/* Rounds that come faster mid-job: the period learnt from the slow ones scaled the idle gap over
 * the new training, so their activity never closed again: 1 end in the 30 rounds after. Two
 * periods after its round ended, a whole round's work again in it forgets the period. */
Test(detect_server, rounds_that_come_faster_are_found_again)
{
	static const struct {
		int before[3], after[3]; /* clients, steps apart, steps of training */
	} shapes[] = {
	    {{8, 30, 300}, {2, 4, 80}},   /* spread updates, 15 s training -> 2 clients, 4 s */
	    {{2, 4, 300}, {2, 4, 40}},    /* 15 s -> 2 s */
	    {{4, 12, 600}, {4, 12, 100}}, /* 30 s -> 5 s */
	};
	for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++)
		for (int sends = 0; sends <= 1; sends++) {
			size_t ends,
			    once = sgen_speedup(shapes[k].before, shapes[k].after, sends, &ends);
			cr_assert_geq(once, 15, "shape %zu sends %d: %zu of 30 ended once", k,
			              sends, once);
			cr_assert_leq(ends, 45, "shape %zu sends %d: %zu ends for 40", k, sends,
			              ends);
		}
}

/* A round of 4 updates 0.6 s apart and the aggregation with the model (3 sends of kib KiB),
 * every burst `times` as heavy, then `train` steps of training. Returns whether it ended once. */
static bool
sgen_scaled_round(struct sgen *g, uint64_t times, uint64_t kib, int train)
{
	size_t was = g->boundaries;
	for (int c = 0; c < 4; c++) {
		sgen_burst(g, 3, 1000 * times);
		sgen_idle(g, 12);
	}
	sgen_burst(g, 4, 2000 * times);
	for (int i = 0; i < 3; i++)
		sgen_send_step(g, 500 * times, kib);
	sgen_idle(g, train);
	return g->boundaries == was + 1;
}

/* The first models are a checkpoint loaded and sent (5 to 100 times a round's heaviest burst),
 * then rounds whose models are 12 KiB (no broadcast) or 400 KiB. Keeping that burst as noise's
 * measure until three rounds were known (ebf612a, reverted in b9d37ba) made every round's burst
 * noise for good: 0 of 30 rounds found. */
Test(detect_server, a_checkpoint_sent_as_the_first_models_leaves_the_rounds_found)
{
	struct rt_detect_server_params p = sdefaults();
	static const uint64_t loads[] = {2300, 4750, 47500}, models_kib[] = {12, 400};
	for (size_t k = 0; k < sizeof(loads) / sizeof(loads[0]); k++)
		for (size_t m = 0; m < sizeof(models_kib) / sizeof(models_kib[0]); m++) {
			uint64_t kib = models_kib[m];
			struct sgen g;
			sgen_init_sent(&g, &p, true);
			for (int i = 0; i < 20; i++)
				sgen_step(&g, loads[k], 200 * SMIB, true);
			for (int i = 0; i < 3; i++)
				sgen_send_step(&g, 500, 400);
			sgen_idle(&g, 300);
			size_t once = 0;
			for (int round = 1; round <= 30; round++)
				once += sgen_scaled_round(&g, 1, kib, 300);
			cr_assert_geq(once, 24,
			              "load %lu, models of %lu KiB: %zu of 30 rounds ended once",
			              (unsigned long)loads[k], (unsigned long)kib, once);
		}
}

/* Ten rounds 5 or 10 times heavier, then rounds that shrank, with models of 400 KiB: the rounds
 * are learnt again where the readings carry the bytes sent too (ebf612a, reverted
 * in b9d37ba, made the first models' burst the measure again: 1 of 30). */
Test(detect_server, rounds_that_shrank_are_learnt_again_where_the_readings_carry_the_bytes)
{
	struct rt_detect_server_params p = sdefaults();
	for (uint64_t times = 5; times <= 10; times += 5) {
		struct sgen g;
		sgen_init_sent(&g, &p, true);
		for (int round = 1; round <= 10; round++)
			sgen_scaled_round(&g, times, 400, 300);
		size_t once = 0;
		for (int round = 1; round <= 30; round++)
			once += sgen_scaled_round(&g, 1, 400, 300);
		cr_assert_geq(once, 24, "%lux: %zu of 30 rounds ended once", (unsigned long)times,
		              once);
	}
}

Test(detect_server, confidence_is_high_for_a_round_in_rhythm)
{
	struct sgen g;
	struct rt_detect_server_params p = sdefaults();
	sgen_init(&g, &p);
	sgen_start_up(&g);
	sgen_round(&g, 12, 100);
	cr_assert_eq(g.d.confidence_permille, 500, "nothing known: %u", g.d.confidence_permille);
	for (int round = 2; round <= 8; round++)
		sgen_round(&g, 12, 100);
	cr_assert_geq(g.d.confidence_permille, 950, "%u", g.d.confidence_permille);
}

Test(detect_server, counters_going_back_restart_the_burst_not_the_rhythm)
{
	struct sgen g;
	struct rt_detect_server_params p = sdefaults();
	sgen_init(&g, &p);
	sgen_start_up(&g);
	for (int round = 1; round <= 4; round++)
		sgen_round(&g, 12, 100);
	cr_assert_eq(g.boundaries, 4);
	uint64_t period = g.d.period_us;
	sgen_burst(&g, 3, 1000);
	g.r.allocations = g.r.frees = g.r.bytes_requested = 0;
	sgen_idle(&g, 100);
	cr_assert_eq(g.boundaries, 4);
	cr_assert_eq(g.d.period_us, period);
}

Test(detect_server, a_reading_too_soon_is_skipped)
{
	struct sgen g;
	struct rt_detect_server_params p = sdefaults();
	sgen_init(&g, &p);
	struct rt_reading r = g.r;
	r.t_us += p.min_interval_us - 1;
	r.allocations += 100000;
	cr_assert_eq(rt_detect_server_feed(&g.d, &r), RT_DETECT_NOTHING);
	cr_assert_eq(g.d.last.t_us, g.r.t_us);
}

/* A round whose aggregation came out light (under nine tenths of the typical round's work, yet
 * no noise) ends no round by its work; the next model's broadcast reports it, at its first send
 * (the s2 server job: 3 s rounds, in which the aggregation and the sends run together). Without
 * the bytes sent it stays missed. */
Test(detect_server, a_broadcast_reports_the_round_the_work_missed)
{
	struct rt_detect_server_params p = sdefaults();
	for (int sends = 0; sends <= 1; sends++) {
		struct sgen g;
		sgen_init_sent(&g, &p, sends);
		for (size_t round = 1; round <= 8; round++)
			sgen_round_sent(&g, round == 5 ? 1000 : 2000);
		cr_assert_eq(g.boundaries, sends ? 8 : 7, "%s: %zu rounds found of 8",
		             sends ? "with the sends" : "without", g.boundaries);
		cr_assert_eq(g.at_reading, sends ? 1 : 0);
	}
}

/* Work that looks like a round's (a checkpoint read and written) while the clients train, once
 * the broadcasts mark the rounds: one end between two broadcasts, so the rounds' count stays.
 * Without the bytes sent it counts one more. */
Test(detect_server, one_end_between_two_broadcasts)
{
	struct rt_detect_server_params p = sdefaults();
	for (int sends = 0; sends <= 1; sends++) {
		struct sgen g;
		sgen_init_sent(&g, &p, sends);
		for (size_t round = 1; round <= 8; round++)
			sgen_round_sent_with(&g, 2000, 0, 100, round == 6);
		cr_assert_eq(g.boundaries, sends ? 8 : 9, "%s: %zu ends for 8 rounds",
		             sends ? "with the sends" : "without", g.boundaries);
	}
}

/* Once the broadcasts stop (the model sent some way the library does not count, or shrunk
 * under 64 KiB), the rounds are the work's again: one round later, not never. */
Test(detect_server, the_count_goes_on_when_the_broadcasts_stop)
{
	struct rt_detect_server_params p = sdefaults();
	struct sgen g;
	sgen_init_sent(&g, &p, true);
	for (size_t round = 1; round <= 12; round++)
		if (round <= 6)
			sgen_round_sent(&g, 2000);
		else
			sgen_round(&g, 12, 100);
	cr_assert_eq(g.boundaries, 12, "%zu rounds found of 12", g.boundaries);
}

/* Sends of another rhythm (100 KiB of metrics every 3 s, in 30 s rounds whose model goes out
 * too) come evenly and alike, but the work's rounds keep another period and no work went quiet
 * between most of them: they mark no round. */
Test(detect_server, sends_of_another_rhythm_mark_no_round)
{
	struct rt_detect_server_params p = sdefaults();
	struct sgen g;
	sgen_init_sent(&g, &p, true);
	g.side_kib = 100;
	g.side_every = 60;
	for (size_t round = 1; round <= 12; round++)
		sgen_round_sent_with(&g, 2000, 0, 570, false);
	cr_assert_eq(g.boundaries, 12, "%zu rounds found of 12", g.boundaries);
}

/* Rounds of uneven length (4 to 12 s, as the sampled clients change) whose model the readings
 * do not see, and a checkpoint of 300 KiB sent every 30 s, or every 15 s (two rounds' ends
 * between most of them): the checkpoints come evenly and alike, but the work finds more than
 * one round's end between two of them, so they mark no round. */
Test(detect_server, sends_slower_than_uneven_rounds_mark_no_round)
{
	struct rt_detect_server_params p = sdefaults();
	struct sgen g;
	for (size_t every = 600; every >= 300; every -= 300) {
		sgen_init_sent(&g, &p, true);
		g.side_kib = 300;
		g.side_every = every;
		uint64_t seed = 7;
		for (size_t round = 1; round <= 40; round++) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			sgen_round(&g, 12, 80 + (int)(seed >> 33) % 160);
		}
		cr_assert_geq(g.boundaries, 39, "every %zu steps: %zu rounds found of 40", every,
		              g.boundaries);
		cr_assert_leq(g.boundaries, 40, "every %zu steps: %zu rounds found of 40", every,
		              g.boundaries);
	}
}

/* Rounds that come twice as fast (the slowest client left): the broadcasts of the new rhythm
 * fuse into one under the old gap; once it outlasts a period and its spread it is none, what
 * the broadcasts were like is forgotten, and an end later in it is the next round's. */
Test(detect_server, rounds_that_come_twice_as_fast_are_all_found)
{
	struct rt_detect_server_params p = sdefaults();
	struct sgen g;
	sgen_init_sent(&g, &p, true);
	for (size_t round = 1; round <= 16; round++)
		sgen_round_sent_with(&g, 2000, 0, round <= 6 ? 200 : 70, false);
	cr_assert_geq(g.boundaries, 15, "%zu rounds found of 16", g.boundaries);
	cr_assert_leq(g.boundaries, 16, "%zu rounds found of 16", g.boundaries);
}

/* Rounds that come five times as fast (20 s, then 4 s: training cut short): the new broadcasts
 * fuse under the old gap, but a round's end the work found inside one parts the next send from
 * it at the gap of a period not yet known; what the broadcasts were like is learnt again. */
Test(detect_server, rounds_that_come_five_times_as_fast_are_found)
{
	struct rt_detect_server_params p = sdefaults();
	struct sgen g;
	sgen_init_sent(&g, &p, true);
	for (size_t round = 1; round <= 24; round++)
		sgen_round_sent_with(&g, 2000, 0, round <= 5 ? 400 : 80, false);
	cr_assert_geq(g.boundaries, 23, "%zu rounds found of 24", g.boundaries);
	cr_assert_leq(g.boundaries, 24, "%zu rounds found of 24", g.boundaries);
}

/* The work's own rhythm, learnt on long rounds, goes stale when shorter ones fuse into one
 * activity that never closes (the work alone then finds 6 of 24 here, an open fault of the
 * work's idle gap): a rhythm it has not kept for two of its periods vetoes no lock, and the
 * broadcasts find the rounds. */
Test(detect_server, a_stale_work_rhythm_vetoes_no_lock)
{
	struct rt_detect_server_params p = sdefaults();
	struct sgen g;
	sgen_init_sent(&g, &p, true);
	for (size_t round = 1; round <= 24; round++)
		sgen_round_sent_with(&g, 2000, 0, round <= 5 ? 400 : 50, false);
	cr_assert_geq(g.boundaries, 12, "%zu rounds found of 24", g.boundaries);
	cr_assert_leq(g.boundaries, 24, "%zu rounds found of 24", g.boundaries);
}

/* A reading 5 s late inside a broadcast (the worker stalled, the host throttled) splits
 * it in none: only readings that sent no model part two broadcasts. */
Test(detect_server, a_late_reading_splits_no_broadcast)
{
	struct rt_detect_server_params p = sdefaults();
	struct sgen g;
	sgen_init_sent(&g, &p, true);
	for (size_t round = 1; round <= 12; round++)
		sgen_round_sent_with(&g, 2000, round == 6 || round == 9 ? 100 : 0, 100, false);
	cr_assert_eq(g.boundaries, 12, "%zu rounds found of 12", g.boundaries);
}

/* A clock that goes back (a restore, a reading of another clock) restarts the readings and
 * forgets the broadcasts' times: the count goes on as the work's, then locks again. */
Test(detect_server, a_clock_gone_back_forgets_the_broadcasts)
{
	struct rt_detect_server_params p = sdefaults();
	struct sgen g;
	sgen_init_sent(&g, &p, true);
	for (size_t round = 1; round <= 12; round++) {
		if (round == 7)
			g.r.t_us -= 30000000;
		sgen_round_sent(&g, round == 10 ? 1000 : 2000);
	}
	cr_assert_geq(g.boundaries, 11, "%zu rounds found of 12", g.boundaries);
	cr_assert_leq(g.boundaries, 12, "%zu rounds found of 12", g.boundaries);
	for (unsigned i = 0; i < g.d.nintervals; i++)
		cr_assert_lt(g.d.intervals_us[i], 60000000, "a wrapped interval: %lu us",
		             (unsigned long)g.d.intervals_us[i]);
}

/* A server that starts to send a model's worth every reading (it streams to its clients, or
 * serves data) has one broadcast that never ends: once no broadcast began for a period and its
 * spread, the rounds are the work's again, and the count stays within one. Taken for a
 * broadcast all along, every end after its first would be a second one in the round it closes
 * (5 found of 12). */
Test(detect_server, a_server_that_streams_counts_the_work_s_rounds)
{
	struct rt_detect_server_params p = sdefaults();
	struct sgen g;
	sgen_init_sent(&g, &p, true);
	for (size_t round = 1; round <= 4; round++)
		sgen_round_sent(&g, 2000);
	g.side_kib = 100;
	for (size_t round = 5; round <= 12; round++)
		sgen_round(&g, 12, 100);
	cr_assert(g.boundaries >= 11 && g.boundaries <= 12, "%zu rounds found of 12", g.boundaries);
}

/* A server's start-up goes on after its first burst: the job deployed, its process started,
 * the clients registered (bursts with a few KiB sent: a peer), then the first models go out.
 * No round has ended before the models went out, nor with the burst that sent the first ones:
 * a round begins with its models. Before, the work ended one round at the deployment's
 * heaviest burst and one at the first models' (NVFlare's server parents: 1 or 2 rounds too many
 * in every recording with the bytes sent); the rounds after are found as they were. */
Test(detect_server, start_up_and_the_first_models_end_no_round)
{
	/* The first models in readings of 2 MiB, or after two of 40 KiB that already add up to
	 * the first models' bytes; start-up's chatter 4 KiB a second, 4 KiB every 250 ms or 1 KiB
	 * every 50 ms (it adds up to the first models' bytes too, over seconds: no model). */
	static const uint64_t models[][5] = {{2048, 2048, 2048, 0}, {40, 40, 2048, 2048, 2048}};
	static const struct {
		uint64_t kib;
		size_t every;
	} chatter[] = {{4, 20}, {4, 5}, {1, 1}};
	struct rt_detect_server_params p = sdefaults();
	for (size_t m = 0; m < sizeof(models) / sizeof(models[0]); m++)
		for (size_t c = 0; c < sizeof(chatter) / sizeof(chatter[0]); c++) {
			struct sgen g;
			sgen_init_sent(&g, &p, true);
			g.side_kib = chatter[c].kib;
			g.side_every = chatter[c].every;
			sgen_burst(&g, 3, 1000);
			sgen_idle(&g, 60);
			sgen_burst(&g, 2, 1000);
			sgen_idle(&g, 60);
			for (int i = 0; i < 5 && models[m][i]; i++)
				sgen_send_step(&g, 1000, models[m][i]);
			sgen_idle(&g, 100);
			cr_expect_eq(g.boundaries, 0,
			             "models %zu chatter %zu: %zu rounds ended before the first", m,
			             c, g.boundaries);
			for (size_t round = 1; round <= 8; round++)
				sgen_round_sent(&g, 2000);
			cr_expect_eq(g.boundaries, 8,
			             "models %zu chatter %zu: %zu ends for 8 rounds", m, c,
			             g.boundaries);
		}
}

/* A server whose models stay under min_send_bytes learns its rounds (4 clients' updates, 12
 * then 30 steps apart, one activity by the period), and at round k one reading first sends 64
 * KiB (two clients fetch at once, one joins). That reading is no start-up's first models: the
 * rounds were under way. Taken for them, it made the detector forget the period, each update
 * became an activity of its own, and the period learnt from those kept them so: 59 and 43 ends
 * for 20 rounds at k = 8 and 12. */
Test(detect_server, first_64kib_reading_mid_job_keeps_the_period)
{
	struct rt_detect_server_params p = sdefaults();
	for (int k = 0; k <= 12; k += 4) {
		struct sgen g;
		sgen_init_sent(&g, &p, true);
		g.side_kib = 4;
		g.side_every = 20;
		sgen_burst(&g, 3, 1000);
		sgen_idle(&g, 60);
		for (int r = 0; r < 20; r++) {
			for (int c = 0; c < 4; c++) {
				sgen_burst(&g, 3, 1000);
				sgen_idle(&g, r < 6 ? 12 : 30);
			}
			sgen_burst(&g, 4, 2000);
			for (int i = 0; i < 3; i++)
				sgen_send_step(&g, 500, r == k && k ? 100 : 12);
			sgen_idle(&g, 300);
		}
		cr_expect_leq(g.boundaries, 20, "64 KiB first at round %d: %zu ends for 20", k,
		              g.boundaries);
		/* At most start-up's refusals lost (the first rounds' ends, models unseen). */
		cr_expect_geq(g.boundaries, 20 - RT_DETECT_LOCK_ROUNDS,
		              "64 KiB first at round %d: %zu ends for 20", k, g.boundaries);
	}
}

/* Clients that join slowly: each registration a burst of the server's (a peer: 4 KiB sent every
 * second), 30 s apart, more of them than start-up's refusals. Those that pass the refusals are
 * counted, but the first models' end stays start-up's (it was a round too once an end before
 * the models had been reported), and the registrations' rhythm is no round's: learnt as the
 * period, it made the 7-s rounds after it one activity that never closed (1 end for 8). */
Test(detect_server, slow_registrations_leave_the_first_models_end_no_round)
{
	struct rt_detect_server_params p = sdefaults();
	for (int registrations = 4; registrations <= 6; registrations++) {
		struct sgen g;
		sgen_init_sent(&g, &p, true);
		g.side_kib = 4;
		g.side_every = 20;
		for (int i = 0; i < registrations; i++) {
			sgen_burst(&g, 3, 1000);
			sgen_idle(&g, 600);
		}
		size_t before_models = g.boundaries;
		sgen_burst(&g, 2, 1000);
		for (int i = 0; i < 3; i++)
			sgen_send_step(&g, 1000, 2048);
		sgen_idle(&g, 100);
		cr_expect_eq(g.boundaries, before_models,
		             "%d registrations: the first models' end was a round (%zu ends, %zu "
		             "before the models)",
		             registrations, g.boundaries, before_models);
		for (size_t round = 1; round <= 8; round++)
			sgen_round_sent(&g, 2000);
		cr_expect_eq(g.boundaries, before_models + 8,
		             "%d registrations: %zu ends for 8 rounds", registrations,
		             g.boundaries - before_models);
	}
}

/* A server whose models go out in readings under min_send_bytes, with a peer (4 KiB every
 * second): 3 readings of 32 KiB a model, or 1 MiB at 48 KiB a reading. Its models are still
 * models (they add up to min_send_bytes within quiet_us of the first), so its first rounds are
 * no start-up's: before, each lost its first 3 (7 ends for 10 rounds). */
Test(detect_server, models_sent_in_small_readings_lose_no_round_at_the_start)
{
	static const struct {
		int readings;
		uint64_t kib;
	} models[] = {{3, 32}, {21, 48}};
	struct rt_detect_server_params p = sdefaults();
	for (size_t m = 0; m < sizeof(models) / sizeof(models[0]); m++) {
		struct sgen g;
		sgen_init_sent(&g, &p, true);
		g.side_kib = 4;
		g.side_every = 20;
		for (int round = 1; round <= 10; round++) {
			sgen_burst(&g, 3, 1000);
			sgen_idle(&g, 12);
			sgen_burst(&g, 4, 2000);
			sgen_idle(&g, 12);
			for (int i = 0; i < models[m].readings; i++)
				sgen_send_step(&g, 500, models[m].kib);
			sgen_idle(&g, 100);
		}
		cr_assert_eq(g.boundaries, 10, "%d x %lu KiB: %zu ends for 10 rounds",
		             models[m].readings, (unsigned long)models[m].kib, g.boundaries);
	}
}

/* A relay's round (NVFlare's server parent): the model passed on to each of k clients as it
 * asks (a step of 2 MiB sent and 2,000 events each, ask_apart steps apart), the clients train
 * for train steps (the relay's heartbeats only), their updates passed on as they come (the
 * same), update_apart steps apart, and the job aggregates for agg steps. Returns the step of
 * the round's first model: where the round before it ended. */
static size_t
sgen_relay_round(struct sgen *g, int k, int ask_apart, int train, int update_apart, int agg)
{
	size_t first = g->step + 1;
	for (int i = 0; i < k; i++) {
		sgen_send_step(g, 2000, 2048);
		sgen_idle(g, ask_apart);
	}
	for (int i = 0; i < train; i++)
		sgen_step(g, i % 20 ? 0 : 20, 0, false);
	for (int i = 0; i < k; i++) {
		sgen_send_step(g, 2000, 2048);
		sgen_idle(g, update_apart);
	}
	sgen_idle(g, agg);
	return first;
}

/* As sgen_relay_round with k clients (the first two models in one reading, 2 steps between
 * the others, 3 between updates, 300 training, 20 aggregating), of which only `updates` return
 * theirs (a client dropped out), and `odd_events` allocation events over the 10 steps that end
 * a second before the first update (a collection, a checkpoint). Returns the step of the
 * round's first model. */
static size_t
sgen_relay_round_odd(struct sgen *g, int k, int updates, uint64_t odd_events)
{
	size_t first = g->step + 1;
	for (int i = 1; i < k; i++) {
		sgen_send_step(g, 2000, i == 1 ? 4096 : 2048);
		sgen_idle(g, 2);
	}
	for (int i = 0; i < 300; i++)
		sgen_step(g, i >= 270 && i < 280 ? odd_events / 10 : i % 20 ? 0 : 20, 0, false);
	for (int i = 0; i < updates; i++) {
		sgen_send_step(g, 2000, 2048);
		sgen_idle(g, 3);
	}
	sgen_idle(g, 20);
	return first;
}

/* A relay's rounds, as many clients as the round's, with uneven asks and updates: each round
 * sends as much out as in, parted by the clients' training, so once two rounds in a chain came
 * evenly, each later round ends once, at its models, though the models and updates between
 * (from the last model to the first update, and so on) are spans of equal halves too. The work
 * and the broadcasts alone found 1 of these rounds at its models (fails before the rule). */
Test(detect_server, a_relay_s_rounds_end_once_at_their_models)
{
	struct rt_detect_server_params p = sdefaults();
	for (int k = 1; k <= 16; k *= 4) {
		struct sgen g;
		sgen_init_sent(&g, &p, true);
		size_t at_models = 0, locked_in = 0, fired = 0;
		for (size_t round = 1; round <= 13; round++) {
			size_t first = sgen_relay_round(&g, k, 1 + (int)round % 3, 300,
			                                2 + (int)round % 4, 20);
			if (round > 1 && locked_in && locked_in < round) {
				cr_assert_eq(g.boundaries, fired + 1, "k %d round %zu: %zu ends", k,
				             round - 1, g.boundaries - fired);
				cr_assert_eq(g.last_fired, first,
				             "k %d round %zu: not at its models", k, round - 1);
			}
			at_models += round > 1 && g.last_fired == first && g.boundaries > fired;
			fired = g.boundaries;
			if (!locked_in && g.d.relay_locked)
				locked_in = round;
		}
		cr_assert(locked_in >= 1 && locked_in <= 4, "k %d: locked in round %zu", k,
		          locked_in);
		cr_assert_geq(at_models, 9, "k %d: %zu rounds ended at their models of 12", k,
		              at_models);
	}
}

/* A relay of 4 clients, one of whom drops out of rounds 6 and 11 (3 updates passed on): each
 * such round's halves differ, and the rounds after it are found from the onsets after the
 * chain's end; without that, the lock stood on the stale end, nothing was reported for two and
 * a half rounds and the chain took two more to lock again (9 of 15 ends). */
Test(detect_server, a_relay_s_lock_outlasts_a_client_dropping_out)
{
	struct rt_detect_server_params p = sdefaults();
	struct sgen g;
	sgen_init_sent(&g, &p, true);
	size_t at_models = 0, fired = 0;
	for (size_t round = 1; round <= 16; round++) {
		size_t first = sgen_relay_round_odd(&g, 4, round == 6 || round == 11 ? 3 : 4, 0);
		at_models += round > 1 && g.last_fired == first && g.boundaries > fired;
		fired = g.boundaries;
		if (round >= 4)
			cr_assert(g.d.relay_locked, "round %zu: the lock is lost", round);
	}
	cr_assert_geq(at_models, 11, "%zu rounds ended at their models of 15", at_models);
	cr_assert_leq(g.boundaries, 16, "%zu ends for 15 rounds", g.boundaries);
}

/* A relay of 4 clients whose process, in round 3, does 20,000 allocation events a second
 * before the first update comes (twice the updates' own): that round is no relay's round, the
 * rounds after it are; before, it marked the process a job for good and the rule stood down for
 * the rest of the run. */
Test(detect_server, one_odd_round_does_not_make_a_relay_a_job)
{
	struct rt_detect_server_params p = sdefaults();
	struct sgen g;
	sgen_init_sent(&g, &p, true);
	size_t at_models = 0, fired = 0;
	for (size_t round = 1; round <= 12; round++) {
		size_t first = sgen_relay_round_odd(&g, 4, 4, round == 3 ? 20000 : 0);
		at_models += round > 1 && g.last_fired == first && g.boundaries > fired;
		fired = g.boundaries;
	}
	cr_assert(g.d.relay_locked, "the relay's rule stood down");
	cr_assert_geq(at_models, 7, "%zu rounds ended at their models of 11", at_models);
}

/* A locked relay whose reading does not say the bytes sent (a counter read failed), or whose
 * bytes went back: what the relay was like is forgotten, the lock too, since the bytes since
 * the chain's end are no longer known. */
Test(detect_server, an_unknown_or_backward_bytes_reading_forgets_the_relay)
{
	struct rt_detect_server_params p = sdefaults();
	for (int back = 0; back <= 1; back++) {
		struct sgen g;
		sgen_init_sent(&g, &p, true);
		for (size_t round = 1; round <= 5; round++)
			sgen_relay_round_odd(&g, 4, 4, 0);
		cr_assert(g.d.relay_locked, "no lock to forget");
		uint64_t sent = g.r.bytes_sent;
		g.r.bytes_sent = back ? sent - 1 : RT_TRACE_UNKNOWN;
		sgen_idle(&g, 1);
		cr_assert_not(g.d.relay_locked, "%s: still locked", back ? "back" : "unknown");
		cr_assert_eq(g.d.nruns, 0, "%s: runs kept", back ? "back" : "unknown");
		cr_assert_eq(g.d.nchains, 0, "%s: chains kept", back ? "back" : "unknown");
	}
}

/* A server job with an evaluation broadcast: after the aggregation, k validation models out,
 * the clients evaluate, k training models out, then the clients train and their updates come
 * in. Its sends are a relay's, mirror for mirror; but the updates are received (work with
 * nothing sent) and aggregated before anything goes out: the relay's rule stands down, and the
 * work counts the rounds as it did (passes before the rule; fails on the rule without its
 * work gate: the relay takes the rounds over at the training models). */
Test(detect_server, a_job_with_an_evaluation_broadcast_is_no_relay)
{
	struct rt_detect_server_params p = sdefaults();
	for (int k = 2; k <= 8; k *= 2) {
		struct sgen g;
		sgen_init_sent(&g, &p, true);
		size_t at_aggregation = 0;
		for (size_t round = 1; round <= 12; round++) {
			for (int i = 0; i < k; i++) {
				sgen_burst(&g, 4, 750);
				sgen_idle(&g, 2 + (int)round % 3);
			}
			sgen_burst(&g, 4, 2000 * (uint64_t)k);
			uint64_t end = g.last_quiet;
			sgen_idle(&g, 12);
			for (int half = 0; half < 2; half++) {
				for (int i = 0; i < k; i++) {
					sgen_send_step(&g, 1500, 2048);
					sgen_idle(&g, 1 + i % 2);
				}
				sgen_idle(&g, half ? 0 : 40);
			}
			at_aggregation += g.boundaries && g.d.boundary_us == end;
			sgen_idle(&g, 300);
		}
		cr_assert_not(g.d.relay_locked, "k %d: taken for a relay", k);
		cr_assert_geq(at_aggregation, 11,
		              "k %d: %zu rounds ended at their aggregation of 12", k,
		              at_aggregation);
		cr_expect_leq(g.boundaries, 13, "k %d: %zu ends for 12 rounds", k, g.boundaries);
	}
}

/* The recorded server traces in test/traces (test/traces/README.md), replayed as the library
 * reads a server: the counts, the CPU time and the bytes sent where recorded (the detector
 * never asks for the live heap). */
static bool
sload(const char *name, struct dm_trace *trace, struct dm_truth *truth)
{
	char trace_path[4096], truth_path[4096];
	snprintf(trace_path, sizeof(trace_path), "%s/test/traces/%s.trace", RT_SOURCE_DIR, name);
	snprintf(truth_path, sizeof(truth_path), "%s/test/traces/%s.truth", RT_SOURCE_DIR, name);
	return dm_trace_load(trace_path, trace) && dm_truth_load(truth_path, truth);
}

/* A recorded server trace replayed as the library reads it with the shipped settings, every
 * reading or one every every_us (0: all); the caller frees *res. */
static void
sreplay_shipped(const char *name, uint64_t every_us, struct dm_result *res)
{
	struct dm_trace trace;
	struct dm_truth truth;
	cr_assert(sload(name, &trace, &truth), "%s", name);
	struct rt_detect_server_params p = sdefaults();
	unsigned inputs;
	cr_assert(dm_inputs_parse("counts+cpu+sent", &inputs));
	dm_server_replay(&trace, &truth, &p, inputs, every_us, res);
	dm_trace_free(&trace);
	dm_truth_free(&truth);
}

enum sshape_rule {
	SSHAPE_ROUNDS, /* precision and recall >= 0.95, every delay <= 3 s (the matching rule) */
	SSHAPE_RELAY,  /* at most one detection a round */
};

struct sshape {
	const char *name;
	enum sshape_rule rule;
	/* false: a shape the detector does not hold yet (roundtrim(7) gives its figures): it takes
	 * no part in choosing the settings, and its score is logged, not asserted. */
	bool held;
};

/* Not held yet, and why (issue 27):
 * - the server parents (s1-s6) only relay: the clients' updates in and the model out are
 *   bursts of the same weight, and the round ends between them with no work of the parent's;
 *   its heaviest burst is either, so a round's work is not stable there. They count 1.1-1.3
 *   rounds a round but for s3's (1.4 GiB relayed each way: 2), with precision and recall
 *   0.06-0.80. Where their sends are recorded, a relay's equal halves find s1, s4, s5 and s6's
 *   rounds but the two a chain needs (a_relay_s_rounds_are_found_where_its_halves_are_even),
 *   and with start-up's ends not reported, s1, s5 and s6 (and loaded s1 and s5) count at most
 *   one a round: held (27, 17, 16, 27 and 18 for 25, 15, 15, 25 and 15 before), as are the s2
 *   relays, whose counts stay under their rounds though their halves pair the wrong way (the
 *   clients train for less than the aggregation takes). Not s3's (10 for 8, none in phase) nor
 *   s4's (16 for 8: until a chain locks, the work takes the relay's polls in its 60-s rounds
 *   for rounds).
 * - s2 server job (4.5-s rounds): 0.96 with the shipped settings, but the settings chosen
 *   without it (a round's share of 800) give 0.885: a round's work there varies by a third, as
 *   the first update merges with the aggregation or not, and under a load of 16-18 its pauses
 *   inside a round (to 1.3 s) are as long as the clients' training between rounds.
 * - s3, s5, s6 server jobs: an aggregation merged with the model sent in one burst (its quiet
 *   comes after the sends, 2.2-2.7 s late), or the quiet of the model being saved (file
 *   writes, no allocation) confirmed 45 and 130 ms before FedAvg's log line; 0.88-0.93.
 * - fl_server (test/workloads/fl_server.c): five clients that never pause together, so its
 *   rounds have no idle gap between them; the client detector, which watches the live heap
 *   fall at each round's end, holds it (test_detect.c). */
static const struct sshape sshapes[] = {
    {"nvflare_s1_server_job", SSHAPE_ROUNDS, true},
    {"nvflare_s2_tiny_server_job", SSHAPE_ROUNDS, true},
    {"nvflare_s3_50m_server_job", SSHAPE_ROUNDS, false},
    {"nvflare_s4_long_server_job", SSHAPE_ROUNDS, true},
    {"nvflare_s5_workers_server_job", SSHAPE_ROUNDS, false},
    {"nvflare_s6_4sites_server_job", SSHAPE_ROUNDS, false},
    {"grpc_fl_server", SSHAPE_ROUNDS, true},
    {"server_rounds", SSHAPE_ROUNDS, true},
    {"fl_server", SSHAPE_ROUNDS, false},
    {"nvflare_s1_server_parent", SSHAPE_RELAY, false},
    {"nvflare_s2_tiny_server_parent", SSHAPE_RELAY, false},
    {"nvflare_s3_50m_server_parent", SSHAPE_RELAY, false},
    {"nvflare_s4_long_server_parent", SSHAPE_RELAY, false},
    {"nvflare_s5_workers_server_parent", SSHAPE_RELAY, false},
    {"nvflare_s6_4sites_server_parent", SSHAPE_RELAY, false},
    {"nvflare_s1_sends_server_job", SSHAPE_ROUNDS, true},
    {"nvflare_s2_sends_server_job", SSHAPE_ROUNDS, false},
    {"nvflare_s3_sends_server_job", SSHAPE_ROUNDS, true},
    {"nvflare_s4_sends_server_job", SSHAPE_ROUNDS, false},
    {"nvflare_s5_sends_server_job", SSHAPE_ROUNDS, true},
    {"nvflare_s6_sends_server_job", SSHAPE_ROUNDS, false},
    {"nvflare_s1_sends_server_parent", SSHAPE_RELAY, true},
    {"nvflare_s2_sends_server_parent", SSHAPE_RELAY, true},
    {"nvflare_s3_sends_server_parent", SSHAPE_RELAY, false},
    {"nvflare_s4_sends_server_parent", SSHAPE_RELAY, false},
    {"nvflare_s5_sends_server_parent", SSHAPE_RELAY, true},
    {"nvflare_s6_sends_server_parent", SSHAPE_RELAY, true},
    {"nvflare_s1_loaded_server_job", SSHAPE_ROUNDS, true},
    {"nvflare_s5_loaded_server_job", SSHAPE_ROUNDS, true},
    {"nvflare_s1_loaded_server_parent", SSHAPE_RELAY, true},
    {"nvflare_s2_live_server_job", SSHAPE_ROUNDS, false},
    {"nvflare_s2_live_server_parent", SSHAPE_RELAY, true},
    {"nvflare_s5_loaded_server_parent", SSHAPE_RELAY, true},
};
#define NSSHAPES (sizeof(sshapes) / sizeof(sshapes[0]))

/* The grid: the round's share, the idle gap's share of the period (after a round's end, and
 * while the round still waits), the first round's hold and the gap that parts two broadcasts
 * (before their period is known, and its share of the period), at, below and above their
 * defaults; the defaults first, so that a tie keeps them. */
static const uint32_t sgrid_round[] = {900, 800, 950};
static const uint32_t sgrid_gap[] = {200, 100, 300};
static const uint32_t sgrid_open_gap[] = {350, 250, 500};
static const uint64_t sgrid_hold_us[] = {1000000, 600000, 1500000};
static const uint64_t sgrid_send_gap_us[] = {2000000, 1000000, 3000000};
static const uint32_t sgrid_send_gap_period[] = {500, 350, 650};
#define NSGRID (3 * 3 * 3 * 3 * 3 * 3)

static struct rt_detect_server_params
sgrid_params(size_t i)
{
	struct rt_detect_server_params p = sdefaults();
	p.round_permille = sgrid_round[i % 3];
	p.gap_period_permille = sgrid_gap[i / 3 % 3];
	p.open_gap_period_permille = sgrid_open_gap[i / 9 % 3];
	p.hold_us = sgrid_hold_us[i / 27 % 3];
	p.send_gap_us = sgrid_send_gap_us[i / 81 % 3];
	p.send_gap_period_permille = sgrid_send_gap_period[i / 243];
	return p;
}

/* 0 to 1: for SSHAPE_ROUNDS the lower of precision and recall, for SSHAPE_RELAY 1 or 0. */
static double
sshape_score(const struct sshape *s, const struct dm_trace *trace, const struct dm_truth *truth,
             const struct rt_detect_server_params *p, struct dm_result *res)
{
	unsigned inputs;
	cr_assert(dm_inputs_parse("counts+cpu+sent", &inputs));
	dm_server_replay(trace, truth, p, inputs, 0, res);
	if (s->rule == SSHAPE_RELAY)
		return res->detected <= res->truths;
	return res->precision < res->recall ? res->precision : res->recall;
}

/* As the client detector is judged (test_detect.c): for each server shape, the settings that do
 * best on all the others must hold on the one left out. */
Test(detect_server_traces, settings_chosen_without_a_shape_hold_on_it, .timeout = 120)
{
	static double score[NSGRID][NSSHAPES];
	static size_t detected[NSGRID][NSSHAPES], truths[NSSHAPES];
	static double median_delay[NSGRID][NSSHAPES], max_delay[NSGRID][NSSHAPES];
	static double precision[NSGRID][NSSHAPES], recall[NSGRID][NSSHAPES];
	for (size_t k = 0; k < NSSHAPES; k++) {
		struct dm_trace trace;
		struct dm_truth truth;
		cr_assert(sload(sshapes[k].name, &trace, &truth), "%s", sshapes[k].name);
		for (size_t i = 0; i < NSGRID; i++) {
			struct rt_detect_server_params p = sgrid_params(i);
			struct dm_result res;
			score[i][k] = sshape_score(&sshapes[k], &trace, &truth, &p, &res);
			detected[i][k] = res.detected;
			truths[k] = res.truths;
			median_delay[i][k] = res.median_delay_s;
			precision[i][k] = res.precision;
			recall[i][k] = res.recall;
			max_delay[i][k] = res.max_delay_s;
			dm_result_free(&res);
		}
		dm_trace_free(&trace);
		dm_truth_free(&truth);
	}
	bool held[NSSHAPES];
	for (size_t k = 0; k < NSSHAPES; k++)
		held[k] = sshapes[k].held;
	for (size_t out = 0; out < NSSHAPES; out++) {
		double best_worst;
		size_t best =
		    dm_best_without(&score[0][0], NSGRID, NSSHAPES, held, out, &best_worst);
		struct rt_detect_server_params p = sgrid_params(best);
		cr_log_info(
		    "%s left out: round %u gap %u open gap %u hold %lu us send gap %lu us %u: "
		    "score %.3f, %zu detections for %zu rounds, precision %.3f recall %.3f, "
		    "delay median %.2f s max %.2f s%s",
		    sshapes[out].name, p.round_permille, p.gap_period_permille,
		    p.open_gap_period_permille, (unsigned long)p.hold_us,
		    (unsigned long)p.send_gap_us, p.send_gap_period_permille, score[best][out],
		    detected[best][out], truths[out], precision[best][out], recall[best][out],
		    median_delay[best][out], max_delay[best][out],
		    sshapes[out].held ? "" : " (not held yet)");
		if (!sshapes[out].held)
			continue;
		cr_expect_geq(
		    score[best][out], 0.95,
		    "%s left out: chosen round %u gap %u hold %lu us send gap %lu us %u (worst "
		    "elsewhere %.3f) scores %.3f on it",
		    sshapes[out].name, p.round_permille, p.gap_period_permille,
		    (unsigned long)p.hold_us, (unsigned long)p.send_gap_us,
		    p.send_gap_period_permille, best_worst, score[best][out]);
	}
}

/* What the server role is for (issue 27): acting every N rounds acts at most once a round. On
 * every recorded process that aggregates, with the shipped settings, the detections never
 * outnumber the rounds by more than one (start-up's last burst can take the first hold); the
 * relays' counts are logged (see above). */
Test(detect_server_traces, at_most_one_end_a_round_where_the_server_aggregates, .timeout = 60)
{
	for (size_t k = 0; k < NSSHAPES; k++) {
		struct dm_result res;
		sreplay_shipped(sshapes[k].name, 0, &res);
		if (sshapes[k].rule == SSHAPE_RELAY)
			cr_log_info("%s (a relay): %zu detections for %zu rounds", sshapes[k].name,
			            res.detected, res.truths);
		else
			cr_expect_leq(res.detected, res.truths + 1,
			              "%s: %zu detections for %zu rounds", sshapes[k].name,
			              res.detected, res.truths);
		dm_result_free(&res);
	}
}

/* A relay's replay counts at most a fifth more detections than rounds. */
static void
sexpect_a_fifth_more_at_most(const char *name, uint64_t every_us, const struct dm_result *res)
{
	cr_expect_leq(res->detected * 5, res->truths * 6,
	              "%s every %lu us: %zu detections for %zu rounds", name,
	              (unsigned long)every_us, res->detected, res->truths);
}

/* Relays whose rounds the equal halves find in part, or not in phase (s2's training is shorter
 * than its aggregation), replayed where the old rules' count was near: the count stays within a
 * fifth of the rounds (a lock inside one phase, once its even halves needed
 * no time, ended s2_sends' rounds every half period, 50 for 25; without the pause-before test,
 * s2_live counted 34). */
Test(detect_server_traces, a_relay_s_count_stays_within_a_fifth_of_its_rounds, .timeout = 60)
{
	static const struct {
		const char *name;
		uint64_t every_us;
	} relays[] = {
	    {"nvflare_s2_sends_server_parent", 0},
	    {"nvflare_s2_live_server_parent", 0},
	    {"nvflare_s2_live_server_parent", 200000},
	    {"nvflare_s6_sends_server_parent", 200000},
	};
	for (size_t k = 0; k < sizeof(relays) / sizeof(relays[0]); k++) {
		struct dm_result res;
		sreplay_shipped(relays[k].name, relays[k].every_us, &res);
		sexpect_a_fifth_more_at_most(relays[k].name, relays[k].every_us, &res);
		cr_expect_geq(res.detected * 5, res.truths * 4,
		              "%s every %lu us: %zu detections for %zu rounds", relays[k].name,
		              (unsigned long)relays[k].every_us, res.detected, res.truths);
		dm_result_free(&res);
	}
}

/* The relays whose rounds the equal halves find (issue 27), at the library's readings of
 * 100 ms and, where a relay between sends reads every 200 ms, at those: all rounds found but
 * the two a chain needs to lock, and at most a fifth more detections than rounds (before the
 * rule: 3 to 14 rounds found). */
Test(detect_server_traces, a_relay_s_rounds_are_found_where_its_halves_are_even, .timeout = 60)
{
	static const struct {
		const char *name;
		uint64_t every_us;
	} relays[] = {
	    {"nvflare_s1_sends_server_parent", 0},       {"nvflare_s1_sends_server_parent", 200000},
	    {"nvflare_s1_loaded_server_parent", 0},      {"nvflare_s5_sends_server_parent", 0},
	    {"nvflare_s5_sends_server_parent", 200000},  {"nvflare_s5_loaded_server_parent", 0},
	    {"nvflare_s5_loaded_server_parent", 200000}, {"nvflare_s6_sends_server_parent", 0},
	};
	for (size_t k = 0; k < sizeof(relays) / sizeof(relays[0]); k++) {
		struct dm_result res;
		sreplay_shipped(relays[k].name, relays[k].every_us, &res);
		cr_expect_geq(res.matched + 2, res.truths,
		              "%s every %lu us: %zu of %zu rounds found", relays[k].name,
		              (unsigned long)relays[k].every_us, res.matched, res.truths);
		sexpect_a_fifth_more_at_most(relays[k].name, relays[k].every_us, &res);
		dm_result_free(&res);
	}
}

/* Start-up's ends (rt_detect_server_start_up_end) are refused only before the first round, and
 * none is a round's: on every recorded server with the bytes sent, at the library's 100 ms
 * readings and at 200 ms (a relay between sends), no refused end would have matched a round's
 * end (reported within 3 s after it). Before the first models' window had a bound, the s2 relay
 * (3-s rounds, its first broadcast running on into later rounds) refused round 2's end. At 500 ms
 * it still refuses round 1's, which ends 1.8 s after the first models with the updates' sends. */
Test(detect_server_traces, start_up_s_refused_ends_are_no_round_s, .timeout = 60)
{
	static const uint64_t every[] = {0, 100000, 200000};
	for (size_t k = 0; k < NSSHAPES; k++) {
		if (!strstr(sshapes[k].name, "_sends_") && !strstr(sshapes[k].name, "_loaded_") &&
		    !strstr(sshapes[k].name, "_live_"))
			continue;
		struct dm_trace trace;
		struct dm_truth truth;
		cr_assert(sload(sshapes[k].name, &trace, &truth), "%s", sshapes[k].name);
		for (size_t e = 0; e < sizeof(every) / sizeof(every[0]); e++) {
			struct rt_detect_server_params p = sdefaults();
			struct rt_detect_server d;
			rt_detect_server_init(&d, &p);
			uint64_t last_fed = 0;
			unsigned refusals = 0;
			for (size_t i = 0; i < trace.n; i++) {
				const struct rt_reading *r = &trace.readings[i];
				if (every[e] && last_fed && r->t_us - last_fed < every[e])
					continue;
				last_fed = r->t_us;
				rt_detect_server_feed(&d, r);
				if (d.start_refusals + d.models_refusals == refusals)
					continue;
				refusals = d.start_refusals + d.models_refusals;
				for (size_t b = 0; b < truth.n; b++)
					cr_expect(
					    r->t_us < truth.boundaries[b] ||
					        r->t_us >= truth.boundaries[b] + DM_TOLERANCE_US ||
					        (b + 1 < truth.n &&
					         r->t_us >= truth.boundaries[b + 1]),
					    "%s every %lu us: a refused end %.2f s after round "
					    "%zu's",
					    sshapes[k].name, (unsigned long)every[e],
					    (double)(r->t_us - truth.boundaries[b]) / 1e6, b + 1);
			}
		}
		dm_trace_free(&trace);
		dm_truth_free(&truth);
	}
}
