/* rt_hooks: the cold-path work of the layers above the hot path, which they register at start-up:
 * hot/ calls nothing above it by name, and an empty hook is work that this process has not. */
#ifndef RT_HOOKS_H
#define RT_HOOKS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rt_hooks {
	/* rt_main: a fork child's deferred start. Set inside fork while the child waits, so that it
	 * never runs before the process's runtimes are up (ld.so and a sanitizer's start-up
	 * allocate; under make check-asan and check-tsan, rt_main.c is instrumented and would touch
	 * state that does not exist yet). Returns the next budget. */
	_Atomic(uint64_t (*)(void)) allocation_event;
	/* rt_sampler: the allocation event of ROUNDTRIM_SITES, and the allocation it may sample
	 * (rt_sampler_event, rt_sampler_took). */
	uint64_t (*sample)(uint64_t consumed, uint64_t period);
	void *(*took)(void *p, size_t size);
	/* rt_worker: a program thread is exiting (its tally's destructor); whether it is the
	 * program's last (rt_worker_thread_exits). */
	bool (*thread_exits)(void);
};

/* Written in the constructor, before the program's threads exist, and in a fork child. */
extern struct rt_hooks rt_hooks;

#endif
