/* The Python steps. No thread of the library calls into Python or holds a Python thread state:
 * the worker adds one pending call (Py_AddPendingCall), which CPython runs on the interpreter's
 * main thread at its next safe point between bytecodes, with the GIL, exactly where the
 * program's own gc.collect() could run (roundtrim(7), PYTHON). The worker waits for it with a
 * deadline and withdraws the request when the main thread stays inside C. A call cannot be
 * taken back out of CPython's queue, so the hand-off is one atomic word (policy's
 * rt_python_arm ... rt_python_forget) with futex waits: a withdrawn call that runs later finds
 * nothing to do, at most one call of ours sits in the queue, and a generation in the word,
 * bumped in every fork child, makes a parent's call that the child inherited do nothing. No
 * lock of ours exists, so none is held while CPython runs. */
#include "rt_python.h"
#include "rt_python_rules.h"
#include "rt_shim.h"

#include <dlfcn.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* How long the worker waits for the main thread to take the request. The main thread runs
 * pending calls between bytecodes; two seconds without that means it sits in one C call (a
 * blocking read, a sleep, a join, a long computation in an extension) or, before CPython 3.13,
 * runs bytecode without ever releasing the GIL (see LIMITS). The allocator action must not
 * wait on it, and two seconds of delay are invisible in rounds that last minutes. */
#define RT_PYTHON_START_WAIT_MS 2000
/* How long, once the steps run, the worker waits for them: a full collection of tens of
 * millions of objects takes seconds, and trimming before it ends would miss what it frees; a
 * finalizer that blocks must still not hold up the round forever. */
#define RT_PYTHON_FINISH_WAIT_MS 10000

typedef void *rt_pyobj;

/* The C API, found with dlsym(RTLD_DEFAULT): Debian's /usr/bin/python3 exports it from the
 * executable, other builds from libpython3.x.so. Never linked. */
struct rt_python_api {
	int (*is_initialized)(void);
	int (*is_finalizing)(void); /* Py_IsFinalizing (3.13+) or _Py_IsFinalizing (3.11, 3.12) */
	int (*add_pending)(int (*)(void *), void *);
	ssize_t (*gc_collect)(void);
	int (*gc_is_enabled)(void);                   /* 3.10+; NULL before */
	rt_pyobj (*modules)(void);                    /* PyImport_GetModuleDict: borrowed */
	rt_pyobj (*dict_get)(rt_pyobj, const char *); /* PyDict_GetItemString: borrowed */
	rt_pyobj (*getattr)(rt_pyobj, const char *);
	rt_pyobj (*call)(rt_pyobj, rt_pyobj); /* PyObject_CallObject */
	int (*is_true)(rt_pyobj);
	void (*incref)(rt_pyobj);
	void (*decref)(rt_pyobj);
	void (*err_clear)(void);
	/* The exception state, kept as found: the 3.12+ pair when present, else the older one. */
	rt_pyobj (*err_get_raised)(void);
	void (*err_set_raised)(rt_pyobj);
	void (*err_fetch)(rt_pyobj *, rt_pyobj *, rt_pyobj *);
	void (*err_restore)(rt_pyobj, rt_pyobj, rt_pyobj);
	rt_pyobj none; /* _Py_NoneStruct: sys.modules maps a blocked import to None */
};

/* Written by the pending call before it publishes DONE, read by the worker after it sees
 * DONE: the word orders them. */
struct rt_python_answer {
	enum rt_python_end end;
	int64_t gc_collected;
	enum rt_python_cuda cuda;
};

static struct rt_python_api rt_py;
static bool rt_py_found;
static _Atomic uint32_t rt_py_word;
static atomic_bool rt_py_cuda_option;
static struct rt_python_answer rt_py_answer;

static void
rt_python_wake(void)
{
	syscall(SYS_futex, &rt_py_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Waits while the word holds `value`, at most until `deadline` (CLOCK_MONOTONIC). Returns
 * the word's value then. */
static uint32_t
rt_python_wait_while(uint32_t value, const struct timespec *deadline)
{
	uint32_t now_value;
	while ((now_value = atomic_load(&rt_py_word)) == value) {
		struct timespec now, rel;
		clock_gettime(CLOCK_MONOTONIC, &now);
		rel.tv_sec = deadline->tv_sec - now.tv_sec;
		rel.tv_nsec = deadline->tv_nsec - now.tv_nsec;
		if (rel.tv_nsec < 0)
			rel.tv_sec--, rel.tv_nsec += 1000000000L;
		if (rel.tv_sec < 0)
			break;
		/* FUTEX_WAIT's timeout is relative; EINTR, EAGAIN and spurious wake-ups loop. */
		syscall(SYS_futex, &rt_py_word, FUTEX_WAIT_PRIVATE, value, &rel, NULL, 0);
	}
	return now_value;
}

static struct timespec
rt_python_deadline(long ms)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L)
		t.tv_sec++, t.tv_nsec -= 1000000000L;
	return t;
}

static void *
rt_python_sym(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);
}

/* Looks the API up; false (and retried next round: libpython may be loaded later) when a
 * required entry point is missing. Worker thread only. */
static bool
rt_python_resolve(void)
{
	if (rt_py_found)
		return true;
	struct rt_python_api a;
	memset(&a, 0, sizeof(a));
	/* The first lookup tells a non-Python process at the cost of one dlsym. */
	*(void **)&a.is_initialized = rt_python_sym("Py_IsInitialized");
	if (!a.is_initialized)
		return false;
	*(void **)&a.is_finalizing = rt_python_sym("Py_IsFinalizing");
	if (!a.is_finalizing)
		*(void **)&a.is_finalizing = rt_python_sym("_Py_IsFinalizing");
	*(void **)&a.add_pending = rt_python_sym("Py_AddPendingCall");
	*(void **)&a.gc_collect = rt_python_sym("PyGC_Collect");
	*(void **)&a.gc_is_enabled = rt_python_sym("PyGC_IsEnabled");
	*(void **)&a.modules = rt_python_sym("PyImport_GetModuleDict");
	*(void **)&a.dict_get = rt_python_sym("PyDict_GetItemString");
	*(void **)&a.getattr = rt_python_sym("PyObject_GetAttrString");
	*(void **)&a.call = rt_python_sym("PyObject_CallObject");
	*(void **)&a.is_true = rt_python_sym("PyObject_IsTrue");
	*(void **)&a.incref = rt_python_sym("Py_IncRef");
	*(void **)&a.decref = rt_python_sym("Py_DecRef");
	*(void **)&a.err_clear = rt_python_sym("PyErr_Clear");
	*(void **)&a.err_get_raised = rt_python_sym("PyErr_GetRaisedException");
	*(void **)&a.err_set_raised = rt_python_sym("PyErr_SetRaisedException");
	*(void **)&a.err_fetch = rt_python_sym("PyErr_Fetch");
	*(void **)&a.err_restore = rt_python_sym("PyErr_Restore");
	a.none = rt_python_sym("_Py_NoneStruct");
	if (!a.err_get_raised || !a.err_set_raised)
		a.err_get_raised = NULL, a.err_set_raised = NULL;
	if (!a.is_finalizing || !a.add_pending || !a.gc_collect || !a.modules || !a.dict_get ||
	    !a.getattr || !a.call || !a.is_true || !a.incref || !a.decref || !a.err_clear ||
	    (!a.err_get_raised && (!a.err_fetch || !a.err_restore)) || !a.none) {
		static bool warned;
		if (!warned)
			rt_warn("Python steps off: this interpreter lacks part of the C API");
		warned = true;
		return false;
	}
	rt_py = a;
	rt_py_found = true;
	return true;
}

/* --- The pending call: everything below until rt_python_round runs on the interpreter's main
 * thread, with the GIL. */

/* sys.modules[name] when the program imported it, as a new reference; NULL otherwise. Never
 * imports: a plain dictionary lookup, which also never waits on an import in progress. */
static rt_pyobj
rt_python_module(const char *name)
{
	rt_pyobj modules = rt_py.modules();
	rt_pyobj mod = modules ? rt_py.dict_get(modules, name) : NULL;
	if (!mod || mod == rt_py.none)
		return NULL;
	rt_py.incref(mod);
	return mod;
}

/* obj.name(); returns the result's truth (0 or 1), or -1 when anything raised. */
static int
rt_python_call_method(rt_pyobj obj, const char *name, bool want_truth)
{
	int truth = -1;
	rt_pyobj fn = rt_py.getattr(obj, name);
	rt_pyobj result = fn ? rt_py.call(fn, NULL) : NULL;
	if (result)
		truth = want_truth ? rt_py.is_true(result) : 1;
	if (result)
		rt_py.decref(result);
	if (fn)
		rt_py.decref(fn);
	if (truth < 0)
		rt_py.err_clear();
	return truth;
}

static enum rt_python_cuda
rt_python_cuda(bool option)
{
	if (!option)
		return rt_python_cuda_step(false, false, false);
	rt_pyobj torch = rt_python_module("torch");
	rt_pyobj cuda = torch ? rt_python_module("torch.cuda") : NULL;
	enum rt_python_cuda outcome;
	int initialized = cuda ? rt_python_call_method(cuda, "is_initialized", true) : 0;
	if (initialized < 0)
		outcome = RT_PYTHON_CUDA_ERROR;
	else
		outcome = rt_python_cuda_step(true, cuda != NULL, initialized == 1);
	if (outcome == RT_PYTHON_CUDA_EMPTY)
		outcome = rt_python_call_method(cuda, "empty_cache", false) < 0
		              ? RT_PYTHON_CUDA_ERROR
		              : RT_PYTHON_CUDA_EMPTIED;
	if (cuda)
		rt_py.decref(cuda);
	if (torch)
		rt_py.decref(torch);
	return outcome;
}

/* gc.collect()'s full collection unless the program disabled the collector, then the CUDA
 * cache. */
static void
rt_python_steps(struct rt_python_answer *answer, bool cuda_option)
{
	answer->gc_collected = -1;
	answer->cuda = RT_PYTHON_CUDA_SKIPPED;
	/* PyGC_IsEnabled reads the current thread state: only here, never on the worker. */
	answer->end = rt_python_gc_step(rt_py.is_finalizing() != 0,
	                                rt_py.gc_is_enabled ? rt_py.gc_is_enabled() != 0 : true);
	if (answer->end == RT_PYTHON_END_FINALIZING)
		return;
	/* A pending call may run where an exception is already set (Py_MakePendingCalls from a
	 * C call): keep it exactly as found, and leave none of ours. */
	rt_pyobj raised = NULL, type = NULL, value = NULL, tb = NULL;
	if (rt_py.err_get_raised)
		raised = rt_py.err_get_raised();
	else
		rt_py.err_fetch(&type, &value, &tb);
	if (answer->end == RT_PYTHON_END_DONE)
		answer->gc_collected = (int64_t)rt_py.gc_collect();
	if (rt_python_cuda_runs(answer->end))
		answer->cuda = rt_python_cuda(cuda_option);
	rt_py.err_clear();
	if (rt_py.err_set_raised)
		rt_py.err_set_raised(raised);
	else
		rt_py.err_restore(type, value, tb);
}

/* The pending call. arg is the generation it was added in. Returns 0 always: a pending call
 * that returns -1 must set an exception, which the program would see. */
static int
rt_python_pending(void *arg)
{
	uint32_t generation = (uint32_t)(uintptr_t)arg;
	uint32_t word = atomic_load(&rt_py_word), next;
	enum rt_python_call call;
	do {
		call = rt_python_called(word, generation, &next);
		if (call == RT_PYTHON_CALL_STALE)
			return 0;
	} while (!atomic_compare_exchange_weak(&rt_py_word, &word, next));
	if (call == RT_PYTHON_CALL_WITHDRAWN)
		return 0;
	rt_python_wake();

	struct rt_python_answer answer;
	rt_python_steps(&answer, atomic_load(&rt_py_cuda_option));
	/* A finalizer may have forked during the steps: in that child the word's generation has
	 * moved on, and this answer is nobody's. */
	word = atomic_load(&rt_py_word);
	if (rt_python_word_generation(word) != (generation & RT_PYTHON_GENERATION_MASK))
		return 0;
	rt_py_answer = answer;
	do {
		if (!rt_python_finish(word, generation, &next))
			return 0;
	} while (!atomic_compare_exchange_weak(&rt_py_word, &word, next));
	rt_python_wake();
	return 0;
}

/* --- The worker's side. */

/* Arms a request; false when the steps of an earlier one still run. *add: whether a call must
 * be added to CPython's queue. */
static bool
rt_python_arm_request(uint32_t *armed, bool *add)
{
	uint32_t word = atomic_load(&rt_py_word);
	do {
		if (!rt_python_arm(word, armed, add))
			return false;
	} while (!atomic_compare_exchange_weak(&rt_py_word, &word, *armed));
	return true;
}

/* Waits for the armed request within the deadlines; withdraws it when the main thread has not
 * taken it in time. */
static enum rt_python_end
rt_python_request(uint32_t armed, bool add, struct rt_python_answer *answer)
{
	if (add) {
		uint32_t generation = rt_python_word_generation(armed);
		if (rt_py.add_pending(rt_python_pending, (void *)(uintptr_t)generation) != 0) {
			/* Nothing of ours is queued: no call can have moved the word. */
			atomic_store(&rt_py_word, rt_python_add_failed(armed));
			return RT_PYTHON_END_QUEUE_FULL;
		}
	}
	struct timespec deadline = rt_python_deadline(RT_PYTHON_START_WAIT_MS);
	uint32_t word = rt_python_wait_while(armed, &deadline), next;
	if (word == armed) {
		if (rt_python_withdraw(word, &next) &&
		    atomic_compare_exchange_strong(&rt_py_word, &word, next))
			return RT_PYTHON_END_MAIN_BUSY;
		/* The call took it at the last moment: word holds what it made. */
	}
	if (rt_python_word_state(word) == RT_PYTHON_RUNNING) {
		deadline = rt_python_deadline(RT_PYTHON_FINISH_WAIT_MS);
		word = rt_python_wait_while(word, &deadline);
	}
	if (rt_python_word_state(word) != RT_PYTHON_DONE)
		return RT_PYTHON_END_UNFINISHED;
	*answer = rt_py_answer;
	/* Only the worker moves a DONE word. */
	if (rt_python_collect_answer(word, &next))
		atomic_store(&rt_py_word, next);
	return answer->end;
}

void
rt_python_round(struct rt_round_record *rec)
{
	rec->python = NULL;
	rec->gc_collected = -1;
	rec->cuda = rt_python_cuda_word(RT_PYTHON_CUDA_SKIPPED);
	if (!rt_python_resolve())
		return;
	enum rt_python_state state = rt_python_word_state(atomic_load(&rt_py_word));
	struct rt_python_readings r = {
	    .enabled = rt_shim.cfg.python,
	    .found = true,
	    .initialized = rt_py.is_initialized() != 0,
	    .finalizing = rt_py.is_finalizing() != 0,
	    .busy = state == RT_PYTHON_RUNNING || state == RT_PYTHON_ARMED,
	};
	enum rt_python_plan plan = rt_python_plan(&r);
	uint32_t armed = 0;
	bool add = false;
	atomic_store(&rt_py_cuda_option, rt_shim.cfg.cuda_empty_cache);
	if (plan == RT_PYTHON_RUN && !rt_python_arm_request(&armed, &add))
		plan = RT_PYTHON_BUSY;
	if (plan != RT_PYTHON_RUN) {
		rec->python = rt_python_plan_word(plan);
		return;
	}
	struct rt_python_answer answer = {.gc_collected = -1, .cuda = RT_PYTHON_CUDA_SKIPPED};
	enum rt_python_end end = rt_python_request(armed, add, &answer);
	rec->python = rt_python_end_word(end);
	if (end == RT_PYTHON_END_DONE || end == RT_PYTHON_END_GC_DISABLED ||
	    end == RT_PYTHON_END_FINALIZING) {
		rec->gc_collected = answer.gc_collected;
		rec->cuda = rt_python_cuda_word(answer.cuda);
	}
}

void
rt_python_forget_parent(void)
{
	/* The API's addresses stay valid in the child. Nothing else of the parent's is here: no
	 * thread, no thread state; only, perhaps, its call in CPython's copied queue. */
	atomic_store(&rt_py_word, rt_python_forget(atomic_load(&rt_py_word)));
}
