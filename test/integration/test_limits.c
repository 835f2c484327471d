/* Limits of the places the library is deployed in (issue 20): a pids cgroup and RLIMIT_NPROC that
 * leave no thread to spare, where the library must never take the one the program needs, and the
 * library's own memory, which must not grow with rounds. */
#include "harness.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TestSuite(limits, .timeout = 180, .fini = th_cleanup);

/* Under TH_DESCRIPTORS=keeper the library has a task more, its keeper: each limit below is one
 * higher there, so that each case is the same. */
static int
keeper_task(void)
{
	return th_keeper_mode() ? 1 : 0;
}

/* The tests of the keeper's own: run_in_pids runs its shell under noshare, with extra in its
 * environment (a NAME=VALUE, or NULL). */
static bool run_noshare;
static const char *run_extra;

/* Runs PROGRAM ARGS (a workload) inside a pids cgroup with pids.max at max: the shell joins the
 * cgroup, then becomes the program, which alone matches ROUNDTRIM_MATCH. preload: LD_PRELOAD
 * (NULL: none). Returns the exit status (-1: it hung or died). */
static int
run_in_pids(int max, const char *preload, const char *program, const char *args, char *out,
            size_t out_size, char *err, size_t err_size)
{
	char cg[PATH_MAX], script[PATH_MAX * 3], env_preload[PATH_MAX + 16], env_match[128];
	if (!th_make_pids_cgroup(cg, sizeof(cg), "rt-pids", max))
		cr_skip_test("cannot make a pids cgroup here (not root, no pids controller, or v2 "
		             "with the controller not to be turned on for the runner's cgroup)");
	/* LeakSanitizer's check at exit clones a task of its own: in a cgroup that the program's
	 * tasks fill it fails and the process exits 1, library or not. */
	th_asan_options("detect_leaks=0");
	snprintf(script, sizeof(script), "echo $$ > %s/cgroup.procs && exec %s %s", cg,
	         th_workload(program), args);
	snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s", preload ? preload : "");
	snprintf(env_match, sizeof(env_match), "ROUNDTRIM_MATCH=%s", program);
	const char *env[] = {env_preload, env_match, th_env_in_tmp("ROUNDTRIM_FIFO", "%p.fifo"),
	                     run_extra, NULL};
	const char *argv[] = {th_noshare(), "/bin/sh", "-c", script, NULL};
	int status = th_run(run_noshare ? argv : argv + 1, env, out, out_size, err, err_size);
	th_remove_cgroup(cg);
	return status;
}

/* The case: frag's main thread and its two threads fill pids.max=3. The library's
 * worker took the third slot and frag hung waiting for a thread that was never made. */
Test(limits, frag_runs_to_completion_at_pids_max_3)
{
	char out[4096], err[4096];
	const char *args = "--threads 2 --mib 32 --rounds 3";
	int max = 3 + keeper_task();
	cr_assert_eq(run_in_pids(max, NULL, "frag", args, out, sizeof(out), err, sizeof(err)), 0,
	             "frag alone: %s", err);
	cr_assert_eq(run_in_pids(max, th_lib(), "frag", args, out, sizeof(out), err, sizeof(err)),
	             0, "frag under the library hung or failed: %s", err);
	th_expect_in(out, "round 3 ");
	cr_assert_eq(th_count_in(err, "roundtrim: "), 1,
	             "one line says why the library stood down: %s", err);
	th_expect_in(err, "roundtrim: stood down: the program's pthread_create found no room");
}

/* Where the room is one task, the worker would take the program's last: the library does not
 * start, and says so. */
Test(limits, inactive_where_the_cgroup_leaves_the_program_no_thread)
{
	char out[4096], err[4096];
	const char *args = "--threads 1 --mib 16 --rounds 2";
	char room[64];
	cr_assert_eq(run_in_pids(2 + keeper_task(), th_lib(), "frag", args, out, sizeof(out), err,
	                         sizeof(err)),
	             0, "frag under the library hung or failed: %s", err);
	th_expect_in(out, "round 2 ");
	cr_assert_eq(th_count_in(err, "roundtrim: "), 1, "%s", err);
	th_expect_in(err, "roundtrim: inactive: the pids cgroup ");
	snprintf(room, sizeof(room), "has room for %d more task(s)", 1 + keeper_task());
	th_expect_in(err, room);
}

/* With room to spare the rule stays out of the way: the library runs and says nothing. */
Test(limits, active_where_the_cgroup_has_room)
{
	char out[4096], err[4096];
	const char *args = "--threads 2 --mib 16 --rounds 2";
	cr_assert_eq(run_in_pids(5 + keeper_task(), th_lib(), "frag", args, out, sizeof(out), err,
	                         sizeof(err)),
	             0, "%s", err);
	th_expect_in(out, "round 2 ");
	cr_assert_eq(th_count_in(err, "roundtrim: "), 0, "%s", err);
}

/* A fork and a posix_spawn that find no room while the worker holds it are made again once the
 * worker has gone: the program gets its child. */
Test(limits, fork_and_posix_spawn_made_again_once_the_worker_left)
{
	static const char *const cases[][2] = {
	    {"--threads 1 --forks 1", "tasks threads=1 forks=1 spawns=0"},
	    {"--threads 1 --spawns 1", "tasks threads=1 forks=0 spawns=1"},
	};
	static const char *const calls[] = {"fork", "posix_spawn"};
	for (size_t i = 0; i < 2; i++) {
		char out[4096], err[4096], expect[128];
		int max = 3 + keeper_task();
		cr_assert_eq(run_in_pids(max, NULL, "tasks", cases[i][0], out, sizeof(out), err,
		                         sizeof(err)),
		             0, "%s alone: %s%s", cases[i][0], out, err);
		cr_assert_eq(run_in_pids(max, th_lib(), "tasks", cases[i][0], out, sizeof(out), err,
		                         sizeof(err)),
		             0, "%s under the library: %s%s", cases[i][0], out, err);
		th_expect_in(out, cases[i][1]);
		cr_assert_eq(th_count_in(err, "roundtrim: "), 1, "%s", err);
		snprintf(expect, sizeof(expect), "the program's %s found no room", calls[i]);
		th_expect_in(err, expect);
	}
}

/* Where unshare is refused the library has two tasks, the worker and its keeper: at pids.max 3,
 * frag's main thread leaves room for two, and the library's would leave the program none. It
 * does not start, and its line names the setting that runs it with the worker alone. */
Test(limits, keeper_inactive_where_the_cgroup_has_no_room_for_it)
{
	char out[4096], err[4096];
	const char *args = "--threads 2 --mib 16 --rounds 2";
	run_noshare = true;
	cr_assert_eq(run_in_pids(3, th_lib(), "frag", args, out, sizeof(out), err, sizeof(err)), 0,
	             "frag under the library hung or failed: %s", err);
	th_expect_in(out, "round 2 ");
	cr_assert_eq(th_count_in(err, "roundtrim: "), 1, "%s", err);
	th_expect_in(err, "roundtrim: inactive: the pids cgroup ");
	th_expect_in(err, "the library's 2 would leave the program none; ROUNDTRIM_SHARED_TABLE=1");
}

/* With ROUNDTRIM_SHARED_TABLE=1 it runs there with the worker alone, in the program's table,
 * and gives the worker back when frag's second thread finds no room. */
Test(limits, keeper_room_for_the_worker_alone_runs_it_in_the_shared_table)
{
	char out[4096], err[4096];
	const char *args = "--threads 2 --mib 32 --rounds 3";
	run_noshare = true;
	run_extra = "ROUNDTRIM_SHARED_TABLE=1";
	cr_assert_eq(run_in_pids(3, th_lib(), "frag", args, out, sizeof(out), err, sizeof(err)), 0,
	             "frag under the library hung or failed: %s", err);
	th_expect_in(out, "round 3 ");
	cr_assert_eq(th_count_in(err, "roundtrim: "), 1, "%s", err);
	th_expect_in(err,
	             "roundtrim: stood down: the program's pthread_create found no room for a task "
	             "(EAGAIN) while the library held 1");
}

/* RLIMIT_NPROC binds an ordinary user: prlimit sets it, setpriv becomes a uid of the test's
 * own (no other task of it runs), then the program starts with the library. */
static int
run_with_nproc(int nproc, int uid, const char *args, char *out, size_t out_size, char *err,
               size_t err_size)
{
	if (getuid() != 0 || access("/usr/bin/prlimit", X_OK) || access("/usr/bin/setpriv", X_OK))
		cr_skip_test("needs root, prlimit and setpriv");
	char limit[32], ids[32], groups[32], env_preload[PATH_MAX + 16];
	snprintf(limit, sizeof(limit), "--nproc=%d", nproc);
	snprintf(ids, sizeof(ids), "--reuid=%d", uid);
	snprintf(groups, sizeof(groups), "--regid=%d", uid);
	snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s", th_lib());
	/* The same for RLIMIT_NPROC (run_in_pids). */
	th_asan_options("detect_leaks=0");
	char copy[256];
	snprintf(copy, sizeof(copy), "%s", args);
	const char *argv[24] = {"/usr/bin/prlimit",
	                        limit,
	                        "/usr/bin/setpriv",
	                        ids,
	                        groups,
	                        "--clear-groups",
	                        "/usr/bin/env",
	                        env_preload,
	                        "ROUNDTRIM_FIFO=none",
	                        th_workload("frag")};
	size_t n = 10;
	for (char *tok = strtok(copy, " "); tok && n < 23; tok = strtok(NULL, " "))
		argv[n++] = tok;
	argv[n] = NULL;
	return th_run(argv, NULL, out, out_size, err, err_size);
}

Test(limits, rlimit_nproc_of_an_ordinary_user)
{
	char out[4096], err[4096];
	/* Room for the program's three tasks only: the worker gives its slot back. */
	char expect[128];
	cr_assert_eq(run_with_nproc(3 + keeper_task(), 64901, "--threads 2 --mib 16 --rounds 2",
	                            out, sizeof(out), err, sizeof(err)),
	             0, "frag under the library hung or failed: %s", err);
	th_expect_in(out, "round 2 ");
	cr_assert_eq(th_count_in(err, "roundtrim: "), 1, "%s", err);
	th_expect_in(err, "the program's pthread_create found no room");
	/* Room for one more task: the library does not start. */
	cr_assert_eq(run_with_nproc(2 + keeper_task(), 64902, "--threads 1 --mib 16 --rounds 2",
	                            out, sizeof(out), err, sizeof(err)),
	             0, "frag under the library hung or failed: %s", err);
	cr_assert_eq(th_count_in(err, "roundtrim: "), 1, "%s", err);
	snprintf(expect, sizeof(expect),
	         "roundtrim: inactive: RLIMIT_NPROC (%d) has room for %d more task(s) of uid 64902",
	         2 + keeper_task(), 1 + keeper_task());
	th_expect_in(err, expect);
}

/* Memory of the process: resident and anonymous KiB (smaps_rollup). */
static void
memory_of(pid_t pid, long *rss_kib, long *anon_kib)
{
	char path[64], text[4096];
	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	cr_assert_gt(th_read_file(path, text, sizeof(text)), 0);
	const char *rss = strstr(text, "\nRss:"), *anon = strstr(text, "\nAnonymous:");
	cr_assert(rss && anon, "%s", text);
	*rss_kib = atol(rss + 5);
	*anon_kib = atol(anon + 11);
}

/* Acts on n more rounds, one at a time, each waited for. */
static void
act_rounds(struct th_probe *run, long *done, long n)
{
	char line[4096];
	for (long end = *done + n; *done < end;) {
		cr_assert(th_fifo_write(run->fifo, "round\n", 6));
		th_wait_rounds(run, ++*done, line, sizeof(line));
	}
	cr_assert_eq(th_field(line, "actions"), *done, "every round acted on: %s", line);
}

/* The library's own memory is bounded: after 100 rounds have warmed every path, 1000 more
 * rounds, each acted on, leave it where it was. Also logs its footprint beside a preload that
 * does nothing (roundtrim(7), MEMORY quotes it). */
Test(limits, own_memory_does_not_grow_with_rounds)
{
	char line[4096];
	const char *args[] = {"idle", NULL};
	const char *env[] = {"ROUNDTRIM_GC_ROUNDS=1", NULL};
	struct th_probe run;
	/* ASan's quarantine keeps each freed block from reuse until it holds 256 MiB (1 MiB per
	 * thread first): every malloc and free of a round would show as growth. */
	th_asan_options("quarantine_size_mb=0:thread_local_quarantine_size_kb=0");
	th_start_probe_env(&run, args, env, line, sizeof(line));
	long done = 0, rss0, anon0, rss1, anon1;
	act_rounds(&run, &done, 100);
	memory_of(run.proc.pid, &rss0, &anon0);
	act_rounds(&run, &done, 1000);
	memory_of(run.proc.pid, &rss1, &anon1);

	/* The same program under a preload that does nothing. */
	char preload[PATH_MAX + 32];
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s/test/bench/libempty.so", RT_BUILD_DIR);
	const char *empty_env[] = {preload, NULL};
	const char *empty_argv[] = {th_workload("probe"), "idle", NULL};
	struct th_proc empty;
	th_spawn(&empty, empty_argv, empty_env);
	cr_assert(th_read_line(&empty, line, sizeof(line), TH_TIMEOUT_MS));
	long rss_empty, anon_empty;
	memory_of(empty.pid, &rss_empty, &anon_empty);
	th_kill(&empty);
	th_kill(&run.proc);
	cr_log_info("footprint: rss %ld KiB (anonymous %ld) with the library after 1100 rounds, "
	            "%ld KiB (anonymous %ld) with an empty preload; after round 100: %ld (%ld)",
	            rss1, anon1, rss_empty, anon_empty, rss0, anon0);
	/* Two pages of slack for a path first taken late (a deeper stack page): a growth of even
	 * 8 bytes a round would pass them. */
	cr_assert_leq(anon1, anon0 + 8,
	              "anonymous memory grew from %ld to %ld KiB over 1000 rounds", anon0, anon1);
	cr_assert_leq(rss1, rss0 + 16, "resident memory grew from %ld to %ld KiB over 1000 rounds",
	              rss0, rss1);
}
