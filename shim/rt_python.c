/* The Python steps. The worker never calls into Python: a Python request is handed to a
 * detached thread of our own, which takes the GIL, runs the steps and answers, and the worker
 * waits for the answer with a deadline. Why a second thread (roundtrim(7), facts.md):
 * PyGILState_Ensure cannot time out, and at finalisation CPython ends a foreign thread that
 * asks for the GIL with pthread_exit. So that thread holds no lock of ours, ever; the hand-off
 * is one atomic word with futex waits; the thread is never joined; and when it is ended, a
 * cleanup handler marks it gone so that the worker stops asking. */
#include "rt_python.h"
#include "rt_python_rules.h"
#include "rt_shim.h"

#include <dlfcn.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* How long the worker waits for the Python thread to get the GIL. CPython hands the GIL on
 * within its switch interval (5 ms) whenever bytecode runs, so two seconds without it means a
 * C call that holds it (a long BLAS call, a blocking read through ctypes.PyDLL). The allocator
 * action must not wait on such a call, and two seconds of delay to a round are invisible in
 * rounds that last minutes. */
#define RT_PYTHON_GIL_WAIT_MS 2000
/* How long, once the steps run, the worker waits for them: a full collection of tens of
 * millions of objects takes seconds, and trimming before it ends would miss what it frees; a
 * finalizer that blocks must still not hold up the round forever. */
#define RT_PYTHON_RUN_WAIT_MS 10000

typedef void *rt_pyobj;

/* The C API, found with dlsym(RTLD_DEFAULT): Debian's /usr/bin/python3 exports it from the
 * executable, other builds from libpython3.x.so. Never linked. */
struct rt_python_api {
	int (*is_initialized)(void);
	int (*is_finalizing)(void); /* Py_IsFinalizing (3.13+) or _Py_IsFinalizing (3.11, 3.12) */
	int (*gil_ensure)(void);    /* PyGILState_STATE is an enum */
	rt_pyobj (*save_thread)(void);
	void (*restore_thread)(rt_pyobj);
	ssize_t (*gc_collect)(void);
	int (*gc_enable)(void); /* 3.10+; NULL before */
	int (*gc_disable)(void);
	rt_pyobj (*modules)(void);                    /* PyImport_GetModuleDict: borrowed */
	rt_pyobj (*dict_get)(rt_pyobj, const char *); /* PyDict_GetItemString: borrowed */
	rt_pyobj (*getattr)(rt_pyobj, const char *);
	rt_pyobj (*call)(rt_pyobj, rt_pyobj); /* PyObject_CallObject */
	int (*is_true)(rt_pyobj);
	void (*incref)(rt_pyobj);
	void (*decref)(rt_pyobj);
	void (*err_fetch)(rt_pyobj *, rt_pyobj *, rt_pyobj *);
	void (*err_restore)(rt_pyobj, rt_pyobj, rt_pyobj);
	void (*err_clear)(void);
	rt_pyobj none; /* _Py_NoneStruct: sys.modules maps a blocked import to None */
};

/* The hand-off word. The worker moves it IDLE/DONE -> PENDING (a request) and PENDING ->
 * ABANDONED (withdrawn at the deadline); the Python thread moves PENDING -> RUNNING -> DONE,
 * ABANDONED -> IDLE, and anything -> GONE when CPython ends it. Who wins the PENDING word's
 * compare-and-swap decides whether the steps run, so "skipped" is never a lie. */
enum rt_python_slot {
	RT_SLOT_IDLE,
	RT_SLOT_PENDING,
	RT_SLOT_RUNNING,
	RT_SLOT_DONE,
	RT_SLOT_ABANDONED,
	RT_SLOT_GONE,
};

/* Written by the Python thread before it stores DONE, read by the worker after it sees DONE
 * and before its next request: the slot orders them, no lock. */
struct rt_python_answer {
	enum rt_python_end end;
	int64_t gc_collected;
	enum rt_python_cuda cuda;
};

static struct rt_python_api rt_py;
static bool rt_py_found;
static atomic_uint rt_py_slot;
static atomic_bool rt_py_cuda_option;
static struct rt_python_answer rt_py_answer;
/* Worker-only state: whether our thread runs in this process, or could not be started. */
static bool rt_py_started;
static bool rt_py_start_failed;
/* The Python thread's own: its thread state, kept between requests (see rt_python_gil). */
static rt_pyobj rt_py_tstate;

static void
rt_python_wake(void)
{
	syscall(SYS_futex, &rt_py_slot, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void
rt_python_set(unsigned slot)
{
	atomic_store(&rt_py_slot, slot);
	rt_python_wake();
}

/* Waits while the slot holds `value`, at most until `deadline` (CLOCK_MONOTONIC; NULL: no
 * limit). Returns the slot's value then. */
static unsigned
rt_python_wait_while(unsigned value, const struct timespec *deadline)
{
	unsigned now_value;
	while ((now_value = atomic_load(&rt_py_slot)) == value) {
		struct timespec rel, *timeout = NULL;
		if (deadline) {
			struct timespec now;
			clock_gettime(CLOCK_MONOTONIC, &now);
			rel.tv_sec = deadline->tv_sec - now.tv_sec;
			rel.tv_nsec = deadline->tv_nsec - now.tv_nsec;
			if (rel.tv_nsec < 0)
				rel.tv_sec--, rel.tv_nsec += 1000000000L;
			if (rel.tv_sec < 0)
				break;
			timeout = &rel;
		}
		/* FUTEX_WAIT's timeout is relative; EINTR and spurious wake-ups loop. */
		syscall(SYS_futex, &rt_py_slot, FUTEX_WAIT_PRIVATE, value, timeout, NULL, 0);
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
	*(void **)&a.gil_ensure = rt_python_sym("PyGILState_Ensure");
	*(void **)&a.save_thread = rt_python_sym("PyEval_SaveThread");
	*(void **)&a.restore_thread = rt_python_sym("PyEval_RestoreThread");
	*(void **)&a.gc_collect = rt_python_sym("PyGC_Collect");
	*(void **)&a.gc_enable = rt_python_sym("PyGC_Enable");
	*(void **)&a.gc_disable = rt_python_sym("PyGC_Disable");
	*(void **)&a.modules = rt_python_sym("PyImport_GetModuleDict");
	*(void **)&a.dict_get = rt_python_sym("PyDict_GetItemString");
	*(void **)&a.getattr = rt_python_sym("PyObject_GetAttrString");
	*(void **)&a.call = rt_python_sym("PyObject_CallObject");
	*(void **)&a.is_true = rt_python_sym("PyObject_IsTrue");
	*(void **)&a.incref = rt_python_sym("Py_IncRef");
	*(void **)&a.decref = rt_python_sym("Py_DecRef");
	*(void **)&a.err_fetch = rt_python_sym("PyErr_Fetch");
	*(void **)&a.err_restore = rt_python_sym("PyErr_Restore");
	*(void **)&a.err_clear = rt_python_sym("PyErr_Clear");
	a.none = rt_python_sym("_Py_NoneStruct");
	if (!a.is_finalizing || !a.gil_ensure || !a.save_thread || !a.restore_thread ||
	    !a.gc_collect || !a.modules || !a.dict_get || !a.getattr || !a.call || !a.is_true ||
	    !a.incref || !a.decref || !a.err_fetch || !a.err_restore || !a.err_clear ||
	    !!a.gc_enable != !!a.gc_disable) {
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

/* --- The Python thread: everything below until rt_python_round runs on it, GIL held where
 * said. */

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

/* With the GIL: gc.collect()'s full collection, then the CUDA cache. */
static void
rt_python_steps(struct rt_python_answer *answer, bool cuda_option)
{
	/* The thread state is fresh between requests, but keep whatever exception state there
	 * is exactly as found. */
	rt_pyobj type, value, tb;
	rt_py.err_fetch(&type, &value, &tb);
	/* PyGC_Collect returns 0 without collecting while gc is disabled, where gc.collect()
	 * collects anyway (Modules/gcmodule.c): enable around it and restore the program's
	 * setting. Nothing is imported and no name is left anywhere. */
	int was_enabled = rt_py.gc_enable ? rt_py.gc_enable() : 1;
	answer->gc_collected = (int64_t)rt_py.gc_collect();
	if (!was_enabled)
		rt_py.gc_disable();
	answer->cuda = rt_python_cuda(cuda_option);
	rt_py.err_clear();
	rt_py.err_restore(type, value, tb);
	answer->end = RT_PYTHON_END_DONE;
}

/* Runs when CPython ends this thread with pthread_exit while it asks for the GIL at
 * finalisation: the worker must stop asking and stop waiting. */
static void
rt_python_killed(void *arg)
{
	(void)arg;
	rt_python_set(RT_SLOT_GONE);
}

/* Takes the GIL. The first time through PyGILState_Ensure, which makes our thread state, then
 * the thread state is kept (PyEval_SaveThread) and later requests only restore it: after the
 * first request no thread state is made or freed, and PyEval_RestoreThread's first act is
 * CPython's finalisation check (take_gil: tstate_must_exit), which ends us cleanly even when
 * finalisation has already freed the interpreter's thread states. */
static void
rt_python_gil(void)
{
	pthread_cleanup_push(rt_python_killed, NULL);
	if (rt_py_tstate)
		rt_py.restore_thread(rt_py_tstate);
	else
		rt_py.gil_ensure();
	pthread_cleanup_pop(0);
}

static void
rt_python_serve(void)
{
	struct rt_python_answer answer = {.end = RT_PYTHON_END_FINALIZING, .gc_collected = -1};
	bool cuda_option = atomic_load(&rt_py_cuda_option);
	/* Checked again here: the worker's check may be old by now. It only narrows the race;
	 * losing it costs this thread, never the host. */
	if (rt_py.is_finalizing() || !rt_py.is_initialized()) {
		rt_py_answer = answer;
		rt_python_set(RT_SLOT_DONE);
		return;
	}
	rt_python_gil();
	unsigned expected = RT_SLOT_PENDING;
	if (atomic_compare_exchange_strong(&rt_py_slot, &expected, RT_SLOT_RUNNING)) {
		rt_python_steps(&answer, cuda_option);
		rt_py_answer = answer;
	}
	rt_py_tstate = rt_py.save_thread();
	/* The answer is published only with the GIL released: the worker then trims while
	 * Python runs on. */
	rt_python_set(expected == RT_SLOT_PENDING ? RT_SLOT_DONE : RT_SLOT_IDLE);
}

static void *
rt_python_main(void *arg)
{
	(void)arg;
	for (;;) {
		if (rt_python_wait_while(RT_SLOT_IDLE, NULL) == RT_SLOT_PENDING)
			rt_python_serve();
		else if (atomic_load(&rt_py_slot) == RT_SLOT_DONE)
			rt_python_wait_while(RT_SLOT_DONE, NULL);
		else if (atomic_load(&rt_py_slot) == RT_SLOT_ABANDONED)
			rt_python_set(RT_SLOT_IDLE); /* withdrawn before we looked */
	}
	return NULL;
}

/* --- The worker's side. */

static bool
rt_python_start(void)
{
	if (rt_py_started)
		return true;
	if (rt_py_start_failed)
		return false;
	/* The worker runs with every signal blocked, and the new thread inherits its mask. */
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_t thread;
	int err = pthread_create(&thread, &attr, rt_python_main, NULL);
	pthread_attr_destroy(&attr);
	if (err != 0) {
		rt_warn("Python steps off: cannot start the Python thread: %s", strerror(err));
		rt_py_start_failed = true;
		return false;
	}
	pthread_setname_np(thread, "roundtrim-py");
	rt_py_started = true;
	return true;
}

/* Hands one request to the Python thread and waits for the answer within the deadlines. */
static enum rt_python_end
rt_python_request(struct rt_python_answer *answer)
{
	atomic_store(&rt_py_cuda_option, rt_shim.cfg.cuda_empty_cache);
	rt_python_set(RT_SLOT_PENDING);
	struct timespec deadline = rt_python_deadline(RT_PYTHON_GIL_WAIT_MS);
	unsigned slot = rt_python_wait_while(RT_SLOT_PENDING, &deadline);
	if (slot == RT_SLOT_PENDING) {
		unsigned expected = RT_SLOT_PENDING;
		if (atomic_compare_exchange_strong(&rt_py_slot, &expected, RT_SLOT_ABANDONED))
			return RT_PYTHON_END_GIL_BUSY;
		slot = expected;
	}
	if (slot == RT_SLOT_RUNNING) {
		deadline = rt_python_deadline(RT_PYTHON_RUN_WAIT_MS);
		slot = rt_python_wait_while(RT_SLOT_RUNNING, &deadline);
	}
	switch (slot) {
	case RT_SLOT_DONE:
		*answer = rt_py_answer;
		return answer->end;
	case RT_SLOT_RUNNING:
		return RT_PYTHON_END_UNFINISHED;
	default:
		return RT_PYTHON_END_THREAD_GONE;
	}
}

void
rt_python_round(struct rt_round_record *rec)
{
	rec->python = NULL;
	rec->gc_collected = -1;
	rec->cuda = rt_python_cuda_word(RT_PYTHON_CUDA_SKIPPED);
	if (!rt_python_resolve())
		return;
	unsigned slot = atomic_load(&rt_py_slot);
	struct rt_python_readings r = {
	    .enabled = rt_shim.cfg.python,
	    .found = true,
	    .initialized = rt_py.is_initialized() != 0,
	    .finalizing = rt_py.is_finalizing() != 0,
	    .thread_gone = slot == RT_SLOT_GONE || rt_py_start_failed,
	    .busy = slot == RT_SLOT_PENDING || slot == RT_SLOT_RUNNING || slot == RT_SLOT_ABANDONED,
	};
	enum rt_python_plan plan = rt_python_plan(&r);
	if (plan == RT_PYTHON_RUN && !rt_python_start())
		plan = RT_PYTHON_THREAD_GONE;
	if (plan != RT_PYTHON_RUN) {
		rec->python = rt_python_plan_word(plan);
		return;
	}
	struct rt_python_answer answer = {.gc_collected = -1, .cuda = RT_PYTHON_CUDA_SKIPPED};
	enum rt_python_end end = rt_python_request(&answer);
	rec->python = rt_python_end_word(end);
	if (end == RT_PYTHON_END_DONE) {
		rec->gc_collected = answer.gc_collected;
		rec->cuda = rt_python_cuda_word(answer.cuda);
	}
}

void
rt_python_forget_parent(void)
{
	/* The API's addresses stay valid in the child; its thread and its thread state do not
	 * (CPython's fork handling deletes every other thread's state in the child). */
	atomic_store(&rt_py_slot, RT_SLOT_IDLE);
	rt_py_started = false;
	rt_py_start_failed = false;
	rt_py_tstate = NULL;
}
