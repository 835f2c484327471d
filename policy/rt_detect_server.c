#include "rt_detect_server.h"

#define RT_DETECT_SERVER_US_PER_S 1000000u

void
rt_detect_server_default_params(struct rt_detect_server_params *params)
{
	params->min_interval_us = 10000;
	params->quiet_us = 400000;
	params->quiet_permille = 20;
	params->peak_half_life_us = 5000000;
	params->quiet_cpu_permille = 250;
	params->idle_cpu_permille = 50;
	params->min_burst_events = 500;
	params->min_weight_permille = 600;
	params->min_phase_permille = 500;
}

static void
rt_detect_server_restart(struct rt_detect_server *d, const struct rt_reading *r)
{
	d->last = *r;
	d->in_quiet = true;
	d->quiet_since_us = r->t_us;
	d->quiet_handled = true;
	d->burst_events = 0;
}

void
rt_detect_server_init(struct rt_detect_server *detect,
                      const struct rt_detect_server_params *params)
{
	struct rt_reading zero = {0};
	detect->params = *params;
	detect->started = false;
	detect->peak_events_per_s = 0;
	detect->peak_bytes_per_s = 0;
	detect->peak_cpu_permille = 0;
	detect->nweights = 0;
	detect->next_weight = 0;
	detect->nintervals = 0;
	detect->next_interval = 0;
	detect->last_weight = 0;
	detect->boundaries = 0;
	detect->boundary_us = 0;
	detect->confidence_permille = 0;
	detect->period_us = 0;
	rt_detect_server_restart(detect, &zero);
}

/* value * num / den, saturated. */
static uint64_t
rt_detect_server_scale(uint64_t value, uint64_t num, uint64_t den)
{
	unsigned __int128 v = (unsigned __int128)value * num / (den ? den : 1);
	return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}

/* rt_detect's peak: decayed over dt (halving every half-life), then raised to the rate. */
static uint64_t
rt_detect_server_peak(uint64_t peak, uint64_t rate, uint64_t dt_us, uint64_t half_life_us)
{
	if (half_life_us == 0)
		peak = 0;
	else {
		for (; dt_us >= half_life_us && peak; dt_us -= half_life_us)
			peak /= 2;
		peak -= rt_detect_server_scale(peak / 2, dt_us, half_life_us);
	}
	return rate > peak ? rate : peak;
}

static void
rt_detect_server_push(uint64_t *ring, unsigned *n, unsigned *next, uint64_t value)
{
	ring[*next] = value;
	*next = (*next + 1) % RT_DETECT_SERVER_HISTORY;
	if (*n < RT_DETECT_SERVER_HISTORY)
		(*n)++;
}

/* The most recent entry of a ring, for the phase to move. */
static uint64_t *
rt_detect_server_newest(uint64_t *ring, unsigned n, unsigned next)
{
	return n ? &ring[(next + RT_DETECT_SERVER_HISTORY - 1) % RT_DETECT_SERVER_HISTORY] : NULL;
}

/* Where t lies in the period since the last end, in permille; 0 while the period is unknown. */
static uint64_t
rt_detect_server_phase(const struct rt_detect_server *d, uint64_t t)
{
	return d->period_us ? rt_detect_server_scale(t - d->boundary_us, 1000, d->period_us) : 0;
}

/* How sure the detector is of an end of weight w: the mean of its weight against the recent
 * ends' (capped at 1000) and how close it came to a period after the last (500 while the period
 * is not known), as rt_detect's confidence. */
static uint32_t
rt_detect_server_confidence(const struct rt_detect_server *d, uint64_t weight_permille,
                            uint64_t t)
{
	uint64_t phase = rt_detect_server_phase(d, t);
	uint64_t off = phase > 1000 ? phase - 1000 : 1000 - phase;
	uint64_t phase_score = !d->period_us ? 500 : off >= 1000 ? 0 : 1000 - off;
	return (uint32_t)(((weight_permille > 1000 ? 1000 : weight_permille) + phase_score) / 2);
}

/* A confirmed quiet period after a burst of at least min_burst_events: a round's end, a move of
 * the phase, or nothing (see the header). */
static enum rt_detect_result
rt_detect_server_decide(struct rt_detect_server *d)
{
	const struct rt_detect_server_params *p = &d->params;
	uint64_t t = d->quiet_since_us, w = d->burst_events;
	uint64_t typical = rt_detect_median(d->weights, d->nweights);
	uint64_t weight = typical ? rt_detect_server_scale(w, 1000, typical) : 1000;
	bool heavy = weight >= p->min_weight_permille;
	bool in_phase = !d->period_us || !d->boundaries ||
	                rt_detect_server_phase(d, t) >= p->min_phase_permille;
	if (heavy && in_phase) {
		d->confidence_permille = rt_detect_server_confidence(d, weight, t);
		if (d->boundaries) {
			rt_detect_server_push(d->intervals_us, &d->nintervals, &d->next_interval,
			                      t - d->boundary_us);
			rt_detect_server_push(d->weights, &d->nweights, &d->next_weight, w);
		}
		d->period_us = d->nintervals >= RT_DETECT_LOCK_ROUNDS
		                   ? rt_detect_median(d->intervals_us, d->nintervals)
		                   : 0;
		d->boundaries++;
		d->boundary_us = t;
		d->last_weight = w;
		return RT_DETECT_BOUNDARY;
	}
	if (!in_phase && w > d->last_weight) {
		uint64_t *interval = rt_detect_server_newest(d->intervals_us, d->nintervals,
		                                             d->next_interval);
		uint64_t *last = rt_detect_server_newest(d->weights, d->nweights, d->next_weight);
		if (interval)
			*interval += t - d->boundary_us;
		if (last)
			*last = w;
		d->boundary_us = t;
		d->last_weight = w;
	}
	return RT_DETECT_NOTHING;
}

enum rt_detect_result
rt_detect_server_feed(struct rt_detect_server *d, const struct rt_reading *r)
{
	const struct rt_detect_server_params *p = &d->params;
	const struct rt_reading *last = &d->last;
	bool back = r->t_us < last->t_us || r->allocations < last->allocations ||
	            r->frees < last->frees || r->bytes_requested < last->bytes_requested;
	if (d->started && !back && r->t_us - last->t_us < p->min_interval_us)
		return RT_DETECT_NOTHING;
	if (!d->started || back) {
		d->started = true;
		rt_detect_server_restart(d, r);
		return RT_DETECT_NOTHING;
	}
	uint64_t dt = r->t_us - last->t_us;
	uint64_t events = (r->allocations - last->allocations) + (r->frees - last->frees);
	uint64_t bytes = r->bytes_requested - last->bytes_requested;
	uint64_t events_rate = rt_detect_server_scale(events, RT_DETECT_SERVER_US_PER_S, dt);
	uint64_t bytes_rate = rt_detect_server_scale(bytes, RT_DETECT_SERVER_US_PER_S, dt);
	d->peak_events_per_s =
	    rt_detect_server_peak(d->peak_events_per_s, events_rate, dt, p->peak_half_life_us);
	d->peak_bytes_per_s =
	    rt_detect_server_peak(d->peak_bytes_per_s, bytes_rate, dt, p->peak_half_life_us);
	bool active =
	    events_rate > rt_detect_server_scale(d->peak_events_per_s, p->quiet_permille, 1000) ||
	    bytes_rate > rt_detect_server_scale(d->peak_bytes_per_s, p->quiet_permille, 1000);
	if (p->quiet_cpu_permille && r->cpu_us != RT_TRACE_UNKNOWN &&
	    last->cpu_us != RT_TRACE_UNKNOWN && r->cpu_us >= last->cpu_us) {
		uint64_t cpu = rt_detect_server_scale(r->cpu_us - last->cpu_us, 1000, dt);
		d->peak_cpu_permille =
		    rt_detect_server_peak(d->peak_cpu_permille, cpu, dt, p->peak_half_life_us);
		if (cpu > p->idle_cpu_permille &&
		    cpu > rt_detect_server_scale(d->peak_cpu_permille, p->quiet_cpu_permille, 1000))
			active = true;
	}
	uint64_t quiet_start = last->t_us;
	bool was_confirmed = d->in_quiet && quiet_start - d->quiet_since_us >= p->quiet_us;
	d->last = *r;
	if (active) {
		/* A burst after a confirmed quiet period is a new one; a shorter pause is part of
		 * it. Only active intervals weigh: the trickle between bursts is no work. */
		if (was_confirmed)
			d->burst_events = 0;
		d->burst_events += events;
		d->in_quiet = false;
		return RT_DETECT_NOTHING;
	}
	if (!d->in_quiet) {
		d->in_quiet = true;
		d->quiet_since_us = quiet_start;
		d->quiet_handled = false;
	}
	if (d->quiet_handled || r->t_us - d->quiet_since_us < p->quiet_us)
		return RT_DETECT_NOTHING;
	d->quiet_handled = true;
	if (d->burst_events < p->min_burst_events)
		return RT_DETECT_NOTHING;
	return rt_detect_server_decide(d);
}
