/* rt_python: the Python steps of an action round (gc, CUDA cache) in a CPython host.
 * Owns the lookup of the C API, the pending call that runs the steps on the interpreter's main
 * thread, the thread of the library's that runs them while the main thread sits in a C call, the
 * hand-off between the worker and those two, and the steps run in an API caller. */
#ifndef RT_PYTHON_H
#define RT_PYTHON_H

#include "rt_python_rules.h"
#include "rt_report.h"

#include <stdint.h>

struct rt_config;

/* What the steps did, or why they did not run. */
struct rt_python_outcome {
	enum rt_python_plan plan; /* RT_PYTHON_RUN: end says how they ended */
	enum rt_python_end end;
	int64_t gc_collected; /* unreachable objects the collection found; -1: it did not run */
	enum rt_python_cuda cuda;
};

/* Worker thread only, at an action round: when the host is a live CPython interpreter, hands
 * the steps to its main thread (Py_AddPendingCall) and returns at once: the allocator's action
 * never waits for them. `round` is the round they serve; a later round that comes before the
 * main thread took them joins the same request. Fills out ("pending", or why not; plan
 * RT_PYTHON_NOT_PYTHON when the host is not CPython). Never runs Python code or takes the GIL.
 * cfg: whether the steps are on (python), and which (cuda_empty_cache). */
void rt_python_hand_off(const struct rt_config *cfg, uint64_t round, struct rt_python_outcome *out);
/* At the worker's start, in the program thread that starts it: whether the library's thread is
 * wanted, where the process exports the C API and ROUNDTRIM_PYTHON lets the steps leave the main
 * thread. Where the executable is the interpreter (the C API is its own), starts it here; where
 * the C API is a shared libpython's, it starts later, once the interpreter is up
 * (rt_python_tend), from the interpreter's main thread: never in a program that does not
 * initialize Python (gdb, vim linked to libpython). */
void rt_python_thread_want(const struct rt_config *cfg);
/* How many threads of the library's Python thread run in this process: tasks of the library's. */
unsigned rt_python_thread_held(void);
/* The tasks the library's Python thread will take: 1 where the process is CPython and
 * ROUNDTRIM_PYTHON lets the steps leave the main thread, else 0 (for the task limits). */
unsigned rt_python_thread_needed(const struct rt_config *cfg);
/* Whether the calling thread is the library's Python thread. */
bool rt_python_thread_is_self(void);

/* On the library's Python thread, in place of CPython's pthread_exit (see rt_tasks.c): the
 * bookkeeping of its end, but for the count of the library's tasks, which it stays while it
 * waits, every signal blocked, to be sent away (a program call that needs it gone, or a new
 * interpreter up); then it ends through its start routine's return, without unwinding the
 * frames above. Never returns. */
_Noreturn void rt_python_thread_park(void);
/* The library stands down: the thread leaves at once when idle, else after its request (which
 * it no longer runs if it has not the GIL yet), and no other starts. Never waits for it. */
void rt_python_thread_stop(void);
/* After rt_python_thread_stop, outside every lock of the library's: waits until the thread has
 * ended and the kernel has released its task. A caller that provably does not hold the GIL waits
 * for the end of the steps the thread is out on, 2 s at most (a finalizer may wait on a lock of
 * the caller's); one that may hold it waits 5 ms at most, and not at all for a thread out on its
 * steps (it needs the GIL to end: it leaves once it has it back, running nothing more). False
 * when it has not ended: so, the caller is that thread, or the bound passed. */
bool rt_python_thread_await(void);
/* In a program thread whose setns(CLONE_NEWNS) failed with EINVAL: the kernel wants its
 * filesystem context unshared, and the library's thread shares it. Sends the thread away and
 * waits for its end (rt_python_thread_await); true when it has ended: the caller makes its call
 * again, then calls rt_python_thread_room_made, after which a new thread starts from the main
 * thread, in the context the call left. False (nothing changed, errno kept) when no thread ran
 * or it did not end. */
bool rt_python_thread_make_room(void);
void rt_python_thread_room_made(void);
/* In a program thread whose unshare gave it a filesystem context of its own: when it is the
 * thread that started the library's (the main thread), that one, left with the old context, is
 * sent away and a new one starts in the new context. */
void rt_python_thread_follow(void);
/* Worker thread only, at each look: queues the call that starts the library's thread once the
 * interpreter is up (rt_python_thread_want), and when the main thread has not claimed an armed
 * request within the grace, sends that thread to take the GIL and run the steps (unless
 * ROUNDTRIM_PYTHON=main). Returns how long the worker may wait before it looks again
 * (UINT64_MAX: no need). */
uint64_t rt_python_tend(void);
/* Worker thread only: true once for each hand-off whose steps have run since, with their
 * outcome and the last round they served. */
bool rt_python_answered(struct rt_python_outcome *out, uint64_t *round);
/* Worker: the CUDA step that the main thread's call ran alone, after the library's thread took
 * the request's other steps; its outcome and the round it serves. */
bool rt_python_cuda_answered(struct rt_python_outcome *out, uint64_t *round);
/* In a thread that holds the GIL (the Python module's call, through ctypes.PyDLL): runs the
 * steps here, as the program's own gc.collect() and torch.cuda.empty_cache() would run, or says
 * why not (off, finalising). False when they must go to the main thread instead: the calling
 * thread does not hold the GIL. */
bool rt_python_run_here(const struct rt_config *cfg, struct rt_python_outcome *out);
/* In a thread that holds the GIL, after rt_python_run_here: lets the GIL go around the allocator
 * action that follows, as a ctypes.CDLL call of malloc_trim(0) lets it go, so that the program's
 * other threads run meanwhile; hold no lock of the library's across rt_python_take_back (taking
 * the GIL back while the interpreter finalizes ends the thread). NULL: kept (not CPython, no such
 * entry points, finalizing). */
void *rt_python_let_go(void);
/* Takes back the GIL that rt_python_let_go let go (nothing for NULL). */
void rt_python_take_back(void *state);
/* Whether the steps freed something that a release after them should return. */
bool rt_python_outcome_freed(const struct rt_python_outcome *out);
/* Fills a record's Python fields (none when the host is not CPython). */
void rt_python_report(const struct rt_python_outcome *out, struct rt_round_record *rec);
/* An outcome as one word and back, for the API's mailbox to the worker (0 is never a word). */
uint64_t rt_python_outcome_pack(const struct rt_python_outcome *out);
void rt_python_outcome_unpack(uint64_t packed, struct rt_python_outcome *out);
/* In a fork child, before anything else runs: a request of the parent's, still in the child's
 * copy of CPython's pending-call queue, must find nothing to do. */
void rt_python_forget_parent(void);

#endif
