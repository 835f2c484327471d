#include <criterion/criterion.h>
#include <stdint.h>

#include "rt_rounds.h"

/* Adds one round at a time up to round `last` and checks which of them act. */
static void
expect_acting_rounds(uint32_t every, uint64_t last, const uint64_t *acting, size_t n_acting)
{
	struct rt_rounds r;
	rt_rounds_init(&r, every);
	size_t next = 0;
	for (uint64_t round = 1; round <= last; round++) {
		bool want = next < n_acting && acting[next] == round;
		cr_assert_eq(rt_rounds_add(&r, 1), want, "N=%u round %lu", every,
		             (unsigned long)round);
		cr_assert_eq(r.counted, round);
		if (want)
			next++;
		cr_assert_eq(r.last_acted, next ? acting[next - 1] : 0, "N=%u round %lu", every,
		             (unsigned long)round);
	}
	cr_assert_eq(next, n_acting);
}

Test(rounds, init)
{
	struct rt_rounds r;
	r.counted = 99;
	r.last_acted = 99;
	rt_rounds_init(&r, 4);
	cr_assert_eq(r.counted, 0);
	cr_assert_eq(r.every, 4);
	cr_assert_eq(r.last_acted, 0);
}

Test(rounds, every_round)
{
	static const uint64_t acting[] = {1, 2, 3, 4, 5};
	expect_acting_rounds(1, 5, acting, 5);
}

Test(rounds, every_third_round_counted_from_one)
{
	static const uint64_t acting[] = {3, 6, 9};
	expect_acting_rounds(3, 10, acting, 3);
}

Test(rounds, never)
{
	expect_acting_rounds(0, 20, NULL, 0);
}

Test(rounds, burst_merges_into_one_action)
{
	struct rt_rounds r;
	rt_rounds_init(&r, 3);
	cr_assert(rt_rounds_add(&r, 7));
	cr_assert_eq(r.counted, 7);
	cr_assert_eq(r.last_acted, 6);
	cr_assert_not(rt_rounds_add(&r, 1));
	cr_assert_eq(r.last_acted, 6);
	cr_assert(rt_rounds_add(&r, 1));
	cr_assert_eq(r.counted, 9);
	cr_assert_eq(r.last_acted, 9);
}

Test(rounds, burst_without_a_multiple)
{
	struct rt_rounds r;
	rt_rounds_init(&r, 5);
	cr_assert_not(rt_rounds_add(&r, 1));
	cr_assert_not(rt_rounds_add(&r, 3));
	cr_assert_eq(r.counted, 4);
	cr_assert_eq(r.last_acted, 0);
	cr_assert(rt_rounds_add(&r, 2));
	cr_assert_eq(r.last_acted, 5);
}

Test(rounds, zero_rounds_never_act)
{
	struct rt_rounds r;
	rt_rounds_init(&r, 1);
	cr_assert_not(rt_rounds_add(&r, 0));
	cr_assert_eq(r.counted, 0);
	cr_assert(rt_rounds_add(&r, 1));
	cr_assert_not(rt_rounds_add(&r, 0));
	cr_assert_eq(r.counted, 1);
}

Test(rounds, never_still_counts)
{
	struct rt_rounds r;
	rt_rounds_init(&r, 0);
	cr_assert_not(rt_rounds_add(&r, 1000));
	cr_assert_eq(r.counted, 1000);
	cr_assert_eq(r.last_acted, 0);
}

Test(rounds, set_every_keeps_round_numbers)
{
	struct rt_rounds r;
	rt_rounds_init(&r, 3);
	cr_assert(rt_rounds_add(&r, 3));
	cr_assert_not(rt_rounds_add(&r, 1));
	rt_rounds_set_every(&r, 2);
	cr_assert_eq(r.every, 2);
	cr_assert_eq(r.counted, 4);
	cr_assert_eq(r.last_acted, 3);
	cr_assert_not(rt_rounds_add(&r, 1));
	cr_assert(rt_rounds_add(&r, 1));
	cr_assert_eq(r.last_acted, 6);
}

Test(rounds, set_every_zero_stops)
{
	struct rt_rounds r;
	rt_rounds_init(&r, 1);
	cr_assert(rt_rounds_add(&r, 1));
	rt_rounds_set_every(&r, 0);
	cr_assert_not(rt_rounds_add(&r, 5));
	cr_assert_eq(r.counted, 6);
	cr_assert_eq(r.last_acted, 1);
	rt_rounds_set_every(&r, 7);
	cr_assert(rt_rounds_add(&r, 1));
	cr_assert_eq(r.last_acted, 7);
}

Test(rounds, next_action_is_the_next_multiple_of_n)
{
	cr_assert_eq(rt_rounds_next_action(0, 1), 1);
	cr_assert_eq(rt_rounds_next_action(1, 1), 2);
	cr_assert_eq(rt_rounds_next_action(1, 5), 5);
	cr_assert_eq(rt_rounds_next_action(4, 5), 5);
	cr_assert_eq(rt_rounds_next_action(5, 5), 10);
	cr_assert_eq(rt_rounds_next_action(7, 0), 0);
}

/* The rule that says "next at round R" agrees with the one that acts. */
Test(rounds, next_action_is_the_round_that_acts)
{
	for (uint32_t every = 1; every <= 7; every++) {
		struct rt_rounds r;
		rt_rounds_init(&r, every);
		for (int i = 0; i < 30; i++) {
			uint64_t next = rt_rounds_next_action(r.counted, every);
			while (!rt_rounds_add(&r, 1))
				;
			cr_assert_eq(r.last_acted, next, "N=%u", every);
		}
	}
}
