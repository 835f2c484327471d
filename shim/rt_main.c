/* Load and unload: read the configuration once, decide whether this process is ours, set up
 * the triggers and start the worker; and the process-level wrappers (fork, _exit) and API. */
#include "roundtrim.h"
#include "rt_heap.h"
#include "rt_real.h"
#include "rt_report.h"
#include "rt_shim.h"
#include "rt_signal.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

struct rt_shim rt_shim;

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
	rt_out_write_all(STDERR_FILENO, buf, len);
}

static void
rt_main_atfork_child(void)
{
	rt_worker_forget_parent();
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

	rt_shim.allocator = rt_heap_detect();
	rt_shim.action = rt_allocator_action(rt_shim.allocator, cfg->jemalloc);
	if (rt_shim.allocator == RT_ALLOCATOR_GLIBC && cfg->arena_max)
		rt_heap_set_arena_max(cfg->arena_max);
	if (rt_shim.action == RT_ACTION_NONE && cfg->gc_rounds)
		rt_warn("malloc is served by %s: rounds are counted, no allocator action is taken",
		        rt_allocator_name(rt_shim.allocator));
	/* Before main, so that every application thread inherits the blocked signal. */
	if (cfg->signal)
		rt_signal_setup(cfg->signal, -1);
	rt_signal_note_inherited();
	pthread_atfork(NULL, NULL, rt_main_atfork_child);
	rt_shim.active = rt_worker_start();
}

/* A process where roundtrim stayed inactive (most often one that does not match) has no worker
 * and no files: its exit costs nothing more than without the library. */
static void
rt_main_remove_files(void)
{
	if (rt_shim.active)
		rt_worker_remove_files();
}

__attribute__((destructor)) static void
rt_main_fini(void)
{
	rt_main_remove_files();
}

RT_EXPORT pid_t
fork(void)
{
	if (!rt_real.fork)
		rt_real_resolve();
	pid_t pid = rt_real.fork();
	/* Here every atfork child handler, the allocator's included, has run: starting a thread
	 * is safe, which it is not from inside our own atfork handler. */
	if (pid == 0 && rt_shim.active)
		rt_worker_restart_in_child();
	return pid;
}

/* os._exit() and multiprocessing's children leave through _exit, skipping destructors. */
__attribute__((noreturn)) static void
rt_main_exit_now(void (*real)(int), int status)
{
	rt_main_remove_files();
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

RT_EXPORT int
roundtrim_round(void)
{
	return rt_worker_request_round() ? 0 : -1;
}

RT_EXPORT int
roundtrim_trim(void)
{
	return rt_worker_request_trim() ? 0 : -1;
}

RT_EXPORT const char *
roundtrim_version(void)
{
	return RT_VERSION;
}
