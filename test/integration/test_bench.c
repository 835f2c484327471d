/* make bench's harness, not its figures: `make bench BENCH_QUICK=1` into a temporary directory
 * writes a RESULTS.md whose summary has a row for each of its figures, every row holding a
 * median, a min and a max that are numbers, and every plot the page shows is a PNG; figure 9's
 * reader of the stats lines (between_eval) puts each release on the round end it served, and
 * figure 7's (stats_lines) reads them with policy's reader. Timings are never asserted: the
 * machine is shared. */
#include "harness.h"
#include "rt_report.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

TestSuite(bench, .timeout = 900, .fini = th_cleanup);

/* The quick bench takes about three minutes on an idle 2-core machine; the limit leaves room for
 * a loaded one, and timeout(1) ends the whole process group when it is reached. */
#define BENCH_LIMIT_S 600
#define BENCH_FIGURE_MAX 20

static char page[1 << 20];

/* Parses "M [L–H]" (the dash is U+2013); false unless all three are numbers. */
static bool
parse_spread(const char *cell, double v[3])
{
	char *end;
	v[0] = strtod(cell, &end);
	if (end == cell || strncmp(end, " [", 2))
		return false;
	cell = end + 2;
	v[1] = strtod(cell, &end);
	if (end == cell || strncmp(end, "\u2013", strlen("\u2013")))
		return false;
	cell = end + strlen("\u2013");
	v[2] = strtod(cell, &end);
	return end != cell && *end == ']';
}

/* Checks one summary row "| figure | what | goal | M [L–H] | verdict |"; returns its figure. */
static int
check_row(char *row)
{
	char *cells[8];
	int n = 0;
	for (char *save = NULL, *c = strtok_r(row, "|", &save); c && n < 8;
	     c = strtok_r(NULL, "|", &save))
		cells[n++] = c;
	cr_assert_eq(n, 5, "summary row without 5 cells: %s", row);
	int figure = atoi(cells[0]);
	cr_assert(figure >= 1 && figure <= BENCH_FIGURE_MAX, "bad figure number in row: %s",
	          cells[1]);
	double v[3];
	cr_assert(parse_spread(cells[3] + strspn(cells[3], " "), v), "not a number: '%s' (%s)",
	          cells[3], cells[1]);
	cr_assert(v[1] <= v[0] && v[0] <= v[2], "median outside [min, max]: %s", cells[3]);
	return figure;
}

static void
check_png(const char *dir, const char *name)
{
	char path[2 * PATH_MAX + 2], head[16];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert_geq(th_read_file(path, head, sizeof(head)), 8, "no plot %s", path);
	cr_assert_eq(memcmp(head, "\x89PNG\r\n\x1a\n", 8), 0, "%s is not a PNG", path);
}

Test(bench, quick_run_writes_every_figure_and_plot)
{
	const char *dir = th_tmpdir();
	char cmd[4 * PATH_MAX], path[PATH_MAX], limit[16];
	/* The outer make's jobserver descriptors are not ours: the inner make starts afresh. */
	snprintf(cmd, sizeof(cmd),
	         "exec make -s -C '%s' bench BUILD='%s' BENCH_QUICK=1 BENCH_OUT='%s/out' "
	         "BENCH_RAW='%s/raw' >'%s/bench.log' 2>&1",
	         RT_SOURCE_DIR, RT_BUILD_DIR, dir, dir, dir);
	snprintf(limit, sizeof(limit), "%d", BENCH_LIMIT_S);
	const char *argv[] = {
	    "/usr/bin/timeout", "-k", "10",     limit,     "/usr/bin/env", "-u", "MAKEFLAGS", "-u",
	    "MAKELEVEL",        "-u", "MFLAGS", "/bin/sh", "-c",           cmd,  NULL};
	struct th_proc p;
	th_spawn(&p, argv, NULL);
	th_close_stdin(&p);
	cr_assert(th_wait(&p, (BENCH_LIMIT_S + 30) * 1000), "make bench did not end");
	snprintf(path, sizeof(path), "%s/bench.log", dir);
	static char log[1 << 16];
	ssize_t loglen = th_read_file(path, log, sizeof(log));
	cr_assert(WIFEXITED(p.status) && WEXITSTATUS(p.status) == 0,
	          "make bench BENCH_QUICK=1 failed (status %d): %s", p.status,
	          loglen > 4000 ? log + loglen - 4000 : log);

	snprintf(path, sizeof(path), "%s/out/RESULTS.md", dir);
	cr_assert_gt(th_read_file(path, page, sizeof(page)), 0, "no %s", path);
	char *summary = strstr(page, "\n## Summary\n");
	cr_assert_not_null(summary, "RESULTS.md has no summary");
	char *table = strstr(summary, "\n|---");
	cr_assert_not_null(table, "the summary has no table");
	bool seen[BENCH_FIGURE_MAX + 1] = {false};
	int rows = 0;
	for (char *line = strchr(table + 1, '\n') + 1; line[0] == '|'; rows++) {
		char *next = strchr(line, '\n');
		cr_assert_not_null(next);
		*next = '\0';
		seen[check_row(line)] = true;
		line = next + 1;
	}

	/* Every figure the page shows has a row, and every plot it shows is a PNG, in the page as
	 * written (the parsing above cut it up). */
	cr_assert_gt(th_read_file(path, page, sizeof(page)), 0);
	int figures = 0;
	for (char *at = strstr(page, "\n## Figure "); at; at = strstr(at + 1, "\n## Figure ")) {
		int f = atoi(at + strlen("\n## Figure "));
		cr_assert(f >= 1 && f <= BENCH_FIGURE_MAX && seen[f],
		          "figure %d has no row in the summary", f);
		figures++;
	}
	cr_assert_geq(figures, 11, "the page shows %d figures", figures);
	int plots = 0;
	for (char *at = strstr(page, "]("); at; at = strstr(at + 2, "](")) {
		char name[256];
		if (sscanf(at + 2, "%255[^)])", name) == 1 && strstr(name, ".png")) {
			char rel[PATH_MAX];
			snprintf(rel, sizeof(rel), "out/%s", name);
			check_png(dir, rel);
			plots++;
		}
	}
	cr_assert_geq(plots, 3,
	              "the page shows %d plots, expected the RSS plots of two sizes and "
	              "the latency CDF",
	              plots);
}

/* One stats line, as the library writes it, of a record written at unix_us. */
static void
between_line(FILE *f, int pid, uint64_t round, const char *trigger, const char *python,
             int64_t gc_collected, int64_t unix_us)
{
	struct rt_round_record rec = {.pid = pid,
	                              .round = round,
	                              .trigger = trigger,
	                              .action = "glibc_release",
	                              .allocator = "glibc",
	                              .rss_before_kib = 300000,
	                              .rss_after_kib = 290000,
	                              .unix_time_us = unix_us,
	                              .note = "",
	                              .python = python,
	                              .gc_collected = gc_collected,
	                              .cuda = "off"};
	char line[RT_REPORT_LINE_MAX];
	rt_report_json(line, sizeof(line), &rec);
	fputs(line, f);
}

/* Round ends at 10, 20 and 30 s of the workload's clock, the offset 1.7e15 µs: round 1 released
 * 15 ms after its end and followed by its Python steps 4.1 s after; a detection before the first
 * end (the program's set-up); round 2 released 20 ms after, then a second record inside it; no
 * release for round 3. The Python record of round 2 comes after round 3's end, and still counts
 * from round 2's. */
Test(bench, between_eval_puts_each_release_on_its_round_end)
{
	const char *dir = th_tmpdir();
	char truth[PATH_MAX], stats[PATH_MAX], out[4096], err[1024];
	const int64_t offset = 1700000000000000, s = 1000000;
	snprintf(truth, sizeof(truth), "%s/truth", dir);
	snprintf(stats, sizeof(stats), "%s/stats.jsonl", dir);
	th_write_file(truth, "start 5000000\nboundary 1 10000000\nround 1 rss_kib=1\n"
	                     "wait 1 10000100\nboundary 2 20000000\nboundary 3 30000000\n");
	FILE *f = fopen(stats, "w");
	cr_assert_not_null(f);
	between_line(f, 7, 1, "auto", "pending", -1, offset + 6 * s);
	between_line(f, 7, 2, "fifo", "pending", -1, offset + 10 * s + 15000);
	between_line(f, 7, 2, "python", "collected", 42, offset + 14 * s + 100000);
	between_line(f, 7, 3, "fifo", "pending", -1, offset + 20 * s + 20000);
	between_line(f, 7, 4, "fifo", "pending", -1, offset + 22 * s);
	between_line(f, 7, 3, "python", "collected", 5, offset + 31 * s);
	fclose(f);
	char eval[PATH_MAX], offset_text[32];
	snprintf(eval, sizeof(eval), "%s/test/bench/between_eval", RT_BUILD_DIR);
	snprintf(offset_text, sizeof(offset_text), "%lld", (long long)offset);
	const char *argv[] = {eval, "--offset-us", offset_text, truth, stats, NULL};
	cr_assert_eq(th_run(argv, NULL, out, sizeof(out), err, sizeof(err)), 0, "%s", err);
	th_expect_in(out, "release round=1 trigger=fifo delay_us=15000 released_kib=10000 "
	                  "python=pending\n");
	th_expect_in(out, "release round=2 trigger=fifo delay_us=20000 ");
	th_expect_in(out, "missed round=3\n");
	th_expect_in(out, "followup round=1 trigger=fifo delay_us=4100000 released_kib=10000 "
	                  "gc_collected=42\n");
	th_expect_in(out, "followup round=2 trigger=fifo delay_us=11000000 ");
	th_expect_in(out, "records boundaries=3 releases=2 followups=2 extra=1 before=1\n");

	/* A line that is not the library's is an error, not a figure. */
	th_write_file(stats, "{\"pid\":7}\n");
	cr_assert_neq(th_run(argv, NULL, out, sizeof(out), err, sizeof(err)), 0);
	th_expect_in(err, "not a stats line");
}

/* Figure 7's reader of the stats lines (stats_lines): policy's reader, in columns; a line that
 * is not the library's fails it. */
Test(bench, stats_lines_reads_the_records_in_columns)
{
	const char *dir = th_tmpdir();
	char stats[PATH_MAX], out[4096], err[1024], tool[PATH_MAX];
	snprintf(stats, sizeof(stats), "%s/stats.jsonl", dir);
	FILE *f = fopen(stats, "w");
	cr_assert_not_null(f);
	between_line(f, 7, 1, "auto", NULL, -1, 1700000000123456);
	fputs("\n", f);
	between_line(f, 7, 3, "fifo", "pending", -1, 1700000001000001);
	fclose(f);
	snprintf(tool, sizeof(tool), "%s/test/bench/stats_lines", RT_BUILD_DIR);
	const char *argv[] = {tool, stats, NULL};
	cr_assert_eq(th_run(argv, NULL, out, sizeof(out), err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(out, "1 auto glibc_release 1700000000123456\n"
	                      "3 fifo glibc_release 1700000001000001\n");

	th_write_file(stats, "{\"pid\":7,\"round\":1,\"trigger\":\"auto\"}\n");
	cr_assert_neq(th_run(argv, NULL, out, sizeof(out), err, sizeof(err)), 0);
	th_expect_in(err, "stats.jsonl:1: not a stats line");
}

/* stall's worst op counts every op of the window, not only those its log keeps: with a log of
 * 1,000 ops, the wait for the program's own malloc_trim(0), which comes after them, is still
 * the worst (it read as the log's largest once, 4 ms for 6.8 s at 4 GiB). */
Test(bench, stall_s_worst_op_is_every_op_s_not_the_log_s)
{
	char tool[PATH_MAX], out[4096], err[4096];
	snprintf(tool, sizeof(tool), "%s/test/bench/stall", RT_BUILD_DIR);
	const char *argv[] = {tool,   "--mib",    "256",  "--threads", "2",  "--min",
	                      "16",   "--max",    "128",  "--keep",    "16", "--max-ops",
	                      "1000", "--action", "self", NULL};
	cr_assert_eq(th_run(argv, NULL, out, sizeof(out), err, sizeof(err)), 0, "%s", err);
	double worst = -1, unpreempted = -1;
	long ops = -1;
	const char *w = strstr(out, " worst_op_ms="), *u = strstr(out, " worst_unpreempted_op_ms="),
	           *n = strstr(out, " ops=");
	cr_assert(w && u && n, "%s", out);
	cr_assert_eq(sscanf(w, " worst_op_ms=%lf", &worst), 1);
	cr_assert_eq(sscanf(u, " worst_unpreempted_op_ms=%lf", &unpreempted), 1);
	cr_assert_eq(sscanf(n, " ops=%ld", &ops), 1);
	cr_assert_gt(ops, 1000, "the window held no more ops than the log: %s", out);
	/* The wait through malloc_trim(0)'s pass of the measured thread's arena comes after the
	 * first 1,000 ops; where no preemption fell in it, the unpreempted worst is that wait. */
	cr_assert_geq(worst, unpreempted, "%s", out);
}
