/* The host comes first: fork during trims, programs that do not match, bad variables, refused
 * FIFO paths and junk on the FIFO all leave it running as if roundtrim were absent. */
#include "harness.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(robust, .timeout = 120, .fini = th_cleanup);

static const char *
env_preload(void)
{
	static char buf[PATH_MAX];
	snprintf(buf, sizeof(buf), "LD_PRELOAD=%s", th_lib());
	return buf;
}

static const char *
env_fifo_in(const char *dir)
{
	static char buf[PATH_MAX];
	snprintf(buf, sizeof(buf), "ROUNDTRIM_FIFO=%s/%%p.fifo", dir);
	return buf;
}

/* Runs probe MODE to completion; returns its stdout's first line and its stderr. */
static int
run_probe(const char *mode, const char *const env[], char *out, size_t out_size, char *err,
          size_t err_size)
{
	const char *argv[] = {th_workload("probe"), mode, NULL};
	struct th_proc p;
	th_spawn(&p, argv, env);
	th_close_stdin(&p);
	if (!th_read_line(&p, out, out_size, TH_TIMEOUT_MS))
		out[0] = '\0';
	cr_assert(th_wait(&p, TH_TIMEOUT_MS), "probe %s hung", mode);
	th_read_stderr(&p, err, err_size);
	return p.status;
}

Test(robust, fork_during_trims_never_deadlocks)
{
	const char *env[] = {env_preload(), env_fifo_in(th_tmpdir()), NULL};
	const char *argv[] = {th_workload("probe"), "forkloop", "300", NULL};
	struct th_proc p;
	th_spawn(&p, argv, env);
	char line[256];
	cr_assert(th_read_line(&p, line, sizeof(line), 60000), "fork loop did not finish");
	cr_assert_str_eq(line, "forks=300 trim=yes");
	cr_assert(th_wait(&p, TH_TIMEOUT_MS));
	cr_assert_eq(p.status, 0);
}

/* How many threads and descriptors at or above the library's floor pid has. */
static void
threads_and_high_fds(long pid, int *threads, int *high)
{
	char path[PATH_MAX];
	*threads = *high = 0;
	snprintf(path, sizeof(path), "/proc/%ld/task", pid);
	*threads = th_entries_in(path);
	snprintf(path, sizeof(path), "/proc/%ld/fd", pid);
	DIR *d = opendir(path);
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL)
		*high += atoi(e->d_name) >= th_fd_floor();
	if (d)
		closedir(d);
}

/* A fork child may exec at once: until it is known to keep running, it gets nothing. */
Test(robust, fork_child_that_waits_gets_no_worker_and_no_file)
{
	const char *dir = th_tmpdir();
	const char *env[] = {env_preload(), env_fifo_in(dir), NULL};
	const char *argv[] = {th_workload("probe"), "forkchild", NULL};
	struct th_proc p;
	th_spawn(&p, argv, env);
	char line[256], path[PATH_MAX];
	cr_assert(th_read_line(&p, line, sizeof(line), TH_TIMEOUT_MS));
	long child = strtol(line + strlen("child "), NULL, 10);
	cr_assert_gt(child, 0, "%s", line);
	int threads, high;
	threads_and_high_fds(child, &threads, &high);
	cr_assert_eq(threads, 1, "the child has a thread of the library's");
	cr_assert_eq(high, 0, "the child holds descriptors of the library's");
	snprintf(path, sizeof(path), "%s/%ld.fifo", dir, child);
	cr_assert_neq(access(path, F_OK), 0, "the child has a FIFO");
	th_close_stdin(&p);
	cr_assert(th_wait(&p, TH_TIMEOUT_MS));
	cr_assert_eq(th_entries_in(dir), 0);
}

/* One that lives past ROUNDTRIM_CHILD_START, still allocating, starts a library of its own. */
Test(robust, fork_child_that_keeps_working_gets_its_own_fifo_and_counts)
{
	const char *dir = th_tmpdir();
	const char *env[] = {env_preload(), env_fifo_in(dir), "ROUNDTRIM_GC_ROUNDS=0",
	                     "ROUNDTRIM_CHILD_START=1s", NULL};
	const char *argv[] = {th_workload("probe"), "forkchild", "busy", NULL};
	struct th_proc p;
	th_spawn(&p, argv, env);
	char line[256], path[PATH_MAX], status[PATH_MAX], parent_status[PATH_MAX];
	cr_assert(th_read_line(&p, line, sizeof(line), TH_TIMEOUT_MS));
	long child = strtol(line + strlen("child "), NULL, 10);
	cr_assert_gt(child, 0, "%s", line);
	snprintf(path, sizeof(path), "%s/%ld.fifo", dir, child);
	snprintf(status, sizeof(status), "%s/%ld.status", dir, child);
	snprintf(parent_status, sizeof(parent_status), "%s/%d.status", dir, p.pid);
	cr_assert(th_wait_path(status, false, TH_TIMEOUT_MS), "child has no FIFO of its own");
	cr_assert(th_fifo_write(path, "round\nround\n", 12));
	cr_assert(th_wait_line(status, "\"rounds\":2,", line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert(th_wait_line(parent_status, "\"rounds\":0,", line, sizeof(line), TH_TIMEOUT_MS),
	          "the parent counted the child's rounds: %s", line);
	th_close_stdin(&p);
	cr_assert(th_wait(&p, TH_TIMEOUT_MS));
	cr_assert(th_wait_path(path, true, TH_TIMEOUT_MS), "child's FIFO left behind");
}

/* A started fork child that lives long (a pre-fork server's worker, a pool worker) or a daemon
 * (setsid and a double fork) makes 100 MiB of blocks under a small one that it keeps, frees them
 * and rests, round after round: with the library's defaults it finds those rounds itself and
 * returns the freed heap. The fork child's status names its parent (fork_of); the daemon, whose
 * parent is gone and who left the session, is a process of its own. */
static void
fork_rounds_return_the_heap(bool daemon)
{
	const char *dir = th_tmpdir();
	const char *env[] = {env_preload(), env_fifo_in(dir), "ROUNDTRIM_CHILD_START=1s", NULL};
	const char *argv[] = {th_workload("probe"), "forkrounds", daemon ? "daemon" : "worker",
	                      NULL};
	struct th_proc p;
	th_spawn(&p, argv, env);
	char line[4096], status[PATH_MAX], fork_of[64];
	cr_assert(th_read_line(&p, line, sizeof(line), TH_TIMEOUT_MS));
	long child = strtol(line + strlen("child "), NULL, 10);
	cr_assert_gt(child, 0, "%s", line);
	long rss = -1, lowest = LONG_MAX;
	/* Each round holds about 100 MiB at its end; one returned leaves a few. */
	for (int r = 0; r < 20 && lowest > 32 * 1024; r++) {
		cr_assert(th_read_line(&p, line, sizeof(line), TH_TIMEOUT_MS), "round %d", r);
		rss = strtol(line + strlen("rss "), NULL, 10);
		lowest = rss < lowest ? rss : lowest;
	}
	cr_assert_leq(lowest, 32 * 1024, "the child kept its freed heap: %ld KiB resident", lowest);
	snprintf(status, sizeof(status), "%s/%ld.status", dir, child);
	snprintf(fork_of, sizeof(fork_of), "\"fork_of\":%d,", daemon ? 0 : p.pid);
	cr_assert(th_wait_line(status, fork_of, line, sizeof(line), TH_TIMEOUT_MS), "want %s in %s",
	          fork_of, line);
	th_close_stdin(&p);
	cr_assert(th_wait(&p, TH_TIMEOUT_MS));
}

Test(robust, started_fork_worker_finds_its_rounds_and_returns_the_heap)
{
	fork_rounds_return_the_heap(false);
}

Test(robust, double_forked_daemon_is_a_process_of_its_own)
{
	fork_rounds_return_the_heap(true);
}

/* Threads and caught signals of a probe: the library adds one thread and one handler. */
static void
probe_status(const char *const env[], long *threads, unsigned long long *caught)
{
	const char *argv[] = {th_workload("probe"), "status", NULL};
	struct th_proc p;
	th_spawn(&p, argv, env);
	char line[256];
	*threads = -1;
	*caught = 0;
	while (th_read_line(&p, line, sizeof(line), TH_TIMEOUT_MS) && strncmp(line, "ready", 5)) {
		if (!strncmp(line, "Threads:", 8))
			*threads = strtol(line + 8, NULL, 10);
		if (!strncmp(line, "SigCgt:", 7))
			*caught = strtoull(line + 7, NULL, 16);
	}
	th_close_stdin(&p);
	cr_assert(th_wait(&p, TH_TIMEOUT_MS));
}

Test(robust, non_matching_program_is_untouched)
{
	/* The FIFO's directory is created with the FIFO: its presence tells whether the
	 * library set up its trigger. */
	char mine[PATH_MAX], other[PATH_MAX], env_mine[PATH_MAX + 32], env_other[PATH_MAX + 32];
	snprintf(mine, sizeof(mine), "%s/matching", th_tmpdir());
	snprintf(other, sizeof(other), "%s/other", th_tmpdir());
	snprintf(env_mine, sizeof(env_mine), "ROUNDTRIM_FIFO=%s/%%p.fifo", mine);
	snprintf(env_other, sizeof(env_other), "ROUNDTRIM_FIFO=%s/%%p.fifo", other);
	long threads;
	unsigned long long caught;
	const char *matching[] = {env_preload(), env_mine, "ROUNDTRIM_MATCH=pro*", NULL};
	probe_status(matching, &threads, &caught);
	cr_assert_eq(threads, th_keeper_mode() ? 3 : 2,
	             "a matching program gets the worker thread (and its keeper)");
	cr_assert_neq(caught, 0);
	cr_assert_eq(access(mine, F_OK), 0, "a matching program gets its FIFO");

	const char *nonmatching[] = {env_preload(), env_other, "ROUNDTRIM_MATCH=python*,nvflare*",
	                             NULL};
	probe_status(nonmatching, &threads, &caught);
	cr_assert_eq(threads, 1, "no thread in a program that does not match");
	cr_assert_eq(caught, 0, "no handler in a program that does not match");
	cr_assert_neq(access(other, F_OK), 0, "no FIFO in a program that does not match");

	char out[256], err[1024];
	const char *quiet[] = {env_preload(), "ROUNDTRIM_MATCH=python*", "ROUNDTRIM_GC_ROUNDS=junk",
	                       NULL};
	cr_assert_eq(run_probe("alloc", quiet, out, sizeof(out), err, sizeof(err)), 0);
	cr_assert_str_eq(err, "", "a program that does not match stays quiet");
}

Test(robust, disabled_is_pure_pass_through)
{
	long threads;
	unsigned long long caught;
	const char *env[] = {env_preload(), env_fifo_in(th_tmpdir()), "ROUNDTRIM_DISABLE=1", NULL};
	probe_status(env, &threads, &caught);
	cr_assert_eq(threads, 1);
	cr_assert_eq(caught, 0);
	char out[256], err[1024];
	cr_assert_eq(run_probe("alloc", env, out, sizeof(out), err, sizeof(err)), 0);
	cr_assert_str_eq(out, "ok");
}

/* Allocations made while the library resolves its real functions come from its bootstrap
 * buffer, and stay out of the allocator's free for good: a preload after the library allocates
 * from inside that resolution (test/workloads/dso/ifunc_alloc.c) and frees its last block after
 * main, with sampling on and off (the sampler's free and realloc go in front of the library's). */
Test(robust, blocks_given_while_resolving_never_reach_the_allocator)
{
	char preload[2 * PATH_MAX + 16], stats[PATH_MAX + 32];
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s:%s", th_lib(),
	         th_workload("libifunc_alloc.so"));
	snprintf(stats, sizeof(stats), "ROUNDTRIM_STATS=%s/%%p.jsonl", th_tmpdir());
	const char *plain[] = {preload, env_fifo_in(th_tmpdir()), NULL};
	const char *sites[] = {preload,
	                       env_fifo_in(th_tmpdir()),
	                       stats,
	                       "ROUNDTRIM_SITES=1",
	                       "ROUNDTRIM_SAMPLE_BYTES=64",
	                       NULL};
	const char *const *envs[] = {plain, sites};
	for (size_t i = 0; i < 2; i++) {
		char out[256], err[2048];
		int status = run_probe("alloc", envs[i], out, sizeof(out), err, sizeof(err));
		cr_assert_eq(status, 0, "run %zu: status %d: %s", i, status, err);
		cr_assert_str_eq(out, "ok");
		th_expect_in(err, "ifunc_alloc: kept block from libroundtrim\n");
		th_expect_in(err, "ifunc_alloc: freed after main\n");
	}
}

static const struct {
	const char *assignment;
	const char *name;
} bad_variables[] = {
    {"ROUNDTRIM_GC_ROUNDS=abc", "ROUNDTRIM_GC_ROUNDS"},
    {"ROUNDTRIM_GC_ROUNDS=-1", "ROUNDTRIM_GC_ROUNDS"},
    {"ROUNDTRIM_GC_ROUNDS=99999999999999999999999", "ROUNDTRIM_GC_ROUNDS"},
    {"ROUNDTRIM_GC_ROUNDS=", "ROUNDTRIM_GC_ROUNDS"},
    {"NVFLARE_CLIENT_MEMORY_GC_ROUNDS=1.5", "NVFLARE_CLIENT_MEMORY_GC_ROUNDS"},
    {"ROUNDTRIM_CUDA_EMPTY_CACHE=", "ROUNDTRIM_CUDA_EMPTY_CACHE"},
    {"ROUNDTRIM_PROFILE=on-ish", "ROUNDTRIM_PROFILE"},
    {"ROUNDTRIM_ROLE=worker", "ROUNDTRIM_ROLE"},
    {"ROUNDTRIM_SIGNAL=TERM", "ROUNDTRIM_SIGNAL"},
    {"ROUNDTRIM_SIGNAL=RTMIN+99", "ROUNDTRIM_SIGNAL"},
    {"ROUNDTRIM_SIGNAL=banana", "ROUNDTRIM_SIGNAL"},
    {"ROUNDTRIM_FIFO=relative/%p.fifo", "ROUNDTRIM_FIFO"},
    {"ROUNDTRIM_FIFO=/tmp/%q.fifo", "ROUNDTRIM_FIFO"},
    {"ROUNDTRIM_LOG=not/absolute", "ROUNDTRIM_LOG"},
    {"ROUNDTRIM_STATS=stats.jsonl", "ROUNDTRIM_STATS"},
    {"ROUNDTRIM_PROM=metrics.prom", "ROUNDTRIM_PROM"},
    {"ROUNDTRIM_MATCH=", "ROUNDTRIM_MATCH"},
    {"ROUNDTRIM_JEMALLOC=flush", "ROUNDTRIM_JEMALLOC"},
    {"ROUNDTRIM_TRIM_PAD=1k", "ROUNDTRIM_TRIM_PAD"},
    {"ROUNDTRIM_PYTHON=perhaps", "ROUNDTRIM_PYTHON"},
    {"ROUNDTRIM_DISABLE=please", "ROUNDTRIM_DISABLE"},
};

Test(robust, every_bad_variable_is_harmless_and_named_once)
{
	for (size_t i = 0; i < sizeof(bad_variables) / sizeof(bad_variables[0]); i++) {
		char out[256], err[2048];
		/* The bad assignment first: getenv finds the first of two. */
		const char *env[] = {bad_variables[i].assignment, env_preload(),
		                     env_fifo_in(th_tmpdir()), NULL};
		int status = run_probe("alloc", env, out, sizeof(out), err, sizeof(err));
		cr_assert_eq(status, 0, "%s: host failed", bad_variables[i].assignment);
		cr_assert_str_eq(out, "ok", "%s", bad_variables[i].assignment);
		cr_assert_eq(th_count_in(err, "\n"), 1, "%s: expected one line, got: %s",
		             bad_variables[i].assignment, err);
		cr_assert_not_null(strstr(err, bad_variables[i].name), "%s", err);
	}
}

/* Runs an idle probe with a FIFO path of the test's choosing until the worker refuses it;
 * the probe must run on unharmed. Returns its stderr. */
static void
run_with_fifo(const char *fifo_template, char *err, size_t err_size)
{
	char env_fifo[PATH_MAX + 32], line[256];
	snprintf(env_fifo, sizeof(env_fifo), "ROUNDTRIM_FIFO=%s", fifo_template);
	const char *env[] = {env_preload(), env_fifo, NULL};
	const char *argv[] = {th_workload("probe"), "idle", NULL};
	struct th_proc p;
	th_spawn(&p, argv, env);
	cr_assert(th_read_line(&p, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert(th_wait_stderr(&p, "FIFO trigger off", err, err_size, TH_TIMEOUT_MS),
	          "no refusal: %s", err);
	th_close_stdin(&p);
	cr_assert(th_wait(&p, TH_TIMEOUT_MS));
	cr_assert_eq(p.status, 0);
}

Test(robust, fifo_refuses_symlink)
{
	char target[PATH_MAX], link[PATH_MAX], err[1024];
	snprintf(target, sizeof(target), "%s/elsewhere", th_tmpdir());
	snprintf(link, sizeof(link), "%s/trigger.fifo", th_tmpdir());
	cr_assert_eq(symlink(target, link), 0);
	run_with_fifo(link, err, sizeof(err));
	cr_assert_not_null(strstr(err, "symbolic link"), "%s", err);
	cr_assert_neq(access(target, F_OK), 0, "followed the symlink");
}

Test(robust, fifo_refuses_regular_file)
{
	char path[PATH_MAX], err[1024];
	snprintf(path, sizeof(path), "%s/trigger.fifo", th_tmpdir());
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fclose(f);
	run_with_fifo(path, err, sizeof(err));
	cr_assert_not_null(strstr(err, "not a FIFO"), "%s", err);
}

Test(robust, fifo_refuses_open_directory)
{
	char dir[PATH_MAX], tmpl[PATH_MAX + 16], err[1024];
	snprintf(dir, sizeof(dir), "%s/open", th_tmpdir());
	cr_assert_eq(mkdir(dir, 0700), 0);
	cr_assert_eq(chmod(dir, 0777), 0);
	snprintf(tmpl, sizeof(tmpl), "%s/%%p.fifo", dir);
	run_with_fifo(tmpl, err, sizeof(err));
	cr_assert_not_null(strstr(err, "writable by group or others"), "%s", err);
}

Test(robust, fifo_refuses_foreign_directory)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to give a directory to another user");
	char dir[PATH_MAX], tmpl[PATH_MAX + 16], err[1024];
	snprintf(dir, sizeof(dir), "%s/foreign", th_tmpdir());
	cr_assert_eq(mkdir(dir, 0700), 0);
	cr_assert_eq(chown(dir, 65534, 65534), 0);
	snprintf(tmpl, sizeof(tmpl), "%s/%%p.fifo", dir);
	run_with_fifo(tmpl, err, sizeof(err));
	cr_assert_not_null(strstr(err, "another user"), "%s", err);
}

Test(robust, fifo_junk_and_oversized_lines_are_counted_once_reported)
{
	struct th_probe run;
	char line[2048];
	th_start_probe(&run, (const char *[]){"idle", NULL}, NULL, line, sizeof(line));
	struct th_proc *p = &run.proc;
	const char *fifo = run.fifo;
	static char junk[300];
	memset(junk, 'x', sizeof(junk) - 1);
	junk[sizeof(junk) - 1] = '\n';
	cr_assert(th_fifo_write(fifo, "hello\n", 6));
	cr_assert(th_fifo_write(fifo, junk, sizeof(junk)));
	cr_assert(th_fifo_write(fifo, "gc-rounds -3\nstats please\n", 26));
	cr_assert(th_fifo_write(fifo, junk, sizeof(junk)));
	cr_assert(th_fifo_write(fifo, "round\n", 6));
	th_wait_rounds(&run, 1, line, sizeof(line));
	cr_assert_eq(th_field(line, "unknown_lines"), 3, "%s", line);
	cr_assert_eq(th_field(line, "oversized_lines"), 2, "%s", line);
	th_close_stdin(p);
	cr_assert(th_wait(p, TH_TIMEOUT_MS));
	cr_assert_eq(p->status, 0);
	char err[2048];
	th_read_stderr(p, err, sizeof(err));
	cr_assert_eq(th_count_in(err, "ignoring FIFO line \""), 1, "%s", err);
	cr_assert_eq(th_count_in(err, "longer than"), 1, "%s", err);
}

static long
vm_rss_kib(pid_t pid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	cr_assert_gt(th_read_file(path, buf, sizeof(buf)), 0);
	char *at = strstr(buf, "VmRSS:");
	cr_assert_not_null(at);
	return strtol(at + 6, NULL, 10);
}

Test(robust, flooding_writer_cannot_grow_memory)
{
	struct th_probe run;
	char line[2048];
	th_start_probe(&run, (const char *[]){"idle", NULL}, NULL, line, sizeof(line));
	struct th_proc *p = &run.proc;
	const char *fifo = run.fifo;
	long before = vm_rss_kib(p->pid);
	static char flood[1 << 20];
	memset(flood, 'y', sizeof(flood));
	for (int i = 0; i < 32; i++)
		cr_assert(th_fifo_write(fifo, flood, sizeof(flood)));
	cr_assert(th_fifo_write(fifo, "\nround\n", 7));
	th_wait_rounds(&run, 1, line, sizeof(line));
	cr_assert_eq(th_field(line, "oversized_lines"), 1, "%s", line);
	long after = vm_rss_kib(p->pid);
	cr_assert_lt(after - before, 1024, "32 MiB without a newline grew RSS by %ld KiB",
	             after - before);
	th_close_stdin(p);
	cr_assert(th_wait(p, TH_TIMEOUT_MS));
}

Test(robust, api_counts_this_threads_allocations_and_rounds)
{
	struct th_probe run;
	char line[2048];
	th_start_probe(&run, (const char *[]){"api", NULL}, NULL, line, sizeof(line));
	struct th_proc *p = &run.proc;
	cr_assert_geq(th_field(line, "allocations"), 100, "%s", line);
	cr_assert_geq(th_field(line, "frees"), 100, "%s", line);
	cr_assert_geq(th_field(line, "bytes"), 100000, "%s", line);
	cr_assert_eq(th_field(line, "round"), 0, "%s", line);
	/* The trim acts (the worker releases, woken at once): the caller's errno is its own. */
	cr_assert_eq(th_field(line, "trim"), 0, "%s", line);
	cr_assert_eq(th_field(line, "round_errno"), EXDEV, "%s", line);
	cr_assert_eq(th_field(line, "trim_errno"), EXDEV, "%s", line);
	th_wait_rounds(&run, 1, line, sizeof(line));
	th_close_stdin(p);
	cr_assert(th_wait(p, TH_TIMEOUT_MS));
}

/* roundtrim_trim() from a C signal handler that may have interrupted malloc or free: the call
 * counts and leaves the allocator's action to the worker (the caller-side release took the
 * allocator's locks, which the interrupted call may hold: the handler waited for itself). */
Test(robust, api_from_a_signal_handler_inside_malloc_returns)
{
	struct th_probe run;
	char line[2048];
	th_start_probe(&run, (const char *[]){"apisignal", "2000", NULL}, NULL, line, sizeof(line));
	cr_assert_geq(th_field(line, "calls"), 100, "%s", line);
	th_close_stdin(&run.proc);
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS));
}

Test(robust, dead_processes_files_are_swept)
{
	const char *dir = th_tmpdir();
	char stale_fifo[PATH_MAX], stale_status[PATH_MAX], keep[PATH_MAX];
	/* pid 2^22 + 1 is above the kernel's pid_max limit: never alive. */
	snprintf(stale_fifo, sizeof(stale_fifo), "%s/4194305.fifo", dir);
	snprintf(stale_status, sizeof(stale_status), "%s/4194305.status", dir);
	snprintf(keep, sizeof(keep), "%s/notes.txt", dir);
	const char *paths[] = {stale_fifo, stale_status, keep};
	for (int i = 0; i < 3; i++) {
		FILE *f = fopen(paths[i], "w");
		cr_assert_not_null(f);
		fclose(f);
	}
	const char *env[] = {env_preload(), env_fifo_in(dir), NULL};
	const char *argv[] = {th_workload("probe"), "idle", NULL};
	struct th_proc p;
	th_spawn(&p, argv, env);
	cr_assert(th_wait_path(stale_fifo, true, TH_TIMEOUT_MS), "stale FIFO kept");
	cr_assert(th_wait_path(stale_status, true, TH_TIMEOUT_MS), "stale status kept");
	cr_assert_eq(access(keep, F_OK), 0, "swept a file that is not ours");
	th_close_stdin(&p);
	cr_assert(th_wait(&p, TH_TIMEOUT_MS));
}

static int64_t
arenas_with(const char *const env[])
{
	char out[256], err[1024];
	cr_assert_eq(run_probe("arenas", env, out, sizeof(out), err, sizeof(err)), 0);
	return th_field(out, "arenas");
}

Test(robust, role_caps_arenas_unless_the_user_did)
{
	const char *fifo = env_fifo_in(th_tmpdir());
	const char *plain[] = {env_preload(), fifo, NULL};
	const char *client[] = {env_preload(), fifo, "ROUNDTRIM_ROLE=client", NULL};
	const char *server[] = {env_preload(), fifo, "ROUNDTRIM_ROLE=server", NULL};
	const char *user[] = {env_preload(), fifo, "ROUNDTRIM_ROLE=client", "MALLOC_ARENA_MAX=3",
	                      NULL};
	int64_t uncapped = arenas_with(plain);
	cr_assert_gt(uncapped, 4, "8 contending threads should make more than 4 arenas");
	cr_assert_leq(arenas_with(client), 2);
	cr_assert_leq(arenas_with(server), 4);
	cr_assert_gt(arenas_with(server), 2);
	cr_assert_eq(arenas_with(user), 3, "the user's MALLOC_ARENA_MAX must win");
}

Test(robust, fork_then_exec_leaves_no_files)
{
	const char *dir = th_tmpdir();
	const char *env[] = {env_preload(), env_fifo_in(dir), NULL};
	/* bash forks a child for each command, and the child execs at once. */
	const char *argv[] = {"/bin/bash", "-c", "/bin/true; /bin/true; exec /bin/true", NULL};
	struct th_proc p;
	th_spawn(&p, argv, env);
	th_close_stdin(&p);
	cr_assert(th_wait(&p, TH_TIMEOUT_MS));
	cr_assert_eq(p.status, 0);
	cr_assert_eq(th_entries_in(dir), 0, "files left behind by exec'd processes");
}

Test(robust, failed_exec_keeps_the_fifo_working)
{
	const char *dir = th_tmpdir();
	struct th_probe run;
	char line[2048];
	/* th_start_probe waits for the status file: it exists again after the failed exec. */
	th_start_probe(&run, (const char *[]){"execfail", NULL}, NULL, line, sizeof(line));
	struct th_proc *p = &run.proc;
	cr_assert(th_wait_path(run.fifo, false, TH_TIMEOUT_MS), "FIFO not recreated");
	cr_assert(th_fifo_write(run.fifo, "round\n", 6));
	th_wait_rounds(&run, 1, line, sizeof(line));
	th_close_stdin(p);
	cr_assert(th_wait(p, TH_TIMEOUT_MS));
	cr_assert_eq(th_entries_in(dir), 0);
}

/* The Prometheus file, read by the Python client's own parser (what node_exporter's textfile
 * collector accepts), counts what the status file counts; it goes with the process. */
Test(robust, prometheus_file_parses_and_goes_at_exit)
{
	struct th_probe run;
	char line[2048], env_prom[PATH_MAX + 32], prom[PATH_MAX + 16];
	snprintf(env_prom, sizeof(env_prom), "ROUNDTRIM_PROM=%s/%%p.prom", th_tmpdir());
	const char *env[] = {env_prom, NULL};
	th_start_probe_env(&run, (const char *[]){"idle", NULL}, env, line, sizeof(line));
	snprintf(prom, sizeof(prom), "%s/%d.prom", th_tmpdir(), run.proc.pid);
	cr_assert(th_fifo_write(run.fifo, "round\nround\ntrim\n", 17));
	th_wait_rounds(&run, 2, line, sizeof(line));
	cr_assert(th_wait_line(prom, "# end", line, sizeof(line), TH_TIMEOUT_MS), "no %s", prom);
	char script[PATH_MAX * 2], out[1024], err[2048];
	snprintf(script, sizeof(script),
	         "from prometheus_client.parser import text_string_to_metric_families as parse\n"
	         "m = {s.name: s.value for f in parse(open('%s').read()) for s in f.samples}\n"
	         "print(int(m['roundtrim_rounds_total']), int(m['roundtrim_actions_total']),"
	         " int(m['roundtrim_info']), m['roundtrim_rss_bytes'] > 0)\n",
	         prom);
	const char *argv[] = {"/usr/bin/python3", "-c", script, NULL};
	cr_assert_eq(th_run(argv, NULL, out, sizeof(out), err, sizeof(err)), 0, "%s", err);
	/* One batch: two rounds and a trim make one action. */
	cr_assert_str_eq(out, "2 1 1 True\n", "%s", err);
	th_close_stdin(&run.proc);
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS));
	cr_assert(th_wait_path(prom, true, TH_TIMEOUT_MS), "Prometheus file left behind");
}

/* Every system call of roundtrim(7), SYSTEM CALLS that /bin/echo does not make, by
 * test/tools/killcall's names, and the line the library says where it does without the call
 * ("" for none; NULL: it stands down). */
static const char robust_no_release[] =
    "roundtrim: glibc arena release off: a seccomp filter kills the process on "
    "process_vm_readv; malloc_trim returns what it can\n";
static const struct {
	const char *call;
	const char *without;
} robust_kill_calls[] = {
    {"unshare", NULL},
    {"clone3", NULL},
    {"close_range", NULL},
    {"pidfd_open", ""},
    {"pidfd_getfd", ""},
    {"clone-thread-unshared", NULL},
    {"chdir", NULL},
    {"signalfd4", ""},
    {"tgkill", NULL},
    {"mkdir", NULL},
    {"mknodat", NULL},
    {"fchmod", NULL},
    {"fchown", NULL},
    {"fcntl", NULL},
    {"dup", NULL},
    {"ftruncate", NULL},
    {"pwrite64", NULL},
    {"getdents64", NULL},
    {"readlink", NULL},
    {"linkat", NULL},
    {"rename", NULL},
    {"unlink", NULL},
    {"unlinkat", NULL},
    {"ioctl", NULL},
    {"ppoll", NULL},
    {"clock_gettime", NULL},
    {"clock_nanosleep", NULL},
    {"madvise", NULL},
    {"kill", NULL},
    {"process_vm_readv", robust_no_release},
    {"rt_sigaction", NULL},
    {"rt_sigprocmask", NULL},
    {"getpid", NULL},
    {"gettid", NULL},
    {"getuid", NULL},
    {"geteuid", NULL},
    {"getgroups", NULL},
    {"getresuid", NULL},
    {"getresgid", NULL},
    {"capget", NULL},
    {"capset", NULL},
    {"setgroups", NULL},
    {"setresgid", NULL},
    {"setresuid", NULL},
    {"prctl", NULL},
    {"rt_sigreturn", NULL},
    {"exit", NULL},
};

/* Under make check-asan, check-ubsan and check-tsan: the sanitizer's runtime (the Makefile); the
 * runtime preloaded behind the library (ASan's, TSan's: harness.c). */
#ifndef TH_SANITIZER_RUNTIME
#define TH_SANITIZER_RUNTIME ""
#endif
#ifndef TH_PRELOAD_AFTER
#define TH_PRELOAD_AFTER ""
#endif

/* A seccomp filter that kills on a call the library would make and the program does not (systemd's
 * SystemCallFilter= without SystemCallErrorNumber=): the program runs as without the library, and
 * the library says in one line which call made it stand down, or does without that call. Under a
 * sanitizer the program carries the sanitizer's runtime on both sides: a call that runtime makes
 * itself (mkdir for its log_path) kills it alike, and is left out, said in the test's log. */
Test(robust, a_filter_that_kills_on_a_call_of_the_library_s)
{
	const char *env[] = {env_preload(), env_fifo_in(th_tmpdir()), NULL};
	bool sanitized = strlen(TH_SANITIZER_RUNTIME) > 0;
	bool runtime_malloc = strlen(TH_PRELOAD_AFTER) > 0;
	const char *env0[] = {sanitized ? "LD_PRELOAD=" TH_SANITIZER_RUNTIME : NULL, NULL};
	for (size_t i = 0; i < sizeof(robust_kill_calls) / sizeof(robust_kill_calls[0]); i++) {
		const char *call = robust_kill_calls[i].call;
		const char *argv[] = {RT_BUILD_DIR "/test/tools/killcall", call, "/bin/echo", "hi",
		                      NULL};
		char out0[256], err0[1024], out1[256], err1[1024], line[256];
		int status0 = th_run(argv, env0, out0, sizeof(out0), err0, sizeof(err0));
		if (status0 != 0 && sanitized) {
			cr_log_info("%s: not tested here: the sanitizer's runtime makes it itself",
			            call);
			continue;
		}
		int status1 = th_run(argv, env, out1, sizeof(out1), err1, sizeof(err1));
		cr_assert_eq(status0, 0, "%s: echo alone: %d %s", call, status0, err0);
		cr_assert_str_eq(out0, "hi\n", "%s", call);
		cr_assert_eq(status1, 0, "%s: echo with the library: %d %s", call, status1, err1);
		cr_assert_str_eq(out1, "hi\n", "%s", call);
		if (robust_kill_calls[i].without) {
			/* Under ASan or TSan malloc is the runtime's: no glibc release to turn off.
			 */
			const char *said =
			    runtime_malloc && robust_kill_calls[i].without == robust_no_release
			        ? ""
			        : robust_kill_calls[i].without;
			cr_assert_str_eq(err1, said, "%s", call);
			continue;
		}
		snprintf(line, sizeof(line),
		         "roundtrim: inactive: a seccomp filter kills the process on %s(2), which "
		         "the library would call (roundtrim(7), SYSTEM CALLS)\n",
		         strncmp(call, "clone-", 6) ? call : "clone");
		cr_assert_str_eq(err1, line, "%s", call);
	}
}

/* The probe's child, killed by the filter, dumps no core of the program's memory, even where
 * the program allows core dumps (core_pattern "core": in the working directory). */
Test(robust, a_probe_killed_by_the_filter_leaves_no_core)
{
	char pattern[64] = "";
	th_read_file("/proc/sys/kernel/core_pattern", pattern, sizeof(pattern));
	if (strcmp(pattern, "core\n") != 0)
		cr_skip_test("core_pattern is not \"core\": a core dump would not be seen here");
	const char *env[] = {env_preload(), env_fifo_in(th_tmpdir()), NULL};
	char script[PATH_MAX + 256];
	snprintf(script, sizeof(script),
	         "ulimit -c unlimited && cd %s && exec %s/test/tools/killcall prctl /bin/echo hi",
	         th_tmpdir(), RT_BUILD_DIR);
	const char *argv[] = {"/bin/sh", "-c", script, NULL};
	char out[256], err[1024];
	cr_assert_eq(th_run(argv, env, out, sizeof(out), err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(out, "hi\n", "%s", err);
	cr_assert_eq(th_count_in(err, "kills the process on prctl(2)"), 1, "%s", err);
	DIR *d = opendir(th_tmpdir());
	cr_assert_not_null(d);
	int cores = 0;
	for (struct dirent *e; (e = readdir(d));)
		if (!strncmp(e->d_name, "core", 4))
			cores++, cr_log_error("core dump: %s", e->d_name);
	closedir(d);
	cr_assert_eq(cores, 0, "the probe left a core dump");
}

/* systemd's @system-service set allows unshare and pidfd_open but not pidfd_getfd: the library
 * stays on, its lines going to the stderr of start-up; a Python program counts its rounds. */
Test(robust, a_filter_that_kills_on_pidfd_getfd_leaves_the_library_on)
{
	const char *env[] = {env_preload(), env_fifo_in(th_tmpdir()), NULL};
	const char *argv[] = {RT_BUILD_DIR "/test/tools/killcall",
	                      "pidfd_getfd",
	                      "/usr/bin/python3",
	                      "-c",
	                      "import ctypes\n"
	                      "print(ctypes.CDLL(None).roundtrim_trim(), 'done')\n",
	                      NULL};
	char out[256], err[1024];
	cr_assert_eq(th_run(argv, env, out, sizeof(out), err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(out, "0 done\n", "%s", err);
	cr_assert_eq(th_count_in(err, "roundtrim: "), 0, "%s", err);
}

/* The keeper polls a signalfd for SIGURG, the signal that cuts its waits short; a SIGURG that
 * another process sends to the program, which blocks it and takes it with sigwaitinfo, reaches
 * the program as it was sent: its sender's pid and SI_USER (the keeper reads its signalfd only
 * while a caller cuts its wait). Where unshare is refused, as in a container. */
Test(robust, a_blocked_sigurg_of_the_program_s_stays_its)
{
	const char *env[] = {env_preload(), env_fifo_in(th_tmpdir()), NULL};
	const char *argv[] = {
	    th_noshare(), "/usr/bin/python3", "-c",
	    "import os, signal, subprocess, time\n"
	    "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGURG})\n"
	    "right = 0\n"
	    "for i in range(20):\n"
	    "    p = subprocess.Popen(['/bin/kill', '-s', 'URG', str(os.getpid())])\n"
	    "    p.wait()\n"
	    "    time.sleep(0.01)\n"
	    "    info = signal.sigwaitinfo({signal.SIGURG})\n"
	    "    if info.si_pid == p.pid and info.si_code == 0:\n"
	    "        right += 1\n"
	    "    else:\n"
	    "        print(info)\n"
	    "print(right)\n",
	    NULL};
	char out[256], err[1024];
	cr_assert_eq(th_run(argv + th_keeper_mode(), env, out, sizeof(out), err, sizeof(err)), 0,
	             "%s", err);
	cr_assert_str_eq(out, "20\n", "each signal's sender and code (SI_USER): %s", err);
	cr_assert_str_eq(err, "", "%s", err);
}
