/* rt_fifo: the FIFO trigger and the status file beside it: made at start-up in a directory of
 * the user's own, read by the worker, poked by any thread, set aside around exec, removed at exit.
 */
#ifndef RT_FIFO_H
#define RT_FIFO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct rt_fd;

/* At start-up, in the thread that starts the library: makes the FIFO and the status file from the
 * template tmpl (ROUNDTRIM_FIFO; "" for none). A fork child (forked) makes them only where tmpl has
 * %p. */
void rt_fifo_open(const char *tmpl, bool forked);

/* The FIFO's descriptor for the worker's wait, -1 when there is none (or it was lost). */
int rt_fifo_fd(void);
/* Reads what the FIFO holds (non-blocking): >0 bytes, 0 when empty, -1 when the FIFO is gone. */
ssize_t rt_fifo_read(char *buf, size_t size);
const char *rt_fifo_path(void); /* "" when none */

bool rt_fifo_have_status(void);
/* Replaces the status file's content in place (seq fields let readers catch a write half done);
 * whole, or not at all. */
void rt_fifo_write_status(const char *json, size_t len);

/* Around an exec of this process: the FIFO and status file are moved aside (the next program
 * would not know them) and moved back if the exec returns. Renames only: no descriptor. */
bool rt_fifo_before_exec(void);
void rt_fifo_after_failed_exec(bool moved);
/* On the way out, in the process that made them: removes the FIFO and the status file. */
void rt_fifo_remove(void);

/* Its descriptors, to be listed, closed and forgotten with the library's others. */
struct rt_fd *const *rt_fifo_fds(size_t *n);
/* In a fork child, inside fork: closes the parent's descriptors (those a private table held
 * are forgotten before) and forgets its paths. */
void rt_fifo_forget_parent(void);

#endif
