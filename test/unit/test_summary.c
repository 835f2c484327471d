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
