/* rt_python_rules: whether a round runs the Python steps (gc, CUDA cache), the words reported,
 * and the hand-off word between the worker and the pending call that runs the steps. */
#ifndef RT_PYTHON_RULES_H
#define RT_PYTHON_RULES_H

#include <stdbool.h>
#include <stdint.h>

/* What is read before the steps are asked for (by the worker, without the GIL) or run (by the
 * API's caller, with it). */
struct rt_python_readings {
	bool enabled;     /* ROUNDTRIM_PYTHON */
	bool found;       /* the C API's entry points are in the process */
	bool initialized; /* Py_IsInitialized() */
	bool finalizing;  /* _Py_IsFinalizing() / Py_IsFinalizing() */
};

enum rt_python_plan {
	RT_PYTHON_RUN,
	RT_PYTHON_NOT_PYTHON, /* not a CPython process: nothing to report */
	RT_PYTHON_OFF,
	RT_PYTHON_NOT_INITIALIZED,
	RT_PYTHON_FINALIZING,
};

/* What a round reports about the steps. */
enum rt_python_end {
	RT_PYTHON_END_DONE,        /* the steps ran; the outcome is valid */
	RT_PYTHON_END_PENDING,     /* handed to the main thread, which runs them when it next runs
	                            * bytecode; a record of their own reports them */
	RT_PYTHON_END_BUSY,        /* an earlier round's steps were running: they serve this one */
	RT_PYTHON_END_FINALIZING,  /* the call found the interpreter finalising: nothing ran */
	RT_PYTHON_END_GC_DISABLED, /* the collector is disabled and gc was never imported */
	RT_PYTHON_END_QUEUE_FULL,  /* Py_AddPendingCall refused the call (its queue is full) */
};

enum rt_python_cuda {
	RT_PYTHON_CUDA_SKIPPED, /* the Python steps did not run */
	RT_PYTHON_CUDA_OFF,     /* ROUNDTRIM_CUDA_EMPTY_CACHE / NVFLARE_CUDA_EMPTY_CACHE not true */
	RT_PYTHON_CUDA_NO_TORCH,
	RT_PYTHON_CUDA_NOT_INITIALIZED,
	RT_PYTHON_CUDA_EMPTIED,
	RT_PYTHON_CUDA_ERROR,
	RT_PYTHON_CUDA_MAIN_ONLY, /* the library's thread ran the steps: the CUDA step is the main
	                           * thread's, at the next round it takes */
	RT_PYTHON_CUDA_EMPTY,     /* a step, not an outcome: call empty_cache now */
	RT_PYTHON_CUDA_CAPTURING, /* the thread captures a CUDA graph: the next round empties */
};

enum rt_python_plan rt_python_plan(const struct rt_python_readings *r);
/* The word for the "python" report field of a round whose plan is not RT_PYTHON_RUN; NULL for
 * RT_PYTHON_NOT_PYTHON (no Python fields are reported). */
const char *rt_python_plan_word(enum rt_python_plan plan);
const char *rt_python_end_word(enum rt_python_end end);

/* How the collection runs, on a thread that holds the GIL: as the program's own gc.collect()
 * would, a full collection whether or not the collector is enabled, leaving it as it was. */
enum rt_python_gc {
	RT_PYTHON_GC_MODULE,     /* call collect() of the gc module the program imported */
	RT_PYTHON_GC_C,          /* PyGC_Collect(): gc never imported, the collector enabled */
	RT_PYTHON_GC_DISABLED,   /* gc never imported, yet the collector disabled (C API) */
	RT_PYTHON_GC_FINALIZING, /* leave the dying interpreter alone */
};
enum rt_python_gc rt_python_gc_step(bool finalizing, bool gc_imported, bool gc_enabled);
/* What a round reports once the gc step ended so. */
enum rt_python_end rt_python_gc_end(enum rt_python_gc step);
/* Whether the CUDA step runs after the gc step. */
bool rt_python_cuda_runs(enum rt_python_gc step);

/* The CUDA step, with the GIL held, from what is known so far: torch_imported is read only
 * when the option is on, cuda_initialized only when torch is imported, capturing (the calling
 * thread's stream captures a CUDA graph) only when CUDA is initialised. Returns the outcome to
 * report, or RT_PYTHON_CUDA_EMPTY when empty_cache() is to be called (then EMPTIED or ERROR). */
enum rt_python_cuda rt_python_cuda_step(bool option, bool torch_imported, bool cuda_initialized,
                                        bool capturing);
const char *rt_python_cuda_word(enum rt_python_cuda cuda);

/* Whether the library's thread may run the CUDA step itself rather than owe it to the main
 * thread, from what it read without running any of the program's code: torch.cuda's
 * `_initialized` flag, and the CUDA driver's count of visible devices (-1 where it could not
 * say) and whether device 0's primary context is active. */
bool rt_python_cuda_off_main(bool initialized, int devices, bool context_active);

/* Whether the steps freed something that a release after them should return: the collection
 * found unreachable objects, or the CUDA cache was emptied (its host-side bookkeeping). */
bool rt_python_freed(int64_t gc_collected, enum rt_python_cuda cuda);

/* The hand-off word (32 bits): a state, whether a call of ours sits in CPython's queue, and the
 * process's generation (bumped in every fork child). Only the worker moves IDLE -> ARMED and
 * DONE -> IDLE; whichever of the pending call and the library's thread claims an ARMED word
 * first moves it ARMED -> RUNNING -> DONE, and the other finds it taken. At most one call of
 * ours is ever in CPython's queue (QUEUED): a request armed while it is there is served by it
 * or by the thread, and never queues another; the call clears QUEUED when it runs, whatever it
 * finds. Rounds that come while a request is armed or running join it. */
enum rt_python_state {
	RT_PYTHON_IDLE,
	RT_PYTHON_ARMED,   /* the steps are asked for: the queued call or the thread runs them */
	RT_PYTHON_RUNNING, /* one of them claimed the request and runs the steps */
	RT_PYTHON_DONE,    /* the answer is published */
};

#define RT_PYTHON_WORD_STATE_MASK 3u
#define RT_PYTHON_WORD_QUEUED 4u
/* The library's thread took a request whose CUDA step is the main thread's (it would create a
 * context on the thread's current device): the queued call, finding the steps taken, still
 * runs that step. */
#define RT_PYTHON_WORD_CUDA_OWED 8u
#define RT_PYTHON_WORD_GENERATION_SHIFT 4
#define RT_PYTHON_GENERATION_MASK ((1u << (32 - RT_PYTHON_WORD_GENERATION_SHIFT)) - 1u)

uint32_t rt_python_word(uint32_t generation, enum rt_python_state state);
enum rt_python_state rt_python_word_state(uint32_t word);
uint32_t rt_python_word_generation(uint32_t word);
bool rt_python_word_queued(uint32_t word);

/* Worker, at an action round: what asking for the steps means for the word. */
enum rt_python_ask {
	RT_PYTHON_ASK_ADD,  /* IDLE -> ARMED|QUEUED (*next): add a call to CPython's queue */
	RT_PYTHON_ASK_ARM,  /* IDLE -> ARMED (*next): our call is still queued and will serve it */
	RT_PYTHON_ASK_JOIN, /* already armed: whoever claims it serves this round too */
	RT_PYTHON_ASK_BUSY, /* the steps run now, or just ended: they serve this round */
};
enum rt_python_ask rt_python_ask(uint32_t word, uint32_t *next);
/* Worker: Py_AddPendingCall refused the call just armed: back to IDLE, nothing queued. */
uint32_t rt_python_add_failed(uint32_t word);
/* Worker, once it copied the answer: DONE -> IDLE. */
bool rt_python_collect_answer(uint32_t word, uint32_t *next);

/* The pending call, with the generation it was added with: what it may do. */
enum rt_python_call {
	RT_PYTHON_CALL_STALE, /* another generation's call (a fork parent's): touch nothing */
	RT_PYTHON_CALL_RUN,   /* ours, armed: *next is RUNNING, no longer queued; the steps run */
	RT_PYTHON_CALL_TAKEN, /* ours, but nothing armed (the thread took it): *next, not queued */
	RT_PYTHON_CALL_CUDA,  /* taken, with the CUDA step owed: *next, neither queued nor owing */
};
enum rt_python_call rt_python_called(uint32_t word, uint32_t generation, uint32_t *next);
/* The library's thread, with the GIL: claims an armed request of its generation (ARMED ->
 * RUNNING in *next); false when there is none (the main thread took it first). owe: the CUDA
 * step is configured and this thread leaves it; then the queued call owes it (when a call is
 * queued: one always is, unless Py_AddPendingCall refused it). Otherwise nothing is owed any
 * more, an earlier request's debt included: this thread's steps pay it, or none is due. */
bool rt_python_claim(uint32_t word, uint32_t generation, bool owe, uint32_t *next);
/* The one that ran the steps: RUNNING -> DONE in its own generation only (a fork made during
 * the steps leaves a child whose word has moved on). */
bool rt_python_finish(uint32_t word, uint32_t generation, uint32_t *next);
/* In a fork child: the next generation, IDLE, nothing queued. */
uint32_t rt_python_forget(uint32_t word);

/* How long the main thread has to claim an armed request before the library's thread takes it
 * over. A main thread that runs bytecode runs a pending call at its next eval-loop check: within
 * a switch interval (5 ms) when other threads hold the GIL (roundtrim(7), PYTHON, has the
 * measurements); one inside a C call, not before the call returns. */
#define RT_PYTHON_GRACE_US 50000u

/* Worker: whether the library's thread is to take an armed request over now: the steps may run
 * off the main thread (ROUNDTRIM_PYTHON=on), the main thread has not claimed them within the
 * grace (waited_us since they were armed), no thread of ours is already out, and the thread has
 * not left this request to the main thread (declined: the program had not imported threading
 * when it looked; the worker clears it at the next round, which the request serves too, and the
 * thread looks again). */
bool rt_python_take_over(bool main_only, enum rt_python_state state, uint64_t waited_us,
                         uint64_t grace_us, bool thread_out, bool declined);

/* Program thread: whether, by the thread state CPython shows current now (`now`), the caller
 * provably does not hold the GIL: none is current, or the library's thread's is (`ours`,
 * published while it holds the GIL: CPython 3.11 shows the holder's, whichever thread it is),
 * or another than at the caller's first look (`first`): a caller that held the GIL would keep
 * it, and its state current, for as long as it waits. Or, where the current state is the
 * holder's (`shared`: before 3.12) and the process has one interpreter, a state other than the
 * caller's own (`mine`, its thread's first state; NULL where it has none): in one interpreter
 * a thread holds the GIL with its own first state, unless it made itself a second one and
 * swapped it in (roundtrim(7) names the case), so that one is another thread's, which holds
 * the GIL. From 3.12 the current state is the calling thread's own: none is the proof. */
bool rt_python_gil_proven_free(const void *now, const void *first, const void *ours,
                               const void *mine, bool shared);

/* Where the C API is a shared libpython's, the library's thread starts only in an interpreter
 * that is up: a program that exports the C API without ever initializing Python (gdb, vim
 * linked to libpython) never gets it (the interpreter's own executable starts it with the
 * worker). Until then
 * the worker looks this often, for this long after its start (CPython imports site and the
 * program's modules after it counts itself initialized: tens of milliseconds in which its main
 * thread runs bytecode, and so runs the call that starts the thread); later, at each look. */
#define RT_PYTHON_START_LOOK_US 5000u
#define RT_PYTHON_START_WATCH_US 10000000u

/* What the worker reads, at each look, about the library's thread. */
struct rt_python_start_readings {
	bool wanted;      /* the steps may leave the main thread, and no start has failed */
	bool runs;        /* a thread of the current generation runs or is on its way */
	bool queued;      /* the call that starts it waits in CPython's queue */
	bool held;        /* a program thread keeps it away (its setns(CLONE_NEWNS)) */
	bool initialized; /* Py_IsInitialized() */
	bool finalizing;
	uint64_t watched_us; /* since the worker started */
};

enum rt_python_start {
	RT_PYTHON_START_NONE,  /* nothing to do */
	RT_PYTHON_START_QUEUE, /* queue the call that starts it on the interpreter's main thread */
	RT_PYTHON_START_WATCH, /* the interpreter is not up yet: look again in
	                        * RT_PYTHON_START_LOOK_US */
};

/* Worker, at each look: whether the library's thread is to be started now. It is started by
 * the interpreter's main thread, in a pending call: the only thread of the program's that the
 * library can have run its code once the interpreter is up, and whose descriptor table and
 * filesystem context the steps must have (a finalizer may write to stdout, open a relative
 * path). */
enum rt_python_start rt_python_start_due(const struct rt_python_start_readings *r);

/* What the worker has seen of the interpreter, look after look. */
struct rt_python_watch {
	bool seen_up;   /* up since it was last seen down */
	bool seen_down; /* down after having been up, and not up again since */
};

enum rt_python_seen {
	RT_PYTHON_SEEN_UP,   /* nothing to do */
	RT_PYTHON_SEEN_DOWN, /* nothing to do either: the thread stays (below) */
	/* Up after down: a new interpreter. A thread that CPython ended in the last one goes now,
	 * while the program runs, and the new main thread starts one; an idle one stays and serves
	 * the new interpreter, whose main thread may already sit in a C call. */
	RT_PYTHON_SEEN_NEW,
};

/* One look (initialized: Py_IsInitialized()). Never does the thread go as Python goes down:
 * that is where the process exits, and a thread's end runs its thread-local destructors beside
 * exit's static ones. Nor before the first interpreter is up: the interpreter's own executable
 * starts the thread before it. */
enum rt_python_seen rt_python_watch(struct rt_python_watch *w, bool initialized);

#endif
