#include "rt_rounds.h"

void
rt_rounds_init(struct rt_rounds *rounds, uint32_t every)
{
	atomic_store(&rounds->counted, 0);
	atomic_store(&rounds->every, every);
}

uint64_t
rt_rounds_add(struct rt_rounds *rounds, uint64_t n)
{
	if (n == 0)
		return 0;
	/* The numbers before + 1 ... before + n are this caller's alone, whoever counts beside. */
	uint64_t before = atomic_fetch_add(&rounds->counted, n);
	uint32_t every = atomic_load(&rounds->every);
	if (every == 0)
		return 0;
	uint64_t last_multiple = (before + n) / every * every;
	return last_multiple > before ? last_multiple : 0;
}

void
rt_rounds_set_every(struct rt_rounds *rounds, uint32_t every)
{
	atomic_store(&rounds->every, every);
}

uint64_t
rt_rounds_counted(const struct rt_rounds *rounds)
{
	return atomic_load(&rounds->counted);
}

uint32_t
rt_rounds_every(const struct rt_rounds *rounds)
{
	return atomic_load(&rounds->every);
}

uint64_t
rt_rounds_next_action(uint64_t counted, uint32_t every)
{
	if (every == 0)
		return 0;
	return (counted / every + 1) * every;
}
