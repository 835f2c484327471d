/* Programs that change their uid and gid (issue 20): glibc applies every change to every thread,
 * the worker's included, and aborts the process when their results differ. Each way must end
 * exactly as it ends without the library: the same exit status, the same calls' results, the
 * same credentials in every thread of the program; the worker never holds more than the thread
 * that made the change, and the library still acts afterwards, or stood down in one line. */
#include "harness.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(privileges, .timeout = 180, .fini = th_cleanup);

static const char *
env_preload(void)
{
	static char buf[PATH_MAX + 16];
	snprintf(buf, sizeof(buf), "LD_PRELOAD=%s", th_lib());
	return buf;
}

static void
need_root(void)
{
	if (getuid() != 0)
		cr_skip_test("changing uid and gid needs root");
}

/* The lines of text that start with prefix, in order. */
static void
lines_starting(const char *text, const char *prefix, char *out, size_t size)
{
	size_t len = 0, plen = strlen(prefix);
	out[0] = '\0';
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t)(end - line) + 1 : strlen(line);
		if (!strncmp(line, prefix, plen) && len + n < size) {
			memcpy(out + len, line, n);
			len += n;
			out[len] = '\0';
		}
		line = end ? end + 1 : NULL;
	}
}

/* The value after " KEY=" in a creds line, up to the next blank. */
static void
field_of(const char *line, const char *key, char *out, size_t size)
{
	char needle[32];
	snprintf(needle, sizeof(needle), " %s=", key);
	const char *at = strstr(line, needle);
	cr_assert(at, "no %s in %s", key, line);
	at += strlen(needle);
	size_t n = strcspn(at, " \n");
	snprintf(out, size, "%.*s", (int)n, at);
}

/* The worker holds no id the program's threads do not, and no capability the thread does not. */
static void
expect_worker_within(const char *threads, const char *worker)
{
	static const char *const same[] = {"Uid", "Gid", "Groups"};
	static const char *const within[] = {"CapInh", "CapPrm", "CapEff"};
	char w[256], t[256];
	for (const char *line = threads; line && *line; line = strchr(line, '\n') + 1) {
		for (size_t i = 0; i < 3; i++) {
			field_of(worker, same[i], w, sizeof(w));
			field_of(line, same[i], t, sizeof(t));
			cr_assert_str_eq(w, t, "the worker's %s differs:\n%s%s", same[i], worker,
			                 line);
		}
		for (size_t i = 0; i < 3; i++) {
			field_of(worker, within[i], w, sizeof(w));
			field_of(line, within[i], t, sizeof(t));
			unsigned long long wc = strtoull(w, NULL, 16), tc = strtoull(t, NULL, 16);
			cr_assert_eq(wc & ~tc, 0,
			             "the worker holds %s %llx beyond the program's:\n%s%s",
			             within[i], wc & ~tc, worker, line);
		}
		if (!strchr(line, '\n')[1])
			break;
	}
}

/* The keeper holds exactly the credentials of the thread that made the last call: the same
 * Uid, Gid, Groups and capability sets in /proc/PID/task/TID/status. */
static void
expect_keeper_alike(const char *out, const char *sequence, const char *mode)
{
	char keeper[1024], caller[1024];
	lines_starting(out, "keeper ", keeper, sizeof(keeper));
	lines_starting(out, "caller ", caller, sizeof(caller));
	cr_assert_neq(keeper[0], '\0', "%s %s: no keeper: %s", sequence, mode, out);
	cr_assert_str_eq(keeper + strlen("keeper "), caller + strlen("caller "),
	                 "%s %s: the keeper's credentials differ from its caller's:\n%s%s",
	                 sequence, mode, keeper, caller);
}

/* Runs test/workloads/creds SEQUENCE with and without the library, in each way: from the main
 * thread, from another after the main thread ended, and with the worker in an action; under
 * noshare (unshare refused, the keeper holding the library's descriptors) or not. `stands`:
 * the library cannot follow and must stand down. */
static void
expect_as_without_in(const char *sequence, bool stands, bool noshare)
{
	need_root();
	static const char *const modes[][2] = {
	    {NULL, NULL}, {"--thread", NULL}, {"--busy", NULL}, {"--thread", "--busy"}};
	for (size_t m = 0; m < 4; m++) {
		const char *argv_all[] = {th_noshare(), th_workload("creds"), sequence,
		                          modes[m][0],  modes[m][1],          NULL};
		const char *const *argv = noshare ? argv_all : argv_all + 1;
		const char *env[] = {env_preload(), th_env_in_tmp("ROUNDTRIM_FIFO", "%p.fifo"),
		                     NULL};
		char out0[8192], err0[4096], out1[8192], err1[4096];
		char calls0[4096], calls1[4096], threads0[4096], threads1[4096], worker[1024],
		    api[64];
		int status0 = th_run(argv, NULL, out0, sizeof(out0), err0, sizeof(err0));
		int status1 = th_run(argv, env, out1, sizeof(out1), err1, sizeof(err1));
		const char *mode = modes[m][0] ? modes[m][0] : "main thread";
		cr_assert_eq(status0, 0, "%s %s without the library: %d %s", sequence, mode,
		             status0, err0);
		cr_assert_eq(status1, status0,
		             "%s %s: exit status %d under the library, %d without: %s", sequence,
		             mode, status1, status0, err1);
		lines_starting(out0, "thread ", threads0, sizeof(threads0));
		lines_starting(out1, "thread ", threads1, sizeof(threads1));
		cr_assert_str_eq(threads1, threads0,
		                 "%s %s: the program's threads differ:\n%s--- without:\n%s",
		                 sequence, mode, threads1, threads0);
		/* Every line before the threads': the calls and their results. */
		snprintf(calls0, sizeof(calls0), "%.*s", (int)(strstr(out0, "thread ") - out0),
		         out0);
		snprintf(calls1, sizeof(calls1), "%.*s", (int)(strstr(out1, "thread ") - out1),
		         out1);
		cr_assert_str_eq(calls1, calls0, "%s %s: the calls' results differ", sequence,
		                 mode);
		lines_starting(out1, "api=", api, sizeof(api));
		lines_starting(out1, "worker ", worker, sizeof(worker));
		if (stands) {
			cr_assert_str_eq(api, "api=off\n", "%s %s", sequence, mode);
			cr_assert_eq(th_count_in(err1, "roundtrim: "), 1, "%s %s: %s", sequence,
			             mode, err1);
			th_expect_in(err1, "roundtrim: stood down: before ");
			cr_assert_str_eq(worker, "", "the worker ended");
			cr_assert_null(strstr(out1, "\nkeeper "), "the keeper ended");
		} else {
			cr_assert_str_eq(api, "api=acted\n", "%s %s: %s", sequence, mode, err1);
			cr_assert_str_eq(err1, "", "%s %s", sequence, mode);
			cr_assert_neq(worker[0], '\0', "%s %s: no worker", sequence, mode);
			expect_worker_within(threads1, worker);
			if (noshare || th_keeper_mode())
				expect_keeper_alike(out1, sequence, mode);
		}
	}
}

static void
expect_as_without(const char *sequence, bool stands)
{
	expect_as_without_in(sequence, stands, false);
}

/* Where unshare is refused, as in a container: the keeper, which glibc's broadcast does not
 * reach, follows each sequence too. */
Test(privileges, keeper_follows_every_sequence)
{
	static const char *const sequences[] = {
	    "setpriv", "keepcaps", "capdrop", "su-exec",  "resids",   "uid-first", "setuid",
	    "setgid",  "seteuid",  "setegid", "setreuid", "setregid", "setgroups", "initgroups"};
	for (size_t i = 0; i < sizeof(sequences) / sizeof(sequences[0]); i++)
		expect_as_without_in(sequences[i], false, true);
}

/* The keeper follows without standing down: an ambient capability raised before
 * SECBIT_NO_CAP_AMBIENT_RAISE (it raises before it sets the bit), a bounding set lowered right
 * before a uid change under SECBIT_KEEP_CAPS_LOCKED, which takes its CAP_SETPCAP (it lowers the
 * set first), and more than 1,024 groups (its lists grow to fit). */
Test(privileges, keeper_raises_ambient_before_no_ambient_raise)
{
	expect_as_without_in("ambient", false, true);
}

Test(privileges, keeper_drops_bounding_before_a_uid_change_with_keep_caps_locked)
{
	expect_as_without_in("bsetlocked", false, true);
}

Test(privileges, keeper_takes_more_than_1024_groups)
{
	expect_as_without_in("manygroups", false, true);
}

/* The same sequences where the worker has a table of its own. */
Test(privileges, ambient_bounding_and_many_groups)
{
	expect_as_without("ambient", false);
	expect_as_without("bsetlocked", false);
	expect_as_without("manygroups", false);
}

/* A program started as a user in more than 1,024 groups gets its keeper. */
Test(privileges, keeper_starts_for_a_user_in_more_than_1024_groups)
{
	need_root();
	if (access("/usr/bin/setpriv", X_OK) != 0)
		cr_skip_test("no setpriv (util-linux)");
	static char groups[16 + 1100 * 5];
	size_t len = (size_t)snprintf(groups, sizeof(groups), "--groups=");
	for (int i = 0; i < 1100; i++)
		len += (size_t)snprintf(groups + len, sizeof(groups) - len, "%s%d", i ? "," : "",
		                        1000 + i);
	const char *argv[] = {"/usr/bin/setpriv", groups, th_noshare(), th_workload("probe"), "ns",
	                      "chroot",           NULL};
	const char *env[] = {env_preload(), th_env_in_tmp("ROUNDTRIM_FIFO", "%p.fifo"), NULL};
	char out[1024], err[1024];
	cr_assert_eq(th_run(argv, env, out, sizeof(out), err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(out, "chroot=0\nlibrary=on\n", "%s", err);
	cr_assert_str_eq(err, "");
}

Test(privileges, keeper_stands_down_when_the_worker_cannot_follow)
{
	expect_as_without_in("outlived", true, true);
}

/* setpriv's own sequence, as the issue found it: PR_SET_KEEPCAPS, setresuid, capset in the
 * calling thread, setresgid. The worker lost its capabilities at setresuid and glibc aborted
 * at setresgid. */
Test(privileges, setpriv_sequence)
{
	expect_as_without("setpriv", false);
}

Test(privileges, keepcaps_then_one_capability_raised)
{
	expect_as_without("keepcaps", false);
}

/* A thread that dropped CAP_SETUID fails setuid; the worker must fail it with it. */
Test(privileges, capability_dropped_in_the_calling_thread)
{
	expect_as_without("capdrop", false);
}

/* su-exec's and gosu's order: setgroups, setgid, setuid. */
Test(privileges, su_exec_sequence)
{
	expect_as_without("su-exec", false);
}

Test(privileges, setresgid_then_setresuid)
{
	expect_as_without("resids", false);
}

Test(privileges, setresuid_first_fails_setresgid_alike)
{
	expect_as_without("uid-first", false);
}

Test(privileges, each_single_call)
{
	static const char *const calls[] = {"setuid",   "setgid",   "seteuid",   "setegid",
	                                    "setreuid", "setregid", "setgroups", "initgroups"};
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		expect_as_without(calls[i], false);
}

/* A thread started before another dropped CAP_SETUID for good (and changed its gid, which the
 * worker followed) still holds it when it calls setgroups: the worker can take its
 * capabilities no more, and leaves first. */
Test(privileges, stands_down_when_the_worker_cannot_follow)
{
	expect_as_without("outlived", true);
}

/* The command, and setpriv with the user's groups (initgroups), running a program that
 * prints who it is. */
Test(privileges, setpriv_command)
{
	need_root();
	if (access("/usr/bin/setpriv", X_OK) != 0)
		cr_skip_test("no setpriv (util-linux)");
	static const char *const cases[][5] = {
	    {"--reuid=65534", "--regid=65534", "--clear-groups", "/bin/true", NULL},
	    {"--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/id", NULL},
	    {"--reuid=nobody", "--regid=nogroup", "--init-groups", "/usr/bin/id", NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[] = {"/usr/bin/setpriv", cases[i][0], cases[i][1],
		                      cases[i][2],        cases[i][3], NULL};
		const char *env[] = {env_preload(), "ROUNDTRIM_FIFO=none", NULL};
		char out0[1024], err0[1024], out1[1024], err1[1024];
		int status0 = th_run(argv, NULL, out0, sizeof(out0), err0, sizeof(err0));
		int status1 = th_run(argv, env, out1, sizeof(out1), err1, sizeof(err1));
		cr_assert_eq(status0, 0, "%s", err0);
		cr_assert_eq(status1, 0, "setpriv %s %s under the library: %d %s", cases[i][2],
		             cases[i][3], status1, err1);
		cr_assert_str_eq(out1, out0);
		cr_assert_str_eq(err1, "");
	}
}

/* gosu is a static Go program: it never loads the library (nor any preload), and changes its
 * credentials with raw system calls. The program it starts does load it, already as the user. */
Test(privileges, gosu_starts_its_program_with_the_library)
{
	need_root();
	if (access("/usr/sbin/gosu", X_OK) != 0)
		cr_skip_test("no gosu (Debian's gosu package, which scripts/deps.sh installs)");
	const char *argv[] = {"/usr/sbin/gosu",
	                      "nobody",
	                      "/bin/sh",
	                      "-c",
	                      "id; grep -c libroundtrim /proc/self/maps; true",
	                      NULL};
	const char *env[] = {env_preload(), "ROUNDTRIM_FIFO=none", NULL};
	char out0[1024], err0[1024], out1[1024], err1[1024];
	int status0 = th_run(argv, NULL, out0, sizeof(out0), err0, sizeof(err0));
	int status1 = th_run(argv, env, out1, sizeof(out1), err1, sizeof(err1));
	cr_assert_eq(status0, 0, "%s", err0);
	cr_assert_eq(status1, 0, "%s", err1);
	cr_assert_str_eq(err1, "");
	th_expect_in(out0, "uid=65534(nobody)");
	th_expect_in(out1, "uid=65534(nobody)");
	th_expect_in(out0, "\n0\n");
	cr_assert_eq(strstr(out1, "\n0\n"), NULL, "the program gosu started has no library:\n%s",
	             out1);
}

/* Python's os module calls glibc's functions: a server that drops root after binding. */
/* The API's records in the per-process stats files (*.stats) of dir; each such file holds a
 * record (it is named with its first). */
static int
api_records_in(const char *dir)
{
	char path[PATH_MAX + 320], text[4096];
	DIR *d = opendir(dir);
	cr_assert_not_null(d);
	int records = 0;
	for (struct dirent *e; (e = readdir(d));) {
		size_t n = strlen(e->d_name);
		if (n < 6 || strcmp(e->d_name + n - 6, ".stats"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		records += th_count_lines(path, "\"trigger\":\"api\"");
		cr_assert_gt(th_read_file(path, text, sizeof(text)), 0, "%s is empty", path);
	}
	closedir(d);
	return records;
}

/* Per-process stats, log and Prometheus files outlive a drop from root to nobody made before
 * their first record, in a sticky directory nobody may write to, as /tmp: nobody may not link a
 * file of root's (fs.protected_hardlinks), so they are named before the drop; the record is
 * there and nothing is said. */
Test(privileges, per_process_outputs_outlive_a_drop_before_the_first_record)
{
	need_root();
	char dir[PATH_MAX], stats[PATH_MAX + 32], prom[PATH_MAX + 32], log[PATH_MAX + 32];
	snprintf(dir, sizeof(dir), "%s/sticky", th_tmpdir());
	cr_assert_eq(mkdir(dir, 0700), 0);
	cr_assert_eq(chmod(dir, 01777), 0);
	/* The user the program drops to reaches the directory (and links its files there). */
	cr_assert_eq(chmod(th_tmpdir(), 0711), 0);
	snprintf(stats, sizeof(stats), "ROUNDTRIM_STATS=%s/%%p.stats", dir);
	snprintf(prom, sizeof(prom), "ROUNDTRIM_PROM=%s/%%p.prom", dir);
	snprintf(log, sizeof(log), "ROUNDTRIM_LOG=%s/%%p.log", dir);
	const char *env[] = {
	    env_preload(), th_env_in_tmp("ROUNDTRIM_FIFO", "%p.fifo"), stats, prom, log, NULL};
	const char *argv[] = {th_workload("creds"), "resids", NULL};
	char out[8192], err[4096], api[64];
	cr_assert_eq(th_run(argv, env, out, sizeof(out), err, sizeof(err)), 0, "%s", err);
	lines_starting(out, "api=", api, sizeof(api));
	cr_assert_str_eq(api, "api=acted\n", "%s", err);
	cr_assert_str_eq(err, "", "a file went off: %s", err);
	cr_assert_eq(api_records_in(dir), 1, "the stats file holds the action's record");
}

/* setpriv, gosu and su-exec drop root, then exec the program in the same process: the dropping
 * image leaves no file of root's at the program's per-process path, and the program (same pid)
 * opens it and writes its record. */
Test(privileges, a_program_exec_d_after_a_drop_keeps_its_per_process_outputs)
{
	need_root();
	char dir[PATH_MAX], stats[PATH_MAX + 32];
	snprintf(dir, sizeof(dir), "%s/sticky", th_tmpdir());
	cr_assert_eq(mkdir(dir, 0700), 0);
	cr_assert_eq(chmod(dir, 01777), 0);
	/* The user the program runs as reaches the directory (no FIFO: the two users would want
	 * one directory of their own each). */
	cr_assert_eq(chmod(th_tmpdir(), 0711), 0);
	snprintf(stats, sizeof(stats), "ROUNDTRIM_STATS=%s/%%p.stats", dir);
	const char *env[] = {env_preload(), "ROUNDTRIM_FIFO=none", stats, NULL};
	const char *argv[] = {"/usr/bin/setpriv",
	                      "--reuid=65534",
	                      "--regid=65534",
	                      "--clear-groups",
	                      th_workload("creds"),
	                      "none",
	                      NULL};
	char out[8192], err[4096], api[64];
	cr_assert_eq(th_run(argv, env, out, sizeof(out), err, sizeof(err)), 0, "%s", err);
	lines_starting(out, "api=", api, sizeof(api));
	cr_assert_str_eq(api, "api=acted\n", "%s", err);
	cr_assert_str_eq(err, "", "a file went off: %s", err);
	cr_assert_eq(api_records_in(dir), 1, "the stats file holds the action's record");
}

/* A root program that drops to another user in a sticky directory's reach and ends without a
 * record leaves nothing there (the user of its end could not remove a file of root's). */
Test(privileges, a_drop_without_a_record_leaves_no_file)
{
	need_root();
	char dir[PATH_MAX], stats[PATH_MAX + 32];
	snprintf(dir, sizeof(dir), "%s/sticky", th_tmpdir());
	cr_assert_eq(mkdir(dir, 0700), 0);
	cr_assert_eq(chmod(dir, 01777), 0);
	snprintf(stats, sizeof(stats), "ROUNDTRIM_STATS=%s/%%p.stats", dir);
	const char *env[] = {env_preload(), th_env_in_tmp("ROUNDTRIM_FIFO", "%p.fifo"), stats,
	                     NULL};
	const char *argv[] = {th_workload("creds"), "resids", "--no-trim", NULL};
	char out[8192], err[4096], api[64];
	cr_assert_eq(th_run(argv, env, out, sizeof(out), err, sizeof(err)), 0, "%s", err);
	lines_starting(out, "api=", api, sizeof(api));
	cr_assert_str_eq(api, "api=skipped\n", "%s", err);
	cr_assert_str_eq(err, "", "%s", err);
	DIR *d = opendir(dir);
	cr_assert_not_null(d);
	int left = 0;
	for (struct dirent *e; (e = readdir(d));)
		if (e->d_name[0] != '.')
			left++, cr_log_error("left behind: %s", e->d_name);
	closedir(d);
	cr_assert_eq(left, 0, "the program left a file behind");
}

/* A server that switches its effective uid per request: 1,000 seteuid calls end well within the
 * bound, with the keeper too, which once waited for its wait on the FIFO to end (up to 200 ms a
 * call). Their cost is measured by make bench (figure 11), not here. */
Test(privileges, a_thousand_seteuid_toggles_finish)
{
	need_root();
	const char *env[] = {env_preload(), th_env_in_tmp("ROUNDTRIM_FIFO", "%p.fifo"), NULL};
	const char *plain[] = {RT_BUILD_DIR "/test/bench/creds_toggle", "500", NULL};
	const char *keeper[] = {th_noshare(), RT_BUILD_DIR "/test/bench/creds_toggle", "500", NULL};
	const char *const *argvs[] = {plain, keeper};
	for (size_t i = 0; i < 2; i++) {
		char out[256], err[1024];
		int status = th_run(argvs[i], env, out, sizeof(out), err, sizeof(err));
		cr_assert_eq(status, 0, "%s: %d %s", i ? "keeper" : "private", status, err);
		th_expect_in(out, "calls=1000 ");
		cr_assert_str_eq(err, "", "%s", i ? "keeper" : "private");
	}
}

Test(privileges, python_drops_root)
{
	need_root();
	const char *argv[] = {"/usr/bin/python3", "-c",
	                      "import os; os.setgroups([]); os.setresgid(65534, 65534, 65534); "
	                      "os.setresuid(65534, 65534, 65534); "
	                      "print(os.getresuid(), os.getresgid(), os.getgroups())",
	                      NULL};
	const char *env[] = {env_preload(), th_env_in_tmp("ROUNDTRIM_FIFO", "%p.fifo"), NULL};
	char out0[1024], err0[1024], out1[1024], err1[1024];
	int status0 = th_run(argv, NULL, out0, sizeof(out0), err0, sizeof(err0));
	int status1 = th_run(argv, env, out1, sizeof(out1), err1, sizeof(err1));
	cr_assert_eq(status0, 0, "%s", err0);
	cr_assert_eq(status1, 0, "%s", err1);
	cr_assert_str_eq(out1, out0);
	cr_assert_str_eq(err1, "");
}

/* Only a process of one thread may enter another user namespace (unshare(2), setns(2): EINVAL):
 * rootless container tools do, and the worker is a second thread. The library stands down
 * first. */
Test(privileges, entering_a_user_namespace)
{
	need_root();
	if (access("/usr/bin/unshare", X_OK) != 0 || access("/usr/bin/nsenter", X_OK) != 0)
		cr_skip_test("no unshare or nsenter (util-linux)");
	if (th_keeper_mode())
		cr_skip_test("the launcher of TH_DESCRIPTORS=keeper refuses unshare to everyone");
	const char *env[] = {env_preload(), "ROUNDTRIM_FIFO=none", NULL};
	char out0[1024], err0[1024], out1[1024], err1[1024];
	const char *in_new[] = {"/usr/bin/unshare", "--user", "--map-root-user", "/usr/bin/id",
	                        NULL};
	cr_assert_eq(th_run(in_new, NULL, out0, sizeof(out0), err0, sizeof(err0)), 0, "%s", err0);
	cr_assert_eq(th_run(in_new, env, out1, sizeof(out1), err1, sizeof(err1)), 0, "%s", err1);
	cr_assert_str_eq(out1, out0);
	cr_assert_eq(th_count_in(err1, "roundtrim: "), 1, "%s", err1);
	th_expect_in(err1, "roundtrim: stood down: the program's unshare(CLONE_NEWUSER) needs a "
	                   "process of one thread");

	/* A process in a user namespace of its own, which nsenter joins. */
	const char *holder_argv[] = {
	    "/usr/bin/unshare",      "--user", "--map-root-user", "/bin/sh", "-c",
	    "echo ready; read line", NULL};
	struct th_proc holder;
	char line[64];
	th_spawn(&holder, holder_argv, NULL);
	cr_assert(th_read_line(&holder, line, sizeof(line), TH_TIMEOUT_MS));
	const char *join[] = {"/usr/bin/nsenter",      "--user",      "--target",
	                      th_pid_text(holder.pid), "/usr/bin/id", NULL};
	int status0 = th_run(join, NULL, out0, sizeof(out0), err0, sizeof(err0));
	int status1 = th_run(join, env, out1, sizeof(out1), err1, sizeof(err1));
	th_kill(&holder);
	cr_assert_eq(status0, 0, "%s", err0);
	cr_assert_eq(status1, 0, "%s", err1);
	cr_assert_str_eq(out1, out0);
	th_expect_in(err1, "roundtrim: stood down: the program's setns(CLONE_NEWUSER) needs a "
	                   "process of one thread");
}

/* Under ASan, LeakSanitizer reads /proc/PID/task at exit, which a pivoted root lacks: the run
 * fails with or without the library, and pivot_root (the last call below) is left out there. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LEAKS_CHECKED_AT_EXIT 1
#endif
#endif
#ifndef LEAKS_CHECKED_AT_EXIT
#define LEAKS_CHECKED_AT_EXIT 0
#endif

/* A thread can switch to another mount namespace by setns only while no other task shares its
 * filesystem context (setns(2): EINVAL); unshare(CLONE_NEWNS), chroot and pivot_root change that
 * context. Each behaves as without the library, which keeps acting (the worker and the keeper
 * have contexts of their own). Under TH_DESCRIPTORS=keeper the launcher refuses setns, unshare
 * and mount to everyone: the calls then fail alike. */
Test(privileges, mount_namespace_and_root_calls_as_without)
{
	need_root();
	static const char *const calls[] = {"setns-mnt",      "setns-any",   "setns-net-as-mnt",
	                                    "setns-threaded", "unshare-mnt", "unshare-fs",
	                                    "chroot",         "pivot_root"};
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]) - LEAKS_CHECKED_AT_EXIT; i++) {
		char dir0[PATH_MAX], dir1[PATH_MAX];
		snprintf(dir0, sizeof(dir0), "%s/pivot0", th_tmpdir());
		snprintf(dir1, sizeof(dir1), "%s/pivot1", th_tmpdir());
		cr_assert(mkdir(dir0, 0700) == 0 && mkdir(dir1, 0700) == 0);
		const char *argv0[] = {th_workload("probe"), "ns", calls[i], dir0, NULL};
		const char *argv1[] = {th_workload("probe"), "ns", calls[i], dir1, NULL};
		const char *env[] = {env_preload(), th_env_in_tmp("ROUNDTRIM_FIFO", "%p.fifo"),
		                     NULL};
		char out0[1024], err0[1024], out1[1024], err1[1024], line0[256];
		cr_assert_eq(th_run(argv0, NULL, out0, sizeof(out0), err0, sizeof(err0)), 0, "%s",
		             err0);
		cr_assert_eq(th_run(argv1, env, out1, sizeof(out1), err1, sizeof(err1)), 0, "%s",
		             err1);
		rmdir(dir0);
		rmdir(dir1);
		snprintf(line0, sizeof(line0), "%.*s\nlibrary=on\n", (int)strcspn(out0, "\n"),
		         out0);
		cr_assert_str_eq(out1, line0, "%s: %s", calls[i], err1);
		cr_assert_str_eq(err1, "", "%s", calls[i]);
	}
}

/* util-linux's commands, as a container tool runs them. /proc/1/ns/mnt is a stranger's where the
 * tests run in a container (EACCES): the command's own namespace takes its place. */
Test(privileges, nsenter_mount_and_unshare_mount_as_without)
{
	need_root();
	if (access("/usr/bin/unshare", X_OK) != 0 || access("/usr/bin/nsenter", X_OK) != 0)
		cr_skip_test("no unshare or nsenter (util-linux)");
	if (th_keeper_mode())
		cr_skip_test("the launcher of TH_DESCRIPTORS=keeper refuses setns and unshare to "
		             "everyone");
	static const char *const commands[][4] = {
	    {"/usr/bin/nsenter", "--mount=/proc/self/ns/mnt", "/usr/bin/true", NULL},
	    {"/usr/bin/unshare", "--mount", "/usr/bin/true", NULL},
	};
	const char *env[] = {env_preload(), "ROUNDTRIM_FIFO=none", NULL};
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		char out[1024], err0[1024], err1[1024];
		cr_assert_eq(th_run(commands[i], NULL, out, sizeof(out), err0, sizeof(err0)), 0,
		             "%s %s", commands[i][0], err0);
		cr_assert_eq(th_run(commands[i], env, out, sizeof(out), err1, sizeof(err1)), 0,
		             "%s %s under the library: %s", commands[i][0], commands[i][1], err1);
		cr_assert_str_eq(err1, "");
	}
}

/* The probe's namespace call, where unshare is refused, without the library (out0, err0) and
 * with it (out1, err1); both must exit 0. */
static void
run_setns_probe(const char *call, char *out0, char *err0, char *out1, char *err1, size_t size)
{
	const char *argv[] = {th_noshare(), "--setns", th_workload("probe"), "ns", call, NULL};
	const char *env[] = {env_preload(), th_env_in_tmp("ROUNDTRIM_FIFO", "%p.fifo"), NULL};
	cr_assert_eq(th_run(argv, NULL, out0, size, err0, size), 0, "%s", err0);
	cr_assert_eq(th_run(argv, env, out1, size, err1, size), 0, "%s", err1);
}

/* Where unshare is refused but setns is not, the worker shares the program's descriptor table
 * and so its filesystem context: it stands down before the program's setns into a mount
 * namespace, which then succeeds as without the library. */
Test(privileges, keeper_setns_into_a_mount_namespace_stands_down_first)
{
	need_root();
	if (th_keeper_mode())
		cr_skip_test("the launcher of TH_DESCRIPTORS=keeper refuses setns to everyone");
	static const char *const calls[] = {"setns-mnt", "setns-any"};
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		char out0[1024], err0[1024], out1[1024], err1[1024], expect[256];
		run_setns_probe(calls[i], out0, err0, out1, err1, sizeof(out0));
		snprintf(expect, sizeof(expect), "%s=0\nlibrary=", calls[i]);
		th_expect_in(out0, expect);
		snprintf(expect, sizeof(expect), "%s=0\nlibrary=off\n", calls[i]);
		cr_assert_str_eq(out1, expect, "%s", err1);
		cr_assert_eq(th_count_in(err1, "roundtrim: "), 1, "%s", err1);
		th_expect_in(err1,
		             "roundtrim: stood down: the program's setns(CLONE_NEWNS) needs a "
		             "filesystem context that no other thread shares");
	}
}

/* A setns that fails for a reason of the program's own fails as without the library, errno and
 * all, and the library acts on: a descriptor of another namespace type (EINVAL), a thread of the
 * program's own sharing its filesystem context (EINVAL). Only where the worker alone shares it
 * does the library stand down (above). */
Test(privileges, keeper_setns_failing_for_the_programs_own_reasons_keeps_the_library)
{
	need_root();
	if (th_keeper_mode())
		cr_skip_test("the launcher of TH_DESCRIPTORS=keeper refuses setns to everyone");
	static const char *const calls[] = {"setns-net-as-mnt", "setns-threaded"};
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		char out0[1024], err0[1024], out1[1024], err1[1024], expect[256];
		run_setns_probe(calls[i], out0, err0, out1, err1, sizeof(out0));
		snprintf(expect, sizeof(expect), "%s=-1 EINVAL\nlibrary=none\n", calls[i]);
		cr_assert_str_eq(out0, expect);
		snprintf(expect, sizeof(expect), "%s=-1 EINVAL\nlibrary=on\n", calls[i]);
		cr_assert_str_eq(out1, expect, "%s", err1);
		cr_assert_str_eq(err1, "", "%s", calls[i]);
	}
}

/* The worker's and the keeper's working directories are "/", not the program's at start: a
 * volume the program started in and has left unmounts as without the library (EBUSY, for good,
 * before). In a mount namespace of the test's own. */
static void
umount_after_leaving(bool keeper)
{
	need_root();
	if (th_keeper_mode())
		cr_skip_test("the launcher of TH_DESCRIPTORS=keeper refuses mount to everyone");
	if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		cr_skip_test("no mount namespace of the test's own here: %s", strerror(errno));
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/volume", th_tmpdir());
	cr_assert(mkdir(dir, 0700) == 0);
	const char *argv_all[] = {th_noshare(), "--mount", th_workload("probe"),
	                          "umount",     dir,       NULL};
	const char *const *argv = keeper ? argv_all : argv_all + 2;
	const char *env[] = {env_preload(), th_env_in_tmp("ROUNDTRIM_FIFO", "%p.fifo"), NULL};
	char out0[1024], err0[1024], out1[1024], err1[1024];
	cr_assert_eq(th_run(argv, NULL, out0, sizeof(out0), err0, sizeof(err0)), 0, "%s", err0);
	cr_assert_str_eq(out0, "umount=0\nlibrary=none\n");
	cr_assert_eq(th_run(argv, env, out1, sizeof(out1), err1, sizeof(err1)), 0, "%s", err1);
	umount2(dir, MNT_DETACH); /* where the probe could not */
	cr_assert_str_eq(out1, "umount=0\nlibrary=on\n", "%s", err1);
	cr_assert_str_eq(err1, "");
	rmdir(dir);
}

Test(privileges, umount_of_the_start_directory_once_left)
{
	umount_after_leaving(false);
}

Test(privileges, keeper_umount_of_the_start_directory_once_left)
{
	umount_after_leaving(true);
}
