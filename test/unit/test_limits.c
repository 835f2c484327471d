/* The task-limit rule: when the library may take its threads under a pids cgroup or
 * RLIMIT_NPROC, and how the files that tell the room are read. */
#include <criterion/criterion.h>
#include <string.h>

#include "rt_limits.h"

Test(limits, room_under_a_limit)
{
	cr_assert_eq(rt_limits_room(3, 1), 2);
	cr_assert_eq(rt_limits_room(3, 3), 0);
	cr_assert_eq(rt_limits_room(3, 5), 0, "over the limit (it was lowered under the tasks)");
	cr_assert_eq(rt_limits_room(RT_LIMITS_NONE, 5), RT_LIMITS_NONE);
}

/* The case: pids.max=3 with frag's main thread alone in it leaves 2, the worker one
 * of them and the program still one. At 1 the library would take the program's last. */
Test(limits, the_program_keeps_one_task)
{
	cr_assert(rt_limits_fits(2, 1));
	cr_assert_not(rt_limits_fits(1, 1));
	cr_assert_not(rt_limits_fits(0, 1));
	cr_assert(rt_limits_fits(3, 2), "worker and descriptor keeper");
	cr_assert_not(rt_limits_fits(2, 2));
	cr_assert(rt_limits_fits(RT_LIMITS_NONE, 2));
}

Test(limits, decide_names_the_limit_that_binds)
{
	cr_assert_eq(rt_limits_decide(RT_LIMITS_NONE, RT_LIMITS_NONE, 1), RT_LIMITS_START);
	cr_assert_eq(rt_limits_decide(2, RT_LIMITS_NONE, 1), RT_LIMITS_START);
	cr_assert_eq(rt_limits_decide(1, RT_LIMITS_NONE, 1), RT_LIMITS_CGROUP_FULL);
	cr_assert_eq(rt_limits_decide(RT_LIMITS_NONE, 1, 1), RT_LIMITS_NPROC_FULL);
	cr_assert_eq(rt_limits_decide(1, 1, 1), RT_LIMITS_CGROUP_FULL, "the cgroup is named first");
	cr_assert_eq(rt_limits_decide(100, 2, 2), RT_LIMITS_NPROC_FULL);
}

Test(limits, pids_files)
{
	uint64_t n;
	cr_assert(rt_limits_read_count("3\n", &n));
	cr_assert_eq(n, 3);
	cr_assert(rt_limits_read_count("max\n", &n));
	cr_assert_eq(n, RT_LIMITS_NONE);
	cr_assert(rt_limits_read_count("0\n", &n));
	cr_assert_eq(n, 0);
	cr_assert_not(rt_limits_read_count("", &n));
	cr_assert_not(rt_limits_read_count("-1\n", &n));
	cr_assert_not(rt_limits_read_count("3 4\n", &n));
}

Test(limits, cgroup_parents_stop_at_the_mount)
{
	char dir[64] = "/sys/fs/cgroup/pids/job/7";
	size_t top = strlen("/sys/fs/cgroup/pids");
	cr_assert(rt_limits_cgroup_parent(dir, top));
	cr_assert_str_eq(dir, "/sys/fs/cgroup/pids/job");
	cr_assert(rt_limits_cgroup_parent(dir, top));
	cr_assert_str_eq(dir, "/sys/fs/cgroup/pids");
	cr_assert_not(rt_limits_cgroup_parent(dir, top));
	cr_assert_str_eq(dir, "/sys/fs/cgroup/pids");
}

Test(limits, nproc_binds_unless_lifted)
{
	struct rt_limits_user u = {.nproc = 40, .initial_ns = true};
	cr_assert(rt_limits_nproc_binds(&u));
	u.real_root = true;
	cr_assert_not(rt_limits_nproc_binds(&u), "root of the initial namespace");
	u.real_root = false;
	u.cap_effective = UINT64_C(1) << 24;
	cr_assert_not(rt_limits_nproc_binds(&u), "CAP_SYS_RESOURCE");
	u.cap_effective = UINT64_C(1) << 21;
	cr_assert_not(rt_limits_nproc_binds(&u), "CAP_SYS_ADMIN");
	u.initial_ns = false;
	cr_assert(rt_limits_nproc_binds(&u), "a capability of a user namespace does not lift it");
	u.nproc = RT_LIMITS_NONE;
	cr_assert_not(rt_limits_nproc_binds(&u));
}

Test(limits, nproc_settled_without_counting_when_the_machine_fits)
{
	cr_assert(rt_limits_nproc_fits_anyway(1000, 600, 1));
	cr_assert_not(rt_limits_nproc_fits_anyway(601, 600, 1), "only a count can tell");
	cr_assert(rt_limits_nproc_fits_anyway(602, 600, 1));
}

Test(limits, loadavg)
{
	uint64_t n;
	cr_assert(rt_limits_loadavg_tasks("0.42 0.64 0.54 2/611 23049\n", &n));
	cr_assert_eq(n, 611);
	cr_assert_not(rt_limits_loadavg_tasks("0.42 0.64\n", &n));
}

Test(limits, status_owner_and_threads)
{
	static const char text[] = "Name:\tfrag\nUmask:\t0022\nState:\tS (sleeping)\n"
	                           "Uid:\t65534\t0\t0\t0\nGid:\t0\t0\t0\t0\nThreads:\t3\n";
	unsigned uid;
	uint64_t threads;
	cr_assert(rt_limits_status_tasks(text, &uid, &threads));
	cr_assert_eq(uid, 65534, "the real uid, which RLIMIT_NPROC counts");
	cr_assert_eq(threads, 3);
	cr_assert_not(rt_limits_status_tasks("Name:\tx\nUid:\t1\t1\t1\t1\n", &uid, &threads));
}

Test(limits, uid_maps)
{
	uint64_t out;
	bool initial;
	cr_assert(rt_limits_uid_map("         0          0 4294967295\n", 1000, &out, &initial));
	cr_assert_eq(out, 1000);
	cr_assert(initial);
	/* Rootless podman: root inside is the user outside, the rest from a subordinate range. */
	static const char rootless[] = "         0       1000          1\n"
	                               "         1     100000      65536\n";
	cr_assert(rt_limits_uid_map(rootless, 0, &out, &initial));
	cr_assert_eq(out, 1000);
	cr_assert_not(initial);
	cr_assert(rt_limits_uid_map(rootless, 5, &out, &initial));
	cr_assert_eq(out, 100004);
	cr_assert_not(rt_limits_uid_map(rootless, 70000, &out, &initial));
	/* A namespace that maps 0 to 0 over every uid is no different, seen from inside. */
	cr_assert(rt_limits_uid_map("0 0 4294967295", 0, &out, &initial));
	cr_assert(initial);
}
