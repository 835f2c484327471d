/* pyembed SCRIPT [RUNS [now|gap|pthread_exit]]: an embedder, as a C or C++ service that runs Python
 * for a phase and then goes on without it, RUNS times (default 1): Py_Initialize, runs SCRIPT
 * (PyRun_SimpleFile), Py_FinalizeEx, prints "finalized". Then it writes one byte to the pipe
 * whose read end the script found in PYEMBED_FD (a finalizer of the script's may wait on it),
 * waits until the process is down to 2 tasks (its own and the library's worker; 1 s at most),
 * enters its own mount namespace (setns(2) with CLONE_NEWNS, which the kernel refuses while
 * another task shares the caller's filesystem context) and prints "tasks=N setns=R after=M"
 * (N: the tasks before the call, R: 0 or the errno's name, M: the tasks after it). Before each
 * later Py_Initialize it writes one byte more to the pipe: a finalizer of that run finds it there
 * and does not wait. With "now", as an embedder that runs one job after another: one byte before
 * each Py_Initialize (no finalizer waits), and after "finalized" the next Py_Initialize at once
 * (no wait, no setns). With "gap", as "now", but before each later Py_Initialize it reads a line
 * from stdin: the test makes the worker look while Python is down. With "pthread_exit", as "now",
 * and after the last run the main thread ends with pthread_exit(3): glibc ends the process with
 * exit(0) once its last thread has gone. */
#include <Python.h>

#include "tasks.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	int gate[2];
	char fd_text[16];
	int runs = argc >= 3 ? atoi(argv[2]) : 1;
	bool thread_exit = argc == 4 && strcmp(argv[3], "pthread_exit") == 0;
	bool gap = argc == 4 && strcmp(argv[3], "gap") == 0;
	bool now = thread_exit || gap || (argc == 4 && strcmp(argv[3], "now") == 0);
	if (argc < 2 || argc > 4 || (argc == 4 && !now) || runs < 1 || pipe(gate) != 0)
		return 2;
	snprintf(fd_text, sizeof(fd_text), "%d", gate[0]);
	setenv("PYEMBED_FD", fd_text, 1);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int run = 0; run < runs; run++) {
		FILE *script = fopen(argv[1], "r");
		if (!script || ((run > 0 || now) && write(gate[1], "x", 1) != 1))
			return 2;
		/* Not with stdio: the script's own reads of stdin must find nothing of ours. */
		for (char c = 0; gap && run > 0 && c != '\n';)
			if (read(0, &c, 1) != 1)
				return 2;
		Py_Initialize();
		int failed = PyRun_SimpleFile(script, argv[1]);
		fclose(script);
		if (Py_FinalizeEx() != 0 || failed)
			return 1;
		printf("finalized\n");
		if (now)
			continue;
		if (write(gate[1], "x", 1) != 1)
			return 1;
		int tasks;
		for (double end = now_s() + 1; (tasks = wl_tasks()) > 2 && now_s() < end;) {
			struct timespec step = {0, 1000000};
			nanosleep(&step, NULL);
		}
		int fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
		int rc = setns(fd, CLONE_NEWNS), err = errno;
		close(fd);
		printf("tasks=%d setns=%s after=%d\n", tasks,
		       rc == 0         ? "0"
		       : err == EINVAL ? "EINVAL"
		                       : strerror(err),
		       wl_tasks());
	}
	if (thread_exit)
		pthread_exit(NULL);
	return 0;
}
