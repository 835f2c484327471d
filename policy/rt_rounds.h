/* rt_rounds: the every-N rule that turns counted rounds into allocator actions.
 * Owns round numbering (from 1), the multiple-of-N test and the merging of bursts. */
#ifndef RT_ROUNDS_H
#define RT_ROUNDS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* One sequence for the whole process: the worker counts the rounds of the FIFO, the signal and
 * the detector, and a caller of the API counts its own round at once, in its own thread, so that
 * it knows whether that round acts (the Python module runs the collection there when it does).
 * Both fields are atomic for that; every other reader is the worker. */
struct rt_rounds {
	_Atomic uint64_t counted; /* rounds counted so far; the last round's number */
	_Atomic uint32_t every;   /* N: act on rounds that are multiples of N; 0 = never */
};

void rt_rounds_init(struct rt_rounds *rounds, uint32_t every);

/* Counts n more rounds, from any thread (a burst is merged: rounds that arrive while an action
 * runs are counted, and the actions they would cause become one). Returns the number of the last
 * round among the n new ones that is a multiple of N, the round that acts; 0 when none is. */
uint64_t rt_rounds_add(struct rt_rounds *rounds, uint64_t n);

/* Changes N from the next round on; rounds already counted keep their numbers. */
void rt_rounds_set_every(struct rt_rounds *rounds, uint32_t every);

uint64_t rt_rounds_counted(const struct rt_rounds *rounds);
uint32_t rt_rounds_every(const struct rt_rounds *rounds);

/* The number of the first round after `counted` that acts when N is `every`; 0 when N is 0. */
uint64_t rt_rounds_next_action(uint64_t counted, uint32_t every);

#endif
