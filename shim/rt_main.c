/* Load and unload: read the configuration once, decide whether this process is ours, open the
 * library's files and start the worker; the fork child's deferred start; the exit wrappers and
 * the API. */
#include "roundtrim.h"
#include "rt_child.h"
#include "rt_creds.h"
#include "rt_fd.h"
#include "rt_files.h"
#include "rt_heap.h"
#include "rt_hooks.h"
#include "rt_io.h"
#include "rt_keeper.h"
#include "rt_malloc.h"
#include "rt_out.h"
#include "rt_probe.h"
#include "rt_python.h"
#include "rt_real.h"
#include "rt_report.h"
#include "rt_sampler.h"
#include "rt_shim.h"
#include "rt_signal.h"
#include "rt_tally.h"
#include "rt_tasks.h"
#include "rt_version.h"
#include "rt_worker.h"
#include "rt_worker_life.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* How often, in bytes asked for, a waiting child's threads look at the clock. */
#define RT_MAIN_CHILD_PERIOD (UINT64_C(1) << 20)

/* True in a fork child until its library starts, the only time the allocation event has work
 * (rt_hooks.allocation_event is set with it). */
static atomic_bool rt_main_child_waiting;
static uint64_t rt_main_allocation_event(void);
/* When the fork happened: a child's library starts once the child has lived
 * ROUNDTRIM_CHILD_START, still allocating (policy/rt_child; roundtrim(7), FORK AND EXEC). */
static int64_t rt_main_child_forked_ns;
/* What the worker is handed at each start (the process's, and a fork child's): the
 * configuration and the facts found at start-up. */
static struct rt_worker_setup rt_main_worker;
/* The process's configuration, read once in the constructor, and the program's name: handed
 * down, read-only, to each module's start. */
static struct rt_config rt_main_config;
static char rt_main_program[64];
/* This process is a fork child of one where the library was active. */
static bool rt_main_forked;
/* This process's pid, kept through forks: in a child it is the parent's pid at the fork, which
 * getppid() no longer says once a parent that exits at once (a double fork) is gone. */
static pid_t rt_main_pid;

static int64_t
rt_main_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static const char *
rt_main_lookup(void *ctx, const char *name)
{
	(void)ctx;
	/* secure_getenv: a setuid or otherwise privileged process reads nothing. */
	return secure_getenv(name);
}

static void
rt_main_diag(void *ctx, const char *line)
{
	(void)ctx;
	char buf[RT_REPORT_LINE_MAX + 1];
	size_t len = strnlen(line, sizeof(buf) - 1);
	memcpy(buf, line, len);
	buf[len++] = '\n';
	rt_out_stderr(buf, len);
}

/* In the thread that starts the library, synchronously, once a task limit was found to leave
 * room for the worker (rt_tasks): the files first (every descriptor lifted above the floor
 * before this returns), then the worker, which opens nothing. Under the tasks' lock: a
 * credential call of another thread must not meet a worker half started. */
static bool
rt_main_start(const struct rt_worker_setup *setup)
{
	rt_tasks_lock();
	rt_files_open(setup->cfg, setup->program, rt_main_forked);
	bool started = rt_worker_start(setup);
	rt_tasks_unlock();
	return started;
}

static void
rt_main_atfork_child(void)
{
	if (!rt_shim_active)
		return;
	/* Inside fork, before the child runs a line of its own: the parent's worker, files and
	 * requests are not the child's. Nothing is opened or started here. */
	rt_main_forked = true;
	/* The keeper is not here (only this thread is): the child's table holds none of the
	 * library's descriptors, and its start makes a keeper of its own where it needs one. */
	rt_keeper_forget_parent();
	rt_io_by_keeper(false);
	rt_fd_own_table(false);
	rt_tasks_forget_parent();
	rt_creds_forget_parent();
	rt_tally_forget_parent();
	rt_worker_forget_parent();
	rt_heap_forget_parent();
	rt_files_forget_parent();
	rt_signal_forget_parent();
	rt_python_forget_parent();
	rt_main_worker.fork_parent = rt_main_pid;
	rt_main_worker.fork_session = getsid(0);
	rt_main_pid = getpid();
	rt_main_child_forked_ns = rt_main_now_ns();
	atomic_store(&rt_main_child_waiting, true);
	atomic_store(&rt_hooks.allocation_event, rt_main_allocation_event);
	/* The forking thread is the child's only thread; threads it starts begin cold anyway. */
	rt_malloc_set_budget(RT_MAIN_CHILD_PERIOD);
}

/* A fork child's library starts once the child is known to keep running without exec
 * (roundtrim(7), FORK AND EXEC); called by the API, which is such a sign itself. */
static void
rt_main_start_child_now(void)
{
	bool waiting = true;
	if (!atomic_compare_exchange_strong(&rt_main_child_waiting, &waiting, false))
		return;
	if (!rt_tasks_room_to_start(rt_main_worker.cfg) || !rt_main_start(&rt_main_worker))
		atomic_store(&rt_shim_active, false);
}

/* On a thread's first allocation and whenever its budget runs out while the child waits (through
 * rt_hooks); returns the next budget. Never on the hot path. */
static uint64_t
rt_main_allocation_event(void)
{
	if (!atomic_load(&rt_main_child_waiting))
		return RT_PERIOD_NONE;
	switch (rt_child_starts((uint64_t)(rt_main_now_ns() - rt_main_child_forked_ns),
	                        rt_main_config.child_start_ns)) {
	case RT_CHILD_WAIT:
		return RT_MAIN_CHILD_PERIOD;
	case RT_CHILD_START:
		rt_main_start_child_now();
		break;
	case RT_CHILD_NEVER:
		break;
	}
	return RT_PERIOD_NONE;
}

__attribute__((constructor)) static void
rt_main_init(void)
{
	rt_real_resolve();
	/* The cold-path work of the layers above the hot path (rt_hooks); the sampler's, only where
	 * it runs. */
	rt_hooks.thread_exits = rt_worker_thread_exits;
	/* Never act inside a privileged process: its environment is not its user's to trust. */
	if (getauxval(AT_SECURE))
		return;
	const char *program = program_invocation_short_name;
	strncpy(rt_main_program, program ? program : "", sizeof(rt_main_program) - 1);
	struct rt_platform platform = {
	    .sigrtmin = SIGRTMIN,
	    .sigrtmax = SIGRTMAX,
	    /* From the kernel's auxiliary vector: no system call before rt_probe's. */
	    .uid = (uid_t)getauxval(AT_EUID),
	    .program = rt_main_program,
	};
	struct rt_config *cfg = &rt_main_config;
	rt_config_read(cfg, &platform, rt_main_lookup, NULL, rt_main_diag, NULL);
	if (cfg->disabled || !cfg->matched)
		return;
	/* Before the library makes a call of its own: under a seccomp filter that kills on one,
	 * the process stays as it was. */
	char why[256];
	if (!rt_probe_system_calls(why, sizeof(why))) {
		rt_warn("inactive: %s", why);
		return;
	}
	/* Before anything is set up: a process without room for the worker stays as it was. */
	if (!rt_tasks_room_to_start(cfg))
		return;

	rt_fd_init();
	rt_tally_init();
	struct rt_worker_setup *w = &rt_main_worker;
	w->cfg = cfg;
	w->program = rt_main_program;
	w->allocator = rt_heap_detect();
	w->action = rt_allocator_action(w->allocator, cfg->jemalloc, cfg->glibc);
	rt_heap_prepare(w->action);
	rt_heap_set_arena_max(cfg->arena_max);
	if (w->action == RT_ACTION_NONE && cfg->gc_rounds)
		rt_warn("malloc is served by %s: rounds are counted, no allocator action is taken",
		        rt_allocator_name(w->allocator));
	/* Before main, so that every application thread inherits the blocked signal. */
	if (cfg->signal)
		rt_signal_setup(cfg->signal);
	rt_main_pid = getpid();
	pthread_atfork(NULL, NULL, rt_main_atfork_child);
	rt_shim_active = rt_main_start(w);
	if (rt_shim_active && rt_sampler_init(cfg)) {
		rt_hooks.sample = rt_sampler_event;
		rt_hooks.took = rt_sampler_took;
	}
}

/* A process where roundtrim stayed inactive (most often one that does not match) has no worker
 * and no files: its exit costs nothing more than without the library. */
__attribute__((destructor)) static void
rt_main_fini(void)
{
	if (rt_shim_active)
		rt_files_remove();
}

/* os._exit() and multiprocessing's children leave through _exit, skipping destructors. */
__attribute__((noreturn)) static void
rt_main_exit_now(void (*real)(int), int status)
{
	rt_main_fini();
	if (real)
		real(status);
	for (;;)
		syscall(SYS_exit_group, status);
}

RT_EXPORT void
_exit(int status)
{
	rt_main_exit_now(rt_real.exit_now, status);
}

RT_EXPORT void
_Exit(int status)
{
	rt_main_exit_now(rt_real.exit_now_c, status);
}

/* A program that calls the API in a fork child has said it keeps running. */
static bool
rt_main_ready_for_request(void)
{
	if (!rt_shim_active)
		return false;
	rt_main_start_child_now();
	return rt_worker_life_running();
}

/* A round or trim of the API. The round is counted here, in the caller's thread; when it acts
 * and here_with_gil (the Python module's call, through ctypes.PyDLL), the Python steps run here
 * too, as the program's own cleanup would. Otherwise the worker hands the steps to the
 * interpreter's main thread. When the Python module's call acts, the allocator's action runs here
 * too, after the steps, as NVFlare's cleanup_memory() runs malloc_trim: the memory is back when
 * the call returns (a fork child leaves it to its worker, as before). Only there: that call comes
 * between bytecodes, never from a C signal handler, which may have interrupted malloc holding an
 * arena lock that the action takes (pthread_mutex_lock is not async-signal-safe). A C caller's
 * action is the worker's, woken at once. Returns 1 when the call acts, 0 when it only counted,
 * -1 when the library is inactive here. The caller's errno is kept. */
static int
rt_main_api(bool trim, bool here_with_gil)
{
	int saved_errno = errno;
	int ret = -1;
	if (!rt_main_ready_for_request())
		goto label_return;
	bool acts = trim || rt_worker_api_count() != 0;
	struct rt_python_outcome ran;
	bool steps_ran = acts && here_with_gil && rt_python_run_here(rt_main_worker.cfg, &ran);
	/* The program's other Python threads run during the action. */
	void *gil = steps_ran && !rt_main_forked ? rt_python_let_go() : NULL;
	if (acts && here_with_gil && !rt_main_forked)
		rt_worker_api_release();
	bool posted = rt_worker_api_post(trim, acts, steps_ran ? &ran : NULL);
	rt_python_take_back(gil);
	if (!posted)
		goto label_return;
	ret = acts ? 1 : 0;
label_return:
	errno = saved_errno;
	return ret;
}

RT_EXPORT int
roundtrim_round(void)
{
	return rt_main_api(false, false) < 0 ? -1 : 0;
}

RT_EXPORT int
roundtrim_trim(void)
{
	return rt_main_api(true, false) < 0 ? -1 : 0;
}

RT_EXPORT int
roundtrim_python_round(void)
{
	return rt_main_api(false, true);
}

RT_EXPORT int
roundtrim_python_trim(void)
{
	return rt_main_api(true, true);
}

RT_EXPORT int
roundtrim_status_json(char *buf, size_t size)
{
	if (!rt_main_ready_for_request())
		return -1;
	return rt_worker_status_json(buf, size);
}

RT_EXPORT const char *
roundtrim_version(void)
{
	return RT_VERSION;
}
