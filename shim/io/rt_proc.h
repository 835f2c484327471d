/* rt_proc: the waits on /proc that the layers share: a task's end as the kernel releases it. */
#ifndef RT_PROC_H
#define RT_PROC_H

#include <sys/types.h>

/* Once a task of the library's has ended (its tid cleared by the kernel): waits, bounded, until
 * the kernel has released it too (its /proc entry gone), and with it its pids cgroup charge and
 * its RLIMIT_NPROC count (release_task), a few microseconds later. */
void rt_proc_await_release(pid_t tid);

#endif
