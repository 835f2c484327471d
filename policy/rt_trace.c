#include "rt_trace.h"

#include <stdbool.h>

#define RT_TRACE_FIELDS 9
/* Format 1 ended after cpu_us. */
#define RT_TRACE_FIELDS_V1 8
#define RT_TRACE_HEADER_START "# rt_trace "
#define RT_TRACE_FIRST_OPTIONAL 4

static uint64_t *
rt_trace_field(struct rt_reading *r, int index)
{
	uint64_t *fields[RT_TRACE_FIELDS] = {&r->t_us,    &r->allocations, &r->bytes_requested,
	                                     &r->frees,   &r->bytes_freed, &r->live_bytes,
	                                     &r->rss_kib, &r->cpu_us,      &r->bytes_sent};
	return fields[index];
}

/* Appends text at *len; false once it would not fit with its NUL. */
static bool
rt_trace_put(char *buf, size_t size, size_t *len, const char *text, size_t n)
{
	if (*len + n + 1 > size)
		return false;
	for (size_t i = 0; i < n; i++)
		buf[(*len)++] = text[i];
	buf[*len] = '\0';
	return true;
}

static bool
rt_trace_put_u64(char *buf, size_t size, size_t *len, uint64_t value, bool optional)
{
	if (optional && value == RT_TRACE_UNKNOWN)
		return rt_trace_put(buf, size, len, "-", 1);
	char digits[20];
	size_t n = sizeof(digits);
	do {
		digits[--n] = (char)('0' + value % 10);
		value /= 10;
	} while (value);
	return rt_trace_put(buf, size, len, digits + n, sizeof(digits) - n);
}

size_t
rt_trace_format(char *buf, size_t size, const struct rt_reading *reading)
{
	struct rt_reading copy = *reading;
	size_t len = 0;
	if (size == 0)
		return 0;
	buf[0] = '\0';
	for (int i = 0; i < RT_TRACE_FIELDS; i++) {
		if ((i > 0 && !rt_trace_put(buf, size, &len, " ", 1)) ||
		    !rt_trace_put_u64(buf, size, &len, *rt_trace_field(&copy, i),
		                      i >= RT_TRACE_FIRST_OPTIONAL) ||
		    (i == RT_TRACE_FIELDS - 1 && !rt_trace_put(buf, size, &len, "\n", 1))) {
			buf[0] = '\0';
			return 0;
		}
	}
	return len;
}

/* One field at *p: digits (at most UINT64_MAX - 1, which stays free for "unknown") or, when
 * optional, "-". Moves *p past it. */
static bool
rt_trace_parse_field(const char **p, bool optional, uint64_t *out)
{
	const char *s = *p;
	if (*s == '-') {
		if (!optional)
			return false;
		*out = RT_TRACE_UNKNOWN;
		*p = s + 1;
		return true;
	}
	if (*s < '0' || *s > '9')
		return false;
	uint64_t value = 0;
	for (; *s >= '0' && *s <= '9'; s++) {
		uint64_t digit = (uint64_t)(*s - '0');
		if (value > (UINT64_MAX - 1 - digit) / 10)
			return false;
		value = value * 10 + digit;
	}
	*out = value;
	*p = s;
	return true;
}

/* A comment's format, where it is a header (RT_TRACE_HEADER_START, a number, ':'): 1,
 * RT_TRACE_FORMAT or RT_TRACE_FORMAT_UNKNOWN; RT_TRACE_FORMAT_NONE where it is no header. */
static unsigned
rt_trace_header_format(const char *line)
{
	const char *h = RT_TRACE_HEADER_START;
	size_t n = 0;
	while (h[n] && line[n] == h[n])
		n++;
	if (h[n])
		return RT_TRACE_FORMAT_NONE;
	const char *p = line + n;
	uint64_t format;
	if (!rt_trace_parse_field(&p, false, &format) || *p != ':')
		return RT_TRACE_FORMAT_NONE;
	return format == 1 || format == RT_TRACE_FORMAT ? (unsigned)format
	                                                : RT_TRACE_FORMAT_UNKNOWN;
}

enum rt_trace_line
rt_trace_parse(struct rt_trace_reader *reader, const char *line, struct rt_reading *reading)
{
	const char *p = line;
	if (*p == '#') {
		unsigned format = rt_trace_header_format(line);
		if (format != RT_TRACE_FORMAT_NONE)
			reader->format = format;
		return RT_TRACE_SKIP;
	}
	if (*p == '\0' || (*p == '\n' && p[1] == '\0'))
		return RT_TRACE_SKIP;
	if (reader->format == RT_TRACE_FORMAT_UNKNOWN)
		return RT_TRACE_BAD;
	/* Without a header, a reading of either format: format 1's ends after cpu_us. */
	bool either = reader->format == RT_TRACE_FORMAT_NONE;
	int fields = reader->format == 1 ? RT_TRACE_FIELDS_V1 : RT_TRACE_FIELDS;
	struct rt_reading parsed;
	parsed.bytes_sent = RT_TRACE_UNKNOWN;
	for (int i = 0; i < fields; i++) {
		if (either && i == RT_TRACE_FIELDS_V1 && (*p == '\0' || *p == '\n'))
			break;
		if (i > 0 && *p++ != ' ')
			return RT_TRACE_BAD;
		if (!rt_trace_parse_field(&p, i >= RT_TRACE_FIRST_OPTIONAL,
		                          rt_trace_field(&parsed, i)))
			return RT_TRACE_BAD;
	}
	if (*p == '\n')
		p++;
	if (*p != '\0')
		return RT_TRACE_BAD;
	*reading = parsed;
	return RT_TRACE_READING;
}
