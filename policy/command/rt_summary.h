/* rt_summary: what `roundtrim report` says about one process from its stats lines.
 * Owns the counts, the memory released, first and last RSS and RSS growth per round. */
#ifndef RT_SUMMARY_H
#define RT_SUMMARY_H

#include <stdbool.h>
#include <stdint.h>

#include "rt_report.h"

struct rt_summary {
	int pid;
	char allocator[RT_REPORT_WORD_MAX]; /* the allocator of the first round */
	uint64_t lines;                     /* every line, Python follow-ups included */
	uint64_t actions; /* rounds and trims acted on: own lines whose action was not "none" */
	uint64_t released_kib;
	uint64_t first_round, last_round; /* the lowest and highest round seen */
	uint64_t first_after_kib, last_after_kib;
	bool last_after_by_python; /* last_after_kib is a follow-up's: its round's last word */
	/* Sums for the least-squares lines of RSS before and after against the round, over the
	 * rounds' own records (n of them). */
	uint64_t n;
	double sx, sxx, sb, sxb, sa, sxa;
};

void rt_summary_init(struct rt_summary *s, int pid);
/* Adds one of the process's stats lines, in any order. A Python follow-up
 * (RT_REPORT_TRIGGER_PYTHON) is part of its round's action: its release, and the RSS its round
 * ended at, but no action and no round of its own. */
void rt_summary_add(struct rt_summary *s, const struct rt_round_record *rec);
/* How fast RSS grows per round, before and after the actions: the least-squares slope of
 * rss_before_kib and rss_after_kib against the round, in MiB per round; 0 without two distinct
 * rounds. */
double rt_summary_before_mib_per_round(const struct rt_summary *s);
double rt_summary_after_mib_per_round(const struct rt_summary *s);

#endif
