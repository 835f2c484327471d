/* Storms and faults: rounds by the million through the FIFO, signals by the hundred thousand,
 * fork+exec, thread churn, dlopen/dlclose, exits in the middle of an action, and a host that
 * closes or replaces every descriptor, all while every allocating thread checks its heap
 * (test/workloads/stress). Nothing may be lost, hang, crash or change a byte.
 *
 * Sizes: the full ones divided by STRESS_DIVISOR (default 100: make check's short form);
 * make stress sets it to 1. */
#include "harness.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void
stress_init(void)
{
	/* A storm writer whose reader went away gets EPIPE, not the end of the test. */
	signal(SIGPIPE, SIG_IGN);
	/* Whatever the workload leaves running becomes ours: nothing may (see descendants). */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
}

static void stress_fini(void);
TestSuite(stress, .timeout = 900, .init = stress_init, .fini = stress_fini);

#define SIGNAL_ON "ROUNDTRIM_SIGNAL=RTMIN+8"
#define STAND_DOWN " off: descriptor "

static long
divisor(void)
{
	const char *text = getenv("STRESS_DIVISOR");
	long d = text ? strtol(text, NULL, 10) : 100;
	return d >= 1 ? d : 100;
}

static long
stress_size(long full, long least)
{
	long n = full / divisor();
	return n < least ? least : n;
}

/* The bound of each wait: generous, since the full sizes run for minutes on 2 loaded cores. */
static int
deadline_ms(void)
{
	return divisor() >= 100 ? 60000 : 600000;
}

static const char *
fifo_dir(void)
{
	static char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/fifo", th_tmpdir());
	if (mkdir(dir, 0700) != 0)
		cr_assert_eq(errno, EEXIST, "%s: %s", dir, strerror(errno));
	return dir;
}

static void
stress_start(struct th_probe *run, const char *preload, const char *const args[],
             const char *const extra[])
{
	char line[256];
	th_start_workload(run, "stress", preload, fifo_dir(), args, extra, line, sizeof(line));
	cr_assert_eq(strncmp(line, "ready ", 6), 0, "%s", line);
}

/* ----- FIFO writers ----- */

struct storm {
	pthread_t thread;
	const char *fifo;
	long limit; /* round lines to send; 0: until stopped, or until nobody reads */
	int trim_every, stats_every, gc_every; /* in lines; 0: never */
	bool reopen; /* a FIFO that breaks or is missing is opened again (a process that execs) */
	atomic_bool stop;
	atomic_long rounds; /* round lines written */
	long lines;
	bool broken; /* a write failed or could not be made: nobody reads the FIFO */
	bool timed_out;
};

static size_t
storm_chunk(struct storm *s, char *buf, size_t size, long *rounds)
{
	static const int gc_values[] = {1, 3, 2, 0, 1};
	size_t len = 0;
	*rounds = 0;
	while (len + 16 <= size && (!s->limit || atomic_load(&s->rounds) + *rounds < s->limit)) {
		long line = ++s->lines;
		int n;
		if (s->trim_every && line % s->trim_every == 0)
			n = snprintf(buf + len, size - len, "trim\n");
		else if (s->stats_every && line % s->stats_every == 0)
			n = snprintf(buf + len, size - len, "stats\n");
		else if (s->gc_every && line % s->gc_every == 0)
			n = snprintf(buf + len, size - len, "gc-rounds %d\n",
			             gc_values[(line / s->gc_every) % 5]);
		else
			n = snprintf(buf + len, size - len, "round\n"), (*rounds)++;
		len += (size_t)n;
	}
	return len;
}

/* Opens the FIFO for writing; with reopen, waits for it to come back (a directory change, or
 * 100 ms) until stopped. */
static int
storm_open(struct storm *s, int ifd)
{
	for (;;) {
		int fd = open(s->fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0 || !s->reopen || atomic_load(&s->stop))
			return fd;
		struct pollfd pfd = {.fd = ifd, .events = POLLIN};
		char events[4096];
		if (poll(&pfd, 1, 100) > 0 && read(ifd, events, sizeof(events)) < 0) {
			/* drained or not: the open is tried again either way */
		}
	}
}

/* Writes in chunks of at most PIPE_BUF bytes, which a FIFO takes whole or not at all. */
static void *
storm_main(void *arg)
{
	struct storm *s = arg;
	char chunk[PIPE_BUF], dir[PATH_MAX];
	long rounds;
	snprintf(dir, sizeof(dir), "%s", s->fifo);
	*strrchr(dir, '/') = '\0';
	int ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (ifd < 0 || inotify_add_watch(ifd, dir, IN_CREATE | IN_MOVED_TO) < 0) {
		s->broken = true;
		return NULL;
	}
	int fd = storm_open(s, ifd);
	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	size_t len = storm_chunk(s, chunk, sizeof(chunk), &rounds);
	while (fd >= 0 && len && !atomic_load(&s->stop)) {
		ssize_t n = write(fd, chunk, len);
		if (n == (ssize_t)len) {
			atomic_fetch_add(&s->rounds, rounds);
			len = storm_chunk(s, chunk, sizeof(chunk), &rounds);
			continue;
		}
		if (n >= 0 || errno != EAGAIN) {
			s->broken = true;
			close(fd);
			fd = s->reopen ? storm_open(s, ifd) : -1;
			continue;
		}
		struct pollfd pfd = {.fd = fd, .events = POLLOUT};
		poll(&pfd, 1, 100);
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - start.tv_sec) * 1000 > deadline_ms()) {
			s->timed_out = true;
			break;
		}
	}
	s->broken |= fd < 0;
	if (fd >= 0)
		close(fd);
	close(ifd);
	return NULL;
}

/* Starts n writers that share `limit` round lines (0: each writes until stopped); with
 * commands, trim, stats and gc-rounds lines come between the rounds. */
static void
storms_start(struct storm *s, int n, const char *fifo, long limit, bool commands, bool reopen)
{
	for (int i = 0; i < n; i++) {
		memset(&s[i], 0, sizeof(s[i]));
		s[i].fifo = fifo;
		s[i].limit = limit ? limit / n + (i < limit % n) : 0;
		s[i].reopen = reopen;
		if (commands) {
			s[i].trim_every = 997;
			s[i].stats_every = 4999;
			s[i].gc_every = 19997;
		}
		cr_assert_eq(pthread_create(&s[i].thread, NULL, storm_main, &s[i]), 0);
	}
}

/* Stops (when stop) and joins the writers; the round lines they wrote. */
static long
storms_join(struct storm *s, int n, bool stop, bool *broken)
{
	long rounds = 0;
	*broken = false;
	for (int i = 0; i < n; i++) {
		if (stop)
			atomic_store(&s[i].stop, true);
		pthread_join(s[i].thread, NULL);
		cr_assert_not(s[i].timed_out, "the FIFO stayed full for %d ms", deadline_ms());
		rounds += atomic_load(&s[i].rounds);
		*broken |= s[i].broken;
	}
	return rounds;
}

/* ----- what every run must end with ----- */

/* Reads the "done ..." line of a storm mode and checks it; the API rounds it counted. */
static long
read_done(struct th_probe *run, char *detail, size_t size)
{
	char line[512];
	cr_assert(th_read_line(&run->proc, line, sizeof(line), deadline_ms()),
	          "no result within %d ms", deadline_ms());
	cr_assert_eq(strncmp(line, "done ", 5), 0, "%s", line);
	if (th_field(line, "errors") != 0) {
		char err[8192];
		th_wait_stderr(&run->proc, "stress: ", err, sizeof(err), TH_TIMEOUT_MS);
		cr_assert_fail("%s\n%s", line, err);
	}
	cr_assert_eq(th_field(line, "eintr"), 0, "%s", line);
	cr_assert_gt(th_field(line, "verified"), 0, "%s", line);
	cr_log_info("%s", line);
	if (detail)
		snprintf(detail, size, "%s", line);
	return (long)th_field(line, "api");
}

static void
wait_rounds(struct th_probe *run, long rounds, char *status, size_t size)
{
	char needle[64];
	snprintf(needle, sizeof(needle), "\"rounds\":%ld,", rounds);
	if (!th_wait_line(run->status, needle, status, size, deadline_ms())) {
		th_read_file(run->status, status, size);
		cr_assert_fail("rounds never reached %ld: %s", rounds, status);
	}
}

/* Kills and reaps whatever still runs below this test process (children first, then what
 * their deaths hand over to us); how many there were. */
static int
kill_descendants(void)
{
	int found = 0;
	for (int pass = 0; pass < 10; pass++) {
		pid_t pids[256];
		int n = 0;
		DIR *tasks = opendir("/proc/self/task");
		for (struct dirent *t; tasks && (t = readdir(tasks)) != NULL;) {
			char path[PATH_MAX], buf[4096];
			snprintf(path, sizeof(path), "/proc/self/task/%s/children", t->d_name);
			if (t->d_name[0] == '.' || th_read_file(path, buf, sizeof(buf)) <= 0)
				continue;
			char *at = buf, *end;
			for (long pid; n < 256 && (pid = strtol(at, &end, 10)) > 0; at = end)
				pids[n++] = (pid_t)pid;
		}
		if (tasks)
			closedir(tasks);
		for (int i = 0; i < n; i++)
			kill(pids[i], SIGKILL);
		/* Reaped before the directory goes: a process still dying could write there. */
		for (int i = 0; i < n; i++)
			waitpid(pids[i], NULL, 0);
		found += n;
		if (!n)
			break;
	}
	return found;
}

static void
stress_fini(void)
{
	kill_descendants();
	th_cleanup();
}

/* No process of the run's is left: every descendant was reaped by its parent (orphans would
 * have become ours, see stress_init). */
static void
assert_no_descendants(void)
{
	int status;
	pid_t pid = waitpid(-1, &status, WNOHANG);
	if (pid > 0)
		cr_assert_fail("process %d was left behind (status %#x)", pid, status);
	cr_assert_eq(pid == 0 ? kill_descendants() : 0, 0, "processes of the run still ran");
	cr_assert_eq(errno, ECHILD);
}

/* Every "roundtrim:" line on stderr is a stand-down, each feature's at most once, and no
 * other line came at all. */
static void
assert_stderr(struct th_proc *p, bool stand_downs)
{
	char err[sizeof(p->errbuf)];
	size_t len = th_read_stderr(p, err, sizeof(err));
	/* The harness keeps the first 8 KiB: a full capture may end in a line cut short. */
	char *cut = len >= sizeof(err) - 1 ? strrchr(err, '\n') : NULL;
	if (cut)
		cut[1] = '\0';
	char *save = NULL;
	char seen[8][64];
	int n_seen = 0;
	for (char *line = strtok_r(err, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		/* The shared table's accepted race (roundtrim(7), DESCRIPTORS): a record or log
		 * line written between the check and the program's dup2 lands in what the program
		 * put on that number, here its stderr. */
		if (stand_downs &&
		    (!strncmp(line, "[RSS] roundtrim ", 16) || !strncmp(line, "{\"pid\":", 7)))
			continue;
		const char *off = strstr(line, STAND_DOWN);
		cr_assert(stand_downs && !strncmp(line, "roundtrim: ", 11) && off &&
		              strstr(off, "was closed or replaced by the program"),
		          "unexpected line on stderr: %s", line);
		char feature[64];
		snprintf(feature, sizeof(feature), "%.*s", (int)(off - line), line);
		for (int i = 0; i < n_seen; i++)
			cr_assert_str_neq(seen[i], feature, "said twice: %s", line);
		if (n_seen < 8)
			snprintf(seen[n_seen++], sizeof(seen[0]), "%s", feature);
	}
}

/* Ends a run: EOF on stdin, the exit status wanted, nobody left, stderr and the FIFO directory
 * clean. */
static void
finish(struct th_probe *run, int want, bool stand_downs)
{
	th_close_stdin(&run->proc);
	cr_assert(th_wait(&run->proc, deadline_ms()), "did not exit within %d ms", deadline_ms());
	cr_assert(WIFEXITED(run->proc.status) && WEXITSTATUS(run->proc.status) == want,
	          "status %#x, expected exit %d", run->proc.status, want);
	assert_no_descendants();
	assert_stderr(&run->proc, stand_downs);
	cr_assert_eq(th_entries_in(fifo_dir()), 0, "files left in the FIFO directory");
}

/* ----- the storms ----- */

/* A run that storms the FIFO while `args` works; every round sent and every API round of the
 * workload's own is counted. */
static void
storm_run(const char *preload, const char *const args[], const char *const env[], long limit,
          char *detail, size_t size)
{
	struct th_probe run;
	struct storm storms[3];
	char status[4096];
	bool broken;
	/* Alongside other work, one writer keeps the FIFO full and leaves the cores to the work. */
	int writers = limit ? 3 : 1;
	stress_start(&run, preload, args, env);
	storms_start(storms, writers, run.fifo, limit, true, false);
	th_write(&run.proc, "go\n");
	if (limit) {
		long sent = storms_join(storms, writers, false, &broken);
		cr_assert_not(broken, "a FIFO write failed");
		cr_assert_eq(sent, limit);
		th_write(&run.proc, "stop\n");
	}
	long api = read_done(&run, detail, size);
	long sent = limit ? limit : storms_join(storms, writers, true, &broken);
	cr_assert_not(broken, "a FIFO write failed");
	wait_rounds(&run, sent + api, status, sizeof(status));
	cr_assert_eq(th_field(status, "unknown_lines"), 0, "%s", status);
	cr_assert_eq(th_field(status, "oversized_lines"), 0, "%s", status);
	cr_assert_gt(th_field(status, "actions"), 0, "%s", status);
	if (preload && strstr(preload, "jemalloc"))
		cr_assert_not_null(strstr(status, "\"allocator\":\"jemalloc\""), "%s", status);
	cr_log_info("%ld FIFO rounds, %ld API rounds: %s", sent, api, status);
	/* The stats file's last line is the last batch: its round is the count. The status counts
	 * an API round as its caller counts it, before the worker's next look writes its record:
	 * so the record is waited for. */
	char stats[PATH_MAX], needle[64], last[4096];
	snprintf(stats, sizeof(stats), "%s/stats-%d.jsonl", th_tmpdir(), run.proc.pid);
	snprintf(needle, sizeof(needle), "\"round\":%ld,", sent + api);
	if (!th_wait_line(stats, needle, last, sizeof(last), deadline_ms())) {
		static char all[1 << 20];
		ssize_t n = th_read_file(stats, all, sizeof(all));
		const char *tail = n > 1500 ? all + n - 1500 : all;
		cr_assert_fail("no stats line for round %ld; status: %s\nthe stats file ends: %s",
		               sent + api, status, n > 0 ? tail : "(none)");
	}
	finish(&run, 0, false);
}

static void
fifo_rounds(const char *preload, long full)
{
	long rounds = stress_size(full, 3000);
	const char *env[] = {"ROUNDTRIM_GC_ROUNDS=1",
	                     th_env_in_tmp("ROUNDTRIM_STATS", "stats-%p.jsonl"), NULL};
	storm_run(preload, (const char *[]){"churn", NULL}, env, rounds, NULL, 0);
}

Test(stress, fifo_rounds_glibc)
{
	fifo_rounds(NULL, 1000000);
}

static const char *
jemalloc_preload(bool first)
{
	static char buf[2 * PATH_MAX + 2];
	const char *jemalloc = th_jemalloc();
	if (!jemalloc)
		cr_skip_test("Debian's libjemalloc2 is not installed (scripts/deps.sh)");
	snprintf(buf, sizeof(buf), "%s:%s", first ? jemalloc : th_lib(),
	         first ? th_lib() : jemalloc);
	return buf;
}

Test(stress, fifo_rounds_jemalloc_before_the_library)
{
	fifo_rounds(jemalloc_preload(true), 300000);
}

Test(stress, fifo_rounds_jemalloc_after_the_library)
{
	fifo_rounds(jemalloc_preload(false), 300000);
}

Test(stress, signals)
{
	long total = stress_size(100000, 1000);
	struct th_probe run;
	struct storm storm;
	char status[4096];
	bool broken;
	const char *env[] = {SIGNAL_ON, "ROUNDTRIM_GC_ROUNDS=50",
	                     th_env_in_tmp("ROUNDTRIM_STATS", "stats-%p.jsonl"), NULL};
	stress_start(&run, NULL, (const char *[]){"churn", NULL}, env);
	th_write(&run.proc, "go\n");
	storms_start(&storm, 1, run.fifo, total / 10, false, false);
	/* Real-time signals queue up to RLIMIT_SIGPENDING; beyond, sigqueue says EAGAIN: then
	 * wait for the worker to rewrite its status (it has taken some) and go on. */
	int ifd = inotify_init1(IN_CLOEXEC);
	cr_assert_geq(ifd, 0);
	cr_assert_geq(inotify_add_watch(ifd, run.status, IN_MODIFY), 0);
	long accepted = 0, refused = 0;
	while (accepted < total) {
		if (sigqueue(run.proc.pid, SIGRTMIN + 8, (union sigval){0}) == 0) {
			accepted++;
			continue;
		}
		cr_assert_eq(errno, EAGAIN, "sigqueue: %s", strerror(errno));
		refused++;
		struct pollfd pfd = {.fd = ifd, .events = POLLIN};
		cr_assert_gt(poll(&pfd, 1, deadline_ms()), 0, "the worker stopped taking signals");
		char events[4096];
		cr_assert_gt(read(ifd, events, sizeof(events)), 0);
	}
	close(ifd);
	long sent = storms_join(&storm, 1, false, &broken);
	cr_assert_not(broken);
	th_write(&run.proc, "stop\n");
	long api = read_done(&run, NULL, 0);
	wait_rounds(&run, accepted + sent + api, status, sizeof(status));
	cr_assert_eq(th_field(status, "signal"), SIGRTMIN + 8, "%s", status);
	cr_log_info("%ld signals (%ld sigqueue refusals), %ld FIFO rounds, %ld API rounds",
	            accepted, refused, sent, api);
	finish(&run, 0, false);
}

Test(stress, fork_exec)
{
	char n[32], detail[512];
	long forks = stress_size(10000, 100);
	snprintf(n, sizeof(n), "%ld", forks);
	/* The fork children that stay start their library a second after the fork. */
	const char *env[] = {"ROUNDTRIM_GC_ROUNDS=1", "ROUNDTRIM_CHILD_START=1s",
	                     th_env_in_tmp("ROUNDTRIM_STATS", "stats-%p.jsonl"), NULL};
	storm_run(NULL, (const char *[]){"forkexec", n, fifo_dir(), NULL}, env, 0, detail,
	          sizeof(detail));
	cr_assert_eq(th_field(detail, "children") + th_field(detail, "stays"), forks, "%s", detail);
	cr_assert_geq(th_field(detail, "stays"), 1, "%s", detail);
}

static void
thread_churn(const char *preload)
{
	char n[32], detail[512];
	long threads = stress_size(10000, 100);
	snprintf(n, sizeof(n), "%ld", threads);
	const char *env[] = {"ROUNDTRIM_GC_ROUNDS=1",
	                     th_env_in_tmp("ROUNDTRIM_STATS", "stats-%p.jsonl"), NULL};
	storm_run(preload, (const char *[]){"threads", n, "16", NULL}, env, 0, detail,
	          sizeof(detail));
	cr_assert_eq(th_field(detail, "threads"), threads, "%s", detail);
}

Test(stress, thread_churn)
{
	thread_churn(NULL);
}

/* jemalloc flushes an exiting thread's cache while the worker purges every arena. */
Test(stress, thread_churn_jemalloc)
{
	thread_churn(jemalloc_preload(false));
}

Test(stress, dlopen_dlclose)
{
	char n[32], detail[512];
	long times = stress_size(10000, 100);
	snprintf(n, sizeof(n), "%ld", times);
	const char *env[] = {"ROUNDTRIM_GC_ROUNDS=1",
	                     th_env_in_tmp("ROUNDTRIM_STATS", "stats-%p.jsonl"), NULL};
	storm_run(NULL, (const char *[]){"dlopen", n, th_workload("libstress_dso.so"), NULL}, env,
	          0, detail, sizeof(detail));
	cr_assert_eq(th_field(detail, "dlopen"), times / 2 * 2, "%s", detail);
}

/* A process that replaces itself again and again (its FIFO and status file set aside at each
 * exec, taken back after a failed one) while rounds storm at the path and its threads allocate.
 * Rounds sent to an image that execs are lost by design: only liveness, heap and files count. */
Test(stress, exec_chain)
{
	char n[32];
	long images = stress_size(1000, 10);
	snprintf(n, sizeof(n), "%ld", images);
	struct th_probe run;
	struct storm storms[2];
	bool broken;
	const char *env[] = {"ROUNDTRIM_GC_ROUNDS=1",
	                     th_env_in_tmp("ROUNDTRIM_STATS", "stats-%p.jsonl"), NULL};
	stress_start(&run, NULL, (const char *[]){"execchain", n, fifo_dir(), NULL}, env);
	storms_start(storms, 2, run.fifo, 0, true, true);
	th_write(&run.proc, "go\n");
	read_done(&run, NULL, 0);
	long sent = storms_join(storms, 2, true, &broken);
	cr_log_info("%ld images, %ld rounds written meanwhile", images, sent);
	finish(&run, 0, false);
}

/* exit, _exit and return from main, at a random moment of the worker's trim or status write. */
Test(stress, exit_during_action)
{
	static const char *const ways[] = {"exit", "_exit", "return"};
	long runs = stress_size(300, 3), unfinished = 0;
	const char *env[] = {"ROUNDTRIM_GC_ROUNDS=1",
	                     th_env_in_tmp("ROUNDTRIM_STATS", "stats-%p.jsonl"), NULL};
	for (long r = 0; r < runs; r++) {
		struct th_probe run;
		char line[256];
		stress_start(&run, NULL,
		             (const char *[]){"exitrace", ways[r % 3], fifo_dir(), NULL}, env);
		th_write(&run.proc, "go\n");
		cr_assert(th_read_line(&run.proc, line, sizeof(line), deadline_ms()));
		cr_assert_eq(strncmp(line, "exiting actions=", 16), 0, "%s", line);
		unfinished += th_field(line, "actions") == 0;
		finish(&run, 7 + (int)(r % 3), false);
	}
	cr_log_info("%ld of %ld runs left before the trim's status was written", unfinished, runs);
}

/* Where the library shares the program's descriptor table (no table of its own and no keeper,
 * and ROUNDTRIM_SHARED_TABLE=1), the worker checks a descriptor (fstat: device and inode), then
 * uses it; the host can close or replace it in between, and the use then reads or writes the
 * host's file: the races that setting accepts (roundtrim(7), DESCRIPTORS). The program's threads
 * make no call on the library's numbers in any table (shared_table_api_round_...). In a table
 * of its own (the worker's or the keeper's) the library has no such window. */
/* statm, smaps_rollup, stat, the FIFO, the status file, stats, log. */
#define LIBRARY_FILES 7

/* The host closes (or replaces) every number the library holds while rounds storm, and then
 * checks that no file of its own was read, written or closed. In the program's table (the
 * workload "nokeeper:stress", with ROUNDTRIM_SHARED_TABLE=1) each feature stands down with one
 * line, and a file the host put on a number between the worker's check and its use takes that
 * use (the races above, counted; the test once asserted none and failed about one run in 70 of
 * dupover); in the worker's own table ("stress") or the keeper's ("noshare:stress") nothing of
 * the library's is touched and the rounds go on. */
static void
hostile(const char *workload, const char *how, long full)
{
	bool shared = !strncmp(workload, "nokeeper:", 9);
	long runs = stress_size(full, 1), touched_runs = 0;
	char floor[16];
	snprintf(floor, sizeof(floor), "%d", th_fd_floor());
	const char *env[] = {"ROUNDTRIM_GC_ROUNDS=1",
	                     th_env_in_tmp("ROUNDTRIM_STATS", "stats-%p.jsonl"),
	                     th_env_in_tmp("ROUNDTRIM_LOG", "log-%p"),
	                     "ROUNDTRIM_PROFILE=1",
	                     shared ? "ROUNDTRIM_SHARED_TABLE=1" : NULL,
	                     NULL};
	static const char *const features[] = {"FIFO trigger", "RSS readings", "stats file",
	                                       "log file"};
	for (long r = 0; r < runs; r++) {
		struct th_probe run;
		struct storm storms[3];
		char line[512], err[8192], expect[64];
		bool broken;
		th_start_workload(&run, workload, NULL, fifo_dir(),
		                  (const char *[]){"hostile", how, floor, NULL}, env, line,
		                  sizeof(line));
		cr_assert_eq(strncmp(line, "ready ", 6), 0, "%s", line);
		storms_start(storms, 3, run.fifo, 0, true, false);
		th_write(&run.proc, "go\n");
		cr_assert(th_read_line(&run.proc, line, sizeof(line), deadline_ms()));
		snprintf(expect, sizeof(expect), "hostile fds=%d", LIBRARY_FILES);
		cr_assert_str_eq(line, expect);
		for (size_t i = 0; shared && i < sizeof(features) / sizeof(features[0]); i++) {
			char needle[64];
			snprintf(needle, sizeof(needle), "%s" STAND_DOWN, features[i]);
			cr_assert(
			    th_wait_stderr(&run.proc, needle, err, sizeof(err), deadline_ms()),
			    "run %ld: no line for %s: %s", r, features[i], err);
		}
		if (shared) {
			cr_assert(th_wait_path(run.fifo, true, deadline_ms()), "FIFO left behind");
			cr_assert(th_wait_path(run.status, true, deadline_ms()),
			          "status left behind");
		}
		/* With nobody reading the FIFO any more, every writer breaks; with the worker's
		 * own table, none does. */
		long sent = storms_join(storms, 3, !shared, &broken);
		cr_assert_eq(broken, shared, "run %ld: writers broken: %d", r, broken);
		th_write(&run.proc, "check\n");
		long api = read_done(&run, line, sizeof(line));
		snprintf(expect, sizeof(expect), "intact=%d/%d", LIBRARY_FILES, LIBRARY_FILES);
		/* In the program's table a file put on a number between the worker's check and its
		 * use takes that one use (the races above): there it is counted, not asserted. */
		if (shared && !strstr(line, expect))
			touched_runs++;
		else
			cr_assert_not_null(strstr(line, expect), "run %ld: %s", r, line);
		if (!shared) {
			char status[4096];
			wait_rounds(&run, sent + api, status, sizeof(status));
		}
		finish(&run, 0, shared);
	}
	if (shared)
		cr_log_info(
		    "%ld of %ld runs: a file of the program's was used between a check and its "
		    "use",
		    touched_runs, runs);
}

Test(stress, host_closes_every_descriptor)
{
	hostile("stress", "closeall", 100);
}

Test(stress, host_dup2s_over_every_descriptor)
{
	hostile("stress", "dupover", 100);
}

Test(stress, keeper_host_closes_every_descriptor)
{
	hostile("noshare:stress", "closeall", 100);
}

Test(stress, keeper_host_dup2s_over_every_descriptor)
{
	hostile("noshare:stress", "dupover", 100);
}

Test(stress, shared_table_host_closes_every_descriptor)
{
	hostile("nokeeper:stress", "closeall", 100);
}

Test(stress, shared_table_host_dup2s_over_every_descriptor)
{
	hostile("nokeeper:stress", "dupover", 100);
}

/* Thread tid of pid, stopped by ptrace: waits for its next stop within the deadline. */
static bool
trace_wait(pid_t tid, int *status)
{
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &chld, NULL); /* a stop of the tracee sends the tracer one */
	struct timespec start, now, tick = {0, 100 * 1000 * 1000};
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		pid_t got = waitpid(tid, status, __WALL | WNOHANG);
		if (got != 0)
			return got == tid;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - start.tv_sec) * 1000 > deadline_ms())
			return false;
		sigtimedwait(&chld, NULL, &tick);
	}
}

/* Lets tid run to its next system-call stop, entry or exit, passing on the signals it meets on
 * the way; what it is stopped at goes to info. what: the failure's words. */
static void
trace_next_call(pid_t tid, struct __ptrace_syscall_info *info, const char *what)
{
	int status, signal_to_pass = 0;
	for (;;) {
		cr_assert_eq(ptrace(PTRACE_SYSCALL, tid, 0, signal_to_pass), 0);
		signal_to_pass = 0;
		cr_assert(trace_wait(tid, &status), "%s", what);
		cr_assert(WIFSTOPPED(status), "the thread ended: %#x", status);
		if (WSTOPSIG(status) != (SIGTRAP | 0x80)) {
			if (status >> 16 == 0)
				signal_to_pass = WSTOPSIG(status);
			continue;
		}
		if (ptrace(PTRACE_GET_SYSCALL_INFO, tid, sizeof(*info), info) > 0)
			return;
	}
}

/* Stops tid (ptrace: the test process becomes its tracer), then holds it at the entry of its
 * next call nr whose first argument is fd; kick (a line for the probe, or a FIFO write) makes it
 * go there. It stays stopped at that entry: the call has not looked at its descriptor yet. */
static void
hold_at_call(pid_t tid, long nr, int fd, void (*kick)(struct th_probe *), struct th_probe *run)
{
	int status;
	char what[96];
	snprintf(what, sizeof(what), "the thread never entered call %ld on %d", nr, fd);
	cr_assert_eq(ptrace(PTRACE_SEIZE, tid, 0, PTRACE_O_TRACESYSGOOD), 0, "ptrace: %s",
	             strerror(errno));
	cr_assert_eq(ptrace(PTRACE_INTERRUPT, tid, 0, 0), 0);
	cr_assert(trace_wait(tid, &status));
	kick(run);
	for (;;) {
		struct __ptrace_syscall_info info;
		trace_next_call(tid, &info, what);
		if (info.op == PTRACE_SYSCALL_INFO_ENTRY && info.entry.nr == (uint64_t)nr &&
		    info.entry.args[0] == (uint64_t)fd)
			return;
	}
}

/* The number of pid's descriptor whose link ends in suffix: in the program's table, or else in
 * the table of the library's own (its keeper's or its worker's). */
static int
fd_ending_in(const char *dir, const char *suffix)
{
	int found = -1;
	DIR *d = opendir(dir);
	for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
		char link[PATH_MAX], target[PATH_MAX];
		snprintf(link, sizeof(link), "%.200s/%s", dir, e->d_name);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		size_t len = strlen(suffix);
		if (n > (ssize_t)len && (target[n] = '\0', !strcmp(target + n - len, suffix)))
			found = atoi(e->d_name);
	}
	if (d)
		closedir(d);
	return found;
}

static int
fd_ending(pid_t pid, const char *suffix)
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
	int found = fd_ending_in(dir, suffix);
	pid_t holder = th_fd_holder(pid);
	snprintf(dir, sizeof(dir), "/proc/%d/task/%d/fd", pid, holder);
	if (found < 0 && holder > 0)
		found = fd_ending_in(dir, suffix);
	cr_assert_geq(found, 0, "no descriptor of %d ends in %s", pid, suffix);
	return found;
}

static void
kick_fifo(struct th_probe *run)
{
	cr_assert(th_fifo_write(run->fifo, "round\n", 6));
}

static void
kick_api(struct th_probe *run)
{
	th_write(&run->proc, "round\n");
}

/* Starts workload with args (a probe in a "dupover" mode), holds the library's thread that holds
 * its descriptors (the worker, or its keeper) at its next call nr on the descriptor whose link
 * ends in suffix, where a FIFO round sends it (after its check, in the program's table), has
 * the program dup2 its pipe over that number, and lets the thread go on. */
static void
replaced_while_held(struct th_probe *run, const char *workload, const char *const args[],
                    const char *const extra[], long nr, const char *suffix)
{
	char line[512];
	th_start_workload(run, workload, NULL, NULL, args, extra, line, sizeof(line));
	int fd = fd_ending(run->proc.pid, suffix);
	pid_t holder = th_fd_holder(run->proc.pid);
	cr_assert_gt(holder, 0, "no thread of the library's");
	hold_at_call(holder, nr, fd, kick_fifo, run);
	th_write(&run->proc, "go\n");
	cr_assert(th_read_line(&run->proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_eq(strncmp(line, "replaced ", 9), 0, "%s", line);
	cr_assert_eq(ptrace(PTRACE_DETACH, holder, 0, 0), 0);
}

/* The thread that reads the FIFO, woken by a round, is held before its read; the program dup2s
 * a pipe holding "hello" over that number; the library's read must not take the program's
 * "hello". */
static void
worker_read_held(const char *workload, const char *const extra[])
{
	struct th_probe run;
	char line[512];
	replaced_while_held(&run, workload, (const char *[]){"dupover", NULL}, extra, SYS_read,
	                    ".fifo");
	th_write(&run.proc, "read\n");
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_str_eq(line, "got=hello", "the library read the program's pipe: %s", line);
	th_kill(&run.proc);
}

Test(stress, worker_reads_no_descriptor_replaced_after_its_check)
{
	worker_read_held("probe", NULL);
}

Test(stress, keeper_reads_no_descriptor_replaced_after_its_check)
{
	worker_read_held("noshare:probe", NULL);
}

/* In the program's table (ROUNDTRIM_SHARED_TABLE=1), the worker's status write is held after its
 * check while the program puts a pipe on the status file's number: the write fails (Illegal
 * seek), and the feature stands down with its one line, as its next check would have it. Before,
 * the failed write first said "a record dropped: ... Illegal seek", a line that blamed the file
 * (make stress: stress/shared_table_host_dup2s_over_every_descriptor, "unexpected line"). */
Test(stress, shared_table_status_write_held_stands_down_in_one_line)
{
	struct th_probe run;
	char err[8192];
	replaced_while_held(&run, "nokeeper:probe", (const char *[]){"dupover", "status", NULL},
	                    (const char *[]){"ROUNDTRIM_SHARED_TABLE=1", NULL}, SYS_pwrite64,
	                    ".status");
	cr_assert(
	    th_wait_stderr(&run.proc, "status file" STAND_DOWN, err, sizeof(err), TH_TIMEOUT_MS),
	    "the status file never stood down: %s", err);
	cr_assert_null(strstr(err, "a record dropped"), "%s", err);
	th_kill(&run.proc);
}

/* In the program's table, roundtrim_round() once woke the worker with a write of "\n" to the
 * FIFO's number, after the library's check, from the calling thread: held between the two while
 * the program put a file of its own on that number, the thread then wrote into the program's
 * file. The calling thread now makes no system call on the library's numbers: traced from the
 * round's start to its next wait for a round (the probe's one-byte read), it writes nothing on
 * the FIFO's number. */
Test(stress, shared_table_api_round_makes_no_call_on_the_librarys_numbers)
{
	struct th_probe run;
	char line[512];
	th_start_workload(&run, "nokeeper:probe", NULL, NULL, (const char *[]){"apiwake", NULL},
	                  (const char *[]){"ROUNDTRIM_SHARED_TABLE=1", NULL}, line, sizeof(line));
	pid_t caller = (pid_t)th_field(line, "tid");
	cr_assert_gt(caller, 0, "%s", line);
	int fifo = fd_ending(run.proc.pid, ".fifo");
	cr_assert_geq(fifo, 0, "no FIFO in the program's table");
	int status;
	cr_assert_eq(ptrace(PTRACE_SEIZE, caller, 0, PTRACE_O_TRACESYSGOOD), 0, "ptrace: %s",
	             strerror(errno));
	cr_assert_eq(ptrace(PTRACE_INTERRUPT, caller, 0, 0), 0);
	cr_assert(trace_wait(caller, &status));
	kick_api(&run);
	/* The first stop is the end of the read that was waiting for the round. */
	struct __ptrace_syscall_info info;
	trace_next_call(caller, &info, "the round never began");
	for (;;) {
		trace_next_call(caller, &info, "the round never ended");
		if (info.op != PTRACE_SYSCALL_INFO_ENTRY)
			continue;
		cr_assert(!(info.entry.nr == SYS_write && info.entry.args[0] == (uint64_t)fifo),
		          "roundtrim_round() wrote on the FIFO's number %d", fifo);
		if (info.entry.nr == SYS_read && info.entry.args[2] == 1)
			break;
	}
	cr_assert_eq(ptrace(PTRACE_DETACH, caller, 0, 0), 0);
	th_kill(&run.proc);
}

/* In a table of the library's own, the API's round writes nothing anywhere: the program's file
 * on the FIFO's number stays as it was, and the worker finds the round on its next tick. */
static void
api_round_writes_nothing(const char *workload)
{
	struct th_probe run;
	char line[512];
	th_start_workload(&run, workload, NULL, NULL, (const char *[]){"apiwake", NULL}, NULL, line,
	                  sizeof(line));
	th_write(&run.proc, "replace\n");
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_eq(strncmp(line, "replaced ", 9), 0, "%s", line);
	th_write(&run.proc, "round\n");
	th_wait_rounds(&run, 1, line, sizeof(line));
	th_write(&run.proc, "check\n");
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_str_eq(line, "file=mine offset=0",
	                 "the library wrote into the program's file: %s", line);
	th_kill(&run.proc);
}

Test(stress, api_round_writes_nothing_of_the_programs)
{
	api_round_writes_nothing("probe");
}

Test(stress, keeper_api_round_writes_nothing_of_the_programs)
{
	api_round_writes_nothing("noshare:probe");
}

/* No thread of the program is ever left asleep on a free arena lock by the glibc release's
 * handovers (test/workloads/strand: two threads in glibc's one arena, a release every 200 ms;
 * then the same with one thread forking). A wake the worker took while it waited for a waiter's
 * turn, and passed on only to its next lock of the same arena, stranded one 8 times in 7 runs of
 * 30 s (review-s9 H1); glibc_lock/a_waiter_queued_behind_the_worker_* show it deterministically. */
static void
strand_run(const char *fork_word)
{
	char seconds[32], out[256], preload[PATH_MAX + 16];
	snprintf(seconds, sizeof(seconds), "%ld", stress_size(60, 4));
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", th_lib());
	const char *argv[] = {th_workload("strand"), seconds, "200", fork_word, NULL};
	const char *env[] = {preload, "MALLOC_ARENA_MAX=1",
	                     "GLIBC_TUNABLES=glibc.malloc.tcache_count=0", NULL};
	struct th_proc p;
	th_spawn(&p, argv, env);
	th_close_stdin(&p);
	bool ended = th_wait(&p, (int)(atol(seconds) + 60) * 1000);
	char err[4096];
	th_read_stderr(&p, err, sizeof(err));
	cr_assert(ended, "strand did not end: %s", err);
	cr_assert(th_read_line(&p, out, sizeof(out), 1000), "no result: %s", err);
	cr_assert(WIFEXITED(p.status) && WEXITSTATUS(p.status) == 0, "%s %s", out, err);
	cr_assert_eq(th_field(out, "stranded"), 0, "%s %s", out, err);
	cr_assert_gt(th_field(out, "releases"), 1, "%s", out);
}

Test(stress, no_thread_is_left_asleep_on_a_free_arena_lock)
{
	strand_run(NULL);
	strand_run("--fork");
}
