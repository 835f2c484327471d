/* The FIFO trigger and the status file beside it, made at start-up by the thread that starts
 * the library, in a directory checked to be the user's own (policy/rt_file_rules), and lifted
 * above the floor at once (rt_fd). Later they are only read, written, renamed and unlinked. */
#include "rt_fifo.h"
#include "rt_config.h"
#include "rt_fd.h"
#include "rt_file_rules.h"
#include "rt_io.h"
#include "rt_node.h"
#include "rt_out.h"
#include "rt_path.h"
#include "rt_record.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RT_FIFO_STATUS_PATH_MAX (RT_CONFIG_PATH_MAX + 16)
#define RT_FIFO_WHY_MAX (RT_FIFO_STATUS_PATH_MAX + 256)

static struct {
	struct rt_fd fifo, status;
	char fifo_path[RT_CONFIG_PATH_MAX];
	char status_path[RT_FIFO_STATUS_PATH_MAX];
	size_t status_len; /* the longest content written, which shorter ones pad over */
	bool status_loss_said;
	atomic_int owner; /* the pid that made these files: only it removes them */
	/* The FIFO's and the status file's paths are removed once, by whichever comes first: the
	 * worker, when the program took the FIFO's descriptor, or the exit. */
	atomic_bool paths_claimed;
} rt_ff = {
    .fifo = RT_FD_NONE("FIFO trigger"),
    .status = RT_FD_NONE("status file"),
};

static struct rt_fd *const rt_fifo_all[] = {&rt_ff.fifo, &rt_ff.status};

/* Whether some process holds the FIFO open for reading: a non-blocking open for writing
 * fails with ENXIO when nobody reads. */
static bool
rt_fifo_has_reader(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* Opens the FIFO directory, creating it 0700 when missing, and checks it. */
static int
rt_fifo_dir(const char *dir, unsigned uid, char *why, size_t why_size)
{
	const char *refusal;
	struct rt_file_facts facts = rt_node_at(AT_FDCWD, dir);
	if (!facts.exists && mkdir(dir, 0700) != 0 && errno != EEXIST) {
		snprintf(why, why_size, "cannot create %s: %s", dir, strerror(errno));
		return -1;
	}
	facts = rt_node_at(AT_FDCWD, dir);
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
	facts = rt_node_facts(&st);
	if ((refusal = rt_file_dir_refusal(RT_FILE_FIFO, &facts, uid))) {
		snprintf(why, why_size, "refusing %s: %s", dir, refusal);
		close(dirfd);
		return -1;
	}
	return dirfd;
}

static bool
rt_fifo_make(int dirfd, const char *name, unsigned uid, char *why, size_t why_size)
{
	const char *refusal;
	struct rt_file_facts dir = {.exists = true, .is_dir = true, .uid = uid, .mode = 0700};
	struct rt_file_facts node = rt_node_at(dirfd, name);
	switch (rt_file_node_verdict(RT_FILE_FIFO, &dir, &node, uid, &refusal)) {
	case RT_FILE_REFUSE:
	case RT_FILE_USE:
		snprintf(why, why_size, "refusing %s: %s", rt_ff.fifo_path, refusal);
		return false;
	case RT_FILE_REPLACE:
		if (rt_fifo_has_reader(dirfd, name)) {
			snprintf(why, why_size, "refusing %s: another process reads it",
			         rt_ff.fifo_path);
			return false;
		}
		unlinkat(dirfd, name, 0);
		break;
	case RT_FILE_CREATE:
		break;
	}
	if (mkfifoat(dirfd, name, 0600) != 0) {
		snprintf(why, why_size, "cannot create %s: %s", rt_ff.fifo_path, strerror(errno));
		return false;
	}
	/* O_RDWR: the FIFO always has a writer (us), so poll never reports a hang-up when the
	 * last external writer closes, and writers never see ENXIO while we live, but between
	 * mkfifoat and this open. */
	int fd = openat(dirfd, name, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || !rt_node_is(fd, S_IFIFO, uid)) {
		snprintf(why, why_size, "cannot open %s: %s", rt_ff.fifo_path,
		         fd < 0 ? strerror(errno) : "not our FIFO");
		if (fd >= 0)
			close(fd);
		return false;
	}
	fchmod(fd, 0600); /* mkfifo obeyed the umask; make the mode exact */
	if (!rt_fd_adopt(&rt_ff.fifo, fd)) {
		snprintf(why, why_size, "cannot keep %s: %s", rt_ff.fifo_path, strerror(errno));
		return false;
	}
	return true;
}

static bool
rt_fifo_make_status(int dirfd, const char *name, unsigned uid, char *why, size_t why_size)
{
	const char *refusal;
	struct rt_file_facts dir = {.exists = true, .is_dir = true, .uid = uid, .mode = 0700};
	struct rt_file_facts node = rt_node_at(dirfd, name);
	if (rt_file_node_verdict(RT_FILE_STATUS, &dir, &node, uid, &refusal) == RT_FILE_REFUSE) {
		snprintf(why, why_size, "refusing %s: %s", rt_ff.status_path, refusal);
		return false;
	}
	int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || !rt_node_is(fd, S_IFREG, uid)) {
		snprintf(why, why_size, "cannot open %s: %s", rt_ff.status_path,
		         fd < 0 ? strerror(errno) : "not our file");
		if (fd >= 0)
			close(fd);
		return false;
	}
	fchmod(fd, 0600);
	if (!rt_fd_adopt(&rt_ff.status, fd)) {
		snprintf(why, why_size, "cannot keep %s: %s", rt_ff.status_path, strerror(errno));
		return false;
	}
	rt_ff.status_len = 0;
	return true;
}

/* Removes what dead processes of this user left in the FIFO's directory (killed by a signal,
 * they never ran their destructor), and what an earlier program of this very process left set
 * aside when it exec'd us. Only names rt_path_stale_candidate calls ours. */
static void
rt_fifo_sweep(int dirfd, const char *fifo_template)
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

void
rt_fifo_open(const char *tmpl, bool forked)
{
	char dir[RT_CONFIG_PATH_MAX], name[NAME_MAX + 1], status_name[NAME_MAX + 1];
	char why[RT_FIFO_WHY_MAX];
	int dirfd = -1;
	atomic_store(&rt_ff.owner, getpid());
	/* A fork child whose FIFO template has no %p would fight its parent for the same path:
	 * it keeps the other triggers only (roundtrim(7)). */
	if (!tmpl[0] || (forked && !rt_path_template_per_pid(tmpl)))
		return;
	if (!rt_path_expand(rt_ff.fifo_path, sizeof(rt_ff.fifo_path), tmpl, getpid()) ||
	    !rt_path_status_for_fifo(rt_ff.status_path, sizeof(rt_ff.status_path),
	                             rt_ff.fifo_path) ||
	    !rt_path_split(rt_ff.fifo_path, dir, sizeof(dir), name, sizeof(name)) ||
	    !rt_path_split(rt_ff.status_path, dir, sizeof(dir), status_name, sizeof(status_name))) {
		rt_warn("FIFO trigger off: cannot expand %s", tmpl);
		goto label_return;
	}
	unsigned uid = geteuid();
	dirfd = rt_fifo_dir(dir, uid, why, sizeof(why));
	if (dirfd < 0 || !rt_fifo_make(dirfd, name, uid, why, sizeof(why))) {
		rt_warn("FIFO trigger off: %s", why);
		goto label_return;
	}
	if (!rt_fifo_make_status(dirfd, status_name, uid, why, sizeof(why))) {
		rt_warn("status file off (the command cannot see this process): %s", why);
	}
	rt_fifo_sweep(dirfd, tmpl);
label_return:
	if (dirfd >= 0)
		close(dirfd);
	if (!rt_fd_valid(&rt_ff.fifo))
		rt_ff.fifo_path[0] = rt_ff.status_path[0] = '\0';
}

struct rt_fd *const *
rt_fifo_fds(size_t *n)
{
	*n = sizeof(rt_fifo_all) / sizeof(rt_fifo_all[0]);
	return rt_fifo_all;
}

void
rt_fifo_forget_parent(void)
{
	rt_fd_close(&rt_ff.fifo);
	rt_fd_close(&rt_ff.status);
	rt_ff.fifo_path[0] = rt_ff.status_path[0] = '\0';
	rt_ff.status_len = 0;
	rt_ff.status_loss_said = false;
	atomic_store(&rt_ff.paths_claimed, false);
	atomic_store(&rt_ff.owner, 0);
}

static bool
rt_fifo_ours_here(void)
{
	return atomic_load(&rt_ff.owner) == getpid();
}

/* The worker's view of the FIFO: once the program has closed or replaced its descriptor, the
 * FIFO and the status file go (nobody would read them), and so does their descriptor. */
static int
rt_fifo_checked(void)
{
	int fd = rt_fd_get(&rt_ff.fifo);
	if (fd >= 0 || !rt_ff.fifo_path[0] || atomic_exchange(&rt_ff.paths_claimed, true))
		return fd;
	if (rt_fifo_ours_here()) {
		unlink(rt_ff.fifo_path);
		unlink(rt_ff.status_path);
	}
	rt_fd_close(&rt_ff.status);
	rt_ff.fifo_path[0] = rt_ff.status_path[0] = '\0';
	return -1;
}

int
rt_fifo_fd(void)
{
	return rt_fifo_checked();
}

ssize_t
rt_fifo_read(char *buf, size_t size)
{
	int fd = rt_fifo_checked();
	if (fd < 0)
		return -1;
	ssize_t got;
	do
		got = rt_io_read(fd, buf, size);
	while (got < 0 && errno == EINTR);
	return got < 0 ? (errno == EAGAIN ? 0 : -1) : got;
}

const char *
rt_fifo_path(void)
{
	return rt_fd_valid(&rt_ff.fifo) ? rt_ff.fifo_path : "";
}

bool
rt_fifo_have_status(void)
{
	return rt_fd_valid(&rt_ff.status);
}

void
rt_fifo_write_status(const char *json, size_t len)
{
	int fd = rt_fd_get(&rt_ff.status);
	int err = fd < 0 ? 0 : rt_record_rewrite(fd, &rt_ff.status_len, json, len);
	if (err)
		rt_record_drop(&rt_ff.status, rt_ff.status_path, &rt_ff.status_loss_said, err);
}

static void
rt_fifo_move(const char *path, bool back)
{
	char aside[RT_FIFO_STATUS_PATH_MAX + 8];
	if (!path[0] || !rt_path_exec_aside(aside, sizeof(aside), path))
		return;
	if (back)
		rename(aside, path);
	else
		rename(path, aside);
}

bool
rt_fifo_before_exec(void)
{
	/* A vfork child shares our memory but is another process: its exec is not ours. */
	if (!rt_fifo_ours_here())
		return false;
	int saved_errno = errno;
	rt_fifo_move(rt_ff.fifo_path, false);
	rt_fifo_move(rt_ff.status_path, false);
	errno = saved_errno;
	return true;
}

void
rt_fifo_after_failed_exec(bool moved)
{
	if (!moved)
		return;
	int saved_errno = errno;
	rt_fifo_move(rt_ff.fifo_path, true);
	rt_fifo_move(rt_ff.status_path, true);
	errno = saved_errno;
}

void
rt_fifo_remove(void)
{
	if (!rt_fifo_ours_here())
		return;
	char aside[RT_FIFO_STATUS_PATH_MAX + 8];
	const char *paths[] = {rt_ff.fifo_path, rt_ff.status_path};
	bool claimed = !atomic_exchange(&rt_ff.paths_claimed, true);
	for (size_t i = 0; claimed && i < 2; i++) {
		if (!paths[i][0])
			continue;
		unlink(paths[i]);
		if (rt_path_exec_aside(aside, sizeof(aside), paths[i]))
			unlink(aside);
	}
}
