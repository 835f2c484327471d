/* The readers of the library's formats, for the command and the tests: json-c for the JSON,
 * a strict scanner for the [RSS] line. Kept out of the library, which only writes. */
#include "rt_json_read.h"
#include "rt_report.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A field later versions added: a line from an earlier one lacks it (0, or ""), but one that
 * has it must have it right. */
static bool
rt_read_str_since(json_object *obj, const char *key, char *out, size_t size)
{
	out[0] = '\0';
	return !json_object_object_get_ex(obj, key, NULL) || rt_json_str(obj, key, out, size);
}

static bool
rt_read_u64_since(json_object *obj, const char *key, uint64_t *out)
{
	*out = 0;
	return !json_object_object_get_ex(obj, key, NULL) || rt_json_u64(obj, key, out);
}

static void
rt_read_point(struct rt_round_read *out)
{
	out->rec.trigger = out->trigger;
	out->rec.action = out->action;
	out->rec.allocator = out->allocator;
	out->rec.descriptors = out->descriptors;
	out->rec.note = out->note;
}

enum rt_read_result
rt_report_read_json(const char *line, struct rt_round_read *out)
{
	memset(out, 0, sizeof(*out));
	rt_read_point(out);
	out->rec.gc_collected = -1;
	json_object *obj = rt_json_read_object(line);
	if (!obj)
		return RT_READ_BAD;
	int64_t pid = 0;
	uint64_t confidence = 0;
	bool ok =
	    rt_json_i64(obj, "pid", &pid) && rt_json_u64(obj, "round", &out->rec.round) &&
	    rt_json_str(obj, "trigger", out->trigger, sizeof(out->trigger)) &&
	    rt_read_u64_since(obj, "confidence", &confidence) && confidence <= 1000 &&
	    rt_json_str(obj, "action", out->action, sizeof(out->action)) &&
	    rt_json_u64(obj, "rss_before_kib", &out->rec.rss_before_kib) &&
	    rt_json_u64(obj, "rss_after_kib", &out->rec.rss_after_kib) &&
	    rt_read_u64_since(obj, "anon_kib", &out->rec.anon_kib) &&
	    rt_read_u64_since(obj, "file_kib", &out->rec.file_kib) &&
	    rt_read_u64_since(obj, "lazyfree_kib", &out->rec.lazyfree_kib) &&
	    rt_json_u64(obj, "live_kib", &out->rec.live_kib) &&
	    rt_json_u64(obj, "duration_us", &out->rec.duration_us) &&
	    rt_json_str(obj, "allocator", out->allocator, sizeof(out->allocator)) &&
	    rt_read_str_since(obj, "descriptors", out->descriptors, sizeof(out->descriptors)) &&
	    rt_json_str(obj, "note", out->note, sizeof(out->note)) &&
	    rt_json_unix_us(obj, "unix_time", &out->rec.unix_time_us);
	out->rec.pid = (int)pid;
	out->rec.confidence_permille = (uint32_t)confidence;
	if (ok && rt_json_str(obj, "python", out->python, sizeof(out->python))) {
		out->rec.python = out->python;
		out->rec.cuda = out->cuda;
		ok = rt_json_i64(obj, "gc_collected", &out->rec.gc_collected) &&
		     rt_json_str(obj, "cuda", out->cuda, sizeof(out->cuda));
	}
	json_object_put(obj);
	return ok ? RT_READ_OK : RT_READ_BAD;
}

/* Reads "key=WORD" at *at (WORD: no blank, no ')'), moving past it and the blank after. */
static bool
rt_read_kv(const char **at, const char *key, char *out, size_t size)
{
	size_t klen = strlen(key);
	if (strncmp(*at, key, klen) || (*at)[klen] != '=')
		return false;
	const char *v = *at + klen + 1;
	size_t n = strcspn(v, " )");
	if (n == 0 || n >= size)
		return false;
	memcpy(out, v, n);
	out[n] = '\0';
	*at = v + n + (v[n] == ' ');
	return true;
}

static uint64_t
rt_read_mb_kib(double mb)
{
	return mb <= 0 ? 0 : (uint64_t)(mb * 1024.0 + 0.5);
}

enum rt_read_result
rt_report_read_rss_line(const char *line, struct rt_round_read *out)
{
	memset(out, 0, sizeof(*out));
	rt_read_point(out);
	out->rec.gc_collected = -1;
	int pid, used = 0;
	unsigned long long round;
	double after, before, released, live, took;
	if (sscanf(line,
	           "[RSS] roundtrim pid=%d r=%llu %63[a-z-]: %lf MB (before=%lf MB released=%lf "
	           "MB live=%lf MB action=%63[a-z_] took=%lf ms allocator=%63[a-z]%n",
	           &pid, &round, out->trigger, &after, &before, &released, &live, out->action,
	           &took, out->allocator, &used) != 10)
		return RT_READ_BAD;
	out->rec.pid = pid;
	out->rec.round = round;
	out->rec.rss_after_kib = rt_read_mb_kib(after);
	out->rec.rss_before_kib = rt_read_mb_kib(before);
	out->rec.live_kib = rt_read_mb_kib(live);
	out->rec.duration_us = (uint64_t)(took * 1000.0 + 0.5);
	const char *at = line + used;
	if (*at == ' ')
		at++;
	char gc[32];
	if (rt_read_kv(&at, "python", out->python, sizeof(out->python))) {
		char *end;
		if (!rt_read_kv(&at, "gc_collected", gc, sizeof(gc)) ||
		    !rt_read_kv(&at, "cuda", out->cuda, sizeof(out->cuda)))
			return RT_READ_BAD;
		out->rec.gc_collected = strtoll(gc, &end, 10);
		if (*end)
			return RT_READ_BAD;
		out->rec.python = out->python;
		out->rec.cuda = out->cuda;
	}
	if (!strncmp(at, "note=", 5)) {
		size_t n = strcspn(at + 5, ")");
		if (n >= sizeof(out->note))
			return RT_READ_BAD;
		memcpy(out->note, at + 5, n);
		at += 5 + n;
	}
	return strspn(at, ")") == 1 && strspn(at + 1, "\r\n") == strlen(at + 1) ? RT_READ_OK
	                                                                        : RT_READ_BAD;
}

enum rt_read_result
rt_report_read_status(const char *text, struct rt_status_read *out)
{
	memset(out, 0, sizeof(*out));
	struct rt_status_record *st = &out->st;
	st->program = out->program;
	st->allocator = out->allocator;
	st->descriptors = out->descriptors;
	st->last_action = out->last_action;
	st->last_note = out->last_note;
	st->mode = out->mode;
	st->last_trigger = out->last_trigger;
	st->fifo = out->fifo;
	st->action_limits = out->action_limits;
	st->stats = out->stats;
	json_object *obj = rt_json_read_object(text);
	if (!obj)
		return RT_READ_TORN;
	int64_t pid = 0, signal = 0;
	uint64_t gc_rounds = 0, seq_end = 0, fork_of = 0, confidence = 0;
	bool ok =
	    rt_json_i64(obj, "pid", &pid) && rt_json_u64(obj, "seq", &st->seq) &&
	    rt_json_str(obj, "mode", out->mode, sizeof(out->mode)) &&
	    rt_json_str(obj, "last_trigger", out->last_trigger, sizeof(out->last_trigger)) &&
	    rt_json_u64(obj, "seq_end", &seq_end) &&
	    rt_json_str(obj, "program", out->program, sizeof(out->program)) &&
	    rt_json_str(obj, "allocator", out->allocator, sizeof(out->allocator)) &&
	    rt_read_str_since(obj, "descriptors", out->descriptors, sizeof(out->descriptors)) &&
	    rt_json_u64(obj, "rounds", &st->rounds) &&
	    rt_read_u64_since(obj, "detected_rounds", &st->detected_rounds) &&
	    rt_read_u64_since(obj, "last_confidence", &confidence) && confidence <= 1000 &&
	    rt_json_u64(obj, "gc_rounds", &gc_rounds) &&
	    rt_json_u64(obj, "actions", &st->actions) &&
	    rt_json_u64(obj, "last_action_round", &st->last_action_round) &&
	    rt_json_str(obj, "last_action", out->last_action, sizeof(out->last_action)) &&
	    rt_json_unix_us(obj, "last_action_unix_time", &st->last_action_unix_us) &&
	    rt_json_u64(obj, "last_rss_before_kib", &st->last_rss_before_kib) &&
	    rt_json_u64(obj, "last_rss_after_kib", &st->last_rss_after_kib) &&
	    rt_json_u64(obj, "last_released_kib", &out->last_released_kib) &&
	    rt_json_u64(obj, "last_duration_us", &st->last_duration_us) &&
	    rt_json_str(obj, "last_note", out->last_note, sizeof(out->last_note)) &&
	    rt_json_u64(obj, "rss_kib", &st->rss_kib) &&
	    rt_json_u64(obj, "live_kib", &st->live_kib) &&
	    rt_json_u64(obj, "released_total_kib", &st->released_total_kib) &&
	    rt_json_str(obj, "action_limits", out->action_limits, sizeof(out->action_limits)) &&
	    rt_json_str(obj, "fifo", out->fifo, sizeof(out->fifo)) &&
	    rt_json_i64(obj, "signal", &signal) &&
	    rt_json_str(obj, "stats", out->stats, sizeof(out->stats)) &&
	    rt_json_u64(obj, "unknown_lines", &st->unknown_lines) &&
	    rt_json_u64(obj, "oversized_lines", &st->oversized_lines) &&
	    rt_read_u64_since(obj, "lost_records", &st->lost_records) &&
	    rt_read_u64_since(obj, "fork_of", &fork_of) && fork_of <= INT32_MAX;
	json_object_put(obj);
	st->pid = (int)pid;
	st->fork_of = (int)fork_of;
	st->signal = (int)signal;
	st->gc_rounds = (uint32_t)gc_rounds;
	st->last_confidence_permille = (uint32_t)confidence;
	if (!ok)
		return RT_READ_BAD;
	return st->seq == seq_end ? RT_READ_OK : RT_READ_TORN;
}
