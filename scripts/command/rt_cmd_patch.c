/* patch: puts the preload block into a launcher such as NVFlare's startup/sub_start.sh, or into
 * NVFlare's provisioning template, or takes it out (roundtrim(1), patch). Every rule is
 * rt_patch's; this file parses the options, reads and replaces the file, and prints. */
#include "rt_cmd.h"
#include "rt_cmd_lib.h"
#include "rt_cmd_opt.h"
#include "rt_patch.h"
#include "rt_settings.h"
#include "rt_version.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A launcher or a template is a few KiB: anything this large is something else. */
#define RT_CMD_PATCH_FILE_MAX (16u << 20)

struct rt_cmd_patch_args {
	const char *file; /* as typed */
	bool undo, force, dry_run, diff;
	const char *values[RT_SETTING_COUNT];
	char texts[RT_SETTING_COUNT][PATH_MAX + 64];
	unsigned arena_max;
	enum rt_role role;
	bool other_options; /* any option that --undo does not take */
};

/* The file as read: its real path, bytes, mode and owner. */
struct rt_cmd_patch_file {
	char real[PATH_MAX];
	char *text;
	size_t len;
	struct stat st;
};

/* The temporary file beside the real one, removed at exit unless renamed over it. */
static char rt_cmd_patch_tmp[PATH_MAX + 32];

static void
rt_cmd_patch_help(void)
{
	fputs("Usage: " RT_CMD_NAME " patch [OPTION]... FILE\n"
	      "   or: " RT_CMD_NAME " patch --undo [--dry-run] [--diff] FILE\n"
	      "Add to the launcher FILE (NVFlare's startup/sub_start.sh, after its first line) or "
	      "to NVFlare's\n"
	      "master_template.yml (inside each sub_start scalar) a marked block that puts "
	      "libroundtrim.so\n"
	      "first in LD_PRELOAD and exports the options below; --undo removes it and gives "
	      "back the exact\n"
	      "bytes. Patching again with the same options changes nothing. No backup is made.\n\n",
	      stdout);
	int width = rt_cmd_opt_usage_width(true, (int)strlen("--arena-max N"));
	for (unsigned i = 0; i < RT_SETTING_COUNT; i++) {
		const struct rt_setting *s = &rt_settings[i];
		char usage[128];
		if (!s->option || !s->patch)
			continue;
		rt_cmd_opt_usage(s, usage, sizeof(usage));
		printf("  %-*s  %s%s%s: %s", width, usage, s->name, s->flag_value ? "=" : "",
		       s->flag_value ? s->flag_value : "", s->doc);
		if (i == RT_SETTING_MATCH)
			fputs(" (default '" RT_PATCH_DEFAULT_MATCH "')", stdout);
		else if (s->kind == RT_KIND_PATH)
			fputs(" (absolute)", stdout);
		putchar('\n');
	}
	printf("  %-*s  MALLOC_ARENA_MAX=N, fixed, instead of the role's cap\n", width,
	       "--arena-max N");
	printf("  %-*s  patch a script that starts no NVFlare process, starts it in a "
	       "container,\n  %-*s  or belongs to a signed kit\n",
	       width, "--force", width, "");
	printf("  %-*s  change nothing; say what would change\n", width, "--dry-run");
	printf("  %-*s  print the change as a unified diff (patch -p0 applies it)\n", width,
	       "--diff");
	printf("  %-*s  remove the block\n", width, "--undo");
	printf("  %-*s  this text\n\n", width, "--help");
	fputs("Rounds need no trigger: the library finds them itself (--auto); --interval and "
	      "--pressure\n"
	      "add actions without rounds.\n"
	      "Exit status: 0 patched, updated, already patched, removed or nothing to undo (also "
	      "with\n"
	      "--dry-run); 1 FILE refused or unreadable, or the write failed (FILE unchanged); 2 "
	      "usage error.\n",
	      stdout);
}

static void
rt_cmd_patch_remove_tmp(void)
{
	if (rt_cmd_patch_tmp[0])
		unlink(rt_cmd_patch_tmp);
}

/* A settings row's option: its value, checked by the row's rule; paths must be absolute. */
static void
rt_cmd_patch_setting(const struct rt_setting *s, const struct rt_cmd_opt *opt, int argc,
                     char **argv, int *i, struct rt_cmd_patch_args *a)
{
	unsigned id = (unsigned)(s - rt_settings);
	const char *arg = rt_cmd_opt_setting_value(s, opt, argc, argv, i);
	const struct rt_setting_platform platform = {SIGRTMIN, SIGRTMAX};
	enum rt_parse_result r =
	    rt_setting_option_value(s, arg, NULL, &platform, a->texts[id], sizeof(a->texts[id]));
	if (r != RT_PARSE_OK) {
		const char *shown = arg ? arg : s->flag_value;
		rt_cmd_usage_error("%s %s: %s", s->option, shown[0] ? shown : "''",
		                   rt_parse_result_text(r));
	}
	a->values[id] = a->texts[id];
	if (id == RT_SETTING_ROLE) {
		uint64_t word;
		rt_setting_parse(s, a->texts[id], &platform, &word);
		a->role = (enum rt_role)word;
	}
	a->other_options = true;
}

static void
rt_cmd_patch_parse(int argc, char **argv, struct rt_cmd_patch_args *a)
{
	for (int i = 1; i < argc; i++) {
		struct rt_cmd_opt opt;
		if (!strcmp(argv[i], "--")) {
			if (a->file || argc - i != 2)
				rt_cmd_usage_error("patch takes one FILE");
			a->file = argv[++i];
			break;
		}
		if (argv[i][0] != '-' || !argv[i][1]) {
			if (a->file)
				rt_cmd_usage_error("patch takes one FILE");
			a->file = argv[i];
			continue;
		}
		rt_cmd_opt_split(argv[i], &opt);
		const struct rt_setting *s = rt_setting_with_option(opt.name);
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			rt_cmd_patch_help();
			exit(RT_CMD_OK);
		} else if (!strcmp(argv[i], "--undo")) {
			a->undo = true;
		} else if (!strcmp(argv[i], "--dry-run")) {
			a->dry_run = true;
		} else if (!strcmp(argv[i], "--diff")) {
			a->diff = true;
		} else if (!strcmp(argv[i], "--force")) {
			a->force = true;
			a->other_options = true;
		} else if (rt_cmd_opt_is(&opt, "--arena-max")) {
			const char *text = rt_cmd_opt_value(&opt, argc, argv, &i);
			enum rt_parse_result r = rt_patch_parse_arena_max(text, &a->arena_max);
			if (r != RT_PARSE_OK)
				rt_cmd_usage_error("--arena-max %s: %s (--arena-max takes 1 to %d)",
				                   text[0] ? text : "''", rt_parse_result_text(r),
				                   INT_MAX);
			a->other_options = true;
		} else if (s && s->patch) {
			rt_cmd_patch_setting(s, &opt, argc, argv, &i, a);
		} else {
			rt_cmd_usage_error("unknown option %s", opt.name);
		}
	}
	if (!a->file)
		rt_cmd_usage_error("missing FILE");
	if (a->undo && a->other_options)
		rt_cmd_usage_error("--undo takes no other option but --dry-run and --diff");
}

/* Follows FILE to the real file and reads it whole. */
static void
rt_cmd_patch_read(const char *file, struct rt_cmd_patch_file *f)
{
	if (stat(file, &f->st) != 0) {
		if (errno == ENOENT)
			rt_cmd_die("%s: no such file", file);
		rt_cmd_die("%s: %m", file);
	}
	if (!S_ISREG(f->st.st_mode))
		rt_cmd_die("%s: not a regular file", file);
	if (f->st.st_size > (off_t)RT_CMD_PATCH_FILE_MAX)
		rt_cmd_die("%s: larger than 16 MiB, not a launcher", file);
	if (!realpath(file, f->real))
		rt_cmd_die("%s: %m", file);
	int fd = open(f->real, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		rt_cmd_die("%s: %m", file);
	f->text = rt_cmd_alloc(RT_CMD_PATCH_FILE_MAX + 1);
	ssize_t n = rt_cmd_read_fd(fd, f->text, RT_CMD_PATCH_FILE_MAX + 1);
	if (n < 0)
		rt_cmd_die("%s: %m", file);
	f->len = (size_t)n;
	if (f->len > RT_CMD_PATCH_FILE_MAX)
		rt_cmd_die("%s: larger than 16 MiB, not a launcher", file);
	close(fd);
	f->text[f->len] = '\0';
}

/* dirname(3) of a copy of path. */
static void
rt_cmd_patch_dir_of(const char *path, char *out, size_t size)
{
	char copy[PATH_MAX];
	snprintf(copy, sizeof(copy), "%s", path);
	snprintf(out, size, "%s", dirname(copy));
}

/* What signature.json beside the launcher says of it. */
static enum rt_patch_kit
rt_cmd_patch_kit(const struct rt_cmd_patch_file *f)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	rt_cmd_patch_dir_of(f->real, dir, sizeof(dir));
	DIR *d = opendir(dir);
	if (!d)
		return RT_PATCH_KIT_UNSIGNED;
	const char **names = NULL;
	char **owned = NULL;
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		owned = rt_cmd_realloc(owned, (n + 1) * sizeof(*owned));
		owned[n] = strdup(e->d_name);
		if (!owned[n])
			rt_cmd_die("out of memory");
		n++;
	}
	closedir(d);
	names = rt_cmd_alloc((n ? n : 1) * sizeof(*names));
	for (size_t i = 0; i < n; i++)
		names[i] = owned[i];

	enum rt_patch_signature signature = RT_PATCH_SIGNATURE_UNREADABLE;
	snprintf(path, sizeof(path), "%s/" RT_PATCH_SIGNATURE_FILE, dir);
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size <= (off_t)RT_CMD_PATCH_FILE_MAX) {
		char *json = rt_cmd_alloc((size_t)st.st_size + 1);
		ssize_t got = rt_cmd_read_fd(fd, json, (size_t)st.st_size);
		json[got > 0 ? got : 0] = '\0';
		const char *slash = strrchr(f->real, '/');
		signature = rt_patch_read_signature(json, slash ? slash + 1 : f->real);
		free(json);
	}
	if (fd >= 0)
		close(fd);
	enum rt_patch_kit kit = rt_patch_kit_verdict(names, n, signature);
	for (size_t i = 0; i < n; i++)
		free(owned[i]);
	free(owned);
	free(names);
	return kit;
}

/* The block for the options, or a usage error naming the option whose value cannot go in. */
static char *
rt_cmd_patch_block(const struct rt_cmd_patch_args *a, const char *lib)
{
	struct rt_patch_setting settings[RT_PATCH_SETTINGS_MAX];
	char arena_text[24];
	size_t n = rt_patch_settings(a->values, a->arena_max, arena_text, settings);
	for (size_t i = 0; i < n; i++) {
		const char *why = rt_patch_setting_refusal(&settings[i]);
		const struct rt_setting *s = rt_setting_named(settings[i].name);
		if (why)
			rt_cmd_usage_error("%s: %s", s && s->option ? s->option : "--arena-max",
			                   why);
	}
	size_t size = rt_patch_block(RT_VERSION, lib, settings, n, NULL, 0) + 1;
	char *block = rt_cmd_alloc(size);
	rt_patch_block(RT_VERSION, lib, settings, n, block, size);
	return block;
}

/* The temporary file, with the original's mode (and owner, for root), replaces the real file. */
static void
rt_cmd_patch_write(const char *file, const struct rt_cmd_patch_file *f, const char *text,
                   size_t len)
{
	char dir[PATH_MAX];
	rt_cmd_patch_dir_of(f->real, dir, sizeof(dir));
	if (access(dir, W_OK) != 0)
		rt_cmd_die("%s: not writable (the file is replaced by rename)", dir);
	if (access(f->real, W_OK) != 0)
		rt_cmd_die("%s: %m", file);
	const char *slash = strrchr(f->real, '/');
	snprintf(rt_cmd_patch_tmp, sizeof(rt_cmd_patch_tmp), "%.*s/.%s.roundtrim.XXXXXX",
	         (int)(slash - f->real), f->real, slash + 1);
	int fd = mkostemp(rt_cmd_patch_tmp, O_CLOEXEC);
	if (fd < 0) {
		rt_cmd_patch_tmp[0] = '\0';
		rt_cmd_die("%s: %m", dir);
	}
	for (size_t done = 0; done < len;) {
		ssize_t n = write(fd, text + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			rt_cmd_die("%s: %m", file);
		done += (size_t)n;
	}
	if (geteuid() == 0 && fchown(fd, f->st.st_uid, f->st.st_gid) != 0)
		rt_cmd_die("%s: %m", file);
	if (fchmod(fd, f->st.st_mode & 07777) != 0 || fsync(fd) != 0)
		rt_cmd_die("%s: %m", file);
	if (close(fd) != 0 || rename(rt_cmd_patch_tmp, f->real) != 0)
		rt_cmd_die("%s: %m", file);
	rt_cmd_patch_tmp[0] = '\0';
}

static void
rt_cmd_patch_print_diff(const char *file, const struct rt_cmd_patch_file *f, const char *new_text,
                        size_t new_len)
{
	size_t size = rt_patch_diff(file, f->text, f->len, new_text, new_len, NULL, 0) + 1;
	char *diff = rt_cmd_alloc(size);
	rt_patch_diff(file, f->text, f->len, new_text, new_len, diff, size);
	fputs(diff, stdout);
	fflush(stdout);
	free(diff);
}

/* What an older roundtrim's backup beside the file becomes once the file is `result`. */
static void
rt_cmd_patch_legacy_backup(const char *file, const struct rt_cmd_patch_file *f, bool undo,
                           bool dry_run, const char *result, size_t result_len)
{
	char backup[PATH_MAX + sizeof(RT_PATCH_LEGACY_BACKUP_SUFFIX)];
	struct stat st;
	snprintf(backup, sizeof(backup), "%s" RT_PATCH_LEGACY_BACKUP_SUFFIX, f->real);
	if (lstat(backup, &st) != 0)
		return;
	if (!undo) {
		rt_cmd_say("%s" RT_PATCH_LEGACY_BACKUP_SUFFIX
		           ": an older roundtrim's backup; nothing "
		           "needs it now, and NVFlare's kit verification fails on it: remove it",
		           file);
		return;
	}
	bool same = false;
	int fd = S_ISREG(st.st_mode) && (size_t)st.st_size == result_len
	             ? open(backup, O_RDONLY | O_CLOEXEC)
	             : -1;
	if (fd >= 0) {
		char *bytes = rt_cmd_alloc(result_len + 1);
		same = rt_cmd_read_fd(fd, bytes, result_len) == (ssize_t)result_len &&
		       memcmp(bytes, result, result_len) == 0;
		free(bytes);
		close(fd);
	}
	if (!same)
		rt_cmd_say("%s" RT_PATCH_LEGACY_BACKUP_SUFFIX ": an older roundtrim's backup that "
		           "differs from %s; compare and remove it by hand",
		           file, file);
	else if (dry_run)
		rt_cmd_say("%s" RT_PATCH_LEGACY_BACKUP_SUFFIX
		           ": would be removed, an older roundtrim's backup with the same bytes",
		           file);
	else if (unlink(backup) != 0)
		rt_cmd_die("%s" RT_PATCH_LEGACY_BACKUP_SUFFIX ": %m", file);
	else
		rt_cmd_say("%s" RT_PATCH_LEGACY_BACKUP_SUFFIX
		           ": removed, an older roundtrim's backup with the same bytes",
		           file);
}

int
rt_cmd_patch(int argc, char **argv)
{
	static struct rt_cmd_patch_args a;
	struct rt_cmd_patch_file f;
	struct rt_patch_file what;
	char lib[PATH_MAX], why[PATH_MAX + 128], reason[RT_PATCH_WHY_MAX];
	char *block = NULL;
	enum rt_patch_kit kit = RT_PATCH_KIT_UNSIGNED;
	rt_cmd_patch_parse(argc, argv, &a);
	atexit(rt_cmd_patch_remove_tmp);

	if (!a.undo) {
		/* rt_cmd_lib_find holds the path to what LD_PRELOAD and the block can carry. */
		if (!rt_cmd_lib_find(lib, sizeof(lib), why, sizeof(why)))
			rt_cmd_die("%s", why);
	}
	rt_cmd_patch_read(a.file, &f);
	rt_patch_identify(f.text, f.len, &what);
	const char *refusal =
	    a.undo ? rt_patch_undo_refusal(&what, reason, sizeof(reason))
	           : rt_patch_refusal(&what, a.force, a.role, reason, sizeof(reason));
	if (refusal)
		rt_cmd_die("%s: %s", a.file, refusal);
	if (!a.undo && what.kind == RT_PATCH_LAUNCHER) {
		kit = rt_cmd_patch_kit(&f);
		if (kit == RT_PATCH_KIT_SIGNED && !a.force) {
			char typed_dir[PATH_MAX], start_sh[PATH_MAX + 16];
			rt_cmd_patch_dir_of(a.file, typed_dir, sizeof(typed_dir));
			snprintf(start_sh, sizeof(start_sh), "%s/start.sh", typed_dir);
			const char *slash = strrchr(f.real, '/');
			size_t size = rt_patch_kit_message(slash + 1, start_sh, a.role, a.arena_max,
			                                   NULL, 0) +
			              1;
			char *message = rt_cmd_alloc(size);
			rt_patch_kit_message(slash + 1, start_sh, a.role, a.arena_max, message,
			                     size);
			rt_cmd_die("%s: %s", a.file, message);
		}
	}
	if (!a.undo)
		block = rt_cmd_patch_block(&a, lib);

	/* The result: the text and at most a block per region, or the text less its blocks. */
	size_t size = f.len + (block ? RT_PATCH_REGIONS_MAX * 2 * strlen(block) : 0) + 4096;
	char *result = rt_cmd_alloc(size);
	size_t result_len;
	enum rt_patch_change change;
	for (;;) {
		change =
		    a.undo ? rt_patch_remove(f.text, f.len, &what, result, size, &result_len)
		           : rt_patch_apply(f.text, f.len, &what, block, result, size, &result_len);
		if (result_len < size)
			break;
		size = result_len + 1;
		result = rt_cmd_realloc(result, size);
	}
	if (a.diff)
		rt_cmd_patch_print_diff(a.file, &f, result, result_len);
	bool changes =
	    change == RT_PATCH_ADDED || change == RT_PATCH_REPLACED || change == RT_PATCH_REMOVED;
	if (changes && !a.dry_run)
		rt_cmd_patch_write(a.file, &f, result, result_len);
	const char *note = rt_patch_change_note(&what, change);
	rt_cmd_say("%s: %s%s%s", a.file, rt_patch_change_text(change, a.dry_run), note ? "; " : "",
	           note ? note : "");
	if (kit == RT_PATCH_KIT_SIGNED && !a.dry_run)
		rt_cmd_say("%s: " RT_PATCH_SIGNATURE_FILE " beside it no longer matches it; --undo "
		           "gives back the signed bytes",
		           a.file);
	rt_cmd_patch_legacy_backup(a.file, &f, a.undo, a.dry_run, result, result_len);
	free(result);
	free(block);
	free(f.text);
	return RT_CMD_OK;
}
