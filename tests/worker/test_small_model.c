/*
 * tests/worker/test_small_model.c - the numerical model and its data set.
 *
 * Gradients against central finite differences, the loss of uniform
 * logits, determinism, shard independence of the data set, batch
 * wrap-around, that training reduces the loss, and that the gradient of a
 * union of batches is the mean of the batches' gradients.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/config.h"
#include "worker/small_model.h"

/* cmocka 1.1.5 has no assert_near. */
#define assert_near(a, b, tol)                                                 \
	do {                                                                   \
		double a_ = (a), b_ = (b);                                     \
		if (!(fabs(a_ - b_) <= (tol)))                                 \
			fail_msg("%.17g != %.17g (tolerance %g)", a_, b_,      \
			         (double)(tol));                               \
	} while (0)

static ps_config make_cfg(int kind, int in, int hid, int cls, int spw)
{
	ps_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.model.name = kind;
	cfg.model.input_dim = in;
	cfg.model.hidden = hid;
	cfg.model.classes = cls;
	cfg.model.samples_per_worker = spw;
	return cfg;
}

static ps_small_model *new_model(const ps_config *cfg, uint64_t seed)
{
	ps_small_model *m = NULL;

	assert_int_equal(ps_small_model_create(cfg, seed, &m), PS_OK);
	assert_non_null(m);
	return m;
}

static ps_dataset *new_dataset(const ps_config *cfg, uint64_t seed, int rank)
{
	ps_dataset *d = NULL;

	assert_int_equal(ps_dataset_create(cfg, seed, rank, &d), PS_OK);
	assert_non_null(d);
	return d;
}

/* The whole shard, in order (iteration 0 with batch = spw). */
static void whole_shard(const ps_dataset *d, size_t spw, size_t in, float **x_p,
                        int32_t **y_p)
{
	float *x = malloc(spw * in * sizeof(float));
	int32_t *y = malloc(spw * sizeof(int32_t));

	assert_non_null(x);
	assert_non_null(y);
	ps_dataset_batch(d, 0, spw, x, y);
	*x_p = x;
	*y_p = y;
}

static void check_gradients(int kind)
{
	const int in = 5, hid = 4, cls = 3, n = 7;
	ps_config cfg = make_cfg(kind, in, hid, cls, n);
	ps_small_model *m = new_model(&cfg, 11);
	ps_dataset *d = new_dataset(&cfg, 12, 0);
	float *x;
	int32_t *y;
	int checked = 0;

	whole_shard(d, n, in, &x, &y);
	/* Spread the labels over every class, whatever the teacher says. */
	for (int s = 0; s < n; s++)
		y[s] = s % cls;
	/* Non-zero biases, so their gradients are exercised off the init. */
	for (uint32_t t = 1; t < ps_small_model_num_tensors(m); t += 2) {
		float *b = ps_small_model_params(m, t);
		for (uint64_t i = 0; i < ps_small_model_tensor_numel(m, t); i++)
			b[i] = 0.1f * (float)((int)i % 3 - 1);
	}

	ps_small_model_step(m, x, y, n);
	for (uint32_t t = 0; t < ps_small_model_num_tensors(m); t++) {
		float *p = ps_small_model_params(m, t);
		const float *g = ps_small_model_grads(m, t);
		for (uint64_t i = 0; i < ps_small_model_tensor_numel(m, t); i++) {
			const float orig = p[i];
			const float hi = orig + 1e-3f, lo = orig - 1e-3f;
			double lp, lm, fd, err;

			p[i] = hi;
			lp = ps_small_model_loss(m, x, y, n);
			p[i] = lo;
			lm = ps_small_model_loss(m, x, y, n);
			p[i] = orig;
			fd = (lp - lm) / ((double)hi - (double)lo);
			err = fabs((double)g[i] - fd);
			if (err > 1e-4 + 1e-3 * fabs(fd))
				fail_msg("%s[%u]: grad %.9g, finite diff %.9g",
				         ps_small_model_tensor_name(m, t),
				         (unsigned)i, (double)g[i], fd);
			checked++;
		}
	}
	assert_true(checked > 0);
	free(x);
	free(y);
	ps_dataset_free(&d);
	ps_small_model_free(&m);
	assert_null(m);
	assert_null(d);
}

static void test_gradcheck_softmax(void **state)
{
	(void)state;
	check_gradients(PS_MODEL_SOFTMAX);
}

static void test_gradcheck_mlp(void **state)
{
	(void)state;
	check_gradients(PS_MODEL_MLP);
}

static void test_tensor_layout(void **state)
{
	ps_config cfg = make_cfg(PS_MODEL_SOFTMAX, 5, 4, 3, 8);
	ps_small_model *m = new_model(&cfg, 1);
	static const char *const mlp_names[] = {"fc1.weight", "fc1.bias",
	                                        "fc2.weight", "fc2.bias"};
	static const uint64_t mlp_numel[] = {4 * 5, 4, 3 * 4, 3};

	(void)state;
	assert_int_equal(ps_small_model_num_tensors(m), 2);
	assert_string_equal(ps_small_model_tensor_name(m, 0), "fc.weight");
	assert_string_equal(ps_small_model_tensor_name(m, 1), "fc.bias");
	assert_int_equal(ps_small_model_tensor_numel(m, 0), 15);
	assert_int_equal(ps_small_model_tensor_numel(m, 1), 3);
	assert_null(ps_small_model_tensor_name(m, 2));
	assert_null(ps_small_model_params(m, 2));
	ps_small_model_free(&m);

	cfg.model.name = PS_MODEL_MLP;
	m = new_model(&cfg, 1);
	assert_int_equal(ps_small_model_num_tensors(m), 4);
	for (uint32_t t = 0; t < 4; t++) {
		assert_string_equal(ps_small_model_tensor_name(m, t), mlp_names[t]);
		assert_int_equal(ps_small_model_tensor_numel(m, t), mlp_numel[t]);
	}
	/* biases start at 0, weights do not */
	assert_true(ps_small_model_params(m, 1)[0] == 0.0f);
	assert_true(ps_small_model_params(m, 3)[2] == 0.0f);
	assert_true(ps_small_model_params(m, 0)[0] != 0.0f);
	ps_small_model_free(&m);
}

static void test_bad_config(void **state)
{
	ps_config cfg = make_cfg(PS_MODEL_MLP, 5, 0, 3, 8);
	ps_small_model *m = NULL;
	ps_dataset *d = NULL;

	(void)state;
	assert_int_equal(ps_small_model_create(&cfg, 1, &m), PS_EINVAL);
	assert_null(m);
	cfg = make_cfg(7, 5, 4, 3, 8);
	assert_int_equal(ps_small_model_create(&cfg, 1, &m), PS_EINVAL);
	cfg = make_cfg(PS_MODEL_SOFTMAX, 5, 4, 1, 8);
	assert_int_equal(ps_small_model_create(&cfg, 1, &m), PS_EINVAL);
	cfg = make_cfg(PS_MODEL_SOFTMAX, 5, 4, 3, 0);
	assert_int_equal(ps_dataset_create(&cfg, 1, 0, &d), PS_EINVAL);
	cfg = make_cfg(PS_MODEL_SOFTMAX, 5, 4, 3, 8);
	assert_int_equal(ps_dataset_create(&cfg, 1, -1, &d), PS_EINVAL);
	assert_null(d);
}

static void test_uniform_loss(void **state)
{
	const int kinds[] = {PS_MODEL_SOFTMAX, PS_MODEL_MLP};
	const int cls = 7, in = 6, n = 5;

	(void)state;
	for (int k = 0; k < 2; k++) {
		ps_config cfg = make_cfg(kinds[k], in, 3, cls, n);
		ps_small_model *m = new_model(&cfg, 2);
		ps_dataset *d = new_dataset(&cfg, 2, 0);
		float *x;
		int32_t *y;

		whole_shard(d, n, in, &x, &y);
		for (uint32_t t = 0; t < ps_small_model_num_tensors(m); t++)
			memset(ps_small_model_params(m, t), 0,
			       ps_small_model_tensor_numel(m, t) * sizeof(float));
		assert_near(ps_small_model_loss(m, x, y, n), log((double)cls), 1e-12);
		assert_near(ps_small_model_step(m, x, y, n), log((double)cls), 1e-12);
		free(x);
		free(y);
		ps_dataset_free(&d);
		ps_small_model_free(&m);
	}
}

static int same_params(ps_small_model *a, ps_small_model *b)
{
	for (uint32_t t = 0; t < ps_small_model_num_tensors(a); t++)
		if (memcmp(ps_small_model_params(a, t), ps_small_model_params(b, t),
		           ps_small_model_tensor_numel(a, t) * sizeof(float)) != 0)
			return 0;
	return 1;
}

static void test_determinism(void **state)
{
	const int in = 8, spw = 50;
	ps_config cfg = make_cfg(PS_MODEL_MLP, in, 6, 4, spw);
	ps_small_model *a = new_model(&cfg, 42), *b = new_model(&cfg, 42);
	ps_small_model *c = new_model(&cfg, 43);
	ps_dataset *da = new_dataset(&cfg, 42, 1);
	ps_dataset *db = new_dataset(&cfg, 42, 1);
	ps_dataset *dc = new_dataset(&cfg, 43, 1);
	float *xa, *xb, *xc;
	int32_t *ya, *yb, *yc;

	(void)state;
	assert_true(same_params(a, b));
	assert_false(same_params(a, c));

	whole_shard(da, spw, in, &xa, &ya);
	whole_shard(db, spw, in, &xb, &yb);
	whole_shard(dc, spw, in, &xc, &yc);
	assert_memory_equal(xa, xb, spw * in * sizeof(float));
	assert_memory_equal(ya, yb, spw * sizeof(int32_t));
	assert_memory_not_equal(xa, xc, spw * in * sizeof(float));

	/* Same inputs, same model: bit-identical gradients. */
	ps_small_model_step(a, xa, ya, spw);
	ps_small_model_step(b, xb, yb, spw);
	for (uint32_t t = 0; t < ps_small_model_num_tensors(a); t++)
		assert_memory_equal(ps_small_model_grads(a, t), ps_small_model_grads(b, t),
		                    ps_small_model_tensor_numel(a, t) *
		                        sizeof(float));

	free(xa);
	free(xb);
	free(xc);
	free(ya);
	free(yb);
	free(yc);
	ps_dataset_free(&da);
	ps_dataset_free(&db);
	ps_dataset_free(&dc);
	ps_small_model_free(&a);
	ps_small_model_free(&b);
	ps_small_model_free(&c);
}

static void test_labels_spread(void **state)
{
	const int in = 10, cls = 4, spw = 400;
	ps_config cfg = make_cfg(PS_MODEL_SOFTMAX, in, 0, cls, spw);
	ps_dataset *d = new_dataset(&cfg, 5, 0);
	int count[4] = {0};
	float *x;
	int32_t *y;

	(void)state;
	whole_shard(d, spw, in, &x, &y);
	for (int s = 0; s < spw; s++) {
		assert_in_range(y[s], 0, cls - 1);
		count[y[s]]++;
	}
	/* the teacher uses every class */
	for (int c = 0; c < cls; c++)
		assert_true(count[c] > spw / (4 * cls));
	free(x);
	free(y);
	ps_dataset_free(&d);
}

/* Rank 1 with spw N holds global samples N..2N-1: the second half of rank
 * 0's shard with spw 2N; rank 0 with spw N is its first half. */
static void test_shard_independence(void **state)
{
	const int in = 7, n = 13;
	ps_config small = make_cfg(PS_MODEL_SOFTMAX, in, 0, 3, n);
	ps_config big = make_cfg(PS_MODEL_SOFTMAX, in, 0, 3, 2 * n);
	ps_dataset *r0 = new_dataset(&small, 99, 0);
	ps_dataset *r1 = new_dataset(&small, 99, 1);
	ps_dataset *all = new_dataset(&big, 99, 0);
	float *x0, *x1, *xa;
	int32_t *y0, *y1, *ya;

	(void)state;
	whole_shard(r0, n, in, &x0, &y0);
	whole_shard(r1, n, in, &x1, &y1);
	whole_shard(all, 2 * n, in, &xa, &ya);
	assert_memory_equal(x0, xa, n * in * sizeof(float));
	assert_memory_equal(y0, ya, n * sizeof(int32_t));
	assert_memory_equal(x1, xa + n * in, n * in * sizeof(float));
	assert_memory_equal(y1, ya + n, n * sizeof(int32_t));
	free(x0);
	free(x1);
	free(xa);
	free(y0);
	free(y1);
	free(ya);
	ps_dataset_free(&r0);
	ps_dataset_free(&r1);
	ps_dataset_free(&all);
}

static void test_batch_wrap(void **state)
{
	const int in = 3, spw = 10, batch = 4;
	ps_config cfg = make_cfg(PS_MODEL_SOFTMAX, in, 0, 3, spw);
	ps_dataset *d = new_dataset(&cfg, 7, 2);
	float *xs, x[4 * 3];
	int32_t *ys, y[4];

	(void)state;
	whole_shard(d, spw, in, &xs, &ys);
	/* iteration 2 starts at 8: samples 8, 9, 0, 1 */
	ps_dataset_batch(d, 2, batch, x, y);
	const int want[4] = {8, 9, 0, 1};
	for (int b = 0; b < batch; b++) {
		assert_memory_equal(x + b * in, xs + want[b] * in,
		                    in * sizeof(float));
		assert_int_equal(y[b], ys[want[b]]);
	}
	/* iteration 5 starts at 20 mod 10 = 0 */
	ps_dataset_batch(d, 5, batch, x, y);
	assert_memory_equal(x, xs, batch * in * sizeof(float));
	/* huge iteration: (i * batch) mod spw without overflow */
	ps_dataset_batch(d, UINT64_MAX, batch, x, y);
	/* UINT64_MAX mod 10 = 5, 5 * 4 mod 10 = 0 */
	assert_memory_equal(x, xs, batch * in * sizeof(float));
	free(xs);
	free(ys);
	ps_dataset_free(&d);
}

static void test_training_reduces_loss(void **state)
{
	const int in = 20, hid = 32, cls = 4, spw = 512, batch = 32;
	ps_config cfg = make_cfg(PS_MODEL_MLP, in, hid, cls, spw);
	ps_small_model *m = new_model(&cfg, 3);
	ps_dataset *d = new_dataset(&cfg, 3, 0);
	float *xs, x[32 * 20];
	int32_t *ys, y[32];
	double start, end;

	(void)state;
	whole_shard(d, spw, in, &xs, &ys);
	start = ps_small_model_loss(m, xs, ys, spw);
	for (uint64_t it = 0; it < 200; it++) {
		ps_dataset_batch(d, it, batch, x, y);
		ps_small_model_step(m, x, y, batch);
		for (uint32_t t = 0; t < ps_small_model_num_tensors(m); t++) {
			float *p = ps_small_model_params(m, t);
			const float *g = ps_small_model_grads(m, t);
			for (uint64_t i = 0; i < ps_small_model_tensor_numel(m, t);
			     i++)
				p[i] -= 0.1f * g[i];
		}
	}
	end = ps_small_model_loss(m, xs, ys, spw);
	print_message("training: loss %.4f -> %.4f\n", start, end);
	assert_true(end < 0.6 * start);
	free(xs);
	free(ys);
	ps_dataset_free(&d);
	ps_small_model_free(&m);
}

/* The gradient over 2b samples is the mean of the two halves' gradients
 * (what W workers' averaged pushes must match). */
static void test_union_equivalence(void **state)
{
	const int in = 9, hid = 8, cls = 5, b = 16;
	ps_config cfg = make_cfg(PS_MODEL_MLP, in, hid, cls, 2 * b);
	ps_small_model *m = new_model(&cfg, 8);
	ps_dataset *d = new_dataset(&cfg, 8, 0);
	float *xs, *g1[4], *g2[4];
	int32_t *ys;
	double l1, l2, lu;

	(void)state;
	whole_shard(d, 2 * b, in, &xs, &ys);
	l1 = ps_small_model_step(m, xs, ys, b);
	for (uint32_t t = 0; t < 4; t++) {
		size_t sz = ps_small_model_tensor_numel(m, t) * sizeof(float);
		g1[t] = malloc(sz);
		assert_non_null(g1[t]);
		memcpy(g1[t], ps_small_model_grads(m, t), sz);
	}
	l2 = ps_small_model_step(m, xs + b * in, ys + b, b);
	for (uint32_t t = 0; t < 4; t++) {
		size_t sz = ps_small_model_tensor_numel(m, t) * sizeof(float);
		g2[t] = malloc(sz);
		assert_non_null(g2[t]);
		memcpy(g2[t], ps_small_model_grads(m, t), sz);
	}
	lu = ps_small_model_step(m, xs, ys, 2 * b);
	assert_near(lu, (l1 + l2) / 2, 1e-12 * lu);
	for (uint32_t t = 0; t < 4; t++) {
		const float *gu = ps_small_model_grads(m, t);
		for (uint64_t i = 0; i < ps_small_model_tensor_numel(m, t); i++) {
			double a = gu[i], m1 = g1[t][i], m2 = g2[t][i];
			double mean = (m1 + m2) / 2;
			double scale = fmax(fabs(a), fmax(fabs(m1), fabs(m2)));
			if (fabs(a - mean) > 1e-6 * scale + 1e-30)
				fail_msg("%s[%u]: union %.9g, mean %.9g",
				         ps_small_model_tensor_name(m, t),
				         (unsigned)i, a, mean);
		}
		free(g1[t]);
		free(g2[t]);
	}
	free(xs);
	free(ys);
	ps_dataset_free(&d);
	ps_small_model_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tensor_layout),
	    cmocka_unit_test(test_bad_config),
	    cmocka_unit_test(test_gradcheck_softmax),
	    cmocka_unit_test(test_gradcheck_mlp),
	    cmocka_unit_test(test_uniform_loss),
	    cmocka_unit_test(test_determinism),
	    cmocka_unit_test(test_labels_spread),
	    cmocka_unit_test(test_shard_independence),
	    cmocka_unit_test(test_batch_wrap),
	    cmocka_unit_test(test_training_reduces_loss),
	    cmocka_unit_test(test_union_equivalence),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
