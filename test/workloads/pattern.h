/* pattern: fills heap blocks with bytes derived from an address and a seed, and checks them, so
 * that a block the allocator or the library damaged, moved wrongly or handed out twice shows. */
#ifndef PATTERN_H
#define PATTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Word i of a block filled when it lived at base. */
static inline uint64_t
pattern_word(uintptr_t base, size_t i, uint64_t seed)
{
	uint64_t x = ((uint64_t)base + 8 * (uint64_t)i) ^ seed;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

static inline void
pattern_fill(void *block, size_t size, uintptr_t base, uint64_t seed)
{
	unsigned char *p = block;
	size_t words = size / 8;
	for (size_t i = 0; i < words; i++) {
		uint64_t w = pattern_word(base, i, seed);
		memcpy(p + 8 * i, &w, 8);
	}
	uint64_t tail = pattern_word(base, words, seed);
	memcpy(p + 8 * words, &tail, size % 8);
}

/* The offset of the first byte of the first `size` that differs from the pattern, or -1. */
static inline long
pattern_check(const void *block, size_t size, uintptr_t base, uint64_t seed)
{
	const unsigned char *p = block;
	size_t words = size / 8;
	for (size_t i = 0; i < words; i++) {
		uint64_t w = pattern_word(base, i, seed), got;
		memcpy(&got, p + 8 * i, 8);
		if (got != w)
			return (long)(8 * i);
	}
	uint64_t tail = pattern_word(base, words, seed);
	if (memcmp(p + 8 * words, &tail, size % 8))
		return (long)(8 * words);
	return -1;
}

static inline bool
pattern_is_zero(const void *block, size_t size)
{
	const unsigned char *p = block;
	for (size_t i = 0; i < size; i++)
		if (p[i])
			return false;
	return true;
}

#endif
