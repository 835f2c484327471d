/* The probe. A seccomp filter may answer a system call by killing the process (systemd's
 * SystemCallFilter= without SystemCallErrorNumber=, a profile's SCMP_ACT_KILL_PROCESS): a call
 * that only the library makes would then kill a program that runs fine without it. No call
 * tells what a filter will do with another, so where /proc/self/status shows a filter, the
 * thread that starts the library makes each call the library may make, and a program of its
 * kind may not, in a throwaway child first: a clone with memory of its own (a copy, as fork's,
 * so that its death or core dump is its own: the kernel before 5.16 kills every process that
 * shares the memory of one that dumps core) and nothing else shared, while this thread waits
 * (CLONE_VFORK), whose calls take arguments that change nothing (an
 * empty path, descriptor -1, length 0) or change only the child (its own descriptor table,
 * credentials, signal handlers and core size limit, which it sets to 0 first). It allocates
 * nothing, takes no lock, runs no handler of the program's and no atexit handler (its end is
 * the exit system call), and leaves the program's dumpable flag alone. The child notes each call
 * in a shared page before it makes it; when the filter kills it (SIGSYS), that call is the one.
 * The list is roundtrim(7), SYSTEM CALLS. */
#include "rt_probe.h"
#include "rt_keeper.h"
#include "rt_pages.h"
#include "rt_procfs.h"
#include "rt_procread.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The child's code runs on a stack of its own with (a copy of) this thread's thread pointer: no
 * sanitizer (its runtime would take the child for this thread). */
#define RT_PROBE_CHILD __attribute__((noinline, no_sanitize("address", "thread", "undefined")))
#define RT_PROBE_STACK (32 * 1024)
/* An argument that is the address of the child's scratch, zeroed before each call: an empty
 * path, a zero timeout, a capability header of no version, an empty signal set. */
#define RT_PROBE_SCRATCH (LONG_MIN + 1)
#define S RT_PROBE_SCRATCH

struct rt_probe_call {
	const char *name;
	long nr;
	long args[6];
	/* The library does without it: what needs it is off (rt_probe_kills). */
	bool optional;
};

static const struct rt_probe_call rt_probe_calls[] = {
    /* The start (rt_tasks, rt_worker): unshare allowed?; the worker thread (glibc's
     * pthread_create); its table of its own; the program's stderr of the moment, through a
     * pidfd (without it, the stderr of start-up). */
    {"unshare", SYS_unshare, {0}, false},
    {"clone3", SYS_clone3, {S, 0}, false},
    {"unshare", SYS_unshare, {CLONE_FILES | CLONE_FS}, false},
    /* The worker's and keeper's working directory, "/" (none pins a mount the program left). */
    {"chdir", SYS_chdir, {S}, false},
    {"close_range", SYS_close_range, {~0U, ~0U, 0}, false},
    {"pidfd_open", SYS_pidfd_open, {-1, 0}, true},
    {"pidfd_getfd", SYS_pidfd_getfd, {-1, -1, 0}, true},
    /* The keeper (rt_keeper): its clone, with CLONE_PIDFD on the pointer of
     * CLONE_PARENT_SETTID, which the kernel refuses (EINVAL) once the filter let it through;
     * the wake of its waits (without it, a credential change waits for the wait's end). */
    {"clone", SYS_clone, {RT_KEEPER_CLONE_FLAGS | CLONE_PIDFD, 0, S, S, S}, false},
    {"signalfd4", SYS_signalfd4, {-1, S, 8, SFD_CLOEXEC | SFD_NONBLOCK}, true},
    {"tgkill", SYS_tgkill, {-1, -1, 0}, false},
    /* Files: the FIFO and status file, the outputs and their names, /proc. */
    {"mkdir", SYS_mkdir, {S, 0700}, false},
    {"mknodat", SYS_mknodat, {AT_FDCWD, S, S_IFIFO | 0600, 0}, false},
    {"fchmod", SYS_fchmod, {-1, 0600}, false},
    {"fchown", SYS_fchown, {-1, -1, -1}, false},
    {"fcntl", SYS_fcntl, {-1, F_DUPFD_CLOEXEC, 0}, false},
    {"dup", SYS_dup, {-1}, false},
    /* glibc's fstat, and the keeper's for the worker. */
    {"newfstatat", SYS_newfstatat, {-1, S, S, AT_EMPTY_PATH}, false},
    {"ftruncate", SYS_ftruncate, {-1, 0}, false},
    {"pread64", SYS_pread64, {-1, S, 0, 0}, false},
    {"pwrite64", SYS_pwrite64, {-1, S, 0, 0}, false},
    {"getdents64", SYS_getdents64, {-1, S, 0}, false},
    {"readlink", SYS_readlink, {S, S, 1}, false},
    {"linkat", SYS_linkat, {AT_FDCWD, S, AT_FDCWD, S, AT_SYMLINK_FOLLOW}, false},
    {"rename", SYS_rename, {S, S}, false},
    {"unlink", SYS_unlink, {S}, false},
    {"unlinkat", SYS_unlinkat, {AT_FDCWD, S, 0}, false},
    {"ioctl", SYS_ioctl, {-1, NS_GET_NSTYPE}, false},
    /* Waits, clocks, memory, and the processes it looks at. */
    {"futex", SYS_futex, {S, FUTEX_WAKE_PRIVATE, 1}, false},
    {"ppoll", SYS_ppoll, {0, 0, S, 0, 8}, false},
    {"clock_gettime", SYS_clock_gettime, {CLOCK_PROCESS_CPUTIME_ID, S}, false},
    {"clock_nanosleep", SYS_clock_nanosleep, {CLOCK_MONOTONIC, 0, S, 0}, false},
    {"madvise", SYS_madvise, {0, 0, MADV_DONTNEED}, false},
    {"madvise", SYS_madvise, {0, 0, MADV_DONTFORK}, false},
    {"kill", SYS_kill, {0, 0}, false},
    /* glibc's arena release and the sampler's Python frames read this process through it
     * (without it, malloc_trim; no frames). */
    {"process_vm_readv", SYS_process_vm_readv, {0, 0, 0, 0, 0, 0}, true},
    {"rt_sigaction", SYS_rt_sigaction, {SIGUSR1, 0, S, 8}, false},
    {"rt_sigprocmask", SYS_rt_sigprocmask, {SIG_BLOCK, 0, S, 8}, false},
    {"getpid", SYS_getpid, {0}, false},
    {"gettid", SYS_gettid, {0}, false},
    /* Credentials: read at start, followed after the program's changes (rt_creds,
     * rt_keeper). */
    {"getuid", SYS_getuid, {0}, false},
    {"geteuid", SYS_geteuid, {0}, false},
    {"getgroups", SYS_getgroups, {0, 0}, false},
    {"getresuid", SYS_getresuid, {S, S, S}, false},
    {"getresgid", SYS_getresgid, {S, S, S}, false},
    {"capget", SYS_capget, {S, S}, false},
    {"capset", SYS_capset, {S, S}, false},
    {"setgroups", SYS_setgroups, {-1, 0}, false},
    {"setresgid", SYS_setresgid, {-1, -1, -1}, false},
    {"setresuid", SYS_setresuid, {-1, -1, -1}, false},
    {"prctl", SYS_prctl, {PR_GET_SECUREBITS}, false},
    {"prctl", SYS_prctl, {PR_SET_NAME, S}, false},
    {"prctl", SYS_prctl, {PR_CAPBSET_READ, 0}, false},
    {"prctl", SYS_prctl, {PR_CAPBSET_DROP, -1}, false},
    {"prctl", SYS_prctl, {PR_SET_KEEPCAPS, 0}, false},
    {"prctl", SYS_prctl, {PR_SET_SECUREBITS, 0}, false},
    {"prctl", SYS_prctl, {PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, 0, 0, 0}, false},
    {"prctl", SYS_prctl, {PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0}, false},
    {"prctl", SYS_prctl, {PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, -1, 0, 0}, false},
};
#undef S

#define RT_PROBE_N (sizeof(rt_probe_calls) / sizeof(rt_probe_calls[0]))
/* Before the table, the child's own prlimit64 (no core dump of it) and rt_sigprocmask; after it, it
 * returns from a handled signal (glibc's set*id broadcast reaches the library's threads too), then
 * ends as a thread does. */
#define RT_PROBE_LIMIT RT_PROBE_N
#define RT_PROBE_MASK (RT_PROBE_N + 1)
#define RT_PROBE_SIGRETURN (RT_PROBE_N + 2)
#define RT_PROBE_EXIT (RT_PROBE_N + 3)
#define RT_PROBE_DONE (RT_PROBE_N + 4)

static struct {
	/* The call the child is at: in a page shared with it (MAP_SHARED), the rest of this being
	 * the child's copy. */
	volatile size_t *at;
	size_t from;
	unsigned char scratch[256] __attribute__((aligned(16)));
	char stack[RT_PROBE_STACK] __attribute__((aligned(16)));
	/* The calls it saw the filter kill on. */
	bool killed[RT_PROBE_DONE];
} rt_p RT_PAGES_APART;

/* A signal handler's return: the restorer that a handler installed with SA_RESTORER returns to
 * (glibc's is not exported). */
#define RT_PROBE_STR_(x) #x
#define RT_PROBE_STR(x) RT_PROBE_STR_(x)
#if defined(__x86_64__)
#define RT_PROBE_RESTORER 1
__asm__(".text\n.p2align 4\nrt_probe_restorer:\n\tmov $" RT_PROBE_STR(
    SYS_rt_sigreturn) ", %eax\n\tsyscall\n");
#elif defined(__aarch64__)
#define RT_PROBE_RESTORER 1
__asm__(".text\n.p2align 2\nrt_probe_restorer:\n\tmov x8, #" RT_PROBE_STR(
    SYS_rt_sigreturn) "\n\tsvc 0\n");
#endif
#ifdef RT_PROBE_RESTORER
void rt_probe_restorer(void);
#endif

RT_PROBE_CHILD static void
rt_probe_handler(int sig)
{
	(void)sig;
}

RT_PROBE_CHILD static int
rt_probe_child(void *arg)
{
	(void)arg;
	/* No core dump of the child (a seccomp kill dumps core): its own limit. */
	struct rlimit none = {0, 0};
	*rt_p.at = RT_PROBE_LIMIT;
	syscall(SYS_prlimit64, 0, RLIMIT_CORE, &none, NULL);
	/* Every signal blocked, glibc's own included, in the child only: no handler of the
	 * program's runs in it (until then only a signal to its process group reaches it, and the
	 * program has installed no handler before this constructor). The parent blocks none
	 * around the clone: its rt_sigprocmask would be a call of the library's made before it is
	 * probed (a plain program, /bin/echo, makes none), and it waits for the child in the
	 * kernel, where no handler runs. */
	uint64_t all = ~UINT64_C(0);
	*rt_p.at = RT_PROBE_MASK;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, sizeof(all));
	for (size_t i = rt_p.from; i < RT_PROBE_N; i++) {
		const struct rt_probe_call *c = &rt_probe_calls[i];
		long a[6];
		for (size_t b = 0; b < sizeof(rt_p.scratch); b++)
			rt_p.scratch[b] = 0;
		for (int j = 0; j < 6; j++)
			a[j] = c->args[j] == RT_PROBE_SCRATCH ? (long)(uintptr_t)rt_p.scratch
			                                      : c->args[j];
		*rt_p.at = i;
		syscall(c->nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	}
#ifdef RT_PROBE_RESTORER
	/* A handler of the child's own (no CLONE_SIGHAND: the program's stay as they are). */
	struct {
		void (*handler)(int);
		unsigned long flags;
		void (*restorer)(void);
		uint64_t mask;
	} mine = {rt_probe_handler, 0x04000000UL /* SA_RESTORER */, rt_probe_restorer,
	          ~UINT64_C(0)};
	uint64_t usr1 = UINT64_C(1) << (SIGUSR1 - 1);
	*rt_p.at = RT_PROBE_SIGRETURN;
	syscall(SYS_rt_sigaction, SIGUSR1, &mine, NULL, 8);
	syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &usr1, NULL, 8);
	syscall(SYS_tgkill, syscall(SYS_getpid), syscall(SYS_gettid), SIGUSR1);
#endif
	*rt_p.at = RT_PROBE_EXIT;
	/* glibc's clone ends the child with the exit system call. */
	return 0;
}

enum rt_probe_outcome {
	RT_PROBE_PASSED,
	RT_PROBE_KILLED,  /* at *rt_p.at */
	RT_PROBE_UNKNOWN, /* no child, or one that died otherwise: why says */
};

static enum rt_probe_outcome
rt_probe_once(size_t from, char *why, size_t size)
{
	int saved_errno = errno;
	rt_p.from = from;
	*rt_p.at = RT_PROBE_LIMIT;
	/* Exit signal 0: no SIGCHLD for the program, and no wait(2) of the program's but one
	 * with __WCLONE or __WALL can take it. */
	pid_t pid = clone(rt_probe_child, rt_p.stack + sizeof(rt_p.stack), CLONE_VFORK, NULL);
	int clone_errno = errno, status = 0;
	pid_t got = -1;
	while (pid > 0 && (got = waitpid(pid, &status, __WCLONE)) < 0 && errno == EINTR)
		;
	int wait_errno = errno;
	errno = saved_errno;
	if (pid < 0) {
		snprintf(why, size, "cannot probe the seccomp filter (clone: %s)",
		         strerror(clone_errno));
		return RT_PROBE_UNKNOWN;
	}
	if (got != pid) {
		snprintf(why, size, "cannot probe the seccomp filter (waitpid: %s)",
		         strerror(wait_errno));
		return RT_PROBE_UNKNOWN;
	}
	if (WIFEXITED(status) && *rt_p.at == RT_PROBE_EXIT)
		return RT_PROBE_PASSED;
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS)
		return RT_PROBE_KILLED;
	snprintf(why, size, "cannot probe the seccomp filter (the probe ended with status %#x)",
	         (unsigned)status);
	return RT_PROBE_UNKNOWN;
}

static const char *
rt_probe_name(size_t at)
{
	if (at == RT_PROBE_LIMIT)
		return "prlimit64";
	if (at == RT_PROBE_MASK)
		return "rt_sigprocmask";
	if (at == RT_PROBE_SIGRETURN)
		return "rt_sigreturn";
	if (at == RT_PROBE_EXIT)
		return "exit";
	return at < RT_PROBE_N ? rt_probe_calls[at].name : "?";
}

bool
rt_probe_system_calls(char *why, size_t size)
{
	char status[4096];
	memset(rt_p.killed, 0, sizeof(rt_p.killed));
	if (rt_procread_slurp("/proc/self/status", status, sizeof(status)) &&
	    rt_procfs_seccomp(status) == RT_PROCFS_SECCOMP_NONE)
		return true;
	long page = sysconf(_SC_PAGESIZE);
	void *shared =
	    mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED) {
		snprintf(why, size, "cannot probe the seccomp filter (mmap: %s)", strerror(errno));
		return false;
	}
	rt_p.at = shared;
	bool ok = false;
	/* Past a call the library does without, once more from the next. */
	for (size_t from = 0;;) {
		enum rt_probe_outcome outcome = rt_probe_once(from, why, size);
		if (outcome == RT_PROBE_PASSED)
			ok = true;
		if (outcome != RT_PROBE_KILLED)
			goto label_return;
		size_t at = *rt_p.at;
		if (at < RT_PROBE_DONE)
			rt_p.killed[at] = true;
		if (at >= RT_PROBE_N || !rt_probe_calls[at].optional) {
			snprintf(why, size,
			         "a seccomp filter kills the process on %s(2), which the library "
			         "would call (roundtrim(7), SYSTEM CALLS)",
			         rt_probe_name(at));
			goto label_return;
		}
		from = at + 1;
	}
label_return:
	munmap(shared, (size_t)page);
	rt_p.at = NULL;
	return ok;
}

bool
rt_probe_kills(long nr)
{
	for (size_t i = 0; i < RT_PROBE_N; i++)
		if (rt_probe_calls[i].nr == nr && rt_p.killed[i])
			return true;
	return false;
}
