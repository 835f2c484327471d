/* The worker thread: waits on the signalfd, the FIFO and an eventfd, counts rounds through
 * policy/rt_rounds, runs the allocator action outside any lock of ours, and reports. It is the
 * only thread the library starts besides rt_python's; it blocks every signal and is never
 * joined (a thread that exit-time code waited for could hang the host at exit). */
#include "rt_fifo.h"
#include "rt_heap.h"
#include "rt_path.h"
#include "rt_proto.h"
#include "rt_python.h"
#include "rt_report.h"
#include "rt_rounds.h"
#include "rt_shim.h"
#include "rt_signal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define RT_STATUS_PATH_MAX (RT_CONFIG_PATH_MAX + 16)

struct rt_worker {
	int wake_fd;
	int fifo_fd;
	int stats_fd;
	int log_fd;
	char fifo_path[RT_CONFIG_PATH_MAX];
	char status_path[RT_STATUS_PATH_MAX];
	char stats_path[RT_CONFIG_PATH_MAX];
	struct rt_rounds rounds;
	struct rt_proto proto;
	uint64_t unknown_lines;
	uint64_t oversized_lines;
	uint64_t actions;
	/* The last action's record, for the status file (`roundtrim round --wait` reports it);
	 * action is NULL until the first. Its note points at last_note. */
	struct rt_round_record last;
	char last_note[96];
	uint64_t released_total_kib;
	uint64_t last_rss_kib;
	uint64_t last_live_kib;
	bool action_failure_reported;
};

/* Rounds and trims gathered from every source in one wake-up. */
struct rt_batch {
	uint64_t rounds;  /* counted in this batch */
	uint64_t pending; /* counted but not yet given to rt_rounds */
	bool due;         /* some round among them is a multiple of N */
	bool trim;
	bool stats;
	const char *trigger;
};

static struct rt_worker rt_w = {.wake_fd = -1, .fifo_fd = -1, .stats_fd = -1, .log_fd = -1};
static atomic_bool rt_w_running;
static atomic_int rt_w_owner; /* pid that created the FIFO and status file, 0 if none */
/* The pid that is exiting; a pid, not a flag, because a vfork child that calls _exit shares
 * our memory and must not make its parent believe it is exiting. */
static atomic_int rt_w_exiting;
static atomic_bool rt_w_recreate; /* an exec failed after removing our files */
/* The pid whose worker is still creating its files, 0 once done: an exec must wait for it, or
 * exec could end the worker between mkfifo and its bookkeeping and leave the FIFO behind. */
static atomic_int rt_w_opening;
/* Held while the status file is written and while our files are removed, so that no status
 * file is renamed into place after removal. Never held across an allocator call. */
static pthread_mutex_t rt_w_files_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint_fast64_t rt_w_api_rounds;
static atomic_uint_fast64_t rt_w_api_trims;

static bool
rt_worker_exiting(void)
{
	return atomic_load(&rt_w_exiting) == getpid();
}

static int64_t
rt_worker_clock_us(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void
rt_worker_close(int *fd)
{
	if (*fd > STDERR_FILENO)
		close(*fd);
	*fd = -1;
}

static int
rt_worker_open_output(const char *tmpl, char *path, size_t path_size, const char *what)
{
	if (!rt_path_expand(path, path_size, tmpl, getpid())) {
		rt_warn("%s off: cannot expand %s", what, tmpl);
		return -1;
	}
	int fd = rt_out_open_append(path);
	if (fd < 0)
		rt_warn("%s off: cannot open %s: %s", what, path, strerror(errno));
	return fd;
}

static void
rt_worker_open_fifo(void)
{
	const struct rt_config *cfg = &rt_shim.cfg;
	char why[512];
	if (!rt_path_expand(rt_w.fifo_path, sizeof(rt_w.fifo_path), cfg->fifo, getpid()) ||
	    !rt_path_status_for_fifo(rt_w.status_path, sizeof(rt_w.status_path), rt_w.fifo_path)) {
		rt_warn("FIFO trigger off: cannot expand %s", cfg->fifo);
		return;
	}
	rt_w.fifo_fd = rt_fifo_open(rt_w.fifo_path, why, sizeof(why));
	if (rt_w.fifo_fd < 0) {
		rt_warn("FIFO trigger off: %s", why);
		return;
	}
	atomic_store(&rt_w_owner, getpid());
	rt_fifo_sweep(cfg->fifo, rt_w.fifo_path);
	/* The host may have begun to exit while we created it: then we remove it ourselves
	 * (rt_worker_remove_files sets the exiting pid before it reads the owner). */
	if (rt_worker_exiting())
		unlink(rt_w.fifo_path);
}

static void
rt_worker_open_files(bool forked)
{
	const struct rt_config *cfg = &rt_shim.cfg;
	char log_path[RT_CONFIG_PATH_MAX];
	rt_w.log_fd = STDERR_FILENO;
	if (cfg->log[0]) {
		rt_w.log_fd =
		    rt_worker_open_output(cfg->log, log_path, sizeof(log_path), "log file");
		if (rt_w.log_fd < 0)
			rt_w.log_fd = STDERR_FILENO;
	}
	if (cfg->stats[0])
		rt_w.stats_fd = rt_worker_open_output(cfg->stats, rt_w.stats_path,
		                                      sizeof(rt_w.stats_path), "stats file");
	/* A fork child whose FIFO template has no %p would fight its parent for the same path:
	 * it keeps the signal trigger only (roundtrim(7)). */
	if (!cfg->fifo[0] || (forked && !rt_path_template_per_pid(cfg->fifo)))
		return;
	rt_worker_open_fifo();
}

static void
rt_worker_write_status(void)
{
	if (rt_w.fifo_fd < 0 || rt_worker_exiting())
		return;
	const struct rt_config *cfg = &rt_shim.cfg;
	struct rt_status_record st = {
	    .pid = getpid(),
	    .program = rt_shim.program,
	    .allocator = rt_allocator_name(rt_shim.allocator),
	    .rounds = rt_w.rounds.counted,
	    .gc_rounds = rt_w.rounds.every,
	    .actions = rt_w.actions,
	    .last_action_round = rt_w.last.round,
	    .last_action = rt_w.last.action ? rt_w.last.action : "none",
	    .last_action_unix_us = rt_w.last.unix_time_us,
	    .last_rss_before_kib = rt_w.last.rss_before_kib,
	    .last_rss_after_kib = rt_w.last.rss_after_kib,
	    .last_duration_us = rt_w.last.duration_us,
	    .last_note = rt_w.last_note,
	    .rss_kib = rt_w.last_rss_kib,
	    .live_kib = rt_w.last_live_kib,
	    .released_total_kib = rt_w.released_total_kib,
	    .fifo = rt_w.fifo_path,
	    .signal = rt_signal_owned() ? cfg->signal : 0,
	    .stats = rt_w.stats_fd >= 0 ? rt_w.stats_path : "",
	    .unknown_lines = rt_w.unknown_lines,
	    .oversized_lines = rt_w.oversized_lines,
	};
	char json[RT_REPORT_LINE_MAX * 2], tmp[RT_STATUS_PATH_MAX + 8];
	size_t len = rt_report_status_json(json, sizeof(json), &st);
	snprintf(tmp, sizeof(tmp), "%s.tmp", rt_w.status_path);
	pthread_mutex_lock(&rt_w_files_lock);
	int fd = rt_worker_exiting()
	             ? -1
	             : open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0) {
		rt_out_write_all(fd, json, len);
		close(fd);
		/* Readers see the old status or the new one, never half of one. */
		if (rename(tmp, rt_w.status_path) != 0)
			unlink(tmp);
	}
	pthread_mutex_unlock(&rt_w_files_lock);
}

static void
rt_batch_count(struct rt_batch *b, uint64_t n, const char *trigger)
{
	if (!n)
		return;
	b->rounds += n;
	b->pending += n;
	b->trigger = trigger;
}

static void
rt_worker_on_line(void *ctx, const struct rt_proto_cmd *cmd)
{
	struct rt_batch *b = ctx;
	switch (cmd->kind) {
	case RT_PROTO_ROUND:
		rt_batch_count(b, 1, "fifo");
		break;
	case RT_PROTO_TRIM:
		b->trim = true;
		b->trigger = "fifo";
		break;
	case RT_PROTO_GC_ROUNDS:
		/* Rounds before this line count under the old N. */
		b->due |= rt_rounds_add(&rt_w.rounds, b->pending);
		b->pending = 0;
		rt_rounds_set_every(&rt_w.rounds, (uint32_t)cmd->arg);
		break;
	case RT_PROTO_STATS:
		b->stats = true;
		break;
	case RT_PROTO_UNKNOWN:
		if (rt_w.unknown_lines++ == 0)
			rt_warn(
			    "ignoring FIFO line \"%.64s\" (expected round, trim, gc-rounds N or "
			    "stats); later ones are only counted",
			    cmd->line);
		break;
	case RT_PROTO_OVERSIZED:
		if (rt_w.oversized_lines++ == 0)
			rt_warn(
			    "ignoring FIFO lines longer than %d bytes; later ones are only counted",
			    RT_PROTO_LINE_MAX);
		break;
	}
}

static void
rt_worker_collect(struct rt_batch *b)
{
	uint64_t value;
	if (read(rt_w.wake_fd, &value, sizeof(value)) < 0) {
		/* EAGAIN: woken by another source */
	}
	if (atomic_exchange(&rt_w_recreate, false)) {
		rt_worker_close(&rt_w.fifo_fd);
		rt_proto_init(&rt_w.proto);
		rt_worker_open_fifo();
		rt_worker_write_status();
	}
	rt_batch_count(b, rt_signal_drain(), "signal");
	rt_batch_count(b, atomic_exchange(&rt_w_api_rounds, 0), "api");
	if (atomic_exchange(&rt_w_api_trims, 0)) {
		b->trim = true;
		b->trigger = "api";
	}
	char buf[4096];
	while (rt_w.fifo_fd >= 0) {
		ssize_t got = read(rt_w.fifo_fd, buf, sizeof(buf));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		rt_proto_feed(&rt_w.proto, buf, (size_t)got, rt_worker_on_line, b);
	}
	b->due |= rt_rounds_add(&rt_w.rounds, b->pending);
	b->pending = 0;
}

/* Appends a word to the round's note, space-separated. */
__attribute__((format(printf, 3, 4))) static void
rt_worker_note(char *note, size_t size, const char *fmt, ...)
{
	size_t len = strlen(note);
	if (len && len + 1 < size)
		note[len++] = ' ';
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(note + len, size - len, fmt, ap);
	va_end(ap);
}

static void
rt_worker_remember_action(const struct rt_round_record *rec)
{
	rt_w.last = *rec;
	snprintf(rt_w.last_note, sizeof(rt_w.last_note), "%s", rec->note);
	rt_w.last.note = rt_w.last_note;
}

static void
rt_worker_handle(const struct rt_batch *b)
{
	const struct rt_config *cfg = &rt_shim.cfg;
	if (!b->rounds && !b->trim && !b->stats)
		return;
	bool act = b->due || b->trim;
	char note[96] = "";
	struct rt_round_record rec = {
	    .pid = getpid(),
	    .round = rt_w.rounds.counted,
	    .trigger = b->trigger ? b->trigger : "fifo",
	    .action = "none",
	    .allocator = rt_allocator_name(rt_shim.allocator),
	    .note = note,
	};
	rec.rss_before_kib = rt_heap_rss_kib();
	rec.rss_after_kib = rec.rss_before_kib;
	if (act) {
		/* gc first, then the trim returns what the collection freed, as NVFlare does. */
		rt_python_round(&rec);
		int64_t start = rt_worker_clock_us(CLOCK_MONOTONIC);
		int rc = rt_heap_act(rt_shim.action, cfg->trim_pad);
		rec.duration_us = (uint64_t)(rt_worker_clock_us(CLOCK_MONOTONIC) - start);
		rec.action = rt_action_name(rt_shim.action);
		if (rc != 0) {
			rt_worker_note(note, sizeof(note), "%s-failed", rec.action);
			if (!rt_w.action_failure_reported)
				rt_warn("%s failed; rounds are still counted", rec.action);
			rt_w.action_failure_reported = true;
		}
		rec.rss_after_kib = rt_heap_rss_kib();
		rt_w.actions++;
		rt_w.released_total_kib += rt_report_released_kib(&rec);
	}
	if (b->rounds > 1)
		rt_worker_note(note, sizeof(note), "merged=%llu", (unsigned long long)b->rounds);
	/* mallinfo2 walks every free chunk under the arena locks: only when someone reads it. */
	bool report = cfg->profile || rt_w.stats_fd >= 0 || b->stats;
	if (report)
		rt_w.last_live_kib = rt_heap_live_kib();
	rec.live_kib = rt_w.last_live_kib;
	rt_w.last_rss_kib = rec.rss_after_kib;
	rec.unix_time_us = rt_worker_clock_us(CLOCK_REALTIME);
	if (act)
		rt_worker_remember_action(&rec);

	char line[RT_REPORT_LINE_MAX];
	if (cfg->profile || (b->stats && rt_w.stats_fd < 0))
		rt_out_write_all(rt_w.log_fd, line, rt_report_rss_line(line, sizeof(line), &rec));
	if (rt_w.stats_fd >= 0)
		rt_out_write_all(rt_w.stats_fd, line, rt_report_json(line, sizeof(line), &rec));
	rt_worker_write_status();
}

static void
rt_worker_opened(void)
{
	atomic_store(&rt_w_opening, 0);
	syscall(SYS_futex, &rt_w_opening, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static void *
rt_worker_main(void *arg)
{
	bool forked = arg != NULL;
	rt_worker_open_files(forked);
	rt_w.last_rss_kib = rt_heap_rss_kib();
	rt_worker_write_status();
	rt_worker_opened();
	for (;;) {
		struct pollfd fds[3] = {{.fd = rt_w.wake_fd, .events = POLLIN}};
		nfds_t n = 1;
		if (rt_signal_fd() >= 0)
			fds[n++] = (struct pollfd){.fd = rt_signal_fd(), .events = POLLIN};
		if (rt_w.fifo_fd >= 0)
			fds[n++] = (struct pollfd){.fd = rt_w.fifo_fd, .events = POLLIN};
		if (poll(fds, n, -1) < 0 && errno != EINTR)
			break;
		struct rt_batch batch = {0};
		rt_worker_collect(&batch);
		rt_worker_handle(&batch);
	}
	rt_warn("worker stopped: poll failed: %s", strerror(errno));
	atomic_store(&rt_w_running, false);
	return NULL;
}

static bool
rt_worker_spawn(bool forked)
{
	rt_w.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (rt_w.wake_fd < 0) {
		rt_warn("inactive: eventfd failed: %s", strerror(errno));
		return false;
	}
	rt_signal_set_wake_fd(rt_w.wake_fd);
	rt_rounds_init(&rt_w.rounds, rt_shim.cfg.gc_rounds);
	rt_proto_init(&rt_w.proto);

	/* The thread starts with every signal blocked, so that it never takes the host's SIGTERM,
	 * SIGCHLD or SIGALRM (heaptrack bug 378494: its timer thread stole SIGTERM). */
	sigset_t all, old;
	sigfillset(&all);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	atomic_store(&rt_w_opening, getpid());
	pthread_t thread;
	int err = pthread_create(&thread, &attr, rt_worker_main, forked ? &rt_w : NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (err != 0) {
		rt_worker_opened();
		rt_warn("inactive: cannot start the worker thread: %s", strerror(err));
		rt_worker_close(&rt_w.wake_fd);
		return false;
	}
	pthread_setname_np(thread, "roundtrim");
	atomic_store(&rt_w_running, true);
	return true;
}

bool
rt_worker_start(void)
{
	return rt_worker_spawn(false);
}

void
rt_worker_forget_parent(void)
{
	atomic_store(&rt_w_running, false);
	atomic_store(&rt_w_owner, 0);
	/* Like the kernel's pending signals, the parent's pending requests are not the child's. */
	atomic_store(&rt_w_recreate, false);
	atomic_store(&rt_w_api_rounds, 0);
	atomic_store(&rt_w_api_trims, 0);
	rt_signal_forget_parent();
	rt_python_forget_parent();
	rt_worker_close(&rt_w.wake_fd);
	rt_worker_close(&rt_w.fifo_fd);
	rt_worker_close(&rt_w.stats_fd);
	rt_worker_close(&rt_w.log_fd);
	memset(&rt_w, 0, sizeof(rt_w));
	/* The parent's worker may have held it at the fork. */
	rt_w_files_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
	rt_w.wake_fd = rt_w.fifo_fd = rt_w.stats_fd = rt_w.log_fd = -1;
}

bool
rt_worker_restart_in_child(void)
{
	return rt_worker_spawn(true);
}

static bool
rt_worker_wake(atomic_uint_fast64_t *counter)
{
	if (!atomic_load(&rt_w_running))
		return false;
	atomic_fetch_add(counter, 1);
	uint64_t one = 1;
	return write(rt_w.wake_fd, &one, sizeof(one)) == sizeof(one);
}

bool
rt_worker_request_round(void)
{
	return rt_worker_wake(&rt_w_api_rounds);
}

bool
rt_worker_request_trim(void)
{
	return rt_worker_wake(&rt_w_api_trims);
}

/* Before our files go (exit, exec): lets a worker of this process that is still creating them
 * finish, or exit and exec could end it between mkfifo and its bookkeeping. At most a second:
 * a worker stuck on a slow file system must not hold up the host. */
static void
rt_worker_wait_opened(void)
{
	struct timespec limit = {1, 0};
	int opening = atomic_load(&rt_w_opening);
	if (opening == getpid())
		syscall(SYS_futex, &rt_w_opening, FUTEX_WAIT_PRIVATE, opening, &limit, NULL, 0);
}

/* Marks this process exiting (the worker writes no more status files) and removes our files. */
static void
rt_worker_unlink_files(void)
{
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 1;
	bool locked = pthread_mutex_timedlock(&rt_w_files_lock, &deadline) == 0;
	atomic_store(&rt_w_exiting, getpid());
	char tmp[RT_STATUS_PATH_MAX + 8];
	snprintf(tmp, sizeof(tmp), "%s.tmp", rt_w.status_path);
	unlink(tmp);
	unlink(rt_w.status_path);
	unlink(rt_w.fifo_path);
	if (locked)
		pthread_mutex_unlock(&rt_w_files_lock);
}

bool
rt_worker_before_exec(void)
{
	rt_worker_wait_opened();
	if (atomic_load(&rt_w_owner) != getpid())
		return false;
	rt_worker_unlink_files();
	atomic_store(&rt_w_owner, 0);
	return true;
}

void
rt_worker_after_failed_exec(bool removed)
{
	if (!removed)
		return;
	int saved_errno = errno;
	atomic_store(&rt_w_exiting, 0);
	atomic_store(&rt_w_recreate, true);
	uint64_t one = 1;
	if (write(rt_w.wake_fd, &one, sizeof(one)) < 0) {
		/* the worker is gone: nothing to recreate the files */
	}
	errno = saved_errno;
}

void
rt_worker_remove_files(void)
{
	rt_worker_wait_opened();
	if (atomic_load(&rt_w_owner) != getpid()) {
		atomic_store(&rt_w_exiting, getpid());
		return;
	}
	rt_worker_unlink_files();
}
