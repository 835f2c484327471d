/* storm: sends rounds, trims and (with --signal) the trigger signal to every process that has a
 * FIFO in one directory, over and over, until SIGTERM or SIGINT; then prints what it did.
 *
 * Usage: storm [--interval-ms N] [--trim-every K] [--signal] [--log FILE] DIR
 *
 * Every sweep reads DIR and, for each PID.fifo, opens the FIFO with O_NONBLOCK (a FIFO that
 * nobody reads fails at once with ENXIO: the process is gone or has not opened it yet), writes
 * "round" (every K-th sweep "trim") and closes it. With --signal it also sends the signal named
 * in DIR/PID.status ("signal":N, N > 0), but only to a process whose /proc/PID/maps holds
 * libroundtrim.so: an unhandled real-time signal kills a process without the library. The pid
 * is pinned with pidfd_open first, so a pid reused between the checks and the send gets
 * nothing (pidfd_send_signal fails with ESRCH). --log appends a line for each new pid (its
 * program) and for each pid's first signal, to match a death to the process that had it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define STORM_PID_LIMIT (1 << 22) /* the kernel's pid_max ceiling */
#define STORM_PROGRAMS 128

struct storm_program {
	char name[32];
	unsigned long pids;
};

struct storm_counts {
	unsigned long sweeps;
	unsigned long lines;          /* lines written whole */
	unsigned long no_reader;      /* ENXIO: FIFO not (or no longer) read */
	unsigned long full;           /* EAGAIN: the reader is behind */
	unsigned long gone;           /* ENOENT, ESRCH: the process left meanwhile */
	unsigned long other_errors;   /* anything else */
	unsigned long signals;        /* signals delivered */
	unsigned long signal_refused; /* FIFO present, but no library in maps or signal off */
	unsigned long pids;           /* distinct pids that had a FIFO */
	struct storm_program programs[STORM_PROGRAMS];
	size_t nprograms;
};

static volatile sig_atomic_t storm_stop;
static unsigned char *storm_seen;      /* bit per pid: had a FIFO */
static unsigned char *storm_signalled; /* bit per pid: got a signal */
static struct storm_counts storm_counts;
static FILE *storm_log;

static void
storm_on_stop(int sig)
{
	(void)sig;
	storm_stop = 1;
}

static ssize_t
storm_read_small(int dirfd, const char *path, char *buf, size_t size)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/* The string value of "key":"..." in the status JSON, copied into out ("?" if absent). */
static void
storm_json_string(const char *json, const char *key, char *out, size_t size)
{
	char pattern[64];
	snprintf(pattern, sizeof(pattern), "\"%s\":\"", key);
	const char *at = strstr(json, pattern);
	snprintf(out, size, "?");
	if (!at)
		return;
	at += strlen(pattern);
	size_t len = strcspn(at, "\"");
	if (len >= size)
		len = size - 1;
	memcpy(out, at, len);
	out[len] = '\0';
}

static long
storm_json_number(const char *json, const char *key)
{
	char pattern[64];
	snprintf(pattern, sizeof(pattern), "\"%s\":", key);
	const char *at = strstr(json, pattern);
	return at ? strtol(at + strlen(pattern), NULL, 10) : -1;
}

/* Whether the process's current image maps the library (the pid is pinned by the caller). */
static bool
storm_maps_library(int pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	char line[4096];
	bool found = false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, "/libroundtrim.so") != NULL;
	fclose(f);
	return found;
}

/* Sets the pid's bit; returns whether it was clear. */
static bool
storm_first(unsigned char *bits, int pid)
{
	unsigned char bit = (unsigned char)(1u << (pid % 8));
	bool first = !(bits[pid / 8] & bit);
	bits[pid / 8] |= bit;
	return first;
}

static void
storm_note_program(const char *name)
{
	struct storm_counts *c = &storm_counts;
	for (size_t i = 0; i < c->nprograms; i++) {
		if (strcmp(c->programs[i].name, name) == 0) {
			c->programs[i].pids++;
			return;
		}
	}
	if (c->nprograms == STORM_PROGRAMS)
		name = "(others)";
	else
		c->nprograms++;
	struct storm_program *p = &c->programs[c->nprograms - 1];
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->pids++;
}

/* First sight of a pid: count it, and its program as the status file names it. */
static void
storm_first_sight(int dirfd, int pid)
{
	if (!storm_first(storm_seen, pid))
		return;
	storm_counts.pids++;
	char status_name[64], json[4096], program[32];
	snprintf(status_name, sizeof(status_name), "%d.status", pid);
	if (storm_read_small(dirfd, status_name, json, sizeof(json)) > 0)
		storm_json_string(json, "program", program, sizeof(program));
	else
		snprintf(program, sizeof(program), "?");
	storm_note_program(program);
	if (storm_log) {
		fprintf(storm_log, "pid %d program %s\n", pid, program);
		fflush(storm_log);
	}
}

static void
storm_send_line(int dirfd, const char *fifo_name, const char *line)
{
	int fd = openat(dirfd, fifo_name, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		if (errno == ENXIO)
			storm_counts.no_reader++;
		else if (errno == ENOENT)
			storm_counts.gone++;
		else
			storm_counts.other_errors++;
		return;
	}
	size_t len = strlen(line);
	ssize_t n = write(fd, line, len);
	if (n == (ssize_t)len)
		storm_counts.lines++;
	else if (n < 0 && errno == EAGAIN)
		storm_counts.full++;
	else if (n < 0 && errno == EPIPE)
		storm_counts.gone++;
	else
		storm_counts.other_errors++;
	close(fd);
}

static void
storm_send_signal(int dirfd, int pid)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		storm_counts.gone++;
		return;
	}
	char status_name[64], json[4096];
	snprintf(status_name, sizeof(status_name), "%d.status", pid);
	long sig = -1;
	if (storm_read_small(dirfd, status_name, json, sizeof(json)) > 0)
		sig = storm_json_number(json, "signal");
	if (sig > 0 && sig < 65 && storm_maps_library(pid)) {
		if (syscall(SYS_pidfd_send_signal, pidfd, (int)sig, NULL, 0) == 0) {
			storm_counts.signals++;
			if (storm_log && storm_first(storm_signalled, pid)) {
				fprintf(storm_log, "pid %d signal %ld\n", pid, sig);
				fflush(storm_log);
			}
		} else if (errno == ESRCH)
			storm_counts.gone++;
		else
			storm_counts.other_errors++;
	} else {
		storm_counts.signal_refused++;
	}
	close(pidfd);
}

static void
storm_sweep(const char *dir, bool trim, bool with_signal)
{
	int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dirfd < 0 ? NULL : fdopendir(dirfd);
	if (!d) {
		if (dirfd >= 0)
			close(dirfd);
		storm_counts.other_errors++;
		return;
	}
	struct dirent *entry;
	while (!storm_stop && (entry = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(entry->d_name, &end, 10);
		if (end == entry->d_name || strcmp(end, ".fifo") != 0 || pid <= 0 ||
		    pid >= STORM_PID_LIMIT)
			continue;
		storm_first_sight(dirfd, (int)pid);
		storm_send_line(dirfd, entry->d_name, trim ? "trim\n" : "round\n");
		if (with_signal)
			storm_send_signal(dirfd, (int)pid);
	}
	closedir(d);
	storm_counts.sweeps++;
}

static void
storm_print(bool with_signal)
{
	const struct storm_counts *c = &storm_counts;
	printf("sweeps %lu\npids %lu\nlines %lu\nno_reader %lu\nfull %lu\ngone %lu\n"
	       "other_errors %lu\n",
	       c->sweeps, c->pids, c->lines, c->no_reader, c->full, c->gone, c->other_errors);
	if (with_signal)
		printf("signals %lu\nsignal_refused %lu\n", c->signals, c->signal_refused);
	for (size_t i = 0; i < c->nprograms; i++)
		printf("program %s %lu\n", c->programs[i].name, c->programs[i].pids);
}

static void
storm_usage(void)
{
	fprintf(stderr,
	        "usage: storm [--interval-ms N] [--trim-every K] [--signal] [--log FILE] DIR\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	long interval_ms = 20, trim_every = 4;
	bool with_signal = false;
	const char *dir = NULL, *log_path = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--interval-ms") == 0 && i + 1 < argc)
			interval_ms = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--trim-every") == 0 && i + 1 < argc)
			trim_every = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--signal") == 0)
			with_signal = true;
		else if (strcmp(argv[i], "--log") == 0 && i + 1 < argc)
			log_path = argv[++i];
		else if (argv[i][0] != '-' && !dir)
			dir = argv[i];
		else
			storm_usage();
	}
	if (!dir || interval_ms < 0 || trim_every < 1)
		storm_usage();
	storm_seen = calloc(STORM_PID_LIMIT / 8, 1);
	storm_signalled = calloc(STORM_PID_LIMIT / 8, 1);
	if (!storm_seen || !storm_signalled)
		return 1;
	if (log_path && !(storm_log = fopen(log_path, "ae"))) {
		perror(log_path);
		return 1;
	}
	/* A reader that goes between our open and our write must not kill us. */
	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa = {.sa_handler = storm_on_stop};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	const struct timespec pause = {interval_ms / 1000, (interval_ms % 1000) * 1000000};
	while (!storm_stop) {
		bool trim = (storm_counts.sweeps + 1) % (unsigned long)trim_every == 0;
		storm_sweep(dir, trim, with_signal);
		nanosleep(&pause, NULL);
	}
	storm_print(with_signal);
	if (storm_log)
		fclose(storm_log);
	return 0;
}
