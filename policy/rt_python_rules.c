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
	/* The steps of an earlier round still run on the main thread (past the worker's wait):
	 * asking again would only make this round wait on them. */
	if (r->busy)
		return RT_PYTHON_BUSY;
	return RT_PYTHON_RUN;
}

const char *
rt_python_plan_word(enum rt_python_plan plan)
{
	switch (plan) {
	case RT_PYTHON_RUN:
		return "collected";
	case RT_PYTHON_NOT_PYTHON:
		return NULL;
	case RT_PYTHON_OFF:
		return "off";
	case RT_PYTHON_NOT_INITIALIZED:
		return "not-initialized";
	case RT_PYTHON_FINALIZING:
		return "finalizing";
	case RT_PYTHON_BUSY:
		return "skipped-busy";
	}
	return NULL;
}

const char *
rt_python_end_word(enum rt_python_end end)
{
	switch (end) {
	case RT_PYTHON_END_DONE:
		return "collected";
	case RT_PYTHON_END_MAIN_BUSY:
		return "skipped-main-busy";
	case RT_PYTHON_END_UNFINISHED:
		return "unfinished";
	case RT_PYTHON_END_FINALIZING:
		return "finalizing";
	case RT_PYTHON_END_GC_DISABLED:
		return "skipped-gc-disabled";
	case RT_PYTHON_END_QUEUE_FULL:
		return "skipped-queue-full";
	}
	return "error";
}

enum rt_python_end
rt_python_gc_step(bool finalizing, bool gc_enabled)
{
	/* A call that CPython runs once finalisation has begun (its own finalizers run bytecode)
	 * must leave the dying interpreter alone. */
	if (finalizing)
		return RT_PYTHON_END_FINALIZING;
	/* The program's gc.disable() stands: enabling the collector around the collection would
	 * be visible to the program, and PyGC_Collect collects nothing while it is disabled. */
	if (!gc_enabled)
		return RT_PYTHON_END_GC_DISABLED;
	return RT_PYTHON_END_DONE;
}

bool
rt_python_cuda_runs(enum rt_python_end gc_step)
{
	/* The CUDA cache is not the collector's business: only finalisation stops it. */
	return gc_step == RT_PYTHON_END_DONE || gc_step == RT_PYTHON_END_GC_DISABLED;
}

enum rt_python_cuda
rt_python_cuda_step(bool option, bool torch_imported, bool cuda_initialized)
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
	return RT_PYTHON_CUDA_EMPTY;
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
	case RT_PYTHON_CUDA_ERROR:
	case RT_PYTHON_CUDA_EMPTY:
		break;
	}
	return "error";
}

uint32_t
rt_python_word(uint32_t generation, bool queued, enum rt_python_state state)
{
	return (generation & RT_PYTHON_GENERATION_MASK) << RT_PYTHON_WORD_GENERATION_SHIFT |
	       (queued ? RT_PYTHON_WORD_QUEUED : 0u) |
	       ((uint32_t)state & RT_PYTHON_WORD_STATE_MASK);
}

enum rt_python_state
rt_python_word_state(uint32_t word)
{
	return (enum rt_python_state)(word & RT_PYTHON_WORD_STATE_MASK);
}

bool
rt_python_word_queued(uint32_t word)
{
	return (word & RT_PYTHON_WORD_QUEUED) != 0;
}

uint32_t
rt_python_word_generation(uint32_t word)
{
	return word >> RT_PYTHON_WORD_GENERATION_SHIFT;
}

bool
rt_python_arm(uint32_t word, uint32_t *next, bool *add)
{
	enum rt_python_state state = rt_python_word_state(word);
	if (state != RT_PYTHON_IDLE && state != RT_PYTHON_DONE)
		return false;
	/* CPython cannot take a call back out of its queue: at most one of ours sits there, and a
	 * withdrawn one that has not run yet serves the next request. */
	*add = !rt_python_word_queued(word);
	*next = rt_python_word(rt_python_word_generation(word), true, RT_PYTHON_ARMED);
	return true;
}

uint32_t
rt_python_add_failed(uint32_t word)
{
	return rt_python_word(rt_python_word_generation(word), false, RT_PYTHON_IDLE);
}

bool
rt_python_withdraw(uint32_t word, uint32_t *next)
{
	if (rt_python_word_state(word) != RT_PYTHON_ARMED)
		return false;
	*next = rt_python_word(rt_python_word_generation(word), rt_python_word_queued(word),
	                       RT_PYTHON_IDLE);
	return true;
}

bool
rt_python_collect_answer(uint32_t word, uint32_t *next)
{
	if (rt_python_word_state(word) != RT_PYTHON_DONE)
		return false;
	*next = rt_python_word(rt_python_word_generation(word), rt_python_word_queued(word),
	                       RT_PYTHON_IDLE);
	return true;
}

enum rt_python_call
rt_python_called(uint32_t word, uint32_t generation, uint32_t *next)
{
	uint32_t own = rt_python_word_generation(word);
	/* A fork child inherits its parent's queue, our call in it included. */
	if (own != (generation & RT_PYTHON_GENERATION_MASK))
		return RT_PYTHON_CALL_STALE;
	enum rt_python_state state = rt_python_word_state(word);
	if (state == RT_PYTHON_ARMED) {
		*next = rt_python_word(own, false, RT_PYTHON_RUNNING);
		return RT_PYTHON_CALL_RUN;
	}
	*next = rt_python_word(own, false, state);
	return RT_PYTHON_CALL_WITHDRAWN;
}

bool
rt_python_finish(uint32_t word, uint32_t generation, uint32_t *next)
{
	uint32_t own = rt_python_word_generation(word);
	if (own != (generation & RT_PYTHON_GENERATION_MASK) ||
	    rt_python_word_state(word) != RT_PYTHON_RUNNING)
		return false;
	*next = rt_python_word(own, rt_python_word_queued(word), RT_PYTHON_DONE);
	return true;
}

uint32_t
rt_python_forget(uint32_t word)
{
	/* Whatever the parent had queued may sit in the child's copy of CPython's queue, or not
	 * (the fork can fall inside Py_AddPendingCall): the child cannot know, so it counts on
	 * none and any inherited call finds a generation that is not its own. */
	return rt_python_word(rt_python_word_generation(word) + 1u, false, RT_PYTHON_IDLE);
}
