/*
 * tests/client/test_timings.c - client/timings.h: the worker's
 * measurement of its first iterations, fed events at chosen clock times:
 * the compute clock leaves out time inside ordo's calls, anchors are an
 * iteration's first event, the result is per tensor the median over the
 * iterations, and the anchor of the iteration after the last completes
 * it, once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "client/timings.h"

/* Iteration i (0-based) as the none flow runs it: waits for tensors 0,1
 * at its start (the previous step's averages), then pushes 1 at +40 and 0
 * at +70 (+ i: the medians pick iteration 1's), the iteration 100 long. */
static void run(ps_timing_rec *r, uint64_t it, double base, double skew,
		int *completed)
{
	*completed += ps_timing_rec_event(r, PS_TIMING_NEED, 0, it, base);
	*completed += ps_timing_rec_event(r, PS_TIMING_NEED, 1, it, base + 2);
	*completed += ps_timing_rec_event(r, PS_TIMING_PUSH, 1, it,
					  base + 40 + skew);
	*completed += ps_timing_rec_event(r, PS_TIMING_PUSH, 0, it,
					  base + 70 + skew);
}

static void test_medians(void **state)
{
	(void)state;
	ps_timing_rec r;
	ps_timings t;
	int done = 0;

	assert_int_equal(ps_timing_rec_init(&r, 3, 1, 3), PS_OK);
	double o = r.origin_us;
	run(&r, 0, o + 10, 0, &done); /* before the first measured: ignored */
	run(&r, 1, o + 100, 5, &done);
	run(&r, 2, o + 200, 1, &done);
	run(&r, 3, o + 300, 3, &done);
	assert_int_equal(done, 0);
	/* iteration 4's first event completes it */
	assert_int_equal(ps_timing_rec_event(&r, PS_TIMING_NEED, 0, 4,
					     o + 400),
			 1);
	assert_int_equal(ps_timing_rec_event(&r, PS_TIMING_NEED, 1, 4,
					     o + 402),
			 0);
	assert_int_equal(ps_timings_init(&t, 3), PS_OK);
	ps_timing_rec_result(&r, &t);
	assert_int_equal(t.iterations, 3);
	assert_true(t.length_us == 100.0);
	assert_true(t.need_us[0] == 0.0f && t.need_us[1] == 2.0f);
	assert_true(t.push_us[1] == 43.0f && t.push_us[0] == 73.0f);
	/* tensor 2: neither waited for nor pushed */
	assert_true(t.need_us[2] == -1.0f && t.push_us[2] == -1.0f);
	assert_int_equal(ps_timings_check(&t, (char[64]){0}, 64), PS_OK);
	ps_timings_free(&t);
	ps_timing_rec_free(&r);
}

/* Time inside ordo's calls is not compute: an iteration that blocked 50
 * us in a wait is as long as one that did not. */
static void test_blocked(void **state)
{
	(void)state;
	ps_timing_rec r;
	ps_timings t;

	assert_int_equal(ps_timing_rec_init(&r, 1, 0, 1), PS_OK);
	double o = r.origin_us;
	ps_timing_rec_event(&r, PS_TIMING_BEGIN, 0, 0, o + 0);
	/* blocked from o to the clock's now: everything so far */
	ps_timing_rec_blocked(&r, o);
	double b = r.blocked_us;
	assert_true(b > 0);
	/* events after it sit b earlier on the compute clock */
	ps_timing_rec_event(&r, PS_TIMING_PUSH, 0, 0, o + b + 30);
	assert_int_equal(ps_timing_rec_event(&r, PS_TIMING_BEGIN, 0, 1,
					     o + b + 60),
			 1);
	assert_int_equal(ps_timings_init(&t, 1), PS_OK);
	ps_timing_rec_result(&r, &t);
	assert_true(t.length_us > 59.99 && t.length_us < 60.01);
	assert_true(t.push_us[0] > 29.99f && t.push_us[0] < 30.01f);
	ps_timings_free(&t);
	ps_timing_rec_free(&r);
	/* a freed (or never started) recorder takes nothing */
	assert_int_equal(ps_timing_rec_event(&r, PS_TIMING_BEGIN, 0, 1, 0), 0);
	ps_timing_rec_blocked(&r, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_medians),
	    cmocka_unit_test(test_blocked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
