/* Tasks of this process: see rt_proc.h. */
#include "rt_proc.h"

#include <stdio.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>

void
rt_proc_await_release(pid_t tid)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof(path), "/proc/self/task/%d", (int)tid);
	for (int i = 0; i < 1000 && stat(path, &st) == 0; i++) {
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
	}
}

bool
rt_proc_await_release_until(pid_t tid, const struct timespec *deadline)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof(path), "/proc/self/task/%d", (int)tid);
	while (stat(path, &st) == 0) {
		struct timespec now, step = {0, 100000};
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > deadline->tv_sec ||
		    (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec))
			return false;
		nanosleep(&step, NULL);
	}
	return true;
}

bool
rt_proc_read_self(pid_t task, void *dst, uintptr_t addr, size_t len)
{
	struct iovec local = {dst, len}, remote = {(void *)addr, len};
	return process_vm_readv(task, &local, 1, &remote, 1, 0) == (ssize_t)len;
}
