#include "rt_detect.h"

#include <stddef.h>

#define RT_DETECT_US_PER_S 1000000u

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
	d->live_asked = false;
	d->base_wants_live = false;
	d->quiet_live_bytes = RT_TRACE_UNKNOWN;
	d->burst_events = 0;
	d->burst_bytes = 0;
}

void
rt_detect_init(struct rt_detect *detect, const struct rt_detect_params *params)
{
	struct rt_reading zero = {0};
	detect->params = *params;
	detect->started = false;
	detect->peak_events_per_s = 0;
	detect->peak_bytes_per_s = 0;
	detect->peak_cpu_permille = 0;
	detect->boundaries = 0;
	detect->boundary_us = 0;
	detect->basis = RT_DETECT_BY_NONE;
	detect->nrounds = 0;
	detect->next_round = 0;
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

/* value * num / den without overflow for the magnitudes of rates and times (saturates). */
static uint64_t
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

/* The median of the bytes the last rounds requested (the lower middle of an even count); 0
 * before the first round. */
static uint64_t
rt_detect_typical_round(const struct rt_detect *d)
{
	uint64_t sorted[RT_DETECT_HISTORY];
	unsigned n = d->nrounds;
	for (unsigned i = 0; i < n; i++) {
		uint64_t v = d->round_bytes[i];
		unsigned j = i;
		for (; j > 0 && sorted[j - 1] > v; j--)
			sorted[j] = sorted[j - 1];
		sorted[j] = v;
	}
	return n ? sorted[(n - 1) / 2] : 0;
}

/* Whether `requested`, the work of the round that would end, is a round's worth (see the
 * parameter). */
static bool
rt_detect_round_sized(const struct rt_detect *d, uint64_t requested)
{
	return rt_detect_scale(requested, 1000, 1) >=
	       rt_detect_scale(rt_detect_typical_round(d), d->params.min_round_share_permille, 1);
}

static bool
rt_detect_significant(const struct rt_detect *d)
{
	return d->burst_events >= d->params.min_burst_events &&
	       d->burst_bytes >= d->params.min_burst_bytes;
}

/* A confirmed quiet period after a significant burst: a boundary or a checkpoint. now is the
 * reading, with the live heap read during this quiet period if it carries none itself. */
static enum rt_detect_result
rt_detect_decide(struct rt_detect *d, const struct rt_reading *now)
{
	const struct rt_detect_params *p = &d->params;
	/* The round that ends is the most work since a reference (the last boundary, or an earlier
	 * quiet period's start) after which the heap kept little. */
	const struct rt_reading *round_start = NULL;
	enum rt_detect_basis basis = RT_DETECT_BY_NONE;
	for (unsigned i = 0; i <= d->ncheckpoints; i++) {
		const struct rt_reading *ref = i < d->ncheckpoints ? &d->checkpoints[i] : &d->base;
		enum rt_detect_basis b = rt_detect_basis_for(ref, now);
		if ((!round_start || ref->bytes_requested < round_start->bytes_requested) &&
		    rt_detect_released_since(p, ref, now, b)) {
			round_start = ref;
			basis = b;
		}
	}
	uint64_t requested = round_start ? now->bytes_requested - round_start->bytes_requested : 0;
	d->quiet_handled = true;
	d->base_wants_live = false;
	if (round_start && rt_detect_round_sized(d, requested)) {
		d->round_bytes[d->next_round] = requested;
		d->next_round = (d->next_round + 1) % RT_DETECT_HISTORY;
		if (d->nrounds < RT_DETECT_HISTORY)
			d->nrounds++;
		d->boundaries++;
		d->boundary_us = d->quiet_since_us;
		d->basis = basis;
		d->base = *now;
		d->ncheckpoints = 0;
		d->next_checkpoint = 0;
		return RT_DETECT_BOUNDARY;
	}
	d->checkpoints[d->next_checkpoint] = *now;
	d->next_checkpoint = (d->next_checkpoint + 1) % RT_DETECT_CHECKPOINTS;
	if (d->ncheckpoints < RT_DETECT_CHECKPOINTS)
		d->ncheckpoints++;
	return RT_DETECT_NOTHING;
}

/* The rest of a quiet interval's handling: decide once the quiet period is confirmed, and ask
 * for the live heap one reading ahead, so that the reading that confirms it carries a value
 * read well after the burst, at no added delay. A slower reader is asked at confirmation. */
static enum rt_detect_result
rt_detect_quiet(struct rt_detect *d, const struct rt_reading *r, uint64_t dt)
{
	const struct rt_detect_params *p = &d->params;
	if (rt_detect_known(r->live_bytes))
		d->quiet_live_bytes = r->live_bytes;
	if (d->quiet_handled || !rt_detect_significant(d))
		return RT_DETECT_NOTHING;
	bool confirmed = r->t_us - d->quiet_since_us >= p->quiet_us;
	bool confirmed_next = r->t_us + dt - d->quiet_since_us >= p->quiet_us;
	if (p->want_live && !rt_detect_known(d->quiet_live_bytes) && !d->live_asked &&
	    (confirmed || confirmed_next)) {
		d->live_asked = true;
		return RT_DETECT_WANT_LIVE;
	}
	if (!confirmed)
		return RT_DETECT_NOTHING;
	struct rt_reading now = *r;
	now.live_bytes = d->quiet_live_bytes;
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
	uint64_t events_rate = rt_detect_scale(events, RT_DETECT_US_PER_S, dt);
	uint64_t bytes_rate = rt_detect_scale(bytes, RT_DETECT_US_PER_S, dt);
	d->peak_events_per_s =
	    rt_detect_peak(d->peak_events_per_s, events_rate, dt, p->peak_half_life_us);
	d->peak_bytes_per_s =
	    rt_detect_peak(d->peak_bytes_per_s, bytes_rate, dt, p->peak_half_life_us);
	bool active =
	    events_rate > rt_detect_scale(d->peak_events_per_s, p->quiet_permille, 1000) ||
	    bytes_rate > rt_detect_scale(d->peak_bytes_per_s, p->quiet_permille, 1000);
	if (p->quiet_cpu_permille && rt_detect_known(r->cpu_us) && rt_detect_known(last->cpu_us) &&
	    r->cpu_us >= last->cpu_us) {
		uint64_t cpu = rt_detect_scale(r->cpu_us - last->cpu_us, 1000, dt);
		d->peak_cpu_permille =
		    rt_detect_peak(d->peak_cpu_permille, cpu, dt, p->peak_half_life_us);
		if (cpu > p->idle_cpu_permille &&
		    cpu > rt_detect_scale(d->peak_cpu_permille, p->quiet_cpu_permille, 1000))
			active = true;
	}
	uint64_t quiet_start = last->t_us;
	bool was_confirmed = d->in_quiet && quiet_start - d->quiet_since_us >= p->quiet_us;
	d->last = *r;
	/* A burst after a confirmed quiet period is a new one; a shorter pause is part of it. */
	if (active && was_confirmed) {
		d->burst_events = 0;
		d->burst_bytes = 0;
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
		d->live_asked = false;
		d->quiet_live_bytes = RT_TRACE_UNKNOWN;
	}
	return rt_detect_quiet(d, r, dt);
}
