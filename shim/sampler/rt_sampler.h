/* rt_sampler: the host's side of ROUNDTRIM_SITES (policy/rt_sites has its rules). Owns each
 * thread's countdown to its next sampled byte, the stack of a sampled allocation (libunwind,
 * loaded only then), the tables of sites and of live samples, which frees and reallocs update
 * without a lock, and the records the worker writes each action round. */
#ifndef RT_SAMPLER_H
#define RT_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_report.h"

struct rt_config;

/* In the constructor, once the library's files are open: when ROUNDTRIM_SITES asks for it and
 * the sites file is open, loads libunwind, maps the tables, and points the real free and realloc
 * at their sampling-aware versions. Says why in one line when it cannot. cfg: rt_main's, read
 * here only (sites, sample_bytes). True when it samples: the caller then registers its hooks
 * (rt_sampler_event, rt_sampler_took). */
bool rt_sampler_init(const struct rt_config *cfg);

/* The cold path of an allocating entry point, inside its allocation event: `consumed` bytes
 * were asked for since the thread's budget was last armed, this allocation's included; `period`
 * is what the other users of the budget need. Takes this allocation's stack when a sampled
 * byte falls in it; returns the next budget. */
uint64_t rt_sampler_event(uint64_t consumed, uint64_t period);
/* The same cold path once the real allocator answered: records p as a live sample when the
 * event above sampled it. Returns p. */
void *rt_sampler_took(void *p, size_t size);

/* The worker, once per action round, after the action: the sites that grew since the last one,
 * to the sites file. */
void rt_sampler_round(const struct rt_round_record *rec);

/* rt_sampler_py: the innermost Python frames of the calling thread, in a CPython 3.11 host. */
/* At start-up: finds the interpreter's entry points; false (said once) when frames cannot be
 * read here. */
bool rt_sampler_py_init(void);
/* The code objects of the calling thread's innermost Python frames, innermost first; how many
 * (0 in a thread that runs no Python). Reads through process_vm_readv: a stale pointer reads as
 * nothing, never as a fault. */
unsigned rt_sampler_py_frames(uintptr_t *codes, unsigned max);
/* A code object's qualified name, file and first line, when it still is one. */
void rt_sampler_py_names(uintptr_t code, char *function, size_t fsize, char *file, size_t size,
                         uint32_t *line);
/* In a fork child: reads go to the child's own memory. */
void rt_sampler_py_forget_parent(void);

#endif
