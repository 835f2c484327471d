/* patch: adds to a launcher such as NVFlare's startup/sub_start.sh a marked block that preloads
 * the library and sets the options, or takes it out again (roundtrim(1), patch). Kept whole in
 * this file: the NVFlare template, signed kits and --dry-run/--diff replace it as one piece. */
#include "rt_cmd.h"
#include "rt_cmd_lib.h"
#include "rt_cmd_opt.h"
#include "rt_parse.h"
#include "rt_settings.h"
#include "rt_version.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <regex.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RT_PATCH_BEGIN                                                                             \
	"# >>> roundtrim " RT_VERSION " >>> added by `roundtrim patch`; undo: `roundtrim patch "   \
	"--undo FILE`"
/* A begin marker of any version is recognised. */
#define RT_PATCH_BEGIN_RE "^# >>> roundtrim [0-9][0-9.]* >>>"
#define RT_PATCH_END "# <<< roundtrim <<<"
#define RT_PATCH_BACKUP_SUFFIX ".roundtrim-orig"
#define RT_PATCH_MATCH_DEFAULT "python*"
#define RT_PATCH_SHEBANG_RE "^#! *(/usr)?/bin/(env +)?(ba)?sh([[:space:]]|$)"
#define RT_PATCH_NVFLARE_RE "^[^#]*\\bpython[0-9.]*[[:space:]].*-m[[:space:]]+nvflare\\."
#define RT_PATCH_LOADS_RE "^[^#]*libroundtrim\\.so"

/* A file in memory, and where its lines start: line i (from 0) is bytes [at[i], at[i + 1]). */
struct rt_patch_text {
	char *bytes;
	size_t len;
	size_t *at;
	size_t nlines;
};

struct rt_patch_setting {
	const char *name;
	char value[PATH_MAX + 64];
};

/* The temporary file in the launcher's directory, removed at exit unless renamed. */
static char rt_patch_tmp[PATH_MAX];

static void
rt_patch_help(void)
{
	fputs("Usage: " RT_CMD_NAME " patch [OPTION]... FILE\n"
	      "   or: " RT_CMD_NAME " patch --undo FILE\n"
	      "Add, after the first line of the launcher FILE (such as NVFlare's "
	      "startup/sub_start.sh), a\n"
	      "marked block that puts libroundtrim.so first in LD_PRELOAD and sets the options "
	      "below.\n"
	      "Patching again with the same options changes nothing; other options replace the "
	      "block.\n"
	      "The original is kept as FILE" RT_PATCH_BACKUP_SUFFIX
	      "; the file keeps its mode.\n\n",
	      stdout);
	int width = rt_cmd_opt_usage_width(true, (int)strlen("--arena-max N"));
	for (unsigned i = 0; i < RT_SETTING_COUNT; i++) {
		const struct rt_setting *s = &rt_settings[i];
		char usage[128];
		if (!s->option || !s->patch)
			continue;
		rt_cmd_opt_usage(s, usage, sizeof(usage));
		printf("  %-*s  %s%s%s", width, usage, s->name, s->flag_value ? "=" : "",
		       s->flag_value ? s->flag_value : "");
		if (i == RT_SETTING_MATCH)
			fputs(" (default '" RT_PATCH_MATCH_DEFAULT
			      "': not the launcher's sleep and cat)",
			      stdout);
		else if (s->kind == RT_KIND_PATH)
			fputs(" (absolute; %p is the pid)", stdout);
		putchar('\n');
	}
	printf("  %-*s  MALLOC_ARENA_MAX=N (sub_start.sh would set 4; NVFlare advises 2 on "
	       "clients)\n",
	       width, "--arena-max N");
	printf("  %-*s  patch a sh/bash script that does not start NVFlare\n", width, "--force");
	printf("  %-*s  restore the original from the backup (or remove the block)\n", width,
	       "--undo");
	printf("  %-*s  this text\n\n", width, "--help");
	fputs("Exit status: 0 patched, already patched, or restored; 1 FILE refused or not "
	      "writable; 2 usage\n"
	      "error.\n",
	      stdout);
}

static void
rt_patch_remove_tmp(void)
{
	if (rt_patch_tmp[0])
		unlink(rt_patch_tmp);
}

static bool
rt_patch_matches(const char *pattern, const char *text, size_t len)
{
	regex_t re;
	char *line = rt_cmd_alloc(len + 1);
	memcpy(line, text, len);
	line[len] = '\0';
	if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0)
		rt_cmd_die("cannot compile %s", pattern);
	bool ok = regexec(&re, line, 0, NULL, 0) == 0;
	regfree(&re);
	free(line);
	return ok;
}

/* Line i without its newline. */
static size_t
rt_patch_line_len(const struct rt_patch_text *t, size_t i)
{
	size_t len = t->at[i + 1] - t->at[i];
	return len && t->bytes[t->at[i] + len - 1] == '\n' ? len - 1 : len;
}

static bool
rt_patch_any_line(const struct rt_patch_text *t, const char *pattern)
{
	for (size_t i = 0; i < t->nlines; i++)
		if (rt_patch_matches(pattern, t->bytes + t->at[i], rt_patch_line_len(t, i)))
			return true;
	return false;
}

static void
rt_patch_index(struct rt_patch_text *t)
{
	t->nlines = 0;
	t->at = rt_cmd_realloc(NULL, sizeof(*t->at));
	t->at[0] = 0;
	for (size_t i = 0; i < t->len;) {
		char *nl = memchr(t->bytes + i, '\n', t->len - i);
		i = nl ? (size_t)(nl - t->bytes) + 1 : t->len;
		t->at = rt_cmd_realloc(t->at, (t->nlines + 2) * sizeof(*t->at));
		t->at[++t->nlines] = i;
	}
}

static void
rt_patch_read(const char *path, struct rt_patch_text *t)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		rt_cmd_die("%s: cannot read: %m", path);
	size_t cap = 4096;
	ssize_t n;
	t->bytes = rt_cmd_alloc(cap);
	t->len = 0;
	while ((n = read(fd, t->bytes + t->len, cap - t->len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			rt_cmd_die("%s: cannot read: %m", path);
		t->len += (size_t)n;
		if (t->len == cap)
			t->bytes = rt_cmd_realloc(t->bytes, cap *= 2);
	}
	close(fd);
	rt_patch_index(t);
}

static void
rt_patch_free(struct rt_patch_text *t)
{
	free(t->bytes);
	free(t->at);
}

/* The first roundtrim block's first and last lines; false without one. */
static bool
rt_patch_block_lines(const struct rt_patch_text *t, const char *file, size_t *begin, size_t *end)
{
	size_t i = 0;
	while (i < t->nlines &&
	       !rt_patch_matches(RT_PATCH_BEGIN_RE, t->bytes + t->at[i], rt_patch_line_len(t, i)))
		i++;
	if (i == t->nlines)
		return false;
	*begin = i;
	for (; i < t->nlines; i++) {
		size_t len = rt_patch_line_len(t, i);
		if (len == strlen(RT_PATCH_END) &&
		    !memcmp(t->bytes + t->at[i], RT_PATCH_END, len)) {
			*end = i;
			return true;
		}
	}
	rt_cmd_die("%s: roundtrim block at line %zu has no end marker; fix it by hand", file,
	           *begin + 1);
}

static void
rt_patch_write_all(int fd, const char *bytes, size_t len, const char *path)
{
	while (len > 0) {
		ssize_t n = write(fd, bytes, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			rt_cmd_die("%s: cannot write: %m", path);
		bytes += n;
		len -= (size_t)n;
	}
}

/* The temporary file beside real, open for writing. */
static int
rt_patch_open_tmp(const char *real)
{
	const char *slash = strrchr(real, '/');
	snprintf(rt_patch_tmp, sizeof(rt_patch_tmp), "%.*s/.%s.roundtrim.XXXXXX",
	         (int)(slash - real), real, slash + 1);
	int fd = mkostemp(rt_patch_tmp, O_CLOEXEC);
	if (fd < 0) {
		rt_patch_tmp[0] = '\0';
		rt_cmd_die("cannot make a temporary file beside %s: %m", real);
	}
	return fd;
}

/* The temporary file, with real's mode, takes real's place by rename. */
static void
rt_patch_replace(const char *real, int fd)
{
	struct stat st;
	if (stat(real, &st) != 0 || fchmod(fd, st.st_mode & 07777) != 0 || close(fd) != 0 ||
	    rename(rt_patch_tmp, real) != 0)
		rt_cmd_die("%s: cannot replace it: %m", real);
	rt_patch_tmp[0] = '\0';
}

/* The file's lines without the block [begin, end], written to fd. */
static void
rt_patch_write_without(const struct rt_patch_text *t, size_t begin, size_t end, int fd)
{
	rt_patch_write_all(fd, t->bytes, t->at[begin], rt_patch_tmp);
	rt_patch_write_all(fd, t->bytes + t->at[end + 1], t->len - t->at[end + 1], rt_patch_tmp);
}

static bool
rt_patch_same_file(const char *path, const char *bytes, size_t len)
{
	struct rt_patch_text other;
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return false;
	rt_patch_read(path, &other);
	bool same = other.len == len && !memcmp(other.bytes, bytes, len);
	rt_patch_free(&other);
	return same;
}

/* S as one word of a shell script, in single quotes when it needs them. */
static void
rt_patch_quote(char *out, size_t size, const char *s)
{
	static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	                            "0123456789_./:,+=@%-";
	size_t w = 0;
	if (s[0] && s[strspn(s, plain)] == '\0') {
		snprintf(out, size, "%s", s);
		return;
	}
	out[w++] = '\'';
	for (; *s && w + 6 < size; s++) {
		if (*s == '\'') {
			memcpy(out + w, "'\\''", 4);
			w += 4;
		} else {
			out[w++] = *s;
		}
	}
	out[w++] = '\'';
	out[w] = '\0';
}

/* The block for lib and the settings, one line each, without its last newline. */
static char *
rt_patch_block(const char *lib, const struct rt_patch_setting *settings, size_t n)
{
	size_t size = 512 + strlen(lib) + n * (2 * sizeof(settings[0].value) + 64);
	char *block = rt_cmd_alloc(size);
	size_t w = (size_t)snprintf(block, size,
	                            RT_PATCH_BEGIN "\nexport LD_PRELOAD=\"%s${LD_PRELOAD:+:$LD_"
	                                           "PRELOAD}\"\n",
	                            lib);
	for (size_t i = 0; i < n; i++) {
		char quoted[2 * sizeof(settings[0].value) + 8];
		rt_patch_quote(quoted, sizeof(quoted), settings[i].value);
		w += (size_t)snprintf(block + w, size - w, "export %s=%s\n", settings[i].name,
		                      quoted);
	}
	snprintf(block + w, size - w, RT_PATCH_END);
	return block;
}

/* The first line (with its newline), the block, then the other lines. */
static void
rt_patch_write_with(const char *bytes, size_t len, const char *block, int fd)
{
	const char *nl = memchr(bytes, '\n', len);
	size_t first = nl ? (size_t)(nl - bytes) + 1 : len;
	rt_patch_write_all(fd, bytes, first, rt_patch_tmp);
	if (first == len && (len == 0 || bytes[len - 1] != '\n'))
		rt_patch_write_all(fd, "\n", 1, rt_patch_tmp);
	rt_patch_write_all(fd, block, strlen(block), rt_patch_tmp);
	rt_patch_write_all(fd, "\n", 1, rt_patch_tmp);
	rt_patch_write_all(fd, bytes + first, len - first, rt_patch_tmp);
}

/* A copy of real with its mode, owner and times, as cp -p makes it. */
static void
rt_patch_backup(const char *real, const struct rt_patch_text *t, const char *backup)
{
	struct stat st;
	int fd = open(backup, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || stat(real, &st) != 0)
		rt_cmd_die("%s: cannot create: %m", backup);
	rt_patch_write_all(fd, t->bytes, t->len, backup);
	const struct timespec times[2] = {st.st_atim, st.st_mtim};
	if (fchown(fd, st.st_uid, st.st_gid) != 0) {
		/* Not the owner: the copy stays the caller's, as with cp -p. */
	}
	if (fchmod(fd, st.st_mode & 07777) != 0 || futimens(fd, times) != 0 || close(fd) != 0)
		rt_cmd_die("%s: cannot write: %m", backup);
}

static int
rt_patch_undo(const char *file, const char *real, const char *backup)
{
	struct rt_patch_text t;
	size_t begin, end;
	struct stat st;
	rt_patch_read(real, &t);
	if (!rt_patch_block_lines(&t, file, &begin, &end)) {
		if (lstat(backup, &st) == 0)
			rt_cmd_die("%s: not patched, but %s exists; compare and remove it by hand",
			           file, backup);
		rt_cmd_say("%s: not patched; nothing to undo", file);
		return RT_CMD_OK;
	}
	size_t len = t.at[begin] + (t.len - t.at[end + 1]);
	char *without = rt_cmd_alloc(len + 1);
	memcpy(without, t.bytes, t.at[begin]);
	memcpy(without + t.at[begin], t.bytes + t.at[end + 1], t.len - t.at[end + 1]);
	if (rt_patch_same_file(backup, without, len)) {
		/* The original's own bytes and mode. */
		if (rename(backup, real) != 0)
			rt_cmd_die("%s: cannot restore %s: %m", file, backup);
		rt_cmd_say("%s: restored from %s", file, backup);
	} else {
		int fd = rt_patch_open_tmp(real);
		rt_patch_write_without(&t, begin, end, fd);
		rt_patch_replace(real, fd);
		if (stat(backup, &st) == 0 && S_ISREG(st.st_mode))
			rt_cmd_say("%s: changed since it was patched: removed the roundtrim block, "
			           "kept your changes; the original is still in %s",
			           file, backup);
		else
			rt_cmd_say("%s: removed the roundtrim block (no backup found)", file);
	}
	free(without);
	rt_patch_free(&t);
	return RT_CMD_OK;
}

static int
rt_patch_apply(const char *file, const char *real, const char *backup, bool force,
               const struct rt_patch_setting *settings, size_t nsettings)
{
	char lib[PATH_MAX], why[PATH_MAX + 128];
	struct rt_patch_text t;
	size_t begin, end;
	struct stat st;
	if (!rt_cmd_lib_find(lib, sizeof(lib), why, sizeof(why)))
		rt_cmd_die("%s", why);
	rt_patch_read(real, &t);
	size_t first_len = t.nlines ? rt_patch_line_len(&t, 0) : 0;
	if (!rt_patch_matches(RT_PATCH_SHEBANG_RE, t.bytes, first_len)) {
		char first[61];
		size_t n = first_len < 60 ? first_len : 60;
		for (size_t i = 0; i < n; i++)
			first[i] = t.bytes[i] >= 0x20 && t.bytes[i] < 0x7f ? t.bytes[i] : '?';
		first[n] = '\0';
		rt_cmd_die("%s: not a sh or bash script (first line: %s)", file, first);
	}
	if (memchr(t.bytes, '\0', t.len))
		rt_cmd_die("%s: not a text file", file);
	if (!force && !rt_patch_any_line(&t, RT_PATCH_NVFLARE_RE))
		rt_cmd_die("%s: starts no NVFlare process (no 'python3 ... -m nvflare.' line); "
		           "--force patches any sh/bash launcher",
		           file);
	char *block = rt_patch_block(lib, settings, nsettings);
	if (rt_patch_block_lines(&t, file, &begin, &end)) {
		size_t current = t.at[end] + rt_patch_line_len(&t, end) - t.at[begin];
		if (current == strlen(block) && !memcmp(t.bytes + t.at[begin], block, current)) {
			rt_cmd_say("%s: already patched; nothing changed", file);
			return RT_CMD_OK;
		}
		/* A block with other settings: the same original, the new block. */
		size_t len = t.at[begin] + (t.len - t.at[end + 1]);
		char *without = rt_cmd_alloc(len + 1);
		memcpy(without, t.bytes, t.at[begin]);
		memcpy(without + t.at[begin], t.bytes + t.at[end + 1], t.len - t.at[end + 1]);
		int fd = rt_patch_open_tmp(real);
		rt_patch_write_with(without, len, block, fd);
		rt_patch_replace(real, fd);
		rt_cmd_say("%s: roundtrim block updated", file);
		free(without);
		free(block);
		rt_patch_free(&t);
		return RT_CMD_OK;
	}
	if (rt_patch_any_line(&t, RT_PATCH_LOADS_RE))
		rt_cmd_die(
		    "%s: already loads libroundtrim.so outside a roundtrim block; remove those "
		    "lines first",
		    file);
	bool have_backup = lstat(backup, &st) == 0;
	if (have_backup && !rt_patch_same_file(backup, t.bytes, t.len))
		rt_cmd_die("%s exists and differs from %s; move it away first", backup, file);
	int fd = rt_patch_open_tmp(real);
	if (!have_backup)
		rt_patch_backup(real, &t, backup);
	rt_patch_write_with(t.bytes, t.len, block, fd);
	rt_patch_replace(real, fd);
	rt_cmd_say("%s: patched (original in %s)", file, backup);
	free(block);
	rt_patch_free(&t);
	return RT_CMD_OK;
}

/* A value for MALLOC_ARENA_MAX: a positive number, as glibc takes it. */
static void
rt_patch_arena_max(const char *text, struct rt_patch_setting *setting)
{
	uint64_t n;
	if (rt_parse_u64(text, UINT32_MAX, &n) != RT_PARSE_OK || n == 0 || text[0] == '0')
		rt_cmd_usage_error("--arena-max takes a positive number");
	setting->name = "MALLOC_ARENA_MAX";
	snprintf(setting->value, sizeof(setting->value), "%s", text);
}

int
rt_cmd_patch(int argc, char **argv)
{
	bool undo = false, force = false;
	const char *file = NULL;
	/* ROUNDTRIM_MATCH first, then the others in the order given. */
	struct rt_patch_setting *settings = rt_cmd_alloc((size_t)(argc + 1) * sizeof(*settings));
	size_t nsettings = 1;
	settings[0].name = rt_settings[RT_SETTING_MATCH].name;
	snprintf(settings[0].value, sizeof(settings[0].value), RT_PATCH_MATCH_DEFAULT);
	for (int i = 1; i < argc; i++) {
		struct rt_cmd_opt opt;
		rt_cmd_opt_split(argv[i], &opt);
		const struct rt_setting *s = rt_setting_with_option(opt.name);
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			rt_patch_help();
			exit(RT_CMD_OK);
		} else if (!strcmp(argv[i], "--undo")) {
			undo = true;
		} else if (!strcmp(argv[i], "--force")) {
			force = true;
		} else if (!strcmp(argv[i], "--")) {
			if (argc - i != 2)
				rt_cmd_usage_error("patch takes one FILE");
			file = argv[++i];
		} else if (rt_cmd_opt_is(&opt, "--arena-max")) {
			rt_patch_arena_max(rt_cmd_opt_value(&opt, argc, argv, &i),
			                   &settings[nsettings++]);
		} else if (s && s->patch) {
			const char *arg = NULL;
			if (s->option_arg)
				arg = rt_cmd_opt_value(&opt, argc, argv, &i);
			else
				rt_cmd_opt_no_value(&opt);
			const struct rt_setting_platform platform = {SIGRTMIN, SIGRTMAX};
			struct rt_patch_setting *to = s == &rt_settings[RT_SETTING_MATCH]
			                                  ? &settings[0]
			                                  : &settings[nsettings++];
			/* The launcher runs elsewhere: paths must be absolute already. */
			enum rt_parse_result r = rt_setting_option_value(
			    s, arg, NULL, &platform, to->value, sizeof(to->value));
			if (r != RT_PARSE_OK)
				rt_cmd_usage_error("%s %s: %s", s->option,
				                   arg && arg[0] ? arg : "''",
				                   rt_parse_result_text(r));
			to->name = s->name;
		} else if (argv[i][0] == '-') {
			rt_cmd_usage_error("unknown option %s", argv[i]);
		} else {
			if (file)
				rt_cmd_usage_error("patch takes one FILE");
			file = argv[i];
		}
	}
	if (!file)
		rt_cmd_usage_error("missing FILE");
	if (undo && (nsettings > 1 || force))
		rt_cmd_usage_error("--undo takes no other option");

	struct stat st;
	char real[PATH_MAX], backup[PATH_MAX + sizeof(RT_PATCH_BACKUP_SUFFIX)];
	if (stat(file, &st) != 0)
		rt_cmd_die("%s: no such file", file);
	if (!realpath(file, real))
		rt_cmd_die("%s: %m", file);
	if (!S_ISREG(st.st_mode))
		rt_cmd_die("%s: not a regular file", file);
	if (access(real, R_OK | W_OK) != 0)
		rt_cmd_die("%s: not readable and writable by you", file);
	snprintf(backup, sizeof(backup), "%s" RT_PATCH_BACKUP_SUFFIX, real);
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%.*s", (int)(strrchr(real, '/') - real), real);
	if (access(dir[0] ? dir : "/", W_OK) != 0)
		rt_cmd_die("%s: not writable (the file is replaced by rename)", dir[0] ? dir : "/");
	atexit(rt_patch_remove_tmp);
	int status = undo ? rt_patch_undo(file, real, backup)
	                  : rt_patch_apply(file, real, backup, force, settings, nsettings);
	free(settings);
	return status;
}
