/* round and trim: a line on each target's FIFO, and with --wait its answer from the status file
 * (roundtrim(1), round, trim). */
#include "rt_cmd.h"
#include "rt_cmd_opt.h"
#include "rt_cmd_proc.h"
#include "rt_cmd_select.h"
#include "rt_cmd_wait.h"
#include "rt_parse.h"
#include "rt_proto.h"
#include "rt_report.h"
#include "rt_rounds.h"
#include "rt_target.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RT_CMD_WAIT_DEFAULT "30"
/* The longest --timeout: a day. */
#define RT_CMD_WAIT_MAX_US (UINT64_C(86400) * 1000000)

struct rt_cmd_told {
	struct rt_cmd_target target; /* its status as it was before the line */
	size_t pid_slot;
	bool done;
};

static void
rt_cmd_trigger_help(const char *verb)
{
	printf("Usage: " RT_CMD_NAME " %s [--wait] [--timeout S] PID...\n"
	       "   or: " RT_CMD_NAME " %s [--all] [--under PID] [--cgroup PATH] [--match GLOBS]\n"
	       "       [--any-session] [--wait] [--timeout S]\n",
	       verb, verb);
	if (!strcmp(verb, "round"))
		puts("Count one round in each process; the library acts when the count is a "
		     "multiple of N.");
	else
		puts(
		    "Make each process act now (malloc_trim, jemalloc purge), whatever the count.");
	fputs(
	    "Only processes of yours that carry libroundtrim.so with a FIFO are told; any other "
	    "pid is\n"
	    "refused with the reason, and the others still proceed. Nothing is ever sent as a "
	    "signal.\n"
	    "Without a PID, the selection: --under, --cgroup and --match combine; --all or "
	    "--match alone\n"
	    "reach only this session's processes (getsid(2)), unless --any-session.\n"
	    "\n"
	    "  --all            every such process of yours in this session\n"
	    "  --under PID      PID and its descendants (NVFlare: --under $(cat "
	    "site-1/pid.fl))\n"
	    "  --cgroup PATH    those in a cgroup or below it: a /sys/fs/cgroup/... directory, "
	    "or a\n"
	    "                   cgroup path as /proc/PID/cgroup shows it\n"
	    "  --match GLOBS    only programs matching one of the comma-separated globs\n"
	    "  --any-session    with --all or --match: in every session\n"
	    "  --wait           return when each process has handled it, and print its result\n"
	    "  --timeout S      with --wait: give up after S seconds (default " RT_CMD_WAIT_DEFAULT
	    ")\n"
	    "  --help           this text\n"
	    "\n"
	    "Exit status: 0 every target was told (and, with --wait, answered); 1 some target "
	    "was refused,\n"
	    "gone, could not be told or did not answer in time, the selection found none, or "
	    "the --under\n"
	    "PID does not exist; 2 usage error.\n",
	    stdout);
}

/* The one line --wait prints for a target that answered. */
static void
rt_cmd_trigger_result(enum rt_proto_kind kind, const struct rt_status_read *now, bool acted)
{
	const struct rt_status_record *st = &now->st;
	char what[64];
	if (kind == RT_PROTO_ROUND)
		snprintf(what, sizeof(what), "round %" PRIu64, st->rounds);
	else
		snprintf(what, sizeof(what), "trim");
	printf("%d %s: %s: ", st->pid, st->program, what);
	if (acted) {
		char before[32], after[32], released[32], took[32];
		rt_report_mib(before, sizeof(before), st->last_rss_before_kib);
		rt_report_mib(after, sizeof(after), st->last_rss_after_kib);
		rt_report_mib(released, sizeof(released), now->last_released_kib);
		rt_report_ms(took, sizeof(took), st->last_duration_us);
		printf("%s, RSS %s -> %s MiB, released %s MiB in %s ms", st->last_action, before,
		       after, released, took);
		if (st->last_note[0])
			printf(" (%s)", st->last_note);
		putchar('\n');
	} else if (st->gc_rounds == 0) {
		puts("no action (N is 0: rounds are only counted)");
	} else {
		printf("no action (acts every %" PRIu32 " rounds; next at round %" PRIu64 ")\n",
		       st->gc_rounds, rt_rounds_next_action(st->rounds, st->gc_rounds));
	}
}

/* Writes the verb's line into the FIFO without blocking: a FIFO nobody reads fails at once
 * (ENXIO) instead of blocking (roundtrim(1)). */
static bool
rt_cmd_trigger_write(const char *fifo, enum rt_proto_kind kind)
{
	char line[RT_PROTO_LINE_MAX + 2];
	int len = snprintf(line, sizeof(line), "%s\n", rt_proto_kind_name(kind));
	int fd = open(fifo, O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	struct stat st;
	bool ok = fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode);
	ssize_t n;
	while (ok && (n = write(fd, line, (size_t)len)) < 0 && errno == EINTR)
		;
	ok = ok && n == len;
	close(fd);
	return ok;
}

/* Reads each told target's status file until it has answered, exited or the deadline passed. */
static int
rt_cmd_trigger_wait(enum rt_proto_kind kind, struct rt_cmd_told *told, size_t n,
                    const char *timeout_text, uint64_t timeout_us)
{
	int status = RT_CMD_OK;
	struct rt_cmd_wait w;
	rt_cmd_wait_init(&w);
	for (size_t i = 0; i < n; i++) {
		rt_cmd_wait_file(&w, told[i].target.status_path);
		told[i].pid_slot = rt_cmd_wait_pid(&w, told[i].target.pid);
	}
	int64_t deadline = rt_cmd_wait_now_us() + (int64_t)timeout_us;
	size_t left = n;
	/* Watching first, then reading: an answer written between the two still wakes us. */
	while (left > 0) {
		for (size_t i = 0; i < n; i++) {
			struct rt_cmd_told *t = &told[i];
			struct rt_cmd_status_file now;
			bool acted;
			if (t->done)
				continue;
			if (rt_cmd_status_file_read_once(t->target.status_path, &now) ==
			        RT_READ_OK &&
			    rt_target_answered(kind, &t->target.status.read.st, &now.read.st,
			                       &acted)) {
				rt_cmd_trigger_result(kind, &now.read, acted);
			} else if (!rt_cmd_proc_alive(t->target.pid)) {
				rt_cmd_say("pid %d: exited before it handled the %s", t->target.pid,
				           rt_proto_kind_name(kind));
				status = RT_CMD_FAIL;
			} else {
				continue;
			}
			t->done = true;
			rt_cmd_wait_forget_pid(&w, t->pid_slot);
			left--;
		}
		if (left > 0 && !rt_cmd_wait_until(&w, deadline))
			break;
	}
	fflush(stdout);
	for (size_t i = 0; i < n; i++) {
		if (!told[i].done) {
			rt_cmd_say("pid %d: no answer within %ss", told[i].target.pid,
			           timeout_text);
			status = RT_CMD_FAIL;
		}
	}
	rt_cmd_wait_close(&w);
	return status;
}

/* What round and trim were asked. */
struct rt_cmd_trigger_args {
	const char *verb;
	enum rt_proto_kind kind;
	bool wait;
	const char *timeout_text;
	uint64_t timeout_us;
	struct rt_cmd_select sel;
	int *pids;
	size_t npids;
};

static void
rt_cmd_trigger_parse(int argc, char **argv, struct rt_cmd_trigger_args *a)
{
	a->verb = argv[0];
	a->kind = strcmp(a->verb, "trim") == 0 ? RT_PROTO_TRIM : RT_PROTO_ROUND;
	a->timeout_text = RT_CMD_WAIT_DEFAULT;
	a->pids = rt_cmd_alloc((size_t)argc * sizeof(*a->pids));
	for (int i = 1; i < argc; i++) {
		struct rt_cmd_opt opt;
		if (!strcmp(argv[i], "--")) {
			for (i++; i < argc; i++)
				a->pids[a->npids++] = rt_cmd_opt_pid(argv[i]);
			break;
		}
		if (argv[i][0] != '-') {
			a->pids[a->npids++] = rt_cmd_opt_pid(argv[i]);
			continue;
		}
		rt_cmd_opt_split(argv[i], &opt);
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			rt_cmd_trigger_help(a->verb);
			exit(RT_CMD_OK);
		} else if (!strcmp(argv[i], "--wait")) {
			a->wait = true;
		} else if (rt_cmd_opt_is(&opt, "--timeout")) {
			a->timeout_text = rt_cmd_opt_value(&opt, argc, argv, &i);
		} else if (!rt_cmd_select_option(&a->sel, &opt, argc, argv, &i)) {
			rt_cmd_usage_error("unknown option %s", argv[i]);
		}
	}
	if (rt_parse_seconds(a->timeout_text, RT_CMD_WAIT_MAX_US, &a->timeout_us) != RT_PARSE_OK)
		rt_cmd_usage_error("--timeout takes seconds, not '%s'", a->timeout_text);
	if (a->sel.first && a->npids)
		rt_cmd_usage_error("%s takes no PID", a->sel.first);
	if (!a->sel.first && !a->npids)
		rt_cmd_usage_error("missing PID (or --all, --under, --cgroup, --match)");
	rt_cmd_select_check(&a->sel);
}

/* The carriers with a FIFO that the selection takes, fork children that share their parent's heap
 * aside (their rounds are announced to them by pid: roundtrim(7), FORK AND EXEC); ends the
 * command when there is none. */
static struct rt_cmd_told *
rt_cmd_trigger_selected(struct rt_cmd_select *sel, size_t *ntold)
{
	size_t n;
	char why[512];
	rt_cmd_select_begin(sel, true);
	int *carriers = rt_cmd_proc_carriers(&n);
	struct rt_cmd_told *told = rt_cmd_alloc(sizeof(*told) * (n ? n : 1));
	*ntold = 0;
	for (size_t i = 0; i < n; i++) {
		struct rt_cmd_target *t = &told[*ntold].target;
		if (rt_cmd_proc_target(carriers[i], t, why, sizeof(why)) == RT_CMD_PROC_TARGET &&
		    rt_cmd_select_takes(sel, carriers[i], t->status.read.st.program) &&
		    !rt_cmd_proc_is_fork_child(carriers[i], t->status.read.st.fork_of))
			(*ntold)++;
	}
	free(carriers);
	char what[PATH_MAX + 512], left[128] = "";
	rt_cmd_select_text(sel, what, sizeof(what));
	if (sel->other_session)
		snprintf(left, sizeof(left),
		         "; %zu more in other sessions (--any-session reaches them)",
		         sel->other_session);
	if (*ntold == 0)
		rt_cmd_die("no process of yours carries libroundtrim.so with a FIFO%s%s", what,
		           left);
	if (sel->other_session)
		rt_cmd_say("left out %zu process%s of yours with libroundtrim.so in other "
		           "sessions; --any-session reaches them",
		           sel->other_session, sel->other_session == 1 ? "" : "es");
	rt_cmd_select_end(sel);
	return told;
}

/* The PIDs given that carry the library with a FIFO; each other one is said, and fails. */
static struct rt_cmd_told *
rt_cmd_trigger_given(const int *pids, size_t npids, size_t *ntold, int *status)
{
	char why[512];
	struct rt_cmd_told *told = rt_cmd_alloc(sizeof(*told) * (npids ? npids : 1));
	*ntold = 0;
	for (size_t i = 0; i < npids; i++) {
		struct rt_cmd_target *t = &told[*ntold].target;
		if (rt_cmd_proc_target(pids[i], t, why, sizeof(why)) != RT_CMD_PROC_TARGET) {
			rt_cmd_say("pid %d: %s", pids[i], why);
			*status = RT_CMD_FAIL;
			continue;
		}
		(*ntold)++;
	}
	return told;
}

/* Writes the line to each target; keeps first in told those it reached, and returns how many. */
static size_t
rt_cmd_trigger_tell(enum rt_proto_kind kind, struct rt_cmd_told *told, size_t ntold, int *status)
{
	size_t nwritten = 0;
	for (size_t i = 0; i < ntold; i++) {
		struct rt_cmd_told *t = &told[i];
		if (!rt_cmd_trigger_write(t->target.fifo, kind)) {
			rt_cmd_say("pid %d: cannot write to %s (nobody reads it, or the process is "
			           "gone)",
			           t->target.pid, t->target.fifo);
			*status = RT_CMD_FAIL;
			continue;
		}
		t->done = false;
		if (nwritten != i)
			told[nwritten] = *t;
		nwritten++;
	}
	return nwritten;
}

int
rt_cmd_trigger(int argc, char **argv)
{
	struct rt_cmd_trigger_args a = {0};
	int status = RT_CMD_OK;
	rt_cmd_trigger_parse(argc, argv, &a);
	size_t ntold;
	struct rt_cmd_told *told = a.sel.first
	                               ? rt_cmd_trigger_selected(&a.sel, &ntold)
	                               : rt_cmd_trigger_given(a.pids, a.npids, &ntold, &status);
	size_t nwritten = rt_cmd_trigger_tell(a.kind, told, ntold, &status);
	if (a.wait && nwritten > 0 &&
	    rt_cmd_trigger_wait(a.kind, told, nwritten, a.timeout_text, a.timeout_us) != RT_CMD_OK)
		status = RT_CMD_FAIL;
	free(told);
	free(a.pids);
	return status;
}
