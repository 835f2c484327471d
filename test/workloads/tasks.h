/* tasks: how many tasks the process has now, for the workloads that watch the library's threads
 * come and go (pylinked, pyembed, libforeign_thread.so). Owns that count, read from
 * /proc/self/task. */
#ifndef TASKS_H
#define TASKS_H

#include <dirent.h>

/* The tasks of the process; -1 where /proc/self/task cannot be read. */
static inline int
wl_tasks(void)
{
	DIR *dir = opendir("/proc/self/task");
	if (!dir)
		return -1;
	int n = 0;
	for (struct dirent *e; (e = readdir(dir));)
		n += e->d_name[0] != '.';
	closedir(dir);
	return n;
}

#endif
