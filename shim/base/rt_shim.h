/* rt_shim: the process's configuration and the facts found at start-up (allocator, action,
 * program, descriptor table), which rt_main writes once in the constructor (and in a fork
 * child) and every layer reads; and the `active` flag that a program thread clears when the
 * library stands down. */
#ifndef RT_SHIM_H
#define RT_SHIM_H

#include <stdatomic.h>
#include <stdbool.h>

#include "rt_allocator.h"
#include "rt_config.h"
#include "rt_file_rules.h"

struct rt_shim {
	struct rt_config cfg;
	/* The program matched, nothing disabled it, and the library has not stood down: it works
	 * here. Atomic: a program thread that stands the library down clears it. */
	atomic_bool active;
	bool forked; /* this process is a fork child of one where the library was active */
	/* Whose descriptor table holds the library's files: set once at start-up, before the
	 * worker uses any (rt_worker_start). */
	enum rt_file_table descriptors;
	enum rt_allocator_kind allocator;
	enum rt_action action;
	char program[64];
};

extern struct rt_shim rt_shim;

#endif
