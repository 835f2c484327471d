/* rt_elf: a name's definition in one loaded object's dynamic symbol table, found as ld.so's
 * dlsym finds it (GNU hash, the default version), by reading the tables alone: no lock, no
 * allocation, no error state. What this lookup cannot answer as dlsym would, it says so. */
#ifndef RT_ELF_H
#define RT_ELF_H

#include <link.h>
#include <stdbool.h>
#include <stdint.h>

/* One object's tables, as rt_elf_object_init found them in its dynamic section. */
struct rt_elf_object {
	uintptr_t base; /* the load bias: what st_value is relative to */
	const ElfW(Sym) * symtab;
	const char *strtab;
	const uint32_t *gnu_hash;
	const ElfW(Half) * versym; /* NULL: the object has no symbol versions */
};

enum rt_elf_answer {
	RT_ELF_ABSENT,  /* the object defines no such name that dlsym would return */
	RT_ELF_DEFINED, /* *addr holds the definition dlsym would return */
	RT_ELF_ASK,     /* only dlsym can tell: an IFUNC, a TLS or absolute symbol, no GNU hash
	                 * table, or two default versions of the name */
};

/* The GNU hash of a name (the DT_GNU_HASH function). */
uint32_t rt_elf_hash(const char *name);

/* Reads the tables of an object loaded at base with dynamic section dyn. ld.so relocates most
 * objects' dynamic entries in place, but not those of a read-only dynamic section (the vDSO):
 * an address below base is taken as relative to it. False when a table is missing, and then
 * every lookup in it answers RT_ELF_ASK. */
bool rt_elf_object_init(struct rt_elf_object *obj, const ElfW(Dyn) * dyn, uintptr_t base);

/* name's definition in obj (hash is rt_elf_hash(name)), as dlsym(RTLD_NEXT) accepts one: a
 * global or weak symbol of a defined function, object or untyped value, either without a
 * version or in the object's one default (not hidden) version. */
enum rt_elf_answer rt_elf_lookup(const struct rt_elf_object *obj, const char *name, uint32_t hash,
                                 uintptr_t *addr);

#endif
