/*
 * tests/server/test_optimizer.c - accumulation and SGD with momentum against
 * closed-form values.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "server/optimizer.h"

/* momentum 0, lr 1, integer gradients: w - g exactly. */
static void test_plain_sgd_exact(void **state)
{
	float w[5] = {10, -3, 0, 7, 100};
	float v[5] = {0};
	const float g[5] = {1, -2, 5, 7, -50};
	const float want[5] = {9, -1, -5, 0, 150};
	double acc[5] = {0};

	(void)state;
	ps_accum_add(acc, g, 5);
	ps_sgd_apply(w, v, acc, 5, 1, 1.0, 0.0);
	for (int i = 0; i < 5; i++) {
		assert_true(w[i] == want[i]);
		assert_true(v[i] == g[i]); /* v = g with momentum 0 */
	}
}

/* Three steps, momentum 0.9, lr 0.1, gradients 1, 2, 3 from w = 1:
 *   v1 = 1,    w1 = 0.9
 *   v2 = 2.9,  w2 = 0.61
 *   v3 = 5.61, w3 = 0.049 */
static void test_momentum_three_steps(void **state)
{
	float w[2] = {1.0f, -2.0f};
	float v[2] = {0};
	const double want_v[3] = {1.0, 2.9, 5.61};
	const double want_w[3] = {0.9, 0.61, 0.049};

	(void)state;
	for (int s = 0; s < 3; s++) {
		const float g[2] = {(float)(s + 1), -(float)(s + 1)};
		double acc[2] = {0};
		ps_accum_add(acc, g, 2);
		ps_sgd_apply(w, v, acc, 2, 1, 0.1, 0.9);
		assert_true(fabs(v[0] - want_v[s]) < 1e-6);
		assert_true(fabs(w[0] - want_w[s]) < 1e-6);
		/* the mirrored element (w = -2, g < 0) moves the other way:
		 * w = -2 + (1 - want_w) */
		assert_true(fabs(v[1] + want_v[s]) < 1e-6);
		assert_true(fabs(w[1] - (-1.0 - want_w[s])) < 1e-6);
	}
}

/* acc / count is the mean of the pushes. */
static void test_count_divides(void **state)
{
	float w[3] = {10, 10, 10};
	float v[3] = {0};
	double acc[3] = {0};
	const float p1[3] = {1, 3, -6}, p2[3] = {2, 3, 0}, p3[3] = {3, 3, 0};

	(void)state;
	ps_accum_add(acc, p1, 3);
	ps_accum_add(acc, p2, 3);
	ps_accum_add(acc, p3, 3);
	assert_true(acc[0] == 6.0 && acc[1] == 9.0 && acc[2] == -6.0);
	ps_sgd_apply(w, v, acc, 3, 3, 1.0, 0.0);
	assert_true(w[0] == 8.0f);  /* 10 - 6/3 */
	assert_true(w[1] == 7.0f);  /* 10 - 9/3 */
	assert_true(w[2] == 12.0f); /* 10 + 6/3 */
	assert_true(v[0] == 2.0f && v[1] == 3.0f && v[2] == -2.0f);

	/* a non-integral mean, computed in double */
	double a = 1.0;
	float w1 = 0.0f, v1 = 0.0f;
	ps_sgd_apply(&w1, &v1, &a, 1, 3, 1.0, 0.0);
	assert_true(w1 == (float)(-1.0 / 3.0));
}

/* ps_accum_set starts a round: it overwrites whatever acc held. */
static void test_accum_set_starts_round(void **state)
{
	double acc[3] = {100.0, -7.5, 1e30};
	const float g[3] = {1.5f, -2.0f, 0.0f}, h[3] = {1.0f, 1.0f, 1.0f};

	(void)state;
	ps_accum_set(acc, g, 3);
	assert_true(acc[0] == 1.5 && acc[1] == -2.0 && acc[2] == 0.0);
	ps_accum_add(acc, h, 3);
	assert_true(acc[0] == 2.5 && acc[1] == -1.0 && acc[2] == 1.0);
}

/* count 0: nothing was pushed, nothing changes. */
static void test_count_zero_noop(void **state)
{
	float w = 4.0f, v = 2.0f;
	double acc = 8.0;

	(void)state;
	ps_sgd_apply(&w, &v, &acc, 1, 0, 1.0, 0.9);
	assert_true(w == 4.0f && v == 2.0f);
}

/* Many adds are summed in double: no float stagnation, no drift. */
static void test_accum_many(void **state)
{
	double acc[3] = {0};
	const float big[3] = {16777216.0f, 0.1f, 0.0f}; /* 2^24 */
	const float one[3] = {1.0f, 0.1f, -0.5f};
	const int n = 100000;

	(void)state;
	ps_accum_add(acc, big, 3);
	for (int i = 0; i < n; i++)
		ps_accum_add(acc, one, 3);
	/* a float sum would stay at 2^24 */
	assert_true(acc[0] == 16777216.0 + n);
	assert_true(fabs(acc[1] - (n + 1) * (double)0.1f) < 1e-6);
	assert_true(acc[2] == -0.5 * n);

	/* order of pushes: the same sum */
	double fwd[1] = {0}, rev[1] = {0};
	float vals[64];
	for (int i = 0; i < 64; i++)
		vals[i] = (float)(i % 7 - 3) * 0.37f;
	for (int i = 0; i < 64; i++)
		ps_accum_add(fwd, &vals[i], 1);
	for (int i = 63; i >= 0; i--)
		ps_accum_add(rev, &vals[i], 1);
	assert_true(fabs(fwd[0] - rev[0]) < 1e-12);

	/* n == 0 touches nothing */
	ps_accum_add(acc, NULL, 0);
	assert_true(acc[2] == -0.5 * n);
}

/* A long vector (the vectorised path) matches an element-wise reference:
 * the average in double rounded once to float32, the step in float32. */
static void test_long_vector(void **state)
{
	enum { N = 1031 };
	static float w[N], v[N], g[N], wr[N], vr[N];
	static double acc[N];

	(void)state;
	for (int i = 0; i < N; i++) {
		w[i] = wr[i] = (float)i * 0.01f;
		v[i] = vr[i] = (float)(i % 5) * 0.1f;
		g[i] = (float)(i % 11) - 5.0f;
	}
	memset(acc, 0, sizeof(acc));
	ps_accum_add(acc, g, N);
	ps_accum_add(acc, g, N);
	ps_sgd_apply(w, v, acc, N, 2, 0.05, 0.9);
	for (int i = 0; i < N; i++) {
		float gi = (float)((2.0 * (double)g[i]) / 2.0);
		float vi = 0.9f * vr[i] + gi;
		assert_true(v[i] == vi);
		assert_true(w[i] == wr[i] - 0.05f * vi);
	}
}

/* The fused last step gives the two-pass results to the bit: first (set)
 * and later (add) pushes, counts 1..5, with momentum, odd lengths. */
static void test_apply_last_bit_identical(void **state)
{
	enum { N = 1031 };
	static float g[5][N], w1[N], v1[N], w2[N], v2[N];
	static double acc1[N], acc2[N];
	unsigned seed = 7;

	(void)state;
	for (unsigned count = 1; count <= 5; count++) {
		for (int i = 0; i < N; i++) {
			w1[i] = w2[i] = (float)((int)(i % 13) - 6) * 0.37f;
			v1[i] = v2[i] = (float)((int)(i % 5) - 2) * 0.11f;
			for (unsigned k = 0; k < count; k++) {
				seed = seed * 1103515245u + 12345u;
				g[k][i] = (float)((int)(seed >> 16) % 2001 -
						  1000) / 997.0f;
			}
		}
		for (unsigned k = 0; k < count; k++) {
			if (k == 0)
				ps_accum_set(acc1, g[k], N);
			else
				ps_accum_add(acc1, g[k], N);
		}
		ps_sgd_apply(w1, v1, acc1, N, count, 0.05, 0.9);
		for (unsigned k = 0; k + 1 < count; k++) {
			if (k == 0)
				ps_accum_set(acc2, g[k], N);
			else
				ps_accum_add(acc2, g[k], N);
		}
		ps_sgd_apply_last(w2, v2, acc2, g[count - 1], N, count == 1,
				  count, 0.05, 0.9);
		assert_memory_equal(w1, w2, sizeof(w1));
		assert_memory_equal(v1, v2, sizeof(v1));
	}
}

/* server.optimizer = none: ps_avg_last leaves the average, computed as
 * ps_sgd_apply_last computes the gradient it steps with: SGD with lr 1
 * and momentum 0 from w = 0 gives -w of it, bit for bit; the first push
 * of one is copied (its sign of zero kept); count 0 changes nothing. */
static void test_avg_last(void **state)
{
	enum { N = 6 };
	const float g1[N] = {1.5f, -3.0f, 0.1f, 1e-30f, -0.0f, 7.0f};
	const float g2[N] = {2.5f, 1.0f, 0.2f, 3e-30f, 0.0f, -7.0f};
	const float g3[N] = {0.0f, 2.0f, 0.3f, -1e-30f, -0.0f, 1.0f};
	double acc[N];
	float w[N], sw[N], sv[N];

	(void)state;
	ps_accum_set(acc, g1, N);
	ps_accum_add(acc, g2, N);
	memset(w, 0x7f, sizeof(w)); /* overwritten, never read */
	ps_avg_last(w, acc, g3, N, 0, 3);
	memset(sw, 0, sizeof(sw));
	memset(sv, 0, sizeof(sv));
	ps_sgd_apply_last(sw, sv, acc, g3, N, 0, 3, 1.0, 0.0);
	for (int i = 0; i < N; i++) {
		double sum = ((double)g1[i] + g2[i]) + g3[i];
		float want = (float)(sum * (1.0 / 3.0));
		assert_true(w[i] == want);
		assert_true(w[i] == -sw[i]);
		assert_true(w[i] == sv[i]);
	}
	/* the only push of a round: g itself, -0.0 included */
	ps_avg_last(w, NULL, g1, N, 1, 1);
	assert_memory_equal(w, g1, sizeof(w));
	/* first with count 2 (the others arrived as nothing): g / 2 */
	ps_avg_last(w, NULL, g2, N, 1, 2);
	for (int i = 0; i < N; i++)
		assert_true(w[i] == g2[i] / 2);
	memcpy(sw, w, sizeof(w));
	ps_avg_last(w, acc, g3, N, 0, 0);
	assert_memory_equal(w, sw, sizeof(w));
}

/* Adam and AdamW against the formulas evaluated in double over five
 * steps of three workers' gradients (torch.optim's, docs/pytorch.md):
 * float32 results within a few ulps of them; the moments too. */
static void adam_against_double(int decoupled)
{
	enum { N = 257, W = 3, STEPS = 5 };
	static float w[N], m[N], sq[N], g[W][N];
	static double rw[N], rm[N], rs[N];
	double acc[N];
	const double lr = 0.003, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.1;
	uint32_t seed = 7;

	memset(m, 0, sizeof(m));
	memset(sq, 0, sizeof(sq));
	for (int i = 0; i < N; i++) {
		w[i] = (float)((i % 17) - 8) * 0.125f;
		rw[i] = w[i];
		rm[i] = rs[i] = 0;
	}
	for (uint64_t step = 1; step <= STEPS; step++) {
		for (int k = 0; k < W; k++)
			for (int i = 0; i < N; i++) {
				seed = seed * 1103515245u + 12345u;
				g[k][i] = (float)((int)(seed >> 16) % 2001 -
						  1000) / 1000.0f;
			}
		ps_accum_set(acc, g[0], N);
		ps_accum_add(acc, g[1], N);
		ps_adam a = {.lr = lr * (double)step, .beta1 = b1, .beta2 = b2,
			     .eps = eps, .weight_decay = wd,
			     .decoupled = decoupled, .step = step};
		ps_adam_scalars k;
		ps_adam_scalars_of(&a, &k);
		ps_adam_apply_last(w, m, sq, acc, g[2], N, 0, W, &k);
		for (int i = 0; i < N; i++) {
			double gi = ((double)g[0][i] + g[1][i] + g[2][i]) / W;
			if (decoupled)
				rw[i] *= 1 - a.lr * wd;
			else
				gi += wd * rw[i];
			rm[i] = b1 * rm[i] + (1 - b1) * gi;
			rs[i] = b2 * rs[i] + (1 - b2) * gi * gi;
			double denom = sqrt(rs[i]) / sqrt(1 - pow(b2, step)) +
				       eps;
			rw[i] -= a.lr / (1 - pow(b1, step)) * rm[i] / denom;
		}
	}
	for (int i = 0; i < N; i++) {
		assert_true(fabs(w[i] - rw[i]) <= 1e-5 * fmax(1, fabs(rw[i])));
		assert_true(fabs(m[i] - rm[i]) <= 1e-5 * fmax(1e-3, fabs(rm[i])));
		assert_true(fabs(sq[i] - rs[i]) <= 1e-5 * fmax(1e-6, fabs(rs[i])));
	}
}

static void test_adam(void **state)
{
	(void)state;
	adam_against_double(0);
}

static void test_adamw(void **state)
{
	(void)state;
	adam_against_double(1);
}

/* The first step of Adam moves every weight by lr (times sign(g)) when
 * eps is negligible: m / sqrt(s) = g / |g| after bias correction. Count 0
 * changes nothing. */
static void test_adam_first_step(void **state)
{
	float w[4] = {1, 1, 1, 1}, m[4] = {0}, sq[4] = {0};
	const float g[4] = {0.5f, -2.0f, 1e-3f, -7.0f};
	ps_adam a = {.lr = 0.25, .beta1 = 0.9, .beta2 = 0.999, .eps = 0,
		     .step = 1};
	ps_adam_scalars k;

	(void)state;
	ps_adam_scalars_of(&a, &k);
	ps_adam_apply_last(w, m, sq, NULL, g, 4, 1, 1, &k);
	for (int i = 0; i < 4; i++)
		assert_true(fabsf(w[i] - (g[i] > 0 ? 0.75f : 1.25f)) < 1e-6f);
	float before[4];
	memcpy(before, w, sizeof(w));
	ps_adam_apply_last(w, m, sq, NULL, g, 4, 1, 0, &k);
	assert_memory_equal(w, before, sizeof(w));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plain_sgd_exact),
	    cmocka_unit_test(test_momentum_three_steps),
	    cmocka_unit_test(test_count_divides),
	    cmocka_unit_test(test_count_zero_noop),
	    cmocka_unit_test(test_accum_set_starts_round),
	    cmocka_unit_test(test_accum_many),
	    cmocka_unit_test(test_long_vector),
	    cmocka_unit_test(test_apply_last_bit_identical),
	    cmocka_unit_test(test_avg_last),
	    cmocka_unit_test(test_adam),
	    cmocka_unit_test(test_adamw),
	    cmocka_unit_test(test_adam_first_step),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
