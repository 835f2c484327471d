#include "rt_report.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static uint64_t
rt_report_drop_kib(uint64_t before, uint64_t after)
{
	return before > after ? before - after : 0;
}

uint64_t
rt_report_released_kib(const struct rt_round_record *rec)
{
	return rt_report_drop_kib(rec->rss_before_kib, rec->rss_after_kib);
}

bool
rt_report_is_follow_up(const struct rt_round_record *rec)
{
	return rec->trigger && !strcmp(rec->trigger, RT_REPORT_TRIGGER_PYTHON);
}

void
rt_report_escape(char *out, size_t size, const char *in, size_t max, bool quoted)
{
	static const char hex[] = "0123456789abcdef";
	size_t w = 0, i;
	for (i = 0; in[i] && i < max && w + 8 <= size; i++) {
		unsigned char c = (unsigned char)in[i];
		if (quoted && (c == '"' || c == '\\')) {
			out[w++] = '\\';
			out[w++] = (char)c;
		} else if (c < 0x20 || c >= 0x7f) {
			out[w++] = '\\';
			out[w++] = 'x';
			out[w++] = hex[c >> 4];
			out[w++] = hex[c & 0xf];
		} else {
			out[w++] = (char)c;
		}
	}
	if (in[i]) {
		memcpy(out + w, "...", 3);
		w += 3;
	}
	out[w] = '\0';
}

static size_t
rt_report_clamp(int n, size_t size)
{
	if (n < 0 || size == 0)
		return 0;
	return (size_t)n < size ? (size_t)n : size - 1;
}

size_t
rt_report_mib(char *buf, size_t size, uint64_t kib)
{
	return rt_report_clamp(snprintf(buf, size, "%.1f", (double)kib / 1024.0), size);
}

size_t
rt_report_ms(char *buf, size_t size, uint64_t us)
{
	return rt_report_clamp(snprintf(buf, size, "%" PRIu64 ".%03" PRIu64, us / 1000, us % 1000),
	                       size);
}

size_t
rt_report_ago(char *buf, size_t size, int64_t now_us, int64_t then_us)
{
	static const struct {
		int64_t below; /* seconds */
		int64_t unit;
		const char *suffix;
	} steps[] = {
	    {120, 1, "s"},
	    {7200, 60, "m"},
	    {172800, 3600, "h"},
	    {INT64_MAX, 86400, "d"},
	};
	if (then_us == 0)
		return rt_report_clamp(snprintf(buf, size, "never"), size);
	int64_t d = now_us / 1000000 - then_us / 1000000;
	if (d < 0)
		d = 0;
	size_t i = 0;
	while (d >= steps[i].below)
		i++;
	return rt_report_clamp(
	    snprintf(buf, size, "%" PRId64 "%s ago", d / steps[i].unit, steps[i].suffix), size);
}

/* The Python fields, in the shape of the line (key=value) or of the JSON object. */
static void
rt_report_python(char *buf, size_t size, const struct rt_round_record *rec, bool json)
{
	buf[0] = '\0';
	if (!rec->python)
		return;
	const char *cuda = rec->cuda ? rec->cuda : "skipped";
	if (json)
		snprintf(buf, size,
		         ",\"python\":\"%s\",\"gc_collected\":%" PRId64 ",\"cuda\":\"%s\"",
		         rec->python, rec->gc_collected, cuda);
	else
		snprintf(buf, size, " python=%s gc_collected=%" PRId64 " cuda=%s", rec->python,
		         rec->gc_collected, cuda);
}

size_t
rt_report_rss_line(char *buf, size_t size, const struct rt_round_record *rec)
{
	char python[160], after[32], before[32], released[32], live[32], took[32];
	rt_report_python(python, sizeof(python), rec, false);
	rt_report_mib(after, sizeof(after), rec->rss_after_kib);
	rt_report_mib(before, sizeof(before), rec->rss_before_kib);
	rt_report_mib(released, sizeof(released), rt_report_released_kib(rec));
	rt_report_mib(live, sizeof(live), rec->live_kib);
	rt_report_ms(took, sizeof(took), rec->duration_us);
	/* "[RSS] <tag>: <value> MB" is the shape NVFlare's users already grep; the details follow
	 * the value so that the same regular expression still finds the number. */
	int n =
	    snprintf(buf, size,
	             "[RSS] roundtrim pid=%d r=%" PRIu64 " %s: %s MB (before=%s MB "
	             "released=%s MB live=%s MB action=%s took=%s ms allocator=%s%s%s%s)\n",
	             rec->pid, rec->round, rec->trigger, after, before, released, live, rec->action,
	             took, rec->allocator, python, rec->note[0] ? " note=" : "", rec->note);
	return rt_report_clamp(n, size);
}

size_t
rt_report_json(char *buf, size_t size, const struct rt_round_record *rec)
{
	/* Every string put here is one of the library's own words (no quoting needed) except the
	 * note, which the library also writes itself without quotes or backslashes. */
	char python[160], confidence[32] = "";
	rt_report_python(python, sizeof(python), rec, true);
	if (!strcmp(rec->trigger, "auto"))
		snprintf(confidence, sizeof(confidence), ",\"confidence\":%" PRIu32,
		         rec->confidence_permille);
	int n =
	    snprintf(buf, size,
	             "{\"pid\":%d,\"round\":%" PRIu64 ",\"trigger\":\"%s\"%s,\"action\":\"%s\","
	             "\"rss_before_kib\":%" PRIu64 ",\"rss_after_kib\":%" PRIu64
	             ",\"anon_kib\":%" PRIu64 ",\"file_kib\":%" PRIu64 ",\"lazyfree_kib\":%" PRIu64
	             ",\"live_kib\":%" PRIu64 ",\"released_kib\":%" PRIu64
	             ",\"duration_us\":%" PRIu64 ",\"allocator\":\"%s\",\"descriptors\":\"%s\""
	             ",\"note\":\"%s\"%s,\"unix_time\":%" PRId64 ".%06" PRId64 "}\n",
	             rec->pid, rec->round, rec->trigger, confidence, rec->action,
	             rec->rss_before_kib, rec->rss_after_kib, rec->anon_kib, rec->file_kib,
	             rec->lazyfree_kib, rec->live_kib, rt_report_released_kib(rec),
	             rec->duration_us, rec->allocator, rec->descriptors ? rec->descriptors : "none",
	             rec->note, python, rec->unix_time_us / 1000000, rec->unix_time_us % 1000000);
	return rt_report_clamp(n, size);
}

size_t
rt_report_json_string(char *buf, size_t size, const char *s)
{
	size_t w = 0;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[8];
		int len;
		if (c == '"' || c == '\\')
			len = snprintf(esc, sizeof(esc), "\\%c", c);
		else if (c < 0x20)
			len = snprintf(esc, sizeof(esc), "\\u%04x", c);
		else
			len = snprintf(esc, sizeof(esc), "%c", c);
		for (int i = 0; i < len; i++) {
			if (w + 1 < size)
				buf[w] = esc[i];
			w++;
		}
	}
	if (size)
		buf[w < size ? w : size - 1] = '\0';
	return w;
}

size_t
rt_report_status_json(char *buf, size_t size, const struct rt_status_record *st)
{
	char program[256], fifo[512], stats[512], note[256], limits[512];
	rt_report_json_string(program, sizeof(program), st->program);
	rt_report_json_string(limits, sizeof(limits), st->action_limits ? st->action_limits : "");
	rt_report_json_string(note, sizeof(note), st->last_note ? st->last_note : "");
	rt_report_json_string(fifo, sizeof(fifo), st->fifo);
	rt_report_json_string(stats, sizeof(stats), st->stats);
	int n = snprintf(
	    buf, size,
	    "{\"pid\":%d,\"seq\":%" PRIu64 ",\"mode\":\"%s\""
	    ",\"program\":\"%s\",\"allocator\":\"%s\",\"descriptors\":\"%s\",\"rounds\":%" PRIu64
	    ",\"detected_rounds\":%" PRIu64 ",\"last_confidence\":%" PRIu32
	    ",\"gc_rounds\":%" PRIu32 ",\"actions\":%" PRIu64 ",\"last_action_round\":%" PRIu64
	    ",\"last_action\":\"%s\",\"last_trigger\":\"%s\",\"last_action_unix_time\":%" PRId64
	    ".%06" PRId64 ",\"last_rss_before_kib\":%" PRIu64 ",\"last_rss_after_kib\":%" PRIu64
	    ",\"last_released_kib\":%" PRIu64 ",\"last_duration_us\":%" PRIu64
	    ",\"last_note\":\"%s\",\"rss_kib\":%" PRIu64 ",\"live_kib\":%" PRIu64
	    ",\"released_total_kib\":%" PRIu64
	    ",\"action_limits\":\"%s\",\"fifo\":\"%s\",\"signal\":%d,\"stats\":\"%s\",\"unknown_"
	    "lines\":%" PRIu64 ",\"oversized_lines\":%" PRIu64 ",\"lost_records\":%" PRIu64
	    ",\"fork_of\":%d,\"seq_end\":%" PRIu64 "}\n",
	    st->pid, st->seq, st->mode ? st->mode : "announced", program, st->allocator,
	    st->descriptors ? st->descriptors : "none", st->rounds, st->detected_rounds,
	    st->last_confidence_permille, st->gc_rounds, st->actions, st->last_action_round,
	    st->last_action, st->last_trigger ? st->last_trigger : "none",
	    st->last_action_unix_us / 1000000, st->last_action_unix_us % 1000000,
	    st->last_rss_before_kib, st->last_rss_after_kib,
	    rt_report_drop_kib(st->last_rss_before_kib, st->last_rss_after_kib),
	    st->last_duration_us, note, st->rss_kib, st->live_kib, st->released_total_kib, limits,
	    fifo, st->signal, stats, st->unknown_lines, st->oversized_lines, st->lost_records,
	    st->fork_of, st->seq);
	return rt_report_clamp(n, size);
}

size_t
rt_report_inactive_json(char *buf, size_t size, int pid, const char *program)
{
	char name[256];
	rt_report_json_string(name, sizeof(name), program);
	return rt_report_clamp(
	    snprintf(buf, size, "{\"pid\":%d,\"program\":\"%s\",\"fifo\":\"\"}", pid, name), size);
}

/* A label value: backslash, quote and newline escaped (the text format's rule). */
static void
rt_report_label(char *out, size_t size, const char *s)
{
	size_t w = 0;
	for (; *s && w + 3 < size; s++) {
		if (*s == '\\' || *s == '"' || *s == '\n') {
			out[w++] = '\\';
			out[w++] = *s == '\n' ? 'n' : *s;
		} else {
			out[w++] = *s;
		}
	}
	out[w] = '\0';
}

size_t
rt_report_prom(char *buf, size_t size, const struct rt_prom_record *pr)
{
	char program[256], labels[320];
	rt_report_label(program, sizeof(program), pr->program);
	snprintf(labels, sizeof(labels), "pid=\"%d\",program=\"%s\"", pr->pid, program);
	int n = snprintf(
	    buf, size,
	    "# HELP roundtrim_info The library in this process: its allocator and action.\n"
	    "# TYPE roundtrim_info gauge\n"
	    "roundtrim_info{%s,allocator=\"%s\",action=\"%s\",version=\"%s\"} 1\n"
	    "# HELP roundtrim_rounds_total Rounds counted.\n"
	    "# TYPE roundtrim_rounds_total counter\n"
	    "roundtrim_rounds_total{%s} %" PRIu64 "\n"
	    "# HELP roundtrim_detected_rounds_total Rounds the library found itself.\n"
	    "# TYPE roundtrim_detected_rounds_total counter\n"
	    "roundtrim_detected_rounds_total{%s} %" PRIu64 "\n"
	    "# HELP roundtrim_detection_confidence How sure the library was of the last round it "
	    "found (0 to 1; 0 before the first).\n"
	    "# TYPE roundtrim_detection_confidence gauge\n"
	    "roundtrim_detection_confidence{%s} %" PRIu32 ".%03" PRIu32 "\n"
	    "# HELP roundtrim_actions_total Rounds and trims the allocator acted on.\n"
	    "# TYPE roundtrim_actions_total counter\n"
	    "roundtrim_actions_total{%s} %" PRIu64 "\n"
	    "# HELP roundtrim_released_bytes_total RSS the actions released.\n"
	    "# TYPE roundtrim_released_bytes_total counter\n"
	    "roundtrim_released_bytes_total{%s} %" PRIu64 "\n"
	    "# HELP roundtrim_rss_bytes RSS after the last round.\n"
	    "# TYPE roundtrim_rss_bytes gauge\n"
	    "roundtrim_rss_bytes{%s} %" PRIu64 "\n"
	    "# HELP roundtrim_last_action_rss_before_bytes RSS before the last action.\n"
	    "# TYPE roundtrim_last_action_rss_before_bytes gauge\n"
	    "roundtrim_last_action_rss_before_bytes{%s} %" PRIu64 "\n"
	    "# HELP roundtrim_last_action_rss_after_bytes RSS after the last action.\n"
	    "# TYPE roundtrim_last_action_rss_after_bytes gauge\n"
	    "roundtrim_last_action_rss_after_bytes{%s} %" PRIu64 "\n"
	    "# HELP roundtrim_last_action_timestamp_seconds When the last action ran; 0 if none.\n"
	    "# TYPE roundtrim_last_action_timestamp_seconds gauge\n"
	    "roundtrim_last_action_timestamp_seconds{%s} %" PRId64 ".%06" PRId64 "\n"
	    "# HELP roundtrim_lost_records_total Records the library's files could not take whole "
	    "(a full volume), dropped.\n"
	    "# TYPE roundtrim_lost_records_total counter\n"
	    "roundtrim_lost_records_total{%s} %" PRIu64 "\n"
	    "# end\n",
	    labels, pr->allocator, pr->action, pr->version, labels, pr->rounds, labels,
	    pr->detected_rounds, labels, pr->last_confidence_permille / 1000,
	    pr->last_confidence_permille % 1000, labels, pr->actions, labels,
	    pr->released_total_kib * 1024, labels, pr->rss_kib * 1024, labels,
	    pr->last_rss_before_kib * 1024, labels, pr->last_rss_after_kib * 1024, labels,
	    pr->last_action_unix_us / 1000000, pr->last_action_unix_us % 1000000, labels,
	    pr->lost_records);
	return rt_report_clamp(n, size);
}
