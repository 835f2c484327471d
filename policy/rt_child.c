#include "rt_child.h"

#include <stdlib.h>

enum rt_child_start
rt_child_starts(uint64_t since_fork_ns, uint64_t start_after_ns)
{
	if (start_after_ns == RT_CHILD_START_NEVER)
		return RT_CHILD_NEVER;
	return since_fork_ns >= start_after_ns ? RT_CHILD_START : RT_CHILD_WAIT;
}

int
rt_child_fork_of(const struct rt_child_fork *f)
{
	if (f->parent <= 0 || f->ppid_now != f->parent || f->session_now != f->session)
		return 0;
	return f->parent;
}

bool
rt_child_python_steps(int fork_of, const struct rt_batch *b)
{
	return fork_of == 0 || b->announced || b->trim_asked;
}

bool
rt_child_is_fork_of(const struct rt_child_proc *c, const struct rt_child_proc *p)
{
	return c->fork_of != 0 && c->fork_of == p->pid && c->ppid == p->pid && c->pid != p->pid &&
	       c->session == p->session;
}

static int
rt_child_cmp_pid(const void *key, const void *elem)
{
	int pid = *(const int *)key, other = ((const struct rt_child_proc *)elem)->pid;
	return (pid > other) - (pid < other);
}

/* Appends procs[i] at depth d, then its children (kids[start[i]..start[i + 1])), depth first.
 * Each process has one parent at most, so each is visited once, and a loop that a pid reused
 * between two reads of /proc could fake has no root and is never entered. */
static void
rt_child_visit(size_t i, unsigned d, const size_t *start, const size_t *kids, size_t *order,
               unsigned *depth, size_t *shown)
{
	order[*shown] = i;
	depth[(*shown)++] = d;
	for (size_t k = start[i]; k < start[i + 1]; k++)
		rt_child_visit(kids[k], d + 1, start, kids, order, depth, shown);
}

size_t
rt_child_order(const struct rt_child_proc *procs, size_t n, size_t *order, unsigned *depth,
               size_t *work)
{
	const size_t root = n, hidden = n + 1;
	size_t *parent = work, *start = work + n, *kids = work + 2 * n + 1;
	for (size_t i = 0; i <= n; i++)
		start[i] = 0;
	for (size_t i = 0; i < n; i++) {
		const struct rt_child_proc *p =
		    bsearch(&procs[i].ppid, procs, n, sizeof(*procs), rt_child_cmp_pid);
		parent[i] = root;
		if (p && !procs[i].started)
			parent[i] = hidden;
		else if (p && rt_child_is_fork_of(&procs[i], p))
			parent[i] = (size_t)(p - procs);
		if (parent[i] < n)
			start[parent[i] + 1]++;
	}
	for (size_t i = 0; i < n; i++)
		start[i + 1] += start[i];
	/* Each parent's children in pid order: fill from the front, then shift the starts back. */
	for (size_t i = 0; i < n; i++)
		if (parent[i] < n)
			kids[start[parent[i]]++] = i;
	for (size_t i = n; i > 0; i--)
		start[i] = start[i - 1];
	start[0] = 0;
	size_t shown = 0;
	for (size_t i = 0; i < n; i++)
		if (parent[i] == root)
			rt_child_visit(i, 0, start, kids, order, depth, &shown);
	return shown;
}
