/* report: per process, what its stats lines say (rt_summary), and with -o a plot of RSS before
 * and after each round; with --sites, the call sites that grow (rt_cmd_sites) (roundtrim(1),
 * report). */
#include "rt_cmd.h"
#include "rt_cmd_opt.h"
#include "rt_cmd_plot.h"
#include "rt_cmd_sites.h"
#include "rt_report.h"
#include "rt_summary.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the summary and the plot need of one stats line. */
struct rt_cmd_row {
	int pid;
	uint64_t round, before_kib, after_kib;
	char action[RT_REPORT_WORD_MAX], allocator[RT_REPORT_WORD_MAX];
};

struct rt_cmd_rows {
	struct rt_cmd_row *row;
	size_t n, cap;
};

static void
rt_cmd_report_help(void)
{
	fputs("Usage: " RT_CMD_NAME " report [--sites] [-o OUT.png|OUT.svg] FILE.jsonl...\n"
	      "Summarise stats files (ROUNDTRIM_STATS, run --stats): per process the rounds, "
	      "actions, memory\n"
	      "released, and how fast RSS grows per round before and after the actions (least "
	      "squares).\n"
	      "With -o, also plot RSS before and after each round per process with gnuplot.\n"
	      "With --sites, instead, the call sites whose sampled live bytes grew round after "
	      "round\n"
	      "(ROUNDTRIM_SITES, run --sites), read from the sites file beside each stats file "
	      "(or\n"
	      "given as FILE.sites.jsonl): the reports each grew in, its longest run of them in a "
	      "row,\n"
	      "its growth per round, its call path named with addr2line; -o plots their live "
	      "bytes.\n"
	      "\n"
	      "  --sites            the growing call sites instead of the RSS summary\n"
	      "  -o, --output OUT   the plot; its format follows the extension (.png or .svg)\n"
	      "  --help             this text\n"
	      "\n"
	      "Exit status: 0 success; 1 no data or the plot failed; 2 usage error.\n",
	      stdout);
}

/* Every stats line of the file; a line that is not one is counted and left out. */
static void
rt_cmd_report_read(const char *path, struct rt_cmd_rows *rows)
{
	FILE *f = fopen(path, "re");
	if (!f)
		rt_cmd_die("%s: cannot read", path);
	char *line = NULL;
	size_t cap = 0;
	uint64_t skipped = 0;
	struct rt_round_read *read = rt_cmd_alloc(sizeof(*read));
	while (getline(&line, &cap, f) >= 0) {
		if (strspn(line, " \t\r\n") == strlen(line))
			continue;
		if (rt_report_read_json(line, read) != RT_READ_OK) {
			skipped++;
			continue;
		}
		if (rows->n == rows->cap) {
			rows->cap = rows->cap ? rows->cap * 2 : 256;
			rows->row = rt_cmd_realloc(rows->row, rows->cap * sizeof(*rows->row));
		}
		struct rt_cmd_row *r = &rows->row[rows->n++];
		r->pid = read->rec.pid;
		r->round = read->rec.round;
		r->before_kib = read->rec.rss_before_kib;
		r->after_kib = read->rec.rss_after_kib;
		snprintf(r->action, sizeof(r->action), "%s", read->action);
		snprintf(r->allocator, sizeof(r->allocator), "%s", read->allocator);
	}
	if (ferror(f))
		rt_cmd_die("%s: cannot read", path);
	if (skipped)
		rt_cmd_say("%s: %" PRIu64 " line(s) that are not stats lines left out", path,
		           skipped);
	free(read);
	free(line);
	fclose(f);
}

static int
rt_cmd_report_cmp(const void *a, const void *b)
{
	const struct rt_cmd_row *x = a, *y = b;
	if (x->pid != y->pid)
		return (x->pid > y->pid) - (x->pid < y->pid);
	return (x->round > y->round) - (x->round < y->round);
}

static void
rt_cmd_report_summary_row(const struct rt_summary *s)
{
	char released[32], first[32], last[32];
	rt_report_mib(released, sizeof(released), s->released_kib);
	rt_report_mib(first, sizeof(first), s->first_after_kib);
	rt_report_mib(last, sizeof(last), s->last_after_kib);
	printf("%-8d %-9s %6" PRIu64 " %7" PRIu64 " %12s %10s %10s %13.2f %13.2f\n", s->pid,
	       s->allocator, s->last_round, s->actions, released, first, last,
	       rt_summary_before_mib_per_round(s), rt_summary_after_mib_per_round(s));
}

struct rt_cmd_report_args {
	const char *out; /* -o's plot, or NULL */
	bool sites;
	char **files;
	size_t nfiles;
};

static void
rt_cmd_report_parse(int argc, char **argv, struct rt_cmd_report_args *a)
{
	a->files = rt_cmd_alloc((size_t)argc * sizeof(*a->files));
	for (int i = 1; i < argc; i++) {
		struct rt_cmd_opt opt;
		rt_cmd_opt_split(argv[i], &opt);
		if (!strcmp(argv[i], "--")) {
			while (++i < argc)
				a->files[a->nfiles++] = argv[i];
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			rt_cmd_report_help();
			exit(RT_CMD_OK);
		} else if (rt_cmd_opt_is(&opt, "--sites")) {
			rt_cmd_opt_no_value(&opt);
			a->sites = true;
		} else if (!strcmp(argv[i], "-o") || rt_cmd_opt_is(&opt, "--output")) {
			a->out = rt_cmd_opt_value(&opt, argc, argv, &i);
		} else if (argv[i][0] == '-') {
			rt_cmd_usage_error("unknown option %s", argv[i]);
		} else {
			a->files[a->nfiles++] = argv[i];
		}
	}
	if (a->nfiles == 0)
		rt_cmd_usage_error("missing FILE.jsonl");
	if (a->out && !rt_cmd_plot_format_ok(a->out))
		rt_cmd_usage_error("-o takes a .png or .svg file, not '%s'", a->out);
	if (a->out && !rt_cmd_plot_available())
		rt_cmd_die("gnuplot not found (Debian: apt-get install gnuplot-nox)");
}

/* Every stats line of the files, by process and round; ends the command when there is none. */
static void
rt_cmd_report_rows(char **files, size_t nfiles, struct rt_cmd_rows *rows)
{
	for (size_t i = 0; i < nfiles; i++)
		rt_cmd_report_read(files[i], rows);
	if (rows->n == 0) {
		char names[1024] = "";
		for (size_t i = 0, w = 0; i < nfiles && w < sizeof(names); i++)
			w += (size_t)snprintf(names + w, sizeof(names) - w, "%s%s", i ? " " : "",
			                      files[i]);
		rt_cmd_die("no stats lines in %s", names);
	}
	qsort(rows->row, rows->n, sizeof(*rows->row), rt_cmd_report_cmp);
}

/* The summary table, a row per process, and its total; each process's points into plot when
 * there is one. */
static void
rt_cmd_report_summaries(const struct rt_cmd_rows *rows, struct rt_cmd_plot *plot)
{
	printf("%-8s %-9s %6s %7s %12s %10s %10s %13s %13s\n", "pid", "allocator", "rounds",
	       "actions", "released MiB", "RSS first", "RSS last", "before MiB/r", "after MiB/r");
	struct rt_summary s;
	size_t processes = 0;
	uint64_t total_kib = 0;
	for (size_t i = 0; i < rows->n; i++) {
		const struct rt_cmd_row *r = &rows->row[i];
		if (i == 0 || r->pid != rows->row[i - 1].pid) {
			rt_summary_init(&s, r->pid);
			if (plot)
				rt_cmd_plot_process(plot, r->pid);
		}
		struct rt_round_record rec = {.pid = r->pid,
		                              .round = r->round,
		                              .action = r->action,
		                              .allocator = r->allocator,
		                              .rss_before_kib = r->before_kib,
		                              .rss_after_kib = r->after_kib};
		rt_summary_add(&s, &rec);
		if (plot)
			rt_cmd_plot_point(plot, r->round, r->before_kib, r->after_kib);
		if (i + 1 == rows->n || rows->row[i + 1].pid != r->pid) {
			rt_cmd_report_summary_row(&s);
			processes++;
			total_kib += s.released_kib;
		}
	}
	char total[32];
	rt_report_mib(total, sizeof(total), total_kib);
	printf("\n%zu process(es), %s MiB released in total.\n"
	       "RSS first, last: after the first and last reports; MiB/r: RSS growth per round "
	       "(least squares) before and after the actions.\n",
	       processes, total);
	fflush(stdout);
}

int
rt_cmd_report(int argc, char **argv)
{
	struct rt_cmd_report_args a = {0};
	rt_cmd_report_parse(argc, argv, &a);
	if (a.sites) {
		int status = rt_cmd_sites_report(a.files, a.nfiles, a.out);
		free(a.files);
		return status;
	}
	struct rt_cmd_rows rows = {0};
	rt_cmd_report_rows(a.files, a.nfiles, &rows);
	struct rt_cmd_plot plot;
	if (a.out)
		rt_cmd_plot_begin(&plot);
	rt_cmd_report_summaries(&rows, a.out ? &plot : NULL);
	free(rows.row);
	free(a.files);
	if (!a.out)
		return RT_CMD_OK;
	char why[512];
	if (!rt_cmd_plot_end(&plot, a.out, why, sizeof(why)))
		rt_cmd_die("%s", why);
	rt_cmd_say("wrote %s", a.out);
	return RT_CMD_OK;
}
