/* The worker thread: waits on the FIFO (or, without one, on a futex word), takes the signal
 * while it waits, gathers rounds into batches, runs the allocator action outside any
 * lock of ours, and reports; the book-keeping is policy/rt_ledger's. It is the only thread the
 * library starts through glibc (where unshare is refused, a keeper holds its descriptors:
 * rt_keeper); it blocks every signal but the trigger inside its wait, opens nothing (rt_files
 * opened everything before it started), and is joined only when the library stands down
 * (rt_tasks), never at exit (a thread that exit-time code waited for could hang the host). It
 * serves the program's threads' requests between its steps and inside its waits (rt_creds). */
#include "rt_worker.h"
#include "rt_child.h"
#include "rt_creds.h"
#include "rt_detect.h"
#include "rt_detect_server.h"
#include "rt_fd.h"
#include "rt_fifo.h"
#include "rt_file_rules.h"
#include "rt_files.h"
#include "rt_heap.h"
#include "rt_io.h"
#include "rt_keeper.h"
#include "rt_ledger.h"
#include "rt_out.h"
#include "rt_outputs.h"
#include "rt_pages.h"
#include "rt_probe.h"
#include "rt_procfs.h"
#include "rt_procread.h"
#include "rt_proto.h"
#include "rt_python.h"
#include "rt_record.h"
#include "rt_report.h"
#include "rt_sampler.h"
#include "rt_send.h"
#include "rt_signal.h"
#include "rt_tally.h"
#include "rt_tasks.h"
#include "rt_trace.h"
#include "rt_triggers.h"
#include "rt_version.h"
#include "rt_worker_life.h"

#include <errno.h>
#include <limits.h>
#include <link.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The longest the worker ever sleeps: at each look it checks whether it is the last thread (the
 * program's have all exited, and the process must end as if the library were absent), finds the
 * API's requests (which cannot reach a worker with its own descriptor table), and, sharing the
 * program's table, checks its descriptors (one may have been closed or replaced without the
 * FIFO ever becoming readable). */
#define RT_WORKER_LONGEST_WAIT_US 200000
/* How long the starting thread waits for the worker to take its own descriptor table. */
#define RT_WORKER_TABLE_WAIT_S 2
/* Before an action, the worker waits for a window this long in which no thread allocated or
 * freed, at most RT_WORKER_QUIET_BOUND_US: the arena locks it takes then cross no one. */
#define RT_WORKER_QUIET_WINDOW_NS 2000000L
#define RT_WORKER_QUIET_BOUND_US 100000
/* The worker's stack: what it uses (measured: roundtrim(7), MEMORY) with a wide margin. glibc
 * also places the thread's static TLS in it (rt_worker_stack_size). */
#define RT_WORKER_STACK (256 * 1024)

/* The worker: what it was handed at its start, its state machines and its readings, and what
 * the program's threads reach too. Every step of the worker takes it as an argument. There is one
 * (rt_worker_one), since the program's threads reach it through entry points that have nothing
 * to pass them (the API, a thread's exit, fork): rt_worker_start hands its address to the thread
 * and only those entry points name it. */
struct rt_worker {
	struct rt_worker_setup setup; /* rt_main's, copied at the start */
	/* Whose descriptor table holds the library's files: decided by the starter
	 * (rt_worker_decide_table) before the worker uses any. */
	enum rt_file_table descriptors;
	/* The book-keeping; its round count is also the API callers' (rt_worker_api_count). */
	struct rt_ledger ledger;
	struct rt_proto proto;
	/* The rounds and actions that come by themselves (policy/rt_triggers, rt_detect; with
	 * ROUNDTRIM_ROLE=server, rt_detect_server instead, which never asks for the live heap). */
	struct rt_triggers triggers;
	struct rt_detect detect;
	struct rt_detect_server detect_server;
	bool server_detector;
	bool want_live;
	uint64_t events;    /* allocations + frees at the last reading */
	uint64_t events_us; /* when they last changed */
	struct rt_trigger_reading reading;
	enum rt_trigger due;
	/* How long before rt_python_tend must look again at steps handed to the main thread. */
	uint64_t python_wait_us;
	/* Its own stack, and whether a round's work went down it since it was last given back. */
	struct rt_stack stack;
	bool stack_used;
	/* The API's mailbox. A caller counts its round itself (rt_worker_api_count), runs the
	 * Python steps where it is called when the round acts (the module, which holds the GIL),
	 * and posts: the steps' outcome first, then whether the round acts, then the count, so that
	 * a worker that sees the count sees the rest. */
	atomic_uint_fast64_t api_rounds;
	atomic_uint_fast64_t api_trims;
	atomic_bool api_acts;
	_Atomic uint64_t api_outcome; /* rt_python_outcome_pack's word; 0: none */
	/* The allocator action an acting API round ran in its caller's thread before it returned
	 * (rt_worker_api_release), for the round's record: RT_WORKER_RELEASED's word; 0: none. */
	_Atomic uint64_t api_released;
	/* When it ended (CLOCK_REALTIME, us), the record's time; stored before api_released. */
	_Atomic int64_t api_released_at_us;
	/* Whose table holds the library's descriptors, a futex word (RT_WORKER_TABLE_*), and
	 * what unshare or close_range said, for the starter's line. */
	atomic_uint table;
	int table_errno;
	/* The worker has a filesystem context of its own (root, cwd, umask), unshared with its
	 * table: the program's setns into a mount namespace needs its own unshared (rt_creds). */
	atomic_bool own_fs;
	atomic_bool main_gone; /* the program's main thread has exited */
	/* The status the worker last published, for roundtrim_status_json. The lock is held only
	 * to copy the text in or out: never around anything that allocates or waits. */
	pthread_mutex_t status_lock;
	char status[RT_REPORT_LINE_MAX * 4];
	size_t status_len;
};

static struct rt_worker rt_worker_one = {.status_lock = PTHREAD_MUTEX_INITIALIZER};

/* api_released's word: set, failed, the action that ran, and its duration in microseconds. */
#define RT_WORKER_RELEASED (UINT64_C(1) << 63)
#define RT_WORKER_RELEASED_FAILED (UINT64_C(1) << 62)
#define RT_WORKER_RELEASED_ACTION_SHIFT 48
#define RT_WORKER_RELEASED_US_MASK ((UINT64_C(1) << RT_WORKER_RELEASED_ACTION_SHIFT) - 1)

static int64_t
rt_worker_clock_us(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The parent's pid while this is a fork child that shares its parent's heap, else 0: asked at
 * each batch and status, since the parent may go or the child leave its session meanwhile. */
static int
rt_worker_fork_of(const struct rt_worker *w)
{
	if (!w->setup.fork_parent)
		return 0;
	struct rt_child_fork f = {.parent = w->setup.fork_parent,
	                          .session = w->setup.fork_session,
	                          .ppid_now = getppid(),
	                          .session_now = getsid(0)};
	return rt_child_fork_of(&f);
}

static struct rt_ledger_facts
rt_worker_facts(const struct rt_worker *w)
{
	return (struct rt_ledger_facts){
	    .pid = getpid(),
	    .mode = rt_mode_word(w->triggers.mode),
	    .program = w->setup.program,
	    .allocator = rt_allocator_name(w->setup.allocator),
	    .action = rt_action_name(w->setup.action),
	    .action_limits = rt_action_limits(w->setup.action),
	    .fifo = rt_fifo_path(),
	    .stats = rt_outputs_stats_path(),
	    .signal = rt_signal_number(),
	    .lost_records = rt_record_dropped(),
	    .descriptors = rt_file_table_word(w->descriptors),
	    .fork_of = rt_worker_fork_of(w),
	};
}

/* The status (its copy for the API, its file) and the Prometheus file, at the start and after
 * every batch handled. */
static void
rt_worker_publish(struct rt_worker *w)
{
	struct rt_ledger_facts facts = rt_worker_facts(w);
	char text[RT_REPORT_LINE_MAX * 4];
	/* With or without a status file: roundtrim_status_json serves the copy. First the copy,
	 * then the file, so that a reader who saw the file sees the copy as new. */
	struct rt_status_record st;
	rt_ledger_status(&w->ledger, &facts, &st);
	size_t len = rt_report_status_json(text, sizeof(text), &st);
	if (len > sizeof(w->status))
		len = sizeof(w->status);
	pthread_mutex_lock(&w->status_lock);
	memcpy(w->status, text, len);
	w->status_len = len;
	pthread_mutex_unlock(&w->status_lock);
	if (rt_fifo_have_status())
		rt_fifo_write_status(text, len);
	if (w->setup.cfg->prom[0]) {
		struct rt_prom_record pr;
		rt_ledger_prom(&w->ledger, &facts, RT_VERSION, &pr);
		rt_outputs_write_prom(text, rt_report_prom(text, sizeof(text), &pr));
	}
}

/* What a FIFO line reaches: the worker's ledger and the batch being gathered. */
struct rt_worker_feed {
	struct rt_worker *w;
	struct rt_batch *b;
};

static void
rt_worker_on_line(void *ctx, const struct rt_proto_cmd *cmd)
{
	struct rt_worker_feed *feed = ctx;
	switch (rt_ledger_line(&feed->w->ledger, feed->b, cmd)) {
	case RT_LEDGER_SAY_FIRST_UNKNOWN:
		rt_warn(
		    "ignoring FIFO line \"%.64s\" (expected round, trim, gc-rounds N or stats); "
		    "later ones are only counted",
		    cmd->line);
		break;
	case RT_LEDGER_SAY_FIRST_OVERSIZED:
		rt_warn("ignoring FIFO lines longer than %d bytes; later ones are only counted",
		        RT_PROTO_LINE_MAX);
		break;
	case RT_LEDGER_SAY_NOTHING:
		break;
	}
}

/* Everything that asked for rounds or actions since the last look; *given: the Python steps an
 * API caller already ran for an acting round or trim among them (false: none did); *released:
 * the allocator action it ran (0: none). */
static void
rt_worker_collect(struct rt_worker *w, struct rt_batch *b, struct rt_python_outcome *given,
                  bool *given_valid, uint64_t *released)
{
	rt_batch_count(b, rt_signal_take(), "signal");
	uint64_t api_rounds = atomic_exchange(&w->api_rounds, 0);
	uint64_t api_trims = atomic_exchange(&w->api_trims, 0);
	bool api_acts = atomic_exchange(&w->api_acts, false);
	uint64_t outcome = atomic_exchange(&w->api_outcome, 0);
	rt_batch_counted(b, api_rounds, api_acts, "api");
	/* Stored before the round it came with: one not yet posted waits for the next look. */
	*released = api_acts || api_trims ? atomic_exchange(&w->api_released, 0) : 0;
	if (api_trims)
		rt_batch_trim_asked(b, "api");
	*given_valid = outcome != 0;
	if (*given_valid)
		rt_python_outcome_unpack(outcome, given);
	char buf[4096];
	ssize_t got;
	struct rt_worker_feed feed = {w, b};
	while ((got = rt_fifo_read(buf, sizeof(buf))) > 0)
		rt_proto_feed(&w->proto, buf, (size_t)got, rt_worker_on_line, &feed);
}

static uint64_t
rt_worker_now_us(clockid_t clock)
{
	return (uint64_t)rt_worker_clock_us(clock);
}

/* One reading of the process: what the detector, the trace file and the triggers look at. */
static void
rt_worker_read(struct rt_worker *w, struct rt_batch *b)
{
	struct rt_alloc_totals totals;
	rt_tally_totals(&totals);
	struct rt_trigger_reading *tr = &w->reading;
	*tr = (struct rt_trigger_reading){
	    .now_us = rt_worker_now_us(CLOCK_MONOTONIC),
	    .bytes_requested = totals.bytes,
	};
	if (rt_triggers_watch_rss(&w->triggers))
		tr->rss_kib = rt_procread_rss_kib();
	if (rt_triggers_watch_pressure(&w->triggers))
		rt_procread_memory(&tr->mem_used, &tr->mem_limit);
	if (totals.allocations + totals.frees != w->events) {
		w->events = totals.allocations + totals.frees;
		w->events_us = tr->now_us;
	}
	bool detecting = rt_triggers_detecting(&w->triggers);
	if (detecting || rt_outputs_have_trace()) {
		struct rt_reading rd = {
		    .t_us = tr->now_us,
		    .allocations = totals.allocations,
		    .bytes_requested = totals.bytes,
		    .frees = totals.frees,
		    .bytes_freed = RT_TRACE_UNKNOWN,
		    .live_bytes = RT_TRACE_UNKNOWN,
		    .rss_kib = tr->rss_kib ? tr->rss_kib : RT_TRACE_UNKNOWN,
		    .cpu_us = rt_worker_now_us(CLOCK_PROCESS_CPUTIME_ID),
		    .bytes_sent = totals.sent,
		};
		/* The live heap costs a walk on glibc: only when the detector asks (about once a
		 * round, while the process is quiet). */
		if (w->want_live)
			rd.live_bytes = rt_heap_live_bytes();
		if (rt_outputs_have_trace()) {
			char line[RT_TRACE_LINE_MAX];
			rt_outputs_trace_line(line, rt_trace_format(line, sizeof(line), &rd));
		}
		if (detecting && w->server_detector) {
			if (rt_detect_server_feed(&w->detect_server, &rd) == RT_DETECT_BOUNDARY)
				rt_batch_detected(b, w->detect_server.confidence_permille);
		} else if (detecting) {
			enum rt_detect_result r = rt_detect_feed(&w->detect, &rd);
			w->want_live = r == RT_DETECT_WANT_LIVE;
			if (r == RT_DETECT_BOUNDARY)
				rt_batch_detected(b, w->detect.confidence_permille);
		}
	}
	w->due = rt_triggers_due(&w->triggers, tr);
	if (w->due != RT_TRIGGER_NONE)
		rt_batch_trim(b, rt_trigger_word(w->due));
}

/* Waits, bounded, for a moment when the program's threads neither allocate nor free. False when
 * the bound came first. */
static bool
rt_worker_quiet_moment(void)
{
	uint64_t start = rt_worker_now_us(CLOCK_MONOTONIC);
	struct rt_alloc_totals before, now;
	rt_tally_totals(&before);
	for (;;) {
		struct timespec window = {0, RT_WORKER_QUIET_WINDOW_NS};
		nanosleep(&window, NULL);
		if (rt_worker_serve())
			return false;
		rt_tally_totals(&now);
		uint64_t waited = rt_worker_now_us(CLOCK_MONOTONIC) - start;
		if (rt_triggers_quiet_go(before.allocations + before.frees,
		                         now.allocations + now.frees, waited,
		                         RT_WORKER_QUIET_BOUND_US))
			return now.allocations + now.frees == before.allocations + before.frees;
		before = now;
	}
}

/* The allocator's action, at once: it never waits for Python. released: the action an API
 * caller already ran (api_released's word), which this batch's record reports instead; 0: none. */
static void
rt_worker_release(struct rt_worker *w, struct rt_round_record *rec, char *note, uint64_t released)
{
	enum rt_action done;
	int rc = 0;
	if (released) {
		rt_ledger_note(note, RT_LEDGER_NOTE_MAX, "released-in-caller");
		done = (enum rt_action)((released >> RT_WORKER_RELEASED_ACTION_SHIFT) & 0xff);
		rc = released & RT_WORKER_RELEASED_FAILED ? -1 : 0;
		rec->duration_us = released & RT_WORKER_RELEASED_US_MASK;
		rt_heap_say_held();
	} else {
		if (!rt_worker_quiet_moment())
			rt_ledger_note(note, RT_LEDGER_NOTE_MAX, "not-quiet");
		int64_t start = rt_worker_clock_us(CLOCK_MONOTONIC);
		rc = rt_heap_act(w->setup.action, w->setup.cfg->trim_pad, &done);
		rec->duration_us = (uint64_t)(rt_worker_clock_us(CLOCK_MONOTONIC) - start);
		/* A program thread may have waited through the action; a request to leave is taken
		 * at the next look. */
		rt_worker_serve();
	}
	rec->action = rt_action_name(done);
	rec->rss_after_kib = rt_procread_rss_kib();
	struct rt_procfs_rss split;
	if (rt_procread_rss_split(&split)) {
		rec->anon_kib = split.anon_kib;
		rec->file_kib = split.file_kib;
		rec->lazyfree_kib = split.lazyfree_kib;
	}
	if (rt_ledger_acted(&w->ledger, rec, note, rc != 0))
		rt_warn("%s failed; rounds are still counted", rec->action);
	rt_triggers_left(&w->triggers, rec->rss_after_kib);
}

/* A batch: a round or a trim, with the allocator's action when it acts; or the record of Python
 * steps that ran after their round's action. python: the steps' outcome when they already ran
 * (in an API caller, or on the main thread for a follow-up); NULL: an acting round hands them to
 * the main thread. released: the action an API caller ran for it (rt_worker_release). */
static void
rt_worker_handle(struct rt_worker *w, const struct rt_batch *b,
                 const struct rt_python_outcome *python, uint64_t released)
{
	const struct rt_config *cfg = w->setup.cfg;
	struct rt_ledger_plan plan = rt_ledger_plan(b, cfg->profile, rt_outputs_have_stats());
	if (!plan.handle)
		return;
	char note[RT_LEDGER_NOTE_MAX];
	struct rt_round_record rec;
	rt_ledger_start(&w->ledger, b, getpid(), rt_allocator_name(w->setup.allocator), note, &rec);
	rec.descriptors = rt_file_table_word(w->descriptors);
	rec.rss_before_kib = rec.rss_after_kib = rt_procread_rss_kib();
	if (plan.act && rt_batch_acts_by_detection_only(b) &&
	    !rt_triggers_auto_worth(&w->triggers, rec.rss_before_kib)) {
		plan.act = false;
		rt_ledger_note(note, RT_LEDGER_NOTE_MAX, "nothing-grew");
	}
	struct rt_python_outcome handed;
	bool steps = plan.act && !python;
	/* A fork child's own trigger: a collection there would copy the parent's pages. */
	if (steps && !rt_child_python_steps(rt_worker_fork_of(w), b)) {
		steps = false;
		rt_ledger_note(note, RT_LEDGER_NOTE_MAX, "fork-child");
	}
	if (steps) {
		rt_python_hand_off(cfg, rec.round, &handed);
		python = &handed;
	}
	if (python)
		rt_python_report(python, &rec);
	if (plan.act) {
		rt_worker_release(w, &rec, note, released);
		if (!b->python)
			rt_triggers_acted(&w->triggers, w->due, &w->reading);
	}
	/* mallinfo2 walks every free chunk under the arena locks: only when someone reads it. */
	uint64_t live = plan.read_live ? rt_heap_live_bytes() : UINT64_MAX;
	uint64_t live_kib = live == UINT64_MAX ? 0 : live / 1024;
	if (plan.read_live && live == UINT64_MAX && rt_heap_has_live())
		rt_ledger_note(note, RT_LEDGER_NOTE_MAX, "live-skipped");
	/* The record's time is its release's end, an API caller's included. */
	int64_t at_us = plan.act && released ? atomic_load(&w->api_released_at_us)
	                                     : rt_worker_clock_us(CLOCK_REALTIME);
	rt_ledger_finish(&w->ledger, b, &plan, live_kib, at_us, &rec, note);
	if (plan.act && !b->python)
		rt_sampler_round(&rec);

	char line[RT_REPORT_LINE_MAX];
	if (plan.rss_line)
		rt_outputs_log_line(line, rt_report_rss_line(line, sizeof(line), &rec));
	if (plan.stats_line)
		rt_outputs_stats_line(line, rt_report_json(line, sizeof(line), &rec));
	rt_worker_publish(w);
	w->stack_used = true;
}

/* Python steps handed to the main thread have run: their record, and a release of what they
 * freed. */
static void
rt_worker_python_follow_up(struct rt_worker *w)
{
	struct rt_python_outcome outcome;
	uint64_t round;
	if (rt_python_answered(&outcome, &round)) {
		struct rt_batch b = {0};
		rt_batch_python(&b, round, rt_python_outcome_freed(&outcome));
		rt_worker_handle(w, &b, &outcome, 0);
	}
	/* The CUDA step the main thread ran after the library's thread took the others. */
	if (rt_python_cuda_answered(&outcome, &round)) {
		struct rt_batch b = {0};
		rt_batch_python(&b, round, rt_python_outcome_freed(&outcome));
		rt_worker_handle(w, &b, &outcome, 0);
	}
}

/* How long to wait for the next tick: the triggers' need, and the longest wait. */
static uint64_t
rt_worker_wait_us(const struct rt_worker *w)
{
	uint64_t wait =
	    rt_triggers_wait_us(&w->triggers, rt_worker_now_us(CLOCK_MONOTONIC), w->events_us);
	if (w->python_wait_us < wait)
		wait = w->python_wait_us;
	return wait < RT_WORKER_LONGEST_WAIT_US ? wait : RT_WORKER_LONGEST_WAIT_US;
}

/* Sleeps until a wake-up or the next tick: the FIFO readable, the trigger signal taken (its
 * handler runs here, inside ppoll or the futex wait), or rt_worker_life.wake_word moved past
 * `seen`. */
static void
rt_worker_wait(const struct rt_worker *w, unsigned seen)
{
	sigset_t mask, all;
	sigfillset(&all);
	rt_signal_begin_wait(&mask);
	int fd = rt_fifo_fd();
	uint64_t wait_us = rt_worker_wait_us(w);
	struct timespec tick = {(time_t)(wait_us / 1000000), (long)(wait_us % 1000000) * 1000};
	if (atomic_load(&rt_worker_life.wake_word) != seen) {
		/* woken while collecting */
	} else if (fd >= 0 && !rt_io_is_by_keeper()) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		ppoll(&pfd, 1, &tick, &mask);
	} else {
		/* The FIFO is the keeper's: it waits on it, and moves the word when it is readable
		 * or the tick has passed. A wake-up of this thread meanwhile (the signal, the API)
		 * is taken at once; its next call to the keeper cuts that wait short (rt_keeper). */
		if (fd >= 0)
			rt_keeper_wait_readable(fd, &tick, &rt_worker_life.wake_word);
		/* A signal that arrives between the unblock and the wait runs its handler, which
		 * moves the word: the wait then returns at once. */
		pthread_sigmask(SIG_SETMASK, &mask, NULL);
		syscall(SYS_futex, &rt_worker_life.wake_word, FUTEX_WAIT_PRIVATE, seen, &tick, NULL,
		        0);
		pthread_sigmask(SIG_SETMASK, &all, NULL);
	}
	rt_signal_end_wait();
}

/* Whose table holds the library's descriptors, a futex word: 0 until one side moves. The worker
 * claims it (CLAIMED) before unshare and ends at PRIVATE (a table of its own, the program's
 * descriptors closed in it), REFUSED (unshare refused: it still shares the program's), or
 * BROKEN (its table holds the program's descriptors, which close_range failed to close). A
 * starter that waited in vain takes it first (REFUSED), and the worker then never unshares, so
 * that no copy of the library's descriptors is left behind in the program's table. The starter
 * decides (DECIDED, the worker's descriptors) and the worker waits for that before it uses any. */
#define RT_WORKER_TABLE_CLAIMED 1
#define RT_WORKER_TABLE_PRIVATE 2
#define RT_WORKER_TABLE_REFUSED 3
#define RT_WORKER_TABLE_BROKEN 4
#define RT_WORKER_TABLE_DECIDED 5

static int
rt_worker_cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Closes every descriptor of the worker's own table but the library's. */
static bool
rt_worker_close_all_but(int *keep, size_t n)
{
	qsort(keep, n, sizeof(keep[0]), rt_worker_cmp_int);
	unsigned low = 0;
	for (size_t i = 0; i < n; i++) {
		if ((unsigned)keep[i] > low &&
		    syscall(SYS_close_range, low, (unsigned)keep[i] - 1, 0) != 0)
			return false;
		low = (unsigned)keep[i] + 1;
	}
	return syscall(SYS_close_range, low, ~0U, 0) == 0;
}

static void
rt_worker_set_table(struct rt_worker *w, unsigned table)
{
	atomic_store(&w->table, table);
	syscall(SYS_futex, &w->table, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* The worker takes a descriptor table of its own (unshare CLONE_FILES) holding only the
 * library's files: nothing the program does to its descriptors (close, dup2, close_range) can
 * reach them, and the library never reaches the program's. Where the kernel refuses, the
 * starter makes the keeper (rt_keeper). Then it waits for the starter's decision. */
static void
rt_worker_take_table(struct rt_worker *w)
{
	unsigned expected = 0;
	if (atomic_compare_exchange_strong(&w->table, &expected, RT_WORKER_TABLE_CLAIMED)) {
		int keep[33];
		size_t n = rt_files_numbers(keep, sizeof(keep) / sizeof(keep[0]) - 1);
		unsigned table = RT_WORKER_TABLE_REFUSED;
		/* The system call itself: unshare is also the program's, wrapped (rt_creds). The
		 * filesystem context goes with the table: the library's paths are absolute, and a
		 * program's setns(CLONE_NEWNS) fails while another thread shares its context. */
		if (syscall(SYS_unshare, CLONE_FILES | CLONE_FS) == 0) {
			atomic_store(&w->own_fs, true);
			/* Its working directory would stay the program's of the moment for good: a
			 * volume the program has left could not be unmounted (EBUSY). */
			syscall(SYS_chdir, "/");
			/* Its lines go to the program's stderr of the moment, through a pidfd; a
			 * kernel without pidfds (before 5.6), or a seccomp filter that kills on
			 * them (rt_probe), leaves it the stderr of start-up. */
			int pidfd = rt_probe_kills(SYS_pidfd_open) || rt_probe_kills(SYS_pidfd_getfd)
			                ? -1
			                : (int)syscall(SYS_pidfd_open, getpid(), 0);
			if (pidfd >= 0 && syscall(SYS_pidfd_getfd, pidfd, -1, 0) < 0 &&
			    errno == EBADF) {
				keep[n++] = pidfd;
				rt_out_stderr_via(pidfd);
			} else {
				keep[n++] = STDERR_FILENO;
			}
			table = rt_worker_close_all_but(keep, n) ? RT_WORKER_TABLE_PRIVATE
			                                         : RT_WORKER_TABLE_BROKEN;
		}
		w->table_errno = errno;
		rt_worker_set_table(w, table);
	}
	unsigned table;
	while ((table = atomic_load(&w->table)) != RT_WORKER_TABLE_DECIDED)
		syscall(SYS_futex, &w->table, FUTEX_WAIT_PRIVATE, table, NULL, NULL, 0);
}

/* In the starting thread: waits for the worker's table. Bounded while the worker has not run at
 * all (a starter inside dlopen's constructors must not hang on a thread that cannot start);
 * once it has claimed the table, its unshare and close_range are two system calls away. */
static unsigned
rt_worker_await_table(struct rt_worker *w)
{
	struct timespec now, deadline;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += RT_WORKER_TABLE_WAIT_S;
	for (;;) {
		unsigned table = atomic_load(&w->table);
		if (table > RT_WORKER_TABLE_CLAIMED)
			return table;
		struct timespec left = {0, 0}, *limit = NULL;
		if (table == 0) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			left.tv_sec = deadline.tv_sec - now.tv_sec;
			left.tv_nsec = deadline.tv_nsec - now.tv_nsec;
			if (left.tv_nsec < 0) {
				left.tv_sec--;
				left.tv_nsec += 1000000000L;
			}
			unsigned expected = 0;
			if (left.tv_sec < 0 && atomic_compare_exchange_strong(
			                           &w->table, &expected, RT_WORKER_TABLE_REFUSED)) {
				w->table_errno = ETIMEDOUT;
				return RT_WORKER_TABLE_REFUSED;
			}
			if (left.tv_sec < 0)
				continue;
			limit = &left;
		}
		syscall(SYS_futex, &w->table, FUTEX_WAIT_PRIVATE, table, limit, NULL, 0);
	}
}

/* In the starting thread, once the worker has its answer: whose table holds the library's
 * descriptors (policy/rt_file_rules), the keeper made where unshare was refused. The library's
 * descriptors then go from the program's table (they were opened there, by this thread), unless
 * the program's is the one. None: one line says why, naming the setting that accepts the
 * program's table. */
static enum rt_file_table
rt_worker_decide_table(struct rt_worker *w, unsigned table)
{
	char why[256] = "";
	bool keeper = false;
	if (table == RT_WORKER_TABLE_REFUSED && !rt_tasks_room_for_keeper()) {
		snprintf(why, sizeof(why), "a task limit leaves it no room");
	} else if (table == RT_WORKER_TABLE_REFUSED) {
		int keep[33];
		size_t n = rt_files_numbers(keep, sizeof(keep) / sizeof(keep[0]));
		keeper = rt_keeper_start(keep, n, why, sizeof(why));
	}
	enum rt_file_table t = rt_file_table_choose(table == RT_WORKER_TABLE_PRIVATE, keeper,
	                                            w->setup.cfg->shared_table);
	if (t == RT_FILE_TABLE_KEEPER)
		rt_io_by_keeper(true);
	if (t == RT_FILE_TABLE_PRIVATE || t == RT_FILE_TABLE_KEEPER) {
		rt_files_went_private();
		rt_fd_own_table(true);
	}
	if (t == RT_FILE_TABLE_NONE && table == RT_WORKER_TABLE_BROKEN)
		rt_warn(
		    "inactive: the worker's descriptor table of its own would hold the program's "
		    "descriptors (close_range: %s)",
		    strerror(w->table_errno));
	else if (t == RT_FILE_TABLE_NONE)
		rt_warn(
		    "inactive: the worker cannot have a descriptor table of its own (unshare: "
		    "%s) and no keeper can hold the library's (%s); ROUNDTRIM_SHARED_TABLE=1 runs "
		    "it in the program's table, with the races of roundtrim(7), DESCRIPTORS",
		    strerror(w->table_errno), why);
	w->descriptors = t;
	rt_worker_set_table(w, RT_WORKER_TABLE_DECIDED);
	return t;
}

/* The program's threads have all gone: the process ends, as it would have without the
 * library (glibc's last exiting thread calls exit(0)). The last program thread normally ends it
 * itself (rt_worker_thread_exits); this is for one that left without its tally's destructor (it
 * never allocated) or that raced another thread's exit. From a private table, the program's
 * descriptors are gone by then: its buffered output is lost. */
static void
rt_worker_alone(void)
{
	if (rt_procread_alone(rt_tasks_held()))
		exit(0);
}

/* Whether the calling thread is the program's last (its main thread, gone, may linger). */
static bool
rt_worker_caller_is_last(struct rt_worker *w, bool self_is_main)
{
	/* /proc/PID/task's link count is 2 + its threads (proc_task_getattr): a count without
	 * opening anything, since the program may be about to dup2 onto the lowest free number. */
	struct stat st;
	return stat("/proc/self/task", &st) == 0 && st.st_nlink >= 2 &&
	       rt_procfs_last_thread((uint64_t)st.st_nlink - 2, rt_tasks_held(), self_is_main,
	                             atomic_load(&w->main_gone));
}

bool
rt_worker_thread_exits(void)
{
	struct rt_worker *w = &rt_worker_one;
	bool self_is_main = gettid() == getpid();
	if (self_is_main)
		atomic_store(&w->main_gone, true);
	/* The library's Python thread is no thread of the program's (CPython ends it at exit). */
	if (!rt_worker_life_running() || rt_python_thread_is_self())
		return false;
	return rt_worker_caller_is_last(w, self_is_main);
}

static void *
rt_worker_main(void *arg)
{
	struct rt_worker *w = arg;
	atomic_store(&rt_worker_life.tid, gettid());
	rt_stack_mark(&w->stack, RT_WORKER_STACK);
	rt_creds_worker_starts();
	/* Named by itself (naming another thread opens /proc/self/task/TID/comm), and before its
	 * table, which the starter waits for: the program's main never sees it unnamed. */
	pthread_setname_np(pthread_self(), RT_FILE_WORKER_THREAD);
	rt_worker_take_table(w);
	if (w->descriptors == RT_FILE_TABLE_NONE)
		return NULL;
	rt_tally_exclude_self();
	rt_heap_take_arena();
	rt_send_resolve();
	w->ledger.last_rss_kib = rt_procread_rss_kib();
	rt_worker_publish(w);
	while (!rt_worker_serve()) {
		unsigned seen = atomic_load(&rt_worker_life.wake_word);
		struct rt_batch batch = {0};
		struct rt_python_outcome given;
		bool given_valid;
		uint64_t released;
		rt_worker_collect(w, &batch, &given, &given_valid, &released);
		/* The first announced round hands the process over from detection, for good. */
		if (batch.announced)
			rt_triggers_announced(&w->triggers);
		rt_worker_read(w, &batch);
		rt_ledger_close(&w->ledger, &batch);
		/* What earlier steps freed first: it is the older memory. */
		rt_worker_python_follow_up(w);
		rt_worker_handle(w, &batch, given_valid ? &given : NULL, released);
		/* Steps the main thread has left past the grace go to the library's thread. */
		w->python_wait_us = rt_python_tend();
		/* A round's release, record and sampler go deeper than a look: what they touched
		 * would stay resident between rounds, the library's own memory. */
		if (w->stack_used)
			rt_stack_trim(&w->stack);
		w->stack_used = false;
		rt_worker_wait(w, seen);
		rt_worker_alone();
	}
	return NULL;
}

/* glibc carves the thread's static TLS (every initially loaded object's PT_TLS) and its
 * descriptor out of the stack it is given: what the worker itself uses comes on top. */
static int
rt_worker_tls_of(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	size_t *sum = data;
	for (unsigned i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_TLS)
			*sum += info->dlpi_phdr[i].p_memsz + info->dlpi_phdr[i].p_align;
	return 0;
}

static size_t
rt_worker_stack_size(void)
{
	size_t tls = 0, page = (size_t)sysconf(_SC_PAGESIZE);
	dl_iterate_phdr(rt_worker_tls_of, &tls);
	return (RT_WORKER_STACK + tls + page - 1) & ~(page - 1);
}

/* The worker's state machines, set up from the configuration, before its thread runs. */
static void
rt_worker_init(struct rt_worker *w, const struct rt_worker_setup *setup)
{
	w->setup = *setup;
	rt_ledger_init(&w->ledger, setup->cfg->gc_rounds);
	rt_proto_init(&w->proto);
	struct rt_triggers_params tp;
	rt_triggers_config_params(&tp, setup->cfg);
	struct rt_alloc_totals totals;
	rt_tally_totals(&totals);
	uint64_t now = rt_worker_now_us(CLOCK_MONOTONIC);
	rt_triggers_init(&w->triggers, &tp, setup->cfg->auto_rounds, now, totals.bytes);
	struct rt_detect_params dp;
	rt_detect_default_params(&dp);
	dp.want_live = rt_heap_has_live();
	rt_detect_init(&w->detect, &dp);
	struct rt_detect_server_params sp;
	rt_detect_server_default_params(&sp);
	rt_detect_server_init(&w->detect_server, &sp);
	w->server_detector = setup->cfg->role == RT_ROLE_SERVER;
	w->want_live = false;
	w->events_us = now;
}

bool
rt_worker_start(const struct rt_worker_setup *setup)
{
	struct rt_worker *w = &rt_worker_one;
	rt_worker_init(w, setup);

	/* The thread starts with every signal blocked, so that it never takes the host's SIGTERM,
	 * SIGCHLD or SIGALRM (heaptrack bug 378494: its timer thread stole SIGTERM). */
	sigset_t all, old;
	sigfillset(&all);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	/* Joinable: a program thread that stands the library down waits for its end. */
	pthread_attr_setstacksize(&attr, rt_worker_stack_size());
	atomic_store(&rt_worker_life.leave, false);
	/* Before the worker's first look: its Python thread starts later, from the interpreter's
	 * main thread, once the worker sees the interpreter up. */
	rt_python_thread_want(setup->cfg);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int err = rt_tasks_create_thread(&rt_worker_life.thread, &attr, rt_worker_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (err != 0) {
		rt_warn("inactive: cannot start the worker thread: %s", strerror(err));
		rt_python_thread_stop();
		rt_files_close();
		return false;
	}
	if (rt_worker_decide_table(w, rt_worker_await_table(w)) == RT_FILE_TABLE_NONE) {
		/* It ends as soon as it runs, and nobody waits for it; nor for the Python thread. */
		pthread_detach(rt_worker_life.thread);
		rt_python_thread_stop();
		rt_files_close();
		return false;
	}
	atomic_store(&rt_worker_life.running, true);
	return true;
}

bool
rt_worker_serve(void)
{
	rt_creds_serve();
	return atomic_load(&rt_worker_life.leave);
}

void
rt_worker_forget_parent(void)
{
	struct rt_worker *w = &rt_worker_one;
	atomic_store(&rt_worker_life.running, false);
	atomic_store(&rt_worker_life.tid, 0);
	atomic_store(&rt_worker_life.leave, false);
	/* Like the kernel's pending signals, the parent's pending requests are not the child's. */
	atomic_store(&w->api_rounds, 0);
	atomic_store(&w->api_trims, 0);
	atomic_store(&w->api_acts, false);
	atomic_store(&w->api_outcome, 0);
	atomic_store(&w->api_released, 0);
	rt_ledger_init(&w->ledger, 0);
	/* The child's table holds none of the library's descriptors until its own start. */
	w->descriptors = RT_FILE_TABLE_NONE;
	atomic_store(&w->table, 0);
	atomic_store(&w->own_fs, false);
	/* The parent's status is not the child's, and a thread of the parent may have held the
	 * lock at the fork: it stays held, by nobody, unless made anew. */
	pthread_mutex_init(&w->status_lock, NULL);
	w->status_len = 0;
}

bool
rt_worker_alone_shares_fs(void)
{
	struct rt_worker *w = &rt_worker_one;
	return rt_worker_life_running() && !atomic_load(&w->own_fs) &&
	       rt_worker_caller_is_last(w, gettid() == getpid());
}

uint64_t
rt_worker_api_count(void)
{
	return rt_rounds_add(&rt_worker_one.ledger.rounds, 1);
}

bool
rt_worker_api_release(void)
{
	struct rt_worker *w = &rt_worker_one;
	if (!atomic_load(&rt_worker_life.running))
		return false;
	/* A cancelled caller must not leave an arena's lock held inside the release. */
	int cancel;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	int64_t start = rt_worker_clock_us(CLOCK_MONOTONIC);
	enum rt_action done;
	int rc;
	bool here = rt_heap_act_here(w->setup.action, w->setup.cfg->trim_pad, &done, &rc);
	pthread_setcancelstate(cancel, NULL);
	if (!here)
		return false;
	uint64_t us = (uint64_t)(rt_worker_clock_us(CLOCK_MONOTONIC) - start);
	if (us > RT_WORKER_RELEASED_US_MASK)
		us = RT_WORKER_RELEASED_US_MASK;
	atomic_store(&w->api_released_at_us, rt_worker_clock_us(CLOCK_REALTIME));
	atomic_store(&w->api_released, RT_WORKER_RELEASED | (rc ? RT_WORKER_RELEASED_FAILED : 0) |
	                                   (uint64_t)done << RT_WORKER_RELEASED_ACTION_SHIFT | us);
	return true;
}

bool
rt_worker_api_post(bool trim, bool acts, const struct rt_python_outcome *ran)
{
	struct rt_worker *w = &rt_worker_one;
	if (!atomic_load(&rt_worker_life.running))
		return false;
	if (ran)
		atomic_store(&w->api_outcome, rt_python_outcome_pack(ran));
	if (acts)
		atomic_store(&w->api_acts, true);
	atomic_fetch_add(trim ? &w->api_trims : &w->api_rounds, 1);
	rt_worker_life_wake();
	return true;
}

int
rt_worker_status_json(char *buf, size_t size)
{
	struct rt_worker *w = &rt_worker_one;
	pthread_mutex_lock(&w->status_lock);
	size_t len = w->status_len;
	if (size) {
		size_t n = len < size ? len : size - 1;
		memcpy(buf, w->status, n);
		buf[n] = '\0';
	}
	pthread_mutex_unlock(&w->status_lock);
	return (int)len;
}
