/* The registry of thread tallies. Threads join it at their first allocation and leave it at
 * exit (a thread-specific key's destructor), both on the cold path, under a mutex that the
 * worker takes to sum. The hot path never touches the registry: each thread writes only its
 * own tally, in its own thread-local storage. */
#include "rt_tally.h"
#include "rt_hooks.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

__thread struct rt_thread_tally rt_t;

static pthread_mutex_t rt_tally_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rt_thread_tally *rt_tally_head;
static struct rt_alloc_totals rt_tally_retired; /* what exited threads counted */
static pthread_key_t rt_tally_key;
/* What threads outside the registry sent: those that never allocated, and exiting ones. */
static _Atomic uint64_t rt_tally_unregistered_sent;
static atomic_bool rt_tally_ready;

static void
rt_tally_add(struct rt_alloc_totals *sum, const struct rt_thread_tally *t)
{
	sum->allocations += RT_TALLY_LOAD(t->allocations);
	sum->frees += RT_TALLY_LOAD(t->frees);
	sum->bytes += rt_tally_bytes(t);
	sum->sent += RT_TALLY_LOAD(t->sent);
}

static void
rt_tally_unlink(struct rt_thread_tally *t)
{
	if (t->prev)
		t->prev->next = t->next;
	else
		rt_tally_head = t->next;
	if (t->next)
		t->next->prev = t->prev;
	t->next = t->prev = NULL;
}

/* The thread leaves the registry for good, its counts so far kept: the totals never go back.
 * Whether it had joined. */
static bool
rt_tally_leave(struct rt_thread_tally *t)
{
	pthread_mutex_lock(&rt_tally_lock);
	bool was_registered = t->registered;
	if (was_registered) {
		rt_tally_unlink(t);
		rt_tally_add(&rt_tally_retired, t);
		t->registered = false;
	}
	t->retired = true;
	pthread_mutex_unlock(&rt_tally_lock);
	return was_registered;
}

/* The key's value once the program's last thread has left: its destructor runs again in glibc's
 * next round over the keys, after the program's own keys' destructors of the first. */
static char rt_tally_exit_mark;

static void
rt_tally_retire(void *arg)
{
	if (arg == &rt_tally_exit_mark) {
		/* As glibc ends a process whose last thread exits: atexit handlers, stdio flushed,
		 * in the program's descriptor table. */
		exit(0);
	}
	struct rt_thread_tally *t = arg;
	rt_tally_leave(t);
	/* Destructors that run after this one and allocate count nowhere: the thread is gone. */
	RT_TALLY_STORE(t->left, UINT64_C(1) << 62);
	RT_TALLY_STORE(t->armed, UINT64_C(1) << 62);
	if (rt_hooks.thread_exits && rt_hooks.thread_exits())
		pthread_setspecific(rt_tally_key, &rt_tally_exit_mark);
}

void
rt_tally_register(void)
{
	struct rt_thread_tally *t = &rt_t;
	if (t->registered || t->retired || !atomic_load(&rt_tally_ready))
		return;
	pthread_mutex_lock(&rt_tally_lock);
	t->prev = NULL;
	t->next = rt_tally_head;
	if (rt_tally_head)
		rt_tally_head->prev = t;
	rt_tally_head = t;
	t->registered = true;
	pthread_mutex_unlock(&rt_tally_lock);
	pthread_setspecific(rt_tally_key, t);
}

/* The calling thread may have joined already: a preloaded thread hook (a sanitizer's, a
 * profiler's) can allocate at its start, before its function runs. It leaves as an exiting
 * thread does. */
void
rt_tally_exclude_self(void)
{
	/* Or its exit would unlink it a second time. */
	if (rt_tally_leave(&rt_t))
		pthread_setspecific(rt_tally_key, NULL);
}

void
rt_tally_init(void)
{
	if (pthread_key_create(&rt_tally_key, rt_tally_retire) != 0)
		return;
	atomic_store(&rt_tally_ready, true);
	rt_tally_register();
}

void
rt_tally_count_sent(uint64_t bytes)
{
	/* An atomic add even on the thread's own count: a signal handler's send on the same thread
	 * between a load and a store would be lost. Beside the system call it costs nothing. */
	if (RT_TALLY_LOAD(rt_t.registered))
		__atomic_fetch_add(&rt_t.sent, bytes, __ATOMIC_RELAXED);
	else
		atomic_fetch_add_explicit(&rt_tally_unregistered_sent, bytes, memory_order_relaxed);
}

void
rt_tally_totals(struct rt_alloc_totals *out)
{
	pthread_mutex_lock(&rt_tally_lock);
	*out = rt_tally_retired;
	out->sent += atomic_load_explicit(&rt_tally_unregistered_sent, memory_order_relaxed);
	out->threads = 0;
	for (const struct rt_thread_tally *t = rt_tally_head; t; t = t->next) {
		rt_tally_add(out, t);
		out->threads++;
	}
	pthread_mutex_unlock(&rt_tally_lock);
}

void
rt_tally_forget_parent(void)
{
	/* The parent's other threads do not exist here; the lock may have been held at the fork. */
	rt_tally_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
	rt_tally_head = NULL;
	rt_tally_retired = (struct rt_alloc_totals){0};
	/* What the parent sent is not the child's: a child that sent nothing would look like a
	 * process that sent an update (rt_detect's start-up rule). */
	atomic_store_explicit(&rt_tally_unregistered_sent, 0, memory_order_relaxed);
	RT_TALLY_STORE(rt_t.sent, 0);
	rt_t.registered = false;
	rt_tally_register();
}
