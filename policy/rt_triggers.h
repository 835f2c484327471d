/* rt_triggers: the actions that come without an announced round: rounds detected by the library
 * and their hand-over to announced ones, the interval, memory pressure and the RSS limit. */
#ifndef RT_TRIGGERS_H
#define RT_TRIGGERS_H

#include <stdbool.h>
#include <stdint.h>

struct rt_config;

/* Where rounds come from (the status file's "mode"). */
enum rt_mode {
	RT_MODE_AUTO,      /* detected, until the first announced round */
	RT_MODE_ANNOUNCED, /* a round came through the FIFO, the signal or the API */
	RT_MODE_MANUAL,    /* detection off (ROUNDTRIM_AUTO=off), nothing announced yet */
};

enum rt_trigger {
	RT_TRIGGER_NONE,
	RT_TRIGGER_INTERVAL,
	RT_TRIGGER_PRESSURE,
	RT_TRIGGER_RSS_LIMIT,
};

struct rt_triggers_params {
	uint64_t interval_us;       /* 0: off */
	uint32_t pressure_permille; /* 0: off */
	uint64_t rss_limit_kib;     /* 0: off */
	uint64_t repeat_us;         /* while memory stays above its mark, act at most this often */
	uint64_t detect_tick_us;    /* how often the detector wants a reading */
	uint64_t idle_tick_us;      /* ...slowed to this while the process neither allocates nor */
	uint64_t idle_after_us;     /* frees for this long */
	uint64_t watch_tick_us;     /* how often pressure and RSS are looked at otherwise */
	/* A round the library found itself acts only once RSS has grown this much since the last
	 * action left it. */
	uint64_t auto_growth_kib;
};

struct rt_triggers {
	struct rt_triggers_params params;
	enum rt_mode mode;
	uint64_t last_action_us; /* monotonic */
	uint64_t bytes_at_last_action;
	uint64_t pressure_acted_us; /* 0: never */
	uint64_t rss_acted_us;
	uint64_t rss_left_kib; /* RSS after the last action; 0: none yet */
};

/* What the worker read at a tick; 0 for what it did not read. */
struct rt_trigger_reading {
	uint64_t now_us;          /* monotonic, never 0 */
	uint64_t bytes_requested; /* cumulative, every thread */
	uint64_t mem_used;        /* bytes in use against mem_limit */
	uint64_t mem_limit;       /* 0: unknown */
	uint64_t rss_kib;
};

void rt_triggers_default_params(struct rt_triggers_params *p);
/* The defaults, with the settings (ROUNDTRIM_INTERVAL, ROUNDTRIM_PRESSURE, ROUNDTRIM_RSS_LIMIT)
 * in the units the triggers count in: the one place where they are converted. */
void rt_triggers_config_params(struct rt_triggers_params *p, const struct rt_config *cfg);
void rt_triggers_init(struct rt_triggers *t, const struct rt_triggers_params *p, bool auto_rounds,
                      uint64_t now_us, uint64_t bytes_requested);
/* A round was announced: detection hands over for good. */
void rt_triggers_announced(struct rt_triggers *t);
bool rt_triggers_detecting(const struct rt_triggers *t);
/* Whether an action is due at this reading, and what calls for it. */
enum rt_trigger rt_triggers_due(const struct rt_triggers *t, const struct rt_trigger_reading *r);
/* After any action, whatever called for it. */
void rt_triggers_acted(struct rt_triggers *t, enum rt_trigger why,
                       const struct rt_trigger_reading *r);
/* After any release: the RSS it left. */
void rt_triggers_left(struct rt_triggers *t, uint64_t rss_after_kib);
/* Whether a round the library found itself is worth an action at this RSS: one where RSS stayed
 * where the last action left it has nothing to give back. A process with no rounds of its own
 * finds some all the same (NVFlare's client parent: its poll for the next task, every 10 s,
 * allocates and gives back 6 MiB, and goes quiet); its RSS does not grow. 0 (unread): true. */
bool rt_triggers_auto_worth(const struct rt_triggers *t, uint64_t rss_kib);
/* How long the worker may wait for the next tick, given when the process last allocated or
 * freed; UINT64_MAX when nothing is periodic. */
uint64_t rt_triggers_wait_us(const struct rt_triggers *t, uint64_t now_us, uint64_t last_event_us);
/* Whether the pressure and RSS readings are wanted at all. */
bool rt_triggers_watch_pressure(const struct rt_triggers *t);
bool rt_triggers_watch_rss(const struct rt_triggers *t);

/* Before an action: whether to go now. A window in which no thread allocated or freed is a
 * quiet moment; after bound_us of waiting the action goes anyway. */
bool rt_triggers_quiet_go(uint64_t events_before, uint64_t events_now, uint64_t waited_us,
                          uint64_t bound_us);

const char *rt_trigger_word(enum rt_trigger trigger);
const char *rt_mode_word(enum rt_mode mode);

#endif
