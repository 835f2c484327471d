/* rt_shim: the process's configuration and the facts found at start-up (program, fork child),
 * which rt_main writes in the constructor (and in a fork child) and hands down, read-only, to
 * each module's start; rt_files alone still reads them here. And the `active` flag, which
 * rt_main sets and a program thread clears when the library stands down (rt_tasks). */
#ifndef RT_SHIM_H
#define RT_SHIM_H

#include <stdatomic.h>
#include <stdbool.h>

#include "rt_config.h"

struct rt_shim {
	struct rt_config cfg;
	/* The program matched, nothing disabled it, and the library has not stood down: it works
	 * here. Atomic: a program thread that stands the library down clears it. */
	atomic_bool active;
	bool forked; /* this process is a fork child of one where the library was active */
	char program[64];
};

extern struct rt_shim rt_shim;

#endif
