/* The process's configuration and facts: see rt_shim.h. */
#include "rt_shim.h"

struct rt_shim rt_shim;
