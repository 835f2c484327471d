/* rt_cmd: what the verbs of the roundtrim command share: exit statuses, messages on stderr and
 * the verbs' entry points, each a thin shell around policy/ (roundtrim(1)). */
#ifndef RT_CMD_H
#define RT_CMD_H

#include <stddef.h>
#include <stdnoreturn.h>
#include <sys/types.h>

#define RT_CMD_NAME "roundtrim"

/* roundtrim(1), EXIT STATUS: run follows env(1) and timeout(1), the other verbs kill(1). */
enum rt_cmd_exit {
	RT_CMD_OK = 0,
	RT_CMD_FAIL = 1,
	RT_CMD_USAGE = 2,
	RT_CMD_RUN_FAIL = 125,
	RT_CMD_CANNOT_EXEC = 126,
	RT_CMD_NOT_FOUND = 127,
};

/* The verb now running (NULL before one is known), named by usage errors, and the status its
 * own failures exit with: 125 for run, whose other statuses are its command's. */
void rt_cmd_set_verb(const char *verb, int fail_status);
int rt_cmd_fail_status(void);

/* One line on stderr: "roundtrim: " and the message. */
void rt_cmd_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* rt_cmd_say, then exit with the verb's failure status (1, or 125 for run). */
noreturn void rt_cmd_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* rt_cmd_say and where help is, then exit 2 (125 for run). */
noreturn void rt_cmd_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* malloc and realloc that end the command when memory runs out. */
void *rt_cmd_alloc(size_t size);
void *rt_cmd_realloc(void *p, size_t size);
/* Reads fd into buf until end of file or size bytes, through EINTR: the bytes read, or -1 on an
 * error (errno says which). */
ssize_t rt_cmd_read_fd(int fd, char *buf, size_t size);

/* The verbs: argv[0] is the verb. Each returns the exit status or does not return. */
int rt_cmd_run(int argc, char **argv);
int rt_cmd_trigger(int argc, char **argv); /* round and trim */
int rt_cmd_status(int argc, char **argv);
int rt_cmd_patch(int argc, char **argv);
int rt_cmd_report(int argc, char **argv);

#endif
