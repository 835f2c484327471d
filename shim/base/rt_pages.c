/* The library's own resident pages: see rt_pages.h. */
#include "rt_pages.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

/* Pages kept below the page of rt_stack_trim's own frame: madvise's frame, and the libc
 * wrapper's, lie there while the call runs. */
#define RT_STACK_KEPT_BELOW 1
/* The most there is between a thread's descriptor and the top of the stack glibc maps for it:
 * the descriptor itself (about 2 KiB) and its alignment to the TLS's (64 bytes in practice). */
#define RT_STACK_ABOVE_SELF (64 * 1024)

void
rt_pages_give_back(void *buf, size_t size)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = ((uintptr_t)buf + page - 1) & ~(page - 1);
	uintptr_t end = ((uintptr_t)buf + size) & ~(page - 1);
	if (end > start)
		madvise((void *)start, end - start, MADV_DONTNEED);
}

void
rt_stack_mark(struct rt_stack *s, size_t size)
{
	s->floor = 0;
#if defined(__x86_64__) || defined(__i386__)
	if (!size)
		return;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	/* glibc maps a thread's stack with its descriptor (pthread_self()) at the top: the stack
	 * spans at least `size` below the mapping's top, which lies less than RT_STACK_ABOVE_SELF
	 * above the descriptor. However much static TLS glibc carves out below the descriptor, the
	 * floor stays inside the stack. Where the TLS lies above the descriptor instead (glibc's
	 * TLS_DTV_AT_TP targets, aarch64 among them) a large static TLS would put the descriptor
	 * far below the top and the floor under the stack: no floor there, the pages stay. */
	uintptr_t top = (uintptr_t)pthread_self() + RT_STACK_ABOVE_SELF;
	uintptr_t floor = top > size ? (top - size + page - 1) & ~(page - 1) : 0;
	/* The caller's own frame lies between the two, or the layout is not the one above. */
	if (floor && floor < here && here < top)
		s->floor = floor;
#else
	(void)size;
#endif
}

void
rt_stack_trim(const struct rt_stack *s)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	uintptr_t top = (here & ~(page - 1)) - RT_STACK_KEPT_BELOW * page;
	/* A thread under mlockall keeps its pages (EINVAL): nothing to do about it. */
	if (s->floor && top > s->floor)
		madvise((void *)s->floor, top - s->floor, MADV_DONTNEED);
}
