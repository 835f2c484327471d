/* rt_tasks: the library's own tasks (its worker thread, and its keeper): whether a task limit
 * leaves room to start them, one lock over their lives, and standing down: giving them back
 * when the program needs the room or when they cannot follow the program's credentials. */
#ifndef RT_TASKS_H
#define RT_TASKS_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

struct rt_config;

/* How many tasks the library starts in a process: the worker, and where unshare(2) is refused
 * its keeper (rt_keeper). A task of the library's that glibc's thread list does not hold (the
 * keeper) must also leave in rt_tasks_stand_down and follow, or leave before, the program's
 * credential calls (rt_creds). */
unsigned rt_tasks_needed(void);
/* How many run now. */
unsigned rt_tasks_held(void);

/* At start-up, before anything is opened: whether the pids cgroup and RLIMIT_NPROC leave room
 * for the library's tasks and one more for the program (policy/rt_limits). Says why in one
 * line when they do not. Where they leave room for the worker but not for its keeper, and the
 * user accepts the program's descriptor table (cfg->shared_table), true, and
 * rt_tasks_room_for_keeper says no. */
bool rt_tasks_room_to_start(const struct rt_config *cfg);
bool rt_tasks_room_for_keeper(void);

/* Held while the library's tasks start or leave, and across the program's credential calls,
 * which must not meet a task half started. Recursive: a call made inside one (initgroups'
 * lookups may start threads) takes it again. */
void rt_tasks_lock(void);
void rt_tasks_unlock(void);

/* The library stands down in this process: its tasks leave (the caller waits for them, bounded;
 * for the Python thread, outside the lock and not where the caller may hold the GIL it waits for:
 * rt_python_thread_await), the status file and FIFO go, and one line says why. From a program
 * thread, never from the worker. False when the worker or the keeper could not be seen to end
 * within the bound. */
bool rt_tasks_stand_down(const char *why);

/* A program's pthread_create, fork or posix_spawn named by `call` failed with EAGAIN: when the
 * library holds tasks, it stands down and gives them back (true), and the caller makes its call
 * again; its Python thread is sent away but not waited for. */
bool rt_tasks_give_back(const char *call);

/* The call made again after rt_tasks_give_back still failed with EAGAIN: waits (bounded, as
 * rt_python_thread_await) for the library's Python thread to be gone; true when the caller may
 * make its call once more. */
bool rt_tasks_more_room(void);

/* pthread_create itself, for the library's own threads (not the wrapper, which would give them
 * back on EAGAIN). */
int rt_tasks_create_thread(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *),
                           void *arg);

/* In a fork child, inside fork: the lock may have been held by a thread that is not here. */
void rt_tasks_forget_parent(void);

#endif
