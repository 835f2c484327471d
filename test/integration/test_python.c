/* The Python steps with Debian's real /usr/bin/python3: they run on the interpreter's main
 * thread as a pending call, so that nothing of the library shows in the program (no thread in a
 * faulthandler dump, no Dummy thread after a finalizer), a disabled collector stays disabled, a
 * main thread inside a C call makes the round go on without them and nothing runs late, forks
 * from other threads complete; plus the CUDA cache step against a fake torch, rounds while the
 * interpreter exits, multiprocessing children, and ROUNDTRIM_PYTHON=0. */
#include "harness.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PYTHON "/usr/bin/python3"
#define PY_DIR RT_SOURCE_DIR "/test/workloads/py/"

TestSuite(python, .timeout = 240, .fini = th_cleanup);

/* A Python program under the library: FIFO, status and stats per pid in th_tmpdir(). */
struct py_run {
	struct th_proc proc;
	char env[8][PATH_MAX];
	char fifo[PATH_MAX];
	char stats[PATH_MAX];
};

/* Starts python3 SCRIPT ARG (ARG may be NULL) with the library and up to 3 more NAME=VALUE
 * (NULL-terminated), and reads its first line, which must be `first`. */
static void
py_start(struct py_run *run, const char *script, const char *arg, const char *const extra[],
         const char *first)
{
	const char *dir = th_tmpdir();
	const char *env[12];
	size_t n = 0;
	snprintf(run->env[0], PATH_MAX, "LD_PRELOAD=%s", th_lib());
	snprintf(run->env[1], PATH_MAX, "ROUNDTRIM_FIFO=%s/%%p.fifo", dir);
	snprintf(run->env[2], PATH_MAX, "ROUNDTRIM_STATS=%s/%%p.jsonl", dir);
	snprintf(run->env[3], PATH_MAX, "PYTHONPATH=%sfaketorch", PY_DIR);
	for (; n < 4; n++)
		env[n] = run->env[n];
	for (size_t i = 0; extra && extra[i] && n < 10; i++)
		env[n++] = extra[i];
	env[n] = NULL;
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s%s", PY_DIR, script);
	const char *argv[] = {PYTHON, path, arg, NULL};
	th_spawn(&run->proc, argv, env);
	snprintf(run->fifo, sizeof(run->fifo), "%s/%d.fifo", dir, run->proc.pid);
	snprintf(run->stats, sizeof(run->stats), "%s/%d.jsonl", dir, run->proc.pid);
	char line[256];
	cr_assert(th_read_line(&run->proc, line, sizeof(line), TH_TIMEOUT_MS), "%s: no first line",
	          script);
	cr_assert_str_eq(line, first);
	cr_assert(th_wait_path(run->fifo, false, TH_TIMEOUT_MS), "no FIFO %s", run->fifo);
}

/* One round through pid's FIFO; waits for its stats line and copies it into line. */
static void
py_round_pid(const char *dir, int pid, int round, char *line, size_t size)
{
	char fifo[PATH_MAX], stats[PATH_MAX], needle[32];
	snprintf(fifo, sizeof(fifo), "%s/%d.fifo", dir, pid);
	snprintf(stats, sizeof(stats), "%s/%d.jsonl", dir, pid);
	snprintf(needle, sizeof(needle), "\"round\":%d,", round);
	cr_assert(th_wait_path(fifo, false, TH_TIMEOUT_MS), "no FIFO %s", fifo);
	cr_assert(th_fifo_write(fifo, "round\n", 6), "FIFO %s not served", fifo);
	cr_assert(th_wait_line(stats, needle, line, size, TH_TIMEOUT_MS),
	          "pid %d: round %d never reported", pid, round);
}

static void
py_round(struct py_run *run, int round, char *line, size_t size)
{
	py_round_pid(th_tmpdir(), run->proc.pid, round, line, size);
}

/* Writes a line to the program and returns its answer. */
static void
py_ask(struct py_run *run, char *answer, size_t size)
{
	th_write(&run->proc, "?\n");
	cr_assert(th_read_line(&run->proc, answer, size, TH_TIMEOUT_MS), "no answer");
}

/* Ends the program through EOF on stdin: it must exit 0 with nothing Python-ish on stderr. */
static void
py_finish(struct py_run *run)
{
	th_close_stdin(&run->proc);
	cr_assert(th_wait(&run->proc, TH_TIMEOUT_MS), "python did not exit");
	char err[8192];
	th_read_stderr(&run->proc, err, sizeof(err));
	cr_assert(WIFEXITED(run->proc.status) && WEXITSTATUS(run->proc.status) == 0,
	          "status %d, stderr: %s", run->proc.status, err);
	cr_assert_null(strstr(err, "Traceback"), "%s", err);
	cr_assert_null(strstr(err, "Fatal Python error"), "%s", err);
}

Test(python, cycles_collected_on_a_round_and_not_before)
{
	struct py_run run;
	char line[1024], answer[256];
	const char *arg = "--gc-enabled";
	py_start(&run, "gc_cycles.py", arg, NULL, "ready");
	py_ask(&run, answer, sizeof(answer));
	cr_assert_str_eq(answer, "alive=100 gc=True", "collected before any round");

	py_round(&run, 1, line, sizeof(line));
	th_expect_in(line, "\"python\":\"collected\"");
	th_expect_in(line, "\"cuda\":\"off\"");
	cr_assert_geq(th_field(line, "gc_collected"), 200, "%s", line);
	py_ask(&run, answer, sizeof(answer));
	cr_assert_str_eq(answer, "alive=0 gc=True");
	py_finish(&run);
}

/* The program's gc.disable() stands: the round neither collects nor enables the collector,
 * and says why. */
Test(python, disabled_collector_stays_disabled)
{
	struct py_run run;
	char line[1024], answer[256];
	py_start(&run, "gc_cycles.py", NULL, NULL, "ready");
	py_round(&run, 1, line, sizeof(line));
	th_expect_in(line, "\"python\":\"skipped-gc-disabled\"");
	cr_assert_eq(th_field(line, "gc_collected"), -1, "%s", line);
	/* The CUDA step is not the collector's: it still ran (and found the option off). */
	th_expect_in(line, "\"cuda\":\"off\"");
	th_expect_in(line, "\"action\":\"glibc_release\"");
	py_ask(&run, answer, sizeof(answer));
	cr_assert_str_eq(answer, "alive=100 gc=False");
	py_round(&run, 2, line, sizeof(line));
	th_expect_in(line, "\"python\":\"skipped-gc-disabled\"");
	py_ask(&run, answer, sizeof(answer));
	cr_assert_str_eq(answer, "alive=100 gc=False");
	py_finish(&run);
}

Test(python, profile_line_says_what_was_done)
{
	struct py_run run;
	char line[1024], err[8192];
	const char *extra[] = {"ROUNDTRIM_PROFILE=1", NULL};
	py_start(&run, "gc_cycles.py", "--gc-enabled", extra, "ready");
	py_round(&run, 1, line, sizeof(line));
	cr_assert(th_wait_stderr(&run.proc, "python=collected", err, sizeof(err), TH_TIMEOUT_MS),
	          "%s", err);
	char *at = strstr(err, "[RSS] roundtrim");
	cr_assert_not_null(at, "%s", err);
	th_expect_in(at, " python=collected gc_collected=");
	th_expect_in(at, " cuda=off");
	py_finish(&run);
}

Test(python, off_with_roundtrim_python_0)
{
	struct py_run run;
	char line[1024], answer[256];
	const char *extra[] = {"ROUNDTRIM_PYTHON=0", NULL};
	py_start(&run, "gc_cycles.py", NULL, extra, "ready");
	py_round(&run, 1, line, sizeof(line));
	th_expect_in(line, "\"python\":\"off\"");
	cr_assert_eq(th_field(line, "gc_collected"), -1, "%s", line);
	th_expect_in(line, "\"action\":\"glibc_release\"");
	py_ask(&run, answer, sizeof(answer));
	cr_assert_str_eq(answer, "alive=100 gc=False");
	py_finish(&run);
}

Test(python, not_python_reports_no_python_fields)
{
	struct th_probe run;
	char line[1024];
	const char *args[] = {"idle", NULL};
	th_start_probe(&run, args, "ROUNDTRIM_PROFILE=1", line, sizeof(line));
	cr_assert(th_fifo_write(run.fifo, "round\n", 6));
	char err[8192];
	/* The line is one write(2): once its start is there, all of it is. */
	cr_assert(th_wait_stderr(&run.proc, "[RSS] roundtrim", err, sizeof(err), TH_TIMEOUT_MS));
	cr_assert_null(strstr(err, "python="), "%s", err);
	th_kill(&run.proc);
}

/* CUDA: empty_cache() is called only with the option on and CUDA initialised; torch is never
 * imported for the program, and nothing is left in __main__. */
static void
cuda_case(const char *option, const char *initialized, const char *arg, const char *word,
          bool called)
{
	struct py_run run;
	char line[1024], answer[256], log_env[PATH_MAX + 16], log[PATH_MAX], init_env[64], buf[256];
	snprintf(log, sizeof(log), "%s/torch.log", th_tmpdir());
	snprintf(log_env, sizeof(log_env), "FAKETORCH_LOG=%s", log);
	snprintf(init_env, sizeof(init_env), "FAKETORCH_CUDA_INITIALIZED=%s", initialized);
	const char *extra[] = {log_env, init_env, option, NULL};
	py_start(&run, "torch_user.py", arg, extra, "ready");
	py_round(&run, 1, line, sizeof(line));
	th_expect_in(line, "\"python\":\"collected\"");
	char expect[64];
	snprintf(expect, sizeof(expect), "\"cuda\":\"%s\"", word);
	th_expect_in(line, expect);
	/* The round's steps ended before its stats line: the log is complete now. */
	ssize_t n = th_read_file(log, buf, sizeof(buf));
	bool emptied = n > 0 && strstr(buf, "empty_cache") != NULL;
	cr_assert_eq(emptied, called, "log: %s", n > 0 ? buf : "(none)");
	py_ask(&run, answer, sizeof(answer));
	cr_assert_str_eq(answer, arg ? "torch=False main=-" : "torch=True main=-");
	py_finish(&run);
}

Test(python, cuda_emptied_when_on_and_initialized)
{
	cuda_case("NVFLARE_CUDA_EMPTY_CACHE=true", "1", NULL, "emptied", true);
}

Test(python, cuda_twin_variable)
{
	cuda_case("ROUNDTRIM_CUDA_EMPTY_CACHE=TRUE", "1", NULL, "emptied", true);
}

Test(python, cuda_off_by_default)
{
	cuda_case("ROUNDTRIM_PROFILE=0", "1", NULL, "off", false);
}

Test(python, cuda_off_unless_true)
{
	cuda_case("NVFLARE_CUDA_EMPTY_CACHE=1", "1", NULL, "off", false);
}

Test(python, cuda_not_initialized)
{
	cuda_case("NVFLARE_CUDA_EMPTY_CACHE=true", "0", NULL, "not-initialized", false);
}

Test(python, cuda_never_imports_torch)
{
	cuda_case("NVFLARE_CUDA_EMPTY_CACHE=true", "1", "--no-torch", "no-torch", false);
}

Test(python, cuda_error_is_swallowed)
{
	cuda_case("NVFLARE_CUDA_EMPTY_CACHE=true", "raise", NULL, "error", false);
}

/* The main thread sits in one C call: the round goes on without the Python steps once the
 * bound has passed, a second round re-arms the same request instead of queueing another, and
 * when the call returns the withdrawn request runs as nothing (the cycles are still there);
 * the next round collects them. */
static void
blocked_case(const char *mode)
{
	struct py_run run;
	char line[1024], answer[256];
	py_start(&run, "blocked.py", mode, NULL, "ready");
	for (int r = 1; r <= 2; r++) {
		py_round(&run, r, line, sizeof(line));
		th_expect_in(line, "\"python\":\"skipped-main-busy\"");
		th_expect_in(line, "\"action\":\"glibc_release\"");
		th_expect_in(line, "\"cuda\":\"skipped\"");
		cr_assert_eq(th_field(line, "gc_collected"), -1, "%s", line);
	}
	th_write(&run.proc, "x");
	/* The withdrawn call runs at the main thread's first safe point after the C call. */
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_str_eq(line, "released alive=100", "a withdrawn request ran late");
	py_ask(&run, answer, sizeof(answer));
	cr_assert_str_eq(answer, "alive=100", "a withdrawn request ran late");
	py_round(&run, 3, line, sizeof(line));
	th_expect_in(line, "\"python\":\"collected\"");
	cr_assert_geq(th_field(line, "gc_collected"), 200, "%s", line);
	py_ask(&run, answer, sizeof(answer));
	cr_assert_str_eq(answer, "alive=0");
	py_finish(&run);
}

Test(python, main_thread_in_a_read_skips_the_steps)
{
	blocked_case("read");
}

Test(python, main_thread_holding_the_gil_skips_the_steps)
{
	blocked_case("hold");
}

/* Nothing of the library is a thread of the program's: not in a faulthandler dump of all
 * threads, nor in sys._current_frames() or threading.enumerate(), after rounds ran. */
Test(python, no_thread_of_ours_after_a_round)
{
	struct py_run run;
	char line[1024], answer[256], dump[PATH_MAX];
	snprintf(dump, sizeof(dump), "%s/dump.txt", th_tmpdir());
	py_start(&run, "visible.py", dump, NULL, "ready");
	py_ask(&run, answer, sizeof(answer));
	cr_assert_str_eq(answer, "dump=1 frames=1 enumerate=1 dummies=0 finalized=0 by=-");
	for (int r = 1; r <= 3; r++) {
		py_round(&run, r, line, sizeof(line));
		th_expect_in(line, "\"python\":\"collected\"");
		py_ask(&run, answer, sizeof(answer));
		th_expect_in(answer, "dump=1 frames=1 enumerate=1 dummies=0 ");
	}
	py_finish(&run);
}

/* The finalizers a round's collection runs run on the main thread, as under the program's own
 * gc.collect(): threading.current_thread() there makes no Dummy thread. */
Test(python, finalizers_run_on_the_main_thread)
{
	struct py_run run;
	char line[1024], answer[256], dump[PATH_MAX];
	snprintf(dump, sizeof(dump), "%s/dump.txt", th_tmpdir());
	py_start(&run, "visible.py", dump, NULL, "ready");
	py_round(&run, 1, line, sizeof(line));
	th_expect_in(line, "\"python\":\"collected\"");
	cr_assert_geq(th_field(line, "gc_collected"), 100, "%s", line);
	py_ask(&run, answer, sizeof(answer));
	cr_assert_str_eq(answer,
	                 "dump=1 frames=1 enumerate=1 dummies=0 finalized=100 by=MainThread");
	py_finish(&run);
}

static int64_t
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One storm step: a round by signal and one by FIFO into the program. */
static void
storm(struct py_run *run)
{
	kill(run->proc.pid, SIGRTMIN + 8);
	th_fifo_write(run->fifo, "round\n", 6);
}

/* A thread other than the main one forks 200 times while rounds storm into the parent by
 * signal and FIFO: every child (which inherits whatever request of ours CPython's queue held,
 * and runs bytecode) exits 0, and the parent's rounds collect. */
Test(python, forks_from_a_thread_during_rounds)
{
	signal(SIGPIPE, SIG_IGN);
	struct py_run run;
	char line[1024];
	const char *signal_on[] = {"ROUNDTRIM_SIGNAL=RTMIN+8", NULL};
	py_start(&run, "fork_storm.py", "200", signal_on, "ready");
	th_write(&run.proc, "go\n");
	int64_t deadline = now_ms() + 4 * TH_TIMEOUT_MS;
	bool answered = false;
	while (!answered && now_ms() < deadline) {
		storm(&run);
		answered = th_read_line(&run.proc, line, sizeof(line), 1);
	}
	cr_assert(answered, "the forks did not end");
	cr_assert_str_eq(line, "forks=200 ok=200");
	/* Rounds into the parent collect its cycles (its threshold is 0: nothing else does). */
	bool collected = false;
	while (!collected && now_ms() < deadline) {
		storm(&run);
		th_write(&run.proc, "?\n");
		cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS), "no answer");
		collected = strcmp(line, "alive=0") == 0;
	}
	cr_assert(collected, "the parent's rounds never collected: %s", line);
	py_finish(&run);
}

/* Rounds by signal and FIFO while the interpreter finalises, with daemon threads running:
 * never a hang, a crash or a traceback. */
Test(python, round_storm_while_exiting)
{
	/* A FIFO write can race with the reader's exit; that is EPIPE here, not a test crash. */
	signal(SIGPIPE, SIG_IGN);
	for (int i = 0; i < 40; i++) {
		struct py_run run;
		char line[1024];
		const char *signal_on[] = {"ROUNDTRIM_SIGNAL=RTMIN+8", NULL};
		py_start(&run, "exit_now.py", NULL, signal_on, "ready");
		/* One round first: then a request of ours may sit in CPython's queue while the
		 * interpreter finalises. */
		py_round(&run, 1, line, sizeof(line));
		th_expect_in(line, "\"python\":\"collected\"");
		th_close_stdin(&run.proc);
		int sent = 0;
		for (;;) {
			int status;
			pid_t done = waitpid(run.proc.pid, &status, WNOHANG);
			if (done == run.proc.pid) {
				run.proc.status = status;
				run.proc.reaped = true;
				break;
			}
			cr_assert_eq(done, 0, "waitpid: %s", strerror(errno));
			/* Until it is reaped the pid is ours: a zombie ignores the signal. */
			if (sent < 20000) {
				kill(run.proc.pid, SIGRTMIN + 8);
				th_fifo_write(run.fifo, "round\n", 6);
				sent++;
			} else {
				cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS), "run %d hung", i);
				break;
			}
		}
		py_finish(&run);
	}
}

/* multiprocessing's three start methods: every child carries the library and a worker of its
 * own (its FIFO, its Python steps), and all run to completion. */
static void
mp_case(const char *method)
{
	struct py_run run;
	char line[1024];
	py_start(&run, "mp_children.py", method, NULL, "parent");
	/* A round in the parent first, so that a fork child inherits the parent's state of the
	 * hand-off. */
	py_round(&run, 1, line, sizeof(line));
	th_expect_in(line, "\"python\":\"collected\"");
	th_write(&run.proc, "go\n");
	int pids[2];
	for (int i = 0; i < 2; i++) {
		cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS), "no child");
		cr_assert_eq(sscanf(line, "child %d", &pids[i]), 1, "%s", line);
	}
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_str_eq(line, "ready");
	for (int i = 0; i < 2; i++) {
		py_round_pid(th_tmpdir(), pids[i], 1, line, sizeof(line));
		th_expect_in(line, "\"python\":\"collected\"");
	}
	py_round(&run, 2, line, sizeof(line));
	th_expect_in(line, "\"python\":\"collected\"");
	th_write(&run.proc, "end\n");
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_str_eq(line, "done 0 0");
	py_finish(&run);
}

Test(python, multiprocessing_fork)
{
	mp_case("fork");
}

Test(python, multiprocessing_forkserver)
{
	mp_case("forkserver");
}

Test(python, multiprocessing_spawn)
{
	mp_case("spawn");
}
