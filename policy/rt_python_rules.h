/* rt_python_rules: whether a round runs the Python steps (gc, CUDA cache), the words reported,
 * and the hand-off word between the worker and the pending call that runs the steps. */
#ifndef RT_PYTHON_RULES_H
#define RT_PYTHON_RULES_H

#include <stdbool.h>
#include <stdint.h>

/* What the worker reads before an action round, without the GIL. */
struct rt_python_readings {
	bool enabled;     /* ROUNDTRIM_PYTHON */
	bool found;       /* the C API's entry points are in the process */
	bool initialized; /* Py_IsInitialized() */
	bool finalizing;  /* _Py_IsFinalizing() / Py_IsFinalizing() */
	bool busy;        /* the steps an earlier round asked for are still running */
};

enum rt_python_plan {
	RT_PYTHON_RUN,
	RT_PYTHON_NOT_PYTHON, /* not a CPython process: nothing to report */
	RT_PYTHON_OFF,
	RT_PYTHON_NOT_INITIALIZED,
	RT_PYTHON_FINALIZING,
	RT_PYTHON_BUSY,
};

/* How a request that was made ended, as the worker saw it. */
enum rt_python_end {
	RT_PYTHON_END_DONE,        /* the steps ran; the outcome is valid */
	RT_PYTHON_END_MAIN_BUSY,   /* the main thread did not come to it in time: withdrawn */
	RT_PYTHON_END_UNFINISHED,  /* the steps began but did not end in time */
	RT_PYTHON_END_FINALIZING,  /* the call found the interpreter finalising: nothing ran */
	RT_PYTHON_END_GC_DISABLED, /* the program disabled the collector: not collected */
	RT_PYTHON_END_QUEUE_FULL,  /* Py_AddPendingCall refused the call (its queue is full) */
};

enum rt_python_cuda {
	RT_PYTHON_CUDA_SKIPPED, /* the Python steps did not run */
	RT_PYTHON_CUDA_OFF,     /* ROUNDTRIM_CUDA_EMPTY_CACHE / NVFLARE_CUDA_EMPTY_CACHE not true */
	RT_PYTHON_CUDA_NO_TORCH,
	RT_PYTHON_CUDA_NOT_INITIALIZED,
	RT_PYTHON_CUDA_EMPTIED,
	RT_PYTHON_CUDA_ERROR,
	RT_PYTHON_CUDA_EMPTY, /* a step, not an outcome: call empty_cache now */
};

enum rt_python_plan rt_python_plan(const struct rt_python_readings *r);
/* The word for the "python" report field: what the round did about Python; NULL for
 * RT_PYTHON_NOT_PYTHON (no Python fields are reported). */
const char *rt_python_plan_word(enum rt_python_plan plan);
const char *rt_python_end_word(enum rt_python_end end);

/* The gc step, on the main thread with the GIL: RT_PYTHON_END_DONE when the collection is to
 * run, else why not (the CUDA step runs only when this is DONE or GC_DISABLED). */
enum rt_python_end rt_python_gc_step(bool finalizing, bool gc_enabled);
/* Whether the CUDA step runs after the gc step ended so. */
bool rt_python_cuda_runs(enum rt_python_end gc_step);

/* The CUDA step, with the GIL held, from what is known so far: torch_imported is read only
 * when the option is on, cuda_initialized only when torch is imported. Returns the outcome to
 * report, or RT_PYTHON_CUDA_EMPTY when empty_cache() is to be called (then EMPTIED or ERROR). */
enum rt_python_cuda rt_python_cuda_step(bool option, bool torch_imported, bool cuda_initialized);
const char *rt_python_cuda_word(enum rt_python_cuda cuda);

/* The hand-off word (32 bits, for futex waits): a state, whether a call of this process's
 * generation sits in CPython's pending-call queue, and that generation (bumped in every fork
 * child). Only the worker moves IDLE/DONE -> ARMED and ARMED -> IDLE (withdrawn); only the
 * pending call moves ARMED -> RUNNING -> DONE. Every move is one compare-and-swap of the whole
 * word, so the CAS that wins on an ARMED word decides whether the steps run. */
enum rt_python_state {
	RT_PYTHON_IDLE,
	RT_PYTHON_ARMED,   /* a request waits for the pending call */
	RT_PYTHON_RUNNING, /* the pending call took it and runs the steps */
	RT_PYTHON_DONE,    /* the answer is published */
};

#define RT_PYTHON_WORD_STATE_MASK 3u
#define RT_PYTHON_WORD_QUEUED 4u
#define RT_PYTHON_WORD_GENERATION_SHIFT 3
#define RT_PYTHON_GENERATION_MASK ((1u << (32 - RT_PYTHON_WORD_GENERATION_SHIFT)) - 1u)

uint32_t rt_python_word(uint32_t generation, bool queued, enum rt_python_state state);
enum rt_python_state rt_python_word_state(uint32_t word);
bool rt_python_word_queued(uint32_t word);
uint32_t rt_python_word_generation(uint32_t word);

/* Worker: a new request from IDLE, or from DONE (an answer nobody waits for any more). False
 * when the word is ARMED or RUNNING. *add says whether a call must be added to CPython's queue:
 * false when this generation's call is still there (withdrawn, not run yet), which the request
 * re-arms instead. */
bool rt_python_arm(uint32_t word, uint32_t *next, bool *add);
/* Worker: Py_AddPendingCall refused the call just armed: back to IDLE, nothing queued. */
uint32_t rt_python_add_failed(uint32_t word);
/* Worker, at the deadline: ARMED -> IDLE; the queued call stays and will find nothing. */
bool rt_python_withdraw(uint32_t word, uint32_t *next);
/* Worker, once it copied the answer: DONE -> IDLE. */
bool rt_python_collect_answer(uint32_t word, uint32_t *next);

/* The pending call, with the generation it was added with: what it may do. */
enum rt_python_call {
	RT_PYTHON_CALL_STALE,     /* another generation's call (a fork parent's): touch nothing */
	RT_PYTHON_CALL_WITHDRAWN, /* ours, nothing armed: *next only drops the queued flag */
	RT_PYTHON_CALL_RUN,       /* ours, armed: *next is RUNNING, the steps run */
};
enum rt_python_call rt_python_called(uint32_t word, uint32_t generation, uint32_t *next);
/* The pending call, steps done: RUNNING -> DONE in its own generation only (a fork made during
 * the steps leaves a child whose word has moved on). */
bool rt_python_finish(uint32_t word, uint32_t generation, uint32_t *next);
/* In a fork child: the next generation, IDLE, nothing of it queued. */
uint32_t rt_python_forget(uint32_t word);

#endif
