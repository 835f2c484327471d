/* Rounds and actions nobody announces: rounds found in the allocation rhythm, their hand-over to
 * announced rounds, the interval (never for an idle process), the RSS limit and memory pressure
 * in a real memory cgroup. */
#include "harness.h"
#include "rt_trace.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(auto_rounds, .timeout = 180, .fini = th_cleanup);

struct run {
	struct th_proc proc;
	char env[6][PATH_MAX];
	char stats[PATH_MAX];
	char status[PATH_MAX];
	char fifo[PATH_MAX];
};

/* frag under the library with a stats file per pid, up to three more NAME=VALUE. */
static void
start_frag(struct run *r, const char *const args[], const char *const extra[])
{
	const char *dir = th_tmpdir();
	const char *env[10];
	size_t n = 0;
	snprintf(r->env[0], PATH_MAX, "LD_PRELOAD=%s", th_lib());
	snprintf(r->env[1], PATH_MAX, "ROUNDTRIM_FIFO=%s/%%p.fifo", dir);
	snprintf(r->env[2], PATH_MAX, "ROUNDTRIM_STATS=%s/%%p.jsonl", dir);
	for (; n < 3; n++)
		env[n] = r->env[n];
	for (size_t i = 0; extra && extra[i]; i++)
		env[n++] = extra[i];
	env[n] = NULL;
	const char *argv[16] = {th_workload("frag")};
	for (size_t i = 0; args[i] && i < 14; i++)
		argv[i + 1] = args[i];
	th_spawn(&r->proc, argv, env);
	snprintf(r->stats, sizeof(r->stats), "%s/%d.jsonl", dir, r->proc.pid);
	snprintf(r->status, sizeof(r->status), "%s/%d.status", dir, r->proc.pid);
	snprintf(r->fifo, sizeof(r->fifo), "%s/%d.fifo", dir, r->proc.pid);
}

/* frag's rounds end with a pause that nobody announces: the library finds each end. */
Test(auto_rounds, rounds_found_without_anyone_announcing_them)
{
	struct run r;
	const char *args[] = {"--threads", "2",       "--mib", "96", "--rounds",
	                      "4",         "--pause", "1:1.5", NULL};
	start_frag(&r, args, NULL);
	cr_assert(th_wait(&r.proc, 60000), "frag did not end");
	cr_assert_eq(r.proc.status, 0);
	int autos = th_count_lines(r.stats, "\"trigger\":\"auto\"");
	/* The last round's quiet comes after frag has gone; each other one is found. */
	cr_assert_geq(autos, 3, "%d rounds found of 4", autos);
	cr_assert_leq(autos, 4);
	cr_assert_eq(th_count_lines(r.stats, "\"action\":\"glibc_release\""), autos);
	/* Each says how sure the library was of it. */
	cr_assert_eq(th_count_lines(r.stats, "\"trigger\":\"auto\",\"confidence\":"), autos);
}

/* The first announced round hands over: the status says so, and no round is found any more. */
Test(auto_rounds, an_announced_round_hands_over)
{
	struct run r;
	char line[2048];
	const char *args[] = {"--threads", "2", "--mib", "96", "--rounds", "3", "--wait", NULL};
	start_frag(&r, args, NULL);
	cr_assert(th_wait_line(r.status, "\"mode\":\"auto\"", line, sizeof(line), TH_TIMEOUT_MS));
	for (int round = 1; round <= 3; round++) {
		cr_assert(th_read_line(&r.proc, line, sizeof(line), TH_TIMEOUT_MS));
		cr_assert(th_fifo_write(r.fifo, "round\n", 6));
		char needle[64];
		snprintf(needle, sizeof(needle), "\"last_trigger\":\"fifo\"");
		cr_assert(th_wait_line(r.status, needle, line, sizeof(line), TH_TIMEOUT_MS));
		cr_assert_not_null(strstr(line, "\"mode\":\"announced\""), "%s", line);
		th_write(&r.proc, "\n");
	}
	th_close_stdin(&r.proc);
	cr_assert(th_wait(&r.proc, TH_TIMEOUT_MS));
	cr_assert_eq(th_count_lines(r.stats, "\"trigger\":\"auto\""), 0,
	             "a round was found after one was announced");
}

Test(auto_rounds, rss_limit_acts_when_crossed)
{
	struct run r;
	char line[2048];
	const char *args[] = {"--threads", "2", "--mib", "128", "--rounds", "1", "--wait", NULL};
	const char *extra[] = {"ROUNDTRIM_AUTO=off", "ROUNDTRIM_RSS_LIMIT=48M", NULL};
	start_frag(&r, args, extra);
	cr_assert(th_read_line(&r.proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert(
	    th_wait_line(r.stats, "\"trigger\":\"rss-limit\"", line, sizeof(line), TH_TIMEOUT_MS),
	    "no action at the RSS limit");
	cr_assert_gt(th_field(line, "rss_before_kib"), 48 * 1024, "%s", line);
	cr_assert(th_wait_line(r.status, "\"mode\":\"manual\"", line, sizeof(line), TH_TIMEOUT_MS));
	th_close_stdin(&r.proc);
	cr_assert(th_wait(&r.proc, TH_TIMEOUT_MS));
}

Test(auto_rounds, interval_acts_on_a_process_that_allocates)
{
	struct run r;
	char line[2048];
	/* Rounds of work with pauses of a second between them: allocation goes on. */
	const char *args[] = {"--threads", "1",       "--mib",   "16", "--rounds",
	                      "30",        "--pause", "0.2:0.3", NULL};
	const char *extra[] = {"ROUNDTRIM_AUTO=off", "ROUNDTRIM_INTERVAL=500ms", NULL};
	start_frag(&r, args, extra);
	cr_assert(
	    th_wait_line(r.stats, "\"trigger\":\"interval\"", line, sizeof(line), TH_TIMEOUT_MS));
	th_kill(&r.proc);
}

/* Waits until the trace's readings span `us` more than they did at *since (set on first use). */
static void
wait_trace_span(const char *trace, int64_t *since, int64_t us)
{
	char line[512];
	for (;;) {
		cr_assert(th_wait_line(trace, " ", line, sizeof(line), TH_TIMEOUT_MS));
		FILE *f = fopen(trace, "r");
		int64_t t, last = -1;
		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "%ld", &t) == 1)
				last = t;
		if (f)
			fclose(f);
		if (*since < 0)
			*since = last;
		if (last - *since >= us)
			return;
		cr_assert(th_wait_change(trace, TH_TIMEOUT_MS), "the trace stopped");
	}
}

/* The actions counted, once a "stats" request has been handled (the status rewritten after it). */
static int64_t
actions_now(struct th_probe *run)
{
	char line[2048];
	cr_assert_gt(th_read_file(run->status, line, sizeof(line)), 0);
	int64_t seq = th_field(line, "seq");
	cr_assert(th_fifo_write(run->fifo, "stats\n", 6));
	while (th_read_file(run->status, line, sizeof(line)) <= 0 || th_field(line, "seq") <= seq ||
	       th_field(line, "seq_end") != th_field(line, "seq"))
		cr_assert(th_wait_change(run->status, TH_TIMEOUT_MS),
		          "the request was not handled");
	return th_field(line, "actions");
}

/* An idle process is never touched: once the probe has printed its line (its last allocation,
 * which one action may follow), twenty intervals pass without an action. The worker's own
 * allocations (each action makes some) must count nowhere, or every action would be the next
 * one's reason. */
static void
idle_case(const char *preload)
{
	struct th_probe run;
	char line[2048], trace[PATH_MAX], env_trace[PATH_MAX + 32];
	snprintf(trace, sizeof(trace), "%s/idle.trace", th_tmpdir());
	snprintf(env_trace, sizeof(env_trace), "ROUNDTRIM_TRACE=%s", trace);
	const char *env[] = {"ROUNDTRIM_INTERVAL=100ms", env_trace, NULL};
	th_start_workload(&run, "probe", preload, NULL, (const char *[]){"idle", NULL}, env, line,
	                  sizeof(line));
	int64_t since = -1;
	wait_trace_span(trace, &since, 1000000);
	int64_t before = actions_now(&run);
	cr_assert_leq(before, 1);
	since = -1;
	wait_trace_span(trace, &since, 2000000);
	cr_assert_eq(actions_now(&run), before, "an idle process was acted on");
	th_kill(&run.proc);
}

/* The bytes the process's last reading in the trace says it sent; -1 before any. */
static int64_t
trace_bytes_sent(const char *trace)
{
	char line[RT_TRACE_LINE_MAX];
	struct rt_trace_reader reader = RT_TRACE_READER_INIT;
	struct rt_reading reading;
	int64_t sent = -1;
	FILE *f = fopen(trace, "r");
	while (f && fgets(line, sizeof(line), f))
		if (rt_trace_parse(&reader, line, &reading) == RT_TRACE_READING &&
		    reading.bytes_sent != RT_TRACE_UNKNOWN)
			sent = (int64_t)reading.bytes_sent;
	if (f)
		fclose(f);
	return sent;
}

/* A client's round ends with its update sent: the readings count what send, sendto, sendmsg and
 * sendmmsg handed the kernel, from a thread that never allocated too, and each call returns
 * and sets errno as without the library. */
Test(auto_rounds, the_readings_count_every_byte_the_send_family_sent)
{
	struct th_proc plain;
	struct th_probe run;
	char line[2048], want[2048], trace[PATH_MAX], env_trace[PATH_MAX + 32];
	th_spawn(&plain, (const char *[]){th_workload("probe"), "send", NULL},
	         (const char *[]){NULL});
	cr_assert(th_read_line(&plain, want, sizeof(want), TH_TIMEOUT_MS));
	cr_assert_str_eq(want, "sent=4003000 errors=ok");
	th_kill(&plain);
	snprintf(trace, sizeof(trace), "%s/send.trace", th_tmpdir());
	snprintf(env_trace, sizeof(env_trace), "ROUNDTRIM_TRACE=%s", trace);
	const char *env[] = {"ROUNDTRIM_INTERVAL=100ms", env_trace, NULL};
	th_start_workload(&run, "probe", NULL, NULL, (const char *[]){"send", NULL}, env, line,
	                  sizeof(line));
	cr_assert_str_eq(line, want);
	while (trace_bytes_sent(trace) < 4003000)
		cr_assert(th_wait_change(trace, TH_TIMEOUT_MS), "the trace says %ld bytes sent",
		          (long)trace_bytes_sent(trace));
	/* Nothing else in the probe sends: no byte counted twice. */
	cr_assert_eq(trace_bytes_sent(trace), 4003000);
	th_kill(&run.proc);
}

/* A fork child's readings count what the child sent: its parent's bytes (the forking thread's
 * own count, and that of threads that never allocated) would make a child that sent nothing look
 * like a process that sent an update. */
Test(auto_rounds, a_fork_child_counts_only_the_bytes_it_sent)
{
	struct th_probe run;
	char line[2048], trace[PATH_MAX], env_trace[PATH_MAX + 32];
	snprintf(env_trace, sizeof(env_trace), "ROUNDTRIM_TRACE=%s/%%p.trace", th_tmpdir());
	const char *env[] = {"ROUNDTRIM_INTERVAL=100ms", env_trace, NULL};
	th_start_workload(&run, "probe", NULL, NULL, (const char *[]){"sendfork", NULL}, env, line,
	                  sizeof(line));
	int child = 0;
	cr_assert_eq(sscanf(line, "child %d sent=1000", &child), 1, "%s", line);
	snprintf(trace, sizeof(trace), "%s/%d.trace", th_tmpdir(), child);
	while (trace_bytes_sent(trace) < 0)
		cr_assert(th_wait_change(trace, TH_TIMEOUT_MS), "the child wrote no reading");
	while (trace_bytes_sent(trace) < 1000)
		cr_assert(th_wait_change(trace, TH_TIMEOUT_MS), "the trace says %ld bytes sent",
		          (long)trace_bytes_sent(trace));
	cr_assert_eq(trace_bytes_sent(trace), 1000);
	th_kill(&run.proc);
}

Test(auto_rounds, interval_leaves_an_idle_process_alone)
{
	idle_case(NULL);
}

/* A preloaded thread hook (a sanitizer's, a profiler's) makes the worker allocate before its
 * function runs: it has joined the tallies by then, and must leave them. */
Test(auto_rounds, interval_leaves_an_idle_process_alone_under_a_thread_hook)
{
	char preload[2 * PATH_MAX];
	snprintf(preload, sizeof(preload), "%s:%s", th_lib(), th_workload("libthread_hook.so"));
	idle_case(preload);
}

Test(auto_rounds, pressure_in_a_real_memory_cgroup)
{
	char cg[PATH_MAX], script[PATH_MAX * 3], line[2048];
	if (!th_make_cgroup(cg, sizeof(cg), "rt-test", "268435456"))
		cr_skip_test(
		    "cannot make a memory cgroup here (not root, or no memory controller)");
	struct run r;
	const char *dir = th_tmpdir();
	snprintf(r.stats, sizeof(r.stats), "%s/stats.jsonl", dir);
	/* The shell joins the cgroup, then becomes frag: the library starts inside it. */
	snprintf(script, sizeof(script),
	         "echo $$ > %s/cgroup.procs && exec %s --threads 2 --mib 224 --rounds 2 --wait", cg,
	         th_workload("frag"));
	char env_preload[PATH_MAX + 16], env_stats[PATH_MAX + 32], env_fifo[PATH_MAX + 32];
	snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s", th_lib());
	snprintf(env_stats, sizeof(env_stats), "ROUNDTRIM_STATS=%s", r.stats);
	snprintf(env_fifo, sizeof(env_fifo), "ROUNDTRIM_FIFO=%s/%%p.fifo", dir);
	const char *env[] = {env_preload,
	                     env_stats,
	                     env_fifo,
	                     "ROUNDTRIM_AUTO=off",
	                     "ROUNDTRIM_PRESSURE=50",
	                     "ROUNDTRIM_MATCH=frag",
	                     NULL};
	const char *argv[] = {"/bin/sh", "-c", script, NULL};
	th_spawn(&r.proc, argv, env);
	bool acted =
	    th_wait_line(r.stats, "\"trigger\":\"pressure\"", line, sizeof(line), TH_TIMEOUT_MS);
	th_close_stdin(&r.proc);
	th_wait(&r.proc, TH_TIMEOUT_MS);
	rmdir(cg);
	cr_assert(acted, "no action under pressure");
}
