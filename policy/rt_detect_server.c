#include "rt_detect_server.h"

_Static_assert(RT_DETECT_SERVER_HISTORY <= RT_DETECT_MEDIAN_MAX,
               "a ring whose median is taken is longer than rt_detect_median sorts");
_Static_assert(RT_DETECT_SERVER_LINKS - 1 <= RT_DETECT_MEDIAN_MAX,
               "a chain whose intervals' median is taken is longer than rt_detect_median sorts");

void
rt_detect_server_default_params(struct rt_detect_server_params *params)
{
	/* Activity and quiet are rt_detect's, with its defaults. */
	struct rt_detect_params activity;
	rt_detect_default_params(&activity);
	params->min_interval_us = activity.min_interval_us;
	params->quiet_us = activity.quiet_us;
	params->quiet_permille = activity.quiet_permille;
	params->peak_half_life_us = activity.peak_half_life_us;
	params->quiet_cpu_permille = activity.quiet_cpu_permille;
	params->idle_cpu_permille = activity.idle_cpu_permille;
	params->min_burst_events = 500;
	params->min_share_permille = 250;
	params->gap_us = 1000000;
	params->gap_period_permille = 200;
	params->open_gap_period_permille = 350;
	params->round_permille = 900;
	params->hold_us = 1000000;
	params->rhythm_spread_permille = activity.rhythm_spread_permille;
	params->min_send_bytes = activity.min_round_sent_bytes;
	params->send_gap_us = 2000000;
	params->send_gap_period_permille = 500;
	params->pause_split_ratio = 3;
}

/* What the broadcasts were like, and the lock on them: forgotten from a broadcast starting at
 * t (0: none yet) that has sent `sent` so far. */
static void
rt_detect_server_forget_broadcasts(struct rt_detect_server *d, uint64_t t, uint64_t sent)
{
	d->nsend_intervals = d->next_send_interval = 0;
	d->nsend_totals = d->next_send_total = 0;
	d->nends_between = d->next_ends_between = 0;
	d->locked = false;
	d->send_start_us = t;
	d->send_bytes = sent;
	d->work_ends = 0;
}

/* What the relay was like (see the header), all of it. */
static void
rt_detect_server_forget_relay(struct rt_detect_server *d)
{
	d->relay_bytes = d->relay_events = 0;
	d->relay_sending = false;
	d->nruns = d->next_run = 0;
	d->nchains = 0;
	d->relay_locked = false;
}

/* A restart forgets the readings' rates and the burst under way, not what the rounds are like;
 * a clock gone back, the times of the broadcasts too. */
static void
rt_detect_server_restart(struct rt_detect_server *d, const struct rt_reading *r)
{
	if (r->t_us < d->send_last_us || r->t_us < d->send_quiet_us || r->t_us < d->work_end_us) {
		rt_detect_server_forget_broadcasts(d, 0, 0);
		d->send_last_us = d->send_quiet_us = 0;
		d->work_end_us = 0;
		d->nwork_intervals = d->next_work_interval = 0;
		d->reported_closing = d->reported_open = false;
	}
	rt_detect_server_forget_relay(d);
	d->sent = r->bytes_sent;
	d->last = *r;
	d->in_quiet = true;
	d->quiet_since_us = r->t_us;
	d->quiet_handled = true;
	d->burst_events = 0;
	d->burst_start_us = r->t_us;
	d->pending = false;
	d->last_end_us = 0;
	d->noise_start_us = 0;
	d->noise_interval_us = 0;
	d->noise_in_rhythm = 0;
}

void
rt_detect_server_init(struct rt_detect_server *detect, const struct rt_detect_server_params *params)
{
	struct rt_reading zero = {0};
	/* Nothing learnt: every count, ring and output 0. */
	*detect = (struct rt_detect_server){.params = *params};
	rt_detect_server_restart(detect, &zero);
}

/* Appends to a ring of the last rounds'. */
static void
rt_detect_server_push(uint64_t *ring, unsigned *n, unsigned *next, uint64_t value)
{
	rt_detect_ring_push(ring, RT_DETECT_SERVER_HISTORY, n, next, value);
}

/* See confidence_permille. typical: the typical round's work, 0 when not known. */
static uint32_t
rt_detect_server_confidence(const struct rt_detect_server *d, uint64_t typical, uint64_t t)
{
	uint64_t reached = typical ? rt_detect_scale(d->round_work, 1000, typical) : 500;
	uint64_t phase =
	    d->period_us ? rt_detect_scale(t - d->boundary_us, 1000, d->period_us) : 1000;
	uint64_t off = phase > 1000 ? phase - 1000 : 1000 - phase;
	uint64_t phase_score = !d->period_us ? 500 : off >= 1000 ? 0 : 1000 - off;
	return (uint32_t)(((reached > 1000 ? 1000 : reached) + phase_score) / 2);
}

/* The j-th last value of a ring of RT_DETECT_SERVER_HISTORY whose next slot is next (0: the
 * last). */
static uint64_t
rt_detect_server_back(const uint64_t *ring, unsigned next, unsigned j)
{
	return ring[(next + RT_DETECT_SERVER_HISTORY - 1 - j) % RT_DETECT_SERVER_HISTORY];
}

/* The median of the last RT_DETECT_LOCK_ROUNDS values of a ring of RT_DETECT_SERVER_HISTORY, or 0
 * when they are fewer or not even (rt_detect_alike). */
static uint64_t
rt_detect_server_even(const uint64_t *ring, unsigned n, unsigned next, uint32_t spread_permille)
{
	uint64_t last[RT_DETECT_LOCK_ROUNDS];
	if (n < RT_DETECT_LOCK_ROUNDS)
		return 0;
	for (unsigned j = 0; j < RT_DETECT_LOCK_ROUNDS; j++)
		last[j] = rt_detect_server_back(ring, next, j);
	return rt_detect_alike(last, RT_DETECT_LOCK_ROUNDS, spread_permille)
	           ? rt_detect_median(last, RT_DETECT_LOCK_ROUNDS)
	           : 0;
}

/* The broadcasts' period: the median of the intervals between their last starts, 0 while fewer
 * than RT_DETECT_LOCK_ROUNDS are known. */
static uint64_t
rt_detect_server_send_period(const struct rt_detect_server *d)
{
	return d->nsend_intervals < RT_DETECT_LOCK_ROUNDS
	           ? 0
	           : rt_detect_median(d->send_intervals_us, d->nsend_intervals);
}

/* The readings further apart than this between two sends of a model are two broadcasts (see the
 * header). */
static uint64_t
rt_detect_server_send_gap(const struct rt_detect_server *d)
{
	uint64_t period = rt_detect_server_send_period(d);
	return period ? rt_detect_scale(period, d->params.send_gap_period_permille, 1000)
	              : d->params.send_gap_us;
}

/* Whether a broadcast goes on at now: its last send came within the gap. */
static bool
rt_detect_server_in_broadcast(const struct rt_detect_server *d, uint64_t now)
{
	return d->send_last_us && now - d->send_last_us < rt_detect_server_send_gap(d);
}

/* Whether a round's end at now would be the one the broadcast under way closes: it goes on and
 * began less than the gap ago (the rounds came faster and their broadcasts fused: an end later
 * in it is the next round's). */
static bool
rt_detect_server_closing(const struct rt_detect_server *d, uint64_t now)
{
	return rt_detect_server_in_broadcast(d, now) &&
	       now - d->send_start_us < rt_detect_server_send_gap(d);
}

/* Whether the broadcasts mark the rounds at now: locked on their rhythm, and the next one not
 * overdue (none began for a period and its spread: they stopped, or one never ends). */
static bool
rt_detect_server_broadcasts_mark(const struct rt_detect_server *d, uint64_t now)
{
	return d->locked && now - d->send_start_us <
	                        rt_detect_scale(rt_detect_server_send_period(d),
	                                        1000 + d->params.rhythm_spread_permille, 1000);
}

/* The k-th oldest of the relay's last runs. */
static const struct rt_detect_server_run *
rt_detect_server_run_at(const struct rt_detect_server *d, unsigned k)
{
	return &d->runs[(d->next_run + RT_DETECT_SERVER_RUNS - d->nruns + k) %
	                RT_DETECT_SERVER_RUNS];
}

/* A chain's period: the median of its intervals, 0 while it has none. */
static uint64_t
rt_detect_server_chain_period(const struct rt_detect_server_chain *c)
{
	uint64_t intervals[RT_DETECT_SERVER_LINKS - 1];
	if (c->n < 2)
		return 0;
	for (unsigned i = 0; i + 1 < c->n; i++)
		intervals[i] = c->at_us[i + 1] - c->at_us[i];
	return rt_detect_median(intervals, c->n - 1);
}

/* Whether the relay's rounds are the rounds at now: locked, and no lapse (see the header). */
static bool
rt_detect_server_relay_marks(const struct rt_detect_server *d, uint64_t now)
{
	if (!d->relay_locked)
		return false;
	const struct rt_detect_server_chain *c = &d->chains[0];
	return now - c->at_us[c->n - 1] <=
	       rt_detect_scale(rt_detect_server_chain_period(c), 2500, 1000);
}

/* Whether the round whose end would be reported at now has had its end reported: the one the
 * broadcast under way closes, or the one since the last ended. Where the broadcasts do not
 * mark the rounds, nothing tells the rounds apart. */
static bool
rt_detect_server_reported_this_round(const struct rt_detect_server *d, uint64_t now)
{
	if (!rt_detect_server_broadcasts_mark(d, now))
		return false;
	if (rt_detect_server_closing(d, now))
		return d->reported_closing;
	return d->reported_open;
}

/* A round ends at t (the start of the quiet after the burst that ended it, or the broadcast
 * that followed it), seen at now; reported unless refused (start-up's, see the header), which
 * the rhythm still learns from. */
static enum rt_detect_result
rt_detect_server_count(struct rt_detect_server *d, uint64_t t, uint64_t now, bool refused)
{
	d->confidence_permille =
	    rt_detect_server_confidence(d, rt_detect_median(d->works, d->nworks), t);
	if (d->boundary_us && t > d->boundary_us)
		rt_detect_server_push(d->intervals_us, &d->nintervals, &d->next_interval,
		                      t - d->boundary_us);
	d->period_us = d->nintervals >= RT_DETECT_LOCK_ROUNDS
	                   ? rt_detect_median(d->intervals_us, d->nintervals)
	                   : 0;
	d->boundary_us = t;
	if (rt_detect_server_closing(d, now))
		d->reported_closing = true;
	else
		d->reported_open = true;
	if (refused)
		return RT_DETECT_NOTHING;
	d->boundaries++;
	return RT_DETECT_BOUNDARY;
}

/* Whether the work's end at t is start-up's (see the header): in a process that has sent
 * anything, before the first round reported while no model went out, or the burst that ended
 * was the one that sent the first models (where at most RT_DETECT_LOCK_ROUNDS ends were
 * reported before them: clients that join slowly), for the first RT_DETECT_LOCK_ROUNDS such
 * ends of each kind. */
static bool
rt_detect_server_start_up_end(struct rt_detect_server *d, uint64_t t)
{
	if (!rt_detect_has_a_peer(d->sent))
		return false;
	unsigned *refusals = &d->start_refusals;
	if (d->first_models_us) {
		refusals = &d->models_refusals;
		if (!d->models_in_start_up || d->send_last_us < d->first_models_us ||
		    t < d->send_last_us || t - d->send_last_us > d->params.quiet_us ||
		    t - d->first_models_us >= d->params.send_gap_us)
			return false;
	} else if (d->boundaries) {
		return false;
	}
	if (*refusals >= RT_DETECT_LOCK_ROUNDS)
		return false;
	(*refusals)++;
	return true;
}

/* The work ended a round at t, seen at now: counted unless this round's end already was. Its
 * rhythm is kept apart from the broadcasts', whose ends it does not count. */
static enum rt_detect_result
rt_detect_server_end(struct rt_detect_server *d, uint64_t t, uint64_t now)
{
	if (d->work_end_us && t > d->work_end_us)
		rt_detect_server_push(d->work_intervals_us, &d->nwork_intervals,
		                      &d->next_work_interval, t - d->work_end_us);
	d->work_end_us = t;
	d->work_ends++;
	d->round_ended = true;
	d->pending = false;
	if (rt_detect_server_reported_this_round(d, now) || rt_detect_server_relay_marks(d, now))
		return RT_DETECT_NOTHING;
	return rt_detect_server_count(d, t, now, rt_detect_server_start_up_end(d, t));
}

/* Notes when the first models went out, r having sent since `before` (see the header): in one
 * reading of min_send_bytes, or in readings that sent as much in all within quiet_us of the
 * first of them (small models, one spread thinly). */
static void
rt_detect_server_first_models(struct rt_detect_server *d, uint64_t before,
                              const struct rt_reading *r)
{
	if (d->first_models_us || before == RT_TRACE_UNKNOWN || r->bytes_sent == RT_TRACE_UNKNOWN ||
	    r->bytes_sent <= before)
		return;
	/* Within quiet_us of the first: a trickle over seconds (start-up's chatter, heartbeats)
	 * is no model. */
	if (r->t_us < d->start_sent_us || r->t_us - d->start_sent_us >= d->params.quiet_us) {
		d->start_sent = 0;
		d->start_sent_us = r->t_us;
	}
	d->start_sent += r->bytes_sent - before;
	if (d->start_sent < d->params.min_send_bytes)
		return;
	d->first_models_us = r->t_us;
	/* More ends reported before them than start-up's refusals let through: the rounds were
	 * under way, their models under min_send_bytes until now, and this reading is theirs (two
	 * clients that fetched at once, one that joined): their rhythm stays, their end counts. */
	d->models_in_start_up = d->boundaries <= RT_DETECT_LOCK_ROUNDS;
	if (!d->models_in_start_up)
		return;
	/* The rounds begin here: start-up's rhythm is none of theirs. */
	d->nintervals = d->next_interval = 0;
	d->npauses = d->next_pause = 0;
	d->period_us = 0;
}

/* Follows the broadcasts (see the header). Returns true when r begins one that reports the
 * round's end missed before it. */
static bool
rt_detect_server_broadcast(struct rt_detect_server *d, const struct rt_reading *r)
{
	const struct rt_detect_server_params *p = &d->params;
	uint64_t before = d->sent, t = r->t_us;
	d->sent = r->bytes_sent;
	rt_detect_server_first_models(d, before, r);
	if (before == RT_TRACE_UNKNOWN || r->bytes_sent == RT_TRACE_UNKNOWN ||
	    r->bytes_sent < before || r->bytes_sent - before < p->min_send_bytes) {
		d->send_quiet_us = t;
		return false;
	}
	/* A new broadcast after readings that sent no model for half the gap at least: a reading
	 * late by seconds (the worker stalled) splits none. */
	uint32_t spread = p->rhythm_spread_permille;
	uint64_t gap = rt_detect_server_send_gap(d), sent = r->bytes_sent - before;
	uint64_t period = rt_detect_server_send_period(d);
	/* After a round's end the work found in the broadcast under way, the shorter gap of a
	 * period not yet known parts them too: the rounds came faster than the period says. */
	if (d->work_ends && gap > p->send_gap_us)
		gap = p->send_gap_us;
	bool starts =
	    !d->send_last_us || (t - d->send_last_us >= gap && d->send_quiet_us > d->send_last_us &&
	                         d->send_quiet_us - d->send_last_us >= gap / 2);
	/* One that goes on past a period and its spread is none (the rounds came faster, their
	 * broadcasts fused, or a stream): what the broadcasts were like is forgotten, and one
	 * starts here. */
	bool outlasted = !starts && period &&
	                 t - d->send_start_us > rt_detect_scale(period, 1000 + spread, 1000);
	d->send_last_us = t;
	if (outlasted) {
		rt_detect_server_forget_broadcasts(d, t, sent);
		return false;
	}
	if (!starts) {
		d->send_bytes += sent;
		return false;
	}
	if (d->send_start_us) {
		rt_detect_server_push(d->send_intervals_us, &d->nsend_intervals,
		                      &d->next_send_interval, t - d->send_start_us);
		rt_detect_server_push(d->send_totals, &d->nsend_totals, &d->next_send_total,
		                      d->send_bytes);
		rt_detect_server_push(d->ends_between, &d->nends_between, &d->next_ends_between,
		                      d->work_ends);
	}
	d->work_ends = 0;
	d->send_bytes = sent;
	d->send_start_us = t;
	/* Locked while the last broadcasts came evenly, each sent about as much (a model to each
	 * client: within half and one and a half times their median), the work found at most one
	 * end between each two of them, and its own ends, where they are even too, keep the same
	 * period (sends of something else, a second broadcast a round, a rhythm of another period:
	 * the work is not fooled by them). */
	period = rt_detect_server_even(d->send_intervals_us, d->nsend_intervals,
	                               d->next_send_interval, spread);
	bool one_each = d->nends_between >= RT_DETECT_LOCK_ROUNDS;
	for (unsigned j = 0; one_each && j < RT_DETECT_LOCK_ROUNDS; j++)
		one_each = rt_detect_server_back(d->ends_between, d->next_ends_between, j) <= 1;
	uint64_t alike =
	    rt_detect_server_even(d->send_totals, d->nsend_totals, d->next_send_total, 500);
	uint64_t work = rt_detect_server_even(d->work_intervals_us, d->nwork_intervals,
	                                      d->next_work_interval, spread);
	/* A rhythm the work has not kept for two of its periods is stale: its rounds came faster
	 * and fused into one activity, or stopped. */
	if (work && t - d->work_end_us > 2 * work)
		work = 0;
	uint64_t off = work > period ? work - period : period - work;
	d->locked =
	    period && alike && one_each && (!work || off <= rt_detect_scale(period, spread, 1000));
	d->reported_closing = d->reported_open;
	d->reported_open = false;
	bool worked = d->worked;
	d->worked = false;
	return d->locked && !d->reported_closing && worked;
}

/* Whether the runs from the k-th oldest up to an onset at t are a relay's round (see the
 * header): its half in *half, and the start of its updates' half in *split_us. period: the
 * chain's that ends at the k-th, 0 while not known. */
static bool
rt_detect_server_halves(struct rt_detect_server *d, unsigned k, uint64_t t, uint64_t period,
                        uint64_t *half, uint64_t *split_us, uint64_t *pause_us)
{
	if (k + 2 > d->nruns)
		return false;
	const struct rt_detect_server_run *a = rt_detect_server_run_at(d, k);
	if (period && 2 * (t - a->start_us) < period)
		return false;
	uint64_t longest = 0;
	unsigned split = k + 1;
	for (unsigned i = k + 1; i < d->nruns; i++) {
		uint64_t pause = rt_detect_server_run_at(d, i)->start_us -
		                 rt_detect_server_run_at(d, i - 1)->end_us;
		if (pause >= longest) {
			longest = pause;
			split = i;
		}
	}
	if (2 * longest < 3 * (t - rt_detect_server_run_at(d, d->nruns - 1)->end_us))
		return false;
	/* No pause within the span but its split comes near it, nor any before it among the last
	 * onsets is much longer: a span from a late update to an early one is no round. */
	unsigned first =
	    d->nruns > RT_DETECT_SERVER_CANDIDATES ? d->nruns - RT_DETECT_SERVER_CANDIDATES : 0;
	for (unsigned i = first + 1; i < d->nruns; i++) {
		uint64_t pause = rt_detect_server_run_at(d, i)->start_us -
		                 rt_detect_server_run_at(d, i - 1)->end_us;
		if (i > k ? i != split && 2 * longest < 3 * pause : 2 * pause > 3 * longest)
			return false;
	}
	const struct rt_detect_server_run *s = rt_detect_server_run_at(d, split);
	uint64_t out = s->bytes - a->bytes, in = d->relay_bytes - s->bytes;
	if ((out > in ? out - in : in - out) > (d->relay_bytes - a->bytes) / 64)
		return false;
	/* The updates received, not passed on: their work lies in the pause before them. */
	uint64_t received = s->events - rt_detect_server_run_at(d, split - 1)->end_events;
	uint64_t passed = d->relay_events - s->events;
	if (received >= passed)
		return false;
	*half = out;
	*split_us = s->start_us;
	*pause_us = longest;
	return true;
}

/* A chain's typical half: the median of its last three rounds' (fewer while it has fewer). */
static uint64_t
rt_detect_server_typical_half(const struct rt_detect_server_chain *c)
{
	unsigned n = c->n < 2 ? 0 : c->n - 1 < 3 ? c->n - 1 : 3;
	return n ? rt_detect_median(&c->halves[c->n - n], n) : 0;
}

/* A chain's clients' training: the median of the pauses between its rounds' halves, where
 * known (a round found from two halves alone has none). */
static uint64_t
rt_detect_server_training(const struct rt_detect_server_chain *c)
{
	uint64_t pauses[RT_DETECT_SERVER_LINKS];
	unsigned n = 0;
	for (unsigned i = 0; i < c->n; i++)
		if (c->pauses_us[i])
			pauses[n++] = c->pauses_us[i];
	return n ? rt_detect_median(pauses, n) : 0;
}

/* Whether, the chain's last halves even, the bytes sent since its end are two of them. */
static bool
rt_detect_server_even_halves(const struct rt_detect_server *d,
                             const struct rt_detect_server_chain *c, uint64_t *half)
{
	unsigned n = c->n - 1 < 3 ? c->n - 1 : 3;
	if (n < 2)
		return false;
	uint64_t typical = rt_detect_server_typical_half(c);
	uint64_t tolerance = 2 * typical / 64;
	for (unsigned i = c->n - n; i < c->n; i++)
		if ((c->halves[i] > typical ? c->halves[i] - typical : typical - c->halves[i]) >
		    tolerance)
			return false;
	uint64_t span = d->relay_bytes - c->bytes[c->n - 1];
	if ((span > 2 * typical ? span - 2 * typical : 2 * typical - span) > tolerance)
		return false;
	*half = typical;
	return true;
}

/* Appends a round ending at t, after bytes, of the given half and training pause to a chain (the
 * oldest dropped). */
static void
rt_detect_server_link(struct rt_detect_server_chain *c, uint64_t t, uint64_t bytes, uint64_t half,
                      uint64_t pause_us)
{
	if (c->n == RT_DETECT_SERVER_LINKS) {
		for (unsigned i = 0; i + 1 < c->n; i++) {
			c->at_us[i] = c->at_us[i + 1];
			c->bytes[i] = c->bytes[i + 1];
			c->halves[i] = c->halves[i + 1];
			c->pauses_us[i] = c->pauses_us[i + 1];
		}
		c->n--;
	}
	c->at_us[c->n] = t;
	c->bytes[c->n] = bytes;
	c->halves[c->n] = half;
	c->pauses_us[c->n] = pause_us;
	c->n++;
}

/* Whether two durations are even: the shorter at least half the longer. */
static bool
rt_detect_server_halfway(uint64_t one, uint64_t two)
{
	return 2 * (one < two ? one : two) >= (one < two ? two : one);
}

/* Whether a chain's last two rounds are even: their lengths, and the clients' training in
 * them (a span inside a round, from a late model to an early update, is no round's length). */
static bool
rt_detect_server_chain_locks(const struct rt_detect_server_chain *c)
{
	if (c->n < 3)
		return false;
	return rt_detect_server_halfway(c->at_us[c->n - 2] - c->at_us[c->n - 3],
	                                c->at_us[c->n - 1] - c->at_us[c->n - 2]) &&
	       rt_detect_server_halfway(c->pauses_us[c->n - 2], c->pauses_us[c->n - 1]);
}

/* The relay's runs: the index of the one that begins at t, or nruns. */
static unsigned
rt_detect_server_run_from(const struct rt_detect_server *d, uint64_t t)
{
	unsigned k = 0;
	while (k < d->nruns && rt_detect_server_run_at(d, k)->start_us != t)
		k++;
	return k;
}

/* Keeps a new chain: in a free slot, else in place of the oldest that can grow no more (its end
 * left the last RT_DETECT_SERVER_CANDIDATES onsets), else of the oldest of the shortest where
 * it is no longer than the new one. Spans inside rounds begin a chain at most onsets: they
 * must not push out a round's chain before its next round ends. */
static void
rt_detect_server_keep_chain(struct rt_detect_server *d, const struct rt_detect_server_chain *c)
{
	if (d->nchains < RT_DETECT_SERVER_CHAINS) {
		d->chains[d->nchains++] = *c;
		return;
	}
	uint64_t oldest =
	    d->nruns > RT_DETECT_SERVER_CANDIDATES
	        ? rt_detect_server_run_at(d, d->nruns - RT_DETECT_SERVER_CANDIDATES)->start_us
	        : 0;
	unsigned out = d->nchains;
	for (unsigned j = 0; out == d->nchains && j < d->nchains; j++)
		if (d->chains[j].at_us[d->chains[j].n - 1] < oldest)
			out = j;
	if (out == d->nchains) {
		out = 0;
		for (unsigned j = 1; j < d->nchains; j++)
			if (d->chains[j].n < d->chains[out].n)
				out = j;
		if (d->chains[out].n > c->n)
			return;
	}
	for (unsigned j = out; j + 1 < d->nchains; j++)
		d->chains[j] = d->chains[j + 1];
	d->chains[d->nchains - 1] = *c;
}

/* The chain that ends at the run a: its index, or nchains. */
static unsigned
rt_detect_server_chain_to(const struct rt_detect_server *d, const struct rt_detect_server_run *a)
{
	unsigned j = 0;
	while (j < d->nchains && (d->chains[j].at_us[d->chains[j].n - 1] != a->start_us ||
	                          d->chains[j].bytes[d->chains[j].n - 1] != a->bytes))
		j++;
	return j;
}

/* Forgets the chains of one span that began at or after from_us: a span found from there holds
 * them, and they never grew (nested inside a round, they cannot). */
static void
rt_detect_server_drop_nested(struct rt_detect_server *d, uint64_t from_us)
{
	unsigned kept = 0;
	for (unsigned j = 0; j < d->nchains; j++)
		if (d->chains[j].n > 2 || d->chains[j].at_us[0] < from_us)
			d->chains[kept++] = d->chains[j];
	d->nchains = kept;
}

/* An onset at t (see the header). Returns true when it ends a relay's round that is to be
 * reported. */
static bool
rt_detect_server_relay_onset(struct rt_detect_server *d, uint64_t t)
{
	uint64_t half, split_us, pause_us = 0;
	if (d->relay_locked) {
		struct rt_detect_server_chain *c = &d->chains[0];
		uint64_t period = rt_detect_server_chain_period(c);
		unsigned k = rt_detect_server_run_from(d, c->at_us[c->n - 1]);
		bool found = k < d->nruns &&
		             rt_detect_server_halves(d, k, t, period, &half, &split_us, &pause_us);
		if (found || (2 * (t - c->at_us[c->n - 1]) >= period &&
		              rt_detect_server_even_halves(d, c, &half))) {
			rt_detect_server_link(c, t, d->relay_bytes, half, pause_us);
			return true;
		}
		/* A round whose halves differ (a client dropped out, a straggler) leaves the
		 * chain's end stale: it picks up at a later onset whose span to t is a round. */
		unsigned first = d->nruns > RT_DETECT_SERVER_CANDIDATES
		                     ? d->nruns - RT_DETECT_SERVER_CANDIDATES
		                     : 0;
		uint64_t typical = rt_detect_server_typical_half(c), trained = 0;
		uint64_t training = rt_detect_server_training(c);
		for (unsigned j = k < d->nruns && k + 1 > first ? k + 1 : first;
		     4 * (t - c->at_us[c->n - 1]) > 5 * period && j < d->nruns; j++) {
			const struct rt_detect_server_run *a = rt_detect_server_run_at(d, j);
			uint64_t pause =
			    j ? a->start_us - rt_detect_server_run_at(d, j - 1)->end_us : 0;
			if (pause > trained)
				trained = pause;
			if (2 * trained < training || 2 * (t - a->start_us) > 3 * period ||
			    !rt_detect_server_halves(d, j, t, period, &half, &split_us,
			                             &pause_us) ||
			    2 * half <= typical)
				continue;
			uint64_t tail = t - rt_detect_server_run_at(d, d->nruns - 1)->end_us,
			         within = 0;
			for (unsigned i = j + 1; i < d->nruns; i++) {
				const struct rt_detect_server_run *r =
				    rt_detect_server_run_at(d, i);
				uint64_t p =
				    r->start_us - rt_detect_server_run_at(d, i - 1)->end_us;
				if (r->start_us > split_us && p > within)
					within = p;
			}
			if (tail < within)
				continue;
			rt_detect_server_link(c, a->start_us, a->bytes, half, pause_us);
			rt_detect_server_link(c, t, d->relay_bytes, half, pause_us);
			return !(d->boundaries && d->boundary_us >= split_us);
		}
		if (t - c->at_us[c->n - 1] <= rt_detect_scale(period, 2500, 1000))
			return false;
		d->relay_locked = false;
		d->nchains = 0;
	}
	/* A span that ends here holds every later one that does (from a later model to an earlier
	 * update, nested inside the round): one new chain at most, from the earliest. */
	struct rt_detect_server_chain fresh = {.n = 0};
	unsigned first =
	    d->nruns > RT_DETECT_SERVER_CANDIDATES ? d->nruns - RT_DETECT_SERVER_CANDIDATES : 0;
	for (unsigned k = d->nruns; k-- > first;) {
		const struct rt_detect_server_run *a = rt_detect_server_run_at(d, k);
		unsigned j = rt_detect_server_chain_to(d, a);
		uint64_t period = j < d->nchains ? rt_detect_server_chain_period(&d->chains[j]) : 0;
		if (!rt_detect_server_halves(d, k, t, period, &half, &split_us, &pause_us))
			continue;
		rt_detect_server_drop_nested(d, a->start_us);
		j = rt_detect_server_chain_to(d, a);
		struct rt_detect_server_chain *c = j < d->nchains ? &d->chains[j] : &fresh;
		if (c == &fresh) {
			fresh.n = 0;
			rt_detect_server_link(c, a->start_us, a->bytes, 0, 0);
		}
		rt_detect_server_link(c, t, d->relay_bytes, half, pause_us);
		if (rt_detect_server_chain_locks(c)) {
			d->chains[0] = *c;
			d->nchains = 1;
			d->relay_locked = true;
			/* The hand-over: a round's end reported since its updates began was this
			 * one. */
			return !(d->boundaries && d->boundary_us >= split_us);
		}
	}
	if (fresh.n)
		rt_detect_server_keep_chain(d, &fresh);
	return false;
}

/* Follows the relay (see the header), before the broadcasts see r. Returns true when r ends a
 * relay's round that is to be reported. */
static bool
rt_detect_server_relay(struct rt_detect_server *d, const struct rt_reading *r)
{
	const struct rt_reading *last = &d->last;
	uint64_t before = d->sent;
	if (before == RT_TRACE_UNKNOWN || r->bytes_sent == RT_TRACE_UNKNOWN ||
	    r->bytes_sent < before) {
		rt_detect_server_forget_relay(d);
		return false;
	}
	uint64_t events_before = d->relay_events, sent = r->bytes_sent - before;
	d->relay_events += (r->allocations - last->allocations) + (r->frees - last->frees);
	bool sending = sent >= d->params.min_send_bytes;
	bool ends = sending && !d->relay_sending && rt_detect_server_relay_onset(d, r->t_us);
	if (sending && d->relay_sending && d->nruns) {
		struct rt_detect_server_run *run =
		    &d->runs[(d->next_run + RT_DETECT_SERVER_RUNS - 1) % RT_DETECT_SERVER_RUNS];
		run->end_us = r->t_us;
		run->end_bytes = d->relay_bytes + sent;
		run->end_events = d->relay_events;
	} else if (sending) {
		d->runs[d->next_run] = (struct rt_detect_server_run){
		    .start_us = r->t_us,
		    .end_us = r->t_us,
		    .bytes = d->relay_bytes,
		    .end_bytes = d->relay_bytes + sent,
		    .events = events_before,
		    .end_events = d->relay_events,
		};
		d->next_run = (d->next_run + 1) % RT_DETECT_SERVER_RUNS;
		if (d->nruns < RT_DETECT_SERVER_RUNS)
			d->nruns++;
	}
	if (sending)
		d->relay_bytes += sent;
	d->relay_sending = sending;
	return ends;
}

/* A round's activity is over: its work and heaviest burst join the last rounds' (see the
 * header). */
static void
rt_detect_server_close_round(struct rt_detect_server *d)
{
	uint64_t heaviest = 0, work = 0;
	unsigned at = 0;
	for (unsigned i = 0; i < d->nround_bursts; i++)
		if (d->round_bursts[i] > heaviest) {
			heaviest = d->round_bursts[i];
			at = i;
		}
	if (!heaviest)
		return;
	uint64_t noise = rt_detect_scale(heaviest, d->params.min_share_permille, 1000);
	for (unsigned i = 0; i <= at; i++)
		if (d->round_bursts[i] >= noise)
			work += d->round_bursts[i];
	rt_detect_server_push(d->works, &d->nworks, &d->next_work, work);
	rt_detect_server_push(d->heavies, &d->nheavies, &d->next_heavy, heaviest);
}

/* Whether a burst of weight w is noise. It is judged against the typical round's heaviest
 * burst; while fewer rounds than RT_DETECT_LOCK_ROUNDS make it, against no more than the
 * heaviest of the last bursts: a first round that was an outlier (start-up's end, a checkpoint
 * read) would otherwise make every later burst noise, and no round would close again. */
static bool
rt_detect_server_is_noise(const struct rt_detect_server *d, uint64_t w)
{
	uint64_t reference = 0;
	for (unsigned i = 0; d->nheavies < RT_DETECT_LOCK_ROUNDS && i < d->nrecent; i++)
		if (d->recent[i] > reference)
			reference = d->recent[i];
	uint64_t typical_heaviest = rt_detect_median(d->heavies, d->nheavies);
	if (d->nheavies && (d->nheavies >= RT_DETECT_LOCK_ROUNDS || typical_heaviest < reference))
		reference = typical_heaviest;
	return rt_detect_scale(w, 1000, 1) <
	       rt_detect_scale(reference, d->params.min_share_permille, 1);
}

/* The largest integer whose square is at most v. */
static uint64_t
rt_detect_server_isqrt(uint64_t v)
{
	uint64_t low = 0, high = v < UINT32_MAX ? v : UINT32_MAX;
	while (low < high) {
		uint64_t mid = low + (high - low + 1) / 2;
		if (mid * mid <= v)
			low = mid;
		else
			high = mid - 1;
	}
	return low;
}

/* Where the last pauses fall in two groups (see the header): the pause between them, the
 * geometric mean of the short group's longest and the long group's shortest; 0 where no two
 * neighbours in order differ by pause_split_ratio, fewer than two of the long group are even,
 * or a pause of the short group follows a burst no lighter than one before the long group's,
 * less the spread. The widest such step is taken. */
static uint64_t
rt_detect_server_pause_split(const struct rt_detect_server *d)
{
	uint64_t sorted[RT_DETECT_SERVER_PAUSES];
	unsigned n = d->npauses;
	rt_detect_sort(d->pauses_us, n, sorted);
	uint64_t split = 0, short_one = 0, long_one = 0;
	uint32_t spread = d->params.rhythm_spread_permille;
	for (unsigned i = 1; i < n; i++) {
		uint64_t below = sorted[i - 1], above = sorted[i];
		if (!below || above < rt_detect_scale(below, d->params.pause_split_ratio, 1) ||
		    (long_one && above * short_one <= long_one * below))
			continue;
		uint64_t median = sorted[i + (n - i) / 2];
		unsigned even = 0;
		for (unsigned k = i; k < n; k++)
			even += sorted[k] >= rt_detect_scale(median, 1000 - spread, 1000) &&
			        sorted[k] <= rt_detect_scale(median, 1000 + spread, 1000);
		if (even < 2)
			continue;
		/* The training follows the round's heaviest burst (the aggregation): where a pause
		 * of the shorter group follows a burst as heavy as one of the longer's, the longer
		 * is no training but a checkpoint, an evaluation or a straggler every few rounds.
		 */
		uint64_t short_heaviest = 0, long_lightest = UINT64_MAX;
		for (unsigned k = 0; k < n; k++) {
			uint64_t weight = d->pause_after[k];
			if (d->pauses_us[k] <= below)
				short_heaviest = weight > short_heaviest ? weight : short_heaviest;
			else
				long_lightest = weight < long_lightest ? weight : long_lightest;
		}
		if (rt_detect_scale(short_heaviest, 1000, 1) >=
		    rt_detect_scale(long_lightest, 1000 - spread, 1))
			continue;
		short_one = below;
		long_one = above;
		split = rt_detect_server_isqrt(below * above);
	}
	return split;
}

/* The pause before the burst just over, from the end of the last one that was no noise:
 * capped at UINT32_MAX us (71 minutes), so that two multiply without overflow. */
static uint64_t
rt_detect_server_pause(const struct rt_detect_server *d)
{
	uint64_t pause = d->burst_start_us - d->last_end_us;
	return pause < UINT32_MAX ? pause : UINT32_MAX;
}

/* The pause that parts the last pauses' two groups, once the period is known; 0 otherwise. */
static uint64_t
rt_detect_server_split(const struct rt_detect_server *d)
{
	return d->period_us && d->params.pause_split_ratio ? rt_detect_server_pause_split(d) : 0;
}

/* The idle gap that ends an activity: gap_us, share (permille) of the period, or the pauses'
 * split (rt_detect_server_split), whichever is longest. */
static uint64_t
rt_detect_server_gap(const struct rt_detect_server *d, uint32_t share, uint64_t split)
{
	uint64_t gap = rt_detect_scale(d->period_us, share, 1000);
	if (split > gap)
		gap = split;
	return gap < d->params.gap_us ? d->params.gap_us : gap;
}

/* The burst just over, of weight w, was noise: unless it is noise to the noise too, it joins the
 * noise's activity under way or begins one (see the header). Returns true when the rounds
 * shrank: what the typical round was is forgotten, and a round's activity may begin with this
 * burst. */
static bool
rt_detect_server_noise_recurs(struct rt_detect_server *d, uint64_t w)
{
	const struct rt_detect_server_params *p = &d->params;
	uint64_t share = p->min_share_permille;
	if (rt_detect_scale(w, 1000000, 1) <
	    rt_detect_scale(rt_detect_median(d->heavies, d->nheavies), share * share, 1))
		return false;
	uint64_t start = d->burst_start_us, last_end = d->noise_end_us;
	d->noise_end_us = d->quiet_since_us;
	if (d->noise_start_us &&
	    start - last_end <
	        rt_detect_server_gap(d, p->open_gap_period_permille, rt_detect_server_split(d)))
		return false;
	/* Evenly spaced, each interval within the spread of the one before, and none shorter than
	 * a round by the period learnt so far (the median of the intervals between round ends,
	 * before RT_DETECT_LOCK_ROUNDS of them too: a lock can come sooner). */
	uint64_t interval = d->noise_start_us ? start - d->noise_start_us : 0;
	uint64_t before = d->noise_interval_us;
	uint64_t off = interval > before ? interval - before : before - interval;
	uint64_t shortest = rt_detect_scale(rt_detect_median(d->intervals_us, d->nintervals),
	                                    1000 - p->rhythm_spread_permille, 1000);
	bool in_rhythm = interval && before &&
	                 off <= rt_detect_scale(before, p->rhythm_spread_permille, 1000) &&
	                 interval >= shortest;
	d->noise_in_rhythm = in_rhythm ? d->noise_in_rhythm + 1 : 0;
	d->noise_interval_us = interval;
	d->noise_start_us = start;
	if (d->noise_in_rhythm + 1 < RT_DETECT_LOCK_ROUNDS)
		return false;
	d->nworks = d->next_work = 0;
	d->nheavies = d->next_heavy = 0;
	d->in_round = false;
	d->pending = false;
	d->last_end_us = last_end;
	d->noise_start_us = 0;
	d->noise_interval_us = 0;
	d->noise_in_rhythm = 0;
	return true;
}

/* Whether the burst just over, of weight w, shows that the rounds came faster (see the header):
 * the activity under way, whose round ended two periods ago, gathered a whole round's work
 * again after a pause of gap_us or more that parted nothing only because the period's share of
 * it, `gap`, is longer (not the pauses' `split`, which would have kept it too). */
static bool
rt_detect_server_came_faster(const struct rt_detect_server *d, uint64_t w, uint64_t gap,
                             uint64_t split)
{
	const struct rt_detect_server_params *p = &d->params;
	uint64_t pause = d->burst_start_us - d->last_end_us;
	if (!d->in_round || !d->round_ended || !d->period_us || !d->nworks || !d->last_end_us ||
	    !d->work_end_us || d->burst_start_us < d->last_end_us || pause < p->gap_us ||
	    pause >= gap || pause < split || d->burst_start_us < d->work_end_us ||
	    d->burst_start_us - d->work_end_us < 2 * d->period_us)
		return false;
	return rt_detect_scale(d->work_since_end + w, 1000, 1) >=
	       rt_detect_scale(rt_detect_median(d->works, d->nworks), p->round_permille, 1);
}

/* A confirmed quiet period after a burst of at least min_burst_events (see the header). */
static enum rt_detect_result
rt_detect_server_decide(struct rt_detect_server *d)
{
	const struct rt_detect_server_params *p = &d->params;
	uint64_t w = d->burst_events, t = d->quiet_since_us;
	if (!d->seen_start_up) {
		d->seen_start_up = true;
		d->last_end_us = t;
		return RT_DETECT_NOTHING;
	}
	bool noise = rt_detect_server_is_noise(d, w);
	rt_detect_ring_push(d->recent, RT_DETECT_SERVER_RECENT, &d->nrecent, &d->next_recent, w);
	if (noise && (!rt_detect_server_noise_recurs(d, w) || rt_detect_server_is_noise(d, w)))
		return RT_DETECT_NOTHING;
	d->noise_start_us = 0;
	d->noise_interval_us = 0;
	d->noise_in_rhythm = 0;
	d->worked = true;
	/* A round's activity in which no round ended yet still waits for an update: a pause in it
	 * (a slow client) closes it only when it is a longer share of the period. */
	uint32_t share = d->in_round && !d->round_ended && d->nworks ? p->open_gap_period_permille
	                                                             : p->gap_period_permille;
	uint64_t split = rt_detect_server_split(d);
	uint64_t gap = rt_detect_server_gap(d, share, split);
	if (rt_detect_server_came_faster(d, w, gap, split)) {
		d->nintervals = d->next_interval = 0;
		d->period_us = 0;
		d->npauses = d->next_pause = 0;
		gap = rt_detect_server_gap(d, share, 0);
	}
	if (d->last_end_us && d->burst_start_us > d->last_end_us) {
		d->pause_after[d->next_pause] = d->last_weight;
		rt_detect_ring_push(d->pauses_us, RT_DETECT_SERVER_PAUSES, &d->npauses,
		                    &d->next_pause, rt_detect_server_pause(d));
	}
	d->last_weight = w;
	if (d->last_end_us && d->burst_start_us - d->last_end_us >= gap) {
		if (d->in_round)
			rt_detect_server_close_round(d);
		d->in_round = true;
		d->round_work = 0;
		d->nround_bursts = 0;
		d->round_ended = false;
		d->work_since_end = 0;
	}
	d->last_end_us = t;
	if (!d->in_round)
		return RT_DETECT_NOTHING;
	d->round_work += w;
	if (d->round_ended)
		d->work_since_end += w;
	if (d->nround_bursts < RT_DETECT_SERVER_BURSTS)
		d->round_bursts[d->nround_bursts++] = w;
	else
		d->round_bursts[RT_DETECT_SERVER_BURSTS - 1] += w;
	if (d->round_ended)
		return RT_DETECT_NOTHING;
	uint64_t typical = rt_detect_median(d->works, d->nworks);
	if (typical) {
		if (rt_detect_scale(d->round_work, 1000, 1) >=
		    rt_detect_scale(typical, p->round_permille, 1))
			return rt_detect_server_end(d, t, d->last.t_us);
		return RT_DETECT_NOTHING;
	}
	if (!d->pending || w > d->pending_weight) {
		d->pending = true;
		d->pending_weight = w;
		d->pending_us = t;
	}
	return RT_DETECT_NOTHING;
}

/* The reading r, after the last one, weighed as the rounds' work. */
static enum rt_detect_result
rt_detect_server_work(struct rt_detect_server *d, const struct rt_reading *r)
{
	const struct rt_detect_server_params *p = &d->params;
	const struct rt_reading *last = &d->last;
	uint64_t events = (r->allocations - last->allocations) + (r->frees - last->frees);
	bool active = rt_detect_active(&d->peaks, last, r, p->quiet_permille, p->peak_half_life_us,
	                               p->quiet_cpu_permille, p->idle_cpu_permille);
	uint64_t quiet_start = last->t_us;
	bool was_confirmed = d->in_quiet && quiet_start - d->quiet_since_us >= p->quiet_us;
	d->last = *r;
	if (active) {
		/* A burst after a confirmed quiet period is a new one; a shorter pause is part of
		 * it. Only active intervals weigh: the trickle between bursts is no work. */
		if (was_confirmed) {
			d->burst_events = 0;
			d->burst_start_us = quiet_start;
		}
		d->burst_events += events;
		d->in_quiet = false;
		/* A heavier burst under way: the one waiting was not the round's heaviest. */
		if (d->pending && d->burst_events > d->pending_weight)
			d->pending = false;
		/* One still lighter after a second hold: the one waiting was (the model sent). */
		if (d->pending && r->t_us - d->pending_us >= 2 * p->hold_us)
			return rt_detect_server_end(d, d->pending_us, r->t_us);
		return RT_DETECT_NOTHING;
	}
	if (!d->in_quiet) {
		d->in_quiet = true;
		d->quiet_since_us = quiet_start;
		d->quiet_handled = false;
	}
	enum rt_detect_result got = RT_DETECT_NOTHING;
	if (!d->quiet_handled && r->t_us - d->quiet_since_us >= p->quiet_us) {
		d->quiet_handled = true;
		if (d->burst_events >= p->min_burst_events)
			got = rt_detect_server_decide(d);
	}
	/* The burst waiting ends the round once hold_us passed in its own quiet, or once a later
	 * burst, begun within the hold, went quiet lighter or is still lighter a hold later. */
	if (got == RT_DETECT_NOTHING && d->pending && r->t_us - d->pending_us >= p->hold_us &&
	    (d->quiet_since_us == d->pending_us || d->quiet_handled))
		got = rt_detect_server_end(d, d->pending_us, r->t_us);
	return got;
}

enum rt_detect_result
rt_detect_server_feed(struct rt_detect_server *d, const struct rt_reading *r)
{
	const struct rt_reading *last = &d->last;
	bool back = r->t_us < last->t_us || r->allocations < last->allocations ||
	            r->frees < last->frees || r->bytes_requested < last->bytes_requested;
	if (d->started && !back && r->t_us - last->t_us < d->params.min_interval_us)
		return RT_DETECT_NOTHING;
	if (!d->started || back) {
		d->started = true;
		rt_detect_server_restart(d, r);
		return RT_DETECT_NOTHING;
	}
	/* While the relay's rounds are the rounds, only its ends are reported. */
	if (rt_detect_server_relay(d, r)) {
		rt_detect_server_broadcast(d, r);
		rt_detect_server_work(d, r);
		return rt_detect_server_count(d, r->t_us, r->t_us, false);
	}
	/* A round's end reported at the broadcast's first send is the work's of that reading
	 * too: rt_detect_server_end then finds it reported. */
	enum rt_detect_result missed =
	    rt_detect_server_broadcast(d, r) && !rt_detect_server_relay_marks(d, r->t_us)
	        ? rt_detect_server_count(d, r->t_us, r->t_us, false)
	        : RT_DETECT_NOTHING;
	enum rt_detect_result got = rt_detect_server_work(d, r);
	return missed == RT_DETECT_BOUNDARY ? missed : got;
}
