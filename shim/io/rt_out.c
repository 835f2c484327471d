/* Output primitives: nothing here allocates, and every write survives EINTR and short writes. */
#include "rt_close.h"
#include "rt_fd.h"
#include "rt_report.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Set in the worker when it has a descriptor table of its own, where no stderr is: a pidfd of
 * the process, through which each line borrows the program's stderr as it is at that moment. */
static _Thread_local int rt_out_pidfd = -1;
/* Lines held by rt_out_hold: one thread at a time holds (the allocator action's lock), the
 * length is published after the text. */
static _Thread_local bool rt_out_holding;
static char rt_out_held[1024];
static atomic_size_t rt_out_held_len;

void
rt_out_write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

void
rt_out_stderr_via(int pidfd)
{
	rt_out_pidfd = pidfd;
}

void
rt_out_stderr(const char *buf, size_t len)
{
	if (rt_out_pidfd < 0) {
		rt_out_write_all(STDERR_FILENO, buf, len);
		return;
	}
	/* pidfd_getfd(2): a copy of the thread-group leader's descriptor 2, closed right after. The
	 * copy lives in the worker's table, so the program's numbers and locks never change. */
	int fd = (int)syscall(SYS_pidfd_getfd, rt_out_pidfd, STDERR_FILENO, 0);
	if (fd < 0)
		return;
	rt_out_write_all(fd, buf, len);
	rt_close_in_this_table(fd);
}

void
rt_warn(const char *fmt, ...)
{
	char message[512], line[sizeof(message) * 4 + 16];
	int saved_errno = errno;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	/* Paths and FIFO lines come from outside: a newline, an escape sequence or a byte outside
	 * ASCII in them must neither split the line nor reach the host's terminal. */
	memcpy(line, "roundtrim: ", 11);
	rt_report_escape(line + 11, sizeof(line) - 12, message, sizeof(message), false);
	size_t len = strlen(line);
	line[len++] = '\n';
	size_t held = atomic_load(&rt_out_held_len);
	if (!rt_out_holding)
		rt_out_stderr(line, len);
	else if (held + len <= sizeof(rt_out_held)) {
		memcpy(rt_out_held + held, line, len);
		atomic_store(&rt_out_held_len, held + len);
	}
	errno = saved_errno;
}

void
rt_out_hold(bool hold)
{
	rt_out_holding = hold;
}

void
rt_out_say_held(void)
{
	size_t len = atomic_load(&rt_out_held_len);
	if (len == 0)
		return;
	rt_out_stderr(rt_out_held, len);
	atomic_store(&rt_out_held_len, 0);
}
