/* Targets that stay inside one job: round, trim and status with --under (NVFlare's pid.fl, the
 * subshell that is python3's parent, in the watchdog of its rendered 2.8.1 client), --cgroup (a
 * cgroup the test makes), and --all held to the caller's session (a process started with
 * setsid stays out unless --any-session). */
#include "harness.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(targets, .timeout = 120, .fini = th_cleanup);

#define OUT_SIZE 16384

static char out[OUT_SIZE], err[OUT_SIZE];

/* roundtrim ARGS... (NULL-terminated); output into out and err. */
static int
roundtrim_args(const char *const args[])
{
	static char lib[PATH_MAX + 16];
	snprintf(lib, sizeof(lib), "ROUNDTRIM_LIB=%s", th_lib());
	const char *argv[32] = {RT_BUILD_DIR "/roundtrim"};
	for (int i = 0; args[i] && i < 30; i++)
		argv[i + 1] = args[i];
	return th_run(argv, (const char *const[]){lib, NULL}, out, sizeof(out), err, sizeof(err));
}

#define ROUNDTRIM(...) roundtrim_args((const char *const[]){__VA_ARGS__, NULL})

/* Whether `round --wait` printed a line for pid, and which round it was. */
static int
round_told(pid_t pid)
{
	char start[32];
	snprintf(start, sizeof(start), "%d ", (int)pid);
	for (const char *line = out; *line; line = strchr(line, '\n') + 1) {
		int round;
		const char *round_at = strstr(line, ": round ");
		if (!strncmp(line, start, strlen(start)) && round_at &&
		    sscanf(round_at, ": round %d", &round) == 1)
			return round;
		if (!strchr(line, '\n'))
			break;
	}
	return 0;
}

/* The library's settings for the test's processes: active only in programs named name. */
struct carrier_env {
	char preload[PATH_MAX + 16];
	char fifo[PATH_MAX + 32];
	char match[64];
	const char *env[5];
};

static void
carrier_env(struct carrier_env *c, const char *name)
{
	snprintf(c->preload, sizeof(c->preload), "LD_PRELOAD=%s", th_lib());
	snprintf(c->fifo, sizeof(c->fifo), "ROUNDTRIM_FIFO=%s/%%p.fifo", th_tmpdir());
	snprintf(c->match, sizeof(c->match), "ROUNDTRIM_MATCH=%s", name);
	c->env[0] = c->preload;
	c->env[1] = c->fifo;
	c->env[2] = c->match;
	c->env[3] = "ROUNDTRIM_AUTO=off";
	c->env[4] = NULL;
}

/* The probe under a name of the test's own (other suites run probes at the same time). */
static const char *
named_probe(char *name, size_t size, const char *prefix)
{
	static char link[PATH_MAX];
	snprintf(name, size, "%s%d", prefix, (int)getpid());
	snprintf(link, sizeof(link), "%s/%s", th_tmpdir(), name);
	cr_assert_eq(symlink(th_workload("probe"), link), 0);
	return link;
}

/* Waits for the line that pid's program prints when it is ready, and for its status file. */
static void
wait_ready(struct th_proc *p, pid_t pid)
{
	char line[256], status[PATH_MAX + 32];
	cr_assert(th_read_line(p, line, sizeof(line), TH_TIMEOUT_MS), "pid %d said nothing",
	          (int)pid);
	snprintf(status, sizeof(status), "%s/%d.status", th_tmpdir(), (int)pid);
	cr_assert(th_wait_path(status, false, TH_TIMEOUT_MS), "no status file for %d", (int)pid);
}

static void
end_probe(struct th_proc *p)
{
	th_close_stdin(p);
	cr_assert(th_wait(p, TH_TIMEOUT_MS));
	cr_assert(WIFEXITED(p->status) && WEXITSTATUS(p->status) == 0, "pid %d: status %d",
	          (int)p->pid, p->status);
}

static struct rt_stat_fields {
	int ppid, sid;
} stat_of(pid_t pid)
{
	char path[64], text[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	cr_assert_gt(th_read_file(path, text, sizeof(text) - 1), 0, "%s", path);
	struct rt_stat_fields f;
	const char *close = strrchr(text, ')');
	cr_assert_not_null(close);
	cr_assert_eq(sscanf(close + 2, "%*c %d %*d %d", &f.ppid, &f.sid), 2, "%s", text);
	return f;
}

/* NVFlare's watchdog starts python3 as `(start_python 2>&1 & echo $! >&3) 3>pid.fl`: pid.fl holds
 * the subshell that runs start_python, and python3 is its child. --under that pid reaches python3
 * and nothing else; the watchdog's own pid does not (the subshell was adopted). */
Test(targets, under_pid_fl_reaches_the_sites_python3_and_nothing_else)
{
	const char *dir = th_tmpdir();
	char site[PATH_MAX], launcher[PATH_MAX + 32], bin[PATH_MAX], python[PATH_MAX + 16];
	char ctl[PATH_MAX], path_env[PATH_MAX * 2], line[512], script[PATH_MAX * 3];
	snprintf(site, sizeof(site), "%s/site-1", dir);
	cr_assert_eq(mkdir(site, 0700), 0);
	snprintf(launcher, sizeof(launcher), "%s/startup", site);
	cr_assert_eq(mkdir(launcher, 0700), 0);
	strcat(launcher, "/sub_start.sh");
	static char text[65536];
	ssize_t len = th_read_file(RT_SOURCE_DIR "/test/fixtures/nvflare/2.8.1/client/sub_start.sh",
	                           text, sizeof(text));
	cr_assert_gt(len, 0);
	FILE *f = fopen(launcher, "w");
	cr_assert_not_null(f);
	fwrite(text, 1, (size_t)len, f);
	fclose(f);

	/* python3 says its pid and becomes a probe named python3 that lives until ctl closes. */
	snprintf(ctl, sizeof(ctl), "%s/ctl", dir);
	cr_assert_eq(mkfifo(ctl, 0600), 0);
	int ctl_fd = open(ctl, O_RDWR | O_CLOEXEC);
	cr_assert_geq(ctl_fd, 0);
	snprintf(bin, sizeof(bin), "%s/bin", dir);
	cr_assert_eq(mkdir(bin, 0700), 0);
	snprintf(python, sizeof(python), "%s/python3", bin);
	f = fopen(python, "w");
	cr_assert_not_null(f);
	/* A name of the test's own: other suites run python3 under the library meanwhile. */
	char name[64];
	snprintf(name, sizeof(name), "python3-t%d", (int)getpid());
	fprintf(f, "#!/bin/bash\necho \"python3 $$\"\nexec -a %s %s idle <%s\n", name,
	        th_workload("probe"), ctl);
	fclose(f);
	cr_assert_eq(chmod(python, 0755), 0);

	struct carrier_env c;
	carrier_env(&c, name);
	snprintf(path_env, sizeof(path_env), "PATH=%s:%s", bin, getenv("PATH"));
	const char *env[] = {c.preload, c.fifo, c.match, c.env[3], path_env, NULL};
	struct th_proc watchdog, sibling;
	/* The watchdog sleeps 5 s before it starts python3. */
	th_spawn(&watchdog, (const char *[]){"/bin/bash", launcher, NULL}, env);
	/* Another python3 of the same session, outside the site. */
	snprintf(script, sizeof(script), "exec -a %s %s idle", name, th_workload("probe"));
	th_spawn(&sibling, (const char *[]){"/bin/bash", "-c", script, NULL}, env);
	wait_ready(&sibling, sibling.pid);

	pid_t python_pid = 0;
	while (!python_pid) {
		cr_assert(th_read_line(&watchdog, line, sizeof(line), TH_TIMEOUT_MS),
		          "the watchdog started no python3");
		sscanf(line, "python3 %d", &python_pid);
	}
	wait_ready(&watchdog, python_pid);
	char pid_fl[PATH_MAX + 16], held[32];
	snprintf(pid_fl, sizeof(pid_fl), "%s/pid.fl", site);
	cr_assert_gt(th_read_file(pid_fl, held, sizeof(held) - 1), 0);
	pid_t subshell = atoi(held);
	cr_assert_gt(subshell, 0, "pid.fl: %s", held);
	cr_assert_neq(subshell, python_pid, "pid.fl holds python3 itself");
	cr_assert_eq(stat_of(python_pid).ppid, subshell, "python3 is not the subshell's child");

	cr_assert_eq(ROUNDTRIM("round", "--under", th_pid_text(subshell), "--wait"), 0, "%s", err);
	cr_assert_eq(round_told(python_pid), 1, "%s", out);
	cr_assert_eq(round_told(sibling.pid), 0, "%s", out);
	cr_assert_eq(ROUNDTRIM("status", "--json", "--under", th_pid_text(subshell)), 0, "%s", err);
	th_expect_in(out, th_pid_text(python_pid));
	cr_assert_null(strstr(out, th_pid_text(sibling.pid)), "%s", out);

	/* The watchdog itself is no longer python3's ancestor. */
	cr_assert_eq(ROUNDTRIM("trim", "--under", th_pid_text(watchdog.pid)), 1);
	char expect[128];
	snprintf(expect, sizeof(expect),
	         "no process of yours carries libroundtrim.so with a FIFO under pid %d\n",
	         (int)watchdog.pid);
	th_expect_in(err, expect);

	/* --all reaches both: they share the caller's session. */
	cr_assert_eq(ROUNDTRIM("round", "--all", "--match", name, "--wait"), 0, "%s", err);
	cr_assert_eq(round_told(python_pid), 2, "%s", out);
	cr_assert_eq(round_told(sibling.pid), 1, "%s", out);

	th_kill(&watchdog);
	close(ctl_fd);
	char status[PATH_MAX + 32];
	snprintf(status, sizeof(status), "%s/%d.status", dir, (int)python_pid);
	cr_assert(th_wait_path(status, true, TH_TIMEOUT_MS), "python3 did not end");
	end_probe(&sibling);
}

Test(targets, all_stays_in_the_callers_session_unless_any_session)
{
	char name[64];
	const char *probe = named_probe(name, sizeof(name), "rtsess");
	struct carrier_env c;
	carrier_env(&c, name);
	struct th_proc here, away;
	th_spawn(&here, (const char *[]){probe, "idle", NULL}, c.env);
	wait_ready(&here, here.pid);
	/* setsid(1) in a process that leads no group calls setsid(2) and execs, same pid. */
	th_spawn(&away, (const char *[]){"/usr/bin/setsid", probe, "idle", NULL}, c.env);
	wait_ready(&away, away.pid);
	cr_assert_eq(stat_of(away.pid).sid, away.pid, "setsid did not start a session");
	cr_assert_neq(stat_of(here.pid).sid, away.pid);

	cr_assert_eq(ROUNDTRIM("round", "--all", "--match", name, "--wait"), 0, "%s", err);
	cr_assert_eq(round_told(here.pid), 1, "%s", out);
	cr_assert_eq(round_told(away.pid), 0, "%s", out);
	cr_assert_str_eq(err,
	                 "roundtrim: left out 1 process of yours with libroundtrim.so in other "
	                 "sessions; --any-session reaches them\n");

	cr_assert_eq(ROUNDTRIM("round", "--all", "--match", name, "--any-session", "--wait"), 0,
	             "%s", err);
	cr_assert_eq(round_told(here.pid), 2, "%s", out);
	cr_assert_eq(round_told(away.pid), 1, "%s", out);
	cr_assert_str_eq(err, "");

	/* Named by --under, the other session is the job asked for. */
	cr_assert_eq(ROUNDTRIM("round", "--under", th_pid_text(away.pid), "--wait"), 0, "%s", err);
	cr_assert_eq(round_told(away.pid), 2, "%s", out);
	cr_assert_eq(round_told(here.pid), 0, "%s", out);

	/* status only reads: every session. */
	cr_assert_eq(ROUNDTRIM("status", "--match", name), 0, "%s", err);
	th_expect_in(out, th_pid_text(here.pid));
	th_expect_in(out, th_pid_text(away.pid));

	end_probe(&here);
	cr_assert_eq(ROUNDTRIM("trim", "--match", name), 1);
	char expect[256];
	snprintf(expect, sizeof(expect),
	         "roundtrim: no process of yours carries libroundtrim.so with a FIFO matching '%s' "
	         "in this session; 1 more in other sessions (--any-session reaches them)\n",
	         name);
	cr_assert_str_eq(err, expect);
	end_probe(&away);
}

/* The cgroup line of one hierarchy in /proc/PID/cgroup ("memory", or "" for v2), its path. */
static void
cgroup_path_of(pid_t pid, char *path, size_t size)
{
	char file[64], text[8192];
	snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
	cr_assert_gt(th_read_file(file, text, sizeof(text) - 1), 0);
	const char *line = strstr(text, ":memory:");
	line = line ? line + strlen(":memory:") : strstr(text, "0::") + 3;
	snprintf(path, size, "%.*s", (int)strcspn(line, "\n"), line);
}

Test(targets, cgroup_selects_by_directory_and_by_cgroup_path)
{
	char cg[PATH_MAX], name[64], script[PATH_MAX * 3];
	if (!th_make_cgroup(cg, sizeof(cg), "rt-target", NULL))
		cr_skip_test("cannot make a cgroup here (not root, or no memory controller)");
	const char *probe = named_probe(name, sizeof(name), "rtcg");
	struct carrier_env c;
	carrier_env(&c, name);
	struct th_proc in, outside;
	/* The shell joins the cgroup, then becomes the probe. */
	snprintf(script, sizeof(script), "echo $$ > %s/cgroup.procs && exec %s idle", cg, probe);
	th_spawn(&in, (const char *[]){"/bin/sh", "-c", script, NULL}, c.env);
	wait_ready(&in, in.pid);
	th_spawn(&outside, (const char *[]){probe, "idle", NULL}, c.env);
	wait_ready(&outside, outside.pid);

	cr_assert_eq(ROUNDTRIM("round", "--cgroup", cg, "--wait"), 0, "%s", err);
	cr_assert_eq(round_told(in.pid), 1, "%s", out);
	cr_assert_eq(round_told(outside.pid), 0, "%s", out);

	char path[PATH_MAX];
	cgroup_path_of(in.pid, path, sizeof(path));
	cr_assert_neq(path[0], '\0');
	cr_assert_eq(ROUNDTRIM("round", "--cgroup", path, "--wait"), 0, "%s", err);
	cr_assert_eq(round_told(in.pid), 2, "%s: %s", path, out);
	cr_assert_eq(round_told(outside.pid), 0, "%s", out);

	cr_assert_eq(ROUNDTRIM("status", "--cgroup", cg), 0, "%s", err);
	th_expect_in(out, th_pid_text(in.pid));
	cr_assert_null(strstr(out, th_pid_text(outside.pid)), "%s", out);

	end_probe(&in);
	end_probe(&outside);
	cr_assert_eq(rmdir(cg), 0, "%s", cg);
}

Test(targets, selection_usage_and_a_gone_under_pid)
{
	cr_assert_eq(ROUNDTRIM("round", "--under", "x"), 2);
	th_expect_in(err, "not a pid: 'x'");
	cr_assert_eq(ROUNDTRIM("round", "--under", "1", "42"), 2);
	th_expect_in(err, "--under takes no PID");
	cr_assert_eq(ROUNDTRIM("trim", "--any-session"), 2);
	th_expect_in(err, "--any-session goes with --all or --match");
	cr_assert_eq(ROUNDTRIM("round", "--cgroup", "jobs/42"), 2);
	th_expect_in(err, "--cgroup jobs/42: not an absolute path");
	cr_assert_eq(ROUNDTRIM("status", "--all"), 2);
	cr_assert_eq(ROUNDTRIM("status", "--match", "x", "42"), 2);

	struct th_proc gone;
	th_spawn(&gone, (const char *[]){"/bin/true", NULL}, NULL);
	cr_assert(th_wait(&gone, TH_TIMEOUT_MS));
	cr_assert_eq(ROUNDTRIM("round", "--under", th_pid_text(gone.pid)), 1);
	char expect[64];
	snprintf(expect, sizeof(expect), "roundtrim: --under %d: no such process\n", (int)gone.pid);
	cr_assert_str_eq(err, expect);
}
