/* rt_signal: the signal trigger, when the user turns it on. Owns the blocked mask that keeps the
 * signal away from the application's threads (no EINTR there), its handler, giving the signal
 * up to a program that claims it, and the undoing of the mask around exec and spawn. */
#ifndef RT_SIGNAL_H
#define RT_SIGNAL_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

/* In the constructor, before the application starts threads: installs the counting handler and
 * blocks sig in the calling thread (every later thread inherits the mask). Only the worker
 * takes the signal, while it waits. */
bool rt_signal_setup(int sig);
/* In a fork child: rounds counted before the fork belong to the parent. */
void rt_signal_forget_parent(void);
bool rt_signal_owned(void);
/* Whether the threads' masks may hold the library's block of the signal: the trigger was set
 * up and the signal was not blocked before. */
bool rt_signal_in_masks(void);
int rt_signal_number(void); /* 0 when not owned */
/* Rounds the handler counted since the last call. */
uint64_t rt_signal_take(void);

/* The worker's wait: begin fills *mask with what the worker's mask is while it waits (every
 * signal blocked but the trigger, while it is ours); end follows the wait. Between the two the
 * program may not take the signal over (rt_signal_give_up waits for end). */
void rt_signal_begin_wait(sigset_t *mask);
void rt_signal_end_wait(void);

/* What exec_enter changed, for exec_leave to undo when the exec fails or the call returns. */
struct rt_signal_exec_state {
	sigset_t mask;
};

/* Around exec and around calls that start another process: the new program must start with the
 * mask it would have had without roundtrim. enter unblocks the signal in the calling thread (a
 * signal that arrives meanwhile is counted by the handler); leave restores the mask when the call
 * returns. No disposition changes: glibc's signals 32 and 33 above all stay as glibc set them. */
void rt_signal_exec_enter(struct rt_signal_exec_state *state);
void rt_signal_exec_leave(const struct rt_signal_exec_state *state);
/* The calling thread's mask without roundtrim's signal: what a spawned child should get. */
void rt_signal_clean_mask(sigset_t *mask);

#endif
