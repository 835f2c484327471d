/* What a fork child that has not exec'd gets of the library: a start only once it has lived
 * ROUNDTRIM_CHILD_START, the Python steps only for what someone asked of it (its own rounds take
 * the allocator's action alone), everything once its parent is gone or it left the session; and
 * how a status shows fork children under their parent, or not at all. */
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
	cr_assert_eq(rt_child_starts(0, RT_CHILD_START_NEVER), RT_CHILD_NEVER);
	cr_assert_eq(rt_child_starts(UINT64_MAX, RT_CHILD_START_NEVER), RT_CHILD_NEVER);
}

Test(child, starts_at_once_with_zero)
{
	cr_assert_eq(rt_child_starts(0, 0), RT_CHILD_START);
}

/* A fork child stays one while its parent is the one it was forked from and it stays in the
 * session: a child re-parented (its parent gone) or one that called setsid (a daemon, the whole
 * program in a double-forked grandchild) is a process of its own. */
Test(child, fork_of_until_the_parent_goes_or_the_session_is_left)
{
	struct rt_child_fork f = {.parent = 100, .session = 50, .ppid_now = 100, .session_now = 50};
	cr_assert_eq(rt_child_fork_of(&f), 100);
	f.ppid_now = 1;
	cr_assert_eq(rt_child_fork_of(&f), 0, "re-parented to init");
	f.ppid_now = 77;
	cr_assert_eq(rt_child_fork_of(&f), 0, "re-parented to a subreaper");
	f.ppid_now = 100;
	f.session_now = 101;
	cr_assert_eq(rt_child_fork_of(&f), 0, "setsid");
	struct rt_child_fork own = {0};
	cr_assert_eq(rt_child_fork_of(&own), 0, "no fork child at all");
}

Test(child, python_steps_in_a_fork_child_only_when_asked)
{
	struct rt_batch own = {0};
	rt_batch_trim(&own, "interval");
	cr_assert(rt_child_python_steps(0, &own), "a process's own trigger runs the steps");
	cr_assert_not(rt_child_python_steps(100, &own), "a fork child's own trigger must not");

	struct rt_batch fifo = {0};
	rt_batch_count(&fifo, 1, "fifo");
	cr_assert(rt_child_python_steps(100, &fifo));
	struct rt_batch api = {0};
	rt_batch_counted(&api, 1, true, "api");
	cr_assert(rt_child_python_steps(100, &api));
	struct rt_batch trim = {0};
	rt_batch_trim_asked(&trim, "api");
	cr_assert(rt_child_python_steps(100, &trim));
}

Test(child, asked_trim_from_the_fifo)
{
	struct rt_ledger l;
	rt_ledger_init(&l, 1);
	struct rt_batch b = {0};
	struct rt_proto_cmd cmd = {.kind = RT_PROTO_TRIM, .line = "trim"};
	rt_ledger_line(&l, &b, &cmd);
	cr_assert(b.trim && b.trim_asked);
	cr_assert(rt_child_python_steps(100, &b));
}

/* A fork child finds rounds of its own, which take the allocator's action alone; once it is a
 * process of its own they run the steps too. */
Test(child, a_detected_round_never_runs_steps_in_a_fork_child)
{
	struct rt_batch b = {0};
	rt_batch_detected(&b, 900);
	cr_assert_not(rt_child_python_steps(100, &b));
	cr_assert(rt_child_python_steps(0, &b));
}

Test(child, fork_of_needs_its_record_and_the_parent_still_there)
{
	struct rt_child_proc p = {.pid = 100, .ppid = 1};
	struct rt_child_proc fork = {.pid = 101, .ppid = 100, .fork_of = 100};
	struct rt_child_proc exec = {.pid = 102, .ppid = 100, .fork_of = 0};
	struct rt_child_proc other = {.pid = 103, .ppid = 7, .fork_of = 100};
	struct rt_child_proc stale = {.pid = 104, .ppid = 100, .fork_of = 99};
	struct rt_child_proc left = {.pid = 105, .ppid = 100, .session = 105, .fork_of = 100};
	cr_assert(rt_child_is_fork_of(&fork, &p));
	cr_assert_not(rt_child_is_fork_of(&exec, &p), "an exec'd child's record names none");
	cr_assert_not(rt_child_is_fork_of(&other, &p), "re-parented since its record");
	cr_assert_not(rt_child_is_fork_of(&stale, &p));
	cr_assert_not(rt_child_is_fork_of(&left, &p), "setsid since its record");
	cr_assert_not(rt_child_is_fork_of(&p, &p));
}

/* A DataLoader's job process (100) with two started workers and two that never started, a
 * subprocess that exec'd (103), an unrelated carrier (300), a worker of a worker (106), and a
 * child whose library started without a FIFO, so without a record (107). */
Test(child, order_puts_started_fork_children_under_their_parent)
{
	struct rt_child_proc procs[] = {
	    {.pid = 100, .ppid = 1, .started = true},
	    {.pid = 101, .ppid = 100, .fork_of = 100, .started = true},
	    {.pid = 102, .ppid = 100, .started = false},
	    {.pid = 103, .ppid = 100, .started = true},
	    {.pid = 104, .ppid = 100, .started = false},
	    {.pid = 105, .ppid = 100, .fork_of = 100, .started = true},
	    {.pid = 106, .ppid = 101, .fork_of = 101, .started = true},
	    {.pid = 107, .ppid = 100, .started = true},
	    {.pid = 300, .ppid = 1, .started = false},
	};
	size_t n = sizeof(procs) / sizeof(procs[0]), order[9], work[RT_CHILD_ORDER_WORK(9)];
	unsigned depth[9];
	size_t shown = rt_child_order(procs, n, order, depth, work);
	const int want_pid[] = {100, 101, 106, 105, 103, 107, 300};
	const unsigned want_depth[] = {0, 1, 2, 1, 0, 0, 0};
	/* 103 exec'd: it is a process of its own, at the top, in pid order. */
	cr_assert_eq(shown, 7);
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
	    {.pid = 200, .ppid = 1, .fork_of = 150, .started = false},
	};
	size_t order[1], work[RT_CHILD_ORDER_WORK(1)];
	unsigned depth[1];
	cr_assert_eq(rt_child_order(procs, 1, order, depth, work), 1);
	cr_assert_eq(order[0], 0);
	cr_assert_eq(depth[0], 0);
}

/* Two reads of /proc that disagree (a pid reused) cannot loop the walk. */
Test(child, order_ends_on_a_faked_loop)
{
	struct rt_child_proc procs[] = {
	    {.pid = 10, .ppid = 11, .fork_of = 11, .started = true},
	    {.pid = 11, .ppid = 10, .fork_of = 10, .started = true},
	};
	size_t order[2], work[RT_CHILD_ORDER_WORK(2)];
	unsigned depth[2];
	cr_assert_leq(rt_child_order(procs, 2, order, depth, work), 2);
}

/* A machine's worth of carriers: 2,000 parents with 3 started workers each, one level down, in
 * a time that grows as n log n (a walk per child over every process took seconds here). */
Test(child, order_of_thousands, .timeout = 10)
{
	enum { PARENTS = 2000, PER = 4, N = PARENTS * PER };
	static struct rt_child_proc procs[N];
	static size_t order[N], work[RT_CHILD_ORDER_WORK(N)];
	static unsigned depth[N];
	for (int i = 0; i < N; i++) {
		int parent = 1000 + (i / PER) * PER;
		bool child = i % PER != 0;
		procs[i] = (struct rt_child_proc){.pid = 1000 + i,
		                                  .ppid = child ? parent : 1,
		                                  .fork_of = child ? parent : 0,
		                                  .started = true};
	}
	size_t shown = 0;
	for (int r = 0; r < 50; r++)
		shown = rt_child_order(procs, N, order, depth, work);
	cr_assert_eq(shown, N);
	for (size_t k = 0; k < N; k++) {
		cr_assert_eq(procs[order[k]].pid, 1000 + (int)k, "row %zu", k);
		cr_assert_eq(depth[k], k % PER ? 1u : 0u, "row %zu", k);
	}
}
