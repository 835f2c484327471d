/* The library's I/O, in one place, so that its descriptors are used where they live: a private
 * table (the worker's) or the program's is the calling thread's own; the keeper's is reached
 * only through the keeper (rt_keeper), whose answers come as the raw system call's (-errno). */
#include "rt_io.h"
#include "rt_close.h"
#include "rt_fd.h"
#include "rt_keeper.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

static atomic_bool rt_io_keeper;

void
rt_io_by_keeper(bool on)
{
	atomic_store(&rt_io_keeper, on);
}

bool
rt_io_is_by_keeper(void)
{
	return atomic_load(&rt_io_keeper);
}

/* The keeper's answer as the C library's: -1 and errno. */
static long
rt_io_keeper_call(long nr, long a0, long a1, long a2, long a3, long a4)
{
	long ret = rt_keeper_call(nr, a0, a1, a2, a3, a4);
	if (ret < 0 && ret > -4096) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
}

#define RT_IO_KEEPER(nr, a0, a1, a2, a3, a4)                                                       \
	rt_io_keeper_call((nr), (long)(a0), (long)(a1), (long)(a2), (long)(a3), (long)(a4))

ssize_t
rt_io_read(int fd, void *buf, size_t len)
{
	if (rt_io_is_by_keeper())
		return RT_IO_KEEPER(SYS_read, fd, buf, len, 0, 0);
	return read(fd, buf, len);
}

ssize_t
rt_io_pread(int fd, void *buf, size_t len, off_t offset)
{
	if (rt_io_is_by_keeper())
		return RT_IO_KEEPER(SYS_pread64, fd, buf, len, offset, 0);
	return pread(fd, buf, len, offset);
}

ssize_t
rt_io_write(int fd, const void *buf, size_t len)
{
	if (rt_io_is_by_keeper())
		return RT_IO_KEEPER(SYS_write, fd, buf, len, 0, 0);
	return write(fd, buf, len);
}

ssize_t
rt_io_pwrite(int fd, const void *buf, size_t len, off_t offset)
{
	if (rt_io_is_by_keeper())
		return RT_IO_KEEPER(SYS_pwrite64, fd, buf, len, offset, 0);
	return pwrite(fd, buf, len, offset);
}

int
rt_io_fstat(int fd, struct stat *st)
{
	if (rt_io_is_by_keeper())
		/* As glibc's fstat: the call a program of any kind makes (rt_probe). */
		return (int)RT_IO_KEEPER(SYS_newfstatat, fd, "", st, AT_EMPTY_PATH, 0);
	return fstat(fd, st);
}

int
rt_io_ftruncate(int fd, off_t length)
{
	if (rt_io_is_by_keeper())
		return (int)RT_IO_KEEPER(SYS_ftruncate, fd, length, 0, 0, 0);
	return ftruncate(fd, length);
}

int
rt_io_fchown(int fd, uid_t uid, gid_t gid)
{
	if (rt_io_is_by_keeper())
		return (int)RT_IO_KEEPER(SYS_fchown, fd, (long)(int)uid, (long)(int)gid, 0, 0);
	return fchown(fd, uid, gid);
}

int
rt_io_close(int fd)
{
	if (rt_io_is_by_keeper())
		return (int)RT_IO_KEEPER(SYS_close, fd, 0, 0, 0, 0);
	rt_close_in_this_table(fd);
	return 0;
}

int
rt_io_name(int fd, const char *path)
{
	char self[64];
	/* thread-self: the table of the thread that makes the call holds fd, not the process's. */
	snprintf(self, sizeof(self), "/proc/thread-self/fd/%d", fd);
	if (rt_io_is_by_keeper())
		return (int)RT_IO_KEEPER(SYS_linkat, AT_FDCWD, self, AT_FDCWD, path,
		                         AT_SYMLINK_FOLLOW);
	return linkat(AT_FDCWD, self, AT_FDCWD, path, AT_SYMLINK_FOLLOW);
}

bool
rt_io_write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = rt_io_write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		buf += n;
		len -= (size_t)n;
	}
	return true;
}
