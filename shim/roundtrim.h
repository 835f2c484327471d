/* roundtrim.h: the small public API of libroundtrim.so, for programs that want to tell it about
 * rounds themselves. Everything else the library does is configured by the environment. */
#ifndef ROUNDTRIM_H
#define ROUNDTRIM_H

#include <stddef.h>
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

/* Counts one round, as a signal or a FIFO "round" line would; the round is counted before the
 * call returns. When the round acts, the allocator's action runs in the calling thread, as
 * NVFlare's cleanup_memory() runs malloc_trim: the memory is back when the call returns (in a fork
 * child, and with mimalloc, the worker thread releases at once instead); the worker writes the
 * round's record, and in a CPython host hands the Python steps to the interpreter's main thread.
 * errno is kept. Returns 0, or -1 when the library is inactive in this process. */
int roundtrim_round(void);
/* Acts now, whatever the count, as the FIFO line "trim" would. Same return values. */
int roundtrim_trim(void);
/* For the Python module, called with the GIL held (ctypes.PyDLL): as roundtrim_round and
 * roundtrim_trim, but when the call acts, the Python steps (a full collection as gc.collect()
 * runs it, and torch.cuda.empty_cache() when configured) run in the calling thread before it
 * returns, and the allocator's action after them, as in roundtrim_round. Return 1 when the call
 * acts, 0 when it only counted, -1 when the library is inactive. Only with the GIL held. */
int roundtrim_python_round(void);
int roundtrim_python_trim(void);
/* Copies the status JSON object of roundtrim(7), STATUS FILE, as the worker last published it
 * (at its start and after every round it handled), with or without a status file: at most
 * size - 1 bytes and a NUL into buf. Returns the object's whole length (a result >= size means
 * it was cut: call again with a larger buffer), 0 before the worker's first publication (just
 * after start-up, or after a fork child's first call), or -1 when the library is inactive in
 * this process. Like roundtrim_round, a call in a fork child starts the child's library. */
int roundtrim_status_json(char *buf, size_t size);
/* Copies the calling thread's counts. */
void roundtrim_thread_counts(struct roundtrim_thread_counts *out);
/* The library's version, "MAJOR.MINOR.PATCH". */
const char *roundtrim_version(void);

#ifdef __cplusplus
}
#endif

#endif
