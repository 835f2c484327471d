/* The library's tasks: the lock over their lives, the library standing down, and the program's
 * limits on tasks. A pids cgroup (pids.max) and RLIMIT_NPROC count every thread: the worker
 * (and the keeper) take the program's. At start-up the library starts only where the room left
 * holds its tasks and one more (policy/rt_limits); later, when the program's
 * own pthread_create, fork or posix_spawn fails with EAGAIN while the library holds its tasks,
 * it gives them back and the call is made again (roundtrim(7), TASK LIMITS). */
#include "rt_tasks.h"
#include "rt_config.h"
#include "rt_file_rules.h"
#include "rt_files.h"
#include "rt_keeper.h"
#include "rt_limits.h"
#include "rt_out.h"
#include "rt_pages.h"
#include "rt_procfs.h"
#include "rt_procread.h"
#include "rt_python.h"
#include "rt_real.h"
#include "rt_shim.h"
#include "rt_worker_life.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define RT_TASKS_WHY_MAX 640

static pthread_mutex_t rt_tasks_mutex = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

/* Set by rt_tasks_room_to_start where a task limit leaves room for the worker but not for the
 * keeper, and the user accepts the program's table (ROUNDTRIM_SHARED_TABLE). */
static bool rt_tasks_no_keeper;

unsigned
rt_tasks_needed(void)
{
	/* Asked before the start (the process's, or a fork child's, whose table holds none of the
	 * library's descriptors): a seccomp filter refuses unshare whatever its flags, and
	 * unshare(0) changes nothing where it is allowed. Refused, the worker will need its
	 * keeper. */
	return syscall(SYS_unshare, 0) == 0 ? 1 : rt_file_table_tasks(RT_FILE_TABLE_KEEPER);
}

unsigned
rt_tasks_held(void)
{
	return (rt_worker_life_running() ? 1U : 0U) + (rt_keeper_tid() ? 1U : 0U) +
	       rt_python_thread_held();
}

bool
rt_tasks_room_for_keeper(void)
{
	return !rt_tasks_no_keeper;
}

/* How deep the calling thread holds the (recursive) tasks' lock. */
static __thread unsigned rt_tasks_depth;

void
rt_tasks_lock(void)
{
	pthread_mutex_lock(&rt_tasks_mutex);
	rt_tasks_depth++;
}

void
rt_tasks_unlock(void)
{
	rt_tasks_depth--;
	pthread_mutex_unlock(&rt_tasks_mutex);
}

void
rt_tasks_forget_parent(void)
{
	rt_tasks_no_keeper = false;
	pthread_mutex_t fresh = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	memcpy(&rt_tasks_mutex, &fresh, sizeof(fresh));
}

/* The messages say "none": the reserve is one task. */
_Static_assert(RT_LIMITS_PROGRAM_RESERVE == 1, "rt_tasks_room_to_start's lines");

/* A count file of a cgroup directory (pids.max, pids.current). */
static bool
rt_tasks_read_count(const char *dir, const char *name, uint64_t *count)
{
	char path[RT_CONFIG_PATH_MAX + 32], text[64];
	return snprintf(path, sizeof(path), "%s/%s", dir, name) < (int)sizeof(path) &&
	       rt_procread_slurp(path, text, sizeof(text)) && rt_limits_read_count(text, count);
}

/* The least room any level of the process's pids cgroup leaves, from its own up to the top its
 * mount shows; the level that leaves it in `where`. */
static uint64_t
rt_tasks_cgroup_room(char *where, size_t size)
{
	static RT_PAGES_APART char cgroup[4096];
	static RT_PAGES_APART char mountinfo[65536];
	char dir[RT_CONFIG_PATH_MAX];
	size_t top;
	uint64_t room = RT_LIMITS_NONE;
	bool found = rt_procread_slurp("/proc/self/cgroup", cgroup, sizeof(cgroup)) &&
	             rt_procread_slurp("/proc/self/mountinfo", mountinfo, sizeof(mountinfo)) &&
	             rt_procfs_cgroup_dir(cgroup, mountinfo, "pids", dir, sizeof(dir), &top) !=
	                 RT_PROCFS_CGROUP_NONE;
	/* Read for this once: resident, they would be the library's own memory for good. */
	rt_pages_give_back(cgroup, sizeof(cgroup));
	rt_pages_give_back(mountinfo, sizeof(mountinfo));
	if (!found)
		return room;
	do {
		uint64_t max, current;
		if (!rt_tasks_read_count(dir, "pids.max", &max) ||
		    !rt_tasks_read_count(dir, "pids.current", &current))
			continue;
		uint64_t here = rt_limits_room(max, current);
		if (here < room) {
			room = here;
			snprintf(where, size, "%s", dir);
		}
	} while (rt_limits_cgroup_parent(dir, top));
	return room;
}

/* The effective capabilities of the calling thread, bit n for capability n. */
static uint64_t
rt_tasks_cap_effective(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {{0}};
	if (syscall(SYS_capget, &hdr, data) != 0)
		return 0;
	return (uint64_t)data[1].effective << 32 | data[0].effective;
}

/* The tasks of the real user that this process can see, from every /proc/PID/status. */
static uint64_t
rt_tasks_count_user(unsigned uid)
{
	uint64_t count = 0;
	DIR *d = opendir("/proc");
	if (!d)
		return count;
	struct dirent *e;
	while ((e = readdir(d))) {
		char path[64], text[2048];
		unsigned owner;
		uint64_t threads;
		if (e->d_name[0] < '1' || e->d_name[0] > '9' ||
		    snprintf(path, sizeof(path), "/proc/%s/status", e->d_name) >= (int)sizeof(path))
			continue;
		if (rt_procread_slurp(path, text, sizeof(text)) &&
		    rt_limits_status_tasks(text, &owner, &threads) && owner == uid)
			count += threads;
	}
	closedir(d);
	return count;
}

/* The room RLIMIT_NPROC leaves: RT_LIMITS_NONE where it does not bind, or where even the
 * machine's tasks leave enough (then the user's are not counted). */
static uint64_t
rt_tasks_nproc_room(unsigned tasks, uint64_t *limit)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NPROC, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return RT_LIMITS_NONE;
	struct rt_limits_user u = {.nproc = rl.rlim_cur, .cap_effective = rt_tasks_cap_effective()};
	char text[4096];
	uint64_t outside;
	unsigned uid = getuid();
	if (rt_procread_slurp("/proc/self/uid_map", text, sizeof(text)) &&
	    rt_limits_uid_map(text, uid, &outside, &u.initial_ns))
		u.real_root = outside == 0;
	uint64_t machine;
	if (!rt_limits_nproc_binds(&u) || (rt_procread_slurp("/proc/loadavg", text, sizeof(text)) &&
	                                   rt_limits_loadavg_tasks(text, &machine) &&
	                                   rt_limits_nproc_fits_anyway(u.nproc, machine, tasks)))
		return RT_LIMITS_NONE;
	*limit = u.nproc;
	return rt_limits_room(u.nproc, rt_tasks_count_user(uid));
}

/* Whether the limits leave room for tasks of the library's and one more for the program; the
 * room each leaves, and where, for the line that says why not. */
static enum rt_limits_verdict
rt_tasks_decide(unsigned tasks, uint64_t *cgroup_room, char *where, size_t size,
                uint64_t *nproc_room, uint64_t *limit)
{
	*cgroup_room = rt_tasks_cgroup_room(where, size);
	/* Counting the user's tasks walks /proc: only when the cgroup leaves room. */
	*nproc_room = rt_limits_fits(*cgroup_room, tasks) ? rt_tasks_nproc_room(tasks, limit)
	                                                  : RT_LIMITS_NONE;
	return rt_limits_decide(*cgroup_room, *nproc_room, tasks);
}

bool
rt_tasks_room_to_start(const struct rt_config *cfg)
{
	/* The Python thread is started with the worker, in the same limits. */
	unsigned python = rt_python_thread_needed(cfg);
	unsigned tasks = rt_tasks_needed() + python;
	char where[RT_CONFIG_PATH_MAX] = "", unused[RT_CONFIG_PATH_MAX];
	uint64_t limit = 0, cgroup_room, nproc_room, room1, limit1;
	enum rt_limits_verdict verdict =
	    rt_tasks_decide(tasks, &cgroup_room, where, sizeof(where), &nproc_room, &limit);
	/* No room for the keeper but for the worker: the program's table, where it is accepted. */
	bool one_fits = tasks > 1 + python && verdict != RT_LIMITS_START &&
	                rt_tasks_decide(1 + python, &room1, unused, sizeof(unused), &room1,
	                                &limit1) == RT_LIMITS_START;
	rt_tasks_no_keeper = one_fits && cfg->shared_table;
	const char *hint = one_fits ? "; ROUNDTRIM_SHARED_TABLE=1 runs it with the worker alone, "
	                              "in the program's descriptor table"
	                            : "";
	switch (rt_tasks_no_keeper ? RT_LIMITS_START : verdict) {
	case RT_LIMITS_START:
		return true;
	case RT_LIMITS_CGROUP_FULL:
		rt_warn("inactive: the pids cgroup %s has room for %" PRIu64
		        " more task(s), and the library's %u would leave the program none%s",
		        where, cgroup_room, tasks, hint);
		break;
	case RT_LIMITS_NPROC_FULL:
		rt_warn(
		    "inactive: RLIMIT_NPROC (%" PRIu64 ") has room for %" PRIu64
		    " more task(s) of uid %u, and the library's %u would leave the program none%s",
		    limit, nproc_room, getuid(), tasks, hint);
		break;
	}
	return false;
}

/* rt_tasks_stand_down, waiting for the library's Python thread only where await_python. */
static bool
rt_tasks_stand_down_as(const char *why, bool await_python)
{
	rt_tasks_lock();
	/* The worker first: it may be asking the keeper for a call. */
	bool gone = rt_worker_life_stop();
	gone = rt_keeper_stop() && gone;
	rt_python_thread_stop();
	bool was_active = atomic_exchange(&rt_shim_active, false);
	if (was_active) {
		/* Nobody would serve a request sent through them any more. */
		rt_files_remove();
		rt_warn("stood down: %s; the program runs on without the library", why);
	}
	rt_tasks_unlock();
	/* Only outside every hold of the lock (a credential call stands down inside its own): a
	 * finalizer that the Python thread runs may take it. Bounded: a caller without the GIL
	 * waits for the steps the thread is out on; one that may hold it (CPython makes
	 * pthread_create and fork holding it) does not: that thread leaves by itself, running
	 * nothing once it has the GIL back, and the call made again finds room or fails as it
	 * would have while the thread was there. */
	if (await_python && rt_tasks_depth == 0)
		rt_python_thread_await();
	return gone;
}

bool
rt_tasks_stand_down(const char *why)
{
	return rt_tasks_stand_down_as(why, true);
}

bool
rt_tasks_give_back(const char *call)
{
	if (!rt_tasks_held() || rt_worker_life_is_self())
		return false;
	char why[RT_TASKS_WHY_MAX];
	snprintf(why, sizeof(why),
	         "the program's %s found no room for a task (EAGAIN) while the library held %u: "
	         "they are given back and the call made again",
	         call, rt_tasks_held());
	/* The worker's and the keeper's tasks are enough for one more, mostly: the Python thread
	 * is waited for only if the call made again still finds no room (rt_tasks_more_room). A
	 * finalizer it runs may wait on a lock the caller holds. */
	return rt_tasks_stand_down_as(why, false);
}

bool
rt_tasks_more_room(void)
{
	return rt_tasks_depth == 0 && rt_python_thread_await();
}

/* --- The program's calls that start a task. */

int
rt_tasks_create_thread(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *),
                       void *arg)
{
	rt_real_resolve();
	return rt_real.pthread_create ? rt_real.pthread_create(thread, attr, start, arg) : EAGAIN;
}

RT_EXPORT int
pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg)
{
	int err = rt_tasks_create_thread(thread, attr, start, arg);
	if (err == EAGAIN && rt_tasks_give_back("pthread_create")) {
		err = rt_tasks_create_thread(thread, attr, start, arg);
		if (err == EAGAIN && rt_tasks_more_room())
			err = rt_tasks_create_thread(thread, attr, start, arg);
	}
	return err;
}

/* CPython 3.11 ends a thread that takes the GIL back once the interpreter finalises with
 * pthread_exit, whose forced unwind runs through every frame above: on the library's Python
 * thread those are a finalizer's, and a C++ destructor among them (pybind11's
 * gil_scoped_release, around every PyTorch op) is noexcept: std::terminate, SIGABRT, where the
 * program without the library exits with its own status. That thread leaves those frames
 * behind instead, as CPython 3.14 leaves its own threads hanging there, and ends only when a
 * call of the program's needs it gone or a new interpreter is up (rt_python_thread_park). */
RT_EXPORT void
pthread_exit(void *retval)
{
	/* libc's, looked up at the first call: at start-up the lookup cost every process 450
	 * instructions, more than the start's budget had left (scripts/instructions.sh). */
	static void *_Atomic real_exit;
	if (rt_python_thread_is_self())
		rt_python_thread_park();
	void (*real)(void *);
	*(void **)&real = rt_real_lookup_next_once(&real_exit, "pthread_exit");
	if (real)
		real(retval);
	/* glibc always has it: the thread cannot end without it, and must not return. */
	for (;;)
		pause();
}

RT_EXPORT pid_t
fork(void)
{
	rt_real_resolve();
	if (!rt_real.fork) {
		errno = ENOSYS;
		return -1;
	}
	pid_t pid = rt_real.fork();
	if (pid < 0 && errno == EAGAIN && rt_tasks_give_back("fork")) {
		pid = rt_real.fork();
		if (pid < 0 && errno == EAGAIN && rt_tasks_more_room())
			pid = rt_real.fork();
	}
	return pid;
}
