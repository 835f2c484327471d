/* The release's handover of an arena's lock (shim/worker/rt_glibc_lock.h) against glibc's lock
 * protocol, with real threads sleeping on a real word: whoever sleeps on it is woken in turn. */
#include "../workloads/asleep.h"
#include "worker/rt_glibc_lock.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>

/* Long enough never to be reached on a loaded machine; only a broken protocol waits it out. */
#define T_BOUND_NS (10LL * 1000 * 1000 * 1000)
/* The worker's bound on its turn (50 us in the library): well under T_BOUND_NS, since a turn
 * after a passed-on wake may rightly sleep it out, where the thread that wake woke took and gave
 * back the lock before the worker slept again (its unlock then wakes nobody). */
#define T_TURN_NS (1000LL * 1000 * 1000)

static int64_t
t_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
t_pause(void)
{
	struct timespec ts = {0, 200 * 1000};
	nanosleep(&ts, NULL);
}

static void
t_wait_until_asleep(const atomic_int *tid, const int *word)
{
	int64_t end = t_now_ns() + T_BOUND_NS;
	while (!(atomic_load(tid) && asleep_on(atomic_load(tid), word))) {
		cr_assert_lt(t_now_ns(), end, "the thread never slept on the word");
		t_pause();
	}
}

static void
t_wait_until(const atomic_int *flag, const char *what)
{
	int64_t end = t_now_ns() + T_BOUND_NS;
	while (!atomic_load(flag)) {
		cr_assert_lt(t_now_ns(), end, "%s", what);
		t_pause();
	}
}

struct t_locker {
	int *word;
	atomic_int tid;
	atomic_int took; /* had the lock */
	atomic_int go;   /* may give it back */
};

/* A thread of the program: glibc's lock, then its unlock once told. */
static void *
t_glibc_thread(void *arg)
{
	struct t_locker *l = arg;
	atomic_store(&l->tid, (int)syscall(SYS_gettid));
	rt_glibc_lock_word(l->word);
	atomic_store(&l->took, 1);
	while (!atomic_load(&l->go))
		t_pause();
	rt_glibc_unlock_word(l->word);
	return NULL;
}

Test(glibc_lock, an_unlock_with_nobody_asleep_says_nobody_waited)
{
	/* A woken waiter leaves the word at 2 for its whole hold, whether or not anyone else
	 * sleeps: the release treated every such hold as waited for, and handed the lock over to
	 * nobody. */
	int word = 2;
	cr_assert_not(rt_glibc_unlock_word(&word));
	cr_assert_eq(word, 0);
	word = 1;
	cr_assert_not(rt_glibc_unlock_word(&word));
}

Test(glibc_lock, an_unlock_that_wakes_a_sleeper_says_so)
{
	int word = 0;
	rt_glibc_lock_word(&word);
	struct t_locker a = {.word = &word, .go = 1};
	pthread_t t;
	pthread_create(&t, NULL, t_glibc_thread, &a);
	t_wait_until_asleep(&a.tid, &word);
	cr_assert(rt_glibc_unlock_word(&word));
	t_wait_until(&a.took, "the woken thread never took the lock");
	pthread_join(t, NULL);
	cr_assert_eq(word, 0);
}

/* A thread of the program that keeps the lock until `sleeper` sleeps on the word (in its wait
 * for its turn, or in its lock once it found the lock taken): the worker's turn then always
 * ends with a wake, never with its bound, whichever of them came first (else the waiter could
 * take and give back the lock before the worker slept, and the worker sleep out its bound). */
struct t_keeper {
	struct t_locker l;
	int sleeper;
};

static void *
t_keeper_thread(void *arg)
{
	struct t_keeper *k = arg;
	atomic_store(&k->l.tid, (int)syscall(SYS_gettid));
	rt_glibc_lock_word(k->l.word);
	atomic_store(&k->l.took, 1);
	int64_t end = t_now_ns() + T_BOUND_NS;
	while (!asleep_on(k->sleeper, k->l.word) && t_now_ns() < end)
		t_pause();
	rt_glibc_unlock_word(k->l.word);
	return NULL;
}

Test(glibc_lock, the_next_hold_comes_after_the_woken_waiter_s_turn)
{
	int word = 0;
	rt_glibc_lock_word(&word);
	struct t_keeper keeper = {.l = {.word = &word}, .sleeper = (int)syscall(SYS_gettid)};
	pthread_t t;
	pthread_create(&t, NULL, t_keeper_thread, &keeper);
	t_wait_until_asleep(&keeper.l.tid, &word);
	cr_assert(rt_glibc_unlock_word(&word));
	rt_glibc_wait_turn(&word, T_TURN_NS);
	rt_glibc_lock_word(&word);
	cr_assert(atomic_load(&keeper.l.took),
	          "the worker took the lock back before the waiter had it");
	rt_glibc_unlock_word(&word);
	pthread_join(t, NULL);
}

struct t_worker {
	int *word;
	bool lock_again;        /* a hold after the turn, as in the middle of an arena's release */
	const atomic_int *turn; /* a thread whose turn comes before that hold, or NULL */
	atomic_int had_turn;    /* whether it had had the lock when the worker took it */
	atomic_int tid;
	atomic_int woken;
	atomic_int done;
};

/* The worker's side of a handover: its turn, then perhaps a hold of this word again. */
static void *
t_worker_thread(void *arg)
{
	struct t_worker *k = arg;
	atomic_store(&k->tid, (int)syscall(SYS_gettid));
	atomic_store(&k->woken, rt_glibc_wait_turn(k->word, T_TURN_NS));
	if (k->lock_again) {
		rt_glibc_lock_word(k->word);
		if (k->turn)
			atomic_store(&k->had_turn, atomic_load(k->turn));
		rt_glibc_unlock_word(k->word);
	}
	atomic_store(&k->done, 1);
	return NULL;
}

/* The worker sleeps on the free word for its turn; A takes the lock from 0 to 1; B comes, finds
 * it taken and sleeps behind the worker. A's unlock wakes the first sleeper, the worker, and B
 * sleeps on a free word unless that wake is passed on: after the arena's last hold the worker
 * never takes this lock again, and within one it would take it from 0 to 1 and give it back
 * without a wake. */
static void
t_queued_behind_the_worker(bool lock_again)
{
	int word = 0;
	struct t_worker k = {.word = &word, .lock_again = lock_again};
	pthread_t tk, ta, tb;
	pthread_create(&tk, NULL, t_worker_thread, &k);
	t_wait_until_asleep(&k.tid, &word);
	struct t_locker a = {.word = &word}, b = {.word = &word, .go = 1};
	pthread_create(&ta, NULL, t_glibc_thread, &a);
	t_wait_until(&a.took, "A never took the free lock");
	pthread_create(&tb, NULL, t_glibc_thread, &b);
	t_wait_until_asleep(&b.tid, &word);
	atomic_store(&a.go, 1);
	t_wait_until(&k.done, "the worker never had its turn");
	cr_assert(atomic_load(&k.woken), "A's unlock woke B before the worker, queued first");
	t_wait_until(&b.took, "B was left asleep on a free lock");
	pthread_join(tk, NULL);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	cr_assert_eq(word, 0);
}

Test(glibc_lock, a_waiter_queued_behind_the_worker_is_woken_after_the_arena_s_last_hold)
{
	t_queued_behind_the_worker(false);
}

Test(glibc_lock, a_waiter_queued_behind_the_worker_is_woken_when_the_worker_holds_again)
{
	t_queued_behind_the_worker(true);
}

/* The worker's turn after its unlock woke T: a third thread, G (this one), took the free lock
 * from 0 to 1 before T had a core; T found it taken and slept, now behind the worker, and G's
 * unlock wakes the worker first. Its next hold still comes after T's turn: before, it took the
 * lock at once and T waited one more whole hold (5 ms with holds that grow). */
Test(glibc_lock, a_third_locker_puts_the_worker_s_next_hold_after_the_woken_thread_s_turn)
{
	int word = 0;
	rt_glibc_lock_word(&word);
	struct t_locker t = {.word = &word, .go = 1};
	struct t_worker k = {.word = &word, .lock_again = true, .turn = &t.took};
	pthread_t tk, tt;
	pthread_create(&tk, NULL, t_worker_thread, &k);
	t_wait_until_asleep(&k.tid, &word);
	pthread_create(&tt, NULL, t_glibc_thread, &t);
	t_wait_until_asleep(&t.tid, &word);
	cr_assert(rt_glibc_unlock_word(&word), "G's unlock woke nobody");
	t_wait_until(&k.done, "the worker never had its turn");
	cr_assert(atomic_load(&k.had_turn), "the worker held the lock again before T had its turn");
	t_wait_until(&t.took, "T was left asleep");
	pthread_join(tk, NULL);
	pthread_join(tt, NULL);
	cr_assert_eq(word, 0);
}
