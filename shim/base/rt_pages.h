/* rt_pages: the library's own resident pages: its large buffers kept on pages of their own, and
 * the stacks of its threads, whose pages below the frames they have now go back after a round. */
#ifndef RT_PAGES_H
#define RT_PAGES_H

#include <stddef.h>
#include <stdint.h>

/* For a large buffer of zeroes (a static, in .bss): on pages of its own, after the library's
 * small variables, so that these share as few pages as they can and an unused part of the
 * buffer is never made resident by a neighbour. GCC makes .lbss (x86-64's large .bss, which the
 * linker places after .bss) a section of zeroes; clang (the sanitizer builds) would store it in
 * the file, so there the buffers only start a page of their own inside .bss. */
#if defined(__clang__)
#define RT_PAGES_APART __attribute__((aligned(4096)))
#else
#define RT_PAGES_APART __attribute__((section(".lbss.roundtrim"), aligned(4096)))
#endif

/* Gives back the whole pages inside a buffer declared RT_PAGES_APART whose contents are dead
 * (they read as zeroes afterwards). Never on the malloc path. */
void rt_pages_give_back(void *buf, size_t size);

/* One thread's stack, as its start routine saw it. */
struct rt_stack {
	uintptr_t floor; /* the lowest page that surely lies inside it (0: none known) */
};

/* From the thread itself, at its start: `size` is at most the stack size it was created with
 * (pthread_attr_setstacksize; a stack glibc takes from its cache is no smaller). */
void rt_stack_mark(struct rt_stack *s, size_t size);

/* Gives back the pages between the floor and the caller's frames (MADV_DONTNEED: zero pages come
 * at the next touch). Only from the thread itself, with every signal blocked: nothing of the
 * thread's lives below its frames then, and no handler frame can appear there meanwhile. */
void rt_stack_trim(const struct rt_stack *s);

#endif
