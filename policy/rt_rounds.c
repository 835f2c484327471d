#include "rt_rounds.h"

void
rt_rounds_init(struct rt_rounds *rounds, uint32_t every)
{
	rounds->counted = 0;
	rounds->every = every;
	rounds->last_acted = 0;
}

bool
rt_rounds_add(struct rt_rounds *rounds, uint64_t n)
{
	uint64_t before = rounds->counted;
	rounds->counted = before + n;
	if (rounds->every == 0 || n == 0)
		return false;
	uint64_t last_multiple = rounds->counted / rounds->every * rounds->every;
	if (last_multiple <= before)
		return false;
	rounds->last_acted = last_multiple;
	return true;
}

void
rt_rounds_set_every(struct rt_rounds *rounds, uint32_t every)
{
	rounds->every = every;
}

uint64_t
rt_rounds_next_action(uint64_t counted, uint32_t every)
{
	if (every == 0)
		return 0;
	return (counted / every + 1) * every;
}
