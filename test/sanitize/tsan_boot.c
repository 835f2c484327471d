/* Preloaded by make check-tsan ahead of the TSan runtime, for hosts not built with TSan
 * (python3, sh), which have no .preinit_array entry of tsan_preinit.c: the first __cxa_atexit,
 * made by libstdc++'s constructor before the runtime's, initialises the runtime and then goes
 * on to its interceptor. __tsan_init returns at once once the runtime is initialised. Built
 * without instrumentation: it runs before the runtime exists. */
#include <dlfcn.h>

void __tsan_init(void);
int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);

int
__cxa_atexit(void (*fn)(void *), void *arg, void *dso)
{
	static void *next;
	__tsan_init();
	void *real = __atomic_load_n(&next, __ATOMIC_ACQUIRE);
	if (!real) {
		real = dlsym(RTLD_NEXT, "__cxa_atexit");
		__atomic_store_n(&next, real, __ATOMIC_RELEASE);
	}
	int (*call)(void (*)(void *), void *, void *);
	*(void **)&call = real;
	return call(fn, arg, dso);
}
