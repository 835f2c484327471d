/* creds: a program that changes its uid and gid, as container entrypoints and servers do, in one
 * of the ways glibc supports, and reports what came of it. Run as root.
 *   creds SEQUENCE [--thread] [--busy] [--no-trim]
 * SEQUENCE (N is 65534, nobody/nogroup):
 *   setpriv      PR_SET_KEEPCAPS, setresuid(N), capset (effective = permitted, this thread
 *                only), setresgid(N), setgroups(0): setpriv --reuid --regid --clear-groups
 *   su-exec      setgroups({N}), setgid(N), setuid(N): su-exec's and gosu's order
 *   resids       setresgid(N), setresuid(N)
 *   none         no call (a program that setpriv or su-exec started as N)
 *   uid-first    setresuid(N), then setresgid(N), which fails (EPERM) without capabilities
 *   keepcaps     PR_SET_KEEPCAPS, setuid(N), capset raising CAP_SETGID alone, setgid(N)
 *   setuid, setgid, seteuid (to N and back to 0), setegid (likewise), setreuid, setregid,
 *   setgroups ({N, 100}), initgroups ("nobody", N)
 *   capdrop      capset dropping CAP_SETUID in this thread, then setuid(N): EPERM
 *   outlived     a thread started first keeps every capability; this one drops CAP_SETUID
 *                for good and calls setgid(N); then that thread calls setgroups({N}): it holds
 *                a capability the other threads have lost
 *   ambient      capset adding CAP_NET_BIND_SERVICE to the inheritable set, raises it in the
 *                ambient set, sets SECBIT_NO_CAP_AMBIENT_RAISE, then setgid(getgid())
 *   bsetlocked   sets SECBIT_KEEP_CAPS_LOCKED (keep-caps off for good), setgid(getgid()),
 *                drops CAP_SYS_BOOT from the bounding set, then setresuid(N): every capability
 *                goes with root
 *   manygroups   setgroups with 1,100 groups (1000..2099), more than 1,024
 * --thread runs the sequence in a thread of its own after the main thread has ended
 * (pthread_exit); --no-trim asks for no trim at the end (no record: "api=skipped"); --busy asks the
 * library for a trim (roundtrim_trim) while a thread churns the heap, which has 64 MiB of holes,
 * right before, so that the calls come while the worker acts. Prints one line per call, "NAME=0" or
 * "NAME=-1 ERRNO", then one line per running thread of the program (the library's worker and keeper
 * aside, by tid), "thread Uid=... Gid=... Groups=... CapInh=... CapPrm=... CapEff=... CapBnd=...
 * CapAmb=...", then "caller ..." with the thread that ran the sequence, "worker ..." with the
 * worker's when it runs, "keeper ..." with the keeper's when it runs, then "api=acted" once a trim
 * asked afterwards was acted on, "api=off" when the library refuses requests, or "api=none" without
 * the library. */
#include "options.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define CREDS_ID 65534
#define CREDS_CAP_SETGID 6
#define CREDS_CAP_SETUID 7
#define CREDS_CAP_NET_BIND_SERVICE 10
#define CREDS_CAP_SYS_BOOT 22
#define CREDS_MANY_GROUPS 1100

static const char *sequence;
static atomic_int stop_busy;
static char report[4096];
static size_t report_len;

static void
note(const char *name, int ret)
{
	int n = ret == 0
	            ? snprintf(report + report_len, sizeof(report) - report_len, "%s=0\n", name)
	            : snprintf(report + report_len, sizeof(report) - report_len, "%s=-1 %s\n", name,
	                       strerrorname_np(errno));
	if (n > 0 && (size_t)n < sizeof(report) - report_len)
		report_len += (size_t)n;
}

/* The calling thread's capability sets, changed by `change`, set again (this thread only). */
static int
caps_change(void (*change)(struct __user_cap_data_struct *))
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	if (syscall(SYS_capget, &hdr, data) != 0)
		return -1;
	change(data);
	return (int)syscall(SYS_capset, &hdr, data);
}

static void
effective_all(struct __user_cap_data_struct *d)
{
	d[0].effective = d[0].permitted;
	d[1].effective = d[1].permitted;
}

static void
effective_setgid(struct __user_cap_data_struct *d)
{
	d[0].effective = d[0].permitted & (1u << CREDS_CAP_SETGID);
	d[1].effective = 0;
}

static void
drop_setuid(struct __user_cap_data_struct *d)
{
	d[0].effective &= ~(1u << CREDS_CAP_SETUID);
	d[0].permitted &= ~(1u << CREDS_CAP_SETUID);
}

static void
inheritable_net_bind(struct __user_cap_data_struct *d)
{
	d[0].inheritable |= 1u << CREDS_CAP_NET_BIND_SERVICE;
}

static pthread_mutex_t outlived_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t outlived_cond = PTHREAD_COND_INITIALIZER;
static int outlived_stage;

static void
outlived_wait(int stage)
{
	pthread_mutex_lock(&outlived_lock);
	while (outlived_stage < stage)
		pthread_cond_wait(&outlived_cond, &outlived_lock);
	pthread_mutex_unlock(&outlived_lock);
}

static void
outlived_go(int stage)
{
	pthread_mutex_lock(&outlived_lock);
	outlived_stage = stage;
	pthread_cond_broadcast(&outlived_cond);
	pthread_mutex_unlock(&outlived_lock);
}

/* Started before any change: it keeps every capability it was born with. */
static void *
outlived_thread(void *arg)
{
	(void)arg;
	outlived_wait(1);
	gid_t groups[] = {CREDS_ID};
	note("setgroups", setgroups(1, groups));
	outlived_go(2);
	return NULL;
}

static int
run_sequence(void)
{
	gid_t none[1] = {0};
	gid_t one[] = {CREDS_ID};
	gid_t two[] = {CREDS_ID, 100};
	if (!strcmp(sequence, "setpriv")) {
		note("keepcaps", prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0));
		note("setresuid", setresuid(CREDS_ID, CREDS_ID, CREDS_ID));
		note("capset", caps_change(effective_all));
		note("setresgid", setresgid(CREDS_ID, CREDS_ID, CREDS_ID));
		note("setgroups", setgroups(0, none));
	} else if (!strcmp(sequence, "su-exec")) {
		note("setgroups", setgroups(1, one));
		note("setgid", setgid(CREDS_ID));
		note("setuid", setuid(CREDS_ID));
	} else if (!strcmp(sequence, "resids")) {
		note("setresgid", setresgid(CREDS_ID, CREDS_ID, CREDS_ID));
		note("setresuid", setresuid(CREDS_ID, CREDS_ID, CREDS_ID));
	} else if (!strcmp(sequence, "none")) {
	} else if (!strcmp(sequence, "uid-first")) {
		note("setresuid", setresuid(CREDS_ID, CREDS_ID, CREDS_ID));
		note("setresgid", setresgid(CREDS_ID, CREDS_ID, CREDS_ID));
	} else if (!strcmp(sequence, "keepcaps")) {
		note("keepcaps", prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0));
		note("setuid", setuid(CREDS_ID));
		note("capset", caps_change(effective_setgid));
		note("setgid", setgid(CREDS_ID));
	} else if (!strcmp(sequence, "setuid")) {
		note("setuid", setuid(CREDS_ID));
	} else if (!strcmp(sequence, "setgid")) {
		note("setgid", setgid(CREDS_ID));
	} else if (!strcmp(sequence, "seteuid")) {
		note("seteuid", seteuid(CREDS_ID));
		note("seteuid", seteuid(0));
	} else if (!strcmp(sequence, "setegid")) {
		note("setegid", setegid(CREDS_ID));
		note("setegid", setegid(0));
	} else if (!strcmp(sequence, "setreuid")) {
		note("setreuid", setreuid(CREDS_ID, CREDS_ID));
	} else if (!strcmp(sequence, "setregid")) {
		note("setregid", setregid(CREDS_ID, CREDS_ID));
	} else if (!strcmp(sequence, "setgroups")) {
		note("setgroups", setgroups(2, two));
	} else if (!strcmp(sequence, "initgroups")) {
		note("initgroups", initgroups("nobody", CREDS_ID));
	} else if (!strcmp(sequence, "capdrop")) {
		note("capset", caps_change(drop_setuid));
		note("setuid", setuid(CREDS_ID));
	} else if (!strcmp(sequence, "ambient")) {
		note("capset", caps_change(inheritable_net_bind));
		note("ambient",
		     prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CREDS_CAP_NET_BIND_SERVICE, 0, 0));
		note("securebits", prctl(PR_SET_SECUREBITS, SECBIT_NO_CAP_AMBIENT_RAISE, 0, 0, 0));
		note("setgid", setgid(getgid()));
	} else if (!strcmp(sequence, "bsetlocked")) {
		note("securebits", prctl(PR_SET_SECUREBITS, SECBIT_KEEP_CAPS_LOCKED, 0, 0, 0));
		note("setgid", setgid(getgid()));
		note("capbset", prctl(PR_CAPBSET_DROP, CREDS_CAP_SYS_BOOT, 0, 0, 0));
		note("setresuid", setresuid(CREDS_ID, CREDS_ID, CREDS_ID));
	} else if (!strcmp(sequence, "manygroups")) {
		static gid_t many[CREDS_MANY_GROUPS];
		for (int i = 0; i < CREDS_MANY_GROUPS; i++)
			many[i] = (gid_t)(1000 + i);
		note("setgroups", setgroups(CREDS_MANY_GROUPS, many));
	} else if (!strcmp(sequence, "outlived")) {
		note("capset", caps_change(drop_setuid));
		note("setgid", setgid(CREDS_ID));
		outlived_go(1);
		outlived_wait(2);
	} else {
		return 2;
	}
	return 0;
}

static atomic_int busy_tid;

static void *
busy_thread(void *arg)
{
	atomic_store(&busy_tid, (int)syscall(SYS_gettid));
	wl_churn(&stop_busy);
	return arg;
}

/* pthread_join returns once the kernel has cleared the thread's tid, before its task leaves
 * /proc/self/task: waits (5 s at most) until it has, so that the listing of the program's
 * threads never shows the churner with the credentials it had when it ended. */
static void
busy_thread_gone(void)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d", atomic_load(&busy_tid));
	struct timespec tick = {0, 1000 * 1000};
	for (int i = 0; i < 5000 && access(path, F_OK) == 0; i++)
		nanosleep(&tick, NULL);
}

/* A heap with 64 MiB of holes, so that a trim has something to walk. */
static void
fragment(void)
{
	enum { N = 16384 };
	static void *blocks[N];
	for (int i = 0; i < N; i++) {
		blocks[i] = malloc(4096);
		memset(blocks[i], 2, 4096);
	}
	for (int i = 0; i < N; i++)
		if (i % 10)
			free(blocks[i]);
}

/* A value of /proc/PID/status, blanks as commas; a long one (many groups) as its length and an
 * FNV-1a hash, which compare alike. */
static void
print_value(const char *v, const char *end)
{
	if (end - v > 200) {
		uint32_t hash = 2166136261u;
		for (const char *c = v; c < end; c++)
			hash = (hash ^ (unsigned char)*c) * 16777619u;
		printf("%d-bytes-%08x", (int)(end - v), hash);
		return;
	}
	for (const char *c = v; c < end; c++)
		putchar(*c == '\t' || *c == ' ' ? ',' : *c);
}

static void
print_status_of(const char *tid, const char *label)
{
	static char text[64 * 1024];
	char path[128];
	snprintf(path, sizeof(path), "/proc/self/task/%s/status", tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	/* A main thread that has ended took the changes made before its end only: by chance. */
	if (strstr(text, "\nState:\tZ"))
		return;
	static const char *const keys[] = {"Uid",    "Gid",    "Groups", "CapInh",
	                                   "CapPrm", "CapEff", "CapBnd", "CapAmb"};
	printf("%s", label);
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		size_t klen = strlen(keys[k]);
		for (char *line = text; line && *line;) {
			char *end = strchr(line, '\n');
			if (!strncmp(line, keys[k], klen) && line[klen] == ':') {
				char *v = line + klen + 1;
				while (*v == '\t' || *v == ' ')
					v++;
				printf(" %s=", keys[k]);
				print_value(v, end ? end : v + strlen(v));
				break;
			}
			line = end ? end + 1 : NULL;
		}
	}
	printf("\n");
}

static int
tid_order(const void *a, const void *b)
{
	return atoi(*(char *const *)a) - atoi(*(char *const *)b);
}

/* Every thread of the program, in the order they were made; the library's apart. */
static void
print_threads(void)
{
	char comm_path[128], comm[32], *tids[64];
	size_t n = 0;
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	while (d && (e = readdir(d)) && n < 64)
		if (e->d_name[0] != '.')
			tids[n++] = strdup(e->d_name);
	if (d)
		closedir(d);
	qsort(tids, n, sizeof(tids[0]), tid_order);
	char *worker = NULL, *keeper = NULL, self[16];
	for (size_t i = 0; i < n; i++) {
		snprintf(comm_path, sizeof(comm_path), "/proc/self/task/%s/comm", tids[i]);
		FILE *f = fopen(comm_path, "r");
		bool named = f && fgets(comm, sizeof(comm), f);
		if (f)
			fclose(f);
		if (named && !strcmp(comm, "roundtrim\n"))
			worker = tids[i];
		else if (named && !strcmp(comm, "roundtrim-fds\n"))
			keeper = tids[i];
		else
			print_status_of(tids[i], "thread");
	}
	snprintf(self, sizeof(self), "%d", (int)gettid());
	print_status_of(self, "caller");
	if (worker)
		print_status_of(worker, "worker");
	if (keeper)
		print_status_of(keeper, "keeper");
	for (size_t i = 0; i < n; i++)
		free(tids[i]);
}

/* The number after "actions": in the library's status, -1 when unreadable. */
static long
actions(int (*status)(char *, size_t))
{
	char json[4096];
	if (status(json, sizeof(json)) < 0)
		return -1;
	const char *at = strstr(json, "\"actions\":");
	return at ? atol(at + 10) : -1;
}

static int no_trim;

static const char *
api_after(void)
{
	int (*trim)(void) = (int (*)(void))(uintptr_t)dlsym(RTLD_DEFAULT, "roundtrim_trim");
	int (*status)(char *, size_t) =
	    (int (*)(char *, size_t))(uintptr_t)dlsym(RTLD_DEFAULT, "roundtrim_status_json");
	if (!trim || !status)
		return "none";
	long before = actions(status);
	if (before < 0 || trim() != 0)
		return "off";
	for (int i = 0; i < 2000; i++) {
		struct timespec ms = {0, 10 * 1000 * 1000};
		if (actions(status) > before)
			return "acted";
		nanosleep(&ms, NULL);
	}
	return "stuck";
}

/* With the library: waits until it has published its status, which its worker does once it
 * runs, named, in its loop. */
static void
await_library(void)
{
	int (*status)(char *, size_t) =
	    (int (*)(char *, size_t))(uintptr_t)dlsym(RTLD_DEFAULT, "roundtrim_status_json");
	for (int i = 0; status && i < 2000 && status(NULL, 0) <= 0; i++) {
		struct timespec ms = {0, 1000 * 1000};
		nanosleep(&ms, NULL);
	}
}

static pthread_t outlived_t;

/* Until the main thread, which called pthread_exit, has ended: before, glibc would still apply
 * the changes to it, and its capabilities differ. */
static void
await_main_end(void)
{
	char path[64], text[512];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)getpid());
	for (int i = 0; i < 10000; i++) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
		if (f)
			fclose(f);
		text[n] = '\0';
		const char *state = strrchr(text, ')');
		if (!state || !strncmp(state, ") Z", 3))
			return;
		struct timespec ms = {0, 1000 * 1000};
		nanosleep(&ms, NULL);
	}
}

/* The sequence and its report, in whichever thread runs it; ends the process. */
static void *
finish(void *after_main)
{
	if (after_main)
		await_main_end();
	int ret = run_sequence();
	if (!strcmp(sequence, "outlived"))
		pthread_join(outlived_t, NULL);
	if (ret != 0)
		exit(ret);
	fputs(report, stdout);
	print_threads();
	printf("api=%s\n", no_trim ? "skipped" : api_after());
	exit(0);
}

int
main(int argc, char **argv)
{
	int in_thread = 0, busy = 0;
	const struct wl_option options[] = {
	    {"thread", WL_OPT_SET, &in_thread},
	    {"busy", WL_OPT_SET, &busy},
	    {"no-trim", WL_OPT_SET, &no_trim},
	};
	if (argc < 2 || !WL_PARSE_OPTIONS(argc - 1, argv + 1, options)) {
		fprintf(stderr, "usage: creds SEQUENCE [--thread] [--busy] [--no-trim]\n");
		return 2;
	}
	sequence = argv[1];
	await_library();
	if (!strcmp(sequence, "outlived"))
		pthread_create(&outlived_t, NULL, outlived_thread, NULL);
	if (busy) {
		/* The churn makes the worker wait for a quiet moment, then the trim walks the
		 * holes; the churner ends before the sequence, since a thread of the program that
		 * kept its capabilities while another changed them would make glibc abort on its
		 * own. */
		fragment();
		pthread_t churner;
		pthread_create(&churner, NULL, busy_thread, NULL);
		int (*trim)(void) = (int (*)(void))(uintptr_t)dlsym(RTLD_DEFAULT, "roundtrim_trim");
		if (trim)
			trim();
		atomic_store(&stop_busy, 1);
		pthread_join(churner, NULL);
		busy_thread_gone();
	}
	if (!in_thread)
		finish(NULL);
	/* The main thread leaves: the sequence's thread is the program's only one that runs. */
	pthread_t t;
	pthread_create(&t, NULL, finish, &in_thread);
	pthread_exit(NULL);
}
