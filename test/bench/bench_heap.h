/* bench_heap: the heap shape that stall and arena_cpu build alike. Owns the blocks' random
 * sequence and their sizes, log-uniform between a least and a most. */
#ifndef BENCH_HEAP_H
#define BENCH_HEAP_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* xorshift64*: the same seed gives the same blocks in both programs. */
static inline uint64_t
bench_heap_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* The next block's size, log-uniform between least and most bytes. */
static inline size_t
bench_heap_size(uint64_t *rng, double least, double most)
{
	double u = (double)(bench_heap_next(rng) >> 11) / (double)(1ull << 53);
	return (size_t)(least * exp(u * log(most / least)));
}

#endif
