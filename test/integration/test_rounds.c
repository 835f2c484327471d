/* Every N rounds, RSS falls to near the live heap; between actions it does not. Under glibc,
 * and under jemalloc preloaded before and after the library. */
#include "harness.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

enum trigger { BY_SIGNAL, BY_FIFO };

/* RSS after an action must be within 10% + 8 MiB of the live heap. */
static bool
near_live(int64_t rss_kib, int64_t live_kib)
{
	return rss_kib <= live_kib + live_kib / 10 + 8 * 1024;
}

static void
run_rounds(const char *preload, int every, int rounds, enum trigger trigger)
{
	const char *dir = th_tmpdir();
	char env_preload[PATH_MAX * 2], env_stats[PATH_MAX], env_fifo[PATH_MAX], env_n[64];
	char stats[PATH_MAX], fifo[PATH_MAX], line[1024];
	snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s", preload);
	snprintf(env_stats, sizeof(env_stats), "ROUNDTRIM_STATS=%s/stats.jsonl", dir);
	snprintf(env_fifo, sizeof(env_fifo), "ROUNDTRIM_FIFO=%s/%%p.fifo", dir);
	snprintf(env_n, sizeof(env_n), "ROUNDTRIM_GC_ROUNDS=%d", every);
	snprintf(stats, sizeof(stats), "%s/stats.jsonl", dir);
	char rounds_arg[16];
	snprintf(rounds_arg, sizeof(rounds_arg), "%d", rounds);
	const char *argv[] = {th_workload("frag"), "--threads", "2",      "--mib", "256",
	                      "--rounds",          rounds_arg,  "--wait", NULL};
	const char *env[] = {env_preload, env_stats, env_fifo, env_n, "ROUNDTRIM_SIGNAL=RTMIN+8",
	                     NULL};
	struct th_proc p;
	th_spawn(&p, argv, env);
	snprintf(fifo, sizeof(fifo), "%s/%d.fifo", dir, p.pid);

	int64_t live = 0;
	for (int r = 1; r <= rounds; r++) {
		cr_assert(th_read_line(&p, line, sizeof(line), TH_TIMEOUT_MS), "no round %d", r);
		if (trigger == BY_SIGNAL)
			cr_assert_eq(kill(p.pid, SIGRTMIN + 8), 0);
		else
			cr_assert(th_wait_path(fifo, false, TH_TIMEOUT_MS) &&
			              th_fifo_write(fifo, "round\n", 6),
			          "FIFO %s not served", fifo);
		char needle[32];
		snprintf(needle, sizeof(needle), "\"round\":%d,", r);
		cr_assert(th_wait_line(stats, needle, line, sizeof(line), TH_TIMEOUT_MS),
		          "round %d never reported", r);
		int64_t before = th_field(line, "rss_before_kib");
		int64_t after = th_field(line, "rss_after_kib");
		/* Where the last reading cost over 1 ms of the worker's CPU time (under load) the
		 * library skips the next ones (live-skipped): the live heap is the last one read,
		 * each round of frag's keeping as much. The first is always read. */
		if (th_field(line, "live_kib") > 0)
			live = th_field(line, "live_kib");
		else
			cr_assert(strstr(line, "live-skipped") && live > 0,
			          "no live heap figure: %s", line);
		/* The workload really fragments: before any action RSS is far above live. */
		cr_assert(!near_live(before, live), "workload did not fragment: %s", line);
		if (r % every == 0) {
			cr_assert_null(strstr(line, "\"action\":\"none\""), "round %d: %s", r,
			               line);
			cr_assert(near_live(after, live), "round %d: RSS did not fall: %s", r,
			          line);
		} else {
			cr_assert_not_null(strstr(line, "\"action\":\"none\""), "round %d: %s", r,
			                   line);
			cr_assert(!near_live(after, live), "round %d: RSS fell: %s", r, line);
		}
		th_write(&p, "next\n");
	}
	th_close_stdin(&p);
	cr_assert(th_wait(&p, TH_TIMEOUT_MS));
	cr_assert_eq(p.status, 0);
}

static void
preload_pair(char *out, size_t size, bool jemalloc_first)
{
	const char *je = th_jemalloc();
	cr_assert_not_null(je, "Debian's libjemalloc2 is not installed (scripts/deps.sh)");
	if (jemalloc_first)
		snprintf(out, size, "%s:%s", je, th_lib());
	else
		snprintf(out, size, "%s:%s", th_lib(), je);
}

TestSuite(rounds, .timeout = 120, .fini = th_cleanup);

Test(rounds, glibc_every_round_by_signal)
{
	run_rounds(th_lib(), 1, 3, BY_SIGNAL);
}

Test(rounds, glibc_every_round_by_fifo)
{
	run_rounds(th_lib(), 1, 3, BY_FIFO);
}

Test(rounds, glibc_every_third_round)
{
	run_rounds(th_lib(), 3, 6, BY_SIGNAL);
}

Test(rounds, jemalloc_first_every_round)
{
	char preload[PATH_MAX * 2];
	preload_pair(preload, sizeof(preload), true);
	run_rounds(preload, 1, 3, BY_SIGNAL);
}

Test(rounds, jemalloc_first_every_third_round)
{
	char preload[PATH_MAX * 2];
	preload_pair(preload, sizeof(preload), true);
	run_rounds(preload, 3, 3, BY_FIFO);
}

Test(rounds, jemalloc_after_every_round)
{
	char preload[PATH_MAX * 2];
	preload_pair(preload, sizeof(preload), false);
	run_rounds(preload, 1, 3, BY_FIFO);
}

Test(rounds, jemalloc_after_every_third_round)
{
	char preload[PATH_MAX * 2];
	preload_pair(preload, sizeof(preload), false);
	run_rounds(preload, 3, 3, BY_SIGNAL);
}
