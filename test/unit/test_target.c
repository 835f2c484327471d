#include <criterion/criterion.h>
#include <string.h>

#include "rt_target.h"

Test(target, fifo_links_and_their_status_files)
{
	char status[64];
	cr_assert(rt_target_fifo_status("/run/user/1/roundtrim/42.fifo", status, sizeof(status)));
	cr_assert_str_eq(status, "/run/user/1/roundtrim/42.status");
	cr_assert(rt_target_fifo_status("/tmp/x/42.pipe", status, sizeof(status)));
	cr_assert_str_eq(status, "/tmp/x/42.pipe.status");
	cr_assert_not(rt_target_fifo_status("pipe:[123456]", status, sizeof(status)));
	cr_assert_not(rt_target_fifo_status("/tmp/x/42.fifo (deleted)", status, sizeof(status)));
	cr_assert_not(rt_target_fifo_status("/tmp/x/42.fifo", status, 8));
}

Test(target, status_of_the_process)
{
	struct rt_status_record st = {.pid = 42, .program = "python3"};
	cr_assert(rt_target_status_is_of(&st, 42));
	cr_assert_not(rt_target_status_is_of(&st, 43));
}

Test(target, match_is_fnmatch_on_the_program)
{
	struct rt_status_record st = {.pid = 42, .program = "python3.11"};
	cr_assert(rt_target_selected(&st, NULL));
	cr_assert(rt_target_selected(&st, "python*"));
	cr_assert(rt_target_selected(&st, "frag,python3.1?"));
	cr_assert(rt_target_selected(&st, "python3.[0-9][0-9]"));
	cr_assert_not(rt_target_selected(&st, "frag"));
	cr_assert_not(rt_target_selected(&st, "Python*"));
}

Test(target, answered_when_the_count_moved)
{
	struct rt_status_record before = {.rounds = 4, .actions = 2};
	struct rt_status_record same = before, counted = {.rounds = 5, .actions = 2},
	                        acted = {.rounds = 5, .actions = 3},
	                        trimmed = {.rounds = 4, .actions = 3};
	bool did;
	cr_assert_not(rt_target_answered(RT_PROTO_ROUND, &before, &same, &did));
	cr_assert_not(did);
	cr_assert(rt_target_answered(RT_PROTO_ROUND, &before, &counted, &did));
	cr_assert_not(did);
	cr_assert(rt_target_answered(RT_PROTO_ROUND, &before, &acted, &did));
	cr_assert(did);
	/* A trim counts no round: only its action answers. */
	cr_assert_not(rt_target_answered(RT_PROTO_TRIM, &before, &counted, &did));
	cr_assert(rt_target_answered(RT_PROTO_TRIM, &before, &trimmed, &did));
	cr_assert(did);
}

Test(target, worker_comm_is_the_library_thread_name_exactly)
{
	cr_assert(rt_target_is_worker_comm("roundtrim\n"));
	cr_assert(rt_target_is_worker_comm("roundtrim"));
	cr_assert_not(rt_target_is_worker_comm("roundtrim2\n"));
	cr_assert_not(rt_target_is_worker_comm("python3\n"));
	cr_assert_not(rt_target_is_worker_comm("round\n"));
}
