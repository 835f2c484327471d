/* rt_proc: the waits on /proc that the layers share: a task's end as the kernel releases it. */
#ifndef RT_PROC_H
#define RT_PROC_H

#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

/* Once a task of the library's has ended (its tid cleared by the kernel): waits, bounded, until
 * the kernel has released it too (its /proc entry gone), and with it its pids cgroup charge and
 * its RLIMIT_NPROC count (release_task), a few microseconds later. */
void rt_proc_await_release(pid_t tid);
/* As rt_proc_await_release, until deadline (CLOCK_MONOTONIC) at the latest, in 0.1-ms steps:
 * true when the kernel has released the task. */
bool rt_proc_await_release_until(pid_t tid, const struct timespec *deadline);

#endif
