/* The hooks of the hot path: see rt_hooks.h. */
#include "rt_hooks.h"

struct rt_hooks rt_hooks;
