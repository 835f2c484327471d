/* The signal trigger. Off by default (roundtrim(7), TRIGGERS): when on, the signal is blocked
 * in every application thread, so that their sleeps and reads never see EINTR, and only the
 * worker unblocks it, inside its wait. A program that installs its own disposition for that
 * signal (sigaction, signal, sigset, bsd_signal, sysv_signal) owns it from then on: the
 * library steps back first, so that the program's handler never runs on the worker. */
#include "rt_signal.h"
#include "rt_out.h"
#include "rt_real.h"
#include "rt_worker_life.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int rt_sig;              /* the configured signal, 0 when the trigger is off */
static bool rt_sig_was_blocked; /* blocked before we came: leave it blocked for the program */
static atomic_bool rt_sig_owned;
static atomic_bool rt_sig_giving_up;
static atomic_uint rt_sig_in_wait; /* futex word: the worker is inside its wait */
static atomic_uint_fast64_t rt_sig_rounds;
/* How long a program's sigaction waits for the worker to leave its wait: microseconds in
 * practice; the bound only keeps a stuck worker from holding the program. */
#define RT_SIGNAL_GIVE_UP_WAIT_NS (200 * 1000 * 1000L)

static void
rt_signal_handler(int sig, siginfo_t *info, void *uctx)
{
	(void)sig;
	(void)info;
	(void)uctx;
	int saved_errno = errno;
	atomic_fetch_add(&rt_sig_rounds, 1);
	rt_worker_life_wake();
	errno = saved_errno;
}

bool
rt_signal_setup(int sig)
{
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, sig);
	struct sigaction sa;
	if (rt_real.sigaction(sig, NULL, &sa) == 0 &&
	    (sa.sa_flags & SA_SIGINFO || sa.sa_handler != SIG_DFL)) {
		/* SIG_IGN inherited from the parent, or a handler of someone else's: taking the
		 * signal over would change what the host and the programs it execs see. */
		rt_warn("signal trigger off: signal %d already has a %s; use the FIFO or set "
		        "ROUNDTRIM_SIGNAL to another signal",
		        sig, sa.sa_handler == SIG_IGN ? "SIG_IGN disposition" : "handler");
		return false;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = rt_signal_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	if (rt_real.sigaction(sig, &sa, NULL) != 0) {
		rt_warn("signal trigger off: sigaction(%d) failed: %s", sig, strerror(errno));
		return false;
	}
	pthread_sigmask(SIG_BLOCK, &set, &old);
	rt_sig_was_blocked = sigismember(&old, sig) == 1;
	rt_sig = sig;
	atomic_store(&rt_sig_owned, true);
	return true;
}

void
rt_signal_forget_parent(void)
{
	atomic_store(&rt_sig_rounds, 0);
	atomic_store(&rt_sig_in_wait, 0);
}

bool
rt_signal_owned(void)
{
	return atomic_load(&rt_sig_owned);
}

bool
rt_signal_in_masks(void)
{
	/* Also once given up: threads that existed then keep the bit until they change their
	 * masks, and what they exec must not inherit it. */
	return rt_sig != 0 && !rt_sig_was_blocked;
}

int
rt_signal_number(void)
{
	return rt_signal_owned() ? rt_sig : 0;
}

uint64_t
rt_signal_take(void)
{
	return atomic_exchange(&rt_sig_rounds, 0);
}

void
rt_signal_begin_wait(sigset_t *mask)
{
	sigfillset(mask);
	/* Paired with rt_signal_give_up (both sequentially consistent): either the worker sees
	 * the program claiming the signal and keeps it blocked, or the program sees the worker
	 * in its wait and waits for it to end. */
	atomic_store(&rt_sig_in_wait, 1);
	if (atomic_load(&rt_sig_owned) && !atomic_load(&rt_sig_giving_up))
		sigdelset(mask, rt_sig);
}

void
rt_signal_end_wait(void)
{
	atomic_store(&rt_sig_in_wait, 0);
	syscall(SYS_futex, &rt_sig_in_wait, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* The program is about to set its own disposition for our signal: from here on it is theirs. */
static void
rt_signal_give_up(void)
{
	if (!atomic_load(&rt_sig_owned) || atomic_exchange(&rt_sig_giving_up, true))
		return;
	struct timespec slice = {0, 10 * 1000 * 1000L};
	for (long waited = 0; atomic_load(&rt_sig_in_wait) && waited < RT_SIGNAL_GIVE_UP_WAIT_NS;
	     waited += slice.tv_nsec) {
		rt_worker_life_wake();
		syscall(SYS_futex, &rt_sig_in_wait, FUTEX_WAIT_PRIVATE, 1, &slice, NULL, 0);
	}
	atomic_store(&rt_sig_owned, false);
	/* The calling thread gets the mask it would have had; threads it starts inherit it. */
	if (!rt_sig_was_blocked) {
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, rt_sig);
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	}
	rt_warn("signal trigger off: the program set its own disposition for signal %d; it is the "
	        "program's now (the FIFO still counts rounds)",
	        rt_sig);
}

/* Whether a call on sig changes its disposition while the library owns it; if so, steps back. */
static bool
rt_signal_claimed(int sig, bool changes)
{
	if (sig != rt_sig || !rt_sig || !atomic_load(&rt_sig_owned))
		return false;
	if (changes)
		rt_signal_give_up();
	return true;
}

/* What the program would have seen without the library: the default disposition, as found. */
static void
rt_signal_as_found(struct sigaction *old)
{
	memset(old, 0, sizeof(*old));
	old->sa_handler = SIG_DFL;
}

RT_EXPORT int
sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!rt_real.sigaction)
		rt_real_resolve();
	if (!rt_signal_claimed(sig, act != NULL))
		return rt_real.sigaction(sig, act, old);
	int rc = rt_real.sigaction(sig, act, NULL);
	if (rc == 0 && old)
		rt_signal_as_found(old);
	return rc;
}

/* signal(), bsd_signal(), sysv_signal() and sigset() reach glibc's sigaction internally, not
 * through ours: each needs its own wrapper. */
#define RT_SIGNAL_SETTER(name)                                                                     \
	RT_EXPORT sighandler_t name(int sig, sighandler_t handler)                                 \
	{                                                                                          \
		if (!rt_real.name)                                                                 \
			rt_real_resolve();                                                         \
		if (!rt_real.name) {                                                               \
			errno = ENOSYS;                                                            \
			return SIG_ERR;                                                            \
		}                                                                                  \
		bool ours = rt_signal_claimed(sig, handler != SIG_HOLD);                           \
		sighandler_t old = rt_real.name(sig, handler);                                     \
		return ours && old != SIG_ERR ? SIG_DFL : old;                                     \
	}

RT_SIGNAL_SETTER(signal)
RT_SIGNAL_SETTER(bsd_signal)
RT_SIGNAL_SETTER(sysv_signal)
RT_SIGNAL_SETTER(sigset)

/* glibc's signals 32 (SIGCANCEL) and 33 (SIGSETXID) are never touched, not even around exec:
 * threads glibc starts without pthread_create (timer_create's SIGEV_THREAD, aio, getaddrinfo_a,
 * mq_notify) may make set*id calls, which wait until 33 has reached every thread, at any time.
 * The calling thread's mask is what changes: the new program must not inherit our block. */
void
rt_signal_exec_enter(struct rt_signal_exec_state *state)
{
	if (!rt_signal_in_masks()) {
		pthread_sigmask(SIG_BLOCK, NULL, &state->mask);
		return;
	}
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, rt_sig);
	pthread_sigmask(SIG_UNBLOCK, &set, &state->mask);
}

void
rt_signal_exec_leave(const struct rt_signal_exec_state *state)
{
	int saved_errno = errno;
	pthread_sigmask(SIG_SETMASK, &state->mask, NULL);
	errno = saved_errno;
}

void
rt_signal_clean_mask(sigset_t *mask)
{
	pthread_sigmask(SIG_BLOCK, NULL, mask);
	if (rt_signal_in_masks())
		sigdelset(mask, rt_sig);
}
