/* The keeper. Where unshare(CLONE_FILES) is refused (Docker's, podman's and Kubernetes'
 * RuntimeDefault seccomp profiles refuse unshare to a process without CAP_SYS_ADMIN), the worker
 * shares the program's descriptor table, and the library's descriptors would be the program's to
 * list, close, replace and count against its limit (roundtrim(7), DESCRIPTORS). Those profiles
 * allow clone(2) without namespace flags, so the thread that starts the library makes one more
 * task with the raw clone: a thread of the process (CLONE_THREAD: no child, no SIGCHLD, nothing
 * for waitpid) sharing everything but the descriptor table (no CLONE_FILES: clone(2) gives it a
 * copy of the table) and the filesystem context (no CLONE_FS). It keeps only the library's files in
 * its copy, the starter then closes them in the program's, and the keeper makes every system call
 * on them for the worker, through one request block and a futex word.
 *
 * glibc does not know this task: it is in no thread list, has no struct pthread, and runs with
 * the thread pointer of the thread that made it (no CLONE_SETTLS), whose TLS may be gone once
 * that thread ends. So it runs only the code between RT_KEEPER_CODE marks: raw system calls
 * (inline asm, no errno, which is TLS), no glibc function, no stack protector (its canary is
 * read through the thread pointer), no sanitizer (its runtime keeps per-thread state in TLS),
 * on a stack of its own, with every signal blocked (glibc's own among them: set*id's broadcast
 * and cancellation never reach it, and no handler of the program's ever runs on it). The Makefile
 * builds this file without sanitizers or stack protector, and its lint checks that the keeper's
 * section calls nothing and reads no %fs. For the same reason glibc's set*id broadcast does not
 * reach it: after each credential call of the program's, it takes the caller's credentials.
 *
 * Its wait on the FIFO (for the worker, which cannot poll a descriptor of the keeper's table)
 * would hold every other request up to the wait's end, a credential call of the program's among
 * them. So the keeper also polls a signalfd of its own for SIGURG, which it keeps blocked (never
 * delivered, no handler runs): a caller that finds a wait in progress sends it SIGURG with
 * tgkill, the keeper takes that signal from its signalfd and ends the wait at once. */
#include "rt_keeper.h"
#include "rt_file_rules.h"
#include "rt_probe.h"
#include "rt_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/futex.h>
#include <linux/securebits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__aarch64__)
#define RT_KEEPER_SUPPORTED 1
#endif

#define RT_KEEPER_CODE                                                                             \
	__attribute__((section(".text.rt_keeper"), no_stack_protector,                             \
	               no_sanitize("address", "thread", "undefined")))
#define RT_KEEPER_INLINE static inline __attribute__((always_inline))

/* Its stack: the keeper's frames are a few hundred bytes; a guard page below. */
#define RT_KEEPER_STACK (64 * 1024)
/* The files the library keeps. */
#define RT_KEEPER_KEEP_MAX 40
/* How long the starter waits for the keeper's first answer, a program thread for its
 * credentials (as rt_creds waits for the worker), and a stand-down for the keeper's end. */
#define RT_KEEPER_START_WAIT_S 2
#define RT_KEEPER_CREDS_WAIT_S 30
#define RT_KEEPER_STOP_WAIT_S 5
/* What cuts its wait short: a standard signal (pending ones coalesce) that does nothing where
 * it is not blocked (default: ignore). Sent again at this period while the wait lasts, in case
 * the program's sigaction(SIG_IGN) discarded it meanwhile. */
#define RT_KEEPER_WAKE_SIGNAL SIGURG
#define RT_KEEPER_WAKE_AGAIN_NS (2 * 1000 * 1000)

enum rt_keeper_state {
	RT_KEEPER_IDLE,
	RT_KEEPER_POSTED,
	RT_KEEPER_DONE,
};

enum rt_keeper_op {
	RT_KEEPER_OP_SYSCALL,
	RT_KEEPER_OP_WAIT,
	RT_KEEPER_OP_CREDS,
	RT_KEEPER_OP_EXIT,
};

/* A thread's credentials as the kernel holds them per task. The supplementary groups, as many
 * as the kernel allows (NGROUPS_MAX, 65536), are in memory of the struct's own, mapped to fit
 * (rt_keeper_fit_groups): groups[0..ngroups), then room for as many again, where the keeper
 * reads its own when it is asked to take these. */
struct rt_keeper_creds {
	unsigned ruid, euid, suid, rgid, egid, sgid;
	long securebits;
	long ngroups;
	unsigned *groups;
	long groups_room; /* how many groups[] holds; as many again follow */
	struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3];
	unsigned long long bounding, ambient; /* bit n: capability n */
	int last_cap;
};

static struct {
	/* The request word: a caller posts (POSTED), the keeper answers (DONE, or IDLE after a
	 * wait nobody collects), the caller takes the answer (IDLE). */
	_Atomic uint32_t state;
	int op;
	long nr, args[5], ret;
	/* RT_KEEPER_OP_WAIT's: in here, since the caller returns before the keeper is done. */
	struct pollfd pfd;
	struct timespec timeout;
	atomic_uint *wake;
	/* Its signalfd (RT_KEEPER_WAKE_SIGNAL), -1 without; set before it answers its start.
	 * may_wake: the starter's word that signalfd4 may be called (rt_probe). */
	int sfd;
	bool may_wake;
	/* Set, with the lock held, by a caller that wants the wait in progress to end now; resume,
	 * by the keeper, when it did: the rest of that wait is to be posted again. */
	_Atomic uint32_t cut, resume;
	/* What a program thread asks it to take; and what it holds, which only it changes: the
	 * starter's at clone, then what it took (written with the tasks' lock held). */
	struct rt_keeper_creds creds, have;
	/* The keeper's tid: set by the kernel before clone returns (CLONE_PARENT_SETTID), cleared
	 * by it when the keeper ends, with a futex wake (CLONE_CHILD_CLEARTID). */
	_Atomic pid_t tid;
	pid_t pid; /* the process it runs in: a vfork child shares this memory, not the keeper */
	/* 0 until the keeper has closed the program's descriptors in its copy: 1, or -errno. */
	_Atomic int ready;
	int keep[RT_KEEPER_KEEP_MAX];
	size_t nkeep;
	void *stack;
} rt_k;

/* One caller at a time. */
static pthread_mutex_t rt_k_lock = PTHREAD_MUTEX_INITIALIZER;
/* The credentials of the program thread that last asked (rt_keeper_take_creds). */
static struct rt_keeper_creds rt_k_asked;

/* --- What the keeper runs. */

#ifdef RT_KEEPER_SUPPORTED
RT_KEEPER_INLINE long
rt_keeper_sys(long nr, long a, long b, long c, long d, long e)
{
#if defined(__x86_64__)
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	long ret;
	__asm__ volatile("syscall"
	                 : "=a"(ret)
	                 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
	                 : "rcx", "r11", "memory");
	return ret;
#else
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	__asm__ volatile("svc 0"
	                 : "+r"(x0)
	                 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4)
	                 : "memory");
	return x0;
#endif
}
#endif

#define RT_KEEPER_SYS(nr, a, b, c, d, e)                                                           \
	rt_keeper_sys((nr), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e))

RT_KEEPER_INLINE void
rt_keeper_wake_all(_Atomic uint32_t *word)
{
	RT_KEEPER_SYS(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, 0, 0);
}

/* Closes every number of its table but keep[] (sorted). */
RT_KEEPER_CODE static long
rt_keeper_close_others(void)
{
	unsigned low = 0;
	for (size_t i = 0; i < rt_k.nkeep; i++) {
		unsigned fd = (unsigned)rt_k.keep[i];
		long rc = fd > low ? RT_KEEPER_SYS(SYS_close_range, low, fd - 1, 0, 0, 0) : 0;
		if (rc != 0)
			return rc;
		low = fd + 1;
	}
	return RT_KEEPER_SYS(SYS_close_range, low, ~0U, 0, 0, 0);
}

RT_KEEPER_CODE static long
rt_keeper_capget(struct __user_cap_data_struct *caps)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	return RT_KEEPER_SYS(SYS_capget, &hdr, caps, 0, 0, 0);
}

RT_KEEPER_CODE static long
rt_keeper_capset(const struct __user_cap_data_struct *caps)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	return RT_KEEPER_SYS(SYS_capset, &hdr, caps, 0, 0, 0);
}

/* Raises its effective set to its permitted one: what it needs (CAP_SETUID, CAP_SETGID,
 * CAP_SETPCAP) before it lowers its sets to the caller's. */
RT_KEEPER_CODE static void
rt_keeper_raise(void)
{
	struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3];
	if (rt_keeper_capget(caps) != 0)
		return;
	for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
		caps[i].effective = caps[i].permitted;
	rt_keeper_capset(caps);
}

/* Whether its groups are want's: read into the room after want's list (more than that room
 * fails, EINVAL, and differs). */
RT_KEEPER_CODE static bool
rt_keeper_same_groups(const struct rt_keeper_creds *want)
{
	unsigned *mine = want->groups + want->groups_room;
	long n = RT_KEEPER_SYS(SYS_getgroups, want->groups_room, mine, 0, 0, 0);
	if (n != want->ngroups)
		return false;
	for (long i = 0; i < n; i++)
		if (mine[i] != want->groups[i])
			return false;
	return true;
}

/* Whether its own credentials are want's. */
RT_KEEPER_CODE static bool
rt_keeper_has(const struct rt_keeper_creds *want)
{
	unsigned r, e, s;
	if (RT_KEEPER_SYS(SYS_getresuid, &r, &e, &s, 0, 0) != 0 || r != want->ruid ||
	    e != want->euid || s != want->suid)
		return false;
	if (RT_KEEPER_SYS(SYS_getresgid, &r, &e, &s, 0, 0) != 0 || r != want->rgid ||
	    e != want->egid || s != want->sgid)
		return false;
	if (!rt_keeper_same_groups(want) ||
	    RT_KEEPER_SYS(SYS_prctl, PR_GET_SECUREBITS, 0, 0, 0, 0) != want->securebits)
		return false;
	struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3];
	if (rt_keeper_capget(caps) != 0)
		return false;
	for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
		if (caps[i].effective != want->caps[i].effective ||
		    caps[i].permitted != want->caps[i].permitted ||
		    caps[i].inheritable != want->caps[i].inheritable)
			return false;
	for (int cap = 0; cap <= want->last_cap; cap++) {
		unsigned long long bit = 1ULL << cap;
		long bounding = RT_KEEPER_SYS(SYS_prctl, PR_CAPBSET_READ, cap, 0, 0, 0);
		long ambient =
		    RT_KEEPER_SYS(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0);
		if ((bounding == 1) != ((want->bounding & bit) != 0) ||
		    (ambient == 1) != ((want->ambient & bit) != 0))
			return false;
	}
	return true;
}

/* Its ambient set made want's, only where it differs: a raise needs the capability in its
 * permitted and inheritable sets (the caller's inheritable set first) and no
 * SECBIT_NO_CAP_AMBIENT_RAISE, which it does not hold yet where the caller set it since. */
RT_KEEPER_CODE static void
rt_keeper_ambient(const struct rt_keeper_creds *want)
{
	struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3];
	if (rt_keeper_capget(caps) == 0) {
		for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
			caps[i].inheritable = want->caps[i].inheritable;
		rt_keeper_capset(caps);
	}
	for (int cap = 0; cap <= want->last_cap; cap++) {
		bool wanted = (want->ambient & (1ULL << cap)) != 0;
		long set =
		    RT_KEEPER_SYS(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0);
		if (set == 1 && !wanted)
			RT_KEEPER_SYS(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, cap, 0, 0);
		else if (set == 0 && wanted)
			RT_KEEPER_SYS(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0);
	}
}

/* Takes want, in the order the kernel allows, with its effective set raised within its
 * permitted one and keep-caps on (unless the securebits it holds lock it off): first the
 * bounding set, which needs CAP_SETPCAP and so cannot wait for a uid change that may clear its
 * permitted set; then the groups and gids, the uids, the securebits the caller cleared
 * (SECBIT_NO_CAP_AMBIENT_RAISE among them), the ambient set, the securebits the caller set,
 * and last its capability sets. Each step the kernel refuses shows in the check at the end. */
RT_KEEPER_CODE static long
rt_keeper_take(const struct rt_keeper_creds *want)
{
	if (rt_keeper_has(want))
		return 0;
	rt_keeper_raise();
	RT_KEEPER_SYS(SYS_prctl, PR_SET_KEEPCAPS, 1, 0, 0, 0);
	for (int cap = 0; cap <= want->last_cap; cap++)
		if (!(want->bounding & (1ULL << cap)))
			RT_KEEPER_SYS(SYS_prctl, PR_CAPBSET_DROP, cap, 0, 0, 0);
	if (!rt_keeper_same_groups(want))
		RT_KEEPER_SYS(SYS_setgroups, want->ngroups, want->groups, 0, 0, 0);
	RT_KEEPER_SYS(SYS_setresgid, want->rgid, want->egid, want->sgid, 0, 0);
	RT_KEEPER_SYS(SYS_setresuid, want->ruid, want->euid, want->suid, 0, 0);
	rt_keeper_raise();
	long bits = RT_KEEPER_SYS(SYS_prctl, PR_GET_SECUREBITS, 0, 0, 0, 0);
	long cleared = bits & ~want->securebits & ~(long)SECBIT_KEEP_CAPS;
	if (bits >= 0 && cleared != 0)
		RT_KEEPER_SYS(SYS_prctl, PR_SET_SECUREBITS, bits & ~cleared, 0, 0, 0);
	rt_keeper_ambient(want);
	bits = RT_KEEPER_SYS(SYS_prctl, PR_GET_SECUREBITS, 0, 0, 0, 0);
	if (((bits ^ want->securebits) & ~(long)SECBIT_KEEP_CAPS) != 0)
		RT_KEEPER_SYS(SYS_prctl, PR_SET_SECUREBITS, want->securebits, 0, 0, 0);
	else
		RT_KEEPER_SYS(SYS_prctl, PR_SET_KEEPCAPS,
		              (want->securebits & SECBIT_KEEP_CAPS) != 0, 0, 0, 0);
	rt_keeper_capset(want->caps);
	return rt_keeper_has(want) ? 0 : -EPERM;
}

/* Waits until the FIFO is readable, the wait's time is up, or a caller cuts it short (rt_k.cut,
 * with RT_KEEPER_WAKE_SIGNAL): true then, the time left in rt_k.timeout, for the caller to post
 * the rest of the wait again after its own request. The signalfd is read only while a caller
 * cuts: readable with no cut, it holds a signal sent to the process (waiting in the shared
 * queue for a program thread, which may be in sigwaitinfo) or a caller's late resend, and this
 * wait stops looking at it, leaving it where it is. One read during a cut that is not the
 * caller's (the program's, dequeued after the thread's own) goes back to the process (kill:
 * its sender is lost), rarely. */
RT_KEEPER_CODE static bool
rt_keeper_wait(void)
{
	struct pollfd pfd[2] = {rt_k.pfd, {.fd = rt_k.sfd, .events = POLLIN}};
	unsigned long n = rt_k.sfd >= 0 ? 2 : 1;
	for (;;) {
		/* The kernel leaves the time still to wait in rt_k.timeout. */
		long rc = RT_KEEPER_SYS(SYS_ppoll, pfd, n, &rt_k.timeout, 0, 0);
		if (rc <= 0 || pfd[0].revents || n < 2 || !pfd[1].revents)
			return false;
		if (!atomic_load_explicit(&rt_k.cut, memory_order_acquire)) {
			n = 1;
			continue;
		}
		struct signalfd_siginfo got;
		if (RT_KEEPER_SYS(SYS_read, rt_k.sfd, &got, sizeof(got), 0, 0) != sizeof(got))
			continue;
		if (got.ssi_code == SI_TKILL && (pid_t)got.ssi_pid == rt_k.pid)
			return true;
		RT_KEEPER_SYS(SYS_kill, rt_k.pid, got.ssi_signo, 0, 0, 0);
	}
}

RT_KEEPER_CODE static int
rt_keeper_main(void *arg)
{
	(void)arg;
	/* First: its copy of the filesystem context holds the program's working directory of the
	 * moment, which a volume the program has left could not be unmounted with (EBUSY). */
	RT_KEEPER_SYS(SYS_chdir, "/", 0, 0, 0, 0);
	RT_KEEPER_SYS(SYS_prctl, PR_SET_NAME, RT_FILE_KEEPER_THREAD, 0, 0, 0);
	long rc = rt_keeper_close_others();
	rt_k.sfd = -1;
	if (rc == 0 && rt_k.may_wake) {
		uint64_t mask = UINT64_C(1) << (RT_KEEPER_WAKE_SIGNAL - 1);
		long fd = RT_KEEPER_SYS(SYS_signalfd4, -1, &mask, sizeof(mask),
		                        SFD_CLOEXEC | SFD_NONBLOCK, 0);
		rt_k.sfd = fd >= 0 ? (int)fd : -1;
	}
	atomic_store_explicit(&rt_k.ready, rc == 0 ? 1 : (int)rc, memory_order_release);
	RT_KEEPER_SYS(SYS_futex, &rt_k.ready, FUTEX_WAKE_PRIVATE, INT_MAX, 0, 0);
	if (rc != 0)
		return 0;
	for (;;) {
		uint32_t state = atomic_load_explicit(&rt_k.state, memory_order_acquire);
		if (state != RT_KEEPER_POSTED) {
			RT_KEEPER_SYS(SYS_futex, &rt_k.state, FUTEX_WAIT_PRIVATE, state, 0, 0);
			continue;
		}
		uint32_t answer = RT_KEEPER_DONE;
		switch (rt_k.op) {
		case RT_KEEPER_OP_SYSCALL:
			rt_k.ret = RT_KEEPER_SYS(rt_k.nr, rt_k.args[0], rt_k.args[1], rt_k.args[2],
			                         rt_k.args[3], rt_k.args[4]);
			break;
		case RT_KEEPER_OP_WAIT:
			/* Cut short, it is not over for the worker: the caller posts the rest. */
			if (rt_keeper_wait()) {
				atomic_store_explicit(&rt_k.resume, 1, memory_order_relaxed);
			} else {
				atomic_fetch_add_explicit(rt_k.wake, 1, memory_order_release);
				RT_KEEPER_SYS(SYS_futex, rt_k.wake, FUTEX_WAKE_PRIVATE, INT_MAX, 0,
				              0);
			}
			/* Nobody collects it: the next caller may post at once. */
			answer = RT_KEEPER_IDLE;
			break;
		case RT_KEEPER_OP_CREDS:
			rt_k.ret = rt_keeper_take(&rt_k.creds);
			break;
		case RT_KEEPER_OP_EXIT:
			/* Its table, and every file of the library's in it, goes with it. */
			return 0;
		}
		atomic_store_explicit(&rt_k.state, answer, memory_order_release);
		rt_keeper_wake_all(&rt_k.state);
	}
}

/* --- What the library's threads run. */

static void
rt_keeper_deadline(struct timespec *deadline, int seconds)
{
	clock_gettime(CLOCK_MONOTONIC, deadline);
	deadline->tv_sec += seconds;
}

/* The time left until deadline into left; false once it has passed. */
static bool
rt_keeper_left(const struct timespec *deadline, struct timespec *left)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	left->tv_sec = deadline->tv_sec - now.tv_sec;
	left->tv_nsec = deadline->tv_nsec - now.tv_nsec;
	if (left->tv_nsec < 0) {
		left->tv_sec--;
		left->tv_nsec += 1000000000L;
	}
	return left->tv_sec >= 0;
}

/* Waits while *word holds value, until deadline (NULL: for ever, looking at the keeper's life
 * every second); false when the keeper is gone or the deadline passed. */
static bool
rt_keeper_await(_Atomic uint32_t *word, uint32_t value, const struct timespec *deadline)
{
	while (atomic_load(word) == value) {
		struct timespec left = {1, 0};
		if (atomic_load(&rt_k.tid) == 0)
			return false;
		if (deadline && !rt_keeper_left(deadline, &left))
			return false;
		if (left.tv_sec >= 1)
			left = (struct timespec){1, 0};
		syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, value, &left, NULL, 0);
	}
	return true;
}

/* With the lock held, a wait in progress (POSTED, op WAIT): cuts it short, the signal sent again
 * until the keeper has ended it (the deadline passed, or the keeper gone: false). */
static bool
rt_keeper_cut_wait(const struct timespec *deadline)
{
	atomic_store(&rt_k.cut, 1);
	bool ended = true;
	while (atomic_load(&rt_k.state) == RT_KEEPER_POSTED) {
		pid_t tid = atomic_load(&rt_k.tid);
		struct timespec left = {0, RT_KEEPER_WAKE_AGAIN_NS};
		if (tid == 0 || (deadline && !rt_keeper_left(deadline, &left))) {
			ended = false;
			break;
		}
		syscall(SYS_tgkill, rt_k.pid, tid, RT_KEEPER_WAKE_SIGNAL);
		if (left.tv_sec > 0 || left.tv_nsec > RT_KEEPER_WAKE_AGAIN_NS)
			left = (struct timespec){0, RT_KEEPER_WAKE_AGAIN_NS};
		syscall(SYS_futex, &rt_k.state, FUTEX_WAIT_PRIVATE, RT_KEEPER_POSTED, &left, NULL,
		        0);
	}
	atomic_store(&rt_k.cut, 0);
	return ended;
}

/* With the lock held, once the keeper is idle again after a request: the wait that request cut
 * short goes on for the time it had left, as if nothing had come between (the worker, waiting
 * on its word, never knew). */
static void
rt_keeper_resume_wait(void)
{
	if (!atomic_exchange(&rt_k.resume, 0) || atomic_load(&rt_k.state) != RT_KEEPER_IDLE)
		return;
	rt_k.op = RT_KEEPER_OP_WAIT;
	atomic_store(&rt_k.state, RT_KEEPER_POSTED);
	syscall(SYS_futex, &rt_k.state, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* With the lock held: waits for a wait in progress, or a call whose caller stopped waiting, to
 * end; a wait is cut short where the keeper has its signalfd. */
static bool
rt_keeper_idle(const struct timespec *deadline)
{
	uint32_t state;
	while ((state = atomic_load(&rt_k.state)) != RT_KEEPER_IDLE) {
		/* An answer nobody takes: with the lock held, nobody else waits for it. */
		if (state == RT_KEEPER_DONE) {
			atomic_store(&rt_k.state, RT_KEEPER_IDLE);
			continue;
		}
		if (state == RT_KEEPER_POSTED && rt_k.op == RT_KEEPER_OP_WAIT && rt_k.sfd >= 0) {
			if (!rt_keeper_cut_wait(deadline))
				return false;
			continue;
		}
		if (!rt_keeper_await(&rt_k.state, state, deadline))
			return false;
	}
	return true;
}

static bool
rt_keeper_here(void)
{
	return atomic_load(&rt_k.tid) != 0 && rt_k.pid == getpid();
}

/* Posts the request filled in, waits for its answer (bounded by deadline, unless NULL) and
 * returns it; -ESRCH or -ETIMEDOUT when none came. With the lock held. */
static long
rt_keeper_round_trip(const struct timespec *deadline)
{
	atomic_store(&rt_k.state, RT_KEEPER_POSTED);
	syscall(SYS_futex, &rt_k.state, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	/* Never taken back (the keeper may be making it): the next caller waits for its answer,
	 * and drops it (rt_keeper_idle). */
	if (!rt_keeper_await(&rt_k.state, RT_KEEPER_POSTED, deadline))
		return atomic_load(&rt_k.tid) ? -ETIMEDOUT : -ESRCH;
	long ret = rt_k.ret;
	atomic_store(&rt_k.state, RT_KEEPER_IDLE);
	return ret;
}

long
rt_keeper_call(long nr, long a0, long a1, long a2, long a3, long a4)
{
	if (!rt_keeper_here())
		return -ESRCH;
	long ret = -ESRCH;
	pthread_mutex_lock(&rt_k_lock);
	if (rt_keeper_idle(NULL)) {
		rt_k.op = RT_KEEPER_OP_SYSCALL;
		rt_k.nr = nr;
		rt_k.args[0] = a0;
		rt_k.args[1] = a1;
		rt_k.args[2] = a2;
		rt_k.args[3] = a3;
		rt_k.args[4] = a4;
		ret = rt_keeper_round_trip(NULL);
		rt_keeper_resume_wait();
	}
	pthread_mutex_unlock(&rt_k_lock);
	return ret;
}

bool
rt_keeper_wait_readable(int fd, const struct timespec *timeout, atomic_uint *word)
{
	if (!rt_keeper_here())
		return false;
	bool posted = false;
	pthread_mutex_lock(&rt_k_lock);
	if (rt_keeper_idle(NULL)) {
		/* A new wait: one cut short is over. */
		atomic_store(&rt_k.resume, 0);
		rt_k.op = RT_KEEPER_OP_WAIT;
		rt_k.pfd = (struct pollfd){.fd = fd, .events = POLLIN};
		rt_k.timeout = *timeout;
		rt_k.wake = word;
		atomic_store(&rt_k.state, RT_KEEPER_POSTED);
		syscall(SYS_futex, &rt_k.state, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
		posted = true;
	}
	pthread_mutex_unlock(&rt_k_lock);
	return posted;
}

/* Makes c's group list hold n groups (and as many again for the keeper): a mapping of its own
 * (no malloc: this runs inside the program's credential calls), grown to fit and never shrunk.
 * Only while the keeper is not reading c. */
static bool
rt_keeper_fit_groups(struct rt_keeper_creds *c, long n)
{
	if (c->groups && n <= c->groups_room)
		return true;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	/* A page at least: a list of no group still has room for the keeper's. */
	size_t bytes = ((size_t)(n > 0 ? n : 1) * 2 * sizeof(unsigned) + page - 1) / page * page;
	unsigned *map =
	    mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return false;
	if (c->groups) {
		memcpy(map, c->groups, (size_t)c->ngroups * sizeof(unsigned));
		munmap(c->groups, (size_t)c->groups_room * 2 * sizeof(unsigned));
	}
	c->groups = map;
	c->groups_room = (long)(bytes / (2 * sizeof(unsigned)));
	return true;
}

/* Gives c's group list back; the next rt_keeper_fit_groups maps one anew. */
static void
rt_keeper_unmap_groups(struct rt_keeper_creds *c)
{
	if (c->groups)
		munmap(c->groups, (size_t)c->groups_room * 2 * sizeof(unsigned));
	c->groups = NULL;
	c->groups_room = c->ngroups = 0;
}

/* dst = src, in dst's own group list; false when it cannot hold src's. */
static bool
rt_keeper_copy_creds(struct rt_keeper_creds *dst, const struct rt_keeper_creds *src)
{
	if (!rt_keeper_fit_groups(dst, src->ngroups))
		return false;
	unsigned *groups = dst->groups;
	long room = dst->groups_room;
	*dst = *src;
	dst->groups = groups;
	dst->groups_room = room;
	memcpy(groups, src->groups, (size_t)src->ngroups * sizeof(unsigned));
	return true;
}

/* The calling thread's supplementary groups into c, however many. */
static bool
rt_keeper_read_groups(struct rt_keeper_creds *c, char *why, size_t size)
{
	/* Only this thread changes its groups, but a signal handler of the program's may. */
	for (int tries = 0; tries < 4; tries++) {
		int n = getgroups(0, NULL);
		if (n < 0)
			break;
		if (!rt_keeper_fit_groups(c, n)) {
			snprintf(why, size, "no room for the caller's %d groups (mmap: %s)", n,
			         strerror(errno));
			return false;
		}
		c->ngroups = getgroups((int)c->groups_room, (gid_t *)c->groups);
		if (c->ngroups >= 0)
			return true;
		if (errno != EINVAL)
			break;
	}
	snprintf(why, size, "cannot read the caller's groups (%s)", strerror(errno));
	return false;
}

/* The calling thread's credentials. */
static bool
rt_keeper_read_creds(struct rt_keeper_creds *c, char *why, size_t size)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	uid_t r, e, s;
	gid_t gr, ge, gs;
	if (!rt_keeper_read_groups(c, why, size))
		return false;
	if (getresuid(&r, &e, &s) != 0 || getresgid(&gr, &ge, &gs) != 0 ||
	    (c->securebits = prctl(PR_GET_SECUREBITS)) < 0 ||
	    syscall(SYS_capget, &hdr, c->caps) != 0) {
		snprintf(why, size, "cannot read the caller's credentials (%s)", strerror(errno));
		return false;
	}
	c->ruid = r, c->euid = e, c->suid = s;
	c->rgid = gr, c->egid = ge, c->sgid = gs;
	c->bounding = c->ambient = 0;
	c->last_cap = -1;
	for (int cap = 0; cap < 64; cap++) {
		int in_bounding = prctl(PR_CAPBSET_READ, cap);
		if (in_bounding < 0)
			break;
		c->last_cap = cap;
		c->bounding |= (unsigned long long)(in_bounding == 1) << cap;
		c->ambient |= (unsigned long long)(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap,
		                                         0, 0) == 1)
		              << cap;
	}
	return true;
}

static bool
rt_keeper_same_creds(const struct rt_keeper_creds *a, const struct rt_keeper_creds *b)
{
	return a->ruid == b->ruid && a->euid == b->euid && a->suid == b->suid &&
	       a->rgid == b->rgid && a->egid == b->egid && a->sgid == b->sgid &&
	       a->securebits == b->securebits && a->ngroups == b->ngroups &&
	       !memcmp(a->groups, b->groups, (size_t)a->ngroups * sizeof(a->groups[0])) &&
	       !memcmp(a->caps, b->caps, sizeof(a->caps)) && a->bounding == b->bounding &&
	       a->ambient == b->ambient;
}

bool
rt_keeper_take_creds(char *why, size_t size)
{
	/* The tasks' lock keeps it, and rt_k.have, to one thread. */
	struct rt_keeper_creds *asked = &rt_k_asked;
	struct timespec deadline;
	if (!rt_keeper_here())
		return true;
	if (!rt_keeper_read_creds(asked, why, size))
		return false;
	/* Most calls leave it holding the caller's already (the caller's change failed, or was
	 * the same): no round trip. */
	if (rt_keeper_same_creds(asked, &rt_k.have))
		return true;
	/* The worker may hold the lock through a call of its own (a write to a slow volume). */
	rt_keeper_deadline(&deadline, RT_KEEPER_CREDS_WAIT_S);
	if (pthread_mutex_clocklock(&rt_k_lock, CLOCK_MONOTONIC, &deadline) != 0) {
		snprintf(why, size, "the keeper was not free within %d s", RT_KEEPER_CREDS_WAIT_S);
		return false;
	}
	long ret = -ETIMEDOUT;
	if (rt_keeper_idle(&deadline)) {
		rt_k.op = RT_KEEPER_OP_CREDS;
		ret = rt_keeper_copy_creds(&rt_k.creds, asked) ? rt_keeper_round_trip(&deadline)
		                                               : -ENOMEM;
		rt_keeper_resume_wait();
	}
	if (ret == 0 && !rt_keeper_copy_creds(&rt_k.have, asked))
		ret = -ENOMEM;
	if (ret == -ENOMEM)
		snprintf(why, size, "no room for the caller's %ld groups", asked->ngroups);
	else if (ret == -EPERM)
		snprintf(why, size, "the keeper could not take them");
	else if (ret != 0)
		snprintf(why, size, "the keeper did not take them within %d s",
		         RT_KEEPER_CREDS_WAIT_S);
	pthread_mutex_unlock(&rt_k_lock);
	return ret == 0;
}

static int
rt_keeper_cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

bool
rt_keeper_start(const int *keep, size_t n, char *why, size_t size)
{
#ifndef RT_KEEPER_SUPPORTED
	(void)keep, (void)n;
	snprintf(why, size, "no keeper on this architecture");
	return false;
#else
	if (n > RT_KEEPER_KEEP_MAX) {
		snprintf(why, size, "%zu descriptors to keep, more than %d", n, RT_KEEPER_KEEP_MAX);
		return false;
	}
	memcpy(rt_k.keep, keep, n * sizeof(keep[0]));
	rt_k.nkeep = n;
	qsort(rt_k.keep, n, sizeof(rt_k.keep[0]), rt_keeper_cmp_int);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *map = mmap(NULL, RT_KEEPER_STACK + page, PROT_READ | PROT_WRITE,
	                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (map == MAP_FAILED) {
		snprintf(why, size, "no stack for it (mmap: %s)", strerror(errno));
		return false;
	}
	/* A guard page below; and a fork child gets no copy of a stack it has no keeper for. */
	mprotect(map, page, PROT_NONE);
	madvise(map, RT_KEEPER_STACK + page, MADV_DONTFORK);
	rt_k.stack = map;
	/* The keeper starts with this thread's credentials. */
	if (!rt_keeper_read_creds(&rt_k.have, why, size))
		goto label_fail;
	atomic_store(&rt_k.ready, 0);
	atomic_store(&rt_k.state, RT_KEEPER_IDLE);
	atomic_store(&rt_k.cut, 0);
	atomic_store(&rt_k.resume, 0);
	rt_k.pid = getpid();
	rt_k.sfd = -1;
	rt_k.may_wake = !rt_probe_kills(SYS_signalfd4);
	/* Every signal blocked in this thread while it clones, glibc's own included (which
	 * pthread_sigmask would leave out): the keeper starts with that mask and never changes it.
	 */
	uint64_t all = ~UINT64_C(0), old;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, sizeof(all));
	/* clone(2), not clone3, which Docker's profile answers with ENOSYS; no CLONE_FILES, and
	 * no CLONE_FS: a filesystem context of its own (the library's paths are absolute), so
	 * that the program's setns into a mount namespace finds its own unshared. The kernel sets
	 * rt_k.tid before the keeper runs, and clears it when the keeper has ended. */
	int rc = clone(rt_keeper_main, map + page + RT_KEEPER_STACK, RT_KEEPER_CLONE_FLAGS, NULL,
	               (pid_t *)&rt_k.tid, NULL, (pid_t *)&rt_k.tid);
	int saved_errno = errno;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof(old));
	if (rc < 0) {
		snprintf(why, size, "clone: %s", strerror(saved_errno));
		goto label_fail;
	}
	struct timespec deadline, left;
	rt_keeper_deadline(&deadline, RT_KEEPER_START_WAIT_S);
	int ready;
	while ((ready = atomic_load(&rt_k.ready)) == 0 && rt_keeper_left(&deadline, &left))
		syscall(SYS_futex, &rt_k.ready, FUTEX_WAIT_PRIVATE, 0, &left, NULL, 0);
	if (ready == 1)
		return true;
	if (ready < 0)
		snprintf(why, size, "close_range: %s", strerror(-ready));
	else
		snprintf(why, size, "it did not answer within %d s", RT_KEEPER_START_WAIT_S);
	rt_keeper_stop();
	return false;
label_fail:
	munmap(map, RT_KEEPER_STACK + page);
	rt_k.stack = NULL;
	rt_keeper_unmap_groups(&rt_k.have);
	return false;
#endif
}

pid_t
rt_keeper_tid(void)
{
	return rt_keeper_here() ? atomic_load(&rt_k.tid) : 0;
}

bool
rt_keeper_stop(void)
{
	pid_t tid = atomic_load(&rt_k.tid);
	if (!rt_k.stack || rt_k.pid != getpid())
		return true;
	struct timespec deadline, left;
	rt_keeper_deadline(&deadline, RT_KEEPER_STOP_WAIT_S);
	/* Bounded: a worker that did not end may hold the lock through a call that does not. */
	if (tid && pthread_mutex_clocklock(&rt_k_lock, CLOCK_MONOTONIC, &deadline) == 0) {
		if (rt_keeper_idle(&deadline)) {
			atomic_store(&rt_k.resume, 0);
			rt_k.op = RT_KEEPER_OP_EXIT;
			atomic_store(&rt_k.state, RT_KEEPER_POSTED);
			syscall(SYS_futex, &rt_k.state, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
		}
		pthread_mutex_unlock(&rt_k_lock);
	}
	/* The kernel clears the word when the task has left its memory (its stack free). */
	pid_t now;
	while ((now = atomic_load(&rt_k.tid)) != 0 && rt_keeper_left(&deadline, &left))
		syscall(SYS_futex, &rt_k.tid, FUTEX_WAIT_PRIVATE, now, &left, NULL, 0);
	if (atomic_load(&rt_k.tid) != 0)
		return false;
	if (tid)
		rt_proc_await_release(tid);
	munmap(rt_k.stack, RT_KEEPER_STACK + (size_t)sysconf(_SC_PAGESIZE));
	rt_k.stack = NULL;
	/* The group lists go with it (with the tasks' lock held, as every use of them is). */
	rt_keeper_unmap_groups(&rt_k.creds);
	rt_keeper_unmap_groups(&rt_k.have);
	rt_keeper_unmap_groups(&rt_k_asked);
	atomic_store(&rt_k.state, RT_KEEPER_IDLE);
	return true;
}

void
rt_keeper_forget_parent(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
	memcpy(&rt_k_lock, &fresh, sizeof(fresh));
	atomic_store(&rt_k.tid, 0);
	atomic_store(&rt_k.ready, 0);
	atomic_store(&rt_k.state, RT_KEEPER_IDLE);
	atomic_store(&rt_k.cut, 0);
	atomic_store(&rt_k.resume, 0);
	rt_k.sfd = -1;
	/* Not mapped here (MADV_DONTFORK). */
	rt_k.stack = NULL;
	rt_k.pid = 0;
}
