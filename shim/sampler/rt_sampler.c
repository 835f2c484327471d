/* Sampled allocation sites. With ROUNDTRIM_SITES off nothing here runs and the malloc family is
 * what it was: the real free and realloc are called directly.
 *
 * With it on, each thread's byte budget (rt_tally) is armed with an exponential gap of mean S
 * drawn from the thread's own generator, so the allocation in which the budget runs out holds
 * the sampled byte and takes the cold path anyway: there its stack is taken into the thread's
 * own buffer (libunwind's unw_backtrace, whose per-thread cache makes a warm stack cost tens of
 * nanoseconds), and once the real allocator returned the block, the block is recorded in the
 * table of live samples. That table is open-addressed by the block's page, eight pointers to a
 * cache line, with a byte per line that counts its samples: a free reads that byte, and the line
 * only when it is not zero, and removes a match with a CAS, so the free path takes no lock and
 * writes no shared line unless the block was sampled. The
 * worker walks the table once per action round, sums the unbiased weights per site, and writes
 * the sites that grew (policy/rt_sites).
 *
 * libunwind is loaded with dlopen, RTLD_LOCAL, and only here: linked into a preloaded library,
 * its exported _Unwind_RaiseException and backtrace would replace the host's (C++ exceptions
 * would unwind through it). Its first unwind opens a pipe that it reads to validate addresses in
 * frames without unwind information; that pipe is made while every descriptor below the
 * library's floor is taken, so it lands above it like the library's own (roundtrim(7),
 * DESCRIPTORS), and sampling stands down if the program ever closes it. No libunwind lock may
 * be held across a fork (a child would hang on it): unwinds hold a read lock that the fork's
 * prepare handler takes for writing. */
#include "rt_sampler.h"
#include "rt_close.h"
#include "rt_config.h"
#include "rt_fd.h"
#include "rt_malloc.h"
#include "rt_out.h"
#include "rt_outputs.h"
#include "rt_pages.h"
#include "rt_real.h"
#include "rt_sites.h"
#include "rt_tally.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The table of live samples: 2^16 cache lines of 8 pointers (4 MiB of address space, of which
 * only lines that ever held a sample become resident). A line serves the pages whose numbers
 * agree in their low 16 bits after a fold of the higher ones: frees of neighbouring blocks read
 * neighbouring lines. A sample whose line is full is dropped, and counted. */
#define RT_SAMPLER_LINES (1u << 16)
#define RT_SAMPLER_WAYS 8
#define RT_SAMPLER_CLAIMED ((uintptr_t)1)
/* Sites: up to 32767 distinct stacks, found through an index of twice as many slots. */
#define RT_SAMPLER_SITES 32768u
#define RT_SAMPLER_INDEX (2 * RT_SAMPLER_SITES)
#define RT_SAMPLER_PROBES 64
#define RT_SAMPLER_ID_BITS 24
#define RT_SAMPLER_ID_MASK ((UINT64_C(1) << RT_SAMPLER_ID_BITS) - 1)
/* Frames of the library itself (the wrapper, the cold path, this file) before the caller's. */
#define RT_SAMPLER_RAW_MAX (RT_SITES_FRAMES_MAX + 8)
#define RT_SAMPLER_MODULES 512
/* Python names: function and file per frame, for the sites that have Python frames. */
#define RT_SAMPLER_NAME_MAX 96
#define RT_SAMPLER_PY_SITES 8192

struct rt_sampler_value {
	uint32_t site;
	uint32_t epoch; /* the worker's report count when it was taken */
	uint64_t size;
};

struct rt_sampler_entry {
	uint64_t hash;
	uint16_t nframes, npy;
	uint32_t names; /* index + 1 in the Python names, 0 for none */
	uintptr_t frames[RT_SITES_FRAMES_MAX];
	uintptr_t py[RT_SITES_PY_MAX];
};

struct rt_sampler_pynames {
	char function[RT_SAMPLER_NAME_MAX];
	char file[RT_SAMPLER_NAME_MAX * 2];
	uint32_t line;
};

/* Each thread's own: written only by it. */
struct rt_sampler_thread {
	uint64_t left; /* bytes until the next sampled byte; 0 before the first draw */
	uint64_t rng;
	bool busy;    /* inside the sampler: what it allocates or frees is not sampled */
	bool pending; /* the allocation under way was sampled; its stack follows */
	uint16_t nframes, npy;
	uintptr_t raw[RT_SAMPLER_RAW_MAX];
	uintptr_t py[RT_SITES_PY_MAX];
};

static __thread struct rt_sampler_thread rt_st;

static struct {
	atomic_bool sampling; /* read by every cold path */
	atomic_bool ready;    /* the worker may walk */
	uint64_t mean;
	int (*backtrace)(void **, int);
	void (*real_free)(void *);
	void *(*real_realloc)(void *, size_t);
	uintptr_t self_lo, self_hi; /* this library's own code */
	char exe[PATH_MAX];
	/* libunwind's pipe, when this library made it: checked before each unwind. */
	int pipe_fd[2];
	dev_t pipe_dev[2];
	ino_t pipe_ino[2];
	bool pipe_known;
	bool py;
	pthread_rwlock_t fork_lock;
	bool fork_locked;
	_Atomic uintptr_t *keys;
	/* How many samples each line holds: a free whose line holds none reads one byte. */
	_Atomic unsigned char *counts;
	struct rt_sampler_value *values;
	atomic_uint epoch;
	atomic_uint_fast64_t dropped;
	_Atomic uint64_t *index;
	struct rt_sampler_entry *entries;
	atomic_uint nentries; /* ids handed out; 0 is none */
	struct rt_sampler_pynames *names;
	atomic_uint nnames;
} rt_sp = {.pipe_fd = {-1, -1}, .fork_lock = PTHREAD_RWLOCK_INITIALIZER};

/* The worker's own, between two reports. */
static struct {
	double *live, *new_var, *old_var, *prev_live, *prev_var;
	struct rt_sites_change *changes;
	unsigned char *defined; /* site lines written to this process's file */
	uint64_t last_round;
	struct {
		uintptr_t lo, hi, base;
		char path[RT_SITES_TEXT_MAX];
	} modules[RT_SAMPLER_MODULES];
	unsigned nmodules;
	char line[RT_SITES_LINE_MAX];
} rt_sw RT_PAGES_APART;

static void *
rt_sampler_map(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* --- The live table. */

static inline size_t
rt_sampler_line(const void *p)
{
	uintptr_t page = (uintptr_t)p >> 12;
	return (size_t)((page ^ (page >> 16)) & (RT_SAMPLER_LINES - 1));
}

static bool
rt_sampler_insert(const void *p, struct rt_sampler_value v)
{
	size_t index = rt_sampler_line(p), line = index * RT_SAMPLER_WAYS;
	/* Counted before the key is there: a free of p, which comes after, sees both. */
	atomic_fetch_add_explicit(&rt_sp.counts[index], 1, memory_order_relaxed);
	for (unsigned w = 0; w < RT_SAMPLER_WAYS; w++) {
		_Atomic uintptr_t *key = &rt_sp.keys[line + w];
		uintptr_t empty = 0;
		if (atomic_load_explicit(key, memory_order_relaxed) != 0 ||
		    !atomic_compare_exchange_strong_explicit(key, &empty, RT_SAMPLER_CLAIMED,
		                                             memory_order_acquire,
		                                             memory_order_relaxed))
			continue;
		rt_sp.values[line + w] = v;
		atomic_store_explicit(key, (uintptr_t)p, memory_order_release);
		return true;
	}
	atomic_fetch_sub_explicit(&rt_sp.counts[index], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&rt_sp.dropped, 1, memory_order_relaxed);
	return false;
}

/* Removes p when it is a live sample; its record into *out. The program frees a block only after
 * its malloc returned, which was after the insert: a relaxed load sees it. */
static inline bool
rt_sampler_forget(const void *p, struct rt_sampler_value *out)
{
	size_t index = rt_sampler_line(p), line = index * RT_SAMPLER_WAYS;
	if (__builtin_expect(
	        !p || !atomic_load_explicit(&rt_sp.counts[index], memory_order_relaxed), 1))
		return false;
	for (unsigned w = 0; w < RT_SAMPLER_WAYS; w++) {
		_Atomic uintptr_t *key = &rt_sp.keys[line + w];
		uintptr_t seen = atomic_load_explicit(key, memory_order_relaxed);
		if (seen != (uintptr_t)p)
			continue;
		if (out)
			*out = rt_sp.values[line + w];
		if (!atomic_compare_exchange_strong_explicit(key, &seen, 0, memory_order_relaxed,
		                                             memory_order_relaxed))
			return false;
		atomic_fetch_sub_explicit(&rt_sp.counts[index], 1, memory_order_relaxed);
		return true;
	}
	return false;
}

static void
rt_sampler_free(void *p)
{
	rt_sampler_forget(p, NULL);
	rt_sp.real_free(p);
}

/* A sampled block that is reallocated is freed: the block that comes back is a new allocation,
 * sampled or not by its own bytes. Removed before the call, so that another thread that gets
 * the same address from the allocator meanwhile finds no stale record. */
static void *
rt_sampler_realloc(void *p, size_t size)
{
	struct rt_sampler_value old;
	bool had = rt_sampler_forget(p, &old);
	void *q = rt_sp.real_realloc(p, size);
	if (had && !q && size != 0)
		rt_sampler_insert(p, old); /* it failed: p lives on */
	return q;
}

/* --- Sites. */

static uint64_t
rt_sampler_hash(const struct rt_sampler_thread *t)
{
	uint64_t h = UINT64_C(0x6a09e667f3bcc909) ^ ((uint64_t)t->nframes << 8 | t->npy);
	for (unsigned i = 0; i < t->nframes + t->npy; i++) {
		uint64_t w = i < t->nframes ? t->raw[i] : t->py[i - t->nframes];
		h = (h ^ (w * UINT64_C(0x9e3779b97f4a7c15))) * UINT64_C(0xbf58476d1ce4e5b9);
		h ^= h >> 29;
	}
	return h;
}

static bool
rt_sampler_same(const struct rt_sampler_entry *e, const struct rt_sampler_thread *t)
{
	return e->nframes == t->nframes && e->npy == t->npy &&
	       !memcmp(e->frames, t->raw, t->nframes * sizeof(uintptr_t)) &&
	       !memcmp(e->py, t->py, t->npy * sizeof(uintptr_t));
}

/* A new entry for the thread's stack, not yet published; 0 when full. */
static uint32_t
rt_sampler_new_entry(const struct rt_sampler_thread *t, uint64_t hash)
{
	/* Checked first: past a full table, an add per sample would wrap in a days-long run and
	 * hand out the ids of live entries again. */
	if (atomic_load(&rt_sp.nentries) + 1 >= RT_SAMPLER_SITES)
		return 0;
	unsigned id = atomic_fetch_add(&rt_sp.nentries, 1) + 1;
	if (id >= RT_SAMPLER_SITES)
		return 0;
	struct rt_sampler_entry *e = &rt_sp.entries[id];
	e->hash = hash;
	e->nframes = t->nframes;
	e->npy = t->npy;
	memcpy(e->frames, t->raw, t->nframes * sizeof(uintptr_t));
	memcpy(e->py, t->py, t->npy * sizeof(uintptr_t));
	e->names = 0;
	if (t->npy) {
		unsigned n = atomic_fetch_add(&rt_sp.nnames, t->npy);
		if (n + t->npy <= RT_SAMPLER_PY_SITES * RT_SITES_PY_MAX) {
			for (unsigned i = 0; i < t->npy; i++) {
				struct rt_sampler_pynames *pn = &rt_sp.names[n + i];
				rt_sampler_py_names(t->py[i], pn->function, sizeof(pn->function),
				                    pn->file, sizeof(pn->file), &pn->line);
			}
			e->names = n + 1;
		}
	}
	return id;
}

/* The site of the thread's stack, found or added; 0 when the tables are full. */
static uint32_t
rt_sampler_site(const struct rt_sampler_thread *t)
{
	uint64_t hash = rt_sampler_hash(t);
	uint64_t tag = hash & ~RT_SAMPLER_ID_MASK;
	uint32_t mine = 0;
	for (unsigned probe = 0; probe < RT_SAMPLER_PROBES; probe++) {
		_Atomic uint64_t *slot = &rt_sp.index[(hash + probe) & (RT_SAMPLER_INDEX - 1)];
		uint64_t v = atomic_load_explicit(slot, memory_order_acquire);
		if (v == 0) {
			if (!mine && !(mine = rt_sampler_new_entry(t, hash)))
				return 0;
			/* Release: whoever reads the slot sees the entry whole. */
			if (atomic_compare_exchange_strong_explicit(
			        slot, &v, tag | mine, memory_order_acq_rel, memory_order_acquire))
				return mine;
		}
		uint32_t id = (uint32_t)(v & RT_SAMPLER_ID_MASK);
		if ((v & ~RT_SAMPLER_ID_MASK) == tag && rt_sampler_same(&rt_sp.entries[id], t))
			return id; /* an entry of ours made meanwhile stays unused */
	}
	return 0;
}

/* --- Taking a sample. */

/* Whether libunwind's pipe is still its own: what each descriptor refers to (fstat). A lighter
 * check (open and close-on-exec) would pass for a number the program closed and opened again,
 * as CPython opens everything, close-on-exec. */
static bool
rt_sampler_pipe_intact(void)
{
	if (!rt_sp.pipe_known)
		return true;
	for (int i = 0; i < 2; i++) {
		struct stat st;
		if (fstat(rt_sp.pipe_fd[i], &st) != 0 || st.st_dev != rt_sp.pipe_dev[i] ||
		    st.st_ino != rt_sp.pipe_ino[i])
			return false;
	}
	return true;
}

/* False, once sampling stood down, when the program closed or replaced libunwind's pipe: an
 * unwind through a frame without unwind information would read and write whatever the program
 * put at its numbers. Checked before each unwind. The pipe is in the program's table, not in
 * the worker's own, which cannot check it. */
static bool
rt_sampler_keep_sampling(void)
{
	if (rt_sampler_pipe_intact())
		return true;
	bool was = true;
	if (atomic_compare_exchange_strong(&rt_sp.sampling, &was, false))
		rt_warn("sites off: the program closed libunwind's descriptors %d and %d",
		        rt_sp.pipe_fd[0], rt_sp.pipe_fd[1]);
	return false;
}

/* The stack of the allocation under way, innermost first, without this library's frames. */
static void
rt_sampler_capture(struct rt_sampler_thread *t)
{
	if (!rt_sampler_keep_sampling())
		return;
	pthread_rwlock_rdlock(&rt_sp.fork_lock);
	int n = rt_sp.backtrace((void **)t->raw, RT_SAMPLER_RAW_MAX);
	pthread_rwlock_unlock(&rt_sp.fork_lock);
	int skip = 0;
	while (skip < n && t->raw[skip] >= rt_sp.self_lo && t->raw[skip] < rt_sp.self_hi)
		skip++;
	int keep = n - skip > RT_SITES_FRAMES_MAX ? RT_SITES_FRAMES_MAX : n - skip;
	if (keep <= 0)
		return;
	memmove(t->raw, t->raw + skip, (size_t)keep * sizeof(uintptr_t));
	t->nframes = (uint16_t)keep;
	t->npy = rt_sp.py ? (uint16_t)rt_sampler_py_frames(t->py, RT_SITES_PY_MAX) : 0;
	t->pending = true;
}

static uint64_t
rt_sampler_draw(struct rt_sampler_thread *t)
{
	return rt_sites_gap(rt_sites_random(&t->rng), rt_sp.mean);
}

uint64_t
rt_sampler_event(uint64_t consumed, uint64_t period)
{
	struct rt_sampler_thread *t = &rt_st;
	/* The worker and exiting threads are retired: what they allocate is not the program's. */
	if (!atomic_load_explicit(&rt_sp.sampling, memory_order_relaxed) || t->busy || rt_t.retired)
		return period;
	int saved_errno = errno;
	t->busy = true;
	if (!t->rng) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		t->rng = rt_sites_seed((uint64_t)(uintptr_t)t ^ (uint64_t)ts.tv_nsec ^
		                       ((uint64_t)ts.tv_sec << 32));
		t->left = rt_sampler_draw(t);
	} else if (consumed >= t->left) {
		rt_sampler_capture(t);
		t->left = rt_sampler_draw(t);
	} else {
		t->left -= consumed;
	}
	t->busy = false;
	errno = saved_errno;
	return period < t->left ? period : t->left;
}

void *
rt_sampler_took(void *p, size_t size)
{
	struct rt_sampler_thread *t = &rt_st;
	if (__builtin_expect(!t->pending, 1))
		return p;
	t->pending = false;
	if (!p)
		return p;
	int saved_errno = errno;
	t->busy = true;
	uint32_t site = rt_sampler_site(t);
	if (site)
		rt_sampler_insert(
		    p, (struct rt_sampler_value){
		           .site = site,
		           .epoch = atomic_load_explicit(&rt_sp.epoch, memory_order_relaxed),
		           .size = size});
	else
		atomic_fetch_add_explicit(&rt_sp.dropped, 1, memory_order_relaxed);
	t->busy = false;
	errno = saved_errno;
	return p;
}

/* --- Fork: no unwind in progress while the process is copied. */

static void
rt_sampler_prepare(void)
{
	/* A fork from a signal handler that interrupted this thread's own unwind must not wait
	 * for itself. */
	rt_sp.fork_locked = !rt_st.busy && pthread_rwlock_wrlock(&rt_sp.fork_lock) == 0;
}

static void
rt_sampler_parent(void)
{
	if (rt_sp.fork_locked)
		pthread_rwlock_unlock(&rt_sp.fork_lock);
	rt_sp.fork_locked = false;
}

static void
rt_sampler_child(void)
{
	rt_sp.fork_lock = (pthread_rwlock_t)PTHREAD_RWLOCK_INITIALIZER;
	rt_sp.fork_locked = false;
	rt_sampler_py_forget_parent();
	/* The parent's reports are not the child's: its file starts afresh. */
	if (rt_sw.defined) {
		memset(rt_sw.defined, 0, RT_SAMPLER_SITES);
		memset(rt_sw.prev_live, 0, RT_SAMPLER_SITES * sizeof(double));
		memset(rt_sw.prev_var, 0, RT_SAMPLER_SITES * sizeof(double));
	}
	rt_sw.last_round = 0;
}

/* --- Start-up. */

/* The addresses an object's loaded segments span; lo >= hi when it has none. */
static void
rt_sampler_object_span(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi)
{
	*lo = UINTPTR_MAX;
	*hi = 0;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;
		*lo = start < *lo ? start : *lo;
		*hi = start + ph->p_memsz > *hi ? start + ph->p_memsz : *hi;
	}
}

struct rt_sampler_find {
	uintptr_t addr;
	uintptr_t lo, hi;
	bool found;
};

static int
rt_sampler_find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct rt_sampler_find *f = arg;
	uintptr_t lo, hi;
	rt_sampler_object_span(info, &lo, &hi);
	if (f->addr < lo || f->addr >= hi)
		return 0;
	f->lo = lo;
	f->hi = hi;
	f->found = true;
	return 1;
}

/* Takes every free descriptor below the floor, so that the pipe libunwind opens on its first
 * unwind lands above it; returns how many it took into fill. */
static int
rt_sampler_fill_below_floor(int src, int *fill, int max)
{
	int n = 0, floor = rt_fd_floor();
	while (n < max) {
		int fd = fcntl(src, F_DUPFD_CLOEXEC, 0);
		if (fd < 0)
			break;
		if (fd >= floor) {
			rt_close_in_this_table(fd);
			break;
		}
		fill[n++] = fd;
	}
	return n;
}

/* libunwind's first unwind, with its pipe lifted above the floor and remembered; false when it
 * could not be. The program's own libunwind (loaded before) may have its pipe already, which is
 * the program's business; if this unwind makes it, it lands above the floor too. */
static bool
rt_sampler_first_unwind(bool loaded_before)
{
	void *frames[4];
	static int fill[1024];
	int src = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int n = src >= 0 ? rt_sampler_fill_below_floor(src, fill, 1024) : 0;
	/* The two numbers pipe2 will hand out now. */
	int a = src >= 0 ? fcntl(src, F_DUPFD_CLOEXEC, 0) : -1;
	int b = a >= 0 ? fcntl(src, F_DUPFD_CLOEXEC, 0) : -1;
	if (a >= 0)
		rt_close_in_this_table(a);
	if (b >= 0)
		rt_close_in_this_table(b);
	rt_sp.backtrace(frames, 4);
	for (int i = 0; i < n; i++)
		rt_close_in_this_table(fill[i]);
	if (src >= 0)
		rt_close_in_this_table(src);
	struct stat sa, sb;
	if (a >= rt_fd_floor() && b >= 0 && fstat(a, &sa) == 0 && S_ISFIFO(sa.st_mode) &&
	    fstat(b, &sb) == 0 && S_ISFIFO(sb.st_mode)) {
		rt_sp.pipe_fd[0] = a;
		rt_sp.pipe_fd[1] = b;
		rt_sp.pipe_dev[0] = sa.st_dev;
		rt_sp.pipe_ino[0] = sa.st_ino;
		rt_sp.pipe_dev[1] = sb.st_dev;
		rt_sp.pipe_ino[1] = sb.st_ino;
		rt_sp.pipe_known = !loaded_before;
		return true;
	}
	return loaded_before;
}

static bool
rt_sampler_map_tables(void)
{
	rt_sp.keys = rt_sampler_map(RT_SAMPLER_LINES * RT_SAMPLER_WAYS * sizeof(uintptr_t));
	rt_sp.counts = rt_sampler_map(RT_SAMPLER_LINES);
	rt_sp.values =
	    rt_sampler_map(RT_SAMPLER_LINES * RT_SAMPLER_WAYS * sizeof(struct rt_sampler_value));
	rt_sp.index = rt_sampler_map(RT_SAMPLER_INDEX * sizeof(uint64_t));
	rt_sp.entries = rt_sampler_map(RT_SAMPLER_SITES * sizeof(struct rt_sampler_entry));
	rt_sp.names = rt_sampler_map(RT_SAMPLER_PY_SITES * RT_SITES_PY_MAX *
	                             sizeof(struct rt_sampler_pynames));
	size_t per_site = 5 * sizeof(double) + sizeof(struct rt_sites_change) + 1;
	unsigned char *w = rt_sampler_map(RT_SAMPLER_SITES * per_site);
	if (!rt_sp.keys || !rt_sp.counts || !rt_sp.values || !rt_sp.index || !rt_sp.entries ||
	    !rt_sp.names || !w)
		return false;
	double *d = (double *)w;
	rt_sw.live = d;
	rt_sw.new_var = d + RT_SAMPLER_SITES;
	rt_sw.old_var = d + 2 * RT_SAMPLER_SITES;
	rt_sw.prev_live = d + 3 * RT_SAMPLER_SITES;
	rt_sw.prev_var = d + 4 * RT_SAMPLER_SITES;
	rt_sw.changes = (struct rt_sites_change *)(d + 5 * RT_SAMPLER_SITES);
	rt_sw.defined = (unsigned char *)(rt_sw.changes + RT_SAMPLER_SITES);
	return true;
}

bool
rt_sampler_init(const struct rt_config *cfg)
{
	if (!cfg->sites[0] || !rt_outputs_have_sites())
		return false;
	rt_sp.mean = cfg->sample_bytes;
	struct rt_sampler_find self = {.addr = (uintptr_t)&rt_sampler_init};
	dl_iterate_phdr(rt_sampler_find_object, &self);
	ssize_t len = readlink("/proc/self/exe", rt_sp.exe, sizeof(rt_sp.exe) - 1);
	rt_sp.exe[len > 0 ? len : 0] = '\0';
	if (!self.found) {
		rt_warn("sites off: the library cannot find its own object");
		return false;
	}
	if (!rt_sampler_map_tables()) {
		rt_warn("sites off: cannot map its tables: %s", strerror(errno));
		return false;
	}
	rt_sp.self_lo = self.lo;
	rt_sp.self_hi = self.hi;
	bool loaded_before = dlopen("libunwind.so.8", RTLD_NOW | RTLD_NOLOAD) != NULL;
	void *unwind = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	*(void **)&rt_sp.backtrace = unwind ? dlsym(unwind, "unw_backtrace") : NULL;
	if (!rt_sp.backtrace) {
		rt_warn("sites off: cannot load libunwind.so.8 (Debian: libunwind8): %.200s",
		        unwind ? "no unw_backtrace" : dlerror());
		return false;
	}
	if (!rt_sampler_first_unwind(loaded_before)) {
		rt_warn("sites off: libunwind's pipe could not be kept above descriptor %d",
		        rt_fd_floor() - 1);
		return false;
	}
	rt_sp.py = rt_sampler_py_init();
	if (pthread_atfork(rt_sampler_prepare, rt_sampler_parent, rt_sampler_child) != 0) {
		rt_warn("sites off: cannot register its fork handlers");
		return false;
	}
	rt_sp.real_free = rt_real.free;
	rt_sp.real_realloc = rt_real.realloc;
	__atomic_store_n(&rt_real.free, rt_sampler_free, __ATOMIC_RELEASE);
	__atomic_store_n(&rt_real.realloc, rt_sampler_realloc, __ATOMIC_RELEASE);
	atomic_store(&rt_sp.ready, true);
	atomic_store(&rt_sp.sampling, true);
	/* This thread's budget was armed for nothing: its next allocation starts its countdown. */
	rt_malloc_set_budget(1);
	return true;
}

/* --- The worker's report. */

static int
rt_sampler_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	if (rt_sw.nmodules == RT_SAMPLER_MODULES)
		return 1;
	uintptr_t lo, hi;
	rt_sampler_object_span(info, &lo, &hi);
	if (lo >= hi)
		return 0;
	unsigned i = rt_sw.nmodules++;
	rt_sw.modules[i].lo = lo;
	rt_sw.modules[i].hi = hi;
	rt_sw.modules[i].base = info->dlpi_addr;
	/* The program itself has no name here (dl_iterate_phdr(3)). */
	const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : rt_sp.exe;
	size_t n = strnlen(name, RT_SITES_TEXT_MAX - 1);
	memcpy(rt_sw.modules[i].path, name, n);
	rt_sw.modules[i].path[n] = '\0';
	return 0;
}

static void
rt_sampler_frame(uintptr_t addr, struct rt_sites_frame *f)
{
	f->addr = addr;
	f->module = "";
	f->offset = 0;
	for (unsigned i = 0; i < rt_sw.nmodules; i++) {
		if (addr >= rt_sw.modules[i].lo && addr < rt_sw.modules[i].hi) {
			f->module = rt_sw.modules[i].path;
			f->offset = addr - rt_sw.modules[i].base;
			return;
		}
	}
}

/* True once the site's line is in the file: one the file could not take is defined again with
 * the next round that names the site. */
static bool
rt_sampler_define(uint32_t id, int pid)
{
	static struct rt_sites_site s;
	const struct rt_sampler_entry *e = &rt_sp.entries[id];
	s.pid = pid;
	s.site = id;
	s.nframes = e->nframes;
	for (unsigned i = 0; i < e->nframes; i++)
		rt_sampler_frame(e->frames[i], &s.frames[i]);
	s.npy = e->names ? e->npy : 0;
	for (unsigned i = 0; i < s.npy; i++) {
		const struct rt_sampler_pynames *pn = &rt_sp.names[e->names - 1 + i];
		s.py[i] = (struct rt_sites_pyframe){pn->function, pn->file, pn->line};
	}
	return rt_outputs_sites_line(rt_sw.line,
	                             rt_sites_site_json(rt_sw.line, sizeof(rt_sw.line), &s));
}

void
rt_sampler_round(const struct rt_round_record *rec)
{
	if (!atomic_load(&rt_sp.ready) || !rt_outputs_have_sites())
		return;
	unsigned count = atomic_load(&rt_sp.nentries) + 1;
	if (count > RT_SAMPLER_SITES)
		count = RT_SAMPLER_SITES;
	memset(rt_sw.live, 0, count * sizeof(double));
	memset(rt_sw.new_var, 0, count * sizeof(double));
	memset(rt_sw.old_var, 0, count * sizeof(double));
	unsigned epoch = atomic_load(&rt_sp.epoch);
	uint64_t samples = 0;
	double total = 0;
	for (size_t i = 0; i < (size_t)RT_SAMPLER_LINES * RT_SAMPLER_WAYS; i++) {
		uintptr_t key = atomic_load_explicit(&rt_sp.keys[i], memory_order_acquire);
		if (key == 0 || key == RT_SAMPLER_CLAIMED)
			continue;
		struct rt_sampler_value v = rt_sp.values[i];
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&rt_sp.keys[i], memory_order_relaxed) != key ||
		    v.site == 0 || v.site >= count)
			continue;
		double w = rt_sites_weight(v.size, rt_sp.mean);
		double noise = rt_sites_noise(v.size, rt_sp.mean);
		rt_sw.live[v.site] += w;
		if (v.epoch == epoch)
			rt_sw.new_var[v.site] += noise;
		else
			rt_sw.old_var[v.site] += noise;
		samples++;
		total += w;
	}
	atomic_store(&rt_sp.epoch, epoch + 1);
	size_t n = 0;
	for (unsigned s = 1; s < count; s++) {
		if (rt_sw.live[s] == 0 && rt_sw.prev_live[s] == 0)
			continue;
		rt_sw.changes[n++] =
		    rt_sites_change_of(s, rt_sw.live[s], rt_sw.new_var[s], rt_sw.old_var[s],
		                       &rt_sw.prev_live[s], &rt_sw.prev_var[s]);
	}
	struct rt_sites_round r = {
	    .pid = rec->pid,
	    .round = rec->round,
	    .since = rt_sw.last_round,
	    .unix_time_us = rec->unix_time_us,
	    .sample_bytes = rt_sp.mean,
	    .samples = samples,
	    .live_bytes = total > 0 ? (uint64_t)total : 0,
	    .dropped = atomic_load(&rt_sp.dropped),
	};
	r.ngrew = rt_sites_top(rt_sw.changes, n, RT_SITES_TOP);
	memcpy(r.grew, rt_sw.changes, r.ngrew * sizeof(r.grew[0]));
	bool undefined = false;
	for (size_t i = 0; i < r.ngrew; i++)
		undefined |= !rt_sw.defined[r.grew[i].site];
	if (undefined) {
		rt_sw.nmodules = 0;
		dl_iterate_phdr(rt_sampler_module, NULL);
		for (size_t i = 0; i < r.ngrew; i++) {
			uint32_t site = r.grew[i].site;
			if (!rt_sw.defined[site])
				rt_sw.defined[site] = rt_sampler_define(site, rec->pid);
		}
	}
	rt_outputs_sites_line(rt_sw.line, rt_sites_round_json(rt_sw.line, sizeof(rt_sw.line), &r));
	rt_sw.last_round = rec->round;
}
