/* rt_python: the Python steps of an action round (gc, CUDA cache) in a CPython host.
 * Owns the lookup of the C API, the "python" thread that alone calls into it, and the bounded
 * hand-off between the worker and that thread. */
#ifndef RT_PYTHON_H
#define RT_PYTHON_H

#include "rt_report.h"

/* Worker thread only, before the allocator action: runs the Python steps when the host is a
 * live CPython interpreter, waiting at most a bounded time, and fills rec's Python fields
 * (python NULL when the host is not CPython). Never calls into Python itself. */
void rt_python_round(struct rt_round_record *rec);
/* In a fork child, before anything else runs: the parent's Python thread does not exist here. */
void rt_python_forget_parent(void);

#endif
