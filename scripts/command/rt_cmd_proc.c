#include "rt_cmd_proc.h"

#include "rt_child.h"
#include "rt_cmd.h"
#include "rt_preload.h"
#include "rt_target.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
rt_cmd_proc_is_fork_child(int pid, int fork_of)
{
	struct rt_procfs_stat st, pst;
	if (!fork_of || !rt_cmd_proc_stat(pid, &st) || !rt_cmd_proc_stat(st.ppid, &pst))
		return false;
	struct rt_child_proc child = {
	    .pid = pid, .ppid = st.ppid, .session = st.sid, .fork_of = fork_of};
	struct rt_child_proc parent = {.pid = st.ppid, .session = pst.sid};
	return rt_child_is_fork_of(&child, &parent);
}

/* Calls visit with each of the library's threads of pid (its name says so; the main thread bears
 * the program's name, which may be anything, and is never one) until visit returns true. */
static bool
rt_cmd_proc_any_library_thread(int pid, bool (*visit)(int pid, const char *tid, void *arg),
                               void *arg)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	DIR *tasks = opendir(path);
	bool found = false;
	struct dirent *e;
	while (tasks && !found && (e = readdir(tasks)) != NULL) {
		char comm[32] = "";
		if (e->d_name[0] == '.' || atoi(e->d_name) == pid)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", pid, e->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		bool named = fgets(comm, sizeof(comm), f) && rt_target_is_library_comm(comm);
		fclose(f);
		found = named && visit(pid, e->d_name, arg);
	}
	if (tasks)
		closedir(tasks);
	return found;
}

static bool
rt_cmd_proc_is_any(int pid, const char *tid, void *arg)
{
	(void)pid, (void)tid, (void)arg;
	return true;
}

bool
rt_cmd_proc_has_library_thread(int pid)
{
	return rt_cmd_proc_any_library_thread(pid, rt_cmd_proc_is_any, NULL);
}

bool
rt_cmd_proc_rss_kib(int pid, uint64_t *kib)
{
	char path[64], text[256];
	snprintf(path, sizeof(path), "/proc/%d/statm", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t len = rt_cmd_read_fd(fd, text, sizeof(text) - 1);
	close(fd);
	text[len > 0 ? len : 0] = '\0';
	return len > 0 && rt_procfs_statm_rss_kib(text, (uint64_t)sysconf(_SC_PAGESIZE), kib);
}

bool
rt_cmd_proc_stat(int pid, struct rt_procfs_stat *out)
{
	char path[64], stat_line[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, stat_line, sizeof(stat_line) - 1);
	close(fd);
	if (n <= 0)
		return false;
	stat_line[n] = '\0';
	return rt_procfs_stat(stat_line, out) && out->pid == pid;
}

bool
rt_cmd_proc_alive(int pid)
{
	struct rt_procfs_stat p;
	return rt_cmd_proc_stat(pid, &p) && rt_target_alive(&p);
}

/* The pids that /proc lists, in its order; *n of them. */
static int *
rt_cmd_proc_pids(size_t *n)
{
	DIR *dir = opendir("/proc");
	int *pids = NULL;
	size_t count = 0, cap = 0;
	if (!dir)
		rt_cmd_die("cannot read /proc: %m");
	struct dirent *e;
	while ((e = readdir(dir)) != NULL) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0 || pid > INT_MAX)
			continue;
		if (count == cap) {
			cap = cap ? cap * 2 : 256;
			pids = rt_cmd_realloc(pids, cap * sizeof(*pids));
		}
		pids[count++] = (int)pid;
	}
	closedir(dir);
	*n = count;
	return pids;
}

static int
rt_cmd_proc_entry_cmp(const void *a, const void *b)
{
	int x = ((const struct rt_procfs_stat *)a)->pid,
	    y = ((const struct rt_procfs_stat *)b)->pid;
	return (x > y) - (x < y);
}

struct rt_procfs_stat *
rt_cmd_proc_table(size_t *n)
{
	size_t count;
	int *pids = rt_cmd_proc_pids(&count);
	struct rt_procfs_stat *table = rt_cmd_alloc((count ? count : 1) * sizeof(*table));
	*n = 0;
	for (size_t i = 0; i < count; i++)
		if (rt_cmd_proc_stat(pids[i], &table[*n]))
			(*n)++;
	free(pids);
	qsort(table, *n, sizeof(*table), rt_cmd_proc_entry_cmp);
	return table;
}

bool
rt_cmd_proc_cgroup(int pid, char *out, size_t size)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t len = rt_cmd_read_fd(fd, out, size - 1);
	close(fd);
	out[len > 0 ? len : 0] = '\0';
	return len > 0;
}

struct rt_target_mount *
rt_cmd_proc_cgroup_mounts(size_t *n)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	struct rt_target_mount *mounts = NULL;
	char *line = NULL;
	size_t cap = 0, line_size = 0;
	*n = 0;
	if (!f)
		return rt_cmd_alloc(sizeof(*mounts));
	while (getline(&line, &line_size, f) > 0) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			mounts = rt_cmd_realloc(mounts, cap * sizeof(*mounts));
		}
		if (rt_target_parse_mount(line, &mounts[*n]))
			(*n)++;
	}
	free(line);
	fclose(f);
	return mounts ? mounts : rt_cmd_alloc(sizeof(*mounts));
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

static bool
rt_cmd_proc_find_fifo_of_thread(int pid, const char *tid, void *target)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "/proc/%d/task/%s/fd", pid, tid);
	return rt_cmd_proc_find_fifo_in(path, pid, target);
}

/* The library keeps its descriptors in a table of its own, which only the listing of the thread
 * that holds it shows (/proc/PID/task/TID/fd): the worker (RT_FILE_WORKER_THREAD), or where the
 * kernel refused it one the keeper (RT_FILE_KEEPER_THREAD); where neither could have one, they
 * are in the process's (/proc/PID/fd). */
static bool
rt_cmd_proc_find_fifo(int pid, struct rt_cmd_target *t)
{
	char path[PATH_MAX];
	if (rt_cmd_proc_any_library_thread(pid, rt_cmd_proc_find_fifo_of_thread, t))
		return true;
	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	return rt_cmd_proc_find_fifo_in(path, pid, t);
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
	size_t count;
	int *pids = rt_cmd_proc_pids(&count);
	uid_t me = geteuid();
	*n = 0;
	for (size_t i = 0; i < count; i++) {
		uid_t owner;
		/* Only the caller's own, even for root (roundtrim(1), --all). */
		if (pids[i] == getpid() || !rt_cmd_proc_owner(pids[i], &owner) || owner != me ||
		    !rt_cmd_proc_has_library(pids[i]))
			continue;
		pids[(*n)++] = pids[i];
	}
	if (*n)
		qsort(pids, *n, sizeof(*pids), rt_cmd_proc_cmp);
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
