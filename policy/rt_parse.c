#include "rt_parse.h"

#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

static bool
rt_parse_is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* ASCII only: strcasecmp follows the locale, and in a Turkish one 'I' does not lower to 'i'. */
static char
rt_parse_lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Whether text starts with prefix, ignoring case; *rest is set past the prefix when it does. */
static bool
rt_parse_prefix(const char *text, const char *prefix, const char **rest)
{
	for (; *prefix; text++, prefix++) {
		if (rt_parse_lower(*text) != rt_parse_lower(*prefix))
			return false;
	}
	*rest = text;
	return true;
}

static bool
rt_parse_word(const char *text, const char *word)
{
	const char *rest;
	return rt_parse_prefix(text, word, &rest) && *rest == '\0';
}

enum rt_parse_result
rt_parse_u64(const char *text, uint64_t max, uint64_t *out)
{
	if (text[0] == '\0')
		return RT_PARSE_EMPTY;
	const char *digits = text[0] == '-' ? text + 1 : text;
	if (digits[0] == '\0')
		return RT_PARSE_GARBAGE;
	for (const char *s = digits; *s; s++) {
		if (!rt_parse_is_digit(*s))
			return RT_PARSE_GARBAGE;
	}
	if (digits != text)
		return RT_PARSE_NEGATIVE;
	uint64_t value = 0;
	for (const char *s = digits; *s; s++) {
		uint64_t d = (uint64_t)(*s - '0');
		if (value > (UINT64_MAX - d) / 10)
			return RT_PARSE_OVERFLOW;
		value = value * 10 + d;
	}
	if (value > max)
		return RT_PARSE_OVERFLOW;
	*out = value;
	return RT_PARSE_OK;
}

/* Digits then a unit among units[i] (each worth scale[i]); value * scale must stay <= max. */
static enum rt_parse_result
rt_parse_with_unit(const char *text, const char *const *units, const uint64_t *scale,
                   bool unit_needed, uint64_t max, uint64_t *out)
{
	if (text[0] == '\0')
		return RT_PARSE_EMPTY;
	if (text[0] == '-')
		return RT_PARSE_NEGATIVE;
	const char *s = text;
	uint64_t value = 0;
	bool overflow = false;
	for (; rt_parse_is_digit(*s); s++) {
		uint64_t d = (uint64_t)(*s - '0');
		if (value > (UINT64_MAX - d) / 10)
			overflow = true;
		else
			value = value * 10 + d;
	}
	if (s == text)
		return RT_PARSE_GARBAGE;
	uint64_t unit = 1;
	/* Nothing needs no unit: "0" is 0 of any. */
	if (*s || (unit_needed && value != 0)) {
		size_t i = 0;
		for (; units[i]; i++)
			if (rt_parse_word(s, units[i]))
				break;
		if (!units[i])
			return RT_PARSE_GARBAGE;
		unit = scale[i];
	}
	if (overflow || value > max / unit)
		return RT_PARSE_OVERFLOW;
	*out = value * unit;
	return RT_PARSE_OK;
}

/* A duration's units, the one list that reads and writes them. */
static const char *const rt_parse_duration_units[] = {"ms", "s", "m", "h", NULL};
static const uint64_t rt_parse_duration_scale[] = {1, 1000, 60000, 3600000};

enum rt_parse_result
rt_parse_duration_ms(const char *text, uint64_t max_ms, uint64_t *out)
{
	return rt_parse_with_unit(text, rt_parse_duration_units, rt_parse_duration_scale, true,
	                          max_ms, out);
}

size_t
rt_parse_duration_text(uint64_t ms, char *out, size_t size)
{
	size_t u =
	    ms ? sizeof(rt_parse_duration_scale) / sizeof(rt_parse_duration_scale[0]) - 1 : 1;
	while (u > 0 && ms % rt_parse_duration_scale[u])
		u--;
	int n = snprintf(out, size, "%" PRIu64 "%s", ms / rt_parse_duration_scale[u],
	                 rt_parse_duration_units[u]);
	return n < 0 ? 0 : (size_t)n;
}

enum rt_parse_result
rt_parse_size(const char *text, uint64_t max, uint64_t *out)
{
	static const char *const units[] = {"K", "KiB", "M", "MiB", "G", "GiB", "T", "TiB", NULL};
	static const uint64_t scale[] = {UINT64_C(1) << 10, UINT64_C(1) << 10, UINT64_C(1) << 20,
	                                 UINT64_C(1) << 20, UINT64_C(1) << 30, UINT64_C(1) << 30,
	                                 UINT64_C(1) << 40, UINT64_C(1) << 40};
	return rt_parse_with_unit(text, units, scale, false, max, out);
}

enum rt_parse_result
rt_parse_percent(const char *text, uint64_t *out)
{
	static const char *const units[] = {"%", NULL};
	static const uint64_t scale[] = {1};
	uint64_t value;
	enum rt_parse_result r = rt_parse_with_unit(text, units, scale, false, 100, &value);
	if (r != RT_PARSE_OK)
		return r;
	if (value == 0)
		return RT_PARSE_GARBAGE;
	*out = value;
	return RT_PARSE_OK;
}

static bool
rt_parse_is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

enum rt_parse_result
rt_parse_python_int(const char *text, int64_t *out)
{
	const char *s = text;
	while (rt_parse_is_blank(*s))
		s++;
	if (*s == '\0')
		return RT_PARSE_EMPTY;
	bool negative = *s == '-';
	if (*s == '-' || *s == '+')
		s++;
	if (!rt_parse_is_digit(*s))
		return RT_PARSE_GARBAGE;
	uint64_t value = 0;
	bool saturated = false;
	for (; rt_parse_is_digit(*s) || (*s == '_' && rt_parse_is_digit(s[1])); s++) {
		if (*s == '_')
			continue;
		uint64_t d = (uint64_t)(*s - '0');
		if (value > ((uint64_t)INT64_MAX - d) / 10)
			saturated = true;
		else
			value = value * 10 + d;
	}
	while (rt_parse_is_blank(*s))
		s++;
	if (*s != '\0')
		return RT_PARSE_GARBAGE;
	if (saturated)
		value = INT64_MAX;
	*out = negative ? -(int64_t)value : (int64_t)value;
	return RT_PARSE_OK;
}

bool
rt_parse_word_in(const char *text, const char *const *words)
{
	for (; *words; words++) {
		if (rt_parse_word(text, *words))
			return true;
	}
	return false;
}

/* Names of signals the host or the C runtime relies on, without their "SIG" prefix. */
static const char *const rt_parse_reserved_signals[] = {
    "HUP",  "INT",  "QUIT", "ILL",    "TRAP", "ABRT",  "IOT",  "BUS",  "FPE",  "KILL", "SEGV",
    "PIPE", "ALRM", "TERM", "STKFLT", "CHLD", "CLD",   "CONT", "STOP", "TSTP", "TTIN", "TTOU",
    "URG",  "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO",   "POLL", "PWR",  "SYS",  NULL,
};

/* "RTMIN", "RTMIN+N", "RTMAX" or "RTMAX-N" once the "RTMIN"/"RTMAX" word is known to lead. */
static enum rt_parse_result
rt_parse_rt_offset(const char *rest, char sign, int base, int sigrtmin, int sigrtmax, int *out)
{
	if (rest[0] == '\0') {
		*out = base;
		return RT_PARSE_OK;
	}
	if (rest[0] != sign)
		return RT_PARSE_GARBAGE;
	uint64_t n;
	enum rt_parse_result r = rt_parse_u64(rest + 1, (uint64_t)(sigrtmax - sigrtmin), &n);
	if (r == RT_PARSE_OVERFLOW)
		return r;
	if (r != RT_PARSE_OK)
		return RT_PARSE_GARBAGE;
	*out = sign == '+' ? base + (int)n : base - (int)n;
	return RT_PARSE_OK;
}

static enum rt_parse_result
rt_parse_signal_number(const char *text, int sigrtmin, int sigrtmax, int *out)
{
	uint64_t n;
	enum rt_parse_result r = rt_parse_u64(text, (uint64_t)sigrtmax, &n);
	if (r != RT_PARSE_OK)
		return r;
	if (n == 0)
		return RT_PARSE_GARBAGE;
	if (n == SIGUSR1 || n == SIGUSR2 || n >= (uint64_t)sigrtmin) {
		*out = (int)n;
		return RT_PARSE_OK;
	}
	return RT_PARSE_RESERVED;
}

enum rt_parse_result
rt_parse_signal(const char *text, int sigrtmin, int sigrtmax, int *out)
{
	if (text[0] == '\0')
		return RT_PARSE_EMPTY;
	if (rt_parse_word(text, "none")) {
		*out = 0;
		return RT_PARSE_OK;
	}
	if (rt_parse_is_digit(text[0]) || text[0] == '-')
		return rt_parse_signal_number(text, sigrtmin, sigrtmax, out);
	const char *name = text;
	const char *rest;
	rt_parse_prefix(text, "SIG", &name);
	if (rt_parse_word(name, "USR1")) {
		*out = SIGUSR1;
		return RT_PARSE_OK;
	}
	if (rt_parse_word(name, "USR2")) {
		*out = SIGUSR2;
		return RT_PARSE_OK;
	}
	if (rt_parse_prefix(name, "RTMIN", &rest))
		return rt_parse_rt_offset(rest, '+', sigrtmin, sigrtmin, sigrtmax, out);
	if (rt_parse_prefix(name, "RTMAX", &rest))
		return rt_parse_rt_offset(rest, '-', sigrtmax, sigrtmin, sigrtmax, out);
	if (rt_parse_word_in(name, rt_parse_reserved_signals))
		return RT_PARSE_RESERVED;
	return RT_PARSE_GARBAGE;
}

void
rt_parse_signal_name(int sig, int sigrtmin, int sigrtmax, char *out, size_t size)
{
	int half = (sigrtmax - sigrtmin) / 2;
	if (sig == SIGUSR1)
		snprintf(out, size, "USR1");
	else if (sig == SIGUSR2)
		snprintf(out, size, "USR2");
	else if (sig == sigrtmin)
		snprintf(out, size, "RTMIN");
	else if (sig > sigrtmin && sig - sigrtmin <= half)
		snprintf(out, size, "RTMIN+%d", sig - sigrtmin);
	else if (sig == sigrtmax)
		snprintf(out, size, "RTMAX");
	else if (sig > sigrtmin && sig < sigrtmax)
		snprintf(out, size, "RTMAX-%d", sigrtmax - sig);
	else
		snprintf(out, size, "%d", sig);
}

enum rt_parse_result
rt_parse_pid(const char *text, int *out)
{
	uint64_t value;
	enum rt_parse_result r = rt_parse_u64(text, INT_MAX, &value);
	if (r != RT_PARSE_OK)
		return r;
	if (text[0] == '0')
		return RT_PARSE_GARBAGE;
	*out = (int)value;
	return RT_PARSE_OK;
}

enum rt_parse_result
rt_parse_seconds(const char *text, uint64_t max_us, uint64_t *out)
{
	if (text[0] == '\0')
		return RT_PARSE_EMPTY;
	if (text[0] == '-')
		return RT_PARSE_NEGATIVE;
	uint64_t us = 0;
	const char *s = text;
	for (; rt_parse_is_digit(*s); s++) {
		us = us * 10 + (uint64_t)(*s - '0');
		if (us > max_us / 1000000)
			return RT_PARSE_OVERFLOW;
	}
	if (s == text)
		return RT_PARSE_GARBAGE;
	us *= 1000000;
	if (*s == '.') {
		const char *decimals = ++s;
		uint64_t scale = 100000;
		for (; rt_parse_is_digit(*s); s++, scale /= 10)
			us += (uint64_t)(*s - '0') * scale;
		if (s == decimals)
			return RT_PARSE_GARBAGE;
	}
	if (*s)
		return RT_PARSE_GARBAGE;
	if (us > max_us)
		return RT_PARSE_OVERFLOW;
	*out = us;
	return RT_PARSE_OK;
}

const char *
rt_parse_result_text(enum rt_parse_result result)
{
	switch (result) {
	case RT_PARSE_OK:
		return "ok";
	case RT_PARSE_EMPTY:
		return "empty";
	case RT_PARSE_GARBAGE:
		return "not a valid value";
	case RT_PARSE_NEGATIVE:
		return "negative";
	case RT_PARSE_OVERFLOW:
		return "too large";
	case RT_PARSE_RESERVED:
		return "a signal reserved for the system";
	case RT_PARSE_RELATIVE:
		return "not an absolute path";
	case RT_PARSE_TEMPLATE:
		return "not a valid template ('%' must start %p or %%)";
	case RT_PARSE_TOO_LONG:
		return "too long";
	case RT_PARSE_EMPTY_ITEM:
		return "a list with an empty pattern";
	}
	return "not a valid value";
}
