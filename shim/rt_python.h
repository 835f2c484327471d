/* rt_python: the Python steps of an action round (gc, CUDA cache) in a CPython host.
 * Owns the lookup of the C API, the pending call that runs the steps on the interpreter's main
 * thread, and the bounded hand-off between the worker and that call. */
#ifndef RT_PYTHON_H
#define RT_PYTHON_H

#include "rt_report.h"

/* Worker thread only, before the allocator action: when the host is a live CPython
 * interpreter, asks its main thread to run the Python steps (Py_AddPendingCall), waits at most
 * a bounded time, and fills rec's Python fields (python NULL when the host is not CPython).
 * Never runs Python code or takes the GIL itself. */
void rt_python_round(struct rt_round_record *rec);
/* In a fork child, before anything else runs: a request of the parent's, still in the child's
 * copy of CPython's pending-call queue, must find nothing to do. */
void rt_python_forget_parent(void);

#endif
