/* rt_arena: glibc's malloc arenas (glibc 2.35 to 2.41, x86_64) as data, and the rules for giving
 * back what malloc_trim leaves in them; why it is done this way is at the top of rt_arena.c. */
#ifndef RT_ARENA_H
#define RT_ARENA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Byte offsets in glibc 2.35-2.41 for LP64, as `ptype /o` prints them with libc6-dbg. */
enum {
	/* struct malloc_state */
	RT_ARENA_MUTEX = 0, /* int: 0 free, 1 locked, 2 locked with waiters */
	RT_ARENA_FLAGS = 4, /* int: NONCONTIGUOUS_BIT */
	RT_ARENA_HAVE_FASTCHUNKS = 8,
	RT_ARENA_FASTBINS = 16, /* fastbinsY[10]: heads, raw; links mangled (safe-linking, 2.32) */
	RT_ARENA_NFASTBINS = 10,
	RT_ARENA_TOP = 96,
	RT_ARENA_BINS = 112, /* bins[254]: fd, bk of bins 1..127 */
	RT_ARENA_BINMAP = 2144,
	RT_ARENA_NEXT = 2160,
	RT_ARENA_ATTACHED = 2176,
	RT_ARENA_SYSTEM_MEM = 2184,
	RT_ARENA_MAX_SYSTEM_MEM = 2192,
	RT_ARENA_STATE_SIZE = 2200,
	RT_ARENA_NBINS = 128,
	/* heap_info, at the start of every thread heap (aligned to RT_ARENA_HEAP_MAX) */
	RT_ARENA_HEAP_AR_PTR = 0,
	RT_ARENA_HEAP_PREV = 8,
	RT_ARENA_HEAP_SIZE = 16,
	RT_ARENA_HEAP_MPROTECT = 24,
	RT_ARENA_HEAP_PAGESIZE = 32,
	RT_ARENA_HEAP_INFO_SIZE = 48,
	/* struct malloc_chunk */
	RT_ARENA_CHUNK_PREV_SIZE = 0,
	RT_ARENA_CHUNK_SIZE = 8,
	RT_ARENA_CHUNK_FD = 16,
	RT_ARENA_CHUNK_BK = 24,
	RT_ARENA_CHUNK_HEADER = 48, /* sizeof (struct malloc_chunk): what a free chunk keeps */
	RT_ARENA_MINSIZE = 32,
	RT_ARENA_ALIGN = 16,
	RT_ARENA_PREV_INUSE = 1,
	RT_ARENA_IS_MMAPPED = 2,
	RT_ARENA_NON_MAIN = 4,
	RT_ARENA_NONCONTIGUOUS = 2,
};

/* HEAP_MAX_SIZE: 2 * DEFAULT_MMAP_THRESHOLD_MAX on 64-bit (without glibc.malloc.hugetlb=2). */
#define RT_ARENA_HEAP_MAX ((uintptr_t)64 << 20)

/* Whether the running glibc's version string ("2.36") is one whose malloc this module was
 * checked against. */
bool rt_arena_version_supported(const char *version);

/* Whether the running glibc's malloc_consolidate is the one the release follows to empty the
 * fastbins (read in 2.36); on the others the release leaves fastbins alone. */
bool rt_arena_consolidation_checked(const char *version);

/* The address of bin i's header (bin_at): its fd and bk overlay bins[2i-2] and bins[2i-1]. */
uintptr_t rt_arena_bin_at(uintptr_t arena, int i);
/* glibc's bin_index for a chunk size on 64-bit. */
int rt_arena_bin_index(size_t size);

/* The page-aligned part of a free chunk (or of the top chunk) that can be given back: after its
 * first 48 bytes and `keep` more, up to its end. Empty (start == end) when no whole page fits. */
struct rt_arena_range {
	uintptr_t start;
	uintptr_t end;
};
struct rt_arena_range rt_arena_free_range(uintptr_t chunk, size_t size, size_t keep, size_t page);

/* How many positions of a snapshot of words look like a main arena: every bin either empty
 * (pointing at itself) or holding two plausible chunk pointers, at least min_empty empty, and a
 * mutex of 0, 1 or 2. `words` was copied from address `base`; the first candidate's address goes
 * to *found. */
size_t rt_arena_find_main(const uint64_t *words, size_t nwords, uintptr_t base, size_t min_empty,
                          uintptr_t *found);

/* Checks a snapshot of one struct malloc_state (RT_ARENA_STATE_SIZE bytes, copied from `arena`
 * while its mutex was held): NULL when it is what glibc's invariants say, else the reason. */
const char *rt_arena_check_state(const uint64_t *words, uintptr_t arena, bool main_arena);

/* Checks a thread heap's heap_info (its first 6 words, read at `heap`) for `arena`, with the
 * system's page size and HEAP_MAX_SIZE. */
const char *rt_arena_check_heap(const uint64_t *words, uintptr_t heap, uintptr_t arena, size_t page,
                                uintptr_t heap_max);

/* What the shim provides: reads, glibc's lock, the release itself and a clock. */
struct rt_arena_ops {
	void *ctx;
	/* load, store and cas are accesses of the word at addr itself (the shim's): the release
	 * then makes them inline, not through the pointers, which may be NULL; a chunk's words
	 * plainly, under the lock as glibc reads and writes them, a fastbin's head with acquire
	 * ordering and its compare-and-swap as below. A call through a pointer for each of the
	 * twenty words that one fastbin chunk's consolidation reads, and the compiler reading the
	 * release's own state again after each, made it 10 times malloc_consolidate's
	 * instructions. The unit tests' ops check each access instead. */
	bool direct;
	/* One aligned word that glibc's invariants say is mapped (read with acquire ordering). */
	uint64_t (*load)(void *ctx, uintptr_t addr);
	/* Aligned words that may not be mapped: false instead of a fault. */
	bool (*peek)(void *ctx, uintptr_t addr, uint64_t *out, size_t nwords);
	/* As peek, nwords at each of n addresses (to out, one after another), in as few calls as
	 * it can: false when any of them is not mapped. NULL: peek each. */
	bool (*peek_each)(void *ctx, const uintptr_t *addrs, size_t n, size_t nwords,
	                  uint64_t *out);
	/* The only writes to glibc's memory besides the mutex, both with the arena's lock held:
	 * a word of a chunk or of the arena (release ordering), and the compare-and-swap that
	 * takes a chunk off a fastbin's head as _int_malloc does (free() pushes without the lock).
	 */
	void (*store)(void *ctx, uintptr_t addr, uint64_t value);
	bool (*cas)(void *ctx, uintptr_t addr, uint64_t expected, uint64_t desired);
	/* The arena's mutex, taken and given back as glibc's __libc_lock_lock/unlock do; unlock
	 * says whether it woke a thread that waited. */
	void (*lock)(void *ctx, uintptr_t mutex);
	bool (*unlock)(void *ctx, uintptr_t mutex);
	/* After an unlock that woke a waiter: sleep until it has had the lock (or a bound), so
	 * that it finds the lock free and the next hold starts on a fresh time slice. A hold that
	 * the scheduler cuts lasts until the worker gets a core again: on a 2-core machine at load
	 * 9, 40 of 500 holds lasted over 1 ms without a sleep there, 0 to 11 with it. */
	void (*let_waiter_in)(void *ctx, uintptr_t mutex);
	/* Before a lock that follows a hold the worker ended itself after run_ns: give the core to
	 * whoever waits for it (sched_yield), so that the next hold starts on a fresh time slice
	 * and no preemption lands in it. NULL: nothing. */
	void (*yield)(void *ctx);
	/* Gives back the pages of [start, end): page aligned, inside one free chunk. */
	void (*release)(void *ctx, uintptr_t start, uintptr_t end);
	int64_t (*now_ns)(void *ctx);
};

/* A lock hold's budget, and how much one release call gives back. A hold ends once a thread
 * waits for the lock and the hold is waited_hold_ns old, or 1/waited_share of the time the
 * release has held the arena's lock so far if longer, but at most waited_most_ns; a spent budget
 * is renewed while nobody waits (res->renewed). */
struct rt_arena_budget {
	int64_t hold_ns;        /* a budget lasts this long... */
	int64_t waited_hold_ns; /* a hold that a thread waits for ends once this old (0: at once) */
	unsigned waited_share;  /* or a share of the time held so far (0: the floor alone) */
	int64_t waited_most_ns; /* the longest a hold that a thread waits for may grow */
	unsigned hold_chunks;   /* ...or this many chunks looked at (and bounds a fastbin count) */
	int64_t run_ns;     /* after renewals this long, the lock is dropped and the core yielded */
	size_t piece_bytes; /* the most one release call covers */
	unsigned restarts;  /* a bin that lost its place is walked again at most this often */
	unsigned max_arenas; /* the ring is followed this far at most */
};

/* The defaults that make one hold cost about a tenth of a millisecond on a current x86 core. */
struct rt_arena_budget rt_arena_default_budget(void);

struct rt_arena_env {
	const struct rt_arena_ops *ops;
	struct rt_arena_budget budget;
	size_t page;
	uintptr_t heap_max;
	bool consolidate; /* empty the fastbins first (rt_arena_consolidation_checked) */
};

/* Up to this many heaps of one arena are known at once (64 GiB of 64 MiB heaps); an arena with
 * more is skipped, not released. */
#define RT_ARENA_MAX_HEAPS 1024

/* A bin's walk that starts over knows again this many of the chunks it gave back whole before
 * (the last one given back at each slot of a table by address). */
#define RT_ARENA_GIVEN 256

/* A chunk [start, end) given back whole by the bin walk numbered `walk`. */
struct rt_arena_given {
	uintptr_t start;
	uintptr_t end;
	uint64_t walk;
};

/* The memory of the arena under the lock: its heaps (one range for the main arena; a thread heap's
 * chunks, after its heap_info and the arena itself) and top; and what the bin walks gave back. */
struct rt_arena_view {
	uintptr_t arena;
	bool main_arena;
	uintptr_t top;
	size_t top_size;
	uintptr_t top_heap; /* the heap holding top; 0 for the main arena */
	size_t nheaps;
	struct rt_arena_range near; /* the heap that held the last address looked up */
	bool sizes_below; /* every heap starts above its length: no chunk's size is an address */
	struct rt_arena_range heaps[RT_ARENA_MAX_HEAPS]; /* sorted by start */
	uintptr_t heaps_of;                  /* the thread arena whose heaps these are, once read */
	uintptr_t again[RT_ARENA_MAX_HEAPS]; /* its heaps as last read, read again at a rehold */
	uint64_t again_info[RT_ARENA_MAX_HEAPS][RT_ARENA_HEAP_INFO_SIZE / 8];
	uint64_t walks; /* bin walks begun, the current one's number */
	struct rt_arena_given given[RT_ARENA_GIVEN];
};

struct rt_arena_result {
	uint64_t top_bytes;   /* given back from top chunks (whole pages, resident or not) */
	uint64_t bin_bytes;   /* given back from binned free chunks */
	uint64_t fast_chunks; /* fastbin chunks consolidated (merged and binned, or into top) */
	uint64_t chunks;      /* chunks looked at (counted, by rt_arena_count) */
	unsigned arenas;      /* arenas visited */
	unsigned skipped;     /* arenas skipped (too many heaps, not yet used) */
	unsigned holds;       /* lock holds, all arenas together (a renewed budget counts) */
	unsigned renewed;     /* budgets renewed without dropping the lock: nobody waited */
	unsigned contended;   /* holds that ended with a waiter */
	unsigned lost_places; /* bin walks that started over, or ended the bin early */
	unsigned moved_on;    /* chunks lost between holds, the walk went on from the next one */
	unsigned rests;       /* of those, split or merged ones whose rest was given back */
	int64_t longest_hold_ns;
	const char *failure; /* why the release stopped: the layout is not what it expects */
};

/* Whether addr lies in one of the view's heaps. */
bool rt_arena_view_holds(const struct rt_arena_view *view, uintptr_t addr);

/* Checks, without taking any lock, that the ring of arenas from `main_arena` closes through it
 * and that every other member is the arena of a thread heap that points back at it. peek only. */
const char *rt_arena_check_ring(const struct rt_arena_env *env, uintptr_t main_arena,
                                unsigned *count);

/* Locks one arena and checks it as the release would, without giving anything back. */
const char *rt_arena_dry_run(const struct rt_arena_env *env, uintptr_t arena, bool main_arena,
                             struct rt_arena_view *view);

/* Consolidates the fastbins of every arena as malloc_consolidate does, a chunk at a time, then
 * gives back the free pages of every arena, one at a time, in bounded lock holds; the top of
 * each arena keeps `keep` bytes. Returns 0, or -1 with res->failure set when something did not
 * match the layout (nothing more is released then). `view` is scratch space, zeroed before its
 * first use (as a static one is) and kept between calls. */
int rt_arena_release(const struct rt_arena_env *env, uintptr_t main_arena, size_t keep,
                     struct rt_arena_view *view, struct rt_arena_result *res);

/* Counts the free chunks that mallinfo2 would walk (every bin and fastbin of every arena), in
 * the release's bounded holds, giving nothing back: what a mallinfo2 call would cost, without
 * paying it. Stops once res->chunks passes `most`, and counts a fastbin longer than a hold may
 * walk (fastbin links cannot be found again after the lock was dropped) as passing it. Returns
 * 0, or -1 with res->failure set, as rt_arena_release. */
int rt_arena_count(const struct rt_arena_env *env, uintptr_t main_arena, uint64_t most,
                   struct rt_arena_view *view, struct rt_arena_result *res);

/* Whether a failure of the functions above says that the program's heap is damaged, so that
 * glibc's own walks of it (malloc_trim, mallinfo2) may abort the process: a chunk that breaks
 * glibc's invariants does (an arena's state was checked before its chunks, and a chunk's layout
 * is the same in every glibc); once every arena of this process was checked (`validated`), any
 * failure does, but for the states of a sound heap that the release leaves to malloc_trim (a
 * main arena that glibc went on with mmap, huge-page thread heaps) and words that could not be
 * read (the reads may have stopped working; the heap is not known bad). Before that, a failure may
 * only mean that glibc is laid out otherwise. */
bool rt_arena_damaged(const char *failure, bool validated);

#endif
