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

Test(robust, fork_child_that_keeps_working_gets_its_own_fifo_and_counts)
{
	const char *dir = th_tmpdir();
	const char *env[] = {env_preload(), env_fifo_in(dir), "ROUNDTRIM_GC_ROUNDS=0", NULL};
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
