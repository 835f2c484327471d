/* ifunc_alloc: preloaded after the library, it defines sigset, one of the names the library
 * resolves, as an IFUNC whose resolver allocates. The library's symbol tables cannot answer
 * for an IFUNC, so it asks dlsym, which runs the resolver inside the library's resolution: the
 * resolver's malloc, realloc and calloc are served from the library's bootstrap buffer, as
 * dlsym's own allocations were on an older glibc; its constructor makes the first allocation,
 * inside which the library resolves. One block is kept, and freed after main, by
 * this object's destructor: the library must still tell it from the allocator's blocks then.
 * Prints on stderr where the blocks came from, and that the late free returned. */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef sighandler_t (*sigset_fn)(int, sighandler_t);

static void *kept;
static const char *kept_from = "nowhere";

static const char *
object_of(const void *p)
{
	Dl_info info;
	if (!p || !dladdr(p, &info) || !info.dli_fname)
		return "the heap";
	return strstr(info.dli_fname, "libroundtrim") ? "libroundtrim" : info.dli_fname;
}

/* Before the library's constructor (this object comes after it, so it starts first): the
 * library resolves inside this malloc's cold path, where the budget was already taken. */
__attribute__((constructor)) static void
ifunc_alloc_start(void)
{
	void *volatile block = malloc(32);
	free(block);
}

/* used: only the ifunc attribute names it. */
__attribute__((used)) static sigset_fn
ifunc_alloc_resolve(void)
{
	/* volatile: the compiler may not drop the calls. */
	void *volatile block = malloc(24);
	block = realloc(block, 48);
	free(block);
	kept = calloc(1, 16);
	kept_from = object_of(kept);
	sigset_fn next;
	*(void **)&next = dlsym(RTLD_NEXT, "sigset");
	return next;
}

__attribute__((visibility("default"))) sighandler_t sigset(int, sighandler_t)
    __attribute__((ifunc("ifunc_alloc_resolve")));

__attribute__((destructor)) static void
ifunc_alloc_done(void)
{
	char line[128];
	int n = snprintf(line, sizeof(line), "ifunc_alloc: kept block from %s\n", kept_from);
	fwrite(line, 1, (size_t)n, stderr);
	free(kept);
	fputs("ifunc_alloc: freed after main\n", stderr);
}
