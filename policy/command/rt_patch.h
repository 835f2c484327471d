/* rt_patch: the rules of `roundtrim patch`, text in and text out: what a file is, the block and
 * where it goes, undo to the exact bytes, the role's arena cap, signed kits, the diff shown. */
#ifndef RT_PATCH_H
#define RT_PATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "rt_settings.h"

/* The block's first line starts with this, then the version and " >>>"; its last line is the end
 * marker. Both are the shell version's, so that each undoes what the other wrote. */
#define RT_PATCH_BEGIN_PREFIX "# >>> roundtrim "
#define RT_PATCH_END_MARKER "# <<< roundtrim <<<"
/* The shell version kept the original beside the file under this name; the C version keeps none,
 * as the block's lines alone give back the exact bytes, and a file added beside a signed kit's
 * launcher fails NVFlare's verification (roundtrim(1), patch). */
#define RT_PATCH_LEGACY_BACKUP_SUFFIX ".roundtrim-orig"
/* Without --match: not the launcher's bash, sleep, cat and kill. */
#define RT_PATCH_DEFAULT_MATCH "python*"
#define RT_PATCH_SIGNATURE_FILE "signature.json"

#define RT_PATCH_REGIONS_MAX 3
#define RT_PATCH_SETTINGS_MAX (RT_SETTING_COUNT + 1)
#define RT_PATCH_WHY_MAX 320

enum rt_patch_kind {
	RT_PATCH_REFUSED,  /* neither of the below, or one patch cannot handle: why says why */
	RT_PATCH_LAUNCHER, /* a sh or bash script: the block goes after its first line */
	RT_PATCH_TEMPLATE, /* NVFlare's master_template.yml: the block goes into each sub_start
	                      scalar, after the scalar's own #! line, at the scalar's indentation */
};

/* Which NVFlare process a launcher starts: nvflare.private.fed.app.<site>. */
enum rt_patch_site {
	RT_PATCH_SITE_NONE,   /* starts none, or not one that is recognised */
	RT_PATCH_SITE_CLIENT, /* client.client_train */
	RT_PATCH_SITE_SERVER, /* server.server_train */
	RT_PATCH_SITE_RELAY,  /* relay.relay (2.7 and later) */
	RT_PATCH_SITE_EVERY,  /* a template, rendered for every kind of site */
};

/* Where blocks go: after the line that ends at `insert`, up to `end`, lines indented by `indent`
 * spaces. A launcher has one region (the whole file); a template one per sub_start key. */
struct rt_patch_region {
	size_t insert;
	size_t end;
	size_t indent;
	const char *key; /* the template's key (static text), NULL in a launcher */
	unsigned blocks; /* roundtrim blocks found in it */
};

/* What rt_patch_identify found in a file's text. */
struct rt_patch_file {
	enum rt_patch_kind kind;
	enum rt_patch_site site;
	bool nvflare;          /* a line starts `python3 ... -m nvflare.` */
	bool container;        /* a line runs `docker run` or `podman run` */
	bool runs_sub_start;   /* a line names sub_start.sh (start.sh hands over to it) */
	unsigned preload_line; /* first line loading libroundtrim.so outside a block, or 0 */
	unsigned blocks;       /* roundtrim blocks, all regions together */
	unsigned nregions;
	struct rt_patch_region regions[RT_PATCH_REGIONS_MAX];
	char why[RT_PATCH_WHY_MAX]; /* REFUSED: the reason, to follow "FILE: " */
};

/* Reads what a file is. The text need not end in NUL; a NUL inside makes it "not a text file". */
void rt_patch_identify(const char *text, size_t len, struct rt_patch_file *file);

/* NULL when the file may be patched, else the reason (in why, to follow "FILE: "). force
 * overrides only "starts no NVFlare process" and "runs NVFlare in a container"; role is the
 * --role given (RT_ROLE_NONE without), which must fit the site the file starts. */
const char *rt_patch_refusal(const struct rt_patch_file *file, bool force, enum rt_role role,
                             char *why, size_t size);

/* NULL when the file's blocks may be removed, else the reason. */
const char *rt_patch_undo_refusal(const struct rt_patch_file *file, char *why, size_t size);

/* One line of the block: `export NAME=VALUE`, VALUE shell-quoted; or, with default_only,
 * `export NAME="${NAME:-VALUE}"`: a value already in the environment wins. */
struct rt_patch_setting {
	const char *name;
	const char *value;
	bool default_only;
};

/* The block's settings, in an order that does not depend on the order of the options:
 * ROUNDTRIM_MATCH first (RT_PATCH_DEFAULT_MATCH unless given), then each setting given, in
 * rt_settings' order, then MALLOC_ARENA_MAX: arena_max when --arena-max was given (non-zero),
 * else the role's cap as a default (rt_roles), else none. values[id] is the text
 * given for rt_settings[id] (NULL: not given), already checked with rt_setting_parse; arena_text
 * holds MALLOC_ARENA_MAX's value, which out may point into. Returns how many were written. */
size_t rt_patch_settings(const char *const values[RT_SETTING_COUNT], unsigned arena_max,
                         char arena_text[24], struct rt_patch_setting out[RT_PATCH_SETTINGS_MAX]);

/* --arena-max's value: 1 to INT_MAX (mallopt takes an int). RT_PARSE_OK or the problem. */
enum rt_parse_result rt_patch_parse_arena_max(const char *text, unsigned *out);

/* NULL when the setting can be written in the block, else why not. */
const char *rt_patch_setting_refusal(const struct rt_patch_setting *setting);

/* The block (every line ending in '\n', no indentation) for version, lib and the settings,
 * which the two rules above accepted. Writes at most size bytes, NUL-terminated when there is
 * room; returns the length it needs (call again with more room when it is >= size). */
size_t rt_patch_block(const char *version, const char *lib, const struct rt_patch_setting *settings,
                      size_t nsettings, char *out, size_t size);

enum rt_patch_change {
	RT_PATCH_ADDED,    /* no block was there: one now follows each region's first line */
	RT_PATCH_REPLACED, /* blocks with other text were there: one block with the new text now */
	RT_PATCH_SAME,     /* each region already holds this very block, once: nothing changes */
	RT_PATCH_REMOVED,  /* undo: every block removed, the rest untouched */
	RT_PATCH_ABSENT,   /* undo: no block: nothing changes */
};

/* The text with the block in each region of file (identified from this text, and not refused):
 * a block already there is replaced where it stands, further ones are removed. The result goes
 * to out as rt_patch_block's does; *out_len gets its length (out holds a copy of the text for
 * SAME). */
enum rt_patch_change rt_patch_apply(const char *text, size_t len, const struct rt_patch_file *file,
                                    const char *block, char *out, size_t size, size_t *out_len);

/* The text without its blocks: the exact bytes it had before the first patch, when nothing
 * outside the blocks has changed since. */
enum rt_patch_change rt_patch_remove(const char *text, size_t len, const struct rt_patch_file *file,
                                     char *out, size_t size, size_t *out_len);

/* What the command says after "FILE: " for a change, and with dry_run for one it would make. */
const char *rt_patch_change_text(enum rt_patch_change change, bool dry_run);
/* What it adds after "; " when the change is in a template: when it reaches the kits. NULL
 * when there is nothing to add. */
const char *rt_patch_change_note(const struct rt_patch_file *file, enum rt_patch_change change);

/* A unified diff (3 lines of context, "--- label" and "+++ label") from old to new, empty when
 * they are equal. Hunks are found from the blocks' markers, for texts that differ by whole
 * blocks inserted, replaced or removed (what apply and remove do); any other difference is one
 * change from its first line to the lines both texts end with. Written as rt_patch_block's. */
size_t rt_patch_diff(const char *label, const char *old, size_t old_len, const char *new_text,
                     size_t new_len, char *out, size_t size);

/* Whether signature.json lists a file (rt_patch_read.c, with json-c). */
enum rt_patch_signature {
	RT_PATCH_SIGNATURE_LISTS,      /* an object whose keys include the file */
	RT_PATCH_SIGNATURE_OMITS,      /* an object without the file */
	RT_PATCH_SIGNATURE_UNREADABLE, /* not a JSON object, or not read */
};
enum rt_patch_signature rt_patch_read_signature(const char *json_text, const char *file_name);

enum rt_patch_kit {
	RT_PATCH_KIT_UNSIGNED,  /* no signature.json beside the file */
	RT_PATCH_KIT_SIGNED,    /* signature.json beside it signs it (or cannot be read) */
	RT_PATCH_KIT_UNCOVERED, /* signature.json beside it does not list it: patching changes
	                           nothing NVFlare verifies */
};

/* From the names in the launcher's directory (a startup/ folder) and what its signature.json
 * says of the launcher. */
enum rt_patch_kit rt_patch_kit_verdict(const char *const *names, size_t nnames,
                                       enum rt_patch_signature signature);

/* The refusal for a signed kit, to follow "FILE: ": why, and what to do instead (start the kit
 * unchanged with `roundtrim run`, with start_sh, the role and the arena cap; or patch the
 * provisioning template and provision again; or --force). */
size_t rt_patch_kit_message(const char *file_name, const char *start_sh, enum rt_role role,
                            unsigned arena_max, char *out, size_t size);

#endif
