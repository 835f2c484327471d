/* status: a table, or a JSON array, of the processes that carry the library (roundtrim(1),
 * status). */
#include "rt_child.h"
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
	RT_COL_RSS_NOW,
	RT_COL_RSS,
	RT_COL_LIVE,
	RT_COL_RELEASED,
	RT_COL_LOST,
	RT_COL_TRIGGERS,
	RT_COL_COUNT,
};

static const char *const rt_cmd_status_header[RT_COL_COUNT] = {
    "PID",  "PROGRAM", "ALLOC",         "FDS",      "ROUNDS",       "N",    "LAST ACTION@ROUND",
    "WHEN", "RSS MiB", "RSS@ROUND MiB", "LIVE MiB", "RELEASED MiB", "LOST", "TRIGGERS",
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
	      "RSS now\n"
	      "and after the last round, live heap, memory released so far, records its files "
	      "could not\n"
	      "take (a full volume), and the triggers (FIFO, signal). A fork child is shown under "
	      "its\n"
	      "parent once its library has started, and not at all before.\n"
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

/* The PID cell: a fork child's under its parent's, as ps --forest draws it. */
static void
rt_cmd_status_pid_cell(char *out, size_t size, int pid, unsigned depth)
{
	if (depth == 0)
		snprintf(out, size, "%d", pid);
	else
		snprintf(out, size, "%*s\\_ %d", (int)(depth * 3 - 2), "", pid);
}

/* The process's RSS now, as /proc shows it, or "-" when it is gone. */
static void
rt_cmd_status_rss_now(char *out, size_t size, int pid)
{
	uint64_t kib;
	if (rt_cmd_proc_rss_kib(pid, &kib))
		rt_report_mib(out, size, kib);
	else
		snprintf(out, size, "-");
}

static void
rt_cmd_status_row(struct rt_cmd_table *table, const struct rt_status_read *read, unsigned depth)
{
	const struct rt_status_record *st = &read->st;
	char cells[RT_COL_COUNT][RT_REPORT_TEXT_MAX + 64];
	char signal[32] = "-";
	rt_cmd_status_pid_cell(cells[RT_COL_PID], sizeof(cells[0]), st->pid, depth);
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
	rt_cmd_status_rss_now(cells[RT_COL_RSS_NOW], sizeof(cells[0]), st->pid);
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
rt_cmd_status_inactive_row(struct rt_cmd_table *table, int pid, const char *name, unsigned depth)
{
	char pid_text[64], program[RT_CMD_STATUS_PROGRAM_WIDTH + 1], rss_now[32];
	rt_cmd_status_pid_cell(pid_text, sizeof(pid_text), pid, depth);
	snprintf(program, sizeof(program), "%.*s", RT_CMD_STATUS_PROGRAM_WIDTH, name);
	const char *row[RT_COL_COUNT] = {pid_text, program};
	for (int c = RT_COL_ALLOCATOR; c < RT_COL_TRIGGERS; c++)
		row[c] = "-";
	rt_cmd_status_rss_now(rss_now, sizeof(rss_now), pid);
	row[RT_COL_RSS_NOW] = rss_now;
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

/* One process as status found it. */
struct rt_cmd_status_entry {
	enum rt_cmd_proc_result r;
	bool shown; /* selected, and a carrier */
	char name[64];
	struct rt_cmd_target t;
};

/* Looks at one process: whether it is shown, and what with. A PID given that is no carrier with
 * a FIFO is said, and fails. */
static void
rt_cmd_status_look(struct rt_cmd_status_args *a, int pid, struct rt_cmd_status_entry *e,
                   int *status)
{
	char why[512];
	e->r = rt_cmd_proc_target(pid, &e->t, why, sizeof(why));
	if (e->r == RT_CMD_PROC_NO_FIFO)
		rt_cmd_proc_name(pid, e->name, sizeof(e->name));
	e->shown = e->r == RT_CMD_PROC_TARGET || e->r == RT_CMD_PROC_NO_FIFO;
	if (e->shown && a->sel.first)
		e->shown = rt_cmd_select_takes(
		    &a->sel, pid,
		    e->r == RT_CMD_PROC_TARGET ? e->t.status.read.st.program : e->name);
	if (e->r != RT_CMD_PROC_TARGET && a->explicit) {
		rt_cmd_say("pid %d: %s", pid, why);
		*status = RT_CMD_FAIL;
	}
}

/* Its row in table, and the JSON text that stands for it (the status file's, or an object for
 * one without a FIFO). */
static const char *
rt_cmd_status_show(const struct rt_cmd_status_entry *e, unsigned depth, struct rt_cmd_table *table,
                   char *object, size_t size)
{
	if (e->r == RT_CMD_PROC_TARGET) {
		rt_cmd_status_row(table, &e->t.status.read, depth);
		return e->t.status.text;
	}
	rt_cmd_status_inactive_row(table, e->t.pid, e->name, depth);
	rt_report_inactive_json(object, size, e->t.pid, e->name);
	return object;
}

/* The order in which the shown processes are listed: as given, or, listing every carrier, each
 * with its started fork children under it and those not started left out (policy/rt_child).
 * Returns how many; order and depth hold n. */
static size_t
rt_cmd_status_order(const struct rt_cmd_status_args *a, const struct rt_cmd_status_entry *e,
                    size_t n, size_t *order, unsigned *depth)
{
	size_t m = 0;
	size_t *index = rt_cmd_alloc((n ? n : 1) * sizeof(*index));
	size_t *work = rt_cmd_alloc(RT_CHILD_ORDER_WORK(n) * sizeof(*work));
	struct rt_child_proc *procs = rt_cmd_alloc((n ? n : 1) * sizeof(*procs));
	for (size_t i = 0; i < n; i++) {
		if (!e[i].shown)
			continue;
		struct rt_procfs_stat st = {.ppid = 0};
		int pid = e[i].t.pid;
		bool target = e[i].r == RT_CMD_PROC_TARGET;
		bool read = !a->explicit && rt_cmd_proc_stat(pid, &st);
		procs[m] = (struct rt_child_proc){
		    .pid = pid,
		    .ppid = read ? st.ppid : 0,
		    .session = read ? st.sid : 0,
		    .fork_of = target ? e[i].t.status.read.st.fork_of : 0,
		    .started = target || a->explicit || rt_cmd_proc_has_library_thread(pid),
		};
		index[m++] = i;
	}
	size_t shown = rt_child_order(procs, m, order, depth, work);
	for (size_t k = 0; k < shown; k++)
		order[k] = index[order[k]];
	free(procs);
	free(work);
	free(index);
	return shown;
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
	size_t n = a.npids;
	struct rt_cmd_status_entry *e = rt_cmd_alloc((n ? n : 1) * sizeof(*e));
	size_t *order = rt_cmd_alloc((n ? n : 1) * sizeof(*order));
	unsigned *depth = rt_cmd_alloc((n ? n : 1) * sizeof(*depth));
	for (size_t i = 0; i < n; i++)
		rt_cmd_status_look(&a, a.pids[i], &e[i], &status);
	size_t shown = rt_cmd_status_order(&a, e, n, order, depth);
	char object[RT_CMD_STATUS_FILE_MAX];
	if (a.json)
		putchar('[');
	for (size_t k = 0; k < shown; k++) {
		const char *text =
		    rt_cmd_status_show(&e[order[k]], depth[k], &table, object, sizeof(object));
		if (a.json)
			printf("%s%s", k ? "," : "", text);
	}
	if (a.json)
		puts("]");
	else
		rt_cmd_table_print(&table, stdout);
	rt_cmd_table_free(&table);
	rt_cmd_select_end(&a.sel);
	free(depth);
	free(order);
	free(e);
	free(a.pids);
	return status;
}
