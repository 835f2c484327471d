/* rt_python_rules: whether a round runs the Python steps (gc, CUDA cache) and the words reported.
 * Owns the decisions from the shim's readings of the interpreter and of its Python thread. */
#ifndef RT_PYTHON_RULES_H
#define RT_PYTHON_RULES_H

#include <stdbool.h>

/* What the worker reads before an action round, without the GIL. */
struct rt_python_readings {
	bool enabled;     /* ROUNDTRIM_PYTHON */
	bool found;       /* the C API's entry points are in the process */
	bool initialized; /* Py_IsInitialized() */
	bool finalizing;  /* _Py_IsFinalizing() / Py_IsFinalizing() */
	bool thread_gone; /* our Python thread was ended (finalisation) or could not start */
	bool busy;        /* an earlier request is still waiting for the GIL or running */
};

enum rt_python_plan {
	RT_PYTHON_RUN,
	RT_PYTHON_NOT_PYTHON, /* not a CPython process: nothing to report */
	RT_PYTHON_OFF,
	RT_PYTHON_NOT_INITIALIZED,
	RT_PYTHON_FINALIZING,
	RT_PYTHON_THREAD_GONE,
	RT_PYTHON_BUSY,
};

/* How a request that was made ended, as the worker saw it. */
enum rt_python_end {
	RT_PYTHON_END_DONE,        /* the steps ran; the outcome is valid */
	RT_PYTHON_END_GIL_BUSY,    /* the GIL was not had in time: withdrawn, nothing ran */
	RT_PYTHON_END_UNFINISHED,  /* the steps began but did not end in time */
	RT_PYTHON_END_FINALIZING,  /* the thread found the interpreter finalising */
	RT_PYTHON_END_THREAD_GONE, /* the thread ended while waiting for the GIL */
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

/* The CUDA step, with the GIL held, from what is known so far: torch_imported is read only
 * when the option is on, cuda_initialized only when torch is imported. Returns the outcome to
 * report, or RT_PYTHON_CUDA_EMPTY when empty_cache() is to be called (then EMPTIED or ERROR). */
enum rt_python_cuda rt_python_cuda_step(bool option, bool torch_imported, bool cuda_initialized);
const char *rt_python_cuda_word(enum rt_python_cuda cuda);

#endif
