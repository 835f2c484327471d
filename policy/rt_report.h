/* rt_report: the text of what the library tells the user about a round and about itself.
 * Owns the [RSS] profile line, the JSON-lines stats object and the status file's JSON. */
#ifndef RT_REPORT_H
#define RT_REPORT_H

#include <stddef.h>
#include <stdint.h>

#define RT_REPORT_LINE_MAX 1024

struct rt_round_record {
	int pid;
	uint64_t round;
	const char *trigger;   /* "signal", "fifo", "api" */
	const char *action;    /* "malloc_trim", "jemalloc_purge", "jemalloc_decay", "none" */
	const char *allocator; /* "glibc", "jemalloc", ... */
	uint64_t rss_before_kib;
	uint64_t rss_after_kib;
	uint64_t live_kib;
	uint64_t duration_us;
	int64_t unix_time_us;
	const char *note; /* free text about steps skipped or failed; "" when none */
	/* The Python steps (rt_python_rules): NULL when the round reports none (not a CPython
	 * process, or no action this round), else the outcome word; then gc_collected is the
	 * count PyGC_Collect returned, -1 when it did not run, and cuda the CUDA cache's word. */
	const char *python;
	int64_t gc_collected;
	const char *cuda;
};

struct rt_status_record {
	int pid;
	/* Written first and last ("seq", "seq_end"): the file is rewritten in place, and a reader
	 * that catches a write half done sees them differ and reads again. */
	uint64_t seq;
	const char *program;
	const char *allocator;
	uint64_t rounds;
	uint32_t gc_rounds;
	uint64_t actions;
	uint64_t last_action_round;
	const char *last_action;
	int64_t last_action_unix_us; /* 0 when no action yet */
	/* The last action's own figures, so that a caller who asked for it can report it. */
	uint64_t last_rss_before_kib;
	uint64_t last_rss_after_kib;
	uint64_t last_duration_us;
	const char *last_note; /* "" when none */
	uint64_t rss_kib;
	uint64_t live_kib;
	uint64_t released_total_kib;
	const char *fifo;  /* "" when none */
	int signal;        /* 0 when none */
	const char *stats; /* "" when none */
	uint64_t unknown_lines;
	uint64_t oversized_lines;
};

uint64_t rt_report_released_kib(const struct rt_round_record *rec);

/* Each returns the length written (without the NUL), truncated to size - 1; lines end in '\n'. */
size_t rt_report_rss_line(char *buf, size_t size, const struct rt_round_record *rec);
size_t rt_report_json(char *buf, size_t size, const struct rt_round_record *rec);
size_t rt_report_status_json(char *buf, size_t size, const struct rt_status_record *st);

#endif
