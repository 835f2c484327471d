/* The rules are glibc's (elf/dl-lookup.c: do_lookup_x and check_match, with dlsym's
 * DL_LOOKUP_RETURN_NEWEST); where they lead somewhere this lookup does not follow (a resolver
 * to call, a unique symbol's table), the answer is RT_ELF_ASK. */
#include "rt_elf.h"

#include <stdbool.h>
#include <stddef.h>

#define RT_ELF_VERSION_HIDDEN 0x8000
#define RT_ELF_VERSION_INDEX 0x7fff
/* Version indexes 0 (local) and 1 (global) mean "no version"; named versions start at 2. */
#define RT_ELF_FIRST_NAMED_VERSION 2

uint32_t
rt_elf_hash(const char *name)
{
	uint32_t h = 5381;
	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = h * 33 + *c;
	return h;
}

/* A dynamic entry's address: most are relocated in place by ld.so, a read-only section's are
 * not (see rt_elf.h). */
static uintptr_t
rt_elf_address(ElfW(Addr) value, uintptr_t base)
{
	return value < base ? value + base : value;
}

bool
rt_elf_object_init(struct rt_elf_object *obj, const ElfW(Dyn) * dyn, uintptr_t base)
{
	*obj = (struct rt_elf_object){.base = base};
	for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
		uintptr_t at = rt_elf_address(dyn->d_un.d_ptr, base);
		switch (dyn->d_tag) {
		case DT_SYMTAB:
			obj->symtab = (const ElfW(Sym) *)at;
			break;
		case DT_STRTAB:
			obj->strtab = (const char *)at;
			break;
		case DT_GNU_HASH:
			obj->gnu_hash = (const uint32_t *)at;
			break;
		case DT_VERSYM:
			obj->versym = (const ElfW(Half) *)at;
			break;
		default:
			break;
		}
	}
	return obj->symtab && obj->strtab && obj->gnu_hash;
}

/* strcmp's equality, here: the library resolves before any sanitizer runtime is up, whose
 * interceptor of strcmp would run then. */
static bool
rt_elf_same(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return *a == *b;
}

/* check_match's first tests: whether ld.so would consider the symbol at all. */
static bool
rt_elf_candidate(const ElfW(Sym) * sym)
{
	unsigned type = ELF64_ST_TYPE(sym->st_info);
	if (sym->st_value == 0 && sym->st_shndx != SHN_ABS && type != STT_TLS)
		return false;
	unsigned allowed = (1u << STT_NOTYPE) | (1u << STT_OBJECT) | (1u << STT_FUNC) |
	                   (1u << STT_COMMON) | (1u << STT_TLS) | (1u << STT_GNU_IFUNC);
	return type < 32 && (allowed >> type & 1);
}

/* What the symbol ld.so chose gives dlsym's caller. */
static enum rt_elf_answer
rt_elf_chosen(const struct rt_elf_object *obj, const ElfW(Sym) * sym, uintptr_t *addr)
{
	unsigned bind = ELF64_ST_BIND(sym->st_info);
	unsigned visibility = ELF64_ST_VISIBILITY(sym->st_other);
	/* Hidden, internal and local symbols end the search in this object. */
	if (visibility == STV_HIDDEN || visibility == STV_INTERNAL ||
	    (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE))
		return RT_ELF_ABSENT;
	unsigned type = ELF64_ST_TYPE(sym->st_info);
	if (bind == STB_GNU_UNIQUE || type == STT_GNU_IFUNC || type == STT_TLS ||
	    sym->st_shndx == SHN_ABS || sym->st_shndx == SHN_UNDEF)
		return RT_ELF_ASK;
	*addr = obj->base + sym->st_value;
	return RT_ELF_DEFINED;
}

enum rt_elf_answer
rt_elf_lookup(const struct rt_elf_object *obj, const char *name, uint32_t hash, uintptr_t *addr)
{
	if (!obj->symtab || !obj->strtab || !obj->gnu_hash)
		return RT_ELF_ASK;
	const uint32_t *h = obj->gnu_hash;
	uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2], bloom_shift = h[3];
	if (nbuckets == 0 || bloom_size == 0)
		return RT_ELF_ABSENT;
	const ElfW(Addr) *bloom = (const ElfW(Addr) *)(h + 4);
	const uint32_t *buckets = (const uint32_t *)(bloom + bloom_size);
	const uint32_t *chain = buckets + nbuckets;
	unsigned bits = 8 * sizeof(ElfW(Addr));
	ElfW(Addr) word = bloom[(hash / bits) % bloom_size];
	ElfW(Addr) mask = (ElfW(Addr))1 << (hash % bits) | (ElfW(Addr))1
	                                                       << ((hash >> bloom_shift) % bits);
	if ((word & mask) != mask)
		return RT_ELF_ABSENT;
	uint32_t i = buckets[hash % nbuckets];
	if (i < symoffset)
		return RT_ELF_ABSENT;
	const ElfW(Sym) *versioned = NULL;
	unsigned versions = 0;
	for (;; i++) {
		uint32_t link = chain[i - symoffset];
		const ElfW(Sym) *sym = &obj->symtab[i];
		if (((link ^ hash) >> 1) == 0 && rt_elf_candidate(sym) &&
		    rt_elf_same(obj->strtab + sym->st_name, name)) {
			unsigned v = obj->versym ? obj->versym[i] : 0;
			if ((v & RT_ELF_VERSION_INDEX) < RT_ELF_FIRST_NAMED_VERSION)
				return rt_elf_chosen(obj, sym, addr);
			/* A named version: only its default one, and only when it is the only one.
			 */
			if (!(v & RT_ELF_VERSION_HIDDEN) && versions++ == 0)
				versioned = sym;
		}
		if (link & 1)
			break;
	}
	if (versions > 1)
		return RT_ELF_ASK;
	return versioned ? rt_elf_chosen(obj, versioned, addr) : RT_ELF_ABSENT;
}
