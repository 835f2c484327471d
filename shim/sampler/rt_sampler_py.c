/* The Python function of a sampled allocation, in a CPython host.
 *
 * Why here, at sample time, and why this way. The native stack of a Python allocation shows the
 * interpreter (_PyEval_EvalFrameDefault and the C functions it calls), never which Python
 * function ran: that lives in the thread's frame chain, which exists only while the thread runs
 * it. CPython's public frame API (PyEval_GetFrame, PyThreadState_GetFrame) materialises frame
 * objects, which allocates and can start the garbage collector, and so finalizers, inside
 * malloc: unusable here. What is cheap is to read the chain: the thread's own state
 * (PyGILState_GetThisThreadState, which allocates nothing), its innermost frames' code objects,
 * and, once per new site, their names. A thread's chain changes only when that thread runs
 * Python, which it does not while it is inside malloc. A thread that holds the GIL
 * (PyGILState_Check) reads it directly: nothing can free it meanwhile. One that does not (C code
 * that released the GIL: PyTorch's operators) may be a daemon thread whose state the finalizing
 * interpreter frees under it, so its reads go through process_vm_readv on this process, which
 * fails on a stale pointer instead of faulting: two system calls, and one per frame, per sample
 * (a few microseconds); two more per name for a new site.
 *
 * The layout is CPython 3.11's (Debian 12's): in other versions the frames are not read, and the
 * report shows the native frames only. */
#include "rt_out.h"
#include "rt_probe.h"
#include "rt_proc.h"
#include "rt_sampler.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* CPython 3.11: offsetof(PyThreadState, cframe), offsetof(_PyCFrame, current_frame),
 * offsetof(_PyInterpreterFrame, f_code / previous), offsetof(PyCodeObject, ...), and the
 * compact string objects (Include/cpython/pystate.h, internal/pycore_frame.h, code.h,
 * unicodeobject.h of 3.11). */
#define RT_PY311_TSTATE_CFRAME 56
#define RT_PY311_CFRAME_CURRENT 8
#define RT_PY311_FRAME_CODE 32
#define RT_PY311_FRAME_PREVIOUS 48
#define RT_PY311_OBJECT_TYPE 8
#define RT_PY311_CODE_FIRSTLINENO 72
#define RT_PY311_CODE_FILENAME 112
#define RT_PY311_CODE_QUALNAME 128
#define RT_PY311_CODE_HEAD 136
#define RT_PY311_STR_LENGTH 16
#define RT_PY311_STR_STATE 32
#define RT_PY311_ASCII_DATA 48
#define RT_PY311_COMPACT_DATA 72

static struct {
	void *(*this_thread_state)(void);
	int (*holds_gil)(void);
	int (*is_finalizing)(void);
	uintptr_t code_type;
	atomic_int pid;
} rt_spy;

/* Copies len bytes at addr of this process into dst; false when any of them cannot be read.
 * direct: the caller holds the GIL, and what it reads cannot go away. */
static bool
rt_sampler_py_read(void *dst, uintptr_t addr, size_t len, bool direct)
{
	if (addr < 4096)
		return false;
	if (direct) {
		memcpy(dst, (const void *)addr, len);
		return true;
	}
	return rt_proc_read_self(atomic_load_explicit(&rt_spy.pid, memory_order_relaxed), dst, addr,
	                         len);
}

static bool
rt_sampler_py_word(uintptr_t addr, uintptr_t *out, bool direct)
{
	return rt_sampler_py_read(out, addr, sizeof(*out), direct);
}

bool
rt_sampler_py_init(void)
{
	const char *(*version)(void) = NULL;
	*(void **)&version = dlsym(RTLD_DEFAULT, "Py_GetVersion");
	if (!version)
		return false;
	const char *v = version();
	if (strncmp(v, "3.11.", 5) != 0) {
		rt_warn("sites: Python frames off: CPython %.8s's frames are not known here; the "
		        "native frames are reported",
		        v);
		return false;
	}
	*(void **)&rt_spy.this_thread_state = dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
	*(void **)&rt_spy.holds_gil = dlsym(RTLD_DEFAULT, "PyGILState_Check");
	*(void **)&rt_spy.is_finalizing = dlsym(RTLD_DEFAULT, "_Py_IsFinalizing");
	rt_spy.code_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyCode_Type");
	atomic_store(&rt_spy.pid, getpid());
	uintptr_t probe = 0, self = (uintptr_t)&rt_spy;
	if (!rt_spy.this_thread_state || !rt_spy.holds_gil || !rt_spy.is_finalizing ||
	    !rt_spy.code_type) {
		rt_warn("sites: Python frames off: this interpreter lacks part of the C API");
		return false;
	}
	if (rt_probe_kills(SYS_process_vm_readv)) {
		rt_warn("sites: Python frames off: a seccomp filter kills the process on "
		        "process_vm_readv");
		return false;
	}
	if (!rt_sampler_py_word((uintptr_t)&self, &probe, false) || probe != self) {
		rt_warn("sites: Python frames off: process_vm_readv is refused here");
		return false;
	}
	return true;
}

void
rt_sampler_py_forget_parent(void)
{
	atomic_store(&rt_spy.pid, getpid());
}

/* Whether the calling thread may read its frames directly, else through process_vm_readv. */
static bool
rt_sampler_py_direct(void)
{
	/* While the interpreter finalizes it frees daemon threads' states under them, and
	 * PyGILState_Check answers 1 for every thread once a subinterpreter existed (3.11): no
	 * direct read then, whatever it says. */
	return !rt_spy.is_finalizing() && rt_spy.holds_gil() == 1;
}

unsigned
rt_sampler_py_frames(uintptr_t *codes, unsigned max)
{
	uintptr_t tstate = (uintptr_t)rt_spy.this_thread_state(), cframe, frame;
	if (!tstate)
		return 0;
	bool direct = rt_sampler_py_direct();
	if (!rt_sampler_py_word(tstate + RT_PY311_TSTATE_CFRAME, &cframe, direct) ||
	    !rt_sampler_py_word(cframe + RT_PY311_CFRAME_CURRENT, &frame, direct))
		return 0;
	unsigned n = 0;
	while (frame && n < max) {
		uintptr_t head[(RT_PY311_FRAME_PREVIOUS + 8) / sizeof(uintptr_t)];
		if (!rt_sampler_py_read(head, frame, sizeof(head), direct))
			break;
		codes[n++] = head[RT_PY311_FRAME_CODE / sizeof(uintptr_t)];
		frame = head[RT_PY311_FRAME_PREVIOUS / sizeof(uintptr_t)];
	}
	return n;
}

/* A str object's text: ASCII as it is, Latin-1 with '?' for what is not ASCII; from its end
 * when it does not fit (file paths), marked "...". */
static void
rt_sampler_py_text(uintptr_t str, char *out, size_t size, bool keep_end, bool direct)
{
	unsigned char head[RT_PY311_COMPACT_DATA];
	snprintf(out, size, "?");
	if (!rt_sampler_py_read(head, str, sizeof(head), direct))
		return;
	uint64_t length;
	uint32_t state;
	memcpy(&length, head + RT_PY311_STR_LENGTH, sizeof(length));
	memcpy(&state, head + RT_PY311_STR_STATE, sizeof(state));
	unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
	if (!compact || kind != 1 || size < 8)
		return;
	uintptr_t data = str + (ascii ? RT_PY311_ASCII_DATA : RT_PY311_COMPACT_DATA);
	size_t take = length < size - 1 ? (size_t)length : size - 4;
	size_t from = length > take && keep_end ? (size_t)length - take : 0;
	size_t at = 0;
	if (length > take && keep_end) {
		memcpy(out, "...", 3);
		at = 3;
	}
	if (!rt_sampler_py_read(out + at, data + from, take, direct))
		return;
	for (size_t i = at; i < at + take; i++)
		if ((unsigned char)out[i] < 0x20 || (unsigned char)out[i] > 0x7e)
			out[i] = '?';
	at += take;
	if (length > take && !keep_end) {
		memcpy(out + at, "...", 3);
		at += 3;
	}
	out[at] = '\0';
}

void
rt_sampler_py_names(uintptr_t code, char *function, size_t fsize, char *file, size_t size,
                    uint32_t *line)
{
	uintptr_t head[RT_PY311_CODE_HEAD / sizeof(uintptr_t)];
	snprintf(function, fsize, "?");
	snprintf(file, size, "?");
	*line = 0;
	bool direct = rt_sampler_py_direct();
	if (!rt_sampler_py_read(head, code, sizeof(head), direct) ||
	    head[RT_PY311_OBJECT_TYPE / sizeof(uintptr_t)] != rt_spy.code_type)
		return;
	int32_t first;
	memcpy(&first, (unsigned char *)head + RT_PY311_CODE_FIRSTLINENO, sizeof(first));
	*line = first > 0 ? (uint32_t)first : 0;
	rt_sampler_py_text(head[RT_PY311_CODE_QUALNAME / sizeof(uintptr_t)], function, fsize, false,
	                   direct);
	rt_sampler_py_text(head[RT_PY311_CODE_FILENAME / sizeof(uintptr_t)], file, size, true,
	                   direct);
}
