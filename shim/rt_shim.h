/* rt_shim: what the shim's modules share: the configuration read once at load, the allocator
 * found then, and the calls between modules. */
#ifndef RT_SHIM_H
#define RT_SHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_allocator.h"
#include "rt_config.h"

#define RT_EXPORT __attribute__((visibility("default")))
#define RT_VERSION "0.1.0"

struct rt_shim {
	struct rt_config cfg;
	bool active; /* the program matched, nothing disabled it: the worker runs */
	enum rt_allocator_kind allocator;
	enum rt_action action;
	char program[64];
};

extern struct rt_shim rt_shim;

/* rt_out: one line on stderr, prefixed "roundtrim: ", written with write(2) in one call. */
void rt_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void rt_out_write_all(int fd, const char *buf, size_t len);
/* Opens a file for appending, 0600, close-on-exec; -1 with errno on failure. */
int rt_out_open_append(const char *path);

/* rt_worker: the one thread that does all the work. */
bool rt_worker_start(void);
/* In a fork child (from the fork wrapper, once every atfork handler ran): a worker of its own. */
bool rt_worker_restart_in_child(void);
/* In a fork child, before anything else runs: forget the parent's worker and descriptors. */
void rt_worker_forget_parent(void);
/* Asynchronous requests from the API; false when the worker is not running. */
bool rt_worker_request_round(void);
bool rt_worker_request_trim(void);
/* Called on the way out (destructor, _exit): removes the FIFO and status file we created. */
void rt_worker_remove_files(void);
/* Around an exec of this process: the files go first (a fork child that execs at once would
 * otherwise leave them for a program that knows nothing of them); if the exec fails, the
 * worker makes them again. before_exec returns whether it removed anything. */
bool rt_worker_before_exec(void);
void rt_worker_after_failed_exec(bool removed);

#endif
