/* Output primitives: nothing here allocates, and every write survives EINTR and short writes. */
#include "rt_report.h"
#include "rt_shim.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
rt_warn(const char *fmt, ...)
{
	char message[512], line[sizeof(message) * 4 + 16];
	int saved_errno = errno;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	/* Paths and FIFO lines come from outside: a newline or an escape sequence in them must
	 * neither split the line nor reach the host's terminal. */
	memcpy(line, "roundtrim: ", 11);
	rt_report_escape(line + 11, sizeof(line) - 12, message, sizeof(message), false);
	size_t len = strlen(line);
	line[len++] = '\n';
	rt_out_write_all(STDERR_FILENO, line, len);
	errno = saved_errno;
}
