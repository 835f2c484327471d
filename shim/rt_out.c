/* Output primitives: nothing here allocates, and every write survives EINTR and short writes. */
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
	char line[512];
	int saved_errno = errno;
	int head = snprintf(line, sizeof(line), "roundtrim: ");
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line + head, sizeof(line) - (size_t)head - 1, fmt, ap);
	va_end(ap);
	size_t len = (size_t)head + (n < 0 ? 0 : (size_t)n);
	if (len > sizeof(line) - 2)
		len = sizeof(line) - 2;
	line[len++] = '\n';
	rt_out_write_all(STDERR_FILENO, line, len);
	errno = saved_errno;
}
