/* rt_allocator: which allocator serves malloc, and which action returns its memory.
 * Owns the allocators' rows: how each is recognised, its actions, their names and limits. */
#ifndef RT_ALLOCATOR_H
#define RT_ALLOCATOR_H

#include <stdbool.h>
#include <stdint.h>

#include "rt_config.h"

enum rt_allocator_kind {
	RT_ALLOCATOR_UNKNOWN,
	RT_ALLOCATOR_GLIBC,
	RT_ALLOCATOR_JEMALLOC,
	RT_ALLOCATOR_TCMALLOC,
	RT_ALLOCATOR_MIMALLOC,
	RT_ALLOCATOR_KINDS
};

enum rt_action {
	RT_ACTION_NONE,
	RT_ACTION_MALLOC_TRIM,
	RT_ACTION_JEMALLOC_PURGE,
	RT_ACTION_JEMALLOC_DECAY,
	RT_ACTION_GLIBC_RELEASE,    /* every arena's free pages and tops, in short lock holds */
	RT_ACTION_TCMALLOC_RELEASE, /* the page heap, in bounded pieces */
	RT_ACTION_MI_COLLECT,       /* what mimalloc lets another thread do */
	RT_ACTIONS
};

/* One row per allocator the library knows; the rows' order is the order of recognition. */
struct rt_allocator_row {
	enum rt_allocator_kind kind;
	const char *name;
	/* The entry point that names it when it lives in the same object as the malloc that wins.
	 * Presence alone is not enough: glibc still exports malloc_trim under a preloaded
	 * jemalloc. */
	const char *marker;
	enum rt_action action;
	/* The action that its setting (ROUNDTRIM_GLIBC=trim, ROUNDTRIM_JEMALLOC=decay) picks
	 * instead; RT_ACTION_NONE when it has no such setting. */
	enum rt_action alternative;
};

/* The rows, in the order of recognition; *count is set to their number. */
const struct rt_allocator_row *rt_allocator_rows(size_t *count);
const struct rt_allocator_row *rt_allocator_row(enum rt_allocator_kind kind);

/* has_marker[kind]: the row's marker lives in the object of the malloc that wins. */
struct rt_allocator_facts {
	bool has_marker[RT_ALLOCATOR_KINDS];
};

enum rt_allocator_kind rt_allocator_decide(const struct rt_allocator_facts *facts);
enum rt_action rt_allocator_action(enum rt_allocator_kind kind, enum rt_jemalloc_action jemalloc,
                                   enum rt_glibc_action glibc);
/* What the action cannot reach, for the status and roundtrim(7); NULL when it reaches all. */
const char *rt_action_limits(enum rt_action action);
/* Whether the live-heap figure may be read now. glibc's mallinfo2 walks every free chunk under
 * the arena locks (facts: 3 ms at 10k chunks, 250 ms at 680k): only while the free chunks
 * counted just before (rt_arena_count, up to one more than RT_ALLOCATOR_LIVE_CHUNKS_MAX; or
 * RT_ALLOCATOR_CHUNKS_UNKNOWN where they cannot be counted) and the last reading's cost (0:
 * never read) say it stays under a millisecond. A reading that once cost more is not tried
 * again. jemalloc's figure costs an epoch update: always. */
#define RT_ALLOCATOR_LIVE_CHUNKS_MAX 20000 /* about 50 ns a chunk: a millisecond's walk */
#define RT_ALLOCATOR_CHUNKS_UNKNOWN UINT64_MAX
bool rt_allocator_live_affordable(enum rt_allocator_kind kind, uint64_t free_chunks,
                                  int64_t last_cost_ns);
const char *rt_allocator_name(enum rt_allocator_kind kind);
const char *rt_action_name(enum rt_action action);

#endif
