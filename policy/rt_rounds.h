/* rt_rounds: the every-N rule that turns counted rounds into allocator actions.
 * Owns round numbering (from 1), the multiple-of-N test and the merging of bursts. */
#ifndef RT_ROUNDS_H
#define RT_ROUNDS_H

#include <stdbool.h>
#include <stdint.h>

struct rt_rounds {
	uint64_t counted;    /* rounds counted so far; the last round's number */
	uint32_t every;      /* N: act on rounds that are multiples of N; 0 = never */
	uint64_t last_acted; /* number of the last round that caused an action, 0 if none */
};

void rt_rounds_init(struct rt_rounds *rounds, uint32_t every);

/* Counts n more rounds (a burst is merged: rounds that arrive while an action runs are counted,
 * and the actions they would cause become one). Returns true when an action is due, that is when
 * some round among the n new ones is a multiple of N. */
bool rt_rounds_add(struct rt_rounds *rounds, uint64_t n);

/* Changes N from the next round on; rounds already counted keep their numbers. */
void rt_rounds_set_every(struct rt_rounds *rounds, uint32_t every);

/* The number of the first round after `counted` that acts when N is `every`; 0 when N is 0. */
uint64_t rt_rounds_next_action(uint64_t counted, uint32_t every);

#endif
