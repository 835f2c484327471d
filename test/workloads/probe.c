/* clang-format off */
/* probe: small programs the integration tests run under the library, one per mode.
 *   idle            print "ready", wait for EOF on stdin
 *   alloc           allocate through every malloc-family entry point, print "ok"
 *   status          print Threads/SigBlk/SigIgn/SigCgt of itself, then act as idle
 *   names           first thing in main: print "roundtrim=N", N its threads of that name,
 *                   then act as idle
 *   eintr [own]     threads block in nanosleep, poll and read while main waits for EOF; prints
 *                   "eintr=E waits=W". "own" installs an SA_RESTART handler for the trigger
 *                   signal and unblocks it, as a control: then EINTR must be seen.
 *   spawn MODE [threaded]  start grep on /proc/self/status through MODE (execve, execvp,
 *                   execl, posix_spawn, posix_spawnp, system, popen) without LD_PRELOAD; print
 *                   its lines. threaded: start and join a thread of its own first
 *   internal HOW    while a thread runs system() (a shell that says it started, then sleeps
 *                   3 s), the main thread makes a call that glibc's internal signals carry:
 *                   HOW setgid: setgid(getgid()), prints "setgid=0" once it returns; HOW
 *                   cancel: pthread_cancel of a thread blocked in read(), then a join bounded
 *                   at 10 s: "cancel=joined" or "cancel=lost". Then "system=STATUS"
 *   forkloop N      N times: ask for a trim (roundtrim_trim), fork at once, child allocates and
 *                   exits; a thread churns the heap meanwhile. Prints "forks=N"
 *   forkchild [busy]  fork; the child prints "child PID" and both wait for EOF on stdin; a busy
 *                   child allocates and frees a MiB every 10 ms meanwhile, as a worker does
 *   forkrounds [daemon]  fork; the child (with daemon: a grandchild, after setsid, whose parent
 *                   exits) prints "child PID" and, until EOF on stdin or 30 rounds, makes 100 MiB
 *                   of 1 KiB blocks, keeps one small block above them, frees them, rests 1.5 s
 *                   and prints "rss KIB": rounds of a long-lived worker (a gunicorn worker, a
 *                   pool worker, a daemon) whose freed heap only a release returns
 *   api             roundtrim_thread_counts and roundtrim_round, found with dlsym, then
 *                   roundtrim_trim; errno set to EXDEV before each call, printed after it
 *   arenas          8 threads allocate at once; prints "arenas=N" from malloc_info
 *   execfail        execv a program that does not exist, then act as idle
 *   send            4,003,000 bytes through send, sendto, sendmsg (stream socketpair, drained
 *                   by a thread), sendmmsg (three datagrams of 1,000) and send from a thread
 *                   that allocates nothing (1,000,000); each call's result
 *                   checked, and a send, sendmsg and sendmmsg on a closed descriptor must fail
 *                   with EBADF. Prints "sent=N errors=ok|bad", then acts as idle
 *   sendfork        sends 1,000,000 bytes from the main thread and 1,000,000 from a thread that
 *                   allocates nothing, then forks: the child starts its library with
 *                   roundtrim_round(), sends 1,000 bytes and prints "child PID sent=1000", then
 *                   waits for EOF; the parent waits for it
 *   lowfd N         after a line on stdin, N times: close stderr, open /dev/null (which must get
 *                   descriptor 2), put stderr back; prints "lowfd misses=M stderr=same|changed"
 *                   and waits for EOF
 *   closeall        after a line: close_range(3, ~0), roundtrim_round(); prints "closed"; after
 *                   another line opens a file of its own, writes, reads it back: "mine=TEXT"
 *   dupover [status]  after a line, dup2s a pipe holding "hello" over the number of the
 *                   library's FIFO descriptor, or its status file's (in the program's table, or
 *                   else in the worker's own) and prints "replaced"; after a line reads it:
 *                   "got=TEXT"
 *   reuse DIR       after a line, each descriptor of the program's table that holds an unnamed
 *                   file in DIR (the library's per-process outputs before their first record)
 *                   is closed and at once replaced by an unnamed file of its own made in DIR,
 *                   which the file system may give the freed inode's number; prints
 *                   "reused K/N" (K: same device and inode as the file it replaced); after
 *                   another line checks that none of its files was written or moved:
 *                   "untouched=U/N"
 *   handler HOW     reports the disposition it finds for SIGRTMIN+8 ("before=default|other"),
 *                   installs its own handler with HOW (sigaction, signal), prints "ready" and
 *                   "handled" once the signal has run it
 *   forkexec N      N times: fork, the child closes every descriptor above 2 (close_range) and
 *                   execs /bin/true; prints "forkexec=N"
 *   lastexit        prints "ready" and, after a line on stdin (the library has started by then),
 *                   starts a thread that waits for the main thread to end,
 *                   allocates and returns 3 from its start routine, and ends the main thread
 *                   with pthread_exit: the process must then end (exit status 0) as glibc
 *                   ends it after its last thread, after that thread's key destructor
 *                   ("thread key destructor ran") and then the atexit handler ("atexit ran")
 *   emfile          lowers RLIMIT_NOFILE to 64, opens /dev/null until EMFILE and forks: the child
 *                   calls roundtrim_round(), which starts its library at once with no descriptor
 *                   free, and exits; then prints "emfile N" (N: descriptors opened), waits for EOF
 *   forkerrno       fork; the child sets errno to EBADF before each of its 2 MiB mallocs, every
 *                   10 ms, until a thread of its own named "roundtrim" runs (its library's
 *                   deferred start, made inside one of them) or 10 s passed; prints
 *                   "errno=NAME worker=yes|no", NAME the first errno a malloc that succeeded
 *                   left other than EBADF, or EBADF; the parent then waits for EOF
 *   ns CALL [DIR]   makes one call that needs the calling thread's filesystem context unshared
 *                   or changes it (as root): setns-mnt (setns of /proc/self/ns/mnt,
 *                   CLONE_NEWNS), setns-any (the same, nstype 0), setns-net-as-mnt (setns of
 *                   /proc/self/ns/net with CLONE_NEWNS: EINVAL, a wrong type), setns-threaded
 *                   (setns-mnt while a thread of its own is blocked: EINVAL, its context
 *                   shared), unshare-mnt (unshare(CLONE_NEWNS)), unshare-fs, chroot ("/"),
 *                   pivot_root DIR (in a mount namespace of its own, onto a tmpfs mounted on
 *                   DIR); prints "CALL=0" or "CALL=-1 ERRNO", then "library=on" while
 *                   roundtrim serves requests, "library=off" once it does not, "library=none"
 *                   without it
 *   umount DIR      mounts a tmpfs on DIR (as root, in the caller's mount namespace), changes
 *                   into it and execs itself there; the new image changes to "/" and unmounts
 *                   DIR: prints "umount=0" or "umount=-1 ERRNO" (EBUSY: a task of the process
 *                   still works in DIR), then "library=on|off|none" as ns does
 *   timerxid        a timer_create(SIGEV_THREAD) callback, which runs on a thread glibc starts
 *                   without pthread_create, calls setgid(getgid()) every 0.5 ms while the main
 *                   thread calls execvp of a missing file for 1 s; prints "setgid=N" (N > 0:
 *                   calls that returned 0) once the timer is stopped, then "main setgid=0" once
 *                   a setgid of the main thread's has returned
 *   apisignal MS    for MS ms the main thread allocates and frees blocks of many sizes while a
 *                   1 ms timer's SIGALRM handler calls roundtrim_trim() (often inside malloc or
 *                   free); prints "calls=N" at the end and waits for EOF
 *   apiwake         prints "ready PID tid=T": thread T calls roundtrim_round() for each line
 *                   "round"; "replace" puts a file of the probe's holding "mine" on the library's
 *                   FIFO descriptor ("replaced N"); "check" prints "file=TEXT offset=O" (bytes
 *                   other than letters shown as '?')
 *   uaf [alias]     prints "ready PID"; after a line on stdin makes a one-word use-after-free
 *                   write (into a freed 200-byte block: the prev_size of the freed fastbin chunk
 *                   after it, which glibc's next consolidation would abort on) and prints
 *                   "written"; after another line allocates and frees only blocks its tcache
 *                   serves, as a program whose heap never consolidates again, and prints
 *                   "finished". alias: the write makes the bk_nextsize of a freed block B of
 *                   4,528 bytes point 16 bytes before the block X of 4,576 listed before it in
 *                   their large bin, with a freed fastbin block right before B (glibc's
 *                   consolidation writes B's list, then finds the ring broken and aborts);
 *                   "finished x_fd=b" when X's fd still points at B ("self" at X itself) */
/* clang-format on */
#include "workload.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static void
wait_eof(void)
{
	char buf[256];
	while (read(0, buf, sizeof(buf)) > 0)
		;
}

static int
mode_idle(void)
{
	printf("ready %d\n", getpid());
	fflush(stdout);
	wait_eof();
	return 0;
}

static int
mode_names(void)
{
	int named = 0;
	DIR *tasks = opendir("/proc/self/task");
	for (struct dirent *e; tasks && (e = readdir(tasks)) != NULL;) {
		char path[300], comm[32] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		FILE *f = e->d_name[0] == '.' ? NULL : fopen(path, "re");
		if (f && fgets(comm, sizeof(comm), f) && !strcmp(comm, "roundtrim\n"))
			named++;
		if (f)
			fclose(f);
	}
	if (tasks)
		closedir(tasks);
	printf("roundtrim=%d\n", named);
	return mode_idle();
}

static int
mode_alloc(void)
{
	void *p = malloc(100), *q = calloc(10, 10), *r = NULL, *s, *t, *u, *v, *w;
	p = realloc(p, 1000);
	q = reallocarray(q, 20, 20);
	if (posix_memalign(&r, 64, 100) != 0)
		return 1;
	s = aligned_alloc(64, 128);
	t = memalign(64, 100);
	u = valloc(100);
	v = pvalloc(100);
	w = strdup("roundtrim");
	if (!p || !q || !r || !s || !t || !u || !v || !w || malloc_usable_size(p) < 1000)
		return 1;
	void *blocks[] = {p, q, r, s, t, u, v, w};
	for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++)
		free(blocks[i]);
	printf("ok\n");
	return 0;
}

static void
print_status(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Threads:", 8) || !strncmp(line, "Sig", 3))
			fputs(line, stdout);
	if (f)
		fclose(f);
	fflush(stdout);
}

static atomic_int eintr_count, wait_count, stop;
static atomic_int waiter_tids[3];
static int own_mode;

/* Whether thread tid sleeps in the kernel now (state S in /proc/self/task/TID/stat). */
static int
thread_sleeping(int tid)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *end = strrchr(buf, ')'); /* the command name may hold spaces */
	return end && end[1] == ' ' && end[2] == 'S';
}
static int wake_pipe[2];

/* Whether a process-directed signal sig waits in our shared pending set (ShdPnd). */
static int
signal_pending(int sig)
{
	char line[256];
	unsigned long long mask = 0;
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "ShdPnd: %llx", &mask) == 1)
			break;
	fclose(f);
	return (mask >> (sig - 1)) & 1;
}

static void *
sleeper(void *arg)
{
	(void)arg;
	atomic_store(&waiter_tids[0], gettid());
	/* Long sleeps: a thread in its system call when the storm comes stays there until a
	 * signal ends it, however loaded the machine (with short ones, a thread that its timer had
	 * woken could take every queued signal in user space and see no EINTR). */
	while (!atomic_load(&stop)) {
		struct timespec ts = {3600, 0};
		if (nanosleep(&ts, NULL) != 0 && errno == EINTR && !atomic_load(&stop))
			atomic_fetch_add(&eintr_count, 1);
		atomic_fetch_add(&wait_count, 1);
	}
	return NULL;
}

static void *
poller(void *arg)
{
	(void)arg;
	atomic_store(&waiter_tids[1], gettid());
	int never[2];
	if (pipe(never) != 0)
		return NULL;
	while (!atomic_load(&stop)) {
		struct pollfd pfd = {.fd = never[0], .events = POLLIN};
		if (poll(&pfd, 1, -1) < 0 && errno == EINTR && !atomic_load(&stop))
			atomic_fetch_add(&eintr_count, 1);
		atomic_fetch_add(&wait_count, 1);
	}
	return NULL;
}

static void *
reader(void *arg)
{
	(void)arg;
	if (own_mode) {
		/* In the control, read's SA_RESTART would let this thread drain every signal
		 * silently: leave them to the nanosleep and poll threads. */
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGRTMIN + 8);
		pthread_sigmask(SIG_BLOCK, &set, NULL);
	}
	atomic_store(&waiter_tids[2], gettid());
	char c;
	for (;;) {
		ssize_t n = read(wake_pipe[0], &c, 1);
		if (n < 0 && errno == EINTR) {
			if (!atomic_load(&stop))
				atomic_fetch_add(&eintr_count, 1);
			continue;
		}
		return NULL;
	}
}

static void
own_handler(int sig)
{
	(void)sig;
}

/* SIGUSR1 ends the sleeps at the end: no SA_RESTART, and counted as no EINTR once stop is set. */
static void
stop_handler(int sig)
{
	(void)sig;
}

static int
mode_eintr(int own)
{
	own_mode = own;
	if (own) {
		struct sigaction sa = {.sa_handler = own_handler, .sa_flags = SA_RESTART};
		sigaction(SIGRTMIN + 8, &sa, NULL);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGRTMIN + 8);
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	}
	struct sigaction stop_sa = {.sa_handler = stop_handler};
	sigaction(SIGUSR1, &stop_sa, NULL);
	if (pipe(wake_pipe) != 0)
		return 1;
	pthread_t t[3];
	pthread_create(&t[0], NULL, sleeper, NULL);
	pthread_create(&t[1], NULL, poller, NULL);
	pthread_create(&t[2], NULL, reader, NULL);
	if (own) {
		/* Away from main, whose read SA_RESTART restarts: into the sleeping threads. */
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGRTMIN + 8);
		pthread_sigmask(SIG_BLOCK, &set, NULL);
	}
	/* "ready" only once every thread sits in its system call, so that a storm that follows
	 * finds them there. */
	for (int i = 0; i < 3; i++)
		while (!atomic_load(&waiter_tids[i]) ||
		       !thread_sleeping(atomic_load(&waiter_tids[i])))
			sched_yield();
	printf("ready %d\n", getpid());
	fflush(stdout);
	char buf[64];
	for (;;) {
		ssize_t n = read(0, buf, sizeof(buf));
		if (n < 0 && errno == EINTR) {
			atomic_fetch_add(&eintr_count, 1);
			continue;
		}
		if (n <= 0)
			break;
	}
	/* In the control, the storm may still be on its way into the sleeping threads on a
	 * loaded machine: let every signal be taken and every thread count it and sleep again
	 * before stop, or a late EINTR would be taken for the stop's own. */
	if (own)
		for (int i = 0; i < 2; i++)
			while (signal_pending(SIGRTMIN + 8) ||
			       !thread_sleeping(atomic_load(&waiter_tids[i])))
				sched_yield();
	atomic_store(&stop, 1);
	if (write(wake_pipe[1], "x", 1) != 1)
		return 1;
	/* A thread may be between its check of stop and its next sleep when a single SIGUSR1
	 * comes: send it again until the thread is gone. */
	for (int i = 0; i < 3; i++) {
		for (;;) {
			struct timespec until;
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_nsec += 10 * 1000 * 1000;
			if (until.tv_nsec >= 1000000000L)
				until.tv_sec++, until.tv_nsec -= 1000000000L;
			if (pthread_timedjoin_np(t[i], NULL, &until) != ETIMEDOUT)
				break;
			pthread_kill(t[i], SIGUSR1);
		}
	}
	printf("eintr=%d waits=%d\n", atomic_load(&eintr_count), atomic_load(&wait_count));
	return 0;
}

static void *
returns_at_once(void *arg)
{
	return arg;
}

static int
mode_spawn(const char *how, bool threaded)
{
	static char *const argv[] = {"grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status", NULL};
	static char *const envp[] = {"PATH=/usr/bin:/bin", NULL};
	pthread_t thread;
	if (threaded && (pthread_create(&thread, NULL, returns_at_once, NULL) != 0 ||
	                 pthread_join(thread, NULL) != 0))
		return 1;
	unsetenv("LD_PRELOAD"); /* the child must not load roundtrim: it shows the raw mask */
	fflush(stdout);
	pid_t pid;
	if (!strcmp(how, "system"))
		return system("grep -E '^Sig(Blk|Ign)' /proc/self/status") == 0 ? 0 : 1;
	if (!strcmp(how, "popen")) {
		FILE *f = popen("grep -E '^Sig(Blk|Ign)' /proc/self/status", "r");
		char line[256];
		while (f && fgets(line, sizeof(line), f))
			fputs(line, stdout);
		return f && pclose(f) == 0 ? 0 : 1;
	}
	if (!strcmp(how, "posix_spawn") || !strcmp(how, "posix_spawnp")) {
		int rc = !strcmp(how, "posix_spawn")
		             ? posix_spawn(&pid, "/bin/grep", NULL, NULL, argv, envp)
		             : posix_spawnp(&pid, "grep", NULL, NULL, argv, environ);
		if (rc != 0)
			return 1;
	} else {
		pid = fork();
		if (pid == 0) {
			if (!strcmp(how, "execve"))
				execve("/bin/grep", argv, envp);
			else if (!strcmp(how, "execvp"))
				execvp("grep", argv);
			else if (!strcmp(how, "execl"))
				execl("/bin/grep", "grep", "-E", "^Sig(Blk|Ign)",
				      "/proc/self/status", (char *)NULL);
			_exit(127);
		}
	}
	int status;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

/* The write end of the pipe that the system() shell says it started on. */
#define INTERNAL_FD 9

static void *
internal_system(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)system("echo started >&9; exec sleep 3");
}

/* Cancelled inside read(): nothing of its frame is left poisoned under ASan, which does not
 * unpoison the frames that a cancellation unwinds (it reports the thread's exit then). */
static void *
internal_reader(void *arg)
{
	static char sink;
	while (read(*(int *)arg, &sink, 1) != 0)
		;
	return NULL;
}

static int
mode_internal(const char *how)
{
	int started[2], idle[2];
	pthread_t shell, reader, first;
	if (pipe(started) != 0 || dup2(started[1], INTERNAL_FD) != INTERNAL_FD || pipe(idle) != 0)
		return 1;
	if (!strcmp(how, "cancel")) {
		/* A cancel before, as a program that cancels now and then has made: glibc has
		 * installed its handler for signal 32 by then. */
		if (pthread_create(&first, NULL, internal_reader, &idle[0]) != 0 ||
		    pthread_cancel(first) != 0 || pthread_join(first, NULL) != 0 ||
		    pthread_create(&reader, NULL, internal_reader, &idle[0]) != 0)
			return 1;
	}
	if (pthread_create(&shell, NULL, internal_system, NULL) != 0)
		return 1;
	char line[16];
	FILE *from_shell = fdopen(started[0], "r");
	if (!from_shell || !fgets(line, sizeof(line), from_shell))
		return 1;
	if (!strcmp(how, "setgid")) {
		int rc = setgid(getgid());
		printf("setgid=%d\n", rc);
	} else {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 10;
		pthread_cancel(reader);
		bool joined = pthread_timedjoin_np(reader, NULL, &until) == 0;
		printf("cancel=%s\n", joined ? "joined" : "lost");
	}
	void *status;
	pthread_join(shell, &status);
	printf("system=%d\n", (int)(intptr_t)status);
	return 0;
}

static void *
churner(void *arg)
{
	wl_churn(&stop);
	return arg;
}

static int
mode_forkloop(int n)
{
	int (*trim)(void) = (int (*)(void))(uintptr_t)dlsym(RTLD_DEFAULT, "roundtrim_trim");
	pthread_t t;
	pthread_create(&t, NULL, churner, NULL);
	for (int i = 0; i < n; i++) {
		if (trim)
			trim();
		pid_t pid = fork();
		if (pid == 0) {
			void *p = malloc(1 << 20);
			memset(p, 2, 1 << 20);
			free(p);
			_exit(0);
		}
		int status;
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			return 1;
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	printf("forks=%d trim=%s\n", n, trim ? "yes" : "no");
	return 0;
}

/* Allocates and frees a MiB every 10 ms until EOF on stdin. */
static void
work_until_eof(void)
{
	char buf[256];
	for (;;) {
		struct pollfd pfd = {.fd = 0, .events = POLLIN};
		if (poll(&pfd, 1, 10) > 0 && read(0, buf, sizeof(buf)) <= 0)
			return;
		char *volatile block = malloc(1 << 20);
		memset(block, 3, 4096);
		free(block);
	}
}

static int
mode_forkchild(int busy)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		printf("child %d\n", getpid());
		fflush(stdout);
		if (busy)
			work_until_eof();
		else
			wait_eof();
		_exit(0);
	}
	wait_eof();
	int status;
	waitpid(pid, &status, 0);
	return 0;
}

/* Whether this process has a thread named name. */
static bool
has_thread_named(const char *name)
{
	bool found = false;
	DIR *d = opendir("/proc/self/task");
	for (struct dirent *e; d && !found && (e = readdir(d)) != NULL;) {
		char path[300], comm[32] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		FILE *f = e->d_name[0] != '.' ? fopen(path, "r") : NULL;
		found = f && fgets(comm, sizeof(comm), f) && !strncmp(comm, name, strlen(name)) &&
		        comm[strlen(name)] == '\n';
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return found;
}

static int
mode_forkerrno(void)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		int seen = EBADF;
		bool worker = false;
		for (int i = 0; i < 1000 && !worker && seen == EBADF; i++) {
			errno = EBADF;
			/* volatile: compilers elide a bare malloc+free */
			void *volatile block = malloc(2 << 20);
			if (block)
				seen = errno;
			free(block);
			worker = has_thread_named("roundtrim");
			struct timespec ms = {0, 10 * 1000 * 1000};
			nanosleep(&ms, NULL);
		}
		printf("errno=%s worker=%s\n", strerrorname_np(seen), worker ? "yes" : "no");
		fflush(stdout);
		_exit(0);
	}
	int status;
	waitpid(pid, &status, 0);
	/* Until told: the caller may look for this process's status file after the child's line. */
	wait_eof();
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

/* pivot_root(2) onto a tmpfs mounted on dir (an empty directory, which the caller removes), in
 * a mount namespace of the calling thread's own. */
static int
ns_pivot_root(const char *dir)
{
	char old[4096];
	snprintf(old, sizeof(old), "%s/old", dir);
	if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("probe", dir, "tmpfs", 0, NULL) != 0 || mkdir(old, 0700) != 0)
		return -1;
	return (int)syscall(SYS_pivot_root, dir, old);
}

/* "library=on" while roundtrim serves requests, "library=off" once it does not, "library=none"
 * without it. */
static void
print_library_state(void)
{
	int (*status)(char *, size_t) =
	    (int (*)(char *, size_t))(uintptr_t)dlsym(RTLD_DEFAULT, "roundtrim_status_json");
	printf("library=%s\n", !status ? "none" : status(NULL, 0) >= 0 ? "on" : "off");
}

/* setns-mnt while a thread of the probe's own, blocked until it returns, shares its context. */
static int
ns_setns_threaded(int fd)
{
	int idle[2];
	pthread_t reader;
	if (pipe(idle) != 0 || pthread_create(&reader, NULL, internal_reader, &idle[0]) != 0)
		return -1;
	int rc = setns(fd, CLONE_NEWNS);
	int saved_errno = errno;
	close(idle[1]);
	pthread_join(reader, NULL);
	errno = saved_errno;
	return rc;
}

static int
mode_ns(const char *call, const char *dir)
{
	int fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	int net = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	int rc = -1;
	errno = EINVAL;
	if (!strcmp(call, "setns-mnt"))
		rc = setns(fd, CLONE_NEWNS);
	else if (!strcmp(call, "setns-any"))
		rc = setns(fd, 0);
	else if (!strcmp(call, "setns-net-as-mnt"))
		rc = setns(net, CLONE_NEWNS);
	else if (!strcmp(call, "setns-threaded"))
		rc = ns_setns_threaded(fd);
	else if (!strcmp(call, "unshare-mnt"))
		rc = unshare(CLONE_NEWNS);
	else if (!strcmp(call, "unshare-fs"))
		rc = unshare(CLONE_FS);
	else if (!strcmp(call, "chroot"))
		rc = chroot("/");
	else if (!strcmp(call, "pivot_root") && dir)
		rc = ns_pivot_root(dir);
	else
		return 2;
	if (rc == 0)
		printf("%s=0\n", call);
	else
		printf("%s=-1 %s\n", call, strerrorname_np(errno));
	print_library_state();
	return 0;
}

static int
mode_umount(const char *dir, bool inside)
{
	if (!inside) {
		if (mount("probe", dir, "tmpfs", 0, NULL) != 0 || chdir(dir) != 0)
			return 1;
		execl("/proc/self/exe", "probe", "umount", dir, "inside", (char *)NULL);
		return 1;
	}
	if (chdir("/") != 0)
		return 1;
	if (umount2(dir, 0) == 0)
		printf("umount=0\n");
	else
		printf("umount=-1 %s\n", strerrorname_np(errno));
	print_library_state();
	return 0;
}

static atomic_long timerxid_calls;

static void
timerxid_tick(union sigval unused)
{
	(void)unused;
	if (setgid(getgid()) == 0)
		atomic_fetch_add(&timerxid_calls, 1);
}

static int
mode_timerxid(void)
{
	struct sigevent sev = {.sigev_notify = SIGEV_THREAD,
	                       .sigev_notify_function = timerxid_tick};
	timer_t timer;
	struct itimerspec every = {{0, 500 * 1000}, {0, 500 * 1000}}, stop = {0};
	if (timer_create(CLOCK_MONOTONIC, &sev, &timer) != 0 ||
	    timer_settime(timer, 0, &every, NULL) != 0)
		return 1;
	struct timespec now, end;
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += 1;
	char *const argv[] = {"missing", NULL};
	do {
		execvp("/nonexistent/roundtrim-probe", argv);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec < end.tv_sec ||
	         (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec));
	timer_settime(timer, 0, &stop, NULL);
	printf("setgid=%ld\n", atomic_load(&timerxid_calls));
	fflush(stdout);
	/* Waits for a call of the callback's that never returned (it holds glibc's set*id lock). */
	printf("main setgid=%d\n", setgid(getgid()));
	return 0;
}

/* The resident KiB of this process. */
static long
probe_rss_kib(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Whether stdin stays open for ms: false at EOF. */
static bool
rest_until_eof(int ms)
{
	char buf[256];
	struct pollfd pfd = {.fd = 0, .events = POLLIN};
	return !(poll(&pfd, 1, ms) > 0 && read(0, buf, sizeof(buf)) <= 0);
}

static void
worker_rounds(void)
{
	enum { BLOCKS = 100 * 1024 };
	static void *blocks[BLOCKS];
	printf("child %d\n", getpid());
	fflush(stdout);
	for (int r = 0; r < 30; r++) {
		for (int i = 0; i < BLOCKS; i++) {
			blocks[i] = malloc(1024);
			memset(blocks[i], 1, 1024);
		}
		void *volatile pin = malloc(100);
		(void)pin;
		for (int i = 0; i < BLOCKS; i++)
			free(blocks[i]);
		if (!rest_until_eof(1500))
			return;
		printf("rss %ld\n", probe_rss_kib());
		fflush(stdout);
	}
}

static int
mode_forkrounds(int daemon)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		if (daemon) {
			setsid();
			if (fork() != 0)
				_exit(0);
		}
		worker_rounds();
		_exit(0);
	}
	if (daemon)
		waitpid(pid, NULL, 0);
	wait_eof();
	if (!daemon)
		waitpid(pid, NULL, 0);
	return 0;
}

static int
api_round(void)
{
	int (*round)(void) = (int (*)(void))(uintptr_t)dlsym(RTLD_DEFAULT, "roundtrim_round");
	return round ? round() : -1;
}

static int
mode_emfile(void)
{
	struct rlimit lim = {64, 64};
	if (setrlimit(RLIMIT_NOFILE, &lim) != 0)
		return 1;
	int opened = 0;
	while (open("/dev/null", O_RDONLY) >= 0)
		opened++;
	if (errno != EMFILE)
		return 1;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0)
		_exit(api_round() >= 0 ? 0 : 1);
	int status = 1;
	waitpid(pid, &status, 0);
	printf("emfile %d child=%d\n", opened, status);
	wait_eof();
	return 0;
}

static int (*apisignal_trim)(void);
static volatile sig_atomic_t apisignal_calls;

static void
apisignal_handler(int sig)
{
	(void)sig;
	int saved = errno;
	apisignal_trim();
	apisignal_calls = apisignal_calls + 1;
	errno = saved;
}

static int
mode_apisignal(long ms)
{
	apisignal_trim = (int (*)(void))(uintptr_t)dlsym(RTLD_DEFAULT, "roundtrim_trim");
	if (!apisignal_trim)
		return 1;
	struct sigaction sa = {.sa_handler = apisignal_handler, .sa_flags = SA_RESTART};
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval every = {{0, 1000}, {0, 1000}};
	setitimer(ITIMER_REAL, &every, NULL);
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	void *blocks[64] = {0};
	unsigned i = 0;
	do {
		for (int k = 0; k < 1000; k++, i++) {
			free(blocks[i % 64]);
			blocks[i % 64] = malloc(16 + (i * 2654435761u) % 200000);
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	for (int k = 0; k < 64; k++)
		free(blocks[k]);
	printf("calls=%d\n", (int)apisignal_calls);
	fflush(stdout);
	wait_eof();
	return 0;
}

static int
mode_api(void)
{
	struct counts {
		uint64_t allocations, frees, bytes;
	} c = {0};
	void (*get)(struct counts *) =
	    (void (*)(struct counts *))(uintptr_t)dlsym(RTLD_DEFAULT, "roundtrim_thread_counts");
	int (*round)(void) = (int (*)(void))(uintptr_t)dlsym(RTLD_DEFAULT, "roundtrim_round");
	int (*trim)(void) = (int (*)(void))(uintptr_t)dlsym(RTLD_DEFAULT, "roundtrim_trim");
	if (!get || !round || !trim)
		return 1;
	for (int i = 0; i < 100; i++) {
		void *volatile block = malloc(1000); /* volatile: GCC elides a bare malloc+free */
		free(block);
	}
	get(&c);
	errno = EXDEV;
	int rounded = round();
	int round_errno = errno;
	errno = EXDEV;
	int trimmed = trim();
	int trim_errno = errno;
	printf("allocations=%llu frees=%llu bytes=%llu round=%d round_errno=%d trim=%d "
	       "trim_errno=%d\n",
	       (unsigned long long)c.allocations, (unsigned long long)c.frees,
	       (unsigned long long)c.bytes, rounded, round_errno, trimmed, trim_errno);
	fflush(stdout);
	wait_eof();
	return 0;
}

static pthread_barrier_t arena_barrier;

static void *
arena_user(void *arg)
{
	void *blocks[256];
	pthread_barrier_wait(&arena_barrier);
	for (int round = 0; round < 200; round++) {
		for (int i = 0; i < 256; i++)
			blocks[i] = malloc(64 + (size_t)i);
		for (int i = 0; i < 256; i++)
			free(blocks[i]);
	}
	pthread_barrier_wait(&arena_barrier); /* keep every thread alive until all are done */
	return arg;
}

static int
mode_arenas(void)
{
	enum { threads = 8 };
	pthread_t t[threads];
	pthread_barrier_init(&arena_barrier, NULL, threads);
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, arena_user, NULL);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	char *xml = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&xml, &len);
	malloc_info(0, f);
	fclose(f);
	int heaps = 0;
	for (const char *at = xml; (at = strstr(at, "<heap nr=")) != NULL; at++)
		heaps++;
	free(xml);
	printf("arenas=%d\n", heaps);
	return 0;
}

static void
wait_line(void)
{
	char c;
	while (read(0, &c, 1) == 1 && c != '\n')
		;
}

static int
mode_lowfd(int n)
{
	printf("ready %d\n", getpid());
	wait_line();
	int saved = fcntl(2, F_DUPFD_CLOEXEC, 10);
	struct stat before, after;
	fstat(2, &before);
	int misses = 0;
	for (int i = 0; i < n; i++) {
		close(2);
		int fd = open("/dev/null", O_WRONLY);
		if (fd != 2) {
			misses++;
			if (fd >= 0)
				close(fd);
		}
		dup2(saved, 2);
	}
	fstat(2, &after);
	printf("lowfd misses=%d stderr=%s\n", misses,
	       before.st_ino == after.st_ino && before.st_dev == after.st_dev ? "same" : "changed");
	wait_eof();
	return 0;
}

static int
mode_closeall(void)
{
	printf("ready %d\n", getpid());
	wait_line();
	if (syscall(SYS_close_range, 3, ~0U, 0) != 0)
		return 1;
	api_round();
	printf("closed\n");
	wait_line();
	char path[] = "/tmp/rt-probe-XXXXXX", buf[16] = "";
	int fd = mkstemp(path);
	unlink(path);
	if (fd < 0 || write(fd, "mine", 4) != 4 || lseek(fd, 0, SEEK_SET) != 0)
		return 1;
	wait_line();
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	printf("mine=%s\n", buf);
	wait_eof();
	return 0;
}

/* The number in dir (a descriptor listing) whose link ends in suffix, or -1. */
static int
fd_ending_in(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = -1;
	size_t len = strlen(suffix);
	while (d && (e = readdir(d)) != NULL) {
		char link[600], target[512];
		snprintf(link, sizeof(link), "%s/%s", dir, e->d_name);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		if (n > (ssize_t)len && (target[n] = '\0', !strcmp(target + n - len, suffix)))
			found = atoi(e->d_name);
	}
	if (d)
		closedir(d);
	return found;
}

/* The number of the library's descriptor whose link ends in suffix (".fifo", ".status"): in
 * the program's table, or else in the table of the worker's own (the thread named roundtrim) or
 * of the keeper (roundtrim-fds), where the program cannot reach it. */
static int
library_fd(const char *suffix)
{
	int found = fd_ending_in("/proc/self/fd", suffix);
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	while (found < 0 && d && (e = readdir(d)) != NULL) {
		char path[300], comm[32] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		bool worker = fgets(comm, sizeof(comm), f) &&
		              (!strcmp(comm, "roundtrim\n") || !strcmp(comm, "roundtrim-fds\n"));
		fclose(f);
		snprintf(path, sizeof(path), "/proc/self/task/%s/fd", e->d_name);
		if (worker)
			found = fd_ending_in(path, suffix);
	}
	if (d)
		closedir(d);
	return found;
}

static int
mode_dupover(const char *suffix)
{
	printf("ready %d\n", getpid());
	wait_line();
	int fifo = library_fd(suffix), p[2];
	if (fifo < 0 || pipe(p) != 0 || write(p[1], "hello", 5) != 5 || dup2(p[0], fifo) != fifo)
		return 1;
	fcntl(fifo, F_SETFL, O_NONBLOCK);
	printf("replaced %d\n", fifo);
	wait_line();
	char buf[16] = "";
	ssize_t n = read(fifo, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	printf("got=%s\n", buf);
	wait_eof();
	return 0;
}

#define REUSE_MAX 8

/* An unnamed file of DIR in /proc/self/fd: its link is "DIR/#INODE (deleted)". */
static bool
unnamed_in(const char *target, const char *dir)
{
	size_t len = strlen(dir), n = strlen(target);
	return !strncmp(target, dir, len) && target[len] == '/' && target[len + 1] == '#' &&
	       n > 10 && !strcmp(target + n - 10, " (deleted)");
}

static int
mode_reuse(const char *dir)
{
	int fds[REUSE_MAX], n = 0, reused = 0, untouched = 0;
	printf("ready %d\n", getpid());
	wait_line();
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL && n < REUSE_MAX) {
		char link[300], target[PATH_MAX];
		snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
		ssize_t len = readlink(link, target, sizeof(target) - 1);
		if (len > 0 && (target[len] = '\0', unnamed_in(target, dir)))
			fds[n++] = atoi(e->d_name);
	}
	if (d)
		closedir(d);
	for (int i = 0; i < n; i++) {
		struct stat before, after;
		if (fstat(fds[i], &before) != 0 || close(fds[i]) != 0)
			return 1;
		int own = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		if (own < 0 || dup2(own, fds[i]) != fds[i] || close(own) != 0 ||
		    fstat(fds[i], &after) != 0)
			return 1;
		reused += before.st_dev == after.st_dev && before.st_ino == after.st_ino;
	}
	printf("reused %d/%d\n", reused, n);
	wait_line();
	for (int i = 0; i < n; i++) {
		struct stat st;
		char link[64], target[PATH_MAX];
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fds[i]);
		ssize_t len = readlink(link, target, sizeof(target) - 1);
		untouched += fstat(fds[i], &st) == 0 && st.st_size == 0 && st.st_nlink == 0 &&
		             lseek(fds[i], 0, SEEK_CUR) == 0 && len > 0 &&
		             (target[len] = '\0', unnamed_in(target, dir));
	}
	printf("untouched=%d/%d\n", untouched, n);
	wait_eof();
	return 0;
}

static atomic_int handled;

static void
count_handler(int sig)
{
	(void)sig;
	atomic_store(&handled, 1);
}

static int
mode_handler(const char *how)
{
	int sig = SIGRTMIN + 8;
	struct sigaction old;
	sigaction(sig, NULL, &old);
	printf("before=%s\n",
	       old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO) ? "default" : "other");
	if (!strcmp(how, "signal")) {
		if (signal(sig, count_handler) == SIG_ERR)
			return 1;
	} else {
		struct sigaction sa = {.sa_handler = count_handler};
		if (sigaction(sig, &sa, NULL) != 0)
			return 1;
	}
	printf("ready %d\n", getpid());
	/* No sigsuspend: it would unblock the signal itself; the handler must run under the
	 * mask the thread has. */
	while (!atomic_load(&handled)) {
		struct timespec tick = {0, 5 * 1000 * 1000};
		nanosleep(&tick, NULL);
	}
	printf("handled\n");
	wait_eof();
	return 0;
}

static int
mode_forkexec(int n)
{
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			syscall(SYS_close_range, 3, ~0U, 0);
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		int status;
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			return 1;
	}
	printf("forkexec=%d\n", n);
	return 0;
}

static int apiwake_pipe[2];
static atomic_int apiwake_tid;

static void *
apiwake_thread(void *arg)
{
	(void)arg;
	char c;
	atomic_store(&apiwake_tid, gettid());
	while (read(apiwake_pipe[0], &c, 1) == 1)
		api_round();
	return NULL;
}

static int
mode_apiwake(void)
{
	pthread_t t;
	if (pipe(apiwake_pipe) != 0 || pthread_create(&t, NULL, apiwake_thread, NULL) != 0)
		return 1;
	while (!atomic_load(&apiwake_tid))
		sched_yield();
	printf("ready %d tid=%d\n", getpid(), atomic_load(&apiwake_tid));
	char line[64];
	int fd = -1;
	for (;;) {
		size_t n = 0;
		char c;
		while (read(0, &c, 1) == 1 && c != '\n')
			if (n + 1 < sizeof(line))
				line[n++] = c;
		line[n] = '\0';
		if (!strcmp(line, "round")) {
			if (write(apiwake_pipe[1], "r", 1) != 1)
				return 1;
		} else if (!strcmp(line, "replace")) {
			int own = open("/tmp", O_TMPFILE | O_RDWR, 0600);
			fd = library_fd(".fifo");
			if (own < 0 || fd < 0 || write(own, "mine", 4) != 4 ||
			    lseek(own, 0, SEEK_SET) != 0 || dup2(own, fd) != fd)
				return 1;
			close(own);
			printf("replaced %d\n", fd);
		} else if (!strcmp(line, "check") && fd >= 0) {
			char buf[16] = "";
			ssize_t got = pread(fd, buf, sizeof(buf) - 1, 0);
			for (ssize_t i = 0; i < got; i++)
				if (buf[i] < 'a' || buf[i] > 'z')
					buf[i] = '?';
			buf[got > 0 ? got : 0] = '\0';
			printf("file=%s offset=%lld\n", buf, (long long)lseek(fd, 0, SEEK_CUR));
		} else {
			return 0;
		}
	}
}

static void
lastexit_key_done(void *value)
{
	(void)value;
	printf("thread key destructor ran\n");
}

static void *
lastexit_thread(void *arg)
{
	/* The main thread ends first: this one is then the program's last, beside a zombie leader.
	 */
	pthread_join(*(pthread_t *)arg, NULL);
	/* A key of the program's, made after the library's: its destructor runs after the library's
	 * in the thread's exit, and must run all the same. */
	pthread_key_t key;
	if (pthread_key_create(&key, lastexit_key_done) == 0)
		pthread_setspecific(key, &key);
	for (int i = 0; i < 1000; i++) {
		/* volatile: compilers elide a bare malloc+free */
		void *volatile block = malloc(4096);
		free(block);
	}
	return (void *)3;
}

static void
lastexit_atexit(void)
{
	printf("atexit ran\n");
}

static int
mode_lastexit(void)
{
	static pthread_t main_thread;
	pthread_t t;
	main_thread = pthread_self();
	atexit(lastexit_atexit);
	printf("ready %d\n", getpid());
	char go[16];
	if (!fgets(go, sizeof(go), stdin) ||
	    pthread_create(&t, NULL, lastexit_thread, &main_thread) != 0)
		return 1;
	pthread_exit(NULL);
}

/* Through pointers the compiler cannot see through: it would otherwise drop a malloc freed at
 * once, and the write into a freed block. */
static void *(*volatile uaf_malloc)(size_t) = malloc;
static void (*volatile uaf_free)(void *) = free;

/* uaf alias's heap and write; returns X, or NULL when glibc did not lay the blocks out so. */
static char *
uaf_alias(void)
{
	void *t64[7];
	for (int i = 0; i < 7; i++)
		t64[i] = uaf_malloc(56);
	char *a = uaf_malloc(56), *b = uaf_malloc(4528), *g = uaf_malloc(56);
	char *x = uaf_malloc(4576), *h = uaf_malloc(56);
	if (b != a + 64 || g != b + 4544 || x != g + 64 || h != x + 4592)
		return NULL;
	/* Both large blocks into their large bin (sorted by the next large request), then the
	 * 64-byte tcache full: a goes to a fastbin. */
	uaf_free(b);
	uaf_free(x);
	void *big = uaf_malloc(8000);
	for (int i = 0; i < 7; i++)
		uaf_free(t64[i]);
	uaf_free(a);
	volatile uint64_t *bw = (volatile uint64_t *)b; /* fd, bk, fd_nextsize, bk_nextsize */
	if (bw[1] != (uint64_t)(uintptr_t)(x - 16) ||
	    *(volatile uint64_t *)x != (uintptr_t)(b - 16))
		return NULL;
	bw[3] = (uint64_t)(uintptr_t)(x - 32);
	(void)big;
	return x;
}

static int
mode_uaf(bool alias)
{
	printf("ready %d\n", getpid());
	char go[16];
	/* read(2), not stdio: stdin's buffer would be a malloc that glibc serves from its bins. */
	if (read(0, go, sizeof(go)) <= 0)
		return 1;
	if (alias) {
		char *x = uaf_alias();
		if (!x) {
			printf("not laid out\n");
			return 1;
		}
		printf("written\n");
		if (read(0, go, sizeof(go)) <= 0)
			return 1;
		uint64_t fd = *(volatile uint64_t *)x;
		for (int i = 0; i < 100000; i++)
			uaf_free(uaf_malloc(56)); /* the 64-byte tcache is full */
		printf("finished x_fd=%s\n", fd == (uintptr_t)(x - 16)          ? "self"
		                             : fd == (uintptr_t)(x - 16 - 4608) ? "b"
		                                                                : "other");
		return 0;
	}
	void *t200[7], *t24[7];
	for (int i = 0; i < 7; i++) {
		t200[i] = uaf_malloc(200);
		t24[i] = uaf_malloc(24);
	}
	char *x = uaf_malloc(200), *f = uaf_malloc(24), *g = uaf_malloc(24);
	/* Both tcaches full: x goes to the unsorted bin, f to a fastbin with a free chunk before
	 * it. */
	for (int i = 0; i < 7; i++) {
		uaf_free(t200[i]);
		uaf_free(t24[i]);
	}
	uaf_free(x);
	uaf_free(f);
	*(volatile uint64_t *)(x + 192) = 224;
	printf("written\n");
	if (read(0, go, sizeof(go)) <= 0)
		return 1;
	for (int i = 0; i < 100000; i++)
		uaf_free(uaf_malloc(24));
	printf("finished\n");
	(void)g;
	return 0;
}

static void *
drain(void *arg)
{
	char buf[65536];
	while (read(*(int *)arg, buf, sizeof(buf)) > 0)
		;
	return NULL;
}

/* All of len through one of the stream calls; what the calls returned, summed. */
static long
send_all(int fd, const char *buf, size_t len, int how)
{
	long total = 0;
	while ((size_t)total < len) {
		const char *at = buf + total;
		size_t left = len - (size_t)total;
		struct iovec iov[2] = {{(void *)at, left / 2},
		                       {(void *)(at + left / 2), left - left / 2}};
		struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};
		ssize_t n = how == 0   ? send(fd, at, left, 0)
		            : how == 1 ? sendto(fd, at, left, 0, NULL, 0)
		                       : sendmsg(fd, &msg, 0);
		if (n <= 0)
			return -1;
		total += n;
	}
	return total;
}

/* A thread that only sends: it never allocates, so it never joins the library's registry of
 * thread tallies. */
struct sender {
	int fd;
	long sent;
};

static void *
send_only(void *arg)
{
	static char zeros[100000];
	struct sender *s = arg;
	for (int i = 0; i < 10; i++)
		s->sent += send(s->fd, zeros, sizeof(zeros), 0);
	return NULL;
}

/* Sends 1,000,000 bytes on fd from a thread that allocates nothing; whether all went. */
static bool
send_from_a_thread_that_never_allocates(int fd)
{
	struct sender only = {fd, 0};
	pthread_t sender;
	return pthread_create(&sender, NULL, send_only, &only) == 0 &&
	       pthread_join(sender, NULL) == 0 && only.sent == 1000000;
}

static int
mode_send(void)
{
	static char buf[1000000];
	int stream[2], dgram[2];
	pthread_t reader;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, stream) != 0 ||
	    socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, dgram) != 0 ||
	    pthread_create(&reader, NULL, drain, &stream[1]) != 0)
		return 1;
	long sent = 0;
	for (int how = 0; how < 3; how++) {
		long n = send_all(stream[0], buf, sizeof(buf), how);
		if (n != (long)sizeof(buf))
			return 1;
		sent += n;
	}
	struct iovec iov[3] = {{buf, 1000}, {buf, 1000}, {buf, 1000}};
	struct mmsghdr msgs[3] = {{.msg_hdr = {.msg_iov = &iov[0], .msg_iovlen = 1}},
	                          {.msg_hdr = {.msg_iov = &iov[1], .msg_iovlen = 1}},
	                          {.msg_hdr = {.msg_iov = &iov[2], .msg_iovlen = 1}}};
	int got = sendmmsg(dgram[0], msgs, 3, 0);
	if (got != 3)
		return 1;
	for (int i = 0; i < got; i++)
		sent += msgs[i].msg_len;
	if (!send_from_a_thread_that_never_allocates(stream[0]))
		return 1;
	sent += 1000000;
	close(stream[0]);
	pthread_join(reader, NULL);
	int closed = dgram[1];
	close(closed);
	close(dgram[0]);
	struct msghdr empty = {.msg_iov = iov, .msg_iovlen = 1};
	errno = 0;
	bool ok = send(closed, buf, 1, 0) == -1 && errno == EBADF;
	errno = 0;
	ok = ok && sendmsg(closed, &empty, 0) == -1 && errno == EBADF;
	errno = 0;
	ok = ok && sendmmsg(closed, msgs, 1, 0) == -1 && errno == EBADF;
	printf("sent=%ld errors=%s\n", sent, ok ? "ok" : "bad");
	return mode_idle();
}

/* The fork child's readings count what the child sent, not what its parent had. */
static int
mode_sendfork(void)
{
	static char buf[1000000];
	int stream[2];
	pthread_t reader;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, stream) != 0 ||
	    pthread_create(&reader, NULL, drain, &stream[1]) != 0 ||
	    send_all(stream[0], buf, sizeof(buf), 0) != (long)sizeof(buf))
		return 1;
	if (!send_from_a_thread_that_never_allocates(stream[0]))
		return 1;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		if (api_round() < 0 || send_all(stream[0], buf, 1000, 0) != 1000)
			_exit(1);
		printf("child %d sent=1000\n", (int)getpid());
		wait_eof();
		_exit(0);
	}
	int status = 1;
	waitpid(pid, &status, 0);
	close(stream[0]);
	pthread_join(reader, NULL);
	return status == 0 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *mode = argc > 1 ? argv[1] : "idle";
	if (!strcmp(mode, "names"))
		return mode_names();
	if (!strcmp(mode, "idle"))
		return mode_idle();
	if (!strcmp(mode, "alloc"))
		return mode_alloc();
	if (!strcmp(mode, "send"))
		return mode_send();
	if (!strcmp(mode, "sendfork"))
		return mode_sendfork();
	if (!strcmp(mode, "status")) {
		print_status();
		return mode_idle();
	}
	if (!strcmp(mode, "eintr"))
		return mode_eintr(argc > 2 && !strcmp(argv[2], "own"));
	if (!strcmp(mode, "spawn") && argc > 2)
		return mode_spawn(argv[2], argc > 3 && !strcmp(argv[3], "threaded"));
	if (!strcmp(mode, "internal") && argc > 2)
		return mode_internal(argv[2]);
	if (!strcmp(mode, "forkloop") && argc > 2)
		return mode_forkloop(atoi(argv[2]));
	if (!strcmp(mode, "forkrounds"))
		return mode_forkrounds(argc > 2 && !strcmp(argv[2], "daemon"));
	if (!strcmp(mode, "forkchild"))
		return mode_forkchild(argc > 2 && !strcmp(argv[2], "busy"));
	if (!strcmp(mode, "api"))
		return mode_api();
	if (!strcmp(mode, "emfile"))
		return mode_emfile();
	if (!strcmp(mode, "forkerrno"))
		return mode_forkerrno();
	if (!strcmp(mode, "ns") && argc > 2)
		return mode_ns(argv[2], argc > 3 ? argv[3] : NULL);
	if (!strcmp(mode, "umount") && argc > 2)
		return mode_umount(argv[2], argc > 3 && !strcmp(argv[3], "inside"));
	if (!strcmp(mode, "timerxid"))
		return mode_timerxid();
	if (!strcmp(mode, "arenas"))
		return mode_arenas();
	if (!strcmp(mode, "lowfd") && argc > 2)
		return mode_lowfd(atoi(argv[2]));
	if (!strcmp(mode, "closeall"))
		return mode_closeall();
	if (!strcmp(mode, "dupover"))
		return mode_dupover(argc > 2 && !strcmp(argv[2], "status") ? ".status" : ".fifo");
	if (!strcmp(mode, "reuse") && argc > 2)
		return mode_reuse(argv[2]);
	if (!strcmp(mode, "handler") && argc > 2)
		return mode_handler(argv[2]);
	if (!strcmp(mode, "forkexec") && argc > 2)
		return mode_forkexec(atoi(argv[2]));
	if (!strcmp(mode, "apisignal") && argc > 2)
		return mode_apisignal(strtol(argv[2], NULL, 10));
	if (!strcmp(mode, "apiwake"))
		return mode_apiwake();
	if (!strcmp(mode, "lastexit"))
		return mode_lastexit();
	if (!strcmp(mode, "uaf"))
		return mode_uaf(argc > 2 && !strcmp(argv[2], "alias"));
	if (!strcmp(mode, "execfail")) {
		char *const args[] = {"missing", NULL};
		if (execv("/nonexistent/roundtrim-probe", args) == 0)
			return 1;
		return mode_idle();
	}
	fprintf(stderr, "probe: unknown mode %s\n", mode);
	return 2;
}
