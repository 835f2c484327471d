#include <criterion/criterion.h>
#include <string.h>

#include "rt_target.h"

Test(target, fifo_links_and_their_status_files)
{
	char status[64];
	cr_assert(rt_target_fifo_status("/run/user/1/roundtrim/42.fifo", status, sizeof(status)));
	cr_assert_str_eq(status, "/run/user/1/roundtrim/42.status");
	cr_assert(rt_target_fifo_status("/tmp/x/42.pipe", status, sizeof(status)));
	cr_assert_str_eq(status, "/tmp/x/42.pipe.status");
	cr_assert_not(rt_target_fifo_status("pipe:[123456]", status, sizeof(status)));
	cr_assert_not(rt_target_fifo_status("/tmp/x/42.fifo (deleted)", status, sizeof(status)));
	cr_assert_not(rt_target_fifo_status("/tmp/x/42.fifo", status, 8));
}

Test(target, status_of_the_process)
{
	struct rt_status_record st = {.pid = 42, .program = "python3"};
	cr_assert(rt_target_status_is_of(&st, 42));
	cr_assert_not(rt_target_status_is_of(&st, 43));
}

Test(target, match_is_fnmatch_on_the_program)
{
	const char *program = "python3.11";
	cr_assert(rt_target_selected(program, NULL));
	cr_assert(rt_target_selected(program, "python*"));
	cr_assert(rt_target_selected(program, "frag,python3.1?"));
	cr_assert(rt_target_selected(program, "python3.[0-9][0-9]"));
	cr_assert_not(rt_target_selected(program, "frag"));
	cr_assert_not(rt_target_selected(program, "Python*"));
}

Test(target, answered_when_the_count_moved)
{
	struct rt_status_record before = {.rounds = 4, .actions = 2};
	struct rt_status_record same = before, counted = {.rounds = 5, .actions = 2},
	                        acted = {.rounds = 5, .actions = 3},
	                        trimmed = {.rounds = 4, .actions = 3};
	bool did;
	cr_assert_not(rt_target_answered(RT_PROTO_ROUND, &before, &same, &did));
	cr_assert_not(did);
	cr_assert(rt_target_answered(RT_PROTO_ROUND, &before, &counted, &did));
	cr_assert_not(did);
	cr_assert(rt_target_answered(RT_PROTO_ROUND, &before, &acted, &did));
	cr_assert(did);
	/* A trim counts no round: only its action answers. */
	cr_assert_not(rt_target_answered(RT_PROTO_TRIM, &before, &counted, &did));
	cr_assert(rt_target_answered(RT_PROTO_TRIM, &before, &trimmed, &did));
	cr_assert(did);
}

Test(target, worker_comm_is_the_library_thread_name_exactly)
{
	cr_assert(rt_target_is_library_comm("roundtrim\n"));
	cr_assert(rt_target_is_library_comm("roundtrim"));
	cr_assert_not(rt_target_is_library_comm("roundtrim2\n"));
	cr_assert_not(rt_target_is_library_comm("python3\n"));
	cr_assert_not(rt_target_is_library_comm("round\n"));
	cr_assert(rt_target_is_library_comm("roundtrim-fds\n"), "the keeper");
	cr_assert_not(rt_target_is_library_comm("roundtrim-fdsx\n"));
}

/* ---- /proc/PID/stat */

Test(target, stat_lines_whatever_the_name_holds)
{
	struct rt_procfs_stat p;
	cr_assert(rt_procfs_stat("4242 (python3) S 4200 4200 17 0 -1 4194560 1 0\n", &p));
	cr_assert_eq(p.pid, 4242);
	cr_assert_eq(p.ppid, 4200);
	cr_assert_eq(p.sid, 17);
	cr_assert_eq(p.state, 'S');
	cr_assert(rt_target_alive(&p));
	/* A name may hold blanks and parentheses: the last ')' ends it. */
	cr_assert(rt_procfs_stat("7 (a) b (c)) Z 1 7 7 0", &p));
	cr_assert_eq(p.ppid, 1);
	cr_assert_eq(p.sid, 7);
	cr_assert_not(rt_target_alive(&p));
	cr_assert(rt_procfs_stat("2 (kthreadd) S 0 0 0 0 -1", &p));
	cr_assert_eq(p.ppid, 0);
	cr_assert_eq(p.sid, 0);
	const char *bad[] = {"",
	                     "x (a) S 1 1 1",
	                     "0 (a) S 1 1 1",
	                     "12 a) S 1 1 1",
	                     "12 (a) S 1 1",
	                     "12 (a) S -1 1 1",
	                     "12 (a)S 1 1 1",
	                     "12 (a) S 1 1 1x",
	                     "12 (a) S 1 1 99999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_not(rt_procfs_stat(bad[i], &p), "%s", bad[i]);
}

/* NVFlare's site: the watchdog bash (100), the subshell in pid.fl (120, adopted by init once
 * its parent subshell exited), python3 (121) and its worker (122); elsewhere a sibling (130). */
static const struct rt_procfs_stat tree[] = {
    {.pid = 1, .ppid = 0, .sid = 1, .state = 'S'},
    {.pid = 100, .ppid = 50, .sid = 50, .state = 'S'},
    {.pid = 120, .ppid = 1, .sid = 50, .state = 'S'},
    {.pid = 121, .ppid = 120, .sid = 50, .state = 'S'},
    {.pid = 122, .ppid = 121, .sid = 50, .state = 'S'},
    {.pid = 130, .ppid = 100, .sid = 50, .state = 'S'},
    {.pid = 200, .ppid = 201, .sid = 200, .state = 'S'},
    {.pid = 201, .ppid = 200, .sid = 200, .state = 'S'},
};
#define TREE_N (sizeof(tree) / sizeof(tree[0]))

Test(target, descendants_by_the_parent_links)
{
	cr_assert(rt_target_descends(tree, TREE_N, 120, 120), "the process itself");
	cr_assert(rt_target_descends(tree, TREE_N, 121, 120));
	cr_assert(rt_target_descends(tree, TREE_N, 122, 120));
	cr_assert_not(rt_target_descends(tree, TREE_N, 130, 120));
	/* Adopted by init: no longer below the watchdog that started it. */
	cr_assert_not(rt_target_descends(tree, TREE_N, 121, 100));
	cr_assert(rt_target_descends(tree, TREE_N, 121, 1));
	/* Gone from the table, or a loop the table cannot hold for real. */
	cr_assert_not(rt_target_descends(tree, TREE_N, 999, 120));
	cr_assert_not(rt_target_descends(tree, TREE_N, 200, 120));
	cr_assert_not(rt_target_descends(tree, TREE_N, 50, 120));
	cr_assert_not(rt_target_descends(NULL, 0, 121, 120));
}

/* ---- cgroups */

Test(target, mountinfo_lines_of_cgroup_filesystems)
{
	struct rt_target_mount m;
	cr_assert(rt_target_parse_mount(
	    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n", &m));
	cr_assert_str_eq(m.point, "/sys/fs/cgroup/memory");
	cr_assert_str_eq(m.root, "/");
	cr_assert_not(m.hierarchy.v2);
	cr_assert_str_eq(m.hierarchy.controllers, "memory");
	cr_assert(
	    rt_target_parse_mount("32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:9 "
	                          "- cgroup cgroup rw,cpu,cpuacct",
	                          &m));
	cr_assert_str_eq(m.point, "/sys/fs/cgroup/cpu,cpuacct");
	cr_assert_str_eq(m.hierarchy.controllers, "cpu,cpuacct");
	cr_assert(rt_target_parse_mount("40 31 0:37 / /sys/fs/cgroup/systemd rw - cgroup cgroup "
	                                "rw,xattr,release_agent=/x,name=systemd",
	                                &m));
	cr_assert_str_eq(m.hierarchy.controllers, "name=systemd");
	cr_assert(rt_target_parse_mount(
	    "29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev shared:4 - cgroup2 cgroup2 "
	    "rw,nsdelegate,memory_recursiveprot",
	    &m));
	cr_assert(m.hierarchy.v2);
	cr_assert_str_eq(m.point, "/sys/fs/cgroup");
	/* A container's view: the mount shows its own cgroup; blanks come escaped. */
	cr_assert(rt_target_parse_mount(
	    "900 800 0:26 /docker/abc /my\\040cg rw - cgroup2 cgroup2 rw", &m));
	cr_assert_str_eq(m.root, "/docker/abc");
	cr_assert_str_eq(m.point, "/my cg");
	cr_assert_not(
	    rt_target_parse_mount("31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755", &m));
	cr_assert_not(rt_target_parse_mount("21 1 8:1 / / rw - ext4 /dev/sda1 rw", &m));
	cr_assert_not(rt_target_parse_mount("35 31 0:32 / /x rw cgroup cgroup rw,memory", &m));
	cr_assert_not(rt_target_parse_mount("", &m));
}

static const struct rt_target_mount mounts[] = {
    {.point = "/sys/fs/cgroup/memory", .root = "/", .hierarchy = {false, "memory"}},
    {.point = "/sys/fs/cgroup/cpu,cpuacct", .root = "/", .hierarchy = {false, "cpu,cpuacct"}},
    {.point = "/sys/fs/cgroup/unified", .root = "/", .hierarchy = {true, ""}},
    {.point = "/ctr", .root = "/docker/abc", .hierarchy = {true, ""}},
};
#define MOUNTS_N (sizeof(mounts) / sizeof(mounts[0]))

Test(target, cgroup_given_as_a_directory_or_as_a_path)
{
	struct rt_target_cgroup cg;
	cr_assert_null(
	    rt_target_cgroup_parse("/sys/fs/cgroup/memory/jobs/42/", mounts, MOUNTS_N, &cg));
	cr_assert_not(cg.any_hierarchy);
	cr_assert_str_eq(cg.hierarchy.controllers, "memory");
	cr_assert_str_eq(cg.path, "/jobs/42");
	cr_assert_null(rt_target_cgroup_parse("/sys/fs/cgroup/memory", mounts, MOUNTS_N, &cg));
	cr_assert_str_eq(cg.path, "/");
	cr_assert_null(rt_target_cgroup_parse("/sys/fs/cgroup/unified/a", mounts, MOUNTS_N, &cg));
	cr_assert(cg.hierarchy.v2);
	cr_assert_str_eq(cg.path, "/a");
	/* The mount's root comes first. */
	cr_assert_null(rt_target_cgroup_parse("/ctr/job", mounts, MOUNTS_N, &cg));
	cr_assert_str_eq(cg.path, "/docker/abc/job");
	cr_assert_null(rt_target_cgroup_parse("/ctr", mounts, MOUNTS_N, &cg));
	cr_assert_str_eq(cg.path, "/docker/abc");
	/* Anything else is a cgroup path, in any hierarchy. */
	cr_assert_null(
	    rt_target_cgroup_parse("/system.slice/nvflare.service", mounts, MOUNTS_N, &cg));
	cr_assert(cg.any_hierarchy);
	cr_assert_str_eq(cg.path, "/system.slice/nvflare.service");
	cr_assert_null(rt_target_cgroup_parse("/sys/fs/cgroup/memoryx", mounts, MOUNTS_N, &cg));
	cr_assert(cg.any_hierarchy);
	cr_assert_null(rt_target_cgroup_parse("//", mounts, MOUNTS_N, &cg));
	cr_assert_str_eq(cg.path, "/");
	cr_assert_not_null(rt_target_cgroup_parse("jobs/42", mounts, MOUNTS_N, &cg));
	cr_assert_not_null(rt_target_cgroup_parse("", mounts, MOUNTS_N, &cg));
}

static const char proc_cgroup[] = "9:name=systemd:/user.slice/job.scope\n"
                                  "4:memory:/jobs/42/worker\n"
                                  "2:cpuacct,cpu:/\n"
                                  "0::/user.slice/job.scope\n";

static bool
in(const char *arg)
{
	struct rt_target_cgroup cg;
	cr_assert_null(rt_target_cgroup_parse(arg, mounts, MOUNTS_N, &cg), "%s", arg);
	return rt_target_in_cgroup(proc_cgroup, &cg);
}

Test(target, membership_is_the_cgroup_and_those_below_it)
{
	cr_assert(in("/sys/fs/cgroup/memory/jobs/42"));
	cr_assert(in("/sys/fs/cgroup/memory/jobs/42/worker"));
	cr_assert(in("/sys/fs/cgroup/memory"));
	cr_assert_not(in("/sys/fs/cgroup/memory/jobs/4"), "a prefix is not a parent");
	cr_assert_not(in("/sys/fs/cgroup/memory/jobs/42/worker/x"));
	/* The hierarchy counts: /jobs/42 exists only in the memory one. */
	cr_assert_not(in("/sys/fs/cgroup/unified/jobs/42"));
	cr_assert(in("/sys/fs/cgroup/unified/user.slice"));
	cr_assert(in("/sys/fs/cgroup/cpu,cpuacct"), "controllers compare as a set");
	cr_assert_not(in("/sys/fs/cgroup/cpu,cpuacct/a"));
	/* A cgroup path: any hierarchy. */
	cr_assert(in("/jobs/42"));
	cr_assert(in("/user.slice/job.scope"));
	cr_assert(in("/user.slice"));
	cr_assert(in("/"));
	cr_assert_not(in("/system.slice"));
	struct rt_target_cgroup cg;
	rt_target_cgroup_parse("/jobs", mounts, MOUNTS_N, &cg);
	cr_assert_not(rt_target_in_cgroup("", &cg));
	cr_assert_not(rt_target_in_cgroup("garbage\n4:memory\n", &cg));
	cr_assert(rt_target_in_cgroup("4:memory:/jobs", &cg), "no final newline");
}

/* ---- The selection */

static enum rt_target_verdict
verdict(const struct rt_target_filter *f, int pid, const char *program, const char *cgroup)
{
	const struct rt_procfs_stat *p = NULL;
	for (size_t i = 0; i < TREE_N; i++)
		if (tree[i].pid == pid)
			p = &tree[i];
	cr_assert_not_null(p);
	return rt_target_verdict(f, tree, TREE_N, p, program, cgroup);
}

Test(target, all_alone_stays_in_the_callers_session)
{
	struct rt_target_filter f = {.session = 50};
	cr_assert(rt_target_session_bound(&f));
	cr_assert_eq(verdict(&f, 121, "python3", NULL), RT_TARGET_IN);
	cr_assert_eq(verdict(&f, 201, "python3", NULL), RT_TARGET_OTHER_SESSION);
	f.globs = "python*";
	cr_assert(rt_target_session_bound(&f), "--match names programs, not a job");
	cr_assert_eq(verdict(&f, 201, "python3", NULL), RT_TARGET_OTHER_SESSION);
	cr_assert_eq(verdict(&f, 121, "frag", NULL), RT_TARGET_NOT_MATCHED);
	f.any_session = true;
	cr_assert_not(rt_target_session_bound(&f));
	cr_assert_eq(verdict(&f, 201, "python3", NULL), RT_TARGET_IN);
}

Test(target, under_and_cgroup_name_the_job_whatever_its_session)
{
	struct rt_target_filter f = {.session = 7, .under = 120};
	cr_assert_not(rt_target_session_bound(&f));
	cr_assert_not(rt_target_needs_cgroup(&f));
	cr_assert_eq(verdict(&f, 121, "python3", NULL), RT_TARGET_IN);
	cr_assert_eq(verdict(&f, 130, "python3", NULL), RT_TARGET_NOT_UNDER);

	struct rt_target_cgroup cg;
	rt_target_cgroup_parse("/sys/fs/cgroup/memory/jobs/42", mounts, MOUNTS_N, &cg);
	struct rt_target_filter c = {.session = 7, .cgroup = &cg};
	cr_assert(rt_target_needs_cgroup(&c));
	cr_assert_not(rt_target_session_bound(&c));
	cr_assert_eq(verdict(&c, 201, "python3", proc_cgroup), RT_TARGET_IN);
	cr_assert_eq(verdict(&c, 201, "python3", "4:memory:/other\n"), RT_TARGET_NOT_IN_CGROUP);
	cr_assert_eq(verdict(&c, 201, "python3", NULL), RT_TARGET_NOT_IN_CGROUP, "unreadable");

	/* Each filter given must pass. */
	struct rt_target_filter all = {.under = 120, .cgroup = &cg, .globs = "python*"};
	cr_assert_eq(verdict(&all, 122, "python3", proc_cgroup), RT_TARGET_IN);
	cr_assert_eq(verdict(&all, 130, "python3", proc_cgroup), RT_TARGET_NOT_UNDER);
	cr_assert_eq(verdict(&all, 122, "python3", "0::/\n"), RT_TARGET_NOT_IN_CGROUP);
	cr_assert_eq(verdict(&all, 122, "bash", proc_cgroup), RT_TARGET_NOT_MATCHED);
}

Test(target, the_filters_in_words)
{
	char text[256];
	struct rt_target_filter f = {.session = 3};
	rt_target_filter_text(&f, text, sizeof(text));
	cr_assert_str_eq(text, " in this session");
	struct rt_target_cgroup cg;
	rt_target_cgroup_parse("/sys/fs/cgroup/memory/jobs/42", mounts, MOUNTS_N, &cg);
	f = (struct rt_target_filter){.under = 42, .cgroup = &cg, .globs = "python*"};
	rt_target_filter_text(&f, text, sizeof(text));
	cr_assert_str_eq(text, " under pid 42 in cgroup memory:/jobs/42 matching 'python*'");
	rt_target_cgroup_parse("/jobs", mounts, MOUNTS_N, &cg);
	f = (struct rt_target_filter){.cgroup = &cg};
	rt_target_filter_text(&f, text, sizeof(text));
	cr_assert_str_eq(text, " in cgroup /jobs");
	rt_target_cgroup_parse("/sys/fs/cgroup/unified/a", mounts, MOUNTS_N, &cg);
	rt_target_filter_text(&f, text, sizeof(text));
	cr_assert_str_eq(text, " in cgroup /a (v2)");
	f = (struct rt_target_filter){.any_session = true, .globs = "x"};
	rt_target_filter_text(&f, text, 8);
	cr_assert_str_eq(text, " matchi");
}
