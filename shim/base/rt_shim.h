/* rt_shim: whether the library works in this process, the one word that rt_main sets at start-up
 * and a program thread clears when the library stands down (rt_tasks); rt_creds reads it. */
#ifndef RT_SHIM_H
#define RT_SHIM_H

#include <stdatomic.h>

/* The program matched, nothing disabled it, and the library has not stood down. Atomic: a
 * program thread that stands the library down clears it. */
extern atomic_bool rt_shim_active;

#endif
