#include "rt_summary.h"

#include "rt_allocator.h"

#include <stdio.h>
#include <string.h>

void
rt_summary_init(struct rt_summary *s, int pid)
{
	memset(s, 0, sizeof(*s));
	s->pid = pid;
}

void
rt_summary_add(struct rt_summary *s, const struct rt_round_record *rec)
{
	bool python = rt_report_is_follow_up(rec);
	if (s->lines == 0 || rec->round < s->first_round) {
		s->first_round = rec->round;
		s->first_after_kib = rec->rss_after_kib;
		snprintf(s->allocator, sizeof(s->allocator), "%s", rec->allocator);
	}
	/* Within one round, the follow-up came last, whatever the order given. */
	if (s->lines == 0 || rec->round > s->last_round ||
	    (rec->round == s->last_round && (python || !s->last_after_by_python))) {
		s->last_round = rec->round;
		s->last_after_kib = rec->rss_after_kib;
		s->last_after_by_python = python;
	}
	s->lines++;
	s->actions += !python && strcmp(rec->action, rt_action_name(RT_ACTION_NONE)) != 0;
	s->released_kib += rt_report_released_kib(rec);
	if (python)
		return;
	s->n++;
	double x = (double)rec->round, b = (double)rec->rss_before_kib / 1024.0,
	       a = (double)rec->rss_after_kib / 1024.0;
	s->sx += x;
	s->sxx += x * x;
	s->sb += b;
	s->sxb += x * b;
	s->sa += a;
	s->sxa += x * a;
}

static double
rt_summary_slope(const struct rt_summary *s, double sy, double sxy)
{
	double n = (double)s->n, d = n * s->sxx - s->sx * s->sx;
	return s->n > 1 && d != 0 ? (n * sxy - s->sx * sy) / d : 0;
}

double
rt_summary_before_mib_per_round(const struct rt_summary *s)
{
	return rt_summary_slope(s, s->sb, s->sxb);
}

double
rt_summary_after_mib_per_round(const struct rt_summary *s)
{
	return rt_summary_slope(s, s->sa, s->sxa);
}
