/* options: the command lines of the workloads and bench programs. Owns the table of long options
 * (a name, a kind, where its value goes), parsed by getopt_long with every value checked whole. */
#ifndef OPTIONS_H
#define OPTIONS_H

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "workload.h"

enum wl_option_kind {
	WL_OPT_INT,    /* int */
	WL_OPT_LONG,   /* long */
	WL_OPT_U64,    /* uint64_t */
	WL_OPT_SIZE,   /* size_t */
	WL_OPT_DOUBLE, /* double */
	WL_OPT_RANGE,  /* struct wl_range: "MIN:MAX" or one value */
	WL_OPT_STRING, /* const char * */
	WL_OPT_SET,    /* int, set to 1 by the bare option */
	WL_OPT_CLEAR,  /* int, set to 0 by the bare option */
};

struct wl_option {
	const char *name; /* without the leading "--" */
	enum wl_option_kind kind;
	void *value;
};

#define WL_OPTIONS_MAX 32

static inline bool
wl_option_value(const struct wl_option *o, const char *text)
{
	char *end = NULL;
	errno = 0;
	switch (o->kind) {
	case WL_OPT_INT: {
		long v = strtol(text, &end, 10);
		if (v < INT_MIN || v > INT_MAX)
			return false;
		*(int *)o->value = (int)v;
		break;
	}
	case WL_OPT_LONG:
		*(long *)o->value = strtol(text, &end, 10);
		break;
	case WL_OPT_U64:
	case WL_OPT_SIZE: {
		if (text[0] == '-')
			return false;
		unsigned long long v = strtoull(text, &end, 10);
		if (o->kind == WL_OPT_SIZE)
			*(size_t *)o->value = (size_t)v;
		else
			*(uint64_t *)o->value = v;
		break;
	}
	case WL_OPT_DOUBLE:
		*(double *)o->value = strtod(text, &end);
		break;
	case WL_OPT_RANGE:
		return wl_parse_range(text, o->value);
	case WL_OPT_STRING:
		*(const char **)o->value = text;
		return true;
	case WL_OPT_SET:
	case WL_OPT_CLEAR:
		*(int *)o->value = o->kind == WL_OPT_SET;
		return true;
	}
	return end && end != text && *end == '\0' && errno == 0;
}

/* Every argument is one of the n options (a value in the next argument or after '='); false on
 * anything else, a missing value, or a value that is not wholly of its kind. */
static inline bool
wl_parse_options(int argc, char **argv, const struct wl_option *table, size_t n)
{
	struct option longs[WL_OPTIONS_MAX + 1] = {{0}};
	if (n > WL_OPTIONS_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		bool bare = table[i].kind == WL_OPT_SET || table[i].kind == WL_OPT_CLEAR;
		longs[i] = (struct option){table[i].name, bare ? no_argument : required_argument,
		                           NULL, (int)i};
	}
	optind = 1;
	for (int c; (c = getopt_long(argc, argv, ":", longs, NULL)) != -1;)
		if (c < 0 || (size_t)c >= n || !wl_option_value(&table[c], optarg))
			return false;
	return optind == argc;
}

#define WL_PARSE_OPTIONS(argc, argv, table)                                                        \
	wl_parse_options(argc, argv, table, sizeof(table) / sizeof(table[0]))

#endif
