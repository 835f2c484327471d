/* The Python steps with Debian's real /usr/bin/python3: cyclic garbage collected on a round and
 * not before, the CUDA cache step against a fake torch, a GIL held by a C call, rounds while
 * the interpreter exits, multiprocessing children, and ROUNDTRIM_PYTHON=0. */
#include "harness.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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

static void
expect_in(const char *line, const char *needle)
{
	cr_assert_not_null(strstr(line, needle), "\"%s\" lacks %s", line, needle);
}

Test(python, cycles_collected_on_a_round_and_not_before)
{
	struct py_run run;
	char line[1024], answer[256];
	py_start(&run, "gc_cycles.py", NULL, NULL, "ready");
	py_ask(&run, answer, sizeof(answer));
	cr_assert_str_eq(answer, "alive=100 gc=False", "collected before any round");

	py_round(&run, 1, line, sizeof(line));
	expect_in(line, "\"python\":\"collected\"");
	expect_in(line, "\"cuda\":\"off\"");
	cr_assert_geq(th_field(line, "gc_collected"), 200, "%s", line);
	/* Collected, and the program's own setting is back. */
	py_ask(&run, answer, sizeof(answer));
	cr_assert_str_eq(answer, "alive=0 gc=False");
	py_finish(&run);
}

Test(python, profile_line_says_what_was_done)
{
	struct py_run run;
	char line[1024], err[8192];
	const char *extra[] = {"ROUNDTRIM_PROFILE=1", NULL};
	py_start(&run, "gc_cycles.py", NULL, extra, "ready");
	py_round(&run, 1, line, sizeof(line));
	cr_assert(th_wait_stderr(&run.proc, "python=collected", err, sizeof(err), TH_TIMEOUT_MS),
	          "%s", err);
	char *at = strstr(err, "[RSS] roundtrim");
	cr_assert_not_null(at, "%s", err);
	expect_in(at, " python=collected gc_collected=");
	expect_in(at, " cuda=off");
	py_finish(&run);
}

Test(python, off_with_roundtrim_python_0)
{
	struct py_run run;
	char line[1024], answer[256];
	const char *extra[] = {"ROUNDTRIM_PYTHON=0", NULL};
	py_start(&run, "gc_cycles.py", NULL, extra, "ready");
	py_round(&run, 1, line, sizeof(line));
	expect_in(line, "\"python\":\"off\"");
	cr_assert_eq(th_field(line, "gc_collected"), -1, "%s", line);
	expect_in(line, "\"action\":\"malloc_trim\"");
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
	expect_in(line, "\"python\":\"collected\"");
	char expect[64];
	snprintf(expect, sizeof(expect), "\"cuda\":\"%s\"", word);
	expect_in(line, expect);
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

/* The only thread holds the GIL in a C call: the round goes on without the Python steps, a
 * second round does not queue behind the first, and once the call returns Python steps run
 * again. */
Test(python, gil_held_by_a_c_call_does_not_hang_rounds)
{
	struct py_run run;
	char line[1024];
	py_start(&run, "gil_hog.py", NULL, NULL, "ready");
	py_round(&run, 1, line, sizeof(line));
	expect_in(line, "\"python\":\"skipped-gil-busy\"");
	expect_in(line, "\"action\":\"malloc_trim\"");
	cr_assert_eq(th_field(line, "gc_collected"), -1, "%s", line);
	py_round(&run, 2, line, sizeof(line));
	expect_in(line, "\"python\":\"skipped-busy\"");
	expect_in(line, "\"action\":\"malloc_trim\"");

	th_write(&run.proc, "x");
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_str_eq(line, "released");
	/* The withdrawn request is dropped once the Python thread gets the GIL; rounds until then
	 * say busy. Bounded: each round waits at most for the GIL's deadline. */
	bool collected = false;
	for (int r = 3; r < 3 + 50 && !collected; r++) {
		py_round(&run, r, line, sizeof(line));
		collected = strstr(line, "\"python\":\"collected\"") != NULL;
		if (!collected)
			expect_in(line, "\"python\":\"skipped-busy\"");
	}
	cr_assert(collected, "Python steps never came back: %s", line);
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
		/* One round first: our Python thread then exists and keeps a thread state, the
		 * case CPython's finalisation must end cleanly. */
		py_round(&run, 1, line, sizeof(line));
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
	/* A round in the parent first, so that a fork child inherits a started Python thread. */
	py_round(&run, 1, line, sizeof(line));
	expect_in(line, "\"python\":\"collected\"");
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
		expect_in(line, "\"python\":\"collected\"");
	}
	py_round(&run, 2, line, sizeof(line));
	expect_in(line, "\"python\":\"collected\"");
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
