/* rt_report: the text of what the library tells the user about a round and about itself.
 * Owns the [RSS] line, the stats JSON lines, the status JSON and the Prometheus file: the
 * writers in rt_report.c (which the library links), their readers in command/rt_report_read.c. */
#ifndef RT_REPORT_H
#define RT_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RT_REPORT_LINE_MAX 1024

/* The trigger of the record that Python steps write once they ran on the interpreter's main
 * thread, after their round's own record: it names that round, and is no round of its own. */
#define RT_REPORT_TRIGGER_PYTHON "python"

struct rt_round_record {
	int pid;
	uint64_t round;
	const char *trigger; /* "signal", "fifo", "api", "auto" */
	/* A round the library found itself (trigger "auto"): how sure the detector was of its end,
	 * 0 to 1000 (policy/rt_detect's confidence_permille); written only with that trigger. */
	uint32_t confidence_permille;
	const char *action;    /* "malloc_trim", "jemalloc_purge", "jemalloc_decay", "none" */
	const char *allocator; /* "glibc", "jemalloc", ... */
	/* Whose descriptor table holds the library's files: "private", "keeper", "shared"
	 * (rt_file_table_word); NULL: "none". */
	const char *descriptors;
	uint64_t rss_before_kib;
	uint64_t rss_after_kib;
	/* RSS after the round split by smaps_rollup (an action round only; 0 otherwise): anonymous
	 * memory in use, file-backed, and pages given back with MADV_FREE but still resident. */
	uint64_t anon_kib;
	uint64_t file_kib;
	uint64_t lazyfree_kib;
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
	const char *mode; /* "auto", "announced", "manual" */
	const char *program;
	const char *allocator;
	const char *descriptors; /* as in the round record */
	uint64_t rounds;
	/* Of them, those the library found itself, and how sure it was of the last (0 to 1000;
	 * 0 before the first). */
	uint64_t detected_rounds;
	uint32_t last_confidence_permille;
	uint32_t gc_rounds;
	uint64_t actions;
	uint64_t last_action_round;
	const char *last_action;
	const char *last_trigger;    /* what called for it, "none" before the first */
	int64_t last_action_unix_us; /* 0 when no action yet */
	/* The last action's own figures, so that a caller who asked for it can report it. */
	uint64_t last_rss_before_kib;
	uint64_t last_rss_after_kib;
	uint64_t last_duration_us;
	const char *last_note; /* "" when none */
	uint64_t rss_kib;
	uint64_t live_kib;
	uint64_t released_total_kib;
	const char *action_limits; /* what the action cannot reach; "" when it reaches all */
	const char *fifo;          /* "" when none */
	int signal;                /* 0 when none */
	const char *stats;         /* "" when none */
	uint64_t unknown_lines;
	uint64_t oversized_lines;
	/* Records of the library's files (stats, log, sites, trace, status, Prometheus) dropped
	 * whole because the file could not take them (a full volume, a file-size limit). */
	uint64_t lost_records;
	/* The pid of the parent whose heap it shares, a fork child that has not exec'd
	 * (policy/rt_child); 0 in a process of its own, and in a record of a version without it. */
	int fork_of;
};

uint64_t rt_report_released_kib(const struct rt_round_record *rec);
/* Whether the record is the release after a round's Python steps (RT_REPORT_TRIGGER_PYTHON):
 * part of its round's action, not an action or a round of its own. */
bool rt_report_is_follow_up(const struct rt_round_record *rec);

/* Copies at most max bytes of in so that the result stays one line of printable ASCII: every
 * other byte (controls, DEL, and every byte of UTF-8 or of a C1 control, which a terminal would
 * act on) becomes \xNN; with quoted (a value between double quotes), '"' and '\' are escaped
 * too. "..." marks what was cut. out must hold max * 4 + 4. */
void rt_report_escape(char *out, size_t size, const char *in, size_t max, bool quoted);

/* Writes s as a JSON string body, escaped (paths and program names may hold quotes or control
 * bytes); returns the length it needed, truncated to size - 1 like snprintf. */
size_t rt_report_json_string(char *buf, size_t size, const char *s);

/* Process-wide figures for the Prometheus file (node_exporter's textfile collector). */
struct rt_prom_record {
	int pid;
	const char *program;
	const char *allocator;
	const char *action;
	const char *version;
	uint64_t rounds;
	uint64_t detected_rounds;          /* as the status record's */
	uint32_t last_confidence_permille; /* as the status record's */
	uint64_t actions;
	uint64_t released_total_kib;
	uint64_t rss_kib;
	uint64_t last_rss_before_kib;
	uint64_t last_rss_after_kib;
	int64_t last_action_unix_us; /* 0 when no action yet */
	uint64_t lost_records;       /* as the status record's */
};

/* Each returns the length written (without the NUL), truncated to size - 1. */
/* KiB as MiB with one decimal, rounded: how every MiB and MB figure of the project is written. */
size_t rt_report_mib(char *buf, size_t size, uint64_t kib);
/* Microseconds as milliseconds with three decimals. */
size_t rt_report_ms(char *buf, size_t size, uint64_t us);
/* How long before now_us then_us was: "42s ago" under two minutes, then minutes, hours under
 * two days, days; "never" when then_us is 0. */
size_t rt_report_ago(char *buf, size_t size, int64_t now_us, int64_t then_us);
/* The status array's object for a process that carries the library without a FIFO:
 * {"pid":N,"program":"NAME","fifo":""} (roundtrim(1), status). */
size_t rt_report_inactive_json(char *buf, size_t size, int pid, const char *program);

/* Lines end in '\n'. */
size_t rt_report_rss_line(char *buf, size_t size, const struct rt_round_record *rec);
size_t rt_report_json(char *buf, size_t size, const struct rt_round_record *rec);
size_t rt_report_status_json(char *buf, size_t size, const struct rt_status_record *st);
/* The whole Prometheus text file; a comment line closes it (the file is rewritten in place,
 * and a reader sees whether it got all of it). */
size_t rt_report_prom(char *buf, size_t size, const struct rt_prom_record *pr);

/* --- Readers (command/rt_report_read.c: the command and the tests link them, the library does
 * not). */

enum rt_read_result {
	RT_READ_OK,
	RT_READ_TORN, /* a status file caught in the middle of a rewrite: read it again */
	RT_READ_BAD,  /* not a line or object of this format */
};

#define RT_REPORT_WORD_MAX 64
#define RT_REPORT_TEXT_MAX 512

/* A record read back, with the strings it points to. */
struct rt_round_read {
	struct rt_round_record rec;
	char trigger[RT_REPORT_WORD_MAX], action[RT_REPORT_WORD_MAX];
	char allocator[RT_REPORT_WORD_MAX], python[RT_REPORT_WORD_MAX], cuda[RT_REPORT_WORD_MAX];
	char descriptors[RT_REPORT_WORD_MAX]; /* "" in a record of a version without it */
	char note[RT_REPORT_TEXT_MAX];
};

struct rt_status_read {
	struct rt_status_record st;
	char program[RT_REPORT_TEXT_MAX], allocator[RT_REPORT_WORD_MAX];
	char descriptors[RT_REPORT_WORD_MAX]; /* "" in a status of a version without it */
	char last_action[RT_REPORT_WORD_MAX], last_note[RT_REPORT_TEXT_MAX];
	char mode[RT_REPORT_WORD_MAX], last_trigger[RT_REPORT_WORD_MAX];
	char fifo[RT_REPORT_TEXT_MAX], stats[RT_REPORT_TEXT_MAX];
	char action_limits[RT_REPORT_TEXT_MAX];
	uint64_t last_released_kib;
};

/* One stats line (rt_report_json's output); trailing blanks and newline allowed. */
enum rt_read_result rt_report_read_json(const char *line, struct rt_round_read *out);
/* One [RSS] line (rt_report_rss_line's output). Its MB figures have one decimal: the KiB read
 * back are rounded to 0.1 MiB. */
enum rt_read_result rt_report_read_rss_line(const char *line, struct rt_round_read *out);
/* A status file's content. */
enum rt_read_result rt_report_read_status(const char *text, struct rt_status_read *out);

#endif
