/* stress_dso: a shared object that allocates in its constructor and checks and frees in its
 * destructor, for stress's dlopen mode. A damaged block ends the process with status 4 and one
 * line on stderr: the destructor has no caller to report to. */
#include "../pattern.h"

#include <malloc.h>
#include <stdlib.h>
#include <unistd.h>

#define DSO_BLOCKS 12
#define DSO_SEED 0x5eedd50ULL

static struct {
	unsigned char *p;
	size_t size;
} dso_blocks[DSO_BLOCKS];

static const size_t dso_sizes[DSO_BLOCKS] = {1,    24,    100,   512,   1000,   4096,
                                             5000, 32768, 65536, 70000, 300000, 1 << 20};

static void
dso_die(const char *what)
{
	static const char head[] = "stress_dso: ";
	if (write(2, head, sizeof(head) - 1) < 0 || write(2, what, strlen(what)) < 0 ||
	    write(2, "\n", 1) < 0) {
	}
	_exit(4);
}

/* One block through each entry point, filled, checked, grown, checked, freed. */
static long
dso_round_trip(uint64_t seed)
{
	long errors = 0;
	for (size_t i = 0; i < DSO_BLOCKS; i++) {
		size_t size = dso_sizes[i];
		unsigned char *p = i % 2 ? calloc(1, size) : malloc(size);
		if (!p)
			return errors + 1;
		if (i % 2 && !pattern_is_zero(p, size))
			errors++;
		pattern_fill(p, size, (uintptr_t)p, seed);
		unsigned char *q = realloc(p, size * 2);
		if (!q) {
			free(p);
			return errors + 1;
		}
		errors += pattern_check(q, size, (uintptr_t)p, seed) >= 0;
		free(q);
	}
	return errors;
}

__attribute__((constructor)) static void
dso_init(void)
{
	for (size_t i = 0; i < DSO_BLOCKS; i++) {
		size_t size = dso_sizes[i];
		unsigned char *p = i % 3 == 1 ? calloc(size, 1) : malloc(size);
		if (!p)
			dso_die("constructor: allocation failed");
		if (i % 3 == 1 && !pattern_is_zero(p, size))
			dso_die("constructor: calloc block not zero");
		pattern_fill(p, size, (uintptr_t)p, DSO_SEED);
		dso_blocks[i].p = p;
		dso_blocks[i].size = size;
	}
}

__attribute__((destructor)) static void
dso_fini(void)
{
	for (size_t i = 0; i < DSO_BLOCKS; i++) {
		if (pattern_check(dso_blocks[i].p, dso_blocks[i].size, (uintptr_t)dso_blocks[i].p,
		                  DSO_SEED) >= 0)
			dso_die("destructor: a constructor block was damaged");
		free(dso_blocks[i].p);
		dso_blocks[i].p = NULL;
	}
	if (dso_round_trip(DSO_SEED ^ 0xd7) != 0)
		dso_die("destructor: a block allocated there was damaged");
}

/* Checks the constructor's blocks and makes a round trip of its own: the number of damaged
 * blocks. */
__attribute__((visibility("default"))) long
stress_dso_touch(uint64_t seed)
{
	long errors = 0;
	for (size_t i = 0; i < DSO_BLOCKS; i++)
		errors += pattern_check(dso_blocks[i].p, dso_blocks[i].size,
		                        (uintptr_t)dso_blocks[i].p, DSO_SEED) >= 0;
	return errors + dso_round_trip(seed);
}
