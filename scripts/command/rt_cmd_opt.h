/* rt_cmd_opt: the command's option words, "--name=value" or "--name value" (roundtrim(1)).
 * Owns splitting a word and taking an option's value; each verb owns its own options. */
#ifndef RT_CMD_OPT_H
#define RT_CMD_OPT_H

#include <stdbool.h>
#include <stddef.h>

#include "rt_settings.h"

struct rt_cmd_opt {
	char name[64];     /* "--gc-rounds"; a longer name is cut, and matches no option */
	const char *value; /* what followed '=' in the word, or NULL */
};

/* Splits an option word into its name and the value after '=', if any. */
void rt_cmd_opt_split(const char *word, struct rt_cmd_opt *opt);
/* Whether the word is this option, with or without "=value". */
bool rt_cmd_opt_is(const struct rt_cmd_opt *opt, const char *name);
/* The option's value: after '=', else the next word (then *i moves past it). A usage error
 * when there is none. */
const char *rt_cmd_opt_value(const struct rt_cmd_opt *opt, int argc, char **argv, int *i);
/* A usage error when a flag was given "=value". */
void rt_cmd_opt_no_value(const struct rt_cmd_opt *opt);
/* A settings row's option: its value (rt_cmd_opt_value) where the row takes one; for a flag,
 * NULL (the row's flag_value), or another of the row's values attached with '='
 * (--cuda-empty-cache=waiting), never the next word, which may be the command. */
const char *rt_cmd_opt_setting_value(const struct rt_setting *s, const struct rt_cmd_opt *opt,
                                     int argc, char **argv, int *i);

/* "--option ARG" for a settings row that has an option, as the help texts show it. */
void rt_cmd_opt_usage(const struct rt_setting *s, char *out, size_t size);
/* The width of the help's option column: the widest rt_cmd_opt_usage among the rows with an
 * option (only those that patch offers, when patch_only), or min when wider. */
int rt_cmd_opt_usage_width(bool patch_only, int min);
/* A pid argument (rt_parse_pid); a usage error for anything else. */
int rt_cmd_opt_pid(const char *text);

#endif
