#include <criterion/criterion.h>
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "rt_elf.h"

/* --- Against ld.so itself: the objects of this test program. */

struct find_object {
	const char *name;
	struct rt_elf_object obj;
	bool found;
};

static int
find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct find_object *f = arg;
	if (!info->dlpi_name || !strstr(info->dlpi_name, f->name))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			f->found = rt_elf_object_init(
			    &f->obj,
			    (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr),
			    info->dlpi_addr);
	return 1;
}

static struct rt_elf_object
loaded(const char *name)
{
	struct find_object f = {.name = name};
	dl_iterate_phdr(find_object, &f);
	cr_assert(f.found, "no tables for %s", name);
	return f.obj;
}

static enum rt_elf_answer
lookup(const struct rt_elf_object *obj, const char *name, uintptr_t *addr)
{
	*addr = 0;
	return rt_elf_lookup(obj, name, rt_elf_hash(name), addr);
}

Test(elf, hash_is_the_gnu_hash)
{
	/* Values from the DT_GNU_HASH definition (h = h * 33 + c from 5381). */
	cr_assert_eq(rt_elf_hash(""), 5381u);
	cr_assert_eq(rt_elf_hash("a"), 5381u * 33 + 'a');
	cr_assert_eq(rt_elf_hash("printf"), 0x156b2bb8u);
	cr_assert_eq(rt_elf_hash("exit"), 0x7c967e3fu);
}

Test(elf, finds_in_libc_what_dlsym_finds)
{
	struct rt_elf_object libc = loaded("libc.so.6");
	void *handle = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	cr_assert_not_null(handle);
	/* The library's names, posix_spawn and pthread_create among them, which libc defines in
	 * two versions each: dlsym returns the default one. */
	const char *names[] = {"malloc",
	                       "free",
	                       "calloc",
	                       "realloc",
	                       "reallocarray",
	                       "memalign",
	                       "posix_memalign",
	                       "aligned_alloc",
	                       "valloc",
	                       "pvalloc",
	                       "malloc_usable_size",
	                       "_exit",
	                       "_Exit",
	                       "execve",
	                       "execv",
	                       "execvp",
	                       "execvpe",
	                       "fexecve",
	                       "execveat",
	                       "posix_spawn",
	                       "posix_spawnp",
	                       "system",
	                       "popen",
	                       "sigaction",
	                       "signal",
	                       "bsd_signal",
	                       "sysv_signal",
	                       "sigset",
	                       "pthread_create",
	                       "fork",
	                       "__libc_malloc",
	                       "environ"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		uintptr_t addr;
		cr_assert_eq(lookup(&libc, names[i], &addr), RT_ELF_DEFINED, "%s", names[i]);
		cr_assert_eq((void *)addr, dlsym(handle, names[i]), "%s", names[i]);
	}
	dlclose(handle);
}

Test(elf, absent_names_and_resolvers_are_told_apart)
{
	struct rt_elf_object libc = loaded("libc.so.6");
	uintptr_t addr;
	cr_assert_eq(lookup(&libc, "roundtrim_no_such_name", &addr), RT_ELF_ABSENT);
	cr_assert_eq(lookup(&libc, "mallocx", &addr), RT_ELF_ABSENT);
	/* memcpy is an IFUNC: its address is what its resolver returns, which only ld.so asks. */
	cr_assert_eq(lookup(&libc, "memcpy", &addr), RT_ELF_ASK);
	/* A name libc imports but does not define. */
	struct rt_elf_object self = loaded("libcriterion");
	cr_assert_eq(lookup(&self, "malloc", &addr), RT_ELF_ABSENT);
}

/* --- Tables made here, one bucket and a bloom filter that passes everything. */

#define SYMS 8

struct table {
	ElfW(Sym) sym[SYMS];
	char str[256];
	size_t strlen;
	ElfW(Half) versym[SYMS];
	uint32_t hash[4 + 2 + 1 + SYMS]; /* header, 1 bloom word (2 x 32 bits), 1 bucket, chain */
	unsigned n;
	struct rt_elf_object obj;
};

static void
table_init(struct table *t)
{
	memset(t, 0, sizeof(*t));
	t->strlen = 1;
	t->n = 1; /* symbol 0 is the undefined one */
}

static void
table_add(struct table *t, const char *name, unsigned char info, unsigned char other,
          ElfW(Half) shndx, ElfW(Addr) value, ElfW(Half) version)
{
	cr_assert_lt(t->n, SYMS);
	ElfW(Sym) *s = &t->sym[t->n];
	s->st_name = (ElfW(Word))t->strlen;
	strcpy(t->str + t->strlen, name);
	t->strlen += strlen(name) + 1;
	s->st_info = info;
	s->st_other = other;
	s->st_shndx = shndx;
	s->st_value = value;
	t->versym[t->n] = version;
	t->n++;
}

/* Every symbol after the first hashes into the one bucket's chain, all with the same name's
 * hash: the chain holds each entry of one name. */
static void
table_finish(struct table *t, const char *name, bool with_versions)
{
	uint32_t h = rt_elf_hash(name);
	t->hash[0] = 1; /* buckets */
	t->hash[1] = 1; /* symoffset */
	t->hash[2] = 1; /* bloom words */
	t->hash[3] = 6; /* bloom shift */
	memset(&t->hash[4], 0xff, sizeof(ElfW(Addr)));
	t->hash[6] = 1; /* the bucket: the chain starts at symbol 1 */
	for (unsigned i = 1; i < t->n; i++)
		t->hash[7 + i - 1] = (h & ~1u) | (i == t->n - 1);
	t->obj = (struct rt_elf_object){.base = 0x10000,
	                                .symtab = t->sym,
	                                .strtab = t->str,
	                                .gnu_hash = t->hash,
	                                .versym = with_versions ? t->versym : NULL};
}

#define FUNC(bind) ELF64_ST_INFO(bind, STT_FUNC)

Test(elf, unversioned_definition_wins_over_a_default_version)
{
	struct table t;
	table_init(&t);
	table_add(&t, "f", FUNC(STB_GLOBAL), STV_DEFAULT, 1, 0x100, 2);
	table_add(&t, "f", FUNC(STB_GLOBAL), STV_DEFAULT, 1, 0x200, 1);
	table_finish(&t, "f", true);
	uintptr_t addr;
	cr_assert_eq(lookup(&t.obj, "f", &addr), RT_ELF_DEFINED);
	cr_assert_eq(addr, 0x10200);
}

Test(elf, the_one_default_version_not_a_hidden_one)
{
	struct table t;
	table_init(&t);
	table_add(&t, "f", FUNC(STB_GLOBAL), STV_DEFAULT, 1, 0x100, 2 | 0x8000);
	table_add(&t, "f", FUNC(STB_GLOBAL), STV_DEFAULT, 1, 0x200, 3);
	table_finish(&t, "f", true);
	uintptr_t addr;
	cr_assert_eq(lookup(&t.obj, "f", &addr), RT_ELF_DEFINED);
	cr_assert_eq(addr, 0x10200);
	/* Two default versions: ld.so finds neither, dlsym is left to say so. */
	table_init(&t);
	table_add(&t, "f", FUNC(STB_GLOBAL), STV_DEFAULT, 1, 0x100, 2);
	table_add(&t, "f", FUNC(STB_GLOBAL), STV_DEFAULT, 1, 0x200, 3);
	table_finish(&t, "f", true);
	cr_assert_eq(lookup(&t.obj, "f", &addr), RT_ELF_ASK);
	/* Only hidden ones: none. */
	table_init(&t);
	table_add(&t, "f", FUNC(STB_GLOBAL), STV_DEFAULT, 1, 0x100, 2 | 0x8000);
	table_finish(&t, "f", true);
	cr_assert_eq(lookup(&t.obj, "f", &addr), RT_ELF_ABSENT);
	/* Without version tables, the first definition. */
	table_finish(&t, "f", false);
	cr_assert_eq(lookup(&t.obj, "f", &addr), RT_ELF_DEFINED);
	cr_assert_eq(addr, 0x10100);
}

Test(elf, undefined_local_and_hidden_symbols_are_not_definitions)
{
	struct table t;
	uintptr_t addr;
	/* An import (no value) is passed over; the definition after it is found. */
	table_init(&t);
	table_add(&t, "f", FUNC(STB_GLOBAL), STV_DEFAULT, SHN_UNDEF, 0, 1);
	table_add(&t, "f", FUNC(STB_WEAK), STV_DEFAULT, 1, 0x300, 1);
	table_finish(&t, "f", true);
	cr_assert_eq(lookup(&t.obj, "f", &addr), RT_ELF_DEFINED);
	cr_assert_eq(addr, 0x10300);
	/* An executable's canonical PLT entry: undefined with a value, left to dlsym. */
	table_init(&t);
	table_add(&t, "f", FUNC(STB_GLOBAL), STV_DEFAULT, SHN_UNDEF, 0x400, 1);
	table_finish(&t, "f", true);
	cr_assert_eq(lookup(&t.obj, "f", &addr), RT_ELF_ASK);
	/* A local or hidden match ends the search in the object, as in ld.so. */
	table_init(&t);
	table_add(&t, "f", FUNC(STB_LOCAL), STV_DEFAULT, 1, 0x100, 1);
	table_add(&t, "f", FUNC(STB_GLOBAL), STV_DEFAULT, 1, 0x200, 1);
	table_finish(&t, "f", true);
	cr_assert_eq(lookup(&t.obj, "f", &addr), RT_ELF_ABSENT);
	table_init(&t);
	table_add(&t, "f", FUNC(STB_GLOBAL), STV_HIDDEN, 1, 0x100, 1);
	table_finish(&t, "f", true);
	cr_assert_eq(lookup(&t.obj, "f", &addr), RT_ELF_ABSENT);
	/* A section symbol is no candidate at all. */
	table_init(&t);
	table_add(&t, "f", ELF64_ST_INFO(STB_GLOBAL, STT_SECTION), STV_DEFAULT, 1, 0x100, 1);
	table_finish(&t, "f", true);
	cr_assert_eq(lookup(&t.obj, "f", &addr), RT_ELF_ABSENT);
}

Test(elf, names_that_only_ld_so_can_answer)
{
	struct table t;
	uintptr_t addr;
	table_init(&t);
	table_add(&t, "f", ELF64_ST_INFO(STB_GLOBAL, STT_GNU_IFUNC), STV_DEFAULT, 1, 0x100, 1);
	table_finish(&t, "f", true);
	cr_assert_eq(lookup(&t.obj, "f", &addr), RT_ELF_ASK);
	table_init(&t);
	table_add(&t, "f", ELF64_ST_INFO(STB_GNU_UNIQUE, STT_OBJECT), STV_DEFAULT, 1, 0x100, 1);
	table_finish(&t, "f", true);
	cr_assert_eq(lookup(&t.obj, "f", &addr), RT_ELF_ASK);
	table_init(&t);
	table_add(&t, "f", ELF64_ST_INFO(STB_GLOBAL, STT_TLS), STV_DEFAULT, 1, 0, 1);
	table_finish(&t, "f", true);
	cr_assert_eq(lookup(&t.obj, "f", &addr), RT_ELF_ASK);
	/* No hash table: nothing can be said. */
	struct rt_elf_object bare = {.symtab = t.sym, .strtab = t.str};
	cr_assert_eq(lookup(&bare, "f", &addr), RT_ELF_ASK);
}

Test(elf, other_names_in_the_chain_and_the_bloom_filter)
{
	struct table t;
	uintptr_t addr;
	table_init(&t);
	table_add(&t, "f", FUNC(STB_GLOBAL), STV_DEFAULT, 1, 0x100, 1);
	table_finish(&t, "f", true);
	/* Same bucket, another hash: the chain ends without a match. */
	cr_assert_eq(lookup(&t.obj, "g", &addr), RT_ELF_ABSENT);
	/* A bloom filter that rejects everything. */
	memset(&t.hash[4], 0, sizeof(ElfW(Addr)));
	cr_assert_eq(lookup(&t.obj, "f", &addr), RT_ELF_ABSENT);
}

Test(elf, tables_from_a_dynamic_section_relocated_or_not)
{
	static const ElfW(Sym) sym[1];
	static const char str[1];
	static const uint32_t hash[4];
	uintptr_t base = 0x1000;
	/* Entries relocated in place, as ld.so leaves most objects. */
	ElfW(Dyn) dyn[] = {{.d_tag = DT_SYMTAB, .d_un.d_ptr = (ElfW(Addr))sym},
	                   {.d_tag = DT_STRTAB, .d_un.d_ptr = (ElfW(Addr))str},
	                   {.d_tag = DT_GNU_HASH, .d_un.d_ptr = (ElfW(Addr))hash},
	                   {.d_tag = DT_NULL}};
	struct rt_elf_object obj;
	cr_assert(rt_elf_object_init(&obj, dyn, base));
	cr_assert_eq(obj.symtab, sym);
	cr_assert_eq(obj.strtab, str);
	cr_assert_eq(obj.gnu_hash, hash);
	cr_assert_null(obj.versym);
	/* Offsets from the base, as in a read-only dynamic section. */
	base = (uintptr_t)sym - 0x40;
	dyn[0].d_un.d_ptr = 0x40;
	cr_assert(rt_elf_object_init(&obj, dyn, base));
	cr_assert_eq(obj.symtab, sym);
	/* Without a GNU hash table. */
	dyn[2].d_tag = DT_HASH;
	cr_assert_not(rt_elf_object_init(&obj, dyn, base));
}
