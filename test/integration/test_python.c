/* The Python steps with Debian's real /usr/bin/python3: the allocator's action never waits for
 * them; they run on the interpreter's main thread as a pending call, so that nothing of the
 * library shows in the program (no thread in a faulthandler dump, no Dummy thread after a
 * finalizer), and report in a record of their own ("trigger":"python") with a release of what
 * they freed; a main thread inside a C call gets them when the call returns, with every round
 * that came meanwhile; the collection is gc.collect()'s, enabled collector or not, leaving it as
 * it was; the Python module runs them in the caller's thread, even while the main thread waits;
 * forks from other threads complete; plus the CUDA cache step against a fake torch, rounds while
 * the interpreter exits, multiprocessing children, fork workers that share their parent's heap
 * (no rounds and no collection of their own), and ROUNDTRIM_PYTHON=0. */
#include "harness.h"
#include "rt_python_rules.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PYTHON "/usr/bin/python3"
#define PY_DIR RT_SOURCE_DIR "/test/workloads/py/"
/* For a workload that must block only once the library's Python thread is there (its main
 * thread, the worker and that thread: librarythread.py). */
#define PY_AWAIT_THREAD "PY_AWAIT_TASKS=3"

TestSuite(python, .timeout = 240, .fini = th_cleanup);

/* A Python program under the library: FIFO, status and stats per pid in th_tmpdir(). */
struct py_run {
	struct th_proc proc;
	char env[8][PATH_MAX];
	char fifo[PATH_MAX];
	char stats[PATH_MAX];
};

/* Starts python3 SCRIPT ARG1 ARG2 (NULL ends them) with the library, PYTHONPATH and up to 12
 * more NAME=VALUE (NULL-terminated), and reads its first line, which must be `first`. */
static void
py_spawn(struct py_run *run, const char *script, const char *arg1, const char *arg2,
         const char *pythonpath, const char *const extra[], const char *first)
{
	const char *dir = th_tmpdir();
	const char *env[17];
	size_t n = 0;
	snprintf(run->env[0], PATH_MAX, "LD_PRELOAD=%s", th_lib());
	snprintf(run->env[1], PATH_MAX, "ROUNDTRIM_FIFO=%s/%%p.fifo", dir);
	snprintf(run->env[2], PATH_MAX, "ROUNDTRIM_STATS=%s/%%p.jsonl", dir);
	snprintf(run->env[3], PATH_MAX, "PYTHONPATH=%s", pythonpath);
	for (; n < 4; n++)
		env[n] = run->env[n];
	for (size_t i = 0; extra && extra[i]; i++) {
		cr_assert_lt(n, sizeof(env) / sizeof(env[0]) - 1, "more than 12 extra variables");
		env[n++] = extra[i];
	}
	env[n] = NULL;
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s%s", PY_DIR, script);
	const char *argv[] = {PYTHON, path, arg1, arg2, NULL};
	th_spawn(&run->proc, argv, env);
	snprintf(run->fifo, sizeof(run->fifo), "%s/%d.fifo", dir, run->proc.pid);
	snprintf(run->stats, sizeof(run->stats), "%s/%d.jsonl", dir, run->proc.pid);
	char line[256];
	cr_assert(th_read_line(&run->proc, line, sizeof(line), TH_TIMEOUT_MS), "%s: no first line",
	          script);
	cr_assert_str_eq(line, first);
	cr_assert(th_wait_path(run->fifo, false, TH_TIMEOUT_MS), "no FIFO %s", run->fifo);
}

/* py_spawn of SCRIPT ARG (ARG may be NULL), with the fake torch and roundtrim's module. */
static void
py_start(struct py_run *run, const char *script, const char *arg, const char *const extra[],
         const char *first)
{
	char pythonpath[PATH_MAX];
	snprintf(pythonpath, sizeof(pythonpath), "%sfaketorch:%s/scripts/python", PY_DIR,
	         RT_SOURCE_DIR);
	py_spawn(run, script, arg, NULL, pythonpath, extra, first);
}

/* py_spawn of SCRIPT ARG1 ARG2, with the workloads' directory alone. */
static void
py_start_args(struct py_run *run, const char *script, const char *arg1, const char *arg2,
              const char *const extra[], const char *first)
{
	py_spawn(run, script, arg1, arg2, PY_DIR, extra, first);
}

/* Waits until pid's main thread waits in the kernel, in the same call at two looks 10 ms apart:
 * the C call its last line announced ("ready" is written before it). A round sent sooner can
 * find the main thread still in bytecode on its way there, and it takes the steps itself
 * within the grace; a brief call on the way (a write, rt_sigaction) is over by the second look. */
static void
py_main_waits(pid_t pid)
{
	char path[64], now[512], before[512] = "";
	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", pid, pid);
	for (int waited = 0; waited < TH_TIMEOUT_MS; waited += 10) {
		ssize_t n = th_read_file(path, now, sizeof(now));
		bool waits = n > 0 && strncmp(now, "running", 7) != 0;
		if (waits && strcmp(now, before) == 0)
			return;
		snprintf(before, sizeof(before), "%s", waits ? now : "");
		nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
	}
	cr_assert_fail("pid %d: its main thread never waited in the kernel", pid);
}

/* Waits for the first stats line of pid's round (its own record) and copies it into line. */
static void
py_record_pid(const char *dir, int pid, int round, char *line, size_t size)
{
	char stats[PATH_MAX], needle[32];
	snprintf(stats, sizeof(stats), "%s/%d.jsonl", dir, pid);
	snprintf(needle, sizeof(needle), "\"round\":%d,", round);
	cr_assert(th_wait_line(stats, needle, line, size, TH_TIMEOUT_MS),
	          "pid %d: round %d never reported", pid, round);
}

/* One round through pid's FIFO; waits for its stats line and copies it into line. */
static void
py_round_pid(const char *dir, int pid, int round, char *line, size_t size)
{
	char fifo[PATH_MAX];
	snprintf(fifo, sizeof(fifo), "%s/%d.fifo", dir, pid);
	cr_assert(th_wait_path(fifo, false, TH_TIMEOUT_MS), "no FIFO %s", fifo);
	cr_assert(th_fifo_write(fifo, "round\n", 6), "FIFO %s not served", fifo);
	py_record_pid(dir, pid, round, line, size);
}

static void
py_round(struct py_run *run, int round, char *line, size_t size)
{
	py_round_pid(th_tmpdir(), run->proc.pid, round, line, size);
}

/* Waits for the record of the Python steps that served `round` of pid (they ran after the
 * round's own record) and copies it into line. */
static void
py_steps_pid(const char *dir, int pid, int round, char *line, size_t size)
{
	char stats[PATH_MAX], needle[64];
	snprintf(stats, sizeof(stats), "%s/%d.jsonl", dir, pid);
	snprintf(needle, sizeof(needle), "\"round\":%d,\"trigger\":\"python\"", round);
	cr_assert(th_wait_line(stats, needle, line, size, TH_TIMEOUT_MS),
	          "pid %d: no record of the steps of round %d", pid, round);
}

/* A round through the FIFO: its own record hands the steps to the main thread and releases at
 * once; line gets the record of the steps, which follows. */
static void
py_round_and_steps(struct py_run *run, int round, char *line, size_t size)
{
	py_round(run, round, line, size);
	th_expect_in(line, "\"python\":\"pending\"");
	th_expect_release(line);
	py_steps_pid(th_tmpdir(), run->proc.pid, round, line, size);
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

	py_round_and_steps(&run, 1, line, sizeof(line));
	th_expect_in(line, "\"python\":\"collected\"");
	th_expect_in(line, "\"cuda\":\"off\"");
	cr_assert_geq(th_field(line, "gc_collected"), 200, "%s", line);
	/* They freed something: a release of its own returned it. */
	th_expect_release(line);
	py_ask(&run, answer, sizeof(answer));
	cr_assert_str_eq(answer, "alive=0 gc=True");
	py_finish(&run);
}

/* NVFlare's gc.collect() collects whether or not the collector is enabled: so does the round,
 * through the program's own gc module, and the collector stays disabled. */
Test(python, disabled_collector_is_collected_and_stays_disabled)
{
	struct py_run run;
	char line[1024], answer[256];
	py_start(&run, "gc_cycles.py", NULL, NULL, "ready");
	py_ask(&run, answer, sizeof(answer));
	cr_assert_str_eq(answer, "alive=100 gc=False");
	py_round_and_steps(&run, 1, line, sizeof(line));
	th_expect_in(line, "\"python\":\"collected\"");
	cr_assert_geq(th_field(line, "gc_collected"), 200, "%s", line);
	th_expect_in(line, "\"cuda\":\"off\"");
	py_ask(&run, answer, sizeof(answer));
	cr_assert_str_eq(answer, "alive=0 gc=False");
	py_round_and_steps(&run, 2, line, sizeof(line));
	th_expect_in(line, "\"python\":\"collected\"");
	py_ask(&run, answer, sizeof(answer));
	cr_assert_str_eq(answer, "alive=0 gc=False");
	py_finish(&run);
}

Test(python, profile_line_says_what_was_done)
{
	struct py_run run;
	char line[1024], err[8192];
	const char *extra[] = {"ROUNDTRIM_PROFILE=1", NULL};
	py_start(&run, "gc_cycles.py", "--gc-enabled", extra, "ready");
	py_round_and_steps(&run, 1, line, sizeof(line));
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
	th_expect_release(line);
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
cuda_case_with(const char *option, const char *initialized, const char *arg, const char *word,
               bool called, const char *more)
{
	struct py_run run;
	char line[1024], answer[256], log_env[PATH_MAX + 16], log[PATH_MAX], init_env[64], buf[256];
	snprintf(log, sizeof(log), "%s/torch.log", th_tmpdir());
	snprintf(log_env, sizeof(log_env), "FAKETORCH_LOG=%s", log);
	snprintf(init_env, sizeof(init_env), "FAKETORCH_CUDA_INITIALIZED=%s", initialized);
	const char *extra[] = {log_env, init_env, option, more, NULL};
	py_start(&run, "torch_user.py", arg, extra, "ready");
	py_round_and_steps(&run, 1, line, sizeof(line));
	th_expect_in(line, "\"python\":\"collected\"");
	char expect[64];
	snprintf(expect, sizeof(expect), "\"cuda\":\"%s\"", word);
	th_expect_in(line, expect);
	/* The steps ended before their record: the log is complete now. */
	ssize_t n = th_read_file(log, buf, sizeof(buf));
	bool emptied = n > 0 && strstr(buf, "empty_cache") != NULL;
	cr_assert_eq(emptied, called, "log: %s", n > 0 ? buf : "(none)");
	py_ask(&run, answer, sizeof(answer));
	cr_assert_str_eq(answer, arg ? "torch=False main=-" : "torch=True main=-");
	py_finish(&run);
}

static void
cuda_case(const char *option, const char *initialized, const char *arg, const char *word,
          bool called)
{
	cuda_case_with(option, initialized, arg, word, called, NULL);
}

/* The pending call runs between two bytecodes of a `with torch.cuda.graph()` block: freeing
 * there would invalidate the program's capture (its capture_end would raise). */
Test(python, cuda_step_leaves_a_graph_capture_on_the_main_thread_alone)
{
	cuda_case_with("NVFLARE_CUDA_EMPTY_CACHE=true", "1", NULL, "capturing", false,
	               "FAKETORCH_CAPTURING=1");
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

/* The main thread sits in one C call (MODE of blocked.py): each round releases at once and
 * hands the steps over, a second round joins the first's request instead of queueing another,
 * and when the call returns the steps run, once, for both: their record names the last round
 * and a release returns what they freed. */
static void
blocked_case(const char *mode, const char *const extra[])
{
	struct py_run run;
	char line[1024], answer[256];
	py_start(&run, "blocked.py", mode, extra, "ready");
	py_main_waits(run.proc.pid);
	for (int r = 1; r <= 2; r++) {
		py_round(&run, r, line, sizeof(line));
		th_expect_in(line, "\"python\":\"pending\"");
		th_expect_release(line);
		th_expect_in(line, "\"cuda\":\"skipped\"");
		cr_assert_eq(th_field(line, "gc_collected"), -1, "%s", line);
	}
	th_write(&run.proc, "x");
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_eq(strncmp(line, "released alive=", 15), 0, "%s", line);
	py_steps_pid(th_tmpdir(), run.proc.pid, 2, line, sizeof(line));
	th_expect_in(line, "\"python\":\"collected\"");
	cr_assert_geq(th_field(line, "gc_collected"), 200, "%s", line);
	th_expect_release(line);
	py_ask(&run, answer, sizeof(answer));
	cr_assert_str_eq(answer, "alive=0");
	char stats[4096];
	th_read_file(run.stats, stats, sizeof(stats));
	cr_assert_null(strstr(stats, "\"round\":1,\"trigger\":\"python\""),
	               "round 1 had steps of its own: %s", stats);
	py_finish(&run);
}

/* ROUNDTRIM_PYTHON=main: the steps wait for the main thread, however long it sits in a read. */
Test(python, main_only_a_main_thread_in_a_read_gets_the_steps_when_it_returns)
{
	const char *main_only[] = {"ROUNDTRIM_PYTHON=main", NULL};
	blocked_case("read", main_only);
}

/* A main thread that keeps the GIL inside a C call: the library's thread waits for the GIL
 * without holding anything up (both rounds release at once, the second joins the first's
 * request), and the main thread, back in bytecode, takes the steps before it. */
Test(python, main_thread_holding_the_gil_gets_the_steps_when_it_returns)
{
	blocked_case("hold", NULL);
}

/* The main thread waits in one C call (MODE of waiting.py) with the collector disabled, as a
 * client waits for its next model: a FIFO round's steps run on the library's thread while it
 * still waits (the cycles' finalizers run there, on a thread Python calls Dummy), a release
 * follows, and once the main thread is back nothing of that thread shows: not in a faulthandler
 * dump, sys._current_frames(), threading.enumerate() or active_count(), although a finalizer
 * called threading.current_thread() on it, nor in the name of the program's next unnamed thread
 * (before: one higher, the Dummy having taken a number from threading's counter). */
static void
waiting_case(const char *mode)
{
	struct py_run run;
	char line[1024], answer[256], dump[PATH_MAX];
	snprintf(dump, sizeof(dump), "%s/dump.txt", th_tmpdir());
	const char *manual[] = {"ROUNDTRIM_AUTO=off", PY_AWAIT_THREAD, NULL};
	py_start_args(&run, "waiting.py", mode, dump, manual, "ready");
	py_main_waits(run.proc.pid);
	py_round(&run, 1, line, sizeof(line));
	th_expect_in(line, "\"python\":\"pending\"");
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS),
	          "%s: the cycles were not collected while the main thread waited", mode);
	cr_assert_eq(strncmp(answer, "collected 100 by=Dummy-", 23), 0, "%s: %s", mode, answer);
	py_steps_pid(th_tmpdir(), run.proc.pid, 1, line, sizeof(line));
	th_expect_in(line, "\"python\":\"collected\"");
	cr_assert_geq(th_field(line, "gc_collected"), 300, "%s", line);
	th_expect_release(line);
	if (strcmp(mode, "sleep") == 0)
		kill(run.proc.pid, SIGUSR2);
	else
		th_write(&run.proc, "\n");
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS), "not woken");
	/* The event's setter was the program's first unnamed thread. */
	cr_assert_str_eq(answer,
	                 strcmp(mode, "event") == 0
	                     ? "woke next=Thread-2 dump=1 frames=1 enumerate=1 dummies=0 active=1"
	                     : "woke next=Thread-1 dump=1 frames=1 enumerate=1 dummies=0 active=1");
	py_finish(&run);
}

Test(python, steps_while_the_main_thread_sleeps)
{
	waiting_case("sleep");
}

Test(python, steps_while_the_main_thread_waits_for_an_event)
{
	waiting_case("event");
}

Test(python, steps_while_the_main_thread_reads)
{
	waiting_case("read");
}

/* The stand-in torch (WAITING_TORCH) and its stand-in driver, which logs its calls to
 * `calls`: the environment of a program that uses CUDA, in th_tmpdir(). */
struct fake_cuda {
	char calls[PATH_MAX];
	char calls_env[PATH_MAX + 16];
	char driver_env[PATH_MAX + 32];
	char torch_env[PATH_MAX + 16];
};

static void
fake_cuda_env(struct fake_cuda *f)
{
	snprintf(f->calls, sizeof(f->calls), "%s/driver.log", th_tmpdir());
	snprintf(f->calls_env, sizeof(f->calls_env), "FAKECUDA_LOG=%s", f->calls);
	snprintf(f->driver_env, sizeof(f->driver_env), "FAKECUDA_LIB=%s",
	         th_workload("fakecuda/libcuda.so.1"));
	snprintf(f->torch_env, sizeof(f->torch_env), "WAITING_TORCH=%sfaketorch", PY_DIR);
}

/* The CUDA step while the main thread reads: the library's thread collects, and empties the
 * cache itself only with ROUNDTRIM_CUDA_EMPTY_CACHE=waiting and where the driver shows one
 * visible device whose primary context exists (it creates nothing), asking nothing of torch's
 * own functions before. Otherwise it leaves that step (main-thread-only), and once the read
 * returns the main thread's queued call, finding the steps taken, still empties the cache,
 * before any bytecode of the program's, and posts its own record. Either way the cache is
 * emptied once a request. `option`: ROUNDTRIM_CUDA_EMPTY_CACHE's value; `context`: the stand-in
 * driver's FAKECUDA_CONTEXT, NULL for one made between the rounds; rounds: one, or two, the
 * first owed to the main thread (the library's thread asks the driver only once it has seen
 * torch's CUDA initialised, at the first), the second's debt not paid twice. */
static void
cuda_while_reading(const char *option, const char *devices, const char *context, int rounds,
                   bool on_the_librarys_thread)
{
	struct py_run run;
	struct fake_cuda f;
	char line[1024], answer[256], dump[PATH_MAX], log[PATH_MAX], log_env[PATH_MAX + 16];
	char devices_env[64], context_env[PATH_MAX + 32], made[PATH_MAX], buf[1024], option_env[64];
	fake_cuda_env(&f);
	snprintf(option_env, sizeof(option_env), "ROUNDTRIM_CUDA_EMPTY_CACHE=%s", option);
	snprintf(dump, sizeof(dump), "%s/dump.txt", th_tmpdir());
	snprintf(log, sizeof(log), "%s/torch.log", th_tmpdir());
	snprintf(made, sizeof(made), "%s/context", th_tmpdir());
	snprintf(log_env, sizeof(log_env), "FAKETORCH_LOG=%s", log);
	snprintf(devices_env, sizeof(devices_env), "FAKECUDA_DEVICES=%s", devices);
	snprintf(context_env, sizeof(context_env), "FAKECUDA_CONTEXT=%s", context ? context : made);
	const char *extra[] = {"ROUNDTRIM_AUTO=off", option_env,  "FAKETORCH_CUDA_INITIALIZED=1",
	                       devices_env,          context_env, f.driver_env,
	                       f.calls_env,          log_env,     f.torch_env,
	                       PY_AWAIT_THREAD,      NULL};
	py_start_args(&run, "waiting.py", "read", dump, extra, "ready");
	py_main_waits(run.proc.pid);
	py_round(&run, 1, line, sizeof(line));
	th_expect_in(line, "\"python\":\"pending\"");
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS));
	cr_assert_eq(strncmp(answer, "collected 100 by=Dummy-", 23), 0, "%s", answer);
	py_steps_pid(th_tmpdir(), run.proc.pid, 1, line, sizeof(line));
	if (rounds == 2) {
		th_expect_in(line, "\"cuda\":\"main-thread-only\"");
		/* Before a hold of the GIL saw torch's CUDA initialised, the driver is not asked.
		 */
		cr_assert_leq(th_read_file(f.calls, buf, sizeof(buf)), 0,
		              "the driver asked at once");
		if (!context)
			th_write_file(made, "");
		py_round(&run, 2, line, sizeof(line));
		py_steps_pid(th_tmpdir(), run.proc.pid, 2, line, sizeof(line));
		/* `true` never asks it: the step is the program's threads' alone. */
		ssize_t asked = th_read_file(f.calls, buf, sizeof(buf));
		cr_assert_eq(asked > 0, strcmp(option, "waiting") == 0, "driver calls: %zd", asked);
	}
	th_expect_in(line, on_the_librarys_thread ? "\"cuda\":\"emptied\""
	                                          : "\"cuda\":\"main-thread-only\"");
	/* While the main thread reads, torch's functions ran for the step itself and nothing else:
	 * the library's thread asks its question of the driver and of torch's module dictionary. */
	ssize_t n = th_read_file(log, buf, sizeof(buf));
	cr_assert_str_eq(n > 0 ? buf : "",
	                 on_the_librarys_thread ? "is_initialized\nempty_cache other\n" : "");
	th_write(&run.proc, "\n");
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS), "not woken");
	n = th_read_file(log, buf, sizeof(buf));
	cr_assert(n > 0, "no log");
	const char *first = strstr(buf, "empty_cache ");
	cr_assert(first && !strstr(first + 1, "empty_cache "), "emptied %s: %s",
	          first ? "twice" : "never", buf);
	if (!on_the_librarys_thread) {
		cr_assert(strstr(buf, "empty_cache main\n"), "%s", buf);
		char stats[PATH_MAX];
		snprintf(stats, sizeof(stats), "%s/%d.jsonl", th_tmpdir(), run.proc.pid);
		cr_assert(
		    th_wait_line(stats, "\"cuda\":\"emptied\"", line, sizeof(line), TH_TIMEOUT_MS),
		    "no record of the CUDA step");
		th_expect_in(line, "\"trigger\":\"python\"");
	}
	py_finish(&run);
}

/* Two visible devices: the library's thread, on device 0, could create a context there. */
Test(python, cuda_step_runs_on_the_main_thread_after_the_librarys_steps)
{
	cuda_while_reading("waiting", "2", "1", 2, false);
}

/* No primary context on the one device: the thread's first CUDA call would create it. */
Test(python, cuda_step_stays_with_the_main_thread_while_no_context_exists)
{
	cuda_while_reading("waiting", "1", "0", 2, false);
}

/* A fork child of a process whose torch uses CUDA (a DataLoader worker): torch marks CUDA unusable
 * there, and the child's library's thread never asks the driver, though its parent's did. */
Test(python, cuda_waiting_asks_no_driver_in_a_fork_child)
{
	struct py_run run;
	struct fake_cuda f;
	char line[1024], buf[2048], needle[64];
	fake_cuda_env(&f);
	const char *extra[] = {"ROUNDTRIM_AUTO=off",
	                       "ROUNDTRIM_CUDA_EMPTY_CACHE=waiting",
	                       "ROUNDTRIM_CHILD_START=0",
	                       "FAKETORCH_CUDA_INITIALIZED=1",
	                       "FAKECUDA_CONTEXT=1",
	                       f.driver_env,
	                       f.calls_env,
	                       f.torch_env,
	                       PY_AWAIT_THREAD,
	                       NULL};
	py_start_args(&run, "fork_cuda.py", NULL, NULL, extra, "ready");
	py_main_waits(run.proc.pid);
	/* Two rounds in the parent: the first sees torch's CUDA, the second asks the driver. */
	for (int round = 1; round <= 2; round++) {
		py_round(&run, round, line, sizeof(line));
		py_steps_pid(th_tmpdir(), run.proc.pid, round, line, sizeof(line));
	}
	th_expect_in(line, "\"cuda\":\"emptied\"");
	snprintf(needle, sizeof(needle), "pid=%d\n", run.proc.pid);
	cr_assert(th_read_file(f.calls, buf, sizeof(buf)) > 0 && strstr(buf, needle),
	          "the parent never asked the driver");
	th_write(&run.proc, "\n");
	int child = 0;
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS), "no child");
	cr_assert_eq(sscanf(line, "child %d", &child), 1, "%s", line);
	py_main_waits(child);
	py_round_pid(th_tmpdir(), child, 1, line, sizeof(line));
	py_steps_pid(th_tmpdir(), child, 1, line, sizeof(line));
	th_expect_in(line, "\"cuda\":\"main-thread-only\"");
	snprintf(needle, sizeof(needle), "pid=%d\n", child);
	cr_assert(th_read_file(f.calls, buf, sizeof(buf)) > 0 && !strstr(buf, needle),
	          "the child asked the driver: %s", buf);
	kill(child, SIGUSR1);
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_str_eq(line, "done 0");
	py_finish(&run);
}

/* `true`, NVFlare's word, the default way: the program's own threads alone empty the cache (a
 * program's CUDA graph captured on another thread would not survive the library's emptying). */
Test(python, cuda_step_true_stays_with_the_main_thread_on_one_device)
{
	cuda_while_reading("true", "1", "1", 2, false);
}

Test(python, cuda_step_waiting_runs_on_the_librarys_thread_with_one_device_whose_context_exists)
{
	cuda_while_reading("waiting", "1", "1", 2, true);
}

/* The first round's step is owed to the main thread; the second's thread, the context there now,
 * empties the cache itself and pays that debt: the main thread must not empty it again. */
Test(python, cuda_step_owed_by_an_earlier_round_is_paid_once)
{
	cuda_while_reading("waiting", "1", NULL, 2, true);
}

/* The exit's wait is hooked by the first steps that run, on whichever thread: steps that the main
 * thread took hook it too, so that a later first request of the library's thread, sent while
 * the main thread sits in a C call, finds the program's exit waiting for it (before, only the
 * library's thread hooked it, and its first GIL request could meet an exit with no wait). With
 * ROUNDTRIM_PYTHON=main there is no such request, and nothing is hooked. */
static void
main_steps_hook(const char *python, const char *atexits)
{
	struct py_run run;
	char line[1024], answer[256], dump[PATH_MAX];
	snprintf(dump, sizeof(dump), "%s/dump.txt", th_tmpdir());
	const char *extra[] = {"ROUNDTRIM_AUTO=off", "WAITING_ATEXITS=1", python, NULL};
	py_start_args(&run, "waiting.py", "read", dump, extra, "ready");
	th_write(&run.proc, "\n");
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS), "not woken");
	cr_assert(strstr(answer, " atexits=0"), "%s", answer);
	py_main_waits(run.proc.pid);
	py_round(&run, 1, line, sizeof(line));
	th_expect_in(line, "\"python\":\"pending\"");
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS));
	cr_assert_str_eq(answer, "collected 100 by=MainThread");
	py_steps_pid(th_tmpdir(), run.proc.pid, 1, line, sizeof(line));
	th_expect_in(line, "\"python\":\"collected\"");
	th_write(&run.proc, "?\n");
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS), "no answer");
	cr_assert(strstr(answer, atexits), "%s", answer);
	py_finish(&run);
}

Test(python, steps_on_the_main_thread_hook_the_exit_wait)
{
	main_steps_hook("ROUNDTRIM_PYTHON=on", " atexits=1");
}

Test(python, main_only_hooks_no_exit_wait)
{
	main_steps_hook("ROUNDTRIM_PYTHON=main", " atexits=0");
}

/* The main thread sits in a read, and the steps must wait for it: no line for twenty graces (the
 * library's thread would have collected by then; `why` says what a line there means), then the
 * read ends, and the first line is `first`. */
static void
py_steps_wait_for_the_main_thread(struct py_run *run, const char *why, const char *first)
{
	char answer[256];
	cr_assert_not(
	    th_read_line(&run->proc, answer, sizeof(answer), 20 * RT_PYTHON_GRACE_US / 1000),
	    "%s: %s", why, answer);
	th_write(&run->proc, "\n");
	cr_assert(th_read_line(&run->proc, answer, sizeof(answer), TH_TIMEOUT_MS));
	cr_assert_str_eq(answer, first);
}

/* A first round that reaches the library's thread after the program's exit began (threading's
 * shutdown run, an atexit callback waiting in a read): the exit's wait can no longer be hooked,
 * and the thread takes no step in the exit (a collection there can hang it); the main thread's
 * queued call runs them once the callback comes back to bytecode. Before, the thread collected
 * during the exit. */
Test(python, a_first_round_during_the_exit_leaves_the_steps_to_the_main_thread)
{
	struct py_run run;
	char line[1024], answer[256];
	const char *extra[] = {"ROUNDTRIM_AUTO=off", PY_AWAIT_THREAD, NULL};
	py_start_args(&run, "round_at_exit.py", NULL, NULL, extra, "ready");
	th_write(&run.proc, "\n");
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS));
	cr_assert_str_eq(answer, "at-exit");
	py_main_waits(run.proc.pid);
	py_round(&run, 1, line, sizeof(line));
	th_expect_in(line, "\"python\":\"pending\"");
	py_steps_wait_for_the_main_thread(&run, "collected during the exit", "collected on main");
	py_finish(&run);
}

/* A thread that a subinterpreter started ran the steps (roundtrim.trim()), and the subinterpreter
 * ended: the exit's wait belongs to the main interpreter alone, so that end neither marked the
 * process's exit begun (before, the library's thread then took no step again, for good) nor kept
 * the main interpreter's exit from being hooked. */
Test(python, a_subinterpreters_thread_and_end_leave_the_exit_wait_to_the_main_interpreter)
{
	struct py_run run;
	char answer[256], pydir[PATH_MAX + 32];
	snprintf(pydir, sizeof(pydir), "ROUNDTRIM_PYDIR=%s/scripts/python", RT_SOURCE_DIR);
	const char *extra[] = {"ROUNDTRIM_AUTO=off", PY_AWAIT_THREAD, pydir, NULL};
	py_start_args(&run, "subinterp_trim.py", NULL, NULL, extra, "ready");
	/* The trim's own record first: a round that came before it would join it. */
	cr_assert(
	    th_wait_line(run.stats, "\"trigger\":\"api\"", answer, sizeof(answer), TH_TIMEOUT_MS),
	    "the subinterpreter's trim was not served");
	cr_assert(th_fifo_write(run.fifo, "round\n", 6), "FIFO %s not served", run.fifo);
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS),
	          "nothing collected while the main thread read");
	cr_assert_eq(strncmp(answer, "collected 100 by=Dummy-", 23), 0, "%s", answer);
	th_write(&run.proc, "\n");
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS), "not woken");
	cr_assert_str_eq(answer, "woke atexits=1");
	py_finish(&run);
}

/* ROUNDTRIM_PYTHON=main keeps the steps on the main thread: nothing is collected while it
 * reads (several graces pass), and everything when the read returns, there. */
Test(python, main_only_leaves_the_steps_to_the_main_thread)
{
	struct py_run run;
	char line[1024], answer[256], dump[PATH_MAX];
	snprintf(dump, sizeof(dump), "%s/dump.txt", th_tmpdir());
	const char *main_only[] = {"ROUNDTRIM_AUTO=off", "ROUNDTRIM_PYTHON=main", NULL};
	py_start_args(&run, "waiting.py", "read", dump, main_only, "ready");
	py_main_waits(run.proc.pid);
	py_round(&run, 1, line, sizeof(line));
	th_expect_in(line, "\"python\":\"pending\"");
	py_steps_wait_for_the_main_thread(&run, "collected while the main thread read",
	                                  "collected 100 by=MainThread");
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS));
	cr_assert_str_eq(answer,
	                 "woke next=Thread-1 dump=1 frames=1 enumerate=1 dummies=0 active=1");
	py_finish(&run);
}

/* How many exits exits_during_the_librarys_steps makes: 1,000 under make stress
 * (STRESS_DIVISOR=1), 30 otherwise. */
static int
exits_to_make(void)
{
	const char *text = getenv("STRESS_DIVISOR");
	return text && strtol(text, NULL, 10) == 1 ? 1000 : 30;
}

/* The program exits (status 3, through finalisation) while the library's thread runs its
 * round's steps: in a finalizer that gives up the GIL, keeps it, or not at all. Every exit has
 * the program's status, within the timeout, with no fatal error or traceback. */
Test(python, exits_during_the_librarys_steps, .timeout = 1800)
{
	static const char *const hows[] = {"sleep", "spin", "none"};
	const char *manual[] = {"ROUNDTRIM_AUTO=off", PY_AWAIT_THREAD, NULL};
	signal(SIGPIPE, SIG_IGN);
	int exits = exits_to_make();
	for (int i = 0; i < exits; i++) {
		struct py_run run;
		char line[256];
		py_start(&run, "exit_during.py", hows[i % 3], manual, "ready");
		py_main_waits(run.proc.pid);
		cr_assert(th_fifo_write(run.fifo, "round\n", 6));
		cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS),
		          "exit %d: the steps never ran", i);
		cr_assert_str_eq(line, "in-steps");
		th_close_stdin(&run.proc);
		cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS), "exit %d (%s) hung", i, hows[i % 3]);
		char err[8192];
		th_kill(&run.proc);
		th_read_stderr(&run.proc, err, sizeof(err));
		cr_assert(WIFEXITED(run.proc.status) && WEXITSTATUS(run.proc.status) == 3,
		          "exit %d (%s): status %d, stderr: %s", i, hows[i % 3], run.proc.status,
		          err);
		cr_assert_null(strstr(err, "Fatal Python error"), "%s", err);
		cr_assert_null(strstr(err, "Traceback"), "%s", err);
	}
}

/* Three exits of exit_during.py HOW (extra: more NAME=VALUE) landing on the library's thread's
 * steps, which CPython ends when they ask for the GIL back: each exits with the program's own
 * status (3), no signal, no fatal error, and its stderr holds `expect` (NULL: anything). */
static void
py_exits_during_the_librarys_steps(const char *how, const char *extra, const char *expect)
{
	const char *manual[] = {"ROUNDTRIM_AUTO=off", PY_AWAIT_THREAD, extra, NULL};
	signal(SIGPIPE, SIG_IGN);
	for (int i = 0; i < 3; i++) {
		struct py_run run;
		char line[256], err[8192];
		py_start(&run, "exit_during.py", how, manual, "ready");
		py_main_waits(run.proc.pid);
		cr_assert(th_fifo_write(run.fifo, "round\n", 6));
		cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS),
		          "exit %d: the steps never ran", i);
		cr_assert_str_eq(line, "in-steps");
		th_close_stdin(&run.proc);
		cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS), "exit %d hung", i);
		th_kill(&run.proc);
		th_read_stderr(&run.proc, err, sizeof(err));
		cr_assert(WIFEXITED(run.proc.status) && WEXITSTATUS(run.proc.status) == 3,
		          "exit %d: status %d, stderr: %s", i, run.proc.status, err);
		cr_assert_null(strstr(err, "Fatal Python error"), "%s", err);
		if (expect)
			th_expect_in(err, expect);
	}
}

/* CPython ends the library's thread (pthread_exit inside PyGILState_Ensure) when its finalizer
 * asks for the GIL back after the program began to exit, and the program's finalisation then
 * lasts 500 ms: the worker, counting the thread CPython ended among the tasks it holds, took the
 * main thread for gone and ended the process with exit(0) while it still finalised. */
Test(python, exit_status_kept_when_cpython_ends_the_librarys_thread)
{
	py_exits_during_the_librarys_steps("slow", NULL, NULL);
}

/* The same with the finalizer inside a C++ op whose RAII guard lets the GIL go, as pybind11 does
 * around every PyTorch op: CPython's pthread_exit unwound the thread through the guard's
 * destructor, which is noexcept, and std::terminate ended the program with SIGABRT (3 of 3)
 * where without the library it exits with its own status. */
Test(python, exit_status_kept_when_cpython_ends_the_librarys_thread_in_a_cxx_op)
{
	char guard[PATH_MAX];
	snprintf(guard, sizeof(guard), "GIL_GUARD=%s", th_workload("libgil_guard.so"));
	py_exits_during_the_librarys_steps("cxx", guard, NULL);
}

/* The program exits while a finalizer on the library's thread holds a lock of the program's (a
 * logging handler's around a write that let the GIL go), and an object torn down at exit takes
 * that lock: CPython stopped the thread where it asked for the GIL back, the lock stayed held,
 * and the exit hung for ever (3 of 3). The exit now waits for the steps in progress before
 * finalisation begins. */
Test(python, exit_waits_for_a_lock_the_librarys_steps_hold)
{
	py_exits_during_the_librarys_steps("lock", NULL, "teardown took the lock");
}

/* exit_during.py HOW ("interrupt", "interrupt-cxx"; extra: one more NAME=VALUE or NULL): SIGINT
 * while the program's exit waits for the library's steps. The exit goes on at once: the
 * finalizer never writes "fin-done", stderr has the KeyboardInterrupt, and the status is the
 * program's (3). */
static void
py_ctrl_c_during_the_exits_wait(const char *how, const char *extra)
{
	const char *manual[] = {"ROUNDTRIM_AUTO=off", PY_AWAIT_THREAD, extra, NULL};
	struct py_run run;
	char line[256], err[8192];
	signal(SIGPIPE, SIG_IGN);
	/* A runner started in the background by a shell without job control ignores SIGINT, and so
	 * would the program (CPython installs no handler for an ignored SIGINT). */
	signal(SIGINT, SIG_DFL);
	py_start(&run, "exit_during.py", how, manual, "ready");
	py_main_waits(run.proc.pid);
	cr_assert(th_fifo_write(run.fifo, "round\n", 6));
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS),
	          "the steps never ran");
	cr_assert_str_eq(line, "in-steps");
	th_close_stdin(&run.proc);
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS), "no exit");
	cr_assert_str_eq(line, "exiting");
	cr_assert(kill(run.proc.pid, SIGINT) == 0);
	cr_assert_not(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS),
	              "the exit waited for the steps after the SIGINT: %s", line);
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS), "python did not exit");
	th_read_stderr(&run.proc, err, sizeof(err));
	cr_assert(WIFEXITED(run.proc.status) && WEXITSTATUS(run.proc.status) == 3,
	          "status %d, stderr: %s", run.proc.status, err);
	th_expect_in(err, "KeyboardInterrupt");
	cr_assert_null(strstr(err, "Fatal Python error"), "%s", err);
}

/* A Ctrl-C while the program's exit waits for the library's steps (a finalizer that sleeps 3 s
 * on the library's thread): the wait ran none of the program's signal handlers, and the exit
 * waited for the finalizer's end ("fin-done", before). The wait now runs them between its
 * slices: the KeyboardInterrupt ends it, and leaves threading._shutdown as from the program's
 * own join there; the exit goes on at once, with the program's status. */
Test(python, ctrl_c_during_the_exits_wait_for_the_steps_is_the_programs)
{
	py_ctrl_c_during_the_exits_wait("interrupt", NULL);
}

/* The same with the finalizer inside a C++ op whose RAII guard lets the GIL go (as pybind11 does
 * around every PyTorch op), and a finalisation that outlasts the op: CPython ends the library's
 * thread where the guard's destructor takes the GIL back, and the thread goes back to its start
 * without unwinding the op's frames (an unwind through that noexcept destructor calls
 * std::terminate: SIGABRT, seen with the jump replaced by libc's pthread_exit). */
Test(python, ctrl_c_at_exit_ends_the_librarys_thread_in_a_cxx_op_without_unwinding)
{
	char guard[PATH_MAX];
	snprintf(guard, sizeof(guard), "GIL_GUARD=%s", th_workload("libgil_guard.so"));
	py_ctrl_c_during_the_exits_wait("interrupt-cxx", guard);
}

/* The round ends by the FIFO and the program then waits in Event.wait(), as a client waits for
 * its next model: the release does not wait for the main thread (the round's record is there
 * while it still waits), and the steps run when the wait ends. */
Test(python, fifo_round_releases_while_the_main_thread_waits)
{
	struct py_run run;
	char line[1024], answer[256];
	const char *args = "--announce=fifo";
	py_start(&run, "between.py", args, NULL, "ready");
	th_write(&run.proc, "round\n");
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS));
	cr_assert_str_eq(answer, "waiting");
	py_round(&run, 1, line, sizeof(line));
	th_expect_in(line, "\"python\":\"pending\"");
	th_expect_release(line);
	py_ask(&run, answer, sizeof(answer));
	cr_assert_str_eq(answer, "alive=0 gc=True");
	py_steps_pid(th_tmpdir(), run.proc.pid, 1, line, sizeof(line));
	cr_assert_geq(th_field(line, "gc_collected"), 200, "%s", line);
	py_finish(&run);
}

/* roundtrim.round() at the end of the round, then Event.wait(): the collection ran in the
 * caller's thread before round() returned, so the round's own record has it, and the cycles are
 * gone while the main thread still waits; with gc.disable(), the same, and the collector stays
 * disabled. */
static void
api_round_case(const char *gc_arg)
{
	struct py_run run;
	char line[1024], answer[256];
	py_start(&run, "between.py", gc_arg, NULL, "ready");
	bool enabled = gc_arg == NULL;
	for (int r = 1; r <= 2; r++) {
		th_write(&run.proc, "round\n");
		cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS));
		cr_assert_str_eq(answer, "waiting");
		py_record_pid(th_tmpdir(), run.proc.pid, r, line, sizeof(line));
		th_expect_in(line, "\"trigger\":\"api\"");
		th_expect_in(line, "\"python\":\"collected\"");
		cr_assert_geq(th_field(line, "gc_collected"), 200, "%s", line);
		th_expect_release(line);
		py_ask(&run, answer, sizeof(answer));
		cr_assert_str_eq(answer, enabled ? "alive=0 gc=True" : "alive=0 gc=False");
	}
	char stats[8192];
	th_read_file(run.stats, stats, sizeof(stats));
	cr_assert_null(strstr(stats, "\"trigger\":\"python\""),
	               "the steps ran in round(): nothing is left for the main thread: %s", stats);
	py_finish(&run);
}

Test(python, api_round_collects_in_the_callers_thread)
{
	api_round_case(NULL);
}

Test(python, api_round_collects_with_the_collector_disabled)
{
	api_round_case("--gc-disabled");
}

/* A test of the program's setns(2), unshare(2) and mount(2): they need root, and the launcher of
 * TH_DESCRIPTORS=keeper refuses them. */
static void
py_need_namespaces(void)
{
	if (geteuid() != 0)
		cr_skip_test("setns, unshare and mount need root");
	if (th_keeper_mode())
		cr_skip_test("the launcher of TH_DESCRIPTORS=keeper refuses setns and unshare");
}

/* The library's thread shares the main thread's filesystem context, as the finalizers it runs
 * need (batch "first" reads a file by its relative path from there), yet the kernel refuses a
 * setns(CLONE_NEWNS) while another task shares the caller's context: the program's call, made
 * after rounds whose steps that thread took, succeeds as without the library (before: EINVAL).
 * After the program's unshare(CLONE_NEWNS) and a mount there, the steps of the next round run
 * in the program's new context (before: the old one, where "marker" said "outside"). */
Test(python, setns_and_unshare_of_the_mount_namespace_as_without)
{
	py_need_namespaces();
	char dir[PATH_MAX], path[PATH_MAX], out[1024], err[1024];
	snprintf(dir, sizeof(dir), "%s/without", th_tmpdir());
	cr_assert(mkdir(dir, 0700) == 0);
	snprintf(path, sizeof(path), "%smountns.py", PY_DIR);
	const char *alone[] = {PYTHON, path, dir, NULL};
	th_run(alone, NULL, out, sizeof(out), err, sizeof(err));
	if (strcmp(out, "ready\nsetns=0\nunshare=0 mount=0\nwaiting\n") != 0)
		cr_skip_test("this machine refuses the calls without the library: %s %s", out, err);
	snprintf(dir, sizeof(dir), "%s/with", th_tmpdir());
	cr_assert(mkdir(dir, 0700) == 0);
	struct py_run run;
	char line[1024], answer[256];
	const char *manual[] = {"ROUNDTRIM_AUTO=off", PY_AWAIT_THREAD, NULL};
	py_start(&run, "mountns.py", dir, manual, "ready");
	py_main_waits(run.proc.pid);
	py_round(&run, 1, line, sizeof(line));
	th_expect_in(line, "\"python\":\"pending\"");
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS),
	          "the cycles were not collected while the main thread read");
	cr_assert_eq(strncmp(answer, "first by=Dummy-", 15), 0, "%s", answer);
	th_expect_in(answer, " marker=outside");
	th_write(&run.proc, "\n");
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS));
	cr_assert_str_eq(answer, "setns=0");
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS));
	cr_assert_str_eq(answer, "unshare=0 mount=0");
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS),
	          "the library's thread did not come back");
	cr_assert_str_eq(answer, "waiting");
	py_main_waits(run.proc.pid);
	py_round(&run, 2, line, sizeof(line));
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS),
	          "the cycles were not collected while the main thread read");
	cr_assert_eq(strncmp(answer, "second by=Dummy-", 16), 0, "%s", answer);
	th_expect_in(answer, " marker=inside");
	py_finish(&run);
}

/* The program's call (newuser.py: HOW, "cdll" or "pydll", and CALL, "unshare" or "setns") while
 * the library's Python thread is out on a round's steps, in a finalizer that sleeps (GIL let go)
 * and then needs the GIL back; `first` and `second` are the two lines that follow: the call's
 * result and the finalizer's end, in the order they came. */
static void
py_call_during_steps(const char *how, const char *call, const char *first, const char *second)
{
	struct py_run run;
	char line[1024], answer[256], err[8192];
	const char *manual[] = {"ROUNDTRIM_AUTO=off", PY_AWAIT_THREAD, NULL};
	py_start_args(&run, "newuser.py", how, strcmp(call, "setns") == 0 ? call : NULL, manual,
	              "ready");
	py_main_waits(run.proc.pid);
	py_round(&run, 1, line, sizeof(line));
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS),
	          "the library's thread never ran the steps");
	cr_assert_str_eq(answer, "in-steps");
	th_write(&run.proc, "\n");
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS),
	          "the program's call did not come back");
	cr_assert_str_eq(answer, first);
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS));
	cr_assert_str_eq(answer, second);
	th_close_stdin(&run.proc);
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS), "python did not exit");
	th_read_stderr(&run.proc, err, sizeof(err));
	cr_assert(WIFEXITED(run.proc.status) && WEXITSTATUS(run.proc.status) == 0, "%s", err);
	if (strcmp(call, "unshare") == 0)
		th_expect_in(err,
		             "roundtrim: stood down: the program's unshare(CLONE_NEWUSER) needs "
		             "a process of one thread");
}

/* The library stands down before the program's unshare(CLONE_NEWUSER), which the kernel allows
 * only to a process of one thread, while its Python thread is out on a round's steps. Through
 * ctypes.CDLL the caller does not hold the GIL: it waits for the steps' end, and the call
 * succeeds, as without the library (before: it waited 5 ms and failed with EINVAL). */
Test(python, stand_down_without_the_gil_waits_for_the_librarys_steps)
{
	if (geteuid() != 0)
		cr_skip_test("unshare(CLONE_NEWUSER) is tried as root here");
	py_call_during_steps("cdll", "unshare", "fin-done", "unshare=0");
}

/* The same through ctypes.PyDLL: the caller holds the GIL, as CPython does around
 * pthread_create and fork when they stand the library down, and the thread needs it to end: the
 * call never waits for it and comes back (EINVAL, the thread still there) before the
 * finalizer's end (an earlier wait of 30 s held every thread of the program still). */
Test(python, stand_down_holding_the_gil_does_not_wait_for_the_librarys_steps, .timeout = 60)
{
	if (geteuid() != 0)
		cr_skip_test("unshare(CLONE_NEWUSER) is tried as root here");
	py_call_during_steps("pydll", "unshare", "unshare=EINVAL", "fin-done");
}

/* The program's setns(CLONE_NEWNS) into its own mount namespace while the library's thread,
 * which shares its filesystem context, is out on a round's steps: through ctypes.CDLL (the GIL
 * let go) it waits for the steps' end, and succeeds as without the library (before: it waited 5 ms
 * and failed with EINVAL); through ctypes.PyDLL (the GIL held) it does not wait, and fails with
 * EINVAL as roundtrim(7) says. */
Test(python, setns_without_the_gil_waits_for_the_librarys_steps)
{
	py_need_namespaces();
	py_call_during_steps("cdll", "setns", "fin-done", "setns=0");
}

Test(python, setns_holding_the_gil_does_not_wait_for_the_librarys_steps, .timeout = 60)
{
	py_need_namespaces();
	py_call_during_steps("pydll", "setns", "setns=EINVAL", "fin-done");
}

/* The same setns through a C extension's call that works 20 ms with the GIL let go first, while
 * another thread of the program runs bytecode, and so holds the GIL all along (nobody else asks
 * for it while the library's thread sleeps in its finalizer): CPython 3.11 shows that thread's
 * state current for the whole wait, neither none nor the library's, and never changing, and the
 * caller was taken for a possible holder: it waited 5 ms and failed with EINVAL (before). A
 * current state not the caller's own, in a process of one interpreter, is another thread's: the
 * caller waits for the steps' end, and succeeds as without the library. */
Test(python, setns_without_the_gil_waits_while_another_thread_runs_bytecode)
{
	py_need_namespaces();
	struct py_run run;
	char line[1024], answer[256], err[8192];
	const char *manual[] = {"ROUNDTRIM_AUTO=off", "PY_AWAIT_TASKS=4", NULL};
	py_start_args(&run, "setns_busy.py", th_workload("libforeign_thread.so"), NULL, manual,
	              "ready");
	py_main_waits(run.proc.pid);
	py_round(&run, 1, line, sizeof(line));
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS),
	          "the library's thread never ran the steps");
	cr_assert_str_eq(answer, "in-steps");
	th_write(&run.proc, "\n");
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS));
	cr_assert_str_eq(answer, "fin-done");
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS),
	          "the program's call did not come back");
	cr_assert_str_eq(answer, "setns=0");
	th_close_stdin(&run.proc);
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS), "python did not exit");
	th_read_stderr(&run.proc, err, sizeof(err));
	cr_assert(WIFEXITED(run.proc.status) && WEXITSTATUS(run.proc.status) == 0, "%s", err);
}

/* The same stand-down with the library's thread idle: it leaves at once, and the call succeeds,
 * as without the library. */
Test(python, stand_down_waits_for_an_idle_librarys_thread)
{
	if (geteuid() != 0)
		cr_skip_test("unshare(CLONE_NEWUSER) is tried as root here");
	struct py_run run;
	char answer[256], err[8192];
	const char *manual[] = {"ROUNDTRIM_AUTO=off", PY_AWAIT_THREAD, NULL};
	py_start(&run, "newuser.py", "pydll", manual, "ready");
	th_write(&run.proc, "\n");
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS));
	cr_assert_str_eq(answer, "unshare=0");
	th_close_stdin(&run.proc);
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS), "python did not exit");
	th_read_stderr(&run.proc, err, sizeof(err));
	cr_assert(WIFEXITED(run.proc.status) && WEXITSTATUS(run.proc.status) == 0, "%s", err);
}

/* The embedder's interpreter i (1, 2, ...) says it is ready; round r is announced while its main
 * thread sits in a read, and the library's thread runs its steps ("in-steps"). */
static void
py_embedder_steps_on_the_librarys_thread(struct th_proc *proc, int i, int r)
{
	char line[1024];
	cr_assert(th_read_line(proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_str_eq(line, "ready");
	py_main_waits(proc->pid);
	py_round_pid(th_tmpdir(), proc->pid, r, line, sizeof(line));
	th_expect_in(line, "\"python\":\"pending\"");
	cr_assert(th_read_line(proc, line, sizeof(line), TH_TIMEOUT_MS),
	          "interpreter %d: the library's thread never ran the steps", i);
	cr_assert_str_eq(line, "in-steps", "interpreter %d", i);
}

/* Starts test/workloads/pyembed on `script` (in PY_DIR) with `args` under the library: the
 * FIFO and the stats in the test's directory, no detection, the library's Python thread awaited,
 * and `extra`, one more variable, unless NULL. */
static void
py_spawn_embedder(struct th_proc *proc, const char *script, const char *const args[],
                  const char *extra)
{
	static char preload[PATH_MAX + 16], pythonpath[PATH_MAX + 16], path[PATH_MAX];
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", th_lib());
	snprintf(pythonpath, sizeof(pythonpath), "PYTHONPATH=%s", PY_DIR);
	snprintf(path, sizeof(path), "%s%s", PY_DIR, script);
	const char *env[] = {preload,
	                     pythonpath,
	                     th_env_in_tmp("ROUNDTRIM_FIFO", "%p.fifo"),
	                     th_env_in_tmp("ROUNDTRIM_STATS", "%p.jsonl"),
	                     "ROUNDTRIM_AUTO=off",
	                     PY_AWAIT_THREAD,
	                     extra,
	                     NULL};
	const char *argv[6] = {th_workload("pyembed"), path};
	for (int i = 0; args[i] && i < 3; i++)
		argv[2 + i] = args[i];
	th_spawn(proc, argv, env);
}

/* An embedder (pyembed) calls Py_FinalizeEx while a finalizer on the library's thread waits
 * longer than the exit's wait for the steps (10 s), and goes on without Python: CPython ends the
 * thread with pthread_exit where it asks for the GIL back, and the library parked it for good,
 * a task sharing the embedder's filesystem context: the embedder's setns(CLONE_NEWNS) waited 2 s
 * and failed with EINVAL (before). The thread, parked or idle, now stays while the process runs
 * on without Python (ending it as Python goes down would run its thread-local destructors beside
 * exit's static ones) and ends, without unwinding the finalizer's frames, when the embedder's
 * call needs it gone: the call succeeds, as without the library. The steps it left are
 * answered ("finalizing"), and a second interpreter that the embedder starts gets its round's
 * steps from a new thread (before: the request stayed claimed, and every later round reported
 * the steps busy). */
Test(python, embedder_after_finalize_gets_its_setns, .timeout = 90)
{
	py_need_namespaces();
	struct th_proc proc;
	char line[1024];
	py_spawn_embedder(&proc, "embedded.py", (const char *[]){"2", NULL}, NULL);
	for (int r = 1; r <= 2; r++) {
		py_embedder_steps_on_the_librarys_thread(&proc, r, r);
		if (r == 2) {
			py_steps_pid(th_tmpdir(), proc.pid, r, line, sizeof(line));
			th_expect_in(line, "\"python\":\"collected\"");
		}
		th_write(&proc, "\n");
		cr_assert(th_read_line(&proc, line, sizeof(line), TH_TIMEOUT_MS),
		          "no Py_FinalizeEx");
		cr_assert_str_eq(line, "finalized");
		cr_assert(th_read_line(&proc, line, sizeof(line), TH_TIMEOUT_MS));
		cr_assert_str_eq(line, "tasks=3 setns=0 after=2", "round %d", r);
		if (r == 1) {
			py_steps_pid(th_tmpdir(), proc.pid, r, line, sizeof(line));
			th_expect_in(line, "\"python\":\"finalizing\"");
		}
	}
	cr_assert(th_wait(&proc, TH_TIMEOUT_MS));
	cr_assert(WIFEXITED(proc.status) && WEXITSTATUS(proc.status) == 0, "status %d",
	          proc.status);
}

/* An embedder (pyembed ... now) that starts its next interpreter right after Py_FinalizeEx, before
 * the worker's next look: each interpreter's round gets its steps from the library's thread
 * while the main thread sits in a read, and each interpreter's exit waits for them (the library's
 * exit wait among threading's exit calls: atexits=1). Before, the finished interpreter's exit
 * marks stayed: the second interpreter's request sent the old thread away without its steps (it
 * took the marks for the new interpreter's exit), no thread took them ("interpreter 2: the
 * library's thread never ran the steps"), they waited for the main thread's read to return, and
 * the second interpreter's exit was never hooked. */
Test(python, embedder_that_starts_again_at_once_gets_the_steps_and_the_exit_wait, .timeout = 90)
{
	struct th_proc proc;
	char line[1024];
	py_spawn_embedder(&proc, "embedded.py", (const char *[]){"3", "now", NULL},
	                  "PYEMBED_ATEXITS=1");
	for (int r = 1; r <= 3; r++) {
		py_embedder_steps_on_the_librarys_thread(&proc, r, r);
		py_steps_pid(th_tmpdir(), proc.pid, r, line, sizeof(line));
		th_expect_in(line, "\"python\":\"collected\"");
		th_write(&proc, "\n");
		cr_assert(th_read_line(&proc, line, sizeof(line), TH_TIMEOUT_MS));
		cr_assert_str_eq(line, "atexits=1", "interpreter %d: its exit is not waited for",
		                 r);
		cr_assert(th_read_line(&proc, line, sizeof(line), TH_TIMEOUT_MS),
		          "no Py_FinalizeEx");
		cr_assert_str_eq(line, "finalized");
	}
	cr_assert(th_wait(&proc, TH_TIMEOUT_MS));
	cr_assert(WIFEXITED(proc.status) && WEXITSTATUS(proc.status) == 0, "status %d",
	          proc.status);
}

/* The tasks of pid, their ids in the order /proc lists them, in buf. */
static void
py_tasks_of(pid_t pid, char *buf, size_t size)
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
	DIR *tasks = opendir(dir);
	cr_assert(tasks, "cannot list %s", dir);
	size_t used = 0;
	buf[0] = '\0';
	for (struct dirent *e; (e = readdir(tasks));)
		if (e->d_name[0] != '.' && used < size)
			used += (size_t)snprintf(buf + used, size - used, " %s", e->d_name);
	closedir(tasks);
}

/* The same embedder as above (pyembed ... gap), where the worker provably looked while Python was
 * down between two interpreters: two rounds announced in the gap find Python down, and the
 * second one's record comes from a look after the first's. The idle thread
 * that served the first interpreter serves the second one's round too, while its main thread sits
 * in a read: the same tasks run the steps. Before, the worker sent that thread away at its first
 * look with the new interpreter up and queued the call that starts another, which the main thread,
 * already in its read (the old thread had made up the tasks it awaits), never ran: the steps
 * waited for the read ("interpreter 2: the library's thread never ran the steps"), as under load
 * in the test above whenever the worker happened to look during Py_FinalizeEx; or, where that look
 * came before the read, a new thread ran them. */
Test(python, embedder_that_starts_again_keeps_the_idle_thread_after_python_was_seen_down,
     .timeout = 90)
{
	struct th_proc proc;
	char line[1024], first[256], second[256];
	py_spawn_embedder(&proc, "embedded.py", (const char *[]){"2", "gap", NULL}, NULL);
	py_embedder_steps_on_the_librarys_thread(&proc, 1, 1);
	py_tasks_of(proc.pid, first, sizeof(first));
	py_steps_pid(th_tmpdir(), proc.pid, 1, line, sizeof(line));
	th_expect_in(line, "\"python\":\"collected\"");
	th_write(&proc, "\n");
	cr_assert(th_read_line(&proc, line, sizeof(line), TH_TIMEOUT_MS), "no Py_FinalizeEx");
	cr_assert_str_eq(line, "finalized");
	for (int r = 2; r <= 3; r++) {
		/* Python is down (CPython 3.11 still says finalizing after Py_FinalizeEx). */
		py_round_pid(th_tmpdir(), proc.pid, r, line, sizeof(line));
		cr_assert(strstr(line, "\"python\":\"finalizing\"") ||
		              strstr(line, "\"python\":\"not-initialized\""),
		          "%s", line);
	}
	th_write(&proc, "\n");
	py_embedder_steps_on_the_librarys_thread(&proc, 2, 4);
	py_tasks_of(proc.pid, second, sizeof(second));
	cr_assert_str_eq(second, first, "another thread ran the second interpreter's steps");
	py_steps_pid(th_tmpdir(), proc.pid, 4, line, sizeof(line));
	th_expect_in(line, "\"python\":\"collected\"");
	th_write(&proc, "\n");
	cr_assert(th_read_line(&proc, line, sizeof(line), TH_TIMEOUT_MS), "no Py_FinalizeEx");
	cr_assert_str_eq(line, "finalized");
	cr_assert(th_wait(&proc, TH_TIMEOUT_MS));
	cr_assert(WIFEXITED(proc.status) && WEXITSTATUS(proc.status) == 0, "status %d",
	          proc.status);
}

/* A finalizer on the library's thread armed a C library's pthread key whose destructor calls
 * into Python without asking whether it is up (key_dtor.py); a __del__ at finalisation calls
 * setns, for which the library's idle thread goes, and the destructor, run as it ends, asks for
 * the GIL while CPython finalises: CPython ends the thread a second time, and it stays for good.
 * It stays counted among the library's tasks: an embedder whose main thread then calls
 * pthread_exit ends, with exit(0), as without the library (before: its end was counted already,
 * the library took it for a thread of the program's, and the process never ended; SIGTERM did
 * not end it either). */
Test(python, embedder_ends_after_a_destructor_ended_the_librarys_thread_again, .timeout = 90)
{
	py_need_namespaces();
	struct th_proc proc;
	char dso[PATH_MAX + 16], line[1024];
	snprintf(dso, sizeof(dso), "KEY_DTOR=%s", th_workload("libkey_dtor.so"));
	py_spawn_embedder(&proc, "key_dtor.py", (const char *[]){"1", "pthread_exit", NULL}, dso);
	cr_assert(th_read_line(&proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_str_eq(line, "ready");
	py_main_waits(proc.pid);
	py_round_pid(th_tmpdir(), proc.pid, 1, line, sizeof(line));
	cr_assert(th_read_line(&proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_str_eq(line, "in-steps");
	py_steps_pid(th_tmpdir(), proc.pid, 1, line, sizeof(line));
	th_expect_in(line, "\"python\":\"collected\"");
	th_write(&proc, "\n");
	cr_assert(th_read_line(&proc, line, sizeof(line), TH_TIMEOUT_MS), "no Py_FinalizeEx");
	cr_assert_str_eq(line, "finalized");
	cr_assert(th_wait(&proc, TH_TIMEOUT_MS), "the process never ended");
	cr_assert(WIFEXITED(proc.status) && WEXITSTATUS(proc.status) == 0, "status %d",
	          proc.status);
}

/* Starts SCRIPT, whose main thread sits in a C call before it has imported threading, and makes
 * round 1: its steps are left to the main thread. That nothing runs meanwhile cannot be waited
 * for: 20 times the grace after which the library's thread is sent, and finds threading
 * missing (it ran the steps then, before). */
static void
py_round_left_to_the_main_thread(struct py_run *run, const char *script)
{
	char line[1024], answer[256];
	const char *manual[] = {"ROUNDTRIM_AUTO=off", PY_AWAIT_THREAD, NULL};
	py_start(run, script, NULL, manual, "ready");
	py_main_waits(run->proc.pid);
	py_round(run, 1, line, sizeof(line));
	th_expect_in(line, "\"python\":\"pending\"");
	cr_assert_not(th_read_line(&run->proc, answer, sizeof(answer), 1000),
	              "the library's thread ran the steps: %s", answer);
}

/* A round while the program has not imported threading yet and its main thread sits in a read,
 * whose garbage's finalizer imports logging, and with it threading: the library's thread leaves
 * the steps to the main thread, which runs them when its read returns, so that the program's
 * main thread stays threading's main thread (before: the library's thread, the first importer,
 * became it, and the program's own was a Dummy, where asyncio's get_event_loop() fails). */
Test(python, program_main_thread_stays_threadings_main_thread)
{
	struct py_run run;
	char answer[256];
	py_round_left_to_the_main_thread(&run, "lazy_threading.py");
	th_write(&run.proc, "\n");
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS));
	cr_assert_str_eq(answer, "finalized");
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS));
	cr_assert_str_eq(answer, "main=True");
	py_finish(&run);
}

/* A first round while the program has not imported threading and its main thread waits on a
 * lock for good: the library's thread leaves that round's steps to the main thread. Once another
 * thread of the program's has imported threading, the next round's steps (which the first
 * round's request serves too) run on the library's thread while the main thread still waits
 * (before: the first round's refusal stood until the main thread came back, and no later round
 * ran its steps). */
Test(python, steps_once_another_thread_imported_threading)
{
	struct py_run run;
	char line[1024], answer[256];
	py_round_left_to_the_main_thread(&run, "late_threading.py");
	th_write(&run.proc, "\n");
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS));
	cr_assert_str_eq(answer, "imported");
	py_round(&run, 2, line, sizeof(line));
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS),
	          "the steps waited for the main thread");
	cr_assert_str_eq(answer, "finalized on=other");
	py_steps_pid(th_tmpdir(), run.proc.pid, 2, line, sizeof(line));
	th_expect_in(line, "\"python\":\"collected\"");
	py_finish(&run);
}

/* A Dummy thread of the program's own, left in threading's list by a C library's thread that
 * called into Python and ended, whose ident the library's next Python thread reuses (glibc
 * hands that thread the same stack): it stays listed, and its number stays drawn, as without
 * the library (before: the library's thread took it for its own, removed it and gave its
 * number back). */
Test(python, program_dummy_of_a_reused_ident_stays)
{
	if (geteuid() != 0)
		cr_skip_test("unshare(CLONE_NEWNS) is tried as root here");
	struct py_run run;
	char line[1024], answer[256];
	const char *manual[] = {"ROUNDTRIM_AUTO=off", PY_AWAIT_THREAD, NULL};
	py_start(&run, "foreign_dummy.py", th_workload("libforeign_thread.so"), manual, "ready");
	py_main_waits(run.proc.pid);
	py_round(&run, 1, line, sizeof(line));
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS),
	          "the library's thread never ran the steps");
	cr_assert_str_eq(answer, "finalized same=True", "the case needs the ident reused");
	th_write(&run.proc, "\n");
	cr_assert(th_read_line(&run.proc, answer, sizeof(answer), TH_TIMEOUT_MS));
	cr_assert_str_eq(answer, "active=MainThread,Dummy-1 next=Thread-2");
	py_finish(&run);
}

/* A program linked to libpython that never initializes Python, as gdb or vim: the library's
 * Python thread never starts there (before: it started with the worker in every process that
 * exports the C API), and a round reports the interpreter not initialized. */
Test(python, no_thread_of_ours_where_python_is_never_initialized)
{
	struct th_proc proc;
	char preload[PATH_MAX + 16], line[1024];
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", th_lib());
	const char *env[] = {preload, th_env_in_tmp("ROUNDTRIM_FIFO", "%p.fifo"),
	                     th_env_in_tmp("ROUNDTRIM_STATS", "%p.jsonl"), "ROUNDTRIM_AUTO=off",
	                     NULL};
	const char *argv[] = {th_workload("pylinked"), NULL};
	th_spawn(&proc, argv, env);
	cr_assert(th_read_line(&proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_str_eq(line, "ready");
	for (int r = 1; r <= 2; r++) {
		py_round_pid(th_tmpdir(), proc.pid, r, line, sizeof(line));
		th_expect_in(line, "\"python\":\"not-initialized\"");
	}
	th_write(&proc, "?\n");
	cr_assert(th_read_line(&proc, line, sizeof(line), TH_TIMEOUT_MS));
	/* The program's thread and the worker. */
	cr_assert_str_eq(line, "tasks=2 python=0");
	th_close_stdin(&proc);
	cr_assert(th_wait(&proc, TH_TIMEOUT_MS));
	cr_assert(WIFEXITED(proc.status) && WEXITSTATUS(proc.status) == 0);
}

/* The interpreter's own executable (Debian's python3 is linked statically) has the library's
 * thread from its start: a main thread that sits in a C call as soon as its script starts (here
 * after python3 -S and a few lines) still gets a round's steps from it while it waits (before:
 * the thread was started by a call the main thread never ran, and the steps waited). */
/* Starts python3 -S at_once.py HOW (NULL: none) with the library, and reads its "ready".
 * stack_mib: its RLIMIT_STACK (prlimit, which runs without the library), 0 for the runner's;
 * env(1) hands the library to python3 alone. */
static void
py_spawn_at_once_stack(struct th_proc *proc, const char *how, int stack_mib)
{
	char preload[PATH_MAX + 16], path[PATH_MAX], line[256], stack[64];
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", th_lib());
	snprintf(path, sizeof(path), "%sat_once.py", PY_DIR);
	snprintf(stack, sizeof(stack), "--stack=%ld", (long)stack_mib << 20);
	const char *env[] = {th_env_in_tmp("ROUNDTRIM_FIFO", "%p.fifo"),
	                     th_env_in_tmp("ROUNDTRIM_STATS", "%p.jsonl"), "ROUNDTRIM_AUTO=off",
	                     NULL};
	const char *argv[] = {
	    "/usr/bin/prlimit", stack, "/usr/bin/env", preload, PYTHON, "-S", path, how, NULL};
	th_spawn(proc, stack_mib ? argv : argv + 2, env);
	cr_assert(th_read_line(proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_str_eq(line, "ready");
	py_main_waits(proc->pid);
}

static void
py_spawn_at_once(struct th_proc *proc, const char *how)
{
	py_spawn_at_once_stack(proc, how, 0);
}

Test(python, steps_while_the_main_thread_blocks_at_once)
{
	struct th_proc proc;
	char line[1024];
	py_spawn_at_once(&proc, NULL);
	py_round_pid(th_tmpdir(), proc.pid, 1, line, sizeof(line));
	th_expect_in(line, "\"python\":\"pending\"");
	cr_assert(th_read_line(&proc, line, sizeof(line), TH_TIMEOUT_MS),
	          "the cycles were not collected while the main thread read");
	cr_assert_str_eq(line, "collected 100 on=another");
	th_write(&proc, "x");
	cr_assert(th_wait(&proc, TH_TIMEOUT_MS));
	cr_assert(WIFEXITED(proc.status) && WEXITSTATUS(proc.status) == 0);
}

/* A program that raised RLIMIT_STACK to 64 MiB and its recursion limit, whose finalizer recurses
 * some ten MiB deep in C (a list nested 60,000 deep) while the library's thread collects: the
 * thread's stack is as large as the program's own threads get, and the program runs on (before:
 * a fixed 8 MiB, SIGSEGV). */
Test(python, a_finalizer_gets_the_stack_the_program_raised)
{
	struct th_proc proc;
	char line[1024];
	py_spawn_at_once_stack(&proc, "deeper", 64);
	py_round_pid(th_tmpdir(), proc.pid, 1, line, sizeof(line));
	cr_assert(th_read_line(&proc, line, sizeof(line), TH_TIMEOUT_MS),
	          "the cycles were not collected while the main thread read");
	cr_assert_str_eq(line, "collected 100 on=another");
	th_write(&proc, "x");
	cr_assert(th_wait(&proc, TH_TIMEOUT_MS));
	cr_assert(WIFEXITED(proc.status) && WEXITSTATUS(proc.status) == 0, "status %#x",
	          proc.status);
}

/* The resident KiB of the mapping that holds the stack pointer of task `tid` of pid; -1 while
 * the task runs (its syscall file gives the pointer only while it waits in the kernel). */
static long
py_stack_rss_kib(pid_t pid, const char *tid)
{
	char path[PATH_MAX], text[512];
	snprintf(path, sizeof(path), "/proc/%d/task/%s/syscall", pid, tid);
	ssize_t n = th_read_file(path, text, sizeof(text));
	if (n <= 0 || !strncmp(text, "running", 7))
		return -1;
	/* "NR ARG1 .. ARG6 SP PC", or "-1 SP PC": the pointer is the last field but one. */
	char *last = strrchr(text, ' ');
	if (!last)
		return -1;
	*last = '\0';
	char *before = strrchr(text, ' ');
	unsigned long long sp = before ? strtoull(before + 1, NULL, 16) : 0;
	static char smaps[1 << 21];
	snprintf(path, sizeof(path), "/proc/%d/smaps", pid);
	n = th_read_file(path, smaps, sizeof(smaps) - 1);
	cr_assert(n > 0 && n < (ssize_t)sizeof(smaps) - 1, "cannot read %s whole", path);
	smaps[n] = '\0';
	bool inside = false;
	char *save = NULL;
	for (char *line = strtok_r(smaps, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long lo, hi;
		long kib;
		if (sscanf(line, "%llx-%llx ", &lo, &hi) == 2)
			inside = lo <= sp && sp < hi;
		else if (inside && sscanf(line, "Rss: %ld kB", &kib) == 1)
			return kib;
	}
	return -1;
}

/* Whether every task of pid but its main thread waits in the kernel with at most `bound` KiB
 * resident on its stack; what each holds in `seen`. */
static bool
py_stacks_within(pid_t pid, long bound, char *seen, size_t size)
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
	DIR *tasks = opendir(dir);
	cr_assert(tasks, "cannot list %s", dir);
	bool within = true;
	size_t used = 0;
	seen[0] = '\0';
	for (struct dirent *e; (e = readdir(tasks));) {
		if (e->d_name[0] == '.' || atoi(e->d_name) == pid)
			continue;
		long kib = py_stack_rss_kib(pid, e->d_name);
		within = within && kib >= 0 && kib <= bound;
		if (used < size)
			used +=
			    (size_t)snprintf(seen + used, size - used, " %s:%ld", e->d_name, kib);
	}
	closedir(tasks);
	return within;
}

/* The library's threads give back the stack a round's work went down: a collection whose
 * finalizers recurse deep in C on the library's thread (a nested list's repr, 900 levels, a few
 * hundred KiB), the worker's release and record. After the round each holds no more than its
 * top pages (glibc's thread descriptor, TLS) and its frames (before: the Python thread kept
 * every page the finalizers touched, the worker 24 KiB). */
Test(python, librarys_threads_give_their_stacks_back_after_a_round)
{
	struct th_proc proc;
	char line[1024], seen[512];
	py_spawn_at_once(&proc, "deep");
	py_round_pid(th_tmpdir(), proc.pid, 1, line, sizeof(line));
	cr_assert(th_read_line(&proc, line, sizeof(line), TH_TIMEOUT_MS),
	          "the cycles were not collected while the main thread read");
	cr_assert_str_eq(line, "collected 100 on=another");
	py_steps_pid(th_tmpdir(), proc.pid, 1, line, sizeof(line));
	/* The threads give their pages back before they wait again: until each waits, the check
	 * says nothing. */
	bool within = false;
	for (int waited = 0; !within && waited < TH_TIMEOUT_MS; waited += 10) {
		within = py_stacks_within(proc.pid, 16, seen, sizeof(seen));
		if (!within)
			nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
	}
	cr_assert(within, "resident stack KiB per thread of the library's (tid:KiB):%s", seen);
	th_write(&proc, "x");
	cr_assert(th_wait(&proc, TH_TIMEOUT_MS));
	cr_assert(WIFEXITED(proc.status) && WEXITSTATUS(proc.status) == 0);
}

/* Where the library stays inactive (no table of its own and no keeper), the Python thread that
 * the interpreter's executable starts with the worker leaves with it: the program is left with
 * its one thread (before: two, the library's idle for good). */
Test(python, inactive_library_leaves_no_thread)
{
	char preload[PATH_MAX + 16], out[256], err[4096];
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", th_lib());
	/* Waits (5 s at most) for its tasks to come down to one, and prints how many there are. */
	const char *script = "import os, time\n"
	                     "for _ in range(1000):\n"
	                     "    if len(os.listdir('/proc/self/task')) == 1:\n"
	                     "        break\n"
	                     "    time.sleep(0.005)\n"
	                     "print(len(os.listdir('/proc/self/task')))\n";
	const char *argv[] = {th_noshare(), "--no-keeper", PYTHON, "-c", script, NULL};
	const char *env[] = {preload, th_env_in_tmp("ROUNDTRIM_FIFO", "%p.fifo"), NULL};
	cr_assert_eq(th_run(argv, env, out, sizeof(out), err, sizeof(err)), 0, "%s", err);
	th_expect_in(err, "roundtrim: inactive: ");
	cr_assert_str_eq(out, "1\n", "%s", err);
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
		py_round_and_steps(&run, r, line, sizeof(line));
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
	py_round_and_steps(&run, 1, line, sizeof(line));
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
		py_round_and_steps(&run, 1, line, sizeof(line));
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

/* multiprocessing's three start methods: every child carries the library and, once it has lived
 * ROUNDTRIM_CHILD_START, a worker of its own (its FIFO; the Python steps of the rounds announced
 * to it), and all run to completion. */
static void
mp_case(const char *method)
{
	struct py_run run;
	char line[1024];
	const char *child_start[] = {"ROUNDTRIM_CHILD_START=1s", NULL};
	py_start(&run, "mp_children.py", method, child_start, "parent");
	/* A round in the parent first, so that a fork child inherits the parent's state of the
	 * hand-off. */
	py_round_and_steps(&run, 1, line, sizeof(line));
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
		th_expect_in(line, "\"python\":\"pending\"");
		py_steps_pid(th_tmpdir(), pids[i], 1, line, sizeof(line));
		th_expect_in(line, "\"python\":\"collected\"");
	}
	py_round_and_steps(&run, 2, line, sizeof(line));
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

/* A parent holding small Python objects and 4 fork workers that allocate in bursts with pauses,
 * as a DataLoader's, its collector disabled (every collection the workers count is then the
 * library's): rounds storm into the parent, which collects, until every worker has made
 * `bursts` bursts (on their own, a detector would have found rounds in them by then). The
 * workers' pids go into pids. */
static void
fork_workers_start(struct py_run *run, const char *const extra[], int pids[4])
{
	char line[256];
	py_start(run, "fork_workers.py", "24", extra, "ready");
	th_write(&run->proc, "go\n");
	for (int i = 0; i < 4; i++) {
		cr_assert(th_read_line(&run->proc, line, sizeof(line), TH_TIMEOUT_MS), "no worker");
		cr_assert_eq(sscanf(line, "child %d", &pids[i]), 1, "%s", line);
	}
	cr_assert(th_read_line(&run->proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_str_eq(line, "forked");
}

static void
fork_workers_storm(struct py_run *run, long bursts)
{
	char line[256];
	int64_t deadline = now_ms() + 3 * TH_TIMEOUT_MS;
	long parent = 0, fewest = 0;
	while ((parent < 3 || fewest < bursts) && now_ms() < deadline) {
		th_fifo_write(run->fifo, "round\n", 6);
		py_ask(run, line, sizeof(line));
		parent = (long)th_field(line, "parent");
		fewest = (long)th_field(line, "bursts");
	}
	cr_assert_geq(parent, 3, "the parent's rounds did not collect: %s", line);
	cr_assert_geq(fewest, bursts, "the workers did not work: %s", line);
}

/* Ends the workers; their collections, in the order of pids, into collections. */
static void
fork_workers_stop(struct py_run *run, const int pids[4], long collections[4])
{
	char line[1024], key[32];
	th_write(&run->proc, "stop\n");
	cr_assert(th_read_line(&run->proc, line, sizeof(line), TH_TIMEOUT_MS), "workers hung");
	cr_assert_eq(strncmp(line, "workers ", 8), 0, "%s", line);
	for (int i = 0; i < 4; i++) {
		snprintf(key, sizeof(key), "%d", pids[i]);
		collections[i] = (long)th_field(line, key);
		cr_assert_geq(collections[i], 0, "worker %d did not report: %s", pids[i], line);
	}
}

static bool
has_file(int pid, const char *suffix)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%d.%s", th_tmpdir(), pid, suffix);
	return access(path, F_OK) == 0;
}

/* The number after "Threads:" in /proc/PID/status. */
static long
threads_of(int pid)
{
	char path[64], text[4096];
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	cr_assert_gt(th_read_file(path, text, sizeof(text)), 0, "no %s", path);
	const char *at = strstr(text, "Threads:");
	cr_assert_not_null(at);
	return strtol(at + strlen("Threads:"), NULL, 10);
}

/* Workers that live less than ROUNDTRIM_CHILD_START get nothing of the library's: no thread, no
 * FIFO, no status or stats file, no round and no collection. */
Test(python, fork_workers_get_nothing_of_their_own)
{
	struct py_run run;
	int pids[4];
	long collections[4];
	fork_workers_start(&run, NULL, pids);
	fork_workers_storm(&run, 8);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(threads_of(pids[i]), 1, "worker %d has a thread of the library's",
		             pids[i]);
		cr_assert_not(has_file(pids[i], "fifo"), "worker %d has a FIFO", pids[i]);
		cr_assert_not(has_file(pids[i], "status"), "worker %d has a status file", pids[i]);
	}
	fork_workers_stop(&run, pids, collections);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(collections[i], 0, "worker %d collected %ld times", pids[i],
		             collections[i]);
		cr_assert_not(has_file(pids[i], "jsonl"), "worker %d left a stats file", pids[i]);
	}
	py_finish(&run);
}

/* Workers that live past ROUNDTRIM_CHILD_START start the library; the rounds they find take the
 * allocator's action alone and never collect; `roundtrim status` shows them under their parent,
 * and `roundtrim round` for the parent's tree reaches the parent alone. A round announced to one
 * of them through its FIFO is counted and runs its Python steps there. */
Test(python, started_fork_workers_collect_only_when_announced)
{
	struct py_run run;
	int pids[4];
	long collections[4];
	char line[1024], out[16384], err[4096], expect[64];
	const char *child_start[] = {"ROUNDTRIM_CHILD_START=1s", NULL};
	fork_workers_start(&run, child_start, pids);
	for (int i = 0; i < 4; i++) {
		char status[PATH_MAX];
		snprintf(status, sizeof(status), "%s/%d.status", th_tmpdir(), pids[i]);
		cr_assert(th_wait_path(status, false, TH_TIMEOUT_MS), "worker %d never started",
		          pids[i]);
	}
	fork_workers_storm(&run, 8);
	const char *argv[] = {RT_BUILD_DIR "/roundtrim", "status", "--under",
	                      th_pid_text(run.proc.pid), NULL};
	cr_assert_eq(th_run(argv, NULL, out, sizeof(out), err, sizeof(err)), 0, "%s", err);
	/* The header, the parent, then its workers under it. */
	const char *row = strchr(out, '\n');
	cr_assert_not_null(row);
	snprintf(expect, sizeof(expect), "\n%d ", run.proc.pid);
	cr_assert_eq(strncmp(row, expect, strlen(expect)), 0, "%s", out);
	for (int i = 0; i < 4; i++) {
		snprintf(expect, sizeof(expect), "\n \\_ %d ", pids[i]);
		th_expect_in(out, expect);
	}
	cr_assert_eq(th_count_in(out, "\n"), 6, "%s", out);
	/* A round for the parent's tree goes to the parent alone. */
	const char *round[] = {RT_BUILD_DIR "/roundtrim", "round", "--wait", "--under",
	                       th_pid_text(run.proc.pid), NULL};
	cr_assert_eq(th_run(round, NULL, out, sizeof(out), err, sizeof(err)), 0, "%s", err);
	snprintf(expect, sizeof(expect), "%d python3: round ", run.proc.pid);
	cr_assert_eq(strncmp(out, expect, strlen(expect)), 0, "%s", out);
	cr_assert_eq(th_count_in(out, "\n"), 1, "%s", out);
	char fifo[PATH_MAX], stats[PATH_MAX];
	snprintf(fifo, sizeof(fifo), "%s/%d.fifo", th_tmpdir(), pids[0]);
	snprintf(stats, sizeof(stats), "%s/%d.jsonl", th_tmpdir(), pids[0]);
	cr_assert(th_fifo_write(fifo, "round\n", 6), "FIFO %s not served", fifo);
	cr_assert(th_wait_line(stats, "\"trigger\":\"fifo\"", line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert(
	    th_wait_line(stats, "\"python\":\"collected\"", line, sizeof(line), TH_TIMEOUT_MS),
	    "the announced round's steps did not collect");
	fork_workers_stop(&run, pids, collections);
	cr_assert_eq(collections[0], 1, "the announced worker: %ld collections", collections[0]);
	for (int i = 1; i < 4; i++)
		cr_assert_eq(collections[i], 0, "worker %d collected %ld times", pids[i],
		             collections[i]);
	py_finish(&run);
}

/* A started worker's own trigger (ROUNDTRIM_INTERVAL) takes the allocator's action alone: its
 * records note fork-child and report no Python steps, and the worker never collects. */
Test(python, started_fork_workers_own_triggers_never_collect)
{
	struct py_run run;
	int pids[4];
	long collections[4];
	char line[1024], stats[PATH_MAX];
	const char *extra[] = {"ROUNDTRIM_CHILD_START=1s", "ROUNDTRIM_INTERVAL=300ms", NULL};
	fork_workers_start(&run, extra, pids);
	for (int i = 0; i < 4; i++) {
		snprintf(stats, sizeof(stats), "%s/%d.jsonl", th_tmpdir(), pids[i]);
		cr_assert(th_wait_line(stats, "\"trigger\":\"interval\"", line, sizeof(line),
		                       TH_TIMEOUT_MS),
		          "worker %d: no interval record", pids[i]);
		th_expect_in(line, "fork-child");
		cr_assert_null(strstr(line, "\"python\":"), "%s", line);
	}
	fork_workers_stop(&run, pids, collections);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(collections[i], 0, "worker %d collected %ld times", pids[i],
		             collections[i]);
	py_finish(&run);
}
