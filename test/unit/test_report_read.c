/* Each reader reads back what its writer wrote (round trip), and refuses what it did not. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "rt_report.h"

static struct rt_round_record
record(bool python)
{
	return (struct rt_round_record){.pid = 4321,
	                                .round = 12,
	                                .trigger = "fifo",
	                                .action = "malloc_trim",
	                                .allocator = "glibc",
	                                .descriptors = "keeper",
	                                .rss_before_kib = 3072000,
	                                .rss_after_kib = 204800,
	                                .anon_kib = 150000,
	                                .file_kib = 50000,
	                                .lazyfree_kib = 4800,
	                                .live_kib = 153600,
	                                .duration_us = 1250,
	                                .unix_time_us = 1700000000123456,
	                                .note = "merged=3",
	                                .python = python ? "collected" : NULL,
	                                .gc_collected = python ? 321 : -1,
	                                .cuda = python ? "off" : NULL};
}

static void
same_strings(const char *a, const char *b)
{
	cr_assert_str_eq(a ? a : "", b ? b : "");
}

Test(report_read, stats_line_round_trip)
{
	for (int python = 0; python < 2; python++) {
		struct rt_round_record rec = record(python);
		char line[RT_REPORT_LINE_MAX];
		rt_report_json(line, sizeof(line), &rec);
		struct rt_round_read got;
		cr_assert_eq(rt_report_read_json(line, &got), RT_READ_OK, "%s", line);
		cr_assert_eq(got.rec.pid, rec.pid);
		cr_assert_eq(got.rec.round, rec.round);
		cr_assert_eq(got.rec.rss_before_kib, rec.rss_before_kib);
		cr_assert_eq(got.rec.rss_after_kib, rec.rss_after_kib);
		cr_assert_eq(got.rec.anon_kib, rec.anon_kib);
		cr_assert_eq(got.rec.file_kib, rec.file_kib);
		cr_assert_eq(got.rec.lazyfree_kib, rec.lazyfree_kib);
		cr_assert_eq(got.rec.live_kib, rec.live_kib);
		cr_assert_eq(got.rec.duration_us, rec.duration_us);
		cr_assert_eq(got.rec.unix_time_us, rec.unix_time_us);
		cr_assert_eq(got.rec.gc_collected, rec.gc_collected);
		same_strings(got.rec.trigger, rec.trigger);
		same_strings(got.rec.action, rec.action);
		same_strings(got.rec.allocator, rec.allocator);
		same_strings(got.rec.descriptors, rec.descriptors);
		same_strings(got.rec.note, rec.note);
		same_strings(got.rec.python, rec.python);
		same_strings(got.rec.cuda, rec.cuda);
		cr_assert_eq(got.rec.confidence_permille, 0);
	}
}

/* The confidence of a detected round reads back; a line without it (an announced round, or a
 * version before it) reads as 0; one out of 0-1000 or not a number is refused. */
Test(report_read, stats_line_confidence)
{
	struct rt_round_record rec = record(false);
	rec.trigger = "auto";
	rec.confidence_permille = 640;
	char line[RT_REPORT_LINE_MAX], bad[RT_REPORT_LINE_MAX];
	rt_report_json(line, sizeof(line), &rec);
	struct rt_round_read got;
	cr_assert_eq(rt_report_read_json(line, &got), RT_READ_OK, "%s", line);
	cr_assert_eq(got.rec.confidence_permille, 640);
	cr_assert_str_eq(got.rec.trigger, "auto");
	const char *field = strstr(line, ",\"confidence\":640");
	cr_assert_not_null(field);
	snprintf(bad, sizeof(bad), "%.*s,\"confidence\":1001%s", (int)(field - line), line,
	         field + 17);
	cr_assert_eq(rt_report_read_json(bad, &got), RT_READ_BAD, "%s", bad);
	snprintf(bad, sizeof(bad), "%.*s,\"confidence\":\"high\"%s", (int)(field - line), line,
	         field + 17);
	cr_assert_eq(rt_report_read_json(bad, &got), RT_READ_BAD, "%s", bad);
}

Test(report_read, rss_line_round_trip_to_a_tenth_of_a_mib)
{
	for (int python = 0; python < 2; python++) {
		struct rt_round_record rec = record(python);
		char line[RT_REPORT_LINE_MAX];
		rt_report_rss_line(line, sizeof(line), &rec);
		struct rt_round_read got;
		cr_assert_eq(rt_report_read_rss_line(line, &got), RT_READ_OK, "%s", line);
		cr_assert_eq(got.rec.pid, rec.pid);
		cr_assert_eq(got.rec.round, rec.round);
		cr_assert_leq(
		    llabs((long long)got.rec.rss_after_kib - (long long)rec.rss_after_kib), 52);
		cr_assert_leq(
		    llabs((long long)got.rec.rss_before_kib - (long long)rec.rss_before_kib), 52);
		cr_assert_eq(got.rec.duration_us, rec.duration_us);
		cr_assert_eq(got.rec.gc_collected, rec.gc_collected);
		same_strings(got.rec.trigger, rec.trigger);
		same_strings(got.rec.action, rec.action);
		same_strings(got.rec.allocator, rec.allocator);
		same_strings(got.rec.note, rec.note);
		same_strings(got.rec.python, rec.python);
		same_strings(got.rec.cuda, rec.cuda);
	}
}

Test(report_read, refuses_what_is_not_its_format)
{
	struct rt_round_read got;
	static const char *const bad_json[] = {
	    "",         "{}",
	    "[1]",      "{\"pid\":1} junk",
	    "not json", "{\"pid\":1,\"round\":-2,\"trigger\":\"fifo\",\"action\":\"none\"}"};
	for (size_t i = 0; i < sizeof(bad_json) / sizeof(bad_json[0]); i++)
		cr_assert_eq(rt_report_read_json(bad_json[i], &got), RT_READ_BAD, "%s",
		             bad_json[i]);
	static const char *const bad_rss[] = {
	    "", "[RSS] CA s=site-1 r=3 send: 1523.4 MB",
	    ("[RSS] roundtrim pid=1 r=1 fifo: 1.0 MB (before=2.0 MB released=1.0 MB live=0.5 MB "
	     "action=malloc_trim took=0.5 ms allocator=glibc) trailing")};
	for (size_t i = 0; i < sizeof(bad_rss) / sizeof(bad_rss[0]); i++)
		cr_assert_eq(rt_report_read_rss_line(bad_rss[i], &got), RT_READ_BAD, "%s",
		             bad_rss[i]);
}

/* 0.1.0 wrote no RSS split: its stats files still read, as zeros; a split that is there must be
 * a count. */
Test(report_read, stats_line_before_the_rss_split)
{
	struct rt_round_read got;
	static const char old[] =
	    "{\"pid\":100,\"round\":1,\"trigger\":\"fifo\",\"action\":\"malloc_trim\","
	    "\"rss_before_kib\":2048,\"rss_after_kib\":1024,\"live_kib\":512,"
	    "\"released_kib\":1024,\"duration_us\":1000,\"allocator\":\"glibc\",\"note\":\"\","
	    "\"unix_time\":1795397620.000000}";
	cr_assert_eq(rt_report_read_json(old, &got), RT_READ_OK);
	cr_assert_eq(got.rec.anon_kib, 0);
	cr_assert_str_eq(got.rec.descriptors, "", "0.1.0 did not say whose table");
	cr_assert_eq(got.rec.rss_after_kib, 1024);
	char bad[sizeof(old) + 32];
	snprintf(bad, sizeof(bad), "{\"anon_kib\":\"many\",%s", old + 1);
	cr_assert_eq(rt_report_read_json(bad, &got), RT_READ_BAD, "%s", bad);
}

static struct rt_status_record
status(void)
{
	return (struct rt_status_record){.pid = 77,
	                                 .seq = 9,
	                                 .mode = "announced",
	                                 .last_trigger = "pressure",
	                                 .program = "py\"thon3",
	                                 .allocator = "jemalloc",
	                                 .descriptors = "shared",
	                                 .rounds = 10,
	                                 .gc_rounds = 3,
	                                 .actions = 3,
	                                 .last_action_round = 9,
	                                 .last_action = "jemalloc_purge",
	                                 .last_action_unix_us = 1700000001000002,
	                                 .last_rss_before_kib = 9000,
	                                 .last_rss_after_kib = 4000,
	                                 .last_duration_us = 1234,
	                                 .last_note = "merged=2",
	                                 .rss_kib = 4096,
	                                 .live_kib = 1024,
	                                 .released_total_kib = 8192,
	                                 .fifo = "/tmp/r t/77.fifo",
	                                 .action_limits = "only \"some\"",
	                                 .signal = 42,
	                                 .stats = "",
	                                 .unknown_lines = 5,
	                                 .oversized_lines = 6,
	                                 .lost_records = 7,
	                                 .fork_of = 70,
	                                 .detected_rounds = 8,
	                                 .last_confidence_permille = 925};
}

Test(report_read, status_round_trip)
{
	struct rt_status_record st = status();
	char buf[RT_REPORT_LINE_MAX * 2];
	size_t n = rt_report_status_json(buf, sizeof(buf), &st);
	/* The file pads a shorter object with blanks. */
	memset(buf + n - 1, ' ', 40);
	strcpy(buf + n + 39, "\n");
	struct rt_status_read got;
	cr_assert_eq(rt_report_read_status(buf, &got), RT_READ_OK, "%s", buf);
	cr_assert_eq(got.st.pid, st.pid);
	cr_assert_eq(got.st.seq, st.seq);
	cr_assert_eq(got.st.rounds, st.rounds);
	cr_assert_eq(got.st.detected_rounds, st.detected_rounds);
	cr_assert_eq(got.st.last_confidence_permille, st.last_confidence_permille);
	cr_assert_eq(got.st.gc_rounds, st.gc_rounds);
	cr_assert_eq(got.st.actions, st.actions);
	cr_assert_eq(got.st.last_action_round, st.last_action_round);
	cr_assert_eq(got.st.last_action_unix_us, st.last_action_unix_us);
	cr_assert_eq(got.st.last_rss_before_kib, st.last_rss_before_kib);
	cr_assert_eq(got.st.last_rss_after_kib, st.last_rss_after_kib);
	cr_assert_eq(got.last_released_kib, 5000);
	cr_assert_eq(got.st.last_duration_us, st.last_duration_us);
	cr_assert_eq(got.st.rss_kib, st.rss_kib);
	cr_assert_eq(got.st.live_kib, st.live_kib);
	cr_assert_eq(got.st.released_total_kib, st.released_total_kib);
	cr_assert_eq(got.st.signal, st.signal);
	cr_assert_eq(got.st.unknown_lines, st.unknown_lines);
	cr_assert_eq(got.st.oversized_lines, st.oversized_lines);
	cr_assert_eq(got.st.lost_records, st.lost_records);
	cr_assert_eq(got.st.fork_of, st.fork_of);
	cr_assert_str_eq(got.st.program, st.program);
	cr_assert_str_eq(got.st.allocator, st.allocator);
	cr_assert_str_eq(got.st.descriptors, st.descriptors);
	cr_assert_str_eq(got.st.last_action, st.last_action);
	cr_assert_str_eq(got.st.mode, st.mode);
	cr_assert_str_eq(got.st.last_trigger, st.last_trigger);
	cr_assert_str_eq(got.st.last_note, st.last_note);
	cr_assert_str_eq(got.st.fifo, st.fifo);
	cr_assert_str_eq(got.st.action_limits, st.action_limits);
	cr_assert_str_eq(got.st.stats, st.stats);
}

/* detected_rounds and last_confidence came later: a status without them reads as none found. */
Test(report_read, status_detection_since_it_came)
{
	struct rt_status_record st = status();
	char buf[RT_REPORT_LINE_MAX * 2], cut[RT_REPORT_LINE_MAX * 2];
	rt_report_status_json(buf, sizeof(buf), &st);
	const char *field = strstr(buf, ",\"detected_rounds\":8,\"last_confidence\":925");
	cr_assert_not_null(field, "%s", buf);
	snprintf(cut, sizeof(cut), "%.*s%s", (int)(field - buf), buf, field + 42);
	struct rt_status_read got;
	cr_assert_eq(rt_report_read_status(cut, &got), RT_READ_OK, "%s", cut);
	cr_assert_eq(got.st.detected_rounds, 0);
	cr_assert_eq(got.st.last_confidence_permille, 0);
	snprintf(cut, sizeof(cut), "%.*s,\"detected_rounds\":8,\"last_confidence\":2000%s",
	         (int)(field - buf), buf, field + 42);
	cr_assert_eq(rt_report_read_status(cut, &got), RT_READ_BAD, "%s", cut);
}

/* A rewrite in place caught half done: the two seq fields differ, or the JSON is cut. */
Test(report_read, status_torn_is_told_apart)
{
	struct rt_status_record st = status();
	char buf[RT_REPORT_LINE_MAX * 2];
	size_t n = rt_report_status_json(buf, sizeof(buf), &st);
	char *end = strstr(buf, "\"seq_end\":9");
	cr_assert_not_null(end);
	end[10] = '8';
	struct rt_status_read got;
	cr_assert_eq(rt_report_read_status(buf, &got), RT_READ_TORN);
	rt_report_status_json(buf, sizeof(buf), &st);
	buf[n / 2] = '\0';
	cr_assert_eq(rt_report_read_status(buf, &got), RT_READ_TORN);
	cr_assert_eq(rt_report_read_status("{\"pid\":1}", &got), RT_READ_BAD);
}

/* lost_records came later: a status without it is read as none lost; a wrong one is refused. */
Test(report_read, status_lost_records_since_it_came)
{
	struct rt_status_record st = status();
	char buf[RT_REPORT_LINE_MAX * 2], cut[RT_REPORT_LINE_MAX * 2];
	rt_report_status_json(buf, sizeof(buf), &st);
	const char *field = strstr(buf, ",\"lost_records\":7");
	cr_assert_not_null(field);
	snprintf(cut, sizeof(cut), "%.*s%s", (int)(field - buf), buf, field + 17);
	struct rt_status_read got;
	cr_assert_eq(rt_report_read_status(cut, &got), RT_READ_OK, "%s", cut);
	cr_assert_eq(got.st.lost_records, 0);
	snprintf(cut, sizeof(cut), "%.*s,\"lost_records\":\"7\"%s", (int)(field - buf), buf,
	         field + 17);
	cr_assert_eq(rt_report_read_status(cut, &got), RT_READ_BAD, "%s", cut);
}

/* fork_of came later: a status without it is a process of its own; a wrong one is refused. */
Test(report_read, status_fork_of_since_it_came)
{
	struct rt_status_record st = status();
	char buf[RT_REPORT_LINE_MAX * 2], cut[RT_REPORT_LINE_MAX * 2];
	rt_report_status_json(buf, sizeof(buf), &st);
	const char *field = strstr(buf, ",\"fork_of\":70");
	cr_assert_not_null(field);
	snprintf(cut, sizeof(cut), "%.*s%s", (int)(field - buf), buf, field + 13);
	struct rt_status_read got;
	cr_assert_eq(rt_report_read_status(cut, &got), RT_READ_OK, "%s", cut);
	cr_assert_eq(got.st.fork_of, 0);
	snprintf(cut, sizeof(cut), "%.*s,\"fork_of\":-3%s", (int)(field - buf), buf, field + 13);
	cr_assert_eq(rt_report_read_status(cut, &got), RT_READ_BAD, "%s", cut);
	snprintf(cut, sizeof(cut), "%.*s,\"fork_of\":4294967296%s", (int)(field - buf), buf,
	         field + 13);
	cr_assert_eq(rt_report_read_status(cut, &got), RT_READ_BAD, "%s", cut);
}

Test(report, prom_file)
{
	struct rt_prom_record pr = {.pid = 12,
	                            .program = "py\"th\\on\n",
	                            .allocator = "glibc",
	                            .action = "malloc_trim",
	                            .version = "0.1.0",
	                            .rounds = 7,
	                            .actions = 3,
	                            .released_total_kib = 2,
	                            .rss_kib = 1,
	                            .last_rss_before_kib = 4,
	                            .last_rss_after_kib = 3,
	                            .last_action_unix_us = 1700000000000001,
	                            .lost_records = 5,
	                            .detected_rounds = 6,
	                            .last_confidence_permille = 75};
	char buf[4096];
	size_t n = rt_report_prom(buf, sizeof(buf), &pr);
	cr_assert_eq(n, strlen(buf));
	cr_assert_not_null(
	    strstr(buf, "roundtrim_rounds_total{pid=\"12\",program=\"py\\\"th\\\\on\\n\"} 7\n"),
	    "%s", buf);
	cr_assert_not_null(strstr(buf, "roundtrim_released_bytes_total{pid=\"12\""));
	cr_assert_not_null(strstr(buf, "} 2048\n"));
	cr_assert_not_null(
	    strstr(buf, "roundtrim_last_action_timestamp_seconds{pid=\"12\",program="));
	cr_assert_not_null(strstr(buf, "} 1700000000.000001\n"));
	cr_assert_not_null(strstr(buf, "roundtrim_detected_rounds_total{pid=\"12\",program="));
	cr_assert_not_null(strstr(buf, "roundtrim_detection_confidence{pid=\"12\",program="));
	cr_assert_not_null(strstr(buf, "} 0.075\n"), "%s", buf);
	cr_assert_not_null(strstr(buf, "# TYPE roundtrim_lost_records_total counter\n"
	                               "roundtrim_lost_records_total{pid=\"12\",program="));
	cr_assert_not_null(strstr(buf, "} 5\n# end\n"), "%s", buf);
	cr_assert_eq(strcmp(buf + n - 6, "# end\n"), 0, "%s", buf + n - 10);
}
