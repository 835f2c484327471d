/* rt_record: a record written to one of the library's files whole or not at all (appended, or
 * rewritten in place), and the count of the records dropped because a file could not take them. */
#ifndef RT_RECORD_H
#define RT_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Appends one record whole or not at all: 0, or the errno of the write that could not finish
 * it, the file cut back to where the record began. */
int rt_record_append(int fd, const char *line, size_t len);
/* Replaces a file's content in place, whole or not at all: 0, or the errno that kept the new
 * content out. *kept is the longest content written so far, which shorter ones pad over; text
 * ends with a newline. */
int rt_record_rewrite(int fd, size_t *kept, const char *text, size_t len);
struct rt_fd;
/* A record the file (its descriptor f, path) could not take, err why: counted, and said on
 * stderr the first time for that file (*said), unless the descriptor is no longer the file's. */
void rt_record_drop(struct rt_fd *f, const char *path, bool *said, int err);
/* A record lost with its file (one that could not be named, see rt_outputs): counted only, the
 * file's line said it once. */
void rt_record_lose(void);
/* The records dropped so far (the status's lost_records). */
uint64_t rt_record_dropped(void);
/* In a fork child, inside fork: the parent's count is not the child's. */
void rt_record_forget_parent(void);

#endif
