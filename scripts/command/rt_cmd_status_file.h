/* rt_cmd_status_file: reading a status file that the library rewrites in place.
 * Owns reading it whole through policy's reader, again while a read comes back torn. */
#ifndef RT_CMD_STATUS_FILE_H
#define RT_CMD_STATUS_FILE_H

#include <stddef.h>

#include "rt_report.h"

/* The library writes at most this much (its rewrite buffer). */
#define RT_CMD_STATUS_FILE_MAX 8192

struct rt_cmd_status_file {
	char text[RT_CMD_STATUS_FILE_MAX]; /* as read, trailing blanks and newline cut */
	struct rt_status_read read;
};

/* One read of path: RT_READ_OK, RT_READ_TORN (caught mid-rewrite, or not written yet) or
 * RT_READ_BAD (not a status file, or gone). */
enum rt_read_result rt_cmd_status_file_read_once(const char *path, struct rt_cmd_status_file *f);
/* A read that waits out a torn one: read again at each rewrite for up to a second. */
enum rt_read_result rt_cmd_status_file_read(const char *path, struct rt_cmd_status_file *f);

#endif
