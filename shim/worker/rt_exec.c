/* exec and spawn, interposed to hand the new program the signal mask it would have had without
 * roundtrim, and for posix_spawn also to give the library's task back when the spawn found no
 * room for its child (rt_tasks): a blocked mask survives execve, fork+execve, posix_spawn, system
 * and popen, and a program started with the trigger signal blocked never reacts to it. glibc's
 * execl*, system and popen reach execve and posix_spawn internally, not through the PLT, so each
 * entry point needs its own wrapper. */
#include "rt_fifo.h"
#include "rt_real.h"
#include "rt_signal.h"
#include "rt_tasks.h"

#include <errno.h>
#include <stdarg.h>
#include <unistd.h>

/* For calls that start another process (system): the mask only. */
#define RT_SPAWN_CALL(call)                                                                        \
	do {                                                                                       \
		struct rt_signal_exec_state rt_saved;                                              \
		rt_signal_exec_enter(&rt_saved);                                                   \
		int rt_ret = (call);                                                               \
		rt_signal_exec_leave(&rt_saved);                                                   \
		return rt_ret;                                                                     \
	} while (0)

/* For calls that replace this process's image: also our FIFO and status file, which the next
 * program would not know about, are moved aside, and back if the call returns. */
#define RT_EXEC_CALL(call)                                                                         \
	do {                                                                                       \
		bool rt_moved = rt_fifo_before_exec();                                             \
		struct rt_signal_exec_state rt_saved;                                              \
		rt_signal_exec_enter(&rt_saved);                                                   \
		int rt_ret = (call);                                                               \
		rt_signal_exec_leave(&rt_saved);                                                   \
		rt_fifo_after_failed_exec(rt_moved);                                               \
		return rt_ret;                                                                     \
	} while (0)

static int
rt_exec_missing(void)
{
	errno = ENOSYS;
	return -1;
}

RT_EXPORT int
execve(const char *path, char *const argv[], char *const envp[])
{
	RT_EXEC_CALL(rt_real.execve ? rt_real.execve(path, argv, envp) : rt_exec_missing());
}

RT_EXPORT int
execv(const char *path, char *const argv[])
{
	RT_EXEC_CALL(rt_real.execv ? rt_real.execv(path, argv) : rt_exec_missing());
}

RT_EXPORT int
execvp(const char *file, char *const argv[])
{
	RT_EXEC_CALL(rt_real.execvp ? rt_real.execvp(file, argv) : rt_exec_missing());
}

RT_EXPORT int
execvpe(const char *file, char *const argv[], char *const envp[])
{
	RT_EXEC_CALL(rt_real.execvpe ? rt_real.execvpe(file, argv, envp) : rt_exec_missing());
}

RT_EXPORT int
fexecve(int fd, char *const argv[], char *const envp[])
{
	RT_EXEC_CALL(rt_real.fexecve ? rt_real.fexecve(fd, argv, envp) : rt_exec_missing());
}

RT_EXPORT int
execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	RT_EXEC_CALL(rt_real.execveat ? rt_real.execveat(dirfd, path, argv, envp, flags)
	                              : rt_exec_missing());
}

/* The execl family: gather the variadic arguments into an argv on the stack, as glibc does. */
#define RT_EXECL_ARGV(arg, ap, argv)                                                               \
	size_t rt_argc = 1;                                                                        \
	va_start(ap, arg);                                                                         \
	while (va_arg(ap, const char *))                                                           \
		rt_argc++;                                                                         \
	va_end(ap);                                                                                \
	const char *argv[rt_argc + 1];                                                             \
	argv[0] = arg;                                                                             \
	va_start(ap, arg);                                                                         \
	for (size_t rt_i = 1; rt_i <= rt_argc; rt_i++)                                             \
	argv[rt_i] = va_arg(ap, const char *)

RT_EXPORT int
execl(const char *path, const char *arg, ...)
{
	va_list ap;
	RT_EXECL_ARGV(arg, ap, argv);
	va_end(ap);
	return execv(path, (char *const *)argv);
}

RT_EXPORT int
execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	RT_EXECL_ARGV(arg, ap, argv);
	va_end(ap);
	return execvp(file, (char *const *)argv);
}

RT_EXPORT int
execle(const char *path, const char *arg, ...)
{
	va_list ap;
	RT_EXECL_ARGV(arg, ap, argv);
	char *const *envp = va_arg(ap, char *const *);
	va_end(ap);
	return execve(path, (char *const *)argv, envp);
}

typedef int (*rt_spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                           const posix_spawnattr_t *, char *const[], char *const[]);

/* A spawn that failed for want of a task, while the library held one, is made again once it
 * gave it back (rt_tasks): no child was made. */
static int
rt_spawn_call(rt_spawn_fn real, pid_t *pid, const char *path,
              const posix_spawn_file_actions_t *actions, const posix_spawnattr_t *attr,
              char *const argv[], char *const envp[])
{
	int ret = real(pid, path, actions, attr, argv, envp);
	if (ret == EAGAIN && rt_tasks_give_back("posix_spawn")) {
		ret = real(pid, path, actions, attr, argv, envp);
		if (ret == EAGAIN && rt_tasks_more_room())
			ret = real(pid, path, actions, attr, argv, envp);
	}
	return ret;
}

/* posix_spawn: a copy of the caller's attributes that sets the clean mask, unless the caller
 * chose a mask itself. */
static int
rt_spawn(rt_spawn_fn real, pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
         const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	if (!real)
		return ENOSYS;
	short flags = 0;
	if (attr)
		posix_spawnattr_getflags(attr, &flags);
	if (!rt_signal_in_masks() || (flags & POSIX_SPAWN_SETSIGMASK))
		return rt_spawn_call(real, pid, path, actions, attr, argv, envp);

	posix_spawnattr_t copy;
	int ret = posix_spawnattr_init(&copy);
	if (ret != 0)
		return ret;
	if (attr) {
		sigset_t set;
		pid_t pgroup;
		int policy;
		struct sched_param param;
		posix_spawnattr_getsigdefault(attr, &set);
		posix_spawnattr_setsigdefault(&copy, &set);
		posix_spawnattr_getpgroup(attr, &pgroup);
		posix_spawnattr_setpgroup(&copy, pgroup);
		posix_spawnattr_getschedpolicy(attr, &policy);
		posix_spawnattr_setschedpolicy(&copy, policy);
		posix_spawnattr_getschedparam(attr, &param);
		posix_spawnattr_setschedparam(&copy, &param);
	}
	sigset_t mask;
	rt_signal_clean_mask(&mask);
	posix_spawnattr_setsigmask(&copy, &mask);
	posix_spawnattr_setflags(&copy, (short)(flags | POSIX_SPAWN_SETSIGMASK));
	ret = rt_spawn_call(real, pid, path, actions, &copy, argv, envp);
	posix_spawnattr_destroy(&copy);
	return ret;
}

RT_EXPORT int
posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
            const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	return rt_spawn(rt_real.posix_spawn, pid, path, actions, attr, argv, envp);
}

RT_EXPORT int
posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions,
             const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	return rt_spawn(rt_real.posix_spawnp, pid, file, actions, attr, argv, envp);
}

RT_EXPORT int
system(const char *command)
{
	RT_SPAWN_CALL(rt_real.system ? rt_real.system(command) : rt_exec_missing());
}

RT_EXPORT FILE *
popen(const char *command, const char *mode)
{
	struct rt_signal_exec_state saved;
	rt_signal_exec_enter(&saved);
	FILE *f = rt_real.popen ? rt_real.popen(command, mode) : NULL;
	rt_signal_exec_leave(&saved);
	return f;
}
