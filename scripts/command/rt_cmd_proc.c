#include "rt_cmd_proc.h"

#include "rt_cmd.h"
#include "rt_preload.h"
#include "rt_target.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RT_CMD_PROC_LINE_MAX 8192

/* The owner of /proc/PID; false when the process is gone. */
static bool
rt_cmd_proc_owner(int pid, uid_t *uid)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%d", pid);
	if (stat(path, &st) != 0)
		return false;
	*uid = st.st_uid;
	return true;
}

static bool
rt_cmd_proc_mine(uid_t owner)
{
	uid_t me = geteuid();
	return owner == me || me == 0;
}

static bool
rt_cmd_proc_has_library(int pid)
{
	char path[64], line[RT_CMD_PROC_LINE_MAX];
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	FILE *f = fopen(path, "re");
	bool found = false;
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = rt_preload_maps_line_has_library(line);
	fclose(f);
	return found;
}

bool
rt_cmd_proc_alive(int pid)
{
	char path[64], stat_line[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	size_t n = fread(stat_line, 1, sizeof(stat_line) - 1, f);
	fclose(f);
	stat_line[n] = '\0';
	/* "PID (NAME) STATE ...": the name may hold anything, the last ')' ends it. */
	const char *end = strrchr(stat_line, ')');
	return end && end[1] == ' ' && end[2] != 'Z' && end[2] != 'X';
}

/* The library's FIFO among the descriptors listed in dir_path: one whose status file beside it
 * is pid's. */
static bool
rt_cmd_proc_find_fifo_in(const char *dir_path, int pid, struct rt_cmd_target *t)
{
	DIR *dir = opendir(dir_path);
	if (!dir)
		return false;
	bool found = false;
	struct dirent *e;
	while (!found && (e = readdir(dir)) != NULL) {
		char fd_path[PATH_MAX], link[PATH_MAX];
		struct stat st;
		if (e->d_name[0] == '.')
			continue;
		snprintf(fd_path, sizeof(fd_path), "%s/%s", dir_path, e->d_name);
		ssize_t n = readlink(fd_path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (!rt_target_fifo_status(link, t->status_path, sizeof(t->status_path)) ||
		    stat(link, &st) != 0 || !S_ISFIFO(st.st_mode))
			continue;
		if (rt_cmd_status_file_read(t->status_path, &t->status) != RT_READ_OK ||
		    !rt_target_status_is_of(&t->status.read.st, pid))
			continue;
		snprintf(t->fifo, sizeof(t->fifo), "%s", link);
		found = true;
	}
	closedir(dir);
	return found;
}

/* The library's worker keeps its descriptors in a table of its own, which only its thread's
 * listing shows (/proc/PID/task/TID/fd); where the kernel refused it one, they are in the
 * process's (/proc/PID/fd). The worker is the thread named RT_WORKER_THREAD_NAME. */
static bool
rt_cmd_proc_find_fifo(int pid, struct rt_cmd_target *t)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	DIR *tasks = opendir(path);
	bool found = false;
	struct dirent *e;
	while (tasks && !found && (e = readdir(tasks)) != NULL) {
		char comm[32] = "";
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", pid, e->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		bool named = fgets(comm, sizeof(comm), f) && rt_target_is_worker_comm(comm);
		fclose(f);
		snprintf(path, sizeof(path), "/proc/%d/task/%s/fd", pid, e->d_name);
		found = named && rt_cmd_proc_find_fifo_in(path, pid, t);
	}
	if (tasks)
		closedir(tasks);
	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	return found || rt_cmd_proc_find_fifo_in(path, pid, t);
}

enum rt_cmd_proc_result
rt_cmd_proc_target(int pid, struct rt_cmd_target *t, char *why, size_t why_size)
{
	uid_t owner;
	t->pid = pid;
	if (!rt_cmd_proc_owner(pid, &owner))
		goto label_gone;
	if (!rt_cmd_proc_mine(owner)) {
		snprintf(why, why_size,
		         "belongs to another user (uid %u); " RT_CMD_NAME
		         " acts only on your own processes",
		         (unsigned)owner);
		return RT_CMD_PROC_OTHER_USER;
	}
	if (!rt_cmd_proc_has_library(pid)) {
		if (!rt_cmd_proc_owner(pid, &owner))
			goto label_gone;
		snprintf(why, why_size,
		         "does not carry libroundtrim.so (start it with '" RT_CMD_NAME
		         " run' or LD_PRELOAD)");
		return RT_CMD_PROC_NO_LIBRARY;
	}
	if (rt_cmd_proc_find_fifo(pid, t))
		return RT_CMD_PROC_TARGET;
	if (!rt_cmd_proc_owner(pid, &owner))
		goto label_gone;
	snprintf(why, why_size,
	         "carries libroundtrim.so but has no FIFO (inactive: ROUNDTRIM_MATCH or "
	         "ROUNDTRIM_DISABLE, or ROUNDTRIM_FIFO=none); nothing sent");
	return RT_CMD_PROC_NO_FIFO;
label_gone:
	snprintf(why, why_size, "no such process");
	return RT_CMD_PROC_GONE;
}

static int
rt_cmd_proc_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

int *
rt_cmd_proc_carriers(size_t *n)
{
	DIR *dir = opendir("/proc");
	int *pids = NULL;
	size_t count = 0, cap = 0;
	uid_t me = geteuid();
	*n = 0;
	if (!dir)
		rt_cmd_die("cannot read /proc: %m");
	struct dirent *e;
	while ((e = readdir(dir)) != NULL) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		uid_t owner;
		/* Only the caller's own, even for root (roundtrim(1), --all). */
		if (*end || pid <= 0 || pid == getpid() || !rt_cmd_proc_owner((int)pid, &owner) ||
		    owner != me || !rt_cmd_proc_has_library((int)pid))
			continue;
		if (count == cap) {
			cap = cap ? cap * 2 : 16;
			pids = rt_cmd_realloc(pids, cap * sizeof(*pids));
		}
		pids[count++] = (int)pid;
	}
	closedir(dir);
	if (count)
		qsort(pids, count, sizeof(*pids), rt_cmd_proc_cmp);
	*n = count;
	return pids;
}

void
rt_cmd_proc_name(int pid, char *out, size_t size)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	FILE *f = fopen(path, "re");
	if (!f || !fgets(out, (int)size, f)) {
		snprintf(out, size, "?");
	} else {
		out[strcspn(out, "\n")] = '\0';
	}
	if (f)
		fclose(f);
}
