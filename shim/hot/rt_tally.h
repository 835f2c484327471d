/* rt_tally: each thread's allocation counts and bytes sent, kept by the malloc family's hot path
 * and the send wrappers in the thread's own storage, and the registry the worker sums them by. */
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
	uint64_t sent; /* bytes the send family handed to the kernel (rt_send) */
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

/* The hot path's two steps on the calling thread's tally. On x86-64 each is one instruction with
 * a memory operand, in asm: C11 offers either a plain access, a data race with the worker's
 * relaxed loads, or an atomic read-modify-write, which x86-64 compiles with a lock prefix; an
 * aligned 8-byte store is seen whole by another thread's load (Intel SDM vol. 3A, 9.1.1).
 *
 * RT_TALLY_COUNT(field): one more in the field.
 * RT_TALLY_TAKE(size, label): takes size bytes from the budget, and goes to label when that
 * used it up (size >= what was left); left then holds what was left less size, modulo 2^64,
 * which the cold path reads as such. Volatile, both: they keep their order. */
#if defined(__x86_64__)
#define RT_TALLY_COUNT(field) __asm__ volatile("addq $1, %0" : "+m"(rt_t.field) : : "cc")
/* The field as an input and memory clobbered, not as an output: GCC 12.2 (Debian 12) drops the
 * label's code of an asm goto that has an output operand, and the jump lands past the
 * function. */
#define RT_TALLY_TAKE(size, label)                                                                 \
	__asm__ goto("subq %1, %0\n\tjbe %l2"                                                      \
	             :                                                                             \
	             : "m"(rt_t.left), "r"((uint64_t)(size))                                       \
	             : "cc", "memory"                                                              \
	             : label)
#else
#define RT_TALLY_COUNT(field) RT_TALLY_STORE(rt_t.field, RT_TALLY_LOAD(rt_t.field) + 1)
#define RT_TALLY_TAKE(size, label)                                                                 \
	do {                                                                                       \
		uint64_t rt_left_ = RT_TALLY_LOAD(rt_t.left), rt_size_ = (size);                   \
		RT_TALLY_STORE(rt_t.left, rt_left_ - rt_size_);                                    \
		if (rt_size_ >= rt_left_)                                                          \
			goto label;                                                                \
	} while (0)
#endif

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
	uint64_t sent;
	unsigned threads; /* registered now */
};

/* In the constructor: the key whose destructor retires a thread, and the calling thread. */
void rt_tally_init(void);
/* From the cold path, once per thread. */
void rt_tally_register(void);
/* The library's own thread counts nowhere: what it allocates is not the program's rhythm. */
void rt_tally_exclude_self(void);
/* Counts bytes the calling thread sent (rt_send), atomically: in its own tally once it has
 * joined the registry, else (a thread that never allocated, or one exiting) in a shared count.
 * No lock: async-signal-safe. */
void rt_tally_count_sent(uint64_t bytes);
/* The worker's reading. */
void rt_tally_totals(struct rt_alloc_totals *out);
/* In a fork child, inside fork: only the forking thread exists. */
void rt_tally_forget_parent(void);

#endif
