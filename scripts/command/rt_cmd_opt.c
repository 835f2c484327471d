#include "rt_cmd_opt.h"

#include "rt_cmd.h"
#include "rt_parse.h"

#include <stdio.h>
#include <string.h>

void
rt_cmd_opt_split(const char *word, struct rt_cmd_opt *opt)
{
	const char *eq = word[0] == '-' ? strchr(word, '=') : NULL;
	size_t len = eq ? (size_t)(eq - word) : strlen(word);
	snprintf(opt->name, sizeof(opt->name), "%.*s", (int)len, word);
	opt->value = eq ? eq + 1 : NULL;
}

bool
rt_cmd_opt_is(const struct rt_cmd_opt *opt, const char *name)
{
	return strcmp(opt->name, name) == 0;
}

const char *
rt_cmd_opt_value(const struct rt_cmd_opt *opt, int argc, char **argv, int *i)
{
	if (opt->value)
		return opt->value;
	if (*i + 1 >= argc)
		rt_cmd_usage_error("option %s needs a value", opt->name);
	return argv[++*i];
}

void
rt_cmd_opt_no_value(const struct rt_cmd_opt *opt)
{
	if (opt->value)
		rt_cmd_usage_error("option %s takes no value", opt->name);
}

const char *
rt_cmd_opt_setting_value(const struct rt_setting *s, const struct rt_cmd_opt *opt, int argc,
                         char **argv, int *i)
{
	return s->option_arg ? rt_cmd_opt_value(opt, argc, argv, i) : opt->value;
}

int
rt_cmd_opt_pid(const char *text)
{
	int pid;
	if (rt_parse_pid(text, &pid) != RT_PARSE_OK)
		rt_cmd_usage_error("not a pid: '%s'", text);
	return pid;
}

void
rt_cmd_opt_usage(const struct rt_setting *s, char *out, size_t size)
{
	snprintf(out, size, "%s%s%s", s->option, s->option_arg ? " " : "",
	         s->option_arg ? s->option_arg : "");
}

int
rt_cmd_opt_usage_width(bool patch_only, int min)
{
	int width = min;
	for (unsigned i = 0; i < RT_SETTING_COUNT; i++) {
		char usage[128];
		if (!rt_settings[i].option || (patch_only && !rt_settings[i].patch))
			continue;
		rt_cmd_opt_usage(&rt_settings[i], usage, sizeof(usage));
		width = (int)strlen(usage) > width ? (int)strlen(usage) : width;
	}
	return width;
}
