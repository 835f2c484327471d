/* The program's credential calls. glibc applies setuid, setgid, their e/re/res forms and
 * setgroups to every thread of the process (a SIGSETXID broadcast: each thread makes the same
 * system call) and aborts the process when the threads' results differ. A thread's result
 * depends on its own capabilities and securebits, keepcaps among them, which the program may
 * have changed in one thread only: setpriv, gosu and su-exec call PR_SET_KEEPCAPS, setresuid,
 * capset (calling thread only) and setresgid. Before each call, while the program thread waits,
 * the worker takes that thread's capability sets and securebits (capset and prctl on itself);
 * where it cannot, because the thread holds what the worker has lost for good, the library
 * stands down and the worker has ended before the call is made (roundtrim(7), PRIVILEGES).
 * initgroups calls setgroups inside glibc, out of reach: it is wrapped whole. A process can
 * enter a new user namespace only while it has one thread (unshare(2), setns(2)), and a thread
 * another mount namespace by setns only while it shares its filesystem context with no other:
 * where the library cannot make it so, it stands down first. */
#include "rt_creds.h"
#include "rt_keeper.h"
#include "rt_outputs.h"
#include "rt_python.h"
#include "rt_real.h"
#include "rt_shim.h"
#include "rt_tasks.h"
#include "rt_worker.h"
#include "rt_worker_life.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/futex.h>
#include <linux/nsfs.h>
#include <linux/securebits.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* How long a program thread waits for the worker to take its credentials: longer than any
 * step of the worker's that does not look for requests (an allocator action: 65-155 ms per GiB
 * released). A worker that has not answered by then is stood down. */
#define RT_CREDS_WAIT_S 30

/* A thread's credentials that glibc's broadcast does not carry but that decide its result. */
struct rt_creds_state {
	struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3];
	int securebits;
	/* The effective user and group the call installs, -1 for unchanged: the owner that the
	 * unnamed outputs get before it (rt_outputs_give_to). */
	uid_t owner;
	gid_t group;
};

/* The request word: a program thread posts, the worker takes it (TAKING) and answers. */
enum {
	RT_CREDS_IDLE,
	RT_CREDS_POSTED,
	RT_CREDS_TAKING,
	RT_CREDS_TAKEN,
	RT_CREDS_REFUSED,
};

static struct {
	_Atomic uint32_t word;
	/* Written by the poster before POSTED, read by the worker after it. */
	struct rt_creds_state want;
	/* The worker's securebits as it last set them (no thread can read another's), and the
	 * process it runs in: a vfork child shares this memory but not the worker. */
	atomic_int worker_securebits;
	atomic_int worker_pid;
} rt_cr;

/* Inside a wrapper in this thread: a nested call (a signal handler, initgroups' own setgroups)
 * goes straight through. */
static __thread bool rt_creds_in_call;

static bool
rt_creds_read(pid_t tid, struct rt_creds_state *out)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = tid};
	memset(out->caps, 0, sizeof(out->caps));
	return syscall(SYS_capget, &hdr, out->caps) == 0;
}

static bool
rt_creds_set_caps(const struct __user_cap_data_struct *caps)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	return syscall(SYS_capset, &hdr, caps) == 0;
}

static bool
rt_creds_same_caps(const struct rt_creds_state *a, const struct rt_creds_state *b)
{
	return memcmp(a->caps, b->caps, sizeof(a->caps)) == 0;
}

void
rt_creds_worker_starts(void)
{
	atomic_store(&rt_cr.worker_securebits, prctl(PR_GET_SECUREBITS));
	atomic_store(&rt_cr.worker_pid, getpid());
}

/* In the worker: securebits first, since setting any but keep-caps needs CAP_SETPCAP, which it
 * may have to raise from its permitted set; then its capability sets, which capset may lower
 * freely and raise only within what it still permits. */
static bool
rt_creds_take(const struct rt_creds_state *want)
{
	struct rt_creds_state have;
	int bits = prctl(PR_GET_SECUREBITS);
	if (bits < 0 || !rt_creds_read(0, &have))
		return false;
	if (bits != want->securebits) {
		if (((bits ^ want->securebits) & ~SECBIT_KEEP_CAPS) == 0) {
			prctl(PR_SET_KEEPCAPS, (want->securebits & SECBIT_KEEP_CAPS) != 0, 0, 0, 0);
		} else {
			struct rt_creds_state raised = have;
			for (size_t i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
				raised.caps[i].effective = raised.caps[i].permitted;
			rt_creds_set_caps(raised.caps);
			prctl(PR_SET_SECUREBITS, (unsigned long)want->securebits, 0, 0, 0);
		}
	}
	rt_creds_set_caps(want->caps);
	bits = prctl(PR_GET_SECUREBITS);
	atomic_store(&rt_cr.worker_securebits, bits);
	return bits == want->securebits && rt_creds_read(0, &have) &&
	       rt_creds_same_caps(&have, want);
}

void
rt_creds_serve(void)
{
	uint32_t posted = RT_CREDS_POSTED;
	if (atomic_load(&rt_cr.word) != posted ||
	    !atomic_compare_exchange_strong(&rt_cr.word, &posted, RT_CREDS_TAKING))
		return;
	/* While this thread still holds what it held (CAP_CHOWN for a root drop). */
	if (rt_cr.want.owner != (uid_t)-1 || rt_cr.want.group != (gid_t)-1)
		rt_outputs_give_to(rt_cr.want.owner, rt_cr.want.group);
	bool taken = rt_creds_take(&rt_cr.want);
	atomic_store(&rt_cr.word, taken ? RT_CREDS_TAKEN : RT_CREDS_REFUSED);
	syscall(SYS_futex, &rt_cr.word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void
rt_creds_forget_parent(void)
{
	atomic_store(&rt_cr.word, RT_CREDS_IDLE);
	atomic_store(&rt_cr.worker_pid, 0);
}

/* Posts want and waits for the worker's answer; RT_CREDS_IDLE when none came in time. */
static uint32_t
rt_creds_ask(const struct rt_creds_state *want)
{
	rt_cr.want = *want;
	atomic_store(&rt_cr.word, RT_CREDS_POSTED);
	rt_worker_life_wake();
	struct timespec now, deadline;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += RT_CREDS_WAIT_S;
	uint32_t word;
	while ((word = atomic_load(&rt_cr.word)) == RT_CREDS_POSTED || word == RT_CREDS_TAKING) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		struct timespec left = {deadline.tv_sec - now.tv_sec,
		                        deadline.tv_nsec - now.tv_nsec};
		if (left.tv_nsec < 0)
			left.tv_sec--, left.tv_nsec += 1000000000L;
		/* Withdrawn unless the worker is taking it: two system calls from done. */
		uint32_t posted = RT_CREDS_POSTED;
		if (left.tv_sec < 0 &&
		    atomic_compare_exchange_strong(&rt_cr.word, &posted, RT_CREDS_IDLE))
			return RT_CREDS_IDLE;
		struct timespec *limit = left.tv_sec < 0 ? NULL : &left;
		syscall(SYS_futex, &rt_cr.word, FUTEX_WAIT_PRIVATE, word, limit, NULL, 0);
	}
	atomic_store(&rt_cr.word, RT_CREDS_IDLE);
	return word;
}

/* In the calling thread, with the tasks' lock held, before the real call: the worker has taken
 * this thread's credentials, or has ended. */
static void
rt_creds_before(const char *call, uid_t owner, gid_t group)
{
	pid_t worker = rt_worker_life_tid();
	if (!worker || rt_worker_life_is_self() || atomic_load(&rt_cr.worker_pid) != getpid())
		return;
	struct rt_creds_state want = {.owner = owner, .group = group}, now;
	want.securebits = prctl(PR_GET_SECUREBITS);
	if (want.securebits < 0 || !rt_creds_read(0, &want))
		return;
	/* Most calls find the worker alike already, and no output to give the new user (named
	 * already, or the user unchanged): no round trip. */
	bool gives = (owner != (uid_t)-1 || group != (gid_t)-1) && rt_outputs_unnamed();
	if (rt_creds_read(worker, &now) && rt_creds_same_caps(&now, &want) &&
	    atomic_load(&rt_cr.worker_securebits) == want.securebits && !gives)
		return;
	uint32_t answer = rt_creds_ask(&want);
	if (answer == RT_CREDS_TAKEN)
		return;
	char why[256];
	if (answer == RT_CREDS_REFUSED)
		snprintf(why, sizeof(why),
		         "before %s, the worker could not take the capabilities of thread %d (it "
		         "no longer holds some of them)",
		         call, (int)gettid());
	else
		snprintf(why, sizeof(why),
		         "before %s, the worker did not take the capabilities of thread %d within "
		         "%d s",
		         call, (int)gettid(), RT_CREDS_WAIT_S);
	rt_tasks_stand_down(why);
}

/* False when the call goes straight through: nested in this thread, or the library inactive
 * here (no worker will ever start: the lock is not needed). */
static bool
rt_creds_enter(const char *call, uid_t owner, gid_t group)
{
	if (rt_creds_in_call || !atomic_load(&rt_shim_active))
		return false;
	rt_creds_in_call = true;
	int saved_errno = errno;
	rt_tasks_lock();
	rt_creds_before(call, owner, group);
	errno = saved_errno;
	return true;
}

/* In the calling thread, after the real call, with the tasks' lock held: the keeper, which
 * glibc's broadcast does not reach, takes this thread's credentials as they are now (changed by
 * the call, or by a capset or prctl of the thread's own made before it), or the library stands
 * down, its keeper ended, before the call returns. */
static void
rt_creds_after(const char *call)
{
	char cause[192], why[320];
	if (!rt_keeper_tid() || rt_keeper_take_creds(cause, sizeof(cause)))
		return;
	snprintf(why, sizeof(why),
	         "after %s, the keeper could not take the credentials of thread %d: %s", call,
	         (int)gettid(), cause);
	rt_tasks_stand_down(why);
}

static void
rt_creds_leave(bool entered, const char *call)
{
	if (!entered)
		return;
	int saved_errno = errno;
	rt_creds_after(call);
	rt_tasks_unlock();
	rt_creds_in_call = false;
	errno = saved_errno;
}

static int
rt_creds_missing(void)
{
	errno = ENOSYS;
	return -1;
}

/* owner and group: the effective user and group the call installs, -1 for unchanged. */
#define RT_CREDS_WRAPPER(name, params, args, owner, group)                                         \
	RT_EXPORT int name params                                                                  \
	{                                                                                          \
		static void *real;                                                                 \
		int(*fn) params;                                                                   \
		*(void **)&fn = rt_real_lazy(&real, #name);                                        \
		bool entered = rt_creds_enter(#name, (owner), (group));                            \
		int ret = fn ? fn args : rt_creds_missing();                                       \
		rt_creds_leave(entered, #name);                                                    \
		return ret;                                                                        \
	}

RT_CREDS_WRAPPER(setuid, (uid_t uid), (uid), uid, (gid_t)-1)
RT_CREDS_WRAPPER(setgid, (gid_t gid), (gid), (uid_t)-1, gid)
RT_CREDS_WRAPPER(seteuid, (uid_t uid), (uid), uid, (gid_t)-1)
RT_CREDS_WRAPPER(setegid, (gid_t gid), (gid), (uid_t)-1, gid)
RT_CREDS_WRAPPER(setreuid, (uid_t ruid, uid_t euid), (ruid, euid), euid, (gid_t)-1)
RT_CREDS_WRAPPER(setregid, (gid_t rgid, gid_t egid), (rgid, egid), (uid_t)-1, egid)
RT_CREDS_WRAPPER(setresuid, (uid_t ruid, uid_t euid, uid_t suid), (ruid, euid, suid), euid,
                 (gid_t)-1)
RT_CREDS_WRAPPER(setresgid, (gid_t rgid, gid_t egid, gid_t sgid), (rgid, egid, sgid), (uid_t)-1,
                 egid)
RT_CREDS_WRAPPER(setgroups, (size_t size, const gid_t *list), (size, list), (uid_t)-1, (gid_t)-1)
RT_CREDS_WRAPPER(initgroups, (const char *user, gid_t group), (user, group), (uid_t)-1, (gid_t)-1)

/* capset changes the calling thread only: no broadcast, nothing for the worker to take before;
 * the keeper follows after. */
RT_EXPORT int
capset(cap_user_header_t header, const cap_user_data_t data)
{
	static void *real;
	int (*fn)(cap_user_header_t, const cap_user_data_t);
	*(void **)&fn = rt_real_lazy(&real, "capset");
	bool entered = !rt_creds_in_call && atomic_load(&rt_shim_active);
	if (entered) {
		rt_creds_in_call = true;
		rt_tasks_lock();
	}
	int ret = fn ? fn(header, data) : rt_creds_missing();
	rt_creds_leave(entered, "capset");
	return ret;
}

/* The kernel lets only a process of one thread into another user namespace (EINVAL). */
static void
rt_creds_single_thread_for(const char *call)
{
	if (!rt_worker_life_running() || rt_worker_life_is_self())
		return;
	int saved_errno = errno;
	char why[128];
	snprintf(why, sizeof(why), "the program's %s(CLONE_NEWUSER) needs a process of one thread",
	         call);
	rt_tasks_stand_down(why);
	errno = saved_errno;
}

/* Whether a setns(fd, nstype) that failed so (EINVAL) was a switch of mount namespace alone, the
 * one that needs the calling thread's filesystem context unshared (setns(2)): fd is a mount
 * namespace's (nsfs says so, whatever nstype asked), or a process's pidfd and nstype is
 * CLONE_NEWNS. Any other fd or type fails for reasons of its own. errno stays. */
static bool
rt_creds_mount_switch(int fd, int nstype)
{
	if (errno != EINVAL || (nstype != 0 && nstype != CLONE_NEWNS))
		return false;
	int saved_errno = errno;
	bool mount = ioctl(fd, NS_GET_NSTYPE) == CLONE_NEWNS;
	if (!mount && nstype == CLONE_NEWNS) {
		char link[32], target[32];
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		mount = n > 0 && (size_t)n == strlen("anon_inode:[pidfd]") &&
		        !memcmp(target, "anon_inode:[pidfd]", (size_t)n);
	}
	errno = saved_errno;
	return mount;
}

/* The kernel moves a thread into another mount namespace by setns only while no other task
 * shares its filesystem context (EINVAL). The worker unshares its own with its descriptor
 * table and the keeper never shares it; a worker that shares the program's table shares its
 * context too. Where it alone does (the caller is the program's only thread), it stands down
 * and the call is made again; a failure of the program's own (threads of its own, a wrong
 * descriptor) comes back unchanged. */
static bool
rt_creds_own_fs_for(const char *call)
{
	int saved_errno = errno;
	if (rt_worker_life_is_self() || !rt_worker_alone_shares_fs()) {
		errno = saved_errno;
		return false;
	}
	char why[160];
	snprintf(why, sizeof(why),
	         "the program's %s(CLONE_NEWNS) needs a filesystem context that no other thread "
	         "shares",
	         call);
	bool gone = rt_tasks_stand_down(why);
	errno = saved_errno;
	return gone;
}

RT_EXPORT int
unshare(int flags)
{
	static void *real;
	int (*fn)(int);
	*(void **)&fn = rt_real_lazy(&real, "unshare");
	if (flags & CLONE_NEWUSER)
		rt_creds_single_thread_for("unshare");
	int ret = fn ? fn(flags) : rt_creds_missing();
	/* The caller has a filesystem context of its own now (CLONE_NEWNS implies CLONE_FS): the
	 * library's Python thread follows it where it is the main thread. */
	if (ret == 0 && (flags & (CLONE_FS | CLONE_NEWNS))) {
		int saved_errno = errno;
		rt_python_thread_follow();
		errno = saved_errno;
	}
	return ret;
}

RT_EXPORT int
setns(int fd, int nstype)
{
	static void *real;
	int (*fn)(int, int);
	*(void **)&fn = rt_real_lazy(&real, "setns");
	if (!fn)
		return rt_creds_missing();
	/* nstype 0 takes whatever namespace fd is: nsfs says which. A pidfd with CLONE_NEWNS and
	 * other types gets a copy of the filesystem context from the kernel: only CLONE_NEWNS
	 * alone needs it unshared. */
	int type = nstype;
	if (type == 0 && rt_worker_life_running()) {
		int saved_errno = errno;
		type = ioctl(fd, NS_GET_NSTYPE);
		errno = saved_errno;
	}
	if (type > 0 && (type & CLONE_NEWUSER))
		rt_creds_single_thread_for("setns");
	int ret = fn(fd, nstype);
	if (ret == 0 || !rt_creds_mount_switch(fd, nstype))
		return ret;
	/* The library's Python thread shares the caller's filesystem context (it must, for the
	 * finalizers it runs): it leaves, the call is made again, and a new one starts from the
	 * main thread in the context the call left. */
	if (rt_python_thread_make_room()) {
		ret = fn(fd, nstype);
		int saved_errno = errno;
		rt_python_thread_room_made();
		errno = saved_errno;
	}
	if (ret != 0 && rt_creds_mount_switch(fd, nstype) && rt_creds_own_fs_for("setns"))
		ret = fn(fd, nstype);
	return ret;
}
