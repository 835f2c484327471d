/* `roundtrim patch`'s rules on NVFlare's own launchers and template (test/fixtures/nvflare,
 * rendered from NVFlare 2.4.2, 2.6.3 and 2.8.1): round trips to the exact bytes, the template's
 * indentation, idempotence, refusals and their reasons, signed kits, the arena cap by role, the
 * diff. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "rt_patch.h"

#define TEXT_MAX 65536
#define FIXTURES RT_SOURCE_DIR "/test/fixtures/"
#define LIB "/usr/local/lib/libroundtrim.so"

static size_t
slurp(const char *path, char *buf)
{
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f, "cannot read %s", path);
	size_t len = fread(buf, 1, TEXT_MAX - 1, f);
	cr_assert(feof(f), "%s is larger than the test's buffer", path);
	fclose(f);
	buf[len] = '\0';
	return len;
}

static const char *const launchers[] = {FIXTURES "nvflare/2.8.1/client/sub_start.sh",
                                        FIXTURES "nvflare/2.8.1/server/sub_start.sh",
                                        FIXTURES "nvflare/2.6.3/client/sub_start.sh",
                                        FIXTURES "nvflare/2.6.3/server/sub_start.sh",
                                        FIXTURES "nvflare/2.4.2/client/sub_start.sh",
                                        FIXTURES "nvflare/2.4.2/server/sub_start.sh",
                                        FIXTURES "sub_start.sh"};
static const char *const templates[] = {FIXTURES "nvflare/2.8.1/master_template.sub_start.yml",
                                        FIXTURES "nvflare/2.6.3/master_template.sub_start.yml",
                                        FIXTURES "nvflare/2.4.2/master_template.sub_start.yml"};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The block for the options given as id/value pairs (RT_SETTING_COUNT ends them). */
static size_t
block_for(char *out, size_t size, unsigned arena_max, const unsigned *ids, const char *const *texts)
{
	const char *values[RT_SETTING_COUNT] = {0};
	for (size_t i = 0; ids && ids[i] != RT_SETTING_COUNT; i++)
		values[ids[i]] = texts[i];
	struct rt_patch_setting settings[RT_PATCH_SETTINGS_MAX];
	char arena[24];
	size_t n = rt_patch_settings(values, arena_max, arena, settings);
	for (size_t i = 0; i < n; i++)
		cr_assert_null(rt_patch_setting_refusal(&settings[i]), "%s", settings[i].name);
	size_t len = rt_patch_block("0.1.0", LIB, settings, n, out, size);
	cr_assert_lt(len, size);
	return len;
}

static const unsigned gc2_ids[] = {RT_SETTING_GC_ROUNDS, RT_SETTING_COUNT};
static const char *const gc2_texts[] = {"2"};
static const unsigned client_ids[] = {RT_SETTING_ROLE, RT_SETTING_STATS, RT_SETTING_COUNT};
static const char *const client_texts[] = {"client", "/var/tmp/nvflare-%p.jsonl"};

static void
identify_ok(const char *text, size_t len, struct rt_patch_file *f, const char *name)
{
	char why[RT_PATCH_WHY_MAX];
	rt_patch_identify(text, len, f);
	cr_assert_null(rt_patch_refusal(f, false, RT_ROLE_NONE, why, sizeof(why)), "%s: %s", name,
	               why);
}

/* Patches text with block: what changed, the result in out. */
static enum rt_patch_change
patch(const char *text, size_t len, const char *block, char *out, size_t *out_len)
{
	struct rt_patch_file f;
	identify_ok(text, len, &f, "patch");
	enum rt_patch_change c = rt_patch_apply(text, len, &f, block, out, TEXT_MAX, out_len);
	cr_assert_lt(*out_len, TEXT_MAX);
	return c;
}

static enum rt_patch_change
undo(const char *text, size_t len, char *out, size_t *out_len)
{
	struct rt_patch_file f;
	char why[RT_PATCH_WHY_MAX];
	rt_patch_identify(text, len, &f);
	cr_assert_null(rt_patch_undo_refusal(&f, why, sizeof(why)), "%s", why);
	return rt_patch_remove(text, len, &f, out, TEXT_MAX, out_len);
}

/* What NVFlare makes of a sub_start scalar: the value yaml.safe_load reads (the lines less the
 * indentation, "|" keeping one final newline), then sh_replace's plain replacements. */
static size_t
render(const char *t, const struct rt_patch_region *r, const char *const *pairs, char *out)
{
	size_t n = 0, first = r->insert - 1;
	while (first > 0 && t[first - 1] != '\n')
		first--;
	static char value[TEXT_MAX];
	size_t vlen = 0;
	for (size_t at = first; at < r->end;) {
		const char *e = memchr(t + at, '\n', r->end - at);
		size_t line_len = (size_t)(e - (t + at));
		size_t skip = line_len < r->indent ? line_len : r->indent;
		memcpy(value + vlen, t + at + skip, line_len - skip);
		vlen += line_len - skip;
		value[vlen++] = '\n';
		at += line_len + 1;
	}
	while (vlen > 1 && value[vlen - 2] == '\n')
		vlen--; /* clip: trailing empty lines go, one newline stays */
	value[vlen] = '\0';
	for (const char *v = value; *v;) {
		size_t i;
		for (i = 0; pairs[i]; i += 2) {
			char key[64];
			snprintf(key, sizeof(key), "{~~%s~~}", pairs[i]);
			if (strncmp(v, key, strlen(key)) == 0) {
				memcpy(out + n, pairs[i + 1], strlen(pairs[i + 1]));
				n += strlen(pairs[i + 1]);
				v += strlen(key);
				break;
			}
		}
		if (!pairs[i])
			out[n++] = *v++;
	}
	out[n] = '\0';
	return n;
}

/* StaticFileBuilder's values for site-1 (test/fixtures/nvflare/render.py). */
static const char *const client_values[] = {
    "type",   "client",      "app_name", "client_train",  "cln_uid", "uid=site-1", "org_name",
    "nvidia", "client_name", "site-1",   "config_folder", "config",  NULL};
static const char *const server_values[] = {"type",          "server", "app_name", "server_train",
                                            "cln_uid",       "",       "org_name", "nvidia",
                                            "config_folder", "config", NULL};

/* ---- What a file is. */

Test(patch_identify, nvflare_launchers_and_their_site)
{
	static char text[TEXT_MAX];
	const enum rt_patch_site sites[] = {
	    RT_PATCH_SITE_CLIENT, RT_PATCH_SITE_SERVER, RT_PATCH_SITE_CLIENT, RT_PATCH_SITE_SERVER,
	    RT_PATCH_SITE_CLIENT, RT_PATCH_SITE_SERVER, RT_PATCH_SITE_CLIENT};
	for (size_t i = 0; i < COUNT(launchers); i++) {
		struct rt_patch_file f;
		size_t len = slurp(launchers[i], text);
		identify_ok(text, len, &f, launchers[i]);
		cr_assert_eq(f.kind, RT_PATCH_LAUNCHER, "%s", launchers[i]);
		cr_assert(f.nvflare && !f.container && !f.blocks && !f.preload_line, "%s",
		          launchers[i]);
		cr_assert_eq(f.site, sites[i], "%s", launchers[i]);
		cr_assert_eq(f.nregions, 1);
		cr_assert_eq(f.regions[0].insert, strlen("#!/usr/bin/env bash\n"));
		cr_assert_eq(f.regions[0].end, len);
		cr_assert_eq(f.regions[0].indent, 0);
	}
}

Test(patch_identify, nvflare_templates_and_their_keys)
{
	static char text[TEXT_MAX];
	for (size_t i = 0; i < COUNT(templates); i++) {
		struct rt_patch_file f;
		size_t len = slurp(templates[i], text);
		identify_ok(text, len, &f, templates[i]);
		cr_assert_eq(f.kind, RT_PATCH_TEMPLATE, "%s: %s", templates[i], f.why);
		cr_assert_eq(f.site, RT_PATCH_SITE_EVERY);
		cr_assert(f.nvflare);
		bool split = strstr(templates[i], "2.4.2") != NULL;
		cr_assert_eq(f.nregions, split ? 2u : 1u, "%s", templates[i]);
		for (unsigned r = 0; r < f.nregions; r++) {
			const struct rt_patch_region *g = &f.regions[r];
			cr_assert_str_eq(g->key, split
			                             ? (r ? "sub_start_svr_sh" : "sub_start_cln_sh")
			                             : "sub_start_sh");
			cr_assert_eq(g->indent, 2);
			/* The block goes after "  #!/usr/bin/env bash\n", right after "KEY: |\n".
			 */
			char head[64];
			snprintf(head, sizeof(head), "\n%s: |\n  #!/usr/bin/env bash\n", g->key);
			const char *at = strstr(text, head);
			cr_assert_not_null(at);
			cr_assert_eq(g->insert, (size_t)(at - text) + strlen(head));
			/* It ends where the next top-level key starts. */
			cr_assert(g->end < len && text[g->end] != ' ' && text[g->end - 1] == '\n');
		}
	}
}

Test(patch_identify, refusals_and_their_reasons)
{
	static const struct {
		const char *text;
		const char *why;
	} cases[] = {
	    {"", "is empty"},
	    {"python3 -m nvflare.private.fed.app.client.client_train\n",
	     "not a sh or bash script (first line: python3 -m nvflare.private.fed.app.client."
	     "client_train), nor NVFlare's master_template.yml (no top-level sub_start_sh key)"},
	    {"#!/usr/bin/env python3\nimport nvflare\n",
	     "not a sh or bash script (first line: #!/usr/bin/env python3)"},
	    {"#!/bin/zsh\npython3 -m nvflare.x\n",
	     "not a sh or bash script (first line: #!/bin/zsh)"},
	    {"#!/bin/bash\r\npython3 -m nvflare.x\r\n", "has CR LF line ends"},
	    {"#!/bin/bash", "has nothing after its #! line"},
	    {"#!/bin/sh\n# >>> roundtrim 0.1.0 >>> x\nexport A=1\n",
	     "roundtrim block at line 2 has no end marker; fix it by hand"},
	    {"#!/bin/sh\n# >>> roundtrim 0.1.0 >>> x\n# >>> roundtrim 0.1.0 >>> x\n"
	     "# <<< roundtrim <<<\n",
	     "roundtrim block at line 2 has no end marker"},
	    {"#!/bin/sh\nexport A=1\n# <<< roundtrim <<<\n",
	     "roundtrim end marker at line 3 has no begin marker; fix it by hand"},
	    {"key: 1\nsub_start_sh: >\n  #!/bin/bash\n",
	     "sub_start_sh (line 2) is not a literal block scalar (|)"},
	    {"sub_start_sh: \"#!/bin/bash\"\n",
	     "sub_start_sh (line 1) is not a literal block scalar"},
	    {"sub_start_sh: |\n  echo hi\n",
	     "sub_start_sh (line 1) does not start with a sh or bash"},
	    {"sub_start_sh: |\n#!/bin/bash\n",
	     "sub_start_sh (line 1) does not start with a sh or bash #! line"},
	    {"sub_start_sh: |\n", "sub_start_sh (line 1) does not start with a sh or bash #! line"},
	    {"sub_start_sh: |\n  #!/bin/bash", "sub_start_sh (line 1): its #! line ends the file"},
	    {"sub_start_sh: |\n  #!/bin/bash\nsub_start_sh: |\n  #!/bin/bash\n",
	     "sub_start_sh appears twice (lines 1 and 3)"},
	    {"other: |\n  #!/bin/bash\n",
	     "not a sh or bash script (first line: other: |), nor NVFlare's master_template.yml"},
	};
	for (size_t i = 0; i < COUNT(cases); i++) {
		struct rt_patch_file f;
		char why[RT_PATCH_WHY_MAX];
		rt_patch_identify(cases[i].text, strlen(cases[i].text), &f);
		cr_assert_eq(f.kind, RT_PATCH_REFUSED, "case %zu", i);
		cr_assert_eq(strncmp(f.why, cases[i].why, strlen(cases[i].why)), 0,
		             "case %zu: '%s'", i, f.why);
		cr_assert_not_null(rt_patch_refusal(&f, true, RT_ROLE_NONE, why, sizeof(why)));
		cr_assert_str_eq(why, f.why);
		cr_assert_not_null(rt_patch_undo_refusal(&f, why, sizeof(why)));
	}
	struct rt_patch_file f;
	rt_patch_identify("#!/bin/sh\n\0python3 -m nvflare.x\n", 31, &f);
	cr_assert_str_eq(f.why, "not a text file");
}

Test(patch_identify, the_first_line_is_shown_printable_and_short)
{
	struct rt_patch_file f;
	/* 59 ASCII bytes, then a 2-byte UTF-8 character across the 60-byte cut. */
	char text[128] = "#!/usr/bin/perl -w ";
	while (strlen(text) < 59)
		strcat(text, "x");
	strcat(text, "\xc3\xa9\x01 tail\nbody\n");
	rt_patch_identify(text, strlen(text), &f);
	cr_assert_eq(f.kind, RT_PATCH_REFUSED);
	cr_assert_null(strchr(f.why, '\xc3'), "%s", f.why);
	cr_assert_eq(strlen(f.why), strlen("not a sh or bash script (first line: )") + 59);
	rt_patch_identify("\x01\x02 x\nsome: 1\n", 10, &f);
	cr_assert_str_eq(f.why, "not a sh or bash script (first line: ?? x), nor NVFlare's "
	                        "master_template.yml (no top-level sub_start_sh key)");
}

Test(patch_identify, shebangs_that_are_sh_or_bash)
{
	const char *ok[] = {"#!/bin/sh",       "#!/bin/bash",         "#!/usr/bin/bash -e",
	                    "#! /bin/bash",    "#!/usr/bin/env bash", "#!/usr/bin/env  sh",
	                    "#!/bin/env bash", "#!/bin/bash\t-x"};
	const char *no[] = {"#!/bin/dash", "#!/usr/bin/env python3", "#!/bin/bashful", "#!bash",
	                    "#!/usr/local/bin/bash"};
	for (size_t i = 0; i < COUNT(ok); i++) {
		char text[128];
		struct rt_patch_file f;
		snprintf(text, sizeof(text), "%s\npython3 -u -m nvflare.x\n", ok[i]);
		rt_patch_identify(text, strlen(text), &f);
		cr_assert_eq(f.kind, RT_PATCH_LAUNCHER, "%s: %s", ok[i], f.why);
	}
	for (size_t i = 0; i < COUNT(no); i++) {
		char text[128];
		struct rt_patch_file f;
		snprintf(text, sizeof(text), "%s\npython3 -u -m nvflare.x\n", no[i]);
		rt_patch_identify(text, strlen(text), &f);
		cr_assert_eq(f.kind, RT_PATCH_REFUSED, "%s", no[i]);
	}
}

Test(patch_identify, what_starts_nvflare)
{
	const struct {
		const char *line;
		bool nvflare;
	} cases[] = {
	    {"python3 -u -m nvflare.private.fed.app.client.client_train -m ws", true},
	    {"  ((python3 -u -m nvflare.private.fed.app.server.server_train 2>&1 & ) )", true},
	    {"exec /opt/venv/bin/python3.11 -m  nvflare.private.fed.app.relay.relay", true},
	    {"python -m nvflare.tool.verify_startup_kits -f x", true},
	    {"# python3 -m nvflare.private.fed.app.client.client_train", false},
	    {"echo hi # python3 -m nvflare.x", false},
	    {"mypython3 -m nvflare.x", false},
	    {"python3 -m nvflarex", false},
	    {"python3 -mnvflare.x", false},
	    {"python3 train.py", false},
	};
	for (size_t i = 0; i < COUNT(cases); i++) {
		char text[256];
		struct rt_patch_file f;
		snprintf(text, sizeof(text), "#!/bin/bash\n%s\n", cases[i].line);
		rt_patch_identify(text, strlen(text), &f);
		cr_assert_eq(f.kind, RT_PATCH_LAUNCHER);
		cr_assert_eq(f.nvflare, cases[i].nvflare, "%s", cases[i].line);
	}
}

Test(patch_identify, files_that_need_force_and_those_that_never_do)
{
	static char text[TEXT_MAX];
	char why[RT_PATCH_WHY_MAX];
	struct rt_patch_file f;
	const char *other = "#!/bin/bash\nexec ./server\n";
	rt_patch_identify(other, strlen(other), &f);
	cr_assert_str_eq(rt_patch_refusal(&f, false, RT_ROLE_NONE, why, sizeof(why)),
	                 "starts no NVFlare process (no 'python3 ... -m nvflare.' line); --force "
	                 "patches any sh/bash launcher");
	cr_assert_null(rt_patch_refusal(&f, true, RT_ROLE_NONE, why, sizeof(why)));

	/* NVFlare's start.sh hands over to sub_start.sh. */
	size_t len = slurp(FIXTURES "nvflare/2.8.1/master_template.sub_start.yml", text);
	const char *start = "#!/usr/bin/env bash\nDIR=x\n    $DIR/sub_start.sh &\n";
	rt_patch_identify(start, strlen(start), &f);
	cr_assert_str_eq(rt_patch_refusal(&f, false, RT_ROLE_NONE, why, sizeof(why)),
	                 "starts no NVFlare process itself (no 'python3 ... -m nvflare.' line): "
	                 "patch the sub_start.sh it runs; --force patches this one anyway");

	/* NVFlare's docker.sh (docker_cln_sh) starts NVFlare in a container. */
	const char *docker = strstr(text, "\ndocker_cln_sh: |\n");
	cr_assert_not_null(docker);
	docker += strlen("\ndocker_cln_sh: |\n");
	const struct rt_patch_region region = {.insert = (size_t)(docker - text) +
	                                                 strlen("  #!/usr/bin/env bash\n"),
	                                       .end = len,
	                                       .indent = 2};
	static char script[TEXT_MAX];
	size_t n = render(text, &region, client_values, script);
	rt_patch_identify(script, n, &f);
	cr_assert(f.kind == RT_PATCH_LAUNCHER && f.nvflare && f.container);
	cr_assert_eq(strncmp(rt_patch_refusal(&f, false, RT_ROLE_NONE, why, sizeof(why)),
	                     "runs NVFlare in a container (docker run)", 40),
	             0, "%s", why);
	cr_assert_null(rt_patch_refusal(&f, true, RT_ROLE_NONE, why, sizeof(why)));

	/* Loading the library outside a block: --force does not help. */
	const char *hand = "#!/bin/bash\nexport LD_PRELOAD=/opt/libroundtrim.so\n"
	                   "python3 -u -m nvflare.private.fed.app.client.client_train\n";
	rt_patch_identify(hand, strlen(hand), &f);
	cr_assert_str_eq(rt_patch_refusal(&f, true, RT_ROLE_NONE, why, sizeof(why)),
	                 "already loads libroundtrim.so outside a roundtrim block (line 2); remove "
	                 "those lines first");
	/* Undo still takes what it can. */
	cr_assert_null(rt_patch_undo_refusal(&f, why, sizeof(why)));
}

Test(patch_identify, the_role_must_fit_the_site)
{
	static char text[TEXT_MAX];
	char why[RT_PATCH_WHY_MAX];
	struct rt_patch_file f;
	size_t len = slurp(FIXTURES "nvflare/2.8.1/client/sub_start.sh", text);
	rt_patch_identify(text, len, &f);
	cr_assert_null(rt_patch_refusal(&f, false, RT_ROLE_CLIENT, why, sizeof(why)));
	cr_assert_str_eq(rt_patch_refusal(&f, true, RT_ROLE_SERVER, why, sizeof(why)),
	                 "starts an NVFlare client: --role client, not server");
	len = slurp(FIXTURES "nvflare/2.8.1/server/sub_start.sh", text);
	rt_patch_identify(text, len, &f);
	cr_assert_null(rt_patch_refusal(&f, false, RT_ROLE_SERVER, why, sizeof(why)));
	cr_assert_str_eq(rt_patch_refusal(&f, false, RT_ROLE_CLIENT, why, sizeof(why)),
	                 "starts an NVFlare server: --role server, not client");

	const char *relay =
	    "#!/bin/bash\npython3 -u -m nvflare.private.fed.app.relay.relay -m ws\n";
	rt_patch_identify(relay, strlen(relay), &f);
	cr_assert_eq(f.site, RT_PATCH_SITE_RELAY);
	cr_assert_null(rt_patch_refusal(&f, false, RT_ROLE_NONE, why, sizeof(why)));
	cr_assert_str_eq(rt_patch_refusal(&f, false, RT_ROLE_CLIENT, why, sizeof(why)),
	                 "starts an NVFlare relay, which has no role: leave --role out");

	for (size_t i = 0; i < COUNT(templates); i++) {
		len = slurp(templates[i], text);
		rt_patch_identify(text, len, &f);
		cr_assert_null(rt_patch_refusal(&f, false, RT_ROLE_NONE, why, sizeof(why)));
		cr_assert_str_eq(
		    rt_patch_refusal(&f, false, RT_ROLE_CLIENT, why, sizeof(why)),
		    "NVFlare renders it for servers, clients and relays alike: leave "
		    "--role out (--arena-max applies to them all), or patch each kit's "
		    "sub_start.sh with its role");
	}
	/* A launcher whose site is not known takes any role. */
	const char *custom = "#!/bin/bash\npython3 -m nvflare.private.fed.app.simulator.x\n";
	rt_patch_identify(custom, strlen(custom), &f);
	cr_assert_eq(f.site, RT_PATCH_SITE_NONE);
	cr_assert_null(rt_patch_refusal(&f, false, RT_ROLE_SERVER, why, sizeof(why)));
}

/* ---- The block. */

Test(patch_block, text_is_the_shell_versions)
{
	char block[1024];
	block_for(block, sizeof(block), 0, gc2_ids, gc2_texts);
	/* Byte for byte what scripts/roundtrim writes for `patch --gc-rounds 2`. */
	cr_assert_str_eq(block, "# >>> roundtrim 0.1.0 >>> added by `roundtrim patch`; undo: "
	                        "`roundtrim patch --undo FILE`\n"
	                        "export LD_PRELOAD=\"" LIB "${LD_PRELOAD:+:$LD_PRELOAD}\"\n"
	                        "export ROUNDTRIM_MATCH='python*'\n"
	                        "export ROUNDTRIM_GC_ROUNDS=2\n"
	                        "# <<< roundtrim <<<\n");
}

Test(patch_block, values_are_quoted_for_the_shell)
{
	const struct {
		const char *value;
		const char *written;
	} cases[] = {
	    {"/var/tmp/nvflare-%p.jsonl", "/var/tmp/nvflare-%p.jsonl"},
	    {"a,b:c+d=e@f_g-h.i", "a,b:c+d=e@f_g-h.i"},
	    {"python*,bash", "'python*,bash'"},
	    {"/tmp/my dir/x", "'/tmp/my dir/x'"},
	    {"it's", "'it'\\''s'"},
	    {"$HOME", "'$HOME'"},
	    {"`id`", "'`id`'"},
	    {"", "''"},
	    {"caf\xc3\xa9", "'caf\xc3\xa9'"},
	};
	for (size_t i = 0; i < COUNT(cases); i++) {
		struct rt_patch_setting s = {"ROUNDTRIM_LOG", cases[i].value, false};
		char block[512], line[256];
		cr_assert_null(rt_patch_setting_refusal(&s));
		rt_patch_block("0.1.0", LIB, &s, 1, block, sizeof(block));
		snprintf(line, sizeof(line), "\nexport ROUNDTRIM_LOG=%s\n", cases[i].written);
		cr_assert_not_null(strstr(block, line), "%s", block);
	}
}

Test(patch_block, what_cannot_be_written)
{
	const struct rt_patch_setting bad[] = {
	    {"ROUNDTRIM_LOG", "/tmp/a\nexport X=1", false},
	    {"ROUNDTRIM_LOG", "a\tb", false},
	    {"1X", "1", false},
	    {"A-B", "1", false},
	    {"", "1", false},
	    {"MALLOC_ARENA_MAX", "2 3", true},
	    {"MALLOC_ARENA_MAX", "$(id)", true},
	    {"MALLOC_ARENA_MAX", "", true},
	};
	for (size_t i = 0; i < COUNT(bad); i++)
		cr_assert_not_null(rt_patch_setting_refusal(&bad[i]), "case %zu", i);
}

Test(patch_block, settings_in_one_order_whatever_the_options_order)
{
	const char *values[RT_SETTING_COUNT] = {0};
	values[RT_SETTING_STATS] = "/var/tmp/s-%p.jsonl";
	values[RT_SETTING_GC_ROUNDS] = "3";
	values[RT_SETTING_ROLE] = "server";
	values[RT_SETTING_PROFILE] = "1";
	values[RT_SETTING_DISABLE] = "on"; /* not a patch setting: left out */
	struct rt_patch_setting s[RT_PATCH_SETTINGS_MAX];
	char arena[24];
	size_t n = rt_patch_settings(values, 0, arena, s);
	const char *names[] = {"ROUNDTRIM_MATCH",   "ROUNDTRIM_ROLE",  "ROUNDTRIM_GC_ROUNDS",
	                       "ROUNDTRIM_PROFILE", "ROUNDTRIM_STATS", "MALLOC_ARENA_MAX"};
	cr_assert_eq(n, COUNT(names));
	for (size_t i = 0; i < n; i++)
		cr_assert_str_eq(s[i].name, names[i]);
	cr_assert_str_eq(s[0].value, "python*");
	values[RT_SETTING_MATCH] = "python3*";
	n = rt_patch_settings(values, 0, arena, s);
	cr_assert_str_eq(s[0].value, "python3*");
}

/* ---- The arena cap by role. */

Test(patch_arena, the_role_sets_its_cap_as_a_default_that_survives_the_scripts_4)
{
	const struct {
		const char *role;
		unsigned arena_max;
		const char *line; /* NULL: no MALLOC_ARENA_MAX line */
	} cases[] = {
	    {"client", 0, "export MALLOC_ARENA_MAX=\"${MALLOC_ARENA_MAX:-2}\"\n"},
	    {"server", 0, "export MALLOC_ARENA_MAX=\"${MALLOC_ARENA_MAX:-4}\"\n"},
	    {"client", 3, "export MALLOC_ARENA_MAX=3\n"},
	    {"server", 2, "export MALLOC_ARENA_MAX=2\n"},
	    {NULL, 2, "export MALLOC_ARENA_MAX=2\n"},
	    {NULL, 0, NULL},
	};
	for (size_t i = 0; i < COUNT(cases); i++) {
		const unsigned ids[] = {RT_SETTING_ROLE, RT_SETTING_COUNT};
		const char *texts[] = {cases[i].role};
		char block[1024];
		block_for(block, sizeof(block), cases[i].arena_max, cases[i].role ? ids : NULL,
		          texts);
		const char *at = strstr(block, "MALLOC_ARENA_MAX");
		if (!cases[i].line) {
			cr_assert_null(at, "%s", block);
			continue;
		}
		/* Last, right before the end marker: after every ROUNDTRIM_ setting. */
		char tail[128];
		snprintf(tail, sizeof(tail), "\n%s# <<< roundtrim <<<\n", cases[i].line);
		cr_assert_not_null(strstr(block, tail), "%s", block);
	}
}

Test(patch_arena, arena_max_values)
{
	unsigned v;
	cr_assert_eq(rt_patch_parse_arena_max("2", &v), RT_PARSE_OK);
	cr_assert_eq(v, 2);
	cr_assert_eq(rt_patch_parse_arena_max("2147483647", &v), RT_PARSE_OK);
	cr_assert_neq(rt_patch_parse_arena_max("0", &v), RT_PARSE_OK);
	cr_assert_neq(rt_patch_parse_arena_max("2147483648", &v), RT_PARSE_OK);
	cr_assert_neq(rt_patch_parse_arena_max("-1", &v), RT_PARSE_OK);
	cr_assert_neq(rt_patch_parse_arena_max(" 2", &v), RT_PARSE_OK);
	cr_assert_neq(rt_patch_parse_arena_max("", &v), RT_PARSE_OK);
}

/* ---- Launchers: round trips. */

Test(patch_launcher, round_trip_to_the_exact_bytes)
{
	static char original[TEXT_MAX], once[TEXT_MAX], twice[TEXT_MAX], other[TEXT_MAX],
	    undone[TEXT_MAX];
	char block[1024], block2[1024];
	block_for(block, sizeof(block), 0, client_ids, client_texts);
	block_for(block2, sizeof(block2), 2, gc2_ids, gc2_texts);
	for (size_t i = 0; i < COUNT(launchers); i++) {
		size_t len = slurp(launchers[i], original), once_len, twice_len, other_len,
		       undone_len;
		cr_assert_eq(patch(original, len, block, once, &once_len), RT_PATCH_ADDED);
		/* The shebang, the block, then the original, untouched. */
		cr_assert_eq(once_len, len + strlen(block));
		size_t first = strlen("#!/usr/bin/env bash\n");
		cr_assert_eq(memcmp(once, original, first), 0);
		cr_assert_eq(memcmp(once + first, block, strlen(block)), 0);
		cr_assert_eq(memcmp(once + first + strlen(block), original + first, len - first),
		             0);

		cr_assert_eq(patch(once, once_len, block, twice, &twice_len), RT_PATCH_SAME);
		cr_assert_eq(twice_len, once_len);
		cr_assert_eq(memcmp(twice, once, once_len), 0);

		/* Other settings: the block replaced in place, once. */
		cr_assert_eq(patch(once, once_len, block2, other, &other_len), RT_PATCH_REPLACED);
		cr_assert_eq(other_len, len + strlen(block2));
		cr_assert_eq(memcmp(other + first, block2, strlen(block2)), 0);

		cr_assert_eq(undo(other, other_len, undone, &undone_len), RT_PATCH_REMOVED);
		cr_assert_eq(undone_len, len, "%s", launchers[i]);
		cr_assert_eq(memcmp(undone, original, len), 0, "%s", launchers[i]);
		cr_assert_eq(undo(undone, undone_len, other, &other_len), RT_PATCH_ABSENT);
		cr_assert_eq(other_len, len);
		cr_assert_eq(memcmp(other, original, len), 0);
	}
}

Test(patch_launcher, a_moved_block_stays_where_it_is_and_extra_blocks_go)
{
	static char out[TEXT_MAX], undone[TEXT_MAX];
	char block[1024], block2[1024];
	block_for(block, sizeof(block), 0, gc2_ids, gc2_texts);
	block_for(block2, sizeof(block2), 0, client_ids, client_texts);
	char text[4096];
	/* A block the user moved below PYTHONPATH, and a second copy further down. */
	snprintf(text, sizeof(text),
	         "#!/bin/bash\nexport PYTHONPATH=/x\n%spython3 -u -m nvflare.private.fed.app."
	         "client.client_train\n%secho done\n",
	         block, block);
	size_t len = strlen(text), out_len, undone_len;
	struct rt_patch_file f;
	identify_ok(text, len, &f, "moved");
	cr_assert_eq(f.blocks, 2);
	/* Two copies are not "the same": one is left, where the first stood. */
	cr_assert_eq(patch(text, len, block, out, &out_len), RT_PATCH_REPLACED);
	char expect[4096];
	snprintf(expect, sizeof(expect),
	         "#!/bin/bash\nexport PYTHONPATH=/x\n%spython3 -u -m nvflare.private.fed.app."
	         "client.client_train\necho done\n",
	         block);
	cr_assert_str_eq(out, expect);
	cr_assert_eq(patch(out, out_len, block, undone, &undone_len), RT_PATCH_SAME);
	cr_assert_eq(patch(out, out_len, block2, undone, &undone_len), RT_PATCH_REPLACED);
	cr_assert_eq(strstr(undone, block2) - undone,
	             (long)strlen("#!/bin/bash\nexport PYTHONPATH=/x\n"));
	cr_assert_eq(undo(text, len, undone, &undone_len), RT_PATCH_REMOVED);
	cr_assert_str_eq(undone, "#!/bin/bash\nexport PYTHONPATH=/x\npython3 -u -m nvflare.private."
	                         "fed.app.client.client_train\necho done\n");
}

Test(patch_launcher, what_the_shell_version_wrote_is_understood)
{
	static char out[TEXT_MAX];
	/* scripts/roundtrim's block for `patch --gc-rounds 3 --arena-max 2`, version 0.0.9. */
	const char *text =
	    "#!/usr/bin/env bash\n"
	    "# >>> roundtrim 0.0.9 >>> added by `roundtrim patch`; undo: `roundtrim "
	    "patch --undo FILE`\n"
	    "export LD_PRELOAD=\"/opt/lib/libroundtrim.so${LD_PRELOAD:+:$LD_PRELOAD}\"\n"
	    "export ROUNDTRIM_MATCH='python*'\n"
	    "export ROUNDTRIM_GC_ROUNDS=3\n"
	    "export MALLOC_ARENA_MAX=2\n"
	    "# <<< roundtrim <<<\n"
	    "python3 -u -m nvflare.private.fed.app.client.client_train\n";
	size_t out_len;
	cr_assert_eq(undo(text, strlen(text), out, &out_len), RT_PATCH_REMOVED);
	cr_assert_str_eq(out, "#!/usr/bin/env bash\n"
	                      "python3 -u -m nvflare.private.fed.app.client.client_train\n");
}

Test(patch_launcher, results_that_do_not_fit_say_what_they_need)
{
	static char text[TEXT_MAX];
	char block[1024], small[100];
	block_for(block, sizeof(block), 0, gc2_ids, gc2_texts);
	size_t len = slurp(launchers[0], text), out_len;
	struct rt_patch_file f;
	identify_ok(text, len, &f, launchers[0]);
	cr_assert_eq(rt_patch_apply(text, len, &f, block, small, sizeof(small), &out_len),
	             RT_PATCH_ADDED);
	cr_assert_eq(out_len, len + strlen(block));
	cr_assert_eq(small[sizeof(small) - 1], '\0');
	cr_assert_eq(memcmp(small, text, strlen("#!/usr/bin/env bash\n")), 0);
	char tiny[8];
	cr_assert_eq(rt_patch_block("0.1.0", LIB, NULL, 0, tiny, sizeof(tiny)),
	             strlen(block) - strlen("export ROUNDTRIM_MATCH='python*'\n"
	                                    "export ROUNDTRIM_GC_ROUNDS=2\n"));
	cr_assert_str_eq(tiny, "# >>> r");
}

/* ---- NVFlare's template. */

Test(patch_template, inside_the_scalar_at_its_indentation_nothing_else_touched)
{
	static char original[TEXT_MAX], once[TEXT_MAX], twice[TEXT_MAX], undone[TEXT_MAX];
	char block[1024], indented[2048];
	block_for(block, sizeof(block), 2, gc2_ids, gc2_texts);
	/* Every line of the block, two spaces in. */
	size_t k = 0;
	for (const char *l = block; *l;) {
		const char *e = strchr(l, '\n');
		k += (size_t)snprintf(indented + k, sizeof(indented) - k, "  %.*s\n", (int)(e - l),
		                      l);
		l = e + 1;
	}
	for (size_t i = 0; i < COUNT(templates); i++) {
		size_t len = slurp(templates[i], original), once_len, twice_len, undone_len;
		struct rt_patch_file f;
		identify_ok(original, len, &f, templates[i]);
		cr_assert_eq(patch(original, len, block, once, &once_len), RT_PATCH_ADDED);
		cr_assert_eq(once_len, len + f.nregions * strlen(indented));
		/* Each region: the original up to its #! line, the indented block, the rest. */
		size_t from = 0, at = 0;
		for (unsigned r = 0; r < f.nregions; r++) {
			size_t upto = f.regions[r].insert;
			cr_assert_eq(memcmp(once + at, original + from, upto - from), 0);
			at += upto - from;
			cr_assert_eq(memcmp(once + at, indented, strlen(indented)), 0, "%s",
			             once + at);
			at += strlen(indented);
			from = upto;
		}
		cr_assert_eq(memcmp(once + at, original + from, len - from), 0);

		cr_assert_eq(patch(once, once_len, block, twice, &twice_len), RT_PATCH_SAME);
		cr_assert_eq(memcmp(twice, once, once_len), 0);
		cr_assert_eq(undo(once, once_len, undone, &undone_len), RT_PATCH_REMOVED);
		cr_assert_eq(undone_len, len);
		cr_assert_eq(memcmp(undone, original, len), 0, "%s", templates[i]);
	}
}

/* Patching the template and provisioning gives the kits a patched sub_start.sh renders it
 * would give unpatched kits patched afterwards: the same bytes. */
Test(patch_template, provisioning_a_patched_template_is_patching_its_kits)
{
	static char tmpl[TEXT_MAX], patched[TEXT_MAX], rendered[TEXT_MAX], script[TEXT_MAX],
	    expect[TEXT_MAX];
	const char *const versions[] = {"2.8.1", "2.6.3", "2.4.2"};
	char block[1024];
	block_for(block, sizeof(block), 2, gc2_ids, gc2_texts);
	for (size_t v = 0; v < COUNT(versions); v++) {
		char path[512];
		snprintf(path, sizeof(path), FIXTURES "nvflare/%s/master_template.sub_start.yml",
		         versions[v]);
		size_t len = slurp(path, tmpl), patched_len, expect_len;
		struct rt_patch_file f, pf;
		rt_patch_identify(tmpl, len, &f);
		for (int role = 0; role < 2; role++) {
			/* 2.4.2 has a key per role, later versions one for all. */
			const struct rt_patch_region *r = &f.regions[f.nregions == 2 ? role : 0];
			snprintf(path, sizeof(path), FIXTURES "nvflare/%s/%s/sub_start.sh",
			         versions[v], role ? "server" : "client");
			size_t script_len = slurp(path, script);
			const char *const *values = role ? server_values : client_values;
			/* The fixture is what NVFlare renders from the unpatched template. */
			render(tmpl, r, values, rendered);
			cr_assert_str_eq(rendered, script, "%s", path);

			cr_assert_eq(patch(tmpl, len, block, patched, &patched_len),
			             RT_PATCH_ADDED);
			rt_patch_identify(patched, patched_len, &pf);
			render(patched, &pf.regions[f.nregions == 2 ? role : 0], values, rendered);
			cr_assert_eq(patch(script, script_len, block, expect, &expect_len),
			             RT_PATCH_ADDED);
			cr_assert_str_eq(rendered, expect, "%s", path);
		}
	}
}

Test(patch_template, other_indentations_and_headers)
{
	static char out[TEXT_MAX], undone[TEXT_MAX];
	char block[1024];
	block_for(block, sizeof(block), 0, gc2_ids, gc2_texts);
	const struct {
		const char *text;
		size_t indent;
	} cases[] = {
	    {"a: 1\nsub_start_sh: |-\n    #!/bin/bash\n    python3 -m nvflare.x\n\n    echo\nb: |\n"
	     "  x\n",
	     4},
	    {"sub_start_sh: |2 # two\n  #!/bin/bash\n    python3 -m nvflare.x\nb: 2\n", 2},
	    {"sub_start_sh: |+\n #!/bin/sh\n python3 -m nvflare.x\n\n", 1},
	    {"sub_start_sh: |\n  #!/usr/bin/env bash\n  python3 -m nvflare.x", 2},
	};
	for (size_t i = 0; i < COUNT(cases); i++) {
		size_t len = strlen(cases[i].text), out_len, undone_len;
		struct rt_patch_file f;
		identify_ok(cases[i].text, len, &f, "case");
		cr_assert_eq(f.kind, RT_PATCH_TEMPLATE, "case %zu: %s", i, f.why);
		cr_assert_eq(f.regions[0].indent, cases[i].indent, "case %zu", i);
		cr_assert_eq(patch(cases[i].text, len, block, out, &out_len), RT_PATCH_ADDED);
		char end_line[64];
		snprintf(end_line, sizeof(end_line), "\n%*s# <<< roundtrim <<<\n",
		         (int)cases[i].indent, "");
		cr_assert_not_null(strstr(out, end_line), "case %zu: %s", i, out);
		cr_assert_eq(patch(out, out_len, block, undone, &undone_len), RT_PATCH_SAME);
		cr_assert_eq(undo(out, out_len, undone, &undone_len), RT_PATCH_REMOVED);
		cr_assert_str_eq(undone, cases[i].text);
	}
}

Test(patch_template, blocks_outside_the_scalar_are_not_ours)
{
	char block[1024], text[4096];
	static char out[TEXT_MAX];
	block_for(block, sizeof(block), 0, gc2_ids, gc2_texts);
	/* A block at column 0 is YAML comments, outside the scalar: not a block of ours. */
	snprintf(text, sizeof(text), "%ssub_start_sh: |\n  #!/bin/bash\n  python3 -m nvflare.x\n",
	         block);
	struct rt_patch_file f;
	rt_patch_identify(text, strlen(text), &f);
	cr_assert_eq(f.kind, RT_PATCH_TEMPLATE);
	cr_assert_eq(f.blocks, 0);
	size_t out_len;
	cr_assert_eq(undo(text, strlen(text), out, &out_len), RT_PATCH_ABSENT);
}

/* ---- The diff. */

Test(patch_diff, one_hunk_for_an_insertion)
{
	char block[1024], out[4096], diff[8192];
	block_for(block, sizeof(block), 0, gc2_ids, gc2_texts);
	const char *text = "#!/bin/bash\na\nb\nc\nd\npython3 -m nvflare.x\n";
	size_t out_len;
	cr_assert_eq(patch(text, strlen(text), block, out, &out_len), RT_PATCH_ADDED);
	rt_patch_diff("startup/sub_start.sh", text, strlen(text), out, out_len, diff, sizeof(diff));
	char expect[4096];
	snprintf(expect, sizeof(expect),
	         "--- startup/sub_start.sh\n+++ startup/sub_start.sh\n@@ -1,4 +1,9 @@\n"
	         " #!/bin/bash\n"
	         "+# >>> roundtrim 0.1.0 >>> added by `roundtrim patch`; undo: `roundtrim patch "
	         "--undo FILE`\n"
	         "+export LD_PRELOAD=\"" LIB "${LD_PRELOAD:+:$LD_PRELOAD}\"\n"
	         "+export ROUNDTRIM_MATCH='python*'\n+export ROUNDTRIM_GC_ROUNDS=2\n"
	         "+# <<< roundtrim <<<\n a\n b\n c\n");
	cr_assert_str_eq(diff, expect);
	/* And the way back. */
	rt_patch_diff("f", out, out_len, text, strlen(text), diff, sizeof(diff));
	cr_assert_not_null(strstr(diff, "@@ -1,9 +1,4 @@\n #!/bin/bash\n-# >>> roundtrim"), "%s",
	                   diff);
	cr_assert_eq(rt_patch_diff("f", text, strlen(text), text, strlen(text), diff, sizeof(diff)),
	             0);
	cr_assert_str_eq(diff, "");
}

Test(patch_diff, a_replaced_block_is_removed_and_added_whole)
{
	char block[1024], block2[1024], once[4096], twice[4096], diff[8192];
	block_for(block, sizeof(block), 0, gc2_ids, gc2_texts);
	block_for(block2, sizeof(block2), 2, gc2_ids, gc2_texts);
	const char *text = "#!/bin/bash\npython3 -m nvflare.x\n";
	size_t once_len, twice_len;
	patch(text, strlen(text), block, once, &once_len);
	cr_assert_eq(patch(once, once_len, block2, twice, &twice_len), RT_PATCH_REPLACED);
	rt_patch_diff("f", once, once_len, twice, twice_len, diff, sizeof(diff));
	cr_assert_not_null(strstr(diff, "@@ -1,7 +1,8 @@\n #!/bin/bash\n-# >>> roundtrim 0.1.0"),
	                   "%s", diff);
	cr_assert_not_null(strstr(diff, "\n-# <<< roundtrim <<<\n+# >>> roundtrim 0.1.0"), "%s",
	                   diff);
	cr_assert_not_null(strstr(diff, "\n+export MALLOC_ARENA_MAX=2\n+# <<< roundtrim <<<\n "
	                                "python3 -m nvflare.x\n"),
	                   "%s", diff);
}

/* Checks a diff's hunks: their counts match their lines, and the lines kept and removed are the
 * old text's, the lines kept and added the new text's, in order. */
static unsigned
check_diff(const char *diff, const char *old, const char *new_text)
{
	unsigned hunks = 0;
	const char *l = strchr(strchr(diff, '\n') + 1, '\n') + 1;
	while (*l) {
		unsigned os, oc, ns, nc;
		cr_assert_eq(sscanf(l, "@@ -%u,%u +%u,%u @@", &os, &oc, &ns, &nc), 4, "%s", l);
		hunks++;
		l = strchr(l, '\n') + 1;
		const char *o = old, *n = new_text;
		for (unsigned i = 1; i < os; i++)
			o = strchr(o, '\n') + 1;
		for (unsigned i = 1; i < ns; i++)
			n = strchr(n, '\n') + 1;
		while (oc + nc > 0) {
			const char *e = strchr(l, '\n');
			size_t len = (size_t)(e - l);
			cr_assert(l[0] == ' ' || l[0] == '-' || l[0] == '+', "%s", l);
			if (l[0] != '+') {
				cr_assert_eq(strncmp(o, l + 1, len - 1), 0);
				o = strchr(o, '\n') + 1;
				oc--;
			}
			if (l[0] != '-') {
				cr_assert_eq(strncmp(n, l + 1, len - 1), 0);
				n = strchr(n, '\n') + 1;
				nc--;
			}
			l = e + 1;
		}
	}
	return hunks;
}

Test(patch_diff, one_hunk_per_region_of_the_templates)
{
	static char original[TEXT_MAX], once[TEXT_MAX], diff[TEXT_MAX];
	char block[1024];
	block_for(block, sizeof(block), 0, client_ids, client_texts);
	for (size_t i = 0; i < COUNT(templates); i++) {
		size_t len = slurp(templates[i], original), once_len;
		struct rt_patch_file f;
		rt_patch_identify(original, len, &f);
		patch(original, len, block, once, &once_len);
		size_t dlen = rt_patch_diff("master_template.yml", original, len, once, once_len,
		                            diff, sizeof(diff));
		cr_assert_lt(dlen, sizeof(diff));
		cr_assert_eq(check_diff(diff, original, once), f.nregions, "%s", diff);
		cr_assert_eq(check_diff(diff, original, once), f.nregions);
	}
	for (size_t i = 0; i < COUNT(launchers); i++) {
		size_t len = slurp(launchers[i], original), once_len;
		patch(original, len, block, once, &once_len);
		rt_patch_diff("sub_start.sh", original, len, once, once_len, diff, sizeof(diff));
		cr_assert_eq(check_diff(diff, original, once), 1);
		cr_assert_eq(strncmp(diff, "--- sub_start.sh\n+++ sub_start.sh\n@@ -1,4 +1,", 44),
		             0);
	}
}

Test(patch_diff, other_changes_and_a_missing_final_newline)
{
	char diff[4096];
	/* Not a block: one change from the first line that differs to the lines both end with. */
	const char *old = "#!/bin/sh\na\nb\nc\nd\ne\nf\ng\nh\n";
	const char *new_text = "#!/bin/sh\na\nB\nC\nd\ne\nf\ng\nh\n";
	rt_patch_diff("f", old, strlen(old), new_text, strlen(new_text), diff, sizeof(diff));
	cr_assert_str_eq(diff, "--- f\n+++ f\n@@ -1,7 +1,7 @@\n #!/bin/sh\n a\n-b\n-c\n+B\n+C\n d\n"
	                       " e\n f\n");
	old = "#!/bin/sh\nlast";
	new_text = "#!/bin/sh\nlast\n";
	rt_patch_diff("f", old, strlen(old), new_text, strlen(new_text), diff, sizeof(diff));
	cr_assert_str_eq(diff, "--- f\n+++ f\n@@ -1,2 +1,2 @@\n #!/bin/sh\n-last\n"
	                       "\\ No newline at end of file\n+last\n");
	rt_patch_diff("f", new_text, strlen(new_text), old, strlen(old), diff, sizeof(diff));
	cr_assert_str_eq(diff, "--- f\n+++ f\n@@ -1,2 +1,2 @@\n #!/bin/sh\n-last\n+last\n"
	                       "\\ No newline at end of file\n");
}

/* ---- Signed kits. */

Test(patch_kit, signed_kits_are_told_apart)
{
	const char *plain[] = {"start.sh", "sub_start.sh", "fed_client.json", "rootCA.pem"};
	const char *kit[] = {"start.sh", "sub_start.sh", "signature.json", "rootCA.pem"};
	cr_assert_eq(rt_patch_kit_verdict(plain, COUNT(plain), RT_PATCH_SIGNATURE_UNREADABLE),
	             RT_PATCH_KIT_UNSIGNED);
	cr_assert_eq(rt_patch_kit_verdict(kit, COUNT(kit), RT_PATCH_SIGNATURE_LISTS),
	             RT_PATCH_KIT_SIGNED);
	cr_assert_eq(rt_patch_kit_verdict(kit, COUNT(kit), RT_PATCH_SIGNATURE_UNREADABLE),
	             RT_PATCH_KIT_SIGNED);
	cr_assert_eq(rt_patch_kit_verdict(kit, COUNT(kit), RT_PATCH_SIGNATURE_OMITS),
	             RT_PATCH_KIT_UNCOVERED);
	cr_assert_eq(rt_patch_kit_verdict(NULL, 0, RT_PATCH_SIGNATURE_LISTS),
	             RT_PATCH_KIT_UNSIGNED);
}

Test(patch_kit, signature_json_as_nvflare_writes_it)
{
	/* SignatureBuilder: json.dump of file and folder names to base64 signatures. */
	const char *sig = "{\"sub_start.sh\": \"bXlzaWc=\", \"fed_client.json\": \"eA==\", "
	                  "\"rootCA.pem\": \"eQ==\"}";
	cr_assert_eq(rt_patch_read_signature(sig, "sub_start.sh"), RT_PATCH_SIGNATURE_LISTS);
	cr_assert_eq(rt_patch_read_signature(sig, "start.sh"), RT_PATCH_SIGNATURE_OMITS);
	cr_assert_eq(rt_patch_read_signature("{}\n", "sub_start.sh"), RT_PATCH_SIGNATURE_OMITS);
	const char *bad[] = {"", "[\"sub_start.sh\"]", "{\"sub_start.sh\": 1", "{} {}", "null"};
	for (size_t i = 0; i < COUNT(bad); i++)
		cr_assert_eq(rt_patch_read_signature(bad[i], "sub_start.sh"),
		             RT_PATCH_SIGNATURE_UNREADABLE, "%s", bad[i]);
	cr_assert_eq(rt_patch_read_signature(NULL, "sub_start.sh"), RT_PATCH_SIGNATURE_UNREADABLE);
}

Test(patch_kit, the_message_says_what_to_do_instead)
{
	char msg[1024];
	rt_patch_kit_message("sub_start.sh", "site-1/startup/start.sh", RT_ROLE_CLIENT, 0, msg,
	                     sizeof(msg));
	cr_assert_str_eq(msg,
	                 "the startup kit is signed (signature.json beside it): NVFlare's kit "
	                 "verification (sub_start.sh --verify) fails once sub_start.sh changes. "
	                 "Start the kit unchanged instead: MALLOC_ARENA_MAX=2 roundtrim run --role "
	                 "client --match 'python*' -- site-1/startup/start.sh; or patch NVFlare's "
	                 "master_template.yml and provision again, which signs the patched script; "
	                 "--force patches it anyway");
	rt_patch_kit_message("sub_start.sh", "/srv/my kit/startup/start.sh", RT_ROLE_NONE, 0, msg,
	                     sizeof(msg));
	cr_assert_not_null(strstr(msg, "instead: roundtrim run --match 'python*' -- '/srv/my "
	                               "kit/startup/start.sh';"),
	                   "%s", msg);
	rt_patch_kit_message("sub_start.sh", "s/start.sh", RT_ROLE_SERVER, 3, msg, sizeof(msg));
	cr_assert_not_null(strstr(msg, "MALLOC_ARENA_MAX=3 roundtrim run --role server "), "%s",
	                   msg);
}

Test(patch_messages, one_per_change)
{
	cr_assert_str_eq(rt_patch_change_text(RT_PATCH_ADDED, false), "patched");
	cr_assert_str_eq(rt_patch_change_text(RT_PATCH_ADDED, true), "would be patched");
	cr_assert_str_eq(rt_patch_change_text(RT_PATCH_REPLACED, false), "roundtrim block updated");
	cr_assert_str_eq(rt_patch_change_text(RT_PATCH_SAME, false),
	                 "already patched; nothing changed");
	cr_assert_str_eq(rt_patch_change_text(RT_PATCH_REMOVED, true),
	                 "roundtrim block would be removed");
	cr_assert_str_eq(rt_patch_change_text(RT_PATCH_ABSENT, false),
	                 "not patched; nothing to undo");

	struct rt_patch_file launcher, tmpl;
	const char *sh = "#!/bin/sh\npython3 -m nvflare.x\n";
	const char *yml = "sub_start_sh: |\n  #!/bin/sh\n  python3 -m nvflare.x\n";
	rt_patch_identify(sh, strlen(sh), &launcher);
	rt_patch_identify(yml, strlen(yml), &tmpl);
	cr_assert_null(rt_patch_change_note(&launcher, RT_PATCH_ADDED));
	cr_assert_null(rt_patch_change_note(&tmpl, RT_PATCH_SAME));
	cr_assert_null(rt_patch_change_note(&tmpl, RT_PATCH_ABSENT));
	const enum rt_patch_change changes[] = {RT_PATCH_ADDED, RT_PATCH_REPLACED,
	                                        RT_PATCH_REMOVED};
	for (size_t i = 0; i < COUNT(changes); i++)
		cr_assert_str_eq(
		    rt_patch_change_note(&tmpl, changes[i]),
		    "kits provisioned from now on carry the change; kits made before are "
		    "as they were");
}
