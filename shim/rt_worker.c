/* The worker thread: waits on the FIFO (or, without one, on a futex word), takes the signal
 * while it waits, counts rounds through policy/rt_rounds, runs the allocator action outside any
 * lock of ours, and reports. It is the only thread the library starts; it blocks every signal
 * but the trigger inside its wait, opens nothing (rt_files opened everything before it started),
 * and is never joined (a thread that exit-time code waited for could hang the host at exit). */
#include "rt_files.h"
#include "rt_heap.h"
#include "rt_proto.h"
#include "rt_python.h"
#include "rt_report.h"
#include "rt_rounds.h"
#include "rt_shim.h"
#include "rt_signal.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* How long the worker waits on the FIFO before it looks at its descriptors again (a program may
 * have closed or replaced one without the FIFO ever becoming readable). */
#define RT_WORKER_TICK_S 1

struct rt_worker {
	struct rt_rounds rounds;
	struct rt_proto proto;
	uint64_t unknown_lines;
	uint64_t oversized_lines;
	uint64_t actions;
	uint64_t status_seq;
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

static struct rt_worker rt_w;
static atomic_bool rt_w_running;
/* Bumped by every wake-up; the worker waits on it when it has no FIFO. */
static atomic_uint rt_w_wake_word;
static atomic_uint_fast64_t rt_w_api_rounds;
static atomic_uint_fast64_t rt_w_api_trims;

static int64_t
rt_worker_clock_us(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void
rt_worker_write_status(void)
{
	if (!rt_files_have_status())
		return;
	struct rt_status_record st = {
	    .pid = getpid(),
	    .seq = ++rt_w.status_seq,
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
	    .fifo = rt_files_fifo_path(),
	    .signal = rt_signal_number(),
	    .stats = rt_files_stats_path(),
	    .unknown_lines = rt_w.unknown_lines,
	    .oversized_lines = rt_w.oversized_lines,
	};
	char json[RT_REPORT_LINE_MAX * 2];
	rt_files_write_status(json, rt_report_status_json(json, sizeof(json), &st));
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
	case RT_PROTO_EMPTY:
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
	rt_batch_count(b, rt_signal_take(), "signal");
	rt_batch_count(b, atomic_exchange(&rt_w_api_rounds, 0), "api");
	if (atomic_exchange(&rt_w_api_trims, 0)) {
		b->trim = true;
		b->trigger = "api";
	}
	char buf[4096];
	ssize_t got;
	while ((got = rt_files_fifo_read(buf, sizeof(buf))) > 0)
		rt_proto_feed(&rt_w.proto, buf, (size_t)got, rt_worker_on_line, b);
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
	rec.rss_before_kib = rt_files_rss_kib();
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
		rec.rss_after_kib = rt_files_rss_kib();
		rt_w.actions++;
		rt_w.released_total_kib += rt_report_released_kib(&rec);
	}
	if (b->rounds > 1)
		rt_worker_note(note, sizeof(note), "merged=%llu", (unsigned long long)b->rounds);
	/* mallinfo2 walks every free chunk under the arena locks: only when someone reads it. */
	bool report = cfg->profile || rt_files_have_stats() || b->stats;
	if (report)
		rt_w.last_live_kib = rt_heap_live_kib();
	rec.live_kib = rt_w.last_live_kib;
	rt_w.last_rss_kib = rec.rss_after_kib;
	rec.unix_time_us = rt_worker_clock_us(CLOCK_REALTIME);
	if (act)
		rt_worker_remember_action(&rec);

	char line[RT_REPORT_LINE_MAX];
	if (cfg->profile || (b->stats && !rt_files_have_stats()))
		rt_files_log_line(line, rt_report_rss_line(line, sizeof(line), &rec));
	if (rt_files_have_stats())
		rt_files_stats_line(line, rt_report_json(line, sizeof(line), &rec));
	rt_worker_write_status();
}

/* Sleeps until a wake-up: the FIFO readable, the trigger signal taken (its handler runs here,
 * inside ppoll or the futex wait), or rt_w_wake_word moved past `seen`. */
static void
rt_worker_wait(unsigned seen)
{
	sigset_t mask, all;
	sigfillset(&all);
	rt_signal_begin_wait(&mask);
	int fd = rt_files_fifo_fd();
	if (atomic_load(&rt_w_wake_word) != seen) {
		/* woken while collecting */
	} else if (fd >= 0) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		struct timespec tick = {RT_WORKER_TICK_S, 0};
		ppoll(&pfd, 1, &tick, &mask);
	} else {
		/* A signal that arrives between the unblock and the wait runs its handler, which
		 * moves the word: the wait then returns at once. */
		pthread_sigmask(SIG_SETMASK, &mask, NULL);
		syscall(SYS_futex, &rt_w_wake_word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
		pthread_sigmask(SIG_SETMASK, &all, NULL);
	}
	rt_signal_end_wait();
}

static void *
rt_worker_main(void *arg)
{
	(void)arg;
	rt_w.last_rss_kib = rt_files_rss_kib();
	rt_worker_write_status();
	for (;;) {
		unsigned seen = atomic_load(&rt_w_wake_word);
		struct rt_batch batch = {0};
		rt_worker_collect(&batch);
		rt_worker_handle(&batch);
		rt_worker_wait(seen);
	}
	return NULL;
}

bool
rt_worker_start(void)
{
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
	pthread_t thread;
	int err = pthread_create(&thread, &attr, rt_worker_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (err != 0) {
		rt_warn("inactive: cannot start the worker thread: %s", strerror(err));
		return false;
	}
	pthread_setname_np(thread, "roundtrim");
	atomic_store(&rt_w_running, true);
	return true;
}

bool
rt_worker_running(void)
{
	return atomic_load(&rt_w_running);
}

void
rt_worker_forget_parent(void)
{
	atomic_store(&rt_w_running, false);
	/* Like the kernel's pending signals, the parent's pending requests are not the child's. */
	atomic_store(&rt_w_api_rounds, 0);
	atomic_store(&rt_w_api_trims, 0);
	memset(&rt_w, 0, sizeof(rt_w));
}

void
rt_worker_wake(void)
{
	atomic_fetch_add(&rt_w_wake_word, 1);
	syscall(SYS_futex, &rt_w_wake_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	rt_files_fifo_poke();
}

static bool
rt_worker_request(atomic_uint_fast64_t *counter)
{
	if (!atomic_load(&rt_w_running))
		return false;
	atomic_fetch_add(counter, 1);
	rt_worker_wake();
	return true;
}

bool
rt_worker_request_round(void)
{
	return rt_worker_request(&rt_w_api_rounds);
}

bool
rt_worker_request_trim(void)
{
	return rt_worker_request(&rt_w_api_trims);
}
