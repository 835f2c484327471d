#include "rt_cmd_wait.h"

#include "rt_cmd.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* How often to look without a pidfd (kernels before 5.3) or an inotify watch. */
#define RT_CMD_WAIT_LOOK_MS 50

int64_t
rt_cmd_wait_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void
rt_cmd_wait_init(struct rt_cmd_wait *w)
{
	w->inotify = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	w->pidfds = NULL;
	w->npids = 0;
	w->all_pidfds = w->inotify >= 0;
}

bool
rt_cmd_wait_file(struct rt_cmd_wait *w, const char *path)
{
	if (w->inotify >= 0 && inotify_add_watch(w->inotify, path, IN_MODIFY | IN_DELETE_SELF) >= 0)
		return true;
	w->all_pidfds = false;
	return false;
}

size_t
rt_cmd_wait_pid(struct rt_cmd_wait *w, int pid)
{
	w->pidfds = rt_cmd_realloc(w->pidfds, (w->npids + 1) * sizeof(*w->pidfds));
#ifdef SYS_pidfd_open
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
#else
	int fd = -1;
	(void)pid;
#endif
	if (fd < 0)
		w->all_pidfds = false;
	w->pidfds[w->npids] = fd;
	return w->npids++;
}

void
rt_cmd_wait_forget_pid(struct rt_cmd_wait *w, size_t slot)
{
	if (w->pidfds[slot] >= 0)
		close(w->pidfds[slot]);
	w->pidfds[slot] = -1;
}

bool
rt_cmd_wait_until(struct rt_cmd_wait *w, int64_t deadline_us)
{
	int64_t left_us = deadline_us - rt_cmd_wait_now_us();
	if (left_us <= 0)
		return false;
	int64_t wait_ms = (left_us + 999) / 1000;
	if (!w->all_pidfds && wait_ms > RT_CMD_WAIT_LOOK_MS)
		wait_ms = RT_CMD_WAIT_LOOK_MS;
	struct pollfd *fds = rt_cmd_alloc((w->npids + 1) * sizeof(*fds));
	fds[0] = (struct pollfd){.fd = w->inotify, .events = POLLIN};
	for (size_t i = 0; i < w->npids; i++)
		fds[i + 1] = (struct pollfd){.fd = w->pidfds[i], .events = POLLIN};
	int n = poll(fds, w->npids + 1, (int)wait_ms);
	free(fds);
	if (n < 0 && errno != EINTR)
		rt_cmd_die("cannot wait: %m");
	char events[4096];
	if (w->inotify >= 0)
		while (read(w->inotify, events, sizeof(events)) > 0)
			;
	return true;
}

void
rt_cmd_wait_close(struct rt_cmd_wait *w)
{
	for (size_t i = 0; i < w->npids; i++)
		rt_cmd_wait_forget_pid(w, i);
	free(w->pidfds);
	if (w->inotify >= 0)
		close(w->inotify);
	w->inotify = -1;
}
