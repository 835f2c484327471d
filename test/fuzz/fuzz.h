/* fuzz: what the libFuzzer targets share (test/fuzz/fuzz_<name>.c, one per parser).
 * Owns the invariant check: a broken invariant aborts, so that libFuzzer keeps the input. */
#ifndef FUZZ_H
#define FUZZ_H

#include <stdio.h>
#include <stdlib.h>

/* One line naming the invariant and the facts, then abort(): libFuzzer saves the input as a
 * crash-* reproducer under its -artifact_prefix. */
#define FUZZ_CHECK(cond, ...)                                                                      \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "invariant broken: %s: ", #cond);                          \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

#endif
