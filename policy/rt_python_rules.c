#include "rt_python_rules.h"

#include <stddef.h>

enum rt_python_plan
rt_python_plan(const struct rt_python_readings *r)
{
	if (!r->found)
		return RT_PYTHON_NOT_PYTHON;
	if (!r->enabled)
		return RT_PYTHON_OFF;
	/* Finalising before initialised: Py_FinalizeEx clears "initialized" as it sets
	 * "finalizing", and the report should name the cause. */
	if (r->finalizing)
		return RT_PYTHON_FINALIZING;
	if (!r->initialized)
		return RT_PYTHON_NOT_INITIALIZED;
	return RT_PYTHON_RUN;
}

const char *
rt_python_plan_word(enum rt_python_plan plan)
{
	switch (plan) {
	case RT_PYTHON_RUN:
		return rt_python_end_word(RT_PYTHON_END_PENDING);
	case RT_PYTHON_NOT_PYTHON:
		return NULL;
	case RT_PYTHON_OFF:
		return "off";
	case RT_PYTHON_NOT_INITIALIZED:
		return "not-initialized";
	case RT_PYTHON_FINALIZING:
		return rt_python_end_word(RT_PYTHON_END_FINALIZING);
	}
	return NULL;
}

const char *
rt_python_end_word(enum rt_python_end end)
{
	switch (end) {
	case RT_PYTHON_END_DONE:
		return "collected";
	case RT_PYTHON_END_PENDING:
		return "pending";
	case RT_PYTHON_END_BUSY:
		return "skipped-busy";
	case RT_PYTHON_END_FINALIZING:
		return "finalizing";
	case RT_PYTHON_END_GC_DISABLED:
		return "skipped-gc-disabled";
	case RT_PYTHON_END_QUEUE_FULL:
		return "skipped-queue-full";
	}
	return "error";
}

enum rt_python_gc
rt_python_gc_step(bool finalizing, bool gc_imported, bool gc_enabled)
{
	/* A call that CPython runs once finalisation has begun (its own finalizers run bytecode)
	 * must leave the dying interpreter alone. */
	if (finalizing)
		return RT_PYTHON_GC_FINALIZING;
	/* NVFlare's cleanup calls gc.collect(), which collects whether or not the collector is
	 * enabled and leaves it as it was; PyGC_Collect() does nothing while it is disabled. Only
	 * the gc module disables it from Python, so a program that did has imported gc: its own
	 * collect() is the call, and the library imports nothing. */
	if (gc_imported)
		return RT_PYTHON_GC_MODULE;
	/* Disabled from C (PyGC_Disable) by a program that never imported gc: its own
	 * gc.collect() would need an import, which the library never makes. */
	if (!gc_enabled)
		return RT_PYTHON_GC_DISABLED;
	return RT_PYTHON_GC_C;
}

enum rt_python_end
rt_python_gc_end(enum rt_python_gc step)
{
	switch (step) {
	case RT_PYTHON_GC_MODULE:
	case RT_PYTHON_GC_C:
		return RT_PYTHON_END_DONE;
	case RT_PYTHON_GC_DISABLED:
		return RT_PYTHON_END_GC_DISABLED;
	case RT_PYTHON_GC_FINALIZING:
		break;
	}
	return RT_PYTHON_END_FINALIZING;
}

bool
rt_python_cuda_runs(enum rt_python_gc step)
{
	/* The CUDA cache is not the collector's business: only finalisation stops it. */
	return step != RT_PYTHON_GC_FINALIZING;
}

enum rt_python_cuda
rt_python_cuda_step(bool option, bool torch_imported, bool cuda_initialized, bool capturing)
{
	if (!option)
		return RT_PYTHON_CUDA_OFF;
	/* Never import torch: a program that did not would pay seconds and hundreds of MiB. */
	if (!torch_imported)
		return RT_PYTHON_CUDA_NO_TORCH;
	/* Nothing is cached before CUDA is initialised (empty_cache() would be a no-op), and a
	 * fork child must not touch the parent's CUDA state. */
	if (!cuda_initialized)
		return RT_PYTHON_CUDA_NOT_INITIALIZED;
	/* Freeing device memory from a thread that captures a CUDA graph (global mode, PyTorch's
	 * default) invalidates the capture, and the program's capture_end then raises. */
	if (capturing)
		return RT_PYTHON_CUDA_CAPTURING;
	return RT_PYTHON_CUDA_EMPTY;
}

bool
rt_python_cuda_off_main(bool initialized, int devices, bool context_active)
{
	/* The CUDA runtime's current device is per thread, and a thread that never chose one is on
	 * device 0: empty_cache() from such a thread in a process on device 1 would create a
	 * context on device 0. With one visible device that is the program's own device, and its
	 * active primary context (PyTorch's) proves that the thread creates nothing and changes
	 * no device the program's threads see. */
	return initialized && devices == 1 && context_active;
}

const char *
rt_python_cuda_word(enum rt_python_cuda cuda)
{
	switch (cuda) {
	case RT_PYTHON_CUDA_SKIPPED:
		return "skipped";
	case RT_PYTHON_CUDA_OFF:
		return "off";
	case RT_PYTHON_CUDA_NO_TORCH:
		return "no-torch";
	case RT_PYTHON_CUDA_NOT_INITIALIZED:
		return "not-initialized";
	case RT_PYTHON_CUDA_EMPTIED:
		return "emptied";
	case RT_PYTHON_CUDA_MAIN_ONLY:
		return "main-thread-only";
	case RT_PYTHON_CUDA_CAPTURING:
		return "capturing";
	case RT_PYTHON_CUDA_ERROR:
	case RT_PYTHON_CUDA_EMPTY:
		break;
	}
	return "error";
}

bool
rt_python_freed(int64_t gc_collected, enum rt_python_cuda cuda)
{
	return gc_collected > 0 || cuda == RT_PYTHON_CUDA_EMPTIED;
}

uint32_t
rt_python_word(uint32_t generation, enum rt_python_state state)
{
	return (generation & RT_PYTHON_GENERATION_MASK) << RT_PYTHON_WORD_GENERATION_SHIFT |
	       ((uint32_t)state & RT_PYTHON_WORD_STATE_MASK);
}

enum rt_python_state
rt_python_word_state(uint32_t word)
{
	return (enum rt_python_state)(word & RT_PYTHON_WORD_STATE_MASK);
}

uint32_t
rt_python_word_generation(uint32_t word)
{
	return word >> RT_PYTHON_WORD_GENERATION_SHIFT;
}

bool
rt_python_word_queued(uint32_t word)
{
	return (word & RT_PYTHON_WORD_QUEUED) != 0;
}

/* The word with another state, its generation and queued flag kept. */
static uint32_t
rt_python_moved(uint32_t word, enum rt_python_state state)
{
	return (word & ~RT_PYTHON_WORD_STATE_MASK) | ((uint32_t)state & RT_PYTHON_WORD_STATE_MASK);
}

enum rt_python_ask
rt_python_ask(uint32_t word, uint32_t *next)
{
	switch (rt_python_word_state(word)) {
	case RT_PYTHON_IDLE:
		*next = rt_python_moved(word, RT_PYTHON_ARMED) | RT_PYTHON_WORD_QUEUED;
		return rt_python_word_queued(word) ? RT_PYTHON_ASK_ARM : RT_PYTHON_ASK_ADD;
	case RT_PYTHON_ARMED:
		return RT_PYTHON_ASK_JOIN;
	case RT_PYTHON_RUNNING:
	case RT_PYTHON_DONE:
		break;
	}
	return RT_PYTHON_ASK_BUSY;
}

uint32_t
rt_python_add_failed(uint32_t word)
{
	return rt_python_word(rt_python_word_generation(word), RT_PYTHON_IDLE);
}

bool
rt_python_collect_answer(uint32_t word, uint32_t *next)
{
	if (rt_python_word_state(word) != RT_PYTHON_DONE)
		return false;
	*next = rt_python_moved(word, RT_PYTHON_IDLE);
	return true;
}

static bool
rt_python_own(uint32_t word, uint32_t generation)
{
	return rt_python_word_generation(word) == (generation & RT_PYTHON_GENERATION_MASK);
}

enum rt_python_call
rt_python_called(uint32_t word, uint32_t generation, uint32_t *next)
{
	/* A fork child inherits its parent's queue, our call in it included. Within one
	 * generation a call is added only while none is queued, so this one is the only one. */
	if (!rt_python_own(word, generation))
		return RT_PYTHON_CALL_STALE;
	*next = word & ~(RT_PYTHON_WORD_QUEUED | RT_PYTHON_WORD_CUDA_OWED);
	if (rt_python_word_state(word) != RT_PYTHON_ARMED)
		return (word & RT_PYTHON_WORD_CUDA_OWED) ? RT_PYTHON_CALL_CUDA
		                                         : RT_PYTHON_CALL_TAKEN;
	/* The full steps, CUDA included: they pay what an earlier request owed. */
	*next = rt_python_moved(*next, RT_PYTHON_RUNNING);
	return RT_PYTHON_CALL_RUN;
}

bool
rt_python_claim(uint32_t word, uint32_t generation, bool owe, uint32_t *next)
{
	if (!rt_python_own(word, generation) || rt_python_word_state(word) != RT_PYTHON_ARMED)
		return false;
	*next = rt_python_moved(word, RT_PYTHON_RUNNING) & ~RT_PYTHON_WORD_CUDA_OWED;
	if (owe && rt_python_word_queued(word))
		*next |= RT_PYTHON_WORD_CUDA_OWED;
	return true;
}

bool
rt_python_finish(uint32_t word, uint32_t generation, uint32_t *next)
{
	if (!rt_python_own(word, generation) || rt_python_word_state(word) != RT_PYTHON_RUNNING)
		return false;
	*next = rt_python_moved(word, RT_PYTHON_DONE);
	return true;
}

uint32_t
rt_python_forget(uint32_t word)
{
	/* Whatever the parent had queued may sit in the child's copy of CPython's queue, or not
	 * (the fork can fall inside Py_AddPendingCall): the child cannot know, so it counts on
	 * none and any inherited call finds a generation that is not its own. Its parent's
	 * thread is not in the child. */
	return rt_python_word(rt_python_word_generation(word) + 1u, RT_PYTHON_IDLE);
}

bool
rt_python_take_over(bool main_only, enum rt_python_state state, uint64_t waited_us,
                    uint64_t grace_us, bool thread_out, bool declined)
{
	/* A main thread that runs bytecode takes the pending call within milliseconds; one that
	 * sits in a C call (a blocking wait, a read) takes none until the call returns. */
	return !main_only && state == RT_PYTHON_ARMED && waited_us >= grace_us && !thread_out &&
	       !declined;
}

enum rt_python_start
rt_python_start_due(const struct rt_python_start_readings *r)
{
	if (!r->wanted || r->runs || r->queued || r->held || r->finalizing)
		return RT_PYTHON_START_NONE;
	if (r->initialized)
		return RT_PYTHON_START_QUEUE;
	return r->watched_us < RT_PYTHON_START_WATCH_US ? RT_PYTHON_START_WATCH
	                                                : RT_PYTHON_START_NONE;
}

enum rt_python_seen
rt_python_watch(struct rt_python_watch *w, bool initialized)
{
	if (!initialized) {
		w->seen_down |= w->seen_up;
		w->seen_up = false;
		return RT_PYTHON_SEEN_DOWN;
	}
	bool again = w->seen_down;
	w->seen_down = false;
	w->seen_up = true;
	return again ? RT_PYTHON_SEEN_NEW : RT_PYTHON_SEEN_UP;
}

bool
rt_python_gil_proven_free(const void *now, const void *first, const void *ours, const void *mine,
                          bool shared)
{
	return !now || now != first || now == ours || (shared && mine && now != mine);
}
