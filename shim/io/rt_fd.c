/* Why a floor, and why checks: open() takes the lowest free number, which a program may have
 * just closed to dup2 onto; a library thread that takes it breaks the program's descriptor
 * juggling, and one that later uses a number the program closed or replaced reads, writes or
 * closes the program's file (roundtrim(7), DESCRIPTORS). So every descriptor the library keeps
 * is opened only at start-up, in the thread that starts it, lifted at once above the floor, and
 * checked by device and inode before each use. */
#include "rt_fd.h"
#include "rt_close.h"
#include "rt_file_rules.h"
#include "rt_io.h"
#include "rt_out.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int rt_fd_floor_value = 960;

void
rt_fd_init(void)
{
	struct rlimit limit;
	if (getrlimit(RLIMIT_NOFILE, &limit) == 0)
		rt_fd_floor_value = rt_file_fd_floor(limit.rlim_cur);
}

int
rt_fd_floor(void)
{
	return rt_fd_floor_value;
}

bool
rt_fd_adopt(struct rt_fd *f, int low)
{
	struct stat st;
	int high = fcntl(low, F_DUPFD_CLOEXEC, rt_fd_floor_value);
	int saved_errno = errno;
	close(low);
	if (high < 0 || fstat(high, &st) != 0) {
		saved_errno = high < 0 ? saved_errno : errno;
		if (high >= 0)
			close(high);
		atomic_store(&f->fd, -1);
		errno = saved_errno;
		return false;
	}
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	atomic_store(&f->fd, high);
	return true;
}

static bool
rt_fd_same(const struct rt_fd *f, int fd)
{
	struct stat st;
	int saved_errno = errno;
	bool same = fstat(fd, &st) == 0 && st.st_dev == f->dev && st.st_ino == f->ino;
	errno = saved_errno;
	return same;
}

/* The library's descriptors are in a table of its own (the worker's or the keeper's), where
 * nothing of the program's reaches them: no check is needed, and they are used through rt_io. */
static atomic_bool rt_fd_own;

void
rt_fd_own_table(bool own)
{
	atomic_store(&rt_fd_own, own);
}

int
rt_fd_get(struct rt_fd *f)
{
	int fd = atomic_load(&f->fd);
	if (fd < 0)
		return -1;
	if (atomic_load(&rt_fd_own) || rt_fd_same(f, fd))
		return fd;
	/* Only the thread that swaps the number out says so. */
	if (atomic_compare_exchange_strong(&f->fd, &fd, -1))
		rt_warn("%s off: descriptor %d was closed or replaced by the program", f->feature,
		        fd);
	return -1;
}

int
rt_fd_peek(const struct rt_fd *f)
{
	int fd = atomic_load(&f->fd);
	return fd >= 0 && rt_fd_same(f, fd) ? fd : -1;
}

bool
rt_fd_valid(const struct rt_fd *f)
{
	return atomic_load(&f->fd) >= 0;
}

void
rt_fd_close(struct rt_fd *f)
{
	int fd = atomic_exchange(&f->fd, -1);
	if (fd >= 0 && atomic_load(&rt_fd_own))
		rt_io_close(fd);
	else if (fd >= 0 && rt_fd_same(f, fd))
		close(fd);
}

void
rt_fd_close_copy(const struct rt_fd *f)
{
	int fd = rt_fd_peek(f);
	if (fd >= 0)
		rt_close_in_this_table(fd);
}
