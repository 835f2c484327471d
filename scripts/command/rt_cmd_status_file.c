#include "rt_cmd_status_file.h"

#include "rt_cmd.h"
#include "rt_cmd_wait.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* How long a status file may stay torn: the library's rewrite is one pwrite, so a whole one
 * follows at once unless the writer stopped (SIGSTOP, a debugger) in the middle. */
#define RT_CMD_STATUS_FILE_TORN_US 1000000

enum rt_read_result
rt_cmd_status_file_read_once(const char *path, struct rt_cmd_status_file *f)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return RT_READ_BAD;
	ssize_t got = rt_cmd_read_fd(fd, f->text, sizeof(f->text));
	close(fd);
	size_t len = got > 0 ? (size_t)got : 0;
	if (len == sizeof(f->text))
		return RT_READ_BAD;
	while (len > 0 && strchr(" \t\r\n", f->text[len - 1]))
		len--;
	f->text[len] = '\0';
	return rt_report_read_status(f->text, &f->read);
}

enum rt_read_result
rt_cmd_status_file_read(const char *path, struct rt_cmd_status_file *f)
{
	enum rt_read_result r = rt_cmd_status_file_read_once(path, f);
	if (r != RT_READ_TORN)
		return r;
	struct rt_cmd_wait w;
	rt_cmd_wait_init(&w);
	rt_cmd_wait_file(&w, path);
	int64_t deadline = rt_cmd_wait_now_us() + RT_CMD_STATUS_FILE_TORN_US;
	/* Watching first, then reading: a rewrite that ends between the two still wakes us. */
	while ((r = rt_cmd_status_file_read_once(path, f)) == RT_READ_TORN &&
	       rt_cmd_wait_until(&w, deadline))
		;
	rt_cmd_wait_close(&w);
	return r;
}
