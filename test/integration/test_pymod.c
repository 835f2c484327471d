/* The Python module (scripts/python/roundtrim.py) in Debian's real /usr/bin/python3, driven by
 * test/workloads/py/api_calls.py: with the library preloaded round() counts a round that the
 * status and the stats file report with the trigger "api", trim() acts, status() returns the
 * worker's status with or without a FIFO, and a fork child's calls are the child's; without the
 * library every call does nothing, nothing is loaded, and one warning says so however many calls
 * come; with the library loaded but inactive the calls do nothing and say nothing. */
#include "harness.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define PYTHON "/usr/bin/python3"
#define API_CALLS RT_SOURCE_DIR "/test/workloads/py/api_calls.py"

TestSuite(pymod, .timeout = 120, .fini = th_cleanup);

struct pymod_run {
	struct th_proc proc;
	char env[4][PATH_MAX];
	char status[PATH_MAX];
	char stats[PATH_MAX];
};

/* Starts api_calls.py with the module on its path (no bytecode written into the tree), the
 * library preloaded when `preload`, its FIFO, status and stats files per pid in th_tmpdir(), no
 * detection (the rounds counted are the API's: under load a parent that forked once detected one
 * of its own), and the NAME=VALUE strings of extra (NULL-terminated, up to 6), which come first;
 * waits for its "ready". */
static void
pymod_start(struct pymod_run *run, bool preload, const char *const extra[])
{
	const char *dir = th_tmpdir();
	const char *env[16];
	size_t n = 0;
	snprintf(run->env[0], PATH_MAX, "PYTHONPATH=%s/scripts/python", RT_SOURCE_DIR);
	snprintf(run->env[1], PATH_MAX, "ROUNDTRIM_FIFO=%s/%%p.fifo", dir);
	snprintf(run->env[2], PATH_MAX, "ROUNDTRIM_STATS=%s/%%p.jsonl", dir);
	snprintf(run->env[3], PATH_MAX, "LD_PRELOAD=%s", th_lib());
	/* The extra ones first: the first of two with one name is the one a program reads. The
	 * dynamic loader reads the last LD_PRELOAD: an extra one replaces the library's alone. */
	for (size_t i = 0; extra && extra[i] && n < 6; i++) {
		env[n++] = extra[i];
		preload &= strncmp(extra[i], "LD_PRELOAD=", 11) != 0;
	}
	env[n++] = "PYTHONDONTWRITEBYTECODE=1";
	env[n++] = "ROUNDTRIM_AUTO=off";
	for (size_t i = 0; i < (preload ? 4 : 3); i++)
		env[n++] = run->env[i];
	env[n] = NULL;
	const char *argv[] = {PYTHON, API_CALLS, NULL};
	th_spawn(&run->proc, argv, env);
	snprintf(run->status, sizeof(run->status), "%s/%d.status", dir, run->proc.pid);
	snprintf(run->stats, sizeof(run->stats), "%s/%d.jsonl", dir, run->proc.pid);
	char line[256];
	cr_assert(th_read_line(&run->proc, line, sizeof(line), TH_TIMEOUT_MS), "no first line");
	cr_assert_str_eq(line, "ready");
}

/* Sends one command and copies the answer into answer. */
static void
pymod_ask(struct pymod_run *run, const char *command, char *answer, size_t size)
{
	char text[64];
	snprintf(text, sizeof(text), "%s\n", command);
	th_write(&run->proc, text);
	cr_assert(th_read_line(&run->proc, answer, size, TH_TIMEOUT_MS), "no answer to %s",
	          command);
}

static void
pymod_expect(struct pymod_run *run, const char *command, const char *expected)
{
	char answer[256];
	pymod_ask(run, command, answer, sizeof(answer));
	cr_assert_str_eq(answer, expected, "%s", command);
}

/* Ends the program through EOF on stdin; copies its stderr into err. */
static void
pymod_finish(struct pymod_run *run, char *err, size_t size)
{
	th_close_stdin(&run->proc);
	cr_assert(th_wait(&run->proc, TH_TIMEOUT_MS), "python did not exit");
	th_read_stderr(&run->proc, err, size);
	cr_assert(WIFEXITED(run->proc.status) && WEXITSTATUS(run->proc.status) == 0,
	          "status %d, stderr: %s", run->proc.status, err);
}

/* Waits until the status file at path reports `rounds` rounds and `actions` actions. */
static void
wait_status(const char *path, long rounds, long actions)
{
	char needle[64], line[4096];
	snprintf(needle, sizeof(needle), "\"rounds\":%ld,", rounds);
	cr_assert(th_wait_line(path, needle, line, sizeof(line), TH_TIMEOUT_MS), "%s: no %s", path,
	          needle);
	snprintf(needle, sizeof(needle), "\"actions\":%ld,", actions);
	cr_assert(th_wait_line(path, needle, line, sizeof(line), TH_TIMEOUT_MS), "%s: no %s", path,
	          needle);
}

Test(pymod, round_is_counted_with_the_trigger_api)
{
	struct pymod_run run;
	char status[4096], line[1024], err[8192], pid[32];
	const char *extra[] = {"ROUNDTRIM_GC_ROUNDS=1", NULL};
	pymod_start(&run, true, extra);
	pymod_expect(&run, "loaded", "True");
	pymod_expect(&run, "round", "True");
	cr_assert(th_wait_line(run.stats, "\"round\":1,", line, sizeof(line), TH_TIMEOUT_MS),
	          "no stats line for round 1");
	th_expect_in(line, "\"trigger\":\"api\"");
	/* The steps ran in round() itself, in the caller's thread, before it returned. */
	th_expect_in(line, "\"python\":\"collected\"");
	wait_status(run.status, 1, 1);
	pymod_ask(&run, "status", status, sizeof(status));
	snprintf(pid, sizeof(pid), "{\"pid\":%d,", run.proc.pid);
	cr_assert_eq(strncmp(status, pid, strlen(pid)), 0, "%s", status);
	cr_assert_eq(th_field(status, "rounds"), 1, "%s", status);
	cr_assert_eq(th_field(status, "actions"), 1, "%s", status);
	th_expect_in(status, "\"mode\":\"announced\"");
	th_expect_in(status, "\"last_trigger\":\"api\"");

	pymod_expect(&run, "round", "True");
	wait_status(run.status, 2, 2);
	pymod_ask(&run, "status", status, sizeof(status));
	cr_assert_eq(th_field(status, "rounds"), 2, "%s", status);
	pymod_finish(&run, err, sizeof(err));
	cr_assert_str_empty(err);
}

Test(pymod, trim_acts_whatever_the_count)
{
	struct pymod_run run;
	char status[4096], line[1024], err[8192];
	/* Count only: a round alone never acts. */
	const char *extra[] = {"ROUNDTRIM_GC_ROUNDS=0", NULL};
	pymod_start(&run, true, extra);
	pymod_expect(&run, "round", "True");
	wait_status(run.status, 1, 0);
	pymod_expect(&run, "trim", "True");
	wait_status(run.status, 1, 1);
	/* The round's own line had no action, hence no Python steps: this is the trim's. */
	cr_assert(th_wait_line(run.stats, "\"python\":", line, sizeof(line), TH_TIMEOUT_MS),
	          "no stats line for the trim");
	th_expect_in(line, "\"round\":1,");
	th_expect_in(line, "\"trigger\":\"api\"");
	pymod_ask(&run, "status", status, sizeof(status));
	cr_assert_eq(th_field(status, "rounds"), 1, "%s", status);
	cr_assert_eq(th_field(status, "actions"), 1, "%s", status);
	th_expect_in(status, "\"last_trigger\":\"api\"");
	pymod_finish(&run, err, sizeof(err));
	cr_assert_str_empty(err);
}

/* The entry point that runs the steps in the caller needs the GIL: called without it (through
 * ctypes.CDLL), it hands them to the main thread instead of calling into Python. Also once a
 * subinterpreter exists, after which PyGILState_Check says 1 in every thread (before: the
 * collection ran without the GIL, SIGSEGV). */
static void
pymod_nogil_hands_over(bool subinterpreter)
{
	struct pymod_run run;
	char line[1024], err[8192];
	const char *extra[] = {"ROUNDTRIM_GC_ROUNDS=1", NULL};
	pymod_start(&run, true, extra);
	if (subinterpreter)
		pymod_expect(&run, "subinterpreter", "created");
	pymod_expect(&run, "round-nogil", "1");
	cr_assert(th_wait_line(run.stats, "\"round\":1,", line, sizeof(line), TH_TIMEOUT_MS),
	          "no stats line for round 1");
	th_expect_in(line, "\"trigger\":\"api\"");
	th_expect_in(line, "\"python\":\"pending\"");
	cr_assert(th_wait_line(run.stats, "\"round\":1,\"trigger\":\"python\"", line, sizeof(line),
	                       TH_TIMEOUT_MS),
	          "the main thread never ran the steps");
	th_expect_in(line, "\"python\":\"collected\"");
	pymod_finish(&run, err, sizeof(err));
	cr_assert_str_empty(err);
}

Test(pymod, a_call_without_the_gil_hands_the_steps_to_the_main_thread)
{
	pymod_nogil_hands_over(false);
}

Test(pymod, a_call_without_the_gil_after_a_subinterpreter_hands_the_steps_over)
{
	pymod_nogil_hands_over(true);
}

/* An acting round() has returned the memory when it returns, as NVFlare's cleanup_memory() has:
 * the allocator's action runs in the caller's thread (before, the worker ran it at its next
 * look, up to 200 ms later). The program frees 256 MiB pinned in the heap, and its own RSS read
 * right after the call is less than half of what it was before; a thread of the program that
 * counts in a loop counted during the call; the worker still writes the round's record. */
static void
pymod_released_on_return(const char *const extra[], const char *action)
{
	struct pymod_run run;
	char answer[256], line[1024], err[8192];
	pymod_start(&run, true, extra);
	pymod_ask(&run, "pinned 256", answer, sizeof(answer));
	long before = 0, after = 0, ticks = 0;
	char acted[8];
	cr_assert_eq(sscanf(answer, "%7s %ld %ld %ld", acted, &before, &after, &ticks), 4, "%s",
	             answer);
	cr_assert_str_eq(acted, "True");
	cr_assert_gt(before, 64 * 1024, "RSS %ld KiB before round(): nothing to release", before);
	cr_assert_lt(after, before / 2, "RSS %ld KiB before round(), %ld after", before, after);
	/* The GIL is let go during the action, as a ctypes.CDLL call of malloc_trim lets it go. */
	cr_assert_gt(ticks, 0, "the program's other thread never ran during round()");
	cr_assert(th_wait_line(run.stats, "\"round\":1,", line, sizeof(line), TH_TIMEOUT_MS),
	          "no stats line for round 1");
	th_expect_in(line, "\"trigger\":\"api\"");
	th_expect_in(line, action);
	th_expect_in(line, "released-in-caller");
	pymod_finish(&run, err, sizeof(err));
	cr_assert_str_empty(err);
}

Test(pymod, round_has_released_when_it_returns)
{
	const char *extra[] = {"ROUNDTRIM_GC_ROUNDS=1", NULL};
	pymod_released_on_return(extra, "\"action\":\"glibc_release\"");
}

Test(pymod, round_has_trimmed_when_it_returns)
{
	const char *extra[] = {"ROUNDTRIM_GC_ROUNDS=1", "ROUNDTRIM_GLIBC=trim", NULL};
	pymod_released_on_return(extra, "\"action\":\"malloc_trim\"");
}

Test(pymod, round_has_purged_jemalloc_when_it_returns)
{
	char preload[PATH_MAX + 16];
	const char *je = th_jemalloc();
	cr_assert_not_null(je, "Debian's libjemalloc2 is not installed (scripts/deps.sh)");
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s:%s", je, th_lib());
	const char *extra[] = {"ROUNDTRIM_GC_ROUNDS=1", preload, NULL};
	pymod_released_on_return(extra, "\"action\":\"jemalloc_purge\"");
}

/* Waits until the Prometheus file of pid counts `rounds` rounds. */
static void
wait_prom_rounds(const char *path, int pid, long rounds)
{
	char needle[128], line[1024];
	snprintf(needle, sizeof(needle),
	         "roundtrim_rounds_total{pid=\"%d\",program=\"python3\"} %ld", pid, rounds);
	cr_assert(th_wait_line(path, needle, line, sizeof(line), TH_TIMEOUT_MS), "%s: no %s", path,
	          needle);
	/* Not 10 or 11 rounds: the whole line. */
	cr_assert_eq(strcspn(line, "\n"), strlen(needle), "%s", line);
}

/* No FIFO, so no status file: status() still has the worker's status, which it publishes
 * before the Prometheus file. */
Test(pymod, status_without_a_fifo)
{
	struct pymod_run run;
	char status[4096], env_prom[PATH_MAX + 32], prom[PATH_MAX], err[8192];
	snprintf(env_prom, sizeof(env_prom), "ROUNDTRIM_PROM=%s/%%p.prom", th_tmpdir());
	const char *extra[] = {"ROUNDTRIM_FIFO=none", env_prom, NULL};
	pymod_start(&run, true, extra);
	snprintf(prom, sizeof(prom), "%s/%d.prom", th_tmpdir(), run.proc.pid);
	wait_prom_rounds(prom, run.proc.pid, 0);
	pymod_ask(&run, "status", status, sizeof(status));
	cr_assert_eq(th_field(status, "rounds"), 0, "%s", status);
	th_expect_in(status, "\"fifo\":\"\"");
	pymod_expect(&run, "round", "True");
	wait_prom_rounds(prom, run.proc.pid, 1);
	pymod_ask(&run, "status", status, sizeof(status));
	cr_assert_eq(th_field(status, "rounds"), 1, "%s", status);
	th_expect_in(status, "\"last_trigger\":\"api\"");
	pymod_finish(&run, err, sizeof(err));
	cr_assert_str_empty(err);
}

/* The child's calls start its own library: its round is its own (its status file, its pid), not
 * the parent's. */
Test(pymod, fork_child_calls_are_its_own)
{
	struct pymod_run run;
	char answer[256], status[4096], child_status[PATH_MAX], err[8192], pid[32];
	/* Count only, so that the round and the trim show apart. */
	const char *extra[] = {"ROUNDTRIM_GC_ROUNDS=0", NULL};
	pymod_start(&run, true, extra);
	pymod_ask(&run, "fork", answer, sizeof(answer));
	int child = 0;
	cr_assert_eq(sscanf(answer, "child %d", &child), 1, "%s", answer);
	cr_assert_neq(child, run.proc.pid);
	pymod_expect(&run, "round", "True");
	snprintf(child_status, sizeof(child_status), "%s/%d.status", th_tmpdir(), child);
	cr_assert(th_wait_path(child_status, false, TH_TIMEOUT_MS), "no %s", child_status);
	wait_status(child_status, 1, 0);
	/* The child's worker starts with that call and publishes once before it handles the
	 * round (the count is the caller's): the round is its once the mode says so. */
	cr_assert(th_wait_line(child_status, "\"mode\":\"announced\"", status, sizeof(status),
	                       TH_TIMEOUT_MS),
	          "%s: never announced", child_status);
	pymod_ask(&run, "status", status, sizeof(status));
	snprintf(pid, sizeof(pid), "{\"pid\":%d,", child);
	cr_assert_eq(strncmp(status, pid, strlen(pid)), 0, "%s", status);
	cr_assert_eq(th_field(status, "rounds"), 1, "%s", status);
	th_expect_in(status, "\"mode\":\"announced\"");
	pymod_expect(&run, "trim", "True");
	wait_status(child_status, 1, 1);
	pymod_expect(&run, "exit", "child exited 0");
	/* Back in the parent, which counted nothing. */
	pymod_ask(&run, "status", status, sizeof(status));
	snprintf(pid, sizeof(pid), "{\"pid\":%d,", run.proc.pid);
	cr_assert_eq(strncmp(status, pid, strlen(pid)), 0, "%s", status);
	cr_assert_eq(th_field(status, "rounds"), 0, "%s", status);
	pymod_finish(&run, err, sizeof(err));
	cr_assert_str_empty(err);
}

/* Warnings made errors (PYTHONWARNINGS=error) change nothing: the module logs, never raises. */
Test(pymod, without_the_library_calls_do_nothing_and_warn_once)
{
	struct pymod_run run;
	char err[8192];
	const char *extra[] = {"PYTHONWARNINGS=error", NULL};
	pymod_start(&run, false, extra);
	pymod_expect(&run, "loaded", "False");
	for (int i = 0; i < 3; i++) {
		pymod_expect(&run, "round", "False");
		pymod_expect(&run, "trim", "False");
		pymod_expect(&run, "status", "None");
	}
	/* A fork child's calls: nothing, and no second warning. */
	char answer[256];
	pymod_ask(&run, "fork", answer, sizeof(answer));
	cr_assert_eq(strncmp(answer, "child ", 6), 0, "%s", answer);
	pymod_expect(&run, "round", "False");
	pymod_expect(&run, "status", "None");
	pymod_expect(&run, "exit", "child exited 0");
	/* The module looked the library up and did not load it. */
	pymod_expect(&run, "maps", "False");
	pymod_expect(&run, "loaded", "False");
	pymod_finish(&run, err, sizeof(err));
	const char *line = "libroundtrim.so is not preloaded in this process: roundtrim.round(), "
	                   "trim() and status() do nothing (start the program with the library in "
	                   "LD_PRELOAD; see roundtrim(7), API)\n";
	cr_assert_str_eq(err, line);
}

/* Loaded but inactive by the configuration's choice: nothing done, nothing said. */
Test(pymod, inactive_library_calls_do_nothing_silently)
{
	struct pymod_run run;
	char err[8192];
	const char *extra[] = {"ROUNDTRIM_MATCH=not-python*", NULL};
	pymod_start(&run, true, extra);
	pymod_expect(&run, "loaded", "True");
	pymod_expect(&run, "round", "False");
	pymod_expect(&run, "trim", "False");
	pymod_expect(&run, "status", "None");
	pymod_finish(&run, err, sizeof(err));
	cr_assert_str_empty(err);
}
