/* Load and unload: read the configuration once, decide whether this process is ours, open the
 * library's files and start the worker; the fork child's deferred start; the exit wrappers and
 * the API. */
#include "roundtrim.h"
#include "rt_creds.h"
#include "rt_fd.h"
#include "rt_files.h"
#include "rt_heap.h"
#include "rt_io.h"
#include "rt_keeper.h"
#include "rt_python.h"
#include "rt_real.h"
#include "rt_report.h"
#include "rt_sampler.h"
#include "rt_shim.h"
#include "rt_signal.h"
#include "rt_tally.h"
#include "rt_tasks.h"

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

/* A fork child starts its worker only once it is known to keep running without exec
 * (roundtrim(7), FORK AND EXEC): when it still allocates after this long. Children that exec
 * (subprocess, shells) do so within milliseconds; a multiprocessing worker runs for minutes. */
#define RT_MAIN_CHILD_SETTLE_NS (1000 * 1000 * 1000LL)
/* How often, in bytes asked for, a waiting child's threads look at the clock. */
#define RT_MAIN_CHILD_PERIOD (UINT64_C(1) << 20)

struct rt_shim rt_shim;

atomic_bool rt_main_child_waiting;
static int64_t rt_main_child_settled_ns;

/* The status the worker last published, for roundtrim_status_json. The lock is held only to copy
 * the text in or out: never around anything that allocates or waits. */
static pthread_mutex_t rt_main_status_lock = PTHREAD_MUTEX_INITIALIZER;
static char rt_main_status[RT_REPORT_LINE_MAX * 4];
static size_t rt_main_status_len;

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
rt_main_start(void)
{
	rt_tasks_lock();
	rt_files_open();
	bool started = rt_worker_start();
	rt_tasks_unlock();
	return started;
}

static void
rt_main_atfork_child(void)
{
	if (!rt_shim.active)
		return;
	/* Inside fork, before the child runs a line of its own: the parent's worker, files and
	 * requests are not the child's. Nothing is opened or started here. */
	rt_shim.forked = true;
	/* The keeper is not here (only this thread is): the child's table holds none of the
	 * library's descriptors, and its start makes a keeper of its own where it needs one. */
	rt_keeper_forget_parent();
	rt_io_by_keeper(false);
	rt_fd_own_table(false);
	rt_shim.descriptors = RT_FILE_TABLE_NONE;
	rt_tasks_forget_parent();
	rt_creds_forget_parent();
	rt_tally_forget_parent();
	rt_worker_forget_parent();
	rt_files_forget_parent();
	rt_signal_forget_parent();
	rt_python_forget_parent();
	/* The parent's status is not the child's, and a thread of the parent may have held the
	 * lock at the fork: it stays held, by nobody, unless made anew. */
	pthread_mutex_init(&rt_main_status_lock, NULL);
	rt_main_status_len = 0;
	rt_main_child_settled_ns = rt_main_now_ns() + RT_MAIN_CHILD_SETTLE_NS;
	atomic_store(&rt_main_child_waiting, true);
	/* The forking thread is the child's only thread; threads it starts begin cold anyway. */
	rt_malloc_set_budget(RT_MAIN_CHILD_PERIOD);
}

void
rt_main_start_child_now(void)
{
	bool waiting = true;
	if (!atomic_compare_exchange_strong(&rt_main_child_waiting, &waiting, false))
		return;
	if (!rt_tasks_room_to_start() || !rt_main_start())
		atomic_store(&rt_shim.active, false);
}

uint64_t
rt_main_allocation_event(void)
{
	if (!atomic_load(&rt_main_child_waiting))
		return RT_PERIOD_NONE;
	if (rt_main_now_ns() < rt_main_child_settled_ns)
		return RT_MAIN_CHILD_PERIOD;
	rt_main_start_child_now();
	return RT_PERIOD_NONE;
}

__attribute__((constructor)) static void
rt_main_init(void)
{
	rt_real_resolve();
	/* Never act inside a privileged process: its environment is not its user's to trust. */
	if (getauxval(AT_SECURE))
		return;
	const char *program = program_invocation_short_name;
	strncpy(rt_shim.program, program ? program : "", sizeof(rt_shim.program) - 1);
	struct rt_platform platform = {
	    .sigrtmin = SIGRTMIN,
	    .sigrtmax = SIGRTMAX,
	    .uid = geteuid(),
	    .program = rt_shim.program,
	};
	struct rt_config *cfg = &rt_shim.cfg;
	rt_config_read(cfg, &platform, rt_main_lookup, NULL, rt_main_diag, NULL);
	if (cfg->disabled || !cfg->matched)
		return;
	/* Before anything is set up: a process without room for the worker stays as it was. */
	if (!rt_tasks_room_to_start())
		return;

	rt_fd_init();
	rt_tally_init();
	rt_shim.allocator = rt_heap_detect();
	rt_shim.action = rt_allocator_action(rt_shim.allocator, cfg->jemalloc, cfg->glibc);
	rt_heap_prepare(rt_shim.action);
	rt_heap_set_arena_max(cfg->arena_max);
	if (rt_shim.action == RT_ACTION_NONE && cfg->gc_rounds)
		rt_warn("malloc is served by %s: rounds are counted, no allocator action is taken",
		        rt_allocator_name(rt_shim.allocator));
	/* Before main, so that every application thread inherits the blocked signal. */
	if (cfg->signal)
		rt_signal_setup(cfg->signal);
	rt_signal_note_inherited();
	pthread_atfork(NULL, NULL, rt_main_atfork_child);
	rt_shim.active = rt_main_start();
	if (rt_shim.active)
		rt_sampler_init();
}

/* A process where roundtrim stayed inactive (most often one that does not match) has no worker
 * and no files: its exit costs nothing more than without the library. */
__attribute__((destructor)) static void
rt_main_fini(void)
{
	if (rt_shim.active)
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
	if (!rt_shim.active)
		return false;
	rt_main_start_child_now();
	return rt_worker_running();
}

/* A round or trim of the API. The round is counted here, in the caller's thread; when it acts
 * and here_with_gil (the Python module's call, through ctypes.PyDLL), the Python steps run here
 * too, as the program's own cleanup would, and the worker then releases at once. Otherwise the
 * worker hands the steps to the interpreter's main thread. Returns 1 when the call acts, 0 when it
 * only counted, -1 when the library is inactive here. */
static int
rt_main_api(bool trim, bool here_with_gil)
{
	if (!rt_main_ready_for_request())
		return -1;
	bool acts = trim || rt_worker_api_count() != 0;
	struct rt_python_outcome ran;
	bool steps_ran = acts && here_with_gil && rt_python_run_here(&ran);
	if (!rt_worker_api_post(trim, acts, steps_ran ? &ran : NULL))
		return -1;
	return acts ? 1 : 0;
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

void
rt_main_keep_status(const char *json, size_t len)
{
	if (len > sizeof(rt_main_status))
		len = sizeof(rt_main_status);
	pthread_mutex_lock(&rt_main_status_lock);
	memcpy(rt_main_status, json, len);
	rt_main_status_len = len;
	pthread_mutex_unlock(&rt_main_status_lock);
}

RT_EXPORT int
roundtrim_status_json(char *buf, size_t size)
{
	if (!rt_main_ready_for_request())
		return -1;
	pthread_mutex_lock(&rt_main_status_lock);
	size_t len = rt_main_status_len;
	if (size) {
		size_t n = len < size ? len : size - 1;
		memcpy(buf, rt_main_status, n);
		buf[n] = '\0';
	}
	pthread_mutex_unlock(&rt_main_status_lock);
	return (int)len;
}

RT_EXPORT const char *
roundtrim_version(void)
{
	return RT_VERSION;
}
