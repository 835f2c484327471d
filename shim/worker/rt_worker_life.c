/* The worker's life words: see rt_worker_life.h. */
#include "rt_worker_life.h"
#include "rt_proc.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* How long a program thread that stands the library down waits for the worker to end: longer
 * than its longest step that does not look for requests (an allocator action: 65-155 ms per GiB
 * released). */
#define RT_WORKER_LIFE_LEAVE_WAIT_S 30

struct rt_worker_life rt_worker_life;

bool
rt_worker_life_running(void)
{
	return atomic_load(&rt_worker_life.running);
}

bool
rt_worker_life_is_self(void)
{
	return atomic_load(&rt_worker_life.tid) == gettid();
}

pid_t
rt_worker_life_tid(void)
{
	return atomic_load(&rt_worker_life.running) ? atomic_load(&rt_worker_life.tid) : 0;
}

bool
rt_worker_life_stop(void)
{
	if (rt_worker_life_is_self())
		return false;
	if (!atomic_exchange(&rt_worker_life.running, false))
		return true;
	atomic_store(&rt_worker_life.leave, true);
	rt_worker_life_wake();
	struct timespec deadline;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += RT_WORKER_LIFE_LEAVE_WAIT_S;
	pid_t tid = atomic_load(&rt_worker_life.tid);
	if (pthread_clockjoin_np(rt_worker_life.thread, NULL, CLOCK_MONOTONIC, &deadline) != 0)
		return false;
	atomic_store(&rt_worker_life.tid, 0);
	/* The join returns when the kernel clears the thread's id, before it releases the task:
	 * the program's call made again must find its room free. */
	rt_proc_await_release(tid);
	return true;
}

void
rt_worker_life_wake(void)
{
	atomic_fetch_add(&rt_worker_life.wake_word, 1);
	syscall(SYS_futex, &rt_worker_life.wake_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
