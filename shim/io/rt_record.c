/* Records written whole or not at all, through the descriptors opened at start-up (rt_io makes
 * the calls in the table that holds them): a full volume or a file-size limit drops a record,
 * never leaves half of one. Written by the worker, which writes every file. */
#include "rt_record.h"
#include "rt_fd.h"
#include "rt_file_rules.h"
#include "rt_io.h"
#include "rt_out.h"

#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#define RT_RECORD_REWRITE_MAX 8192

/* Records that a file could not take whole, dropped (the status's lost_records). Written by
 * the worker, and read by it. */
static uint64_t rt_record_lost;

/* Whether a write of len bytes at offset stays within RLIMIT_FSIZE, read at each write: the
 * program may lower it, or another process through prlimit(2). */
static bool
rt_record_fits(uint64_t offset, size_t len)
{
	struct rlimit lim;
	return getrlimit(RLIMIT_FSIZE, &lim) != 0 ||
	       rt_file_write_fits(offset, len,
	                          lim.rlim_cur == RLIM_INFINITY ? UINT64_MAX : lim.rlim_cur);
}

/* 0 once all of buf is at offset, else the errno of the write that stopped short. */
static int
rt_record_pwrite_all(int fd, const char *buf, size_t len, off_t offset)
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
rt_record_truncate(int fd, off_t length)
{
	while (rt_io_ftruncate(fd, length) != 0 && errno == EINTR)
		;
}

/* The file is cut back to its size before, unless another process that shares the file
 * appended between (then the sizes disagree, and the file keeps what it has rather than lose
 * that process's record). */
int
rt_record_append(int fd, const char *line, size_t len)
{
	struct stat st;
	if (rt_io_fstat(fd, &st) != 0)
		return errno;
	off_t start = st.st_size;
	if (!rt_record_fits((uint64_t)start, len))
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
		rt_record_truncate(fd, start);
	return err;
}

/* Through the descriptor opened at start-up, no new file. A shorter content is padded with
 * blanks before its final newline over a longer earlier one (blanks end a JSON object and a
 * Prometheus comment alike). Only what reaches past the old end takes new space: it is written
 * first, and cut off again when it does not fit, so that the old content stays whole; the part
 * over the old content then takes none (on a file system that rewrites in place). */
int
rt_record_rewrite(int fd, size_t *kept, const char *text, size_t len)
{
	char buf[RT_RECORD_REWRITE_MAX];
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
	if (!rt_record_fits(0, total))
		return EFBIG;
	if (total > old) {
		if ((err = rt_record_pwrite_all(fd, buf + old, total - old, (off_t)old))) {
			rt_record_truncate(fd, (off_t)old);
			return err;
		}
	}
	if ((err = rt_record_pwrite_all(fd, buf, old, 0)))
		return err;
	*kept = total;
	return 0;
}

void
rt_record_drop(struct rt_fd *f, const char *path, bool *said, int err)
{
	rt_record_lost++;
	/* In the program's table (ROUNDTRIM_SHARED_TABLE=1) the write may have gone to a file the
	 * program put on the number after the check (Illegal seek on its pipe): the check again
	 * says so, as the feature's one line standing down, and nothing more is written there. */
	if (*said || rt_fd_get(f) < 0)
		return;
	*said = true;
	rt_warn("%s: a record dropped: %s cannot take it whole: %s; the file keeps whole records "
	        "only, and later drops are only counted (status lost_records)",
	        f->feature, path, strerror(err));
}

void
rt_record_lose(void)
{
	rt_record_lost++;
}

uint64_t
rt_record_dropped(void)
{
	return rt_record_lost;
}

void
rt_record_forget_parent(void)
{
	rt_record_lost = 0;
}
