#include <criterion/criterion.h>
#include <string.h>

#include "rt_procfs.h"

Test(procfs, statm)
{
	uint64_t kib;
	cr_assert(rt_procfs_statm_rss_kib("765 444 416 5 0 123 0\n", 4096, &kib));
	cr_assert_eq(kib, 444 * 4);
	cr_assert_not(rt_procfs_statm_rss_kib("", 4096, &kib));
}

Test(procfs, smaps_rollup_splits_rss)
{
	static const char text[] = "55cb448e8000-7ffd20bf9000 ---p 00000000 00:00 0  [rollup]\n"
	                           "Rss:                9640 kB\nPss:   214 kB\n"
	                           "Anonymous:          8112 kB\nKSM:  0 kB\n"
	                           "LazyFree:           2000 kB\nSwap:  0 kB\n";
	struct rt_procfs_rss r;
	cr_assert(rt_procfs_smaps_rollup(text, &r));
	cr_assert_eq(r.rss_kib, 9640);
	cr_assert_eq(r.anon_kib, 6112, "LazyFree is not counted as in use");
	cr_assert_eq(r.file_kib, 1528);
	cr_assert_eq(r.lazyfree_kib, 2000);
	cr_assert_not(rt_procfs_smaps_rollup("Rss: 5 kB\n", &r));
	cr_assert_not(rt_procfs_smaps_rollup("Rss: 5 kB\nAnonymous: 6 kB\nLazyFree: 0 kB\n", &r));
}

Test(procfs, seccomp_mode_of_status)
{
	cr_assert_eq(rt_procfs_seccomp("Name:\techo\nNoNewPrivs:\t0\nSeccomp:\t0\n"
	                               "Seccomp_filters:\t0\n"),
	             RT_PROCFS_SECCOMP_NONE);
	cr_assert_eq(rt_procfs_seccomp("NoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t3\n"),
	             RT_PROCFS_SECCOMP_FILTERED);
	cr_assert_eq(rt_procfs_seccomp("Seccomp:\t1\n"), RT_PROCFS_SECCOMP_FILTERED);
	cr_assert_eq(rt_procfs_seccomp("Seccomp_filters:\t0\n"), RT_PROCFS_SECCOMP_UNKNOWN,
	             "another key that starts alike is not the mode");
	cr_assert_eq(rt_procfs_seccomp("Name:\tx\n"), RT_PROCFS_SECCOMP_UNKNOWN);
	cr_assert_eq(rt_procfs_seccomp("Seccomp:\t\n"), RT_PROCFS_SECCOMP_UNKNOWN);
}

Test(procfs, stat_threads_whatever_the_name)
{
	struct rt_procfs_stat st;
	cr_assert(rt_procfs_stat("36458 (cat) R 30727 36458 30727 0 -1 4194304 107 0 0 0 0 0 "
	                         "0 0 20 0 1 0 12622376 5574656 416 18446744073709551615\n",
	                         &st));
	cr_assert_eq(st.threads, 1);
	cr_assert_eq(st.ppid, 30727);
	cr_assert(
	    rt_procfs_stat("9 (a) b (c) R 1 9 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 7 0 1 1 1\n", &st));
	cr_assert_eq(st.threads, 7);
	/* Cut before field 20: the rest reads, the thread count is unknown. */
	cr_assert(rt_procfs_stat("9 (x) R 1 2 3 0\n", &st));
	cr_assert_eq(st.threads, 0);
	cr_assert_eq(st.sid, 3);
}

static bool
alone_among(const char *text, unsigned library_tasks)
{
	struct rt_procfs_stat st;
	cr_assert(rt_procfs_stat(text, &st), "%s", text);
	return rt_procfs_stat_alone(&st, library_tasks);
}

static bool
alone(const char *text)
{
	return alone_among(text, 1);
}

Test(procfs, alone_beside_an_exited_main_thread)
{
	cr_assert(alone("5 (p) S 1 5 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 1 1 1\n"));
	cr_assert(alone("5 (p) Z 1 5 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 2 0 1 1 1\n"));
	cr_assert_not(alone("5 (p) S 1 5 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 2 0 1 1 1\n"),
	              "the main thread and the worker");
	cr_assert_not(alone("5 (p) Z 1 5 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 3 0 1 1 1\n"),
	              "a thread of the program still runs");
	cr_assert_not(alone("5 (p) Z 1 5 1 0\n"), "no thread count");
}

/* With a keeper, the library's tasks are two. */
Test(procfs, alone_with_the_keeper)
{
	cr_assert(alone_among("5 (p) S 1 5 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 2 0 1 1 1\n", 2));
	cr_assert(alone_among("5 (p) Z 1 5 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 3 0 1 1 1\n", 2));
	cr_assert_not(alone_among("5 (p) S 1 5 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 3 0 1 1 1\n", 2),
	              "the main thread, the worker and the keeper");
	cr_assert_not(alone_among("5 (p) Z 1 5 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 4 0 1 1 1\n", 2));
}

Test(procfs, last_program_thread_to_exit)
{
	cr_assert(rt_procfs_last_thread(2, 1, true, true), "the main thread and the worker");
	cr_assert(rt_procfs_last_thread(2, 1, false, false), "a thread, the worker");
	cr_assert(rt_procfs_last_thread(3, 1, false, true), "beside the zombie main thread");
	cr_assert_not(rt_procfs_last_thread(3, 1, false, false), "the main thread still runs");
	cr_assert_not(rt_procfs_last_thread(3, 1, true, true), "another thread still runs");
	cr_assert_not(rt_procfs_last_thread(4, 1, false, true));
	/* The keeper is the library's: */
	cr_assert(rt_procfs_last_thread(3, 2, true, true), "the main thread, worker, keeper");
	cr_assert(rt_procfs_last_thread(4, 2, false, true), "beside the zombie main thread");
	cr_assert_not(rt_procfs_last_thread(4, 2, false, false), "the main thread still runs");
	cr_assert_not(rt_procfs_last_thread(4, 2, true, true), "another thread still runs");
}

/* As read on a machine of this project: v1 controllers, v2 mounted beside them. */
static const char hybrid_cgroup[] = "9:name=systemd:/\n8:pids:/job/7\n4:memory:/process_api/6e96\n"
                                    "0::/\n";
static const char hybrid_mountinfo[] =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "38 31 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "40 31 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

Test(procfs, cgroup_dir_of_each_controller)
{
	char dir[256];
	size_t top;
	cr_assert_eq(
	    rt_procfs_cgroup_dir(hybrid_cgroup, hybrid_mountinfo, "pids", dir, sizeof(dir), &top),
	    RT_PROCFS_CGROUP_V1);
	cr_assert_str_eq(dir, "/sys/fs/cgroup/pids/job/7");
	cr_assert_eq(top, strlen("/sys/fs/cgroup/pids"));
	cr_assert_eq(
	    rt_procfs_cgroup_dir(hybrid_cgroup, hybrid_mountinfo, "memory", dir, sizeof(dir), &top),
	    RT_PROCFS_CGROUP_V1);
	cr_assert_str_eq(dir, "/sys/fs/cgroup/memory/process_api/6e96");
	/* No v1 hierarchy of the controller: the unified one, where it may be enabled. */
	cr_assert_eq(
	    rt_procfs_cgroup_dir(hybrid_cgroup, hybrid_mountinfo, "cpu", dir, sizeof(dir), &top),
	    RT_PROCFS_CGROUP_V2);
	cr_assert_str_eq(dir, "/sys/fs/cgroup/unified");
	cr_assert_eq(top, strlen("/sys/fs/cgroup/unified"));
}

/* In a container the mount shows the container's cgroup as its top. */
Test(procfs, cgroup_dir_below_a_mount_of_a_subtree)
{
	static const char cgroup[] = "0::/docker/abc/inner\n";
	static const char mountinfo[] =
	    "29 23 0:26 /docker/abc /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n";
	char dir[256];
	size_t top;
	cr_assert_eq(rt_procfs_cgroup_dir(cgroup, mountinfo, "pids", dir, sizeof(dir), &top),
	             RT_PROCFS_CGROUP_V2);
	cr_assert_str_eq(dir, "/sys/fs/cgroup/inner");
	cr_assert_eq(top, strlen("/sys/fs/cgroup"));
	cr_assert_eq(
	    rt_procfs_cgroup_dir("0::/elsewhere\n", mountinfo, "pids", dir, sizeof(dir), &top),
	    RT_PROCFS_CGROUP_NONE);
}
