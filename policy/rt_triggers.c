#include "rt_triggers.h"
#include "rt_config.h"

#include <stddef.h>
#include <string.h>

void
rt_triggers_default_params(struct rt_triggers_params *p)
{
	memset(p, 0, sizeof(*p));
	/* Memory that stays high after an action needs another one only once the program has
	 * run on for a while; more often would only stall it. */
	p->repeat_us = 30 * 1000000ULL;
	/* The detector's readings (policy/rt_detect: tuned and tested at 50 ms). */
	p->detect_tick_us = 50 * 1000ULL;
	/* An idle process costs the worker five wake-ups a second. */
	p->idle_tick_us = 200 * 1000ULL;
	p->idle_after_us = 2000 * 1000ULL;
	p->watch_tick_us = 1000 * 1000ULL;
	/* Below a MiB, a release returns next to nothing: in NVFlare's job process RSS grows 2 to
	 * 37 MiB between two actions, in its client parent 0 to 0.2. */
	p->auto_growth_kib = 1024;
}

void
rt_triggers_config_params(struct rt_triggers_params *p, const struct rt_config *cfg)
{
	rt_triggers_default_params(p);
	p->interval_us = cfg->interval_us;
	p->pressure_permille = cfg->pressure_percent * 10;
	/* Rounded up: a limit that is not a whole KiB is crossed only above it. */
	p->rss_limit_kib = (cfg->rss_limit_bytes + 1023) / 1024;
}

void
rt_triggers_init(struct rt_triggers *t, const struct rt_triggers_params *p, bool auto_rounds,
                 uint64_t now_us, uint64_t bytes_requested)
{
	memset(t, 0, sizeof(*t));
	t->params = *p;
	t->mode = auto_rounds ? RT_MODE_AUTO : RT_MODE_MANUAL;
	/* The interval counts from the start. */
	t->last_action_us = now_us;
	t->bytes_at_last_action = bytes_requested;
}

void
rt_triggers_announced(struct rt_triggers *t)
{
	t->mode = RT_MODE_ANNOUNCED;
}

bool
rt_triggers_detecting(const struct rt_triggers *t)
{
	return t->mode == RT_MODE_AUTO;
}

bool
rt_triggers_watch_pressure(const struct rt_triggers *t)
{
	return t->params.pressure_permille != 0;
}

bool
rt_triggers_watch_rss(const struct rt_triggers *t)
{
	return t->params.rss_limit_kib != 0;
}

static bool
rt_triggers_may_repeat(const struct rt_triggers *t, uint64_t acted_us, uint64_t now_us)
{
	return acted_us == 0 || now_us - acted_us >= t->params.repeat_us;
}

enum rt_trigger
rt_triggers_due(const struct rt_triggers *t, const struct rt_trigger_reading *r)
{
	const struct rt_triggers_params *p = &t->params;
	if (p->pressure_permille && r->mem_limit &&
	    (__uint128_t)r->mem_used * 1000 >= (__uint128_t)r->mem_limit * p->pressure_permille &&
	    rt_triggers_may_repeat(t, t->pressure_acted_us, r->now_us))
		return RT_TRIGGER_PRESSURE;
	if (p->rss_limit_kib && r->rss_kib >= p->rss_limit_kib &&
	    rt_triggers_may_repeat(t, t->rss_acted_us, r->now_us))
		return RT_TRIGGER_RSS_LIMIT;
	/* An idle process is never touched: the interval needs allocations since the last action.
	 */
	if (p->interval_us && r->now_us - t->last_action_us >= p->interval_us &&
	    r->bytes_requested != t->bytes_at_last_action)
		return RT_TRIGGER_INTERVAL;
	return RT_TRIGGER_NONE;
}

void
rt_triggers_acted(struct rt_triggers *t, enum rt_trigger why, const struct rt_trigger_reading *r)
{
	t->last_action_us = r->now_us;
	t->bytes_at_last_action = r->bytes_requested;
	if (why == RT_TRIGGER_PRESSURE)
		t->pressure_acted_us = r->now_us;
	if (why == RT_TRIGGER_RSS_LIMIT)
		t->rss_acted_us = r->now_us;
}

void
rt_triggers_left(struct rt_triggers *t, uint64_t rss_after_kib)
{
	t->rss_left_kib = rss_after_kib;
}

bool
rt_triggers_auto_worth(const struct rt_triggers *t, uint64_t rss_kib)
{
	return !rss_kib || !t->rss_left_kib ||
	       rss_kib >= t->rss_left_kib + t->params.auto_growth_kib;
}

uint64_t
rt_triggers_wait_us(const struct rt_triggers *t, uint64_t now_us, uint64_t last_event_us)
{
	const struct rt_triggers_params *p = &t->params;
	uint64_t wait = UINT64_MAX;
	if (t->mode == RT_MODE_AUTO)
		wait = p->detect_tick_us;
	if ((p->pressure_permille || p->rss_limit_kib) && p->watch_tick_us < wait)
		wait = p->watch_tick_us;
	if (p->interval_us) {
		uint64_t due = t->last_action_us + p->interval_us;
		uint64_t until = due > now_us ? due - now_us : 0;
		/* An interval that found nothing to do looks again a whole interval later. */
		if (until == 0)
			until = p->interval_us;
		if (until < wait)
			wait = until;
	}
	if (t->mode == RT_MODE_AUTO && now_us - last_event_us >= p->idle_after_us &&
	    wait < p->idle_tick_us)
		wait = p->idle_tick_us;
	return wait;
}

bool
rt_triggers_quiet_go(uint64_t events_before, uint64_t events_now, uint64_t waited_us,
                     uint64_t bound_us)
{
	return events_now == events_before || waited_us >= bound_us;
}

const char *
rt_trigger_word(enum rt_trigger trigger)
{
	switch (trigger) {
	case RT_TRIGGER_INTERVAL:
		return "interval";
	case RT_TRIGGER_PRESSURE:
		return "pressure";
	case RT_TRIGGER_RSS_LIMIT:
		return "rss-limit";
	case RT_TRIGGER_NONE:
		break;
	}
	return "none";
}

const char *
rt_mode_word(enum rt_mode mode)
{
	switch (mode) {
	case RT_MODE_AUTO:
		return "auto";
	case RT_MODE_ANNOUNCED:
		return "announced";
	case RT_MODE_MANUAL:
		break;
	}
	return "manual";
}
