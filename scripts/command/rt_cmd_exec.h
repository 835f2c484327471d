/* rt_cmd_exec: the programs the command starts or becomes: run's command, gnuplot.
 * Owns the PATH search and starting a program with its standard streams redirected. */
#ifndef RT_CMD_EXEC_H
#define RT_CMD_EXEC_H

#include <stdbool.h>
#include <stddef.h>

/* The first executable regular file called name in $PATH, into out; false when none. */
bool rt_cmd_exec_search(const char *name, char *out, size_t size);
/* Runs argv (argv[0] searched in PATH) with stdin from in_path and stdout and stderr into
 * out_path (each "/dev/null" when NULL), and waits for it. Returns its exit status, or -1 when
 * it could not start or did not exit normally. */
int rt_cmd_exec_wait(const char *const argv[], const char *in_path, const char *out_path);

#endif
