/* The Python steps. The main thread first: the worker adds one pending call (Py_AddPendingCall),
 * which CPython runs on the interpreter's main thread at its next safe point between bytecodes,
 * with the GIL, exactly where the program's own gc.collect() could run (roundtrim(7), PYTHON).
 * A main thread that sits in one C call (Event.wait, time.sleep, a read) takes none until the
 * call returns: when it has not claimed the request within RT_PYTHON_GRACE_US, a thread of the
 * library's (never the worker) takes the GIL with PyGILState_Ensure and runs the same steps, unless
 * ROUNDTRIM_PYTHON=main. Whichever claims the request first runs it; the other finds it taken.
 * The worker never waits for either: the allocator's action runs at once, and when the steps
 * have run, the worker releases what they freed in a record of its own. A call cannot be taken
 * back out of CPython's queue, and none needs to be: at most one of ours is ever there, and rounds
 * that come before a request is claimed join it. The hand-off is one atomic word (policy's
 * rt_python_ask ... rt_python_forget); a generation in it, bumped in every fork child, makes a
 * parent's call that the child inherited do nothing. No lock of ours exists, so none is held
 * while CPython runs. The Python module's round() runs the same steps in its own thread, which
 * holds the GIL (rt_python_run_here). */
#include "rt_python.h"
#include "rt_config.h"
#include "rt_cuda.h"
#include "rt_out.h"
#include "rt_python_rules.h"
#include "rt_worker_life.h"

#include "rt_pages.h"
#include "rt_proc.h"
#include "rt_tasks.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

typedef void *rt_pyobj;

/* How long a program thread that provably does not hold the GIL waits at most for the end of the
 * library's thread after sending it away: the steps it is out on (a full collection, finalizers)
 * need nothing that caller holds, and without the library the caller's call would not have
 * failed. Bounded, and short: a finalizer may wait on a lock the caller holds, and then the
 * caller's call fails after this as it would at once (a bound of 30 s held such a caller, and a
 * pthread_create that hit EAGAIN, 30 s). Collections of the heaps measured take well under it. */
#define RT_PY_THREAD_STEPS_WAIT_S 2
/* How long a caller that may hold the GIL waits at most for the library's thread after sending it
 * away: an idle thread leaves in microseconds; one out on its steps needs the GIL to end (such a
 * program's call never waits on the library longer than a few milliseconds). */
#define RT_PY_THREAD_LEAVE_WAIT_NS 5000000L
/* The library's thread's stack: at least what glibc gives a thread under the usual 8 MiB
 * RLIMIT_STACK. A collection runs finalizers, which are arbitrary Python, and CPython already
 * runs them on whichever of the program's threads allocates: they must find no less room here.
 * Virtual: only what a round's steps touch becomes resident, and that goes back once they are
 * done (rt_stack_trim). */
#define RT_PY_THREAD_STACK (8u << 20)

/* The C API, found with dlsym(RTLD_DEFAULT): Debian's /usr/bin/python3 exports it from the
 * executable, other builds from libpython3.x.so. Never linked. */
struct rt_python_api {
	int (*is_initialized)(void);
	int (*is_finalizing)(void); /* Py_IsFinalizing (3.13+) or _Py_IsFinalizing (3.11, 3.12) */
	int (*add_pending)(int (*)(void *), void *);
	/* Whether the caller holds the GIL: its own thread state is the current one. Not
	 * PyGILState_Check, which says 1 for every thread once a subinterpreter exists. Either
	 * absent: never taken for held. */
	void *(*this_tstate)(void);    /* PyGILState_GetThisThreadState */
	void *(*current_tstate)(void); /* PyThreadState_GetUnchecked, 3.11's private name */
	/* Where the current thread state is the GIL holder's, whichever thread it is (3.11; the
	 * earlier versions, which have no Py_Version, are not told apart), the main and the
	 * newest interpreter: the same one in a process of one (rt_python_gil_free); NULL
	 * elsewhere. Only compared, never read through. */
	void *(*main_interp)(void); /* PyInterpreterState_Main */
	void *(*head_interp)(void); /* PyInterpreterState_Head */
	ssize_t (*gc_collect)(void);
	int (*gc_is_enabled)(void); /* 3.10+; NULL before */
	long long (*as_long_long)(rt_pyobj);
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
	/* For the library's thread's CUDA question, which runs none of the program's code; without
	 * them the CUDA step stays with the main thread. */
	rt_pyobj (*module_dict)(rt_pyobj); /* PyModule_GetDict: borrowed */
	/* The calling thread's interpreter and the main one: the exit's wait is hooked only in
	 * the main one (a subinterpreter's end runs its own threading's exit calls). */
	void *(*this_interp)(void);  /* PyInterpreterState_Get */
	void *(*first_interp)(void); /* PyInterpreterState_Main */
	rt_pyobj true_object;        /* _Py_TrueStruct */
	/* For the library's thread; without all of them the steps stay on the main thread. */
	int (*gil_ensure)(void); /* PyGILState_Ensure: an enum, returned as an int */
	void (*gil_release)(int);
	unsigned long (*thread_ident)(void);        /* PyThread_get_thread_ident */
	rt_pyobj (*long_from_ulong)(unsigned long); /* PyLong_FromUnsignedLong */
	rt_pyobj (*dict_item)(rt_pyobj, rt_pyobj);  /* PyDict_GetItem: borrowed, never raises */
	int (*dict_del)(rt_pyobj, rt_pyobj);        /* PyDict_DelItem */
	int (*is_instance)(rt_pyobj, rt_pyobj);     /* PyObject_IsInstance */
	rt_pyobj (*call_method)(rt_pyobj, const char *, const char *,
	                        ...); /* PyObject_CallMethod */
	bool threads;                 /* all of the above were found */
	/* For giving a Dummy's number back to threading's counter; without them it is not. */
	rt_pyobj (*repr)(rt_pyobj);                       /* PyObject_Repr */
	const char *(*utf8)(rt_pyobj);                    /* PyUnicode_AsUTF8 */
	int (*setattr)(rt_pyobj, const char *, rt_pyobj); /* PyObject_SetAttrString */
	/* Around an API caller's allocator action; without both the GIL stays held. */
	void *(*save_thread)(void);     /* PyEval_SaveThread */
	void (*restore_thread)(void *); /* PyEval_RestoreThread */
	/* For the exit's wait (rt_python_hook_exit) and its mark; without them there is none. */
	rt_pyobj (*cfunction_new)(void *, rt_pyobj, rt_pyobj); /* PyCFunction_NewEx */
	int (*at_exit)(void (*)(void));                        /* Py_AtExit */
	bool exit_wait;             /* these and save_thread, restore_thread were found */
	int (*check_signals)(void); /* PyErr_CheckSignals: the program's handlers, in the wait */
};

/* Written by the pending call before it publishes DONE, read by the worker after it sees
 * DONE: the word orders them. */
static struct rt_python_outcome rt_py_answer;
/* The CUDA step that the main thread's call ran alone after the library's thread took the
 * request: written before rt_py_cuda_posted is set, read by the worker after it clears it. */
static struct rt_python_outcome rt_py_cuda_answer;
static atomic_bool rt_py_cuda_posted;

/* The API, published once whole: 0 not looked up (or not found yet: libpython may be loaded
 * later), 1 being looked up by one thread, 2 found. */
#define RT_PY_UNKNOWN 0
#define RT_PY_RESOLVING 1
#define RT_PY_FOUND 2
static struct rt_python_api rt_py;
static atomic_int rt_py_state;
static _Atomic uint32_t rt_py_word;
static atomic_bool rt_py_cuda_option;
/* ROUNDTRIM_CUDA_EMPTY_CACHE=waiting: the library's thread may run the CUDA step too. */
static atomic_bool rt_py_cuda_waiting;
/* A hold of the GIL found torch's CUDA initialised in this process (a fork child starts without:
 * torch marks CUDA unusable there): only then does the library's thread ask the driver. */
static atomic_bool rt_py_cuda_seen;
/* The worker's own: the last round the armed request serves, and when it was armed
 * (CLOCK_MONOTONIC, µs; 0: none armed by this worker since its last answer). */
static uint64_t rt_py_round;
static uint64_t rt_py_armed_us;
static bool rt_py_main_only;
/* What the worker has seen of the interpreter (rt_python_watch). */
static struct rt_python_watch rt_py_watch;
/* The library's thread. It is wanted where the steps may leave the main thread (set at the
 * worker's start) and started, once the interpreter is up, by a pending call that the worker
 * queues, so from the interpreter's main thread (rt_python_start). Each thread serves one
 * generation: bumping it sends the thread away (the library stands down, or a program thread
 * needs its filesystem context to itself) and lets another start later. */
static atomic_bool rt_py_thread_wanted;
static uint64_t rt_py_want_us; /* when the worker started, for the start's watch */
static _Atomic uint32_t rt_py_thread_gen;
/* A thread of the current generation runs or is being started (set by its starter, cleared by
 * whoever sends it away, or by the thread as it ends). */
static atomic_bool rt_py_thread_runs;
/* The generation + 1 of the start call in CPython's queue; 0: none (a call of an older
 * generation may still be there: it does nothing). */
static _Atomic uint32_t rt_py_start_queued;
/* Program threads that keep a new thread from starting while they wait for the old to end. */
static atomic_int rt_py_thread_holds;
/* The tasks: threads of ours that run (a futex word: each wakes its waiters as it ends), those
 * being created, and those inside PyGILState_Ensure. */
static _Atomic uint32_t rt_py_thread_tasks;
static _Atomic uint32_t rt_py_thread_starting; /* a futex word as well */
static atomic_uint rt_py_thread_asking;
/* Threads of ours out on a request, from before PyGILState_Ensure to after PyGILState_Release:
 * each needs the GIL to end, through the eval loop as much as through Ensure. */
static atomic_uint rt_py_thread_busy;
/* The thread state of the library's thread while it holds the GIL for a request (from just after
 * PyGILState_Ensure to just before PyGILState_Release), else NULL: where CPython's current thread
 * state is the process's (3.11), seeing it current tells a program thread that it does not hold
 * the GIL (rt_python_gil_free). */
static _Atomic(void *) rt_py_thread_tstate;
/* The futex word the worker bumps to send the current thread to a request, and whether one is
 * out on a request (set by the worker, cleared by the thread as its last step or when it is sent
 * away; a thread CPython ended at finalisation leaves it set, and nothing asks again). */
static _Atomic uint32_t rt_py_thread_asks;
static _Atomic uint32_t rt_py_thread_first_seen; /* asks when the current one was started */
static atomic_bool rt_py_thread_out;
/* Set by the thread when it left the armed request to the main thread (threading not imported
 * yet); cleared by the worker as it collects the answer, or at the next round, which the request
 * serves too: until then it is not sent again. */
static atomic_bool rt_py_thread_declined;
/* The last thread's task id, and the program thread that started it (whose filesystem context
 * it shares). */
static atomic_int rt_py_thread_tid;
static atomic_int rt_py_anchor_tid;
static __thread bool rt_py_thread_self;
/* The generation the library's thread was started for (on that thread). */
static __thread uint32_t rt_py_thread_my_gen;
/* Where the library's thread goes back to once CPython has ended it (rt_python_thread_park): a
 * point in its start routine, saved at its entry; NULL before, and once it went back. */
static __thread jmp_buf *rt_py_thread_entry;
/* Threads of ours that CPython ended and that wait to end (rt_python_thread_park): until a
 * program thread needs them gone or the worker sees a new interpreter up (rt_python_tend). */
static atomic_uint rt_py_thread_parked;
/* The futex word they wait on, bumped to end them; an idle thread of the current generation, which
 * waits on rt_py_thread_asks, stays. */
static _Atomic uint32_t rt_py_thread_unparks;
/* The task id of the last thread of ours that went back to its start routine to end: a
 * program thread that waits for the end of ours waits for the kernel to release it too. */
static atomic_int rt_py_thread_leaving_tid;
static __thread bool rt_py_thread_in_ensure;
/* Its end's bookkeeping is done but for its count among the tasks (rt_python_thread_park). */
static __thread bool rt_py_thread_stopped;
/* It no longer counts among the tasks: it is on its way out through glibc's end of the thread. */
static __thread bool rt_py_thread_counted_out;
/* Threads of ours that CPython ended a second time in that end (a thread-exit destructor of the
 * program's asked for the GIL while the interpreter finalised): tasks of the process for good,
 * and of the library's, which the worker counts as such (rt_worker_alone), though nothing waits
 * for their end any more. */
static atomic_uint rt_py_thread_stuck;
/* The generation + 1 of the request it claimed and has not answered yet; 0: none. */
static __thread uint32_t rt_py_thread_claimed;
static __thread bool rt_py_thread_in_take;

static uint64_t
rt_python_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void *
rt_python_sym(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);
}

/* Looks the API up; false (and retried at the next round: libpython may be loaded later) when a
 * required entry point is missing. From the worker or an API caller: one thread looks, and
 * publishes the whole table. */
static bool
rt_python_resolve(void)
{
	int state = atomic_load_explicit(&rt_py_state, memory_order_acquire);
	if (state != RT_PY_UNKNOWN)
		return state == RT_PY_FOUND;
	if (!atomic_compare_exchange_strong(&rt_py_state, &state, RT_PY_RESOLVING))
		return state == RT_PY_FOUND;
	struct rt_python_api a;
	memset(&a, 0, sizeof(a));
	/* The first lookup tells a non-Python process at the cost of one dlsym. */
	*(void **)&a.is_initialized = rt_python_sym("Py_IsInitialized");
	if (!a.is_initialized) {
		atomic_store(&rt_py_state, RT_PY_UNKNOWN);
		return false;
	}
	*(void **)&a.is_finalizing = rt_python_sym("Py_IsFinalizing");
	if (!a.is_finalizing)
		*(void **)&a.is_finalizing = rt_python_sym("_Py_IsFinalizing");
	*(void **)&a.add_pending = rt_python_sym("Py_AddPendingCall");
	*(void **)&a.this_tstate = rt_python_sym("PyGILState_GetThisThreadState");
	*(void **)&a.current_tstate = rt_python_sym("PyThreadState_GetUnchecked");
	if (!a.current_tstate)
		*(void **)&a.current_tstate = rt_python_sym("_PyThreadState_UncheckedGet");
	const unsigned long *version = rt_python_sym("Py_Version");
	if (version && *version >= 0x030b0000UL && *version < 0x030c0000UL) {
		*(void **)&a.main_interp = rt_python_sym("PyInterpreterState_Main");
		*(void **)&a.head_interp = rt_python_sym("PyInterpreterState_Head");
		if (!a.main_interp || !a.head_interp)
			a.main_interp = NULL, a.head_interp = NULL;
	}
	*(void **)&a.gc_collect = rt_python_sym("PyGC_Collect");
	*(void **)&a.gc_is_enabled = rt_python_sym("PyGC_IsEnabled");
	*(void **)&a.as_long_long = rt_python_sym("PyLong_AsLongLong");
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
	*(void **)&a.module_dict = rt_python_sym("PyModule_GetDict");
	*(void **)&a.this_interp = rt_python_sym("PyInterpreterState_Get");
	*(void **)&a.first_interp = rt_python_sym("PyInterpreterState_Main");
	a.true_object = rt_python_sym("_Py_TrueStruct");
	*(void **)&a.gil_ensure = rt_python_sym("PyGILState_Ensure");
	*(void **)&a.gil_release = rt_python_sym("PyGILState_Release");
	*(void **)&a.thread_ident = rt_python_sym("PyThread_get_thread_ident");
	*(void **)&a.long_from_ulong = rt_python_sym("PyLong_FromUnsignedLong");
	*(void **)&a.dict_item = rt_python_sym("PyDict_GetItem");
	*(void **)&a.dict_del = rt_python_sym("PyDict_DelItem");
	*(void **)&a.is_instance = rt_python_sym("PyObject_IsInstance");
	*(void **)&a.call_method = rt_python_sym("PyObject_CallMethod");
	*(void **)&a.repr = rt_python_sym("PyObject_Repr");
	*(void **)&a.utf8 = rt_python_sym("PyUnicode_AsUTF8");
	*(void **)&a.setattr = rt_python_sym("PyObject_SetAttrString");
	*(void **)&a.save_thread = rt_python_sym("PyEval_SaveThread");
	*(void **)&a.restore_thread = rt_python_sym("PyEval_RestoreThread");
	*(void **)&a.cfunction_new = rt_python_sym("PyCFunction_NewEx");
	*(void **)&a.at_exit = rt_python_sym("Py_AtExit");
	a.exit_wait = a.cfunction_new && a.at_exit && a.save_thread && a.restore_thread;
	*(void **)&a.check_signals = rt_python_sym("PyErr_CheckSignals");
	a.threads = a.gil_ensure && a.gil_release && a.thread_ident && a.long_from_ulong &&
	            a.dict_item && a.dict_del && a.is_instance && a.call_method;
	if (!a.err_get_raised || !a.err_set_raised)
		a.err_get_raised = NULL, a.err_set_raised = NULL;
	if (!a.is_finalizing || !a.add_pending || !a.gc_collect || !a.as_long_long || !a.modules ||
	    !a.dict_get || !a.getattr || !a.call || !a.is_true || !a.incref || !a.decref ||
	    !a.err_clear || (!a.err_get_raised && (!a.err_fetch || !a.err_restore)) || !a.none) {
		static atomic_bool warned;
		if (!atomic_exchange(&warned, true))
			rt_warn("Python steps off: this interpreter lacks part of the C API");
		atomic_store(&rt_py_state, RT_PY_UNKNOWN);
		return false;
	}
	rt_py = a;
	atomic_store_explicit(&rt_py_state, RT_PY_FOUND, memory_order_release);
	return true;
}

/* --- The steps: everything below until the worker's side runs on a thread that holds the GIL:
 * the interpreter's main thread in the pending call, or the caller of the Python module. */

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

/* On the library's thread, with the GIL: whether it may run the CUDA step itself
 * (rt_python_cuda_off_main), from what the driver said before the GIL and torch.cuda's own
 * `_initialized`, read from its module's dictionary: no code of the program's runs (a
 * torch.cuda function may be the program's own, wait on the program's locks or start threads),
 * and nothing waits on PyTorch's allocator with the GIL held. */
static bool
rt_python_cuda_here(struct rt_cuda_state driver)
{
	if (!rt_py.module_dict || !rt_py.true_object)
		return false;
	rt_pyobj cuda = rt_python_module("torch.cuda");
	if (!cuda)
		return false;
	rt_pyobj dict = rt_py.module_dict(cuda);
	bool initialized = dict && rt_py.dict_get(dict, "_initialized") == rt_py.true_object;
	if (!dict)
		rt_py.err_clear();
	rt_py.decref(cuda);
	if (initialized)
		atomic_store(&rt_py_cuda_seen, true);
	return rt_python_cuda_off_main(initialized, driver.devices, driver.context_active);
}

static enum rt_python_cuda
rt_python_cuda(bool option)
{
	if (!option)
		return rt_python_cuda_step(false, false, false, false);
	rt_pyobj torch = rt_python_module("torch");
	rt_pyobj cuda = torch ? rt_python_module("torch.cuda") : NULL;
	enum rt_python_cuda outcome;
	int initialized = cuda ? rt_python_call_method(cuda, "is_initialized", true) : 0;
	/* A CUDA graph captured on this thread (a pending call between two bytecodes of a
	 * `with torch.cuda.graph()` block): empty_cache()'s calls would invalidate the capture. */
	int capturing = initialized == 1 && !rt_py_thread_self
	                    ? rt_python_call_method(cuda, "is_current_stream_capturing", true)
	                    : 0;
	if (initialized < 0 || capturing < 0)
		outcome = RT_PYTHON_CUDA_ERROR;
	else
		outcome = rt_python_cuda_step(true, cuda != NULL, initialized == 1, capturing == 1);
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

/* The collection, as the program's own gc.collect() would run it; returns what it found, -1
 * when the call raised (the exception is cleared by the caller). */
static int64_t
rt_python_collect(enum rt_python_gc step, rt_pyobj gc)
{
	if (step == RT_PYTHON_GC_C)
		return (int64_t)rt_py.gc_collect();
	rt_pyobj fn = rt_py.getattr(gc, "collect");
	rt_pyobj result = fn ? rt_py.call(fn, NULL) : NULL;
	int64_t found = result ? (int64_t)rt_py.as_long_long(result) : -1;
	if (result)
		rt_py.decref(result);
	if (fn)
		rt_py.decref(fn);
	return found;
}

static void rt_python_hook_exit(void);

/* The steps, on a thread that holds the GIL: a full collection, then the CUDA cache. cuda_here:
 * false on the library's thread where empty_cache() could create a CUDA context on a device the
 * program never used (rt_python_cuda_off_main): the CUDA step is then the main thread's. */
static void
rt_python_steps(struct rt_python_outcome *out, bool cuda_option, bool cuda_here, bool collect)
{
	*out = (struct rt_python_outcome){
	    .plan = RT_PYTHON_RUN, .gc_collected = -1, .cuda = RT_PYTHON_CUDA_SKIPPED};
	bool finalizing = rt_py.is_finalizing() != 0;
	rt_pyobj gc = finalizing ? NULL : rt_python_module("gc");
	/* PyGC_IsEnabled reads the current thread state: only here, with the GIL. */
	bool enabled = rt_py.gc_is_enabled ? rt_py.gc_is_enabled() != 0 : true;
	enum rt_python_gc step = rt_python_gc_step(finalizing, gc != NULL, enabled);
	out->end = rt_python_gc_end(step);
	if (step != RT_PYTHON_GC_FINALIZING) {
		/* The steps may run where an exception is already set (a pending call run from a
		 * C call, a module call inside an except block): keep it exactly as found, and
		 * leave none of ours. */
		rt_pyobj raised = NULL, type = NULL, value = NULL, tb = NULL;
		if (rt_py.err_get_raised)
			raised = rt_py.err_get_raised();
		else
			rt_py.err_fetch(&type, &value, &tb);
		/* Whichever thread takes steps first hooks the exit's wait: a later first request
		 * of the library's thread then finds the program's exit waiting for it. */
		rt_python_hook_exit();
		if (collect && (step == RT_PYTHON_GC_MODULE || step == RT_PYTHON_GC_C))
			out->gc_collected = rt_python_collect(step, gc);
		if (!collect)
			out->end = RT_PYTHON_END_DONE;
		if (rt_python_cuda_runs(step))
			out->cuda = cuda_here     ? rt_python_cuda(cuda_option)
			            : cuda_option ? RT_PYTHON_CUDA_MAIN_ONLY
			                          : RT_PYTHON_CUDA_OFF;
		rt_py.err_clear();
		if (rt_py.err_set_raised)
			rt_py.err_set_raised(raised);
		else
			rt_py.err_restore(type, value, tb);
	}
	if (gc)
		rt_py.decref(gc);
}

/* Publishes the answer of steps that ran in `generation`: false when a finalizer forked during
 * them (in that child the word's generation has moved on, and the answer is nobody's). */
static bool
rt_python_publish(const struct rt_python_outcome *answer, uint32_t generation)
{
	uint32_t word = atomic_load(&rt_py_word), next;
	if (rt_python_word_generation(word) != (generation & RT_PYTHON_GENERATION_MASK))
		return false;
	rt_py_answer = *answer;
	do {
		if (!rt_python_finish(word, generation, &next))
			return false;
	} while (!atomic_compare_exchange_weak(&rt_py_word, &word, next));
	/* The worker releases what the steps freed as soon as it sees the answer. */
	rt_worker_life_wake();
	return true;
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
	if (call == RT_PYTHON_CALL_TAKEN)
		return 0;
	struct rt_python_outcome answer;
	if (call == RT_PYTHON_CALL_CUDA) {
		/* The library's thread collected; the CUDA step is this thread's alone. */
		rt_python_steps(&answer, atomic_load(&rt_py_cuda_option), true, false);
		rt_py_cuda_answer = answer;
		atomic_store(&rt_py_cuda_posted, true);
		rt_worker_life_wake();
		return 0;
	}
	rt_python_steps(&answer, atomic_load(&rt_py_cuda_option), true, true);
	rt_python_publish(&answer, generation);
	return 0;
}

/* --- The library's thread: the steps while the main thread sits in a C call. */

/* The number a Dummy's name took from threading's counter of unnamed threads ("Dummy-N"), or -1.
 */
static long long
rt_python_dummy_number(rt_pyobj entry)
{
	long long number = -1;
	rt_pyobj name = rt_py.getattr(entry, "_name");
	const char *text = name ? rt_py.utf8(name) : NULL;
	char tail;
	if (!text || sscanf(text, "Dummy-%lld%c", &number, &tail) != 1 || number < 1)
		number = -1;
	if (name)
		rt_py.decref(name);
	return number;
}

/* Gives back the number the Dummy took: threading names each unnamed thread from one counter
 * (_counter, the __next__ of an itertools.count), and without the library the program's next
 * unnamed thread would have had it. Only while nobody has drawn from the counter since (it
 * stands at number + 1); then the counter is replaced by one that starts at that number. */
static void
rt_python_give_back_number(rt_pyobj threading, long long number)
{
	char expected[48];
	snprintf(expected, sizeof(expected), "count(%lld)", number + 1);
	rt_pyobj next = rt_py.getattr(threading, "_counter");
	rt_pyobj count = next ? rt_py.getattr(next, "__self__") : NULL;
	rt_pyobj shown = count ? rt_py.repr(count) : NULL;
	const char *text = shown ? rt_py.utf8(shown) : NULL;
	rt_pyobj kind = text && !strcmp(text, expected) ? rt_py.getattr(count, "__class__") : NULL;
	rt_pyobj fresh = kind ? rt_py.call_method(kind, "__call__", "L", number) : NULL;
	rt_pyobj fresh_next = fresh ? rt_py.getattr(fresh, "__next__") : NULL;
	if (fresh_next)
		rt_py.setattr(threading, "_counter", fresh_next);
	rt_pyobj held[] = {fresh_next, fresh, kind, shown, count, next};
	for (size_t i = 0; i < sizeof(held) / sizeof(held[0]); i++)
		if (held[i])
			rt_py.decref(held[i]);
}

/* A dummy of this thread's (or of an earlier thread of ours) that a hold could not remove, with a
 * reference of its own; NULL when none. Read and changed only with the GIL held. */
static rt_pyobj rt_py_left_dummy;

/* threading._active's entry at the calling thread's ident, as a new reference; NULL when
 * there is none, or threading is not imported. Never imports. */
static rt_pyobj
rt_python_active_entry(void)
{
	rt_pyobj threading = rt_python_module("threading");
	if (!threading)
		return NULL;
	rt_pyobj active = rt_py.getattr(threading, "_active");
	rt_pyobj ident = active ? rt_py.long_from_ulong(rt_py.thread_ident()) : NULL;
	rt_pyobj entry = ident ? rt_py.dict_item(active, ident) : NULL;
	if (entry)
		rt_py.incref(entry);
	rt_py.err_clear();
	if (ident)
		rt_py.decref(ident);
	if (active)
		rt_py.decref(active);
	rt_py.decref(threading);
	return entry;
}

/* A finalizer that called threading.current_thread() during the collection made a _DummyThread
 * for this thread and registered it in threading._active for good (CPython never removes a
 * dummy): it goes, in the same hold of the GIL, so that threading.enumerate() and
 * active_count() never list a thread of ours, and the number its name took goes back to
 * threading's counter. Only an entry of this thread's ident that is a dummy; nothing is
 * imported. Only a dummy this thread made: one that was there before its hold (`before`, the
 * entry at its ident right after PyGILState_Ensure) is the program's, whose thread ended and
 * left its pthread_t, and so its ident, to ours (glibc reuses stacks); it stays. threading
 * changes _active under _active_limbo_lock, which a thread of the program's may hold while it
 * gave the GIL up: taken without waiting (acquire(0)); when busy, the entry stays until the
 * next hold of the GIL, which knows it for ours (rt_py_left_dummy). */
static void
rt_python_forget_dummy(rt_pyobj before)
{
	rt_pyobj threading = rt_python_module("threading");
	if (!threading)
		return;
	rt_pyobj active = rt_py.getattr(threading, "_active");
	rt_pyobj dummy = active ? rt_py.getattr(threading, "_DummyThread") : NULL;
	rt_pyobj lock = dummy ? rt_py.getattr(threading, "_active_limbo_lock") : NULL;
	rt_pyobj ident = lock ? rt_py.long_from_ulong(rt_py.thread_ident()) : NULL;
	rt_pyobj entry = ident ? rt_py.dict_item(active, ident) : NULL;
	if (entry && (entry != before || entry == rt_py_left_dummy) &&
	    rt_py.is_instance(entry, dummy) == 1) {
		rt_py.incref(entry);
		rt_pyobj took = rt_py.call_method(lock, "acquire", "i", 0);
		bool removed = took && rt_py.is_true(took) == 1;
		if (rt_py_left_dummy && (removed || rt_py_left_dummy != entry)) {
			rt_py.decref(rt_py_left_dummy);
			rt_py_left_dummy = NULL;
		}
		if (!removed && !rt_py_left_dummy) {
			rt_py.incref(entry);
			rt_py_left_dummy = entry;
		}
		if (removed) {
			rt_py.dict_del(active, ident);
			rt_pyobj released = rt_py.call_method(lock, "release", NULL);
			if (released)
				rt_py.decref(released);
			long long number = rt_py.utf8 ? rt_python_dummy_number(entry) : -1;
			if (number > 0 && rt_py.repr && rt_py.setattr)
				rt_python_give_back_number(threading, number);
		}
		if (took)
			rt_py.decref(took);
		rt_py.decref(entry);
	}
	rt_py.err_clear();
	if (ident)
		rt_py.decref(ident);
	if (lock)
		rt_py.decref(lock);
	if (dummy)
		rt_py.decref(dummy);
	if (active)
		rt_py.decref(active);
	rt_py.decref(threading);
}

/* The program's exit waits for the library's thread's steps in progress before CPython begins to
 * finalise: CPython ends that thread where it asks for the GIL back once finalisation has begun,
 * and a program lock that a finalizer it runs holds then (a logging handler's around a write that
 * let the GIL go) would stay held for ever, and exit-time code that takes it would hang. A
 * callback of the library's in threading's exit calls (threading._register_atexit: the first
 * thing CPython's finalisation runs, from threading._shutdown, before it joins the program's
 * threads and runs atexit's callbacks), registered at the thread's first steps (it takes steps
 * only once the program has imported threading; threading._threading_atexits then holds one
 * entry more), ends the thread's steps: none starts after it, and it waits, the GIL let go, for
 * the one in progress, as long as the collection it runs, bounded (a finalizer may wait on
 * something the exiting thread holds). */
#define RT_PY_EXIT_WAIT_S 10
/* The wait takes the GIL back this often to run the program's signal handlers (a Ctrl-C at
 * exit): as often as CPython's own waits in the main thread look (a join's, a sleep's), at
 * most. A signal that the main thread itself takes ends the slice at once. */
#define RT_PY_EXIT_SLICE_US 50000u
#define RT_PY_METH_NOARGS 0x0004
/* Set by the exit wait; no request takes the GIL after it (the interpreter may be torn down
 * under a thread that has passed the last check before the GIL), and one that had its GIL
 * request in before leaves its request. The three flags belong to the interpreter up now and
 * are cleared when its Py_FinalizeEx is over (rt_python_exit_over), so that an embedder's next
 * one, started before the worker sees Python down, starts clean. */
static atomic_bool rt_py_exiting;
/* The exit wait is in this interpreter's threading (rt_python_hook_exit). */
static atomic_bool rt_py_exit_hooked;
/* rt_python_exit_over is registered for this interpreter (one of CPython's 32 Py_AtExit places:
 * once an interpreter, however often a hook fails after it). */
static atomic_bool rt_py_exit_over_armed;

/* CPython's PyMethodDef, whose layout is part of its stable ABI. */
struct rt_py_method_def {
	const char *name;
	rt_pyobj (*meth)(rt_pyobj, rt_pyobj);
	int flags;
	const char *doc;
};

/* threading._shutdown calls it on the thread that finalises, holding the GIL. Between slices
 * it runs the program's signal handlers, as the program's own exit steps would (a join, a
 * sleep): a handler that raises (Ctrl-C's KeyboardInterrupt) ends the wait, and its exception
 * leaves through threading._shutdown as it would from the program's own join there. */
static rt_pyobj
rt_python_exit_wait(rt_pyobj self, rt_pyobj unused)
{
	(void)self, (void)unused;
	atomic_store(&rt_py_exiting, true);
	if (rt_py_thread_self)
		goto label_return;
	uint64_t start = rt_python_now_us(), bound = (uint64_t)RT_PY_EXIT_WAIT_S * 1000000u;
	for (unsigned busy; (busy = atomic_load(&rt_py_thread_busy)) > 0;) {
		uint64_t waited = rt_python_now_us() - start;
		if (waited >= bound)
			break;
		uint64_t us =
		    bound - waited < RT_PY_EXIT_SLICE_US ? bound - waited : RT_PY_EXIT_SLICE_US;
		struct timespec slice = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L};
		void *state = rt_py.save_thread();
		syscall(SYS_futex, &rt_py_thread_busy, FUTEX_WAIT_PRIVATE, busy, &slice, NULL, 0);
		rt_py.restore_thread(state);
		if (atomic_load(&rt_py_thread_busy) > 0 && rt_py.check_signals &&
		    rt_py.check_signals() < 0)
			return NULL;
	}
label_return:
	rt_py.incref(rt_py.none);
	return rt_py.none;
}

static struct rt_py_method_def rt_py_exit_def = {"roundtrim_exit", rt_python_exit_wait,
                                                 RT_PY_METH_NOARGS, NULL};

/* Py_AtExit's callback: Py_FinalizeEx runs it last, after the interpreter and its thread states
 * are gone, with no GIL and no Python API callable; Py_IsInitialized() is false from before it
 * until the next Py_Initialize. */
static void
rt_python_exit_over(void)
{
	atomic_store(&rt_py_exiting, false);
	atomic_store(&rt_py_exit_hooked, false);
	atomic_store(&rt_py_exit_over_armed, false);
}

/* On a thread that holds the GIL, at the steps (and on the library's thread at a request it may
 * claim), until it took: Py_AtExit(the end of the exit), which clears the exit begun, first, so
 * that no wait is hooked where the exit could not be cleared after it (CPython keeps 32 such
 * callbacks: where the program took them all, the interpreter's exit gets no wait); then
 * threading._register_atexit(the wait). Nothing is imported: without threading there is no
 * wait to hook yet (the library's thread takes no steps then), and the next steps try again. */
static void
rt_python_hook_exit(void)
{
	/* Nothing to wait for where the library's thread takes no steps (ROUNDTRIM_PYTHON=main);
	 * and only the main interpreter's exit is the program's: a subinterpreter's end runs its
	 * own threading's exit calls, and a thread it started must not hook the process's. */
	if (!rt_py.exit_wait || atomic_load(&rt_py_exit_hooked) ||
	    !atomic_load(&rt_py_thread_wanted))
		return;
	if (!rt_py.this_interp || !rt_py.first_interp ||
	    rt_py.this_interp() != rt_py.first_interp())
		return;
	if (!atomic_load(&rt_py_exit_over_armed)) {
		if (rt_py.at_exit(rt_python_exit_over) != 0)
			return;
		atomic_store(&rt_py_exit_over_armed, true);
	}
	rt_pyobj threading = rt_python_module("threading");
	rt_pyobj fn = threading ? rt_py.cfunction_new(&rt_py_exit_def, NULL, NULL) : NULL;
	rt_pyobj done = fn ? rt_py.call_method(threading, "_register_atexit", "O", fn) : NULL;
	if (done) {
		rt_py.decref(done);
		atomic_store(&rt_py_exit_hooked, true);
	} else if (fn) {
		rt_py.err_clear();
		/* Refused once threading._shutdown has begun: the exit is under way, and no step of
		 * the library's thread may start in it (a collection there can hang the exit). */
		rt_pyobj down = rt_py.getattr(threading, "_SHUTTING_DOWN");
		if (down && down == rt_py.true_object)
			atomic_store(&rt_py_exiting, true);
		if (down)
			rt_py.decref(down);
		rt_py.err_clear();
	} else
		rt_py.err_clear();
	if (fn)
		rt_py.decref(fn);
	if (threading)
		rt_py.decref(threading);
}

/* The library's thread no longer counts as out on a request, if it did: not in a fork child
 * made during the steps, whose count starts again from none (rt_python_forget_parent). */
static void
rt_python_thread_unbusy(void)
{
	if (rt_py_thread_in_take) {
		rt_py_thread_in_take = false;
		atomic_fetch_sub(&rt_py_thread_busy, 1);
		/* The exit's wait (rt_python_exit_wait) sleeps on it. */
		syscall(SYS_futex, &rt_py_thread_busy, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	}
}

/* One request, on the library's thread: the GIL, the claim, the steps, the GIL given back. It
 * holds no lock of the library's at any point, so that CPython may end the thread (pthread_exit
 * inside PyGILState_Ensure, once the interpreter finalises) or the process may exit around it at
 * any step. Its thread state is CPython's automatic one: PyGILState_Release deletes it, so
 * nothing of it outlives the round (a faulthandler dump, sys._current_frames()). A thread sent
 * away while it waited for the GIL (the library stood down, a program thread needs it gone)
 * claims nothing and runs no step. */
static bool
rt_python_take(uint32_t generation, uint32_t thread_gen)
{
	/* The driver is asked without the GIL (its calls never hold up the program's threads),
	 * and only once torch was seen to use CUDA in this process: never in a fork child that
	 * has not, nor in a program without torch's CUDA. The first such request leaves the step
	 * to the main thread. */
	struct rt_cuda_state driver = {.devices = -1};
	if (atomic_load(&rt_py_cuda_waiting) && atomic_load(&rt_py_cuda_seen) &&
	    !atomic_load(&rt_py_exiting) && rt_py.is_initialized() && !rt_py.is_finalizing())
		driver = rt_cuda_read();
	/* Asked last thing before the GIL: finalisation only narrows from here (facts: CPython
	 * then ends a thread that asks for the GIL; this thread has nothing to undo). Declined,
	 * the thread stands down for good, as if CPython had ended it: no later round may send
	 * it again through a finalisation (or an embedder's Py_Finalize) that never ends. An exit
	 * begun is a reason too: once the exit wait has run, Py_FinalizeEx may tear the thread
	 * states down between this check and the GIL's request (PyGILState_Ensure then crashes in
	 * PyThreadState_New), and a finished interpreter's mark is cleared by its own end
	 * (rt_python_exit_over). */
	if (!rt_py.is_initialized() || rt_py.is_finalizing() || atomic_load(&rt_py_exiting)) {
		rt_python_thread_unbusy();
		return false;
	}
	rt_py_thread_in_ensure = true;
	atomic_fetch_add(&rt_py_thread_asking, 1);
	int gil = rt_py.gil_ensure();
	atomic_fetch_sub(&rt_py_thread_asking, 1);
	rt_py_thread_in_ensure = false;
	if (rt_py.this_tstate)
		atomic_store(&rt_py_thread_tstate, rt_py.this_tstate());
	rt_pyobj before = rt_python_active_entry();
	bool cuda = atomic_load(&rt_py_cuda_option);
	uint32_t word = atomic_load(&rt_py_word), next;
	bool cuda_here = false;
	if (!atomic_load(&rt_py_exiting) && rt_python_claim(word, generation, false, &next)) {
		/* A request it may claim: the exit's wait is hooked first (a refusal, threading's
		 * shutdown begun, marks the exit begun, and the thread leaves). The hook runs
		 * threading's Python code, during which the GIL may pass to the main thread: the
		 * word and the exit are read again after it. */
		rt_python_hook_exit();
		cuda_here = cuda && atomic_load(&rt_py_cuda_waiting) && rt_python_cuda_here(driver);
		word = atomic_load(&rt_py_word);
	}
	bool claimed = false;
	/* Read again with the GIL: the exit wait, which sets it holding the GIL, may have run
	 * while this thread waited for it. */
	bool exit_begun = atomic_load(&rt_py_exiting);
	/* A module that imports threading for the first time (a finalizer that logs) would make
	 * this thread threading's main thread, and the program's own a Dummy (asyncio's
	 * get_event_loop() then fails there): until the program has imported it, the steps are
	 * the main thread's, through its pending call. */
	rt_pyobj threading = rt_python_module("threading");
	if (threading)
		rt_py.decref(threading);
	/* The program began to exit: no steps start, and the thread, left where it is (its end
	 * would run its thread-local destructors beside exit's static ones), is not sent again
	 * for the request: the next round, if one comes before the exit ends, asks once more.
	 * Only a request it would have claimed: one the main thread answered while this thread
	 * waited for the GIL is no longer there to leave. */
	bool leave = !threading || exit_begun;
	bool owed = cuda && !cuda_here;
	if (leave && atomic_load(&rt_py_thread_gen) == thread_gen &&
	    rt_python_claim(word, generation, owed, &next))
		atomic_store(&rt_py_thread_declined, true);
	if (!leave && atomic_load(&rt_py_thread_gen) == thread_gen)
		while ((claimed = rt_python_claim(word, generation, owed, &next)) &&
		       !atomic_compare_exchange_weak(&rt_py_word, &word, next)) {
		}
	struct rt_python_outcome answer;
	if (claimed) {
		rt_py_thread_claimed = generation + 1;
		rt_python_steps(&answer, cuda, cuda_here, true);
	}
	/* Also when the main thread took the steps: a dummy an earlier hold left goes now. */
	rt_python_forget_dummy(before);
	if (before)
		rt_py.decref(before);
	atomic_store(&rt_py_thread_tstate, NULL);
	rt_py.gil_release(gil);
	/* It needs the GIL no more: a program thread that holds it may wait for its end. */
	rt_python_thread_unbusy();
	if (claimed)
		rt_python_publish(&answer, generation);
	rt_py_thread_claimed = 0;
	return true;
}

/* The end of the library's thread of generation gen (counted: it stops being a task). */
static void
rt_python_thread_ends(uint32_t gen, bool counted)
{
	if (rt_py_thread_in_ensure)
		atomic_fetch_sub(&rt_py_thread_asking, 1);
	if (rt_py_thread_in_take) {
		/* Ended inside its hold (CPython's pthread_exit when it took the GIL back from a
		 * finalizer at finalisation): its thread state is no proof of anything any more. */
		atomic_store(&rt_py_thread_tstate, NULL);
		atomic_fetch_sub(&rt_py_thread_busy, 1);
		syscall(SYS_futex, &rt_py_thread_busy, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	}
	rt_py_thread_in_ensure = false;
	rt_py_thread_in_take = false;
	/* Once only: after a park, another thread of the same generation may run already. */
	bool current = !rt_py_thread_stopped && atomic_load(&rt_py_thread_gen) == gen;
	rt_py_thread_stopped = true;
	if (current)
		atomic_store(&rt_py_thread_runs, false);
	if (counted) {
		/* Just before glibc ends the task, never after: the worker takes the process for
		 * ended when it sees no task beyond those the library counts (rt_worker_alone).
		 * Who waits for the end waits for the kernel's release of the task as well
		 * (rt_python_thread_await). */
		atomic_store(&rt_py_thread_leaving_tid, gettid());
		rt_py_thread_counted_out = true;
		atomic_fetch_sub(&rt_py_thread_tasks, 1);
		syscall(SYS_futex, &rt_py_thread_tasks, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	}
	/* Nothing of it is left to wait for: the worker may start the next one. */
	if (!current)
		rt_worker_life_wake();
}

/* The thread's exit by a return from its start routine, CPython's pthread_exit included
 * (rt_python_thread_park). A thread still counted after that would make the worker count a task
 * that is gone, and take the program's last thread for gone while the main thread finalises.
 * arg: its generation. */
static void
rt_python_thread_gone(void *arg)
{
	rt_python_thread_ends((uint32_t)(uintptr_t)arg, true);
}

/* CPython ended the thread (pthread_exit where it asked for the GIL back once finalisation had
 * begun). No unwind through the frames above: a C++ destructor among them (pybind11's
 * gil_scoped_release around a PyTorch op) is noexcept, and std::terminate would end the
 * program. The thread stays as it is, a task of the library's, every signal blocked, until a
 * program thread needs it gone (rt_python_thread_make_room: an embedder that goes on after
 * Py_FinalizeEx must not see its setns(CLONE_NEWNS) or unshare fail for a task sharing its
 * filesystem context) or the worker sends it away once a new interpreter is up. Never merely
 * because Python went down: that is where the process exits, and its end would run its
 * thread-local destructors (C++ thread_locals, pthread keys) beside exit's static ones, which
 * may already have destroyed what they use. Then it
 * jumps back to its start routine, skipping those frames as CPython 3.14 leaves a thread that
 * hangs there (nothing of them runs again: what they hold stays held, as it would while
 * parked), and returns from it: glibc's own end of a thread, which counts the process's live
 * threads (a raw exit system call would skip that count, and a program whose main thread
 * called pthread_exit would then never get glibc's exit(0), its atexit handlers and stdio
 * flush, once its last thread ends), gives the stack back to glibc's cache (after
 * rt_stack_trim) and lets the kernel release the task. A second call, from a destructor that
 * glibc's end of the thread runs, parks for good, counted again among the library's tasks (a
 * program whose main thread called pthread_exit would else never get its exit(0)). */
_Noreturn void
rt_python_thread_park(void)
{
	static _Atomic uint32_t never;
	jmp_buf *entry = rt_py_thread_entry;
	rt_py_thread_entry = NULL;
	/* Still a task of the process, and one of the library's, until it is gone: the worker's
	 * count of the program's threads stays right. */
	rt_python_thread_ends(rt_py_thread_my_gen, false);
	/* Steps it had claimed are over: answered, so that the word does not stay claimed for
	 * good (an embedder's next interpreter would get no steps at all). */
	if (rt_py_thread_claimed) {
		struct rt_python_outcome answer = {.plan = RT_PYTHON_RUN,
		                                   .end = RT_PYTHON_END_FINALIZING,
		                                   .gc_collected = -1,
		                                   .cuda = RT_PYTHON_CUDA_SKIPPED};
		rt_python_publish(&answer, rt_py_thread_claimed - 1);
		rt_py_thread_claimed = 0;
	}
	if (!entry && rt_py_thread_counted_out) {
		rt_py_thread_counted_out = false;
		atomic_fetch_add(&rt_py_thread_stuck, 1);
	}
	if (!entry)
		for (;;)
			syscall(SYS_futex, &never, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	/* Read before it counts as parked: a bump after the worker saw it parked ends it. */
	uint32_t unparks = atomic_load(&rt_py_thread_unparks);
	atomic_fetch_add(&rt_py_thread_parked, 1);
	for (;;) {
		uint32_t now = atomic_load(&rt_py_thread_unparks);
		if (atomic_load(&rt_py_thread_gen) != rt_py_thread_my_gen || now != unparks)
			break;
		syscall(SYS_futex, &rt_py_thread_unparks, FUTEX_WAIT_PRIVATE, now, NULL, NULL, 0);
	}
	atomic_fetch_sub(&rt_py_thread_parked, 1);
	longjmp(*entry, 1);
}

/* The thread's loop: sleeps on a futex until the worker sends it to a request, or away. */
static void
rt_python_thread_serve(uint32_t gen, const struct rt_stack *stack)
{
	/* As its starter saw it: an ask sent while it was being created is one. */
	uint32_t seen = atomic_load(&rt_py_thread_first_seen);
	while (atomic_load(&rt_py_thread_gen) == gen) {
		uint32_t asks = atomic_load(&rt_py_thread_asks);
		if (asks == seen) {
			syscall(SYS_futex, &rt_py_thread_asks, FUTEX_WAIT_PRIVATE, seen, NULL, NULL,
			        0);
			continue;
		}
		seen = asks;
		/* Declined: `out` stays set, so that the worker never sends it again. */
		atomic_fetch_add(&rt_py_thread_busy, 1);
		rt_py_thread_in_take = true;
		bool taken =
		    rt_python_take(rt_python_word_generation(atomic_load(&rt_py_word)), gen);
		if (!taken)
			return;
		if (atomic_load(&rt_py_thread_gen) != gen)
			return;
		/* Before the worker looks again, for what the steps freed: a collection's
		 * finalizers can go deep, and the pages they touched are the library's now. */
		rt_stack_trim(stack);
		atomic_store(&rt_py_thread_out, false);
		/* The worker may have a request waiting for the thread: it looks again now. */
		rt_worker_life_wake();
	}
}

/* One thread fewer is being started (it runs, or failed to start): wakes a program thread that
 * waits for its end (rt_python_thread_await). */
static void
rt_python_started_one(void)
{
	atomic_fetch_sub(&rt_py_thread_starting, 1);
	syscall(SYS_futex, &rt_py_thread_starting, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* The stack size of the library's thread: as large as the program's own threads get by default
 * (glibc's default follows RLIMIT_STACK: a program that raised `ulimit -s` and its recursion
 * limit recurses deeper in a finalizer), and never under RT_PY_THREAD_STACK. */
static _Atomic size_t rt_py_thread_stack_bytes;

static size_t
rt_python_thread_stack_size(void)
{
	size_t size = 0;
	pthread_attr_t attr;
	if (pthread_getattr_default_np(&attr) == 0) {
		pthread_attr_getstacksize(&attr, &size);
		pthread_attr_destroy(&attr);
	}
	return size > RT_PY_THREAD_STACK ? size : RT_PY_THREAD_STACK;
}

/* The library's thread: started by the interpreter's main thread, so that it shares the
 * program's descriptor table (the worker's holds only the library's files, and a finalizer that
 * writes to stdout must find the program's) and its filesystem context (a finalizer may open a
 * relative path). Detached, every signal blocked, never joined; waited for only by a program
 * thread that sent it away and needs it gone (rt_python_thread_await), never at exit. */
static void *
rt_python_thread(void *arg)
{
	uint32_t gen = (uint32_t)(uintptr_t)arg;
	struct rt_stack stack;
	rt_stack_mark(&stack, atomic_load(&rt_py_thread_stack_bytes));
	rt_py_thread_self = true;
	rt_py_thread_my_gen = gen;
	/* Counted among the library's tasks only once it is one: the worker ends the process when
	 * the program's threads are gone, from a count of the tasks that remain. */
	atomic_fetch_add(&rt_py_thread_tasks, 1);
	rt_python_started_one();
	atomic_store(&rt_py_thread_tid, gettid());
	jmp_buf entry;
	pthread_cleanup_push(rt_python_thread_gone, arg);
	if (setjmp(entry) == 0) {
		rt_py_thread_entry = &entry;
		rt_python_thread_serve(gen, &stack);
		rt_py_thread_entry = NULL;
	} else {
		/* Back from rt_python_thread_park: whatever CPython's frames touched goes. */
		rt_stack_trim(&stack);
	}
	pthread_cleanup_pop(1);
	return NULL;
}

/* Starts the thread of generation gen from the calling program thread, whose descriptor table
 * and file system context it will share: unless another runs or is on its way, a program
 * thread holds it back, or the generation has moved on (it was sent away meanwhile). */
static void
rt_python_thread_create(uint32_t gen)
{
	/* Counted before the generation is checked: a program thread that sends the thread away
	 * meanwhile waits for this one too. */
	atomic_fetch_add(&rt_py_thread_starting, 1);
	bool runs = false;
	if (atomic_load(&rt_py_thread_gen) != gen || !atomic_load(&rt_py_thread_wanted) ||
	    atomic_load(&rt_py_thread_holds) > 0 ||
	    atomic_compare_exchange_strong(&rt_py_thread_runs, &runs, true) == false) {
		rt_python_started_one();
		return;
	}
	pthread_attr_t attr;
	pthread_t thread;
	sigset_t all, old;
	sigfillset(&all);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* The size the thread marks its stack's floor by: 0 (no floor) if the size was refused. */
	size_t stack_bytes = rt_python_thread_stack_size();
	atomic_store(&rt_py_thread_stack_bytes,
	             pthread_attr_setstacksize(&attr, stack_bytes) == 0 ? stack_bytes : 0);
	atomic_store(&rt_py_thread_out, false);
	atomic_store(&rt_py_thread_first_seen, atomic_load(&rt_py_thread_asks));
	atomic_store(&rt_py_anchor_tid, gettid());
	int saved_errno = errno;
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int err = rt_tasks_create_thread(&thread, &attr, rt_python_thread, (void *)(uintptr_t)gen);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	errno = saved_errno;
	if (err != 0) {
		rt_python_started_one();
		atomic_store(&rt_py_thread_wanted, false);
		atomic_store(&rt_py_thread_runs, false);
		rt_warn("Python steps wait for the main thread: cannot start a thread: %s",
		        strerror(err));
	}
}

/* The pending call that starts the thread, on the interpreter's main thread. arg: the
 * generation it was queued for; an older one (the thread was sent away meanwhile, or this is a
 * fork child's copy of its parent's queue) does nothing. Returns 0 always (rt_python_pending). */
static int
rt_python_start_call(void *arg)
{
	uint32_t gen = (uint32_t)(uintptr_t)arg, queued = gen + 1;
	if (atomic_compare_exchange_strong(&rt_py_start_queued, &queued, 0))
		rt_python_thread_create(gen);
	return 0;
}

/* Whether the C API is the executable's own (a python3 linked statically with its interpreter,
 * as Debian's, conda's and python.org's default builds are), not a shared libpython's (gdb, vim,
 * an embedder, a python3 built with --enable-shared): the executable is the interpreter, which
 * initializes Python before anything of the program's runs. */
static bool
rt_python_in_executable(void)
{
	Dl_info info;
	struct link_map *map = NULL;
	return dladdr1(*(void **)&rt_py.is_initialized, &info, (void **)&map, RTLD_DL_LINKMAP) &&
	       map && !map->l_prev;
}

/* Worker, at each look: queues the start call when it is due. Returns how long the worker may
 * wait before it looks again for it (UINT64_MAX: no need). */
static uint64_t
rt_python_start(uint64_t now)
{
	bool found = atomic_load_explicit(&rt_py_state, memory_order_acquire) == RT_PY_FOUND;
	uint32_t gen = atomic_load(&rt_py_thread_gen);
	struct rt_python_start_readings r = {
	    .wanted = found && atomic_load(&rt_py_thread_wanted),
	    .runs = atomic_load(&rt_py_thread_runs),
	    .queued = atomic_load(&rt_py_start_queued) == gen + 1,
	    .held = atomic_load(&rt_py_thread_holds) > 0,
	    .watched_us = now - rt_py_want_us,
	};
	if (r.wanted) {
		r.initialized = rt_py.is_initialized() != 0;
		r.finalizing = r.initialized && rt_py.is_finalizing() != 0;
	}
	switch (rt_python_start_due(&r)) {
	case RT_PYTHON_START_QUEUE:
		atomic_store(&rt_py_start_queued, gen + 1);
		if (rt_py.add_pending(rt_python_start_call, (void *)(uintptr_t)gen) == 0)
			return UINT64_MAX;
		/* CPython's queue is full: again soon. */
		atomic_store(&rt_py_start_queued, 0);
		return RT_PYTHON_START_LOOK_US;
	case RT_PYTHON_START_WATCH:
		return RT_PYTHON_START_LOOK_US;
	case RT_PYTHON_START_NONE:
		break;
	}
	return UINT64_MAX;
}

void
rt_python_thread_want(const struct rt_config *cfg)
{
	/* Only where the steps may leave the main thread and the process exports the C API (a
	 * library loaded later keeps them on the main thread). */
	bool want = cfg->python && !cfg->python_main_only && rt_python_resolve() && rt_py.threads;
	rt_py_want_us = rt_python_now_us();
	atomic_store(&rt_py_thread_wanted, want);
	/* The interpreter's own executable starts it now, from the thread that starts the library
	 * (its main thread, at start-up): a main thread that blocks in a C call as soon as its
	 * script starts (join() on its worker threads) would otherwise never run the start call. */
	if (want && rt_python_in_executable())
		rt_python_thread_create(atomic_load(&rt_py_thread_gen));
}

unsigned
rt_python_thread_needed(const struct rt_config *cfg)
{
	return cfg->python && !cfg->python_main_only && rt_python_resolve() && rt_py.threads ? 1u
	                                                                                     : 0u;
}

bool
rt_python_thread_is_self(void)
{
	return rt_py_thread_self;
}

unsigned
rt_python_thread_held(void)
{
	return atomic_load(&rt_py_thread_tasks) + atomic_load(&rt_py_thread_stuck);
}

/* Sends the current thread away: it leaves at once when idle, else after its request, without
 * running it when it has not the GIL yet. */
static void
rt_python_thread_send_away(void)
{
	atomic_fetch_add(&rt_py_thread_gen, 1);
	atomic_store(&rt_py_thread_runs, false);
	atomic_store(&rt_py_thread_out, false);
	atomic_fetch_add(&rt_py_thread_asks, 1);
	syscall(SYS_futex, &rt_py_thread_asks, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	syscall(SYS_futex, &rt_py_thread_unparks, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Ends the threads CPython ended (parked), and those only: they cannot serve. */
static void
rt_python_thread_unpark(void)
{
	atomic_fetch_add(&rt_py_thread_unparks, 1);
	syscall(SYS_futex, &rt_py_thread_unparks, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

void
rt_python_thread_stop(void)
{
	atomic_store(&rt_py_thread_wanted, false);
	rt_python_thread_send_away();
}

/* Whether the calling thread holds the GIL, once the C API is found: its own thread state
 * (none where it never had one) is the one that holds it. False where CPython cannot say. */
static bool
rt_python_gil_held(void)
{
	if (!rt_py.this_tstate || !rt_py.current_tstate)
		return false;
	void *mine = rt_py.this_tstate();
	return mine && mine == rt_py.current_tstate();
}

/* Whether the calling thread may hold the GIL: any answer but a clear no (a thread that holds
 * it must never wait for one of ours that needs it). */
static bool
rt_python_gil_maybe_held(void)
{
	return atomic_load_explicit(&rt_py_state, memory_order_acquire) != RT_PY_FOUND ||
	       !rt_py.this_tstate || !rt_py.current_tstate || rt_python_gil_held();
}

/* Whether the calling thread provably does not hold the GIL (rt_python_gil_proven_free). */
static bool
rt_python_gil_free(void *first)
{
	/* Interpreters join the list at its head; the main one, the first, stays at its tail. */
	void *main = rt_py.main_interp ? rt_py.main_interp() : NULL;
	bool shared = main && rt_py.head_interp() == main;
	return rt_python_gil_proven_free(rt_py.current_tstate(), first,
	                                 atomic_load(&rt_py_thread_tstate), rt_py.this_tstate(),
	                                 shared);
}

static void
rt_python_deadline(const struct timespec *from, time_t s, long ns, struct timespec *deadline)
{
	deadline->tv_sec = from->tv_sec + s;
	deadline->tv_nsec = from->tv_nsec + ns;
	if (deadline->tv_nsec >= 1000000000L) {
		deadline->tv_sec++;
		deadline->tv_nsec -= 1000000000L;
	}
}

bool
rt_python_thread_await(void)
{
	if (rt_py_thread_self)
		return false;
	struct timespec start, deadline;
	clock_gettime(CLOCK_MONOTONIC, &start);
	rt_python_deadline(&start, 0, RT_PY_THREAD_LEAVE_WAIT_NS, &deadline);
	/* Taken for held: the caller's own state is the current one, or CPython cannot say. */
	bool held = rt_python_gil_maybe_held(), without = false;
	void *first = held ? NULL : rt_py.current_tstate();
	for (;;) {
		/* In this order: a thread counts itself a task before it stops counting as being
		 * started. */
		uint32_t starting = atomic_load(&rt_py_thread_starting);
		uint32_t tasks = atomic_load(&rt_py_thread_tasks);
		if (tasks == 0 && starting == 0)
			break;
		/* A caller without the GIL waits for the steps' end: they need nothing it holds,
		 * but for a lock its Python code may hold (a finalizer's), hence the bound. */
		if (!held && !without && rt_python_gil_free(first)) {
			without = true;
			rt_python_deadline(&start, RT_PY_THREAD_STEPS_WAIT_S, 0, &deadline);
		}
		/* One out on its steps needs the GIL to end, and the caller holds it: it is left to
		 * leave by itself, running nothing more once it has the GIL back. */
		if (held && atomic_load(&rt_py_thread_busy) > 0)
			return false;
		struct timespec now, slice = {0, 1000000};
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > deadline.tv_sec ||
		    (now.tv_sec == deadline.tv_sec && now.tv_nsec >= deadline.tv_nsec))
			return false;
		if (tasks)
			syscall(SYS_futex, &rt_py_thread_tasks, FUTEX_WAIT_PRIVATE, tasks, &slice,
			        NULL, 0);
		else
			syscall(SYS_futex, &rt_py_thread_starting, FUTEX_WAIT_PRIVATE, starting,
			        &slice, NULL, 0);
	}
	/* Its tid is cleared before the kernel releases the task and its filesystem context; the
	 * last one to end may not be the last started (one CPython ended, long after). Once
	 * released, that one is forgotten: its number may go to a thread of the program's. */
	pid_t tid = atomic_load(&rt_py_thread_tid);
	int leaving = atomic_load(&rt_py_thread_leaving_tid);
	bool gone = (!tid || rt_proc_await_release_until(tid, &deadline)) &&
	            (!leaving || leaving == tid || rt_proc_await_release_until(leaving, &deadline));
	if (gone && leaving)
		atomic_compare_exchange_strong(&rt_py_thread_leaving_tid, &leaving, 0);
	return gone;
}

bool
rt_python_thread_make_room(void)
{
	if (atomic_load(&rt_py_thread_starting) == 0 && atomic_load(&rt_py_thread_tasks) == 0)
		return false;
	int saved_errno = errno;
	atomic_fetch_add(&rt_py_thread_holds, 1);
	rt_python_thread_send_away();
	bool gone = rt_python_thread_await();
	if (!gone)
		atomic_fetch_sub(&rt_py_thread_holds, 1);
	errno = saved_errno;
	return gone;
}

void
rt_python_thread_room_made(void)
{
	atomic_fetch_sub(&rt_py_thread_holds, 1);
	rt_worker_life_wake();
}

void
rt_python_thread_follow(void)
{
	/* Its context is the one the caller had: a new thread, started by the main thread, will
	 * share the one it has now. */
	if (atomic_load(&rt_py_thread_runs) && atomic_load(&rt_py_anchor_tid) == gettid()) {
		rt_python_thread_send_away();
		rt_worker_life_wake();
	}
}

/* --- The worker's side. */

static struct rt_python_readings
rt_python_read(const struct rt_config *cfg)
{
	struct rt_python_readings r = {.enabled = cfg->python, .found = rt_python_resolve()};
	if (r.found) {
		r.initialized = rt_py.is_initialized() != 0;
		r.finalizing = rt_py.is_finalizing() != 0;
	}
	return r;
}

static void
rt_python_not_run(enum rt_python_plan plan, enum rt_python_end end, struct rt_python_outcome *out)
{
	*out = (struct rt_python_outcome){
	    .plan = plan, .end = end, .gc_collected = -1, .cuda = RT_PYTHON_CUDA_SKIPPED};
}

void
rt_python_hand_off(const struct rt_config *cfg, uint64_t round, struct rt_python_outcome *out)
{
	struct rt_python_readings r = rt_python_read(cfg);
	enum rt_python_plan plan = rt_python_plan(&r);
	if (plan != RT_PYTHON_RUN) {
		rt_python_not_run(plan, RT_PYTHON_END_DONE, out);
		return;
	}
	atomic_store(&rt_py_cuda_option, cfg->cuda_empty_cache);
	atomic_store(&rt_py_cuda_waiting, cfg->cuda_waiting);
	rt_py_main_only = cfg->python_main_only || !atomic_load(&rt_py_thread_wanted);
	uint32_t word = atomic_load(&rt_py_word), next = 0;
	enum rt_python_ask ask;
	do {
		ask = rt_python_ask(word, &next);
	} while ((ask == RT_PYTHON_ASK_ADD || ask == RT_PYTHON_ASK_ARM) &&
	         !atomic_compare_exchange_weak(&rt_py_word, &word, next));
	enum rt_python_end end = RT_PYTHON_END_PENDING;
	if (ask == RT_PYTHON_ASK_BUSY) {
		end = RT_PYTHON_END_BUSY;
	} else {
		/* The library's thread looks again whether the program has imported threading: a
		 * request it left to a main thread that never came back would else keep every
		 * later round's steps waiting for that main thread. */
		atomic_store(&rt_py_thread_declined, false);
		rt_py_round = round;
		if (ask != RT_PYTHON_ASK_JOIN)
			rt_py_armed_us = rt_python_now_us();
		uint32_t generation = rt_python_word_generation(next);
		if (ask == RT_PYTHON_ASK_ADD &&
		    rt_py.add_pending(rt_python_pending, (void *)(uintptr_t)generation) != 0) {
			/* Nothing of ours is queued: no call can have moved the word. */
			atomic_store(&rt_py_word, rt_python_add_failed(next));
			end = RT_PYTHON_END_QUEUE_FULL;
		}
	}
	rt_python_not_run(RT_PYTHON_RUN, end, out);
}

bool
rt_python_answered(struct rt_python_outcome *out, uint64_t *round)
{
	uint32_t word = atomic_load(&rt_py_word), next;
	if (!rt_python_collect_answer(word, &next))
		return false;
	*out = rt_py_answer;
	*round = rt_py_round;
	rt_py_armed_us = 0;
	atomic_store(&rt_py_thread_declined, false);
	/* Only the worker moves a DONE word; the pending call may clear QUEUED meanwhile. */
	while (!atomic_compare_exchange_weak(&rt_py_word, &word, next))
		rt_python_collect_answer(word, &next);
	return true;
}

bool
rt_python_cuda_answered(struct rt_python_outcome *out, uint64_t *round)
{
	if (!atomic_exchange(&rt_py_cuda_posted, false))
		return false;
	*out = rt_py_cuda_answer;
	*round = rt_py_round;
	return true;
}

uint64_t
rt_python_tend(void)
{
	uint64_t now = rt_python_now_us();
	if (atomic_load_explicit(&rt_py_state, memory_order_acquire) == RT_PY_FOUND) {
		switch (rt_python_watch(&rt_py_watch, rt_py.is_initialized() != 0)) {
		case RT_PYTHON_SEEN_NEW:
			/* An idle thread of ours stays and serves the new interpreter, as it does
			 * where the worker never saw Python down between the two: sent away, it
			 * would leave the new interpreter without one until its main thread ran
			 * the start call, which a main thread that already sits in a C call (it
			 * may have found the old thread there and gone on) never runs. */
			if (atomic_load(&rt_py_thread_parked) > 0)
				rt_python_thread_unpark();
			break;
		case RT_PYTHON_SEEN_UP:
		case RT_PYTHON_SEEN_DOWN:
			break;
		}
	}
	uint64_t start = rt_python_start(now);
	if (!rt_py_armed_us)
		return start;
	uint32_t word = atomic_load(&rt_py_word);
	uint64_t waited = now - rt_py_armed_us;
	enum rt_python_state state = rt_python_word_state(word);
	bool out = atomic_load(&rt_py_thread_out);
	/* Never sent once the interpreter finalises or is gone (an embedder's Py_Finalize): it
	 * would stand down at once. The main thread's pending call, if it runs, answers. */
	bool alive =
	    atomic_load(&rt_py_thread_runs) && rt_py.is_initialized() && !rt_py.is_finalizing();
	if (alive && rt_python_take_over(rt_py_main_only, state, waited, RT_PYTHON_GRACE_US, out,
	                                 atomic_load(&rt_py_thread_declined))) {
		atomic_store(&rt_py_thread_out, true);
		atomic_fetch_add(&rt_py_thread_asks, 1);
		syscall(SYS_futex, &rt_py_thread_asks, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
		return start;
	}
	/* Armed within the grace: look again when it ends. A thread out wakes the worker as it
	 * ends; the main thread's answer wakes it too. */
	if (alive && !rt_py_main_only && state == RT_PYTHON_ARMED && !out &&
	    waited < RT_PYTHON_GRACE_US && RT_PYTHON_GRACE_US - waited < start)
		return RT_PYTHON_GRACE_US - waited;
	return start;
}

bool
rt_python_run_here(const struct rt_config *cfg, struct rt_python_outcome *out)
{
	struct rt_python_readings r = rt_python_read(cfg);
	enum rt_python_plan plan = rt_python_plan(&r);
	if (plan == RT_PYTHON_NOT_PYTHON)
		return false;
	if (plan != RT_PYTHON_RUN) {
		rt_python_not_run(plan, RT_PYTHON_END_DONE, out);
		return true;
	}
	/* Through ctypes.CDLL the caller would have released the GIL: calling into Python then
	 * would corrupt the interpreter, so the steps go to the main thread instead. */
	if (!rt_python_gil_held())
		return false;
	rt_python_steps(out, cfg->cuda_empty_cache, true, true);
	return true;
}

void *
rt_python_let_go(void)
{
	if (atomic_load_explicit(&rt_py_state, memory_order_acquire) != RT_PY_FOUND ||
	    !rt_py.save_thread || !rt_py.restore_thread || rt_py.is_finalizing() ||
	    !rt_python_gil_held())
		return NULL;
	return rt_py.save_thread();
}

void
rt_python_take_back(void *state)
{
	if (state)
		rt_py.restore_thread(state);
}

bool
rt_python_outcome_freed(const struct rt_python_outcome *out)
{
	return out->plan == RT_PYTHON_RUN && out->end == RT_PYTHON_END_DONE &&
	       rt_python_freed(out->gc_collected, out->cuda);
}

void
rt_python_report(const struct rt_python_outcome *out, struct rt_round_record *rec)
{
	rec->python = out->plan == RT_PYTHON_RUN ? rt_python_end_word(out->end)
	                                         : rt_python_plan_word(out->plan);
	rec->gc_collected = out->gc_collected;
	rec->cuda = rt_python_cuda_word(out->cuda);
}

/* plan, end and cuda in a byte each, gc_collected + 1 above them; bit 63 marks a word. */
#define RT_PY_PACKED UINT64_C(0x8000000000000000)
#define RT_PY_COUNT_SHIFT 24
#define RT_PY_COUNT_MAX ((UINT64_C(1) << (63 - RT_PY_COUNT_SHIFT)) - 1)

uint64_t
rt_python_outcome_pack(const struct rt_python_outcome *out)
{
	uint64_t count = out->gc_collected < 0 ? 0 : (uint64_t)out->gc_collected + 1;
	if (count > RT_PY_COUNT_MAX)
		count = RT_PY_COUNT_MAX;
	return RT_PY_PACKED | count << RT_PY_COUNT_SHIFT | (uint64_t)(out->plan & 0xff) << 16 |
	       (uint64_t)(out->end & 0xff) << 8 | (uint64_t)(out->cuda & 0xff);
}

void
rt_python_outcome_unpack(uint64_t packed, struct rt_python_outcome *out)
{
	uint64_t count = (packed & ~RT_PY_PACKED) >> RT_PY_COUNT_SHIFT;
	*out = (struct rt_python_outcome){
	    .plan = (enum rt_python_plan)(packed >> 16 & 0xff),
	    .end = (enum rt_python_end)(packed >> 8 & 0xff),
	    .gc_collected = count ? (int64_t)(count - 1) : -1,
	    .cuda = (enum rt_python_cuda)(packed & 0xff),
	};
}

void
rt_python_forget_parent(void)
{
	/* The API's addresses stay valid in the child. Nothing else of the parent's is here: no
	 * thread, no thread state (CPython deletes the other threads' states in the child); only,
	 * perhaps, its call in CPython's copied queue. */
	atomic_store(&rt_py_word, rt_python_forget(atomic_load(&rt_py_word)));
	rt_py_round = 0;
	rt_py_armed_us = 0;
	rt_py_watch = (struct rt_python_watch){0};
	atomic_store(&rt_py_cuda_posted, false);
	atomic_store(&rt_py_cuda_seen, false);
	/* The parent's thread is not in the child: the child's start wants its own, and a start
	 * call of the parent's in the copied queue finds another generation. */
	atomic_store(&rt_py_thread_wanted, false);
	atomic_fetch_add(&rt_py_thread_gen, 1);
	atomic_store(&rt_py_thread_runs, false);
	atomic_store(&rt_py_start_queued, 0);
	atomic_store(&rt_py_thread_holds, 0);
	atomic_store(&rt_py_thread_tasks, 0);
	atomic_store(&rt_py_thread_starting, 0);
	atomic_store(&rt_py_thread_asking, 0);
	/* A fork while the parent's thread was out on its steps copied its count: the child's
	 * callers would take its idle thread for a busy one for good. */
	atomic_store(&rt_py_thread_busy, 0);
	atomic_store(&rt_py_thread_tstate, NULL);
	atomic_store(&rt_py_thread_out, false);
	atomic_store(&rt_py_thread_declined, false);
	atomic_store(&rt_py_thread_tid, 0);
	atomic_store(&rt_py_thread_leaving_tid, 0);
	atomic_store(&rt_py_thread_parked, 0);
	atomic_store(&rt_py_thread_stuck, 0);
	atomic_store(&rt_py_anchor_tid, 0);
	/* A finalizer that forked on the library's thread: the child's main thread is not it. */
	rt_py_thread_self = false;
	rt_py_thread_in_ensure = false;
	rt_py_thread_in_take = false;
	rt_py_thread_stopped = false;
	rt_py_thread_counted_out = false;
	rt_py_thread_claimed = 0;
	rt_py_thread_entry = NULL;
}
