/* rt_target: the processes and files that the command's round, trim and status act on.
 * Owns which descriptor is the library's FIFO, whose status file answers, --match, answers. */
#ifndef RT_TARGET_H
#define RT_TARGET_H

#include <stdbool.h>
#include <stddef.h>

#include "rt_proto.h"
#include "rt_report.h"

/* Whether a descriptor's link (readlink of /proc/PID/fd/N) can name the library's FIFO: an
 * absolute path that still names the file (no " (deleted)"). Writes the path of the status
 * file that answers for it (rt_path_status_for_fifo). The caller checks that it is a FIFO. */
bool rt_target_fifo_status(const char *link, char *status, size_t size);
/* Whether a thread's comm (a line of /proc/PID/task/TID/comm) names the library's worker. */
bool rt_target_is_worker_comm(const char *comm);
/* Whether the status file found beside a FIFO that pid holds open is pid's own: a FIFO another
 * process made, or a status file left by a process that is gone, is not. */
bool rt_target_status_is_of(const struct rt_status_record *st, int pid);
/* Whether --match globs (NULL when not given) select the process of the status: fnmatch(3)
 * on its program, as ROUNDTRIM_MATCH. */
bool rt_target_selected(const struct rt_status_record *st, const char *globs);
/* Whether a process told `kind` (RT_PROTO_ROUND or RT_PROTO_TRIM) has handled it: its rounds
 * (round) or actions (trim) moved past what they were before the line was written. *acted
 * tells whether an action ran meanwhile. */
bool rt_target_answered(enum rt_proto_kind kind, const struct rt_status_record *before,
                        const struct rt_status_record *now, bool *acted);

#endif
