/* pylinked: a program linked to libpython3.11 that never initializes Python, as gdb or vim
 * linked to libpython are until they need it: the C API is in the process, and no interpreter.
 * Prints "ready", then answers each line of stdin with "tasks=N python=I": N the tasks of the
 * process (/proc/self/task), I what Py_IsInitialized() says. EOF ends it. */
#include "tasks.h"

#include <stdio.h>

int Py_IsInitialized(void);

int
main(void)
{
	char line[256];
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready\n");
	while (fgets(line, sizeof(line), stdin))
		printf("tasks=%d python=%d\n", wl_tasks(), Py_IsInitialized());
	return 0;
}
