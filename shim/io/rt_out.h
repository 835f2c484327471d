/* rt_out: the library's lines on stderr (one write(2) each, prefixed "roundtrim: "), from any
 * thread, the worker's included; nothing here allocates. */
#ifndef RT_OUT_H
#define RT_OUT_H

#include <stdbool.h>
#include <stddef.h>

void rt_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void rt_out_write_all(int fd, const char *buf, size_t len);
/* A line for the program's stderr, from any thread (the worker's included). */
void rt_out_stderr(const char *buf, size_t len);
/* In the worker, once it has its own descriptor table: where rt_out_stderr finds stderr. */
void rt_out_stderr_via(int pidfd);
/* Around the allocator action that an API call runs in the program's thread, which writes to no
 * descriptor: the lines rt_warn says meanwhile are kept (what fits) until rt_out_say_held. */
void rt_out_hold(bool hold);
/* In the worker: says the lines kept by rt_out_hold. */
void rt_out_say_held(void);

#endif
