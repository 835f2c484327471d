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
	r.thread_gone = true;
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

Test(python_rules, gone_thread_is_not_waited_for)
{
	struct rt_python_readings r = live();
	r.thread_gone = true;
	r.busy = true;
	cr_assert_eq(rt_python_plan(&r), RT_PYTHON_THREAD_GONE);
	cr_assert_str_eq(rt_python_plan_word(RT_PYTHON_THREAD_GONE), "thread-gone");
}

Test(python_rules, busy_skips_at_once)
{
	struct rt_python_readings r = live();
	r.busy = true;
	cr_assert_eq(rt_python_plan(&r), RT_PYTHON_BUSY);
	cr_assert_str_eq(rt_python_plan_word(RT_PYTHON_BUSY), "skipped-busy");
}

Test(python_rules, end_words)
{
	cr_assert_str_eq(rt_python_end_word(RT_PYTHON_END_DONE), "collected");
	cr_assert_str_eq(rt_python_end_word(RT_PYTHON_END_GIL_BUSY), "skipped-gil-busy");
	cr_assert_str_eq(rt_python_end_word(RT_PYTHON_END_UNFINISHED), "unfinished");
	cr_assert_str_eq(rt_python_end_word(RT_PYTHON_END_FINALIZING), "finalizing");
	cr_assert_str_eq(rt_python_end_word(RT_PYTHON_END_THREAD_GONE), "thread-gone");
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
