/* rt_cmd_plot: the pictures `roundtrim report -o` draws: RSS before and after each round, and
 * with --sites the live bytes of the sites that grow most. Owns the gnuplot data and script, the
 * terminal for .png or .svg, and running gnuplot. */
#ifndef RT_CMD_PLOT_H
#define RT_CMD_PLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A plot being put together in a scratch directory of its own. */
struct rt_cmd_plot {
	char dir[64];
	char data[96];
	FILE *f;
	int *pids;
	size_t npids;
};

/* Whether out's extension is one the plot can write (.png, .svg). */
bool rt_cmd_plot_format_ok(const char *out);
/* Whether gnuplot is there to run. */
bool rt_cmd_plot_available(void);
void rt_cmd_plot_begin(struct rt_cmd_plot *p);
/* The next process's lines: each of its rounds in order, then the next process. */
void rt_cmd_plot_process(struct rt_cmd_plot *p, int pid);
void rt_cmd_plot_point(struct rt_cmd_plot *p, uint64_t round, uint64_t before_kib,
                       uint64_t after_kib);
/* Draws into out and removes the scratch files; false with the reason in why. */
bool rt_cmd_plot_end(struct rt_cmd_plot *p, const char *out, char *why, size_t why_size);

/* The other plot: each block that rt_cmd_plot_process starts (its pid argument unused) is one
 * line of (x, y) points, titled lines[i]; then drawn like rt_cmd_plot_end. */
void rt_cmd_plot_xy(struct rt_cmd_plot *p, uint64_t x, double y);
bool rt_cmd_plot_end_lines(struct rt_cmd_plot *p, const char *out, const char *title,
                           const char *ylabel, const char *const *lines, char *why,
                           size_t why_size);

#endif
