#include <criterion/criterion.h>
#include <string.h>

#include "rt_summary.h"

static struct rt_round_record
line(uint64_t round, uint64_t before_mib, uint64_t after_mib, const char *action)
{
	return (struct rt_round_record){.pid = 100,
	                                .round = round,
	                                .trigger = "fifo",
	                                .action = action,
	                                .allocator = round == 1 ? "glibc" : "later",
	                                .rss_before_kib = before_mib * 1024,
	                                .rss_after_kib = after_mib * 1024,
	                                .note = ""};
}

Test(summary, growth_before_and_after)
{
	struct rt_summary s;
	rt_summary_init(&s, 100);
	/* RSS before grows 10 MiB a round, after stays at 20: given out of order. */
	static const int order[] = {3, 1, 4, 2};
	for (int i = 0; i < 4; i++) {
		struct rt_round_record rec = line(order[i], 90 + 10 * order[i], 20, "malloc_trim");
		rt_summary_add(&s, &rec);
	}
	cr_assert_eq(s.pid, 100);
	cr_assert_str_eq(s.allocator, "glibc");
	cr_assert_eq(s.lines, 4);
	cr_assert_eq(s.actions, 4);
	cr_assert_eq(s.first_round, 1);
	cr_assert_eq(s.last_round, 4);
	cr_assert_eq(s.first_after_kib, 20 * 1024);
	cr_assert_eq(s.last_after_kib, 20 * 1024);
	cr_assert_eq(s.released_kib, (80 + 90 + 100 + 110) * 1024);
	cr_assert_float_eq(rt_summary_before_mib_per_round(&s), 10.0, 1e-9);
	cr_assert_float_eq(rt_summary_after_mib_per_round(&s), 0.0, 1e-9);
}

Test(summary, no_action_and_one_round)
{
	struct rt_summary s;
	rt_summary_init(&s, 7);
	struct rt_round_record rec = line(1, 50, 55, "none");
	rt_summary_add(&s, &rec);
	cr_assert_eq(s.actions, 0);
	/* RSS that rose during the round released nothing. */
	cr_assert_eq(s.released_kib, 0);
	cr_assert_float_eq(rt_summary_before_mib_per_round(&s), 0.0, 1e-9);
	/* The same round twice still gives no line. */
	rt_summary_add(&s, &rec);
	cr_assert_float_eq(rt_summary_after_mib_per_round(&s), 0.0, 1e-9);
	struct rt_round_record next = line(2, 60, 65, "none");
	rt_summary_add(&s, &next);
	cr_assert_float_eq(rt_summary_after_mib_per_round(&s), 10.0, 1e-9);
	cr_assert_eq(s.last_after_kib, 65 * 1024);
}

/* Python steps that ran after their round's action: their release counts, their RSS is where the
 * round ended, but they are no action and no round of their own (the library's status counts
 * rounds acted on) and stay out of the growth lines. */
Test(summary, python_follow_ups_are_part_of_their_rounds_action)
{
	struct rt_summary s;
	rt_summary_init(&s, 100);
	for (uint64_t r = 1; r <= 3; r++) {
		struct rt_round_record follow = line(r, 30, 20, "glibc_release");
		follow.trigger = RT_REPORT_TRIGGER_PYTHON;
		struct rt_round_record own = line(r, 90 + 10 * r, 30, "glibc_release");
		/* Round 3's lines come in the other order: the follow-up still ends it. */
		if (r == 3)
			rt_summary_add(&s, &follow);
		rt_summary_add(&s, &own);
		if (r != 3)
			rt_summary_add(&s, &follow);
	}
	cr_assert_eq(s.lines, 6);
	cr_assert_eq(s.actions, 3, "one action a round, as the status counts");
	cr_assert_eq(s.last_round, 3);
	cr_assert_eq(s.last_after_kib, 20 * 1024, "the follow-up's RSS ends round 3");
	cr_assert_eq(s.released_kib, (70 + 80 + 90 + 3 * 10) * 1024);
	cr_assert_float_eq(rt_summary_before_mib_per_round(&s), 10.0, 1e-9);
	cr_assert_float_eq(rt_summary_after_mib_per_round(&s), 0.0, 1e-9);
}
