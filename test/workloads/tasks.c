/* tasks: a program that needs a given number of tasks at once, as under a pids limit.
 *   tasks [--threads N] [--forks N] [--spawns N]
 * Starts N threads, then forks N children, then starts N children with posix_spawn (cat reading
 * a pipe); every one of them lives until all are made. Prints "tasks threads=T forks=F spawns=S"
 * with the numbers made, and "failed CALL ERRNO" for the first call that failed (then exits 1). */
#include "options.h"

#include <errno.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define TASKS_MAX 64

extern char **environ;

static int hold[2];

static void *
holder(void *arg)
{
	char c;
	while (read(hold[0], &c, 1) > 0) {
	}
	return arg;
}

int
main(int argc, char **argv)
{
	int threads = 0, forks = 0, spawns = 0;
	const struct wl_option options[] = {
	    {"threads", WL_OPT_INT, &threads},
	    {"forks", WL_OPT_INT, &forks},
	    {"spawns", WL_OPT_INT, &spawns},
	};
	if (!WL_PARSE_OPTIONS(argc, argv, options) || threads < 0 || forks < 0 || spawns < 0 ||
	    threads > TASKS_MAX || forks > TASKS_MAX || spawns > TASKS_MAX || pipe(hold) != 0) {
		fprintf(stderr, "usage: tasks [--threads N] [--forks N] [--spawns N]\n");
		return 2;
	}
	pthread_t made[TASKS_MAX];
	pid_t children[2 * TASKS_MAX];
	int nthreads = 0, nforks = 0, nspawns = 0, nchildren = 0;
	const char *failed = NULL;
	int err = 0;
	for (; nthreads < threads; nthreads++)
		if ((err = pthread_create(&made[nthreads], NULL, holder, NULL)) != 0) {
			failed = "pthread_create";
			break;
		}
	for (; !failed && nforks < forks; nforks++) {
		pid_t pid = fork();
		if (pid == 0) {
			close(hold[1]);
			holder(NULL);
			_exit(0);
		}
		if (pid < 0) {
			err = errno;
			failed = "fork";
			break;
		}
		children[nchildren++] = pid;
	}
	posix_spawn_file_actions_t actions;
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_adddup2(&actions, hold[0], 0);
	posix_spawn_file_actions_addclose(&actions, hold[1]);
	for (; !failed && nspawns < spawns; nspawns++) {
		char *cat_argv[] = {"cat", NULL};
		pid_t pid;
		if ((err = posix_spawn(&pid, "/bin/cat", &actions, NULL, cat_argv, environ)) != 0) {
			failed = "posix_spawn";
			break;
		}
		children[nchildren++] = pid;
	}
	posix_spawn_file_actions_destroy(&actions);
	printf("tasks threads=%d forks=%d spawns=%d\n", nthreads, nforks, nspawns);
	if (failed)
		printf("failed %s %s\n", failed, strerrorname_np(err));
	fflush(stdout);
	close(hold[1]);
	for (int i = 0; i < nthreads; i++)
		pthread_join(made[i], NULL);
	for (int i = 0; i < nchildren; i++)
		waitpid(children[i], NULL, 0);
	return failed ? 1 : 0;
}
