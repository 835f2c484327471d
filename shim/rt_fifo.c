#include "rt_fifo.h"

#include "rt_fifo_rules.h"
#include "rt_path.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct rt_file_facts
rt_fifo_facts(const struct stat *st)
{
	struct rt_file_facts f = {
	    .exists = true,
	    .is_symlink = S_ISLNK(st->st_mode),
	    .is_dir = S_ISDIR(st->st_mode),
	    .is_fifo = S_ISFIFO(st->st_mode),
	    .uid = st->st_uid,
	    .mode = st->st_mode & 07777,
	};
	return f;
}

static struct rt_file_facts
rt_fifo_lstat(int dirfd, const char *path)
{
	struct stat st;
	struct rt_file_facts none = {.exists = false};
	if (fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return none;
	return rt_fifo_facts(&st);
}

/* Whether some process holds the FIFO open for reading: a non-blocking open for writing
 * fails with ENXIO when nobody reads. */
static int
rt_fifo_has_reader(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

int
rt_fifo_open(const char *path, char *why, size_t why_size)
{
	char dir[PATH_MAX], name[NAME_MAX + 1];
	unsigned uid = geteuid();
	int dirfd = -1, fd = -1;
	const char *refusal;

	if (!rt_path_split(path, dir, sizeof(dir), name, sizeof(name))) {
		snprintf(why, why_size, "%s is not a usable path", path);
		goto label_return;
	}
	struct rt_file_facts dir_facts = rt_fifo_lstat(AT_FDCWD, dir);
	if (!dir_facts.exists) {
		if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
			snprintf(why, why_size, "cannot create %s: %s", dir, strerror(errno));
			goto label_return;
		}
		dir_facts = rt_fifo_lstat(AT_FDCWD, dir);
	}
	if ((refusal = rt_fifo_dir_refusal(&dir_facts, uid)) != NULL) {
		snprintf(why, why_size, "refusing %s: %s", dir, refusal);
		goto label_return;
	}
	/* From here on, work relative to the directory we checked, so that it cannot be swapped
	 * for a symlink between the check and the use. */
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (dirfd < 0 || fstat(dirfd, &st) != 0) {
		snprintf(why, why_size, "cannot open %s: %s", dir, strerror(errno));
		goto label_return;
	}
	dir_facts = rt_fifo_facts(&st);
	if ((refusal = rt_fifo_dir_refusal(&dir_facts, uid)) != NULL) {
		snprintf(why, why_size, "refusing %s: %s", dir, refusal);
		goto label_return;
	}
	struct rt_file_facts node = rt_fifo_lstat(dirfd, name);
	switch (rt_fifo_node_verdict(&node, uid, &refusal)) {
	case RT_FIFO_REFUSE:
		snprintf(why, why_size, "refusing %s: %s", path, refusal);
		goto label_return;
	case RT_FIFO_REPLACE:
		if (rt_fifo_has_reader(dirfd, name)) {
			snprintf(why, why_size, "refusing %s: another process reads it", path);
			goto label_return;
		}
		unlinkat(dirfd, name, 0);
		break;
	case RT_FIFO_CREATE:
		break;
	}
	if (mkfifoat(dirfd, name, 0600) != 0) {
		snprintf(why, why_size, "cannot create %s: %s", path, strerror(errno));
		goto label_return;
	}
	/* O_RDWR: the FIFO always has a writer (us), so poll never reports a hang-up when the
	 * last external writer closes, and writers never see ENXIO while we live. */
	fd = openat(dirfd, name, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode) || st.st_uid != uid) {
		snprintf(why, why_size, "cannot open %s: %s", path,
		         fd < 0 ? strerror(errno) : "not our FIFO");
		if (fd >= 0)
			close(fd);
		fd = -1;
		goto label_return;
	}
	fchmod(fd, 0600); /* mkfifo obeyed the umask; make the mode exact */
label_return:
	if (dirfd >= 0)
		close(dirfd);
	return fd;
}

void
rt_fifo_sweep(const char *fifo_template, const char *fifo_path)
{
	char dir[PATH_MAX], name[NAME_MAX + 1];
	if (!rt_path_split(fifo_path, dir, sizeof(dir), name, sizeof(name)))
		return;
	int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = dirfd < 0 ? NULL : fdopendir(dirfd);
	if (!d) {
		if (dirfd >= 0)
			close(dirfd);
		return;
	}
	uid_t uid = geteuid();
	struct dirent *entry;
	while ((entry = readdir(d)) != NULL) {
		int pid;
		struct stat st;
		if (!rt_path_stale_candidate(fifo_template, entry->d_name, &pid) ||
		    fstatat(dirfd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    st.st_uid != uid)
			continue;
		if (kill(pid, 0) != 0 && errno == ESRCH)
			unlinkat(dirfd, entry->d_name, 0);
	}
	closedir(d);
}
