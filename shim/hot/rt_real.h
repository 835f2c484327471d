/* rt_real: the real functions behind every symbol the shim interposes, found as
 * dlsym(RTLD_NEXT) finds them, and the bootstrap buffer that serves allocations made while
 * resolving. */
/* A call graph drawn by names (farm-studio, cscope) shows rt_real.c calling rt_malloc.c's malloc,
 * calloc, free...: those are the fields of struct rt_real_fns and the names that rt_real.c looks
 * up (RT_RESOLVE(malloc, "malloc")), never a call of the wrappers: rt_real.c calls nothing in
 * rt_malloc.c, which calls rt_real. */
#ifndef RT_REAL_H
#define RT_REAL_H

#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* What the shim interposes and exports (shim/exports.map lists it); everything else is hidden. */
#define RT_EXPORT __attribute__((visibility("default")))

struct rt_real_fns {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*reallocarray)(void *, size_t, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	size_t (*malloc_usable_size)(void *);
	void (*exit_now)(int);   /* _exit */
	void (*exit_now_c)(int); /* _Exit */
	int (*execve)(const char *, char *const[], char *const[]);
	int (*execv)(const char *, char *const[]);
	int (*execvp)(const char *, char *const[]);
	int (*execvpe)(const char *, char *const[], char *const[]);
	int (*fexecve)(int, char *const[], char *const[]);
	int (*execveat)(int, const char *, char *const[], char *const[], int);
	int (*posix_spawn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
	                   const posix_spawnattr_t *, char *const[], char *const[]);
	int (*posix_spawnp)(pid_t *, const char *, const posix_spawn_file_actions_t *,
	                    const posix_spawnattr_t *, char *const[], char *const[]);
	int (*system)(const char *);
	FILE *(*popen)(const char *, const char *);
	int (*sigaction)(int, const struct sigaction *, struct sigaction *);
	sighandler_t (*signal)(int, sighandler_t);
	sighandler_t (*bsd_signal)(int, sighandler_t);
	sighandler_t (*sysv_signal)(int, sighandler_t);
	sighandler_t (*sigset)(int, sighandler_t);
	/* Resolved at start-up, not at the first call: a first pthread_create would otherwise
	 * wait on the loader's lock inside dlsym, which a thread inside dlopen may hold while it
	 * waits for the new thread (rt_tasks). */
	int (*pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	pid_t (*fork)(void);
};

/* Hidden: reached PC-relative from the hot path, not through the GOT. free and realloc hold
 * slow versions that tell bootstrap blocks apart until resolution, and for good once one was
 * handed out; the sampler may replace them with its own, which call what they found there. */
#pragma GCC visibility push(hidden)
extern struct rt_real_fns rt_real;
/* Set once every pointer above is usable; read on the hot path, written once. */
extern bool rt_real_ready;

/* Resolves every pointer; safe to call again. Allocations made by dlsym meanwhile (only for a
 * name that the symbol tables cannot answer) are served from the bootstrap buffer
 * (jemalloc#329/#443, libfaketime#130/#365 deadlocked here). */
void rt_real_resolve(void);
/* name's next definition after this object, as rt_real_resolve finds the others, for a call
 * resolved at its first use. dl_iterate_phdr takes only the loader's write lock, which dlopen
 * does not hold while constructors run; only an object whose tables cannot answer sends it to
 * dlsym. */
void *rt_real_lookup_next(const char *name);
/* The same, kept in *slot: looked up at the first call that finds it empty (two threads may both
 * look it up; each stores the same). */
void *rt_real_lookup_next_once(void *_Atomic *slot, const char *name);
/* Whether the calling thread is inside rt_real_resolve. */
bool rt_real_resolving(void);

/* The next definition of name, for entry points called too rarely to resolve at start-up (the
 * credential calls): found at the first call, kept in *slot. NULL when there is none. */
void *rt_real_lazy(void **slot, const char *name);

#define RT_BOOTSTRAP_SIZE (64 * 1024)
extern unsigned char rt_real_bootstrap[RT_BOOTSTRAP_SIZE];

void *rt_real_bootstrap_alloc(size_t size, size_t alignment);
size_t rt_real_bootstrap_size(const void *ptr);

/* In the slow free and realloc, and in malloc_usable_size. */
static inline bool
rt_real_is_bootstrap(const void *ptr)
{
	return (uintptr_t)ptr - (uintptr_t)rt_real_bootstrap < RT_BOOTSTRAP_SIZE;
}

static inline bool
rt_real_is_ready(void)
{
	/* Acquire: a thread that sees "ready" sees every pointer that resolution stored. */
	return __atomic_load_n(&rt_real_ready, __ATOMIC_ACQUIRE);
}
#pragma GCC visibility pop

#endif
