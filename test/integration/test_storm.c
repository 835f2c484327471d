/* Stress: four threads allocate and free through every entry point while rounds arrive from the
 * API (from those threads), the FIFO and the signal, each one acted on: every round is counted,
 * no block is damaged, the program exits as it would without the library. make check-asan and
 * check-tsan run this with the library, the workload and its allocations under the sanitizer. */
#include "harness.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(storm, .timeout = 240, .fini = th_cleanup);

#define STRESS_THREADS "4"
#define STRESS_API_ROUNDS 5 /* per thread */
#define STRESS_STEPS 40

static void
wait_rounds(struct th_probe *run, long rounds)
{
	char line[2048];
	th_wait_rounds(run, rounds, line, sizeof(line));
}

/* Runs storm under `preload` with an action every round and a stats file, so that the worker
 * trims, reads the heap statistics and writes while the threads allocate. */
static void
run_storm(const char *preload)
{
	const char *dir = th_tmpdir();
	char env_preload[PATH_MAX + 16], env_fifo[PATH_MAX + 32], env_stats[PATH_MAX + 32];
	char api_rounds[16], line[256];
	snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s", preload);
	snprintf(env_fifo, sizeof(env_fifo), "ROUNDTRIM_FIFO=%s/%%p.fifo", dir);
	snprintf(env_stats, sizeof(env_stats), "ROUNDTRIM_STATS=%s/%%p.jsonl", dir);
	snprintf(api_rounds, sizeof(api_rounds), "%d", STRESS_API_ROUNDS);
	const char *env[] = {
	    env_preload, env_fifo, env_stats, "ROUNDTRIM_GC_ROUNDS=1", "ROUNDTRIM_SIGNAL=RTMIN+8",
	    NULL};
	const char *argv[] = {th_workload("storm"), STRESS_THREADS, api_rounds, NULL};

	struct th_probe run;
	th_spawn(&run.proc, argv, env);
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS), "storm said nothing");
	snprintf(run.fifo, sizeof(run.fifo), "%s/%d.fifo", dir, run.proc.pid);
	snprintf(run.status, sizeof(run.status), "%s/%d.status", dir, run.proc.pid);
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_str_eq(line, "api done");
	long rounds = atol(STRESS_THREADS) * STRESS_API_ROUNDS;
	wait_rounds(&run, rounds);

	/* One source at a time, each waited for, so that the count is exact at every step. */
	for (int step = 0; step < STRESS_STEPS; step++) {
		const char *lines = step % 10 ? "round\ntrim\nround\nround\n"
		                              : "round\nstats\ntrim\nround\nround\n";
		cr_assert(th_fifo_write(run.fifo, lines, strlen(lines)));
		wait_rounds(&run, rounds += 3);
		if (step % 4 == 0) {
			cr_assert_eq(kill(run.proc.pid, SIGRTMIN + 8), 0);
			wait_rounds(&run, rounds += 1);
		}
	}

	th_close_stdin(&run.proc);
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS), "no ops line");
	cr_assert(strncmp(line, "ops=", 4) == 0 && strstr(line, " corrupt=0"), "%s", line);
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS), "storm did not exit");
	cr_assert_eq(run.proc.status, 0);
	cr_assert(th_wait_path(run.fifo, true, TH_TIMEOUT_MS), "FIFO left behind at exit");
}

Test(storm, threads_allocate_while_rounds_arrive)
{
	run_storm(th_lib());
}

/* jemalloc behind the wrappers, as in production with NVFlare's jemalloc block: a purge of
 * every arena while the threads allocate. */
Test(storm, threads_allocate_while_jemalloc_purges)
{
	const char *je = th_jemalloc();
	if (!je)
		cr_skip_test("no jemalloc");
	char preload[2 * PATH_MAX + 2];
	snprintf(preload, sizeof(preload), "%s:%s", th_lib(), je);
	run_storm(preload);
}
