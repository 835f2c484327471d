/* rt_proc: what the layers share about this process's tasks: a task's end as the kernel releases
 * it, and reads of the process's own memory that fail instead of faulting. */
#ifndef RT_PROC_H
#define RT_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* Once a task of the library's has ended (its tid cleared by the kernel): waits, bounded, until
 * the kernel has released it too (its /proc entry gone), and with it its pids cgroup charge and
 * its RLIMIT_NPROC count (release_task), a few microseconds later. */
void rt_proc_await_release(pid_t tid);
/* As rt_proc_await_release, until deadline (CLOCK_MONOTONIC) at the latest, in 0.1-ms steps:
 * true when the kernel has released the task. */
bool rt_proc_await_release_until(pid_t tid, const struct timespec *deadline);

/* Copies len bytes at addr of this process into dst through the kernel (process_vm_readv on
 * task, a live task of this process): false, instead of a fault, when any of them is not
 * mapped, or when the call is refused. The caller has asked rt_probe_kills first. */
bool rt_proc_read_self(pid_t task, void *dst, uintptr_t addr, size_t len);

#endif
