/* A stand-in for the CUDA driver (libcuda.so.1) in the tests: the calls the library makes, from
 * FAKECUDA_DEVICES (the visible devices; 1 unless set) and FAKECUDA_CONTEXT ("1": device 0's
 * primary context is active; a path: active while that file exists). Each call appends its name
 * and " pid=PID" as a line to the file FAKECUDA_LOG names. Loaded by the stand-in torch (faketorch)
 * as the program's PyTorch loads the real one. */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FAKE_SUCCESS 0

static void
fake_note(const char *call)
{
	const char *path = getenv("FAKECUDA_LOG");
	int fd = path ? open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644) : -1;
	if (fd < 0)
		return;
	char line[96];
	int n = snprintf(line, sizeof(line), "%s pid=%d\n", call, (int)getpid());
	if (n > 0 && write(fd, line, (size_t)n) < 0) {
	}
	close(fd);
}

static int
fake_env(const char *name, int fallback)
{
	const char *value = getenv(name);
	return value && *value ? atoi(value) : fallback;
}

__attribute__((visibility("default"))) int
cuDeviceGetCount(int *count)
{
	fake_note("cuDeviceGetCount");
	*count = fake_env("FAKECUDA_DEVICES", 1);
	return FAKE_SUCCESS;
}

__attribute__((visibility("default"))) int
cuDeviceGet(int *device, int ordinal)
{
	fake_note("cuDeviceGet");
	*device = ordinal;
	return FAKE_SUCCESS;
}

__attribute__((visibility("default"))) int
cuDevicePrimaryCtxGetState(int device, unsigned *flags, int *active)
{
	*flags = 0;
	fake_note("cuDevicePrimaryCtxGetState");
	const char *context = getenv("FAKECUDA_CONTEXT");
	bool on = context &&
	          (strcmp(context, "1") == 0 || (*context == '/' && access(context, F_OK) == 0));
	*active = device == 0 && on;
	return FAKE_SUCCESS;
}
