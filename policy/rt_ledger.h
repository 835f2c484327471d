/* rt_ledger: the worker's book of rounds. Owns the batch rules (rounds from every trigger in one
 * wake-up, gc-rounds N mid-batch), the action decision, the round's record and the status record.
 */
#ifndef RT_LEDGER_H
#define RT_LEDGER_H

#include <stdbool.h>
#include <stdint.h>

#include "rt_proto.h"
#include "rt_report.h"
#include "rt_rounds.h"

#define RT_LEDGER_NOTE_MAX 96

struct rt_ledger {
	struct rt_rounds rounds;
	uint64_t actions;
	uint64_t released_total_kib;
	uint64_t unknown_lines;
	uint64_t oversized_lines;
	uint64_t status_seq;
	uint64_t detected_rounds;          /* rounds the library found itself */
	uint32_t last_confidence_permille; /* how sure it was of the last */
	uint64_t last_rss_kib;             /* after the last round handled */
	uint64_t last_live_kib;            /* at the last report that read it */
	bool action_failed_before;
	/* The last action's record (action NULL until the first); its note is last_note. */
	struct rt_round_record last;
	char last_note[RT_LEDGER_NOTE_MAX];
};

/* Rounds and trims gathered from every source in one wake-up. */
struct rt_batch {
	uint64_t rounds;  /* counted in this batch */
	uint64_t pending; /* counted but not yet given to the every-N rule */
	bool due;         /* some round among them is a multiple of N */
	bool trim;
	bool stats;
	bool announced;    /* some of its rounds came through the FIFO, the signal or the API */
	bool trim_asked;   /* a trim came through the FIFO or the API (not a trigger's) */
	uint64_t detected; /* rounds the library found itself */
	uint32_t confidence_permille; /* how sure it was of the last of them */
	const char *trigger;          /* the last source that added to it */
	/* The record of Python steps that ran on the main thread after their round's action
	 * (rt_batch_python): it counts no round, and releases only what the steps freed. */
	bool python;
	bool python_freed;
	uint64_t python_round; /* the last round the steps served */
};

/* What a FIFO line asks the worker to say on stderr, once for each kind. */
enum rt_ledger_say {
	RT_LEDGER_SAY_NOTHING,
	RT_LEDGER_SAY_FIRST_UNKNOWN,
	RT_LEDGER_SAY_FIRST_OVERSIZED,
};

/* What the worker does for a batch. */
struct rt_ledger_plan {
	bool handle;     /* anything to do at all */
	bool act;        /* the Python steps and the allocator's action */
	bool read_live;  /* the live-heap figure (it costs a walk on glibc: only when read) */
	bool rss_line;   /* an [RSS] line to the log */
	bool stats_line; /* a JSON line to the stats file */
};

void rt_ledger_init(struct rt_ledger *l, uint32_t every);

/* n rounds announced through trigger ("fifo", "signal"), to be counted when the batch closes. */
void rt_batch_count(struct rt_batch *b, uint64_t n, const char *trigger);
/* n rounds that their callers already counted (the API counts where it is called); `acts`: one
 * of them is a round that acts. */
void rt_batch_counted(struct rt_batch *b, uint64_t n, bool acts, const char *trigger);
/* One round whose end the library found itself ("auto"), with how sure it was (0 to 1000). */
void rt_batch_detected(struct rt_batch *b, uint32_t confidence_permille);
/* A trim of a trigger of the library's own (the interval, pressure, the RSS limit). */
void rt_batch_trim(struct rt_batch *b, const char *trigger);
/* A trim someone asked for through trigger ("fifo", "api"). */
void rt_batch_trim_asked(struct rt_batch *b, const char *trigger);
/* The Python steps handed off at round `round` have run ("python"); freed: they freed something
 * that a release should return. */
void rt_batch_python(struct rt_batch *b, uint64_t round, bool freed);
/* One FIFO line: rounds before a "gc-rounds N" count under the old N. */
enum rt_ledger_say rt_ledger_line(struct rt_ledger *l, struct rt_batch *b,
                                  const struct rt_proto_cmd *cmd);
/* The batch is complete: its remaining rounds go to the every-N rule. */
void rt_ledger_close(struct rt_ledger *l, struct rt_batch *b);

struct rt_ledger_plan rt_ledger_plan(const struct rt_batch *b, bool profile, bool have_stats);
/* Whether the batch acts only because of a round the library found itself (no announced round,
 * no trim, no Python steps' release): such an action is skipped when it is not worth it
 * (rt_triggers_auto_worth); the round still counts. */
bool rt_batch_acts_by_detection_only(const struct rt_batch *b);

/* The round's record before anything is measured; note is its buffer (RT_LEDGER_NOTE_MAX). A
 * Python follow-up's record carries the round its steps served. */
void rt_ledger_start(const struct rt_ledger *l, const struct rt_batch *b, int pid,
                     const char *allocator, char *note, struct rt_round_record *rec);
/* After the action (rec->action, duration and RSS filled; note is the record's buffer): books it.
 * Returns true when the action failed for the first time (the worker says so once). */
bool rt_ledger_acted(struct rt_ledger *l, struct rt_round_record *rec, char *note, bool failed);
/* Completes the record (merged note, live heap, time) and keeps what the status reports. */
void rt_ledger_finish(struct rt_ledger *l, const struct rt_batch *b, const struct rt_ledger_plan *p,
                      uint64_t live_kib, int64_t unix_time_us, struct rt_round_record *rec,
                      char *note);

/* What the process is, for the status and Prometheus records. */
struct rt_ledger_facts {
	int pid;
	const char *mode; /* where rounds come from: policy/rt_triggers' word */
	const char *program;
	const char *allocator;
	const char *action;
	const char *action_limits; /* policy/rt_allocator's words, or NULL */
	const char *fifo;
	const char *stats;
	int signal;
	uint64_t lost_records;   /* records the library's files could not take (rt_report) */
	const char *descriptors; /* policy/rt_file_rules' word */
	int fork_of;             /* policy/rt_child_fork_of: 0 in a process of its own */
};

/* The next status record (its seq counts rewrites). */
void rt_ledger_status(struct rt_ledger *l, const struct rt_ledger_facts *f,
                      struct rt_status_record *st);
void rt_ledger_prom(const struct rt_ledger *l, const struct rt_ledger_facts *f, const char *version,
                    struct rt_prom_record *pr);

/* Appends a word to a note, space-separated. */
void rt_ledger_note(char *note, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
