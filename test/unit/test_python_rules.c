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
	/* From the worker, the steps go to the main thread. */
	cr_assert_str_eq(rt_python_plan_word(RT_PYTHON_RUN), "pending");
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

Test(python_rules, end_words)
{
	cr_assert_str_eq(rt_python_end_word(RT_PYTHON_END_DONE), "collected");
	cr_assert_str_eq(rt_python_end_word(RT_PYTHON_END_PENDING), "pending");
	cr_assert_str_eq(rt_python_end_word(RT_PYTHON_END_BUSY), "skipped-busy");
	cr_assert_str_eq(rt_python_end_word(RT_PYTHON_END_FINALIZING), "finalizing");
	cr_assert_str_eq(rt_python_end_word(RT_PYTHON_END_GC_DISABLED), "skipped-gc-disabled");
	cr_assert_str_eq(rt_python_end_word(RT_PYTHON_END_QUEUE_FULL), "skipped-queue-full");
	/* The run plan of the worker is a hand-off, and finalising reads the same either way. */
	cr_assert_str_eq(rt_python_end_word(RT_PYTHON_END_PENDING),
	                 rt_python_plan_word(RT_PYTHON_RUN));
	cr_assert_str_eq(rt_python_end_word(RT_PYTHON_END_FINALIZING),
	                 rt_python_plan_word(RT_PYTHON_FINALIZING));
}

/* The program's own gc.collect(): a full collection whether or not the collector is enabled. */
Test(python_rules, gc_step_collects_as_the_programs_gc_collect_would)
{
	/* The program imported gc (it must have, to call gc.disable()): its collect() runs. */
	cr_assert_eq(rt_python_gc_step(false, true, true), RT_PYTHON_GC_MODULE);
	cr_assert_eq(rt_python_gc_step(false, true, false), RT_PYTHON_GC_MODULE);
	/* Never imported: the C call, which collects while the collector is enabled... */
	cr_assert_eq(rt_python_gc_step(false, false, true), RT_PYTHON_GC_C);
	/* ...and nothing where C code disabled it: collecting would need an import. */
	cr_assert_eq(rt_python_gc_step(false, false, false), RT_PYTHON_GC_DISABLED);
	/* Finalisation first: the dying interpreter is left alone whatever the rest. */
	for (int i = 0; i < 4; i++)
		cr_assert_eq(rt_python_gc_step(true, i & 1, i & 2), RT_PYTHON_GC_FINALIZING);
}

Test(python_rules, gc_step_ends)
{
	cr_assert_eq(rt_python_gc_end(RT_PYTHON_GC_MODULE), RT_PYTHON_END_DONE);
	cr_assert_eq(rt_python_gc_end(RT_PYTHON_GC_C), RT_PYTHON_END_DONE);
	cr_assert_eq(rt_python_gc_end(RT_PYTHON_GC_DISABLED), RT_PYTHON_END_GC_DISABLED);
	cr_assert_eq(rt_python_gc_end(RT_PYTHON_GC_FINALIZING), RT_PYTHON_END_FINALIZING);
}

Test(python_rules, cuda_runs_unless_finalizing)
{
	cr_assert(rt_python_cuda_runs(RT_PYTHON_GC_MODULE));
	cr_assert(rt_python_cuda_runs(RT_PYTHON_GC_C));
	cr_assert(rt_python_cuda_runs(RT_PYTHON_GC_DISABLED));
	cr_assert_not(rt_python_cuda_runs(RT_PYTHON_GC_FINALIZING));
}

Test(python_rules, a_release_follows_steps_that_freed_something)
{
	cr_assert(rt_python_freed(1, RT_PYTHON_CUDA_OFF));
	cr_assert(rt_python_freed(0, RT_PYTHON_CUDA_EMPTIED));
	cr_assert_not(rt_python_freed(0, RT_PYTHON_CUDA_OFF));
	cr_assert_not(rt_python_freed(-1, RT_PYTHON_CUDA_NOT_INITIALIZED));
	cr_assert_not(rt_python_freed(0, RT_PYTHON_CUDA_ERROR));
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
w(enum rt_python_state state)
{
	return rt_python_word(GEN, state);
}

Test(python_word, fields_round_trip)
{
	uint32_t word = rt_python_word(12345, RT_PYTHON_RUNNING);
	cr_assert_eq(rt_python_word_generation(word), 12345u);
	cr_assert_eq(rt_python_word_state(word), RT_PYTHON_RUNNING);
	word = rt_python_word(RT_PYTHON_GENERATION_MASK, RT_PYTHON_DONE);
	cr_assert_eq(rt_python_word_generation(word), RT_PYTHON_GENERATION_MASK);
	cr_assert_eq(rt_python_word_state(word), RT_PYTHON_DONE);
	/* The zero word, a process's first, is generation 0, idle. */
	cr_assert_eq(rt_python_word(0, RT_PYTHON_IDLE), 0u);
}

Test(python_word, a_request_runs_once_and_answers)
{
	uint32_t word = w(RT_PYTHON_IDLE), next = 0;
	cr_assert_eq(rt_python_ask(word, &next), RT_PYTHON_ASK_ADD);
	cr_assert_eq(next, w(RT_PYTHON_ARMED));
	word = next;
	cr_assert_eq(rt_python_called(word, GEN, &next), RT_PYTHON_CALL_RUN);
	cr_assert_eq(next, w(RT_PYTHON_RUNNING));
	word = next;
	cr_assert_not(rt_python_collect_answer(word, &next), "nothing to collect yet");
	cr_assert(rt_python_finish(word, GEN, &next));
	cr_assert_eq(next, w(RT_PYTHON_DONE));
	word = next;
	cr_assert(rt_python_collect_answer(word, &next));
	cr_assert_eq(next, w(RT_PYTHON_IDLE));
}

/* No deadline: rounds that come while the main thread has not taken the call join it, so one
 * call serves them all and no second call is queued. */
Test(python_word, later_rounds_join_the_queued_call)
{
	uint32_t word = w(RT_PYTHON_ARMED), next = 0xdeadbeef;
	for (int i = 0; i < 3; i++)
		cr_assert_eq(rt_python_ask(word, &next), RT_PYTHON_ASK_JOIN);
	cr_assert_eq(next, 0xdeadbeef, "joining leaves the word as it is");
	cr_assert_eq(rt_python_called(word, GEN, &next), RT_PYTHON_CALL_RUN);
}

Test(python_word, rounds_while_the_steps_run_are_served_by_them)
{
	uint32_t next = 0xdeadbeef;
	cr_assert_eq(rt_python_ask(w(RT_PYTHON_RUNNING), &next), RT_PYTHON_ASK_BUSY);
	cr_assert_eq(rt_python_ask(w(RT_PYTHON_DONE), &next), RT_PYTHON_ASK_BUSY);
	cr_assert_eq(next, 0xdeadbeef);
}

/* A call of this generation that finds the word not armed is not ours to run (none can exist:
 * a call is added only on IDLE -> ARMED). */
Test(python_word, a_call_runs_only_an_armed_request)
{
	uint32_t next = 0xdeadbeef;
	cr_assert_eq(rt_python_called(w(RT_PYTHON_IDLE), GEN, &next), RT_PYTHON_CALL_STALE);
	cr_assert_eq(rt_python_called(w(RT_PYTHON_RUNNING), GEN, &next), RT_PYTHON_CALL_STALE);
	cr_assert_eq(rt_python_called(w(RT_PYTHON_DONE), GEN, &next), RT_PYTHON_CALL_STALE);
	cr_assert_eq(next, 0xdeadbeef);
	cr_assert_not(rt_python_finish(w(RT_PYTHON_ARMED), GEN, &next));
}

Test(python_word, a_refused_call_leaves_nothing_queued)
{
	cr_assert_eq(rt_python_add_failed(w(RT_PYTHON_ARMED)), w(RT_PYTHON_IDLE));
}

Test(python_word, a_fork_child_never_runs_its_parents_request)
{
	uint32_t parent = w(RT_PYTHON_ARMED), next = 0xdeadbeef;
	uint32_t child = rt_python_forget(parent);
	cr_assert_eq(child, rt_python_word(GEN + 1, RT_PYTHON_IDLE));
	/* The parent's call, copied into the child's queue, touches nothing. */
	cr_assert_eq(rt_python_called(child, GEN, &next), RT_PYTHON_CALL_STALE);
	cr_assert_eq(next, 0xdeadbeef);
	/* Nor when the child has armed a request of its own, which its own call serves. */
	cr_assert_eq(rt_python_ask(child, &next), RT_PYTHON_ASK_ADD);
	child = next;
	cr_assert_eq(rt_python_called(child, GEN, &next), RT_PYTHON_CALL_STALE);
	cr_assert_eq(rt_python_called(child, GEN + 1, &next), RT_PYTHON_CALL_RUN);
	/* Steps the parent's call was running when a finalizer forked end without an answer. */
	child = rt_python_word(GEN + 1, RT_PYTHON_RUNNING);
	cr_assert_not(rt_python_finish(child, GEN, &next));
	/* A grandchild: neither ancestor's call is its own. */
	uint32_t grandchild = rt_python_forget(child);
	cr_assert_eq(rt_python_called(grandchild, GEN, &next), RT_PYTHON_CALL_STALE);
	cr_assert_eq(rt_python_called(grandchild, GEN + 1, &next), RT_PYTHON_CALL_STALE);
}

Test(python_word, the_generation_wraps_within_its_bits)
{
	uint32_t word = rt_python_word(RT_PYTHON_GENERATION_MASK, RT_PYTHON_ARMED);
	uint32_t child = rt_python_forget(word), next;
	cr_assert_eq(child, 0u);
	cr_assert_eq(rt_python_called(child, RT_PYTHON_GENERATION_MASK, &next),
	             RT_PYTHON_CALL_STALE);
}
