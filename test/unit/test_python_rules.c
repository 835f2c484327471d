#include <criterion/criterion.h>
#include <string.h>

#include "rt_python_rules.h"

static struct rt_python_readings
live(void)
{
	return (struct rt_python_readings){.enabled = true, .found = true, .initialized = true};
}

Test(python_rules, runs_in_a_live_interpreter)
{
	struct rt_python_readings r = live();
	cr_assert_eq(rt_python_plan(&r), RT_PYTHON_RUN);
	cr_assert_str_eq(rt_python_plan_word(RT_PYTHON_RUN), "collected");
}

Test(python_rules, not_python_reports_nothing)
{
	struct rt_python_readings r = {0};
	cr_assert_eq(rt_python_plan(&r), RT_PYTHON_NOT_PYTHON);
	r = live();
	r.found = false;
	r.finalizing = true;
	cr_assert_eq(rt_python_plan(&r), RT_PYTHON_NOT_PYTHON);
	cr_assert_null(rt_python_plan_word(RT_PYTHON_NOT_PYTHON));
}

Test(python_rules, off_wins_over_every_reading)
{
	struct rt_python_readings r = live();
	r.enabled = false;
	r.finalizing = true;
	r.busy = true;
	cr_assert_eq(rt_python_plan(&r), RT_PYTHON_OFF);
	cr_assert_str_eq(rt_python_plan_word(RT_PYTHON_OFF), "off");
}

Test(python_rules, finalizing_before_initialized)
{
	/* Py_IsInitialized() is already false during finalisation: it must read "finalizing". */
	struct rt_python_readings r = live();
	r.finalizing = true;
	r.initialized = false;
	cr_assert_eq(rt_python_plan(&r), RT_PYTHON_FINALIZING);
	r.initialized = true;
	r.busy = true;
	cr_assert_eq(rt_python_plan(&r), RT_PYTHON_FINALIZING);
	cr_assert_str_eq(rt_python_plan_word(RT_PYTHON_FINALIZING), "finalizing");
}

Test(python_rules, not_initialized)
{
	struct rt_python_readings r = live();
	r.initialized = false;
	cr_assert_eq(rt_python_plan(&r), RT_PYTHON_NOT_INITIALIZED);
	cr_assert_str_eq(rt_python_plan_word(RT_PYTHON_NOT_INITIALIZED), "not-initialized");
}

Test(python_rules, busy_skips_at_once)
{
	struct rt_python_readings r = live();
	r.busy = true;
	cr_assert_eq(rt_python_plan(&r), RT_PYTHON_BUSY);
	cr_assert_str_eq(rt_python_plan_word(RT_PYTHON_BUSY), "skipped-busy");
}

Test(python_rules, busy_loses_to_finalizing_and_not_initialized)
{
	struct rt_python_readings r = live();
	r.busy = true;
	r.initialized = false;
	cr_assert_eq(rt_python_plan(&r), RT_PYTHON_NOT_INITIALIZED);
}

Test(python_rules, end_words)
{
	cr_assert_str_eq(rt_python_end_word(RT_PYTHON_END_DONE), "collected");
	cr_assert_str_eq(rt_python_end_word(RT_PYTHON_END_MAIN_BUSY), "skipped-main-busy");
	cr_assert_str_eq(rt_python_end_word(RT_PYTHON_END_UNFINISHED), "unfinished");
	cr_assert_str_eq(rt_python_end_word(RT_PYTHON_END_FINALIZING), "finalizing");
	cr_assert_str_eq(rt_python_end_word(RT_PYTHON_END_GC_DISABLED), "skipped-gc-disabled");
	cr_assert_str_eq(rt_python_end_word(RT_PYTHON_END_QUEUE_FULL), "skipped-queue-full");
	/* The run plan and a finished run report the same word. */
	cr_assert_str_eq(rt_python_end_word(RT_PYTHON_END_DONE),
	                 rt_python_plan_word(RT_PYTHON_RUN));
}

Test(python_rules, gc_step)
{
	cr_assert_eq(rt_python_gc_step(false, true), RT_PYTHON_END_DONE);
	/* The program's gc.disable() stands. */
	cr_assert_eq(rt_python_gc_step(false, false), RT_PYTHON_END_GC_DISABLED);
	/* Finalisation first: the dying interpreter is left alone whatever the setting. */
	cr_assert_eq(rt_python_gc_step(true, true), RT_PYTHON_END_FINALIZING);
	cr_assert_eq(rt_python_gc_step(true, false), RT_PYTHON_END_FINALIZING);
}

Test(python_rules, cuda_runs_unless_finalizing)
{
	cr_assert(rt_python_cuda_runs(RT_PYTHON_END_DONE));
	cr_assert(rt_python_cuda_runs(RT_PYTHON_END_GC_DISABLED));
	cr_assert_not(rt_python_cuda_runs(RT_PYTHON_END_FINALIZING));
	cr_assert_not(rt_python_cuda_runs(RT_PYTHON_END_MAIN_BUSY));
}

Test(python_rules, cuda_step)
{
	/* Off: nothing about torch is even looked at. */
	cr_assert_eq(rt_python_cuda_step(false, true, true), RT_PYTHON_CUDA_OFF);
	cr_assert_eq(rt_python_cuda_step(true, false, true), RT_PYTHON_CUDA_NO_TORCH);
	cr_assert_eq(rt_python_cuda_step(true, true, false), RT_PYTHON_CUDA_NOT_INITIALIZED);
	cr_assert_eq(rt_python_cuda_step(true, true, true), RT_PYTHON_CUDA_EMPTY);
}

Test(python_rules, cuda_words)
{
	cr_assert_str_eq(rt_python_cuda_word(RT_PYTHON_CUDA_SKIPPED), "skipped");
	cr_assert_str_eq(rt_python_cuda_word(RT_PYTHON_CUDA_OFF), "off");
	cr_assert_str_eq(rt_python_cuda_word(RT_PYTHON_CUDA_NO_TORCH), "no-torch");
	cr_assert_str_eq(rt_python_cuda_word(RT_PYTHON_CUDA_NOT_INITIALIZED), "not-initialized");
	cr_assert_str_eq(rt_python_cuda_word(RT_PYTHON_CUDA_EMPTIED), "emptied");
	cr_assert_str_eq(rt_python_cuda_word(RT_PYTHON_CUDA_ERROR), "error");
	/* A step is never a reported outcome. */
	cr_assert_str_eq(rt_python_cuda_word(RT_PYTHON_CUDA_EMPTY), "error");
}

/* --- The hand-off word. */

#define GEN 7u

static uint32_t
w(bool queued, enum rt_python_state state)
{
	return rt_python_word(GEN, queued, state);
}

Test(python_word, fields_round_trip)
{
	uint32_t word = rt_python_word(12345, true, RT_PYTHON_RUNNING);
	cr_assert_eq(rt_python_word_generation(word), 12345u);
	cr_assert(rt_python_word_queued(word));
	cr_assert_eq(rt_python_word_state(word), RT_PYTHON_RUNNING);
	word = rt_python_word(RT_PYTHON_GENERATION_MASK, false, RT_PYTHON_DONE);
	cr_assert_eq(rt_python_word_generation(word), RT_PYTHON_GENERATION_MASK);
	cr_assert_not(rt_python_word_queued(word));
	cr_assert_eq(rt_python_word_state(word), RT_PYTHON_DONE);
	/* The zero word, a process's first, is generation 0, idle, nothing queued. */
	cr_assert_eq(rt_python_word(0, false, RT_PYTHON_IDLE), 0u);
}

Test(python_word, a_request_runs_once_and_answers)
{
	uint32_t word = w(false, RT_PYTHON_IDLE), next;
	bool add;
	cr_assert(rt_python_arm(word, &next, &add));
	cr_assert(add, "nothing queued: a call must be added");
	cr_assert_eq(next, w(true, RT_PYTHON_ARMED));
	word = next;
	/* A second request while one is armed or running is refused. */
	cr_assert_not(rt_python_arm(word, &next, &add));
	cr_assert_eq(rt_python_called(word, GEN, &next), RT_PYTHON_CALL_RUN);
	cr_assert_eq(next, w(false, RT_PYTHON_RUNNING), "the call left the queue");
	word = next;
	cr_assert_not(rt_python_arm(word, &next, &add));
	cr_assert_not(rt_python_withdraw(word, &next), "a running request cannot be withdrawn");
	cr_assert(rt_python_finish(word, GEN, &next));
	cr_assert_eq(next, w(false, RT_PYTHON_DONE));
	word = next;
	cr_assert(rt_python_collect_answer(word, &next));
	cr_assert_eq(next, w(false, RT_PYTHON_IDLE));
}

Test(python_word, a_withdrawn_request_runs_as_nothing)
{
	uint32_t word = w(true, RT_PYTHON_ARMED), next;
	cr_assert(rt_python_withdraw(word, &next));
	cr_assert_eq(next, w(true, RT_PYTHON_IDLE), "the call is still in CPython's queue");
	word = next;
	cr_assert_eq(rt_python_called(word, GEN, &next), RT_PYTHON_CALL_WITHDRAWN);
	cr_assert_eq(next, w(false, RT_PYTHON_IDLE));
	cr_assert_not(rt_python_finish(next, GEN, &next));
}

Test(python_word, a_later_round_rearms_the_queued_call)
{
	uint32_t word = w(true, RT_PYTHON_IDLE), next;
	bool add = true;
	cr_assert(rt_python_arm(word, &next, &add));
	cr_assert_not(add, "a second call of ours would sit in CPython's queue");
	cr_assert_eq(next, w(true, RT_PYTHON_ARMED));
	/* The queued call then serves it. */
	cr_assert_eq(rt_python_called(next, GEN, &next), RT_PYTHON_CALL_RUN);
}

Test(python_word, an_unread_answer_is_replaced)
{
	/* The worker stopped waiting (unfinished); the steps ended later. */
	uint32_t word = w(false, RT_PYTHON_DONE), next;
	bool add;
	cr_assert(rt_python_arm(word, &next, &add));
	cr_assert(add);
	cr_assert_eq(next, w(true, RT_PYTHON_ARMED));
}

Test(python_word, a_refused_call_leaves_nothing_queued)
{
	cr_assert_eq(rt_python_add_failed(w(true, RT_PYTHON_ARMED)), w(false, RT_PYTHON_IDLE));
}

Test(python_word, a_fork_child_never_runs_its_parents_request)
{
	uint32_t parent = w(true, RT_PYTHON_ARMED), next = 0xdeadbeef;
	uint32_t child = rt_python_forget(parent);
	cr_assert_eq(child, rt_python_word(GEN + 1, false, RT_PYTHON_IDLE));
	/* The parent's call, copied into the child's queue, touches nothing. */
	cr_assert_eq(rt_python_called(child, GEN, &next), RT_PYTHON_CALL_STALE);
	cr_assert_eq(next, 0xdeadbeef);
	/* Nor when the child has armed a request of its own, which its own call serves. */
	bool add;
	cr_assert(rt_python_arm(child, &next, &add));
	cr_assert(add);
	child = next;
	cr_assert_eq(rt_python_called(child, GEN, &next), RT_PYTHON_CALL_STALE);
	cr_assert_eq(rt_python_called(child, GEN + 1, &next), RT_PYTHON_CALL_RUN);
	/* Steps the parent's call was running when a finalizer forked end without an answer. */
	child = rt_python_word(GEN + 1, false, RT_PYTHON_RUNNING);
	cr_assert_not(rt_python_finish(child, GEN, &next));
	/* A grandchild: neither ancestor's call is its own. */
	uint32_t grandchild = rt_python_forget(child);
	cr_assert_eq(rt_python_called(grandchild, GEN, &next), RT_PYTHON_CALL_STALE);
	cr_assert_eq(rt_python_called(grandchild, GEN + 1, &next), RT_PYTHON_CALL_STALE);
}

Test(python_word, the_generation_wraps_within_its_bits)
{
	uint32_t word = rt_python_word(RT_PYTHON_GENERATION_MASK, true, RT_PYTHON_ARMED);
	uint32_t child = rt_python_forget(word), next;
	cr_assert_eq(child, 0u);
	cr_assert_eq(rt_python_called(child, RT_PYTHON_GENERATION_MASK, &next),
	             RT_PYTHON_CALL_STALE);
}
