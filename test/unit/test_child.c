/* What a fork child that has not exec'd gets of the library: a start only once it has lived
 * ROUNDTRIM_CHILD_START, no rounds found by itself, the Python steps only for what someone asked
 * of it; and how a status shows fork children under their parent, or not at all. */
#include <criterion/criterion.h>

#include "rt_child.h"

#define S 1000000000ULL

Test(child, starts_once_it_has_lived_the_bound)
{
	cr_assert_eq(rt_child_starts(0, 60 * S), RT_CHILD_WAIT);
	cr_assert_eq(rt_child_starts(60 * S - 1, 60 * S), RT_CHILD_WAIT);
	cr_assert_eq(rt_child_starts(60 * S, 60 * S), RT_CHILD_START);
	cr_assert_eq(rt_child_starts(3600 * S, 60 * S), RT_CHILD_START);
}

Test(child, never_starts_by_itself_with_never)
{
	cr_assert_eq(rt_child_starts(0, 0), RT_CHILD_NEVER);
	cr_assert_eq(rt_child_starts(UINT64_MAX, 0), RT_CHILD_NEVER);
}

Test(child, detects_rounds_only_outside_a_fork_child)
{
	cr_assert(rt_child_detects(false, true));
	cr_assert_not(rt_child_detects(true, true));
	cr_assert_not(rt_child_detects(false, false));
	cr_assert_not(rt_child_detects(true, false));
}

Test(child, python_steps_in_a_fork_child_only_when_asked)
{
	struct rt_batch own = {0};
	rt_batch_trim(&own, "interval");
	cr_assert(rt_child_python_steps(false, &own), "a process's own trigger runs the steps");
	cr_assert_not(rt_child_python_steps(true, &own), "a fork child's own trigger must not");

	struct rt_batch fifo = {0};
	rt_batch_count(&fifo, 1, "fifo");
	cr_assert(rt_child_python_steps(true, &fifo));
	struct rt_batch api = {0};
	rt_batch_counted(&api, 1, true, "api");
	cr_assert(rt_child_python_steps(true, &api));
	struct rt_batch trim = {0};
	rt_batch_trim_asked(&trim, "api");
	cr_assert(rt_child_python_steps(true, &trim));
}

Test(child, asked_trim_from_the_fifo)
{
	struct rt_ledger l;
	rt_ledger_init(&l, 1);
	struct rt_batch b = {0};
	struct rt_proto_cmd cmd = {.kind = RT_PROTO_TRIM, .line = "trim"};
	rt_ledger_line(&l, &b, &cmd);
	cr_assert(b.trim && b.trim_asked);
	cr_assert(rt_child_python_steps(true, &b));
}

Test(child, a_detected_round_never_runs_steps_in_a_fork_child)
{
	struct rt_batch b = {0};
	rt_batch_detected(&b);
	cr_assert_not(rt_child_python_steps(true, &b));
}

Test(child, fork_of_needs_parent_and_same_library_address)
{
	struct rt_child_proc p = {.pid = 100, .ppid = 1, .library_base = 0x7f0000001000};
	struct rt_child_proc fork = {.pid = 101, .ppid = 100, .library_base = 0x7f0000001000};
	struct rt_child_proc exec = {.pid = 102, .ppid = 100, .library_base = 0x7f1234560000};
	struct rt_child_proc other = {.pid = 103, .ppid = 7, .library_base = 0x7f0000001000};
	struct rt_child_proc unknown = {.pid = 104, .ppid = 100, .library_base = 0};
	cr_assert(rt_child_is_fork_of(&fork, &p));
	cr_assert_not(rt_child_is_fork_of(&exec, &p), "an exec'd child maps the library anew");
	cr_assert_not(rt_child_is_fork_of(&other, &p));
	cr_assert_not(rt_child_is_fork_of(&unknown, &p));
	cr_assert_not(rt_child_is_fork_of(&p, &p));
}

/* A DataLoader's job process (100) with two started workers and two that never started, a
 * subprocess that exec'd (103), an unrelated carrier (300), and a worker of a worker (106). */
Test(child, order_puts_started_fork_children_under_their_parent)
{
	const uint64_t a = 0x7f0000001000, b = 0x7f5555550000, c = 0x7f2222220000;
	struct rt_child_proc procs[] = {
	    {.pid = 100, .ppid = 1, .library_base = a, .started = true},
	    {.pid = 101, .ppid = 100, .library_base = a, .started = true},
	    {.pid = 102, .ppid = 100, .library_base = a, .started = false},
	    {.pid = 103, .ppid = 100, .library_base = b, .started = true},
	    {.pid = 104, .ppid = 100, .library_base = a, .started = false},
	    {.pid = 105, .ppid = 100, .library_base = a, .started = true},
	    {.pid = 106, .ppid = 101, .library_base = a, .started = true},
	    {.pid = 300, .ppid = 1, .library_base = c, .started = false},
	};
	size_t n = sizeof(procs) / sizeof(procs[0]), order[8];
	unsigned depth[8];
	size_t shown = rt_child_order(procs, n, order, depth);
	const int want_pid[] = {100, 101, 106, 105, 103, 300};
	const unsigned want_depth[] = {0, 1, 2, 1, 0, 0};
	/* 103 exec'd: it is a process of its own, at the top, in pid order. */
	cr_assert_eq(shown, 6);
	for (size_t k = 0; k < shown; k++) {
		cr_assert_eq(procs[order[k]].pid, want_pid[k], "row %zu: pid %d", k,
		             procs[order[k]].pid);
		cr_assert_eq(depth[k], want_depth[k], "row %zu: depth %u", k, depth[k]);
	}
}

/* A fork child whose parent is gone (re-parented) is a process of its own, started or not. */
Test(child, order_shows_an_orphan_at_the_top)
{
	struct rt_child_proc procs[] = {
	    {.pid = 200, .ppid = 1, .library_base = 0x7f0000001000, .started = false},
	};
	size_t order[1];
	unsigned depth[1];
	cr_assert_eq(rt_child_order(procs, 1, order, depth), 1);
	cr_assert_eq(order[0], 0);
	cr_assert_eq(depth[0], 0);
}

/* Two reads of /proc that disagree (a pid reused) cannot loop the walk. */
Test(child, order_ends_on_a_faked_loop)
{
	struct rt_child_proc procs[] = {
	    {.pid = 10, .ppid = 11, .library_base = 0x1000, .started = true},
	    {.pid = 11, .ppid = 10, .library_base = 0x1000, .started = true},
	};
	size_t order[2];
	unsigned depth[2];
	cr_assert_leq(rt_child_order(procs, 2, order, depth), 2);
}
