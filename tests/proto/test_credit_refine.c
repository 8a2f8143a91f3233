/*
 * tests/proto/test_credit_refine.c - the credit refined during a job
 * (proto/credit_refine.c), driven by a synthetic job whose iteration time
 * is a function of the credit in force: the climb finds the optimum,
 * keeps the credit in force where it wins, stays within its bounds, never
 * switches for less than the margin, and stops when the job ends.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "proto/credit_refine.h"

#define MIB ((uint64_t)1 << 20)

/* A job's iteration time (us) under a credit: 100 ms, plus 10 ms per
 * factor of two away from `best`. */
typedef struct job {
	uint64_t best;
	double noise; /* relative, alternating sign */
} job;

static double iteration_us(const job *j, uint64_t credit, uint64_t it)
{
	double d = j->best ? fabs(log2((double)credit / (double)j->best))
			   : 0.0; /* best 0: every credit alike */
	double sign = it % 2 ? 1.0 : -1.0;
	return (100.0 + 10.0 * d) * 1e3 * (1.0 + sign * j->noise);
}

typedef struct outcome {
	uint64_t kept;     /* the credit in force at the end */
	uint32_t changes;  /* CREDITs asked for */
	uint64_t tried[16];
	uint32_t ntried;
	int finished;
} outcome;

/* Runs a job of `iterations` from `credit`; the scheduler's part: each
 * change applies from the next iteration. */
static outcome run(const job *j, uint64_t credit, uint64_t partition,
		   uint64_t cap, uint64_t iterations)
{
	ps_refine r;
	outcome o = {.kept = credit};
	uint64_t in_force = credit, pending = 0, pending_from = 0;
	double t = 0.0;

	if (!ps_refine_init(&r, credit, partition, cap, iterations))
		return o;
	for (uint64_t it = 0; it < iterations; it++) {
		uint64_t c;
		int changed;
		ps_refine_action a;

		if (pending && it >= pending_from) {
			in_force = pending;
			pending = 0;
		}
		a = ps_refine_on_iteration(&r, it, t, &c, &changed);
		if (a != PS_REFINE_NOTHING && changed) {
			o.changes++;
			pending = c;
			pending_from = it + 1;
			if (a == PS_REFINE_APPLY) {
				o.tried[o.ntried++] = c;
				ps_refine_applied(&r, it + 1);
			}
		}
		if (a == PS_REFINE_FINISHED)
			o.finished = 1;
		t += iteration_us(j, in_force, it);
	}
	o.kept = pending ? pending : in_force;
	return o;
}

static void test_climbs_to_the_optimum(void **state)
{
	job j = {.best = 8 * MIB};
	outcome o;

	(void)state;
	/* from 2M: 4M wins, 1M loses, 8M wins, 16M loses: 8M kept */
	o = run(&j, 2 * MIB, 256 << 10, 1024 * MIB, 200);
	assert_true(o.finished);
	assert_int_equal(o.kept, 8 * MIB);
	assert_int_equal(o.ntried, 4);
	assert_int_equal(o.tried[0], 4 * MIB);
	assert_int_equal(o.tried[1], 1 * MIB);
	assert_int_equal(o.tried[2], 8 * MIB);
	assert_int_equal(o.tried[3], 16 * MIB);
	assert_int_equal(o.changes, 5); /* and back to 8M */

	/* downwards: from 2M to 512K */
	j.best = 512 << 10;
	o = run(&j, 2 * MIB, 64 << 10, 1024 * MIB, 200);
	assert_int_equal(o.kept, 512 << 10);
	assert_int_equal(o.tried[0], 4 * MIB);
	assert_int_equal(o.tried[1], 1 * MIB);
	assert_int_equal(o.tried[2], 512 << 10);
	assert_int_equal(o.tried[3], 256 << 10);
}

static void test_keeps_the_credit_that_wins(void **state)
{
	job j = {.best = 2 * MIB};
	outcome o;

	(void)state;
	o = run(&j, 2 * MIB, 256 << 10, 1024 * MIB, 200);
	assert_true(o.finished);
	assert_int_equal(o.kept, 2 * MIB);
	assert_int_equal(o.ntried, 2); /* twice and half: both lose */
	/* the last change puts it back */
	assert_int_equal(o.changes, 3);
}

static void test_noise_below_the_margin(void **state)
{
	/* every credit costs the same, +-1.5 % noise: none wins by 2 % */
	job j = {.best = 0, .noise = 0.015};
	outcome o;

	(void)state;
	o = run(&j, 2 * MIB, 256 << 10, 1024 * MIB, 200);
	assert_int_equal(o.kept, 2 * MIB);
	assert_int_equal(o.ntried, 2);
	/* no room at all (partition = cap = the credit): nothing tried */
	o = run(&j, 2 * MIB, 2 * MIB, 2 * MIB, 200);
	assert_int_equal(o.kept, 2 * MIB);
	assert_int_equal(o.ntried, 0);
}

static void test_bounds(void **state)
{
	job j = {.best = 64 * MIB};
	outcome o;

	(void)state;
	/* the partition is the floor: half is never tried */
	o = run(&j, 1 * MIB, 1 * MIB, 8 * MIB, 200);
	for (uint32_t i = 0; i < o.ntried; i++)
		assert_true(o.tried[i] >= 1 * MIB && o.tried[i] <= 8 * MIB);
	assert_int_equal(o.tried[0], 2 * MIB);
	/* the cap is the ceiling: 8M at most, and it is kept */
	assert_int_equal(o.kept, 8 * MIB);
}

static void test_short_jobs(void **state)
{
	ps_refine r;
	job j = {.best = 8 * MIB};
	outcome o;

	(void)state;
	/* too short for the first three trials: nothing at all */
	assert_int_equal(ps_refine_init(&r, 2 * MIB, 1, 1024 * MIB, 20), 0);
	o = run(&j, 2 * MIB, 1, 1024 * MIB, 20);
	assert_int_equal(o.changes, 0);
	/* no window: nothing to refine */
	assert_int_equal(ps_refine_init(&r, 0, 1, 1024 * MIB, 1000), 0);
	/* long enough to start, too short to finish the climb: the best
	 * so far is kept, and the job ends under it */
	o = run(&j, 2 * MIB, 1, 1024 * MIB, 30);
	assert_true(o.finished);
	assert_true(o.kept == 4 * MIB || o.kept == 8 * MIB);
}

static void test_describe(void **state)
{
	ps_refine r;
	uint64_t c;
	int changed;
	char line[256];
	double t = 0.0;

	(void)state;
	assert_int_equal(ps_refine_init(&r, 2 * MIB, 1, 1024 * MIB, 100), 1);
	for (uint64_t it = 0; it < 100; it++) {
		ps_refine_action a =
		    ps_refine_on_iteration(&r, it, t, &c, &changed);
		if (a == PS_REFINE_APPLY)
			ps_refine_applied(&r, it + 1);
		if (a == PS_REFINE_FINISHED)
			break;
		t += 50e3; /* every credit alike */
	}
	ps_refine_describe(&r, line, sizeof(line));
	assert_string_equal(line, "2M 50.0 ms, 4M 50.0 ms, 1M 50.0 ms; "
				  "kept 2M");
}

/* Iterations that are not consecutive (a PROGRESS lost, a floor that
 * jumped) are not measured. */
static void test_gaps_are_not_measured(void **state)
{
	ps_refine r;
	uint64_t c;
	int changed;

	(void)state;
	assert_int_equal(ps_refine_init(&r, 2 * MIB, 1, 1024 * MIB, 100), 1);
	for (uint64_t it = 0; it < 60; it += 2)
		assert_int_equal(ps_refine_on_iteration(&r, it, (double)it,
							&c, &changed),
				 PS_REFINE_NOTHING);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_climbs_to_the_optimum),
	    cmocka_unit_test(test_keeps_the_credit_that_wins),
	    cmocka_unit_test(test_noise_below_the_margin),
	    cmocka_unit_test(test_bounds),
	    cmocka_unit_test(test_short_jobs),
	    cmocka_unit_test(test_describe),
	    cmocka_unit_test(test_gaps_are_not_measured),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
