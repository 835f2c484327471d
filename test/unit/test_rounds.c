#include <criterion/criterion.h>
#include <pthread.h>
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
		cr_assert_eq(rt_rounds_add(&r, 1), want ? round : 0, "N=%u round %lu", every,
		             (unsigned long)round);
		cr_assert_eq(rt_rounds_counted(&r), round);
		if (want)
			next++;
	}
	cr_assert_eq(next, n_acting);
}

Test(rounds, init)
{
	struct rt_rounds r;
	atomic_store(&r.counted, 99);
	rt_rounds_init(&r, 4);
	cr_assert_eq(rt_rounds_counted(&r), 0);
	cr_assert_eq(rt_rounds_every(&r), 4);
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
	cr_assert_eq(rt_rounds_add(&r, 7), 6);
	cr_assert_eq(rt_rounds_counted(&r), 7);
	cr_assert_eq(rt_rounds_add(&r, 1), 0);
	cr_assert_eq(rt_rounds_add(&r, 1), 9);
	cr_assert_eq(rt_rounds_counted(&r), 9);
}

Test(rounds, burst_without_a_multiple)
{
	struct rt_rounds r;
	rt_rounds_init(&r, 5);
	cr_assert_eq(rt_rounds_add(&r, 1), 0);
	cr_assert_eq(rt_rounds_add(&r, 3), 0);
	cr_assert_eq(rt_rounds_counted(&r), 4);
	cr_assert_eq(rt_rounds_add(&r, 2), 5);
}

Test(rounds, zero_rounds_never_act)
{
	struct rt_rounds r;
	rt_rounds_init(&r, 1);
	cr_assert_eq(rt_rounds_add(&r, 0), 0);
	cr_assert_eq(rt_rounds_counted(&r), 0);
	cr_assert_eq(rt_rounds_add(&r, 1), 1);
	cr_assert_eq(rt_rounds_add(&r, 0), 0);
	cr_assert_eq(rt_rounds_counted(&r), 1);
}

Test(rounds, never_still_counts)
{
	struct rt_rounds r;
	rt_rounds_init(&r, 0);
	cr_assert_eq(rt_rounds_add(&r, 1000), 0);
	cr_assert_eq(rt_rounds_counted(&r), 1000);
}

Test(rounds, set_every_keeps_round_numbers)
{
	struct rt_rounds r;
	rt_rounds_init(&r, 3);
	cr_assert_eq(rt_rounds_add(&r, 3), 3);
	cr_assert_eq(rt_rounds_add(&r, 1), 0);
	rt_rounds_set_every(&r, 2);
	cr_assert_eq(rt_rounds_every(&r), 2);
	cr_assert_eq(rt_rounds_counted(&r), 4);
	cr_assert_eq(rt_rounds_add(&r, 1), 0);
	cr_assert_eq(rt_rounds_add(&r, 1), 6);
}

Test(rounds, set_every_zero_stops)
{
	struct rt_rounds r;
	rt_rounds_init(&r, 1);
	cr_assert_eq(rt_rounds_add(&r, 1), 1);
	rt_rounds_set_every(&r, 0);
	cr_assert_eq(rt_rounds_add(&r, 5), 0);
	cr_assert_eq(rt_rounds_counted(&r), 6);
	rt_rounds_set_every(&r, 7);
	cr_assert_eq(rt_rounds_add(&r, 1), 7);
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
			uint64_t next = rt_rounds_next_action(rt_rounds_counted(&r), every);
			uint64_t acted;
			while (!(acted = rt_rounds_add(&r, 1)))
				;
			cr_assert_eq(acted, next, "N=%u", every);
		}
	}
}

/* The worker and the API's callers count into one sequence: every number is given once, and
 * exactly the multiples of N act, whoever counted them. */
#define RACE_ROUNDS 20000

static struct rt_rounds race;

static void *
count_ones(void *arg)
{
	uint64_t *acted = arg;
	for (int i = 0; i < RACE_ROUNDS; i++)
		if (rt_rounds_add(&race, 1))
			(*acted)++;
	return NULL;
}

Test(rounds, two_threads_count_one_sequence)
{
	rt_rounds_init(&race, 7);
	uint64_t acted[2] = {0, 0};
	pthread_t other;
	cr_assert_eq(pthread_create(&other, NULL, count_ones, &acted[1]), 0);
	count_ones(&acted[0]);
	pthread_join(other, NULL);
	cr_assert_eq(rt_rounds_counted(&race), 2 * RACE_ROUNDS);
	cr_assert_eq(acted[0] + acted[1], 2 * RACE_ROUNDS / 7);
}
