/* shapes: randomized glibc heap shapes for the release to act on, checked afterwards by glibc's
 * own checks and a full heap walk (issue 26: the release writes glibc's metadata when it empties
 * the fastbins). From --seed, each round draws a shape: how much of each block class (fastbin
 * sizes, small bins, large bins, blocks near the mmap threshold), which one block in K stays
 * (K of 2 to 256), in which order the rest are freed (random, forward, backward, strided), and
 * which of them another thread frees (onto the owner arena's fastbins without its lock). Every
 * builder thread has an arena of its own, the main thread builds in the main arena.
 *
 * Per round: the shape is built and prints "round R built ..."; until a line on stdin, churn
 * threads allocate and free blocks of every class in every arena, freeing across arenas, and
 * one thread forks: each child allocates, frees, calls malloc_trim(0), walks the heap and exits
 * 0 (the release may be between two holds when fork takes the arena locks). After the line,
 * with everything stopped: every live block is checked byte for byte, every arena is walked
 * chunk by chunk (headers, footers, free chunks coalesced and each in one bin list linked both
 * ways, fastbin chunks in use and of their bin's size), then malloc_trim(0), mallinfo2(), every
 * live block freed and the shape built and freed once more: glibc's always-on checks (unlink,
 * the unsorted bin, free's) abort the process on anything wrong. Prints "round R ok ..." and,
 * at the end, "shapes errors=E forks=F walked=W".
 *
 * MALLOC_CHECK_ and mcheck need libc_malloc_debug.so, which serves malloc itself: the release
 * stands down under it (malloc is not glibc's own), so they cannot check the release; the walk
 * does what glibc's do_check_malloc_state would.
 *
 * usage: shapes --seed S [--threads T] [--mib M] [--rounds R] */
#include "options.h"
#include "rt_arena.h"

#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#define SH_MAX_THREADS 16
#define SH_CHURN_RING 512
#define SH_FAST_MAX 120 /* the largest request a fastbin chunk serves */

struct sh_block {
	unsigned char *p;
	size_t size;
	bool live;
};

struct sh_builder {
	pthread_t thread;
	int index;
	uint64_t rng;
	struct sh_block *blocks;
	size_t n, cap;
};

static struct {
	uint64_t seed;
	int threads;
	long mib;
	int rounds;
} opts = {1, 3, 8, 2};

/* This round's shape. */
static struct {
	double weight[4]; /* fastbin, small, large, near the mmap threshold */
	size_t keep;
	int order; /* 0 random, 1 forward, 2 backward, 3 strided */
	int cross; /* one freed block in `cross` is freed by the next builder */
} shape;

enum { SH_IDLE, SH_BUILD, SH_CHURN, SH_CHECK, SH_FREE, SH_EXIT };
static _Atomic int sh_phase = SH_IDLE;
static atomic_long sh_errors, sh_forks, sh_walked;
static struct sh_builder sh_pool[SH_MAX_THREADS + 1];
static pthread_barrier_t sh_barrier;

static size_t
sh_size(uint64_t *rng)
{
	double u = wl_unit(rng), acc = 0, total = 0;
	for (int k = 0; k < 4; k++)
		total += shape.weight[k];
	int k = 0;
	for (; k < 3; k++) {
		acc += shape.weight[k];
		if (u * total < acc)
			break;
	}
	static const double lo[4] = {1, 121, 1009, 64 * 1024}, hi[4] = {120, 1008, 64 * 1024,
	                                                                 160 * 1024};
	return (size_t)(lo[k] + (hi[k] - lo[k]) * wl_unit(rng));
}

static unsigned char
sh_byte(const unsigned char *p, size_t i)
{
	return (unsigned char)(((uintptr_t)p >> 4) + i * 7);
}

static void
sh_fill(unsigned char *p, size_t size)
{
	for (size_t i = 0; i < size; i++)
		p[i] = sh_byte(p, i);
}

static bool
sh_intact(const unsigned char *p, size_t size)
{
	for (size_t i = 0; i < size; i++)
		if (p[i] != sh_byte(p, i))
			return false;
	return true;
}

static void
sh_error(const char *what, uintptr_t where)
{
	atomic_fetch_add(&sh_errors, 1);
	fprintf(stderr, "shapes: %s at %#" PRIxPTR "\n", what, where);
}

static void
sh_build(struct sh_builder *b)
{
	size_t bytes = (size_t)opts.mib << 20;
	b->n = 0;
	for (size_t used = 0; used < bytes; b->n++) {
		if (b->n == b->cap) {
			b->cap = b->cap ? 2 * b->cap : 4096;
			b->blocks = realloc(b->blocks, b->cap * sizeof(*b->blocks));
		}
		size_t size = sh_size(&b->rng);
		unsigned char *p = malloc(size);
		if (!b->blocks || !p) {
			sh_error("out of memory", 0);
			return;
		}
		sh_fill(p, size);
		b->blocks[b->n] = (struct sh_block){p, size, true};
		used += size;
	}
}

/* Frees all but one in shape.keep, in the shape's order; some of them go to the next builder,
 * which frees them once every builder is done with its own (cross-arena frees). */
static void
sh_free_shape(struct sh_builder *b, struct sh_block **handed, size_t *nhanded)
{
	size_t n = b->n, stride = 7 + wl_next(&b->rng) % 13;
	*nhanded = 0;
	*handed = malloc((n + 1) * sizeof(**handed));
	/* Blocks of fastbin sizes last: a free of 64 KiB or more, or a malloc of a large-bin size,
	 * would have glibc consolidate them itself before the release sees them. */
	for (size_t k = 0; k < 2 * n; k++) {
		bool fast_pass = k >= n;
		size_t i = k % n;
		switch (shape.order) {
		case 0:
			i = wl_next(&b->rng) % n;
			break;
		case 2:
			i = n - 1 - i;
			break;
		case 3:
			i = (i * stride) % n;
			break;
		}
		struct sh_block *blk = &b->blocks[i];
		if (!blk->live || i % shape.keep == 0 || (blk->size <= SH_FAST_MAX) != fast_pass)
			continue;
		blk->live = false;
		if (!sh_intact(blk->p, blk->size))
			sh_error("a block changed before its free", (uintptr_t)blk->p);
		if (*handed && wl_next(&b->rng) % (uint64_t)shape.cross == 0)
			(*handed)[(*nhanded)++] = *blk;
		else
			free(blk->p);
	}
	/* A random order left some unvisited: free them in address order of the array. */
	for (size_t i = 0; i < n; i++)
		if (b->blocks[i].live && i % shape.keep) {
			b->blocks[i].live = false;
			free(b->blocks[i].p);
		}
}

static void
sh_churn(struct sh_builder *b)
{
	struct sh_block ring[SH_CHURN_RING] = {{0}};
	for (size_t slot = 0; atomic_load(&sh_phase) == SH_CHURN;
	     slot = (slot + 1) % SH_CHURN_RING) {
		struct sh_block *r = &ring[slot];
		if (r->p && !sh_intact(r->p, r->size))
			sh_error("a churn block changed", (uintptr_t)r->p);
		free(r->p);
		/* Small requests, so that the fastbins stay for the release to empty while they
		 * are taken from and pushed onto; now and then a large one, which has glibc
		 * consolidate them itself. */
		r->size = sh_size(&b->rng) % (wl_next(&b->rng) % 64 ? 1000 : 4096) + 1;
		r->p = malloc(r->size);
		if (!r->p) {
			sh_error("out of memory", 0);
			break;
		}
		sh_fill(r->p, r->size);
	}
	for (size_t i = 0; i < SH_CHURN_RING; i++)
		free(ring[i].p);
}

/* Walks one heap range chunk by chunk: [first, end) up to the top or a thread heap's fenceposts.
 * Returns the free chunks met; counts errors. */
static size_t
sh_walk_range(uintptr_t first, uintptr_t end, uintptr_t top)
{
	size_t frees = 0, prev_size = 0;
	bool prev_free = false;
	uintptr_t c = first;
	while (c < end && c != top) {
		uint64_t head = *(const uint64_t *)(c + RT_ARENA_CHUNK_SIZE);
		size_t size = head & ~(uint64_t)7;
		if (size == 16 || size == 0)
			break; /* a thread heap's fencepost */
		if (size < RT_ARENA_MINSIZE || size % RT_ARENA_ALIGN || c + size > end) {
			sh_error("a chunk's size is wrong", c);
			return frees;
		}
		if (!(head & RT_ARENA_PREV_INUSE) != prev_free)
			sh_error("a chunk's PREV_INUSE is wrong", c);
		if (prev_free && *(const uint64_t *)c != prev_size)
			sh_error("a free chunk's footer is wrong", c);
		uint64_t next = *(const uint64_t *)(c + size + RT_ARENA_CHUNK_SIZE);
		bool f = !(next & RT_ARENA_PREV_INUSE);
		if (f && prev_free)
			sh_error("two free chunks side by side", c);
		if (f) {
			uintptr_t fd = *(const uintptr_t *)(c + RT_ARENA_CHUNK_FD);
			uintptr_t bk = *(const uintptr_t *)(c + RT_ARENA_CHUNK_BK);
			if (*(const uintptr_t *)(fd + RT_ARENA_CHUNK_BK) != c ||
			    *(const uintptr_t *)(bk + RT_ARENA_CHUNK_FD) != c)
				sh_error("a free chunk's links are broken", c);
			frees++;
		}
		atomic_fetch_add(&sh_walked, 1);
		prev_free = f;
		prev_size = size;
		c += size;
	}
	if (c == top && prev_free)
		sh_error("a free chunk borders the top", c);
	return frees;
}

/* Every bin list of an arena, both ways; the free chunks they hold. Every fastbin chunk of its
 * bin's size. */
static size_t
sh_walk_bins(uintptr_t a)
{
	size_t listed = 0;
	for (int i = 1; i < RT_ARENA_NBINS; i++) {
		uintptr_t bin = rt_arena_bin_at(a, i);
		for (uintptr_t c = *(const uintptr_t *)(bin + RT_ARENA_CHUNK_FD); c != bin;
		     c = *(const uintptr_t *)(c + RT_ARENA_CHUNK_FD)) {
			if (*(const uintptr_t *)(*(const uintptr_t *)(c + RT_ARENA_CHUNK_FD) +
			                         RT_ARENA_CHUNK_BK) != c) {
				sh_error("a bin list is broken", c);
				return listed;
			}
			size_t size = *(const uint64_t *)(c + RT_ARENA_CHUNK_SIZE) & ~(uint64_t)7;
			if (i >= 2 && rt_arena_bin_index(size) != i)
				sh_error("a chunk sits in the wrong bin", c);
			listed++;
		}
	}
	for (int f = 0; f < RT_ARENA_NFASTBINS; f++)
		for (uintptr_t c = *(const uintptr_t *)(a + RT_ARENA_FASTBINS + (uintptr_t)f * 8);
		     c; c = ((c + RT_ARENA_CHUNK_FD) >> 12) ^
		            *(const uintptr_t *)(c + RT_ARENA_CHUNK_FD))
			if ((*(const uint64_t *)(c + RT_ARENA_CHUNK_SIZE) >> 4) - 2 != (uint64_t)f) {
				sh_error("a fastbin chunk has another size", c);
				break;
			}
	return listed;
}

/* The whole heap, every arena, as do_check_malloc_state would check it; nothing may run
 * meanwhile. Arenas are found as the release finds them: the main arena from a thread arena's
 * ring (every thread heap starts with heap_info, the first one holds its arena). */
static void
sh_walk_heap(void)
{
	uintptr_t start = 0;
	FILE *maps = fopen("/proc/self/maps", "r");
	char line[512];
	while (maps && fgets(line, sizeof(line), maps) && !start) {
		uintptr_t lo, hi;
		char perms[8];
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s", &lo, &hi, perms) == 3 &&
		    !strcmp(perms, "rw-p") && lo % RT_ARENA_HEAP_MAX == 0 &&
		    *(const uintptr_t *)lo == lo + RT_ARENA_HEAP_INFO_SIZE)
			start = lo + RT_ARENA_HEAP_INFO_SIZE;
	}
	if (maps)
		fclose(maps);
	if (!start) {
		sh_error("no thread arena found", 0);
		return;
	}
	uintptr_t a = start;
	for (int n = 0; n < 1024; n++) {
		uintptr_t top = *(const uintptr_t *)(a + RT_ARENA_TOP);
		size_t frees = 0;
		bool main_arena = a % RT_ARENA_HEAP_MAX != RT_ARENA_HEAP_INFO_SIZE ||
		                  *(const uintptr_t *)(a - RT_ARENA_HEAP_INFO_SIZE) != a;
		if (main_arena) {
			size_t top_size =
			    *(const uint64_t *)(top + RT_ARENA_CHUNK_SIZE) & ~(uint64_t)7;
			uintptr_t end = top + top_size;
			uintptr_t base = end - *(const uintptr_t *)(a + RT_ARENA_SYSTEM_MEM);
			frees = sh_walk_range((base + 15) & ~(uintptr_t)15, end, top);
		} else {
			for (uintptr_t h = top & ~(RT_ARENA_HEAP_MAX - 1); h;
			     h = *(const uintptr_t *)(h + RT_ARENA_HEAP_PREV)) {
				uintptr_t first = h + RT_ARENA_HEAP_INFO_SIZE;
				if (first == a)
					first = a + RT_ARENA_STATE_SIZE + 8;
				size_t size = *(const size_t *)(h + RT_ARENA_HEAP_SIZE);
				frees += sh_walk_range(first, h + size, top);
			}
		}
		if (sh_walk_bins(a) != frees)
			sh_error("an arena's free chunks and its bins' lists differ", a);
		a = *(const uintptr_t *)(a + RT_ARENA_NEXT);
		if (a == start)
			return;
	}
	sh_error("the arena ring does not close", start);
}

/* One child per fork: works its inherited heap, checks it and exits. */
static void
sh_child(uint64_t rng)
{
	void *p[64];
	for (int i = 0; i < 64; i++) {
		size_t size = sh_size(&rng);
		p[i] = malloc(size);
		if (p[i])
			memset(p[i], 3, size);
	}
	for (int i = 0; i < 64; i += 2)
		free(p[i]);
	malloc_trim(0);
	for (int i = 1; i < 64; i += 2)
		free(p[i]);
	_exit(0);
}

static void *
sh_forker(void *arg)
{
	uint64_t rng = wl_seed(opts.seed ^ (uintptr_t)arg);
	while (atomic_load(&sh_phase) == SH_CHURN) {
		pid_t pid = fork();
		if (pid == 0)
			sh_child(rng);
		int status = 0;
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0) {
			sh_error("a fork child failed", (uintptr_t)status);
			break;
		}
		atomic_fetch_add(&sh_forks, 1);
		wl_next(&rng);
		struct timespec ts = {0, 2 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static struct sh_block *sh_handed[SH_MAX_THREADS + 1];
static size_t sh_nhanded[SH_MAX_THREADS + 1];

/* A builder: each phase once per round, in step with the main thread. */
static void *
sh_builder_main(void *arg)
{
	struct sh_builder *b = arg;
	for (;;) {
		pthread_barrier_wait(&sh_barrier);
		int phase = atomic_load(&sh_phase);
		if (phase == SH_EXIT)
			return NULL;
		if (phase == SH_BUILD) {
			sh_build(b);
			sh_free_shape(b, &sh_handed[b->index], &sh_nhanded[b->index]);
		} else if (phase == SH_CHURN) {
			/* The blocks handed over by the previous builder, freed from this arena. */
			int from = (b->index + opts.threads) % (opts.threads + 1);
			for (size_t i = 0; i < sh_nhanded[from]; i++)
				free(sh_handed[from][i].p);
			free(sh_handed[from]);
			sh_handed[from] = NULL;
			sh_nhanded[from] = 0;
			sh_churn(b);
		} else if (phase == SH_FREE) {
			for (size_t i = 0; i < b->n; i++)
				if (b->blocks[i].live)
					free(b->blocks[i].p);
			b->n = 0;
		}
		pthread_barrier_wait(&sh_barrier);
	}
}

/* Runs one phase on every builder (the main thread is builder 0, in the main arena). */
static void
sh_phase_all(int phase)
{
	atomic_store(&sh_phase, phase);
	pthread_barrier_wait(&sh_barrier);
	if (phase == SH_BUILD) {
		sh_build(&sh_pool[0]);
		sh_free_shape(&sh_pool[0], &sh_handed[0], &sh_nhanded[0]);
	} else if (phase == SH_FREE) {
		for (size_t i = 0; i < sh_pool[0].n; i++)
			if (sh_pool[0].blocks[i].live)
				free(sh_pool[0].blocks[i].p);
		sh_pool[0].n = 0;
	}
}

static void
sh_draw_shape(uint64_t *rng)
{
	static const size_t keeps[] = {2, 4, 16, 64, 256};
	for (int k = 0; k < 4; k++)
		shape.weight[k] = wl_next(rng) % 3 ? wl_unit(rng) : 0;
	shape.weight[(int)(wl_next(rng) % 3)] += 0.5;
	shape.weight[3] *= 0.1;
	shape.keep = keeps[wl_next(rng) % 5];
	shape.order = (int)(wl_next(rng) % 4);
	shape.cross = 2 + (int)(wl_next(rng) % 8);
}

int
main(int argc, char **argv)
{
	const struct wl_option options[] = {
	    {"seed", WL_OPT_U64, &opts.seed},
	    {"threads", WL_OPT_INT, &opts.threads},
	    {"mib", WL_OPT_LONG, &opts.mib},
	    {"rounds", WL_OPT_INT, &opts.rounds},
	};
	if (!WL_PARSE_OPTIONS(argc, argv, options) || opts.threads < 1 ||
	    opts.threads > SH_MAX_THREADS || opts.mib < 1 || opts.rounds < 1) {
		fprintf(stderr, "usage: shapes --seed S [--threads T] [--mib M] [--rounds R]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	uint64_t rng = wl_seed(opts.seed);
	pthread_barrier_init(&sh_barrier, NULL, (unsigned)opts.threads + 1);
	for (int i = 0; i <= opts.threads; i++) {
		sh_pool[i].index = i;
		sh_pool[i].rng = wl_seed(opts.seed * 131 + (uint64_t)i);
		if (i > 0)
			pthread_create(&sh_pool[i].thread, NULL, sh_builder_main, &sh_pool[i]);
	}
	char line[64];
	for (int r = 1; r <= opts.rounds; r++) {
		sh_draw_shape(&rng);
		sh_phase_all(SH_BUILD);
		pthread_barrier_wait(&sh_barrier);
		printf("round %d built keep=%zu order=%d cross=%d weights=%.2f,%.2f,%.2f,%.2f\n", r,
		       shape.keep, shape.order, shape.cross, shape.weight[0], shape.weight[1],
		       shape.weight[2], shape.weight[3]);
		/* Churn and forks until the driver says the release is over. */
		sh_phase_all(SH_CHURN);
		pthread_t forker;
		pthread_create(&forker, NULL, sh_forker, (void *)(uintptr_t)r);
		for (size_t i = 0; i < sh_nhanded[opts.threads]; i++)
			free(sh_handed[opts.threads][i].p);
		free(sh_handed[opts.threads]);
		sh_handed[opts.threads] = NULL;
		sh_nhanded[opts.threads] = 0;
		bool more = fgets(line, sizeof(line), stdin) != NULL;
		atomic_store(&sh_phase, SH_CHECK);
		pthread_join(forker, NULL);
		pthread_barrier_wait(&sh_barrier);
		for (int i = 0; i <= opts.threads; i++)
			for (size_t k = 0; k < sh_pool[i].n; k++)
				if (sh_pool[i].blocks[k].live &&
				    !sh_intact(sh_pool[i].blocks[k].p, sh_pool[i].blocks[k].size))
					sh_error("a live block changed",
					         (uintptr_t)sh_pool[i].blocks[k].p);
		sh_walk_heap();
		malloc_trim(0);
		struct mallinfo2 mi = mallinfo2();
		sh_walk_heap();
		sh_phase_all(SH_FREE);
		pthread_barrier_wait(&sh_barrier);
		printf("round %d ok in_use_kib=%zu errors=%ld\n", r, mi.uordblks / 1024,
		       atomic_load(&sh_errors));
		if (!more)
			break;
	}
	printf("shapes errors=%ld forks=%ld walked=%ld\n", atomic_load(&sh_errors),
	       atomic_load(&sh_forks), atomic_load(&sh_walked));
	return atomic_load(&sh_errors) ? 1 : 0;
}
