/* rt_worker_life: whether the worker runs, its thread and task id, the word that wakes it and the
 * flag that tells it to leave: what the program's threads (rt_creds, rt_tasks, rt_python,
 * rt_signal) need of the worker, below it, so that none of them calls up into rt_worker. */
#ifndef RT_WORKER_LIFE_H
#define RT_WORKER_LIFE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

struct rt_worker_life {
	atomic_bool running;
	pthread_t thread;
	atomic_int tid;
	/* Set by a program thread that stands the library down: the worker ends at its next look.
	 */
	atomic_bool leave;
	/* Bumped by every wake-up; the worker waits on it when it has no FIFO. */
	atomic_uint wake_word;
};

/* Written by rt_worker (its start, its thread, a fork child's forgetting); read by the rest. */
extern struct rt_worker_life rt_worker_life;

bool rt_worker_life_running(void);
/* Whether the calling thread is the worker. */
bool rt_worker_life_is_self(void);
/* The worker's kernel thread id, 0 while none runs in this process. */
pid_t rt_worker_life_tid(void);
/* Tells the worker to leave and waits, bounded, until it has ended; true once it has (or when
 * none ran). Never from the worker. */
bool rt_worker_life_stop(void);
/* Wakes the worker from any thread or signal handler (async-signal-safe). */
void rt_worker_life_wake(void);

#endif
