/* rt_keeper: the keeper, a task of the library's that holds its descriptors in a table of its own
 * where the kernel refuses the worker one (unshare(2) under a container's seccomp profile), and
 * makes the system calls on them that the library asks for, and follows the program's credentials.
 */
#ifndef RT_KEEPER_H
#define RT_KEEPER_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

/* How the keeper is made: a thread of the process sharing everything but the descriptor table and
 * the filesystem context (rt_probe makes the same call first where a seccomp filter may kill on it). */
#define RT_KEEPER_CLONE_FLAGS                                                                      \
	(CLONE_VM | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM | CLONE_PARENT_SETTID | \
	 CLONE_CHILD_CLEARTID)

/* In the thread that starts the library, which holds the library's descriptors keep[0..n) in the
 * program's table: makes the keeper, which keeps them in its copy of the table and closes every
 * other number there. False, with the cause in why, when it cannot (clone refused, no answer). */
bool rt_keeper_start(const int *keep, size_t n, char *why, size_t size);
/* The keeper's kernel thread id, 0 while none runs in this process. */
pid_t rt_keeper_tid(void);

/* The system call nr on the keeper's table, made by the keeper: its result, or -errno (-ESRCH
 * when no keeper runs). From any thread of this process; one at a time. */
long rt_keeper_call(long nr, long a0, long a1, long a2, long a3, long a4);
/* Has the keeper wait, up to timeout, for fd to become readable, then bump *word and wake its
 * waiters (FUTEX_WAKE_PRIVATE). Returns at once; the next call waits for the wait to end. False
 * when no keeper runs. */
bool rt_keeper_wait_readable(int fd, const struct timespec *timeout, atomic_uint *word);

/* After each credential call of the program's, in the calling thread, with the tasks' lock held
 * (rt_creds): the keeper takes this thread's credentials (groups, real/effective/saved gid and
 * uid, capability sets, bounding and ambient sets, securebits), unless it holds them already.
 * False, with why, when it could not. */
bool rt_keeper_take_creds(char *why, size_t size);

/* Ends the keeper and waits, bounded, until the kernel has released its task; true once it has
 * (or when none ran). */
bool rt_keeper_stop(void);
/* In a fork child, inside fork: the parent's keeper is not here (only the forking thread is). */
void rt_keeper_forget_parent(void);

#endif
