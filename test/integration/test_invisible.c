/* What the host must never notice: the library's descriptors (none taken at arbitrary moments,
 * all high and close-on-exec, none used once the program closed or replaced it), its signal
 * (given up to a program that claims it), fork children that exec at once, and the files it
 * writes (no links followed, no foreign files, none made before the first line). */
#include "harness.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

TestSuite(invisible, .timeout = 120, .fini = th_cleanup);

#define SIGNAL_ON "ROUNDTRIM_SIGNAL=RTMIN+8"

static const char *
env_preload(void)
{
	static char buf[PATH_MAX];
	snprintf(buf, sizeof(buf), "LD_PRELOAD=%s", th_lib());
	return buf;
}

static void
no_low_descriptor_taken(const char *workload)
{
	struct th_probe run;
	char line[512];
	const char *env[] = {th_env_in_tmp("ROUNDTRIM_STATS", "%p.jsonl"), NULL};
	th_start_workload(&run, workload, NULL, NULL, (const char *[]){"lowfd", "300000", NULL},
	                  env, line, sizeof(line));
	th_write(&run.proc, "go\n");
	/* Rounds until the probe is done: each one reads RSS and rewrites the status file. */
	int rounds = 0;
	static char burst[6 * 20 + 1];
	for (int i = 0; i < 20; i++)
		memcpy(burst + 6 * i, "round\n", 6);
	while (!th_read_line(&run.proc, line, sizeof(line), 1)) {
		char err[4096];
		if (!th_fifo_write(run.fifo, burst, 6 * 20)) {
			th_kill(&run.proc);
			th_read_stderr(&run.proc, err, sizeof(err));
			cr_assert_fail("FIFO not served after %d rounds: %s", rounds, err);
		}
		rounds++;
	}
	cr_assert_str_eq(line, "lowfd misses=0 stderr=same", "after %d rounds", rounds);
	cr_assert_gt(rounds, 10);
	th_wait_rounds(&run, 20L * rounds, line, sizeof(line));
	th_close_stdin(&run.proc);
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS));
}

Test(invisible, no_low_descriptor_is_taken_while_rounds_storm)
{
	no_low_descriptor_taken("probe");
}

Test(invisible, keeper_no_low_descriptor_is_taken_while_rounds_storm)
{
	no_low_descriptor_taken("noshare:probe");
}

/* Whether fdinfo (a /proc/PID[/task/TID]/fdinfo directory) says fd is close-on-exec (O_CLOEXEC is
 * 02000000 in "flags:"). */
static bool
close_on_exec(const char *fdinfo, int fd)
{
	char path[PATH_MAX], buf[512];
	snprintf(path, sizeof(path), "%.200s/%d", fdinfo, fd);
	cr_assert_gt(th_read_file(path, buf, sizeof(buf)), 0);
	char *flags = strstr(buf, "flags:");
	cr_assert_not_null(flags, "%s", buf);
	return strtoul(flags + 6, NULL, 8) & 02000000;
}

/* Counts the library's descriptors in a listing (/proc/PID/fd or a thread's): its files in the
 * test's directory and its /proc readings of pid; checks each is high and close-on-exec. The
 * pidfd of a worker with its own table (through which it borrows stderr) is counted apart. */
static int
library_fds_in(int pid, const char *task, int *pidfds)
{
	char dir[128], info[128], proc[64];
	snprintf(dir, sizeof(dir), "/proc/%d%s/fd", pid, task);
	snprintf(info, sizeof(info), "/proc/%d%s/fdinfo", pid, task);
	snprintf(proc, sizeof(proc), "/proc/%d/", pid);
	DIR *d = opendir(dir);
	cr_assert_not_null(d, "%s", dir);
	int ours = 0;
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		int fd = atoi(e->d_name);
		char link[PATH_MAX + 256], target[PATH_MAX] = "";
		snprintf(link, sizeof(link), "%s/%s", dir, e->d_name);
		if (e->d_name[0] == '.' || readlink(link, target, sizeof(target) - 1) < 0)
			continue;
		if (!strcmp(target, "anon_inode:[pidfd]")) {
			(*pidfds)++;
			cr_assert(close_on_exec(info, fd), "pidfd %d not close-on-exec", fd);
			continue;
		}
		/* What the test runner itself let the probe inherit is not the library's. */
		if (!strstr(target, th_tmpdir()) && strncmp(target, proc, strlen(proc)))
			continue;
		ours++;
		cr_assert_geq(fd, th_fd_floor(), "descriptor %d (%s) below the floor", fd, target);
		cr_assert(close_on_exec(info, fd), "descriptor %d (%s) not close-on-exec", fd,
		          target);
	}
	closedir(d);
	return ours;
}

static void
start_with_every_file(struct th_probe *run, const char *workload)
{
	char line[512];
	const char *env[] = {th_env_in_tmp("ROUNDTRIM_STATS", "%p.jsonl"),
	                     th_env_in_tmp("ROUNDTRIM_LOG", "log"), "ROUNDTRIM_PROFILE=1", NULL};
	th_start_workload(run, workload, NULL, NULL, (const char *[]){"idle", NULL}, env, line,
	                  sizeof(line));
	cr_assert(th_fifo_write(run->fifo, "round\n", 6));
	th_wait_rounds(run, 1, line, sizeof(line));
}

/* statm, smaps_rollup, stat, the FIFO, the status file, stats, log. */
#define LIBRARY_FILES 7

/* The library keeps every file in a descriptor table of its own: the worker's, or where unshare
 * is refused its keeper's (a task that shares all but the table). The program's holds none of
 * them, whatever it lists, closes or replaces. The worker's table holds a pidfd too, through
 * which it borrows the program's stderr; in the keeper's mode the worker shares the program's. */
static void
no_library_descriptor_in_the_programs_table(const char *workload, const char *holder_name)
{
	struct th_probe run;
	int pidfds = 0;
	start_with_every_file(&run, workload);
	cr_assert_eq(library_fds_in(run.proc.pid, "", &pidfds), 0);
	cr_assert_eq(pidfds, 0);
	pid_t holder = th_thread_named(run.proc.pid, holder_name);
	cr_assert_gt(holder, 0, "no thread named %s", holder_name);
	char task[64];
	snprintf(task, sizeof(task), "/task/%d", (int)holder);
	cr_assert_eq(library_fds_in(run.proc.pid, task, &pidfds), LIBRARY_FILES);
	cr_assert_eq(pidfds, strcmp(holder_name, "roundtrim") == 0);
	th_kill(&run.proc);
}

Test(invisible, no_descriptor_of_the_library_in_the_programs_table)
{
	no_library_descriptor_in_the_programs_table("probe", th_keeper_mode() ? "roundtrim-fds"
	                                                                      : "roundtrim");
}

Test(invisible, keeper_no_descriptor_of_the_library_in_the_programs_table)
{
	no_library_descriptor_in_the_programs_table("noshare:probe", "roundtrim-fds");
}

/* The library's thread bears its name from before the program's main runs: tests and tools find
 * it by name (th_fd_holder). It once named itself after the starter had let main go, and on a
 * busy machine main could run beside it unnamed (CI: "no descriptor ends in .fifo"). Here the
 * probe runs on one CPU and looks first thing in main, before the woken worker has had the CPU. */
Test(invisible, the_library_s_thread_is_named_before_main_runs)
{
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	cr_assert_eq(sched_setaffinity(0, sizeof(one), &one), 0);
	for (int i = 0; i < 16; i++) {
		struct th_probe run;
		char line[512];
		th_start_probe(&run, (const char *[]){"names", NULL}, NULL, line, sizeof(line));
		th_kill(&run.proc);
		cr_assert_str_eq(line, "roundtrim=1", "start %d", i);
	}
}

/* Where no task can have a table of its own and ROUNDTRIM_SHARED_TABLE=1 accepts the program's,
 * the library's descriptors are in the program's: all high and close-on-exec. */
#define SHARED_TABLE "ROUNDTRIM_SHARED_TABLE=1"

Test(invisible, shared_table_descriptors_are_high_and_close_on_exec)
{
	struct th_probe run;
	char line[512];
	int pidfds = 0;
	const char *env[] = {th_env_in_tmp("ROUNDTRIM_STATS", "%p.jsonl"),
	                     th_env_in_tmp("ROUNDTRIM_LOG", "log"), "ROUNDTRIM_PROFILE=1",
	                     SHARED_TABLE, NULL};
	th_start_workload(&run, "nokeeper:probe", NULL, NULL, (const char *[]){"idle", NULL}, env,
	                  line, sizeof(line));
	cr_assert(th_fifo_write(run.fifo, "round\n", 6));
	th_wait_rounds(&run, 1, line, sizeof(line));
	cr_assert_eq(library_fds_in(run.proc.pid, "", &pidfds), LIBRARY_FILES);
	cr_assert_eq(pidfds, 0);
	th_kill(&run.proc);
}

/* Where neither a table of its own nor a keeper can be had, the library does not run with the
 * races of the program's table: it stays inactive, says why in one line that names the setting
 * that accepts them, and makes no file. */
Test(invisible, no_table_of_its_own_and_no_keeper_leaves_the_library_inactive)
{
	struct th_proc p;
	char err[4096];
	const char *argv[] = {th_noshare(), "--no-keeper", th_workload("probe"), "idle", NULL};
	char preload[PATH_MAX + 16];
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", th_lib());
	const char *env[] = {preload, th_env_in_tmp("ROUNDTRIM_FIFO", "%p.fifo"),
	                     th_env_in_tmp("ROUNDTRIM_STATS", "%p.jsonl"), NULL};
	th_spawn(&p, argv, env);
	cr_assert(th_wait_stderr(&p, "\n", err, sizeof(err), TH_TIMEOUT_MS), "no line");
	/* Nor does it keep the unnamed file it had opened for the stats (a mapping that held it
	 * stayed, a "(deleted)" file in the program's maps for its whole life). */
	static char maps[1 << 16];
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)p.pid);
	/* The line comes first; the files are closed right after it. */
	for (int waited = 0;; waited += 10) {
		th_read_file(path, maps, sizeof(maps));
		if (!strstr(maps, "(deleted)") || waited >= TH_TIMEOUT_MS)
			break;
		nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
	}
	cr_assert_null(strstr(maps, "(deleted)"), "%s", maps);
	th_close_stdin(&p);
	cr_assert(th_wait(&p, TH_TIMEOUT_MS));
	cr_assert_eq(p.status, 0);
	th_read_stderr(&p, err, sizeof(err));
	cr_assert_eq(th_count_in(err, "\n"), 1, "%s", err);
	th_expect_in(err, "roundtrim: inactive: ");
	th_expect_in(err, "ROUNDTRIM_SHARED_TABLE=1");
	cr_assert_eq(th_entries_in(th_tmpdir()), 0, "the library made a file");
}

/* A shell that puts its own file on descriptor 3 reads that file's lines, all of them (1 to
 * 2000, which add up to 2001000). */
Test(invisible, shell_reads_its_own_descriptor_3)
{
	char file[PATH_MAX], script[PATH_MAX + 128], out[256], err[4096];
	snprintf(file, sizeof(file), "%s/numbers.txt", th_tmpdir());
	FILE *f = fopen(file, "w");
	cr_assert_not_null(f);
	for (int i = 1; i <= 2000; i++)
		fprintf(f, "%d\n", i);
	fclose(f);
	snprintf(script, sizeof(script),
	         "exec 3<%s; n=0; while read -r -u 3 x; do n=$((n + x)); done; echo $n", file);
	const char *argv[] = {"/bin/bash", "-c", script, NULL};
	const char *env[] = {env_preload(), th_env_in_tmp("ROUNDTRIM_FIFO", "%p.fifo"), SIGNAL_ON,
	                     NULL};
	for (int i = 0; i < 5; i++) {
		cr_assert_eq(th_run(argv, env, out, sizeof(out), err, sizeof(err)), 0, "%s", err);
		cr_assert_str_eq(out, "2001000\n", "run %d: %s", i, err);
	}
}

/* The probe closes every descriptor above stderr: the library's, in a table of its own, are not
 * among them; rounds go on, and the program's next file is its own. */
static void
closing_every_descriptor(const char *workload)
{
	struct th_probe run;
	char line[512], err[8192];
	th_start_workload(&run, workload, NULL, NULL, (const char *[]){"closeall", NULL}, NULL,
	                  line, sizeof(line));
	th_write(&run.proc, "go\n");
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_str_eq(line, "closed");
	/* The API's round, then one through the FIFO. */
	th_wait_rounds(&run, 1, line, sizeof(line));
	cr_assert(th_fifo_write(run.fifo, "round\n", 6));
	th_wait_rounds(&run, 2, line, sizeof(line));
	th_write(&run.proc, "open\n");
	th_write(&run.proc, "read\n");
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_str_eq(line, "mine=mine");
	th_close_stdin(&run.proc);
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS));
	cr_assert_eq(run.proc.status, 0);
	th_read_stderr(&run.proc, err, sizeof(err));
	cr_assert_null(strstr(err, " off"), "a feature stood down: %s", err);
}

Test(invisible, program_closing_every_descriptor_leaves_the_library_working)
{
	closing_every_descriptor("probe");
}

Test(invisible, keeper_program_closing_every_descriptor_leaves_the_library_working)
{
	closing_every_descriptor("noshare:probe");
}

/* The program puts a pipe of its own on the number of the library's FIFO: in its own table,
 * which is not the library's; the library goes on reading its FIFO, and the program reads its
 * pipe whole. */
static void
descriptor_on_the_fifos_number(const char *workload)
{
	struct th_probe run;
	char line[512], err[8192];
	th_start_workload(&run, workload, NULL, NULL, (const char *[]){"dupover", NULL}, NULL, line,
	                  sizeof(line));
	th_write(&run.proc, "go\n");
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_eq(strncmp(line, "replaced ", 9), 0, "%s", line);
	cr_assert(th_fifo_write(run.fifo, "round\n", 6));
	th_wait_rounds(&run, 1, line, sizeof(line));
	th_write(&run.proc, "read\n");
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_str_eq(line, "got=hello");
	th_close_stdin(&run.proc);
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS));
	th_read_stderr(&run.proc, err, sizeof(err));
	cr_assert_null(strstr(err, " off"), "a feature stood down: %s", err);
}

Test(invisible, program_descriptor_on_the_fifos_number_is_never_read)
{
	descriptor_on_the_fifos_number("probe");
}

Test(invisible, keeper_program_descriptor_on_the_fifos_number_is_never_read)
{
	descriptor_on_the_fifos_number("noshare:probe");
}

/* In the program's table (ROUNDTRIM_SHARED_TABLE=1), the same closing: the FIFO stands down,
 * says so once, takes its files away, and never touches the descriptor the program opens next. */
Test(invisible, shared_table_closed_fifo_descriptor_stands_down)
{
	struct th_probe run;
	char line[512], err[8192];
	th_start_workload(&run, "nokeeper:probe", NULL, NULL, (const char *[]){"closeall", NULL},
	                  (const char *[]){SHARED_TABLE, NULL}, line, sizeof(line));
	th_write(&run.proc, "go\n");
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_str_eq(line, "closed");
	cr_assert(th_wait_stderr(&run.proc, "FIFO trigger off: descriptor", err, sizeof(err),
	                         TH_TIMEOUT_MS),
	          "%s", err);
	cr_assert(th_wait_path(run.fifo, true, TH_TIMEOUT_MS), "FIFO left behind");
	cr_assert(th_wait_path(run.status, true, TH_TIMEOUT_MS), "status left behind");
	th_write(&run.proc, "open\n");
	th_write(&run.proc, "read\n");
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_str_eq(line, "mine=mine");
	th_close_stdin(&run.proc);
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS));
	cr_assert_eq(run.proc.status, 0);
	/* Each feature that lost its descriptor (the FIFO, the RSS readings) says so once. */
	th_read_stderr(&run.proc, err, sizeof(err));
	const char *first = strstr(err, "FIFO trigger off");
	cr_assert_not_null(first);
	cr_assert_null(strstr(first + 1, "FIFO trigger off"), "said twice: %s", err);
}

Test(invisible, shared_table_replaced_fifo_descriptor_is_never_read)
{
	struct th_probe run;
	char line[512], err[8192];
	th_start_workload(&run, "nokeeper:probe", NULL, NULL, (const char *[]){"dupover", NULL},
	                  (const char *[]){SHARED_TABLE, NULL}, line, sizeof(line));
	th_write(&run.proc, "go\n");
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_eq(strncmp(line, "replaced ", 9), 0, "%s", line);
	cr_assert(th_wait_stderr(&run.proc, "FIFO trigger off: descriptor", err, sizeof(err),
	                         TH_TIMEOUT_MS),
	          "%s", err);
	th_write(&run.proc, "read\n");
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_str_eq(line, "got=hello");
	th_kill(&run.proc);
}

/* The library's per-process outputs are unnamed (O_TMPFILE) until their first record, and its
 * descriptor is then the file's only reference: the program that closes it frees the inode,
 * and ext4 gives the number to the next file made in that directory, here the program's own,
 * put on the same descriptor. Device and inode match; the file is not the library's. Both
 * outputs stand down with their line, and neither of the program's files is written or named
 * (once, the library wrote its log line into the program's file and linked it as its log). The
 * Prometheus and trace files open the same way, but are first written at the worker's start
 * and ticks, which the probe's replacing would race. */
Test(invisible, shared_table_unnamed_output_replaced_by_a_reused_inode_stands_down)
{
	struct th_probe run;
	char line[512], err[8192], path[PATH_MAX];
	const char *env[] = {th_env_in_tmp("ROUNDTRIM_STATS", "stats-%p"),
	                     th_env_in_tmp("ROUNDTRIM_LOG", "log-%p"), "ROUNDTRIM_PROFILE=1",
	                     SHARED_TABLE, NULL};
	th_start_workload(&run, "nokeeper:probe", NULL, NULL,
	                  (const char *[]){"reuse", th_tmpdir(), NULL}, env, line, sizeof(line));
	th_write(&run.proc, "go\n");
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_eq(strncmp(line, "reused ", 7), 0, "%s", line);
	cr_assert_not_null(strstr(line, "/2"), "not both outputs unnamed: %s", line);
	cr_log_info("the program's files that got the freed inode's number: %s", line + 7);
	cr_assert(th_fifo_write(run.fifo, "round\n", 6));
	static const char *const features[] = {"log file", "stats file"};
	for (size_t i = 0; i < sizeof(features) / sizeof(features[0]); i++) {
		char needle[64];
		snprintf(needle, sizeof(needle), "%s off: descriptor ", features[i]);
		cr_assert(th_wait_stderr(&run.proc, needle, err, sizeof(err), TH_TIMEOUT_MS),
		          "no line for %s: %s", features[i], err);
	}
	th_write(&run.proc, "check\n");
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_str_eq(line, "untouched=2/2");
	static const char *const names[] = {"log", "stats"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s-%d", th_tmpdir(), names[i], (int)run.proc.pid);
		cr_assert_neq(access(path, F_OK), 0, "%s was named", path);
	}
	th_close_stdin(&run.proc);
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS));
	cr_assert_eq(run.proc.status, 0);
}

static void
handler_case(const char *how)
{
	struct th_probe run;
	char line[512], err[8192];
	const char *env[] = {SIGNAL_ON, NULL};
	th_start_probe_env(&run, (const char *[]){"handler", how, NULL}, env, line, sizeof(line));
	cr_assert_str_eq(line, "before=default");
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_eq(strncmp(line, "ready", 5), 0, "%s", line);
	cr_assert(th_wait_stderr(&run.proc, "signal trigger off: the program set its own", err,
	                         sizeof(err), TH_TIMEOUT_MS),
	          "%s", err);
	cr_assert_eq(kill(run.proc.pid, SIGRTMIN + 8), 0);
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS), "handler never ran");
	cr_assert_str_eq(line, "handled");
	th_close_stdin(&run.proc);
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS));
	cr_assert_eq(run.proc.status, 0, "the signal killed the program");
}

Test(invisible, program_handler_by_sigaction_gets_the_signal)
{
	handler_case("sigaction");
}

Test(invisible, program_handler_by_signal_gets_the_signal)
{
	handler_case("signal");
}

/* Children that close every descriptor and exec at once, as subprocess does: nothing of the
 * library's runs in them, so nothing races their descriptor work. */
Test(invisible, fork_exec_children_are_left_alone)
{
	char out[256], err[8192];
	const char *argv[] = {th_workload("probe"), "forkexec", "300", NULL};
	const char *env[] = {env_preload(), th_env_in_tmp("ROUNDTRIM_FIFO", "%p.fifo"),
	                     "ROUNDTRIM_MATCH=probe", NULL};
	cr_assert_eq(th_run(argv, env, out, sizeof(out), err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(out, "forkexec=300\n");
	cr_assert_null(strstr(err, "roundtrim"), "%s", err);
}

/* One round in a probe with ROUNDTRIM_STATS=path; returns its stderr. */
static void
stats_run(const char *stats, bool act, char *err, size_t size)
{
	struct th_probe run;
	char line[512], env_stats[PATH_MAX + 32];
	snprintf(env_stats, sizeof(env_stats), "ROUNDTRIM_STATS=%s", stats);
	const char *env[] = {env_stats, "ROUNDTRIM_GC_ROUNDS=1", NULL};
	th_start_probe_env(&run, (const char *[]){"idle", NULL}, env, line, sizeof(line));
	if (act) {
		cr_assert(th_fifo_write(run.fifo, "round\n", 6));
		th_wait_rounds(&run, 1, line, sizeof(line));
	}
	th_close_stdin(&run.proc);
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS));
	th_read_stderr(&run.proc, err, size);
}

Test(invisible, stats_never_follow_a_symbolic_link)
{
	char victim[PATH_MAX], link[PATH_MAX], err[4096], buf[64];
	snprintf(victim, sizeof(victim), "%s/victim", th_tmpdir());
	snprintf(link, sizeof(link), "%s/stats.jsonl", th_tmpdir());
	th_write_file(victim, "x\n");
	cr_assert_eq(symlink(victim, link), 0);
	stats_run(link, true, err, sizeof(err));
	cr_assert_not_null(strstr(err, "stats file off: refusing"), "%s", err);
	cr_assert_not_null(strstr(err, "symbolic link"), "%s", err);
	cr_assert_eq(th_read_file(victim, buf, sizeof(buf)), 2);
	cr_assert_str_eq(buf, "x\n");
}

Test(invisible, stats_refuse_another_users_file_in_a_shared_directory)
{
	char dir[PATH_MAX], file[PATH_MAX + 16], err[4096], buf[64];
	snprintf(dir, sizeof(dir), "%s/shared", th_tmpdir());
	snprintf(file, sizeof(file), "%s/stats.jsonl", dir);
	cr_assert_eq(mkdir(dir, 0777), 0);
	cr_assert_eq(chmod(dir, 01777), 0);
	th_write_file(file, "theirs\n");
	if (geteuid() != 0 || chown(file, 4242, 4242) != 0)
		cr_skip_test("needs root to give a file to another user");
	stats_run(file, true, err, sizeof(err));
	cr_assert_not_null(strstr(err, "belongs to another user"), "%s", err);
	cr_assert_eq(th_read_file(file, buf, sizeof(buf)), 7);
}

Test(invisible, stats_refuse_what_is_not_a_regular_file)
{
	char fifo[PATH_MAX], err[4096];
	snprintf(fifo, sizeof(fifo), "%s/stats.jsonl", th_tmpdir());
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	stats_run(fifo, true, err, sizeof(err));
	cr_assert_not_null(strstr(err, "not a regular file"), "%s", err);
}

Test(invisible, stats_file_appears_with_its_first_line_only)
{
	char tmpl[PATH_MAX], err[4096];
	snprintf(tmpl, sizeof(tmpl), "%s/s-%%p.jsonl", th_tmpdir());
	/* A process that never reports leaves nothing. */
	stats_run(tmpl, false, err, sizeof(err));
	cr_assert_eq(th_entries_in(th_tmpdir()), 0, "%s", err);
	/* One that does gets its file, 0600, holding its line. */
	stats_run(tmpl, true, err, sizeof(err));
	DIR *d = opendir(th_tmpdir());
	struct dirent *e;
	int files = 0;
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, "s-", 2))
			continue;
		char path[PATH_MAX];
		struct stat st;
		snprintf(path, sizeof(path), "%s/%s", th_tmpdir(), e->d_name);
		cr_assert_eq(lstat(path, &st), 0);
		cr_assert(S_ISREG(st.st_mode));
		cr_assert_eq(st.st_mode & 0777, 0600);
		cr_assert_eq(th_count_lines(path, "\"round\":1,"), 1);
		files++;
	}
	closedir(d);
	cr_assert_eq(files, 1);
}

/* Paths come from outside: a newline or an escape sequence in one neither splits the library's
 * line nor reaches the host's terminal. */
Test(invisible, warnings_stay_one_printable_line)
{
	char out[256], err[2048];
	const char *argv[] = {"/bin/true", NULL};
	const char *env[] = {env_preload(), "ROUNDTRIM_FIFO=none",
	                     "ROUNDTRIM_STATS=/nonexistent/x\nroundtrim: forged\x1b[31m", NULL};
	cr_assert_eq(th_run(argv, env, out, sizeof(out), err, sizeof(err)), 0, "%s", err);
	cr_assert_not_null(strstr(err, "stats file off"), "%s", err);
	cr_assert_eq(strchr(err, '\n'), err + strlen(err) - 1, "more than one line: %s", err);
	cr_assert_null(strchr(err, '\x1b'), "%s", err);
}

/* The main thread ends with pthread_exit and the program's last thread returns: glibc then ends
 * the process (exit status 0) in that thread, whose atexit handler still writes to the program's
 * stdout; the library's worker must neither keep the process alive nor end it from its own
 * descriptor table, where the program's stdout does not exist. */
static void
last_thread_exits(const char *workload)
{
	struct th_probe run;
	char line[512];
	th_start_workload(&run, workload, NULL, NULL, (const char *[]){"lastexit", NULL}, NULL,
	                  line, sizeof(line));
	/* Only now: a process that ended at once would take its status file with it before the
	 * start above could see it. */
	th_write(&run.proc, "go\n");
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS),
	          "the last thread's key destructor and atexit handler printed nothing");
	cr_assert_str_eq(line, "thread key destructor ran");
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS),
	          "the atexit handler's line was lost");
	cr_assert_str_eq(line, "atexit ran");
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS), "the process outlived its threads");
	cr_assert(WIFEXITED(run.proc.status) && WEXITSTATUS(run.proc.status) == 0, "status %#x",
	          run.proc.status);
	cr_assert(th_wait_path(run.fifo, true, TH_TIMEOUT_MS), "FIFO left behind");
}

Test(invisible, process_ends_when_the_programs_last_thread_exits)
{
	last_thread_exits("probe");
}

/* The keeper is the library's task, not the program's: the program's last thread still ends the
 * process. */
Test(invisible, keeper_process_ends_when_the_programs_last_thread_exits)
{
	last_thread_exits("noshare:probe");
}

/* How many files probe emfile opens before EMFILE, started under RLIMIT_NOFILE 64 (the library's
 * floor is then 32): with the library preloaded or not, under noshare or not. */
static long
files_until_emfile(bool library, bool noshare)
{
	struct th_proc p;
	char line[256], preload[PATH_MAX + 16], err[4096];
	const char *argv[] = {th_noshare(),         "/usr/bin/prlimit", "--nofile=64:64",
	                      th_workload("probe"), "emfile",           NULL};
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", library ? th_lib() : "");
	const char *env[] = {preload, th_env_in_tmp("ROUNDTRIM_FIFO", "%p.fifo"),
	                     "ROUNDTRIM_MATCH=probe", NULL};
	/* LeakSanitizer's check at exit needs descriptors: with none free it waits for ever. */
	th_asan_options("detect_leaks=0");
	th_spawn(&p, noshare ? argv : argv + 1, env);
	bool said = th_read_line(&p, line, sizeof(line), TH_TIMEOUT_MS);
	th_close_stdin(&p);
	cr_assert(th_wait(&p, TH_TIMEOUT_MS));
	th_read_stderr(&p, err, sizeof(err));
	cr_assert(said && !strncmp(line, "emfile ", 7), "%s: %s", said ? line : "nothing", err);
	return strtol(line + 7, NULL, 10);
}

/* The program's table holds nothing of the library's: it gets every number up to its limit
 * (in a sanitizer build, all but the runtime's report file). */
Test(invisible, program_opens_as_many_files_as_without_the_library)
{
	cr_assert_eq(files_until_emfile(true, false) + th_report_descriptors(),
	             files_until_emfile(false, false));
}

Test(invisible, keeper_program_opens_as_many_files_as_without_the_library)
{
	cr_assert_eq(files_until_emfile(true, true) + th_report_descriptors(),
	             files_until_emfile(false, true));
}

/* The status file, each stats record and `roundtrim status` say whose descriptor table the
 * library's files are in: "private" (the worker's own), "keeper" (its keeper's), "shared" (the
 * program's, where the user accepted it). */
static void
says_descriptors(const char *workload, const char *const extra[], const char *mode)
{
	struct th_probe run;
	char line[2048], needle[64], stats[PATH_MAX], out[4096], err[4096];
	const char *env[4] = {th_env_in_tmp("ROUNDTRIM_STATS", "stats.jsonl"),
	                      "ROUNDTRIM_GC_ROUNDS=1"};
	for (size_t i = 0; extra && extra[i] && i < 1; i++)
		env[2 + i] = extra[i];
	th_start_workload(&run, workload, NULL, NULL, (const char *[]){"idle", NULL}, env, line,
	                  sizeof(line));
	snprintf(needle, sizeof(needle), "\"descriptors\":\"%s\"", mode);
	cr_assert(th_fifo_write(run.fifo, "round\n", 6));
	th_wait_rounds(&run, 1, line, sizeof(line));
	th_expect_in(line, needle);
	snprintf(stats, sizeof(stats), "%s/stats.jsonl", th_tmpdir());
	cr_assert(th_wait_line(stats, "\"round\":1,", line, sizeof(line), TH_TIMEOUT_MS));
	th_expect_in(line, needle);
	const char *argv[] = {RT_BUILD_DIR "/roundtrim", "status", th_pid_text(run.proc.pid), NULL};
	cr_assert_eq(th_run(argv, NULL, out, sizeof(out), err, sizeof(err)), 0, "%s", err);
	th_expect_in(out, "FDS");
	snprintf(needle, sizeof(needle), " %s ", mode);
	th_expect_in(out, needle);
	th_kill(&run.proc);
}

Test(invisible, status_and_stats_say_private_descriptors)
{
	says_descriptors("probe", NULL, th_keeper_mode() ? "keeper" : "private");
}

Test(invisible, status_and_stats_say_keeper_descriptors)
{
	says_descriptors("noshare:probe", NULL, "keeper");
}

Test(invisible, status_and_stats_say_shared_descriptors)
{
	says_descriptors("nokeeper:probe", (const char *[]){SHARED_TABLE, NULL}, "shared");
}

/* A fork child that keeps running past ROUNDTRIM_CHILD_START makes a keeper of its own (the
 * parent's is not in it: only the forking thread is copied), with its own files, and counts its
 * own rounds. */
Test(invisible, keeper_fork_child_makes_its_own_keeper)
{
	struct th_probe run;
	char line[2048], path[PATH_MAX], status[PATH_MAX];
	th_start_workload(
	    &run, "noshare:probe", NULL, NULL, (const char *[]){"forkchild", "busy", NULL},
	    (const char *[]){"ROUNDTRIM_GC_ROUNDS=0", "ROUNDTRIM_CHILD_START=1s", NULL}, line,
	    sizeof(line));
	long child = strtol(line + strlen("child "), NULL, 10);
	cr_assert_gt(child, 0, "%s", line);
	snprintf(path, sizeof(path), "%s/%ld.fifo", th_tmpdir(), child);
	snprintf(status, sizeof(status), "%s/%ld.status", th_tmpdir(), child);
	cr_assert(th_wait_path(status, false, TH_TIMEOUT_MS), "child has no FIFO of its own");
	cr_assert(th_fifo_write(path, "round\nround\n", 12));
	cr_assert(th_wait_line(status, "\"rounds\":2,", line, sizeof(line), TH_TIMEOUT_MS));
	th_expect_in(line, "\"descriptors\":\"keeper\"");
	int pidfds = 0;
	cr_assert_eq(library_fds_in((int)child, "", &pidfds), 0);
	pid_t keeper = th_thread_named((pid_t)child, "roundtrim-fds");
	cr_assert_gt(keeper, 0, "the child has no keeper");
	cr_assert_neq(keeper, th_thread_named(run.proc.pid, "roundtrim-fds"));
	char task[64];
	snprintf(task, sizeof(task), "/task/%d", (int)keeper);
	/* statm, smaps_rollup, stat, the FIFO and the status file. */
	cr_assert_eq(library_fds_in((int)child, task, &pidfds), 5);
	cr_assert(th_wait_line(run.status, "\"rounds\":0,", line, sizeof(line), TH_TIMEOUT_MS),
	          "the parent counted the child's rounds: %s", line);
	th_close_stdin(&run.proc);
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS));
	cr_assert(th_wait_path(path, true, TH_TIMEOUT_MS), "child's FIFO left behind");
}

/* A fork child's library starts inside one of its mallocs (roundtrim(7), FORK AND EXEC): that
 * malloc succeeds and leaves errno as the program set it, whatever the start did (opening the
 * child's files, unshare, the keeper's clone); the child starts at its first allocation
 * (ROUNDTRIM_CHILD_START=0). */
static void
fork_child_start_keeps_errno(const char *workload)
{
	struct th_probe run;
	char line[256];
	th_start_workload(
	    &run, workload, NULL, NULL, (const char *[]){"forkerrno", NULL},
	    (const char *[]){"ROUNDTRIM_GC_ROUNDS=0", "ROUNDTRIM_CHILD_START=0", NULL}, line,
	    sizeof(line));
	cr_assert_str_eq(line, "errno=EBADF worker=yes");
	th_close_stdin(&run.proc);
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS));
	cr_assert_eq(run.proc.status, 0);
}

Test(invisible, fork_child_start_keeps_errno)
{
	fork_child_start_keeps_errno("probe");
}

Test(invisible, keeper_fork_child_start_keeps_errno)
{
	fork_child_start_keeps_errno("noshare:probe");
}

/* glibc's signals 32 and 33 are its own: a program started by posix_spawn (as this one is, by
 * the harness), system or popen comes in with both ignored, and glibc installs its handlers as it
 * needs them. While another thread runs system(), a set*id call (which waits until signal 33 has
 * reached every thread) returns and a cancel (signal 32) reaches its thread, as without the
 * library; the probe bounds the join, the harness the whole run. */
static void
internal_signals_answered(const char *how, const char *expect, bool noshare)
{
	const char *argv_all[] = {th_noshare(), th_workload("probe"), "internal", how, NULL};
	const char *const *argv = noshare ? argv_all : argv_all + 1;
	const char *env[] = {env_preload(), th_env_in_tmp("ROUNDTRIM_FIFO", "%p.fifo"), NULL};
	char out0[1024], err0[1024], out1[1024], err1[1024];
	int status0 = th_run(argv, NULL, out0, sizeof(out0), err0, sizeof(err0));
	int status1 = th_run(argv, env, out1, sizeof(out1), err1, sizeof(err1));
	cr_assert_eq(status0, 0, "without the library: %d %s", status0, err0);
	th_expect_in(out0, expect);
	cr_assert_eq(status1, 0, "%s under the library: %d (-1: it hung) %s %s", how, status1, out1,
	             err1);
	cr_assert_str_eq(out1, out0);
	cr_assert_str_eq(err1, "");
}

Test(invisible, setgid_while_another_thread_runs_system)
{
	internal_signals_answered("setgid", "setgid=0\nsystem=0\n", false);
}

Test(invisible, keeper_setgid_while_another_thread_runs_system)
{
	internal_signals_answered("setgid", "setgid=0\nsystem=0\n", true);
}

Test(invisible, cancel_while_another_thread_runs_system)
{
	internal_signals_answered("cancel", "cancel=joined\nsystem=0\n", false);
}

Test(invisible, keeper_cancel_while_another_thread_runs_system)
{
	internal_signals_answered("cancel", "cancel=joined\nsystem=0\n", true);
}

/* glibc starts the threads of timer_create(SIGEV_THREAD), aio, getaddrinfo_a and mq_notify without
 * pthread_create. A set*id call from one of them waits until signal 33 has reached every thread of
 * the process: while the main thread execs (a missing file, again and again), it returns as
 * without the library, which never ignores 33, not even around exec (it waited for ever there). */
static void
timer_thread_setxid_while_exec(bool noshare)
{
	const char *argv_all[] = {th_noshare(), th_workload("probe"), "timerxid", NULL};
	const char *const *argv = noshare ? argv_all : argv_all + 1;
	const char *env[] = {env_preload(), th_env_in_tmp("ROUNDTRIM_FIFO", "%p.fifo"), NULL};
	char out0[256], err0[1024], out1[256], err1[1024];
	int status0 = th_run(argv, NULL, out0, sizeof(out0), err0, sizeof(err0));
	int status1 = th_run(argv, env, out1, sizeof(out1), err1, sizeof(err1));
	cr_assert_eq(status0, 0, "without the library: %d %s", status0, err0);
	cr_assert_gt(th_field(out0, "setgid"), 0, "%s", out0);
	th_expect_in(out0, "main setgid=0\n");
	cr_assert_eq(status1, 0, "under the library: %d (-1: it hung) %s %s", status1, out1, err1);
	cr_assert_gt(th_field(out1, "setgid"), 0, "%s", out1);
	th_expect_in(out1, "main setgid=0\n");
	cr_assert_str_eq(err1, "");
}

Test(invisible, setgid_from_a_timer_thread_while_exec)
{
	timer_thread_setxid_while_exec(false);
}

Test(invisible, keeper_setgid_from_a_timer_thread_while_exec)
{
	timer_thread_setxid_while_exec(true);
}
