/* rt_child: what a fork child that has not exec'd gets of the library, and how status shows it.
 * Owns when such a child's library starts, when it counts as a process of its own, which of its
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
/* ROUNDTRIM_CHILD_START's value for never (0 is at once). */
#define RT_CHILD_START_NEVER UINT64_MAX
/* Whether a fork child's library starts: the child still allocates since_fork_ns after the fork,
 * and ROUNDTRIM_CHILD_START is start_after_ns (0: at once; RT_CHILD_START_NEVER: never). */
enum rt_child_start rt_child_starts(uint64_t since_fork_ns, uint64_t start_after_ns);

/* What a process knows of its fork: pids 0 in a process that is no fork child. */
struct rt_child_fork {
	int parent;      /* its parent's pid at the fork */
	int session;     /* its session at the fork (its parent's) */
	int ppid_now;    /* getppid() now */
	int session_now; /* getsid(0) now */
};
/* The parent's pid while the process is still a fork child that shares its parent's heap, else 0:
 * a child whose parent has gone (it was re-parented) or that left the session (setsid: a daemon,
 * double-forked) is a process of its own, with everything a process gets. */
int rt_child_fork_of(const struct rt_child_fork *f);
/* Whether an acting batch runs the Python steps: in a fork child (fork_of not 0) only when
 * someone asked for it (a round or trim through the FIFO, the signal or the API), never for its
 * own rounds (found by the detector) or triggers, which take the allocator's action alone: a
 * collection writes the header of every object it visits, and so copies every page of Python
 * objects the child shares with its parent, while the allocator's release returns only pages
 * the child freed, which it has already copied. */
bool rt_child_python_steps(int fork_of, const struct rt_batch *b);

/* A carrier as the command sees it in /proc and in its status record. */
struct rt_child_proc {
	int pid;
	int ppid;
	int session;  /* its session now */
	int fork_of;  /* its status record's "fork_of" (0: none, or no record) */
	bool started; /* its library runs (a status record, or the library's thread, was found) */
};

/* Whether c is a fork child of p that has not exec'd: its record names p as the process it is a
 * fork child of, p is still its parent, and the two share a session (a record is rewritten only
 * after a batch: one written before the child called setsid still names its parent). */
bool rt_child_is_fork_of(const struct rt_child_proc *c, const struct rt_child_proc *p);

/* The order in which a status shows procs[0..n): each process, then the fork children of it
 * that run the library, depth first; a child of a listed process whose library has not started
 * (a fork child still waiting: it holds nothing of the library's and counts nothing) is left
 * out. order[k] is an index into procs and depth[k] how many fork parents above it are shown;
 * returns how many are shown, in O(n log n). procs must be sorted by pid; order and depth hold
 * n, work RT_CHILD_ORDER_WORK(n). */
#define RT_CHILD_ORDER_WORK(n) (3 * (n) + 1)
size_t rt_child_order(const struct rt_child_proc *procs, size_t n, size_t *order, unsigned *depth,
                      size_t *work);

#endif
