/* rt_io: the system calls on the library's own descriptors, made in the table that holds them:
 * the calling thread's (the worker's own table, or the program's where the library shares it),
 * or the keeper's, by the keeper. */
#ifndef RT_IO_H
#define RT_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* From now on (true) the keeper holds the library's descriptors. Once, at start-up; false in a
 * fork child. */
void rt_io_by_keeper(bool on);
bool rt_io_is_by_keeper(void);

/* As the system calls: -1 with errno on failure. */
ssize_t rt_io_read(int fd, void *buf, size_t len);
ssize_t rt_io_pread(int fd, void *buf, size_t len, off_t offset);
ssize_t rt_io_write(int fd, const void *buf, size_t len);
ssize_t rt_io_pwrite(int fd, const void *buf, size_t len, off_t offset);
int rt_io_fstat(int fd, struct stat *st);
int rt_io_ftruncate(int fd, off_t length);
int rt_io_fchown(int fd, uid_t uid, gid_t gid);
int rt_io_close(int fd);
/* Gives the unnamed file (O_TMPFILE) open on fd the name path (linkat of
 * /proc/thread-self/fd/FD, which names the descriptor in the table that holds it). */
int rt_io_name(int fd, const char *path);
/* The whole of buf, through EINTR and short writes; false when some of it was not written. */
bool rt_io_write_all(int fd, const char *buf, size_t len);

#endif
