/*
 * tests/tune/test_tuner.c - what ps-tune reports for a pair measured more
 * than once: the mean of its trials (failed ones left out), not its first
 * sample.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/config.h"
#include "tune/tuner.h"

static tune_trial trial(tuner *t, uint32_t index, uint64_t part,
			uint64_t credit, int ok, double sps)
{
	tune_trial tr;

	memset(&tr, 0, sizeof(tr));
	tr.index = index;
	tr.pair = (tune_pair){part, credit};
	tuner_point_of(t, tr.pair, tr.x);
	tr.ok = ok;
	tr.samples_per_s = sps;
	tr.mean = tr.sd = tr.ei = NAN;
	return tr;
}

static void test_pair_mean(void **state)
{
	ps_config cfg;
	tuner *t;
	double mean, sd;

	(void)state;
	ps_config_defaults(&cfg);
	assert_int_equal(tuner_create(&cfg, NULL, NULL, &t), PS_OK);
	tune_trial a1 = trial(t, 1, 1 << 20, 4 << 20, 1, 360.0);
	tune_trial b = trial(t, 2, 4 << 20, 8 << 20, 1, 300.0);
	tune_trial a2 = trial(t, 3, 1 << 20, 4 << 20, 1, 396.0);
	tune_trial a3 = trial(t, 4, 1 << 20, 4 << 20, 0, 0.0); /* failed */
	assert_int_equal(tuner_record(t, &a1), PS_OK);
	assert_int_equal(tuner_record(t, &b), PS_OK);
	assert_int_equal(tuner_record(t, &a2), PS_OK);
	assert_int_equal(tuner_record(t, &a3), PS_OK);

	assert_int_equal(tuner_pair_measured(t, a1.pair, &mean, &sd), 2);
	assert_true(fabs(mean - 378.0) < 1e-9);
	assert_true(fabs(sd - sqrt(2 * 18.0 * 18.0)) < 1e-9); /* 25.46 */
	assert_int_equal(tuner_pair_measured(t, b.pair, &mean, &sd), 1);
	assert_true(mean == 300.0 && isnan(sd));
	tune_pair none = {2 << 20, 2 << 20};
	assert_int_equal(tuner_pair_measured(t, none, &mean, &sd), 0);
	assert_true(isnan(mean) && isnan(sd));
	tuner_free(&t);
}

/* A prior (ps-sim's, in ps-tune) whose peak is a corner of the square
 * (the largest partition, the credit at its floor), and measurements that
 * agree with it up to +-4% noise: the model keeps finding the corner
 * best, and without the rule re-measured one pair there four times; no
 * pair is proposed once it was measured twice. */
static double peak(const double *x, void *ud)
{
	(void)ud;
	return 400.0 - 300.0 * ((x[0] - 1.0) * (x[0] - 1.0) +
				(x[1] - 0.0) * (x[1] - 0.0));
}

static void test_confirmed_pairs_not_repeated(void **state)
{
	ps_config cfg;
	tuner *t;
	uint32_t seed = 3;

	(void)state;
	ps_config_defaults(&cfg);
	cfg.tune.trials = 8;
	assert_int_equal(tuner_create(&cfg, peak, NULL, &t), PS_OK);
	for (int k = 0; k < 8; k++) {
		tune_trial next;
		double mean, sd;
		assert_int_equal(tuner_propose(t, &next), PS_OK);
		uint32_t before = tuner_pair_measured(t, next.pair, &mean, &sd);
		assert_true(before < 2);
		seed = seed * 1103515245u + 12345u;
		next.ok = 1;
		next.samples_per_s = peak(next.x, NULL) +
				     (double)((seed >> 16) % 31) - 15.0;
		assert_int_equal(tuner_record(t, &next), PS_OK);
	}
	tuner_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pair_mean),
	    cmocka_unit_test(test_confirmed_pairs_not_repeated),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
