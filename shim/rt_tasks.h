/* rt_tasks: the library's own tasks (its worker thread): one lock over their lives, and standing
 * down: giving them back when they cannot follow the program's credentials. */
#ifndef RT_TASKS_H
#define RT_TASKS_H

#include <pthread.h>
#include <stdbool.h>

/* Held while the library's tasks start or leave, and across the program's credential calls,
 * which must not meet a task half started. Recursive: a call made inside one (initgroups'
 * lookups may start threads) takes it again. */
void rt_tasks_lock(void);
void rt_tasks_unlock(void);

/* The library stands down in this process: its tasks leave (the caller waits for them, bounded),
 * the status file and FIFO go, and one line says why. From a program thread, never from the
 * worker. False when its tasks could not be seen to end within the bound. */
bool rt_tasks_stand_down(const char *why);

/* pthread_create itself, for the library's own threads. */
int rt_tasks_create_thread(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *),
                           void *arg);

/* In a fork child, inside fork: the lock may have been held by a thread that is not here. */
void rt_tasks_forget_parent(void);

#endif
