/* rt_tally: each thread's allocation counts, kept by the malloc family's hot path in the
 * thread's own storage, and the registry through which the worker sums them. */
#ifndef RT_TALLY_H
#define RT_TALLY_H

#include <stdbool.h>
#include <stdint.h>

/* Written only by its thread, with relaxed atomics, so that the worker may read it. */
struct rt_thread_tally {
	uint64_t left;         /* bytes until the next cold event; 0 at a thread's start */
	uint64_t armed;        /* what the last cold event set left to */
	uint64_t bytes_before; /* bytes asked for up to the last cold event */
	uint64_t allocations;
	uint64_t frees;
	bool in_event;
	bool registered;
	bool retired; /* the thread is exiting: never registered again */
	struct rt_thread_tally *next, *prev;
};

#pragma GCC visibility push(hidden)
extern __thread struct rt_thread_tally rt_t;
#pragma GCC visibility pop

#define RT_TALLY_LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define RT_TALLY_STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

/* Bytes the thread has asked for so far. */
static inline uint64_t
rt_tally_bytes(const struct rt_thread_tally *t)
{
	return RT_TALLY_LOAD(t->bytes_before) + RT_TALLY_LOAD(t->armed) - RT_TALLY_LOAD(t->left);
}

/* Sums over every thread, those that exited included: monotonic. */
struct rt_alloc_totals {
	uint64_t allocations;
	uint64_t frees;
	uint64_t bytes;
	unsigned threads; /* registered now */
};

/* In the constructor: the key whose destructor retires a thread, and the calling thread. */
void rt_tally_init(void);
/* From the cold path, once per thread. */
void rt_tally_register(void);
/* The library's own thread counts nowhere: what it allocates is not the program's rhythm. */
void rt_tally_exclude_self(void);
/* The worker's reading. */
void rt_tally_totals(struct rt_alloc_totals *out);
/* In a fork child, inside fork: only the forking thread exists. */
void rt_tally_forget_parent(void);

#endif
