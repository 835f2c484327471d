/* report --sites: the growth table of the sites files (ROUNDTRIM_SITES), its call paths named
 * offline with binutils' addr2line (the binaries' symbols and debug information; never in the
 * host), and with -o a plot of the top sites' live bytes across rounds (roundtrim(1), report). */
#include "rt_cmd_sites.h"

#include "rt_cmd.h"
#include "rt_cmd_exec.h"
#include "rt_cmd_plot.h"
#include "rt_report.h"
#include "rt_sites.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Rows of the table and sites whose call paths follow it; lines of the plot. */
#define RT_CMD_SITES_ROWS 20
#define RT_CMD_SITES_PATHS 5
#define RT_CMD_SITES_PLOT 8
/* Offsets per addr2line run. */
#define RT_CMD_SITES_BATCH 512

struct rt_cmd_sites_def {
	int pid;
	uint32_t site;
	struct rt_sites_site_read *read;
};

struct rt_cmd_sites_data {
	struct rt_cmd_sites_def *defs;
	size_t ndefs, defs_cap;
	struct rt_sites_round *rounds;
	size_t nrounds, rounds_cap;
};

/* A frame named: "function (file:line)" for the table, and the full path for call paths. */
struct rt_cmd_sites_name {
	const char *module;
	uint64_t offset;
	char function[256];
	char where[PATH_MAX];
};

struct rt_cmd_sites_names {
	struct rt_cmd_sites_name *name;
	size_t n, cap;
	bool no_addr2line;
};

static void
rt_cmd_sites_read(const char *file, struct rt_cmd_sites_data *d)
{
	char path[PATH_MAX];
	if (rt_sites_is_path(file))
		snprintf(path, sizeof(path), "%s", file);
	else if (!rt_sites_path(path, sizeof(path), file))
		rt_cmd_die("%s: name too long", file);
	FILE *f = fopen(path, "re");
	if (!f)
		rt_cmd_die("%s: cannot read (ROUNDTRIM_SITES writes it beside the stats file)",
		           path);
	char *line = NULL;
	size_t cap = 0;
	uint64_t skipped = 0;
	static struct rt_sites_read read;
	while (getline(&line, &cap, f) >= 0) {
		if (strspn(line, " \t\r\n") == strlen(line))
			continue;
		switch (rt_sites_read_line(line, &read)) {
		case RT_SITES_LINE_SITE:
			if (d->ndefs == d->defs_cap) {
				d->defs_cap = d->defs_cap ? d->defs_cap * 2 : 64;
				d->defs = rt_cmd_realloc(d->defs, d->defs_cap * sizeof(*d->defs));
			}
			struct rt_cmd_sites_def *def = &d->defs[d->ndefs++];
			def->pid = read.site.s.pid;
			def->site = read.site.s.site;
			def->read = rt_cmd_alloc(sizeof(*def->read));
			*def->read = read.site;
			/* The strings moved with the copy: point at the copy's. */
			for (unsigned i = 0; i < def->read->s.nframes; i++)
				def->read->s.frames[i].module = def->read->modules[i];
			for (unsigned i = 0; i < def->read->s.npy; i++) {
				def->read->s.py[i].function = def->read->functions[i];
				def->read->s.py[i].file = def->read->files[i];
			}
			break;
		case RT_SITES_LINE_ROUND:
			if (d->nrounds == d->rounds_cap) {
				d->rounds_cap = d->rounds_cap ? d->rounds_cap * 2 : 256;
				d->rounds =
				    rt_cmd_realloc(d->rounds, d->rounds_cap * sizeof(*d->rounds));
			}
			d->rounds[d->nrounds++] = read.round;
			break;
		case RT_SITES_LINE_BAD:
			skipped++;
			break;
		}
	}
	if (ferror(f))
		rt_cmd_die("%s: cannot read", path);
	if (skipped)
		rt_cmd_say("%s: %" PRIu64 " line(s) that are not sites lines left out", path,
		           skipped);
	free(line);
	fclose(f);
}

static const struct rt_sites_site *
rt_cmd_sites_def(const struct rt_cmd_sites_data *d, int pid, uint32_t site)
{
	for (size_t i = 0; i < d->ndefs; i++)
		if (d->defs[i].pid == pid && d->defs[i].site == site)
			return &d->defs[i].read->s;
	return NULL;
}

static int
rt_cmd_sites_round_cmp(const void *a, const void *b)
{
	const struct rt_sites_round *x = a, *y = b;
	if (x->pid != y->pid)
		return (x->pid > y->pid) - (x->pid < y->pid);
	return (x->round > y->round) - (x->round < y->round);
}

static int
rt_cmd_sites_trend_cmp(const void *a, const void *b)
{
	return rt_sites_trend_cmp(a, b);
}

/* --- Names, by module: one addr2line per module for every offset the output shows. */

static struct rt_cmd_sites_name *
rt_cmd_sites_name(struct rt_cmd_sites_names *names, const char *module, uint64_t offset)
{
	for (size_t i = 0; i < names->n; i++)
		if (names->name[i].offset == offset && !strcmp(names->name[i].module, module))
			return &names->name[i];
	if (names->n == names->cap) {
		names->cap = names->cap ? names->cap * 2 : 128;
		names->name = rt_cmd_realloc(names->name, names->cap * sizeof(*names->name));
	}
	struct rt_cmd_sites_name *n = &names->name[names->n++];
	n->module = module;
	n->offset = offset;
	n->function[0] = n->where[0] = '\0';
	return n;
}

static void
rt_cmd_sites_chomp(char *s)
{
	s[strcspn(s, "\r\n")] = '\0';
}

/* Runs addr2line on the names [from, to) that share module, and fills them in. */
static void
rt_cmd_sites_addr2line(struct rt_cmd_sites_names *names, size_t *todo, size_t count)
{
	const char *module = names->name[todo[0]].module;
	char dir[64], out[96];
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/roundtrim-sites.XXXXXX",
	         tmp && tmp[0] == '/' && strlen(tmp) < 32 ? tmp : "/tmp");
	if (!mkdtemp(dir))
		rt_cmd_die("cannot make a scratch directory in %s: %m", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	const char **argv = rt_cmd_alloc((count + 8) * sizeof(*argv));
	char(*offsets)[24] = rt_cmd_alloc(count * sizeof(*offsets));
	size_t a = 0;
	argv[a++] = "addr2line";
	argv[a++] = "-f";
	argv[a++] = "-C";
	argv[a++] = "-e";
	argv[a++] = module;
	for (size_t i = 0; i < count; i++) {
		/* A return address: the call is the instruction before it. */
		uint64_t off = names->name[todo[i]].offset;
		snprintf(offsets[i], sizeof(offsets[i]), "0x%" PRIx64, off ? off - 1 : 0);
		argv[a++] = offsets[i];
	}
	argv[a] = NULL;
	FILE *f = NULL;
	if (rt_cmd_exec_wait(argv, NULL, out) == 0 && (f = fopen(out, "re"))) {
		/* Whole lines, whatever their length: a demangled C++ name can run to kilobytes,
		 * and a line read in two pieces would shift every later answer by one. */
		char *function = NULL, *where = NULL;
		size_t fsize = 0, wsize = 0;
		for (size_t i = 0; i < count; i++) {
			if (getline(&function, &fsize, f) < 0 || getline(&where, &wsize, f) < 0)
				break;
			rt_cmd_sites_chomp(function);
			rt_cmd_sites_chomp(where);
			struct rt_cmd_sites_name *n = &names->name[todo[i]];
			if (strcmp(function, "??"))
				snprintf(n->function, sizeof(n->function), "%.255s", function);
			/* "file:line (discriminator N)" or "??:0" or "??:?". */
			where[strcspn(where, " ")] = '\0';
			if (strncmp(where, "??", 2))
				snprintf(n->where, sizeof(n->where), "%.4000s", where);
		}
		free(function);
		free(where);
	}
	if (f)
		fclose(f);
	unlink(out);
	rmdir(dir);
	free(offsets);
	free(argv);
}

static void
rt_cmd_sites_resolve(struct rt_cmd_sites_names *names)
{
	char path[PATH_MAX];
	if (!rt_cmd_exec_search("addr2line", path, sizeof(path))) {
		names->no_addr2line = true;
		rt_cmd_say("addr2line not found (Debian: binutils): frames are shown as module and "
		           "offset");
		return;
	}
	size_t *todo = rt_cmd_alloc((names->n + 1) * sizeof(*todo));
	bool *done = calloc(names->n + 1, sizeof(*done));
	if (!done)
		rt_cmd_die("out of memory");
	for (size_t i = 0; i < names->n; i++) {
		if (done[i])
			continue;
		const char *module = names->name[i].module;
		size_t count = 0;
		for (size_t j = i; j < names->n; j++) {
			if (done[j] || strcmp(names->name[j].module, module))
				continue;
			done[j] = true;
			todo[count++] = j;
			if (count == RT_CMD_SITES_BATCH) {
				if (module[0] == '/' && access(module, R_OK) == 0)
					rt_cmd_sites_addr2line(names, todo, count);
				count = 0;
			}
		}
		if (count && module[0] == '/' && access(module, R_OK) == 0)
			rt_cmd_sites_addr2line(names, todo, count);
	}
	free(done);
	free(todo);
}

static const char *
rt_cmd_sites_base(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* "function (file:line)", or what is known of it, or the module and offset. */
static void
rt_cmd_sites_frame_text(const struct rt_cmd_sites_name *n, bool full, char *out, size_t size)
{
	char where[PATH_MAX + 8] = "";
	if (n->where[0])
		snprintf(where, sizeof(where), " (%s)",
		         full ? n->where : rt_cmd_sites_base(n->where));
	if (n->function[0])
		snprintf(out, size, "%s%s", n->function, where);
	else
		snprintf(out, size, "%s+0x%" PRIx64 "%s",
		         n->module[0] ? rt_cmd_sites_base(n->module) : "?", n->offset, where);
}

static void
rt_cmd_sites_py_text(const struct rt_sites_pyframe *py, bool full, char *out, size_t size)
{
	snprintf(out, size, "%s (%s:%" PRIu32 ")", py->function,
	         full ? py->file : rt_cmd_sites_base(py->file), py->line);
}

/* The table's "where": the innermost Python function when the site has one, else the native
 * frame policy picks and its caller. */
static void
rt_cmd_sites_where(const struct rt_sites_site *s, struct rt_cmd_sites_names *names, char *out,
                   size_t size)
{
	if (!s) {
		snprintf(out, size, "(site not defined in the file)");
		return;
	}
	if (s->npy) {
		rt_cmd_sites_py_text(&s->py[0], false, out, size);
		return;
	}
	unsigned at = rt_sites_where(s);
	out[0] = '\0';
	for (unsigned i = at, w = 0; i < s->nframes && i < at + 2; i++) {
		char text[512];
		rt_cmd_sites_frame_text(
		    rt_cmd_sites_name(names, s->frames[i].module, s->frames[i].offset), false, text,
		    sizeof(text));
		int n = snprintf(out + w, size - w, "%s%s", i > at ? " < " : "", text);
		if (n < 0 || (size_t)n >= size - w)
			break;
		w += (size_t)n;
	}
}

/* The growth table: one trend per (process, site), sorted as the table shows them. */
static struct rt_sites_trend *
rt_cmd_sites_trends(const struct rt_cmd_sites_data *d, size_t *ntrends_out)
{
	struct rt_sites_trend *trends = NULL;
	size_t ntrends = 0, cap = 0;
	for (size_t r = 0; r < d->nrounds; r++) {
		const struct rt_sites_round *round = &d->rounds[r];
		for (size_t g = 0; g < round->ngrew; g++) {
			const struct rt_sites_change *c = &round->grew[g];
			struct rt_sites_trend *t = NULL;
			for (size_t i = ntrends; i-- > 0 && trends[i].pid == round->pid;)
				if (trends[i].site == c->site) {
					t = &trends[i];
					break;
				}
			if (!t) {
				if (ntrends == cap) {
					cap = cap ? cap * 2 : 64;
					trends = rt_cmd_realloc(trends, cap * sizeof(*trends));
				}
				t = &trends[ntrends++];
				rt_sites_trend_init(t, round->pid, c->site);
			}
			rt_sites_trend_grew(t, round->since, round->round, c->delta, c->live);
		}
	}
	qsort(trends, ntrends, sizeof(*trends), rt_cmd_sites_trend_cmp);
	*ntrends_out = ntrends;
	return trends;
}

/* One line per process: its reports, their rounds and its sampling. */
static void
rt_cmd_sites_print_processes(const struct rt_cmd_sites_data *d)
{
	for (size_t r = 0; r < d->nrounds;) {
		size_t first = r;
		int pid = d->rounds[r].pid;
		while (r < d->nrounds && d->rounds[r].pid == pid)
			r++;
		const struct rt_sites_round *last = &d->rounds[r - 1];
		printf("pid %d: %zu report(s), rounds %" PRIu64 " to %" PRIu64
		       ", a sample every %.0f KiB on average, %" PRIu64
		       " live samples at the end, %" PRIu64 " dropped\n",
		       pid, r - first, d->rounds[first].round, last->round,
		       (double)last->sample_bytes / 1024, last->samples, last->dropped);
	}
}

static void
rt_cmd_sites_print_table(const struct rt_cmd_sites_data *d, const struct rt_sites_trend *trends,
                         size_t rows, size_t ntrends, struct rt_cmd_sites_names *names)
{
	printf("\n%-8s %6s %8s %8s %11s %9s  %s\n", "pid", "site", "grew", "in a row", "MiB/round",
	       "live MiB", "where");
	for (size_t i = 0; i < rows; i++) {
		const struct rt_sites_trend *t = &trends[i];
		uint64_t reports = 0, since = UINT64_MAX, until = 0;
		for (size_t r = 0; r < d->nrounds; r++)
			if (d->rounds[r].pid == t->pid) {
				reports++;
				since = d->rounds[r].since < since ? d->rounds[r].since : since;
				until = d->rounds[r].round > until ? d->rounds[r].round : until;
			}
		char grew[32], where[1024];
		snprintf(grew, sizeof(grew), "%" PRIu64 "/%" PRIu64, t->rounds_grown, reports);
		rt_cmd_sites_where(rt_cmd_sites_def(d, t->pid, t->site), names, where,
		                   sizeof(where));
		printf("%-8d %6" PRIu32 " %8s %8" PRIu64 " %11.2f %9.1f  %s\n", t->pid, t->site,
		       grew, t->longest,
		       rt_sites_trend_per_round(t, until > since ? until - since : 0) / 1048576.0,
		       t->last_live / 1048576.0, where);
	}
	if (ntrends > rows)
		printf("... and %zu more site(s)\n", ntrends - rows);
	printf(
	    "\ngrew: reports in which the site's live bytes grew beyond the sampling noise; in a "
	    "row: the\nlongest run of such reports (more than 2: what a leak looks like); "
	    "MiB/round: its growth over\nthe rounds the reports span; live MiB: when it last "
	    "grew.\n");
}

/* The call paths of the top sites, native frames then Python's. */
static void
rt_cmd_sites_print_paths(const struct rt_cmd_sites_data *d, const struct rt_sites_trend *trends,
                         size_t rows, struct rt_cmd_sites_names *names)
{
	for (size_t i = 0; i < rows && i < RT_CMD_SITES_PATHS; i++) {
		const struct rt_sites_site *s = rt_cmd_sites_def(d, trends[i].pid, trends[i].site);
		if (!s)
			continue;
		printf("\nsite %" PRIu32 " of pid %d:\n", s->site, s->pid);
		for (unsigned f = 0; f < s->nframes; f++) {
			char text[PATH_MAX + 300];
			const struct rt_sites_frame *fr = &s->frames[f];
			rt_cmd_sites_frame_text(rt_cmd_sites_name(names, fr->module, fr->offset),
			                        true, text, sizeof(text));
			printf("  #%-2u %s  [%s+0x%" PRIx64 "]\n", f, text,
			       fr->module[0] ? rt_cmd_sites_base(fr->module) : "?", fr->offset);
		}
		for (unsigned p = 0; p < s->npy; p++) {
			char text[2 * RT_SITES_TEXT_MAX + 32];
			rt_cmd_sites_py_text(&s->py[p], true, text, sizeof(text));
			printf("  %s %s\n", p ? "      " : "python", text);
		}
	}
}

/* -o: the live bytes of the top sites across rounds, a line each. */
static void
rt_cmd_sites_plot(const struct rt_cmd_sites_data *d, const struct rt_sites_trend *trends,
                  size_t rows, struct rt_cmd_sites_names *names, const char *out)
{
	struct rt_cmd_plot plot;
	rt_cmd_plot_begin(&plot);
	size_t lines = rows < RT_CMD_SITES_PLOT ? rows : RT_CMD_SITES_PLOT;
	char(*titles)[1100] = rt_cmd_alloc(lines * sizeof(*titles));
	const char **title_ptrs = rt_cmd_alloc(lines * sizeof(*title_ptrs));
	for (size_t i = 0; i < lines; i++) {
		const struct rt_sites_trend *t = &trends[i];
		char where[1024];
		rt_cmd_sites_where(rt_cmd_sites_def(d, t->pid, t->site), names, where,
		                   sizeof(where));
		snprintf(titles[i], sizeof(titles[i]), "%d/%" PRIu32 " %s", t->pid, t->site, where);
		title_ptrs[i] = titles[i];
		rt_cmd_plot_process(&plot, t->pid);
		for (size_t r = 0; r < d->nrounds; r++) {
			if (d->rounds[r].pid != t->pid)
				continue;
			for (size_t g = 0; g < d->rounds[r].ngrew; g++)
				if (d->rounds[r].grew[g].site == t->site)
					rt_cmd_plot_xy(&plot, d->rounds[r].round,
					               d->rounds[r].grew[g].live / 1048576.0);
		}
	}
	char why[512];
	if (!rt_cmd_plot_end_lines(&plot, out, "Live bytes of the sites that grow (roundtrim)",
	                           "live (MiB, sampled)", title_ptrs, why, sizeof(why)))
		rt_cmd_die("%s", why);
	rt_cmd_say("wrote %s", out);
	free(title_ptrs);
	free(titles);
}

int
rt_cmd_sites_report(char **files, size_t nfiles, const char *out)
{
	struct rt_cmd_sites_data d = {0};
	for (size_t i = 0; i < nfiles; i++)
		rt_cmd_sites_read(files[i], &d);
	if (d.nrounds == 0)
		rt_cmd_die("no sites reports in the file(s) given");
	qsort(d.rounds, d.nrounds, sizeof(*d.rounds), rt_cmd_sites_round_cmp);
	size_t ntrends;
	struct rt_sites_trend *trends = rt_cmd_sites_trends(&d, &ntrends);

	/* The names the output needs, found in one addr2line run per binary. */
	struct rt_cmd_sites_names names = {0};
	size_t rows = ntrends < RT_CMD_SITES_ROWS ? ntrends : RT_CMD_SITES_ROWS;
	for (size_t i = 0; i < rows; i++) {
		const struct rt_sites_site *s = rt_cmd_sites_def(&d, trends[i].pid, trends[i].site);
		for (unsigned f = 0; s && f < s->nframes; f++)
			rt_cmd_sites_name(&names, s->frames[f].module, s->frames[f].offset);
	}
	rt_cmd_sites_resolve(&names);

	rt_cmd_sites_print_processes(&d);
	rt_cmd_sites_print_table(&d, trends, rows, ntrends, &names);
	rt_cmd_sites_print_paths(&d, trends, rows, &names);
	fflush(stdout);
	if (out && rows)
		rt_cmd_sites_plot(&d, trends, rows, &names, out);
	for (size_t i = 0; i < d.ndefs; i++)
		free(d.defs[i].read);
	free(d.defs);
	free(d.rounds);
	free(trends);
	free(names.name);
	return RT_CMD_OK;
}
