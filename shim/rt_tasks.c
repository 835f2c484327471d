/* The library's tasks: their lock, and the library standing down (roundtrim(7), PRIVILEGES). */
#include "rt_tasks.h"

#include "rt_files.h"
#include "rt_real.h"
#include "rt_shim.h"

#include <errno.h>
#include <string.h>

static pthread_mutex_t rt_tasks_mutex = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

void
rt_tasks_lock(void)
{
	pthread_mutex_lock(&rt_tasks_mutex);
}

void
rt_tasks_unlock(void)
{
	pthread_mutex_unlock(&rt_tasks_mutex);
}

void
rt_tasks_forget_parent(void)
{
	pthread_mutex_t fresh = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	memcpy(&rt_tasks_mutex, &fresh, sizeof(fresh));
}

bool
rt_tasks_stand_down(const char *why)
{
	rt_tasks_lock();
	bool gone = rt_worker_stop();
	bool was_active = atomic_exchange(&rt_shim.active, false);
	if (was_active) {
		/* Nobody would serve a request sent through them any more. */
		rt_files_remove();
		rt_warn("stood down: %s; the program runs on without the library", why);
	}
	rt_tasks_unlock();
	return gone;
}

int
rt_tasks_create_thread(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *),
                       void *arg)
{
	static void *real;
	int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	*(void **)&create = rt_real_lazy(&real, "pthread_create");
	return create ? create(thread, attr, start, arg) : EAGAIN;
}
