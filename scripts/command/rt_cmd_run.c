/* run: becomes COMMAND with the library first in LD_PRELOAD and each option set as the variable
 * of its row in the settings table (roundtrim(1), run). */
#include "rt_cmd.h"
#include "rt_cmd_exec.h"
#include "rt_cmd_lib.h"
#include "rt_cmd_opt.h"
#include "rt_preload.h"
#include "rt_settings.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct rt_cmd_run_var {
	const struct rt_setting *setting;
	char value[PATH_MAX + 64];
};

static void
rt_cmd_run_help(void)
{
	fputs("Usage: " RT_CMD_NAME " run [OPTION]... [--] COMMAND [ARG]...\n"
	      "Replace " RT_CMD_NAME " with COMMAND (same pid), libroundtrim.so first in "
	      "LD_PRELOAD, the options set as\n"
	      "ROUNDTRIM_* variables (roundtrim(7)).\n\n",
	      stdout);
	int width = rt_cmd_opt_usage_width(false, (int)strlen("--help"));
	for (unsigned i = 0; i < RT_SETTING_COUNT; i++) {
		const struct rt_setting *s = &rt_settings[i];
		char usage[128];
		if (!s->option)
			continue;
		rt_cmd_opt_usage(s, usage, sizeof(usage));
		printf("  %-*s  %s%s%s: %s\n", width, usage, s->name, s->flag_value ? "=" : "",
		       s->flag_value ? s->flag_value : "", s->doc);
	}
	printf("  %-*s  this text\n\n", width, "--help");
	fputs("Values are checked as the library checks them before COMMAND starts. Relative "
	      "paths are made\n"
	      "absolute. The library is $ROUNDTRIM_LIB, else the one this " RT_CMD_NAME
	      " was built or installed with.\n"
	      "Exit status: COMMAND's; 125 if " RT_CMD_NAME
	      " fails, 126 if COMMAND cannot run, 127 if it is not found.\n",
	      stdout);
}

/* The value an option sets, checked by its row's rule; run refuses what the library would. */
static void
rt_cmd_run_option(const struct rt_setting *s, const struct rt_cmd_opt *opt, int argc, char **argv,
                  int *i, struct rt_cmd_run_var *var)
{
	const char *arg = rt_cmd_opt_setting_value(s, opt, argc, argv, i);
	char cwd[PATH_MAX];
	bool have_cwd = getcwd(cwd, sizeof(cwd)) != NULL;
	const struct rt_setting_platform platform = {SIGRTMIN, SIGRTMAX};
	var->setting = s;
	enum rt_parse_result r = rt_setting_option_value(s, arg, have_cwd ? cwd : NULL, &platform,
	                                                 var->value, sizeof(var->value));
	if (r == RT_PARSE_OK)
		return;
	if (!arg)
		arg = s->flag_value;
	if (r == RT_PARSE_RELATIVE && !have_cwd)
		rt_cmd_usage_error("%s %s: cannot make it absolute: %m", s->option, arg);
	/* The values' words are marked up for the documentation: `none` is none here. */
	char values[256];
	size_t w = 0;
	for (const char *c = s->values; *c && w + 1 < sizeof(values); c++)
		if (*c != '`')
			values[w++] = *c;
	values[w] = '\0';
	rt_cmd_usage_error("%s %s: %s (%s takes %s)", s->option, arg[0] ? arg : "''",
	                   rt_parse_result_text(r), s->option, values);
}

/* COMMAND's file, as the shell would find it; exits 126 or 127 as env(1) when there is none. */
static void
rt_cmd_run_find(const char *command, char *path, size_t size)
{
	struct stat st;
	if (strchr(command, '/')) {
		snprintf(path, size, "%s", command);
	} else if (!rt_cmd_exec_search(command, path, size)) {
		rt_cmd_say("%s: command not found", command);
		exit(RT_CMD_NOT_FOUND);
	}
	if (stat(path, &st) != 0) {
		rt_cmd_say("%s: no such file", command);
		exit(RT_CMD_NOT_FOUND);
	}
	if (S_ISDIR(st.st_mode) || access(path, X_OK) != 0) {
		rt_cmd_say("%s: not executable", command);
		exit(RT_CMD_CANNOT_EXEC);
	}
}

int
rt_cmd_run(int argc, char **argv)
{
	struct rt_cmd_run_var *vars = rt_cmd_alloc((size_t)argc * sizeof(*vars));
	size_t nvars = 0;
	int i;
	for (i = 1; i < argc && (!strncmp(argv[i], "--", 2) || !strcmp(argv[i], "-h")); i++) {
		struct rt_cmd_opt opt;
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		}
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			rt_cmd_run_help();
			exit(RT_CMD_OK);
		}
		rt_cmd_opt_split(argv[i], &opt);
		const struct rt_setting *s = rt_setting_with_option(opt.name);
		if (!s)
			rt_cmd_usage_error("unknown option %s", opt.name);
		rt_cmd_run_option(s, &opt, argc, argv, &i, &vars[nvars++]);
	}
	if (i >= argc)
		rt_cmd_usage_error("missing COMMAND");

	char path[PATH_MAX], lib[PATH_MAX], why[PATH_MAX + 128];
	rt_cmd_run_find(argv[i], path, sizeof(path));
	if (!rt_cmd_lib_find(lib, sizeof(lib), why, sizeof(why)))
		rt_cmd_die("%s", why);
	const char *old = getenv("LD_PRELOAD");
	size_t size = strlen(lib) + (old ? strlen(old) : 0) + 2;
	char *preload = rt_cmd_alloc(size);
	if (!rt_preload_with_library(preload, size, lib, old) ||
	    setenv("LD_PRELOAD", preload, 1) != 0)
		rt_cmd_die("cannot set LD_PRELOAD: %m");
	free(preload);
	for (size_t v = 0; v < nvars; v++)
		if (setenv(vars[v].setting->name, vars[v].value, 1) != 0)
			rt_cmd_die("cannot set %s: %m", vars[v].setting->name);
	execv(path, argv + i);
	rt_cmd_say("%s: %m", argv[i]);
	exit(errno == ENOENT ? RT_CMD_NOT_FOUND : RT_CMD_CANNOT_EXEC);
}
