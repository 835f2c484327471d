#include <criterion/criterion.h>
#include <ctype.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rt_parse.h"

#define RTMIN 34
#define RTMAX 64
#define SENTINEL 0xdeadbeefu

static void
expect_u64(const char *text, uint64_t max, enum rt_parse_result want, uint64_t want_value)
{
	uint64_t out = SENTINEL;
	enum rt_parse_result got = rt_parse_u64(text, max, &out);
	cr_assert_eq(got, want, "rt_parse_u64(\"%s\") = %d, want %d", text, got, want);
	/* On failure the output is left alone. */
	cr_assert_eq(out, want == RT_PARSE_OK ? want_value : SENTINEL, "rt_parse_u64(\"%s\")",
	             text);
}

static void
expect_signal_with(const char *text, int rtmin, int rtmax, enum rt_parse_result want, int want_sig)
{
	int out = -1;
	enum rt_parse_result got = rt_parse_signal(text, rtmin, rtmax, &out);
	cr_assert_eq(got, want, "rt_parse_signal(\"%s\") = %d, want %d", text, got, want);
	cr_assert_eq(out, want == RT_PARSE_OK ? want_sig : -1, "rt_parse_signal(\"%s\") -> %d",
	             text, out);
}

static void
expect_signal(const char *text, enum rt_parse_result want, int want_sig)
{
	expect_signal_with(text, RTMIN, RTMAX, want, want_sig);
}

Test(parse_u64, plain_values)
{
	expect_u64("0", 10, RT_PARSE_OK, 0);
	expect_u64("7", 10, RT_PARSE_OK, 7);
	expect_u64("007", 10, RT_PARSE_OK, 7);
	expect_u64("1000000000", 1000000000, RT_PARSE_OK, 1000000000);
	expect_u64("18446744073709551615", UINT64_MAX, RT_PARSE_OK, UINT64_MAX);
}

Test(parse_u64, max_is_inclusive)
{
	expect_u64("10", 10, RT_PARSE_OK, 10);
	expect_u64("11", 10, RT_PARSE_OVERFLOW, 0);
}

Test(parse_u64, u64_overflow)
{
	expect_u64("18446744073709551616", UINT64_MAX, RT_PARSE_OVERFLOW, 0);
	expect_u64("99999999999999999999999999", UINT64_MAX, RT_PARSE_OVERFLOW, 0);
	/* Wraps to a small number if overflow went unnoticed. */
	expect_u64("18446744073709551621", 100, RT_PARSE_OVERFLOW, 0);
}

Test(parse_u64, empty)
{
	expect_u64("", 10, RT_PARSE_EMPTY, 0);
}

Test(parse_u64, negative)
{
	expect_u64("-1", 10, RT_PARSE_NEGATIVE, 0);
	expect_u64("-0", 10, RT_PARSE_NEGATIVE, 0);
	expect_u64("-99999999999999999999999", 10, RT_PARSE_NEGATIVE, 0);
}

Test(parse_u64, garbage)
{
	static const char *const bad[] = {"-",   "--1", "-1x",      "+1",    " 1",
	                                  "1 ",  "1\n", "0x10",     "1_000", "1e3",
	                                  "1.5", "abc", "\xd9\xa1", "12a3",  "\t"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_u64(bad[i], UINT64_MAX, RT_PARSE_GARBAGE, 0);
}

Test(parse_u64, garbage_beats_overflow)
{
	expect_u64("99999999999999999999999x", UINT64_MAX, RT_PARSE_GARBAGE, 0);
}

Test(parse_word_in, case_insensitive_exact)
{
	static const char *const words[] = {"true", "yes", NULL};
	cr_assert(rt_parse_word_in("true", words));
	cr_assert(rt_parse_word_in("TRUE", words));
	cr_assert(rt_parse_word_in("yEs", words));
	cr_assert_not(rt_parse_word_in("tru", words));
	cr_assert_not(rt_parse_word_in("truex", words));
	cr_assert_not(rt_parse_word_in(" true", words));
	cr_assert_not(rt_parse_word_in("", words));
	cr_assert_not(rt_parse_word_in("no", words));
}

Test(parse_word_in, empty_list)
{
	static const char *const words[] = {NULL};
	cr_assert_not(rt_parse_word_in("true", words));
	cr_assert_not(rt_parse_word_in("", words));
}

Test(parse_signal, usr_names)
{
	expect_signal("USR1", RT_PARSE_OK, 10);
	expect_signal("usr1", RT_PARSE_OK, 10);
	expect_signal("SIGUSR1", RT_PARSE_OK, 10);
	expect_signal("USR2", RT_PARSE_OK, 12);
	expect_signal("sigusr2", RT_PARSE_OK, 12);
	expect_signal("SigUsr2", RT_PARSE_OK, 12);
}

Test(parse_signal, realtime_names)
{
	expect_signal("RTMIN", RT_PARSE_OK, RTMIN);
	expect_signal("SIGRTMIN", RT_PARSE_OK, RTMIN);
	expect_signal("rtmin+8", RT_PARSE_OK, RTMIN + 8);
	expect_signal("SIGRTMIN+0", RT_PARSE_OK, RTMIN);
	expect_signal("SIGRTMIN+30", RT_PARSE_OK, RTMAX);
	expect_signal("RTMAX", RT_PARSE_OK, RTMAX);
	expect_signal("sigrtmax-2", RT_PARSE_OK, RTMAX - 2);
	expect_signal("RTMAX-30", RT_PARSE_OK, RTMIN);
}

Test(parse_signal, realtime_out_of_range)
{
	expect_signal("RTMIN+31", RT_PARSE_OVERFLOW, 0);
	expect_signal("RTMIN+99999999999999999999999", RT_PARSE_OVERFLOW, 0);
	expect_signal("RTMAX-31", RT_PARSE_OVERFLOW, 0);
}

Test(parse_signal, realtime_bad_offsets)
{
	static const char *const bad[] = {"RTMIN+",   "RTMIN+x", "RTMIN-1",  "RTMAX+1",
	                                  "RTMAX-",   "RTMINX",  "RTMIN+-1", "RTMIN+ 1",
	                                  "RTMIN++1", "RTMIN8",  "RTMAX-1x"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_signal(bad[i], RT_PARSE_GARBAGE, 0);
}

Test(parse_signal, uses_callers_realtime_range)
{
	expect_signal_with("RTMIN", 35, 60, RT_PARSE_OK, 35);
	expect_signal_with("RTMAX", 35, 60, RT_PARSE_OK, 60);
	expect_signal_with("RTMIN+25", 35, 60, RT_PARSE_OK, 60);
	expect_signal_with("RTMIN+26", 35, 60, RT_PARSE_OVERFLOW, 0);
	expect_signal_with("34", 35, 60, RT_PARSE_RESERVED, 0);
	expect_signal_with("35", 35, 60, RT_PARSE_OK, 35);
	expect_signal_with("61", 35, 60, RT_PARSE_OVERFLOW, 0);
}

Test(parse_signal, none)
{
	expect_signal("none", RT_PARSE_OK, 0);
	expect_signal("NONE", RT_PARSE_OK, 0);
	expect_signal("SIGnone", RT_PARSE_GARBAGE, 0);
}

Test(parse_signal, numbers)
{
	for (int sig = 1; sig < 32; sig++) {
		char text[16];
		snprintf(text, sizeof(text), "%d", sig);
		if (sig == 10 || sig == 12)
			expect_signal(text, RT_PARSE_OK, sig);
		else
			expect_signal(text, RT_PARSE_RESERVED, 0);
	}
	expect_signal("32", RT_PARSE_RESERVED, 0);
	expect_signal("33", RT_PARSE_RESERVED, 0);
	expect_signal("34", RT_PARSE_OK, 34);
	expect_signal("42", RT_PARSE_OK, 42);
	expect_signal("64", RT_PARSE_OK, 64);
	expect_signal("65", RT_PARSE_OVERFLOW, 0);
	expect_signal("99999999999999999999999", RT_PARSE_OVERFLOW, 0);
	expect_signal("0", RT_PARSE_GARBAGE, 0);
	expect_signal("-5", RT_PARSE_NEGATIVE, 0);
	expect_signal("12x", RT_PARSE_GARBAGE, 0);
}

Test(parse_signal, reserved_names)
{
	static const char *const names[] = {
	    "HUP",  "INT",  "QUIT", "ILL",    "TRAP", "ABRT",  "BUS",  "FPE",  "KILL", "SEGV",
	    "PIPE", "ALRM", "TERM", "STKFLT", "CHLD", "CONT",  "STOP", "TSTP", "TTIN", "TTOU",
	    "URG",  "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO",   "POLL", "PWR",  "SYS"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char sig[16], lower[16];
		snprintf(sig, sizeof(sig), "SIG%s", names[i]);
		size_t j;
		for (j = 0; names[i][j]; j++)
			lower[j] = (char)tolower((unsigned char)names[i][j]);
		lower[j] = '\0';
		expect_signal(names[i], RT_PARSE_RESERVED, 0);
		expect_signal(sig, RT_PARSE_RESERVED, 0);
		expect_signal(lower, RT_PARSE_RESERVED, 0);
	}
}

Test(parse_signal, empty_and_garbage)
{
	expect_signal("", RT_PARSE_EMPTY, 0);
	static const char *const bad[] = {"SIG",   "USR3", "SIGSIGUSR1", " USR1",
	                                  "USR1 ", "USR",  "RT",         "SIGFOO",
	                                  "+10",   "x",    "USR1\n",     "SIG10"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_signal(bad[i], RT_PARSE_GARBAGE, 0);
}

Test(parse_result_text, words)
{
	cr_assert_str_eq(rt_parse_result_text(RT_PARSE_OK), "ok");
	cr_assert_str_eq(rt_parse_result_text(RT_PARSE_EMPTY), "empty");
	cr_assert_str_eq(rt_parse_result_text(RT_PARSE_GARBAGE), "not a valid value");
	cr_assert_str_eq(rt_parse_result_text(RT_PARSE_NEGATIVE), "negative");
	cr_assert_str_eq(rt_parse_result_text(RT_PARSE_OVERFLOW), "too large");
	cr_assert_str_eq(rt_parse_result_text(RT_PARSE_RESERVED),
	                 "a signal reserved for the system");
}

Test(parse_python_int, what_int_takes)
{
	static const struct {
		const char *text;
		int64_t value;
	} ok[] = {{"5", 5},   {" 5 ", 5},       {"+5", 5},
	          {"-5", -5}, {"5_0", 50},      {"1_000", 1000},
	          {"007", 7}, {"\t\n12\r", 12}, {"99999999999999999999999", INT64_MAX},
	          {"-0", 0}};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int64_t v = -1;
		cr_assert_eq(rt_parse_python_int(ok[i].text, &v), RT_PARSE_OK, "%s", ok[i].text);
		cr_assert_eq(v, ok[i].value, "%s", ok[i].text);
	}
	static const char *const bad[] = {"5__0", "_5", "5_",  "0x5", "5.0",
	                                  "- 5",  "+",  "++5", "5a"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t v;
		cr_assert_eq(rt_parse_python_int(bad[i], &v), RT_PARSE_GARBAGE, "%s", bad[i]);
	}
	int64_t v;
	cr_assert_eq(rt_parse_python_int("  ", &v), RT_PARSE_EMPTY);
	cr_assert_eq(rt_parse_python_int("", &v), RT_PARSE_EMPTY);
}

static void
expect_signal_name(int sig, const char *want)
{
	char name[32];
	rt_parse_signal_name(sig, RTMIN, RTMAX, name, sizeof(name));
	cr_assert_str_eq(name, want, "signal %d", sig);
}

Test(parse_signal_name, as_kill_l_names_them)
{
	expect_signal_name(SIGUSR1, "USR1");
	expect_signal_name(SIGUSR2, "USR2");
	expect_signal_name(34, "RTMIN");
	expect_signal_name(42, "RTMIN+8");
	expect_signal_name(49, "RTMIN+15");
	expect_signal_name(50, "RTMAX-14");
	expect_signal_name(64, "RTMAX");
	expect_signal_name(0, "0");
	expect_signal_name(15, "15");
}

/* Every name reads back as its signal. */
Test(parse_signal_name, reads_back)
{
	for (int sig = RTMIN; sig <= RTMAX; sig++) {
		char name[32];
		int back = -1;
		rt_parse_signal_name(sig, RTMIN, RTMAX, name, sizeof(name));
		cr_assert_eq(rt_parse_signal(name, RTMIN, RTMAX, &back), RT_PARSE_OK, "%s", name);
		cr_assert_eq(back, sig, "%s", name);
	}
}

static void
expect_pid(const char *text, enum rt_parse_result want, int want_pid)
{
	int pid = -1;
	cr_assert_eq(rt_parse_pid(text, &pid), want, "\"%s\"", text);
	cr_assert_eq(pid, want == RT_PARSE_OK ? want_pid : -1, "\"%s\"", text);
}

Test(parse_pid, digits_without_leading_zero)
{
	expect_pid("1", RT_PARSE_OK, 1);
	expect_pid("4194304", RT_PARSE_OK, 4194304);
	expect_pid("2147483647", RT_PARSE_OK, 2147483647);
	expect_pid("2147483648", RT_PARSE_OVERFLOW, 0);
	expect_pid("0", RT_PARSE_GARBAGE, 0);
	expect_pid("012", RT_PARSE_GARBAGE, 0);
	expect_pid("12x", RT_PARSE_GARBAGE, 0);
	expect_pid("-3", RT_PARSE_NEGATIVE, 0);
	expect_pid("", RT_PARSE_EMPTY, 0);
	expect_pid(" 1", RT_PARSE_GARBAGE, 0);
}

static void
expect_seconds(const char *text, enum rt_parse_result want, uint64_t want_us)
{
	uint64_t us = SENTINEL;
	cr_assert_eq(rt_parse_seconds(text, 3600000000u, &us), want, "\"%s\"", text);
	cr_assert_eq(us, want == RT_PARSE_OK ? want_us : SENTINEL, "\"%s\"", text);
}

Test(parse_seconds, whole_and_decimal)
{
	expect_seconds("30", RT_PARSE_OK, 30000000);
	expect_seconds("0.3", RT_PARSE_OK, 300000);
	expect_seconds("0", RT_PARSE_OK, 0);
	expect_seconds("1.000001", RT_PARSE_OK, 1000001);
	expect_seconds("1.0000019", RT_PARSE_OK, 1000001);
	expect_seconds("3600", RT_PARSE_OK, 3600000000u);
	expect_seconds("3600.000001", RT_PARSE_OVERFLOW, 0);
	expect_seconds("99999999999999999999999", RT_PARSE_OVERFLOW, 0);
	expect_seconds("soon", RT_PARSE_GARBAGE, 0);
	expect_seconds(".5", RT_PARSE_GARBAGE, 0);
	expect_seconds("5.", RT_PARSE_GARBAGE, 0);
	expect_seconds("1e3", RT_PARSE_GARBAGE, 0);
	expect_seconds("-1", RT_PARSE_NEGATIVE, 0);
	expect_seconds("", RT_PARSE_EMPTY, 0);
}

/* Durations read and written from one table of units: the text reads back as its value. */
Test(parse_duration, written_in_the_largest_whole_unit_and_read_back)
{
	const struct {
		uint64_t ms;
		const char *text;
	} cases[] = {{0, "0s"},        {1, "1ms"},    {999, "999ms"}, {1000, "1s"},
	             {1500, "1500ms"}, {60000, "1m"}, {90000, "90s"}, {7200000, "2h"}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[32];
		uint64_t back = 1;
		rt_parse_duration_text(cases[i].ms, text, sizeof(text));
		cr_assert_str_eq(text, cases[i].text);
		cr_assert_eq(rt_parse_duration_ms(text, UINT64_MAX, &back), RT_PARSE_OK);
		cr_assert_eq(back, cases[i].ms);
	}
	uint64_t v = 1;
	cr_assert_eq(rt_parse_duration_ms("0", 1000, &v), RT_PARSE_OK, "0 needs no unit");
	cr_assert_eq(v, 0);
	cr_assert_eq(rt_parse_duration_ms("5", 1000, &v), RT_PARSE_GARBAGE, "5 of what?");
}
