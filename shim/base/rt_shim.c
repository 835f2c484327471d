/* Whether the library works in this process: see rt_shim.h. */
#include "rt_shim.h"

atomic_bool rt_shim_active;
