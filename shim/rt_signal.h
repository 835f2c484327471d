/* rt_signal: the signal trigger. Owns the blocked mask that keeps the signal away from the
 * application's threads (no EINTR there), its signalfd, and the undoing of that mask on exec. */
#ifndef RT_SIGNAL_H
#define RT_SIGNAL_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

/* In the constructor, before the application starts threads: installs a counting fallback
 * handler, blocks sig in the calling thread (every later thread inherits the mask) and opens a
 * signalfd. wake_fd is an eventfd the fallback handler writes to. */
bool rt_signal_setup(int sig, int wake_fd);
/* In a fork child: rounds the fallback handler counted belong to the parent. */
void rt_signal_forget_parent(void);
/* After fork, in the child: the worker's new eventfd. */
void rt_signal_set_wake_fd(int wake_fd);
int rt_signal_fd(void);
/* Rounds received since the last call: queued on the signalfd, or taken by the fallback handler
 * in a thread that had unblocked the signal. */
uint64_t rt_signal_drain(void);

/* What exec_enter changed, for exec_leave to undo when the exec fails or the call returns. */
struct rt_kernel_sigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

struct rt_signal_exec_state {
	sigset_t mask;
	struct rt_kernel_sigaction internal[2];
	unsigned reignored; /* bit i: glibc's internal signal 32 + i was set back to SIG_IGN */
};

/* Around exec and spawn: the new program must start with the mask and dispositions it would
 * have had without roundtrim. enter unblocks the signal in the calling thread (a signal that
 * arrives meanwhile is counted by the fallback handler); leave restores it when the call
 * returns. */
void rt_signal_exec_enter(struct rt_signal_exec_state *state);
void rt_signal_exec_leave(const struct rt_signal_exec_state *state);
/* In the constructor, before the worker thread exists: remembers which of glibc's internal
 * signals (32, 33) the process inherited as SIG_IGN. Starting any thread makes glibc install
 * its SIGSETXID handler, and exec resets handled signals to SIG_DFL, so without this a program
 * execed by a formerly single-threaded host would no longer ignore them. */
void rt_signal_note_inherited(void);
/* The calling thread's mask without roundtrim's signal: what a spawned child should get. */
void rt_signal_clean_mask(sigset_t *mask);
bool rt_signal_owned(void);

#endif
