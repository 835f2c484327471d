#include <criterion/criterion.h>
#include <regex.h>
#include <string.h>

#include "rt_report.h"

static struct rt_round_record
record(void)
{
	return (struct rt_round_record){.pid = 4321,
	                                .round = 12,
	                                .trigger = "fifo",
	                                .action = "malloc_trim",
	                                .allocator = "glibc",
	                                .descriptors = "keeper",
	                                .rss_before_kib = 3072,
	                                .rss_after_kib = 2048,
	                                .live_kib = 1536,
	                                .duration_us = 1250,
	                                .unix_time_us = 1700000000123456,
	                                .note = ""};
}

static struct rt_status_record
status(void)
{
	return (struct rt_status_record){.pid = 77,
	                                 .seq = 12,
	                                 .mode = "auto",
	                                 .last_trigger = "fifo",
	                                 .program = "python3",
	                                 .allocator = "jemalloc",
	                                 .descriptors = "private",
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
	                                 .fifo = "/tmp/rt/77.fifo",
	                                 .signal = 42,
	                                 .stats = "",
	                                 .unknown_lines = 5,
	                                 .oversized_lines = 6,
	                                 .lost_records = 7,
	                                 .fork_of = 70};
}

static void
expect_contains(const char *haystack, const char *needle)
{
	cr_assert_not_null(strstr(haystack, needle), "\"%s\" lacks \"%s\"", haystack, needle);
}

static bool
matches(const char *pattern, const char *text)
{
	regex_t re;
	cr_assert_eq(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0);
	bool ok = regexec(&re, text, 0, NULL, 0) == 0;
	regfree(&re);
	return ok;
}

#define NVFLARE_RSS_RE "^\\[RSS\\] [^:]*: [0-9]+\\.[0-9] MB"

Test(report, rss_line_has_nvflare_shape)
{
	struct rt_round_record rec = record();
	char buf[RT_REPORT_LINE_MAX];
	size_t n = rt_report_rss_line(buf, sizeof(buf), &rec);
	cr_assert_eq(n, strlen(buf));
	cr_assert(matches(NVFLARE_RSS_RE, buf), "%s", buf);
	cr_assert(matches("^\\[RSS\\] [^:]*: 2\\.0 MB ", buf), "%s", buf);
	cr_assert_eq(buf[n - 1], '\n');
	cr_assert_eq(strchr(buf, '\n'), buf + n - 1);
}

Test(report, rss_line_details)
{
	struct rt_round_record rec = record();
	char buf[RT_REPORT_LINE_MAX];
	rt_report_rss_line(buf, sizeof(buf), &rec);
	expect_contains(buf, "pid=4321");
	expect_contains(buf, "r=12");
	expect_contains(buf, "fifo: 2.0 MB");
	expect_contains(buf, "before=3.0 MB");
	expect_contains(buf, "released=1.0 MB");
	expect_contains(buf, "live=1.5 MB");
	expect_contains(buf, "action=malloc_trim");
	expect_contains(buf, "took=1.250 ms");
	expect_contains(buf, "allocator=glibc");
	cr_assert_null(strstr(buf, "note="));
}

Test(report, rss_line_note)
{
	struct rt_round_record rec = record();
	rec.note = "gc-skipped";
	char buf[RT_REPORT_LINE_MAX];
	rt_report_rss_line(buf, sizeof(buf), &rec);
	expect_contains(buf, "allocator=glibc note=gc-skipped)\n");
	cr_assert(matches(NVFLARE_RSS_RE, buf), "%s", buf);
}

Test(report, rss_line_large_value_keeps_shape)
{
	struct rt_round_record rec = record();
	rec.rss_after_kib = 123456789;
	rec.rss_before_kib = 123456789;
	char buf[RT_REPORT_LINE_MAX];
	rt_report_rss_line(buf, sizeof(buf), &rec);
	cr_assert(matches(NVFLARE_RSS_RE, buf), "%s", buf);
	expect_contains(buf, ": 120563.3 MB");
	expect_contains(buf, "released=0.0 MB");
}

Test(report, released_clamps_at_zero)
{
	struct rt_round_record rec = record();
	cr_assert_eq(rt_report_released_kib(&rec), 1024);
	rec.rss_after_kib = 5000;
	cr_assert_eq(rt_report_released_kib(&rec), 0);
	char buf[RT_REPORT_LINE_MAX];
	rt_report_rss_line(buf, sizeof(buf), &rec);
	expect_contains(buf, "released=0.0 MB");
	rt_report_json(buf, sizeof(buf), &rec);
	expect_contains(buf, "\"released_kib\":0,");
}

Test(report, json_has_every_key)
{
	struct rt_round_record rec = record();
	rec.note = "python-off";
	char buf[RT_REPORT_LINE_MAX];
	size_t n = rt_report_json(buf, sizeof(buf), &rec);
	cr_assert_eq(n, strlen(buf));
	cr_assert_str_eq(buf, "{\"pid\":4321,\"round\":12,\"trigger\":\"fifo\",\"action\":"
	                      "\"malloc_trim\",\"rss_before_kib\":3072,\"rss_after_kib\":2048,"
	                      "\"anon_kib\":0,\"file_kib\":0,\"lazyfree_kib\":0,"
	                      "\"live_kib\":1536,\"released_kib\":1024,\"duration_us\":1250,"
	                      "\"allocator\":\"glibc\",\"descriptors\":\"keeper\","
	                      "\"note\":\"python-off\","
	                      "\"unix_time\":1700000000.123456}\n");
}

/* A round the library found itself says how sure it was; no other round has the key. */
Test(report, json_confidence_only_for_a_detected_round)
{
	struct rt_round_record rec = record();
	rec.confidence_permille = 875;
	char buf[RT_REPORT_LINE_MAX];
	rt_report_json(buf, sizeof(buf), &rec);
	cr_assert_null(strstr(buf, "confidence"), "%s", buf);
	rec.trigger = "auto";
	rt_report_json(buf, sizeof(buf), &rec);
	expect_contains(buf, "\"trigger\":\"auto\",\"confidence\":875,\"action\":");
}

Test(report, json_fraction_keeps_leading_zeros)
{
	struct rt_round_record rec = record();
	rec.unix_time_us = 1700000000000042;
	char buf[RT_REPORT_LINE_MAX];
	rt_report_json(buf, sizeof(buf), &rec);
	expect_contains(buf, "\"unix_time\":1700000000.000042}");
}

Test(report, truncation)
{
	struct rt_round_record rec = record();
	char full[RT_REPORT_LINE_MAX], buf[10];
	size_t full_n = rt_report_rss_line(full, sizeof(full), &rec);
	size_t n = rt_report_rss_line(buf, sizeof(buf), &rec);
	cr_assert_eq(n, 9);
	cr_assert_eq(strncmp(buf, full, 9), 0);
	cr_assert_eq(buf[9], '\0');
	cr_assert_gt(full_n, 9);
	cr_assert_eq(rt_report_json(buf, sizeof(buf), &rec), 9);
	cr_assert_str_eq(buf, "{\"pid\":43");
	struct rt_status_record st = status();
	cr_assert_eq(rt_report_status_json(buf, sizeof(buf), &st), 9);
	cr_assert_str_eq(buf, "{\"pid\":77");
}

Test(report, status_json)
{
	struct rt_status_record st = status();
	char buf[RT_REPORT_LINE_MAX];
	size_t n = rt_report_status_json(buf, sizeof(buf), &st);
	cr_assert_eq(n, strlen(buf));
	cr_assert_str_eq(buf,
	                 "{\"pid\":77,\"seq\":12,\"mode\":\"auto\",\"program\":\"python3\","
	                 "\"allocator\":\"jemalloc\",\"descriptors\":\"private\","
	                 "\"rounds\":10,\"detected_rounds\":0,\"last_confidence\":0,"
	                 "\"gc_rounds\":3,\"actions\":3,\"last_action_round\":9,"
	                 "\"last_action\":\"jemalloc_purge\",\"last_trigger\":\"fifo\","
	                 "\"last_action_unix_time\":1700000001.000002,"
	                 "\"last_rss_before_kib\":9000,\"last_rss_after_kib\":4000,"
	                 "\"last_released_kib\":5000,\"last_duration_us\":1234,"
	                 "\"last_note\":\"merged=2\",\"rss_kib\":4096,"
	                 "\"live_kib\":1024,\"released_total_kib\":8192,\"action_limits\":\"\","
	                 "\"fifo\":\"/tmp/rt/77.fifo\",\"signal\":42,\"stats\":\"\","
	                 "\"unknown_lines\":5,\"oversized_lines\":6,\"lost_records\":7,"
	                 "\"fork_of\":70,\"seq_end\":12}\n");
}

Test(report, status_json_escapes_strings)
{
	struct rt_status_record st = status();
	st.program = "my\"prog\\x";
	st.fifo = "/tmp/a\"b/\n%p.fifo";
	st.stats = "/tmp/s\x01";
	st.last_note = "a\"b";
	char buf[RT_REPORT_LINE_MAX];
	rt_report_status_json(buf, sizeof(buf), &st);
	expect_contains(buf, "\"program\":\"my\\\"prog\\\\x\",");
	expect_contains(buf, "\"fifo\":\"/tmp/a\\\"b/\\u000a%p.fifo\",");
	expect_contains(buf, "\"stats\":\"/tmp/s\\u0001\",");
	expect_contains(buf, "\"last_note\":\"a\\\"b\",");
}

Test(report, status_json_last_action_released_never_negative)
{
	struct rt_status_record st = status();
	st.last_rss_before_kib = 4000;
	st.last_rss_after_kib = 4100;
	st.last_note = NULL;
	char buf[RT_REPORT_LINE_MAX];
	rt_report_status_json(buf, sizeof(buf), &st);
	expect_contains(buf, "\"last_released_kib\":0,");
	expect_contains(buf, "\"last_note\":\"\",");
}

static struct rt_round_record
python_record(void)
{
	struct rt_round_record rec = record();
	rec.python = "collected";
	rec.gc_collected = 1234;
	rec.cuda = "not-initialized";
	return rec;
}

Test(report, python_fields_only_when_reported)
{
	struct rt_round_record rec = record();
	char buf[RT_REPORT_LINE_MAX];
	rt_report_rss_line(buf, sizeof(buf), &rec);
	cr_assert_null(strstr(buf, "python="), "%s", buf);
	rt_report_json(buf, sizeof(buf), &rec);
	cr_assert_null(strstr(buf, "\"python\""), "%s", buf);
}

Test(report, rss_line_python_fields)
{
	struct rt_round_record rec = python_record();
	rec.note = "merged=2";
	char buf[RT_REPORT_LINE_MAX];
	rt_report_rss_line(buf, sizeof(buf), &rec);
	cr_assert(matches(NVFLARE_RSS_RE, buf), "%s", buf);
	expect_contains(buf, "allocator=glibc python=collected gc_collected=1234 "
	                     "cuda=not-initialized note=merged=2)\n");
}

Test(report, rss_line_python_skipped)
{
	struct rt_round_record rec = python_record();
	rec.python = "skipped-gil-busy";
	rec.gc_collected = -1;
	rec.cuda = NULL;
	char buf[RT_REPORT_LINE_MAX];
	rt_report_rss_line(buf, sizeof(buf), &rec);
	expect_contains(buf, " python=skipped-gil-busy gc_collected=-1 cuda=skipped)\n");
}

Test(report, json_python_fields)
{
	struct rt_round_record rec = python_record();
	rec.cuda = "emptied";
	char buf[RT_REPORT_LINE_MAX];
	rt_report_json(buf, sizeof(buf), &rec);
	/* The keys every record has are json_has_every_key's; here, where the Python ones go. */
	expect_contains(buf, "\"note\":\"\",\"python\":\"collected\",\"gc_collected\":1234,"
	                     "\"cuda\":\"emptied\",\"unix_time\":1700000000.123456}\n");
}

Test(report, escape_keeps_one_printable_line)
{
	char out[64];
	rt_report_escape(out, sizeof(out), "a\nb\x1b[31mc\rd", 64, false);
	cr_assert_str_eq(out, "a\\x0ab\\x1b[31mc\\x0dd");
	rt_report_escape(out, sizeof(out), "say \"hi\"\\", 64, false);
	cr_assert_str_eq(out, "say \"hi\"\\");
	rt_report_escape(out, sizeof(out), "say \"hi\"\\\xc3\xa9", 64, true);
	cr_assert_str_eq(out, "say \\\"hi\\\"\\\\\\xc3\\xa9");
	rt_report_escape(out, sizeof(out), "abcdef", 3, true);
	cr_assert_str_eq(out, "abc...");
}

/* A message for the program's stderr: no byte outside printable ASCII reaches it, quoted or not
 * (a terminal would take UTF-8 or a C1 control from a FIFO line or a path as its own). */
Test(report, escape_leaves_only_printable_ascii)
{
	char out[128];
	rt_report_escape(out, sizeof(out), "h\xc3\xa9 \x80\x9b\xff~", 64, false);
	cr_assert_str_eq(out, "h\\xc3\\xa9 \\x80\\x9b\\xff~");
	for (int c = 1; c < 256; c++) {
		char in[2] = {(char)c, 0};
		rt_report_escape(out, sizeof(out), in, 1, false);
		for (const char *at = out; *at; at++)
			cr_assert(*at >= 0x20 && *at < 0x7f, "byte %#x gave %s", c, out);
		cr_assert_eq(strlen(out) == 1, c >= 0x20 && c < 0x7f, "byte %#x gave %s", c, out);
	}
}

static const char *
mib(uint64_t kib)
{
	static char buf[32];
	cr_assert_lt(rt_report_mib(buf, sizeof(buf), kib), sizeof(buf));
	return buf;
}

/* Rounded, not truncated: 1126 KiB is 1.0996 MiB. */
Test(report, mib_rounds_to_one_decimal)
{
	cr_assert_str_eq(mib(0), "0.0");
	cr_assert_str_eq(mib(1024), "1.0");
	cr_assert_str_eq(mib(1126), "1.1");
	cr_assert_str_eq(mib(1075), "1.0");
	cr_assert_str_eq(mib(1076), "1.1");
	cr_assert_str_eq(mib(291942), "285.1");
	char small[4];
	cr_assert_eq(rt_report_mib(small, sizeof(small), 291942), 3);
	cr_assert_str_eq(small, "285");
}

/* The [RSS] line writes its MB figures the same way. */
Test(report, rss_line_uses_the_mib_rule)
{
	struct rt_round_record rec = record();
	rec.rss_before_kib = 1126;
	rec.rss_after_kib = 1075;
	char line[RT_REPORT_LINE_MAX];
	rt_report_rss_line(line, sizeof(line), &rec);
	expect_contains(line, ": 1.0 MB (before=1.1 MB released=0.0 MB live=1.5 MB");
}

Test(report, ms_has_three_decimals)
{
	char buf[32];
	rt_report_ms(buf, sizeof(buf), 12304);
	cr_assert_str_eq(buf, "12.304");
	rt_report_ms(buf, sizeof(buf), 5);
	cr_assert_str_eq(buf, "0.005");
	rt_report_ms(buf, sizeof(buf), 0);
	cr_assert_str_eq(buf, "0.000");
}

static void
expect_ago(int64_t seconds, const char *want)
{
	char buf[32];
	int64_t now = 1700000000123456;
	rt_report_ago(buf, sizeof(buf), now, now - seconds * 1000000);
	cr_assert_str_eq(buf, want, "%ld s", (long)seconds);
}

Test(report, ago_steps)
{
	expect_ago(0, "0s ago");
	expect_ago(119, "119s ago");
	expect_ago(120, "2m ago");
	expect_ago(7199, "119m ago");
	expect_ago(7200, "2h ago");
	expect_ago(172799, "47h ago");
	expect_ago(172800, "2d ago");
	/* A clock set back shows no negative time. */
	expect_ago(-30, "0s ago");
	char buf[32];
	rt_report_ago(buf, sizeof(buf), 1700000000000000, 0);
	cr_assert_str_eq(buf, "never");
}

Test(report, inactive_json_escapes_the_program)
{
	char buf[256];
	rt_report_inactive_json(buf, sizeof(buf), 42, "py\"th\\on");
	cr_assert_str_eq(buf, "{\"pid\":42,\"program\":\"py\\\"th\\\\on\",\"fifo\":\"\"}");
}
