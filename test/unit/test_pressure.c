/* Where memory in use and its limit are read, and the triggers that act on them, on the
 * interval and on the RSS limit, and detection's hand-over to announced rounds. */
#include <criterion/criterion.h>
#include <string.h>

#include "rt_pressure.h"
#include "rt_triggers.h"

/* As read on a machine of this project: cgroup v1 controllers, v2 mounted beside them. */
static const char hybrid_cgroup[] = "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/6e96\n"
                                    "3:cpuset:/\n1:cpu:/\n0::/\n";
static const char hybrid_mountinfo[] =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "40 31 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

Test(pressure, cgroup_v1_memory_controller)
{
	char dir[256];
	cr_assert_eq(rt_pressure_cgroup_dir(hybrid_cgroup, hybrid_mountinfo, dir, sizeof(dir)),
	             RT_PRESSURE_CGROUP_V1);
	cr_assert_str_eq(dir, "/sys/fs/cgroup/memory/process_api/6e96");
	cr_assert_str_eq(rt_pressure_used_file(RT_PRESSURE_CGROUP_V1), "memory.usage_in_bytes");
	cr_assert_str_eq(rt_pressure_limit_file(RT_PRESSURE_CGROUP_V1), "memory.limit_in_bytes");
}

Test(pressure, cgroup_v2_unified)
{
	static const char cgroup[] = "0::/user.slice/job-7.scope\n";
	static const char mountinfo[] =
	    "29 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
	char dir[256];
	cr_assert_eq(rt_pressure_cgroup_dir(cgroup, mountinfo, dir, sizeof(dir)),
	             RT_PRESSURE_CGROUP_V2);
	cr_assert_str_eq(dir, "/sys/fs/cgroup/user.slice/job-7.scope");
	cr_assert_str_eq(rt_pressure_used_file(RT_PRESSURE_CGROUP_V2), "memory.current");
}

/* mountinfo escapes a blank in a mount point as \040, as one reader of it undoes. */
Test(pressure, cgroup_mounted_where_a_path_has_a_blank)
{
	static const char cgroup[] = "0::/job\n";
	static const char mountinfo[] =
	    "29 23 0:26 / /srv/my\\040cgroups rw - cgroup2 cgroup2 rw\n";
	char dir[256];
	cr_assert_eq(rt_pressure_cgroup_dir(cgroup, mountinfo, dir, sizeof(dir)),
	             RT_PRESSURE_CGROUP_V2);
	cr_assert_str_eq(dir, "/srv/my cgroups/job");
}

/* In a container the mount's root is the container's own cgroup. */
Test(pressure, cgroup_mounted_below_its_root)
{
	static const char cgroup[] = "0::/docker/abc\n";
	static const char mountinfo[] =
	    "29 23 0:26 /docker/abc /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n";
	char dir[256];
	cr_assert_eq(rt_pressure_cgroup_dir(cgroup, mountinfo, dir, sizeof(dir)),
	             RT_PRESSURE_CGROUP_V2);
	cr_assert_str_eq(dir, "/sys/fs/cgroup");
	static const char other[] = "0::/elsewhere\n";
	cr_assert_eq(rt_pressure_cgroup_dir(other, mountinfo, dir, sizeof(dir)), RT_PRESSURE_NONE);
}

Test(pressure, values)
{
	uint64_t bytes;
	bool limited;
	cr_assert(rt_pressure_read_value("1048576\n", &bytes, &limited));
	cr_assert_eq(bytes, 1048576);
	cr_assert(limited);
	cr_assert(rt_pressure_read_value("max\n", &bytes, &limited));
	cr_assert_not(limited);
	cr_assert(rt_pressure_read_value("9223372036854771712\n", &bytes, &limited));
	cr_assert_not(limited, "v1's no-limit value");
	cr_assert_not(rt_pressure_read_value("", &bytes, &limited));
	cr_assert_not(rt_pressure_read_value("-1\n", &bytes, &limited));
	cr_assert_not(rt_pressure_read_value("12 kB\n", &bytes, &limited));
	uint64_t used, total;
	cr_assert(
	    rt_pressure_read_meminfo("MemTotal:       24684084 kB\nMemFree:        22040540 kB\n"
	                             "MemAvailable:   23614912 kB\nBuffers: 1 kB\n",
	                             &used, &total));
	cr_assert_eq(total, 24684084ULL * 1024);
	cr_assert_eq(used, (24684084ULL - 23614912ULL) * 1024);
	cr_assert_not(rt_pressure_read_meminfo("MemTotal: 5 kB\n", &used, &total));
}

static struct rt_triggers
triggers(uint64_t interval_us, uint32_t pressure_permille, uint64_t rss_limit_kib, bool auto_on)
{
	struct rt_triggers_params p;
	rt_triggers_default_params(&p);
	p.interval_us = interval_us;
	p.pressure_permille = pressure_permille;
	p.rss_limit_kib = rss_limit_kib;
	struct rt_triggers t;
	rt_triggers_init(&t, &p, auto_on, 1000000, 500);
	return t;
}

Test(triggers, interval_only_for_a_process_that_allocated)
{
	struct rt_triggers t = triggers(60000000, 0, 0, false);
	struct rt_trigger_reading r = {.now_us = 1000000 + 59000000, .bytes_requested = 900};
	cr_assert_eq(rt_triggers_due(&t, &r), RT_TRIGGER_NONE, "too soon");
	r.now_us = 1000000 + 60000000;
	cr_assert_eq(rt_triggers_due(&t, &r), RT_TRIGGER_INTERVAL);
	rt_triggers_acted(&t, RT_TRIGGER_INTERVAL, &r);
	r.now_us += 120000000;
	cr_assert_eq(rt_triggers_due(&t, &r), RT_TRIGGER_NONE, "idle: nothing allocated since");
	r.bytes_requested++;
	cr_assert_eq(rt_triggers_due(&t, &r), RT_TRIGGER_INTERVAL);
	/* A round's action restarts the interval. */
	rt_triggers_acted(&t, RT_TRIGGER_NONE, &r);
	r.bytes_requested++;
	r.now_us += 1000;
	cr_assert_eq(rt_triggers_due(&t, &r), RT_TRIGGER_NONE);
}

Test(triggers, pressure_crossing_and_repeat)
{
	struct rt_triggers t = triggers(0, 850, 0, false);
	struct rt_trigger_reading r = {.now_us = 2000000, .mem_used = 849, .mem_limit = 1000};
	cr_assert_eq(rt_triggers_due(&t, &r), RT_TRIGGER_NONE);
	r.mem_used = 850;
	cr_assert_eq(rt_triggers_due(&t, &r), RT_TRIGGER_PRESSURE);
	rt_triggers_acted(&t, RT_TRIGGER_PRESSURE, &r);
	r.now_us += 29000000;
	cr_assert_eq(rt_triggers_due(&t, &r), RT_TRIGGER_NONE, "rate-limited");
	r.now_us += 1000000;
	cr_assert_eq(rt_triggers_due(&t, &r), RT_TRIGGER_PRESSURE, "still high 30 s later");
	r.mem_limit = 0;
	cr_assert_eq(rt_triggers_due(&t, &r), RT_TRIGGER_NONE, "unknown limit");
	/* Bytes beyond 2^54 do not overflow the comparison. */
	r.mem_limit = UINT64_C(1) << 62;
	r.mem_used = (UINT64_C(1) << 62) - 1;
	cr_assert_eq(rt_triggers_due(&t, &r), RT_TRIGGER_PRESSURE);
}

Test(triggers, rss_limit)
{
	struct rt_triggers t = triggers(0, 0, 2048, false);
	struct rt_trigger_reading r = {.now_us = 2000000, .rss_kib = 2047};
	cr_assert_eq(rt_triggers_due(&t, &r), RT_TRIGGER_NONE);
	r.rss_kib = 4096;
	cr_assert_eq(rt_triggers_due(&t, &r), RT_TRIGGER_RSS_LIMIT);
	rt_triggers_acted(&t, RT_TRIGGER_RSS_LIMIT, &r);
	r.now_us += 1000;
	cr_assert_eq(rt_triggers_due(&t, &r), RT_TRIGGER_NONE);
	cr_assert_str_eq(rt_trigger_word(RT_TRIGGER_RSS_LIMIT), "rss-limit");
}

Test(triggers, detection_hands_over_to_announced_rounds)
{
	struct rt_triggers t = triggers(0, 0, 0, true);
	cr_assert(rt_triggers_detecting(&t));
	cr_assert_str_eq(rt_mode_word(t.mode), "auto");
	cr_assert_eq(rt_triggers_wait_us(&t, 0, 0), 50000);
	cr_assert_eq(rt_triggers_wait_us(&t, 1999999, 0), 50000, "idle, but not for long");
	cr_assert_eq(rt_triggers_wait_us(&t, 2000000, 0), 200000, "idle: readings slow down");
	rt_triggers_announced(&t);
	cr_assert_not(rt_triggers_detecting(&t));
	cr_assert_str_eq(rt_mode_word(t.mode), "announced");
	cr_assert_eq(rt_triggers_wait_us(&t, 0, 0), UINT64_MAX, "nothing periodic left");
	cr_assert_eq(rt_triggers_wait_us(&t, 5000000, 0), UINT64_MAX);
	struct rt_triggers off = triggers(0, 0, 0, false);
	cr_assert_str_eq(rt_mode_word(off.mode), "manual");
	cr_assert_not(rt_triggers_detecting(&off));
}

Test(triggers, wait_until_the_next_thing)
{
	struct rt_triggers t = triggers(10000000, 0, 0, false);
	cr_assert_eq(rt_triggers_wait_us(&t, 1000000, 1000000), 10000000);
	cr_assert_eq(rt_triggers_wait_us(&t, 8000000, 8000000), 3000000);
	cr_assert_eq(rt_triggers_wait_us(&t, 11000000, 11000000), 10000000,
	             "due but idle: a whole one");
	struct rt_triggers w = triggers(10000000, 900, 0, false);
	cr_assert_eq(rt_triggers_wait_us(&w, 1000000, 1000000), 1000000);
}

Test(triggers, quiet_moment)
{
	cr_assert(rt_triggers_quiet_go(10, 10, 0, 100000), "no event in the window");
	cr_assert_not(rt_triggers_quiet_go(10, 11, 2000, 100000));
	cr_assert(rt_triggers_quiet_go(10, 99, 100000, 100000), "bounded");
}

/* A round found by the library acts only once RSS has grown a MiB past where the last action
 * left it: NVFlare's client parent finds a round at each 10 s poll, and its RSS stays put. */
Test(triggers, a_detected_round_acts_only_when_rss_grew)
{
	struct rt_triggers t = triggers(0, 0, 0, true);
	cr_assert(rt_triggers_auto_worth(&t, 80000), "no action yet: the first goes");
	rt_triggers_left(&t, 75000);
	cr_assert_not(rt_triggers_auto_worth(&t, 75000));
	cr_assert_not(rt_triggers_auto_worth(&t, 75000 + 1023));
	cr_assert(rt_triggers_auto_worth(&t, 75000 + 1024));
	cr_assert(rt_triggers_auto_worth(&t, 0), "RSS unread: go");
	rt_triggers_left(&t, 70000);
	cr_assert(rt_triggers_auto_worth(&t, 75000), "measured from the last action");
}
