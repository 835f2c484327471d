/* rt_shim: what the shim's modules share: the configuration read once at load, the allocator
 * found then, and the calls between modules. */
#ifndef RT_SHIM_H
#define RT_SHIM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rt_allocator.h"
#include "rt_config.h"
#include "rt_file_rules.h"
#include "rt_version.h"

#define RT_EXPORT __attribute__((visibility("default")))

struct rt_shim {
	struct rt_config cfg;
	/* The program matched, nothing disabled it, and the library has not stood down: it works
	 * here. Atomic: a program thread that stands the library down clears it. */
	atomic_bool active;
	bool forked; /* this process is a fork child of one where the library was active */
	/* Whose descriptor table holds the library's files: set once at start-up, before the
	 * worker uses any (rt_worker_start). */
	enum rt_file_table descriptors;
	enum rt_allocator_kind allocator;
	enum rt_action action;
	char program[64];
};

extern struct rt_shim rt_shim;

/* rt_out: one line on stderr, prefixed "roundtrim: ", written with write(2) in one call. */
void rt_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void rt_out_write_all(int fd, const char *buf, size_t len);
/* A line for the program's stderr, from any thread (the worker's included). */
void rt_out_stderr(const char *buf, size_t len);
/* In the worker, once it has its own descriptor table: where rt_out_stderr finds stderr. */
void rt_out_stderr_via(int pidfd);

/* rt_worker: the one thread that does all the work. */
bool rt_worker_start(void);
bool rt_worker_running(void);
/* Whether the calling thread is the worker. */
bool rt_worker_is_self(void);
/* The worker's kernel thread id, 0 while none runs in this process. */
pid_t rt_worker_tid(void);
/* Tells the worker to leave and waits, bounded, until it has ended; true once it has (or when
 * none ran). Never from the worker. */
bool rt_worker_stop(void);
/* In the worker, between its steps and inside its waits: serves a pending request of a program
 * thread (rt_creds); true when it must leave. */
bool rt_worker_serve(void);
/* A program thread is exiting (its tally's destructor): whether it is the program's last, whose
 * exit must end the process in the program's own descriptor table, as glibc would end it. */
bool rt_worker_thread_exits(void);
/* In a fork child, inside fork: forget the parent's worker and its pending requests. */
void rt_worker_forget_parent(void);
/* An API round, counted in the caller's thread into the process's one sequence of rounds:
 * returns its number when it acts, 0 when it only counts. */
uint64_t rt_worker_api_count(void);
/* Hands the worker an API round (or, with trim, an action whatever the count): acts says whether
 * the round acts; ran: the Python steps the caller ran for it, NULL when the worker is to hand
 * them to the main thread. Asynchronous; false when the worker is not running. */
struct rt_python_outcome;
bool rt_worker_api_post(bool trim, bool acts, const struct rt_python_outcome *ran);
/* Wakes the worker from any thread or signal handler (async-signal-safe). */
void rt_worker_wake(void);

/* rt_malloc: the budget of allocated bytes after which the calling thread next enters the cold
 * path (and rt_main_allocation_event); RT_PERIOD_NONE when nothing needs it. */
#define RT_PERIOD_NONE (UINT64_C(1) << 62)
void rt_malloc_set_budget(uint64_t period);

/* rt_main: true in a fork child until its library starts, the only time the allocation event
 * has work. The cold path reads it first, so the event never runs before the process's
 * runtimes are up (ld.so and a sanitizer's start-up allocate; under make check-asan and
 * check-tsan, rt_main.c is instrumented and would touch state that does not exist yet). */
extern atomic_bool rt_main_child_waiting;
/* rt_main: runs on a thread's first allocation and whenever its budget runs out while
 * rt_main_child_waiting; returns the next budget. Never on the hot path. */
uint64_t rt_main_allocation_event(void);
/* rt_main: a fork child's library starts once the child is known to keep running without
 * exec (roundtrim(7), FORK AND EXEC); called by the API, which is such a sign itself. */
void rt_main_start_child_now(void);
/* rt_main: keeps a copy of the status JSON the worker just published, for
 * roundtrim_status_json. From the worker only. */
void rt_main_keep_status(const char *json, size_t len);

#endif
