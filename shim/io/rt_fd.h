/* rt_fd: the library's own descriptors: lifted above the floor, close-on-exec, and, while they
 * are in the program's table, checked before every use, so that one the program closed or
 * replaced is never read, written or closed. */
#ifndef RT_FD_H
#define RT_FD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

struct rt_fd {
	atomic_int fd; /* -1 when none, or once lost */
	dev_t dev;
	ino_t ino;
	const char *feature; /* what stands down when it is lost: "FIFO trigger", "stats file" */
};

#define RT_FD_NONE(what)                                                                           \
	{                                                                                          \
		.fd = -1, .feature = (what)                                                        \
	}

/* Once, in the constructor: reads RLIMIT_NOFILE for the floor (policy/rt_file_rules). */
void rt_fd_init(void);
int rt_fd_floor(void);

/* Takes over `low`, a descriptor just opened by this thread: moves it to the lowest free number
 * at or above the floor, close-on-exec, closes `low` and remembers what it refers to. False
 * (with errno) when it cannot; `low` is closed either way. */
bool rt_fd_adopt(struct rt_fd *f, int low);
/* The descriptor when it still refers to what was adopted, else -1: the first time it does
 * not, the feature stands down with one line and the number is forgotten, never closed (it is
 * the program's now). Async-signal-safe. */
int rt_fd_get(struct rt_fd *f);
/* The same check without a word and without forgetting: for signal handlers and the program's
 * threads, which leave the saying to the worker. */
int rt_fd_peek(const struct rt_fd *f);
bool rt_fd_valid(const struct rt_fd *f);
/* From now on (true) the descriptors are in a table of the library's own, where the program
 * cannot reach them: rt_fd_get checks nothing, and rt_fd_close closes there (rt_io). False in a
 * fork child, whose table is the program's. */
void rt_fd_own_table(bool own);
/* Closes it if it is still ours; forgets it either way. */
void rt_fd_close(struct rt_fd *f);
/* Closes the calling thread's copy if it is still ours, and goes on remembering the number: the
 * worker's own descriptor table holds the copy that is used from now on. */
void rt_fd_close_copy(const struct rt_fd *f);

#endif
