/* asleep: whether a thread of this process sleeps in futex(2) on a given word, as the kernel
 * shows it in /proc/self/task/TID/syscall (the call's number, then its arguments). */
#ifndef ASLEEP_H
#define ASLEEP_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/syscall.h>

/* The kernel lists a task there as in futex only once futex_wait has read the word under its
 * bucket's lock and queued the task: seen asleep, it will be woken by the next wake. */
static inline bool
asleep_on(int tid, const void *word)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	long nr;
	unsigned long addr;
	bool on = fgets(line, sizeof(line), f) && sscanf(line, "%ld %lx", &nr, &addr) == 2 &&
	          nr == SYS_futex && addr == (unsigned long)word;
	fclose(f);
	return on;
}

#endif
