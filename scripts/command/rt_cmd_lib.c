#include "rt_cmd_lib.h"

#include "rt_preload.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Where `make install` puts the library; the Makefile passes its LIBDIR. */
#include "rt_install.h"
/* The build directory that the Makefile builds the command and the library into. */
#ifndef RT_CMD_BUILD_DIR
#define RT_CMD_BUILD_DIR ""
#endif

#define RT_CMD_LIB_FILE "libroundtrim.so"

static bool
rt_cmd_lib_is_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The library beside this command when the command runs from the build directory it was built
 * in: the source tree's own library, never an older installed one. */
static bool
rt_cmd_lib_build_tree(char *out, size_t size)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0 || RT_CMD_BUILD_DIR[0] == '\0')
		return false;
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (!slash)
		return false;
	*slash = '\0';
	char build[PATH_MAX];
	if (!realpath(RT_CMD_BUILD_DIR, build) || strcmp(build, self) != 0)
		return false;
	int len = snprintf(out, size, "%s/" RT_CMD_LIB_FILE, self);
	return len > 0 && (size_t)len < size && rt_cmd_lib_is_file(out);
}

bool
rt_cmd_lib_find(char *out, size_t size, char *why, size_t why_size)
{
	const char *env = getenv("ROUNDTRIM_LIB");
	int n;
	if (env && env[0]) {
		if (env[0] != '/') {
			snprintf(why, why_size, "ROUNDTRIM_LIB=%s is not an absolute path", env);
			return false;
		}
		if (!rt_cmd_lib_is_file(env)) {
			snprintf(why, why_size, "ROUNDTRIM_LIB=%s does not exist", env);
			return false;
		}
		n = snprintf(out, size, "%s", env);
	} else if (rt_cmd_lib_build_tree(out, size)) {
		n = (int)strlen(out);
	} else if (rt_cmd_lib_is_file(RT_INSTALL_PRELOAD_LIB)) {
		n = snprintf(out, size, "%s", RT_INSTALL_PRELOAD_LIB);
	} else {
		snprintf(why, why_size, "%s not found; set ROUNDTRIM_LIB", RT_INSTALL_PRELOAD_LIB);
		return false;
	}
	if (n < 0 || (size_t)n >= size || !rt_preload_path_valid(out)) {
		snprintf(
		    why, why_size,
		    "library path %s has characters LD_PRELOAD cannot carry; set ROUNDTRIM_LIB",
		    out);
		return false;
	}
	return true;
}
