#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "rt_trace.h"

static const struct rt_reading full = {1234567890123, 42,    1048576, 40, 1040000,
                                       8192,          30720, 1500,    77};

static void
expect_same(const struct rt_reading *a, const struct rt_reading *b)
{
	cr_assert_eq(a->t_us, b->t_us);
	cr_assert_eq(a->allocations, b->allocations);
	cr_assert_eq(a->bytes_requested, b->bytes_requested);
	cr_assert_eq(a->frees, b->frees);
	cr_assert_eq(a->bytes_freed, b->bytes_freed);
	cr_assert_eq(a->live_bytes, b->live_bytes);
	cr_assert_eq(a->rss_kib, b->rss_kib);
	cr_assert_eq(a->cpu_us, b->cpu_us);
	cr_assert_eq(a->bytes_sent, b->bytes_sent);
}

static void
expect_round_trip(const struct rt_reading *r, const char *want)
{
	char line[RT_TRACE_LINE_MAX];
	size_t len = rt_trace_format(line, sizeof(line), r);
	cr_assert_str_eq(line, want);
	cr_assert_eq(len, strlen(want));
	struct rt_reading back;
	memset(&back, 0xa5, sizeof(back));
	struct rt_trace_reader reader = RT_TRACE_READER_INIT;
	cr_assert_eq(rt_trace_parse(&reader, RT_TRACE_HEADER, &back), RT_TRACE_SKIP);
	cr_assert_eq(rt_trace_parse(&reader, line, &back), RT_TRACE_READING, "%s", line);
	expect_same(&back, r);
}

static void
expect_bad(const char *line)
{
	struct rt_reading r = full;
	struct rt_trace_reader reader = RT_TRACE_READER_INIT;
	cr_assert_eq(rt_trace_parse(&reader, line, &r), RT_TRACE_BAD, "\"%s\"", line);
	expect_same(&r, &full);
}

Test(trace, round_trip_every_field_known)
{
	expect_round_trip(&full, "1234567890123 42 1048576 40 1040000 8192 30720 1500 77\n");
}

Test(trace, round_trip_optional_fields_unknown)
{
	struct rt_reading r = {7,
	                       0,
	                       0,
	                       0,
	                       RT_TRACE_UNKNOWN,
	                       RT_TRACE_UNKNOWN,
	                       RT_TRACE_UNKNOWN,
	                       RT_TRACE_UNKNOWN,
	                       RT_TRACE_UNKNOWN};
	expect_round_trip(&r, "7 0 0 0 - - - - -\n");
	r.live_bytes = 99;
	expect_round_trip(&r, "7 0 0 0 - 99 - - -\n");
	r.cpu_us = 0;
	expect_round_trip(&r, "7 0 0 0 - 99 - 0 -\n");
	r.bytes_sent = 5;
	expect_round_trip(&r, "7 0 0 0 - 99 - 0 5\n");
}

Test(trace, round_trip_largest_values)
{
	const uint64_t big = UINT64_MAX - 1;
	struct rt_reading r = {big, big, big, big, big, big, big, big, big};
	char want[RT_TRACE_LINE_MAX];
	snprintf(want, sizeof(want), "%lu %lu %lu %lu %lu %lu %lu %lu %lu\n", big, big, big, big,
	         big, big, big, big, big);
	expect_round_trip(&r, want);
	cr_assert_lt(strlen(want) + 1, (size_t)RT_TRACE_LINE_MAX);
}

Test(trace, format_refuses_a_short_buffer_whole)
{
	const char *want = "1234567890123 42 1048576 40 1040000 8192 30720 1500 77\n";
	char line[RT_TRACE_LINE_MAX];
	size_t need = strlen(want) + 1;
	for (size_t size = 0; size < need; size++) {
		memset(line, 'x', sizeof(line));
		cr_assert_eq(rt_trace_format(line, size, &full), 0, "size %zu", size);
		if (size > 0)
			cr_assert_eq(line[0], '\0', "size %zu", size);
	}
	cr_assert_eq(rt_trace_format(line, need, &full), need - 1);
	cr_assert_str_eq(line, want);
}

Test(trace, header_and_blank_lines_are_skipped)
{
	struct rt_reading r = full;
	struct rt_trace_reader reader = RT_TRACE_READER_INIT;
	cr_assert_eq(rt_trace_parse(&reader, RT_TRACE_HEADER, &r), RT_TRACE_SKIP);
	cr_assert_eq(reader.format, RT_TRACE_FORMAT);
	cr_assert_eq(rt_trace_parse(&reader, "", &r), RT_TRACE_SKIP);
	cr_assert_eq(rt_trace_parse(&reader, "\n", &r), RT_TRACE_SKIP);
	cr_assert_eq(rt_trace_parse(&reader, "# anything", &r), RT_TRACE_SKIP);
	cr_assert_eq(reader.format, RT_TRACE_FORMAT);
	expect_same(&r, &full);
}

Test(trace, newline_is_optional)
{
	struct rt_reading r;
	struct rt_trace_reader reader = RT_TRACE_READER_INIT;
	cr_assert_eq(rt_trace_parse(&reader, "1 2 3 4 5 6 7 8 9", &r), RT_TRACE_READING);
	cr_assert_eq(r.rss_kib, 7);
	cr_assert_eq(r.cpu_us, 8);
	cr_assert_eq(r.bytes_sent, 9);
}

static const char header_1[] = "# rt_trace 1: t_us allocations bytes_requested frees bytes_freed "
                               "live_bytes rss_kib cpu_us\n";

/* The traces recorded before bytes_sent was a field still replay, with it unknown. */
Test(trace, a_format_1_line_reads_with_bytes_sent_unknown)
{
	struct rt_reading r = full;
	struct rt_trace_reader reader = RT_TRACE_READER_INIT;
	cr_assert_eq(rt_trace_parse(&reader, header_1, &r), RT_TRACE_SKIP);
	cr_assert_eq(reader.format, 1);
	cr_assert_eq(rt_trace_parse(&reader, "1 2 3 4 5 6 7 8\n", &r), RT_TRACE_READING);
	cr_assert_eq(r.cpu_us, 8);
	cr_assert_eq(r.bytes_sent, RT_TRACE_UNKNOWN);
	cr_assert_eq(rt_trace_parse(&reader, "1 2 3 4 5 6 7 8", &r), RT_TRACE_READING);
	cr_assert_eq(r.bytes_sent, RT_TRACE_UNKNOWN);
	cr_assert_eq(rt_trace_parse(&reader, "1 2 3 4 5 6 7 8 9", &r), RT_TRACE_BAD,
	             "a field too many in format 1");
}

/* A format-2 line cut before bytes_sent was read as format 1 (bytes_sent unknown: a reading that
 * breaks the detector's lock on the sends), and one cut inside it as a smaller count
 * (review-sends L4): a file's lines are read in the format its header names. */
Test(trace, a_line_cut_short_in_a_format_2_file_is_bad)
{
	struct rt_reading r = full;
	struct rt_trace_reader reader = RT_TRACE_READER_INIT;
	cr_assert_eq(rt_trace_parse(&reader, RT_TRACE_HEADER, &r), RT_TRACE_SKIP);
	cr_assert_eq(rt_trace_parse(&reader, "1 2 3 4 5 6 100 7", &r), RT_TRACE_BAD);
	cr_assert_eq(rt_trace_parse(&reader, "1 2 3 4 5 6 100 7\n", &r), RT_TRACE_BAD);
	expect_same(&r, &full);
}

/* A header of a format this reader does not know makes every reading after it bad, rather
 * than read in another format's order. */
Test(trace, readings_after_an_unknown_format_are_bad)
{
	struct rt_reading r = full;
	struct rt_trace_reader reader = RT_TRACE_READER_INIT;
	cr_assert_eq(rt_trace_parse(&reader, "# rt_trace 3: t_us ...\n", &r), RT_TRACE_SKIP);
	cr_assert_eq(rt_trace_parse(&reader, "1 2 3 4 5 6 7 8 9", &r), RT_TRACE_BAD);
	cr_assert_eq(rt_trace_parse(&reader, "1 2 3 4 5 6 7 8", &r), RT_TRACE_BAD);
	cr_assert_eq(rt_trace_parse(&reader, "# rt_trace x\n", &r), RT_TRACE_SKIP);
	cr_assert_eq(reader.format, RT_TRACE_FORMAT_UNKNOWN);
	expect_same(&r, &full);
}

/* The first recorders wrote no header (the traces roundtrim(7) cites from its third round of
 * recordings): a file without one reads readings of either format, as before headers counted. */
Test(trace, a_file_without_a_header_reads_either_format)
{
	struct rt_reading r = full;
	struct rt_trace_reader reader = RT_TRACE_READER_INIT;
	cr_assert_eq(rt_trace_parse(&reader, "1 2 3 4 5 6 7 8\n", &r), RT_TRACE_READING);
	cr_assert_eq(r.bytes_sent, RT_TRACE_UNKNOWN);
	cr_assert_eq(rt_trace_parse(&reader, "1 2 3 4 5 6 7 8 9\n", &r), RT_TRACE_READING);
	cr_assert_eq(r.bytes_sent, 9);
}

/* A comment that only starts as a header does (a note of the recorder's) names no format: the
 * file's readings read as its header said (review-s7 S5: the rest of the file was bad). */
Test(trace, a_comment_that_is_no_header_leaves_the_format)
{
	struct rt_reading r = full;
	struct rt_trace_reader reader = RT_TRACE_READER_INIT;
	cr_assert_eq(rt_trace_parse(&reader, RT_TRACE_HEADER, &r), RT_TRACE_SKIP);
	cr_assert_eq(rt_trace_parse(&reader, "# rt_trace recorded on a loaded machine\n", &r),
	             RT_TRACE_SKIP);
	cr_assert_eq(reader.format, RT_TRACE_FORMAT);
	cr_assert_eq(rt_trace_parse(&reader, "1 2 3 4 5 6 7 8 9\n", &r), RT_TRACE_READING);
	cr_assert_eq(rt_trace_parse(&reader, "1 2 3 4 5 6 7 8\n", &r), RT_TRACE_BAD);
}

Test(trace, malformed_lines_leave_the_reading_alone)
{
	expect_bad("1 2 3 4 5 6 7");        /* a field missing */
	expect_bad("1 2 3 4 5 6 7 8 9 10"); /* one too many */
	expect_bad("1 2 3 4 5 6 7 8 \n");   /* a blank and no ninth field */
	expect_bad("1 2 3 4 5 6 7 8\n\n");  /* two newlines */
	expect_bad("1 2 3 4 5 6 7 8 9\n\n");
	expect_bad("1  2 3 4 5 6 7 8");    /* two blanks */
	expect_bad(" 1 2 3 4 5 6 7 8");    /* leading blank */
	expect_bad("1 2 3 4 5 6 7 8 ");    /* trailing blank */
	expect_bad("1\t2 3 4 5 6 7 8");    /* a tab */
	expect_bad("1 2 3 4 5 6 7 8\r\n"); /* CRLF */
	expect_bad("- 2 3 4 - - - -");     /* t_us is never unknown */
	expect_bad("1 - 3 4 - - - -");     /* nor are the counts */
	expect_bad("1 2 3 - - - - -");
	expect_bad("1 2 3 4 -5 6 7 8"); /* no sign */
	expect_bad("1 2 3 4 5 6 +7 8");
	expect_bad("1 2 3 4 5 6 0x7 8");
	expect_bad("1 2 3 4 5 6 7k 8");
	expect_bad("1 2 3 4 5 6 7 --");
	expect_bad("r 2 3 4 5 6 7 8");
	expect_bad("1 2 3 4 5 6 7 8 x");
	expect_bad("1 2 3 4 5 6 7 8 -1");
	expect_bad("1 2 3 4 5 6 7 18446744073709551615"); /* UINT64_MAX means unknown: "-" */
	expect_bad("1 2 3 4 5 6 7 99999999999999999999");
}
