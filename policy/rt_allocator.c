#include "rt_allocator.h"

#include <stddef.h>

/* The specific markers first, glibc's malloc_trim last: another allocator's object may export a
 * malloc_trim of its own beside its marker. */
static const struct rt_allocator_row rt_allocator_table[] = {
    {RT_ALLOCATOR_JEMALLOC, "jemalloc", "mallctl", RT_ACTION_JEMALLOC_PURGE,
     RT_ACTION_JEMALLOC_DECAY},
    {RT_ALLOCATOR_TCMALLOC, "tcmalloc", "MallocExtension_ReleaseFreeMemory",
     RT_ACTION_TCMALLOC_RELEASE, RT_ACTION_NONE},
    {RT_ALLOCATOR_MIMALLOC, "mimalloc", "mi_collect", RT_ACTION_MI_COLLECT, RT_ACTION_NONE},
    {RT_ALLOCATOR_GLIBC, "glibc", "malloc_trim", RT_ACTION_GLIBC_RELEASE, RT_ACTION_MALLOC_TRIM},
};

#define RT_ALLOCATOR_ROWS (sizeof(rt_allocator_table) / sizeof(rt_allocator_table[0]))

struct rt_action_row {
	const char *name;
	const char *limits;
};

static const struct rt_action_row rt_action_table[RT_ACTIONS] = {
    [RT_ACTION_NONE] = {"none", NULL},
    [RT_ACTION_MALLOC_TRIM] = {"malloc_trim",
                               "malloc_trim never returns the free tops of thread arenas"},
    [RT_ACTION_JEMALLOC_PURGE] = {"jemalloc_purge", NULL},
    [RT_ACTION_JEMALLOC_DECAY] = {"jemalloc_decay", NULL},
    [RT_ACTION_GLIBC_RELEASE] = {"glibc_release", NULL},
    [RT_ACTION_TCMALLOC_RELEASE] = {"tcmalloc_release",
                                    "tcmalloc releases its page heap only; the thread and "
                                    "central caches stay"},
    [RT_ACTION_MI_COLLECT] = {"mi_collect",
                              "mimalloc 2.0 lets another thread collect only its own heap and "
                              "abandoned segments; the program's threads free their pages on "
                              "their own activity"},
};

const struct rt_allocator_row *
rt_allocator_rows(size_t *count)
{
	*count = RT_ALLOCATOR_ROWS;
	return rt_allocator_table;
}

const struct rt_allocator_row *
rt_allocator_row(enum rt_allocator_kind kind)
{
	for (size_t i = 0; i < RT_ALLOCATOR_ROWS; i++)
		if (rt_allocator_table[i].kind == kind)
			return &rt_allocator_table[i];
	return NULL;
}

enum rt_allocator_kind
rt_allocator_decide(const struct rt_allocator_facts *facts)
{
	for (size_t i = 0; i < RT_ALLOCATOR_ROWS; i++)
		if (facts->has_marker[rt_allocator_table[i].kind])
			return rt_allocator_table[i].kind;
	return RT_ALLOCATOR_UNKNOWN;
}

enum rt_action
rt_allocator_action(enum rt_allocator_kind kind, enum rt_jemalloc_action jemalloc,
                    enum rt_glibc_action glibc)
{
	const struct rt_allocator_row *row = rt_allocator_row(kind);
	if (!row)
		return RT_ACTION_NONE;
	/* The two settings that pick an allocator's other action: each names its allocator. */
	bool alternative = (kind == RT_ALLOCATOR_GLIBC && glibc == RT_GLIBC_TRIM) ||
	                   (kind == RT_ALLOCATOR_JEMALLOC && jemalloc == RT_JEMALLOC_DECAY);
	return alternative && row->alternative != RT_ACTION_NONE ? row->alternative : row->action;
}

const char *
rt_action_limits(enum rt_action action)
{
	return (unsigned)action < RT_ACTIONS ? rt_action_table[action].limits : NULL;
}

#define RT_ALLOCATOR_LIVE_COST_MAX_NS 1000000

bool
rt_allocator_live_affordable(enum rt_allocator_kind kind, uint64_t free_chunks,
                             int64_t last_cost_ns)
{
	if (kind != RT_ALLOCATOR_GLIBC)
		return true;
	/* Both must allow it: a count says nothing of a machine where a chunk costs more. */
	return (free_chunks == RT_ALLOCATOR_CHUNKS_UNKNOWN ||
	        free_chunks <= RT_ALLOCATOR_LIVE_CHUNKS_MAX) &&
	       last_cost_ns <= RT_ALLOCATOR_LIVE_COST_MAX_NS;
}

const char *
rt_allocator_name(enum rt_allocator_kind kind)
{
	const struct rt_allocator_row *row = rt_allocator_row(kind);
	return row ? row->name : "unknown";
}

const char *
rt_action_name(enum rt_action action)
{
	return (unsigned)action < RT_ACTIONS ? rt_action_table[action].name : "none";
}
