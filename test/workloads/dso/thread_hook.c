/* thread_hook: a preload that runs code of its own at the start of every thread, before the
 * thread's function, as sanitizers and profilers do (ASan and TSan call pthread_getattr_np
 * there, which allocates). The library's worker thus allocates before its first line. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

struct hook_start {
	void *(*fn)(void *);
	void *arg;
};

typedef int (*hook_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static void *
hook_thread_start(void *p)
{
	struct hook_start start = *(struct hook_start *)p;
	free(p);
	/* volatile: the compiler may not drop the pair. */
	void *volatile block = malloc(64);
	free(block);
	return start.fn(start.arg);
}

__attribute__((visibility("default"))) int
pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static hook_create_fn real;
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "pthread_create");
	struct hook_start *start = malloc(sizeof(*start));
	if (!real || !start) {
		free(start);
		return EAGAIN;
	}
	*start = (struct hook_start){fn, arg};
	int rc = real(thread, attr, hook_thread_start, start);
	if (rc != 0)
		free(start);
	return rc;
}
