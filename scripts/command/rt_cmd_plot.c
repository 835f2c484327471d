#include "rt_cmd_plot.h"

#include "rt_cmd.h"
#include "rt_cmd_exec.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool
rt_cmd_plot_ends_with(const char *s, const char *suffix)
{
	size_t len = strlen(s), n = strlen(suffix);
	return len > n && strcmp(s + len - n, suffix) == 0;
}

bool
rt_cmd_plot_format_ok(const char *out)
{
	return rt_cmd_plot_ends_with(out, ".png") || rt_cmd_plot_ends_with(out, ".svg");
}

bool
rt_cmd_plot_available(void)
{
	char path[PATH_MAX];
	return rt_cmd_exec_search("gnuplot", path, sizeof(path));
}

void
rt_cmd_plot_begin(struct rt_cmd_plot *p)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(p->dir, sizeof(p->dir), "%s/roundtrim-plot.XXXXXX",
	         tmp && tmp[0] == '/' && strlen(tmp) < 32 ? tmp : "/tmp");
	if (!mkdtemp(p->dir))
		rt_cmd_die("cannot make a scratch directory in %s: %m", p->dir);
	snprintf(p->data, sizeof(p->data), "%s/data", p->dir);
	p->f = fopen(p->data, "we");
	if (!p->f)
		rt_cmd_die("cannot write %s: %m", p->data);
	p->pids = NULL;
	p->npids = 0;
}

void
rt_cmd_plot_process(struct rt_cmd_plot *p, int pid)
{
	/* Two blank lines end a gnuplot data block: each process is one "index". */
	if (p->npids)
		fputs("\n\n", p->f);
	p->pids = rt_cmd_realloc(p->pids, (p->npids + 1) * sizeof(*p->pids));
	p->pids[p->npids++] = pid;
}

void
rt_cmd_plot_point(struct rt_cmd_plot *p, uint64_t round, uint64_t before_kib, uint64_t after_kib)
{
	fprintf(p->f, "%" PRIu64 " %.3f %.3f\n", round, (double)before_kib / 1024.0,
	        (double)after_kib / 1024.0);
}

/* out in a gnuplot single-quoted string: each quote doubled. */
static void
rt_cmd_plot_quoted(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s, f);
	}
	fputc('\'', f);
}

static const char *
rt_cmd_plot_terminal(const char *out)
{
	if (rt_cmd_plot_ends_with(out, ".svg"))
		return "svg size 900,500 dynamic noenhanced";
	const char *const probe[] = {"gnuplot", "-e", "set terminal pngcairo", NULL};
	if (rt_cmd_exec_wait(probe, NULL, NULL) == 0)
		return "pngcairo size 900,500 noenhanced";
	return "png size 900,500 noenhanced";
}

/* The RSS plot's lines: before and after, per process. */
static void
rt_cmd_plot_rss_lines(FILE *f, const struct rt_cmd_plot *p, const void *ctx)
{
	(void)ctx;
	fputs("set title 'RSS before and after each round (roundtrim)'\n"
	      "set xlabel 'round'\n"
	      "set ylabel 'RSS (MiB)'\n"
	      "set yrange [0:*]\n"
	      "set grid\n"
	      "set key outside right top\n"
	      "plot ",
	      f);
	for (size_t i = 0; i < p->npids; i++)
		fprintf(
		    f,
		    "%s'%s' index %zu using 1:2 with linespoints dashtype 2 title 'pid %d "
		    "before', '%s' index %zu using 1:3 with linespoints linewidth 2 title 'pid %d "
		    "after'",
		    i ? ", " : "", p->data, i, p->pids[i], p->data, i, p->pids[i]);
	fputc('\n', f);
}

struct rt_cmd_plot_titles {
	const char *title, *ylabel;
	const char *const *lines;
};

static void
rt_cmd_plot_xy_lines(FILE *f, const struct rt_cmd_plot *p, const void *ctx)
{
	const struct rt_cmd_plot_titles *t = ctx;
	fputs("set title ", f);
	rt_cmd_plot_quoted(f, t->title);
	fputs("\nset xlabel 'round'\nset ylabel ", f);
	rt_cmd_plot_quoted(f, t->ylabel);
	fputs("\nset yrange [0:*]\nset grid\nset key outside right top\nplot ", f);
	for (size_t i = 0; i < p->npids; i++) {
		fprintf(f, "%s'%s' index %zu using 1:2 with linespoints linewidth 2 title ",
		        i ? ", " : "", p->data, i);
		rt_cmd_plot_quoted(f, t->lines[i]);
	}
	fputc('\n', f);
}

/* Writes the script (its lines by write_lines), runs gnuplot, removes the scratch files. */
static bool
rt_cmd_plot_run(struct rt_cmd_plot *p, const char *out,
                void (*write_lines)(FILE *, const struct rt_cmd_plot *, const void *),
                const void *ctx, char *why, size_t why_size)
{
	char script[96], err[96];
	bool ok = false;
	snprintf(script, sizeof(script), "%s/plot.gp", p->dir);
	snprintf(err, sizeof(err), "%s/err", p->dir);
	if (fclose(p->f) != 0) {
		snprintf(why, why_size, "cannot write %s", p->data);
		goto label_return;
	}
	FILE *f = fopen(script, "we");
	if (!f) {
		snprintf(why, why_size, "cannot write %s", script);
		goto label_return;
	}
	fprintf(f, "set terminal %s\nset output ", rt_cmd_plot_terminal(out));
	rt_cmd_plot_quoted(f, out);
	fputc('\n', f);
	write_lines(f, p, ctx);
	if (fclose(f) != 0) {
		snprintf(why, why_size, "cannot write %s", script);
		goto label_return;
	}
	const char *const gnuplot[] = {"gnuplot", NULL};
	struct stat st;
	if (rt_cmd_exec_wait(gnuplot, script, err) != 0) {
		char text[301] = "";
		FILE *e = fopen(err, "re");
		if (e) {
			size_t n = fread(text, 1, sizeof(text) - 1, e);
			text[n] = '\0';
			fclose(e);
		}
		snprintf(why, why_size, "gnuplot failed: %s", text);
	} else if (stat(out, &st) != 0 || st.st_size == 0) {
		snprintf(why, why_size, "gnuplot wrote nothing to %s", out);
	} else {
		ok = true;
	}
label_return:
	unlink(script);
	unlink(err);
	unlink(p->data);
	rmdir(p->dir);
	free(p->pids);
	return ok;
}

bool
rt_cmd_plot_end(struct rt_cmd_plot *p, const char *out, char *why, size_t why_size)
{
	return rt_cmd_plot_run(p, out, rt_cmd_plot_rss_lines, NULL, why, why_size);
}

void
rt_cmd_plot_xy(struct rt_cmd_plot *p, uint64_t x, double y)
{
	fprintf(p->f, "%" PRIu64 " %.3f\n", x, y);
}

bool
rt_cmd_plot_end_lines(struct rt_cmd_plot *p, const char *out, const char *title, const char *ylabel,
                      const char *const *lines, char *why, size_t why_size)
{
	const struct rt_cmd_plot_titles t = {title, ylabel, lines};
	return rt_cmd_plot_run(p, out, rt_cmd_plot_xy_lines, &t, why, why_size);
}
