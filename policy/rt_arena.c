/* Returning what malloc_trim(0) leaves on glibc, and stalling no one.
 *
 * What is left: malloc_trim gives back the whole pages inside the binned free chunks of every
 * arena (mtrim) and shrinks the main arena's top with sbrk (systrim), but never touches the top
 * chunk of a thread arena. glibc shrinks that only from free(), once it exceeds the trim
 * threshold, and after any free of an mmapped chunk of 128 KiB to 32 MiB the dynamic threshold
 * rises to twice that chunk (64 MiB at most): a pool of threads that each leave a round's memory
 * as free top keeps all of it (the pool workload: ~200 MiB resident for 32 KiB live, and
 * malloc_trim(0) returns 0). And malloc_trim holds each arena's lock through its whole pass:
 * another thread's malloc waits tens of ms per GiB.
 *
 * The choice: give back, under each arena's own mutex taken exactly as glibc takes it, the whole
 * pages that glibc never reads while a chunk stays free: [chunk + 48, chunk + size) of the top
 * chunk and of every chunk in a normal bin (unsorted, small, large), with MADV_DONTNEED, after
 * emptying the fastbins as malloc_trim does (below); a thread that waits for the lock ends the
 * hold at the next chunk or piece (one madvise covers at most piece_bytes); with nobody waiting
 * the lock is kept, so the release runs at malloc_trim's pace.
 * What this relies on, read in glibc 2.36's malloc (_int_free, _int_malloc, mtrim, heap_trim,
 * the fork handlers) and unchanged in 2.37-2.41: the top and the normal bins change only with the
 * arena's mutex held (fastbins and the tcache change without it, and are left alone); a free
 * chunk's bytes past its first sizeof(struct malloc_chunk) are neither read nor written while it
 * stays free, and the next chunk's header lies past its end; pages given back read as zeros, and
 * calloc only assumes zeros beyond a heap's high-water mark, never inside it. After each re-lock
 * the arena is read afresh and a place in
 * a bin is trusted only once its chunk is found again, linked, free and of the same size (or,
 * when it is gone, the free chunk that holds what was left of it, and then the next place, each
 * found linked and free: rt_arena_release_bin). A fork in
 * between waits at most one piece (fork() takes every arena lock after the atfork handlers) and the
 * child re-initialises every arena lock.
 *
 * The fastbins (glibc 2.36 only: rt_arena_consolidation_checked): a free fastbin chunk counts as
 * in use, so the pages under it and under the free chunks beside it stay; malloc_trim merges
 * them first (malloc_consolidate, in one hold: the pages of a scattered heap of 32-2,048-byte
 * blocks, about 30 % of what stays). The release does what malloc_consolidate does to each
 * chunk, one chunk at a time: only the lock holder takes chunks off a fastbin (free() pushes
 * onto its head without the lock), so a chunk taken off the head with a compare-and-swap, as
 * _int_malloc takes one, is the worker's; its neighbours' headers and links, the unsorted bin
 * and the top change only under the lock. Every check glibc makes is made before anything is
 * written, on the words as glibc would find them: glibc checks between its writes (unlink_chunk
 * writes the list before it checks the nextsize ring, malloc_consolidate unlinks the free chunk
 * before a fastbin chunk before it looks at the one after), so where one of those writes may
 * fall on a word read after it, the checks are made again in glibc's order on the writes held
 * back (a corrupted ring pointer that aliases a list word passes a check made before the writes,
 * and glibc aborts on it). More is checked than glibc checks (the neighbours' links both ways,
 * every chunk inside the arena's heaps). The chunk is taken only then, and the heap is whole
 * again before the hold can end: a fork, a waiter, a dropped lock only ever find the heap as
 * glibc would leave it after a malloc_consolidate that stopped between two chunks (which its
 * callers never see, but which is a state glibc's own code makes and reads: chunks in fastbins
 * beside merged ones in the unsorted bin). have_fastchunks is left set (a hint glibc clears
 * itself at its next consolidation). These are the writes to glibc's metadata; the integration
 * test heap_shapes checks them against glibc's own checks on randomized heaps.
 *
 * The pace (issue 26): the release is bound by cache misses, as malloc_trim is (its chunks are
 * scattered over the heap), and must not take more of them, nor keep the processor from
 * overlapping them. So the shim's words are read and written inline (ops->direct); the heap
 * that held the last address looked up is tried first; the lines that the next fastbin chunks
 * and both free neighbours' links will need are asked for before they are checked; and the bin
 * walk reads the chunk after a binned one only when that chunk has a page to give back (its
 * links, checked both ways, are what makes the walk safe). So a binned chunk with no page is
 * walked past without its footer (the next chunk's prev_size and PREV_INUSE) being checked:
 * a write after free into its last word, which stopped the release before, now goes unnoticed
 * by the walk, in this release and the next, and rt_arena_count, which gives nothing back,
 * checks a footer only of a chunk it finds again after the lock was dropped (its place, or the
 * next one). Nothing is written for such a chunk (a page is given back, and a
 * free neighbour unlinked by the fastbins' consolidation, only once its footer is checked), so
 * the heap is left no worse; glibc reports that corruption when it next merges there.
 * Measured with test/bench/arena_cpu under callgrind (`valgrind --tool=callgrind
 * --toggle-collect=rt_arena_release build/test/bench/arena_cpu --mib 128 --threads 2 --min 32
 * --max 2048 --keep 16 --action release`; malloc_trim with --toggle-collect=malloc_trim and
 * --action trim): 84.7 million instructions at first; 55.3 million after the inline accesses,
 * the prefetches ahead (which cost instructions and save time), the heap of the last address
 * looked up kept as its bounds, the per-chunk checks inlined, a free neighbour's bounds and
 * footer read once and a link looked for in the heaps before among the bin headers, with the
 * same 0.44-0.45 million first-level misses as malloc_trim's 8.3 million instructions; 56.3
 * million with the checks in glibc's order (above), 56.7 with the walk's bound per hold, 56.5
 * with the table of chunks given back and rt_arena_heap_of kept out of line (inlined, as the
 * compiler chose once the fastbin size class was compared whole: 57.4). Fastbin chunks alone
 * (--min 16 --max 128): 1,571, then 1,180, then 1,195 (1,197.5, then 1,196.2) million against
 * malloc_trim's 165. CPU time (in-process,
 * medians of pairs on 2 shared cores): from 1.55 times malloc_trim's at first to 1.00-1.04 on
 * fastbin chunks alone and 1.04-1.14 on the mixed heap at 1 GiB (load 5-12, pairs spread
 * 0.86-1.31); the checks in glibc's order against the release before them, at load 3.1: 0.97
 * (4 pairs, mixed, 512 MiB) and 0.98 (3 pairs, fastbin chunks alone, 256 MiB), within the
 * pairs' spread. The rest is the checks themselves, which malloc_trim does not make, and they cost
 * instructions, not misses: a copy of the consolidation made with ops->direct as a constant (no
 * test before each word) counted more instructions, not fewer, and was dropped.
 *
 * Weighed and left:
 * - Fixed thresholds (mallopt M_TRIM_THRESHOLD, M_MMAP_THRESHOLD): glibc would trim thread tops
 *   itself, but every large block would then be mmapped and unmapped, a cost and a behaviour of
 *   the host's allocator that is not ours to change; not retroactive either.
 * - MALLOC_ARENA_MAX=1 or 2 (measured: 2 MiB and 31 MiB on the pool): the user's choice, at the
 *   cost of contention between threads (roundtrim patch --arena-max offers it).
 * - Shrinking heaps as heap_trim does (heap_info.size, the top's size, system_mem): the same RSS,
 *   but it writes glibc's metadata.
 * - Walking the bins first and giving back, at each consolidation, the pages that the merged
 *   chunk's free neighbours did not already hold (no second walk over the merged chunks): a
 *   madvise per merge instead of one per final chunk, 1.2 times slower on the heap.
 * - Taking chunks out of their bins to madvise them without the lock, then freeing them back:
 *   holds would be microseconds whatever the scheduler does, but it writes links and headers,
 *   and one mistake corrupts the host's heap. A hold is short; only a preemption of the worker
 *   while it holds the lock stretches it (the stall bench separates that from the host's own).
 * What stays: the tcaches (as with malloc_trim), pages pinned by fastbin chunks on a glibc
 * other than 2.36, and the main arena's break (RSS falls, its virtual size does not). */
#include "rt_arena.h"

#include <string.h>

/* The helpers of the release's per-chunk steps, inlined so that each step's words stay in
 * registers across them. */
#define RT_ARENA_INLINE static inline __attribute__((always_inline))
#define RT_ARENA_WORDS (RT_ARENA_STATE_SIZE / 8)
#define RT_ARENA_HEAP_WORDS (RT_ARENA_HEAP_INFO_SIZE / 8)

/* The failures that rt_arena_damaged tells apart, compared by address: a chunk that breaks
 * glibc's invariants, and the states of a sound heap that the release leaves to malloc_trim. */
static const char rt_arena_bad_bin_chunk[] = "a chunk in a bin is not a free, linked chunk";
static const char rt_arena_bad_bin_size[] = "a chunk sits in a bin its size does not map to";
static const char rt_arena_bad_bin_list[] = "a bin's list does not lead back to a bin";
static const char rt_arena_bad_fast_chunk[] =
    "a fastbin chunk is not what glibc's malloc_consolidate expects";
static const char rt_arena_bad_fast_place[] = "a fastbin chunk lies outside its arena";
static const char rt_arena_sound_unaligned[] =
    "a thread heap is not aligned to HEAP_MAX_SIZE (glibc.malloc.hugetlb=2?)";
static const char rt_arena_sound_page[] =
    "a thread heap's page size is not the system's (huge pages?)";
/* A thread arena made after the first check, with its heaps where huge pages put them. */
static const char rt_arena_sound_ring[] = "the arena ring holds an arena that is neither the main "
                                          "arena nor at the start of a thread heap";
static const char rt_arena_sound_mapped[] =
    "the main arena is not contiguous (sbrk failed, glibc maps instead)";
/* Words that could not be read: the reads may have stopped working (a seccomp filter installed
 * later, a page that a memory cgroup at its limit cannot bring back), the heap is not known bad;
 * and more arenas than the walk's budget. */
static const char rt_arena_unread_next[] = "an arena's next pointer is not mapped";
static const char rt_arena_unread_top[] = "the main arena's top chunk is not mapped";
static const char rt_arena_unread_heap[] = "a thread heap of the arena is not mapped";
static const char rt_arena_unread_ring[] = "the arena ring does not close through the main arena";

/* glibc's version as major.minor; false when the string is not one. */
static bool
rt_arena_version(const char *version, unsigned long *major_out, unsigned long *minor_out)
{
	unsigned long major = 0, minor = 0;
	const char *s = version;
	if (!s || *s < '0' || *s > '9')
		return false;
	while (*s >= '0' && *s <= '9' && major < 1000)
		major = major * 10 + (unsigned long)(*s++ - '0');
	if (*s++ != '.' || *s < '0' || *s > '9')
		return false;
	while (*s >= '0' && *s <= '9' && minor < 1000)
		minor = minor * 10 + (unsigned long)(*s++ - '0');
	if (*s && *s != '.')
		return false;
	*major_out = major;
	*minor_out = minor;
	return true;
}

bool
rt_arena_version_supported(const char *version)
{
	unsigned long major, minor;
	return rt_arena_version(version, &major, &minor) && major == 2 && minor >= 35 &&
	       minor <= 41;
}

bool
rt_arena_consolidation_checked(const char *version)
{
	unsigned long major, minor;
	return rt_arena_version(version, &major, &minor) && major == 2 && minor == 36;
}

/* bin_at, inline where the release is hot. */
RT_ARENA_INLINE uintptr_t
rt_arena_bin(uintptr_t arena, int i)
{
	return arena + RT_ARENA_BINS + (uintptr_t)(i - 1) * 16 - RT_ARENA_CHUNK_FD;
}

uintptr_t
rt_arena_bin_at(uintptr_t arena, int i)
{
	return rt_arena_bin(arena, i);
}

int
rt_arena_bin_index(size_t sz)
{
	if (sz < 1024)
		return (int)(sz >> 4);
	if ((sz >> 6) <= 48)
		return 48 + (int)(sz >> 6);
	if ((sz >> 9) <= 20)
		return 91 + (int)(sz >> 9);
	if ((sz >> 12) <= 10)
		return 110 + (int)(sz >> 12);
	if ((sz >> 15) <= 4)
		return 119 + (int)(sz >> 15);
	if ((sz >> 18) <= 2)
		return 124 + (int)(sz >> 18);
	return 126;
}

struct rt_arena_range
rt_arena_free_range(uintptr_t chunk, size_t size, size_t keep, size_t page)
{
	struct rt_arena_range none = {0, 0};
	uintptr_t first = chunk + RT_ARENA_CHUNK_HEADER;
	if (size <= RT_ARENA_CHUNK_HEADER || keep >= size - RT_ARENA_CHUNK_HEADER ||
	    chunk + size < chunk)
		return none;
	uintptr_t start = (first + keep + page - 1) & ~(uintptr_t)(page - 1);
	uintptr_t end = (chunk + size) & ~(uintptr_t)(page - 1);
	if (start >= end || start < first)
		return none;
	return (struct rt_arena_range){start, end};
}

/* A word of a snapshot as a pointer-sized value. */
static inline uintptr_t
rt_arena_word(const uint64_t *words, size_t offset)
{
	return (uintptr_t)words[offset / 8];
}

static inline int
rt_arena_int(const uint64_t *words, size_t offset)
{
	/* Little-endian: the int at offset 4k + 4 is the high half of word k. */
	uint64_t w = words[offset / 8];
	return (int)(uint32_t)(offset % 8 ? w >> 32 : w);
}

/* Whether bin i of the snapshot is empty, or else holds two plausible chunk pointers. */
static bool
rt_arena_bin_plausible(const uint64_t *words, uintptr_t arena, int i, bool *empty)
{
	uintptr_t self = rt_arena_bin(arena, i);
	uintptr_t fd = rt_arena_word(words, RT_ARENA_BINS + (size_t)(i - 1) * 16);
	uintptr_t bk = rt_arena_word(words, RT_ARENA_BINS + (size_t)(i - 1) * 16 + 8);
	*empty = fd == self && bk == self;
	if (*empty)
		return true;
	/* A chunk, never another bin of the same arena nor the arena itself. */
	for (uintptr_t p = fd;; p = bk) {
		if (!p || p % RT_ARENA_ALIGN || (p >= arena && p < arena + RT_ARENA_STATE_SIZE))
			return false;
		if (p == bk)
			return true;
	}
}

size_t
rt_arena_find_main(const uint64_t *words, size_t nwords, uintptr_t base, size_t min_empty,
                   uintptr_t *found)
{
	size_t count = 0;
	for (size_t o = 0; o + RT_ARENA_WORDS <= nwords; o++) {
		const uint64_t *w = words + o;
		uintptr_t a = base + o * 8;
		int mutex = rt_arena_int(w, RT_ARENA_MUTEX);
		int flags = rt_arena_int(w, RT_ARENA_FLAGS);
		if (mutex < 0 || mutex > 2 || (flags & ~RT_ARENA_NONCONTIGUOUS) != 0)
			continue;
		/* A main arena's bins each point at a bin header or into memory; most are empty. */
		size_t empty = 0;
		bool ok = true, e;
		for (int i = 1; i < RT_ARENA_NBINS && ok; i++) {
			ok = rt_arena_bin_plausible(w, a, i, &e);
			empty += e;
		}
		uintptr_t next = rt_arena_word(w, RT_ARENA_NEXT);
		if (!ok || empty < min_empty || !next || next % 8 ||
		    rt_arena_word(w, RT_ARENA_SYSTEM_MEM) >
		        rt_arena_word(w, RT_ARENA_MAX_SYSTEM_MEM))
			continue;
		if (count++ == 0 && found)
			*found = a;
	}
	return count;
}

const char *
rt_arena_check_state(const uint64_t *words, uintptr_t arena, bool main_arena)
{
	int mutex = rt_arena_int(words, RT_ARENA_MUTEX);
	int flags = rt_arena_int(words, RT_ARENA_FLAGS);
	int have_fast = rt_arena_int(words, RT_ARENA_HAVE_FASTCHUNKS);
	if (mutex != 1 && mutex != 2)
		return "an arena's mutex is not held while it is read";
	if ((flags & ~RT_ARENA_NONCONTIGUOUS) != 0 ||
	    (!main_arena && flags != RT_ARENA_NONCONTIGUOUS))
		return "an arena's flags hold bits glibc does not set";
	if (have_fast != 0 && have_fast != 1)
		return "an arena's have_fastchunks is not a bool";
	uintptr_t top = rt_arena_word(words, RT_ARENA_TOP);
	if (!top || top % RT_ARENA_ALIGN)
		return "an arena's top chunk is misaligned";
	for (int i = 1; i < RT_ARENA_NBINS; i++) {
		bool empty;
		if (!rt_arena_bin_plausible(words, arena, i, &empty))
			return "an arena's bin is neither empty nor a list of chunks";
		uint32_t map = (uint32_t)(words[(RT_ARENA_BINMAP + (size_t)(i / 32) * 4) / 8] >>
		                          ((i / 32) % 2 ? 32 : 0));
		if (i >= 2 && !empty && !(map & (1u << (i % 32))))
			return "a non-empty bin is not marked in the arena's binmap";
	}
	uintptr_t next = rt_arena_word(words, RT_ARENA_NEXT);
	if (!next || next % 8)
		return "an arena's next pointer is misaligned";
	if (rt_arena_word(words, RT_ARENA_SYSTEM_MEM) >
	    rt_arena_word(words, RT_ARENA_MAX_SYSTEM_MEM))
		return "an arena's system_mem exceeds its max_system_mem";
	return NULL;
}

const char *
rt_arena_check_heap(const uint64_t *words, uintptr_t heap, uintptr_t arena, size_t page,
                    uintptr_t heap_max)
{
	uintptr_t size = rt_arena_word(words, RT_ARENA_HEAP_SIZE);
	uintptr_t mprotect = rt_arena_word(words, RT_ARENA_HEAP_MPROTECT);
	uintptr_t prev = rt_arena_word(words, RT_ARENA_HEAP_PREV);
	if (heap % heap_max)
		return rt_arena_sound_unaligned;
	if (rt_arena_word(words, RT_ARENA_HEAP_AR_PTR) != arena)
		return "a thread heap's heap_info does not point back at its arena";
	if (rt_arena_word(words, RT_ARENA_HEAP_PAGESIZE) != page)
		return rt_arena_sound_page;
	if (size < page || size % page || mprotect % page || size > mprotect || mprotect > heap_max)
		return "a thread heap's size is outside its mapping";
	if (prev == heap || prev % heap_max)
		return "a thread heap's prev is not another heap";
	return NULL;
}

struct rt_arena_budget
rt_arena_default_budget(void)
{
	return (struct rt_arena_budget){
	    .hold_ns = 100 * 1000,
	    .waited_hold_ns = 500 * 1000,
	    .waited_share = 20,
	    .waited_most_ns = 5 * 1000 * 1000,
	    .hold_chunks = 256,
	    .run_ns = 2000 * 1000,
	    .piece_bytes = 512 << 10,
	    .restarts = 2,
	    .max_arenas = 4096,
	};
}

/* The heap of the view that holds addr, or v->nheaps. Pure: the words the release has read stay
 * in registers across a search. Out of line: inlined into the release's loops, it cost 1.6 %
 * more instructions (the header's figures). */
__attribute__((pure, noinline)) static size_t
rt_arena_heap_of(const struct rt_arena_view *v, uintptr_t addr)
{
	size_t lo = 0, hi = v->nheaps;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (addr < v->heaps[mid].start)
			hi = mid;
		else if (addr >= v->heaps[mid].end)
			lo = mid + 1;
		else
			return mid;
	}
	return v->nheaps;
}

/* Is [addr, addr + len) inside one known heap of the view? A chunk's neighbours and links
 * mostly lie in the heap of the chunk looked at before: that heap is tried first (a search
 * for each of the dozen addresses that one fastbin chunk's consolidation checks cost as many
 * instructions as glibc's whole malloc_consolidate spends on it). */
RT_ARENA_INLINE bool
rt_arena_inside(struct rt_arena_view *v, uintptr_t addr, size_t len)
{
	if (addr - v->near.start >= v->near.end - v->near.start) {
		size_t at = rt_arena_heap_of(v, addr);
		if (at == v->nheaps)
			return false;
		v->near = v->heaps[at];
	}
	return len <= v->near.end - addr;
}

/* Is the chunk of `size` at p whole inside one heap, with the next chunk's header after it,
 * [p, p + size + 16)? The bound every size read from the heap goes through before a word at
 * p + size is read: a size above UINTPTR_MAX / 2 (a corrupted word, -16..-1 included) is no
 * chunk's, and p + size + 16 would wrap past the heap's end and pass. */
RT_ARENA_INLINE bool
rt_arena_inside_chunk(struct rt_arena_view *v, uintptr_t p, size_t size)
{
	return size <= UINTPTR_MAX / 2 && rt_arena_inside(v, p, size + 16);
}

bool
rt_arena_view_holds(const struct rt_arena_view *view, uintptr_t addr)
{
	return rt_arena_heap_of(view, addr) < view->nheaps;
}

/* The bin whose header is at q, or 0. */
RT_ARENA_INLINE int
rt_arena_bin_of(uintptr_t arena, uintptr_t q)
{
	uintptr_t first = rt_arena_bin(arena, 1);
	if (q < first || (q - first) % 16)
		return 0;
	uintptr_t i = (q - first) / 16 + 1;
	return i < RT_ARENA_NBINS ? (int)i : 0;
}

/* Running state of one release. */
struct rt_arena_run {
	const struct rt_arena_env *env;
	struct rt_arena_view *view;
	struct rt_arena_result *res;
	int64_t hold_start;
	int64_t run_start;    /* when the lock was taken: renewals since then */
	int64_t arena_held;   /* the arena's lock held in this release, before hold_start */
	unsigned hold_chunks; /* chunks looked at in this hold */
	unsigned hold_work;   /* chunks looked at and pieces given back in this hold */
	unsigned since_clock; /* work since the clock was last read (a piece counts 32) */
	bool counting;        /* rt_arena_count: nothing is given back */
	bool waited;          /* the last hold ended with a thread waiting for the lock */
	bool contested;       /* a thread waited for this arena's lock in this release */
	bool ran_out;         /* the last hold ended after run_ns: yield before the next */
	uint64_t most;        /* rt_arena_count stops once this many were counted */
};

/* A word of the locked arena. The shim's words are the process's own (ops->direct): read
 * inline and plainly, as glibc reads them: the lock, taken with acquire ordering, orders them
 * after every write of its last holder, and no other thread writes a word the release reads
 * while it holds the lock (free() writes only the chunk it pushes, before the push, and the
 * fastbin head, read below). An atomic read would make the compiler read the release's own
 * state again after each. */
RT_ARENA_INLINE uint64_t
rt_arena_load(const struct rt_arena_env *env, uintptr_t addr)
{
	if (env->ops->direct)
		return *(const uint64_t *)addr;
	return env->ops->load(env->ops->ctx, addr);
}

/* A word that other threads write without the lock: a fastbin's head, which free() pushes onto
 * with a compare-and-swap of release ordering (read with acquire ordering, so that the pushed
 * chunk's link is seen), and the mutex word itself (a waiter sets it to 2). */
RT_ARENA_INLINE uint64_t
rt_arena_load_shared(const struct rt_arena_env *env, uintptr_t addr)
{
	if (env->ops->direct)
		return __atomic_load_n((const uint64_t *)addr, __ATOMIC_ACQUIRE);
	return env->ops->load(env->ops->ctx, addr);
}

/* The writes of one fastbin chunk's consolidation that glibc makes before a check (the free
 * neighbours' unlinks), in its order, not yet made: a word is read through them as glibc would
 * read it at that point, and they are made only once every check passed. At most two unlinks of
 * six writes each. */
#define RT_ARENA_PENDING 12
struct rt_arena_pending {
	unsigned n;
	uintptr_t addr[RT_ARENA_PENDING];
	uint64_t value[RT_ARENA_PENDING];
};

/* A word of the locked arena as it will be once the pending writes are made (w: none). */
RT_ARENA_INLINE uint64_t
rt_arena_read(const struct rt_arena_env *env, const struct rt_arena_pending *w, uintptr_t addr)
{
	for (unsigned i = w ? w->n : 0; i-- > 0;)
		if (w->addr[i] == addr)
			return w->value[i];
	return rt_arena_load(env, addr);
}

/* Whether the chunk at p, whose fd and bk are these, is linked both ways: each link either a bin
 * header of the locked arena or a chunk inside one of its heaps that links back to p (read
 * through w, which may be NULL). */
RT_ARENA_INLINE bool
rt_arena_links_back(const struct rt_arena_env *env, struct rt_arena_view *v,
                    const struct rt_arena_pending *w, uintptr_t p, uintptr_t fd, uintptr_t bk)
{
	for (int side = 0; side < 2; side++) {
		uintptr_t q = side ? bk : fd;
		/* A chunk first: most links lead to one, and a bin's number is a division. */
		if ((q % RT_ARENA_ALIGN || !rt_arena_inside(v, q, RT_ARENA_CHUNK_HEADER)) &&
		    !rt_arena_bin_of(v->arena, q))
			return false;
		if (rt_arena_read(env, w, q + (side ? RT_ARENA_CHUNK_FD : RT_ARENA_CHUNK_BK)) != p)
			return false;
	}
	return true;
}

/* Whether p is, right now, a chunk linked both ways in a list of the locked arena, whole inside
 * one of its heaps; its size. */
RT_ARENA_INLINE bool
rt_arena_linked(const struct rt_arena_env *env, struct rt_arena_view *v, uintptr_t p, size_t *size)
{
	if (p % RT_ARENA_ALIGN || !rt_arena_inside(v, p, RT_ARENA_CHUNK_HEADER))
		return false;
	size_t sz = rt_arena_load(env, p + RT_ARENA_CHUNK_SIZE) & ~(uint64_t)7;
	if (sz < RT_ARENA_MINSIZE || sz % RT_ARENA_ALIGN || !rt_arena_inside_chunk(v, p, sz))
		return false;
	if (!rt_arena_links_back(env, v, NULL, p, rt_arena_load(env, p + RT_ARENA_CHUNK_FD),
	                         rt_arena_load(env, p + RT_ARENA_CHUNK_BK)))
		return false;
	*size = sz;
	return true;
}

/* Whether the chunk after p (of size sz, inside its heap) says p is free and repeats its size
 * (glibc's set_foot). */
RT_ARENA_INLINE bool
rt_arena_footed(const struct rt_arena_env *env, uintptr_t p, size_t sz)
{
	return !(rt_arena_load(env, p + sz + RT_ARENA_CHUNK_SIZE) & RT_ARENA_PREV_INUSE) &&
	       rt_arena_load(env, p + sz + RT_ARENA_CHUNK_PREV_SIZE) == sz;
}

/* Whether p is, right now, a free chunk linked in a list of the locked arena; its size. */
RT_ARENA_INLINE bool
rt_arena_linked_free(const struct rt_arena_env *env, struct rt_arena_view *v, uintptr_t p,
                     size_t *size)
{
	return rt_arena_linked(env, v, p, size) && rt_arena_footed(env, p, *size);
}

enum rt_arena_seen { RT_ARENA_SEEN_OK, RT_ARENA_SEEN_SKIP, RT_ARENA_SEEN_BAD };

/* The heap_info of the top's heap and of the `was` heaps of the arena's last reading, read in
 * one go (ops->peek_each): every rehold reads the arena's heaps afresh with the lock held, and
 * a read of each on its own cost 1.2-1.7 us a heap (a 1 GiB arena of 16 heaps: 20-26 us of a
 * hold of 100 us), 16 in one process_vm_readv 6.2-6.7 us. How many were read: the top's heap
 * first, the others by address; 0 where none were (then each heap is read on its own, as a
 * heap gone since, unmapped, makes the whole read fail). */
static size_t
rt_arena_read_heaps(const struct rt_arena_env *env, struct rt_arena_view *v, size_t was,
                    uintptr_t top_heap)
{
	const struct rt_arena_ops *ops = env->ops;
	if (!ops->peek_each || !was)
		return 0;
	size_t n = 0;
	v->again[n++] = top_heap;
	for (size_t i = 0; i < was && n < RT_ARENA_MAX_HEAPS; i++) {
		uintptr_t h = v->heaps[i].start & ~(env->heap_max - 1);
		if (h != top_heap)
			v->again[n++] = h;
	}
	if (!ops->peek_each(ops->ctx, v->again, n, RT_ARENA_HEAP_WORDS, v->again_info[0]))
		return 0;
	return n;
}

/* The heap_info of h among the n read by rt_arena_read_heaps, or NULL. */
static const uint64_t *
rt_arena_read_before(const struct rt_arena_view *v, size_t n, uintptr_t h)
{
	if (n && v->again[0] == h)
		return v->again_info[0];
	for (size_t lo = 1, hi = n; lo < hi;) {
		size_t mid = (lo + hi) / 2;
		if (v->again[mid] < h)
			lo = mid + 1;
		else if (v->again[mid] > h)
			hi = mid;
		else
			return v->again_info[mid];
	}
	return NULL;
}

/* Reads the locked arena afresh: its state, its heaps, its top. */
static enum rt_arena_seen
rt_arena_see(const struct rt_arena_env *env, uintptr_t arena, bool main_arena,
             struct rt_arena_view *v, const char **why)
{
	const struct rt_arena_ops *ops = env->ops;
	uint64_t words[RT_ARENA_WORDS];
	for (size_t i = 0; i < RT_ARENA_WORDS; i++)
		words[i] = rt_arena_load(env, arena + i * 8);
	if ((*why = rt_arena_check_state(words, arena, main_arena)))
		return RT_ARENA_SEEN_BAD;
	/* This arena's heaps as last read, if they are. */
	size_t was = v->heaps_of == arena ? v->nheaps : 0;
	v->heaps_of = 0;
	v->arena = arena;
	v->main_arena = main_arena;
	v->nheaps = 0;
	v->near = (struct rt_arena_range){0, 0};
	v->sizes_below = true;
	v->top = rt_arena_word(words, RT_ARENA_TOP);
	v->top_size = 0;
	v->top_heap = 0;
	uint64_t head;
	if (main_arena) {
		/* Before the first malloc the top is the unsorted bin's header (initial_top). */
		if (v->top == rt_arena_bin(arena, 1))
			return RT_ARENA_SEEN_SKIP;
		if (rt_arena_int(words, RT_ARENA_FLAGS) & RT_ARENA_NONCONTIGUOUS) {
			*why = rt_arena_sound_mapped;
			return RT_ARENA_SEEN_BAD;
		}
		if (!ops->peek(ops->ctx, v->top + RT_ARENA_CHUNK_SIZE, &head, 1)) {
			*why = rt_arena_unread_top;
			return RT_ARENA_SEEN_BAD;
		}
		v->top_size = head & ~(uint64_t)7;
		uintptr_t end = v->top + v->top_size;
		uintptr_t system = rt_arena_word(words, RT_ARENA_SYSTEM_MEM);
		/* Contiguous: sbrk_base + system_mem is where the top ends. */
		if (!(head & RT_ARENA_PREV_INUSE) || end < v->top || system < v->top_size ||
		    end % env->page) {
			*why = "the main arena's top chunk does not end its sbrk heap";
			return RT_ARENA_SEEN_BAD;
		}
		v->heaps[0] = (struct rt_arena_range){end - system, end};
		v->nheaps = 1;
		v->sizes_below = v->heaps[0].start >= system;
		return RT_ARENA_SEEN_OK;
	}
	uintptr_t top_heap = v->top & ~(env->heap_max - 1);
	size_t read = rt_arena_read_heaps(env, v, was, top_heap);
	for (uintptr_t h = top_heap; h;) {
		uint64_t own[RT_ARENA_HEAP_WORDS];
		const uint64_t *info = rt_arena_read_before(v, read, h);
		if (!info && h % env->heap_max == 0 &&
		    ops->peek(ops->ctx, h, own, RT_ARENA_HEAP_WORDS))
			info = own;
		if (h % env->heap_max || !info) {
			*why = rt_arena_unread_heap;
			return RT_ARENA_SEEN_BAD;
		}
		if ((*why = rt_arena_check_heap(info, h, arena, env->page, env->heap_max)))
			return RT_ARENA_SEEN_BAD;
		if (v->nheaps == RT_ARENA_MAX_HEAPS)
			return RT_ARENA_SEEN_SKIP;
		/* The heap's chunks: past its heap_info, and the arena in its first heap. A link
		 * into either is no chunk's, and the words an unlink writes then stay out of the
		 * arena's words before its bins (fastbins, top). */
		struct rt_arena_range r = {
		    h + RT_ARENA_HEAP_INFO_SIZE +
		        (h + RT_ARENA_HEAP_INFO_SIZE == arena ? RT_ARENA_STATE_SIZE : 0),
		    h + rt_arena_word(info, RT_ARENA_HEAP_SIZE)};
		/* Insertion keeps them sorted; mmap hands out heaps in falling order mostly, so
		 * this is one step each. */
		size_t at = v->nheaps++;
		while (at > 0 && v->heaps[at - 1].start > r.start) {
			v->heaps[at] = v->heaps[at - 1];
			at--;
		}
		v->heaps[at] = r;
		v->sizes_below &= r.start >= r.end - r.start;
		uintptr_t prev = rt_arena_word(info, RT_ARENA_HEAP_PREV);
		if (!prev && h + RT_ARENA_HEAP_INFO_SIZE != arena) {
			*why = "an arena's first heap does not hold the arena";
			return RT_ARENA_SEEN_BAD;
		}
		h = prev;
	}
	v->top_heap = top_heap;
	if (!rt_arena_inside(v, v->top, RT_ARENA_MINSIZE)) {
		*why = "a thread arena's top chunk is outside its heap";
		return RT_ARENA_SEEN_BAD;
	}
	head = rt_arena_load(env, v->top + RT_ARENA_CHUNK_SIZE);
	v->top_size = head & ~(uint64_t)7;
	size_t at = 0;
	while ((v->heaps[at].start & ~(env->heap_max - 1)) != top_heap)
		at++;
	if (!(head & RT_ARENA_PREV_INUSE) || v->top + v->top_size != v->heaps[at].end) {
		*why = "a thread arena's top chunk does not end its heap";
		return RT_ARENA_SEEN_BAD;
	}
	v->heaps_of = arena;
	return RT_ARENA_SEEN_OK;
}

static bool
rt_arena_fail(struct rt_arena_run *run, const char *why)
{
	if (!run->res->failure)
		run->res->failure = why;
	return false;
}

static void
rt_arena_begin_hold(struct rt_arena_run *run)
{
	const struct rt_arena_ops *ops = run->env->ops;
	if (!run->waited && run->ran_out && ops->yield)
		ops->yield(ops->ctx);
	run->ran_out = false;
	ops->lock(ops->ctx, run->view->arena + RT_ARENA_MUTEX);
	run->hold_start = run->run_start = ops->now_ns(ops->ctx);
	run->hold_chunks = 0;
	run->hold_work = 0;
	run->res->holds++;
}

/* An arena's first hold: nobody has waited for its lock yet, and its release starts now. */
static void
rt_arena_first_hold(struct rt_arena_run *run)
{
	run->contested = false;
	rt_arena_begin_hold(run);
	run->arena_held = 0;
}

static void
rt_arena_end_hold(struct rt_arena_run *run, uintptr_t arena)
{
	const struct rt_arena_ops *ops = run->env->ops;
	int64_t held = ops->now_ns(ops->ctx) - run->hold_start;
	if (held > run->res->longest_hold_ns)
		run->res->longest_hold_ns = held;
	run->arena_held += held;
	run->waited = ops->unlock(ops->ctx, arena + RT_ARENA_MUTEX);
	run->contested |= run->waited;
	if (run->waited) {
		run->res->contended++;
		ops->let_waiter_in(ops->ctx, arena + RT_ARENA_MUTEX);
	}
}

/* A clock reading costs as much as a chunk's consolidation (170 ns in a VM here): the clock is
 * read after 32 chunks, or after a piece given back (a madvise costs far more). */
#define RT_ARENA_CLOCK_EVERY 32

static inline void
rt_arena_chunk_done(struct rt_arena_run *run)
{
	run->hold_chunks++;
	run->hold_work++;
	run->since_clock++;
}

static inline void
rt_arena_piece_done(struct rt_arena_run *run)
{
	run->hold_work++;
	run->since_clock += RT_ARENA_CLOCK_EVERY;
}

/* How old a hold that a thread waits for may grow, once the arena's lock has been held held_ns
 * in this release: a share of that, at least the floor, at most waited_most_ns. Each handover
 * costs two wake-ups (the waiter's, then the worker's): at 0.5 ms a hold, a thread that allocated
 * throughout made a release of 256 MiB of 16-128 B blocks (one in 16 kept, 2 threads) hand the
 * lock over 595 times, against 104-106 with holds of a twentieth of the time held so far (each
 * handover still costs the release 0.2-0.35 ms of waiting: its time is 1.05-1.10 times
 * malloc_trim's there, with nobody allocating 0.97-1.00; spinning on the word before the
 * worker's futex sleep, 256 or 4,096 times, took as long). malloc_trim(0) makes that thread wait
 * through its whole pass over the arena, which takes about as long as the release holds the lock in
 * all (its work alike): a twentieth of the time held so far keeps each wait near a twentieth of
 * malloc_trim's, under the goal of a tenth with room for a hold cut by the scheduler. The time
 * held, not the time since the arena's first hold: the handovers, the waits for the lock and
 * preemptions of the worker between holds made holds longer where the release ran slower than
 * malloc_trim's pace (at 64 MiB, 4.2-4.6 ms against 0.5-1.0 with the fixed floor). waited_most_ns
 * bounds it on arenas of GiBs, where a handover every 5 ms costs under 2 %. */
static int64_t
rt_arena_waited_hold(const struct rt_arena_env *env, int64_t held_ns)
{
	int64_t hold = env->budget.waited_hold_ns;
	if (env->budget.waited_share) {
		int64_t share = held_ns / env->budget.waited_share;
		if (share > env->budget.waited_most_ns)
			share = env->budget.waited_most_ns;
		if (share > hold)
			hold = share;
	}
	return hold;
}

/* The hold ends once another thread waits for the lock (glibc's waiters set the mutex word to 2;
 * after the worker's own wait for it, the word stays 2 for the whole hold, as glibc's own lock
 * leaves it) and the hold is waited_hold_ns old, at the next clock reading; always only once it
 * did some work, so that every hold moves the release on. Ended at the first look that saw a
 * waiter, a hold did one chunk or piece between two handovers whenever a thread allocated
 * throughout: the release took 32 times as long as malloc_trim(0) (6.5 s against 0.2 s; 256 MiB
 * of 32-2,048 B blocks, one in 16 kept, 2 cores at a load of 1), for a worst malloc+free of
 * 0.9 ms against malloc_trim's 28 ms; 6 of 6 runs at a load of 1 took 5.9-6.7 s (worst op
 * 0.46-3.2 ms), and a review at a load of 2 saw it in 4 of 24 runs, the rest 0.13-0.19 s with a
 * worst op of 0.02-0.09 ms. Ending at once only the holds that a thread came to wait for
 * after they began (the word read 1 at the lock) did not help: 1.5-6.7 s in 9 of 9 runs on three
 * heaps, the allocating thread coming back within the first chunk. So every hold a thread waits
 * for lasts at least half a millisecond, less than a scheduler's time slice, no longer than a
 * waiter waits behind a preempted thread: the worst op is 0.4-0.6 ms where it was 0.02-0.09 in
 * the runs that did not fall into it (and longer on a large arena: rt_arena_waited_hold). When
 * its budget is spent and nobody waits, the budget is renewed without dropping the lock: a thread
 * that comes to wait later is seen at the next look, as in a fresh hold, and a drop would only cost
 * a rest and a new reading of the arena (the release took 2.4 to 2.8 times as long as malloc_trim
 * with them). Only a preemption of the worker while it holds the lock would make a waiter wait
 * longer: in an arena whose lock a thread has waited for in this release, after run_ns the hold
 * ends all the same, and the worker yields its core before the next one (in every arena, a yield
 * every 0.5 ms made the release several times slower on a busy machine). Measured at a load of 13
 * on 2 cores, 256 MiB, a thread allocating throughout, 3 runs each: without yields its worst
 * unpreempted op was 22-34 ms; with a yield every 2 ms 0.05-10 ms and the release 914-1172 ms;
 * every 0.5 ms 0.07-11 ms and 1086-1302 ms. */
static bool
rt_arena_hold_over(struct rt_arena_run *run)
{
	const struct rt_arena_env *env = run->env;
	const struct rt_arena_ops *ops = env->ops;
	if (!run->hold_work)
		return false;
	uint32_t mutex = (uint32_t)rt_arena_load_shared(env, run->view->arena + RT_ARENA_MUTEX);
	bool waiter = mutex > 1;
	if (waiter && !env->budget.waited_hold_ns)
		return true;
	if (run->since_clock < RT_ARENA_CLOCK_EVERY &&
	    (waiter || run->hold_chunks < env->budget.hold_chunks))
		return false;
	run->since_clock = 0;
	int64_t now = ops->now_ns(ops->ctx);
	if (waiter)
		return now - run->hold_start >=
		       rt_arena_waited_hold(env, run->arena_held + (now - run->hold_start));
	if (run->hold_chunks < env->budget.hold_chunks &&
	    now - run->hold_start < env->budget.hold_ns)
		return false;
	if (run->contested && now - run->run_start >= env->budget.run_ns) {
		run->ran_out = true;
		return true;
	}
	if (now - run->hold_start > run->res->longest_hold_ns)
		run->res->longest_hold_ns = now - run->hold_start;
	run->arena_held += now - run->hold_start;
	run->hold_start = now;
	run->hold_chunks = 0;
	run->hold_work = 0;
	run->res->holds++;
	run->res->renewed++;
	return false;
}

/* Drops the lock, lets a waiter in, takes it again and reads the arena afresh. False when the
 * arena can no longer be released (then the lock is not held); *skip says it is not an error. */
static bool
rt_arena_rehold(struct rt_arena_run *run, bool *skip)
{
	struct rt_arena_view *v = run->view;
	uintptr_t arena = v->arena;
	bool main_arena = v->main_arena;
	rt_arena_end_hold(run, arena);
	rt_arena_begin_hold(run);
	const char *why = NULL;
	enum rt_arena_seen seen = rt_arena_see(run->env, arena, main_arena, v, &why);
	if (seen == RT_ARENA_SEEN_OK)
		return true;
	rt_arena_end_hold(run, arena);
	*skip = seen == RT_ARENA_SEEN_SKIP;
	if (*skip)
		run->res->skipped++;
	else
		rt_arena_fail(run, why);
	return false;
}

static inline uintptr_t
rt_arena_min(uintptr_t a, uintptr_t b)
{
	return a < b ? a : b;
}

/* The top chunk, from its end down, one piece at a time. */
static bool
rt_arena_release_top(struct rt_arena_run *run, size_t keep, bool *skip)
{
	const struct rt_arena_env *env = run->env;
	struct rt_arena_view *v = run->view;
	uintptr_t done_from = UINTPTR_MAX, heap = v->top_heap;
	for (;;) {
		if (rt_arena_hold_over(run) && !rt_arena_rehold(run, skip))
			return false;
		if (v->top_heap != heap) {
			heap = v->top_heap;
			done_from = UINTPTR_MAX;
		}
		struct rt_arena_range r = rt_arena_free_range(v->top, v->top_size, keep, env->page);
		uintptr_t hi = rt_arena_min(r.end, done_from);
		if (r.start >= hi)
			return true;
		uintptr_t lo = hi - rt_arena_min(hi - r.start, env->budget.piece_bytes);
		env->ops->release(env->ops->ctx, lo, hi);
		run->res->top_bytes += hi - lo;
		rt_arena_piece_done(run);
		done_from = lo;
	}
}

/* A mismatch found while the lock is held: give it back, stop. */
static bool
rt_arena_abort(struct rt_arena_run *run, const char *why)
{
	rt_arena_end_hold(run, run->view->arena);
	return rt_arena_fail(run, why);
}

/* How many chunks the arena's heaps could hold: a walk longer than that is going round. */
static uint64_t
rt_arena_max_chunks(const struct rt_arena_view *v)
{
	uint64_t bytes = 0;
	for (size_t i = 0; i < v->nheaps; i++)
		bytes += v->heaps[i].end - v->heaps[i].start;
	return bytes / RT_ARENA_MINSIZE + 1;
}

/* What is left of the chunk [p, end) that the walk was on, once found gone after the lock was
 * dropped: the free chunk that now holds its part not given back yet, found linked and free.
 * Where `end` is still a chunk's start whose PREV_INUSE says the chunk before it is free, that
 * one, whose size its prev_size gives: the rest after what malloc split off the front (once or
 * again and again), or a chunk that a free merged with the one before it. Else the chunk that
 * reaches past `end`, stepped to over the chunks from p by their sizes (at most `hops` of them;
 * their headers do not change while the lock is held): p or a rest grown by a merge with the
 * chunk after it. */
RT_ARENA_INLINE bool
rt_arena_rest_of(const struct rt_arena_env *env, struct rt_arena_view *v, uintptr_t p,
                 uintptr_t end, unsigned hops, uintptr_t *rest, size_t *rest_size)
{
	if (rt_arena_inside(v, end, RT_ARENA_CHUNK_HEADER) &&
	    !(rt_arena_load(env, end + RT_ARENA_CHUNK_SIZE) & RT_ARENA_PREV_INUSE)) {
		size_t before = rt_arena_load(env, end + RT_ARENA_CHUNK_PREV_SIZE);
		uintptr_t q = end - before;
		/* The words at `end` may be a stale header inside a chunk grown over it. */
		if (before >= RT_ARENA_MINSIZE && before <= end &&
		    rt_arena_linked_free(env, v, q, rest_size) && *rest_size == before) {
			*rest = q;
			return true;
		}
	}
	for (uintptr_t q = p;; hops--) {
		if (q % RT_ARENA_ALIGN || !rt_arena_inside(v, q, RT_ARENA_CHUNK_HEADER))
			return false;
		size_t size = rt_arena_load(env, q + RT_ARENA_CHUNK_SIZE) & ~(uint64_t)7;
		if (size >= end - q)
			return rt_arena_linked_free(env, v, q, rest_size) &&
			       *rest_size >= end - q && (*rest = q, true);
		if (size < RT_ARENA_MINSIZE || !hops)
			return false;
		q += size;
	}
}

/* The slot of the chunk at p in the view's table of chunks given back (Fibonacci hashing: chunks
 * of one bin lie a multiple of their size apart, which the address's low bits would repeat). */
RT_ARENA_INLINE struct rt_arena_given *
rt_arena_given_slot(struct rt_arena_view *v, uintptr_t p)
{
	return &v->given[((uint64_t)p * 0x9e3779b97f4a7c15u) >> 56];
}

/* One normal bin, to its header. Before each chunk and each piece the hold may end; after the
 * lock was dropped, the walk goes on only from the same chunk found again, linked, free, of the
 * same size. It may then go on in another list (a chunk that malloc moved from the unsorted bin
 * to its sized bin): it ends at whichever bin header it reaches.
 * A sized bin is walked from its last chunk back, as mtrim walks it; the unsorted bin from its
 * first chunk on (fd). glibc takes chunks out of the unsorted bin only at its end (_int_malloc's
 * loop takes the last chunk, again and again, into its sized bin) or by merging them (then the
 * place is lost, below), and puts chunks in only at its front. So once the chunk that the walk
 * is on has been moved on, every chunk between it and the end was moved before it, into the
 * sized bins, which are walked after the unsorted bin: nothing the walk had still to reach is
 * left in the unsorted bin. Walked from its end, as mtrim does, the walk went on in the sized
 * bin from the chunk that malloc had sorted while the lock was down, and passed over every chunk
 * still in the unsorted bin (with a thread allocating on 4 GiB of 16-128-byte blocks, 1 in 256
 * kept: 1.9 GiB of 2, RSS 1.98 times malloc_trim's).
 * When the chunk the walk is on is gone (taken or merged), the walk goes on from the chunk it
 * would have looked at next, read before the lock was dropped, once that one is found again,
 * linked and free; only when both are gone does it start over, and it gives the bin up after
 * `restarts` times. A sized bin's last chunk is where malloc takes chunks from (its binmap path),
 * so a thread that allocates meanwhile takes the very chunk the walk is on, again and again:
 * starting over each time, the walk gave the bin up after the third (with a thread allocating on
 * 256 MiB of 1-128 KiB blocks, 1 in 256 kept: 23 chunks of about 5 MiB, RSS 132 MiB against
 * malloc_trim's 6).
 * A list longer than the heap has chunks, within one hold (the heap as one moment has it), is a
 * loop: damage. Across holds it is not: the program may have shrunk the heap meanwhile (a free
 * that merged into the top and trimmed it), and the count of a walk that went on through holds
 * is held against the heap as it is now; such a walk ends the bin quietly.
 * A walk that starts over finds again the chunks it gave back before: those found in the table
 * of chunks given back whole in this walk, at the same place with the same size, are passed
 * over (the pages of a free chunk stay given back while it stays free; one taken and freed
 * again at the same place and size meanwhile keeps its pages until the next release). Given
 * back again, each piece cost a madvise call: tens of ms on a bin of 10^5 large chunks. */
static bool
rt_arena_release_bin(struct rt_arena_run *run, int i, bool *skip)
{
	const struct rt_arena_env *env = run->env;
	struct rt_arena_view *v = run->view;
	uintptr_t bin = rt_arena_bin(v->arena, i);
	size_t step = i == 1 ? RT_ARENA_CHUNK_FD : RT_ARENA_CHUNK_BK;
	unsigned restarts = 0;
	uint64_t walk = ++v->walks;
restart:;
	uint64_t visits = 0, hold_visits = 0, most_visits = rt_arena_max_chunks(v);
	bool resumed = false;
	uintptr_t p = rt_arena_load(env, bin + step);
	while (!rt_arena_bin_of(v->arena, p)) {
		size_t size, again;
		if (!rt_arena_linked(env, v, p, &size))
			return rt_arena_abort(run, rt_arena_bad_bin_chunk);
		if (!resumed && i >= 2 && rt_arena_bin_index(size) != i)
			return rt_arena_abort(run, rt_arena_bad_bin_size);
		if (++hold_visits > most_visits)
			return rt_arena_abort(run, rt_arena_bad_bin_list);
		if (++visits > most_visits) {
			run->res->lost_places++;
			return true;
		}
		struct rt_arena_range r = run->counting
		                              ? (struct rt_arena_range){0, 0}
		                              : rt_arena_free_range(p, size, 0, env->page);
		if (restarts && r.start < r.end) {
			const struct rt_arena_given *given = rt_arena_given_slot(v, p);
			if (given->walk == walk && given->start == p && given->end == p + size)
				r.end = r.start;
		}
		/* The chunk after it (a line of its own, a cache miss each: the walk took twice as
		 * long as mtrim's) is read only for a chunk that has a page to give back: the links
		 * checked both ways are what makes the walk safe; the footer, the madvise. */
		if (r.start < r.end && !rt_arena_footed(env, p, size))
			return rt_arena_abort(run, rt_arena_bad_bin_chunk);
		/* The walk's next place while p is a rest (below), in no list of this bin. */
		uintptr_t after = 0;
		for (uintptr_t hi = r.end;;) {
			if (rt_arena_hold_over(run)) {
				/* Where the walk goes on if p is gone once the lock is back: read
				 * while p's links are known good, trusted only once found again. */
				uintptr_t next = after ? after : rt_arena_load(env, p + step);
				if (!rt_arena_rehold(run, skip))
					return false;
				resumed = true;
				hold_visits = 0;
				most_visits = rt_arena_max_chunks(v);
				if (!rt_arena_linked_free(env, v, p, &again) || again != size) {
					uintptr_t rest;
					size_t rest_size;
					run->res->moved_on++;
					if (after || hi <= r.start ||
					    !rt_arena_rest_of(env, v, p, p + size,
					                      env->budget.hold_chunks, &rest,
					                      &rest_size)) {
						p = next;
						goto go_on;
					}
					/* Its pages not given back yet, from the rest (a piece is
					 * given back from the end down, and malloc splits from the
					 * front), then on from next. */
					struct rt_arena_range in_rest =
					    rt_arena_free_range(rest, rest_size, 0, env->page);
					if (in_rest.start >= in_rest.end)
						r.start = hi;
					else if (in_rest.start > r.start)
						r.start = in_rest.start;
					after = next;
					p = rest;
					size = rest_size;
					run->res->rests++;
					continue;
				}
			}
			if (hi == r.end) {
				run->res->chunks++;
				rt_arena_chunk_done(run);
			}
			if (hi <= r.start)
				break;
			uintptr_t lo = hi - rt_arena_min(hi - r.start, env->budget.piece_bytes);
			env->ops->release(env->ops->ctx, lo, hi);
			run->res->bin_bytes += hi - lo;
			rt_arena_piece_done(run);
			hi = lo;
			if (hi == r.start)
				break;
		}
		if (!after && r.start < r.end)
			*rt_arena_given_slot(v, p) = (struct rt_arena_given){p, p + size, walk};
		if (run->counting && run->res->chunks > run->most)
			return true;
		if (!after) {
			p = rt_arena_load(env, p + step);
			continue;
		}
		p = after;
	go_on:
		/* A place read before the lock was dropped: trusted only once found again. */
		if (!rt_arena_bin_of(v->arena, p) && !rt_arena_linked_free(env, v, p, &again))
			goto lost;
	}
	return true;
lost:
	/* The chunk was taken or merged while the lock was down, and the next one too: walk the
	 * bin again (what was given back is passed over, above), a bounded number of times. */
	run->res->lost_places++;
	if (restarts++ < env->budget.restarts)
		goto restart;
	return true;
}

RT_ARENA_INLINE void
rt_arena_store(const struct rt_arena_env *env, uintptr_t addr, uint64_t value)
{
	if (env->ops->direct)
		*(uint64_t *)addr = value;
	else
		env->ops->store(env->ops->ctx, addr, value);
}

RT_ARENA_INLINE bool
rt_arena_cas(const struct rt_arena_env *env, uintptr_t addr, uint64_t expected, uint64_t desired)
{
	if (env->ops->direct)
		return __atomic_compare_exchange_n((uint64_t *)addr, &expected, desired, false,
		                                   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	return env->ops->cas(env->ops->ctx, addr, expected, desired);
}

/* MIN_LARGE_SIZE: a chunk this large or larger keeps fd_nextsize and bk_nextsize. */
#define RT_ARENA_MIN_LARGE 1024
/* CHUNK_HDR_SZ: the size of a fencepost chunk. */
#define RT_ARENA_FENCEPOST 16
#define RT_ARENA_CHUNK_FD_NEXTSIZE 32
#define RT_ARENA_CHUNK_BK_NEXTSIZE 40

/* A write of an unlink: added to w, or made now (w NULL: every check passed). */
RT_ARENA_INLINE void
rt_arena_put(const struct rt_arena_env *env, struct rt_arena_pending *w, uintptr_t addr,
             uint64_t value)
{
	if (!w) {
		rt_arena_store(env, addr, value);
		return;
	}
	w->addr[w->n] = addr;
	w->value[w->n++] = value;
}

/* glibc's unlink_chunk's writes of q's nextsize ring, after its list writes (fd: q's fd). They
 * use fdn and bkn as read once: glibc reads q's words again after its first ring writes, but
 * those change them only when fd is q itself, and then write the values the words hold. */
RT_ARENA_INLINE void
rt_arena_unlink_ring(const struct rt_arena_env *env, struct rt_arena_pending *w, uintptr_t q,
                     uintptr_t fd)
{
	if (rt_arena_read(env, w, q + RT_ARENA_CHUNK_SIZE) < RT_ARENA_MIN_LARGE)
		return;
	uintptr_t fdn = rt_arena_read(env, w, q + RT_ARENA_CHUNK_FD_NEXTSIZE);
	uintptr_t bkn = rt_arena_read(env, w, q + RT_ARENA_CHUNK_BK_NEXTSIZE);
	if (!fdn)
		return;
	if (!rt_arena_read(env, w, fd + RT_ARENA_CHUNK_FD_NEXTSIZE)) {
		/* The next of the same size heads the group now. */
		if (fdn == q) {
			rt_arena_put(env, w, fd + RT_ARENA_CHUNK_FD_NEXTSIZE, fd);
			rt_arena_put(env, w, fd + RT_ARENA_CHUNK_BK_NEXTSIZE, fd);
		} else {
			rt_arena_put(env, w, fd + RT_ARENA_CHUNK_FD_NEXTSIZE, fdn);
			rt_arena_put(env, w, fd + RT_ARENA_CHUNK_BK_NEXTSIZE, bkn);
			rt_arena_put(env, w, fdn + RT_ARENA_CHUNK_BK_NEXTSIZE, fd);
			rt_arena_put(env, w, bkn + RT_ARENA_CHUNK_FD_NEXTSIZE, fd);
		}
	} else {
		rt_arena_put(env, w, fdn + RT_ARENA_CHUNK_BK_NEXTSIZE, bkn);
		rt_arena_put(env, w, bkn + RT_ARENA_CHUNK_FD_NEXTSIZE, fdn);
	}
}

/* Whether glibc's unlink_chunk would take q, a free neighbour of a fastbin chunk whose extent the
 * caller has bounded (aligned, [q, q + size + 16) inside one heap) and whose footer it has
 * checked (the next chunk's PREV_INUSE clear, its prev_size `size`), out of its list without a
 * complaint: its size word says `size`, it is linked both ways, and, when it heads a group of a
 * large bin, its nextsize ring is linked both ways (*ring: it heads one). With w, in glibc's
 * order: every word read through the writes pending on w, the list writes added before the ring
 * is checked, the ring's after. Without, every word as it is now. What the caller has checked is
 * not checked again (the same bounds and footer checked twice were a fifth of the release's
 * instructions on a heap of fastbin chunks). */
RT_ARENA_INLINE bool
rt_arena_unlinkable(const struct rt_arena_env *env, struct rt_arena_view *v,
                    struct rt_arena_pending *w, uintptr_t q, size_t size, bool *ring)
{
	if ((rt_arena_read(env, w, q + RT_ARENA_CHUNK_SIZE) & ~(uint64_t)7) != size)
		return false;
	uintptr_t fd = rt_arena_read(env, w, q + RT_ARENA_CHUNK_FD);
	uintptr_t bk = rt_arena_read(env, w, q + RT_ARENA_CHUNK_BK);
	if (!rt_arena_links_back(env, v, w, q, fd, bk))
		return false;
	if (w) {
		rt_arena_put(env, w, fd + RT_ARENA_CHUNK_BK, bk);
		rt_arena_put(env, w, bk + RT_ARENA_CHUNK_FD, fd);
	}
	if ((w ? rt_arena_read(env, w, q + RT_ARENA_CHUNK_SIZE) : size) < RT_ARENA_MIN_LARGE)
		return true;
	uintptr_t fdn = rt_arena_read(env, w, q + RT_ARENA_CHUNK_FD_NEXTSIZE);
	if (!fdn)
		return true;
	uintptr_t bkn = rt_arena_read(env, w, q + RT_ARENA_CHUNK_BK_NEXTSIZE);
	for (int side = 0; side < 2; side++) {
		uintptr_t n = side ? bkn : fdn;
		if (n % RT_ARENA_ALIGN || !rt_arena_inside(v, n, RT_ARENA_CHUNK_HEADER) ||
		    rt_arena_read(
		        env, w,
		        n + (side ? RT_ARENA_CHUNK_FD_NEXTSIZE : RT_ARENA_CHUNK_BK_NEXTSIZE)) != q)
			return false;
	}
	*ring = true;
	if (w)
		rt_arena_unlink_ring(env, w, q, fd);
	return true;
}

/* glibc's unlink_chunk, made now on a chunk whose checks passed. */
RT_ARENA_INLINE void
rt_arena_unlink(const struct rt_arena_env *env, uintptr_t q)
{
	uintptr_t fd = rt_arena_load(env, q + RT_ARENA_CHUNK_FD);
	uintptr_t bk = rt_arena_load(env, q + RT_ARENA_CHUNK_BK);
	rt_arena_store(env, fd + RT_ARENA_CHUNK_BK, bk);
	rt_arena_store(env, bk + RT_ARENA_CHUNK_FD, fd);
	rt_arena_unlink_ring(env, NULL, q, fd);
}

/* Whether the checks made on the heap as it is now may differ from glibc's, made between its
 * writes: then they are made again in glibc's order. Without a nextsize ring, the writes that
 * come before a check are the list writes of the prev neighbour q (the bk word of q's fd, the fd
 * word of q's bk: words that held q, as their check read), then those of the next neighbour n
 * (words that held n). The words read after them: q's size word and fd_nextsize (0 where read),
 * the top, the next chunk's size word (only its PREV_INUSE bit, clear in q as in any link), n's
 * size word, footer, fd and bk (q only where the neighbours are listed side by side, and the
 * writes then leave n linked both ways, as the check found it), the words that link back to n
 * (they hold n), and n's size word and fd_nextsize again after its own writes. So a write falls
 * on a word read after it, with another value, only where a size is the address q or n, which no
 * sound heap has. Left to the check in glibc's order: those, and a neighbour with a ring (glibc
 * checks the ring after the list writes: where a ring pointer aliases a list word, the check now
 * passes, and glibc aborts). No write falls among the arena's words before its bins (fastbins,
 * top): every link is a bin header or a chunk inside a heap's chunks. */
RT_ARENA_INLINE bool
rt_arena_in_order_too(const struct rt_arena_view *v, uintptr_t q, size_t prevsize, bool q_ring,
                      uintptr_t n, size_t nsize, bool n_ring, bool next_free)
{
	/* A size bounded inside a heap that starts above its length is no address in it. */
	bool sizes = !v->sizes_below &&
	             ((prevsize && (prevsize == q || nsize == q)) || (next_free && nsize == n));
	return (prevsize && q_ring) || (next_free && n_ring) || sizes;
}

/* The checks of both free neighbours again, in glibc's order on the writes pending on w (the next
 * neighbour looked at only after the prev one's unlink); *next_free as glibc finds it then. q:
 * the prev neighbour, where prevsize is not 0; n: the next chunk, 0 where it is the top. */
__attribute__((noinline)) static bool
rt_arena_check_in_order(const struct rt_arena_env *env, struct rt_arena_view *v,
                        struct rt_arena_pending *w, uintptr_t q, size_t prevsize, uintptr_t n,
                        size_t nsize, bool *next_free)
{
	bool ring = false;
	if (prevsize && !rt_arena_unlinkable(env, v, w, q, prevsize, &ring))
		return false;
	if (n) {
		*next_free =
		    !(rt_arena_read(env, w, n + nsize + RT_ARENA_CHUNK_SIZE) & RT_ARENA_PREV_INUSE);
		/* unlink_chunk's size against footer, at the size glibc read before. */
		if (*next_free &&
		    (nsize < RT_ARENA_MINSIZE || rt_arena_read(env, w, n + nsize) != nsize ||
		     !rt_arena_unlinkable(env, v, w, n, nsize, &ring)))
			return false;
	}
	return true;
}

enum rt_arena_took { RT_ARENA_TOOK, RT_ARENA_EMPTY, RT_ARENA_RACED, RT_ARENA_BAD };

/* The lines of a free chunk's list neighbours (q inside a heap, its links not yet checked):
 * those of both free neighbours of a fastbin chunk are asked for before either is checked, so
 * that their misses overlap. */
static inline void
rt_arena_prefetch_links(const struct rt_arena_env *env, uintptr_t q)
{
	__builtin_prefetch(
	    (const void *)(rt_arena_load(env, q + RT_ARENA_CHUNK_FD) + RT_ARENA_CHUNK_BK));
	__builtin_prefetch(
	    (const void *)(rt_arena_load(env, q + RT_ARENA_CHUNK_BK) + RT_ARENA_CHUNK_FD));
}

/* The fastbin chain below the head changes only under the lock: the chunks to come are known.
 * A chunk's consolidation is a chain of cache misses (its header, the next chunk's, the free
 * neighbours' links), and the release's checks between them keep the processor from reaching
 * the next chunk's loads on its own: malloc_consolidate, with no checks between, overlaps them
 * and took less than half the time. So, while one chunk is consolidated, the lines that the
 * next three will need are asked for, each a stage further along: for the third one after it
 * its header and the next chunk's (fastbin chunks of one bin share a size), for the second its
 * free neighbours' headers, for the next their links' targets, each from lines asked for a
 * chunk earlier. Their words are read, and checked, when their turn comes; the words read here
 * lie inside a heap (checked first, a size read from the heap with rt_arena_inside_chunk, as
 * a corrupted heap can hold any word) and decide nothing but what is prefetched, and
 * prefetches never fault. (One stage, as at first: 1.13 times malloc_trim's CPU time on stall's
 * heap of the parameters, 1 GiB; three: 5 to 12 % less.) */
static inline void
rt_arena_prefetch_fast(const struct rt_arena_env *env, struct rt_arena_view *v, uintptr_t next,
                       size_t size)
{
	if (!next || !rt_arena_inside_chunk(v, next, size))
		return;
	uint64_t head = rt_arena_load(env, next + RT_ARENA_CHUNK_SIZE);
	if (!(head & RT_ARENA_PREV_INUSE)) {
		uintptr_t q = next - rt_arena_load(env, next);
		if (q % RT_ARENA_ALIGN == 0 && rt_arena_inside(v, q, RT_ARENA_CHUNK_HEADER))
			rt_arena_prefetch_links(env, q);
	}
	uintptr_t nc = next + size;
	size_t ncsize = rt_arena_load(env, nc + RT_ARENA_CHUNK_SIZE) & ~(uint64_t)7;
	if (nc != v->top && ncsize >= RT_ARENA_MINSIZE && ncsize % RT_ARENA_ALIGN == 0 &&
	    rt_arena_inside_chunk(v, nc, ncsize) &&
	    !(rt_arena_load(env, nc + ncsize + RT_ARENA_CHUNK_SIZE) & RT_ARENA_PREV_INUSE))
		rt_arena_prefetch_links(env, nc);
	uintptr_t after = ((next + RT_ARENA_CHUNK_FD) >> 12) ^
	                  (uintptr_t)rt_arena_load(env, next + RT_ARENA_CHUNK_FD);
	if (!after || after % RT_ARENA_ALIGN || !rt_arena_inside_chunk(v, after, size))
		return;
	if (!(rt_arena_load(env, after + RT_ARENA_CHUNK_SIZE) & RT_ARENA_PREV_INUSE))
		__builtin_prefetch((const void *)(after - rt_arena_load(env, after)));
	uintptr_t anc = after + size;
	size_t ancsize = rt_arena_load(env, anc + RT_ARENA_CHUNK_SIZE) & ~(uint64_t)7;
	__builtin_prefetch((const void *)(anc + ancsize + RT_ARENA_CHUNK_SIZE));
	uintptr_t third = ((after + RT_ARENA_CHUNK_FD) >> 12) ^
	                  (uintptr_t)rt_arena_load(env, after + RT_ARENA_CHUNK_FD);
	__builtin_prefetch((const void *)third);
	__builtin_prefetch((const void *)(third + size + RT_ARENA_CHUNK_SIZE));
}

/* Takes the chunk at the head of fastbin f and consolidates it as glibc's malloc_consolidate
 * does with each of its chunks: merged with a free neighbour on either side (taken out of its
 * bin), then put at the front of the unsorted bin, or into the top when it borders it. Every
 * word this reads is checked first, as glibc's own checks would (and more: the neighbours'
 * links both ways, the chunks inside the arena's heaps); only then is the chunk taken off the
 * fastbin, with the compare-and-swap of _int_malloc (free() may have pushed meanwhile: then
 * nothing was written, and the head is read again). The heap is whole again before the hold
 * can end, so that a fork, which waits for the lock, finds it whole. */
static enum rt_arena_took
rt_arena_consolidate_head(struct rt_arena_run *run, int f, const char **why)
{
	const struct rt_arena_env *env = run->env;
	struct rt_arena_view *v = run->view;
	uintptr_t head = v->arena + RT_ARENA_FASTBINS + (uintptr_t)f * 8;
	uintptr_t p = rt_arena_load_shared(env, head);
	if (!p)
		return RT_ARENA_EMPTY;
	*why = rt_arena_bad_fast_chunk;
	if (p % RT_ARENA_ALIGN || !rt_arena_inside(v, p, RT_ARENA_MINSIZE))
		return RT_ARENA_BAD;
	uint64_t phead = rt_arena_load(env, p + RT_ARENA_CHUNK_SIZE);
	size_t size = phead & ~(uint64_t)7;
	/* Compared whole: the size shifted and cast to int let 64 GiB more through. */
	if (size != (size_t)(f + 2) * 16 || !rt_arena_inside_chunk(v, p, size))
		return RT_ARENA_BAD;
	uintptr_t next =
	    ((p + RT_ARENA_CHUNK_FD) >> 12) ^ (uintptr_t)rt_arena_load(env, p + RT_ARENA_CHUNK_FD);
	if (next % RT_ARENA_ALIGN || (next && !rt_arena_inside(v, next, RT_ARENA_MINSIZE)))
		return RT_ARENA_BAD;
	rt_arena_prefetch_fast(env, v, next, size);
	/* A fastbin chunk counts as in use: the next chunk's PREV_INUSE stays set. The next chunk
	 * may be the first of the two 16-byte fenceposts that end a thread arena's older heap (or
	 * the main arena's memory before a foreign sbrk); those count as in use. */
	uintptr_t nextchunk = p + size;
	uint64_t nhead = rt_arena_load(env, nextchunk + RT_ARENA_CHUNK_SIZE);
	size_t nextsize = nhead & ~(uint64_t)7;
	if (!(nhead & RT_ARENA_PREV_INUSE) || nextsize < RT_ARENA_FENCEPOST ||
	    nextsize % RT_ARENA_ALIGN)
		return RT_ARENA_BAD;
	size_t prevsize = 0;
	if (!(phead & RT_ARENA_PREV_INUSE)) {
		prevsize = rt_arena_load(env, p + RT_ARENA_CHUNK_PREV_SIZE);
		/* Its footer is p's own header and prev_size. */
		if (prevsize < RT_ARENA_MINSIZE || prevsize % RT_ARENA_ALIGN || prevsize > p ||
		    !rt_arena_inside_chunk(v, p - prevsize, prevsize))
			return RT_ARENA_BAD;
		rt_arena_prefetch_links(env, p - prevsize);
	}
	bool into_top = nextchunk == v->top, next_free = false;
	if (!into_top) {
		if (!rt_arena_inside_chunk(v, nextchunk, nextsize))
			return RT_ARENA_BAD;
		next_free = !(rt_arena_load(env, nextchunk + nextsize + RT_ARENA_CHUNK_SIZE) &
		              RT_ARENA_PREV_INUSE);
		if (next_free && (nextsize < RT_ARENA_MINSIZE ||
		                  rt_arena_load(env, nextchunk + nextsize) != nextsize))
			return RT_ARENA_BAD;
		if (next_free)
			rt_arena_prefetch_links(env, nextchunk);
	}
	uintptr_t q = p - prevsize;
	bool q_ring = false, n_ring = false;
	if (prevsize && !rt_arena_unlinkable(env, v, NULL, q, prevsize, &q_ring))
		return RT_ARENA_BAD;
	if (next_free && !rt_arena_unlinkable(env, v, NULL, nextchunk, nextsize, &n_ring))
		return RT_ARENA_BAD;
	struct rt_arena_pending w;
	w.n = 0;
	bool in_order =
	    rt_arena_in_order_too(v, q, prevsize, q_ring, nextchunk, nextsize, n_ring, next_free);
	if (in_order && !rt_arena_check_in_order(env, v, &w, q, prevsize, into_top ? 0 : nextchunk,
	                                         nextsize, &next_free))
		return RT_ARENA_BAD;
	*why = NULL;
	if (!rt_arena_cas(env, head, p, next))
		return RT_ARENA_RACED;

	if (in_order) {
		for (unsigned i = 0; i < w.n; i++)
			rt_arena_store(env, w.addr[i], w.value[i]);
	} else {
		if (prevsize)
			rt_arena_unlink(env, q);
		if (next_free)
			rt_arena_unlink(env, nextchunk);
	}
	p = q;
	size += prevsize;
	if (into_top) {
		size += nextsize;
		rt_arena_store(env, p + RT_ARENA_CHUNK_SIZE, size | RT_ARENA_PREV_INUSE);
		rt_arena_store(env, v->arena + RT_ARENA_TOP, p);
		v->top = p;
		v->top_size = size;
		return RT_ARENA_TOOK;
	}
	if (next_free)
		size += nextsize;
	else
		rt_arena_store(env, nextchunk + RT_ARENA_CHUNK_SIZE,
		               rt_arena_load(env, nextchunk + RT_ARENA_CHUNK_SIZE) &
		                   ~(uint64_t)RT_ARENA_PREV_INUSE);
	uintptr_t unsorted = rt_arena_bin(v->arena, 1);
	uintptr_t first = rt_arena_load(env, unsorted + RT_ARENA_CHUNK_FD);
	rt_arena_store(env, unsorted + RT_ARENA_CHUNK_FD, p);
	rt_arena_store(env, first + RT_ARENA_CHUNK_BK, p);
	if (size >= RT_ARENA_MIN_LARGE) {
		rt_arena_store(env, p + RT_ARENA_CHUNK_FD_NEXTSIZE, 0);
		rt_arena_store(env, p + RT_ARENA_CHUNK_BK_NEXTSIZE, 0);
	}
	rt_arena_store(env, p + RT_ARENA_CHUNK_SIZE, size | RT_ARENA_PREV_INUSE);
	rt_arena_store(env, p + RT_ARENA_CHUNK_BK, unsorted);
	rt_arena_store(env, p + RT_ARENA_CHUNK_FD, first);
	rt_arena_store(env, p + size + RT_ARENA_CHUNK_PREV_SIZE, size);
	return RT_ARENA_TOOK;
}

/* Every fastbin of the locked arena, a chunk at a time, in bounded holds: what malloc_trim's
 * malloc_consolidate does in one. Pages that free fastbin chunks pin between binned free chunks
 * come free this way (a scattered heap of 32-2,048-byte blocks keeps about 30 % more RSS
 * without it). Bounded too when free() keeps pushing: at most as many chunks as the heaps
 * could hold. */
static bool
rt_arena_consolidate(struct rt_arena_run *run, bool *skip)
{
	uint64_t taken = 0, most = rt_arena_max_chunks(run->view);
	for (int f = 0; f < RT_ARENA_NFASTBINS;) {
		if (rt_arena_hold_over(run) && !rt_arena_rehold(run, skip))
			return false;
		const char *why = NULL;
		switch (rt_arena_consolidate_head(run, f, &why)) {
		case RT_ARENA_BAD:
			return rt_arena_abort(run, why);
		case RT_ARENA_EMPTY:
			f++;
			continue;
		case RT_ARENA_RACED:
			continue;
		case RT_ARENA_TOOK:
			break;
		}
		run->res->fast_chunks++;
		rt_arena_chunk_done(run);
		if (++taken > most)
			return true;
	}
	return true;
}

static bool
rt_arena_release_one(struct rt_arena_run *run, uintptr_t arena, bool main_arena, size_t keep)
{
	const struct rt_arena_env *env = run->env;
	struct rt_arena_view *v = run->view;
	v->arena = arena;
	rt_arena_first_hold(run);
	const char *why = NULL;
	enum rt_arena_seen seen = rt_arena_see(env, arena, main_arena, v, &why);
	if (seen != RT_ARENA_SEEN_OK) {
		rt_arena_end_hold(run, arena);
		if (seen == RT_ARENA_SEEN_SKIP) {
			run->res->skipped++;
			return true;
		}
		return rt_arena_fail(run, why);
	}
	bool skip = false;
	if ((env->consolidate && !rt_arena_consolidate(run, &skip)) ||
	    !rt_arena_release_top(run, keep, &skip))
		return skip;
	int psindex = rt_arena_bin_index(env->page);
	for (int i = 1; i < RT_ARENA_NBINS; i++)
		if ((i == 1 || i >= psindex) && !rt_arena_release_bin(run, i, &skip))
			return skip;
	rt_arena_end_hold(run, arena);
	return true;
}

/* The fastbins, within the current hold: only the lock holder takes chunks out of them
 * (_int_malloc, malloc_consolidate), while free() pushes onto their heads without it, so a walk
 * from a head under the lock meets only chunks that stay. Each link is stored as
 * (its own address >> 12) ^ next (safe-linking). A walk may not outlast its hold: a fastbin
 * longer than the hold's chunk budget (all fastbins together) counts as more than `most`. */
static bool
rt_arena_count_fastbins(struct rt_arena_run *run)
{
	const struct rt_arena_env *env = run->env;
	struct rt_arena_view *v = run->view;
	unsigned walked = 0;
	for (int f = 0; f < RT_ARENA_NFASTBINS; f++) {
		uintptr_t p =
		    rt_arena_load_shared(env, v->arena + RT_ARENA_FASTBINS + (uintptr_t)f * 8);
		while (p) {
			if (p % RT_ARENA_ALIGN || !rt_arena_inside(v, p, RT_ARENA_MINSIZE))
				return rt_arena_abort(run, rt_arena_bad_fast_place);
			run->res->chunks++;
			rt_arena_chunk_done(run);
			if (run->res->chunks > run->most)
				return true;
			if (++walked > env->budget.hold_chunks) {
				run->res->chunks = run->most + 1;
				return true;
			}
			p = ((p + RT_ARENA_CHUNK_FD) >> 12) ^
			    (uintptr_t)rt_arena_load(env, p + RT_ARENA_CHUNK_FD);
		}
	}
	return true;
}

static bool
rt_arena_count_one(struct rt_arena_run *run, uintptr_t arena, bool main_arena)
{
	struct rt_arena_view *v = run->view;
	v->arena = arena;
	rt_arena_first_hold(run);
	const char *why = NULL;
	enum rt_arena_seen seen = rt_arena_see(run->env, arena, main_arena, v, &why);
	if (seen != RT_ARENA_SEEN_OK) {
		rt_arena_end_hold(run, arena);
		if (seen == RT_ARENA_SEEN_SKIP) {
			/* Left out, its chunks are unknown: mallinfo2 would walk them all. */
			run->res->skipped++;
			run->res->chunks = run->most + 1;
			return true;
		}
		return rt_arena_fail(run, why);
	}
	bool skip = false;
	if (!rt_arena_count_fastbins(run))
		return false;
	for (int i = 1; i < RT_ARENA_NBINS && run->res->chunks <= run->most; i++)
		if (!rt_arena_release_bin(run, i, &skip)) {
			if (skip)
				run->res->chunks = run->most + 1;
			return skip;
		}
	rt_arena_end_hold(run, arena);
	return true;
}

/* The arena after `arena` in the ring: the main arena, or a thread heap's arena. */
static const char *
rt_arena_next(const struct rt_arena_env *env, uintptr_t arena, uintptr_t main_arena,
              uintptr_t *next)
{
	const struct rt_arena_ops *ops = env->ops;
	uint64_t n, back;
	if (!ops->peek(ops->ctx, arena + RT_ARENA_NEXT, &n, 1))
		return rt_arena_unread_next;
	*next = (uintptr_t)n;
	if (*next == main_arena)
		return NULL;
	uintptr_t heap = *next - RT_ARENA_HEAP_INFO_SIZE;
	if (*next % RT_ARENA_ALIGN || heap % env->heap_max ||
	    !ops->peek(ops->ctx, heap + RT_ARENA_HEAP_AR_PTR, &back, 1) || back != *next)
		return rt_arena_sound_ring;
	return NULL;
}

const char *
rt_arena_check_ring(const struct rt_arena_env *env, uintptr_t main_arena, unsigned *count)
{
	uintptr_t a = main_arena;
	*count = 0;
	do {
		if (++*count > env->budget.max_arenas)
			return rt_arena_unread_ring;
		const char *why = rt_arena_next(env, a, main_arena, &a);
		if (why)
			return why;
	} while (a != main_arena);
	return NULL;
}

const char *
rt_arena_dry_run(const struct rt_arena_env *env, uintptr_t arena, bool main_arena,
                 struct rt_arena_view *view)
{
	const struct rt_arena_ops *ops = env->ops;
	ops->lock(ops->ctx, arena + RT_ARENA_MUTEX);
	const char *why = NULL;
	enum rt_arena_seen seen = rt_arena_see(env, arena, main_arena, view, &why);
	unsigned budget = env->budget.hold_chunks;
	for (int i = 1; seen == RT_ARENA_SEEN_OK && !why && i < RT_ARENA_NBINS; i++) {
		uintptr_t bin = rt_arena_bin(arena, i);
		size_t size;
		for (uintptr_t p = rt_arena_load(env, bin + RT_ARENA_CHUNK_BK);
		     !rt_arena_bin_of(arena, p) && budget > 0 && !why;
		     p = rt_arena_load(env, p + RT_ARENA_CHUNK_BK)) {
			budget--;
			if (!rt_arena_linked_free(env, view, p, &size))
				why = rt_arena_bad_bin_chunk;
			else if (i >= 2 && rt_arena_bin_index(size) != i)
				why = rt_arena_bad_bin_size;
		}
	}
	ops->unlock(ops->ctx, arena + RT_ARENA_MUTEX);
	return why;
}

/* Every arena of the ring, from the main arena, one at a time. */
static int
rt_arena_each(struct rt_arena_run *run, uintptr_t main_arena, size_t keep)
{
	const struct rt_arena_env *env = run->env;
	struct rt_arena_result *res = run->res;
	uintptr_t a = main_arena;
	do {
		if (++res->arenas > env->budget.max_arenas) {
			res->failure = rt_arena_unread_ring;
			return -1;
		}
		if (run->counting ? !rt_arena_count_one(run, a, a == main_arena)
		                  : !rt_arena_release_one(run, a, a == main_arena, keep))
			return -1;
		if (run->counting && res->chunks > run->most)
			return 0;
		const char *why = rt_arena_next(env, a, main_arena, &a);
		if (why) {
			res->failure = why;
			return -1;
		}
	} while (a != main_arena);
	return 0;
}

int
rt_arena_release(const struct rt_arena_env *env, uintptr_t main_arena, size_t keep,
                 struct rt_arena_view *view, struct rt_arena_result *res)
{
	memset(res, 0, sizeof(*res));
	struct rt_arena_run run = {.env = env, .view = view, .res = res};
	return rt_arena_each(&run, main_arena, keep);
}

int
rt_arena_count(const struct rt_arena_env *env, uintptr_t main_arena, uint64_t most,
               struct rt_arena_view *view, struct rt_arena_result *res)
{
	memset(res, 0, sizeof(*res));
	struct rt_arena_run run = {
	    .env = env, .view = view, .res = res, .counting = true, .most = most};
	return rt_arena_each(&run, main_arena, 0);
}

bool
rt_arena_damaged(const char *failure, bool validated)
{
	if (failure == rt_arena_sound_unaligned || failure == rt_arena_sound_page ||
	    failure == rt_arena_sound_mapped || failure == rt_arena_sound_ring ||
	    failure == rt_arena_unread_next || failure == rt_arena_unread_top ||
	    failure == rt_arena_unread_heap || failure == rt_arena_unread_ring)
		return false;
	return validated || failure == rt_arena_bad_bin_chunk || failure == rt_arena_bad_bin_size ||
	       failure == rt_arena_bad_bin_list || failure == rt_arena_bad_fast_chunk ||
	       failure == rt_arena_bad_fast_place;
}
