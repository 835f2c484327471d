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
	if (r->thread_gone)
		return RT_PYTHON_THREAD_GONE;
	/* A request still waiting for the GIL: queueing more would only pile up. */
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
	case RT_PYTHON_THREAD_GONE:
		return "thread-gone";
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
	case RT_PYTHON_END_GIL_BUSY:
		return "skipped-gil-busy";
	case RT_PYTHON_END_UNFINISHED:
		return "unfinished";
	case RT_PYTHON_END_FINALIZING:
		return "finalizing";
	case RT_PYTHON_END_THREAD_GONE:
		return "thread-gone";
	}
	return "error";
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
