/* The library's files. Everything is opened at start-up by the thread that starts the library,
 * before the program can juggle descriptors around it, and lifted above the floor at once
 * (rt_fd). Later the files are only read, written, renamed and unlinked. The stats and log
 * files of a per-process template (%p) are opened unnamed (O_TMPFILE) and get their name with
 * their first line, so that a process that never reports leaves no empty file (roundtrim(7),
 * FILES). */
#include "rt_files.h"
#include "rt_fd.h"
#include "rt_file_rules.h"
#include "rt_io.h"
#include "rt_out.h"
#include "rt_path.h"
#include "rt_pressure.h"
#include "rt_procfs.h"
#include "rt_report.h"
#include "rt_shim.h"

#ifdef RT_SANITIZER_REPORTS
#include <sanitizer/common_interface_defs.h>
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define RT_FILES_STATUS_PATH_MAX (RT_CONFIG_PATH_MAX + 16)
#define RT_FILES_WHY_MAX (RT_FILES_STATUS_PATH_MAX + 256)
#define RT_FILES_REWRITE_MAX 8192

struct rt_output {
	struct rt_fd fd;
	char path[RT_CONFIG_PATH_MAX];
	bool unnamed;       /* O_TMPFILE: named with its first line */
	bool made_at_start; /* created empty at start-up (no O_TMPFILE there): removed if unused */
	bool per_process;   /* its template has %p */
	atomic_bool written;
	bool loss_said; /* its first lost record was said on stderr */
	size_t len;     /* for a file rewritten in place: the longest content written */
};

static struct {
	struct rt_fd fifo, status, statm, smaps, stat;
	struct rt_fd mem_used, mem_limit, meminfo; /* ROUNDTRIM_PRESSURE's readings */
	enum rt_pressure_source mem_source;
	struct rt_output stats, log, prom, trace, sites;
	char fifo_path[RT_CONFIG_PATH_MAX];
	char status_path[RT_FILES_STATUS_PATH_MAX];
	size_t status_len; /* the longest content written, which shorter ones pad over */
	bool status_loss_said;
	/* Records that a file could not take whole, dropped (the status's lost_records). Written
	 * by the worker, which writes every file, and read by it. */
	uint64_t lost;
	atomic_int owner; /* the pid that opened these files: only it removes them */
	/* The descriptors live in the library's own table only, the worker's or the keeper's
	 * (rt_files_went_private): the program's threads can neither reach nor replace them, and
	 * never touch them. Atomic: read by rt_files_fifo_poke in any thread, the worker's signal
	 * handler among them. */
	atomic_bool private_table;
	/* The FIFO's and the status file's paths are removed once, by whichever comes first: the
	 * worker, when the program took the FIFO's descriptor, or the exit. */
	atomic_bool paths_claimed;
	/* Sanitizer builds only: the runtime's report file, in both tables. */
	atomic_int sanitizer_reports;
} rt_f = {
    .fifo = RT_FD_NONE("FIFO trigger"),
    .status = RT_FD_NONE("status file"),
    .statm = RT_FD_NONE("RSS readings"),
    .smaps = RT_FD_NONE("RSS split"),
    .stat = RT_FD_NONE("thread count"),
    .stats = {.fd = RT_FD_NONE("stats file")},
    .log = {.fd = RT_FD_NONE("log file")},
    .prom = {.fd = RT_FD_NONE("Prometheus file")},
    .trace = {.fd = RT_FD_NONE("trace file")},
    .sites = {.fd = RT_FD_NONE("sites file")},
    .mem_used = RT_FD_NONE("pressure trigger"),
    .mem_limit = RT_FD_NONE("pressure trigger"),
    .meminfo = RT_FD_NONE("pressure trigger"),
    .sanitizer_reports = -1,
};

static struct rt_file_facts
rt_files_facts(const struct stat *st)
{
	struct rt_file_facts f = {
	    .exists = true,
	    .is_symlink = S_ISLNK(st->st_mode),
	    .is_dir = S_ISDIR(st->st_mode),
	    .is_fifo = S_ISFIFO(st->st_mode),
	    .is_regular = S_ISREG(st->st_mode),
	    .uid = st->st_uid,
	    .mode = st->st_mode & 07777,
	};
	return f;
}

static struct rt_file_facts
rt_files_lstat(int dirfd, const char *path)
{
	struct stat st;
	struct rt_file_facts none = {.exists = false};
	if (fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return none;
	return rt_files_facts(&st);
}

/* Whether the descriptor is what the facts described when they were read (no swap between). */
static bool
rt_files_is(int fd, mode_t type, unsigned uid)
{
	struct stat st;
	return fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == type && st.st_uid == uid;
}

/* Whether some process holds the FIFO open for reading: a non-blocking open for writing
 * fails with ENXIO when nobody reads. */
static bool
rt_files_fifo_has_reader(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* Opens the FIFO directory, creating it 0700 when missing, and checks it. */
static int
rt_files_fifo_dir(const char *dir, unsigned uid, char *why, size_t why_size)
{
	const char *refusal;
	struct rt_file_facts facts = rt_files_lstat(AT_FDCWD, dir);
	if (!facts.exists && mkdir(dir, 0700) != 0 && errno != EEXIST) {
		snprintf(why, why_size, "cannot create %s: %s", dir, strerror(errno));
		return -1;
	}
	facts = rt_files_lstat(AT_FDCWD, dir);
	if ((refusal = rt_file_dir_refusal(RT_FILE_FIFO, &facts, uid))) {
		snprintf(why, why_size, "refusing %s: %s", dir, refusal);
		return -1;
	}
	/* From here on, work relative to the directory checked, so that it cannot be swapped for
	 * a symbolic link between the check and the use; and check what was opened. */
	int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (dirfd < 0 || fstat(dirfd, &st) != 0) {
		snprintf(why, why_size, "cannot open %s: %s", dir, strerror(errno));
		if (dirfd >= 0)
			close(dirfd);
		return -1;
	}
	facts = rt_files_facts(&st);
	if ((refusal = rt_file_dir_refusal(RT_FILE_FIFO, &facts, uid))) {
		snprintf(why, why_size, "refusing %s: %s", dir, refusal);
		close(dirfd);
		return -1;
	}
	return dirfd;
}

static bool
rt_files_make_fifo(int dirfd, const char *name, unsigned uid, char *why, size_t why_size)
{
	const char *refusal;
	struct rt_file_facts dir = {.exists = true, .is_dir = true, .uid = uid, .mode = 0700};
	struct rt_file_facts node = rt_files_lstat(dirfd, name);
	switch (rt_file_node_verdict(RT_FILE_FIFO, &dir, &node, uid, &refusal)) {
	case RT_FILE_REFUSE:
	case RT_FILE_USE:
		snprintf(why, why_size, "refusing %s: %s", rt_f.fifo_path, refusal);
		return false;
	case RT_FILE_REPLACE:
		if (rt_files_fifo_has_reader(dirfd, name)) {
			snprintf(why, why_size, "refusing %s: another process reads it",
			         rt_f.fifo_path);
			return false;
		}
		unlinkat(dirfd, name, 0);
		break;
	case RT_FILE_CREATE:
		break;
	}
	if (mkfifoat(dirfd, name, 0600) != 0) {
		snprintf(why, why_size, "cannot create %s: %s", rt_f.fifo_path, strerror(errno));
		return false;
	}
	/* O_RDWR: the FIFO always has a writer (us), so poll never reports a hang-up when the
	 * last external writer closes, and writers never see ENXIO while we live. */
	int fd = openat(dirfd, name, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || !rt_files_is(fd, S_IFIFO, uid)) {
		snprintf(why, why_size, "cannot open %s: %s", rt_f.fifo_path,
		         fd < 0 ? strerror(errno) : "not our FIFO");
		if (fd >= 0)
			close(fd);
		return false;
	}
	fchmod(fd, 0600); /* mkfifo obeyed the umask; make the mode exact */
	if (!rt_fd_adopt(&rt_f.fifo, fd)) {
		snprintf(why, why_size, "cannot keep %s: %s", rt_f.fifo_path, strerror(errno));
		return false;
	}
	return true;
}

static bool
rt_files_make_status(int dirfd, const char *name, unsigned uid, char *why, size_t why_size)
{
	const char *refusal;
	struct rt_file_facts dir = {.exists = true, .is_dir = true, .uid = uid, .mode = 0700};
	struct rt_file_facts node = rt_files_lstat(dirfd, name);
	if (rt_file_node_verdict(RT_FILE_STATUS, &dir, &node, uid, &refusal) == RT_FILE_REFUSE) {
		snprintf(why, why_size, "refusing %s: %s", rt_f.status_path, refusal);
		return false;
	}
	int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || !rt_files_is(fd, S_IFREG, uid)) {
		snprintf(why, why_size, "cannot open %s: %s", rt_f.status_path,
		         fd < 0 ? strerror(errno) : "not our file");
		if (fd >= 0)
			close(fd);
		return false;
	}
	fchmod(fd, 0600);
	if (!rt_fd_adopt(&rt_f.status, fd)) {
		snprintf(why, why_size, "cannot keep %s: %s", rt_f.status_path, strerror(errno));
		return false;
	}
	rt_f.status_len = 0;
	return true;
}

/* Removes what dead processes of this user left in the FIFO's directory (killed by a signal,
 * they never ran their destructor), and what an earlier program of this very process left set
 * aside when it exec'd us. Only names rt_path_stale_candidate calls ours. */
static void
rt_files_sweep(int dirfd, const char *fifo_template)
{
	int scan = dup(dirfd);
	DIR *d = scan < 0 ? NULL : fdopendir(scan);
	if (!d) {
		if (scan >= 0)
			close(scan);
		return;
	}
	uid_t uid = geteuid();
	pid_t self = getpid();
	struct dirent *entry;
	while ((entry = readdir(d)) != NULL) {
		int pid;
		bool aside;
		struct stat st;
		if (!rt_path_stale_candidate(fifo_template, entry->d_name, &pid, &aside) ||
		    fstatat(dirfd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    st.st_uid != uid)
			continue;
		if ((pid == self && aside) || (pid != self && kill(pid, 0) != 0 && errno == ESRCH))
			unlinkat(dirfd, entry->d_name, 0);
	}
	closedir(d);
}

static void
rt_files_open_fifo(bool forked)
{
	const struct rt_config *cfg = &rt_shim.cfg;
	char dir[RT_CONFIG_PATH_MAX], name[NAME_MAX + 1], status_name[NAME_MAX + 1];
	char why[RT_FILES_WHY_MAX];
	int dirfd = -1;
	/* A fork child whose FIFO template has no %p would fight its parent for the same path:
	 * it keeps the other triggers only (roundtrim(7)). */
	if (!cfg->fifo[0] || (forked && !rt_path_template_per_pid(cfg->fifo)))
		return;
	if (!rt_path_expand(rt_f.fifo_path, sizeof(rt_f.fifo_path), cfg->fifo, getpid()) ||
	    !rt_path_status_for_fifo(rt_f.status_path, sizeof(rt_f.status_path), rt_f.fifo_path) ||
	    !rt_path_split(rt_f.fifo_path, dir, sizeof(dir), name, sizeof(name)) ||
	    !rt_path_split(rt_f.status_path, dir, sizeof(dir), status_name, sizeof(status_name))) {
		rt_warn("FIFO trigger off: cannot expand %s", cfg->fifo);
		goto label_return;
	}
	unsigned uid = geteuid();
	dirfd = rt_files_fifo_dir(dir, uid, why, sizeof(why));
	if (dirfd < 0 || !rt_files_make_fifo(dirfd, name, uid, why, sizeof(why))) {
		rt_warn("FIFO trigger off: %s", why);
		goto label_return;
	}
	if (!rt_files_make_status(dirfd, status_name, uid, why, sizeof(why))) {
		rt_warn("status file off (the command cannot see this process): %s", why);
	}
	rt_files_sweep(dirfd, cfg->fifo);
label_return:
	if (dirfd >= 0)
		close(dirfd);
	if (!rt_fd_valid(&rt_f.fifo))
		rt_f.fifo_path[0] = rt_f.status_path[0] = '\0';
}

/* Opens a stats or log file: an existing one for appending, a missing per-process one unnamed
 * (named by its first line), a missing shared one (no %p: several processes append to it) at
 * once. A file rewritten in place (the Prometheus file) the same way, but emptied and not for
 * appending: with O_APPEND, pwrite(2) appends whatever its offset (pwrite(2), BUGS). */
static void
rt_files_open_output(struct rt_output *out, const char *tmpl, bool rewritten)
{
	int mode = rewritten ? O_TRUNC : O_APPEND;
	char dir[RT_CONFIG_PATH_MAX], name[NAME_MAX + 1];
	const char *refusal;
	unsigned uid = geteuid();
	int dirfd = -1, fd = -1;
	struct stat st;
	if (!tmpl[0])
		return;
	out->per_process = rt_path_template_per_pid(tmpl);
	if (!rt_path_expand(out->path, sizeof(out->path), tmpl, getpid()) ||
	    !rt_path_split(out->path, dir, sizeof(dir), name, sizeof(name))) {
		rt_warn("%s off: cannot expand %s", out->fd.feature, tmpl);
		goto label_return;
	}
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int open_errno = errno;
	/* Where the directory cannot be opened, stat(2) tells the rules what is there (it takes no
	 * descriptor: under EMFILE the directory exists, and the open's error is the cause). */
	struct rt_file_facts dir_facts = {.exists = false};
	if (dirfd >= 0 ? fstat(dirfd, &st) == 0 : stat(dir, &st) == 0)
		dir_facts = rt_files_facts(&st);
	if ((refusal = rt_file_dir_refusal(RT_FILE_OUTPUT, &dir_facts, uid))) {
		rt_warn("%s off: refusing %s: %s", out->fd.feature, out->path, refusal);
		goto label_return;
	}
	if (dirfd < 0) {
		rt_warn("%s off: cannot open %s: %s", out->fd.feature, dir, strerror(open_errno));
		goto label_return;
	}
	struct rt_file_facts node = rt_files_lstat(dirfd, name);
	switch (rt_file_node_verdict(RT_FILE_OUTPUT, &dir_facts, &node, uid, &refusal)) {
	case RT_FILE_REFUSE:
	case RT_FILE_REPLACE:
		rt_warn("%s off: refusing %s: %s", out->fd.feature, out->path, refusal);
		goto label_return;
	case RT_FILE_USE:
		fd = openat(dirfd, name, O_WRONLY | mode | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
		if (fd >= 0 &&
		    (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != node.uid)) {
			rt_warn("%s off: %s changed while it was opened", out->fd.feature,
			        out->path);
			goto label_return;
		}
		break;
	case RT_FILE_CREATE:
		if (rt_path_template_per_pid(tmpl)) {
			fd = openat(dirfd, ".", O_TMPFILE | O_WRONLY | mode | O_CLOEXEC, 0600);
			out->unnamed = fd >= 0;
		}
		if (fd < 0) {
			/* Shared, or a file system without O_TMPFILE. */
			fd = openat(dirfd, name,
			            O_WRONLY | mode | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
			            0600);
			out->made_at_start = fd >= 0 && rt_path_template_per_pid(tmpl);
		}
		break;
	}
	if (fd < 0) {
		rt_warn("%s off: cannot open %s: %s", out->fd.feature, out->path, strerror(errno));
		goto label_return;
	}
	if (!rt_fd_adopt(&out->fd, fd))
		rt_warn("%s off: cannot keep %s: %s", out->fd.feature, out->path, strerror(errno));
	fd = -1;
label_return:
	if (fd >= 0)
		close(fd);
	if (dirfd >= 0)
		close(dirfd);
}

bool
rt_files_slurp(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	size_t len = 0;
	ssize_t n;
	while (len + 1 < size && (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	return len > 0;
}

static bool
rt_files_adopt_path(struct rt_fd *f, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd >= 0 && rt_fd_adopt(f, fd);
}

/* ROUNDTRIM_PRESSURE: the memory cgroup's two files when it has a limit, and /proc/meminfo
 * for the machine when it has none (policy/rt_pressure finds them). */
static void
rt_files_open_pressure(void)
{
	static char cgroup[4096], mountinfo[65536];
	char dir[RT_CONFIG_PATH_MAX], path[RT_CONFIG_PATH_MAX + 64];
	enum rt_pressure_source source = RT_PRESSURE_NONE;
	if (rt_files_slurp("/proc/self/cgroup", cgroup, sizeof(cgroup)) &&
	    rt_files_slurp("/proc/self/mountinfo", mountinfo, sizeof(mountinfo)))
		source = rt_pressure_cgroup_dir(cgroup, mountinfo, dir, sizeof(dir));
	if (source != RT_PRESSURE_NONE) {
		snprintf(path, sizeof(path), "%s/%s", dir, rt_pressure_used_file(source));
		bool used = rt_files_adopt_path(&rt_f.mem_used, path);
		snprintf(path, sizeof(path), "%s/%s", dir, rt_pressure_limit_file(source));
		if (used && rt_files_adopt_path(&rt_f.mem_limit, path))
			rt_f.mem_source = source;
	}
	if (!rt_files_adopt_path(&rt_f.meminfo, "/proc/meminfo") && !rt_f.mem_source)
		rt_warn(
		    "pressure trigger off: neither a memory cgroup nor /proc/meminfo can be read");
}

/* Sanitizer builds only (make check-asan, check-ubsan and check-tsan define
 * RT_SANITIZER_REPORTS, the runtime's log_path). The runtime opens its report file at its first
 * report, in the reporting thread's descriptor table: once the worker has a table of its own,
 * that number is valid in one of the two only, and what the other side reports is lost or
 * written into one of the program's descriptors. The file is opened here instead, before the
 * worker starts, at a low number as the runtime would have it (the program's table holds
 * nothing of the library's up there), and handed to the runtime; the worker keeps its copy
 * (rt_files_numbers). The symbolizer's pipes, made at the first report too, cannot be handed
 * over: after a report, one from the other table may still send its symbolizer requests
 * astray (the first report fails those targets anyway). */
static void
rt_files_open_sanitizer_reports(void)
{
#ifdef RT_SANITIZER_REPORTS
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s.%s.%d", RT_SANITIZER_REPORTS, rt_shim.program,
	         (int)getpid());
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0)
		__sanitizer_set_report_fd((void *)(intptr_t)fd);
	atomic_store(&rt_f.sanitizer_reports, fd);
#endif
}

void
rt_files_open(void)
{
	const struct rt_config *cfg = &rt_shim.cfg;
	bool forked = rt_shim.forked;
	atomic_store(&rt_f.owner, getpid());
	rt_files_open_sanitizer_reports();
	if (!rt_files_adopt_path(&rt_f.statm, "/proc/self/statm"))
		rt_warn("RSS readings off: cannot open /proc/self/statm: %s", strerror(errno));
	/* Read after actions only: it walks every mapping (about 3 ms per GiB resident). */
	rt_files_adopt_path(&rt_f.smaps, "/proc/self/smaps_rollup");
	rt_files_adopt_path(&rt_f.stat, "/proc/self/stat");
	rt_files_open_output(&rt_f.log, cfg->log, false);
	rt_files_open_output(&rt_f.stats, cfg->stats, false);
	rt_files_open_output(&rt_f.prom, cfg->prom, true);
	rt_files_open_output(&rt_f.trace, cfg->trace, false);
	rt_files_open_output(&rt_f.sites, cfg->sites, false);
	if (cfg->pressure_percent)
		rt_files_open_pressure();
	rt_files_open_fifo(forked);
}

static void
rt_files_forget_output(struct rt_output *out)
{
	rt_fd_close(&out->fd);
	out->path[0] = '\0';
	out->unnamed = out->made_at_start = out->per_process = out->loss_said = false;
	out->len = 0;
	atomic_store(&out->written, false);
}

/* Every descriptor the library keeps, for the worker's table and the starter's. */
static struct rt_fd *const rt_files_all[] = {
    &rt_f.fifo,     &rt_f.status,    &rt_f.statm,    &rt_f.smaps,    &rt_f.stat,
    &rt_f.mem_used, &rt_f.mem_limit, &rt_f.meminfo,  &rt_f.stats.fd, &rt_f.log.fd,
    &rt_f.prom.fd,  &rt_f.trace.fd,  &rt_f.sites.fd,
};
#define RT_FILES_ALL (sizeof(rt_files_all) / sizeof(rt_files_all[0]))

size_t
rt_files_numbers(int *out, size_t size)
{
	size_t n = 0;
	for (size_t i = 0; i < RT_FILES_ALL && n < size; i++) {
		int fd = atomic_load(&rt_files_all[i]->fd);
		if (fd >= 0)
			out[n++] = fd;
	}
	int reports = atomic_load(&rt_f.sanitizer_reports);
	if (reports >= 0 && n < size)
		out[n++] = reports;
	return n;
}

void
rt_files_close(void)
{
	rt_files_remove();
	for (size_t i = 0; i < RT_FILES_ALL; i++)
		rt_fd_close(rt_files_all[i]);
}

void
rt_files_went_private(void)
{
	/* The worker or the keeper has its own copies now: the starter's go, before the program
	 * runs on. No poke uses them from here on, before they are closed. */
	atomic_store(&rt_f.private_table, true);
	for (size_t i = 0; i < RT_FILES_ALL; i++)
		rt_fd_close_copy(rt_files_all[i]);
}

void
rt_files_forget_parent(void)
{
	/* In a table of the library's own the parent's descriptors never reached this child's. */
	if (atomic_load(&rt_f.private_table)) {
		for (size_t i = 0; i < RT_FILES_ALL; i++)
			atomic_store(&rt_files_all[i]->fd, -1);
		atomic_store(&rt_f.private_table, false);
	}
	rt_fd_close(&rt_f.fifo);
	rt_fd_close(&rt_f.status);
	rt_fd_close(&rt_f.statm);
	rt_fd_close(&rt_f.smaps);
	rt_fd_close(&rt_f.stat);
	rt_fd_close(&rt_f.mem_used);
	rt_fd_close(&rt_f.mem_limit);
	rt_fd_close(&rt_f.meminfo);
	rt_f.mem_source = RT_PRESSURE_NONE;
	rt_files_forget_output(&rt_f.stats);
	rt_files_forget_output(&rt_f.log);
	rt_files_forget_output(&rt_f.prom);
	rt_files_forget_output(&rt_f.trace);
	rt_files_forget_output(&rt_f.sites);
	rt_f.fifo_path[0] = rt_f.status_path[0] = '\0';
	rt_f.status_len = 0;
	rt_f.status_loss_said = false;
	rt_f.lost = 0;
	atomic_store(&rt_f.paths_claimed, false);
	atomic_store(&rt_f.owner, 0);
	/* Not closed: the child's runtime closes the parent's report file itself, at its first
	 * report, as it does in every fork child. */
	atomic_store(&rt_f.sanitizer_reports, -1);
}

static bool
rt_files_ours_here(void)
{
	return atomic_load(&rt_f.owner) == getpid();
}

/* The worker's view of the FIFO: once the program has closed or replaced its descriptor, the
 * FIFO and the status file go (nobody would read them), and so does their descriptor. */
static int
rt_files_fifo_checked(void)
{
	int fd = rt_fd_get(&rt_f.fifo);
	if (fd >= 0 || !rt_f.fifo_path[0] || atomic_exchange(&rt_f.paths_claimed, true))
		return fd;
	if (rt_files_ours_here()) {
		unlink(rt_f.fifo_path);
		unlink(rt_f.status_path);
	}
	rt_fd_close(&rt_f.status);
	rt_f.fifo_path[0] = rt_f.status_path[0] = '\0';
	return -1;
}

int
rt_files_fifo_fd(void)
{
	return rt_files_fifo_checked();
}

ssize_t
rt_files_fifo_read(char *buf, size_t size)
{
	int fd = rt_files_fifo_checked();
	if (fd < 0)
		return -1;
	ssize_t got;
	do
		got = rt_io_read(fd, buf, size);
	while (got < 0 && errno == EINTR);
	return got < 0 ? (errno == EAGAIN ? 0 : -1) : got;
}

void
rt_files_fifo_poke(void)
{
	/* The program's threads have no way into a private table: the worker's tick finds the
	 * request instead. */
	if (atomic_load(&rt_f.private_table))
		return;
	int fd = rt_fd_peek(&rt_f.fifo);
	int saved_errno = errno;
	/* EAGAIN: the FIFO is full, so the worker has plenty to wake for already. */
	if (fd >= 0 && write(fd, "\n", 1) < 0) {
	}
	errno = saved_errno;
}

const char *
rt_files_fifo_path(void)
{
	return rt_fd_valid(&rt_f.fifo) ? rt_f.fifo_path : "";
}

bool
rt_files_have_status(void)
{
	return rt_fd_valid(&rt_f.status);
}

/* Whether a write of len bytes at offset stays within RLIMIT_FSIZE, read at each write: the
 * program may lower it, or another process through prlimit(2). */
static bool
rt_files_fits(uint64_t offset, size_t len)
{
	struct rlimit lim;
	return getrlimit(RLIMIT_FSIZE, &lim) != 0 ||
	       rt_file_write_fits(offset, len,
	                          lim.rlim_cur == RLIM_INFINITY ? UINT64_MAX : lim.rlim_cur);
}

/* 0 once all of buf is at offset, else the errno of the write that stopped short. */
static int
rt_files_pwrite_all(int fd, const char *buf, size_t len, off_t offset)
{
	while (len > 0) {
		ssize_t n = rt_io_pwrite(fd, buf, len, offset);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno : ENOSPC;
		buf += n;
		len -= (size_t)n;
		offset += n;
	}
	return 0;
}

static void
rt_files_truncate(int fd, off_t length)
{
	while (rt_io_ftruncate(fd, length) != 0 && errno == EINTR)
		;
}

/* Appends one record whole or not at all: 0, or the errno of the write that could not finish
 * it, the file cut back to where the record began: its size before, unless another process
 * that shares the file appended between (then the sizes disagree, and the file keeps what it
 * has rather than lose that process's record). */
static int
rt_files_append_whole(int fd, const char *line, size_t len)
{
	struct stat st;
	if (rt_io_fstat(fd, &st) != 0)
		return errno;
	off_t start = st.st_size;
	if (!rt_files_fits((uint64_t)start, len))
		return EFBIG;
	size_t done = 0;
	int err = 0;
	while (done < len) {
		ssize_t n = rt_io_write(fd, line + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* 0 from a regular file: nothing more fits. */
			err = n < 0 ? errno : ENOSPC;
			break;
		}
		done += (size_t)n;
	}
	if (err && done > 0 && rt_io_fstat(fd, &st) == 0 && st.st_size == start + (off_t)done)
		rt_files_truncate(fd, start);
	return err;
}

/* Replaces a file's content in place through the descriptor opened at start-up, no new file,
 * whole or not at all: 0, or the errno that kept the new content out. A shorter content is
 * padded with blanks before its final newline over a longer earlier one (blanks end a JSON
 * object and a Prometheus comment alike). Only what reaches past the old end takes new space:
 * it is written first, and cut off again when it does not fit, so that the old content stays
 * whole; the part over the old content then takes none (on a file system that rewrites in
 * place). */
static int
rt_files_rewrite(int fd, size_t *kept, const char *text, size_t len)
{
	char buf[RT_FILES_REWRITE_MAX];
	if (len == 0 || len > sizeof(buf) || text[len - 1] != '\n')
		return EMSGSIZE;
	size_t total = len > *kept ? len : *kept;
	if (total > sizeof(buf))
		total = sizeof(buf);
	memcpy(buf, text, len - 1);
	memset(buf + len - 1, ' ', total - len);
	buf[total - 1] = '\n';
	size_t old = *kept < total ? *kept : total;
	int err;
	/* The limit cuts any write that reaches past it, over old content too. */
	if (!rt_files_fits(0, total))
		return EFBIG;
	if (total > old) {
		if ((err = rt_files_pwrite_all(fd, buf + old, total - old, (off_t)old))) {
			rt_files_truncate(fd, (off_t)old);
			return err;
		}
	}
	if ((err = rt_files_pwrite_all(fd, buf, old, 0)))
		return err;
	*kept = total;
	return 0;
}

/* A record a file could not take: counted, and said once for each file. */
static void
rt_files_lost(const char *feature, const char *path, bool *said, int err)
{
	rt_f.lost++;
	if (*said)
		return;
	*said = true;
	rt_warn("%s: a record dropped: %s cannot take it whole: %s; the file keeps whole records "
	        "only, and later drops are only counted (status lost_records)",
	        feature, path, strerror(err));
}

uint64_t
rt_files_lost_records(void)
{
	return rt_f.lost;
}

void
rt_files_write_status(const char *json, size_t len)
{
	int fd = rt_fd_get(&rt_f.status);
	int err = fd < 0 ? 0 : rt_files_rewrite(fd, &rt_f.status_len, json, len);
	if (err)
		rt_files_lost(rt_f.status.feature, rt_f.status_path, &rt_f.status_loss_said, err);
}

/* An unnamed output has its first content: give it its name. linkat never follows or replaces
 * what is at the path; a name taken meanwhile means another process owns that file. */
static bool
rt_files_name(struct rt_output *out, int fd)
{
	if (atomic_exchange(&out->written, true) || !out->unnamed)
		return true;
	if (rt_io_name(fd, out->path) == 0)
		return true;
	rt_warn("%s off: cannot create %s: %s", out->fd.feature, out->path, strerror(errno));
	rt_fd_close(&out->fd);
	return false;
}

void
rt_files_write_prom(const char *text, size_t len)
{
	int fd = rt_fd_get(&rt_f.prom.fd);
	if (fd < 0)
		return;
	int err = rt_files_rewrite(fd, &rt_f.prom.len, text, len);
	if (err)
		rt_files_lost(rt_f.prom.fd.feature, rt_f.prom.path, &rt_f.prom.loss_said, err);
	else
		rt_files_name(&rt_f.prom, fd);
}

enum rt_files_put {
	RT_FILES_PUT_WRITTEN,
	RT_FILES_PUT_DROPPED, /* the file could not take it: counted, the file stays */
	RT_FILES_PUT_GONE,    /* no file (never opened, refused, or lost) */
};

/* An unnamed file gets its name with its first whole record. */
static enum rt_files_put
rt_files_output_line(struct rt_output *out, const char *line, size_t len)
{
	int fd = rt_fd_get(&out->fd);
	if (fd < 0)
		return RT_FILES_PUT_GONE;
	int err = rt_files_append_whole(fd, line, len);
	if (!err)
		return rt_files_name(out, fd) ? RT_FILES_PUT_WRITTEN : RT_FILES_PUT_GONE;
	rt_files_lost(out->fd.feature, out->path, &out->loss_said, err);
	return RT_FILES_PUT_DROPPED;
}

void
rt_files_stats_line(const char *line, size_t len)
{
	rt_files_output_line(&rt_f.stats, line, len);
}

void
rt_files_log_line(const char *line, size_t len)
{
	if (rt_files_output_line(&rt_f.log, line, len) == RT_FILES_PUT_GONE)
		rt_out_stderr(line, len);
}

bool
rt_files_have_stats(void)
{
	return rt_fd_valid(&rt_f.stats.fd);
}

const char *
rt_files_stats_path(void)
{
	return rt_fd_valid(&rt_f.stats.fd) ? rt_f.stats.path : "";
}

/* The whole of a /proc or cgroup file through its descriptor: false when unreadable. */
static bool
rt_files_pread(struct rt_fd *f, char *buf, size_t size)
{
	int fd = rt_fd_get(f);
	if (fd < 0)
		return false;
	ssize_t n;
	do
		n = rt_io_pread(fd, buf, size - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return true;
}

bool
rt_files_memory(uint64_t *used, uint64_t *limit)
{
	char buf[4096];
	bool limited = false;
	uint64_t lim, use;
	if (rt_f.mem_source && rt_files_pread(&rt_f.mem_limit, buf, sizeof(buf)) &&
	    rt_pressure_read_value(buf, &lim, &limited) && limited &&
	    rt_files_pread(&rt_f.mem_used, buf, sizeof(buf)) &&
	    rt_pressure_read_value(buf, &use, &limited)) {
		*used = use;
		*limit = lim;
		return true;
	}
	/* No limit on the cgroup: the machine's memory is the limit. */
	return rt_files_pread(&rt_f.meminfo, buf, sizeof(buf)) &&
	       rt_pressure_read_meminfo(buf, used, limit);
}

bool
rt_files_sites_line(const char *line, size_t len)
{
	return rt_files_output_line(&rt_f.sites, line, len) == RT_FILES_PUT_WRITTEN;
}

bool
rt_files_have_sites(void)
{
	return rt_fd_valid(&rt_f.sites.fd);
}

void
rt_files_trace_line(const char *line, size_t len)
{
	rt_files_output_line(&rt_f.trace, line, len);
}

bool
rt_files_have_trace(void)
{
	return rt_fd_valid(&rt_f.trace.fd);
}

uint64_t
rt_files_rss_kib(void)
{
	char buf[128];
	uint64_t kib;
	if (!rt_files_pread(&rt_f.statm, buf, sizeof(buf)) ||
	    !rt_procfs_statm_rss_kib(buf, (uint64_t)sysconf(_SC_PAGESIZE), &kib))
		return 0;
	return kib;
}

bool
rt_files_alone(unsigned held)
{
	char buf[1024];
	struct rt_procfs_stat st;
	return rt_files_pread(&rt_f.stat, buf, sizeof(buf)) && rt_procfs_stat(buf, &st) &&
	       rt_procfs_stat_alone(&st, held);
}

bool
rt_files_rss_split(struct rt_procfs_rss *out)
{
	char buf[4096];
	return rt_files_pread(&rt_f.smaps, buf, sizeof(buf)) && rt_procfs_smaps_rollup(buf, out);
}

static void
rt_files_move(const char *path, bool back)
{
	char aside[RT_FILES_STATUS_PATH_MAX + 8];
	if (!path[0] || !rt_path_exec_aside(aside, sizeof(aside), path))
		return;
	if (back)
		rename(aside, path);
	else
		rename(path, aside);
}

bool
rt_files_before_exec(void)
{
	/* A vfork child shares our memory but is another process: its exec is not ours. */
	if (!rt_files_ours_here())
		return false;
	int saved_errno = errno;
	rt_files_move(rt_f.fifo_path, false);
	rt_files_move(rt_f.status_path, false);
	errno = saved_errno;
	return true;
}

void
rt_files_after_failed_exec(bool moved)
{
	if (!moved)
		return;
	int saved_errno = errno;
	rt_files_move(rt_f.fifo_path, true);
	rt_files_move(rt_f.status_path, true);
	errno = saved_errno;
}

/* A per-process file made empty at start-up, on a file system without O_TMPFILE, and never
 * written: it goes with the process, as if it had never been made. */
static void
rt_files_remove_unused(struct rt_output *out)
{
	struct stat ours, there;
	int fd = rt_fd_peek(&out->fd);
	if (!out->made_at_start || atomic_load(&out->written) || fd < 0 || fstat(fd, &ours) != 0 ||
	    ours.st_size != 0 || lstat(out->path, &there) != 0 || there.st_ino != ours.st_ino ||
	    there.st_dev != ours.st_dev)
		return;
	unlink(out->path);
}

void
rt_files_remove(void)
{
	if (!rt_files_ours_here())
		return;
	char aside[RT_FILES_STATUS_PATH_MAX + 8];
	const char *paths[] = {rt_f.fifo_path, rt_f.status_path};
	bool claimed = !atomic_exchange(&rt_f.paths_claimed, true);
	for (size_t i = 0; claimed && i < 2; i++) {
		if (!paths[i][0])
			continue;
		unlink(paths[i]);
		if (rt_path_exec_aside(aside, sizeof(aside), paths[i]))
			unlink(aside);
	}
	rt_files_remove_unused(&rt_f.stats);
	rt_files_remove_unused(&rt_f.log);
	rt_files_remove_unused(&rt_f.sites);
	/* A per-process Prometheus file would be scraped for ever after the process is gone. */
	if (rt_f.prom.per_process && atomic_load(&rt_f.prom.written))
		unlink(rt_f.prom.path);
}
