/* The arena rules on fake arenas: heaps laid out in memory of the test exactly as glibc 2.36 lays
 * them out (heap_info, malloc_state, chunks, top), with a heap size of 1 MiB instead of 64 MiB.
 * The fake operations hold the lock in a word of the fake arena, check every release against the
 * heap as it is at that moment, and can change the heap between two holds as another thread
 * would. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "rt_arena.h"

#define T_HEAP_MAX ((uintptr_t)1 << 20)
#define T_PAGE 4096
#define T_SBRK (1024 * 1024)
#define T_MAX_RANGES 4096

struct t_world;
typedef void (*t_between)(struct t_world *w, unsigned hold);

struct t_world {
	unsigned char *heaps; /* two heaps of T_HEAP_MAX, aligned to it */
	unsigned char *sbrk;  /* the main arena's memory */
	size_t sbrk_len;
	bool sbrk_mapped; /* at a fixed address (t_low_main_world), not allocated */
	bool second_gone; /* the second heap is no longer mapped */
	uint64_t *main_state;
	uintptr_t main, thread;
	uintptr_t main_first, thread_first; /* first chunk of each */
	/* the operations' record */
	unsigned locks, releases, bad_releases;
	unsigned heap_peeks, peek_eachs; /* heap_infos read on their own; reads of several */
	int held;
	int64_t clock, step;
	bool contended;
	bool nobody_asleep; /* the word reads 2, but nobody sleeps on it: an unlock wakes none */
	t_between between;
	struct rt_arena_range ranges[T_MAX_RANGES];
	size_t nranges;
	size_t max_piece;
};

static struct t_world w;

static inline uint64_t *
W(uintptr_t addr)
{
	return (uint64_t *)addr;
}

static size_t
t_chunk_size(uintptr_t c)
{
	return *W(c + 8) & ~(uint64_t)7;
}

static uintptr_t
t_top(uintptr_t arena)
{
	return *W(arena + RT_ARENA_TOP);
}

static bool
t_free(uintptr_t c)
{
	return !(*W(c + t_chunk_size(c) + 8) & RT_ARENA_PREV_INUSE);
}

/* Fresh arena state: empty bins, a top, the ring. */
static void
t_init_arena(uintptr_t a, bool main_arena, uintptr_t next, size_t system)
{
	memset((void *)a, 0, RT_ARENA_STATE_SIZE);
	*(int *)(a + RT_ARENA_FLAGS) = main_arena ? 0 : RT_ARENA_NONCONTIGUOUS;
	for (int i = 1; i < RT_ARENA_NBINS; i++) {
		uintptr_t bin = rt_arena_bin_at(a, i);
		*W(bin + 16) = *W(bin + 24) = bin;
	}
	*W(a + RT_ARENA_NEXT) = next;
	*W(a + RT_ARENA_SYSTEM_MEM) = *W(a + RT_ARENA_MAX_SYSTEM_MEM) = system;
}

static void
t_link(uintptr_t a, uintptr_t c, int bin_index)
{
	uintptr_t bin = rt_arena_bin_at(a, bin_index);
	uintptr_t fwd = *W(bin + 16);
	*W(c + 16) = fwd;
	*W(c + 24) = bin;
	*W(fwd + 24) = c;
	*W(bin + 16) = c;
	if (bin_index >= 2)
		*(uint32_t *)(a + RT_ARENA_BINMAP + (size_t)(bin_index / 32) * 4) |=
		    1u << (bin_index % 32);
}

static void
t_unlink(uintptr_t c)
{
	uintptr_t fd = *W(c + 16), bk = *W(c + 24);
	*W(fd + 24) = bk;
	*W(bk + 16) = fd;
}

/* Lays out chunks from `first`: sizes[i] > 0 in use, < 0 free (linked into the unsorted bin
 * when bin == 1, its sized bin when 0); the rest up to `end` is the top. */
static void
t_layout(uintptr_t a, uintptr_t first, uintptr_t end, const long *sizes, size_t n, int bin,
         bool main_arena)
{
	uintptr_t c = first;
	bool prev_free = false;
	uint64_t arena_bit = main_arena ? 0 : RT_ARENA_NON_MAIN;
	for (size_t i = 0; i < n; i++) {
		size_t size = (size_t)labs(sizes[i]);
		*W(c + 8) = size | (prev_free ? 0 : RT_ARENA_PREV_INUSE) | arena_bit;
		prev_free = sizes[i] < 0;
		if (prev_free) {
			*W(c + size) = size; /* the footer */
			t_link(a, c, bin ? bin : rt_arena_bin_index(size));
		}
		memset((void *)(c + 16 + (prev_free ? 32 : 0)), 0xab,
		       size - 16 - (prev_free ? 32 : 0));
		c += size;
	}
	cr_assert(!prev_free, "the chunk before the top is in use");
	*W(a + RT_ARENA_TOP) = c;
	*W(c + 8) = (end - c) | RT_ARENA_PREV_INUSE;
}

/* A thread arena in the first fake heap and a main arena over the fake sbrk memory. */
static void
t_world_init(const long *thread_sizes, size_t nthread, const long *main_sizes, size_t nmain,
             int bin)
{
	free(w.heaps);
	if (w.sbrk_mapped)
		munmap(w.sbrk, w.sbrk_len);
	else
		free(w.sbrk);
	free(w.main_state);
	memset(&w, 0, sizeof(w));
	w.heaps = aligned_alloc(T_HEAP_MAX, 2 * T_HEAP_MAX);
	w.sbrk = aligned_alloc(T_PAGE, T_SBRK);
	w.sbrk_len = T_SBRK;
	/* aligned_alloc wants a multiple of the alignment (C11 7.22.3.1; ASan enforces it). */
	w.main_state = aligned_alloc(64, (RT_ARENA_STATE_SIZE + 64 + 63) / 64 * 64);
	cr_assert(w.heaps && w.sbrk && w.main_state);
	w.main = (uintptr_t)w.main_state;
	uintptr_t h = (uintptr_t)w.heaps;
	w.thread = h + RT_ARENA_HEAP_INFO_SIZE;
	*W(h + RT_ARENA_HEAP_AR_PTR) = w.thread;
	*W(h + RT_ARENA_HEAP_PREV) = 0;
	*W(h + RT_ARENA_HEAP_SIZE) = T_HEAP_MAX / 2;
	*W(h + RT_ARENA_HEAP_MPROTECT) = T_HEAP_MAX / 2;
	*W(h + RT_ARENA_HEAP_PAGESIZE) = T_PAGE;
	t_init_arena(w.main, true, w.thread, T_SBRK);
	t_init_arena(w.thread, false, w.main, T_HEAP_MAX / 2);
	/* As _int_new_arena aligns the first chunk after the arena. */
	w.thread_first = w.thread + RT_ARENA_STATE_SIZE + 8;
	w.main_first = (uintptr_t)w.sbrk;
	t_layout(w.thread, w.thread_first, h + T_HEAP_MAX / 2, thread_sizes, nthread, bin, false);
	t_layout(w.main, w.main_first, w.main_first + T_SBRK, main_sizes, nmain, bin, true);
	w.step = 1000;
	w.max_piece = SIZE_MAX;
}

static bool
t_mapped(uintptr_t addr, size_t len)
{
	uintptr_t h = (uintptr_t)w.heaps, s = (uintptr_t)w.sbrk;
	return (addr >= h && addr + len <= h + (w.second_gone ? 1 : 2) * T_HEAP_MAX) ||
	       (addr >= s && addr + len <= s + w.sbrk_len) ||
	       (addr >= w.main && addr + len <= w.main + RT_ARENA_STATE_SIZE);
}

static uint64_t
t_load(void *ctx, uintptr_t addr)
{
	(void)ctx;
	cr_assert(t_mapped(addr, 8), "load of an unmapped address %#lx", (unsigned long)addr);
	return *W(addr);
}

static bool
t_peek(void *ctx, uintptr_t addr, uint64_t *out, size_t n)
{
	(void)ctx;
	w.heap_peeks += n == RT_ARENA_HEAP_INFO_SIZE / 8;
	if (!t_mapped(addr, n * 8))
		return false;
	memcpy(out, (void *)addr, n * 8);
	return true;
}

static bool
t_peek_each(void *ctx, const uintptr_t *addrs, size_t n, size_t nwords, uint64_t *out)
{
	(void)ctx;
	w.peek_eachs++;
	for (size_t i = 0; i < n; i++) {
		if (!t_mapped(addrs[i], nwords * 8))
			return false;
		memcpy(out + i * nwords, (void *)addrs[i], nwords * 8);
	}
	return true;
}

static void
t_lock(void *ctx, uintptr_t mutex)
{
	(void)ctx;
	if (w.between)
		w.between(&w, w.locks);
	cr_assert_eq(w.held, 0, "a second lock while one is held");
	cr_assert_eq(*(int *)mutex, 0);
	*(int *)mutex = 1;
	w.held = 1;
	w.locks++;
}

static bool
t_unlock(void *ctx, uintptr_t mutex)
{
	(void)ctx;
	cr_assert_eq(w.held, 1);
	int was = *(int *)mutex;
	cr_assert(was == 1 || was == 2);
	*(int *)mutex = 0;
	w.held = 0;
	return (was == 2 && !w.nobody_asleep) || w.contended;
}

static unsigned t_handovers;

/* The worker sleeps there about 70 us. */
static void
t_let_waiter_in(void *ctx, uintptr_t mutex)
{
	(void)ctx;
	cr_assert_eq(*(int *)mutex, 0, "the waiter is let in with the lock given back");
	cr_assert_eq(w.held, 0, "a waiter let in with the lock held");
	t_handovers++;
	w.clock += 70 * 1000;
}

static int64_t
t_now(void *ctx)
{
	(void)ctx;
	return w.clock += w.step;
}

/* A release must cover whole pages inside the free part of one free chunk or of the top,
 * right now, with the lock held. */
static bool
t_release_ok(uintptr_t start, uintptr_t end)
{
	uintptr_t arenas[2] = {w.thread, w.main}, firsts[2] = {w.thread_first, w.main_first};
	if (start % T_PAGE || end % T_PAGE || start >= end || !w.held)
		return false;
	for (int k = 0; k < 2; k++) {
		uintptr_t top = t_top(arenas[k]);
		if (start >= top + RT_ARENA_CHUNK_HEADER && end <= top + t_chunk_size(top))
			return true;
		for (uintptr_t c = firsts[k]; c < top && t_chunk_size(c); c += t_chunk_size(c))
			if (start >= c && start < c + t_chunk_size(c))
				return t_free(c) && start >= c + RT_ARENA_CHUNK_HEADER &&
				       end <= c + t_chunk_size(c);
	}
	return false;
}

static void
t_release(void *ctx, uintptr_t start, uintptr_t end)
{
	(void)ctx;
	w.releases++;
	if (!t_release_ok(start, end))
		w.bad_releases++;
	if (end - start > w.max_piece)
		w.bad_releases++;
	if (w.nranges < T_MAX_RANGES)
		w.ranges[w.nranges++] = (struct rt_arena_range){start, end};
	memset((void *)start, 0, end - start);
}

static const struct rt_arena_ops t_ops = {
    .load = t_load,
    .peek = t_peek,
    .peek_each = t_peek_each,
    .lock = t_lock,
    .unlock = t_unlock,
    .let_waiter_in = t_let_waiter_in,
    .release = t_release,
    .now_ns = t_now,
};

static struct rt_arena_env
t_env(int64_t hold_ns, size_t piece)
{
	struct rt_arena_env env = {
	    .ops = &t_ops,
	    .budget = rt_arena_default_budget(),
	    .page = T_PAGE,
	    .heap_max = T_HEAP_MAX,
	};
	env.budget.hold_ns = hold_ns;
	/* Holds end at the first look that sees a waiter: the protocol between holds at its finest
	 * grain (a_hold_that_a_thread_waits_for_goes_on_until_waited_hold_ns tests the floor). */
	env.budget.waited_hold_ns = 0;
	env.budget.piece_bytes = piece;
	w.max_piece = piece;
	return env;
}

static struct rt_arena_view t_view;

TestSuite(arena, .timeout = 10);

/* Whether every byte of [start, end) was given back by some release. */
static bool
t_released(uintptr_t start, uintptr_t end)
{
	for (uintptr_t p = start; p < end; p += T_PAGE) {
		bool hit = false;
		for (size_t i = 0; i < w.nranges && !hit; i++)
			hit = p >= w.ranges[i].start && p < w.ranges[i].end;
		if (!hit)
			return false;
	}
	return true;
}

static bool
t_touched(uintptr_t start, uintptr_t end)
{
	for (size_t i = 0; i < w.nranges; i++)
		if (w.ranges[i].start < end && w.ranges[i].end > start)
			return true;
	return false;
}

/* The bytes of an in-use chunk after its header still hold the fill. */
static bool
t_intact(uintptr_t c)
{
	for (uintptr_t p = c + 16; p < c + t_chunk_size(c); p++)
		if (*(unsigned char *)p != 0xab)
			return false;
	return true;
}

Test(arena, version_range)
{
	cr_assert(rt_arena_version_supported("2.35"));
	cr_assert(rt_arena_version_supported("2.36"));
	cr_assert(rt_arena_version_supported("2.41"));
	cr_assert_not(rt_arena_version_supported("2.34"));
	cr_assert_not(rt_arena_version_supported("2.42"));
	cr_assert_not(rt_arena_version_supported("3.36"));
	cr_assert_not(rt_arena_version_supported("12.36"));
	cr_assert_not(rt_arena_version_supported("2.3"));
	cr_assert_not(rt_arena_version_supported("2.36x"));
	cr_assert_not(rt_arena_version_supported(""));
	cr_assert_not(rt_arena_version_supported(NULL));
}

Test(arena, bin_index_as_glibc)
{
	cr_assert_eq(rt_arena_bin_index(32), 2);
	cr_assert_eq(rt_arena_bin_index(1008), 63);
	cr_assert_eq(rt_arena_bin_index(1024), 64);
	cr_assert_eq(rt_arena_bin_index(3136), 97);
	cr_assert_eq(rt_arena_bin_index(4096), 99); /* mtrim's psindex with 4 KiB pages */
	cr_assert_eq(rt_arena_bin_index(10752), 112);
	cr_assert_eq(rt_arena_bin_index(40960), 120);
	cr_assert_eq(rt_arena_bin_index(160 * 1024), 124);
	cr_assert_eq(rt_arena_bin_index(768 * 1024), 126);
	cr_assert_eq(rt_arena_bin_index((size_t)1 << 30), 126);
}

Test(arena, bin_header_overlays_the_bins_array)
{
	/* bin 1's fd is bins[0]; its header starts 16 bytes before, over top and
	 * last_remainder, as glibc's bin_at does. */
	cr_assert_eq(rt_arena_bin_at(0x1000, 1), 0x1000 + RT_ARENA_TOP);
	cr_assert_eq(rt_arena_bin_at(0x1000, 127) + 24, 0x1000 + RT_ARENA_BINMAP - 8);
}

Test(arena, free_range_keeps_the_header_page_and_the_tail)
{
	struct rt_arena_range r = rt_arena_free_range(0x10000, 0x3000, 0, T_PAGE);
	cr_assert_eq(r.start, 0x11000);
	cr_assert_eq(r.end, 0x13000);
	/* Header 48 bytes from a page end: that page is kept. */
	r = rt_arena_free_range(0x10fe0, 0x3000, 0, T_PAGE);
	cr_assert_eq(r.start, 0x12000);
	cr_assert_eq(r.end, 0x13000);
	/* mtrim's condition: a chunk of a page and 48 bytes holds no whole page after them. */
	r = rt_arena_free_range(0x10010, T_PAGE + 48, 0, T_PAGE);
	cr_assert_eq(r.start, r.end);
	r = rt_arena_free_range(0x10000, 0x100000, 0x4000, T_PAGE);
	cr_assert_eq(r.start, 0x15000);
	cr_assert_eq(r.end, 0x110000);
	r = rt_arena_free_range(0x10000, 0x3000, 0x3000, T_PAGE);
	cr_assert_eq(r.start, r.end);
	r = rt_arena_free_range(0x10000, 0x3000, SIZE_MAX, T_PAGE);
	cr_assert_eq(r.start, r.end);
	r = rt_arena_free_range(UINTPTR_MAX - 0xfff, 0x3000, 0, T_PAGE);
	cr_assert_eq(r.start, r.end);
}

static const long t_sizes[] = {
    4096, -16384, 8192, -(64 * 1024 + 48), 512, -1040, 4096, -(200 * 1024), 1024,
};
#define T_NSIZES (sizeof(t_sizes) / sizeof(t_sizes[0]))

Test(arena, find_main_in_a_snapshot)
{
	t_world_init(t_sizes, T_NSIZES, t_sizes, T_NSIZES, 1);
	/* A copy of libc's data with the main arena at word 37 of noise. */
	size_t n = 37 + RT_ARENA_STATE_SIZE / 8 + 50;
	uint64_t *data = calloc(n, 8);
	for (size_t i = 0; i < n; i++)
		data[i] = 0x1234567800000000ull + i * 8;
	uintptr_t base = w.main - 37 * 8;
	memcpy(data + 37, w.main_state, RT_ARENA_STATE_SIZE);
	uintptr_t found = 0;
	cr_assert_eq(rt_arena_find_main(data, n, base, 32, &found), 1);
	cr_assert_eq(found, w.main);
	/* Not enough empty bins. */
	cr_assert_eq(rt_arena_find_main(data, n, base, 127, &found), 0);
	/* A bin whose fd points at itself but whose bk does not: no arena. */
	data[37 + (RT_ARENA_BINS + 100 * 16) / 8 + 1] = 0x10;
	cr_assert_eq(rt_arena_find_main(data, n, base, 32, &found), 0);
	free(data);
}

/* The mutex and flags ints share the snapshot's first word (little-endian). */
static void
t_set_int(uint64_t *snap, bool high, uint32_t v)
{
	snap[0] =
	    high ? (snap[0] & 0xffffffffull) | (uint64_t)v << 32 : (snap[0] & ~0xffffffffull) | v;
}

Test(arena, check_state_accepts_glibc_and_rejects_the_rest)
{
	t_world_init(t_sizes, T_NSIZES, t_sizes, T_NSIZES, 0);
	uint64_t snap[RT_ARENA_STATE_SIZE / 8];
	memcpy(snap, (void *)w.thread, sizeof(snap));
	t_set_int(snap, false, 1);
	cr_assert_null(rt_arena_check_state(snap, w.thread, false));
	t_set_int(snap, false, 0);
	cr_assert_not_null(rt_arena_check_state(snap, w.thread, false), "unlocked");
	t_set_int(snap, false, 2);
	cr_assert_null(rt_arena_check_state(snap, w.thread, false));
	t_set_int(snap, true, 3);
	cr_assert_not_null(rt_arena_check_state(snap, w.thread, false), "flags");
	t_set_int(snap, true, 0);
	cr_assert_not_null(rt_arena_check_state(snap, w.thread, false),
	                   "a contiguous thread arena");
	t_set_int(snap, true, RT_ARENA_NONCONTIGUOUS);
	/* A non-empty sized bin missing from the binmap. */
	memset((char *)snap + RT_ARENA_BINMAP, 0, 16);
	cr_assert_not_null(rt_arena_check_state(snap, w.thread, false), "binmap");
	memcpy(snap, (void *)w.thread, sizeof(snap));
	t_set_int(snap, false, 1);
	snap[RT_ARENA_TOP / 8] += 8;
	cr_assert_not_null(rt_arena_check_state(snap, w.thread, false), "top");
	snap[RT_ARENA_TOP / 8] -= 8;
	snap[RT_ARENA_NEXT / 8] = 0;
	const char *why = rt_arena_check_state(snap, w.thread, false);
	cr_assert_not_null(why, "next");
	/* An arena's own state read wrong may be glibc laid out otherwise, until every arena of the
	 * process was checked once. */
	cr_assert_not(rt_arena_damaged(why, false));
	cr_assert(rt_arena_damaged(why, true));
}

Test(arena, check_heap)
{
	uint64_t info[6] = {0x100030, 0, 0x20000, 0x40000, T_PAGE, 0};
	cr_assert_null(rt_arena_check_heap(info, 0x100000, 0x100030, T_PAGE, T_HEAP_MAX));
	cr_assert_not_null(rt_arena_check_heap(info, 0x100000, 0x100040, T_PAGE, T_HEAP_MAX));
	cr_assert_not_null(rt_arena_check_heap(info, 0x180000, 0x100030, T_PAGE, T_HEAP_MAX));
	info[4] = 2 << 20;
	cr_assert_not_null(rt_arena_check_heap(info, 0x100000, 0x100030, T_PAGE, T_HEAP_MAX));
	info[4] = T_PAGE;
	info[2] = 0x50000;
	cr_assert_not_null(rt_arena_check_heap(info, 0x100000, 0x100030, T_PAGE, T_HEAP_MAX));
	info[2] = 0x20000;
	info[1] = 0x100000;
	cr_assert_not_null(rt_arena_check_heap(info, 0x100000, 0x100030, T_PAGE, T_HEAP_MAX));
	info[1] = 0x300000;
	cr_assert_null(rt_arena_check_heap(info, 0x100000, 0x100030, T_PAGE, T_HEAP_MAX));
}

Test(arena, ring_closes_through_the_main_arena)
{
	t_world_init(t_sizes, T_NSIZES, t_sizes, T_NSIZES, 0);
	struct rt_arena_env env = t_env(1000000, 1 << 20);
	unsigned count = 0;
	cr_assert_null(rt_arena_check_ring(&env, w.main, &count));
	cr_assert_eq(count, 2);
	/* A thread arena whose heap does not point back at it. */
	*W((uintptr_t)w.heaps) = w.thread + 16;
	cr_assert_not_null(rt_arena_check_ring(&env, w.main, &count));
	*W((uintptr_t)w.heaps) = w.thread;
	/* A ring that never comes back. */
	*W(w.thread + RT_ARENA_NEXT) = w.thread;
	cr_assert_not_null(rt_arena_check_ring(&env, w.main, &count));
	/* A next pointer into memory that is not mapped. */
	*W(w.thread + RT_ARENA_NEXT) = 0x40;
	cr_assert_not_null(rt_arena_check_ring(&env, w.main, &count));
	/* More arenas than the walk may visit: nothing is known bad of the heap, even once every
	 * arena was checked (nor where a word could not be read: the reads may have stopped
	 * working, a seccomp filter installed later). */
	*W(w.thread + RT_ARENA_NEXT) = w.main;
	env.budget.max_arenas = 1;
	const char *why = rt_arena_check_ring(&env, w.main, &count);
	cr_assert_not_null(why);
	cr_assert_not(rt_arena_damaged(why, true), "%s", why);
}

/* Everything free is given back, nothing in use is touched, headers stay. */
static void
t_check_everything_released(uintptr_t a, uintptr_t first, bool top_too)
{
	uintptr_t top = t_top(a);
	for (uintptr_t c = first; c < top; c += t_chunk_size(c)) {
		struct rt_arena_range r = rt_arena_free_range(c, t_chunk_size(c), 0, T_PAGE);
		if (t_free(c)) {
			cr_assert(t_released(r.start, r.end), "free chunk %#lx kept",
			          (unsigned long)c);
			cr_assert_eq(*W(c + t_chunk_size(c)), t_chunk_size(c), "footer lost");
		} else {
			cr_assert(t_intact(c), "in-use chunk %#lx touched", (unsigned long)c);
		}
	}
	if (top_too) {
		struct rt_arena_range r = rt_arena_free_range(top, t_chunk_size(top), 0, T_PAGE);
		cr_assert(t_released(r.start, r.end), "top kept");
	}
}

Test(arena, releases_tops_and_binned_chunks_of_every_arena)
{
	for (int bin = 0; bin <= 1; bin++) {
		t_world_init(t_sizes, T_NSIZES, t_sizes, T_NSIZES, bin);
		struct rt_arena_env env = t_env(1000000000, 1 << 20);
		struct rt_arena_result res;
		cr_assert_eq(rt_arena_release(&env, w.main, 0, &t_view, &res), 0, "%s",
		             res.failure ? res.failure : "");
		cr_assert_eq(w.bad_releases, 0);
		cr_assert_eq(w.held, 0);
		cr_assert_eq(res.arenas, 2);
		cr_assert_eq(res.holds, 2, "one hold per arena when the budget allows");
		t_check_everything_released(w.thread, w.thread_first, true);
		t_check_everything_released(w.main, w.main_first, true);
		cr_assert_gt(res.top_bytes, T_HEAP_MAX / 4);
		cr_assert_gt(res.bin_bytes, 0);
	}
}

Test(arena, top_keeps_what_it_is_asked_to_keep)
{
	t_world_init(t_sizes, T_NSIZES, t_sizes, T_NSIZES, 0);
	struct rt_arena_env env = t_env(1000000000, 1 << 20);
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(&env, w.main, 64 * 1024, &t_view, &res), 0);
	uintptr_t top = t_top(w.thread);
	cr_assert_not(t_touched(top, top + 64 * 1024 + RT_ARENA_CHUNK_HEADER));
	cr_assert(t_released((top + 64 * 1024 + 48 + T_PAGE - 1) & ~(uintptr_t)(T_PAGE - 1),
	                     top + t_chunk_size(top)));
}

Test(arena, short_holds_in_pieces)
{
	t_world_init(t_sizes, T_NSIZES, t_sizes, T_NSIZES, 0);
	/* Each clock reading advances 1 µs; a hold may last 5 µs; a piece covers 4 pages. */
	struct rt_arena_env env = t_env(5000, 4 * T_PAGE);
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(&env, w.main, 0, &t_view, &res), 0, "%s",
	             res.failure ? res.failure : "");
	cr_assert_eq(w.bad_releases, 0);
	cr_assert_gt(res.holds, 10);
	cr_assert_leq(res.longest_hold_ns, 5000 + 3 * w.step);
	t_check_everything_released(w.thread, w.thread_first, true);
	t_check_everything_released(w.main, w.main_first, true);
}

/* A thread is always waiting: every lock is taken with the word at 2. */
static void
t_lock_contended(void *ctx, uintptr_t mutex)
{
	t_lock(ctx, mutex);
	*(int *)mutex = 2;
}

static bool
t_is_bin(uintptr_t a, uintptr_t q)
{
	return q >= rt_arena_bin_at(a, 1) && q <= rt_arena_bin_at(a, 127) &&
	       (q - rt_arena_bin_at(a, 1)) % 16 == 0;
}

static void
t_take(uintptr_t c)
{
	t_unlink(c);
	*W(c + t_chunk_size(c) + 8) |= RT_ARENA_PREV_INUSE;
	memset((void *)(c + 16), 0xab, t_chunk_size(c) - 16);
}

/* As another thread would: take the free chunk of the thread heap that the walk was on, and the
 * one it would look at next, on either side (unlink them, mark them in use, write into them).
 * Whether it took one. */
static bool
t_take_walked_chunk(struct t_world *tw)
{
	if (!tw->nranges)
		return false;
	uintptr_t at = tw->ranges[tw->nranges - 1].start;
	for (uintptr_t c = tw->thread_first; c < t_top(tw->thread); c += t_chunk_size(c)) {
		if (at < c || at >= c + t_chunk_size(c) || !t_free(c))
			continue;
		uintptr_t next[2] = {*W(c + 16), *W(c + 24)};
		t_take(c);
		for (int side = 0; side < 2; side++)
			if (!t_is_bin(tw->thread, next[side]) && t_free(next[side]))
				t_take(next[side]);
		return true;
	}
	return false;
}

/* Between holds, from the second on. */
static void
t_take_free_chunks(struct t_world *tw, unsigned hold)
{
	if (hold >= 2)
		t_take_walked_chunk(tw);
}

Test(arena, chunks_taken_between_holds_are_left_alone)
{
	t_world_init(t_sizes, T_NSIZES, t_sizes, T_NSIZES, 1);
	struct rt_arena_env env = t_env(3000, 2 * T_PAGE);
	/* A thread waits for the lock at every hold: the release drops it after each step. */
	struct rt_arena_ops ops = t_ops;
	ops.lock = t_lock_contended;
	env.ops = &ops;
	w.between = t_take_free_chunks;
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(&env, w.main, 0, &t_view, &res), 0, "%s",
	             res.failure ? res.failure : "");
	cr_assert_eq(w.bad_releases, 0);
	/* Every chunk taken kept the bytes written into it after it was taken. */
	for (uintptr_t c = w.thread_first; c < t_top(w.thread); c += t_chunk_size(c))
		if (!t_free(c))
			cr_assert(t_intact(c), "chunk %#lx lost bytes", (unsigned long)c);
	cr_assert_gt(res.lost_places, 0, "the test took no chunk the walk was on");
}

/* Between holds, once, as t_take_walked_chunk takes them, once the walk of the thread heap's bins
 * has given back pieces of t_take_after chunks. */
static unsigned t_take_after;
static bool t_took;

static void
t_take_free_chunks_once(struct t_world *tw, unsigned hold)
{
	(void)hold;
	if (t_took)
		return;
	unsigned touched = 0;
	for (uintptr_t c = tw->thread_first; c < t_top(tw->thread); c += t_chunk_size(c))
		touched += t_free(c) && t_touched(c, c + t_chunk_size(c));
	if (touched >= t_take_after)
		t_took = t_take_walked_chunk(tw);
}

/* A thread heap of twelve free chunks of three pages each, in their sized bin, between chunks in
 * use; the main heap as t_sizes has it. */
static void
t_twelve_free_chunks(void)
{
	long sizes[25];
	for (size_t i = 0; i < 24; i += 2) {
		sizes[i] = 512;
		sizes[i + 1] = -(3 * T_PAGE);
	}
	sizes[24] = 512;
	t_world_init(sizes, 25, t_sizes, T_NSIZES, 0);
}

/* A walk that lost its place (the chunk it was on and the next one taken while the lock was
 * down) starts the bin over, and finds again the chunks it gave back before: their pages are not
 * given back a second time (a madvise call each per piece, tens of ms on a bin of 10^5 large
 * chunks). */
Test(arena, a_walk_that_starts_over_gives_nothing_back_twice)
{
	/* Twelve free chunks of three pages in their sized bin, two pieces each. */
	t_twelve_free_chunks();
	struct rt_arena_env env = t_env(1000000000, T_PAGE);
	struct rt_arena_ops ops = t_ops;
	ops.lock = t_lock_contended;
	env.ops = &ops;
	w.between = t_take_free_chunks_once;
	t_take_after = 6;
	t_took = false;
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(&env, w.main, 0, &t_view, &res), 0, "%s",
	             res.failure ? res.failure : "");
	cr_assert(t_took);
	cr_assert_eq(res.lost_places, 1, "the walk did not start over");
	cr_assert_eq(w.bad_releases, 0);
	cr_assert_lt(w.nranges, T_MAX_RANGES);
	unsigned twice = 0;
	for (size_t i = 0; i < w.nranges; i++)
		for (size_t k = 0; k < i; k++)
			twice += w.ranges[k].start < w.ranges[i].end &&
			         w.ranges[i].start < w.ranges[k].end;
	cr_assert_eq(twice, 0, "%u pieces given back again", twice);
	t_check_everything_released(w.thread, w.thread_first, true);
}

/* Between two holds of the walk of the thread arena's bins, once, as another thread's malloc
 * sorts the unsorted bin: _int_malloc takes its last chunk into the chunk's sized bin, again and
 * again (up to 10,000 at a call). */
static unsigned t_sort_at, t_sort_batch, t_sorted;

static void
t_sort_unsorted(struct t_world *tw, unsigned hold)
{
	(void)hold;
	if (!tw->nranges || !t_sort_batch)
		return;
	uintptr_t at = tw->ranges[tw->nranges - 1].start, unsorted = rt_arena_bin_at(tw->thread, 1);
	if (at < tw->thread_first || at >= t_top(tw->thread) || --t_sort_at)
		return;
	for (; t_sort_batch; t_sort_batch--) {
		uintptr_t c = *W(unsorted + 24);
		if (c == unsorted)
			return;
		t_unlink(c);
		t_link(tw->thread, c, rt_arena_bin_index(t_chunk_size(c)));
		t_sorted++;
	}
}

/* The walk of the unsorted bin went on, after a hold, from a chunk that malloc had meanwhile
 * sorted into its sized bin, and so ended at that bin's header: the chunks that were still in
 * the unsorted bin were passed over (on 4 GiB of 16-128-byte blocks, 1 in 256 kept, with a
 * thread allocating, 147,434 chunks, 1.9 GiB: the release left 1.98 times malloc_trim's RSS). */
Test(arena, chunks_sorted_out_of_the_unsorted_bin_between_holds_are_all_given_back)
{
	/* Twelve free chunks of three pages each, all in the unsorted bin, as after a
	 * consolidation. */
	long sizes[25];
	for (size_t i = 0; i < 24; i += 2) {
		sizes[i] = 512;
		sizes[i + 1] = -(3 * T_PAGE);
	}
	sizes[24] = 512;
	/* A few chunks sorted right after the first, or all of those left after the sixth. */
	unsigned ats[] = {1, 7}, batches[] = {4, 12};
	for (int k = 0; k < 2; k++) {
		t_world_init(sizes, 25, t_sizes, T_NSIZES, 1);
		struct rt_arena_env env = t_env(1000000000, 1 << 20);
		/* A thread waits for the lock at every hold. */
		struct rt_arena_ops ops = t_ops;
		ops.lock = t_lock_contended;
		env.ops = &ops;
		w.between = t_sort_unsorted;
		t_sort_at = ats[k];
		t_sort_batch = batches[k];
		t_sorted = 0;
		struct rt_arena_result res;
		cr_assert_eq(rt_arena_release(&env, w.main, 0, &t_view, &res), 0, "%s",
		             res.failure ? res.failure : "");
		cr_assert_gt(t_sorted, 3, "nothing was sorted while the release walked");
		cr_assert_eq(w.bad_releases, 0);
		t_check_everything_released(w.thread, w.thread_first, true);
	}
}

/* Between two holds, the program frees what lies past t_shrink_cut into the main arena's top
 * and glibc trims it (systrim): the heap shrinks under a walk that already went a long way. */
static uintptr_t t_shrink_cut;
static unsigned t_shrink_at;
static bool t_shrunk;

static void
t_shrink_heap(struct t_world *tw, unsigned hold)
{
	if (t_shrunk || hold < t_shrink_at)
		return;
	t_shrunk = true;
	uintptr_t unsorted = rt_arena_bin_at(tw->main, 1);
	for (uintptr_t c = *W(unsorted + 16); c != unsorted;) {
		uintptr_t fd = *W(c + 16);
		if (c >= t_shrink_cut)
			t_unlink(c);
		c = fd;
	}
	uintptr_t end = ((t_shrink_cut + T_PAGE - 1) & ~(uintptr_t)(T_PAGE - 1)) + T_PAGE;
	*W(tw->main + RT_ARENA_TOP) = t_shrink_cut;
	*W(t_shrink_cut + 8) = (end - t_shrink_cut) | RT_ARENA_PREV_INUSE;
	*W(tw->main + RT_ARENA_SYSTEM_MEM) = end - tw->main_first;
}

/* A walk of the unsorted bin that went on through 600 holds while the program shrank the heap
 * under it: its count of chunks visited was held against the shrunk heap's, and the sound heap
 * was called damaged ("a bin's list does not lead back to a bin"), which turns the glibc
 * actions off for the rest of the job (found by review, at holds 600 to 603). A list is a loop
 * only within one hold; across holds the bin now ends quietly. */
Test(arena, a_walk_over_a_heap_that_shrank_between_holds_is_not_called_damaged)
{
	enum { low = 4, high = 600 };
	static long sizes[2 * (low + high) + 1];
	size_t n = 0;
	for (int i = 0; i < low + high; i++) {
		sizes[n++] = 32;
		sizes[n++] = -48;
	}
	sizes[n++] = 32;
	static const long thread_sizes[] = {64};
	for (unsigned at = 600; at <= 603; at++) {
		t_world_init(thread_sizes, 1, sizes, n, 1);
		t_shrink_cut = w.main_first + (size_t)low * 80 + 32;
		t_shrink_at = at;
		t_shrunk = false;
		struct rt_arena_env env = t_env(1000000000, 1 << 20);
		struct rt_arena_ops ops = t_ops;
		ops.lock = t_lock_contended;
		env.ops = &ops;
		w.between = t_shrink_heap;
		struct rt_arena_result res;
		int rc = rt_arena_release(&env, w.main, 0, &t_view, &res);
		cr_assert(t_shrunk, "the heap never shrank (hold %u)", at);
		cr_assert_eq(w.bad_releases, 0);
		cr_assert_eq(rc, 0, "hold %u: %s", at, res.failure ? res.failure : "");
	}
}

/* Between holds, as another thread's malloc takes a sized bin's last chunk (the binmap path
 * of _int_malloc) and splits it: 512 bytes in use at its front, the rest a free chunk in the
 * unsorted bin, split again as often as t_split_depth says (later mallocs take from the rest).
 * Three times, each once the walk has given back a piece of that bin's last chunk. */
static int t_split_bin;
static unsigned t_splits, t_split_depth;

static uintptr_t
t_split_front(uintptr_t c, size_t front)
{
	size_t size = t_chunk_size(c);
	t_unlink(c);
	*W(c + 8) = front | (*W(c + 8) & 7);
	memset((void *)(c + 16), 0xab, front - 16);
	uintptr_t rest = c + front;
	*W(rest + 8) = (size - front) | RT_ARENA_PREV_INUSE | RT_ARENA_NON_MAIN;
	*W(rest + size - front) = size - front;
	t_link(w.thread, rest, 1);
	return rest;
}

static void
t_split_last(struct t_world *tw, unsigned hold)
{
	(void)hold;
	uintptr_t bin = rt_arena_bin_at(tw->thread, t_split_bin), c = *W(bin + 24);
	if (t_splits >= 3 || c == bin || !tw->nranges)
		return;
	uintptr_t at = tw->ranges[tw->nranges - 1].start;
	if (at < c || at >= c + t_chunk_size(c))
		return;
	for (unsigned i = 0; i < t_split_depth; i++)
		c = t_split_front(c, 512);
	t_splits++;
}

/* Twelve free chunks of three pages in their sized bin; a thread waits for the lock at every
 * hold, and malloc splits the bin's last chunk three times (t_split_last). */
static void
t_split_world(struct rt_arena_result *res, unsigned depth)
{
	t_twelve_free_chunks();
	/* A piece is a page: a chunk takes two, and a hold ends between them. */
	struct rt_arena_env env = t_env(1000000000, T_PAGE);
	struct rt_arena_ops ops = t_ops;
	ops.lock = t_lock_contended;
	env.ops = &ops;
	w.between = t_split_last;
	t_split_bin = rt_arena_bin_index(3 * T_PAGE);
	t_splits = 0;
	t_split_depth = depth;
	cr_assert_eq(rt_arena_release(&env, w.main, 0, &t_view, res), 0, "%s",
	             res->failure ? res->failure : "");
	cr_assert_eq(t_splits, 3, "malloc split %u chunks the walk was on", t_splits);
	cr_assert_eq(w.bad_releases, 0);
	for (uintptr_t c = w.thread_first; c < t_top(w.thread); c += t_chunk_size(c))
		if (!t_free(c))
			cr_assert(t_intact(c), "chunk %#lx lost bytes", (unsigned long)c);
}

/* A chunk that malloc split while the lock was down was the walk's place; the walk started
 * over from the bin's end, where malloc takes its chunks, lost its place there again, and gave
 * up the bin after the third time: with a thread allocating on 256 MiB of 1-128 KiB blocks, 1 in
 * 256 kept, 23 chunks of about 5 MiB stayed (RSS 132 MiB against malloc_trim's 6). */
Test(arena, a_bin_whose_last_chunks_malloc_splits_between_holds_is_walked_to_its_end)
{
	struct rt_arena_result res;
	t_split_world(&res, 1);
	cr_assert_eq(res.moved_on, 3);
	/* Every chunk still in the bin was given back. */
	uintptr_t bin = rt_arena_bin_at(w.thread, t_split_bin);
	unsigned left = 0;
	for (uintptr_t c = *W(bin + 24); c != bin; c = *W(c + 24), left++) {
		struct rt_arena_range r = rt_arena_free_range(c, t_chunk_size(c), 0, T_PAGE);
		cr_assert(t_released(r.start, r.end), "chunk %#lx of the bin kept",
		          (unsigned long)c);
	}
	cr_assert_eq(left, 9);
}

/* The chunk that malloc split was left with the pages the walk had not given back yet (it
 * gives a chunk back from its end down, malloc takes its front): at 256 MiB as above, about
 * 4 MiB, the rest of one 5 MiB chunk (RSS 9.4 MiB against malloc_trim's 5.5); at 4 GiB, 4 to 6
 * chunks split again and again, 15 MiB (RSS 42 MiB against 27). */
Test(arena, the_rest_of_a_chunk_that_malloc_split_between_holds_is_given_back)
{
	for (unsigned depth = 1; depth <= 3; depth++) {
		struct rt_arena_result res;
		t_split_world(&res, depth);
		t_check_everything_released(w.thread, w.thread_first, true);
		cr_assert_eq(res.rests, 3);
	}
}

/* Between holds, three times, once the walk has given back a piece of its bin's last chunk:
 * the program frees the chunk in use before that one (t_merge_after false) or after it, which
 * free() merges with it; the merged chunk goes to the unsorted bin. Merged into the one before,
 * the walk's chunk is no chunk any more; merged with the one after, it is larger, and the words
 * at its old end are a stale header that says the chunk before it is free. */
static struct rt_arena_range t_merged[3];
static unsigned t_merges;
static bool t_merge_after;

static void
t_merge_neighbour(struct t_world *tw, unsigned hold)
{
	(void)hold;
	uintptr_t bin = rt_arena_bin_at(tw->thread, t_split_bin), c = *W(bin + 24);
	if (t_merges >= 3 || c == bin || !tw->nranges)
		return;
	uintptr_t at = tw->ranges[tw->nranges - 1].start;
	size_t size = t_chunk_size(c);
	if (at < c || at >= c + size)
		return;
	t_merged[t_merges++] = rt_arena_free_range(c, size, 0, T_PAGE);
	/* The chunk in use of 512 bytes before it, or after it, whose other neighbour is in use. */
	uintptr_t start = t_merge_after ? c : c - 512;
	t_unlink(c);
	*W(start + 8) = (512 + size) | RT_ARENA_PREV_INUSE | RT_ARENA_NON_MAIN;
	*W(start + 512 + size) = 512 + size;
	*W(start + 512 + size + 8) &= ~(uint64_t)RT_ARENA_PREV_INUSE;
	t_link(tw->thread, start, 1);
}

/* A chunk that a free merged with the one before it while the lock was down kept the pages the
 * walk had not given back yet (at 4 GiB of 1-128 KiB blocks, 1 in 256 kept, a thread
 * allocating: one of 563,968 bytes in a run with RSS 1.07 times malloc_trim's). */
Test(arena, a_chunk_that_a_free_merged_between_holds_is_given_back_from_the_merged_one)
{
	/* Two chunks in use between free ones: a merge takes in one of them only. */
	long sizes[25];
	for (size_t i = 0; i < 24; i += 3) {
		sizes[i] = sizes[i + 1] = 512;
		sizes[i + 2] = -(3 * T_PAGE);
	}
	sizes[24] = 512;
	for (int after = 0; after <= 1; after++) {
		t_world_init(sizes, 25, t_sizes, T_NSIZES, 0);
		struct rt_arena_env env = t_env(1000000000, T_PAGE);
		struct rt_arena_ops ops = t_ops;
		ops.lock = t_lock_contended;
		env.ops = &ops;
		w.between = t_merge_neighbour;
		t_split_bin = rt_arena_bin_index(3 * T_PAGE);
		t_merges = 0;
		t_merge_after = after;
		struct rt_arena_result res;
		cr_assert_eq(rt_arena_release(&env, w.main, 0, &t_view, &res), 0, "%s",
		             res.failure ? res.failure : "");
		cr_assert_eq(t_merges, 3);
		cr_assert_eq(w.bad_releases, 0);
		for (unsigned i = 0; i < t_merges; i++)
			cr_assert(t_released(t_merged[i].start, t_merged[i].end),
			          "merged with the one %s, chunk %u kept pages of the walk's",
			          after ? "after" : "before", i);
		cr_assert_eq(res.rests, 3);
	}
}

/* Between holds: allocations from the top move it up; the top is released from its end down
 * and never below where it now starts. */
static unsigned t_carves;

static void
t_carve_top(struct t_world *tw, unsigned hold)
{
	(void)hold;
	/* Once the release works on the thread arena's top. */
	uintptr_t h = (uintptr_t)tw->heaps;
	if (!tw->nranges || tw->ranges[tw->nranges - 1].start < h ||
	    tw->ranges[tw->nranges - 1].start >= h + T_HEAP_MAX)
		return;
	uintptr_t top = t_top(tw->thread);
	size_t size = t_chunk_size(top), take = 8 * T_PAGE;
	if (size < take + 16 * T_PAGE)
		return;
	*W(top + 8) = take | RT_ARENA_PREV_INUSE | RT_ARENA_NON_MAIN;
	memset((void *)(top + 16), 0xab, take - 16);
	*W(tw->thread + RT_ARENA_TOP) = top + take;
	*W(top + take + 8) = (size - take) | RT_ARENA_PREV_INUSE;
	t_carves++;
}

Test(arena, top_that_moves_between_holds)
{
	t_world_init(t_sizes, T_NSIZES, t_sizes, T_NSIZES, 0);
	struct rt_arena_env env = t_env(2000, T_PAGE);
	struct rt_arena_ops ops = t_ops;
	ops.lock = t_lock_contended;
	env.ops = &ops;
	w.between = t_carve_top;
	t_carves = 0;
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(&env, w.main, 0, &t_view, &res), 0, "%s",
	             res.failure ? res.failure : "");
	cr_assert_gt(t_carves, 0, "the top never moved between two holds");
	cr_assert_eq(w.bad_releases, 0);
	for (uintptr_t c = w.thread_first; c < t_top(w.thread); c += t_chunk_size(c))
		if (!t_free(c))
			cr_assert(t_intact(c), "chunk %#lx lost bytes", (unsigned long)c);
}

Test(arena, a_broken_list_stops_the_release_with_the_lock_given_back)
{
	t_world_init(t_sizes, T_NSIZES, t_sizes, T_NSIZES, 1);
	/* The unsorted bin's last chunk: its fd no longer points back. */
	uintptr_t last = *W(rt_arena_bin_at(w.thread, 1) + 24);
	*W(last + 16) = last;
	struct rt_arena_env env = t_env(1000000000, 1 << 20);
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(&env, w.main, 0, &t_view, &res), -1);
	cr_assert_not_null(res.failure);
	cr_assert_eq(w.held, 0);
	cr_assert_eq(*(int *)w.thread, 0);
	/* A chunk that breaks glibc's invariants: damaged, even before the first check passed. */
	cr_assert(rt_arena_damaged(res.failure, false), "%s", res.failure);
	const char *why = rt_arena_dry_run(&env, w.thread, false, &t_view);
	cr_assert_not_null(why);
	cr_assert(rt_arena_damaged(why, false), "%s", why);
	cr_assert_eq(w.held, 0);
}

Test(arena, a_chunk_in_use_in_a_bin_stops_the_release)
{
	t_world_init(t_sizes, T_NSIZES, t_sizes, T_NSIZES, 0);
	uintptr_t c = w.thread_first + 4096; /* the first free chunk */
	*W(c + t_chunk_size(c) + 8) |= RT_ARENA_PREV_INUSE;
	struct rt_arena_env env = t_env(1000000000, 1 << 20);
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(&env, w.main, 0, &t_view, &res), -1);
	cr_assert_not_null(res.failure);
	cr_assert(rt_arena_damaged(res.failure, false), "%s", res.failure);
	cr_assert_eq(w.bad_releases, 0);
	cr_assert_not(t_touched(c, c + t_chunk_size(c)));
}

Test(arena, a_heap_that_does_not_point_back_stops_the_release)
{
	t_world_init(t_sizes, T_NSIZES, t_sizes, T_NSIZES, 0);
	*W((uintptr_t)w.heaps + RT_ARENA_HEAP_PAGESIZE) = 2 << 20;
	struct rt_arena_env env = t_env(1000000000, 1 << 20);
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(&env, w.main, 0, &t_view, &res), -1);
	cr_assert_not_null(res.failure);
	/* Huge-page heaps: a sound heap that the release leaves to malloc_trim. */
	cr_assert_not(rt_arena_damaged(res.failure, true), "%s", res.failure);
	cr_assert_eq(w.held, 0);
	cr_assert_not_null(rt_arena_dry_run(&env, w.thread, false, &t_view));
}

Test(arena, a_main_arena_not_yet_used_is_skipped)
{
	t_world_init(t_sizes, T_NSIZES, t_sizes, T_NSIZES, 0);
	*W(w.main + RT_ARENA_TOP) = rt_arena_bin_at(w.main, 1);
	struct rt_arena_env env = t_env(1000000000, 1 << 20);
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(&env, w.main, 0, &t_view, &res), 0);
	cr_assert_eq(res.skipped, 1);
	t_check_everything_released(w.thread, w.thread_first, true);
}

Test(arena, a_noncontiguous_main_arena_stops_the_release)
{
	t_world_init(t_sizes, T_NSIZES, t_sizes, T_NSIZES, 0);
	*(int *)(w.main + RT_ARENA_FLAGS) = RT_ARENA_NONCONTIGUOUS;
	struct rt_arena_env env = t_env(1000000000, 1 << 20);
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(&env, w.main, 0, &t_view, &res), -1);
	cr_assert_not_null(res.failure);
	/* glibc went on with mmap when sbrk failed: the heap is sound, malloc_trim may walk it. */
	cr_assert_not(rt_arena_damaged(res.failure, true), "%s", res.failure);
	cr_assert_eq(w.releases, 0);
}

Test(arena, dry_run_finds_the_heaps)
{
	t_world_init(t_sizes, T_NSIZES, t_sizes, T_NSIZES, 0);
	struct rt_arena_env env = t_env(1000000000, 1 << 20);
	cr_assert_null(rt_arena_dry_run(&env, w.thread, false, &t_view));
	cr_assert_eq(t_view.nheaps, 1);
	cr_assert(rt_arena_view_holds(&t_view, w.thread_first + 100));
	cr_assert_not(rt_arena_view_holds(&t_view, (uintptr_t)w.sbrk));
	cr_assert_null(rt_arena_dry_run(&env, w.main, true, &t_view));
	cr_assert(rt_arena_view_holds(&t_view, (uintptr_t)w.sbrk + 100));
	cr_assert_eq(w.releases, 0);
	cr_assert_eq(w.held, 0);
}

/* The first heap's top before the second heap was grown. */
static uintptr_t t_old_top;

/* The arena grew a second heap: the top moved there; the first heap ends with the old top, now
 * an in-use chunk (a fencepost stands in for it here). Returns the chunk in use at its start. */
static uintptr_t
t_second_heap(void)
{
	t_world_init(t_sizes, T_NSIZES, t_sizes, T_NSIZES, 0);
	uintptr_t h2 = (uintptr_t)w.heaps + T_HEAP_MAX;
	*W(h2 + RT_ARENA_HEAP_AR_PTR) = w.thread;
	*W(h2 + RT_ARENA_HEAP_PREV) = (uintptr_t)w.heaps;
	*W(h2 + RT_ARENA_HEAP_SIZE) = 64 * 1024;
	*W(h2 + RT_ARENA_HEAP_MPROTECT) = 64 * 1024;
	*W(h2 + RT_ARENA_HEAP_PAGESIZE) = T_PAGE;
	uintptr_t old_top = t_old_top = t_top(w.thread);
	*W(old_top + 8) |= RT_ARENA_NON_MAIN;
	uintptr_t c = h2 + RT_ARENA_HEAP_INFO_SIZE;
	*W(c + 8) = 8192 | RT_ARENA_PREV_INUSE | RT_ARENA_NON_MAIN;
	memset((void *)(c + 16), 0xab, 8192 - 16);
	*W(w.thread + RT_ARENA_TOP) = c + 8192;
	*W(c + 8192 + 8) = (64 * 1024 - 8192 - RT_ARENA_HEAP_INFO_SIZE) | RT_ARENA_PREV_INUSE;
	return c;
}

Test(arena, a_second_heap_is_followed_through_prev)
{
	uintptr_t c = t_second_heap(), h2 = (uintptr_t)w.heaps + T_HEAP_MAX;
	struct rt_arena_env env = t_env(1000000000, 1 << 20);
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(&env, w.main, 0, &t_view, &res), 0, "%s",
	             res.failure ? res.failure : "");
	cr_assert_null(rt_arena_dry_run(&env, w.thread, false, &t_view));
	cr_assert_eq(t_view.nheaps, 2);
	cr_assert_lt(t_view.heaps[0].start, t_view.heaps[1].start);
	cr_assert(t_intact(c));
	cr_assert(t_released(c + 8192 + T_PAGE, h2 + 64 * 1024));
}

/* review-arena3 L2: every rehold reads the arena's heaps afresh, with the lock held; each
 * heap_info on its own was a process_vm_readv call (1.2-1.7 us each: 16 heaps, a 1 GiB arena,
 * 20-26 us of a 100 us hold). Those of the last reading are read again in one call. */
Test(arena, a_rehold_reads_the_arenas_heaps_in_one_go)
{
	struct rt_arena_result res[2];
	unsigned peeks[2], eachs[2];
	for (int each = 0; each < 2; each++) {
		t_second_heap();
		struct rt_arena_env env = t_env(3000, T_PAGE);
		/* A thread waits for the lock at every hold: each is a rehold. */
		struct rt_arena_ops ops = t_ops;
		ops.lock = t_lock_contended;
		if (!each)
			ops.peek_each = NULL;
		env.ops = &ops;
		cr_assert_eq(rt_arena_release(&env, w.main, 0, &t_view, &res[each]), 0, "%s",
		             res[each].failure ? res[each].failure : "");
		cr_assert_eq(w.bad_releases, 0);
		cr_assert_eq(t_view.nheaps, 2);
		peeks[each] = w.heap_peeks;
		eachs[each] = w.peek_eachs;
	}
	cr_assert_gt(peeks[0], 20, "%u heap_infos read, few reholds", peeks[0]);
	cr_assert_eq(eachs[0], 0);
	/* The first reading of the arena reads both on their own, then one call a rehold. */
	cr_assert_eq(peeks[1], 2, "%u heap_infos read on their own", peeks[1]);
	cr_assert_eq(eachs[1], peeks[0] / 2 - 1);
	cr_assert_eq(res[1].bin_bytes, res[0].bin_bytes);
	cr_assert_eq(res[1].top_bytes, res[0].top_bytes);
	cr_assert_eq(res[1].holds, res[0].holds);
}

/* Between holds, once the release works in the thread arena: the program frees what the second
 * heap holds, and glibc deletes the heap (heap_trim: unmapped) and makes the first heap's old
 * top the top again. */
static void
t_delete_second_heap(struct t_world *tw, unsigned hold)
{
	(void)hold;
	uintptr_t h = (uintptr_t)tw->heaps;
	if (tw->second_gone || !tw->nranges || tw->ranges[tw->nranges - 1].start < h ||
	    tw->ranges[tw->nranges - 1].start >= h + 2 * T_HEAP_MAX)
		return;
	*W(tw->thread + RT_ARENA_TOP) = t_old_top;
	*W(t_old_top + 8) = (h + T_HEAP_MAX / 2 - t_old_top) | RT_ARENA_PREV_INUSE;
	tw->second_gone = true;
}

Test(arena, a_heap_deleted_between_holds_is_read_no_more)
{
	t_second_heap();
	struct rt_arena_env env = t_env(3000, T_PAGE);
	struct rt_arena_ops ops = t_ops;
	ops.lock = t_lock_contended;
	env.ops = &ops;
	w.between = t_delete_second_heap;
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(&env, w.main, 0, &t_view, &res), 0, "%s",
	             res.failure ? res.failure : "");
	cr_assert(w.second_gone);
	cr_assert_eq(w.bad_releases, 0);
	cr_assert_eq(t_view.nheaps, 1);
	t_check_everything_released(w.thread, w.thread_first, true);
}

/* Many small free chunks (each with one page to give back), alternating with in-use ones. */
static void
t_many_chunks(int n)
{
	long *sizes = calloc((size_t)n * 2, sizeof(*sizes));
	for (int i = 0; i < n; i++) {
		sizes[2 * i] = 64;
		sizes[2 * i + 1] = -(long)(2 * T_PAGE);
	}
	sizes[2 * n - 1] = 64; /* the chunk before the top is in use */
	t_world_init(sizes, (size_t)n * 2, sizes, 1, 1);
	free(sizes);
}

static unsigned t_hold_releases, t_most_releases;

static void
t_count_per_hold(struct t_world *tw, unsigned hold)
{
	(void)tw;
	(void)hold;
	t_hold_releases = 0;
}

static void
t_release_counting(void *ctx, uintptr_t start, uintptr_t end)
{
	t_release(ctx, start, end);
	if (++t_hold_releases > t_most_releases)
		t_most_releases = t_hold_releases;
}

Test(arena, with_nobody_waiting_the_lock_is_kept_and_the_budget_renewed)
{
	t_many_chunks(50);
	struct rt_arena_ops ops = t_ops;
	ops.release = t_release_counting;
	struct rt_arena_env env = t_env(1000000000, 1 << 20);
	env.ops = &ops;
	env.budget.hold_chunks = 8;
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(&env, w.main, 0, &t_view, &res), 0, "%s",
	             res.failure ? res.failure : "");
	cr_assert_eq(w.bad_releases, 0);
	cr_assert_geq(res.chunks, 49);
	/* One lock per arena, no rest: a renewal at every 8 chunks. */
	cr_assert_eq(w.locks, 2);
	cr_assert_eq(res.contended, 0);
	cr_assert_geq(res.renewed, 49 / 8);
	cr_assert_eq(res.holds, 2 + res.renewed);
	cr_assert_eq(t_handovers, 0, "a handover without a waiter");
	t_check_everything_released(w.thread, w.thread_first, true);
}

/* A thread that starts waiting for the lock (glibc sets the word to 2) during every piece. */
static void
t_release_then_wait(void *ctx, uintptr_t start, uintptr_t end)
{
	t_release_counting(ctx, start, end);
	uintptr_t arena = start >= (uintptr_t)w.heaps && start < (uintptr_t)w.heaps + T_HEAP_MAX
	                      ? w.thread
	                      : w.main;
	*(int *)arena = 2;
}

Test(arena, a_waiting_thread_ends_the_hold_at_once)
{
	t_world_init(t_sizes, T_NSIZES, t_sizes, T_NSIZES, 0);
	struct rt_arena_ops ops = t_ops;
	ops.release = t_release_then_wait;
	struct rt_arena_env env = t_env(1000000000, 4 * T_PAGE);
	env.ops = &ops;
	w.between = t_count_per_hold;
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(&env, w.main, 0, &t_view, &res), 0, "%s",
	             res.failure ? res.failure : "");
	cr_assert_eq(w.bad_releases, 0);
	cr_assert_eq(t_most_releases, 1, "a hold went on while a thread waited");
	cr_assert_gt(res.contended, 10);
	cr_assert_eq(t_handovers, res.contended, "every waiter is let in");
	t_check_everything_released(w.thread, w.thread_first, true);
	t_check_everything_released(w.main, w.main_first, true);
}

static int64_t t_locked_at, t_waited_hold_floor, t_longest_waited_hold;
static unsigned t_short_waited_holds;
/* With a share: the arena being released, how long its lock was held before the current hold,
 * and the waited holds that ended before a share of that or went on past the share at their end
 * by more than one look. */
static const struct rt_arena_budget *t_share_budget;
static uintptr_t t_share_mutex;
static int64_t t_share_held;
static unsigned t_share_short, t_share_long;

static int64_t
t_share_of(int64_t arena_ns)
{
	int64_t share = arena_ns / t_share_budget->waited_share;
	share = share < t_share_budget->waited_most_ns ? share : t_share_budget->waited_most_ns;
	return share > t_share_budget->waited_hold_ns ? share : t_share_budget->waited_hold_ns;
}

static void
t_lock_timed(void *ctx, uintptr_t mutex)
{
	t_lock(ctx, mutex);
	t_locked_at = w.clock;
	if (mutex != t_share_mutex) {
		t_share_mutex = mutex;
		t_share_held = 0;
	}
}

static bool
t_unlock_timed(void *ctx, uintptr_t mutex)
{
	int64_t held = w.clock - t_locked_at;
	bool waited = t_unlock(ctx, mutex);
	if (waited && held < t_waited_hold_floor)
		t_short_waited_holds++;
	if (waited && held > t_longest_waited_hold)
		t_longest_waited_hold = held;
	if (waited && t_share_budget) {
		if (held < t_share_of(t_share_held))
			t_share_short++;
		if (held > t_share_of(t_share_held + held) + 40 * w.step)
			t_share_long++;
	}
	t_share_held += held;
	return waited;
}

/* A hold that every step of the release ends at once, with a thread allocating throughout, let
 * the release do one piece of work between two handovers of 0.3 ms: it took 32 times as long as
 * malloc_trim(0) (6.5 s against 0.2 s, 256 MiB of 32-2,048 B blocks, one in 16 kept). A hold
 * that a thread waits for goes on until it is waited_hold_ns old, then ends at the next look
 * (one clock reading, every RT_ARENA_CLOCK_EVERY chunks), and the waiter is let in. */
Test(arena, a_hold_that_a_thread_waits_for_goes_on_until_waited_hold_ns)
{
	t_world_init(t_sizes, T_NSIZES, t_sizes, T_NSIZES, 0);
	struct rt_arena_ops ops = t_ops;
	ops.release = t_release_then_wait;
	ops.lock = t_lock_timed;
	ops.unlock = t_unlock_timed;
	struct rt_arena_env env = t_env(1000000000, 4 * T_PAGE);
	env.ops = &ops;
	env.budget.waited_hold_ns = 10 * w.step;
	env.budget.waited_share = 0;
	w.between = t_count_per_hold;
	t_most_releases = 0;
	t_waited_hold_floor = env.budget.waited_hold_ns;
	t_longest_waited_hold = 0;
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(&env, w.main, 0, &t_view, &res), 0, "%s",
	             res.failure ? res.failure : "");
	cr_assert_eq(w.bad_releases, 0);
	cr_assert_gt(t_most_releases, 1, "no hold went on once a thread waited");
	/* Every hold a waiter found lasted the floor, but an arena's last, which ends with the
	 * arena's walk. */
	cr_assert_gt(res.contended, 4);
	cr_assert_leq(t_short_waited_holds, 2,
	              "%u of %u holds that a thread waited for were shorter", t_short_waited_holds,
	              res.contended);
	/* Past it by the clock readings of one look at most: a piece's and RT_ARENA_CLOCK_EVERY
	 * chunks'. */
	cr_assert_leq(t_longest_waited_hold, env.budget.waited_hold_ns + 40 * w.step, "%ld ns",
	              (long)t_longest_waited_hold);
	cr_assert_eq(t_handovers, res.contended, "every waiter is let in");
	t_check_everything_released(w.thread, w.thread_first, true);
	t_check_everything_released(w.main, w.main_first, true);
}

/* One release with a thread waiting for every hold, waited holds of a fourth of the time the
 * arena was held so far, from 4 steps to `most`; t_share_short and t_share_long count the holds
 * that ended outside their share, t_longest_waited_hold the longest. */
static void
t_release_with_a_share(int64_t most_steps, struct rt_arena_result *res)
{
	t_world_init(t_sizes, T_NSIZES, t_sizes, T_NSIZES, 0);
	static struct rt_arena_ops ops;
	ops = t_ops;
	ops.release = t_release_then_wait;
	ops.lock = t_lock_timed;
	ops.unlock = t_unlock_timed;
	static struct rt_arena_env env;
	env = t_env(1000000000, T_PAGE);
	env.ops = &ops;
	env.budget.waited_hold_ns = 4 * w.step;
	env.budget.waited_share = 4;
	env.budget.waited_most_ns = most_steps * w.step;
	w.between = t_count_per_hold;
	t_waited_hold_floor = env.budget.waited_hold_ns;
	t_share_budget = &env.budget;
	cr_assert_eq(rt_arena_release(&env, w.main, 0, &t_view, res), 0, "%s",
	             res->failure ? res->failure : "");
	t_share_budget = NULL;
	cr_assert_eq(w.bad_releases, 0);
	cr_assert_gt(res->contended, 4);
	/* An arena's last hold ends with its walk, before its share. */
	cr_assert_leq(t_share_short, 2, "%u of %u waited holds ended before their share",
	              t_share_short, res->contended);
	cr_assert_eq(t_share_long, 0, "%u of %u waited holds went on past their share",
	             t_share_long, res->contended);
	cr_assert_eq(t_handovers, res->contended, "every waiter is let in");
	t_check_everything_released(w.thread, w.thread_first, true);
	t_check_everything_released(w.main, w.main_first, true);
}

/* With holds of a fixed length, a thread that allocated throughout made the release hand the
 * lock over every 0.5 ms: two wake-ups each, 595 of them in a release of 256 MiB of 16-128 B
 * blocks. A waited hold lasts a share of the time the arena's lock was held so far (not of the
 * time since its first hold: the handovers between holds, 70 us each here, would count), at
 * least the floor: the waiter waits at most that share of what a pass that never let it in would
 * have made it wait, and the handovers fall to a few dozen. */
Test(arena, a_waited_hold_lasts_a_share_of_the_time_the_arena_was_held)
{
	struct rt_arena_result res;
	t_release_with_a_share(400, &res);
	cr_assert_geq(t_longest_waited_hold, 8 * t_waited_hold_floor,
	              "%ld ns: the holds never grew", (long)t_longest_waited_hold);
}

Test(arena, a_waited_hold_grows_to_waited_most_ns_and_no_longer)
{
	struct rt_arena_result res;
	t_release_with_a_share(20, &res);
	cr_assert_geq(t_longest_waited_hold, 20 * w.step, "%ld ns: the holds never reached the cap",
	              (long)t_longest_waited_hold);
}

Test(arena, every_hold_moves_on_even_when_a_thread_always_waits)
{
	t_world_init(t_sizes, T_NSIZES, t_sizes, T_NSIZES, 1);
	struct rt_arena_ops ops = t_ops;
	ops.lock = t_lock_contended;
	struct rt_arena_env env = t_env(1000000000, 4 * T_PAGE);
	env.ops = &ops;
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(&env, w.main, 0, &t_view, &res), 0, "%s",
	             res.failure ? res.failure : "");
	cr_assert_eq(w.bad_releases, 0);
	cr_assert_eq(res.contended, res.holds);
	t_check_everything_released(w.thread, w.thread_first, true);
	t_check_everything_released(w.main, w.main_first, true);
}

static uintptr_t t_fast[2048];
static size_t t_nfast;

/* In use, then free small chunks (bins 6 and 13), then the large ones of t_sizes. */
static long t_small_sizes[3 * 20 + T_NSIZES];
#define T_NSMALL (sizeof(t_small_sizes) / sizeof(t_small_sizes[0]))

static size_t
t_small_world(void)
{
	size_t n = 0, frees = 0;
	for (int i = 0; i < 20; i++) {
		t_small_sizes[n++] = 64;
		t_small_sizes[n++] = i % 2 ? -96 : -208;
		t_small_sizes[n++] = 64;
		frees++;
	}
	for (size_t i = 0; i < T_NSIZES; i++) {
		t_small_sizes[n++] = t_sizes[i];
		frees += t_sizes[i] < 0;
	}
	t_world_init(t_small_sizes, T_NSMALL, t_small_sizes, T_NSMALL, 0);
	t_nfast = 0;
	return 2 * frees;
}

static bool
t_in_fastbin(uintptr_t c)
{
	for (size_t i = 0; i < t_nfast; i++)
		if (t_fast[i] == c)
			return true;
	return false;
}

/* Puts the in-use chunks of 64 bytes of `arena` not yet in a fastbin into fastbin `index` as
 * free() does: the head raw, each link stored as (its address >> 12) ^ next. */
static size_t
t_fastbin_at(uintptr_t arena, uintptr_t first, size_t most, int index)
{
	uintptr_t *head = (uintptr_t *)(arena + RT_ARENA_FASTBINS + (uintptr_t)index * 8);
	size_t n = 0;
	for (uintptr_t c = first; c < t_top(arena) && n < most; c += t_chunk_size(c)) {
		if (t_chunk_size(c) != 64 || t_free(c) || t_in_fastbin(c))
			continue;
		t_fast[t_nfast++] = c;
		*W(c + RT_ARENA_CHUNK_FD) = ((c + RT_ARENA_CHUNK_FD) >> 12) ^ *head;
		*head = c;
		n++;
	}
	return n;
}

static size_t
t_fastbin(uintptr_t arena, uintptr_t first, size_t most)
{
	return t_fastbin_at(arena, first, most, 2); /* (64 >> 4) - 2 */
}

Test(arena, count_walks_every_bin_and_fastbin_giving_nothing_back)
{
	size_t binned = t_small_world();
	size_t fast = t_fastbin(w.thread, w.thread_first, 5) + t_fastbin(w.main, w.main_first, 5);
	cr_assert_eq(fast, 10);
	struct rt_arena_env env = t_env(1000000000, 1 << 20);
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_count(&env, w.main, 100000, &t_view, &res), 0, "%s",
	             res.failure ? res.failure : "");
	cr_assert_eq(res.chunks, binned + fast);
	cr_assert_eq(w.releases, 0);
	cr_assert_eq(res.top_bytes + res.bin_bytes, 0);
	cr_assert_eq(w.held, 0);
	cr_assert_eq(res.arenas, 2);
}

Test(arena, count_stops_once_past_most)
{
	t_small_world();
	struct rt_arena_env env = t_env(1000000000, 1 << 20);
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_count(&env, w.main, 7, &t_view, &res), 0);
	cr_assert_eq(res.chunks, 8);
	cr_assert_eq(res.arenas, 1, "the next arena is not locked once the count is past");
	cr_assert_eq(w.held, 0);
}

Test(arena, count_follows_a_bin_across_holds)
{
	size_t binned = t_small_world();
	struct rt_arena_env env = t_env(1000000000, 1 << 20);
	env.budget.hold_chunks = 3;
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_count(&env, w.main, 100000, &t_view, &res), 0);
	cr_assert_eq(res.chunks, binned);
	cr_assert_geq(res.holds, binned / 3);
}

Test(arena, a_fastbin_longer_than_a_hold_counts_as_too_many)
{
	t_small_world();
	cr_assert_eq(t_fastbin(w.thread, w.thread_first, 6), 6);
	struct rt_arena_env env = t_env(1000000000, 1 << 20);
	env.budget.hold_chunks = 4;
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_count(&env, w.main, 100000, &t_view, &res), 0);
	cr_assert_eq(res.chunks, 100001);
	cr_assert_eq(w.held, 0);
}

Test(arena, a_fastbin_link_out_of_the_heaps_stops_the_count)
{
	t_small_world();
	t_fastbin(w.thread, w.thread_first, 3);
	uintptr_t head = *W(w.thread + RT_ARENA_FASTBINS + 2 * 8);
	*W(head + RT_ARENA_CHUNK_FD) = ((head + RT_ARENA_CHUNK_FD) >> 12) ^ (uintptr_t)0x10000;
	struct rt_arena_env env = t_env(1000000000, 1 << 20);
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_count(&env, w.main, 100000, &t_view, &res), -1);
	cr_assert_not_null(res.failure);
	cr_assert(rt_arena_damaged(res.failure, false), "%s", res.failure);
	cr_assert_eq(w.held, 0);
}

Test(arena, fastbins_together_longer_than_a_hold_count_as_too_many)
{
	t_small_world();
	cr_assert_eq(t_fastbin_at(w.thread, w.thread_first, 3, 2), 3);
	cr_assert_eq(t_fastbin_at(w.thread, w.thread_first, 3, 3), 3);
	struct rt_arena_env env = t_env(1000000000, 1 << 20);
	env.budget.hold_chunks = 4;
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_count(&env, w.main, 100000, &t_view, &res), 0);
	cr_assert_eq(res.chunks, 100001, "6 fastbin chunks in one hold of 4");
}

Test(arena, an_arena_left_out_counts_as_too_many)
{
	t_small_world();
	/* A main arena that was never used (its top still the unsorted bin) is left out. */
	*W(w.main + RT_ARENA_TOP) = rt_arena_bin_at(w.main, 1);
	struct rt_arena_env env = t_env(1000000000, 1 << 20);
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_count(&env, w.main, 100000, &t_view, &res), 0);
	cr_assert_eq(res.skipped, 1);
	cr_assert_eq(res.chunks, 100001);
}

/* The fastbins, consolidated: glibc's malloc_consolidate a chunk at a time. */

static struct rt_arena_env t_store_env;

static void
t_store(void *ctx, uintptr_t addr, uint64_t value)
{
	(void)ctx;
	cr_assert(w.held, "a write to the heap without the lock");
	cr_assert(t_mapped(addr, 8), "a write to an unmapped address %#lx", (unsigned long)addr);
	*W(addr) = value;
}

static unsigned t_cas_calls;
static void (*t_before_cas)(void);

static bool
t_cas(void *ctx, uintptr_t addr, uint64_t expected, uint64_t desired)
{
	(void)ctx;
	cr_assert(w.held, "a fastbin taken from without the lock");
	t_cas_calls++;
	if (t_before_cas)
		t_before_cas();
	if (*W(addr) != expected)
		return false;
	*W(addr) = desired;
	return true;
}

static const struct rt_arena_ops t_write_ops = {
    .load = t_load,
    .peek = t_peek,
    .peek_each = t_peek_each,
    .store = t_store,
    .cas = t_cas,
    .lock = t_lock,
    .unlock = t_unlock,
    .let_waiter_in = t_let_waiter_in,
    .release = t_release,
    .now_ns = t_now,
};

static struct rt_arena_env *
t_consolidating_env(const struct rt_arena_ops *ops)
{
	t_store_env = t_env(1000000000, 1 << 20);
	t_store_env.ops = ops ? ops : &t_write_ops;
	t_store_env.consolidate = true;
	t_cas_calls = 0;
	t_before_cas = NULL;
	return &t_store_env;
}

/* Every chunk of a large bin heads its own group in a ring of nextsize links (the same size as
 * the one before it: not a head, links NULL), as glibc's sorted large bins keep them. */
static void
t_nextsize_rings(uintptr_t a)
{
	for (int i = 64; i < RT_ARENA_NBINS; i++) {
		uintptr_t bin = rt_arena_bin_at(a, i), heads[64];
		size_t n = 0, prev = 0;
		for (uintptr_t c = *W(bin + 16); c != bin; c = *W(c + 16)) {
			*W(c + 32) = *W(c + 40) = 0;
			if (t_chunk_size(c) != prev && n < 64)
				heads[n++] = c;
			prev = t_chunk_size(c);
		}
		for (size_t k = 0; k < n; k++) {
			*W(heads[k] + 32) = heads[(k + 1) % n];
			*W(heads[k] + 40) = heads[(k + n - 1) % n];
		}
	}
}

/* A full walk of one arena, as glibc's do_check_malloc_state would make it: chunk by chunk from
 * the first to the top, every header and footer right, no two free chunks side by side, every
 * free chunk in exactly one list of a bin and every listed chunk free, each list linked both
 * ways, the nextsize rings too, every fastbin chunk in use and of its bin's size. Returns the
 * number of fastbin chunks. */
static size_t
t_check_heap(uintptr_t a, uintptr_t first)
{
	uintptr_t top = t_top(a);
	size_t free_walked = 0, free_listed = 0, fast = 0;
	bool prev_free = false;
	size_t prev_size = 0;
	for (uintptr_t c = first; c < top; c += t_chunk_size(c)) {
		size_t size = t_chunk_size(c);
		cr_assert(size >= 32 && size % 16 == 0, "chunk %#lx: size %zu", (unsigned long)c,
		          size);
		cr_assert_eq(!(*W(c + 8) & RT_ARENA_PREV_INUSE), prev_free,
		             "chunk %#lx: PREV_INUSE wrong", (unsigned long)c);
		if (prev_free)
			cr_assert_eq(*W(c), prev_size, "chunk %#lx: prev_size wrong",
			             (unsigned long)c);
		bool f = t_free(c);
		cr_assert(!(f && prev_free), "two free chunks side by side at %#lx",
		          (unsigned long)c);
		free_walked += f;
		prev_free = f;
		prev_size = size;
	}
	cr_assert(!prev_free, "a free chunk borders the top");
	cr_assert(*W(top + 8) & RT_ARENA_PREV_INUSE, "the top's PREV_INUSE");
	for (int i = 1; i < RT_ARENA_NBINS; i++) {
		uintptr_t bin = rt_arena_bin_at(a, i);
		for (uintptr_t c = *W(bin + 16); c != bin; c = *W(c + 16)) {
			cr_assert(c >= first && c < top && t_free(c), "bin %d: %#lx is not free", i,
			          (unsigned long)c);
			cr_assert_eq(*W(*W(c + 16) + 24), c, "bin %d: links broken at %#lx", i,
			             (unsigned long)c);
			if (i >= 2)
				cr_assert_eq(rt_arena_bin_index(t_chunk_size(c)), i);
			if (i >= 64 && *W(c + 32)) {
				cr_assert_eq(*W(*W(c + 32) + 40), c, "nextsize ring broken");
				cr_assert_eq(*W(*W(c + 40) + 32), c, "nextsize ring broken");
			}
			if (i == 1 && t_chunk_size(c) >= 1024)
				cr_assert(!*W(c + 32) && !*W(c + 40),
				          "unsorted with nextsize links");
			free_listed++;
		}
	}
	cr_assert_eq(free_walked, free_listed, "free chunks walked %zu, listed %zu", free_walked,
	             free_listed);
	for (int f = 0; f < RT_ARENA_NFASTBINS; f++) {
		uintptr_t head = a + RT_ARENA_FASTBINS + (uintptr_t)f * 8;
		for (uintptr_t c = *W(head); c; c = ((c + 16) >> 12) ^ *W(c + 16)) {
			cr_assert_eq(t_chunk_size(c), (size_t)(f + 2) * 16);
			cr_assert(!t_free(c), "a fastbin chunk marked free");
			fast++;
		}
	}
	return fast;
}

static void
t_check_both_heaps(struct t_world *tw, unsigned hold)
{
	(void)hold;
	t_check_heap(tw->thread, tw->thread_first);
	t_check_heap(tw->main, tw->main_first);
}

/* 64-byte chunks between small free ones, in both arenas: no whole page is free until they
 * merge. Returns how many fastbin chunks each arena holds. */
static size_t
t_fastbin_world(void)
{
	static long sizes[4 * 200 + T_NSIZES];
	size_t n = 0;
	for (int i = 0; i < 200; i++) {
		sizes[n++] = 64;
		sizes[n++] = i % 3 ? -208 : -96;
		sizes[n++] = 64;
		sizes[n++] = i % 5 ? 64 : -1040;
	}
	for (size_t i = 0; i < T_NSIZES; i++)
		sizes[n++] = t_sizes[i];
	t_world_init(sizes, n, sizes, n, 0);
	t_nfast = 0;
	t_nextsize_rings(w.thread);
	t_nextsize_rings(w.main);
	size_t nfast = t_fastbin(w.thread, w.thread_first, 1000);
	cr_assert_eq(t_fastbin(w.main, w.main_first, 1000), nfast);
	return nfast;
}

Test(arena, fastbin_chunks_merge_with_their_free_neighbours_as_glibc_merges_them)
{
	size_t nfast = t_fastbin_world();
	cr_assert_gt(nfast, 500);
	cr_assert_eq(t_check_heap(w.thread, w.thread_first), nfast);
	/* Without consolidation: the fastbin chunks pin the pages around them. */
	struct rt_arena_env plain = t_env(1000000000, 1 << 20);
	struct rt_arena_result before, res;
	cr_assert_eq(rt_arena_release(&plain, w.main, 0, &t_view, &before), 0);
	cr_assert_eq(before.fast_chunks, 0);
	w.nranges = 0;
	struct rt_arena_env *env = t_consolidating_env(NULL);
	cr_assert_eq(rt_arena_release(env, w.main, 0, &t_view, &res), 0, "%s",
	             res.failure ? res.failure : "");
	cr_assert_eq(w.bad_releases, 0);
	cr_assert_eq(w.held, 0);
	cr_assert_eq(res.fast_chunks, 2 * nfast);
	cr_assert_eq(t_check_heap(w.thread, w.thread_first), 0, "fastbins left");
	cr_assert_eq(t_check_heap(w.main, w.main_first), 0, "fastbins left");
	/* 64 + 96 + 64 + 64 + 208 + ... merged: whole pages that were pinned come back. */
	cr_assert_gt(res.bin_bytes, before.bin_bytes);
	t_check_everything_released(w.thread, w.thread_first, true);
	t_check_everything_released(w.main, w.main_first, true);
}

Test(arena, a_fastbin_chunk_beside_the_top_goes_into_the_top)
{
	static const long sizes[] = {4096, -8192, 64};
	t_world_init(sizes, 3, sizes, 3, 0);
	cr_assert_eq(t_fastbin(w.thread, w.thread_first, 100), 1);
	uintptr_t c = t_fast[0], old_top = t_top(w.thread);
	size_t old_top_size = t_chunk_size(old_top);
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(t_consolidating_env(NULL), w.main, 0, &t_view, &res), 0);
	/* The 64-byte chunk and the free one before it are the top's now. */
	cr_assert_eq(t_top(w.thread), c - 8192);
	cr_assert_eq(t_chunk_size(t_top(w.thread)), 8192 + 64 + old_top_size);
	t_check_heap(w.thread, w.thread_first);
	t_check_everything_released(w.thread, w.thread_first, true);
}

Test(arena, large_neighbours_leave_their_nextsize_rings_whole)
{
	/* Heads and a second chunk of the same size in large bins, each beside a fastbin chunk;
	 * 4096 and 4160 share a bin as two heads. */
	static const long sizes[] = {64, -2048, 64, -2048, 64,    -2048, 64,    -4096,
	                             64, -4160, 64, 512,   -3072, 64,    -3072, 64};
	t_world_init(sizes, sizeof(sizes) / sizeof(sizes[0]), sizes, 1, 0);
	t_nextsize_rings(w.thread);
	t_check_heap(w.thread, w.thread_first);
	t_fastbin(w.thread, w.thread_first, 100);
	struct rt_arena_env *env = t_consolidating_env(NULL);
	struct rt_arena_ops ops = t_write_ops;
	ops.lock = t_lock_contended; /* one chunk a hold: the heap is checked at every lock */
	env->ops = &ops;
	w.between = t_check_both_heaps;
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(env, w.main, 0, &t_view, &res), 0, "%s",
	             res.failure ? res.failure : "");
	cr_assert_eq(t_check_heap(w.thread, w.thread_first), 0);
	cr_assert_gt(res.holds, 7);
	t_check_everything_released(w.thread, w.thread_first, true);
}

static uintptr_t t_pushed;

/* free() of another thread pushes a chunk onto the fastbin right before the swap. */
static void
t_push_before_cas(void)
{
	t_before_cas = NULL;
	uintptr_t *head = (uintptr_t *)(w.thread + RT_ARENA_FASTBINS + 2 * 8);
	*W(t_pushed + 16) = ((t_pushed + 16) >> 12) ^ *head;
	*head = t_pushed;
}

Test(arena, a_chunk_freed_onto_the_fastbin_meanwhile_is_taken_too)
{
	t_small_world();
	cr_assert_eq(t_fastbin(w.thread, w.thread_first, 3), 3);
	/* An in-use 64-byte chunk not yet in the fastbin. */
	for (uintptr_t c = w.thread_first;; c += t_chunk_size(c))
		if (t_chunk_size(c) == 64 && !t_free(c) && !t_in_fastbin(c)) {
			t_pushed = c;
			break;
		}
	struct rt_arena_env *env = t_consolidating_env(NULL);
	t_before_cas = t_push_before_cas;
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(env, w.main, 0, &t_view, &res), 0, "%s",
	             res.failure ? res.failure : "");
	cr_assert_eq(res.fast_chunks, 4);
	cr_assert_eq(t_cas_calls, 5, "the lost swap is tried again");
	t_check_heap(w.thread, w.thread_first);
	t_check_everything_released(w.thread, w.thread_first, true);
}

/* A release that must stop at the main arena's fastbin head, before any write: a failure that
 * says the heap is damaged, the lock given back, no swap, nothing given back, the main arena and
 * its first chunks as they were, the lock word aside. */
static void
t_stops_before_any_write_to_the_main_heap(void)
{
	size_t span = 16 * 1024;
	unsigned char *state = malloc(RT_ARENA_STATE_SIZE), *chunks = malloc(span);
	memcpy(state, (void *)w.main, RT_ARENA_STATE_SIZE);
	memcpy(chunks, w.sbrk, span);
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(t_consolidating_env(NULL), w.main, 0, &t_view, &res), -1);
	cr_assert_not_null(res.failure);
	cr_assert(rt_arena_damaged(res.failure, false), "%s", res.failure);
	cr_assert_eq(w.held, 0);
	cr_assert_eq(t_cas_calls, 0);
	cr_assert_eq(w.releases, 0);
	cr_assert_eq(*(int *)w.main, 0);
	cr_assert_eq(memcmp(state + 4, (void *)(w.main + 4), RT_ARENA_STATE_SIZE - 4), 0);
	cr_assert_eq(memcmp(chunks, w.sbrk, span), 0);
	free(state);
	free(chunks);
}

Test(arena, a_fastbin_chunk_of_the_wrong_size_stops_the_release_before_any_write)
{
	t_small_world();
	t_fastbin(w.main, w.main_first, 3);
	uintptr_t head = *W(w.main + RT_ARENA_FASTBINS + 2 * 8);
	/* The head sits in the 64-byte fastbin with a size of 80. */
	*W(head + 8) += 16;
	t_stops_before_any_write_to_the_main_heap();
}

/* review-heap2 4: the size class compared on the size shifted and cast to int let through a size
 * word of 16 (f + 2) + k * 2^36. A main heap of more than 64 GiB would hold such a chunk: here
 * the top says so (its size and system_mem, never read past its header before the fastbins are
 * done), and the chunk's next neighbour lies 64 GiB on, outside what the fake world maps. */
Test(arena, a_fastbin_chunk_of_its_bins_size_plus_64_gib_stops_the_release_before_any_write)
{
	t_small_world();
	t_fastbin(w.main, w.main_first, 3);
	uintptr_t head = *W(w.main + RT_ARENA_FASTBINS + 2 * 8), top = t_top(w.main);
	uint64_t far = (uint64_t)1 << 37;
	*W(head + 8) += (uint64_t)1 << 36;
	*W(top + 8) += far;
	*W(w.main + RT_ARENA_SYSTEM_MEM) += far;
	*W(w.main + RT_ARENA_MAX_SYSTEM_MEM) += far;
	t_stops_before_any_write_to_the_main_heap();
}

/* The main arena's memory at a low fixed address, as a non-PIE program's brk heap lies (4 MiB on,
 * 12 MiB long: it starts below its own length, so a size read from it may be an address in it),
 * laid out as t_layout lays out `sizes`, the thread arena as t_world_init leaves it. False when
 * the address is taken. */
#define T_LOW_AT ((uintptr_t)4 << 20)
#define T_LOW_LEN ((size_t)12 << 20)

static bool
t_low_main_world(const long *sizes, size_t n)
{
	static const long one[] = {64};
	t_world_init(one, 1, one, 1, 0);
	void *m = mmap((void *)T_LOW_AT, T_LOW_LEN, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (m == MAP_FAILED)
		return false;
	free(w.sbrk);
	w.sbrk = m;
	w.sbrk_len = T_LOW_LEN;
	w.sbrk_mapped = true;
	if (m != (void *)T_LOW_AT)
		return false; /* a kernel before 4.17 takes the flag as a hint */
	t_init_arena(w.main, true, w.thread, T_LOW_LEN);
	w.main_first = T_LOW_AT;
	t_layout(w.main, w.main_first, T_LOW_AT + T_LOW_LEN, sizes, n, 0, true);
	return true;
}

/* review-arena3 L1: where a heap starts below its own length, a size may equal the address of a
 * chunk, and a write of an unlink may then fall on a word that glibc reads after it. The fastbin
 * chunk p lies between two free chunks: q (208 bytes, bin 13) and n, whose size is q's address,
 * so that n's footer holds q. q's bk is n's footer less 16: its fd word is that footer, and q is
 * linked both ways as the words are now. glibc's unlink of q writes q's fd (the bin header)
 * there, and its unlink of n then finds the footer wrong ("corrupted size vs. prev_size").
 * Checked on the words as they are, every check passes and the release would write both unlinks;
 * only the checks made again in glibc's order (rt_arena_in_order_too's sizes) refuse it. (A size
 * word can hold no chunk's address: that of p's next chunk has PREV_INUSE set, and q's, where
 * it is q, is read after q's unlink only to tell a small chunk from a large one.) */
Test(arena, a_next_neighbours_footer_that_the_prev_ones_unlink_writes_stops_the_release)
{
	uintptr_t q = T_LOW_AT + 64, n = q + 208 + 64;
	const long sizes[] = {64, -208, 64, -(long)q, 64};
	if (!t_low_main_world(sizes, sizeof(sizes) / sizeof(sizes[0])))
		cr_skip_test("%#lx is taken in this process: no heap below its length",
		             (unsigned long)T_LOW_AT);
	cr_assert(t_free(q) && t_free(n));
	cr_assert_eq(*W(n + q), q, "n's footer");
	cr_assert_eq(t_fastbin(w.main, w.main_first, 2), 2);
	cr_assert_eq(*W(w.main + RT_ARENA_FASTBINS + 2 * 8), q + 208, "p heads the fastbin");
	*W(q + RT_ARENA_CHUNK_BK) = n + q - 16;
	t_stops_before_any_write_to_the_main_heap();
}

Test(arena, a_free_neighbour_that_is_not_linked_stops_the_release)
{
	t_small_world();
	t_fastbin(w.thread, w.thread_first, 100);
	/* The free chunk after the first 64-byte chunk no longer points back into its list. */
	uintptr_t c = w.thread_first + 64;
	cr_assert(t_free(c));
	*W(c + 24) = c;
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(t_consolidating_env(NULL), w.main, 0, &t_view, &res), -1);
	cr_assert_not_null(res.failure);
	cr_assert_eq(w.held, 0);
}

/* A release that must stop at the thread arena's first fastbin chunk, before any write there:
 * a failure that says the heap is damaged, the lock given back, no swap, the thread arena and
 * its heap as they were (compared word for word: the direct path counts no store). Run on the
 * checked accesses and on the shim's inline ones (ops->direct), each on a world `damage`
 * builds afresh. */
static void
t_stops_before_any_write_to_the_thread_heap(void (*damage)(void))
{
	for (int direct = 0; direct < 2; direct++) {
		damage();
		uintptr_t from = w.thread + 8; /* the lock word and the flags aside */
		size_t span = w.thread_first + 32 * 1024 - from;
		unsigned char *before = malloc(span);
		memcpy(before, (void *)from, span);
		struct rt_arena_ops ops = t_write_ops;
		if (direct) {
			ops.direct = true;
			ops.load = NULL;
			ops.store = NULL;
			ops.cas = NULL;
		}
		struct rt_arena_result res;
		cr_assert_eq(rt_arena_release(t_consolidating_env(&ops), w.main, 0, &t_view, &res),
		             -1, "direct: %d", direct);
		cr_assert_not_null(res.failure);
		cr_assert(rt_arena_damaged(res.failure, false), "%s", res.failure);
		cr_assert_eq(w.held, 0);
		cr_assert_eq(t_cas_calls, 0);
		cr_assert_eq(*(int *)w.thread, 0);
		for (size_t i = 0; i < span; i += 8)
			cr_assert_eq(memcmp(before + i, (void *)(from + i), 8), 0,
			             "direct: %d: the word at %#lx was written", direct,
			             (unsigned long)(from + i));
		free(before);
	}
}

static void
t_next_footer_lies(void)
{
	t_small_world();
	cr_assert_eq(t_fastbin(w.thread, w.thread_first, 1), 1);
	/* The 64-byte chunk's next neighbour is free (208 bytes), but the chunk after that says it
	 * is 192: glibc's unlink_chunk would abort ("corrupted size vs. prev_size"). */
	uintptr_t c = w.thread_first + 64;
	cr_assert(t_free(c));
	cr_assert_eq(t_chunk_size(c), 208);
	*W(c + 208) = 192;
}

Test(arena, a_free_next_neighbour_whose_footer_lies_stops_the_release_before_any_write)
{
	t_stops_before_any_write_to_the_thread_heap(t_next_footer_lies);
}

static void
t_prev_of_another_size(void)
{
	t_small_world();
	/* The second 64-byte chunk, after the free one of 208 bytes, heads the fastbin. */
	cr_assert_eq(t_fastbin(w.thread, w.thread_first, 2), 2);
	uintptr_t c = w.thread_first + 64, p = c + 208;
	cr_assert_eq(*W(w.thread + RT_ARENA_FASTBINS + 2 * 8), p);
	cr_assert_eq(*W(p), 208);
	/* Its prev_size says 208, the free chunk's own size word 272, as if it held p too (glibc:
	 * "corrupted size vs. prev_size in fastbins"); a walk by size words still finds whole
	 * chunks, as this file's own checks walk the heap. */
	*W(c + 8) += 64;
}

Test(arena, a_free_prev_neighbour_of_another_size_stops_the_release_before_any_write)
{
	t_stops_before_any_write_to_the_thread_heap(t_prev_of_another_size);
}

/* glibc's order (review of issue 26): unlink_chunk writes fd->bk and bk->fd before it checks
 * the nextsize ring, and malloc_consolidate unlinks the free chunk before a fastbin chunk before
 * it looks at the one after. A ring pointer that aliases a word those writes change passes a
 * check made before them and fails glibc's ("corrupted double-linked list (not small)"): the
 * release must stop there too, before any write. Each world is a use after free of one or two
 * words of free chunks in a thread arena's large bins, beside the fastbin chunk at the head. */

/* Lays out `sizes` in both arenas (free chunks in their sized bins, every large one the head
 * of its own group), puts the first `nfast` 64-byte chunks of the thread heap into the fastbin
 * and returns the address of the thread heap's chunk number `at`. */
static uintptr_t
t_ring_world(const long *sizes, size_t n, size_t nfast, size_t at)
{
	t_world_init(sizes, n, sizes, n, 0);
	t_nfast = 0;
	t_nextsize_rings(w.thread);
	t_nextsize_rings(w.main);
	cr_assert_eq(t_fastbin(w.thread, w.thread_first, nfast), nfast);
	uintptr_t c = w.thread_first;
	for (size_t i = 0; i < at; i++)
		c += (size_t)labs(sizes[i]);
	return c;
}

/* A large bin [X 4592, B 4544] (B.bk == X), a fastbin chunk right before B. */
static const long t_xb_next[] = {64, -4544, 64, -4592, 64};

static void
t_ring_alias_on_next(void)
{
	uintptr_t b = t_ring_world(t_xb_next, 5, 1, 1), x = b + 4544 + 64;
	cr_assert_eq(*W(b + 24), x);
	/* B.bk_nextsize 16 bytes off: its fd_nextsize word is X.fd, which is B until B's own
	 * list writes make it the bin's header. */
	*W(b + 40) = x - 16;
}

Test(arena, a_next_neighbours_ring_aliasing_its_own_list_words_stops_the_release_before_any_write)
{
	t_stops_before_any_write_to_the_thread_heap(t_ring_alias_on_next);
}

/* The same bin, the fastbin chunk right after B. */
static const long t_xb_prev[] = {64, -4544, 64, 64, -4592, 64};

static void
t_ring_alias_on_prev(void)
{
	uintptr_t b = t_ring_world(t_xb_prev, 6, 2, 1), x = b + 4544 + 128;
	cr_assert_eq(*W(w.thread + RT_ARENA_FASTBINS + 2 * 8), b + 4544);
	cr_assert_eq(*W(b + 24), x);
	*W(b + 40) = x - 16;
}

Test(arena, a_prev_neighbours_ring_aliasing_its_own_list_words_stops_the_release_before_any_write)
{
	t_stops_before_any_write_to_the_thread_heap(t_ring_alias_on_prev);
}

static void
t_ring_alias_on_a_bin(void)
{
	uintptr_t b = t_ring_world(t_xb_next, 5, 1, 1);
	uintptr_t bin = rt_arena_bin_at(w.thread, rt_arena_bin_index(4544));
	cr_assert_eq(*W(b + 16), bin);
	/* B.fd_nextsize is the header of the bin before B's: its bk_nextsize word is the bk of
	 * B's bin, which is B until B's list writes. (A thread arena lies inside its heap; a
	 * ring pointer, which glibc only ever sets to a chunk, is taken only inside the chunks.) */
	*W(b + 32) = rt_arena_bin_at(w.thread, rt_arena_bin_index(4544) - 1);
}

Test(arena, a_ring_pointer_aliasing_a_bin_header_stops_the_release_before_any_write)
{
	t_stops_before_any_write_to_the_thread_heap(t_ring_alias_on_a_bin);
}

/* F 4544 (a second chunk of Q's size: no nextsize links), Q 4544, the fastbin chunk, N 8192,
 * M 8448: bins [Q, F] and [M, N]. */
static const long t_qn[] = {64, -4544, 64, -4544, 64, -8192, 64, -8448, 64};

static void
t_ring_alias_across(void)
{
	uintptr_t f = t_ring_world(t_qn, 9, 3, 1), q = f + 4544 + 64, n = q + 4544 + 64;
	cr_assert_eq(*W(w.thread + RT_ARENA_FASTBINS + 2 * 8), q + 4544);
	cr_assert_eq(*W(q + 16), f);
	cr_assert_eq(*W(f + 32), 0);
	/* N.fd_nextsize is F, whose stale bk_nextsize says N: until Q's unlink makes F the head
	 * of its group, with links to itself. */
	*W(n + 32) = f;
	*W(f + 40) = n;
}

Test(arena, a_next_neighbours_ring_aliasing_the_prev_neighbours_writes_stops_the_release)
{
	t_stops_before_any_write_to_the_thread_heap(t_ring_alias_across);
}

static void
t_link_into_the_fastbins(void)
{
	t_small_world();
	cr_assert_eq(t_fastbin(w.thread, w.thread_first, 2), 2);
	/* The free chunk before the fastbin's head is also the head of the 80-byte fastbin (a
	 * double free), and its fd points into the arena so that its fd's bk word is that head:
	 * the unlink's first write would replace the head with a bin header. */
	uintptr_t q = w.thread_first + 64;
	*W(w.thread + RT_ARENA_FASTBINS + 3 * 8) = q;
	*W(q + 16) = w.thread + RT_ARENA_FASTBINS + 3 * 8 - 24;
}

Test(arena, a_free_neighbours_link_into_the_arenas_fastbins_stops_the_release_before_any_write)
{
	t_stops_before_any_write_to_the_thread_heap(t_link_into_the_fastbins);
}

/* Both free neighbours of a fastbin chunk listed side by side, in a large bin (each the head of a
 * group) and in the unsorted bin: the words that the first unlink writes are ones the second one
 * reads (in a sound heap). Both are merged and the lists and rings left whole, on both paths. */
Test(arena, neighbours_listed_side_by_side_are_both_merged_as_glibc_merges_them)
{
	static const long large[] = {64, -4544, 64, -4592, 64}, small[] = {64, -208, 64, -96, 64};
	for (int k = 0; k < 4; k++) {
		const long *sizes = k / 2 ? small : large;
		t_world_init(sizes, 5, sizes, 5, k / 2);
		t_nfast = 0;
		uintptr_t b = w.thread_first + 64, p = b + (size_t)-sizes[1], x = p + 64;
		/* The 64-byte chunk between them into the fastbin; the later one listed first. */
		cr_assert_eq(t_fastbin_at(w.thread, p, 1, 2), 1);
		t_nextsize_rings(w.thread);
		cr_assert_eq(*W(x + 16), b);
		struct rt_arena_ops ops = t_write_ops;
		ops.direct = k % 2;
		struct rt_arena_result res;
		cr_assert_eq(rt_arena_release(t_consolidating_env(&ops), w.main, 0, &t_view, &res),
		             0, "%s", res.failure ? res.failure : "");
		cr_assert_eq(res.fast_chunks, 1);
		cr_assert_eq(t_chunk_size(b), (size_t)(64 - sizes[1] - sizes[3]));
		cr_assert_eq(*W(rt_arena_bin_at(w.thread, 1) + 16), b,
		             "merged into the unsorted bin");
		cr_assert_eq(t_check_heap(w.thread, w.thread_first), 0);
		t_check_everything_released(w.thread, w.thread_first, true);
	}
}

Test(arena, fastbins_of_an_unchecked_glibc_are_left_alone)
{
	cr_assert(rt_arena_consolidation_checked("2.36"));
	cr_assert_not(rt_arena_consolidation_checked("2.35"));
	cr_assert_not(rt_arena_consolidation_checked("2.37"));
	cr_assert_not(rt_arena_consolidation_checked("2.3"));
	cr_assert_not(rt_arena_consolidation_checked("2.36x"));
	cr_assert(rt_arena_consolidation_checked("2.36.1"));
}

static unsigned t_yields;

static void
t_yield(void *ctx)
{
	(void)ctx;
	cr_assert_eq(w.held, 0, "a yield with the lock held");
	t_yields++;
}

/* A thread waits for the lock once, at the first hold's end. */
static bool t_waited_once;

static void
t_release_wait_once(void *ctx, uintptr_t start, uintptr_t end)
{
	t_release(ctx, start, end);
	if (!t_waited_once && start >= (uintptr_t)w.heaps &&
	    start < (uintptr_t)w.heaps + T_HEAP_MAX) {
		t_waited_once = true;
		*(int *)w.thread = 2;
	}
}

Test(arena, with_a_thread_that_waited_the_lock_is_dropped_after_run_ns_and_the_core_yielded)
{
	t_many_chunks(50);
	struct rt_arena_ops ops = t_ops;
	ops.yield = t_yield;
	ops.release = t_release_wait_once;
	t_waited_once = false;
	struct rt_arena_env env = t_env(1000000000, 1 << 20);
	env.ops = &ops;
	env.budget.hold_chunks = 4;
	env.budget.run_ns = 10 * 1000; /* each clock reading advances 1 µs */
	t_yields = 0;
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(&env, w.main, 0, &t_view, &res), 0, "%s",
	             res.failure ? res.failure : "");
	cr_assert_eq(w.bad_releases, 0);
	/* The main arena first: nobody waited there, one hold. Then the thread arena: one hold
	 * that a waiter ended (the waiter is let in), then holds of run_ns each, a yield before
	 * each but the first. */
	cr_assert_eq(res.contended, 1);
	cr_assert_eq(t_handovers, 1);
	cr_assert_gt(w.locks, 6);
	cr_assert_eq(t_yields, w.locks - 3, "%u yields, %u locks", t_yields, w.locks);
	t_check_everything_released(w.thread, w.thread_first, true);
}

/* As t_release_wait_once, but nobody sleeps on the word it sets to 2. */
static void
t_release_word_two_once(void *ctx, uintptr_t start, uintptr_t end)
{
	bool waited = t_waited_once;
	t_release_wait_once(ctx, start, end);
	w.nobody_asleep |= t_waited_once && !waited;
}

/* The word reads 2 once the worker itself waited for the lock, for the whole hold, whether or
 * not anyone else sleeps on it (glibc's woken waiters leave it so): the hold ends as a waited
 * one, but an unlock that woke nobody hands nothing over, and the next hold takes the lock at
 * once. */
Test(arena, a_word_of_2_that_nobody_sleeps_on_hands_nothing_over)
{
	t_many_chunks(50);
	struct rt_arena_ops ops = t_ops;
	ops.release = t_release_word_two_once;
	t_waited_once = false;
	struct rt_arena_env env = t_env(1000000000, 1 << 20);
	env.ops = &ops;
	env.budget.hold_chunks = 4;
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(&env, w.main, 0, &t_view, &res), 0, "%s",
	             res.failure ? res.failure : "");
	cr_assert(t_waited_once);
	cr_assert_eq(w.bad_releases, 0);
	cr_assert_eq(res.contended, 0);
	cr_assert_eq(t_handovers, 0, "a handover to nobody");
	cr_assert_eq(w.locks, 3, "the waited hold ended, and the next took the lock at once");
	t_check_everything_released(w.thread, w.thread_first, true);
}

Test(arena, without_a_waiter_the_worker_never_yields)
{
	t_many_chunks(50);
	struct rt_arena_ops ops = t_ops;
	ops.yield = t_yield;
	struct rt_arena_env env = t_env(1000000000, 1 << 20);
	env.ops = &ops;
	env.budget.hold_chunks = 4;
	env.budget.run_ns = 10 * 1000;
	t_yields = 0;
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(&env, w.main, 0, &t_view, &res), 0);
	cr_assert_eq(w.locks, 2);
	cr_assert_eq(t_yields, 0);
}

/* The release's pace (issue 26): what it reads, and the shim's inline accesses. */

Test(arena, inline_accesses_leave_the_heap_the_checked_ones_leave)
{
	size_t nfast = t_fastbin_world();
	struct rt_arena_result checked, direct;
	cr_assert_eq(rt_arena_release(t_consolidating_env(NULL), w.main, 0, &t_view, &checked), 0);
	size_t checked_ranges = w.nranges;
	nfast = t_fastbin_world();
	/* The shim's ops: no load, store or compare-and-swap of their own. */
	struct rt_arena_ops ops = t_write_ops;
	ops.direct = true;
	ops.load = NULL;
	ops.store = NULL;
	ops.cas = NULL;
	cr_assert_eq(rt_arena_release(t_consolidating_env(&ops), w.main, 0, &t_view, &direct), 0,
	             "%s", direct.failure ? direct.failure : "");
	cr_assert_eq(w.bad_releases, 0);
	cr_assert_eq(direct.fast_chunks, 2 * nfast);
	cr_assert_eq(direct.fast_chunks, checked.fast_chunks);
	cr_assert_eq(direct.bin_bytes, checked.bin_bytes);
	cr_assert_eq(direct.top_bytes, checked.top_bytes);
	cr_assert_eq(direct.chunks, checked.chunks);
	cr_assert_eq(w.nranges, checked_ranges);
	cr_assert_eq(t_check_heap(w.thread, w.thread_first), 0, "fastbins left");
	cr_assert_eq(t_check_heap(w.main, w.main_first), 0, "fastbins left");
	t_check_everything_released(w.thread, w.thread_first, true);
	t_check_everything_released(w.main, w.main_first, true);
}

/* Words a test forbids the release to read. */
static uintptr_t t_unread[1024];
static size_t t_nunread, t_unread_hits;

static uint64_t
t_load_watched(void *ctx, uintptr_t addr)
{
	for (size_t i = 0; i < t_nunread; i++)
		t_unread_hits += addr == t_unread[i];
	return t_load(ctx, addr);
}

Test(arena, a_bin_walk_reads_the_chunk_after_only_a_chunk_with_a_page)
{
	/* Small free chunks (no page of their own) and large ones, all in the unsorted bin. */
	static long sizes[4 * 100];
	size_t n = 0;
	for (int i = 0; i < 100; i++) {
		sizes[n++] = 64;
		sizes[n++] = i % 4 ? -(long)(96 + 16 * (i % 7)) : -(long)(3 * T_PAGE);
	}
	sizes[n++] = 64;
	t_world_init(sizes, n, sizes, n, 1);
	t_nunread = t_unread_hits = 0;
	uintptr_t firsts[2] = {w.thread_first, w.main_first};
	for (int k = 0; k < 2; k++)
		for (uintptr_t c = firsts[k]; c < t_top(k ? w.main : w.thread);
		     c += t_chunk_size(c))
			if (t_free(c) && t_chunk_size(c) < T_PAGE) {
				t_unread[t_nunread++] = c + t_chunk_size(c);
				t_unread[t_nunread++] = c + t_chunk_size(c) + 8;
			}
	cr_assert_eq(t_nunread, 2 * 2 * 75);
	struct rt_arena_ops ops = t_ops;
	ops.load = t_load_watched;
	struct rt_arena_env env = t_env(1000000000, 1 << 20);
	env.ops = &ops;
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(&env, w.main, 0, &t_view, &res), 0, "%s",
	             res.failure ? res.failure : "");
	/* Every free chunk was walked (its links checked), the small ones' neighbours never read:
	 * a cache miss each, for nothing to give back. */
	cr_assert_eq(res.chunks, 2 * 100);
	cr_assert_eq(t_unread_hits, 0, "%zu reads of a small chunk's next header", t_unread_hits);
	t_check_everything_released(w.thread, w.thread_first, true);
	t_check_everything_released(w.main, w.main_first, true);
}

Test(arena, a_chunk_with_a_page_and_a_wrong_footer_still_stops_the_walk)
{
	t_world_init(t_sizes, T_NSIZES, t_sizes, T_NSIZES, 1);
	uintptr_t c = w.thread_first + 4096; /* the first free chunk: it has pages */
	cr_assert(rt_arena_free_range(c, t_chunk_size(c), 0, T_PAGE).start <
	          rt_arena_free_range(c, t_chunk_size(c), 0, T_PAGE).end);
	*W(c + t_chunk_size(c)) += 16;
	struct rt_arena_env env = t_env(1000000000, 1 << 20);
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(&env, w.main, 0, &t_view, &res), -1);
	cr_assert_not_null(res.failure);
	cr_assert_not(t_touched(c, c + t_chunk_size(c)));
}

Test(arena, a_bin_that_goes_from_heap_to_heap_is_walked_whole)
{
	t_world_init(t_sizes, T_NSIZES, t_sizes, T_NSIZES, 1);
	/* A second heap with two free chunks, linked into the unsorted bin between the first
	 * heap's: the heap looked up last changes at every step of the walk. */
	uintptr_t h2 = (uintptr_t)w.heaps + T_HEAP_MAX;
	*W(h2 + RT_ARENA_HEAP_AR_PTR) = w.thread;
	*W(h2 + RT_ARENA_HEAP_PREV) = (uintptr_t)w.heaps;
	*W(h2 + RT_ARENA_HEAP_SIZE) = 64 * 1024;
	*W(h2 + RT_ARENA_HEAP_MPROTECT) = 64 * 1024;
	*W(h2 + RT_ARENA_HEAP_PAGESIZE) = T_PAGE;
	uintptr_t old_top = t_top(w.thread);
	*W(old_top + 8) |= RT_ARENA_NON_MAIN;
	uintptr_t c = h2 + RT_ARENA_HEAP_INFO_SIZE;
	static const long sizes2[] = {64, -3 * T_PAGE, 64, -3 * T_PAGE, 64};
	uintptr_t frees[2], at = c;
	size_t nf = 0;
	for (size_t i = 0; i < sizeof(sizes2) / sizeof(sizes2[0]); i++) {
		size_t size = (size_t)labs(sizes2[i]);
		*W(at + 8) =
		    size | (i && sizes2[i - 1] < 0 ? 0 : RT_ARENA_PREV_INUSE) | RT_ARENA_NON_MAIN;
		if (sizes2[i] < 0) {
			*W(at + size) = size;
			frees[nf++] = at;
		} else {
			memset((void *)(at + 16), 0xab, size - 16);
		}
		at += size;
	}
	*W(w.thread + RT_ARENA_TOP) = at;
	*W(at + 8) = (h2 + 64 * 1024 - at) | RT_ARENA_PREV_INUSE;
	/* Insert each after a chunk of the first heap: the list alternates between the heaps. */
	uintptr_t unsorted = rt_arena_bin_at(w.thread, 1);
	uintptr_t after = *W(unsorted + 16);
	for (size_t i = 0; i < nf; i++) {
		uintptr_t next = *W(after + 16);
		*W(frees[i] + 16) = next;
		*W(frees[i] + 24) = after;
		*W(after + 16) = frees[i];
		*W(next + 24) = frees[i];
		after = *W(next + 16) == unsorted ? next : *W(next + 16);
	}
	struct rt_arena_env env = t_env(1000000000, 1 << 20);
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(&env, w.main, 0, &t_view, &res), 0, "%s",
	             res.failure ? res.failure : "");
	/* (t_release_ok knows the first heap only: the second heap's ranges are checked here.) */
	uintptr_t top = t_top(w.thread);
	for (size_t k = 0; k < w.nranges; k++) {
		struct rt_arena_range g = w.ranges[k];
		if (g.start < h2 || g.start >= h2 + T_HEAP_MAX)
			continue;
		bool inside = g.start >= top + RT_ARENA_CHUNK_HEADER && g.end <= h2 + 64 * 1024;
		for (size_t i = 0; i < nf; i++)
			inside |= g.start >= frees[i] + RT_ARENA_CHUNK_HEADER &&
			          g.end <= frees[i] + 3 * T_PAGE;
		cr_assert(inside, "a release outside the second heap's free chunks");
	}
	for (size_t i = 0; i < nf; i++) {
		struct rt_arena_range r = rt_arena_free_range(frees[i], 3 * T_PAGE, 0, T_PAGE);
		cr_assert(t_released(r.start, r.end), "the second heap's chunk %zu kept", i);
	}
	for (uintptr_t c1 = w.thread_first; c1 < old_top; c1 += t_chunk_size(c1)) {
		struct rt_arena_range r = rt_arena_free_range(c1, t_chunk_size(c1), 0, T_PAGE);
		cr_assert(!t_free(c1) || t_released(r.start, r.end), "the first heap's %#lx kept",
		          (unsigned long)c1);
	}
	cr_assert(rt_arena_view_holds(&t_view, frees[0]));
	cr_assert(rt_arena_view_holds(&t_view, w.thread_first));
	cr_assert_not(rt_arena_view_holds(&t_view, h2 + 64 * 1024));
}

/* A corrupted heap near a heap's end (review of issue 26): every word the release reads, the
 * prefetches' included, is inside a heap, with sizes that would wrap a bound (a word of -16..-1)
 * taken as wrong. t_load fails a test at the first read outside the world. */

Test(arena, a_wrapped_next_size_at_the_heap_end_is_not_read_past)
{
	/* A fastbin chunk 16 bytes before the main arena's end, the next header 0xfff...ff1:
	 * p + size + 16 wraps to p. The word that would say whether that next chunk is free is
	 * p's last; free, its links would be read past the end; in use, glibc says "invalid next
	 * size" where a wrapped bound would take it and clear its PREV_INUSE. */
	static const long sizes[] = {64, 64, 64, 64};
	for (uint64_t next_in_use = 0; next_in_use < 2; next_in_use++) {
		t_world_init(sizes, 4, sizes, 4, 1);
		uintptr_t end = w.main_first + T_SBRK;
		uintptr_t p = end - 64 - 16;
		*W(p + 8) = 64 | RT_ARENA_PREV_INUSE;
		*W(p + 56) = next_in_use;
		*W(end - 8) = ~(uint64_t)15 | RT_ARENA_PREV_INUSE;
		uintptr_t *head = (uintptr_t *)(w.main + RT_ARENA_FASTBINS + 2 * 8);
		*W(p + RT_ARENA_CHUNK_FD) = ((p + RT_ARENA_CHUNK_FD) >> 12) ^ *head;
		*head = p;
		struct rt_arena_result res;
		cr_assert_eq(rt_arena_release(t_consolidating_env(NULL), w.main, 0, &t_view, &res),
		             -1, "next chunk in use: %d", (int)next_in_use);
		cr_assert_not_null(res.failure);
		cr_assert_eq(*W(end - 8), ~(uint64_t)15 | RT_ARENA_PREV_INUSE);
	}
}

Test(arena, a_corrupted_fastbin_link_near_the_heap_end_is_not_read_past)
{
	static const long sizes[] = {64, 64, 64, 64};
	t_world_init(sizes, 4, sizes, 4, 1);
	cr_assert_eq(t_fastbin(w.main, w.main_first, 1), 1);
	/* One use after free: the fastbin chunk's link points 80 bytes before the main arena's
	 * end, where the top's last two words are 0 and -1 (stale data). */
	uintptr_t p = *(uintptr_t *)(w.main + RT_ARENA_FASTBINS + 2 * 8);
	uintptr_t end = w.main_first + T_SBRK;
	*W(p + RT_ARENA_CHUNK_FD) = ((p + RT_ARENA_CHUNK_FD) >> 12) ^ (end - 80);
	*W(end - 16) = 0;
	*W(end - 8) = ~(uint64_t)0;
	struct rt_arena_result res;
	cr_assert_eq(rt_arena_release(t_consolidating_env(NULL), w.main, 0, &t_view, &res), -1);
	cr_assert_not_null(res.failure);
}
