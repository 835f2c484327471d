/* rt_glibc_lock: glibc's lock protocol on an arena's mutex word, taken and given back as glibc
 * itself does, for the release (rt_glibc) and the bench that runs it in-process (arena_cpu). */
#ifndef RT_GLIBC_LOCK_H
#define RT_GLIBC_LOCK_H

#include <linux/futex.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* glibc's __libc_lock_lock: lll_lock(LLL_PRIVATE) on an int, 0 free, 1 locked, 2 locked with
 * (possibly) waiters, and __lll_lock_wait_private when it is taken. */
static inline void
rt_glibc_lock_word(int *futex)
{
	int zero = 0;
	if (__atomic_compare_exchange_n(futex, &zero, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	if (__atomic_load_n(futex, __ATOMIC_RELAXED) != 2 &&
	    __atomic_exchange_n(futex, 2, __ATOMIC_ACQUIRE) == 0)
		return;
	do
		syscall(SYS_futex, futex, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
	while (__atomic_exchange_n(futex, 2, __ATOMIC_ACQUIRE) != 0);
}

/* glibc's __libc_lock_unlock: lll_unlock, which wakes one waiter when the word was 2; whether
 * it woke one. A word of 2 alone does not say that anyone waits: it stays 2 after its last
 * waiter took the lock (glibc's woken waiters set it, not knowing whether others sleep), and a
 * hold the release treated as waited for then handed the lock over to nobody and slept for it
 * (FUTEX_WAKE returns how many it woke: futex(2)). */
static inline bool
rt_glibc_unlock_word(int *futex)
{
	int old = __atomic_exchange_n(futex, 0, __ATOMIC_RELEASE);
	return old > 1 && syscall(SYS_futex, futex, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0) > 0;
}

/* After an unlock that woke a waiter: sleeps on the word, as it is, until that waiter has taken
 * the lock and given it back (its unlock wakes one sleeper: the word it took is 2), or for at
 * most ns when it is slow to come (or came and left without a wake: a new locker takes the word
 * from 0 to 1). A fixed sleep instead cost about 170 us a handover, most of it timer slack, where
 * the waiter needs a few tens. A wake that ends the sleep may have been meant for a glibc waiter
 * queued behind this thread (futex(2) wakes in queue order), and this thread may take no lock on
 * this word again (the arena's last hold, the release's): it is passed on at once. glibc's
 * waiters take a wake as a hint and look at the word again, so one more does no harm where
 * nobody sleeps, or where the next sleeper finds the lock taken. When the passed-on wake woke
 * someone, that thread's turn is waited for too (a few times at most): where a third thread took
 * the free lock (0 to 1) before the woken waiter had a core, that waiter found it taken and slept
 * behind this thread, and the next lock took it first, the waiter waiting one more hold (up to
 * 5 ms with holds that grow: rt_arena_waited_hold). Such a turn sleeps out its bound where that
 * thread took and gave back the lock before this one slept again (its unlock woke nobody): a
 * bound per turn is the most it costs. True when a wake ended a sleep. */
static inline bool
rt_glibc_wait_turn(int *futex, long long ns)
{
	struct timespec bound = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
	bool woken = false;
	for (int turn = 0; turn < 4; turn++) {
		int seen = __atomic_load_n(futex, __ATOMIC_RELAXED);
		if (syscall(SYS_futex, futex, FUTEX_WAIT_PRIVATE, seen, &bound, NULL, 0) != 0)
			break;
		woken = true;
		if (syscall(SYS_futex, futex, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0) <= 0)
			break;
	}
	return woken;
}

#endif
