/* What every allocator's row shares: see rt_heap_ops.h. */
#include "rt_heap_ops.h"

#include <dlfcn.h>

void *
rt_heap_symbol_in(const char *name, const void *base)
{
	void *sym = dlsym(RTLD_DEFAULT, name);
	Dl_info info;
	if (!sym || !dladdr(sym, &info) || info.dli_fbase != base)
		return NULL;
	return sym;
}
