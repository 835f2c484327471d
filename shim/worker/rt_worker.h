/* rt_worker: the one thread that does all the work: its start, the rounds and requests the
 * program's threads hand it, the status it last published. Its life words (running, tid, wake,
 * stop) are rt_worker_life's. */
#ifndef RT_WORKER_H
#define RT_WORKER_H

#include "rt_allocator.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rt_config;
struct rt_python_outcome;

/* What rt_main hands the worker at its start: the process's configuration (rt_main's, read-only,
 * which outlives the worker) and the facts found at start-up. */
struct rt_worker_setup {
	const struct rt_config *cfg;
	const char *program;
	enum rt_allocator_kind allocator;
	enum rt_action action;
	/* In a fork child that has not exec'd, its parent's pid and its session at the fork; 0 in a
	 * process of its own (policy/rt_child). */
	int fork_parent;
	int fork_session;
};

/* Starts the worker with a copy of *setup; false (one line said why) when it cannot. */
bool rt_worker_start(const struct rt_worker_setup *setup);
/* In the worker, between its steps and inside its waits: serves a pending request of a program
 * thread (rt_creds); true when it must leave. */
bool rt_worker_serve(void);
/* A program thread is exiting (its tally's destructor, through rt_hooks): whether it is the
 * program's last, whose exit must end the process in the program's own descriptor table, as
 * glibc would end it. */
bool rt_worker_thread_exits(void);
/* Whether the worker alone shares the calling thread's filesystem context: its descriptor table
 * is the program's (unshare refused), so its filesystem context is too, and the caller is the
 * program's only thread. */
bool rt_worker_alone_shares_fs(void);
/* In a fork child, inside fork: forget the parent's worker, its pending requests and status. */
void rt_worker_forget_parent(void);
/* An API round, counted in the caller's thread into the process's one sequence of rounds:
 * returns its number when it acts, 0 when it only counts. */
uint64_t rt_worker_api_count(void);
/* In the caller of an acting API round, before rt_worker_api_post: runs the allocator action here,
 * as the worker would (after waiting for one of the worker's that is under way), so that the
 * round has released when the call returns; the worker writes its record. False when it did not
 * run here (the worker not running, an action no other thread can run): the worker acts. */
bool rt_worker_api_release(void);
/* Hands the worker an API round (or, with trim, an action whatever the count): acts says whether
 * the round acts; ran: the Python steps the caller ran for it, NULL when the worker is to hand
 * them to the main thread. Asynchronous; false when the worker is not running. */
bool rt_worker_api_post(bool trim, bool acts, const struct rt_python_outcome *ran);
/* The status JSON the worker last published, for roundtrim_status_json: copies at most size - 1
 * bytes and a NUL into buf (nothing when size is 0); returns its whole length. */
int rt_worker_status_json(char *buf, size_t size);

#endif
