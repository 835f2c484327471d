/* The worker's book: batches from every trigger, gc-rounds N mid-batch, whether to act, what to
 * report, and the status record. */
#include <criterion/criterion.h>
#include <string.h>

#include "rt_ledger.h"

static struct rt_ledger ledger;

static struct rt_proto_cmd
cmd(enum rt_proto_kind kind, uint64_t arg, const char *line)
{
	return (struct rt_proto_cmd){.kind = kind, .arg = arg, .line = line};
}

static void
line(struct rt_batch *b, enum rt_proto_kind kind, uint64_t arg)
{
	struct rt_proto_cmd c = cmd(kind, arg, "");
	cr_assert_eq(rt_ledger_line(&ledger, b, &c), RT_LEDGER_SAY_NOTHING);
}

Test(ledger, rounds_from_every_trigger_make_one_batch)
{
	rt_ledger_init(&ledger, 3);
	struct rt_batch b = {0};
	rt_batch_count(&b, 1, "signal");
	rt_batch_count(&b, 0, "api");
	line(&b, RT_PROTO_ROUND, 0);
	rt_ledger_close(&ledger, &b);
	cr_assert_eq(b.rounds, 2);
	cr_assert_not(b.due, "rounds 1 and 2 are no multiple of 3");
	cr_assert_str_eq(b.trigger, "fifo");
	struct rt_batch c = {0};
	rt_batch_count(&c, 1, "signal");
	rt_ledger_close(&ledger, &c);
	cr_assert(c.due, "round 3");
	cr_assert_eq(rt_rounds_counted(&ledger.rounds), 3);
}

/* The API counts its rounds where it is called: the batch reports them without counting them
 * again, and acts when one of them acts. */
Test(ledger, rounds_the_api_counted_are_not_counted_again)
{
	rt_ledger_init(&ledger, 2);
	cr_assert_eq(rt_rounds_add(&ledger.rounds, 1), 0);
	struct rt_batch b = {0};
	rt_batch_counted(&b, 1, false, "api");
	rt_ledger_close(&ledger, &b);
	cr_assert_eq(b.rounds, 1);
	cr_assert_not(b.due);
	cr_assert(b.announced);
	cr_assert_eq(rt_rounds_counted(&ledger.rounds), 1);
	cr_assert_eq(rt_rounds_add(&ledger.rounds, 1), 2);
	struct rt_batch c = {0};
	line(&c, RT_PROTO_ROUND, 0);
	rt_batch_counted(&c, 1, true, "api");
	rt_ledger_close(&ledger, &c);
	cr_assert_eq(c.rounds, 2);
	cr_assert(c.due, "round 2 acted where the API counted it");
	cr_assert_str_eq(c.trigger, "api");
	cr_assert_eq(rt_rounds_counted(&ledger.rounds), 3, "the FIFO's round is 3");
}

/* Rounds before "gc-rounds N" count under the old N, those after under the new. */
Test(ledger, gc_rounds_mid_batch)
{
	rt_ledger_init(&ledger, 0);
	struct rt_batch b = {0};
	line(&b, RT_PROTO_ROUND, 0);
	line(&b, RT_PROTO_ROUND, 0);
	line(&b, RT_PROTO_GC_ROUNDS, 4);
	cr_assert_not(b.due, "N was 0 for rounds 1 and 2");
	line(&b, RT_PROTO_ROUND, 0);
	line(&b, RT_PROTO_ROUND, 0);
	rt_ledger_close(&ledger, &b);
	cr_assert(b.due, "round 4 under N=4");
	cr_assert_eq(b.rounds, 4);
	cr_assert_eq(rt_rounds_every(&ledger.rounds), 4);
	/* And the other way: due under the old N, then N changes. */
	rt_ledger_init(&ledger, 1);
	struct rt_batch c = {0};
	line(&c, RT_PROTO_ROUND, 0);
	line(&c, RT_PROTO_GC_ROUNDS, 0);
	line(&c, RT_PROTO_ROUND, 0);
	rt_ledger_close(&ledger, &c);
	cr_assert(c.due, "round 1 under N=1");
}

Test(ledger, junk_is_said_once_per_kind)
{
	rt_ledger_init(&ledger, 1);
	struct rt_batch b = {0};
	struct rt_proto_cmd junk = cmd(RT_PROTO_UNKNOWN, 0, "hello");
	struct rt_proto_cmd big = cmd(RT_PROTO_OVERSIZED, 0, "x");
	cr_assert_eq(rt_ledger_line(&ledger, &b, &junk), RT_LEDGER_SAY_FIRST_UNKNOWN);
	cr_assert_eq(rt_ledger_line(&ledger, &b, &junk), RT_LEDGER_SAY_NOTHING);
	cr_assert_eq(rt_ledger_line(&ledger, &b, &big), RT_LEDGER_SAY_FIRST_OVERSIZED);
	cr_assert_eq(rt_ledger_line(&ledger, &b, &big), RT_LEDGER_SAY_NOTHING);
	line(&b, RT_PROTO_EMPTY, 0);
	cr_assert_eq(ledger.unknown_lines, 2);
	cr_assert_eq(ledger.oversized_lines, 2);
	rt_ledger_close(&ledger, &b);
	cr_assert_not(rt_ledger_plan(&b, true, true).handle, "junk is no round");
}

Test(ledger, plan)
{
	struct rt_batch none = {0};
	cr_assert_not(rt_ledger_plan(&none, true, true).handle);
	struct rt_batch counted = {.rounds = 1};
	struct rt_ledger_plan p = rt_ledger_plan(&counted, false, false);
	cr_assert(p.handle && !p.act && !p.read_live && !p.rss_line && !p.stats_line);
	struct rt_batch due = {.rounds = 1, .due = true};
	p = rt_ledger_plan(&due, true, false);
	cr_assert(p.act && p.read_live && p.rss_line && !p.stats_line);
	struct rt_batch trim = {.trim = true};
	p = rt_ledger_plan(&trim, false, true);
	cr_assert(p.act && p.read_live && !p.rss_line && p.stats_line);
	/* A stats request without a stats file is answered on the log. */
	struct rt_batch stats = {.stats = true};
	p = rt_ledger_plan(&stats, false, false);
	cr_assert(p.handle && !p.act && p.read_live && p.rss_line);
}

static struct rt_ledger_facts
facts(void)
{
	return (struct rt_ledger_facts){.pid = 9,
	                                .program = "python3",
	                                .allocator = "glibc",
	                                .action = "malloc_trim",
	                                .fifo = "/tmp/r/9.fifo",
	                                .stats = "",
	                                .signal = 0};
}

Test(ledger, an_action_is_booked_and_reported)
{
	rt_ledger_init(&ledger, 1);
	struct rt_batch b = {0};
	rt_batch_count(&b, 3, "fifo");
	rt_ledger_close(&ledger, &b);
	struct rt_ledger_plan p = rt_ledger_plan(&b, true, false);
	char note[RT_LEDGER_NOTE_MAX];
	struct rt_round_record rec;
	rt_ledger_start(&ledger, &b, 9, "glibc", note, &rec);
	cr_assert_eq(rec.round, 3);
	cr_assert_str_eq(rec.action, "none");
	rec.rss_before_kib = 5000;
	rec.action = "malloc_trim";
	rec.rss_after_kib = 2000;
	rec.duration_us = 77;
	cr_assert_not(rt_ledger_acted(&ledger, &rec, note, false));
	rt_ledger_finish(&ledger, &b, &p, 300, 1700000000000000, &rec, note);
	cr_assert_str_eq(rec.note, "merged=3");
	cr_assert_eq(rec.live_kib, 300);
	struct rt_ledger_facts f = facts();
	struct rt_status_record st;
	rt_ledger_status(&ledger, &f, &st);
	cr_assert_eq(st.seq, 1);
	cr_assert_eq(st.rounds, 3);
	cr_assert_eq(st.actions, 1);
	cr_assert_eq(st.last_action_round, 3);
	cr_assert_str_eq(st.last_action, "malloc_trim");
	cr_assert_eq(st.released_total_kib, 3000);
	cr_assert_eq(st.rss_kib, 2000);
	cr_assert_eq(st.live_kib, 300);
	cr_assert_str_eq(st.last_note, "merged=3");
	rt_ledger_status(&ledger, &f, &st);
	cr_assert_eq(st.seq, 2, "every status record is a new rewrite");
	cr_assert_eq(st.lost_records, 0);
	f.lost_records = 4;
	rt_ledger_status(&ledger, &f, &st);
	cr_assert_eq(st.lost_records, 4, "the files' count, as the shim keeps it");
	struct rt_prom_record pr;
	rt_ledger_prom(&ledger, &f, "0.1.0", &pr);
	cr_assert_eq(pr.rounds, 3);
	cr_assert_eq(pr.released_total_kib, 3000);
	cr_assert_eq(pr.last_rss_before_kib, 5000);
	cr_assert_eq(pr.lost_records, 4);
}

Test(ledger, a_failed_action_is_said_once)
{
	rt_ledger_init(&ledger, 1);
	for (int i = 0; i < 3; i++) {
		struct rt_batch b = {.trim = true, .trigger = "api"};
		char note[RT_LEDGER_NOTE_MAX];
		struct rt_round_record rec;
		rt_ledger_start(&ledger, &b, 1, "jemalloc", note, &rec);
		rec.action = "jemalloc_purge";
		cr_assert_eq(rt_ledger_acted(&ledger, &rec, note, true), i == 0);
		cr_assert_str_eq(note, "jemalloc_purge-failed");
	}
	cr_assert_eq(ledger.actions, 3);
}

/* The release after a round's Python steps adds its memory to the round's action, not a second
 * action: status, report and the Prometheus file count rounds acted on alike. */
Test(ledger, a_python_follow_up_is_no_action_of_its_own)
{
	rt_ledger_init(&ledger, 1);
	struct rt_batch b = {0};
	rt_batch_count(&b, 1, "fifo");
	rt_ledger_close(&ledger, &b);
	char note[RT_LEDGER_NOTE_MAX];
	struct rt_round_record rec;
	rt_ledger_start(&ledger, &b, 9, "glibc", note, &rec);
	rec.action = "glibc_release";
	rec.rss_before_kib = 5000;
	rec.rss_after_kib = 4000;
	rt_ledger_acted(&ledger, &rec, note, false);
	struct rt_batch follow = {0};
	rt_batch_python(&follow, 1, true);
	rt_ledger_start(&ledger, &follow, 9, "glibc", note, &rec);
	rec.action = "glibc_release";
	rec.rss_before_kib = 4000;
	rec.rss_after_kib = 3000;
	rt_ledger_acted(&ledger, &rec, note, false);
	struct rt_ledger_facts f = facts();
	struct rt_status_record st;
	rt_ledger_status(&ledger, &f, &st);
	cr_assert_eq(st.actions, 1);
	cr_assert_eq(st.released_total_kib, 2000);
	struct rt_prom_record pr;
	rt_ledger_prom(&ledger, &f, "0.1.0", &pr);
	cr_assert_eq(pr.actions, 1);
}

/* A round that does not act leaves the last action's record as it was. */
Test(ledger, counting_rounds_keep_the_last_action)
{
	rt_ledger_init(&ledger, 2);
	struct rt_batch b = {0};
	rt_batch_count(&b, 1, "fifo");
	rt_ledger_close(&ledger, &b);
	struct rt_ledger_plan p = rt_ledger_plan(&b, false, false);
	char note[RT_LEDGER_NOTE_MAX];
	struct rt_round_record rec;
	rt_ledger_start(&ledger, &b, 1, "glibc", note, &rec);
	rec.rss_before_kib = rec.rss_after_kib = 4000;
	rt_ledger_finish(&ledger, &b, &p, 0, 1, &rec, note);
	struct rt_ledger_facts f = facts();
	struct rt_status_record st;
	rt_ledger_status(&ledger, &f, &st);
	cr_assert_str_eq(st.last_action, "none");
	cr_assert_eq(st.last_action_round, 0);
	cr_assert_eq(st.rss_kib, 4000);
}

/* The steps handed to the main thread report in a record of their own: it names the round they
 * served, counts no round, and releases only when they freed something. */
Test(ledger, python_follow_up)
{
	rt_ledger_init(&ledger, 1);
	struct rt_batch b = {0};
	line(&b, RT_PROTO_ROUND, 0);
	line(&b, RT_PROTO_ROUND, 0);
	rt_ledger_close(&ledger, &b);
	struct rt_batch f = {0};
	rt_batch_python(&f, 1, false);
	rt_ledger_close(&ledger, &f);
	cr_assert_eq(rt_rounds_counted(&ledger.rounds), 2, "a follow-up counts no round");
	struct rt_ledger_plan p = rt_ledger_plan(&f, false, true);
	cr_assert(p.handle && !p.act && p.stats_line, "nothing freed: a record, no release");
	char note[RT_LEDGER_NOTE_MAX];
	struct rt_round_record rec;
	rt_ledger_start(&ledger, &f, 42, "glibc", note, &rec);
	cr_assert_eq(rec.round, 1, "the round the steps served, not the last counted");
	cr_assert_str_eq(rec.trigger, "python");
	struct rt_batch g = {0};
	rt_batch_python(&g, 2, true);
	cr_assert(rt_ledger_plan(&g, false, false).act, "the steps freed something");
}

/* Only an action that a detected round alone calls for is subject to the RSS rule. */
Test(ledger, acts_by_detection_only)
{
	rt_ledger_init(&ledger, 1);
	struct rt_batch b = {0};
	rt_batch_detected(&b, 900);
	rt_ledger_close(&ledger, &b);
	cr_assert(rt_batch_acts_by_detection_only(&b));
	struct rt_batch c = {0};
	rt_batch_detected(&c, 900);
	rt_batch_trim(&c, "interval");
	rt_ledger_close(&ledger, &c);
	cr_assert_not(rt_batch_acts_by_detection_only(&c), "a trim acts whatever RSS did");
	struct rt_batch d = {0};
	line(&d, RT_PROTO_ROUND, 0);
	rt_ledger_close(&ledger, &d);
	cr_assert_not(rt_batch_acts_by_detection_only(&d), "announced rounds are the user's");
	struct rt_batch e = {0};
	rt_batch_python(&e, 3, true);
	cr_assert_not(rt_batch_acts_by_detection_only(&e));
	rt_ledger_init(&ledger, 2);
	struct rt_batch f = {0};
	rt_batch_detected(&f, 900);
	rt_ledger_close(&ledger, &f);
	cr_assert_not(rt_batch_acts_by_detection_only(&f), "round 1 of N=2 does not act");
}
