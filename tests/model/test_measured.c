/*
 * tests/model/test_measured.c - model/measured.h: the model file built
 * from measured timings loads (ps_dag_from_json) and is the chain the
 * timings describe; the workers' mean; the checks a worker's numbers
 * must pass.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "model/dag.h"
#include "model/measured.h"

static const char *const names[] = {"a.weight", "a.bias", "b.weight",
				    "c.weight"};
static const uint64_t numel[] = {1000, 10, 5000, 200};

static ps_dag *build(const ps_timings *t)
{
	char why[512];
	ps_dag *d = NULL;
	json_t *m = ps_measured_model(t, names, numel, 32);

	assert_non_null(m);
	int rc = ps_dag_from_json(m, "measured", 1.0, &d, why, sizeof(why));
	if (rc != PS_OK)
		fail_msg("the measured model does not load: %s", why);
	json_decref(m);
	return d;
}

static void set(ps_timings *t, const float *need, const float *push,
		double length)
{
	for (uint32_t i = 0; i < t->ntensors; i++) {
		t->need_us[i] = need[i];
		t->push_us[i] = push[i];
	}
	t->length_us = length;
	t->iterations = 3;
	t->workers = 1;
}

/* The op producing tensor i's gradient, its time, and its readers'. */
static const ps_dag_op *grad_op(const ps_dag *d, uint32_t i)
{
	return &d->ops[d->tensors[i].grad_op];
}

/* Needs at 10 (a.*), 30 (b), 60 (c) after 5 us of compute needing
 * nothing; pushes c at 100, b at 150, a.* at 190 and 191; the iteration
 * 250: a chain of forward ops in need order, backward ops in push order,
 * each lasting until the next event, and a tail. */
static void test_chain(void **state)
{
	(void)state;
	ps_timings t;
	const float need[] = {10, 10, 30, 60}, push[] = {190, 191, 150, 100};

	assert_int_equal(ps_timings_init(&t, 4), PS_OK);
	set(&t, need, push, 250);
	ps_dag *d = build(&t);
	ps_dag_stats st;
	ps_dag_get_stats(d, &st);
	/* fwd: [0,10) no reads, [10,30) a.*, [30,60) b, [60,100) c;
	 * bwd: c at 100 (0), b 150 (50), a.weight 190 (40), a.bias 191 (1),
	 * tail 59 */
	assert_int_equal(st.forward_ops, 4);
	assert_int_equal(st.backward_ops, 5);
	assert_true(fabs(st.forward_us - 100.0) < 1e-6);
	assert_true(fabs(st.backward_us - 150.0) < 1e-6);
	assert_true(fabs(st.critical_path_us - 250.0) < 1e-6);
	assert_string_equal(d->ops[d->tensors[0].first_reader].name, "fwd.1");
	assert_string_equal(d->ops[d->tensors[1].first_reader].name, "fwd.1");
	assert_string_equal(d->ops[d->tensors[2].first_reader].name, "fwd.2");
	assert_string_equal(d->ops[d->tensors[3].first_reader].name, "fwd.3");
	assert_true(fabs(d->ops[d->tensors[3].first_reader].time_us - 40.0) <
		    1e-6);
	assert_string_equal(grad_op(d, 3)->name, "bwd.0");
	assert_true(fabs(grad_op(d, 2)->time_us - 50.0) < 1e-6);
	assert_true(fabs(grad_op(d, 0)->time_us - 40.0) < 1e-6);
	assert_true(fabs(grad_op(d, 1)->time_us - 1.0) < 1e-6);
	assert_int_equal(d->batch, 32);
	assert_string_equal(d->time_source, "measured");
	ps_dag_free(&d);
	ps_timings_free(&t);
}

/* Every need at the anchor (the optimizer steps after waiting for every
 * average: ordo.torch with server.optimizer = none), a tensor never waited
 * for, one never pushed, a push before the last need: still a model of
 * the same length, every tensor read and produced once. */
static void test_partial(void **state)
{
	(void)state;
	ps_timings t;
	const float need[] = {0, 0, -1, 20}, push[] = {10, 80, -1, 60};

	assert_int_equal(ps_timings_init(&t, 4), PS_OK);
	set(&t, need, push, 100);
	ps_dag *d = build(&t);
	ps_dag_stats st;
	ps_dag_get_stats(d, &st);
	assert_true(fabs(st.critical_path_us - 100.0) < 1e-6);
	/* b (never waited for) is read by the last forward op, c's */
	assert_int_equal(d->tensors[2].first_reader, d->tensors[3].first_reader);
	/* a.weight's push at 10 < the last need (20): moved to 20 */
	assert_true(grad_op(d, 0)->time_us >= 0);
	/* b never pushed: at the end, after everything else */
	assert_true(d->tensors[2].grad_op > d->tensors[1].grad_op);
	ps_dag_free(&d);
	/* nothing waited for, nothing pushed: one op each way */
	const float none[] = {-1, -1, -1, -1};
	set(&t, none, none, 50);
	d = build(&t);
	ps_dag_get_stats(d, &st);
	assert_true(fabs(st.critical_path_us - 50.0) < 1e-6);
	ps_dag_free(&d);
	ps_timings_free(&t);
}

/* The mean is per time, over the workers that measured it. */
static void test_mean(void **state)
{
	(void)state;
	ps_timings a, b, m;
	ps_timings_sum s;
	const float na[] = {0, 10, -1, 20}, pa[] = {50, 60, 70, -1};
	const float nb[] = {0, 30, 5, -1}, pb[] = {70, 80, 90, -1};

	assert_int_equal(ps_timings_init(&a, 4), PS_OK);
	assert_int_equal(ps_timings_init(&b, 4), PS_OK);
	assert_int_equal(ps_timings_init(&m, 4), PS_OK);
	assert_int_equal(ps_timings_sum_init(&s, 4), PS_OK);
	set(&a, na, pa, 100);
	set(&b, nb, pb, 120);
	ps_timings_sum_add(&s, &a);
	ps_timings_sum_add(&s, &b);
	ps_timings_sum_mean(&s, &m);
	assert_true(m.need_us[1] == 20.0f && m.need_us[2] == 5.0f &&
		    m.need_us[3] == 20.0f);
	assert_true(m.push_us[0] == 60.0f && m.push_us[3] == -1.0f);
	assert_true(fabs(m.length_us - 110.0) < 1e-9);
	assert_int_equal(m.workers, 2);
	assert_int_equal(m.iterations, 6);
	ps_timings_sum_free(&s);
	ps_timings_free(&a);
	ps_timings_free(&b);
	ps_timings_free(&m);
}

/* What a worker sends is checked: each check fails on its own. */
static void test_check(void **state)
{
	(void)state;
	ps_timings t;
	char why[256];
	const float need[] = {0, 10, -1, 20}, push[] = {50, 60, 70, -1};

	assert_int_equal(ps_timings_init(&t, 4), PS_OK);
	set(&t, need, push, 100);
	assert_int_equal(ps_timings_check(&t, why, sizeof(why)), PS_OK);
	t.push_us[2] = 101;
	assert_int_equal(ps_timings_check(&t, why, sizeof(why)), PS_EPROTO);
	assert_non_null(strstr(why, "tensor 2"));
	t.push_us[2] = NAN;
	assert_int_equal(ps_timings_check(&t, why, sizeof(why)), PS_EPROTO);
	t.push_us[2] = -2;
	assert_int_equal(ps_timings_check(&t, why, sizeof(why)), PS_EPROTO);
	t.push_us[2] = 70;
	t.length_us = 0;
	assert_int_equal(ps_timings_check(&t, why, sizeof(why)), PS_EPROTO);
	t.length_us = 2 * PS_TIMING_MAX_US;
	assert_int_equal(ps_timings_check(&t, why, sizeof(why)), PS_EPROTO);
	t.length_us = 100;
	t.iterations = 0;
	assert_int_equal(ps_timings_check(&t, why, sizeof(why)), PS_EPROTO);
	ps_timings_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_chain),
	    cmocka_unit_test(test_partial),
	    cmocka_unit_test(test_mean),
	    cmocka_unit_test(test_check),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
