#include "rt_ledger.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void
rt_ledger_init(struct rt_ledger *l, uint32_t every)
{
	memset(l, 0, sizeof(*l));
	rt_rounds_init(&l->rounds, every);
	l->last.note = l->last_note;
}

static void
rt_batch_add(struct rt_batch *b, uint64_t n, const char *trigger)
{
	b->rounds += n;
	b->pending += n;
	b->trigger = trigger;
}

void
rt_batch_count(struct rt_batch *b, uint64_t n, const char *trigger)
{
	if (!n)
		return;
	rt_batch_add(b, n, trigger);
	b->announced = true;
}

void
rt_batch_counted(struct rt_batch *b, uint64_t n, bool acts, const char *trigger)
{
	/* An acting round's flag may reach the worker a wake-up before its count does. */
	if (!n && !acts)
		return;
	rt_batch_add(b, n, trigger);
	b->pending -= n;
	b->announced = true;
	b->due |= acts;
}

void
rt_batch_python(struct rt_batch *b, uint64_t round, bool freed)
{
	b->python = true;
	b->python_freed = freed;
	b->python_round = round;
	b->trigger = RT_REPORT_TRIGGER_PYTHON;
}

void
rt_batch_detected(struct rt_batch *b, uint32_t confidence_permille)
{
	rt_batch_add(b, 1, "auto");
	b->detected++;
	b->confidence_permille = confidence_permille;
}

void
rt_batch_trim(struct rt_batch *b, const char *trigger)
{
	b->trim = true;
	b->trigger = trigger;
}

void
rt_batch_trim_asked(struct rt_batch *b, const char *trigger)
{
	rt_batch_trim(b, trigger);
	b->trim_asked = true;
}

enum rt_ledger_say
rt_ledger_line(struct rt_ledger *l, struct rt_batch *b, const struct rt_proto_cmd *cmd)
{
	switch (cmd->kind) {
	case RT_PROTO_ROUND:
		rt_batch_count(b, 1, "fifo");
		break;
	case RT_PROTO_TRIM:
		rt_batch_trim_asked(b, "fifo");
		break;
	case RT_PROTO_GC_ROUNDS:
		rt_ledger_close(l, b);
		rt_rounds_set_every(&l->rounds, (uint32_t)cmd->arg);
		break;
	case RT_PROTO_STATS:
		b->stats = true;
		break;
	case RT_PROTO_EMPTY:
		break;
	case RT_PROTO_UNKNOWN:
		return l->unknown_lines++ == 0 ? RT_LEDGER_SAY_FIRST_UNKNOWN
		                               : RT_LEDGER_SAY_NOTHING;
	case RT_PROTO_OVERSIZED:
		return l->oversized_lines++ == 0 ? RT_LEDGER_SAY_FIRST_OVERSIZED
		                                 : RT_LEDGER_SAY_NOTHING;
	}
	return RT_LEDGER_SAY_NOTHING;
}

void
rt_ledger_close(struct rt_ledger *l, struct rt_batch *b)
{
	b->due |= rt_rounds_add(&l->rounds, b->pending) != 0;
	b->pending = 0;
}

struct rt_ledger_plan
rt_ledger_plan(const struct rt_batch *b, bool profile, bool have_stats)
{
	struct rt_ledger_plan p = {.handle = b->rounds || b->trim || b->stats || b->python};
	if (!p.handle)
		return p;
	p.act = b->due || b->trim || b->python_freed;
	p.read_live = profile || have_stats || b->stats;
	/* A stats request without a stats file is answered on the log. */
	p.rss_line = profile || (b->stats && !have_stats);
	p.stats_line = have_stats;
	return p;
}

bool
rt_batch_acts_by_detection_only(const struct rt_batch *b)
{
	return b->due && !b->announced && !b->trim && !b->python;
}

void
rt_ledger_start(const struct rt_ledger *l, const struct rt_batch *b, int pid, const char *allocator,
                char *note, struct rt_round_record *rec)
{
	note[0] = '\0';
	*rec = (struct rt_round_record){
	    .pid = pid,
	    .round = b->python ? b->python_round : rt_rounds_counted(&l->rounds),
	    .trigger = b->trigger ? b->trigger : "fifo",
	    .confidence_permille = b->confidence_permille,
	    .action = "none",
	    .allocator = allocator,
	    .note = note,
	    .gc_collected = -1,
	};
}

void
rt_ledger_note(char *note, size_t size, const char *fmt, ...)
{
	size_t len = strlen(note);
	if (len && len + 1 < size)
		note[len++] = ' ';
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(note + len, size - len, fmt, ap);
	va_end(ap);
}

bool
rt_ledger_acted(struct rt_ledger *l, struct rt_round_record *rec, char *note, bool failed)
{
	bool first_failure = false;
	if (failed) {
		rt_ledger_note(note, RT_LEDGER_NOTE_MAX, "%s-failed", rec->action);
		first_failure = !l->action_failed_before;
		l->action_failed_before = true;
	}
	if (!rt_report_is_follow_up(rec))
		l->actions++;
	l->released_total_kib += rt_report_released_kib(rec);
	return first_failure;
}

void
rt_ledger_finish(struct rt_ledger *l, const struct rt_batch *b, const struct rt_ledger_plan *p,
                 uint64_t live_kib, int64_t unix_time_us, struct rt_round_record *rec, char *note)
{
	if (b->rounds > 1)
		rt_ledger_note(note, RT_LEDGER_NOTE_MAX, "merged=%llu",
		               (unsigned long long)b->rounds);
	if (b->detected) {
		l->detected_rounds += b->detected;
		l->last_confidence_permille = b->confidence_permille;
	}
	if (p->read_live)
		l->last_live_kib = live_kib;
	rec->live_kib = l->last_live_kib;
	rec->unix_time_us = unix_time_us;
	l->last_rss_kib = rec->rss_after_kib;
	if (!p->act)
		return;
	l->last = *rec;
	snprintf(l->last_note, sizeof(l->last_note), "%s", rec->note);
	l->last.note = l->last_note;
}

void
rt_ledger_status(struct rt_ledger *l, const struct rt_ledger_facts *f, struct rt_status_record *st)
{
	*st = (struct rt_status_record){
	    .pid = f->pid,
	    .seq = ++l->status_seq,
	    .mode = f->mode,
	    .last_trigger = l->last.trigger ? l->last.trigger : "none",
	    .program = f->program,
	    .allocator = f->allocator,
	    .descriptors = f->descriptors,
	    .rounds = rt_rounds_counted(&l->rounds),
	    .detected_rounds = l->detected_rounds,
	    .last_confidence_permille = l->last_confidence_permille,
	    .gc_rounds = rt_rounds_every(&l->rounds),
	    .actions = l->actions,
	    .last_action_round = l->last.round,
	    .last_action = l->last.action ? l->last.action : "none",
	    .last_action_unix_us = l->last.unix_time_us,
	    .last_rss_before_kib = l->last.rss_before_kib,
	    .last_rss_after_kib = l->last.rss_after_kib,
	    .last_duration_us = l->last.duration_us,
	    .last_note = l->last_note,
	    .rss_kib = l->last_rss_kib,
	    .live_kib = l->last_live_kib,
	    .released_total_kib = l->released_total_kib,
	    .action_limits = f->action_limits ? f->action_limits : "",
	    .fifo = f->fifo,
	    .signal = f->signal,
	    .stats = f->stats,
	    .unknown_lines = l->unknown_lines,
	    .oversized_lines = l->oversized_lines,
	    .lost_records = f->lost_records,
	    .fork_of = f->fork_of,
	};
}

void
rt_ledger_prom(const struct rt_ledger *l, const struct rt_ledger_facts *f, const char *version,
               struct rt_prom_record *pr)
{
	*pr = (struct rt_prom_record){
	    .pid = f->pid,
	    .program = f->program,
	    .allocator = f->allocator,
	    .action = f->action,
	    .version = version,
	    .rounds = rt_rounds_counted(&l->rounds),
	    .detected_rounds = l->detected_rounds,
	    .last_confidence_permille = l->last_confidence_permille,
	    .actions = l->actions,
	    .released_total_kib = l->released_total_kib,
	    .rss_kib = l->last_rss_kib,
	    .last_rss_before_kib = l->last.rss_before_kib,
	    .last_rss_after_kib = l->last.rss_after_kib,
	    .last_action_unix_us = l->last.unix_time_us,
	    .lost_records = f->lost_records,
	};
}
