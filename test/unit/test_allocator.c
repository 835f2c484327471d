#include <criterion/criterion.h>

#include "rt_allocator.h"

static enum rt_allocator_kind
decide(bool mallctl, bool malloc_trim, bool tcmalloc_release, bool mi_collect)
{
	struct rt_allocator_facts facts = {0};
	facts.has_marker[RT_ALLOCATOR_JEMALLOC] = mallctl;
	facts.has_marker[RT_ALLOCATOR_GLIBC] = malloc_trim;
	facts.has_marker[RT_ALLOCATOR_TCMALLOC] = tcmalloc_release;
	facts.has_marker[RT_ALLOCATOR_MIMALLOC] = mi_collect;
	return rt_allocator_decide(&facts);
}

Test(allocator, decide)
{
	cr_assert_eq(decide(false, false, false, false), RT_ALLOCATOR_UNKNOWN);
	cr_assert_eq(decide(false, true, false, false), RT_ALLOCATOR_GLIBC);
	cr_assert_eq(decide(true, false, false, false), RT_ALLOCATOR_JEMALLOC);
	cr_assert_eq(decide(false, false, true, false), RT_ALLOCATOR_TCMALLOC);
	cr_assert_eq(decide(false, false, false, true), RT_ALLOCATOR_MIMALLOC);
}

Test(allocator, mallctl_wins_over_glibc_malloc_trim)
{
	/* glibc keeps exporting malloc_trim under a preloaded jemalloc. */
	cr_assert_eq(decide(true, true, false, false), RT_ALLOCATOR_JEMALLOC);
	cr_assert_eq(decide(true, true, true, true), RT_ALLOCATOR_JEMALLOC);
}

Test(allocator, others_win_over_malloc_trim)
{
	cr_assert_eq(decide(false, true, true, false), RT_ALLOCATOR_TCMALLOC);
	cr_assert_eq(decide(false, true, false, true), RT_ALLOCATOR_MIMALLOC);
	cr_assert_eq(decide(false, false, true, true), RT_ALLOCATOR_TCMALLOC);
}

Test(allocator, actions)
{
	static const enum rt_jemalloc_action settings[] = {RT_JEMALLOC_PURGE, RT_JEMALLOC_DECAY};
	for (size_t i = 0; i < 2; i++) {
		enum rt_jemalloc_action j = settings[i];
		cr_assert_eq(rt_allocator_action(RT_ALLOCATOR_GLIBC, j, RT_GLIBC_RELEASE),
		             RT_ACTION_GLIBC_RELEASE);
		cr_assert_eq(rt_allocator_action(RT_ALLOCATOR_GLIBC, j, RT_GLIBC_TRIM),
		             RT_ACTION_MALLOC_TRIM);
		cr_assert_eq(rt_allocator_action(RT_ALLOCATOR_TCMALLOC, j, RT_GLIBC_RELEASE),
		             RT_ACTION_TCMALLOC_RELEASE);
		cr_assert_eq(rt_allocator_action(RT_ALLOCATOR_MIMALLOC, j, RT_GLIBC_RELEASE),
		             RT_ACTION_MI_COLLECT);
		cr_assert_eq(rt_allocator_action(RT_ALLOCATOR_UNKNOWN, j, RT_GLIBC_RELEASE),
		             RT_ACTION_NONE);
	}
	cr_assert_eq(rt_allocator_action(RT_ALLOCATOR_JEMALLOC, RT_JEMALLOC_PURGE, RT_GLIBC_TRIM),
	             RT_ACTION_JEMALLOC_PURGE);
	cr_assert_eq(rt_allocator_action(RT_ALLOCATOR_JEMALLOC, RT_JEMALLOC_DECAY, RT_GLIBC_TRIM),
	             RT_ACTION_JEMALLOC_DECAY);
	cr_assert_not_null(rt_action_limits(RT_ACTION_MI_COLLECT));
	cr_assert_null(rt_action_limits(RT_ACTION_GLIBC_RELEASE));
}

Test(allocator, names)
{
	cr_assert_str_eq(rt_allocator_name(RT_ALLOCATOR_UNKNOWN), "unknown");
	cr_assert_str_eq(rt_allocator_name(RT_ALLOCATOR_GLIBC), "glibc");
	cr_assert_str_eq(rt_allocator_name(RT_ALLOCATOR_JEMALLOC), "jemalloc");
	cr_assert_str_eq(rt_allocator_name(RT_ALLOCATOR_TCMALLOC), "tcmalloc");
	cr_assert_str_eq(rt_allocator_name(RT_ALLOCATOR_MIMALLOC), "mimalloc");
	cr_assert_str_eq(rt_action_name(RT_ACTION_NONE), "none");
	cr_assert_str_eq(rt_action_name(RT_ACTION_MALLOC_TRIM), "malloc_trim");
	cr_assert_str_eq(rt_action_name(RT_ACTION_JEMALLOC_PURGE), "jemalloc_purge");
	cr_assert_str_eq(rt_action_name(RT_ACTION_JEMALLOC_DECAY), "jemalloc_decay");
	cr_assert_str_eq(rt_action_name(RT_ACTION_GLIBC_RELEASE), "glibc_release");
	cr_assert_str_eq(rt_action_name(RT_ACTION_TCMALLOC_RELEASE), "tcmalloc_release");
	cr_assert_str_eq(rt_action_name(RT_ACTION_MI_COLLECT), "mi_collect");
}

Test(allocator, live_heap_only_when_affordable)
{
	cr_assert(rt_allocator_live_affordable(RT_ALLOCATOR_JEMALLOC, 1000000, 999999999));
	cr_assert(rt_allocator_live_affordable(RT_ALLOCATOR_GLIBC, 0, 0), "never read yet");
	cr_assert(rt_allocator_live_affordable(RT_ALLOCATOR_GLIBC, 0, 400000));
	cr_assert_not(rt_allocator_live_affordable(RT_ALLOCATOR_GLIBC, 0, 3000000));
	cr_assert(
	    rt_allocator_live_affordable(RT_ALLOCATOR_GLIBC, RT_ALLOCATOR_LIVE_CHUNKS_MAX, 400000));
	cr_assert_not(rt_allocator_live_affordable(RT_ALLOCATOR_GLIBC, 100, 3000000),
	              "few chunks, but the last reading was dear: a slow machine");
	cr_assert_not(
	    rt_allocator_live_affordable(RT_ALLOCATOR_GLIBC, RT_ALLOCATOR_LIVE_CHUNKS_MAX + 1, 0),
	    "too many chunks to try even once");
	cr_assert(rt_allocator_live_affordable(RT_ALLOCATOR_GLIBC, RT_ALLOCATOR_CHUNKS_UNKNOWN, 0),
	          "not countable: one reading tells its cost");
	cr_assert_not(
	    rt_allocator_live_affordable(RT_ALLOCATOR_GLIBC, RT_ALLOCATOR_CHUNKS_UNKNOWN, 3000000));
}

/* Each allocator is one row: a kind, a unique name, a marker and an action of its own. */
Test(allocator, rows_are_whole_and_distinct)
{
	size_t n = 0;
	const struct rt_allocator_row *rows = rt_allocator_rows(&n);
	cr_assert_eq(n, RT_ALLOCATOR_KINDS - 1, "one row per known kind");
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(rt_allocator_row(rows[i].kind), &rows[i]);
		cr_assert_str_eq(rt_allocator_name(rows[i].kind), rows[i].name);
		cr_assert_not_null(rows[i].marker);
		cr_assert_neq(rows[i].action, RT_ACTION_NONE, "%s has no action", rows[i].name);
		for (size_t j = 0; j < i; j++) {
			cr_assert_str_neq(rows[i].name, rows[j].name);
			cr_assert_str_neq(rows[i].marker, rows[j].marker);
			cr_assert_neq(rows[i].action, rows[j].action);
		}
	}
	for (int a = 0; a < RT_ACTIONS; a++)
		cr_assert_not_null(rt_action_name((enum rt_action)a));
	cr_assert_str_eq(rt_action_name(RT_ACTIONS), "none");
	cr_assert_str_eq(rt_allocator_name(RT_ALLOCATOR_KINDS), "unknown");
}
