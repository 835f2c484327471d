/* foreign_thread: for a Python program (through ctypes.CDLL), a thread of C's that calls into
 * Python, as a C library's pool calls a Python callback, started right after the calling thread
 * unshared its filesystem context, which sends the library's Python thread away: the new thread
 * reuses the stack, and so the pthread_t, that the library's thread left in glibc's cache, and
 * the library's next thread reuses the new thread's in turn. Also a C extension's call that
 * works a while with the GIL let go before its setns(2). */
#include "../tasks.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

/* unshare(CLONE_NEWNS); waits until the process is down to `tasks` tasks (the library's Python
 * thread has gone, and with its task its stack is free for reuse); then runs cb in a new thread,
 * joins it and returns its pthread_t, or 0 when something failed. */
__attribute__((visibility("default"))) unsigned long
foreign_after_unshare(void *(*cb)(void *), int tasks)
{
	pthread_t t;
	if (unshare(CLONE_NEWNS) != 0)
		return 0;
	while (wl_tasks() > tasks)
		sched_yield();
	if (pthread_create(&t, NULL, cb, NULL) != 0 || pthread_join(t, NULL) != 0)
		return 0;
	return (unsigned long)t;
}

/* Sleeps `us` microseconds (the work: another thread takes the GIL meanwhile), then
 * setns(fd, CLONE_NEWNS); returns setns's result (errno says why it failed). */
__attribute__((visibility("default"))) int
foreign_work_then_setns(int fd, unsigned us)
{
	usleep(us);
	return setns(fd, CLONE_NEWNS);
}
