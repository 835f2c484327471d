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
	cr_assert_eq(rt_python_cuda_step(false, true, true, false), RT_PYTHON_CUDA_OFF);
	cr_assert_eq(rt_python_cuda_step(true, false, true, false), RT_PYTHON_CUDA_NO_TORCH);
	cr_assert_eq(rt_python_cuda_step(true, true, false, false), RT_PYTHON_CUDA_NOT_INITIALIZED);
	cr_assert_eq(rt_python_cuda_step(true, true, true, false), RT_PYTHON_CUDA_EMPTY);
	/* Inside a graph capture on the calling thread: left for the next round. */
	cr_assert_eq(rt_python_cuda_step(true, true, true, true), RT_PYTHON_CUDA_CAPTURING);
}

Test(python_rules, cuda_off_main_only_on_one_device_whose_context_exists)
{
	cr_assert(rt_python_cuda_off_main(true, 1, true));
	/* Another device is visible: the thread's device 0 may not be the program's. */
	cr_assert_not(rt_python_cuda_off_main(true, 2, true));
	/* No context yet: the thread's first call would create it. */
	cr_assert_not(rt_python_cuda_off_main(true, 1, false));
	cr_assert_not(rt_python_cuda_off_main(false, 1, true));
	/* The driver could not say. */
	cr_assert_not(rt_python_cuda_off_main(true, -1, true));
	cr_assert_not(rt_python_cuda_off_main(true, 0, true));
}

Test(python_rules, cuda_words)
{
	cr_assert_str_eq(rt_python_cuda_word(RT_PYTHON_CUDA_SKIPPED), "skipped");
	cr_assert_str_eq(rt_python_cuda_word(RT_PYTHON_CUDA_OFF), "off");
	cr_assert_str_eq(rt_python_cuda_word(RT_PYTHON_CUDA_NO_TORCH), "no-torch");
	cr_assert_str_eq(rt_python_cuda_word(RT_PYTHON_CUDA_NOT_INITIALIZED), "not-initialized");
	cr_assert_str_eq(rt_python_cuda_word(RT_PYTHON_CUDA_EMPTIED), "emptied");
	cr_assert_str_eq(rt_python_cuda_word(RT_PYTHON_CUDA_ERROR), "error");
	cr_assert_str_eq(rt_python_cuda_word(RT_PYTHON_CUDA_CAPTURING), "capturing");
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

#define Q RT_PYTHON_WORD_QUEUED

Test(python_word, a_request_runs_once_and_answers)
{
	uint32_t word = w(RT_PYTHON_IDLE), next = 0;
	cr_assert_eq(rt_python_ask(word, &next), RT_PYTHON_ASK_ADD);
	cr_assert_eq(next, w(RT_PYTHON_ARMED) | Q);
	cr_assert(rt_python_word_queued(next));
	word = next;
	cr_assert_eq(rt_python_called(word, GEN, &next), RT_PYTHON_CALL_RUN);
	cr_assert_eq(next, w(RT_PYTHON_RUNNING), "the call left the queue");
	word = next;
	cr_assert_not(rt_python_collect_answer(word, &next), "nothing to collect yet");
	cr_assert(rt_python_finish(word, GEN, &next));
	cr_assert_eq(next, w(RT_PYTHON_DONE));
	word = next;
	cr_assert(rt_python_collect_answer(word, &next));
	cr_assert_eq(next, w(RT_PYTHON_IDLE));
}

/* The main thread sits in a C call: the library's thread claims the request; the queued call,
 * when it runs at last, finds it taken and only leaves the queue. */
Test(python_word, the_thread_takes_a_request_the_main_thread_left)
{
	uint32_t word = w(RT_PYTHON_ARMED) | Q, next = 0;
	cr_assert(rt_python_claim(word, GEN, false, &next));
	cr_assert_eq(next, w(RT_PYTHON_RUNNING) | Q);
	word = next;
	cr_assert_not(rt_python_claim(word, GEN, false, &next), "claimed once");
	cr_assert(rt_python_finish(word, GEN, &next));
	cr_assert_eq(next, w(RT_PYTHON_DONE) | Q);
	word = next;
	cr_assert(rt_python_collect_answer(word, &next));
	cr_assert_eq(next, w(RT_PYTHON_IDLE) | Q, "the call is still queued");
	word = next;
	/* The next round arms without queueing a second call. */
	cr_assert_eq(rt_python_ask(word, &next), RT_PYTHON_ASK_ARM);
	cr_assert_eq(next, w(RT_PYTHON_ARMED) | Q);
	word = next;
	/* The call at last: it serves the new request. */
	cr_assert_eq(rt_python_called(word, GEN, &next), RT_PYTHON_CALL_RUN);
	cr_assert_eq(next, w(RT_PYTHON_RUNNING));
	/* Or it found the thread's request taken, running or done: it only leaves the queue. */
	const enum rt_python_state taken[] = {RT_PYTHON_IDLE, RT_PYTHON_RUNNING, RT_PYTHON_DONE};
	for (size_t i = 0; i < 3; i++) {
		cr_assert_eq(rt_python_called(w(taken[i]) | Q, GEN, &next), RT_PYTHON_CALL_TAKEN);
		cr_assert_eq(next, w(taken[i]));
	}
}

/* The CUDA step stays with the main thread: when the library's thread takes the steps with it
 * configured, the queued call still owes it, runs it alone, and owes nothing after; a call that
 * serves a new request runs the full steps, the owed one included. */
#define C RT_PYTHON_WORD_CUDA_OWED

Test(python_word, the_cuda_step_a_thread_left_is_the_queued_calls)
{
	uint32_t word = w(RT_PYTHON_ARMED) | Q, next = 0;
	cr_assert(rt_python_claim(word, GEN, true, &next));
	cr_assert_eq(next, w(RT_PYTHON_RUNNING) | Q | C);
	cr_assert_eq(rt_python_word_state(next), RT_PYTHON_RUNNING);
	cr_assert_eq(rt_python_word_generation(next), GEN);
	/* Whatever the thread's request has become meanwhile. */
	const enum rt_python_state taken[] = {RT_PYTHON_IDLE, RT_PYTHON_RUNNING, RT_PYTHON_DONE};
	for (size_t i = 0; i < 3; i++) {
		cr_assert_eq(rt_python_called(w(taken[i]) | Q | C, GEN, &next),
		             RT_PYTHON_CALL_CUDA);
		cr_assert_eq(next, w(taken[i]), "neither queued nor owing");
	}
	/* The thread finishes and the worker collects with the debt kept. */
	word = w(RT_PYTHON_RUNNING) | Q | C;
	cr_assert(rt_python_finish(word, GEN, &next));
	cr_assert_eq(next, w(RT_PYTHON_DONE) | Q | C);
	cr_assert(rt_python_collect_answer(next, &next));
	cr_assert_eq(next, w(RT_PYTHON_IDLE) | Q | C);
	/* A new round arms; the call then serves it whole, and owes nothing after. */
	cr_assert_eq(rt_python_ask(next, &next), RT_PYTHON_ASK_ARM);
	cr_assert_eq(rt_python_called(next, GEN, &next), RT_PYTHON_CALL_RUN);
	cr_assert_eq(next, w(RT_PYTHON_RUNNING));
	/* Not configured, or no call queued (Py_AddPendingCall refused it): nothing owed. */
	cr_assert(rt_python_claim(w(RT_PYTHON_ARMED) | Q, GEN, false, &next));
	cr_assert_eq(next, w(RT_PYTHON_RUNNING) | Q);
	cr_assert(rt_python_claim(w(RT_PYTHON_ARMED), GEN, true, &next));
	cr_assert_eq(next, w(RT_PYTHON_RUNNING));
	/* A fork child's call owes nothing to its parent's thread. */
	cr_assert_eq(rt_python_called(w(RT_PYTHON_IDLE) | Q | C, GEN + 1, &next),
	             RT_PYTHON_CALL_STALE);
}

/* An earlier request's debt, still on the word when the next request arms, is paid by a thread
 * that runs the CUDA step itself: the queued call must not empty the cache a second time. */
Test(python_word, a_thread_that_runs_the_cuda_step_itself_clears_an_earlier_debt)
{
	uint32_t next = 0;
	cr_assert(rt_python_claim(w(RT_PYTHON_ARMED) | Q | C, GEN, false, &next));
	cr_assert_eq(next, w(RT_PYTHON_RUNNING) | Q);
	cr_assert_eq(rt_python_called(w(RT_PYTHON_DONE) | Q, GEN, &next), RT_PYTHON_CALL_TAKEN);
	/* One that leaves it again owes it once. */
	cr_assert(rt_python_claim(w(RT_PYTHON_ARMED) | Q | C, GEN, true, &next));
	cr_assert_eq(next, w(RT_PYTHON_RUNNING) | Q | C);
}

/* The main thread came first: the thread, once it has the GIL, finds nothing to run. */
Test(python_word, the_thread_finds_a_request_the_main_thread_took)
{
	uint32_t next = 0xdeadbeef;
	cr_assert_not(rt_python_claim(w(RT_PYTHON_IDLE), GEN, false, &next));
	cr_assert_not(rt_python_claim(w(RT_PYTHON_RUNNING), GEN, false, &next));
	cr_assert_not(rt_python_claim(w(RT_PYTHON_DONE) | Q, GEN, false, &next));
	cr_assert_not(rt_python_claim(w(RT_PYTHON_ARMED), GEN + 1, false, &next),
	              "another generation");
	cr_assert_eq(next, 0xdeadbeef);
}

/* Rounds that come while the request waits join it, so one claim serves them all and no second
 * call is queued. */
Test(python_word, later_rounds_join_the_queued_call)
{
	uint32_t word = w(RT_PYTHON_ARMED) | Q, next = 0xdeadbeef;
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

/* Only the one that claimed a request finishes it. */
Test(python_word, only_a_running_request_finishes)
{
	uint32_t next = 0xdeadbeef;
	cr_assert_not(rt_python_finish(w(RT_PYTHON_ARMED), GEN, &next));
	cr_assert_not(rt_python_finish(w(RT_PYTHON_IDLE) | Q, GEN, &next));
	cr_assert_not(rt_python_finish(w(RT_PYTHON_DONE), GEN, &next));
	cr_assert_eq(next, 0xdeadbeef);
}

Test(python_word, a_refused_call_leaves_nothing_queued)
{
	cr_assert_eq(rt_python_add_failed(w(RT_PYTHON_ARMED) | Q), w(RT_PYTHON_IDLE));
}

/* The thread takes over only where it may, after the grace, once. */
Test(python_word, the_thread_takes_over_after_the_grace)
{
	cr_assert(rt_python_take_over(false, RT_PYTHON_ARMED, 50000, 50000, false, false));
	cr_assert_not(rt_python_take_over(false, RT_PYTHON_ARMED, 49999, 50000, false, false));
	cr_assert_not(rt_python_take_over(true, RT_PYTHON_ARMED, 900000, 50000, false, false),
	              "main");
	cr_assert_not(rt_python_take_over(false, RT_PYTHON_ARMED, 900000, 50000, true, false),
	              "one out");
	cr_assert_not(rt_python_take_over(false, RT_PYTHON_RUNNING, 900000, 50000, false, false));
	cr_assert_not(rt_python_take_over(false, RT_PYTHON_IDLE, 900000, 50000, false, false));
	cr_assert_not(rt_python_take_over(false, RT_PYTHON_DONE, 900000, 50000, false, false));
}

/* A request the thread left to the main thread (threading not imported yet) is not sent to it
 * again until the worker clears that at the next round. */
Test(python_word, a_declined_request_is_not_taken_over)
{
	cr_assert_not(rt_python_take_over(false, RT_PYTHON_ARMED, 900000, 50000, false, true));
}

/* A caller is known free of the GIL when CPython shows no current thread state, the library's
 * thread's, or a state other than at its first look; the same foreign state all along may be
 * its own. */
Test(python_word, the_gil_is_proven_free_only_by_what_a_holder_could_not_show)
{
	static int mine, ours, other;
	cr_assert(rt_python_gil_proven_free(NULL, &mine, &ours, &mine, false), "none current");
	cr_assert(rt_python_gil_proven_free(&ours, &ours, &ours, &mine, false),
	          "the library's thread holds it");
	cr_assert(rt_python_gil_proven_free(&other, &mine, &ours, &mine, false),
	          "the holder changed");
	cr_assert_not(rt_python_gil_proven_free(&mine, &mine, &ours, &mine, false),
	              "the same state all along");
	cr_assert_not(rt_python_gil_proven_free(&mine, &mine, NULL, &mine, false),
	              "no thread of ours");
}

/* Where CPython shows the holder's state (before 3.12) and the process has one interpreter,
 * another state than the caller's own is another thread's, even when it never changes (a
 * program thread that runs bytecode all along); not where the caller has no state of its own,
 * where the state shown is the caller's own, nor from 3.12 or with subinterpreters. */
Test(python_word, another_threads_state_proves_the_gil_free_in_one_interpreter)
{
	static int mine, ours, other;
	cr_assert(rt_python_gil_proven_free(&other, &other, &ours, &mine, true),
	          "another thread's state all along");
	cr_assert_not(rt_python_gil_proven_free(&mine, &mine, &ours, &mine, true),
	              "the caller's own state");
	cr_assert_not(rt_python_gil_proven_free(&other, &other, &ours, NULL, true),
	              "the caller has no state");
	cr_assert_not(rt_python_gil_proven_free(&other, &other, &ours, &mine, false),
	              "3.12+, or more than one interpreter");
}

/* The thread starts once the interpreter is up, from one queued call; before that the worker
 * looks often, for a while; never where it is not wanted, held back, or already there. */
Test(python_word, the_thread_starts_once_the_interpreter_is_up)
{
	struct rt_python_start_readings up = {.wanted = true, .initialized = true};
	cr_assert_eq(rt_python_start_due(&up), RT_PYTHON_START_QUEUE);
	struct rt_python_start_readings r = up;
	r.initialized = false;
	cr_assert_eq(rt_python_start_due(&r), RT_PYTHON_START_WATCH, "never initialized yet");
	r.watched_us = RT_PYTHON_START_WATCH_US - 1;
	cr_assert_eq(rt_python_start_due(&r), RT_PYTHON_START_WATCH);
	r.watched_us = RT_PYTHON_START_WATCH_US;
	cr_assert_eq(rt_python_start_due(&r), RT_PYTHON_START_NONE, "past the watch: each look");
	for (int i = 0; i < 4; i++) {
		r = up;
		r.runs = i == 0, r.queued = i == 1, r.held = i == 2, r.finalizing = i == 3;
		cr_assert_eq(rt_python_start_due(&r), RT_PYTHON_START_NONE, "case %d", i);
	}
	r = up;
	r.wanted = false;
	cr_assert_eq(rt_python_start_due(&r), RT_PYTHON_START_NONE, "ROUNDTRIM_PYTHON=main or off");
}

Test(python_word, a_fork_child_never_runs_its_parents_request)
{
	uint32_t parent = w(RT_PYTHON_ARMED) | Q, next = 0xdeadbeef;
	uint32_t child = rt_python_forget(parent);
	cr_assert_eq(child, rt_python_word(GEN + 1, RT_PYTHON_IDLE));
	/* The parent's call, copied into the child's queue, touches nothing. */
	cr_assert_eq(rt_python_called(child, GEN, &next), RT_PYTHON_CALL_STALE);
	cr_assert_eq(next, 0xdeadbeef);
	/* Nor when the child has armed a request of its own, which its own call serves. */
	cr_assert_eq(rt_python_ask(child, &next), RT_PYTHON_ASK_ADD);
	child = next;
	cr_assert_eq(rt_python_called(child, GEN, &next), RT_PYTHON_CALL_STALE);
	cr_assert_not(rt_python_claim(child, GEN, false, &next));
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
	uint32_t word = rt_python_word(RT_PYTHON_GENERATION_MASK, RT_PYTHON_ARMED) | Q;
	uint32_t child = rt_python_forget(word), next;
	cr_assert_eq(child, 0u);
	cr_assert_eq(rt_python_called(child, RT_PYTHON_GENERATION_MASK, &next),
	             RT_PYTHON_CALL_STALE);
}

/* The thread that served an interpreter goes once a new one is up, never as Python goes down
 * (its thread-local destructors would run beside exit's static ones), nor before the first
 * interpreter is up. */
Test(python_word, the_last_interpreters_thread_goes_once_a_new_one_is_up)
{
	struct rt_python_watch w = {0};
	cr_assert_eq(rt_python_watch(&w, false), RT_PYTHON_SEEN_DOWN, "not up yet");
	cr_assert_eq(rt_python_watch(&w, true), RT_PYTHON_SEEN_UP, "the first interpreter");
	cr_assert_eq(rt_python_watch(&w, true), RT_PYTHON_SEEN_UP);
	cr_assert_eq(rt_python_watch(&w, false), RT_PYTHON_SEEN_DOWN, "down: nothing goes");
	cr_assert_eq(rt_python_watch(&w, false), RT_PYTHON_SEEN_DOWN);
	cr_assert_eq(rt_python_watch(&w, true), RT_PYTHON_SEEN_NEW, "a new interpreter");
	cr_assert_eq(rt_python_watch(&w, true), RT_PYTHON_SEEN_UP, "once");
}
