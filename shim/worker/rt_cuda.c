#include "rt_cuda.h"

#include <dlfcn.h>
#include <stdatomic.h>

/* The driver API's types, as cuda.h declares them (CUresult, CUdevice: an int-sized enum and an
 * int). */
typedef int rt_cu_result;
typedef int rt_cu_device;
#define RT_CU_SUCCESS 0

struct rt_cuda_api {
	rt_cu_result (*device_count)(int *);             /* cuDeviceGetCount */
	rt_cu_result (*device_get)(rt_cu_device *, int); /* cuDeviceGet */
	rt_cu_result (*primary_state)(rt_cu_device, unsigned *,
	                              int *); /* cuDevicePrimaryCtxGetState */
};

static struct rt_cuda_api rt_cuda;
static atomic_bool rt_cuda_found;

static bool
rt_cuda_find(void)
{
	if (atomic_load_explicit(&rt_cuda_found, memory_order_acquire))
		return true;
	/* RTLD_NOLOAD: the program's libcuda, if it loaded one; nothing is loaded or opened here.
	 * The reference taken stays: the driver is never unloaded under a program that uses it. */
	void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!driver)
		return false;
	struct rt_cuda_api a;
	*(void **)&a.device_count = dlsym(driver, "cuDeviceGetCount");
	*(void **)&a.device_get = dlsym(driver, "cuDeviceGet");
	*(void **)&a.primary_state = dlsym(driver, "cuDevicePrimaryCtxGetState");
	if (!a.device_count || !a.device_get || !a.primary_state) {
		/* A stub without them: give back the reference, or each request would add one. */
		dlclose(driver);
		return false;
	}
	rt_cuda = a;
	atomic_store_explicit(&rt_cuda_found, true, memory_order_release);
	return true;
}

struct rt_cuda_state
rt_cuda_read(void)
{
	struct rt_cuda_state state = {.devices = -1, .context_active = false};
	int count = 0, active = 0;
	unsigned flags = 0;
	rt_cu_device device;
	/* Before cuInit (the program's) each call answers CUDA_ERROR_NOT_INITIALIZED. */
	if (!rt_cuda_find() || rt_cuda.device_count(&count) != RT_CU_SUCCESS)
		return state;
	state.devices = count;
	if (count > 0 && rt_cuda.device_get(&device, 0) == RT_CU_SUCCESS &&
	    rt_cuda.primary_state(device, &flags, &active) == RT_CU_SUCCESS)
		state.context_active = active != 0;
	return state;
}
