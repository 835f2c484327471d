/* bench_read: the library's files as the bench programs that wait for a round find and read
 * them: with policy's path rules (rt_path) and readers (rt_report_read_json, _status). */
#ifndef BENCH_READ_H
#define BENCH_READ_H

#include "bench_common.h"
#include "rt_path.h"
#include "rt_report.h"

/* What bench_stats_has_round looks for, and what it found. */
struct bench_stats_wait {
	uint64_t round;
	struct rt_round_read found;
};

/* For bench_wait_file: whether the stats lines of text hold round's record (not a Python
 * follow-up's: that one comes after it), read into found. */
static inline bool
bench_stats_has_round(const char *text, void *ctx)
{
	struct bench_stats_wait *w = ctx;
	char line[4 * RT_REPORT_LINE_MAX];
	for (const char *at = text; *at;) {
		size_t len = strcspn(at, "\n");
		if (len < sizeof(line)) {
			memcpy(line, at, len);
			line[len] = '\0';
			if (rt_report_read_json(line, &w->found) == RT_READ_OK &&
			    w->found.rec.round == w->round &&
			    strcmp(w->found.trigger, RT_REPORT_TRIGGER_PYTHON) != 0)
				return true;
		}
		at += len + (at[len] == '\n');
	}
	return false;
}

/* What bench_status_has_rounds looks for, and what it read. */
struct bench_status_wait {
	uint64_t rounds;
	struct rt_status_read found;
};

/* For bench_wait_file: whether the status file's text, read whole (not caught in a rewrite),
 * says the library counted rounds rounds. */
static inline bool
bench_status_has_rounds(const char *text, void *ctx)
{
	struct bench_status_wait *w = ctx;
	return rt_report_read_status(text, &w->found) == RT_READ_OK &&
	       w->found.st.rounds == w->rounds;
}

/* The files of the roundtrim preloaded into this process. */
struct bench_files {
	char fifo[PATH_MAX], stats[PATH_MAX], status[PATH_MAX];
};

/* Finds them by its ROUNDTRIM_FIFO and ROUNDTRIM_STATS; dies, naming the option that needs
 * them, when one is missing, and when either is no path template. */
static inline void
bench_files_of_this_process(struct bench_files *f, const char *option)
{
	const char *fifo = getenv("ROUNDTRIM_FIFO"), *stats = getenv("ROUNDTRIM_STATS");
	if (!fifo || !stats)
		bench_die("%s needs ROUNDTRIM_FIFO and ROUNDTRIM_STATS", option);
	if (!rt_path_expand(f->fifo, sizeof(f->fifo), fifo, getpid()) ||
	    !rt_path_expand(f->stats, sizeof(f->stats), stats, getpid()) ||
	    !rt_path_status_for_fifo(f->status, sizeof(f->status), f->fifo))
		bench_die("ROUNDTRIM_FIFO or ROUNDTRIM_STATS is no path template");
}

/* Waits until the library has started in this process: its status file says 0 rounds. */
static inline void
bench_wait_started(const struct bench_files *f, char *buf, size_t size, int timeout_ms)
{
	int status_fd = bench_watch_dir(f->status, IN_MODIFY | IN_CREATE);
	struct bench_status_wait started = {.rounds = 0};
	if (!bench_wait_file(status_fd, f->status, bench_status_has_rounds, &started, buf, size,
	                     timeout_ms))
		bench_die("roundtrim is not running in this process (no %s)", f->status);
	close(status_fd);
}

#endif
