/* Messages on stderr, one line each, and the statuses the verbs exit with. */
#include "rt_cmd.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *rt_cmd_verb;
static int rt_cmd_fail = RT_CMD_FAIL;
static int rt_cmd_usage = RT_CMD_USAGE;

void
rt_cmd_set_verb(const char *verb, int fail_status)
{
	rt_cmd_verb = verb;
	rt_cmd_fail = fail_status;
	rt_cmd_usage = fail_status == RT_CMD_FAIL ? RT_CMD_USAGE : fail_status;
}

int
rt_cmd_fail_status(void)
{
	return rt_cmd_fail;
}

static void
rt_cmd_vsay(const char *fmt, va_list ap)
{
	char line[4096];
	vsnprintf(line, sizeof(line), fmt, ap);
	fprintf(stderr, RT_CMD_NAME ": %s\n", line);
}

void
rt_cmd_say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	rt_cmd_vsay(fmt, ap);
	va_end(ap);
}

void
rt_cmd_die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	rt_cmd_vsay(fmt, ap);
	va_end(ap);
	exit(rt_cmd_fail);
}

void
rt_cmd_usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	rt_cmd_vsay(fmt, ap);
	va_end(ap);
	if (rt_cmd_verb)
		fprintf(stderr, "Try '" RT_CMD_NAME " %s --help'.\n", rt_cmd_verb);
	else
		fprintf(stderr, "Try '" RT_CMD_NAME " --help'.\n");
	exit(rt_cmd_usage);
}

void *
rt_cmd_alloc(size_t size)
{
	return rt_cmd_realloc(NULL, size);
}

void *
rt_cmd_realloc(void *p, size_t size)
{
	void *q = realloc(p, size ? size : 1);
	if (!q)
		rt_cmd_die("out of memory");
	return q;
}

ssize_t
rt_cmd_read_fd(int fd, char *buf, size_t size)
{
	size_t len = 0;
	while (len < size) {
		ssize_t n = read(fd, buf + len, size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	return (ssize_t)len;
}
