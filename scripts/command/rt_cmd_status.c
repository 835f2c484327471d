/* status: a table, or a JSON array, of the processes that carry the library (roundtrim(1),
 * status). */
#include "rt_cmd.h"
#include "rt_cmd_opt.h"
#include "rt_cmd_proc.h"
#include "rt_cmd_select.h"
#include "rt_cmd_table.h"
#include "rt_parse.h"
#include "rt_report.h"

#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The width of a process name in /proc/PID/comm: longer program names are cut to it. */
#define RT_CMD_STATUS_PROGRAM_WIDTH 15

enum {
	RT_COL_PID,
	RT_COL_PROGRAM,
	RT_COL_ALLOCATOR,
	RT_COL_FDS,
	RT_COL_ROUNDS,
	RT_COL_N,
	RT_COL_LAST,
	RT_COL_WHEN,
	RT_COL_RSS,
	RT_COL_LIVE,
	RT_COL_RELEASED,
	RT_COL_LOST,
	RT_COL_TRIGGERS,
	RT_COL_COUNT,
};

static const char *const rt_cmd_status_header[RT_COL_COUNT] = {
    "PID",  "PROGRAM", "ALLOC",    "FDS",          "ROUNDS", "N",        "LAST ACTION@ROUND",
    "WHEN", "RSS MiB", "LIVE MiB", "RELEASED MiB", "LOST",   "TRIGGERS",
};

static void
rt_cmd_status_help(void)
{
	fputs("Usage: " RT_CMD_NAME " status [--json] [PID...]\n"
	      "   or: " RT_CMD_NAME " status [--json] [--under PID] [--cgroup PATH] [--match "
	      "GLOBS]\n"
	      "Show the processes of yours that carry libroundtrim.so (all of them, in every "
	      "session, or the\n"
	      "PIDs given, or those selected): pid, program, allocator, whose descriptor table "
	      "holds the\n"
	      "library's files (private, keeper, shared), rounds counted, N, last action and when, "
	      "RSS, live\n"
	      "heap, memory released so far, records its files could not take (a full volume), and "
	      "the\n"
	      "triggers (FIFO, signal).\n"
	      "\n"
	      "  --json           a JSON array of the processes' status objects (roundtrim(7), "
	      "STATUS FILE)\n"
	      "  --under PID      PID and its descendants\n"
	      "  --cgroup PATH    those in a cgroup or below it: a /sys/fs/cgroup/... directory, "
	      "or a\n"
	      "                   cgroup path as /proc/PID/cgroup shows it\n"
	      "  --match GLOBS    only programs matching one of the comma-separated globs\n"
	      "  --help           this text\n"
	      "\n"
	      "Exit status: 0 success; 1 a PID given was refused or is gone, or the --under PID "
	      "does not\n"
	      "exist; 2 usage error.\n",
	      stdout);
}

static int64_t
rt_cmd_status_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void
rt_cmd_status_row(struct rt_cmd_table *table, const struct rt_status_read *read)
{
	const struct rt_status_record *st = &read->st;
	char cells[RT_COL_COUNT][RT_REPORT_TEXT_MAX + 64];
	char signal[32] = "-";
	snprintf(cells[RT_COL_PID], sizeof(cells[0]), "%d", st->pid);
	snprintf(cells[RT_COL_PROGRAM], sizeof(cells[0]), "%.*s", RT_CMD_STATUS_PROGRAM_WIDTH,
	         st->program);
	snprintf(cells[RT_COL_ALLOCATOR], sizeof(cells[0]), "%s", st->allocator);
	/* Whose descriptor table holds the library's files (roundtrim(7), DESCRIPTORS). */
	snprintf(cells[RT_COL_FDS], sizeof(cells[0]), "%s",
	         st->descriptors && st->descriptors[0] ? st->descriptors : "-");
	/* Rounds the library found itself: how sure it was of the last (roundtrim(1), status). */
	if (st->detected_rounds)
		snprintf(cells[RT_COL_ROUNDS], sizeof(cells[0]), "%" PRIu64 " ~%" PRIu32 "%%",
		         st->rounds, st->last_confidence_permille / 10);
	else
		snprintf(cells[RT_COL_ROUNDS], sizeof(cells[0]), "%" PRIu64, st->rounds);
	snprintf(cells[RT_COL_N], sizeof(cells[0]), "%" PRIu32, st->gc_rounds);
	if (st->actions == 0)
		snprintf(cells[RT_COL_LAST], sizeof(cells[0]), "-");
	else
		snprintf(cells[RT_COL_LAST], sizeof(cells[0]), "%s@%" PRIu64, st->last_action,
		         st->last_action_round);
	rt_report_ago(cells[RT_COL_WHEN], sizeof(cells[0]), rt_cmd_status_now_us(),
	              st->last_action_unix_us);
	rt_report_mib(cells[RT_COL_RSS], sizeof(cells[0]), st->rss_kib);
	rt_report_mib(cells[RT_COL_LIVE], sizeof(cells[0]), st->live_kib);
	rt_report_mib(cells[RT_COL_RELEASED], sizeof(cells[0]), st->released_total_kib);
	snprintf(cells[RT_COL_LOST], sizeof(cells[0]), "%" PRIu64, st->lost_records);
	if (st->signal) {
		char name[24];
		rt_parse_signal_name(st->signal, SIGRTMIN, SIGRTMAX, name, sizeof(name));
		snprintf(signal, sizeof(signal), "%s=%d", name, st->signal);
	}
	snprintf(cells[RT_COL_TRIGGERS], sizeof(cells[0]), "%s %s", st->fifo, signal);
	const char *row[RT_COL_COUNT];
	for (int c = 0; c < RT_COL_COUNT; c++)
		row[c] = cells[c];
	rt_cmd_table_add(table, row);
}

/* A process that carries the library without a FIFO: its name, and dashes. */
static void
rt_cmd_status_inactive_row(struct rt_cmd_table *table, int pid, const char *name)
{
	char pid_text[16], program[RT_CMD_STATUS_PROGRAM_WIDTH + 1];
	snprintf(pid_text, sizeof(pid_text), "%d", pid);
	snprintf(program, sizeof(program), "%.*s", RT_CMD_STATUS_PROGRAM_WIDTH, name);
	const char *row[RT_COL_COUNT] = {pid_text, program};
	for (int c = RT_COL_ALLOCATOR; c < RT_COL_TRIGGERS; c++)
		row[c] = "-";
	row[RT_COL_TRIGGERS] = "no FIFO (inactive?)";
	rt_cmd_table_add(table, row);
}

struct rt_cmd_status_args {
	bool json;
	struct rt_cmd_select sel;
	int *pids;
	size_t npids;
	bool explicit; /* the PIDs were given */
};

static void
rt_cmd_status_parse(int argc, char **argv, struct rt_cmd_status_args *a)
{
	a->pids = rt_cmd_alloc((size_t)argc * sizeof(*a->pids));
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			for (i++; i < argc; i++)
				a->pids[a->npids++] = rt_cmd_opt_pid(argv[i]);
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			rt_cmd_status_help();
			exit(RT_CMD_OK);
		} else if (!strcmp(argv[i], "--json")) {
			a->json = true;
		} else if (argv[i][0] == '-') {
			struct rt_cmd_opt opt;
			rt_cmd_opt_split(argv[i], &opt);
			/* Every session: status only reads. */
			if (rt_cmd_opt_is(&opt, "--all") || rt_cmd_opt_is(&opt, "--any-session") ||
			    !rt_cmd_select_option(&a->sel, &opt, argc, argv, &i))
				rt_cmd_usage_error("unknown option %s", argv[i]);
		} else {
			a->pids[a->npids++] = rt_cmd_opt_pid(argv[i]);
		}
	}
	a->explicit = a->npids > 0;
	if (a->explicit && a->sel.first)
		rt_cmd_usage_error("%s takes no PID", a->sel.first);
	if (!a->explicit) {
		free(a->pids);
		a->pids = rt_cmd_proc_carriers(&a->npids);
	}
}

/* One process: its row in table, and the JSON text that stands for it (the status file's, or
 * object's for one without a FIFO); NULL when it is left out or is no carrier. A PID given that is
 * no carrier with a FIFO is said, and fails. */
static const char *
rt_cmd_status_one(struct rt_cmd_status_args *a, int pid, struct rt_cmd_table *table,
                  struct rt_cmd_target *t, char *object, size_t size, int *status)
{
	const char *text = NULL;
	char why[512], name[64];
	enum rt_cmd_proc_result r = rt_cmd_proc_target(pid, t, why, sizeof(why));
	if (r == RT_CMD_PROC_NO_FIFO)
		rt_cmd_proc_name(pid, name, sizeof(name));
	if (a->sel.first && (r == RT_CMD_PROC_TARGET || r == RT_CMD_PROC_NO_FIFO) &&
	    !rt_cmd_select_takes(&a->sel, pid,
	                         r == RT_CMD_PROC_TARGET ? t->status.read.st.program : name))
		return NULL;
	if (r == RT_CMD_PROC_TARGET) {
		rt_cmd_status_row(table, &t->status.read);
		text = t->status.text;
	} else if (r == RT_CMD_PROC_NO_FIFO) {
		rt_cmd_status_inactive_row(table, pid, name);
		rt_report_inactive_json(object, size, pid, name);
		text = object;
	}
	if (r != RT_CMD_PROC_TARGET && a->explicit) {
		rt_cmd_say("pid %d: %s", pid, why);
		*status = RT_CMD_FAIL;
	}
	return text;
}

int
rt_cmd_status(int argc, char **argv)
{
	struct rt_cmd_status_args a = {0};
	rt_cmd_status_parse(argc, argv, &a);
	if (a.sel.first)
		rt_cmd_select_begin(&a.sel, false);
	int status = RT_CMD_OK;
	struct rt_cmd_table table;
	rt_cmd_table_init(&table, RT_COL_COUNT);
	rt_cmd_table_add(&table, rt_cmd_status_header);
	struct rt_cmd_target *t = rt_cmd_alloc(sizeof(*t));
	char object[RT_CMD_STATUS_FILE_MAX];
	bool first = true;
	if (a.json)
		putchar('[');
	for (size_t i = 0; i < a.npids; i++) {
		const char *text =
		    rt_cmd_status_one(&a, a.pids[i], &table, t, object, sizeof(object), &status);
		if (a.json && text) {
			printf("%s%s", first ? "" : ",", text);
			first = false;
		}
	}
	if (a.json)
		puts("]");
	else
		rt_cmd_table_print(&table, stdout);
	rt_cmd_table_free(&table);
	rt_cmd_select_end(&a.sel);
	free(t);
	free(a.pids);
	return status;
}
