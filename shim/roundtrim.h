/* roundtrim.h: the small public API of libroundtrim.so, for programs that want to tell it about
 * rounds themselves. Everything else the library does is configured by the environment. */
#ifndef ROUNDTRIM_H
#define ROUNDTRIM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Allocation activity of the calling thread, as counted by the malloc-family wrappers. */
struct roundtrim_thread_counts {
	uint64_t allocations;     /* malloc, calloc, realloc, aligned and page-sized variants */
	uint64_t frees;           /* free, and realloc of a block (to any size) */
	uint64_t bytes_requested; /* sum of the sizes asked for */
};

/* Counts one round, as a signal or a FIFO "round" line would. Asynchronous: the worker thread
 * acts. Returns 0, or -1 when the library is inactive in this process. */
int roundtrim_round(void);
/* Acts now, whatever the count, as the FIFO line "trim" would. Same return values. */
int roundtrim_trim(void);
/* Copies the calling thread's counts. */
void roundtrim_thread_counts(struct roundtrim_thread_counts *out);
/* The library's version, "MAJOR.MINOR.PATCH". */
const char *roundtrim_version(void);

#ifdef __cplusplus
}
#endif

#endif
