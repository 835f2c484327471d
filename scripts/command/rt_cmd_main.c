/* roundtrim: runs programs with libroundtrim.so preloaded, counts rounds in the processes that
 * carry it, shows their state, patches launchers and summarises stats files (roundtrim(1)). */
#include "rt_cmd.h"
#include "rt_preload.h"
#include "rt_version.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void
rt_cmd_help(void)
{
	fputs("Usage: " RT_CMD_NAME " VERB [OPTION]... [ARG]...\n"
	      "Run programs with libroundtrim.so, count rounds in them, inspect them, patch "
	      "launchers.\n"
	      "\n"
	      "Verbs:\n"
	      "  run [OPTION]... [--] COMMAND [ARG]...   run COMMAND with the library preloaded\n"
	      "  round [--wait] [--timeout S] PID...    count one round in each process\n"
	      "  round --under PID | --cgroup PATH | --all [--match GLOBS] [--wait]\n"
	      "                                         ... in those of yours that carry it\n"
	      "  trim [--wait] [--timeout S] PID...     act now, whatever the count (also --all, "
	      "...)\n"
	      "  status [--json] [PID...]               the processes that carry the library\n"
	      "  patch FILE [OPTION]... | --undo FILE   add the preload block to a launcher, or "
	      "remove it\n"
	      "  report FILE.jsonl... [-o OUT.png|OUT.svg]  summary and plot of stats files\n"
	      "\n"
	      "'" RT_CMD_NAME " VERB --help' describes a verb. '" RT_CMD_NAME
	      " --version' prints the version.\n"
	      "Exit status: run returns COMMAND's status, 125 when " RT_CMD_NAME
	      " fails before running it, 126 when\n"
	      "COMMAND cannot be executed, 127 when it is not found; the other verbs 0 on "
	      "success, 1 when a\n"
	      "target was refused, gone, failed or did not answer in time, 2 on a usage error.\n"
	      "See roundtrim(1) and roundtrim(7).\n",
	      stdout);
}

/* A roundtrim started with the library in its LD_PRELOAD (inside a patched launcher, say)
 * would carry it, and so would its children: it starts again without it (roundtrim(1),
 * ENVIRONMENT). run puts it back for its command. */
static void
rt_cmd_leave_library(char **argv)
{
	const char *preload = getenv("LD_PRELOAD");
	if (!rt_preload_has_library(preload))
		return;
	size_t size = strlen(preload) + 1;
	char *rest = rt_cmd_alloc(size);
	rt_preload_without_library(rest, size, preload);
	if (rest[0])
		setenv("LD_PRELOAD", rest, 1);
	else
		unsetenv("LD_PRELOAD");
	free(rest);
	execv("/proc/self/exe", argv);
	rt_cmd_say("cannot start again without libroundtrim.so in LD_PRELOAD: %m");
}

int
main(int argc, char **argv)
{
	rt_cmd_leave_library(argv);
	if (argc < 2)
		rt_cmd_usage_error("missing VERB");
	const char *verb = argv[1];
	static const struct {
		const char *name;
		int (*fn)(int, char **);
		int fail_status;
	} verbs[] = {
	    {"run", rt_cmd_run, RT_CMD_RUN_FAIL},  {"round", rt_cmd_trigger, RT_CMD_FAIL},
	    {"trim", rt_cmd_trigger, RT_CMD_FAIL}, {"status", rt_cmd_status, RT_CMD_FAIL},
	    {"patch", rt_cmd_patch, RT_CMD_FAIL},  {"report", rt_cmd_report, RT_CMD_FAIL},
	};
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		if (strcmp(verb, verbs[i].name) == 0) {
			rt_cmd_set_verb(verbs[i].name, verbs[i].fail_status);
			return verbs[i].fn(argc - 1, argv + 1);
		}
	}
	if (!strcmp(verb, "-h") || !strcmp(verb, "--help") || !strcmp(verb, "help")) {
		rt_cmd_help();
		return RT_CMD_OK;
	}
	if (!strcmp(verb, "--version")) {
		puts(RT_CMD_NAME " " RT_VERSION);
		return RT_CMD_OK;
	}
	rt_cmd_usage_error("unknown verb '%s'", verb);
}
