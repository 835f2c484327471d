/* The roundtrim command against real processes: run, round and trim (with --wait), status,
 * refusals that leave the target unharmed, --all, patch/undo on an NVFlare-shaped sub_start.sh,
 * report, and the lint of the scripts and the page. */
#include "harness.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(command, .timeout = 120, .fini = th_cleanup);

#define OUT_SIZE 16384

static char out[OUT_SIZE], err[OUT_SIZE];

static const char *
command(void)
{
	return RT_BUILD_DIR "/roundtrim";
}

static const char *
env_lib(void)
{
	static char env[PATH_MAX + 16];
	snprintf(env, sizeof(env), "ROUNDTRIM_LIB=%s", th_lib());
	return env;
}

/* roundtrim ARGS... (NULL-terminated), with the library named; output into out and err. */
static int
roundtrim_env(const char *extra_env, const char *const args[])
{
	const char *argv[32] = {command()};
	for (int i = 0; args[i] && i < 30; i++)
		argv[i + 1] = args[i];
	/* The environment holds each name once: extra_env may name the library itself. */
	bool own_lib = extra_env && !strncmp(extra_env, "ROUNDTRIM_LIB=", 14);
	const char *env[] = {own_lib ? extra_env : env_lib(), own_lib ? NULL : extra_env, NULL};
	return th_run(argv, env, out, sizeof(out), err, sizeof(err));
}

#define ROUNDTRIM(...) roundtrim_env(NULL, (const char *const[]){__VA_ARGS__, NULL})

static void
expect_in(const char *haystack, const char *needle)
{
	cr_assert_not_null(strstr(haystack, needle), "\"%s\" lacks \"%s\"", haystack, needle);
}

static const char *
pid_text(pid_t pid)
{
	static __thread char buf[4][16];
	static __thread int next;
	char *s = buf[next++ % 4];
	snprintf(s, 16, "%d", (int)pid);
	return s;
}

/* A process that stays alive until its stdin closes: probe idle, without the library. */
static void
start_plain_probe(struct th_proc *p)
{
	const char *argv[] = {th_workload("probe"), "idle", NULL};
	char line[256];
	th_spawn(p, argv, NULL);
	cr_assert(th_read_line(p, line, sizeof(line), TH_TIMEOUT_MS), "probe said nothing");
}

/* Ends a probe through EOF on stdin and checks that it exited normally: it was unharmed. */
static void
expect_unharmed(struct th_proc *p)
{
	cr_assert_eq(kill(p->pid, 0), 0, "pid %d is gone", p->pid);
	th_close_stdin(p);
	cr_assert(th_wait(p, TH_TIMEOUT_MS));
	cr_assert(WIFEXITED(p->status), "pid %d died by signal %d", p->pid, WTERMSIG(p->status));
	cr_assert_eq(WEXITSTATUS(p->status), 0);
}

Test(command, run_round_wait_and_status_on_frag)
{
	const char *dir = th_tmpdir();
	char fifo_opt[PATH_MAX], stats[PATH_MAX], line[1024];
	snprintf(fifo_opt, sizeof(fifo_opt), "--fifo=%s/%%p.fifo", dir);
	snprintf(stats, sizeof(stats), "%s/stats.jsonl", dir);
	const char *argv[] = {command(),     "run",   fifo_opt, "--stats",           stats,
	                      "--gc-rounds", "1",     "--",     th_workload("frag"), "--threads",
	                      "2",           "--mib", "256",    "--rounds",          "2",
	                      "--wait",      NULL};
	const char *env[] = {env_lib(), NULL};
	struct th_proc p;
	th_spawn(&p, argv, env);
	char fifo[PATH_MAX];
	/* run execs: the FIFO is named after the pid that th_spawn started. */
	snprintf(fifo, sizeof(fifo), "%s/%d.fifo", dir, p.pid);

	for (int r = 1; r <= 2; r++) {
		cr_assert(th_read_line(&p, line, sizeof(line), TH_TIMEOUT_MS), "no round %d", r);
		cr_assert(th_wait_path(fifo, false, TH_TIMEOUT_MS), "no FIFO at %s", fifo);
		cr_assert_eq(ROUNDTRIM("round", "--wait", "--timeout", "60", pid_text(p.pid)), 0,
		             "%s", err);
		char expect[64];
		snprintf(expect, sizeof(expect), "%d frag: round %d: malloc_trim, RSS ", p.pid, r);
		expect_in(out, expect);
		double before, after, released;
		cr_assert_eq(sscanf(strstr(out, "RSS "), "RSS %lf -> %lf MiB, released %lf",
		                    &before, &after, &released),
		             3, "%s", out);
		/* frag keeps about 26 MiB live out of 256 MiB of churn: RSS must fall far. */
		cr_assert_lt(after * 2, before, "RSS did not fall: %s", out);
		cr_assert_gt(released, before / 2, "%s", out);

		cr_assert_eq(ROUNDTRIM("status", pid_text(p.pid)), 0, "%s", err);
		expect_in(out, "PROGRAM");
		expect_in(out, "frag");
		expect_in(out, "glibc");
		snprintf(expect, sizeof(expect), "malloc_trim@%d", r);
		expect_in(out, expect);
		expect_in(out, fifo);
		cr_assert_eq(ROUNDTRIM("status", "--json", pid_text(p.pid)), 0, "%s", err);
		snprintf(expect, sizeof(expect), "[{\"pid\":%d,", p.pid);
		expect_in(out, expect);
		snprintf(expect, sizeof(expect), "\"rounds\":%d,", r);
		expect_in(out, expect);
		th_write(&p, "next\n");
	}
	cr_assert_eq(th_count_lines(stats, "\"action\":\"malloc_trim\""), 2);
	th_close_stdin(&p);
	cr_assert(th_wait(&p, TH_TIMEOUT_MS));
	cr_assert(WIFEXITED(p.status) && WEXITSTATUS(p.status) == 0);
}

Test(command, run_keeps_pid_and_exit_status_and_preloads_first)
{
	const char *script = "echo \"$$ $LD_PRELOAD $ROUNDTRIM_GC_ROUNDS $ROUNDTRIM_ROLE\"; exit 7";
	const char *argv[] = {command(), "run", "--gc-rounds=4", "--role", "server",
	                      "sh",      "-c",  script,          NULL};
	char preload[PATH_MAX + 32];
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", th_jemalloc() ? th_jemalloc() : "");
	const char *env[] = {env_lib(), "ROUNDTRIM_DISABLE=1", preload, NULL};
	struct th_proc p;
	th_spawn(&p, argv, env);
	char line[2048], expect[2048];
	cr_assert(th_read_line(&p, line, sizeof(line), TH_TIMEOUT_MS));
	snprintf(expect, sizeof(expect), "%d %s%s%s 4 server", p.pid, th_lib(),
	         th_jemalloc() ? ":" : "", th_jemalloc() ? th_jemalloc() : "");
	cr_assert_str_eq(line, expect);
	cr_assert(th_wait(&p, TH_TIMEOUT_MS));
	cr_assert(WIFEXITED(p.status));
	cr_assert_eq(WEXITSTATUS(p.status), 7);
}

Test(command, run_exit_statuses_of_its_own)
{
	cr_assert_eq(ROUNDTRIM("run", "--bogus", "--", "true"), 125);
	expect_in(err, "unknown option --bogus");
	cr_assert_eq(ROUNDTRIM("run", "--gc-rounds", "x", "true"), 125);
	cr_assert_eq(ROUNDTRIM("run"), 125);
	expect_in(err, "missing COMMAND");
	cr_assert_eq(ROUNDTRIM("run", "--", "no-such-command-roundtrim"), 127);
	cr_assert_eq(ROUNDTRIM("run", "--", RT_SOURCE_DIR "/README.md"), 126);
	cr_assert_eq(ROUNDTRIM("run", "--help"), 0);
	expect_in(out, "Usage: roundtrim run");
	cr_assert_eq(
	    roundtrim_env("ROUNDTRIM_LIB=relative.so", (const char *const[]){"run", "true", NULL}),
	    125);
	expect_in(err, "not an absolute path");
}

Test(command, round_refuses_pid_without_library_and_leaves_it_unharmed)
{
	struct th_proc p;
	start_plain_probe(&p);
	char expect[128];
	snprintf(expect, sizeof(expect), "roundtrim: pid %d: does not carry libroundtrim.so",
	         p.pid);
	cr_assert_eq(ROUNDTRIM("round", pid_text(p.pid)), 1);
	expect_in(err, expect);
	cr_assert_eq(ROUNDTRIM("trim", "--wait", pid_text(p.pid)), 1);
	expect_in(err, expect);
	cr_assert_eq(ROUNDTRIM("status", pid_text(p.pid)), 1);
	expect_in(err, expect);
	expect_unharmed(&p);
	/* Now gone. */
	cr_assert_eq(ROUNDTRIM("round", pid_text(p.pid)), 1);
	expect_in(err, "no such process");
}

Test(command, round_refuses_inactive_library_but_serves_the_other_targets)
{
	struct th_probe good;
	char line[1024];
	const char *args[] = {"idle", NULL};
	th_start_probe(&good, args, NULL, line, sizeof(line));

	/* Carries the library, but inactive: no FIFO, and no signal may be sent to it. */
	char preload[PATH_MAX + 16];
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", th_lib());
	const char *argv[] = {th_workload("probe"), "idle", NULL};
	const char *env[] = {preload, "ROUNDTRIM_MATCH=nothing-matches", NULL};
	struct th_proc inactive;
	th_spawn(&inactive, argv, env);
	cr_assert(th_read_line(&inactive, line, sizeof(line), TH_TIMEOUT_MS));

	cr_assert_eq(ROUNDTRIM("round", "--wait", pid_text(inactive.pid), pid_text(good.proc.pid)),
	             1);
	expect_in(err, "has no FIFO");
	char expect[64];
	snprintf(expect, sizeof(expect), "%d probe: round 1: no action", good.proc.pid);
	expect_in(out, expect);
	th_wait_rounds(&good, 1, line, sizeof(line));
	expect_unharmed(&inactive);
	expect_unharmed(&good.proc);
}

Test(command, wait_is_bounded_when_the_target_cannot_answer)
{
	struct th_probe run;
	char line[1024];
	const char *args[] = {"idle", NULL};
	th_start_probe(&run, args, NULL, line, sizeof(line));
	cr_assert_eq(kill(run.proc.pid, SIGSTOP), 0);
	cr_assert_eq(ROUNDTRIM("round", "--wait", "--timeout", "0.3", pid_text(run.proc.pid)), 1);
	expect_in(err, "no answer within 0.3s");
	/* The line waited in the FIFO: once the process runs again, it counts it. */
	cr_assert_eq(kill(run.proc.pid, SIGCONT), 0);
	th_wait_rounds(&run, 1, line, sizeof(line));
	expect_unharmed(&run.proc);
}

Test(command, all_reaches_every_matching_process_and_no_other)
{
	const char *dir = th_tmpdir();
	/* Other test suites run probes with the library at the same time: a name of our own. */
	char name[64], link[PATH_MAX];
	snprintf(name, sizeof(name), "rtall%d", (int)getpid());
	snprintf(link, sizeof(link), "%s/%s", dir, name);
	cr_assert_eq(symlink(th_workload("probe"), link), 0);
	char preload[PATH_MAX + 16], fifo[PATH_MAX + 32], line[1024];
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", th_lib());
	snprintf(fifo, sizeof(fifo), "ROUNDTRIM_FIFO=%s/%%p.fifo", dir);
	const char *argv[] = {link, "idle", NULL};
	const char *env[] = {preload, fifo, "ROUNDTRIM_GC_ROUNDS=2", NULL};
	struct th_proc procs[3];
	char status[3][PATH_MAX];
	for (int i = 0; i < 3; i++) {
		th_spawn(&procs[i], argv, env);
		cr_assert(th_read_line(&procs[i], line, sizeof(line), TH_TIMEOUT_MS));
		snprintf(status[i], sizeof(status[i]), "%s/%d.status", dir, procs[i].pid);
		cr_assert(th_wait_path(status[i], false, TH_TIMEOUT_MS));
	}
	struct th_proc plain;
	start_plain_probe(&plain);

	for (int round = 1; round <= 2; round++) {
		cr_assert_eq(ROUNDTRIM("round", "--all", "--match", name, "--wait"), 0, "%s", err);
		for (int i = 0; i < 3; i++) {
			char expect[128];
			snprintf(expect, sizeof(expect), "%d %s: round %d: %s", procs[i].pid, name,
			         round,
			         round == 2 ? "malloc_trim"
			                    : "no action (acts every 2 rounds; next at round 2)");
			expect_in(out, expect);
			snprintf(expect, sizeof(expect), "\"rounds\":%d,", round);
			cr_assert(
			    th_wait_line(status[i], expect, line, sizeof(line), TH_TIMEOUT_MS));
		}
	}
	cr_assert_eq(ROUNDTRIM("status"), 0);
	for (int i = 0; i < 3; i++)
		expect_in(out, pid_text(procs[i].pid));
	cr_assert_null(strstr(out, pid_text(plain.pid)), "%s", out);
	cr_assert_eq(ROUNDTRIM("trim", "--all", "--match", "no-such-program-*"), 1);
	expect_in(err, "no process of yours carries libroundtrim.so");
	for (int i = 0; i < 3; i++)
		expect_unharmed(&procs[i]);
	expect_unharmed(&plain);
}

Test(command, does_not_count_itself_when_it_carries_the_library)
{
	const char *dir = th_tmpdir();
	char preload[PATH_MAX + 16], fifo[PATH_MAX + 32];
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", th_lib());
	snprintf(fifo, sizeof(fifo), "ROUNDTRIM_FIFO=%s/%%p.fifo", dir);
	/* The shell prints the pid that roundtrim then keeps. */
	const char *argv[] = {"/bin/sh", "-c", "echo $$; exec \"$0\" status --json", command(),
	                      NULL};
	const char *env[] = {env_lib(), preload, fifo, NULL};
	cr_assert_eq(th_run(argv, env, out, sizeof(out), err, sizeof(err)), 0, "%s", err);
	int pid = atoi(out);
	cr_assert_gt(pid, 0, "%s", out);
	char self[64];
	snprintf(self, sizeof(self), "\"pid\":%d,", pid);
	const char *json = strchr(out, '\n') + 1;
	cr_assert_eq(json[0], '[', "%s", out);
	cr_assert_null(strstr(json, self), "%s", out);
}

Test(command, usage_errors_exit_2_and_help_exits_0)
{
	cr_assert_eq(ROUNDTRIM("round"), 2);
	expect_in(err, "missing PID");
	cr_assert_eq(ROUNDTRIM("round", "12x"), 2);
	expect_in(err, "not a pid: '12x'");
	cr_assert_eq(ROUNDTRIM("round", "--all", "1"), 2);
	cr_assert_eq(ROUNDTRIM("trim", "--timeout", "soon", "1"), 2);
	cr_assert_eq(ROUNDTRIM("status", "--frobnicate"), 2);
	cr_assert_eq(ROUNDTRIM("frobnicate"), 2);
	expect_in(err, "unknown verb 'frobnicate'");
	cr_assert_eq(ROUNDTRIM("patch"), 2);
	cr_assert_eq(ROUNDTRIM("report"), 2);
	const char *verbs[] = {"run", "round", "trim", "status", "patch", "report"};
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		cr_assert_eq(ROUNDTRIM(verbs[i], "--help"), 0);
		char expect[64];
		snprintf(expect, sizeof(expect), "Usage: roundtrim %s", verbs[i]);
		expect_in(out, expect);
		expect_in(out, "Exit status");
	}
	cr_assert_eq(ROUNDTRIM("--version"), 0);
	expect_in(out, "roundtrim 0.1.0");
}

/* ---- patch ---- */

static void
copy_file(const char *from, const char *to, mode_t mode)
{
	static char buf[65536];
	ssize_t len = th_read_file(from, buf, sizeof(buf));
	cr_assert_gt(len, 0, "cannot read %s", from);
	FILE *f = fopen(to, "w");
	cr_assert_not_null(f, "cannot write %s", to);
	cr_assert_eq(fwrite(buf, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	cr_assert_eq(chmod(to, mode), 0);
}

/* A site: DIR/site/startup/sub_start.sh from the fixture, mode 0750; its path in launcher. */
static void
make_site(char *launcher, size_t size)
{
	char path[PATH_MAX - 32];
	snprintf(path, sizeof(path), "%s/site", th_tmpdir());
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/site/startup", th_tmpdir());
	mkdir(path, 0700);
	snprintf(launcher, size, "%s/sub_start.sh", path);
	copy_file(RT_SOURCE_DIR "/test/fixtures/sub_start.sh", launcher, 0750);
}

static mode_t
mode_of(const char *path)
{
	struct stat st;
	cr_assert_eq(stat(path, &st), 0, "%s", path);
	return st.st_mode & 07777;
}

Test(command, patch_is_idempotent_and_undo_restores_the_exact_bytes)
{
	static char original[65536], once[65536], twice[65536], undone[65536];
	char launcher[PATH_MAX], backup[PATH_MAX + 32];
	make_site(launcher, sizeof(launcher));
	snprintf(backup, sizeof(backup), "%s.roundtrim-orig", launcher);
	ssize_t len = th_read_file(launcher, original, sizeof(original));

	cr_assert_eq(ROUNDTRIM("patch", "--gc-rounds", "2", launcher), 0, "%s", err);
	th_read_file(launcher, once, sizeof(once));
	cr_assert_eq(strncmp(once, "#!/usr/bin/env bash\n# >>> roundtrim 0.1.0 >>>", 45), 0, "%s",
	             once);
	char preload[PATH_MAX + 64];
	snprintf(preload, sizeof(preload),
	         "\nexport LD_PRELOAD=\"%s${LD_PRELOAD:+:$LD_PRELOAD}\"\n", th_lib());
	expect_in(once, preload);
	expect_in(once, "\nexport ROUNDTRIM_GC_ROUNDS=2\n");
	expect_in(once, "\nexport ROUNDTRIM_MATCH='python*'\n");
	/* The original follows the block, untouched. */
	expect_in(once, strchr(original, '\n') + 1);
	cr_assert_eq(mode_of(launcher), 0750);
	cr_assert_eq(mode_of(backup), 0750);

	cr_assert_eq(ROUNDTRIM("patch", "--gc-rounds", "2", launcher), 0, "%s", err);
	expect_in(err, "already patched");
	th_read_file(launcher, twice, sizeof(twice));
	cr_assert_str_eq(twice, once);

	/* Other settings replace the block; the backup stays the original. */
	cr_assert_eq(ROUNDTRIM("patch", "--gc-rounds", "3", "--arena-max", "2", launcher), 0);
	th_read_file(launcher, twice, sizeof(twice));
	expect_in(twice, "\nexport ROUNDTRIM_GC_ROUNDS=3\nexport MALLOC_ARENA_MAX=2\n");
	cr_assert_null(strstr(twice, "ROUNDTRIM_GC_ROUNDS=2"));

	cr_assert_eq(ROUNDTRIM("patch", "--undo", launcher), 0, "%s", err);
	cr_assert_eq(th_read_file(launcher, undone, sizeof(undone)), len);
	cr_assert_eq(memcmp(undone, original, (size_t)len), 0);
	cr_assert_eq(mode_of(launcher), 0750);
	cr_assert_eq(access(backup, F_OK), -1, "backup left behind");
	cr_assert_eq(ROUNDTRIM("patch", "--undo", launcher), 0);
	expect_in(err, "not patched");
}

Test(command, undo_without_backup_removes_only_the_block)
{
	static char original[65536], undone[65536];
	char launcher[PATH_MAX], backup[PATH_MAX + 32];
	make_site(launcher, sizeof(launcher));
	snprintf(backup, sizeof(backup), "%s.roundtrim-orig", launcher);
	ssize_t len = th_read_file(launcher, original, sizeof(original));
	cr_assert_eq(ROUNDTRIM("patch", launcher), 0, "%s", err);
	cr_assert_eq(unlink(backup), 0);
	cr_assert_eq(ROUNDTRIM("patch", "--undo", launcher), 0, "%s", err);
	cr_assert_eq(th_read_file(launcher, undone, sizeof(undone)), len);
	cr_assert_eq(memcmp(undone, original, (size_t)len), 0);
	cr_assert_eq(mode_of(launcher), 0750);
}

/* Runs the launcher with --once, a fake python3 first on PATH that reports what it carries. */
static void
run_patched_site(const char *launcher, const char *extra_env, char *output, size_t size)
{
	char bin[PATH_MAX], python[PATH_MAX + 16], path_env[PATH_MAX * 2];
	snprintf(bin, sizeof(bin), "%s/bin", th_tmpdir());
	mkdir(bin, 0700);
	snprintf(python, sizeof(python), "%s/python3", bin);
	FILE *f = fopen(python, "w");
	cr_assert_not_null(f);
	fputs("#!/bin/sh\n"
	      "echo \"preload=$LD_PRELOAD\"\n"
	      "echo \"maps=$(grep -c /libroundtrim.so /proc/$$/maps)\"\n"
	      "echo \"match=$ROUNDTRIM_MATCH arena=$MALLOC_ARENA_MAX args=$*\"\n",
	      f);
	fclose(f);
	cr_assert_eq(chmod(python, 0755), 0);
	snprintf(path_env, sizeof(path_env), "PATH=%s:%s", bin, getenv("PATH"));
	const char *argv[] = {"/bin/bash", launcher, "--once", NULL};
	const char *env[] = {path_env, extra_env, NULL};
	cr_assert_eq(th_run(argv, env, output, size, err, sizeof(err)), 0, "%s", err);
}

Test(command, patched_launcher_starts_python_with_the_library_first)
{
	char launcher[PATH_MAX], expect[PATH_MAX * 2];
	make_site(launcher, sizeof(launcher));
	cr_assert_eq(ROUNDTRIM("patch", "--role", "client", "--arena-max", "2", launcher), 0, "%s",
	             err);

	run_patched_site(launcher, NULL, out, sizeof(out));
	snprintf(expect, sizeof(expect), "preload=%s\n", th_lib());
	expect_in(out, expect);
	expect_in(out, "maps=");
	cr_assert_null(strstr(out, "maps=0"), "%s", out);
	expect_in(out,
	          "match=python* arena=2 args=-u -m nvflare.private.fed.app.client.client_train");

	/* NVFlare's jemalloc block appends: the library stays first. */
	const char *je = th_jemalloc();
	cr_assert_not_null(je, "Debian's libjemalloc2 is not installed (scripts/deps.sh)");
	run_patched_site(launcher, "NVFLARE_ENABLE_JEMALLOC_PRELOAD=true", out, sizeof(out));
	snprintf(expect, sizeof(expect), "preload=%s:%s\n", th_lib(), je);
	expect_in(out, expect);
}

Test(command, patch_refuses_what_it_does_not_understand)
{
	const char *dir = th_tmpdir();
	struct {
		const char *name;
		const char *text;
		const char *why;
	} cases[] = {
	    {"notes.txt", "python3 -m nvflare.private.fed.app.client.client_train\n",
	     "not a sh or bash script"},
	    {"run.py", "#!/usr/bin/env python3\nimport nvflare\n", "not a sh or bash script"},
	    {"other.sh", "#!/bin/bash\nexec ./server\n", "starts no NVFlare process"},
	    {"hand.sh",
	     "#!/bin/bash\nexport LD_PRELOAD=/opt/libroundtrim.so\n"
	     "python3 -u -m nvflare.private.fed.app.client.client_train\n",
	     "already loads libroundtrim.so outside a roundtrim block"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char path[PATH_MAX], backup[PATH_MAX + 32], after[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, cases[i].name);
		FILE *f = fopen(path, "w");
		cr_assert_not_null(f);
		fputs(cases[i].text, f);
		fclose(f);
		cr_assert_eq(ROUNDTRIM("patch", path), 1, "%s", cases[i].name);
		expect_in(err, cases[i].why);
		th_read_file(path, after, sizeof(after));
		cr_assert_str_eq(after, cases[i].text);
		snprintf(backup, sizeof(backup), "%s.roundtrim-orig", path);
		cr_assert_eq(access(backup, F_OK), -1);
	}
	char binary[PATH_MAX];
	snprintf(binary, sizeof(binary), "%s/probe-copy", dir);
	copy_file(th_workload("probe"), binary, 0755);
	cr_assert_eq(ROUNDTRIM("patch", binary), 1);
	char missing[PATH_MAX];
	snprintf(missing, sizeof(missing), "%s/none.sh", dir);
	cr_assert_eq(ROUNDTRIM("patch", missing), 1);
	expect_in(err, "no such file");
	cr_assert_eq(ROUNDTRIM("patch", "--frob", missing), 2);
}

/* ---- report ---- */

/* The summary's row for pid: allocator, rounds, actions, then MiB figures. */
static void
expect_summary(const char *text, const char *pid, const char *allocator, int rounds, int actions,
               double released, double first, double last, double before, double after)
{
	char start[32];
	snprintf(start, sizeof(start), "\n%s ", pid);
	const char *row = strstr(text, start);
	cr_assert_not_null(row, "no row for pid %s in %s", pid, text);
	char alloc[32];
	int got_rounds, got_actions;
	double v[5];
	cr_assert_eq(sscanf(row + strlen(start), "%31s %d %d %lf %lf %lf %lf %lf", alloc,
	                    &got_rounds, &got_actions, &v[0], &v[1], &v[2], &v[3], &v[4]),
	             8, "%s", row);
	cr_assert_str_eq(alloc, allocator);
	cr_assert_eq(got_rounds, rounds);
	cr_assert_eq(got_actions, actions);
	double want[5] = {released, first, last, before, after};
	for (int i = 0; i < 5; i++)
		cr_assert_float_eq(v[i], want[i], 0.01, "column %d of %.80s", i + 4, row);
}

Test(command, report_writes_a_png_and_the_numbers)
{
	const char *dir = th_tmpdir();
	char stats[PATH_MAX], png[PATH_MAX], svg[PATH_MAX];
	snprintf(stats, sizeof(stats), "%s/stats.jsonl", dir);
	snprintf(png, sizeof(png), "%s/report.png", dir);
	snprintf(svg, sizeof(svg), "%s/report.svg", dir);
	FILE *f = fopen(stats, "w");
	cr_assert_not_null(f);
	/* pid 100: RSS before grows 10 MiB a round, after stays at 20 MiB; pid 200 never acts. */
	for (int r = 1; r <= 4; r++) {
		fprintf(f,
		        "{\"pid\":100,\"round\":%d,\"trigger\":\"fifo\",\"action\":\"malloc_trim\","
		        "\"rss_before_kib\":%d,\"rss_after_kib\":20480,\"live_kib\":10240,"
		        "\"released_kib\":%d,\"duration_us\":1000,\"allocator\":\"glibc\",\"note\":"
		        "\"\","
		        "\"unix_time\":1795397620.000000}\n",
		        r, (90 + 10 * r) * 1024, (70 + 10 * r) * 1024);
		fprintf(
		    f,
		    "{\"pid\":200,\"round\":%d,\"trigger\":\"signal\",\"action\":\"none\","
		    "\"rss_before_kib\":%d,\"rss_after_kib\":%d,\"live_kib\":0,"
		    "\"released_kib\":0,\"duration_us\":0,\"allocator\":\"jemalloc\",\"note\":\"\","
		    "\"unix_time\":1795397620.000000}\n",
		    r, 51200 + 5120 * r, 51200 + 5120 * r);
	}
	fclose(f);
	cr_assert_eq(ROUNDTRIM("report", "-o", png, stats), 0, "%s", err);
	/* Growth per round, before and after: 10 and 0 MiB for pid 100, 5 and 5 for pid 200. */
	expect_summary(out, "100", "glibc", 4, 4, 380.0, 20.0, 20.0, 10.0, 0.0);
	expect_summary(out, "200", "jemalloc", 4, 0, 0.0, 55.0, 70.0, 5.0, 5.0);
	expect_in(out, "2 process(es), 380.0 MiB released in total");
	char magic[16];
	cr_assert_geq(th_read_file(png, magic, sizeof(magic)), 8);
	cr_assert_eq(memcmp(magic, "\x89PNG\r\n\x1a\n", 8), 0, "not a PNG");

	cr_assert_eq(ROUNDTRIM("report", "--output", svg, stats), 0, "%s", err);
	char head[512];
	th_read_file(svg, head, sizeof(head));
	expect_in(head, "<svg");

	cr_assert_eq(ROUNDTRIM("report", "-o", "plot.gif", stats), 2);
	char empty[PATH_MAX];
	snprintf(empty, sizeof(empty), "%s/empty.jsonl", dir);
	fclose(fopen(empty, "w"));
	cr_assert_eq(ROUNDTRIM("report", empty), 1);
	expect_in(err, "no stats lines");
}

/* ---- lint ---- */

Test(command, shellcheck_and_man_lint_pass)
{
	/* From the source tree: the scripts' source= directives are relative to it. */
	const char *shellcheck[] = {"/bin/sh", "-c",
	                            "cd \"$0\" && shellcheck -x scripts/*.sh test/fixtures/*.sh",
	                            RT_SOURCE_DIR, NULL};
	cr_assert_eq(th_run(shellcheck, NULL, out, sizeof(out), err, sizeof(err)), 0, "%s%s", out,
	             err);
	const char *mandoc[] = {"/usr/bin/mandoc",
	                        "-T",
	                        "lint",
	                        "-W",
	                        "warning",
	                        RT_SOURCE_DIR "/man/roundtrim.1",
	                        NULL};
	cr_assert_eq(th_run(mandoc, NULL, out, sizeof(out), err, sizeof(err)), 0, "%s%s", out, err);
	cr_assert_str_eq(out, "");
}
