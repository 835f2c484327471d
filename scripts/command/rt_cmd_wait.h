/* rt_cmd_wait: waiting, up to a deadline, for status files to be rewritten and processes to exit.
 * Owns the inotify watches (IN_MODIFY: the library rewrites in place) and the pidfds. */
#ifndef RT_CMD_WAIT_H
#define RT_CMD_WAIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rt_cmd_wait {
	int inotify;
	int *pidfds; /* -1 for a process no longer waited for, or one the kernel gave none */
	size_t npids;
	bool all_pidfds; /* every process has its pidfd: no need to look again on a timer */
};

int64_t rt_cmd_wait_now_us(void);
void rt_cmd_wait_init(struct rt_cmd_wait *w);
/* Wakes the wait when the file is written. False when it cannot be watched. */
bool rt_cmd_wait_file(struct rt_cmd_wait *w, const char *path);
/* Wakes the wait when the process exits; returns its slot for rt_cmd_wait_forget_pid. */
size_t rt_cmd_wait_pid(struct rt_cmd_wait *w, int pid);
void rt_cmd_wait_forget_pid(struct rt_cmd_wait *w, size_t slot);
/* Returns when a watched file may have changed or a watched process may have exited (the caller
 * looks), or false once deadline_us (rt_cmd_wait_now_us's clock) has passed. */
bool rt_cmd_wait_until(struct rt_cmd_wait *w, int64_t deadline_us);
void rt_cmd_wait_close(struct rt_cmd_wait *w);

#endif
