/* rt_parse: strict parsing of scalar values (integers, booleans, signal names).
 * Owns what counts as a valid value; callers own the messages and fallbacks. */
#ifndef RT_PARSE_H
#define RT_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum rt_parse_result {
	RT_PARSE_OK,
	RT_PARSE_EMPTY,
	RT_PARSE_GARBAGE,
	RT_PARSE_NEGATIVE,
	RT_PARSE_OVERFLOW,   /* larger than the allowed maximum */
	RT_PARSE_RESERVED,   /* a valid signal that the host or glibc needs for itself */
	RT_PARSE_RELATIVE,   /* a path that is not absolute */
	RT_PARSE_TEMPLATE,   /* a path template with a '%' that starts neither %p nor %% */
	RT_PARSE_TOO_LONG,   /* a path or list longer than its buffer */
	RT_PARSE_EMPTY_ITEM, /* a list with an empty element */
};

/* Decimal digits only: no sign, no blanks, no base prefix. Values above max are OVERFLOW. */
enum rt_parse_result rt_parse_u64(const char *text, uint64_t max, uint64_t *out);

/* Python's int(text) in base 10, as NVFlare parses its integer variables: surrounding ASCII
 * blanks, one sign, digits with single underscores between them. Values beyond the int64 range
 * saturate. */
enum rt_parse_result rt_parse_python_int(const char *text, int64_t *out);

/* A duration with its unit: "250ms", "90s", "5m", "2h" (one number, one unit, no blank; "0"
 * needs none).
 * Values above max_ms are OVERFLOW. */
enum rt_parse_result rt_parse_duration_ms(const char *text, uint64_t max_ms, uint64_t *out);
/* A duration in ms as rt_parse_duration_ms reads it, in its largest whole unit ("1m",
 * "1500ms", "0ms"); returns the length snprintf would. */
size_t rt_parse_duration_text(uint64_t ms, char *out, size_t size);
/* A size: bytes, or a number with K, M, G or T (binary multiples; "KiB", "MiB", ... too). */
enum rt_parse_result rt_parse_size(const char *text, uint64_t max, uint64_t *out);
/* A percentage from 1 to 100, with or without a trailing '%'. */
enum rt_parse_result rt_parse_percent(const char *text, uint64_t *out);

/* Case-insensitive match of text against a NULL-terminated list of words. */
bool rt_parse_word_in(const char *text, const char *const *words);

/* A signal usable as a round trigger: "USR2", "SIGUSR2", "RTMIN+N", "SIGRTMAX-N", a number, or
 * "none" (returns 0). Signals the host needs for itself (KILL, STOP, SEGV, TERM, CHLD, ...) and
 * glibc's reserved real-time signals are refused with RESERVED. */
enum rt_parse_result rt_parse_signal(const char *text, int sigrtmin, int sigrtmax, int *out);

/* The name of a trigger signal as rt_parse_signal reads it and kill -l writes it: "USR1",
 * "USR2", "RTMIN+n" in the lower half of the real-time range, "RTMAX-n" in the upper half; the
 * number for any other signal. */
void rt_parse_signal_name(int sig, int sigrtmin, int sigrtmax, char *out, size_t size);

/* A process id as the command takes it: decimal digits without a leading zero, 1 to INT_MAX. */
enum rt_parse_result rt_parse_pid(const char *text, int *out);

/* Seconds with an optional decimal part ("30", "0.25"), into microseconds; decimals past the
 * sixth are dropped. Values above max_us are OVERFLOW. */
enum rt_parse_result rt_parse_seconds(const char *text, uint64_t max_us, uint64_t *out);

const char *rt_parse_result_text(enum rt_parse_result result);

#endif
