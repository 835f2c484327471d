/* rt_cuda: the CUDA driver as the library's thread may ask it, without creating anything: the
 * devices a program sees and whether device 0's context exists. */
#ifndef RT_CUDA_H
#define RT_CUDA_H

#include <stdbool.h>

/* What the driver says now: the visible devices (-1 where it cannot say: not loaded by the
 * program, not initialised) and whether device 0's primary context is active. */
struct rt_cuda_state {
	int devices;
	bool context_active;
};

/* Without the GIL: the driver the program loaded, never one loaded here (a process that did not
 * load libcuda says -1 devices). Creates no context and binds none to the calling thread. */
struct rt_cuda_state rt_cuda_read(void);

#endif
