/* ROUNDTRIM_SITES in real processes: a C workload that leaks one known function's blocks each
 * round while churning elsewhere has that function as its top grower within 3 rounds; the same
 * workload without the leak has no site growing more than 2 rounds in a row; a Python program
 * that keeps a growing list of tensors is named by its Python function and its native frames;
 * sampling changes nothing the program can see (descriptors high, a closed one stands it down,
 * forks that never hang), and off, it loads nothing. */
#include "harness.h"
#include "rt_sites.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(sites, .timeout = 240, .fini = th_cleanup);

#define PYTHON "/usr/bin/python3"

struct sites_run {
	struct th_proc proc;
	char env[8][PATH_MAX];
	char stats[PATH_MAX];
	char sites[PATH_MAX];
};

/* Starts argv with the library, sampling every `sample` bytes on average, stats and sites in
 * th_tmpdir(); waits for its "ready". */
static void
sites_start(struct sites_run *run, const char *const argv[], const char *sample)
{
	const char *dir = th_tmpdir();
	snprintf(run->env[0], PATH_MAX, "LD_PRELOAD=%s", th_lib());
	snprintf(run->env[1], PATH_MAX, "ROUNDTRIM_FIFO=%s/%%p.fifo", dir);
	snprintf(run->env[2], PATH_MAX, "ROUNDTRIM_STATS=%s/%%p.jsonl", dir);
	snprintf(run->env[3], PATH_MAX, "ROUNDTRIM_SITES=1");
	snprintf(run->env[4], PATH_MAX, "ROUNDTRIM_SAMPLE_BYTES=%s", sample);
	/* Rounds come from the program alone: the detector must not add its own. */
	snprintf(run->env[5], PATH_MAX, "ROUNDTRIM_AUTO=off");
	const char *env[] = {run->env[0], run->env[1], run->env[2], run->env[3],
	                     run->env[4], run->env[5], NULL};
	th_spawn(&run->proc, argv, env);
	snprintf(run->stats, sizeof(run->stats), "%s/%d.jsonl", dir, run->proc.pid);
	snprintf(run->sites, sizeof(run->sites), "%s/%d.sites.jsonl", dir, run->proc.pid);
	char line[256];
	cr_assert(th_read_line(&run->proc, line, sizeof(line), 60000), "%s: no first line",
	          argv[0]);
	cr_assert_str_eq(line, "ready");
}

/* One round: a line to the program, its "round N", and the library's report of it. */
static void
sites_round(struct sites_run *run, int round)
{
	char line[RT_SITES_LINE_MAX], want[32], needle[64];
	th_write(&run->proc, "\n");
	cr_assert(th_read_line(&run->proc, line, sizeof(line), TH_TIMEOUT_MS), "round %d", round);
	snprintf(want, sizeof(want), "round %d", round);
	cr_assert_str_eq(line, want);
	snprintf(needle, sizeof(needle), "\"round\":%d,\"since\"", round);
	cr_assert(th_wait_line(run->sites, needle, line, sizeof(line), TH_TIMEOUT_MS),
	          "no sites report of round %d in %s", round, run->sites);
}

static void
sites_end(struct sites_run *run)
{
	th_close_stdin(&run->proc);
	cr_assert(th_wait(&run->proc, TH_TIMEOUT_MS));
	char err[4096];
	th_read_stderr(&run->proc, err, sizeof(err));
	cr_assert(WIFEXITED(run->proc.status) && WEXITSTATUS(run->proc.status) == 0, "%s", err);
	cr_assert_null(strstr(err, "sites off"), "%s", err);
}

static char report[1 << 17];

/* `roundtrim report --sites` on the run's stats file, into report. */
static void
sites_report(const struct sites_run *run)
{
	static char err[8192];
	const char *argv[] = {RT_BUILD_DIR "/roundtrim", "report", "--sites", run->stats, NULL};
	int status = th_run(argv, NULL, report, sizeof(report), err, sizeof(err));
	cr_assert_eq(status, 0, "report failed: %s", err);
}

/* The table row (pid, site, grew, in a row, ...) whose "where" names what. */
static bool
sites_row(const char *what, unsigned *site, unsigned *in_a_row)
{
	for (char *line = report; line && *line;) {
		char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		int pid;
		char grew[32];
		if (memmem(line, len, what, strlen(what)) &&
		    sscanf(line, "%d %u %31s %u", &pid, site, grew, in_a_row) == 4)
			return true;
		line = end ? end + 1 : NULL;
	}
	return false;
}

static struct rt_sites_read sites_line;

/* The sites file's round lines, in order, fed to fn. */
static void
sites_rounds(const char *path, void (*fn)(const struct rt_sites_round *, void *), void *ctx)
{
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	static char line[RT_SITES_LINE_MAX];
	while (fgets(line, sizeof(line), f)) {
		enum rt_sites_line kind = rt_sites_read_line(line, &sites_line);
		cr_assert_neq(kind, RT_SITES_LINE_BAD, "%s", line);
		if (kind == RT_SITES_LINE_ROUND)
			fn(&sites_line.round, ctx);
	}
	fclose(f);
}

struct sites_top {
	unsigned site;
	int first_top; /* the first round whose largest growth is site's, 0 for none */
};

static void
sites_top_of(const struct rt_sites_round *r, void *ctx)
{
	struct sites_top *t = ctx;
	if (!t->first_top && r->ngrew && r->grew[0].site == t->site)
		t->first_top = (int)r->round;
}

Test(sites, leak_is_the_top_grower_within_3_rounds)
{
	struct sites_run run;
	/* 4 MiB kept a round in 256 B blocks; 16 MiB churned in each of 2 threads; an 8 MiB
	 * cache turned over. A sample every 64 KiB: 64 samples of the leak a round. */
	const char *argv[] = {th_workload("leaky"), "--leak", "4M", "--threads", "2", NULL};
	sites_start(&run, argv, "64K");
	for (int round = 1; round <= 3; round++)
		sites_round(&run, round);
	sites_end(&run);
	sites_report(&run);
	unsigned site, in_a_row;
	cr_assert(sites_row("leaky_keep", &site, &in_a_row), "no row names leaky_keep:\n%s",
	          report);
	cr_assert_eq(in_a_row, 3, "%s", report);
	struct sites_top top = {.site = site};
	sites_rounds(run.sites, sites_top_of, &top);
	cr_assert(top.first_top >= 1 && top.first_top <= 3,
	          "site %u (leaky_keep) never grew most in rounds 1-3:\n%s", site, report);
	/* The report's first row is the leak, with its call path named. */
	cr_assert_not_null(strstr(report, "leaky_keep (leaky.c:"), "%s", report);
	char *first_row = strstr(report, "where\n");
	cr_assert_not_null(first_row);
	first_row = strchr(first_row, '\n') + 1;
	char *eol = strchr(first_row, '\n');
	cr_assert_not_null(memmem(first_row, (size_t)(eol - first_row), "leaky_keep", 10),
	                   "the first row is not the leak:\n%s", report);
}

struct sites_runs {
	struct rt_sites_trend trend[256];
	size_t n;
	int rounds;
};

static void
sites_trends(const struct rt_sites_round *r, void *ctx)
{
	struct sites_runs *runs = ctx;
	runs->rounds++;
	for (size_t g = 0; g < r->ngrew; g++) {
		struct rt_sites_trend *t = NULL;
		for (size_t i = 0; i < runs->n && !t; i++)
			if (runs->trend[i].site == r->grew[g].site)
				t = &runs->trend[i];
		if (!t) {
			cr_assert_lt(runs->n, 256);
			t = &runs->trend[runs->n++];
			rt_sites_trend_init(t, r->pid, r->grew[g].site);
		}
		rt_sites_trend_grew(t, r->since, r->round, r->grew[g].delta, r->grew[g].live);
	}
}

Test(sites, no_leak_grows_no_more_than_2_rounds_in_a_row)
{
	struct sites_run run;
	const char *argv[] = {th_workload("leaky"), "--threads", "2", NULL};
	sites_start(&run, argv, "64K");
	for (int round = 1; round <= 8; round++)
		sites_round(&run, round);
	sites_end(&run);
	struct sites_runs runs = {.n = 0};
	sites_rounds(run.sites, sites_trends, &runs);
	cr_assert_eq(runs.rounds, 8);
	for (size_t i = 0; i < runs.n; i++)
		cr_assert_leq(runs.trend[i].longest, 2, "site %u grew %lu reports in a row",
		              runs.trend[i].site, (unsigned long)runs.trend[i].longest);
	/* The cache was filled in round 1: it grew there; its turnover since is noise. */
	sites_report(&run);
	unsigned site, in_a_row;
	cr_assert(sites_row("leaky_cache", &site, &in_a_row), "%s", report);
	cr_assert_leq(in_a_row, 2, "%s", report);
}

Test(sites, python_tensors_call_path_is_named)
{
	struct sites_run run;
	/* 32 tensors of 64 KiB kept a round: 2 MiB. */
	const char *argv[] = {PYTHON, RT_SOURCE_DIR "/test/workloads/py/tensors.py", "32", NULL};
	sites_start(&run, argv, "64K");
	for (int round = 1; round <= 3; round++)
		sites_round(&run, round);
	sites_end(&run);
	sites_report(&run);
	unsigned site, in_a_row;
	cr_assert(sites_row("keep_tensors (tensors.py:", &site, &in_a_row),
	          "no row names keep_tensors:\n%s", report);
	cr_assert_eq(in_a_row, 3, "%s", report);
	/* Its call path: the Python functions, and the native frames through the interpreter
	 * down to PyTorch's allocator. */
	cr_assert_not_null(strstr(report, "python keep_tensors ("), "%s", report);
	cr_assert_not_null(strstr(report, "tensors.py:"), "%s", report);
	cr_assert_not_null(strstr(report, "_PyEval_EvalFrameDefault"), "%s", report);
	cr_assert_not_null(strstr(report, "[libc10.so"), "%s", report);
}

static bool
sites_maps_have(int pid, const char *what)
{
	char path[64];
	static char maps[1 << 20];
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	cr_assert_gt(th_read_file(path, maps, sizeof(maps)), 0);
	return strstr(maps, what) != NULL;
}

/* The pipes a process holds above stderr: a bit per descriptor below 1024. */
static void
sites_pipes(int pid, bool pipes[1024])
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
	DIR *d = opendir(dir);
	cr_assert_not_null(d);
	memset(pipes, 0, 1024 * sizeof(bool));
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		char link[PATH_MAX], target[PATH_MAX] = "";
		snprintf(link, sizeof(link), "%s/%s", dir, e->d_name);
		int fd = atoi(e->d_name);
		if (fd > 2 && fd < 1024 && readlink(link, target, sizeof(target) - 1) > 0 &&
		    !strncmp(target, "pipe:", 5))
			pipes[fd] = true;
	}
	closedir(d);
}

/* Off, the library loads nothing for it; on, libunwind's pipe is the one thing of the library's
 * in the program's descriptor table, above the floor and close-on-exec, and a program that closes
 * it stands sampling down, said once, and keeps its own next descriptor untouched. */
Test(sites, descriptors_stay_high_and_a_closed_one_stands_it_down)
{
	struct sites_run off, run;
	static bool before[1024], after[1024];
	char line[512], err[8192];
	/* The same program with the library, sites off: what the runner lets children inherit. */
	const char *off_argv[] = {th_workload("leaky"), NULL};
	snprintf(off.env[0], PATH_MAX, "LD_PRELOAD=%s", th_lib());
	snprintf(off.env[1], PATH_MAX, "ROUNDTRIM_STATS=%s/%%p.jsonl", th_tmpdir());
	const char *off_env[] = {off.env[0], off.env[1], NULL};
	th_spawn(&off.proc, off_argv, off_env);
	cr_assert(th_read_line(&off.proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_not(sites_maps_have(off.proc.pid, "libunwind"));
	sites_pipes(off.proc.pid, before);
	th_kill(&off.proc);

	const char *argv[] = {th_workload("leaky"), "--closeall", NULL};
	sites_start(&run, argv, "1K");
	cr_assert(sites_maps_have(run.proc.pid, "libunwind"));
	sites_pipes(run.proc.pid, after);
	int pipes = 0;
	for (int fd = 3; fd < 1024; fd++) {
		if (!after[fd] || before[fd])
			continue;
		pipes++;
		cr_assert_geq(fd, th_fd_floor(), "libunwind's descriptor %d below the floor", fd);
		char path[64], info[512];
		snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", run.proc.pid, fd);
		cr_assert_gt(th_read_file(path, info, sizeof(info)), 0);
		char *flags = strstr(info, "flags:");
		cr_assert(flags && (strtoul(flags + 6, NULL, 8) & 02000000),
		          "descriptor %d not close-on-exec", fd);
	}
	cr_assert_eq(pipes, 2, "libunwind's pipe: %d descriptors", pipes);
	/* Round 1 closes everything above stderr, then allocates: the next sample finds the pipe
	 * gone; the program's own file reads back what it wrote. */
	th_write(&run.proc, "\n");
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_str_eq(line, "mine=mine");
	cr_assert(th_read_line(&run.proc, line, sizeof(line), TH_TIMEOUT_MS));
	cr_assert_str_eq(line, "round 1");
	th_close_stdin(&run.proc);
	cr_assert(th_wait(&run.proc, TH_TIMEOUT_MS));
	cr_assert_eq(run.proc.status, 0);
	th_read_stderr(&run.proc, err, sizeof(err));
	const char *first = strstr(err, "sites off: the program closed libunwind's descriptors");
	cr_assert_not_null(first, "%s", err);
	cr_assert_null(strstr(first + 1, "sites off"), "said twice: %s", err);
}

/* Threads that allocate, reallocate and free blocks whose bytes they check, with a sample every
 * 4 KiB (thousands of unwinds a second) while another thread forks: no block is corrupted and
 * no child hangs on a lock an unwind held at the fork. */
Test(sites, forks_and_reallocs_while_sampling)
{
	char stats[PATH_MAX + 32], out[1024], err[8192];
	snprintf(stats, sizeof(stats), "ROUNDTRIM_STATS=%s/%%p.jsonl", th_tmpdir());
	char preload[PATH_MAX + 16];
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", th_lib());
	const char *env[] = {
	    preload, stats, "ROUNDTRIM_SITES=1", "ROUNDTRIM_SAMPLE_BYTES=4K", "ROUNDTRIM_FIFO=none",
	    NULL};
	const char *argv[] = {th_workload("churn"), "--threads", "3", "--seconds", "3", NULL};
	int status = th_run(argv, env, out, sizeof(out), err, sizeof(err));
	cr_assert_eq(status, 0, "%s%s", out, err);
	cr_assert_not_null(strstr(out, " errors=0 hung=0"), "%s", out);
	cr_assert_null(strstr(out, " forks=0 "), "%s", out);
	cr_assert_null(strstr(err, "sites off"), "%s", err);
}
