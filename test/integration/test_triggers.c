/* Triggers: FIFO bursts and signals are all counted; the signal never interrupts the
 * application's threads; programs the process starts get the mask they would have had. */
#include "harness.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(triggers, .timeout = 120, .fini = th_cleanup);

/* The signal trigger is off by default: these tests turn it on. */
#define SIGNAL_ON "ROUNDTRIM_SIGNAL=RTMIN+8"

static void
start_probe(struct th_probe *run, const char *const args[])
{
	char line[256];
	const char *env[] = {"ROUNDTRIM_GC_ROUNDS=0", SIGNAL_ON, NULL};
	th_start_probe_env(run, args, env, line, sizeof(line));
}

static void
wait_rounds(struct th_probe *run, long rounds)
{
	char line[2048];
	th_wait_rounds(run, rounds, line, sizeof(line));
}

Test(triggers, fifo_burst_of_1000_rounds_all_counted)
{
	struct th_probe run;
	start_probe(&run, (const char *[]){"idle", NULL});
	static char burst[6 * 1000 + 1];
	for (int i = 0; i < 1000; i++)
		memcpy(burst + 6 * i, "round\n", 6);
	cr_assert(th_fifo_write(run.fifo, burst, 6000));
	wait_rounds(&run, 1000);
	th_close_stdin(&run.proc);
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS));
	cr_assert_eq(run.proc.status, 0);
	cr_assert(th_wait_path(run.fifo, true, TH_TIMEOUT_MS), "FIFO left behind at exit");
}

Test(triggers, signals_at_round_pace_never_lost)
{
	struct th_probe run;
	start_probe(&run, (const char *[]){"idle", NULL});
	for (long r = 1; r <= 50; r++) {
		cr_assert_eq(kill(run.proc.pid, SIGRTMIN + 8), 0);
		wait_rounds(&run, r);
	}
	th_close_stdin(&run.proc);
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS));
}

/* A storm of 2000 signals while threads sit in nanosleep, poll and read (and main in read). */
static void
storm(struct th_probe *run, int *sent)
{
	*sent = 0;
	for (int i = 0; i < 2000; i++)
		*sent += kill(run->proc.pid, SIGRTMIN + 8) == 0;
}

Test(triggers, signal_storm_causes_no_eintr)
{
	struct th_probe run;
	start_probe(&run, (const char *[]){"eintr", NULL});
	int sent;
	storm(&run, &sent);
	cr_assert_gt(sent, 0);
	wait_rounds(&run, sent);
	th_close_stdin(&run.proc);
	char line[256];
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS));
	cr_assert_eq(th_field(line, "eintr"), 0, "%s", line);
	cr_assert_gt(th_field(line, "waits"), 0, "%s", line);
}

/* The control: the same probe with a plain SA_RESTART handler and no library, the naive
 * design, does see EINTR; so the test above would notice a signal reaching those threads. */
Test(triggers, control_plain_handler_does_see_eintr)
{
	const char *argv[] = {th_workload("probe"), "eintr", "own", NULL};
	struct th_proc p;
	th_spawn(&p, argv, NULL);
	char line[256];
	cr_assert(th_read_line(&p, line, sizeof(line), TH_TIMEOUT_MS));
	for (int i = 0; i < 2000; i++)
		kill(p.pid, SIGRTMIN + 8);
	th_close_stdin(&p);
	cr_assert(th_read_line(&p, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert(th_wait(&p, TH_TIMEOUT_MS));
	cr_assert_gt(th_field(line, "eintr"), 0, "%s", line);
}

/* Runs argv with or without the library; returns its stdout. */
static void
capture(const char *const argv[], bool with_library, char *out, size_t size)
{
	char env_preload[PATH_MAX];
	snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s", th_lib());
	const char *env[] = {with_library ? env_preload : NULL, SIGNAL_ON, NULL};
	struct th_proc p;
	th_spawn(&p, argv, env);
	size_t len = 0;
	char line[512];
	out[0] = '\0';
	while (th_read_line(&p, line, sizeof(line), TH_TIMEOUT_MS))
		len += (size_t)snprintf(out + len, size - len, "%s\n", line);
	cr_assert(th_wait(&p, TH_TIMEOUT_MS));
	cr_assert_eq(p.status, 0, "%s failed", argv[1]);
}

/* The probe's SigBlk under the library, with the signal trigger's variable or without. */
static unsigned long long
blocked_mask(const char *signal_env)
{
	char out[2048];
	const char *argv[] = {th_workload("probe"), "status", NULL};
	struct th_proc p;
	char env_preload[PATH_MAX];
	snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s", th_lib());
	th_spawn(&p, argv, (const char *[]){env_preload, signal_env, NULL});
	size_t len = 0;
	char line[256];
	while (th_read_line(&p, line, sizeof(line), TH_TIMEOUT_MS) && strncmp(line, "ready", 5))
		len += (size_t)snprintf(out + len, sizeof(out) - len, "%s\n", line);
	th_close_stdin(&p);
	cr_assert(th_wait(&p, TH_TIMEOUT_MS));
	char *blk = strstr(out, "SigBlk:");
	cr_assert_not_null(blk, "%s", out);
	return strtoull(blk + 7, NULL, 16);
}

/* By default the library uses no signal: the program's mask is its own. */
Test(triggers, default_leaves_every_signal_unblocked)
{
	cr_assert_eq(blocked_mask(NULL), 0);
}

Test(triggers, signal_trigger_blocks_its_signal_in_the_host)
{
	/* What the exec tests below undo: with the trigger on, the host runs with it blocked. */
	unsigned long long mask = blocked_mask(SIGNAL_ON);
	cr_assert_eq(mask, 1ull << (SIGRTMIN + 8 - 1), "%llx", mask);
}

/* The hexadecimal value of the first line of text that starts with name ("SigIgn:"). */
static unsigned long long
status_value(const char *text, const char *name)
{
	const char *at = strstr(text, name);
	cr_assert_not_null(at, "no %s in %s", name, text);
	return strtoull(at + strlen(name), NULL, 16);
}

/* The new program's mask and ignored signals (as grep prints them from /proc/self/status) are
 * those it gets without the library, with one exception: glibc's signal 33, which the library
 * never touches (roundtrim(7), FORK AND EXEC). A program that came in with it ignored (the probe
 * and python3, which the harness starts by posix_spawn) and execs without having started a
 * thread hands it on ignored; under the library, whose worker is a thread, glibc handles it, and
 * exec resets a handled signal to SIG_DFL. Every other bit is the same. */
static void
assert_same_signals(const char *with, const char *without, const char *how)
{
	const unsigned long long setxid = 1ULL << (33 - 1);
	unsigned long long ign0 = status_value(without, "SigIgn:");
	unsigned long long ign1 = status_value(with, "SigIgn:");
	cr_assert_eq(status_value(with, "SigBlk:"), status_value(without, "SigBlk:"),
	             "%s: the child's mask differs: %s / %s", how, with, without);
	cr_assert(ign1 == ign0 || ign1 == (ign0 & ~setxid),
	          "%s: the child's ignored signals differ beyond signal 33's SIG_IGN: %llx / %llx",
	          how, ign1, ign0);
}

static void
check_exec_mask(const char *how)
{
	char with[1024], without[1024];
	const char *argv[] = {th_workload("probe"), "spawn", how, NULL};
	capture(argv, false, without, sizeof(without));
	capture(argv, true, with, sizeof(with));
	assert_same_signals(with, without, how);
}

Test(triggers, exec_via_execve_gets_clean_mask)
{
	check_exec_mask("execve");
}

Test(triggers, exec_via_execvp_gets_clean_mask)
{
	check_exec_mask("execvp");
}

Test(triggers, exec_via_execl_gets_clean_mask)
{
	check_exec_mask("execl");
}

Test(triggers, exec_via_posix_spawn_gets_clean_mask)
{
	check_exec_mask("posix_spawn");
}

Test(triggers, exec_via_posix_spawnp_gets_clean_mask)
{
	check_exec_mask("posix_spawnp");
}

Test(triggers, exec_via_system_gets_clean_mask)
{
	check_exec_mask("system");
}

Test(triggers, exec_via_popen_gets_clean_mask)
{
	check_exec_mask("popen");
}

Test(triggers, python_subprocess_gets_clean_mask)
{
	static const char script[] =
	    "import os, subprocess\n"
	    "env = {'PATH': '/usr/bin:/bin'}\n"
	    "cmd = ['grep', '-E', '^Sig(Blk|Ign)', '/proc/self/status']\n"
	    "print(subprocess.run(cmd, env=env, capture_output=True, text=True).stdout, end='')\n"
	    "r, w = os.pipe()\n"
	    "pid = os.posix_spawn('/bin/grep', cmd, env, "
	    "file_actions=[(os.POSIX_SPAWN_DUP2, w, 1)])\n"
	    "os.close(w); os.waitpid(pid, 0); print(os.read(r, 4096).decode(), end='')\n";
	const char *argv[] = {"/usr/bin/python3", "-c", script, NULL};
	char with[1024], without[1024];
	capture(argv, false, without, sizeof(without));
	capture(argv, true, with, sizeof(with));
	/* Two children: each pair of lines is compared. */
	const char *second0 = strstr(without, "SigIgn:"), *second1 = strstr(with, "SigIgn:");
	cr_assert(second0 && second1, "%s / %s", with, without);
	assert_same_signals(with, without, "subprocess.run");
	assert_same_signals(second1 + 1, second0 + 1, "os.posix_spawn");
}

/* A program that has started a thread of its own has glibc's handler for signal 33, without the
 * library too: the program it execs gets SIG_DFL there, not the SIG_IGN its parent inherited, and
 * exactly the mask and dispositions it gets without the library. */
static void
check_exec_mask_threaded(const char *how)
{
	char with[1024], without[1024];
	const char *argv[] = {th_workload("probe"), "spawn", how, "threaded", NULL};
	capture(argv, false, without, sizeof(without));
	capture(argv, true, with, sizeof(with));
	cr_assert_not_null(strstr(without, "SigIgn:"), "%s", without);
	cr_assert_str_eq(with, without, "%s: child sees a different mask or dispositions", how);
}

/* The exception above, exactly: a single-threaded program that came in with 33 ignored hands its
 * new program 33 at SIG_DFL under the library, every other bit as without it. */
Test(triggers, exec_hands_on_only_signal_33_differently)
{
	char with[1024], without[1024];
	const char *argv[] = {th_workload("probe"), "spawn", "execve", NULL};
	capture(argv, false, without, sizeof(without));
	capture(argv, true, with, sizeof(with));
	const unsigned long long setxid = 1ULL << (33 - 1);
	unsigned long long ign0 = status_value(without, "SigIgn:");
	cr_assert(ign0 & setxid, "the harness starts the probe with 33 ignored: %llx", ign0);
	cr_assert_eq(status_value(with, "SigIgn:"), ign0 & ~setxid, "%s / %s", with, without);
	cr_assert_eq(status_value(with, "SigBlk:"), status_value(without, "SigBlk:"));
}

Test(triggers, exec_via_execve_after_a_thread_gets_clean_mask)
{
	check_exec_mask_threaded("execve");
}
