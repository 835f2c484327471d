#include "harness.h"

#include "rt_file_rules.h"
#include "rt_procfs.h"

/* Shared with the benchmark programs: file reading without stdio. */
#include "../bench/bench_common.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static char th_dir[PATH_MAX];

const char *
th_lib(void)
{
	return RT_BUILD_DIR "/libroundtrim.so";
}

const char *
th_workload(const char *name)
{
	static __thread char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/test/workloads/%s", RT_BUILD_DIR, name);
	return path;
}

const char *
th_system_lib(const char *file)
{
	static __thread char path[PATH_MAX];
	static const char *const dirs[] = {"/usr/lib/x86_64-linux-gnu",
	                                   "/usr/lib/aarch64-linux-gnu", "/usr/lib64", NULL};
	for (int i = 0; dirs[i]; i++) {
		snprintf(path, sizeof(path), "%s/%s", dirs[i], file);
		if (access(path, R_OK) == 0)
			return path;
	}
	return NULL;
}

const char *
th_jemalloc(void)
{
	return th_system_lib("libjemalloc.so.2");
}

const char *
th_tmpdir(void)
{
	if (!th_dir[0]) {
		snprintf(th_dir, sizeof(th_dir), "/tmp/rt-test-XXXXXX");
		cr_assert_not_null(mkdtemp(th_dir), "mkdtemp: %s", strerror(errno));
	}
	return th_dir;
}

static void
th_remove_tree(const char *path)
{
	DIR *d = opendir(path);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			char child[PATH_MAX];
			snprintf(child, sizeof(child), "%s/%s", path, e->d_name);
			struct stat st;
			if (lstat(child, &st) == 0 && S_ISDIR(st.st_mode)) {
				chmod(child, 0700);
				th_remove_tree(child);
			} else {
				unlink(child);
			}
		}
		closedir(d);
	}
	rmdir(path);
}

void
th_cleanup(void)
{
	if (th_dir[0])
		th_remove_tree(th_dir);
	th_dir[0] = '\0';
}

static bool
th_env_dropped(const char *entry)
{
	return !strncmp(entry, "LD_PRELOAD=", 11) || !strncmp(entry, "ROUNDTRIM_", 10) ||
	       !strncmp(entry, "NVFLARE_", 8) || !strncmp(entry, "MALLOC_ARENA_MAX=", 17) ||
	       !strncmp(entry, "MALLOC_CONF=", 12);
}

/* make check-asan and check-tsan define TH_PRELOAD_AFTER: the sanitizer's runtime, appended to
 * every non-empty LD_PRELOAD a test gives, so that the library keeps its place in front and the
 * sanitizer's allocator serves behind it (the Makefile says why). Empty otherwise. */
#ifndef TH_PRELOAD_AFTER
#define TH_PRELOAD_AFTER ""
#endif

/* There, the library calls the sanitizer's allocator unknown and says so once in each process
 * where it works: what a test reads of a child's stderr comes without that line, which every
 * test that expects a quiet or a one-line stderr would otherwise find. */
static void
th_drop_sanitizer_line(char *buf, size_t *len)
{
	static const char line[] =
	    "roundtrim: malloc is served by unknown: rounds are counted, no allocator action is "
	    "taken\n";
	char *at;
	while (TH_PRELOAD_AFTER[0] && (at = strstr(buf, line)) != NULL) {
		size_t n = sizeof(line) - 1;
		memmove(at, at + n, *len - (size_t)(at - buf) - n + 1);
		*len -= n;
	}
}

/* make check-asan: what a test adds to make's ASAN_OPTIONS for its children (th_asan_options).
 * Criterion runs each test in a process of its own, so it lasts the one test. */
static char th_asan_extra[256];

static bool
th_under_asan(void)
{
	return strstr(TH_PRELOAD_AFTER, "libclang_rt.asan") != NULL;
}

void
th_asan_options(const char *options)
{
	snprintf(th_asan_extra, sizeof(th_asan_extra), "%s", options);
}

int
th_report_descriptors(void)
{
#ifdef TH_SANITIZER_REPORTS
	return 1;
#else
	return 0;
#endif
}

bool
th_allocator_unknown(void)
{
	return TH_PRELOAD_AFTER[0] != '\0';
}

const char *
th_release_action(void)
{
	return th_allocator_unknown() ? "none" : "glibc_release";
}

void
th_expect_release(const char *line)
{
	char needle[64];
	snprintf(needle, sizeof(needle), "\"action\":\"%s\"", th_release_action());
	th_expect_in(line, needle);
}

/* The runner's ASAN_OPTIONS with the test's own after them (later options win), or NULL. */
static const char *
th_asan_entry(char *buf, size_t size)
{
	if (!th_under_asan() || !th_asan_extra[0])
		return NULL;
	const char *make = getenv("ASAN_OPTIONS");
	snprintf(buf, size, "ASAN_OPTIONS=%s%s%s", make ? make : "", make && *make ? ":" : "",
	         th_asan_extra);
	return buf;
}

static const char *
th_env_entry(const char *entry, char *buf, size_t size)
{
	if (!TH_PRELOAD_AFTER[0] || strncmp(entry, "LD_PRELOAD=", 11) != 0 || !entry[11])
		return entry;
	snprintf(buf, size, "%s:%s", entry, TH_PRELOAD_AFTER);
	return buf;
}

const char *
th_noshare(void)
{
	return RT_BUILD_DIR "/test/tools/noshare";
}

bool
th_keeper_mode(void)
{
	const char *mode = getenv("TH_DESCRIPTORS");
	return mode && !strcmp(mode, "keeper");
}

void
th_spawn(struct th_proc *p, const char *const argv[], const char *const env[])
{
	memset(p, 0, sizeof(*p));
	const char *envp[512];
	char preload[4 * PATH_MAX], asan[2048];
	size_t n = 0;
	const char *asan_entry = th_asan_entry(asan, sizeof(asan));
	for (char **e = environ; *e && n < 400; e++)
		if (!th_env_dropped(*e) && !(asan_entry && !strncmp(*e, "ASAN_OPTIONS=", 13)))
			envp[n++] = *e;
	if (asan_entry)
		envp[n++] = asan_entry;
	for (size_t i = 0; env && env[i] && n < 510; i++)
		envp[n++] = th_env_entry(env[i], preload, sizeof(preload));
	envp[n] = NULL;

	int in[2], out[2], err[2];
	cr_assert_eq(pipe2(in, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(err, O_CLOEXEC), 0);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_adddup2(&fa, err[1], 2);
	/* TH_DESCRIPTORS=keeper: every child under the launcher (th_keeper_mode). */
	const char *wrapped[64];
	if (th_keeper_mode()) {
		size_t i = 0;
		wrapped[0] = th_noshare();
		for (; argv[i] && i + 2 < sizeof(wrapped) / sizeof(wrapped[0]); i++)
			wrapped[i + 1] = argv[i];
		wrapped[i + 1] = NULL;
		argv = wrapped;
	}
	int rc = posix_spawn(&p->pid, argv[0], &fa, NULL, (char *const *)argv, (char *const *)envp);
	posix_spawn_file_actions_destroy(&fa);
	cr_assert_eq(rc, 0, "spawn %s: %s", argv[0], strerror(rc));
	close(in[0]);
	close(out[1]);
	close(err[1]);
	p->in_fd = in[1];
	p->out_fd = out[0];
	p->err_fd = err[0];
}

static int64_t
th_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool
th_read_line(struct th_proc *p, char *line, size_t size, int timeout_ms)
{
	int64_t deadline = th_now_ms() + timeout_ms;
	for (;;) {
		char *nl = memchr(p->outbuf, '\n', p->outlen);
		if (nl) {
			size_t len = (size_t)(nl - p->outbuf);
			size_t copy = len < size - 1 ? len : size - 1;
			memcpy(line, p->outbuf, copy);
			line[copy] = '\0';
			memmove(p->outbuf, nl + 1, p->outlen - len - 1);
			p->outlen -= len + 1;
			return true;
		}
		int64_t left = deadline - th_now_ms();
		if (left <= 0 || p->outlen == sizeof(p->outbuf))
			return false;
		struct pollfd pfd = {.fd = p->out_fd, .events = POLLIN};
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		ssize_t n = read(p->out_fd, p->outbuf + p->outlen, sizeof(p->outbuf) - p->outlen);
		if (n <= 0)
			return false;
		p->outlen += (size_t)n;
	}
}

void
th_write(struct th_proc *p, const char *text)
{
	size_t len = strlen(text);
	cr_assert_eq(write(p->in_fd, text, len), (ssize_t)len);
}

void
th_close_stdin(struct th_proc *p)
{
	if (p->in_fd >= 0)
		close(p->in_fd);
	p->in_fd = -1;
}

bool
th_wait(struct th_proc *p, int timeout_ms)
{
	if (p->reaped)
		return true;
	int pidfd = (int)syscall(SYS_pidfd_open, p->pid, 0);
	cr_assert_geq(pidfd, 0, "pidfd_open: %s", strerror(errno));
	struct pollfd pfd = {.fd = pidfd, .events = POLLIN};
	int ready = poll(&pfd, 1, timeout_ms);
	close(pidfd);
	if (ready <= 0) {
		th_kill(p);
		return false;
	}
	waitpid(p->pid, &p->status, 0);
	p->reaped = true;
	return true;
}

/* Appends what stderr holds now, waiting at most timeout_ms for something; false at EOF. */
static bool
th_pull_stderr(struct th_proc *p, int timeout_ms)
{
	if (p->errlen >= sizeof(p->errbuf) - 1)
		return false;
	struct pollfd pfd = {.fd = p->err_fd, .events = POLLIN};
	if (poll(&pfd, 1, timeout_ms) <= 0)
		return true;
	ssize_t n = read(p->err_fd, p->errbuf + p->errlen, sizeof(p->errbuf) - 1 - p->errlen);
	if (n <= 0)
		return false;
	p->errlen += (size_t)n;
	p->errbuf[p->errlen] = '\0';
	th_drop_sanitizer_line(p->errbuf, &p->errlen);
	return true;
}

bool
th_wait_stderr(struct th_proc *p, const char *needle, char *buf, size_t size, int timeout_ms)
{
	int64_t deadline = th_now_ms() + timeout_ms;
	bool found;
	while (!(found = p->errlen && strstr(p->errbuf, needle)) && th_now_ms() < deadline)
		if (!th_pull_stderr(p, (int)(deadline - th_now_ms())))
			break;
	snprintf(buf, size, "%s", p->errlen ? p->errbuf : "");
	return found || (p->errlen && strstr(p->errbuf, needle));
}

size_t
th_read_stderr(struct th_proc *p, char *buf, size_t size)
{
	while (th_pull_stderr(p, -1))
		;
	return (size_t)snprintf(buf, size, "%s", p->errlen ? p->errbuf : "");
}

void
th_kill(struct th_proc *p)
{
	if (p->reaped || p->pid <= 0)
		return;
	kill(p->pid, SIGKILL);
	waitpid(p->pid, &p->status, 0);
	p->reaped = true;
}

static bool
th_file_has(const char *path, const char *needle, char *line, size_t size)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	char buf[4096];
	bool found = false;
	while (!found && fgets(buf, sizeof(buf), f)) {
		if (strstr(buf, needle) && strchr(buf, '\n')) {
			found = true;
			if (line) {
				snprintf(line, size, "%s", buf);
			}
		}
	}
	fclose(f);
	return found;
}

/* Blocks until something in the directory of path changes, or the deadline passes. */
static void
th_wait_dir_change(int ifd, int64_t deadline)
{
	int64_t left = deadline - th_now_ms();
	if (left <= 0)
		return;
	struct pollfd pfd = {.fd = ifd, .events = POLLIN};
	if (poll(&pfd, 1, (int)left) > 0) {
		char events[4096];
		if (read(ifd, events, sizeof(events)) < 0) {
			/* drained or interrupted: the caller re-checks either way */
		}
	}
}

static int
th_watch_dir_of(const char *path)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = slash == dir ? (slash[1] = '\0', '/') : '\0';
	int ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	cr_assert_geq(ifd, 0);
	inotify_add_watch(ifd, dir,
	                  IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_TO);
	return ifd;
}

bool
th_wait_line(const char *path, const char *needle, char *line, size_t size, int timeout_ms)
{
	int64_t deadline = th_now_ms() + timeout_ms;
	int ifd = th_watch_dir_of(path);
	bool found;
	while (!(found = th_file_has(path, needle, line, size)) && th_now_ms() < deadline)
		th_wait_dir_change(ifd, deadline);
	close(ifd);
	return found;
}

bool
th_wait_change(const char *path, int timeout_ms)
{
	int ifd = th_watch_dir_of(path);
	struct pollfd pfd = {.fd = ifd, .events = POLLIN};
	bool changed = poll(&pfd, 1, timeout_ms) > 0;
	close(ifd);
	return changed;
}

bool
th_wait_path(const char *path, bool gone, int timeout_ms)
{
	int64_t deadline = th_now_ms() + timeout_ms;
	int ifd = th_watch_dir_of(path);
	bool done;
	while (!(done = (access(path, F_OK) == 0) != gone) && th_now_ms() < deadline)
		th_wait_dir_change(ifd, deadline);
	close(ifd);
	return done;
}

int64_t
th_field(const char *line, const char *key)
{
	char pattern[128];
	const char *at;
	snprintf(pattern, sizeof(pattern), "\"%s\":", key);
	if (!(at = strstr(line, pattern))) {
		snprintf(pattern, sizeof(pattern), "%s=", key);
		if (!(at = strstr(line, pattern)))
			return -1;
	}
	at += strlen(pattern);
	if (*at < '0' || *at > '9')
		return -1;
	return strtoll(at, NULL, 10);
}

int
th_entries_in(const char *dir)
{
	int n = 0;
	DIR *d = opendir(dir);
	cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
	for (struct dirent *e; (e = readdir(d)) != NULL;)
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

int
th_fd_floor(void)
{
	struct rlimit limit;
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &limit), 0);
	return rt_file_fd_floor(limit.rlim_cur);
}

ssize_t
th_read_file(const char *path, char *buf, size_t size)
{
	return bench_read_file(path, buf, size);
}

int
th_count_in(const char *text, const char *needle)
{
	int n = 0;
	for (const char *at = text; (at = strstr(at, needle)) != NULL; at += strlen(needle))
		n++;
	return n;
}

int
th_count_lines(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	char buf[4096];
	int count = 0;
	while (fgets(buf, sizeof(buf), f))
		count += strstr(buf, needle) != NULL;
	fclose(f);
	return count;
}

bool
th_fifo_write(const char *path, const char *text, size_t len)
{
	/* The library makes its FIFO and then opens it: a write between the two finds no reader
	 * (ENXIO), as a child's first write may, and waits for it, a second at most (a FIFO left
	 * by a process that is gone has none for good). */
	int fd = -1;
	for (int waited = 0; fd < 0 && waited < 1000; waited += 10) {
		fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0 && errno != ENXIO)
			return false;
		if (fd < 0)
			nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
	}
	if (fd < 0)
		return false;
	/* Blocking from here on: a reader exists, and FIFO triggers must never be dropped. */
	fcntl(fd, F_SETFL, 0);
	bool ok = true;
	while (len > 0 && ok) {
		ssize_t n = write(fd, text, len);
		ok = n > 0;
		if (ok) {
			text += n;
			len -= (size_t)n;
		}
	}
	close(fd);
	return ok;
}

bool
th_make_cgroup(char *dir, size_t size, const char *name, const char *limit)
{
	char self[4096], path[PATH_MAX * 2];
	if (th_read_file("/proc/self/cgroup", self, sizeof(self)) <= 0)
		return false;
	char *v1 = strstr(self, ":memory:");
	if (v1) {
		char cg[1024];
		if (sscanf(v1 + 8, "%1023s", cg) != 1)
			return false;
		snprintf(dir, size, "/sys/fs/cgroup/memory%s/%s-%d", strcmp(cg, "/") ? cg : "",
		         name, getpid());
		snprintf(path, sizeof(path), "%s/memory.limit_in_bytes", dir);
	} else {
		snprintf(dir, size, "/sys/fs/cgroup/%s-%d", name, getpid());
		snprintf(path, sizeof(path), "%s/memory.max", dir);
	}
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return false;
	if (!limit)
		return true;
	FILE *f = fopen(path, "w");
	if (!f)
		return false;
	bool ok = fputs(limit, f) >= 0;
	return fclose(f) == 0 && ok;
}

bool
th_make_pids_cgroup(char *dir, size_t size, const char *name, int max)
{
	static char self[4096], mountinfo[65536];
	char mine[PATH_MAX], path[PATH_MAX * 2], value[32];
	size_t top;
	if (th_read_file("/proc/self/cgroup", self, sizeof(self)) <= 0 ||
	    th_read_file("/proc/self/mountinfo", mountinfo, sizeof(mountinfo)) <= 0)
		return false;
	enum rt_procfs_cgroup_version v =
	    rt_procfs_cgroup_dir(self, mountinfo, "pids", mine, sizeof(mine), &top);
	if (v == RT_PROCFS_CGROUP_NONE)
		return false;
	/* v2: the controller must be on for the parent's children; where the runner's own
	 * cgroup holds processes, only the root's may be changed (no internal processes). */
	if (v == RT_PROCFS_CGROUP_V2) {
		snprintf(path, sizeof(path), "%s/cgroup.subtree_control", mine);
		int fd = open(path, O_WRONLY | O_CLOEXEC);
		bool on = fd >= 0 && write(fd, "+pids", 5) == 5;
		if (fd >= 0)
			close(fd);
		if (!on)
			return false;
	}
	snprintf(dir, size, "%s/%s-%d", mine, name, getpid());
	snprintf(path, sizeof(path), "%s/pids.max", dir);
	snprintf(value, sizeof(value), "%d", max);
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return false;
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	bool ok = fd >= 0 && write(fd, value, strlen(value)) == (ssize_t)strlen(value);
	if (fd >= 0)
		close(fd);
	if (!ok)
		rmdir(dir);
	return ok;
}

void
th_remove_cgroup(const char *dir)
{
	/* The last task's charge may still be on its way out after its parent reaped it. */
	for (int i = 0; i < 2000 && rmdir(dir) != 0 && errno == EBUSY; i++) {
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
	}
}

/* Appends what fd holds now to buf; false at EOF. */
static bool
th_drain(int fd, char *buf, size_t size, size_t *len)
{
	char scratch[4096];
	ssize_t n = read(fd, scratch, sizeof(scratch));
	if (n <= 0)
		return false;
	size_t keep = *len + 1 < size ? size - 1 - *len : 0;
	keep = (size_t)n < keep ? (size_t)n : keep;
	memcpy(buf + *len, scratch, keep);
	*len += keep;
	buf[*len] = '\0';
	return true;
}

int
th_run(const char *const argv[], const char *const env[], char *out, size_t out_size, char *err,
       size_t err_size)
{
	struct th_proc p;
	th_spawn(&p, argv, env);
	th_close_stdin(&p);
	size_t out_len = 0, err_len = 0;
	out[0] = err[0] = '\0';
	int64_t deadline = th_now_ms() + TH_TIMEOUT_MS;
	bool out_open = true, err_open = true;
	while ((out_open || err_open) && th_now_ms() < deadline) {
		struct pollfd fds[2] = {{.fd = out_open ? p.out_fd : -1, .events = POLLIN},
		                        {.fd = err_open ? p.err_fd : -1, .events = POLLIN}};
		if (poll(fds, 2, (int)(deadline - th_now_ms())) <= 0)
			continue;
		if (fds[0].revents)
			out_open = th_drain(p.out_fd, out, out_size, &out_len);
		if (fds[1].revents) {
			err_open = th_drain(p.err_fd, err, err_size, &err_len);
			th_drop_sanitizer_line(err, &err_len);
		}
	}
	close(p.out_fd);
	close(p.err_fd);
	if (out_open || err_open) {
		th_kill(&p);
		return -1;
	}
	/* Both closed: it is exiting. */
	if (!th_wait(&p, TH_TIMEOUT_MS))
		return -1;
	return WIFEXITED(p.status) ? WEXITSTATUS(p.status) : -1;
}

void
th_start_probe(struct th_probe *run, const char *const args[], const char *extra, char *line,
               size_t size)
{
	const char *env[] = {extra ? extra : "ROUNDTRIM_GC_ROUNDS=0", NULL};
	th_start_probe_env(run, args, env, line, size);
}

void
th_start_probe_env(struct th_probe *run, const char *const args[], const char *const extra[],
                   char *line, size_t size)
{
	th_start_workload(run, "probe", NULL, NULL, args, extra, line, size);
}

void
th_start_workload(struct th_probe *run, const char *workload, const char *preload,
                  const char *fifo_dir, const char *const args[], const char *const extra[],
                  char *line, size_t size)
{
	const char *dir = fifo_dir ? fifo_dir : th_tmpdir();
	static char env_preload[2 * PATH_MAX + 16], env_fifo[PATH_MAX + 32];
	snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s", preload ? preload : th_lib());
	snprintf(env_fifo, sizeof(env_fifo), "ROUNDTRIM_FIFO=%s/%%p.fifo", dir);
	const char *env[16] = {env_preload, env_fifo};
	for (size_t i = 0; extra && extra[i] && i < 13; i++)
		env[i + 2] = extra[i];
	/* Not th_workload's buffer, which an argument may be using. */
	static char path[PATH_MAX], wrapper[PATH_MAX];
	const char *argv[10] = {path};
	int at = 1;
	/* "noshare:NAME": NAME where the worker cannot have a descriptor table of its own;
	 * "nokeeper:NAME": where no task of the process can. */
	if (!strncmp(workload, "noshare:", 8) || !strncmp(workload, "nokeeper:", 9)) {
		bool keeper = workload[2] == 's';
		workload = strchr(workload, ':') + 1;
		snprintf(wrapper, sizeof(wrapper), "%s", th_noshare());
		argv[0] = wrapper;
		if (!keeper)
			argv[at++] = "--no-keeper";
		argv[at++] = path;
	}
	snprintf(path, sizeof(path), "%s/test/workloads/%s", RT_BUILD_DIR, workload);
	for (int i = 0; args[i] && i < 6; i++)
		argv[at++] = args[i];
	th_spawn(&run->proc, argv, env);
	cr_assert(th_read_line(&run->proc, line, size, TH_TIMEOUT_MS), "%s %s said nothing",
	          workload, args[0]);
	snprintf(run->fifo, sizeof(run->fifo), "%s/%d.fifo", dir, run->proc.pid);
	snprintf(run->status, sizeof(run->status), "%s/%d.status", dir, run->proc.pid);
	cr_assert(th_wait_path(run->status, false, TH_TIMEOUT_MS), "no status file");
}

void
th_wait_rounds(struct th_probe *run, long rounds, char *line, size_t size)
{
	char needle[64];
	snprintf(needle, sizeof(needle), "\"rounds\":%ld,", rounds);
	cr_assert(th_wait_line(run->status, needle, line, size, TH_TIMEOUT_MS),
	          "rounds never reached %ld", rounds);
}

pid_t
th_thread_named(pid_t pid, const char *name)
{
	char dir[64];
	pid_t found = -1;
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	DIR *d = opendir(dir);
	for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
		char path[PATH_MAX], comm[64] = "";
		snprintf(path, sizeof(path), "%s/%s/comm", dir, e->d_name);
		if (e->d_name[0] != '.' && th_read_file(path, comm, sizeof(comm)) > 0 &&
		    !strncmp(comm, name, strlen(name)) && comm[strlen(name)] == '\n')
			found = atoi(e->d_name);
	}
	if (d)
		closedir(d);
	return found;
}

void
th_expect_in(const char *haystack, const char *needle)
{
	cr_assert_not_null(strstr(haystack, needle), "\"%s\" lacks \"%s\"", haystack, needle);
}

const char *
th_pid_text(pid_t pid)
{
	static __thread char buf[4][16];
	static __thread int next;
	char *s = buf[next++ % 4];
	snprintf(s, 16, "%d", (int)pid);
	return s;
}

void
th_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "cannot write %s", path);
	fputs(text, f);
	fclose(f);
}

const char *
th_env_in_tmp(const char *name, const char *file)
{
	static __thread char buf[4][PATH_MAX];
	static __thread int next;
	char *out = buf[next++ % 4];
	snprintf(out, PATH_MAX, "%s=%s/%s", name, th_tmpdir(), file);
	return out;
}

pid_t
th_fd_holder(pid_t pid)
{
	pid_t keeper = th_thread_named(pid, "roundtrim-fds");
	return keeper > 0 ? keeper : th_thread_named(pid, "roundtrim");
}
