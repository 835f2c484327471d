/* The symbolizer the sanitizer runs name (external_symbolizer_path; a name starting with
 * llvm-symbolizer, which the runtimes require). A runtime starts its symbolizer with the host's
 * environment, LD_PRELOAD and all: a symbolizer that carried the library would print its lines
 * into the host's stderr, and under TSan would not start at all. A shell script that unsets
 * LD_PRELOAD is too late, as the shell itself carries the library (a workload that has dropped
 * root then saw the shell's "FIFO trigger off" on its stderr). Linked statically, this program
 * loads nothing of LD_PRELOAD; it drops the variable and runs the real symbolizer
 * (RT_LLVM_SYMBOLIZER, else clang 14's). Built without the sanitizer. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	(void)argc;
	const char *real = getenv("RT_LLVM_SYMBOLIZER");
	if (!real || !*real)
		real = "/usr/lib/llvm-14/bin/llvm-symbolizer";
	unsetenv("LD_PRELOAD");
	execv(real, argv);
	perror(real);
	return 127;
}
