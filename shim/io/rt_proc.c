/* Waits on /proc: see rt_proc.h. */
#include "rt_proc.h"

#include <stdio.h>
#include <sys/stat.h>
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
