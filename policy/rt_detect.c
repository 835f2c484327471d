#include "rt_detect.h"

#include <stddef.h>

#define RT_DETECT_US_PER_S 1000000u
_Static_assert(RT_DETECT_WEIGHTS <= RT_DETECT_MEDIAN_MAX &&
                   RT_DETECT_HISTORY <= RT_DETECT_MEDIAN_MAX,
               "a ring whose median is taken is longer than rt_detect_median sorts");

void
rt_detect_default_params(struct rt_detect_params *params)
{
	params->min_interval_us = 10000;
	params->quiet_us = 400000;
	params->quiet_permille = 20;
	params->peak_half_life_us = 5000000;
	params->quiet_cpu_permille = 250;
	params->idle_cpu_permille = 50;
	params->min_burst_events = 64;
	params->min_burst_bytes = 1 << 20;
	params->max_kept_permille = 250;
	params->max_kept_count_permille = 250;
	params->max_rss_growth_permille = 0;
	params->min_round_share_permille = 100;
	params->min_weight_permille = 300;
	params->in_phase_permille = 750;
	params->early_quiet_us = 250000;
	params->min_burst_share_permille = 100;
	params->rhythm_bursts = 4;
	params->rhythm_spread_permille = 250;
	params->min_sent_share_permille = 500;
	params->min_round_sent_bytes = 64 << 10;
	params->want_live = false;
}

static void
rt_detect_restart(struct rt_detect *d, const struct rt_reading *r)
{
	d->last = *r;
	d->base = *r;
	d->ncheckpoints = 0;
	d->next_checkpoint = 0;
	d->in_quiet = true;
	d->quiet_since_us = r->t_us;
	d->quiet_handled = true;
	d->early_tried = false;
	d->live_asked = false;
	d->base_wants_live = false;
	d->quiet_live_bytes = RT_TRACE_UNKNOWN;
	d->burst_events = 0;
	d->burst_bytes = 0;
	d->burst_sent_from = r->bytes_sent;
	d->largest_burst_bytes = 0;
	d->nbursts = 0;
	d->next_burst = 0;
}

void
rt_detect_init(struct rt_detect *detect, const struct rt_detect_params *params)
{
	struct rt_reading zero = {0};
	/* Nothing learnt: every count, ring and output 0. */
	*detect = (struct rt_detect){.params = *params};
	rt_detect_restart(detect, &zero);
}

const char *
rt_detect_basis_name(enum rt_detect_basis basis)
{
	switch (basis) {
	case RT_DETECT_BY_LIVE:
		return "live";
	case RT_DETECT_BY_FREED:
		return "freed";
	case RT_DETECT_BY_COUNTS:
		return "counts";
	case RT_DETECT_BY_RHYTHM:
		return "rhythm";
	case RT_DETECT_BY_NONE:
		break;
	}
	return "none";
}

static bool
rt_detect_known(uint64_t value)
{
	return value != RT_TRACE_UNKNOWN;
}

bool
rt_detect_has_a_peer(uint64_t bytes_sent)
{
	return rt_detect_known(bytes_sent) && bytes_sent > 0;
}

uint64_t
rt_detect_scale(uint64_t value, uint64_t num, uint64_t den)
{
	unsigned __int128 v = (unsigned __int128)value * num / (den ? den : 1);
	return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}

/* The peak, decayed over dt (halving every half-life, by linear steps between halvings), then
 * raised to the rate when it is higher. */
static uint64_t
rt_detect_peak(uint64_t peak, uint64_t rate, uint64_t dt_us, uint64_t half_life_us)
{
	if (half_life_us == 0)
		peak = 0;
	else {
		for (; dt_us >= half_life_us && peak; dt_us -= half_life_us)
			peak /= 2;
		peak -= rt_detect_scale(peak / 2, dt_us, half_life_us);
	}
	return rate > peak ? rate : peak;
}

bool
rt_detect_active(struct rt_detect_peaks *peaks, const struct rt_reading *last,
                 const struct rt_reading *r, uint32_t quiet_permille, uint64_t peak_half_life_us,
                 uint32_t quiet_cpu_permille, uint32_t idle_cpu_permille)
{
	uint64_t dt = r->t_us - last->t_us;
	uint64_t events = (r->allocations - last->allocations) + (r->frees - last->frees);
	uint64_t bytes = r->bytes_requested - last->bytes_requested;
	uint64_t events_rate = rt_detect_scale(events, RT_DETECT_US_PER_S, dt);
	uint64_t bytes_rate = rt_detect_scale(bytes, RT_DETECT_US_PER_S, dt);
	peaks->events_per_s =
	    rt_detect_peak(peaks->events_per_s, events_rate, dt, peak_half_life_us);
	peaks->bytes_per_s = rt_detect_peak(peaks->bytes_per_s, bytes_rate, dt, peak_half_life_us);
	bool active = events_rate > rt_detect_scale(peaks->events_per_s, quiet_permille, 1000) ||
	              bytes_rate > rt_detect_scale(peaks->bytes_per_s, quiet_permille, 1000);
	if (quiet_cpu_permille && rt_detect_known(r->cpu_us) && rt_detect_known(last->cpu_us) &&
	    r->cpu_us >= last->cpu_us) {
		uint64_t cpu = rt_detect_scale(r->cpu_us - last->cpu_us, 1000, dt);
		peaks->cpu_permille =
		    rt_detect_peak(peaks->cpu_permille, cpu, dt, peak_half_life_us);
		if (cpu > idle_cpu_permille &&
		    cpu > rt_detect_scale(peaks->cpu_permille, quiet_cpu_permille, 1000))
			active = true;
	}
	return active;
}

/* kept / requested <= permille / 1000, where kept may be negative (more given back). */
static bool
rt_detect_kept_at_most(int64_t kept, uint64_t requested, uint32_t permille)
{
	if (kept <= 0)
		return true;
	return (unsigned __int128)kept * 1000 <= (unsigned __int128)requested * permille;
}

/* The input a base is judged by: the live heap when the base and this reading both carry it,
 * else the bytes freed when both carry them, else the counts. */
static enum rt_detect_basis
rt_detect_basis_for(const struct rt_reading *base, const struct rt_reading *now)
{
	if (rt_detect_known(now->live_bytes) && rt_detect_known(base->live_bytes))
		return RT_DETECT_BY_LIVE;
	if (rt_detect_known(now->bytes_freed) && rt_detect_known(base->bytes_freed))
		return RT_DETECT_BY_FREED;
	return RT_DETECT_BY_COUNTS;
}

/* Whether, since base, the heap kept little of what was requested, judged by basis. A base
 * with less than a burst's worth of requests since, or without the input, does not qualify. */
static bool
rt_detect_released_since(const struct rt_detect_params *p, const struct rt_reading *base,
                         const struct rt_reading *now, enum rt_detect_basis basis)
{
	uint64_t requested = now->bytes_requested - base->bytes_requested;
	uint64_t allocations = now->allocations - base->allocations;
	if (requested < p->min_burst_bytes || allocations == 0)
		return false;
	switch (basis) {
	case RT_DETECT_BY_LIVE:
		return rt_detect_known(base->live_bytes) &&
		       rt_detect_kept_at_most((int64_t)(now->live_bytes - base->live_bytes),
		                              requested, p->max_kept_permille);
	case RT_DETECT_BY_FREED:
		return rt_detect_known(base->bytes_freed) &&
		       now->bytes_freed >= base->bytes_freed &&
		       rt_detect_kept_at_most(
		           (int64_t)(requested - (now->bytes_freed - base->bytes_freed)), requested,
		           p->max_kept_permille);
	case RT_DETECT_BY_COUNTS:
	case RT_DETECT_BY_RHYTHM:
	case RT_DETECT_BY_NONE:
		break;
	}
	if (p->max_rss_growth_permille && rt_detect_known(now->rss_kib) &&
	    rt_detect_known(base->rss_kib) &&
	    !rt_detect_kept_at_most((int64_t)(now->rss_kib - base->rss_kib) * 1024, requested,
	                            p->max_rss_growth_permille))
		return false;
	return rt_detect_kept_at_most((int64_t)(allocations - (now->frees - base->frees)),
	                              allocations, p->max_kept_count_permille);
}

void
rt_detect_sort(const uint64_t *values, unsigned n, uint64_t *sorted)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t v = values[i];
		unsigned j = i;
		for (; j > 0 && sorted[j - 1] > v; j--)
			sorted[j] = sorted[j - 1];
		sorted[j] = v;
	}
}

uint64_t
rt_detect_median(const uint64_t *values, unsigned n)
{
	uint64_t sorted[RT_DETECT_MEDIAN_MAX];
	if (n > sizeof(sorted) / sizeof(sorted[0]))
		n = sizeof(sorted) / sizeof(sorted[0]);
	rt_detect_sort(values, n, sorted);
	return n ? sorted[(n - 1) / 2] : 0;
}

/* The median of the bytes the last rounds requested; 0 before the first round. */
static uint64_t
rt_detect_typical_round(const struct rt_detect *d)
{
	return rt_detect_median(d->round_bytes, d->nrounds);
}

/* Whether the burst that ends now is the round's own return (see min_burst_share_permille):
 * against the largest burst since the last boundary. */
static bool
rt_detect_own_return(const struct rt_detect *d)
{
	uint64_t largest =
	    d->burst_bytes > d->largest_burst_bytes ? d->burst_bytes : d->largest_burst_bytes;
	return rt_detect_scale(d->burst_bytes, 1000, 1) >=
	       rt_detect_scale(largest, d->params.min_burst_share_permille, 1);
}

/* Appends to a ring of `size` readings. */
static void
rt_detect_ring_push_reading(struct rt_reading *ring, unsigned size, unsigned *n, unsigned *next,
                            const struct rt_reading *value)
{
	ring[*next] = *value;
	*next = (*next + 1) % size;
	if (*n < size)
		(*n)++;
}

void
rt_detect_ring_push(uint64_t *ring, unsigned size, unsigned *n, unsigned *next, uint64_t value)
{
	ring[*next] = value;
	*next = (*next + 1) % size;
	if (*n < size)
		(*n)++;
}

/* The bytes sent since the current burst began, or UNKNOWN. */
static uint64_t
rt_detect_burst_sent(const struct rt_detect *d, const struct rt_reading *now)
{
	if (!rt_detect_known(now->bytes_sent) || !rt_detect_known(d->burst_sent_from) ||
	    now->bytes_sent < d->burst_sent_from)
		return RT_TRACE_UNKNOWN;
	return now->bytes_sent - d->burst_sent_from;
}

/* What a round's update weighs once the rounds found have shown that they send (see
 * min_sent_share_permille): the least a round's end must send; 0 while they have not. */
static uint64_t
rt_detect_update_bytes(const struct rt_detect *d)
{
	const struct rt_detect_params *p = &d->params;
	uint64_t sending[RT_DETECT_HISTORY];
	unsigned n = 0;
	if (!p->min_sent_share_permille)
		return 0;
	for (unsigned i = 0; i < d->nrounds; i++)
		if (rt_detect_known(d->round_sent[i]) &&
		    d->round_sent[i] >= p->min_round_sent_bytes)
			sending[n++] = d->round_sent[i];
	if (n < RT_DETECT_SENT_LOCK_ROUNDS)
		return 0;
	uint64_t least =
	    rt_detect_scale(rt_detect_median(sending, n), p->min_sent_share_permille, 1000);
	return least ? least : 1;
}

/* Whether the rounds found send and the burst that ends now has sent a round's update: then
 * its quiet is looked at early, whatever the phase. */
static bool
rt_detect_update_sent(const struct rt_detect *d, const struct rt_reading *now)
{
	uint64_t sent = rt_detect_burst_sent(d, now);
	uint64_t update = rt_detect_update_bytes(d);
	return update && rt_detect_known(sent) && sent >= update;
}

/* Whether the burst that ends now sent a round's update (see min_sent_share_permille): true
 * while the rounds found have not shown that they send. */
static bool
rt_detect_sends_a_round(const struct rt_detect *d, const struct rt_reading *now)
{
	const struct rt_detect_params *p = &d->params;
	if (!p->min_sent_share_permille)
		return true;
	if (rt_detect_update_bytes(d))
		return rt_detect_update_sent(d, now);
	uint64_t sent = rt_detect_burst_sent(d, now);
	return d->boundaries || !rt_detect_has_a_peer(now->bytes_sent) ||
	       d->start_refusals >= RT_DETECT_LOCK_ROUNDS ||
	       (rt_detect_known(sent) && sent >= p->min_round_sent_bytes);
}

/* Whether the sends stopped telling the rounds: the rounds found sent their updates, and since
 * the last one found the process went on for twice the longest interval between them and did
 * two rounds' work (now: its reading). The update may have shrunk, gone to a path the readings
 * do not count (TLS through write(2)) or stopped. A round that only waited longer (a straggler
 * among the clients, a slow aggregation) did not do the work; one that only worked more (an
 * evaluation round) did not take the time. */
static bool
rt_detect_sends_lapsed(const struct rt_detect *d, const struct rt_reading *now)
{
	uint64_t longest = 0;
	for (unsigned i = 0; i < d->nintervals; i++)
		if (d->intervals_us[i] > longest)
			longest = d->intervals_us[i];
	return rt_detect_update_bytes(d) && longest &&
	       d->quiet_since_us - d->boundary_us > 2 * longest &&
	       now->bytes_requested - d->base.bytes_requested >=
	           rt_detect_scale(rt_detect_typical_round(d), 2, 1);
}

/* Whether `requested`, the work of the round that would end, is a round's worth (see the
 * parameter). */
static bool
rt_detect_round_sized(const struct rt_detect *d, uint64_t requested)
{
	return rt_detect_scale(requested, 1000, 1) >=
	       rt_detect_scale(rt_detect_typical_round(d), d->params.min_round_share_permille, 1);
}

/* How large `work` is against the recent candidates' (see min_weight_permille), in permille
 * (above 1000 when larger). Of three or more, the second largest sets the scale, so that one
 * outlier (start-up, a round with an evaluation) does not hide the next rounds; the first
 * candidate is its own scale. Candidates before the first boundary do not count. */
static uint64_t
rt_detect_weight(const struct rt_detect *d, uint64_t work)
{
	uint64_t largest = 0, second = 0;
	for (unsigned i = 0; i < d->nweights; i++) {
		uint64_t w = d->weights[i];
		if (w > largest) {
			second = largest;
			largest = w;
		} else if (w > second)
			second = w;
	}
	uint64_t scale = d->nweights > 2 ? second : d->nweights ? largest : work;
	return rt_detect_scale(work, 1000, scale);
}

/* Where the current quiet period began, in periods since the last boundary (permille); 0 while
 * the period is not known. */
static uint64_t
rt_detect_phase(const struct rt_detect *d)
{
	return d->period_us
	           ? rt_detect_scale(d->quiet_since_us - d->boundary_us, 1000, d->period_us)
	           : 0;
}

/* Whether a candidate whose work weighs `weight` (rt_detect_weight) is a round's end: see
 * min_weight_permille. Once the period is known, one that comes within half a period of the
 * last round's end would make two in one period: it must weigh a whole round. */
static bool
rt_detect_keeps_rhythm(const struct rt_detect *d, uint64_t weight)
{
	const struct rt_detect_params *p = &d->params;
	if (!p->min_weight_permille)
		return true;
	if (!d->period_us)
		return weight >= p->min_weight_permille;
	uint64_t phase = rt_detect_phase(d);
	if (phase < 500)
		return weight >= 1000;
	return weight >= p->min_weight_permille || phase >= p->in_phase_permille;
}

/* See confidence_permille. */
static uint32_t
rt_detect_confidence(const struct rt_detect *d, uint64_t weight)
{
	uint64_t phase = rt_detect_phase(d);
	uint64_t off = phase > 1000 ? phase - 1000 : 1000 - phase;
	uint64_t phase_score = !d->period_us ? 500 : off >= 1000 ? 0 : 1000 - off;
	return (uint32_t)(((weight > 1000 ? 1000 : weight) + phase_score) / 2);
}

bool
rt_detect_alike(const uint64_t *values, unsigned n, uint32_t spread_permille)
{
	uint64_t median = rt_detect_median(values, n);
	uint64_t spread = rt_detect_scale(median, spread_permille, 1000);
	for (unsigned i = 0; i < n; i++) {
		uint64_t off = values[i] > median ? values[i] - median : median - values[i];
		if (off > spread)
			return false;
	}
	return true;
}

/* Records the burst whose quiet period is being decided (gave_back: the heap gave back since
 * some base), and says whether the last rhythm_bursts bursts, it included, keep a rhythm (see
 * the parameter). */
static bool
rt_detect_push_burst(struct rt_detect *d, bool gave_back)
{
	const struct rt_detect_params *p = &d->params;
	uint64_t sizes[RT_DETECT_RHYTHM_MAX], intervals[RT_DETECT_RHYTHM_MAX];
	d->burst_sizes[d->next_burst] = d->burst_bytes;
	d->burst_quiets_us[d->next_burst] = d->quiet_since_us;
	d->burst_gave_back[d->next_burst] = gave_back;
	d->next_burst = (d->next_burst + 1) % RT_DETECT_RHYTHM_MAX;
	if (d->nbursts < RT_DETECT_RHYTHM_MAX)
		d->nbursts++;
	unsigned n = p->rhythm_bursts;
	if (n < 2 || n > RT_DETECT_RHYTHM_MAX || d->nbursts < n)
		return false;
	bool gave_back_once = false;
	for (unsigned i = 0; i < n; i++) {
		unsigned at = (d->next_burst + RT_DETECT_RHYTHM_MAX - 1 - i) % RT_DETECT_RHYTHM_MAX;
		sizes[i] = d->burst_sizes[at];
		gave_back_once |= d->burst_gave_back[at];
		if (i + 1 < n) {
			unsigned before = (at + RT_DETECT_RHYTHM_MAX - 1) % RT_DETECT_RHYTHM_MAX;
			intervals[i] = d->burst_quiets_us[at] - d->burst_quiets_us[before];
		}
	}
	return gave_back_once && rt_detect_alike(sizes, n, p->rhythm_spread_permille) &&
	       rt_detect_alike(intervals, n - 1, p->rhythm_spread_permille);
}

static bool
rt_detect_significant(const struct rt_detect *d)
{
	return d->burst_events >= d->params.min_burst_events &&
	       d->burst_bytes >= d->params.min_burst_bytes;
}

/* The round a quiet period would close: the most work since a reference (the last boundary, or
 * an earlier quiet period's start) after which the heap kept little. NULL when there is none. */
static const struct rt_reading *
rt_detect_round_start(const struct rt_detect *d, const struct rt_reading *now,
                      enum rt_detect_basis *basis)
{
	const struct rt_reading *round_start = NULL;
	*basis = RT_DETECT_BY_NONE;
	for (unsigned i = 0; i <= d->ncheckpoints; i++) {
		const struct rt_reading *ref = i < d->ncheckpoints ? &d->checkpoints[i] : &d->base;
		enum rt_detect_basis b = rt_detect_basis_for(ref, now);
		if ((!round_start || ref->bytes_requested < round_start->bytes_requested) &&
		    rt_detect_released_since(&d->params, ref, now, b)) {
			round_start = ref;
			*basis = b;
		}
	}
	return round_start;
}

/* Whether a quiet period confirmed early (early_quiet_us) already shows a round's end: the
 * rhythm is known, the quiet came in phase, and the work it closes weighs a round's. */
static bool
rt_detect_early_end(const struct rt_detect *d, const struct rt_reading *now)
{
	enum rt_detect_basis basis;
	const struct rt_reading *round_start = rt_detect_round_start(d, now, &basis);
	if (!round_start)
		return false;
	uint64_t requested = now->bytes_requested - round_start->bytes_requested;
	return rt_detect_round_sized(d, requested) && rt_detect_own_return(d) &&
	       rt_detect_sends_a_round(d, now) &&
	       rt_detect_weight(d, requested) >= d->params.min_weight_permille;
}

/* Records the candidate being weighed (see candidates in struct rt_detect). */
static void
rt_detect_note_candidate(struct rt_detect *d, uint64_t work, uint64_t weight)
{
	uint64_t phase = rt_detect_phase(d);
	d->candidates++;
	d->candidate_quiet_us = d->quiet_since_us;
	d->candidate_work_bytes = work;
	d->candidate_weight_permille = weight > UINT32_MAX ? UINT32_MAX : (uint32_t)weight;
	d->candidate_phase_permille = phase > UINT32_MAX ? UINT32_MAX : (uint32_t)phase;
}

/* A confirmed quiet period after a significant burst: a boundary or a checkpoint. now is the
 * reading, with the live heap read during this quiet period if it carries none itself. A
 * release that qualifies is a candidate; it is a boundary when it keeps the rhythm (see
 * min_weight_permille). Every candidate's work joins the recent ones. */
static enum rt_detect_result
rt_detect_decide(struct rt_detect *d, const struct rt_reading *now)
{
	enum rt_detect_basis basis;
	const struct rt_reading *round_start = rt_detect_round_start(d, now, &basis);
	uint64_t requested = round_start ? now->bytes_requested - round_start->bytes_requested : 0;
	d->quiet_handled = true;
	d->base_wants_live = false;
	bool boundary = false;
	bool sends = rt_detect_sends_a_round(d, now);
	bool candidate = round_start && rt_detect_round_sized(d, requested);
	if (candidate && !sends && !d->boundaries)
		d->start_refusals++;
	if (candidate && !sends && rt_detect_sends_lapsed(d, now)) {
		/* Judged as a process that does not send, until its rounds show it again. */
		for (unsigned i = 0; i < RT_DETECT_HISTORY; i++)
			d->round_sent[i] = RT_TRACE_UNKNOWN;
		sends = true;
	}
	candidate = candidate && sends;
	bool rhythm = rt_detect_push_burst(d, round_start != NULL) && sends;
	bool weighed = candidate && rt_detect_own_return(d);
	if (weighed) {
		uint64_t weight = rt_detect_weight(d, requested);
		rt_detect_note_candidate(d, requested, weight);
		boundary = rt_detect_keeps_rhythm(d, weight);
		if (boundary)
			d->confidence_permille = rt_detect_confidence(d, weight);
		/* Work before the first boundary includes start-up's: no round's measure. */
		if (d->boundaries)
			rt_detect_ring_push(d->weights, RT_DETECT_WEIGHTS, &d->nweights,
			                    &d->next_weight, requested);
	}
	if (!boundary && rhythm) {
		/* One burst a round: the work since the last boundary is this round's, and as
		 * large as the rounds' (the bursts are alike). */
		requested = now->bytes_requested - d->base.bytes_requested;
		if (rt_detect_round_sized(d, requested)) {
			if (!weighed)
				rt_detect_note_candidate(d, requested,
				                         rt_detect_weight(d, requested));
			boundary = true;
			basis = RT_DETECT_BY_RHYTHM;
			d->confidence_permille = rt_detect_confidence(d, 1000);
			if (d->boundaries && !weighed)
				rt_detect_ring_push(d->weights, RT_DETECT_WEIGHTS, &d->nweights,
				                    &d->next_weight, requested);
		}
	}
	if (boundary) {
		/* The two rings move together: round_bytes's push counts for both. */
		d->round_sent[d->next_round] = rt_detect_burst_sent(d, now);
		rt_detect_ring_push(d->round_bytes, RT_DETECT_HISTORY, &d->nrounds, &d->next_round,
		                    requested);
		if (d->boundaries)
			rt_detect_ring_push(d->intervals_us, RT_DETECT_HISTORY, &d->nintervals,
			                    &d->next_interval, d->quiet_since_us - d->boundary_us);
		d->period_us = d->nintervals >= RT_DETECT_LOCK_ROUNDS
		                   ? rt_detect_median(d->intervals_us, d->nintervals)
		                   : 0;
		d->boundaries++;
		d->boundary_us = d->quiet_since_us;
		d->basis = basis;
		d->base = *now;
		d->ncheckpoints = 0;
		d->next_checkpoint = 0;
		d->largest_burst_bytes = 0;
		return RT_DETECT_BOUNDARY;
	}
	if (candidate && d->burst_bytes > d->largest_burst_bytes)
		d->largest_burst_bytes = d->burst_bytes;
	rt_detect_ring_push_reading(d->checkpoints, RT_DETECT_CHECKPOINTS, &d->ncheckpoints,
	                            &d->next_checkpoint, now);
	return RT_DETECT_NOTHING;
}

/* The rest of a quiet interval's handling: decide once the quiet period is confirmed, and ask
 * for the live heap one reading ahead, so that the reading that confirms it carries a value
 * read well after the burst, at no added delay. A slower reader is asked at confirmation. A
 * quiet period in phase with a known rhythm is first looked at after early_quiet_us. */
static enum rt_detect_result
rt_detect_quiet(struct rt_detect *d, const struct rt_reading *r, uint64_t dt)
{
	const struct rt_detect_params *p = &d->params;
	if (rt_detect_known(r->live_bytes))
		d->quiet_live_bytes = r->live_bytes;
	if (d->quiet_handled || !rt_detect_significant(d))
		return RT_DETECT_NOTHING;
	bool early = p->early_quiet_us && p->early_quiet_us < p->quiet_us && !d->early_tried &&
	             ((d->period_us && rt_detect_phase(d) >= p->in_phase_permille) ||
	              rt_detect_update_sent(d, r));
	uint64_t need = early ? p->early_quiet_us : p->quiet_us;
	bool confirmed = r->t_us - d->quiet_since_us >= need;
	bool confirmed_next = r->t_us + dt - d->quiet_since_us >= need;
	if (p->want_live && !rt_detect_known(d->quiet_live_bytes) && !d->live_asked &&
	    (confirmed || confirmed_next)) {
		d->live_asked = true;
		return RT_DETECT_WANT_LIVE;
	}
	if (!confirmed)
		return RT_DETECT_NOTHING;
	struct rt_reading now = *r;
	now.live_bytes = d->quiet_live_bytes;
	if (early) {
		d->early_tried = true;
		if (!rt_detect_early_end(d, &now))
			return RT_DETECT_NOTHING;
	}
	return rt_detect_decide(d, &now);
}

enum rt_detect_result
rt_detect_feed(struct rt_detect *d, const struct rt_reading *r)
{
	const struct rt_detect_params *p = &d->params;
	const struct rt_reading *last = &d->last;
	if (d->started && r->t_us >= last->t_us && r->t_us - last->t_us < p->min_interval_us &&
	    r->allocations >= last->allocations && r->frees >= last->frees &&
	    r->bytes_requested >= last->bytes_requested) {
		/* Too soon after the last one for its rates to mean anything (a reader that caught
		 * up late): the next interval will include it. A live heap it brings is kept. */
		if (d->in_quiet && rt_detect_known(r->live_bytes))
			d->quiet_live_bytes = r->live_bytes;
		return RT_DETECT_NOTHING;
	}
	if (!d->started || r->t_us < last->t_us || r->allocations < last->allocations ||
	    r->frees < last->frees || r->bytes_requested < last->bytes_requested) {
		d->started = true;
		rt_detect_restart(d, r);
		d->base_wants_live = p->want_live && !rt_detect_known(r->live_bytes);
		return d->base_wants_live ? RT_DETECT_WANT_LIVE : RT_DETECT_NOTHING;
	}
	/* The first base moves to the first reading that carries the live heap it asked for. */
	if (d->base_wants_live && rt_detect_known(r->live_bytes)) {
		d->base = *r;
		d->base_wants_live = false;
	}
	uint64_t dt = r->t_us - last->t_us;
	uint64_t events = (r->allocations - last->allocations) + (r->frees - last->frees);
	uint64_t bytes = r->bytes_requested - last->bytes_requested;
	bool active = rt_detect_active(&d->peaks, last, r, p->quiet_permille, p->peak_half_life_us,
	                               p->quiet_cpu_permille, p->idle_cpu_permille);
	uint64_t quiet_start = last->t_us;
	uint64_t sent_before = last->bytes_sent;
	bool was_confirmed = d->in_quiet && quiet_start - d->quiet_since_us >= p->quiet_us;
	d->last = *r;
	/* A burst after a confirmed quiet period is a new one; a shorter pause is part of it. */
	if (active && was_confirmed) {
		d->burst_events = 0;
		d->burst_bytes = 0;
		d->burst_sent_from = sent_before;
	}
	d->burst_events += events;
	d->burst_bytes += bytes;
	if (active) {
		d->in_quiet = false;
		return RT_DETECT_NOTHING;
	}
	if (!d->in_quiet) {
		d->in_quiet = true;
		d->quiet_since_us = quiet_start;
		d->quiet_handled = false;
		d->early_tried = false;
		d->live_asked = false;
		d->quiet_live_bytes = RT_TRACE_UNKNOWN;
	}
	return rt_detect_quiet(d, r, dt);
}
