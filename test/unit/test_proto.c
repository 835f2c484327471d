#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "rt_proto.h"

#define SEEN_MAX 1100

struct seen {
	size_t n;
	enum rt_proto_kind kind[SEEN_MAX];
	uint64_t arg[SEEN_MAX];
	char line[SEEN_MAX][RT_PROTO_LINE_MAX + 1];
};

static struct seen seen;
static struct rt_proto proto;

static void
record(void *ctx, const struct rt_proto_cmd *cmd)
{
	struct seen *s = ctx;
	cr_assert_lt(s->n, SEEN_MAX);
	cr_assert_leq(strlen(cmd->line), RT_PROTO_LINE_MAX);
	s->kind[s->n] = cmd->kind;
	s->arg[s->n] = cmd->arg;
	snprintf(s->line[s->n], sizeof(s->line[0]), "%s", cmd->line);
	s->n++;
}

static void
reset(void)
{
	memset(&seen, 0, sizeof(seen));
	rt_proto_init(&proto);
}

static void
feed(const char *bytes)
{
	rt_proto_feed(&proto, bytes, strlen(bytes), record, &seen);
}

static void
expect_cmd(size_t i, enum rt_proto_kind kind, uint64_t arg, const char *line)
{
	cr_assert_gt(seen.n, i, "only %zu commands", seen.n);
	cr_assert_eq(seen.kind[i], kind, "command %zu is %s, want %s", i,
	             rt_proto_kind_name(seen.kind[i]), rt_proto_kind_name(kind));
	cr_assert_eq(seen.arg[i], arg);
	cr_assert_str_eq(seen.line[i], line);
}

/* Feeds one line and checks that it gives exactly one command. */
static void
expect_line(const char *bytes, enum rt_proto_kind kind, uint64_t arg, const char *line)
{
	reset();
	feed(bytes);
	cr_assert_eq(seen.n, 1, "\"%s\" gave %zu commands", bytes, seen.n);
	expect_cmd(0, kind, arg, line);
}

Test(proto, commands)
{
	expect_line("round\n", RT_PROTO_ROUND, 0, "round");
	expect_line("trim\n", RT_PROTO_TRIM, 0, "trim");
	expect_line("stats\n", RT_PROTO_STATS, 0, "stats");
	expect_line("gc-rounds 7\n", RT_PROTO_GC_ROUNDS, 7, "gc-rounds 7");
	expect_line("gc-rounds 0\n", RT_PROTO_GC_ROUNDS, 0, "gc-rounds 0");
	expect_line("gc-rounds 1000000000\n", RT_PROTO_GC_ROUNDS, 1000000000,
	            "gc-rounds 1000000000");
}

Test(proto, crlf)
{
	expect_line("round\r\n", RT_PROTO_ROUND, 0, "round");
	expect_line("gc-rounds 4\r\n", RT_PROTO_GC_ROUNDS, 4, "gc-rounds 4");
}

Test(proto, unknown)
{
	static const char *const lines[] = {"ROUND", "round ",   " round",    "rounds",
	                                    " ",     "trim\r\r", "gc-rounds", "hello"};
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		char bytes[80];
		snprintf(bytes, sizeof(bytes), "%s\n", lines[i]);
		/* Only one trailing CR is removed. */
		expect_line(bytes, RT_PROTO_UNKNOWN, 0, i == 5 ? "trim\r" : lines[i]);
	}
}

/* The library wakes its own worker with an empty line: neither a command nor junk. */
Test(proto, empty_lines_are_wake_ups)
{
	expect_line("\n", RT_PROTO_EMPTY, 0, "");
	expect_line("\r\n", RT_PROTO_EMPTY, 0, "");
}

Test(proto, bad_gc_rounds_argument)
{
	static const char *const lines[] = {
	    "gc-rounds ",           "gc-rounds x",
	    "gc-rounds -1",         "gc-rounds  3",
	    "gc-rounds 3 ",         "gc-rounds +3",
	    "gc-rounds 1000000001", "gc-rounds 99999999999999999999999"};
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		char bytes[80];
		snprintf(bytes, sizeof(bytes), "%s\n", lines[i]);
		expect_line(bytes, RT_PROTO_UNKNOWN, 0, lines[i]);
	}
}

Test(proto, no_command_before_newline)
{
	reset();
	feed("round");
	cr_assert_eq(seen.n, 0);
	feed("\n");
	cr_assert_eq(seen.n, 1);
	expect_cmd(0, RT_PROTO_ROUND, 0, "round");
}

Test(proto, longest_line_is_accepted)
{
	char bytes[RT_PROTO_LINE_MAX + 2];
	memset(bytes, 'a', RT_PROTO_LINE_MAX);
	bytes[RT_PROTO_LINE_MAX] = '\n';
	bytes[RT_PROTO_LINE_MAX + 1] = '\0';
	reset();
	feed(bytes);
	cr_assert_eq(seen.n, 1);
	cr_assert_eq(seen.kind[0], RT_PROTO_UNKNOWN);
	cr_assert_eq(strlen(seen.line[0]), RT_PROTO_LINE_MAX);
}

Test(proto, oversized_line_discarded_whole)
{
	char bytes[RT_PROTO_LINE_MAX + 2];
	memset(bytes, 'r', RT_PROTO_LINE_MAX + 1);
	bytes[RT_PROTO_LINE_MAX + 1] = '\0';
	reset();
	feed(bytes);
	cr_assert_eq(seen.n, 0);
	/* The tail of the long line looks like a command, but belongs to the discarded line. */
	feed("round\ntrim\n");
	cr_assert_eq(seen.n, 2);
	cr_assert_eq(seen.kind[0], RT_PROTO_OVERSIZED);
	cr_assert_eq(strlen(seen.line[0]), RT_PROTO_LINE_MAX);
	cr_assert_eq(strspn(seen.line[0], "r"), RT_PROTO_LINE_MAX);
	expect_cmd(1, RT_PROTO_TRIM, 0, "trim");
}

Test(proto, huge_line_then_command)
{
	static char bytes[100000];
	memset(bytes, 'x', sizeof(bytes) - 1);
	reset();
	feed(bytes);
	feed("\ngc-rounds 2\n");
	cr_assert_eq(seen.n, 2);
	cr_assert_eq(seen.kind[0], RT_PROTO_OVERSIZED);
	expect_cmd(1, RT_PROTO_GC_ROUNDS, 2, "gc-rounds 2");
}

Test(proto, line_split_across_feeds)
{
	static const char text[] = "gc-rounds 12\r\nstats\n";
	reset();
	for (size_t i = 0; i < sizeof(text) - 1; i++) {
		rt_proto_feed(&proto, text + i, 1, record, &seen);
		cr_assert_eq(seen.n, i < 13 ? 0u : i < 19 ? 1u : 2u, "after byte %zu", i);
	}
	expect_cmd(0, RT_PROTO_GC_ROUNDS, 12, "gc-rounds 12");
	expect_cmd(1, RT_PROTO_STATS, 0, "stats");
}

Test(proto, thousand_rounds_in_one_feed)
{
	static char bytes[1000 * 6 + 1];
	for (size_t i = 0; i < 1000; i++)
		memcpy(bytes + i * 6, "round\n", 6);
	reset();
	rt_proto_feed(&proto, bytes, 6000, record, &seen);
	cr_assert_eq(seen.n, 1000);
	for (size_t i = 0; i < 1000; i++)
		cr_assert_eq(seen.kind[i], RT_PROTO_ROUND, "command %zu", i);
	cr_assert_eq(proto.len, 0);
}

Test(proto, kind_names)
{
	cr_assert_str_eq(rt_proto_kind_name(RT_PROTO_ROUND), "round");
	cr_assert_str_eq(rt_proto_kind_name(RT_PROTO_TRIM), "trim");
	cr_assert_str_eq(rt_proto_kind_name(RT_PROTO_GC_ROUNDS), "gc-rounds");
	cr_assert_str_eq(rt_proto_kind_name(RT_PROTO_STATS), "stats");
	cr_assert_str_eq(rt_proto_kind_name(RT_PROTO_EMPTY), "empty");
	cr_assert_str_eq(rt_proto_kind_name(RT_PROTO_UNKNOWN), "unknown");
	cr_assert_str_eq(rt_proto_kind_name(RT_PROTO_OVERSIZED), "oversized");
}

/* strcmp would stop at the NUL byte and take "round\0junk" for "round". */
Test(proto, a_line_holding_a_nul_byte_is_no_command)
{
	reset();
	rt_proto_feed(&proto, "round\0junk\n", 11, record, &seen);
	cr_assert_eq(seen.n, 1);
	cr_assert_eq(seen.kind[0], RT_PROTO_UNKNOWN);
}
