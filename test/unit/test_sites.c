/* The sampling rule (gaps, weights, the library's own exp and ln against libm's), when a site
 * grew, the top K, the sites file's path and lines (each reader reads back what its writer
 * wrote), and the growth table's runs. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "rt_sites.h"

Test(sites, exp_and_ln_agree_with_libm)
{
	for (double x = 0; x < 60; x += 0.0137) {
		double want = exp(-x);
		cr_assert_leq(fabs(rt_sites_exp_neg(x) - want), 1e-12 * want + 1e-300, "exp(-%g)",
		              x);
	}
	cr_assert_eq(rt_sites_exp_neg(0), 1.0);
	cr_assert_eq(rt_sites_exp_neg(1000), 0.0);
	for (double x = 1e-300; x < 1e300; x *= 1.7) {
		double want = log(x);
		cr_assert_leq(fabs(rt_sites_ln(x) - want), 1e-12 * fabs(want) + 1e-15, "ln(%g)", x);
	}
	cr_assert_leq(fabs(rt_sites_ln(4.9e-324) - log(4.9e-324)), 1e-9);
}

/* The gaps' mean is S, and a byte position falls in a gap the exponential way: the share of
 * gaps longer than S is 1/e. */
Test(sites, gaps_are_exponential_with_mean_s)
{
	const uint64_t mean = 512 * 1024;
	uint64_t state = rt_sites_seed(42);
	double sum = 0;
	unsigned longer = 0;
	const unsigned n = 200000;
	for (unsigned i = 0; i < n; i++) {
		uint64_t g = rt_sites_gap(rt_sites_random(&state), mean);
		cr_assert_geq(g, 1);
		sum += (double)g;
		longer += g > mean;
	}
	cr_assert_leq(fabs(sum / n / mean - 1), 0.01, "mean %g", sum / n);
	cr_assert_leq(fabs((double)longer / n - exp(-1)), 0.005, "share %g", (double)longer / n);
	/* The extremes of U: never 0, never infinite. */
	cr_assert_eq(rt_sites_gap(UINT64_MAX, mean), 1);
	cr_assert_leq(rt_sites_gap(0, mean), (uint64_t)(37.5 * mean));
	cr_assert_neq(rt_sites_seed(0), 0);
}

Test(sites, weight_is_size_over_its_chance)
{
	const uint64_t s = 512 * 1024;
	for (uint64_t size = 1; size < (UINT64_C(1) << 34); size = size * 3 + 1) {
		double want = (double)size / -expm1(-(double)size / (double)s);
		cr_assert_leq(fabs(rt_sites_weight(size, s) - want), 1e-9 * want, "size %lu",
		              (unsigned long)size);
		double w = want, noise = w * (w - (double)size);
		cr_assert_leq(fabs(rt_sites_noise(size, s) - noise), 1e-6 * noise + 1e-3);
	}
	/* A small block stands for about S, a huge one for itself alone, with no noise. */
	cr_assert_leq(fabs(rt_sites_weight(16, s) - (s + 8)), 1.0);
	cr_assert_eq(rt_sites_weight(UINT64_C(1) << 40, s), (double)(UINT64_C(1) << 40));
	cr_assert_eq(rt_sites_noise(UINT64_C(1) << 40, s), 0);
}

/* The weights are unbiased: sampling a known heap through the gaps estimates its size. */
Test(sites, sampled_estimate_is_unbiased)
{
	const uint64_t mean = 64 * 1024;
	uint64_t state = rt_sites_seed(7), heap = 0;
	double estimate = 0;
	uint64_t left = rt_sites_gap(rt_sites_random(&state), mean);
	for (unsigned i = 0; i < 2000000; i++) {
		uint64_t size = 16 + (rt_sites_random(&state) >> 40) % 4096;
		heap += size;
		if (size >= left) {
			estimate += rt_sites_weight(size, mean);
			left = rt_sites_gap(rt_sites_random(&state), mean);
		} else {
			left -= size;
		}
	}
	cr_assert_leq(fabs(estimate / (double)heap - 1), 0.02, "estimate/heap %g",
	              estimate / (double)heap);
}

Test(sites, grew_needs_two_standard_deviations)
{
	const double s = 512 * 1024;
	/* One small-block sample more: its own noise, not growth. */
	cr_assert_not(rt_sites_grew(s, s * s));
	/* Four more samples and none freed: growth at two standard deviations. */
	cr_assert(rt_sites_grew(4 * s, 4 * s * s));
	cr_assert_not(rt_sites_grew(3 * s, 3 * s * s));
	/* A large block is known exactly: any growth counts. */
	cr_assert(rt_sites_grew(1, 0));
	cr_assert_not(rt_sites_grew(0, 0));
	cr_assert_not(rt_sites_grew(-8 * s, 0));
}

Test(sites, change_counts_new_samples_and_those_gone)
{
	double prev_live = 0, prev_var = 0;
	struct rt_sites_change c = rt_sites_change_of(3, 100, 10, 0, &prev_live, &prev_var);
	cr_assert_eq(c.site, 3);
	cr_assert_eq(c.delta, 100);
	cr_assert_eq(c.var, 10, "all new");
	cr_assert_eq(prev_live, 100);
	cr_assert_eq(prev_var, 10);
	/* Next round: 4 of the old variance still live (6 of it freed), 5 new. */
	c = rt_sites_change_of(3, 90, 5, 4, &prev_live, &prev_var);
	cr_assert_eq(c.delta, -10);
	cr_assert_eq(c.var, 5 + 6);
	cr_assert_eq(prev_var, 9);
	/* Old samples never count negative: more old variance than before is no freed one. */
	c = rt_sites_change_of(3, 90, 0, 20, &prev_live, &prev_var);
	cr_assert_eq(c.var, 0);
}

Test(sites, top_takes_the_largest_growth_first)
{
	struct rt_sites_change c[] = {
	    {.site = 1, .delta = 10, .var = 0},        {.site = 2, .delta = 500, .var = 1e6},
	    {.site = 3, .delta = 30, .var = 0},        {.site = 4, .delta = -5, .var = 0},
	    {.site = 5, .delta = 30, .var = 100},      {.site = 6, .delta = 1000, .var = 1e5},
	    {.site = 7, .delta = 2000, .var = 1000000}};
	size_t n = rt_sites_top(c, sizeof(c) / sizeof(c[0]), 3);
	cr_assert_eq(n, 3);
	cr_assert_eq(c[0].site, 7);
	cr_assert_eq(c[1].site, 6);
	cr_assert_eq(c[2].site, 3); /* ties on delta: the lower site first */
	cr_assert_eq(c[3].site, 5);
	n = rt_sites_top(c, sizeof(c) / sizeof(c[0]), 10);
	cr_assert_eq(n, 5, "site 2 is noise, site 4 shrank");
	cr_assert_eq(rt_sites_top(c, 0, 10), 0);
}

Test(sites, path_beside_the_stats_file)
{
	char out[64];
	cr_assert(rt_sites_path(out, sizeof(out), "/tmp/s/%p.jsonl"));
	cr_assert_str_eq(out, "/tmp/s/%p.sites.jsonl");
	cr_assert(rt_sites_path(out, sizeof(out), "/var/log/stats"));
	cr_assert_str_eq(out, "/var/log/stats.sites.jsonl");
	cr_assert_not(rt_sites_path(out, 10, "/var/log/stats.jsonl"));
	cr_assert(rt_sites_is_path("/a/1.sites.jsonl"));
	cr_assert_not(rt_sites_is_path("/a/1.jsonl"));
	cr_assert_not(rt_sites_is_path(".sites.json"));
}

static struct rt_sites_read got;

Test(sites, site_line_round_trip)
{
	struct rt_sites_site s = {.pid = 77, .site = 12, .nframes = 3, .npy = 2};
	s.frames[0] = (struct rt_sites_frame){0x55aa00001234, "/opt/a b/\"x\".so", 0x1234};
	s.frames[1] = (struct rt_sites_frame){0x7f0000c0ffee, "/usr/lib/libc.so.6", 0x2c0ffee};
	s.frames[2] = (struct rt_sites_frame){0x10, "", 0};
	s.py[0] = (struct rt_sites_pyframe){"Model.keep", "/srv/app/model.py", 41};
	s.py[1] = (struct rt_sites_pyframe){"<module>", "/srv/app/main.py", 1};
	char line[RT_SITES_LINE_MAX];
	size_t len = rt_sites_site_json(line, sizeof(line), &s);
	cr_assert_eq(line[len - 1], '\n');
	cr_assert_eq(rt_sites_read_line(line, &got), RT_SITES_LINE_SITE, "%s", line);
	cr_assert_eq(got.site.s.pid, 77);
	cr_assert_eq(got.site.s.site, 12);
	cr_assert_eq(got.site.s.nframes, 3);
	for (unsigned i = 0; i < 3; i++) {
		cr_assert_eq(got.site.s.frames[i].addr, s.frames[i].addr);
		cr_assert_eq(got.site.s.frames[i].offset, s.frames[i].offset);
		cr_assert_str_eq(got.site.s.frames[i].module, s.frames[i].module);
	}
	cr_assert_eq(got.site.s.npy, 2);
	for (unsigned i = 0; i < 2; i++) {
		cr_assert_str_eq(got.site.s.py[i].function, s.py[i].function);
		cr_assert_str_eq(got.site.s.py[i].file, s.py[i].file);
		cr_assert_eq(got.site.s.py[i].line, s.py[i].line);
	}
}

Test(sites, round_line_round_trip)
{
	struct rt_sites_round r = {.pid = 9,
	                           .round = 6,
	                           .since = 4,
	                           .unix_time_us = 1700000000012345,
	                           .sample_bytes = 524288,
	                           .samples = 321,
	                           .live_bytes = UINT64_C(123456789012),
	                           .dropped = 2,
	                           .ngrew = 2};
	r.grew[0] = (struct rt_sites_change){.site = 3, .live = 9e6, .delta = 4e6, .var = 9e10};
	r.grew[1] = (struct rt_sites_change){.site = 8, .live = 1e5, .delta = 1e5, .var = 0};
	char line[RT_SITES_LINE_MAX];
	rt_sites_round_json(line, sizeof(line), &r);
	cr_assert_eq(rt_sites_read_line(line, &got), RT_SITES_LINE_ROUND, "%s", line);
	const struct rt_sites_round *g = &got.round;
	cr_assert_eq(g->pid, 9);
	cr_assert_eq(g->round, 6);
	cr_assert_eq(g->since, 4);
	cr_assert_eq(g->unix_time_us, r.unix_time_us);
	cr_assert_eq(g->sample_bytes, 524288);
	cr_assert_eq(g->samples, 321);
	cr_assert_eq(g->live_bytes, r.live_bytes);
	cr_assert_eq(g->dropped, 2);
	cr_assert_eq(g->ngrew, 2);
	cr_assert_eq(g->grew[0].site, 3);
	cr_assert_eq(g->grew[0].live, 9e6);
	cr_assert_eq(g->grew[0].delta, 4e6);
	cr_assert_eq(g->grew[0].var, 9e10, "sd 3e5 written, its square read");
	cr_assert_eq(g->grew[1].var, 0);
	/* An empty round. */
	r.ngrew = 0;
	rt_sites_round_json(line, sizeof(line), &r);
	cr_assert_eq(rt_sites_read_line(line, &got), RT_SITES_LINE_ROUND);
	cr_assert_eq(got.round.ngrew, 0);
}

Test(sites, reader_refuses_what_the_writer_never_writes)
{
	const char *bad[] = {
	    "",
	    "not json",
	    "[1,2]",
	    "{\"pid\":1}",
	    "{\"pid\":1,\"site\":2,\"frames\":[],\"python\":[]} x",
	    "{\"pid\":1,\"site\":2,\"frames\":[{\"addr\":\"12\",\"module\":\"\",\"offset\":\"0x0\"}"
	    "],"
	    "\"python\":[]}",
	    "{\"pid\":1,\"site\":2,\"frames\":[{\"addr\":\"0xZZ\",\"module\":\"\",\"offset\":"
	    "\"0x0\"}"
	    "],\"python\":[]}",
	    "{\"pid\":1,\"site\":-2,\"frames\":[],\"python\":[]}",
	    "{\"pid\":1,\"round\":1,\"since\":0,\"unix_time\":1.5,\"sample_bytes\":1,\"samples\":1,"
	    "\"live_bytes\":1,\"dropped\":0,\"grew\":[]}",
	    "{\"pid\":1,\"round\":-1,\"since\":0,\"unix_time\":1.000005,\"sample_bytes\":1,"
	    "\"samples\":1,\"live_bytes\":1,\"dropped\":0,\"grew\":[]}",
	    "{\"pid\":1,\"round\":1,\"since\":0,\"unix_time\":1.000005,\"sample_bytes\":1,"
	    "\"samples\":1,\"live_bytes\":1,\"dropped\":0,\"grew\":[{\"site\":1}]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(rt_sites_read_line(bad[i], &got), RT_SITES_LINE_BAD, "%s", bad[i]);
	const char *ok = "{\"pid\":1,\"site\":2,\"frames\":[],\"python\":[]}\r\n";
	cr_assert_eq(rt_sites_read_line(ok, &got), RT_SITES_LINE_SITE);
}

/* Runs of consecutive reports: a leak grows in each, noise now and then. */
Test(sites, trend_counts_runs_of_reports)
{
	struct rt_sites_trend t;
	rt_sites_trend_init(&t, 5, 3);
	/* Reports every 2 rounds: 2, 4, 6, 8, 10, 12. */
	rt_sites_trend_grew(&t, 0, 2, 100, 100);
	rt_sites_trend_grew(&t, 2, 4, 100, 200);
	cr_assert_eq(t.streak, 2);
	cr_assert_not(rt_sites_trend_persistent(&t));
	rt_sites_trend_grew(&t, 4, 6, 100, 300);
	cr_assert_eq(t.streak, 3);
	cr_assert(rt_sites_trend_persistent(&t));
	/* Not in report 8: the run breaks. */
	rt_sites_trend_grew(&t, 8, 10, 50, 350);
	cr_assert_eq(t.streak, 1);
	cr_assert_eq(t.longest, 3);
	cr_assert_eq(t.rounds_grown, 4);
	cr_assert_eq(t.first_round, 2);
	cr_assert_eq(t.last_round, 10);
	cr_assert_eq(t.total_delta, 350);
	cr_assert_eq(t.last_live, 350);
	cr_assert_eq(rt_sites_trend_per_round(&t, 7), 50);
	cr_assert_eq(rt_sites_trend_per_round(&t, 0), 0);

	/* A site whose first growth is not in the first report starts a run of 1. */
	struct rt_sites_trend u;
	rt_sites_trend_init(&u, 5, 4);
	rt_sites_trend_grew(&u, 6, 8, 10, 10);
	cr_assert_eq(u.streak, 1);
	rt_sites_trend_grew(&u, 8, 10, 10, 20);
	cr_assert_eq(u.longest, 2);
	/* Persistent first, then total growth. */
	cr_assert_lt(rt_sites_trend_cmp(&t, &u), 0);
	u.total_delta = 1e9;
	cr_assert_lt(rt_sites_trend_cmp(&t, &u), 0);
	u.longest = 3;
	cr_assert_gt(rt_sites_trend_cmp(&t, &u), 0);
}

Test(sites, where_skips_the_runtime)
{
	cr_assert(rt_sites_is_runtime("/lib/x86_64-linux-gnu/libc.so.6"));
	cr_assert(rt_sites_is_runtime("/usr/lib/x86_64-linux-gnu/libstdc++.so.6"));
	cr_assert(rt_sites_is_runtime("ld-linux-x86-64.so.2"));
	cr_assert_not(rt_sites_is_runtime("/usr/lib/libcrypto.so.3"));
	cr_assert_not(rt_sites_is_runtime("/usr/bin/python3.11"));
	cr_assert_not(rt_sites_is_runtime(""));
	struct rt_sites_site s = {.nframes = 3};
	s.frames[0].module = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6";
	s.frames[1].module = "/lib/x86_64-linux-gnu/libc.so.6";
	s.frames[2].module = "/srv/app";
	cr_assert_eq(rt_sites_where(&s), 2);
	s.nframes = 2;
	cr_assert_eq(rt_sites_where(&s), 0);
	s.nframes = 0;
	cr_assert_eq(rt_sites_where(&s), 0);
}
