#include "rt_cmd_select.h"

#include "rt_cmd.h"
#include "rt_cmd_proc.h"
#include "rt_settings.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* /proc/PID/cgroup: one line per hierarchy. */
#define RT_CMD_SELECT_CGROUP_MAX 8192

bool
rt_cmd_select_option(struct rt_cmd_select *s, const struct rt_cmd_opt *opt, int argc, char **argv,
                     int *i)
{
	const char *name;
	if (rt_cmd_opt_is(opt, "--all")) {
		rt_cmd_opt_no_value(opt);
		name = "--all";
		s->all = true;
	} else if (rt_cmd_opt_is(opt, "--any-session")) {
		rt_cmd_opt_no_value(opt);
		name = "--any-session";
		s->filter.any_session = true;
	} else if (rt_cmd_opt_is(opt, "--under")) {
		name = "--under";
		s->filter.under = rt_cmd_opt_pid(rt_cmd_opt_value(opt, argc, argv, i));
	} else if (rt_cmd_opt_is(opt, "--cgroup")) {
		name = "--cgroup";
		s->cgroup_arg = rt_cmd_opt_value(opt, argc, argv, i);
	} else if (rt_cmd_opt_is(opt, "--match")) {
		name = "--match";
		s->filter.globs = rt_cmd_opt_value(opt, argc, argv, i);
	} else {
		return false;
	}
	if (!s->first)
		s->first = name;
	return true;
}

void
rt_cmd_select_check(const struct rt_cmd_select *s)
{
	if (s->filter.any_session && !s->all && !s->filter.globs)
		rt_cmd_usage_error("--any-session goes with --all or --match");
}

/* --cgroup's value: a directory is taken by its real path, which the mounts hold. */
static void
rt_cmd_select_cgroup(struct rt_cmd_select *s)
{
	char real[PATH_MAX];
	const char *arg = s->cgroup_arg;
	if (arg[0] == '/' && realpath(arg, real))
		arg = real;
	size_t n;
	struct rt_target_mount *mounts = rt_cmd_proc_cgroup_mounts(&n);
	const char *why = rt_target_cgroup_parse(arg, mounts, n, &s->cgroup);
	free(mounts);
	if (why)
		rt_cmd_usage_error("--cgroup %s: %s", s->cgroup_arg, why);
	s->filter.cgroup = &s->cgroup;
}

void
rt_cmd_select_begin(struct rt_cmd_select *s, bool session_rule)
{
	const char *globs = s->filter.globs;
	uint64_t unused;
	enum rt_parse_result r;
	if (globs &&
	    (r = rt_setting_parse(&rt_settings[RT_SETTING_MATCH], globs,
	                          &(struct rt_setting_platform){0, 0}, &unused)) != RT_PARSE_OK)
		rt_cmd_usage_error("--match '%s': %s", globs, rt_parse_result_text(r));
	if (s->cgroup_arg)
		rt_cmd_select_cgroup(s);
	if (!session_rule)
		s->filter.any_session = true;
	s->filter.session = (int)getsid(0);
	s->procs = rt_cmd_proc_table(&s->nprocs);
	struct rt_procfs_stat root;
	if (s->filter.under && !rt_cmd_proc_stat(s->filter.under, &root))
		rt_cmd_die("--under %d: no such process", s->filter.under);
	s->other_session = 0;
}

bool
rt_cmd_select_takes(struct rt_cmd_select *s, int pid, const char *program)
{
	struct rt_procfs_stat self;
	const struct rt_procfs_stat *p = rt_target_lookup(s->procs, s->nprocs, pid);
	/* Started after the table was read: its ancestors are in it. */
	if (!p) {
		if (!rt_cmd_proc_stat(pid, &self))
			return false;
		p = &self;
	}
	char cgroup[RT_CMD_SELECT_CGROUP_MAX];
	bool have_cgroup =
	    rt_target_needs_cgroup(&s->filter) && rt_cmd_proc_cgroup(pid, cgroup, sizeof(cgroup));
	enum rt_target_verdict v = rt_target_verdict(&s->filter, s->procs, s->nprocs, p, program,
	                                             have_cgroup ? cgroup : NULL);
	if (v == RT_TARGET_OTHER_SESSION)
		s->other_session++;
	return v == RT_TARGET_IN;
}

void
rt_cmd_select_text(const struct rt_cmd_select *s, char *out, size_t size)
{
	rt_target_filter_text(&s->filter, out, size);
}

void
rt_cmd_select_end(struct rt_cmd_select *s)
{
	free(s->procs);
	s->procs = NULL;
	s->nprocs = 0;
}
