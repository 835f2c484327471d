#include "rt_child.h"

enum rt_child_start
rt_child_starts(uint64_t since_fork_ns, uint64_t start_after_ns)
{
	if (start_after_ns == 0)
		return RT_CHILD_NEVER;
	return since_fork_ns >= start_after_ns ? RT_CHILD_START : RT_CHILD_WAIT;
}

bool
rt_child_detects(bool forked, bool auto_rounds)
{
	return auto_rounds && !forked;
}

bool
rt_child_python_steps(bool forked, const struct rt_batch *b)
{
	return !forked || b->announced || b->trim_asked;
}

bool
rt_child_is_fork_of(const struct rt_child_proc *c, const struct rt_child_proc *p)
{
	return c->ppid == p->pid && c->pid != p->pid && c->library_base != 0 &&
	       c->library_base == p->library_base;
}

/* The process that procs[c] is a fork child of, as an index into procs; n when none is listed. */
static size_t
rt_child_parent_of(const struct rt_child_proc *procs, size_t n, size_t c)
{
	for (size_t i = 0; i < n; i++)
		if (rt_child_is_fork_of(&procs[c], &procs[i]))
			return i;
	return n;
}

/* Appends procs[i] at depth d, then its started fork children, depth first. Bounded by n, which
 * also ends a loop that a pid reused between two reads of /proc could fake. */
static void
rt_child_visit(const struct rt_child_proc *procs, size_t n, size_t i, unsigned d, size_t *order,
               unsigned *depth, size_t *shown)
{
	if (*shown >= n || d >= n)
		return;
	order[*shown] = i;
	depth[(*shown)++] = d;
	for (size_t c = 0; c < n; c++)
		if (procs[c].started && rt_child_parent_of(procs, n, c) == i)
			rt_child_visit(procs, n, c, d + 1, order, depth, shown);
}

size_t
rt_child_order(const struct rt_child_proc *procs, size_t n, size_t *order, unsigned *depth)
{
	size_t shown = 0;
	for (size_t i = 0; i < n; i++)
		if (rt_child_parent_of(procs, n, i) == n)
			rt_child_visit(procs, n, i, 0, order, depth, &shown);
	return shown;
}
