#include "rt_cmd_exec.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* What the shell searches when PATH is unset. */
#define RT_CMD_EXEC_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

bool
rt_cmd_exec_search(const char *name, char *out, size_t size)
{
	const char *path = getenv("PATH");
	if (!path)
		path = RT_CMD_EXEC_DEFAULT_PATH;
	for (const char *dir = path;; dir++) {
		size_t len = strcspn(dir, ":");
		struct stat st;
		/* An empty entry is the working directory. */
		int n = len ? snprintf(out, size, "%.*s/%s", (int)len, dir, name)
		            : snprintf(out, size, "./%s", name);
		if (n > 0 && (size_t)n < size && stat(out, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(out, X_OK) == 0)
			return true;
		dir += len;
		if (*dir == '\0')
			return false;
	}
}

int
rt_cmd_exec_wait(const char *const argv[], const char *in_path, const char *out_path)
{
	posix_spawn_file_actions_t actions;
	int status = -1;
	pid_t pid;
	if (posix_spawn_file_actions_init(&actions) != 0)
		return -1;
	if (posix_spawn_file_actions_addopen(&actions, 0, in_path ? in_path : "/dev/null", O_RDONLY,
	                                     0) != 0 ||
	    posix_spawn_file_actions_addopen(&actions, 1, out_path ? out_path : "/dev/null",
	                                     O_WRONLY | O_CREAT | O_TRUNC, 0600) != 0 ||
	    posix_spawn_file_actions_adddup2(&actions, 1, 2) != 0)
		goto label_return;
	if (posix_spawnp(&pid, argv[0], &actions, NULL, (char *const *)argv, environ) != 0)
		goto label_return;
	int wstatus;
	pid_t got;
	while ((got = waitpid(pid, &wstatus, 0)) < 0 && errno == EINTR)
		;
	if (got == pid && WIFEXITED(wstatus))
		status = WEXITSTATUS(wstatus);
label_return:
	posix_spawn_file_actions_destroy(&actions);
	return status;
}
