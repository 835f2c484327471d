/* rt_creds: the program's credential calls (set*id, setgroups, initgroups), which glibc applies
 * to every thread, the worker's included: before each, the worker takes the calling thread's
 * capabilities and securebits, or leaves; and the worker leaves before the program enters a new
 * user namespace (unshare, setns), which only a process of one thread may. */
#ifndef RT_CREDS_H
#define RT_CREDS_H

/* In the worker, first thing: what it started with. */
void rt_creds_worker_starts(void);
/* In the worker, from rt_worker_serve: takes a program thread's credentials when asked. */
void rt_creds_serve(void);
/* In a fork child, inside fork: no request of the parent's is pending here. */
void rt_creds_forget_parent(void);

#endif
