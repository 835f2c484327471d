/* rt_trace: one reading of the process's allocation counters, and its one-line text form.
 * Owns the fields of a reading, which of them may be unknown, and the trace line's format. */
#ifndef RT_TRACE_H
#define RT_TRACE_H

#include <stddef.h>
#include <stdint.h>

/* The value of an optional field that the reader did not measure; written as "-". */
#define RT_TRACE_UNKNOWN UINT64_MAX
/* Room for the longest line: nine 20-digit fields, their separators, the newline and a NUL. */
#define RT_TRACE_LINE_MAX 192

/* Cumulative counts are summed over every thread the process ever had, the way
 * roundtrim_thread_counts counts them: realloc is one allocation of its new size (and one free
 * when the new size is 0); calloc's size is count * size. */
struct rt_reading {
	uint64_t t_us;            /* CLOCK_MONOTONIC, in microseconds */
	uint64_t allocations;     /* cumulative */
	uint64_t bytes_requested; /* cumulative, the sizes asked for */
	uint64_t frees;           /* cumulative */
	/* Optional, RT_TRACE_UNKNOWN when not measured: the cumulative usable size of the blocks
	 * freed (realloc's old block too); the allocator's bytes in use at t_us (mallinfo2:
	 * uordblks + hblkhd); the resident set; the CPU time of the whole process
	 * (CLOCK_PROCESS_CPUTIME_ID), cumulative; the bytes the process's threads handed to
	 * send, sendto, sendmsg and sendmmsg (what the kernel took), cumulative. */
	uint64_t bytes_freed;
	uint64_t live_bytes;
	uint64_t rss_kib;
	uint64_t cpu_us;
	uint64_t bytes_sent;
};

enum rt_trace_line {
	RT_TRACE_READING, /* the line held a reading */
	RT_TRACE_SKIP,    /* a comment ('#') or an empty line */
	RT_TRACE_BAD,     /* anything else: the reading is left alone */
};

/* The first line of a trace file, a comment that names the format (RT_TRACE_FORMAT) and its
 * fields. Format 1 ended after cpu_us. */
#define RT_TRACE_FORMAT 2
#define RT_TRACE_HEADER                                                                            \
	"# rt_trace 2: t_us allocations bytes_requested frees bytes_freed live_bytes rss_kib "     \
	"cpu_us bytes_sent\n"

/* What a reader of one file has learnt from its lines so far: the format its header named, 1 or
 * RT_TRACE_FORMAT; RT_TRACE_FORMAT_NONE before any header (the first recorders wrote none: a
 * reading then has the fields of either format); RT_TRACE_FORMAT_UNKNOWN after a header of a
 * format not known here, whose readings are all bad. */
#define RT_TRACE_FORMAT_NONE 0u
#define RT_TRACE_FORMAT_UNKNOWN 0xffffffffu
struct rt_trace_reader {
	unsigned format;
};
#define RT_TRACE_READER_INIT                                                                       \
	{                                                                                          \
		RT_TRACE_FORMAT_NONE                                                               \
	}

/* Writes one reading as its fields in the order of struct rt_reading, separated by one blank,
 * ending in a newline (decimal, "-" for an unknown optional field). Returns the length without the
 * NUL, or 0 when size is too small (then buf holds ""). No allocation, no locale: safe on any
 * thread. */
size_t rt_trace_format(char *buf, size_t size, const struct rt_reading *reading);

/* Reads one line of a file as rt_trace_format writes it (the newline is optional), in the
 * format the file's header named: a header ("# rt_trace N:") sets reader's format and is
 * skipped, as any other comment is. The four cumulative fields and t_us must be numbers; "-" is
 * accepted only for the optional ones. A reading of format 1 has one field fewer and reads with
 * bytes_sent unknown; once a header named the format, a line cut short or a field too many is
 * bad. */
enum rt_trace_line rt_trace_parse(struct rt_trace_reader *reader, const char *line,
                                  struct rt_reading *reading);

#endif
