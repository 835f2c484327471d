/* rt_heap: the allocator that actually serves malloc, its actions and its readings.
 * Owns finding it and dispatching to its row (rt_heap_ops); each allocator's calls are its file's.
 */
#ifndef RT_HEAP_H
#define RT_HEAP_H

#include <stdbool.h>
#include <stdint.h>

#include "rt_allocator.h"

/* Finds the object that provides the winning malloc and what it offers. */
enum rt_allocator_kind rt_heap_detect(void);
/* At start, once the action is known: readies what it needs (glibc's arenas for the release). */
void rt_heap_prepare(enum rt_action action);
/* Caps the number of arenas where the allocator has such a cap (glibc: mallopt M_ARENA_MAX). */
void rt_heap_set_arena_max(unsigned arena_max);
/* The calling thread takes its arena now, where the allocator has arenas to take (glibc). The
 * worker calls it as it starts. */
void rt_heap_take_arena(void);
/* Runs the action; returns 0, or -1 when the allocator refused it. *done is the action that ran
 * (glibc's release falls back to malloc_trim when it stood down). The worker's, and an API
 * caller's (rt_heap_act_here): one at a time, the other waits (for at most one action). */
int rt_heap_act(enum rt_action action, uint64_t trim_pad, enum rt_action *done);
/* rt_heap_act in an API caller's thread (a program thread), where the action can run there as the
 * worker would run it: not mimalloc's (it would see only this thread's heap), not a glibc release
 * that stood down. False when it did not run (the worker then acts); the lines it would say wait
 * for rt_heap_say_held. */
bool rt_heap_act_here(enum rt_action action, uint64_t trim_pad, enum rt_action *done, int *rc);
/* In the worker: says what an API caller's action had to say. */
void rt_heap_say_held(void);
/* In a fork child, inside fork: the lock, which a thread of the parent may have held. */
void rt_heap_forget_parent(void);
/* Live heap bytes by the allocator's own statistics; UINT64_MAX when it keeps none, or when
 * reading it would cost more than a millisecond (policy/rt_allocator): then it was skipped. */
uint64_t rt_heap_live_bytes(void);
bool rt_heap_has_live(void);

#endif
