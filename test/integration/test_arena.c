/* glibc's arenas, released from the worker thread: the free tops of thread arenas that
 * malloc_trim leaves go back too; checker threads allocating in those very arenas, with forks,
 * never see a wrong byte; and when glibc is set up differently from what the release knows, it
 * stands down with one line and malloc_trim acts instead. */
#include "harness.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(arena, .timeout = 120, .fini = th_cleanup);

struct arena_run {
	struct th_proc proc;
	char stats[PATH_MAX];
	char fifo[PATH_MAX];
};

/* pool under the library, FIFO rounds, one action per round; extra_arg is one more option of
 * pool's, or NULL. */
static void
arena_start_pool(struct arena_run *run, const char *threads, const char *rounds,
                 const char *extra_env, const char *extra_arg)
{
	const char *dir = th_tmpdir();
	char env_preload[PATH_MAX], env_stats[PATH_MAX], env_fifo[PATH_MAX];
	snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s", th_lib());
	snprintf(env_stats, sizeof(env_stats), "ROUNDTRIM_STATS=%s/stats.jsonl", dir);
	snprintf(env_fifo, sizeof(env_fifo), "ROUNDTRIM_FIFO=%s/%%p.fifo", dir);
	snprintf(run->stats, sizeof(run->stats), "%s/stats.jsonl", dir);
	const char *argv[] = {th_workload("pool"), "--threads", threads,  "--mib",   "24",
	                      "--rounds",          rounds,      "--wait", extra_arg, NULL};
	const char *env[] = {env_preload, env_stats, env_fifo, "ROUNDTRIM_GC_ROUNDS=1",
	                     extra_env,   NULL};
	th_spawn(&run->proc, argv, env);
	snprintf(run->fifo, sizeof(run->fifo), "%s/%d.fifo", dir, run->proc.pid);
}

/* Waits for round r of the pool, counts it through the FIFO, returns its stats line. */
static void
arena_round(struct arena_run *run, int r, char *line, size_t size)
{
	cr_assert(th_read_line(&run->proc, line, size, TH_TIMEOUT_MS), "no round %d", r);
	cr_assert(th_wait_path(run->fifo, false, TH_TIMEOUT_MS) &&
	              th_fifo_write(run->fifo, "round\n", 6),
	          "FIFO %s not served", run->fifo);
	char needle[32];
	snprintf(needle, sizeof(needle), "\"round\":%d,", r);
	cr_assert(th_wait_line(run->stats, needle, line, size, TH_TIMEOUT_MS),
	          "round %d never reported", r);
}

static void
arena_finish(struct arena_run *run, char *err, size_t size)
{
	th_close_stdin(&run->proc);
	cr_assert(th_wait(&run->proc, TH_TIMEOUT_MS));
	cr_assert_eq(run->proc.status, 0);
	th_read_stderr(&run->proc, err, size);
}

Test(arena, thread_arena_tops_go_back)
{
	struct arena_run run;
	char line[1024], err[4096];
	arena_start_pool(&run, "4", "3", NULL, NULL);
	for (int r = 1; r <= 3; r++) {
		arena_round(&run, r, line, sizeof(line));
		int64_t before = th_field(line, "rss_before_kib");
		int64_t after = th_field(line, "rss_after_kib");
		/* Four threads left about 24 MiB of free top each; malloc_trim(0) alone gives none
		 * of it back. What stays is the program, its libraries and 16 KiB of live heap. */
		cr_assert_gt(before, 4 * 20 * 1024, "the pool kept no free tops: %s", line);
		cr_assert_null(strstr(line, "\"action\":\"none\""), "%s", line);
		cr_assert_lt(after, 16 * 1024, "round %d: the tops stayed: %s", r, line);
		th_write(&run.proc, "next\n");
	}
	arena_finish(&run, err, sizeof(err));
	cr_assert_null(strstr(err, "arena release off"), "stood down: %s", err);
}

Test(arena, the_worker_takes_no_arena_that_the_program_would_reuse)
{
	/* Each round a new thread grows its arena's free top to about 24 MiB and exits; glibc keeps
	 * the arena on its free list for the program's next thread. With malloc_trim as the action,
	 * which never returns a thread arena's top, a worker that took that arena at its first
	 * malloc (its first action's) would hold it for good, and the next thread would grow a new
	 * one: 24 MiB more from round 2 on. */
	struct arena_run run;
	char line[1024], err[4096];
	int64_t rss[4] = {0};
	arena_start_pool(&run, "1", "3", "ROUNDTRIM_GLIBC=trim", "--exiting");
	for (int r = 1; r <= 3; r++) {
		arena_round(&run, r, line, sizeof(line));
		cr_assert_not_null(strstr(line, "\"action\":\"malloc_trim\""), "%s", line);
		rss[r] = th_field(line, "rss_before_kib");
		cr_assert_gt(rss[r], 20 * 1024, "round %d left no free top: %s", r, line);
		th_write(&run.proc, "next\n");
	}
	arena_finish(&run, err, sizeof(err));
	cr_assert_lt(rss[3], rss[1] + 12 * 1024,
	             "a new thread arena grew: %lld KiB after round 1, %lld after round 3",
	             (long long)rss[1], (long long)rss[3]);
}

Test(arena, integrity_while_releases_run_back_to_back)
{
	const char *dir = th_tmpdir();
	char env_preload[PATH_MAX], env_stats[PATH_MAX], env_fifo[PATH_MAX], stats[PATH_MAX];
	snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s", th_lib());
	snprintf(env_stats, sizeof(env_stats), "ROUNDTRIM_STATS=%s/churn.jsonl", dir);
	snprintf(env_fifo, sizeof(env_fifo), "ROUNDTRIM_FIFO=%s/%%p.fifo", dir);
	snprintf(stats, sizeof(stats), "%s/churn.jsonl", dir);
	const char *argv[] = {th_workload("churn"), "--threads", "4", "--seconds", "3", NULL};
	const char *env[] = {env_preload, env_stats, env_fifo, "ROUNDTRIM_GC_ROUNDS=0", NULL};
	char out[1024], err[4096];
	int status = th_run(argv, env, out, sizeof(out), err, sizeof(err));
	cr_assert_eq(status, 0, "churn failed (%d): %s%s", status, out, err);
	cr_assert_not_null(strstr(out, " errors=0 hung=0 "), "%s%s", out, err);
	/* Under ASan or TSan the workload cannot fork safely and says so. */
	if (!strstr(out, " sanitizer=1"))
		cr_assert_gt(th_field(out, "forks"), 0, "%s", out);
	/* The releases really ran, many of them, while the checkers worked: the library answered
	 * the trims and wrote one stats line per action. */
	cr_assert_gt(th_field(out, "trims"), 0, "%s", out);
	int actions = th_count_lines(stats, "\"action\":\"glibc_release\"");
	int glibc = th_count_lines(stats, "\"allocator\":\"glibc\"");
	/* Under ASan or TSan the sanitizer's allocator serves: no release to check. */
	if (!strstr(out, " sanitizer=1")) {
		cr_assert_gt(glibc, 0, "glibc was not found serving malloc: %s", err);
		cr_assert_geq(actions, 10, "only %d releases ran: %s", actions, err);
		cr_assert_null(strstr(err, "arena release off"), "stood down: %s", err);
	}
}

Test(arena, stands_down_when_glibc_is_set_up_otherwise)
{
	/* With glibc.malloc.hugetlb=2 glibc lays out its heaps and main arena differently. */
	struct arena_run run;
	char line[1024], err[4096];
	arena_start_pool(&run, "2", "2", "GLIBC_TUNABLES=glibc.malloc.hugetlb=2", NULL);
	for (int r = 1; r <= 2; r++) {
		arena_round(&run, r, line, sizeof(line));
		/* malloc_trim ran instead: the round still acted, without a failure note. */
		cr_assert_not_null(strstr(line, "\"action\":\"malloc_trim\""), "%s", line);
		cr_assert_null(strstr(line, "failed"), "%s", line);
		th_write(&run.proc, "next\n");
	}
	arena_finish(&run, err, sizeof(err));
	static const char said[] = "roundtrim: glibc arena release off: ";
	char *off = strstr(err, said);
	cr_assert_not_null(off, "no stand-down line: %s", err);
	cr_assert_null(strstr(off + strlen(said), said), "said more than once: %s", err);
}

/* probe uaf under the library: a one-word use-after-free write that leaves the heap damaged where
 * only a consolidation looks (glibc's own malloc_trim, mallinfo2 and next consolidation abort on
 * it), FIFO rounds, then the program goes on with blocks its tcache serves and ends as it does
 * without the library. released: rounds made before the write (the first one checks every arena,
 * so that the write is found by a release of a validated layout, not by that first check).
 * mode: the probe's kind of write ("" or "alias"). */
static void
arena_damaged_heap(int released, const char *mode)
{
	const char *dir = th_tmpdir();
	char env_stats[PATH_MAX + 32], stats[PATH_MAX], line[1024], err[4096];
	snprintf(stats, sizeof(stats), "%s/uaf-%d%s.jsonl", dir, released, mode);
	snprintf(env_stats, sizeof(env_stats), "ROUNDTRIM_STATS=%s", stats);
	const char *args[] = {"uaf", *mode ? mode : NULL, NULL};
	const char *extra[] = {env_stats, "ROUNDTRIM_GC_ROUNDS=1", NULL};
	struct th_probe run;
	th_start_probe_env(&run, args, extra, line, sizeof(line));
	cr_assert_not_null(strstr(line, "ready"), "%s", line);
	char needle[32];
	for (int r = 1; r <= released + 2; r++) {
		if (r == released + 1) {
			th_write(&run.proc, "write\n");
			cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS) &&
			              strstr(line, "written"),
			          "no write: %s", line);
		}
		cr_assert(th_fifo_write(run.fifo, "round\n", 6), "FIFO %s not served", run.fifo);
		snprintf(needle, sizeof(needle), "\"round\":%d,", r);
		if (!th_wait_line(stats, needle, line, sizeof(line), TH_TIMEOUT_MS)) {
			th_kill(&run.proc);
			th_read_stderr(&run.proc, err, sizeof(err));
			cr_assert_fail("round %d never reported: %s", r, err);
		}
		/* A release before the write; none from the round that found the damage on: no
		 * malloc_trim either, which would abort the program. */
		th_expect_in(line, r <= released ? "\"action\":\"glibc_release\""
		                                 : "\"action\":\"none\"");
		cr_assert_null(strstr(line, "failed"), "%s", line);
	}
	th_write(&run.proc, "go on\n");
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS), "probe died");
	cr_assert_not_null(strstr(line, "finished"), "%s", line);
	if (*mode)
		cr_assert_not_null(strstr(line, "x_fd=b"), "the release wrote: %s", line);
	th_close_stdin(&run.proc);
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS));
	th_read_stderr(&run.proc, err, sizeof(err));
	cr_assert_eq(run.proc.status, 0, "%s", err);
	/* One line from the library, which names the check that failed. */
	cr_assert_eq(th_count_in(err, "roundtrim: "), 1, "%s", err);
	th_expect_in(err, "roundtrim: glibc heap actions off: a ");
	th_expect_in(err, ": the program's heap looks damaged; malloc_trim would abort on it\n");
}

/* The write is found by the first check of every arena, before any release. */
Test(arena, a_damaged_heap_found_at_the_first_check_turns_the_glibc_actions_off)
{
	arena_damaged_heap(0, "");
}

/* The write is found by a release, after releases of the heap as it was before. */
Test(arena, a_damaged_heap_found_by_a_release_turns_the_glibc_actions_off)
{
	arena_damaged_heap(2, "");
}

/* A ring pointer that aliases a list word (review of issue 26): glibc's consolidation writes the
 * list, then finds the ring broken and aborts; the release checks in glibc's order, stands down
 * and writes nothing (it used to write X.fd = X, a self-loop that a later malloc dies on). */
Test(arena, a_damaged_heap_whose_ring_pointer_aliases_a_list_word_is_left_unwritten)
{
	arena_damaged_heap(2, "alias");
}

/* chunks under the library: N free chunks of 200 B in the main arena's small bins, one round
 * through the FIFO; returns whether that first round skipped the live heap. */
static bool
arena_first_round_skips_live(const char *chunks)
{
	const char *dir = th_tmpdir();
	char env_preload[PATH_MAX], env_stats[PATH_MAX], env_fifo[PATH_MAX], path[PATH_MAX];
	snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s", th_lib());
	snprintf(env_stats, sizeof(env_stats), "ROUNDTRIM_STATS=%s/%s.jsonl", dir, chunks);
	snprintf(env_fifo, sizeof(env_fifo), "ROUNDTRIM_FIFO=%s/%%p.fifo", dir);
	snprintf(path, sizeof(path), "%s/test/bench/chunks", RT_BUILD_DIR);
	const char *argv[] = {path,       "--chunks", chunks,     "--size", "200",
	                      "--repeat", "1",        "--rounds", "1",      NULL};
	const char *env[] = {env_preload, env_stats, env_fifo, "ROUNDTRIM_GC_ROUNDS=1", NULL};
	struct th_proc p;
	th_spawn(&p, argv, env);
	char line[1024];
	cr_assert(th_read_line(&p, line, sizeof(line), TH_TIMEOUT_MS), "chunks printed nothing");
	cr_assert(th_read_line(&p, line, sizeof(line), TH_TIMEOUT_MS), "no round: %s", line);
	cr_assert(th_wait(&p, TH_TIMEOUT_MS));
	cr_assert_eq(p.status, 0);
	cr_assert(strstr(line, "round=1 "), "%s", line);
	return strstr(line, "live_skipped=1") != NULL;
}

/* mallinfo2 would hold the main arena's lock through a walk of every free chunk (tens of ms
 * at 10^5): the free chunks are counted first, in short holds, and the reading is skipped from
 * the first round on. A heap of few chunks is read. */
Test(arena, live_heap_of_many_small_free_chunks_is_skipped_from_the_first_round)
{
	cr_assert(arena_first_round_skips_live("100000"));
	cr_assert_not(arena_first_round_skips_live("1000"));
}

/* shapes under the library: each round's randomized heap shape is released once (a FIFO round)
 * while the program's threads allocate, free across arenas and fork; then the workload checks
 * every live block, walks every arena chunk by chunk and lets glibc's own checks run over the
 * whole heap (malloc_trim, frees of everything, the shape built again). */
static void
arena_shapes(unsigned long seed, int rounds)
{
	const char *dir = th_tmpdir();
	char env_preload[PATH_MAX], env_stats[PATH_MAX + 32], env_fifo[PATH_MAX], stats[PATH_MAX],
	    fifo[PATH_MAX], seed_text[32], rounds_text[16];
	snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s", th_lib());
	snprintf(stats, sizeof(stats), "%s/shapes-%lu.jsonl", dir, seed);
	snprintf(env_stats, sizeof(env_stats), "ROUNDTRIM_STATS=%s", stats);
	snprintf(env_fifo, sizeof(env_fifo), "ROUNDTRIM_FIFO=%s/%%p.fifo", dir);
	snprintf(seed_text, sizeof(seed_text), "%lu", seed);
	snprintf(rounds_text, sizeof(rounds_text), "%d", rounds);
	const char *argv[] = {th_workload("shapes"), "--seed", seed_text, "--threads", "3",
	                      "--mib", "6", "--rounds", rounds_text, NULL};
	const char *env[] = {env_preload, env_stats, env_fifo, "ROUNDTRIM_GC_ROUNDS=1", NULL};
	struct th_proc proc;
	th_spawn(&proc, argv, env);
	snprintf(fifo, sizeof(fifo), "%s/%d.fifo", dir, proc.pid);
	char line[1024], err[4096];
	for (int r = 1; r <= rounds; r++) {
		cr_assert(th_read_line(&proc, line, sizeof(line), TH_TIMEOUT_MS),
		          "seed %lu: no round %d", seed, r);
		cr_assert_not_null(strstr(line, "built"), "seed %lu: %s", seed, line);
		cr_assert(th_wait_path(fifo, false, TH_TIMEOUT_MS) &&
		              th_fifo_write(fifo, "round\n", 6),
		          "FIFO %s not served", fifo);
		char needle[32];
		snprintf(needle, sizeof(needle), "\"round\":%d,", r);
		cr_assert(th_wait_line(stats, needle, line, sizeof(line), TH_TIMEOUT_MS),
		          "seed %lu: round %d never reported", seed, r);
		cr_assert_not_null(strstr(line, "\"action\":\"glibc_release\""), "seed %lu: %s",
		                   seed, line);
		th_write(&proc, "next\n");
		cr_assert(th_read_line(&proc, line, sizeof(line), TH_TIMEOUT_MS),
		          "seed %lu: round %d not checked", seed, r);
		cr_assert_not_null(strstr(line, " errors=0"), "seed %lu: %s", seed, line);
	}
	cr_assert(th_read_line(&proc, line, sizeof(line), TH_TIMEOUT_MS));
	th_close_stdin(&proc);
	cr_assert(th_wait(&proc, TH_TIMEOUT_MS), "seed %lu: shapes did not end", seed);
	th_read_stderr(&proc, err, sizeof(err));
	cr_assert_eq(proc.status, 0, "seed %lu: %s %s", seed, line, err);
	cr_assert_not_null(strstr(line, "shapes errors=0"), "seed %lu: %s", seed, line);
	cr_assert_gt(th_field(line, "forks"), 0, "seed %lu: no fork ran: %s", seed, line);
	cr_assert_null(strstr(err, "arena release off"), "seed %lu: stood down: %s", seed, err);
}

/* make check: a fixed list of seeds (make stress runs many more: stress/heap_shapes_*). */
Test(arena, heap_shapes_stay_whole_under_the_release)
{
	static const unsigned long seeds[] = {1, 7, 26};
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
		arena_shapes(seeds[i], 2);
}

/* make stress: 64 more seeds (STRESS_DIVISOR divides them, as the stress suite's sizes). */
Test(stress, heap_shapes_of_many_seeds_stay_whole_under_the_release, .timeout = 1200)
{
	const char *text = getenv("STRESS_DIVISOR");
	long divisor = text ? strtol(text, NULL, 10) : 100;
	long seeds = divisor >= 1 ? 64 / divisor : 0;
	for (long s = 0; s < (seeds > 0 ? seeds : 1); s++)
		arena_shapes(1000 + (unsigned long)s, 3);
}
