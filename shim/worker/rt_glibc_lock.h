/* rt_glibc_lock: glibc's lock protocol on an arena's mutex word, taken and given back as glibc
 * itself does, for the release (rt_glibc) and the bench that runs it in-process (arena_cpu). */
#ifndef RT_GLIBC_LOCK_H
#define RT_GLIBC_LOCK_H

#include <linux/futex.h>
#include <stdbool.h>
#include <sys/syscall.h>
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
 * it was (someone waited). */
static inline bool
rt_glibc_unlock_word(int *futex)
{
	int old = __atomic_exchange_n(futex, 0, __ATOMIC_RELEASE);
	if (old > 1)
		syscall(SYS_futex, futex, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	return old > 1;
}

#endif
