/* rt_child: what a fork child that has not exec'd gets of the library, and how status shows it.
 * Owns when such a child's library starts, whether it finds rounds by itself, which of its
 * rounds run the Python steps, and which processes a status shows as a parent's children. */
#ifndef RT_CHILD_H
#define RT_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_ledger.h"

enum rt_child_start {
	RT_CHILD_WAIT,  /* not yet: look again later */
	RT_CHILD_START, /* now */
	RT_CHILD_NEVER, /* never by itself (only when the program calls the API): stop looking */
};
/* Whether a fork child's library starts: the child still allocates since_fork_ns after the fork,
 * and ROUNDTRIM_CHILD_START is start_after_ns (0: never). */
enum rt_child_start rt_child_starts(uint64_t since_fork_ns, uint64_t start_after_ns);
/* Whether the process finds rounds by itself (ROUNDTRIM_AUTO is auto_rounds): never in a fork
 * child, whose rhythm is its parent's work handed out, not rounds of its own. */
bool rt_child_detects(bool forked, bool auto_rounds);
/* Whether an acting batch runs the Python steps: in a fork child only when someone asked for it
 * (a round or trim through the FIFO, the signal or the API), never for its own triggers. A
 * collection writes the header of every object it visits, and so copies every page of Python
 * objects the child shares with its parent. */
bool rt_child_python_steps(bool forked, const struct rt_batch *b);

/* A carrier as the command sees it in /proc. */
struct rt_child_proc {
	int pid;
	int ppid;
	uint64_t library_base; /* where libroundtrim.so is mapped (0: not known) */
	bool started;          /* its library runs (a FIFO and status file were found) */
};

/* Whether c is a fork child of p that has not exec'd: p is its parent and the library sits at
 * the same address in both (an exec maps it anew, elsewhere unless address space randomisation
 * is off, when an exec'd child of a carrier counts as a fork child). */
bool rt_child_is_fork_of(const struct rt_child_proc *c, const struct rt_child_proc *p);

/* The order in which a status shows procs[0..n): each process, then the fork children of it
 * that run the library, depth first; a fork child whose library has not started (it holds
 * nothing of the library's and counts nothing) is left out. order[k] is an index into procs and
 * depth[k] how many fork parents above it are shown; returns how many are shown. procs must be
 * sorted by pid; order and depth hold n. */
size_t rt_child_order(const struct rt_child_proc *procs, size_t n, size_t *order, unsigned *depth);

#endif
