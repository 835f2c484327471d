#include "rt_signal.h"

#include "rt_shim.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

static int rt_sig;              /* 0 when the signal trigger is off */
static bool rt_sig_was_blocked; /* blocked before we came: leave it blocked for exec'd programs */
static int rt_sig_fd = -1;
static atomic_int rt_sig_wake_fd = -1;
static atomic_uint_fast64_t rt_sig_fallback_rounds;
static unsigned rt_sig_internal_ignored; /* bit i: signal 32 + i was SIG_IGN at load */

/* glibc keeps signals 32 (SIGCANCEL) and 33 (SIGSETXID) for itself; SIGRTMIN is above them. */
#define RT_SIGNAL_GLIBC_FIRST 32

/* Runs only in a thread that unblocked the signal: the exec/spawn windows above, or a thread the
 * application gave its own mask. Async-signal-safe: an atomic add and a write. */
static void
rt_signal_fallback(int sig, siginfo_t *info, void *uctx)
{
	(void)sig;
	(void)info;
	(void)uctx;
	int saved_errno = errno;
	atomic_fetch_add(&rt_sig_fallback_rounds, 1);
	uint64_t one = 1;
	int fd = atomic_load(&rt_sig_wake_fd);
	if (fd >= 0 && write(fd, &one, sizeof(one)) < 0) {
		/* The eventfd counter is saturated only if the worker is gone; the round is
		 * still counted above. */
	}
	errno = saved_errno;
}

bool
rt_signal_setup(int sig, int wake_fd)
{
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, sig);
	atomic_store(&rt_sig_wake_fd, wake_fd);
	struct sigaction sa;
	if (sigaction(sig, NULL, &sa) == 0 &&
	    (sa.sa_flags & SA_SIGINFO || sa.sa_handler != SIG_DFL)) {
		/* SIG_IGN inherited from the parent, or a handler of someone else's: taking the
		 * signal over would change what the host and the programs it execs see. */
		rt_warn("signal trigger off: signal %d already has a %s; use the FIFO or set "
		        "ROUNDTRIM_SIGNAL to another signal",
		        sig, sa.sa_handler == SIG_IGN ? "SIG_IGN disposition" : "handler");
		return false;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = rt_signal_fallback;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL) != 0) {
		rt_warn("signal trigger off: sigaction(%d) failed: %s", sig, strerror(errno));
		return false;
	}
	pthread_sigmask(SIG_BLOCK, &set, &old);
	rt_sig_was_blocked = sigismember(&old, sig) == 1;
	rt_sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (rt_sig_fd < 0) {
		rt_warn("signal trigger off: signalfd failed: %s", strerror(errno));
		if (!rt_sig_was_blocked)
			pthread_sigmask(SIG_UNBLOCK, &set, NULL);
		signal(sig, SIG_DFL);
		return false;
	}
	rt_sig = sig;
	return true;
}

void
rt_signal_forget_parent(void)
{
	atomic_store(&rt_sig_wake_fd, -1);
	atomic_store(&rt_sig_fallback_rounds, 0);
}

void
rt_signal_set_wake_fd(int wake_fd)
{
	atomic_store(&rt_sig_wake_fd, wake_fd);
}

int
rt_signal_fd(void)
{
	return rt_sig_fd;
}

uint64_t
rt_signal_drain(void)
{
	uint64_t rounds = atomic_exchange(&rt_sig_fallback_rounds, 0);
	if (rt_sig_fd < 0)
		return rounds;
	struct signalfd_siginfo info[64];
	for (;;) {
		ssize_t n = read(rt_sig_fd, info, sizeof(info));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		rounds += (uint64_t)n / sizeof(info[0]);
	}
	return rounds;
}

bool
rt_signal_owned(void)
{
	return rt_sig != 0;
}

/* glibc's sigaction() refuses its internal signals (EINVAL), so these go to the kernel. */
static int
rt_signal_raw_action(int sig, const struct rt_kernel_sigaction *act,
                     struct rt_kernel_sigaction *old)
{
	return (int)syscall(SYS_rt_sigaction, sig, act, old, sizeof(uint64_t));
}

void
rt_signal_note_inherited(void)
{
	for (int i = 0; i < 2 && RT_SIGNAL_GLIBC_FIRST + i < SIGRTMIN; i++) {
		struct rt_kernel_sigaction old;
		if (rt_signal_raw_action(RT_SIGNAL_GLIBC_FIRST + i, NULL, &old) == 0 &&
		    old.handler == (void *)SIG_IGN)
			rt_sig_internal_ignored |= 1u << i;
	}
}

void
rt_signal_exec_enter(struct rt_signal_exec_state *state)
{
	state->reignored = 0;
	/* As glibc's posix_spawn does in its child: internal signals go back to SIG_IGN. Only
	 * for those the process inherited ignored, so that nothing changes for everyone else. */
	for (int i = 0; i < 2; i++) {
		if (!(rt_sig_internal_ignored & (1u << i)))
			continue;
		struct rt_kernel_sigaction ign = {.handler = (void *)SIG_IGN};
		if (rt_signal_raw_action(RT_SIGNAL_GLIBC_FIRST + i, &ign, &state->internal[i]) == 0)
			state->reignored |= 1u << i;
	}
	if (!rt_sig || rt_sig_was_blocked) {
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
	for (int i = 0; i < 2; i++)
		if (state->reignored & (1u << i))
			rt_signal_raw_action(RT_SIGNAL_GLIBC_FIRST + i, &state->internal[i], NULL);
	errno = saved_errno;
}

void
rt_signal_clean_mask(sigset_t *mask)
{
	pthread_sigmask(SIG_BLOCK, NULL, mask);
	if (rt_sig && !rt_sig_was_blocked)
		sigdelset(mask, rt_sig);
}
