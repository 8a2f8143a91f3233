/*
 * tests/cuda/test_cuda_optimizer.c - cuda/optimizer_cuda.h against
 * server/optimizer.c, bit for bit, and cuda/device.h's errors.
 *
 * Needs a CUDA device: where ps_cuda_open(0) finds none (no GPU, no
 * driver) the test prints "SKIP: <the error>" and exits 77, which CTest
 * reports as skipped. Any other failure to open device 0 fails the test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cuda/device.h"
#include "cuda/optimizer_cuda.h"
#include "ordo/error.h"
#include "server/optimizer.h"

static ps_cuda_info info;

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_u64(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A float of either sign over many binades (2^-30 .. 2^4), now and then a
 * denormal or zero, so that every rounding step has work to do. */
static float rand_float(void)
{
	uint64_t r = next_u64();
	double mant = (double)(r >> 11) / 9007199254740992.0; /* [0, 1) */
	int e = (int)((r >> 3) % 35) - 30;
	float f = (float)ldexp(mant, e);
	if ((r & 0xff) == 0)
		f = ldexpf((float)mant, -140); /* denormal */
	else if ((r & 0xff) == 1)
		f = 0.0f;
	return (r & 4) ? -f : f;
}

static void fill(float *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		x[i] = rand_float();
}

static void *dev_alloc(size_t bytes)
{
	void *p = NULL;
	char err[512];
	if (ps_cuda_alloc(&p, bytes ? bytes : 1, "test buffer", err,
	                  sizeof(err)) != PS_OK)
		fail_msg("%s", err);
	return p;
}

static void to_dev(void *d, const void *h, size_t bytes)
{
	assert_int_equal(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice),
	                 cudaSuccess);
}

static void to_host(void *h, const void *d, size_t bytes)
{
	assert_int_equal(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost),
	                 cudaSuccess);
}

static void sync_ok(void)
{
	char err[256];
	if (ps_cuda_sync(NULL, err, sizeof(err)) != PS_OK)
		fail_msg("%s", err);
}

/* The first index where two arrays differ in their bits, or -1. */
static long first_diff(const void *a, const void *b, size_t n, size_t elem)
{
	for (size_t i = 0; i < n; i++)
		if (memcmp((const char *)a + i * elem, (const char *)b + i * elem,
		           elem) != 0)
			return (long)i;
	return -1;
}

#define EXPECT_SAME(cpu, gpu, n, what)                                         \
	do {                                                                   \
		long d_ = first_diff(cpu, gpu, n, sizeof(*(cpu)));             \
		if (d_ >= 0)                                                   \
			fail_msg("%s differs at %ld of %zu: cpu %.9g gpu %.9g", \
			         what, d_, (size_t)(n), (double)(cpu)[d_],      \
			         (double)(gpu)[d_]);                            \
	} while (0)

/* Sizes around the block size and a grid's worth, and a large one. */
static const size_t sizes[] = {1,   7,   PS_CUDA_BLOCK - 1, PS_CUDA_BLOCK,
                               PS_CUDA_BLOCK + 1, 1000, 65537, 1000003};
static const double lrs[][2] = {{0.1, 0.9}, {0.01, 0}, {0.37, 0.5}};

/* A round of `count` pushes: pushes 1..count-1 summed with ps_accum_set /
 * ps_accum_add, the last one through ps_sgd_apply_last (first when count
 * is 1), on both sides; then the same sum through ps_sgd_apply. */
static void one_case(size_t n, unsigned count, double lr, double momentum)
{
	float *g = malloc(count * n * sizeof(float));
	float *w = malloc(n * sizeof(float)), *v = malloc(n * sizeof(float));
	float *w2 = malloc(n * sizeof(float)), *v2 = malloc(n * sizeof(float));
	float *gw = malloc(n * sizeof(float)), *gv = malloc(n * sizeof(float));
	double *acc = malloc(n * sizeof(double));
	double *gacc = malloc(n * sizeof(double));
	assert_true(g && w && v && w2 && v2 && gw && gv && acc && gacc);
	fill(g, count * n);
	fill(w, n);
	fill(v, n);
	memcpy(w2, w, n * sizeof(float));
	memcpy(v2, v, n * sizeof(float));
	float *w0 = malloc(n * sizeof(float));
	assert_true(w0);
	memcpy(w0, w, n * sizeof(float));

	float *dg = dev_alloc(count * n * sizeof(float));
	float *dw = dev_alloc(n * sizeof(float));
	float *dv = dev_alloc(n * sizeof(float));
	double *dacc = dev_alloc(n * sizeof(double));
	to_dev(dg, g, count * n * sizeof(float));
	to_dev(dw, w, n * sizeof(float));
	to_dev(dv, v, n * sizeof(float));

	/* the first count - 1 pushes */
	for (unsigned k = 0; k + 1 < count; k++) {
		if (k == 0) {
			ps_accum_set(acc, g, n);
			assert_int_equal(ps_cuda_accum_set(dacc, dg, n, NULL),
			                 PS_OK);
		} else {
			ps_accum_add(acc, g + k * n, n);
			assert_int_equal(
			    ps_cuda_accum_add(dacc, dg + k * n, n, NULL), PS_OK);
		}
	}
	if (count > 1) {
		sync_ok();
		to_host(gacc, dacc, n * sizeof(double));
		EXPECT_SAME(acc, gacc, n, "the sum");
	}
	/* the last push and the step */
	int first = count == 1;
	ps_sgd_apply_last(w, v, acc, g + (count - 1) * n, n, first, count, lr,
	                  momentum);
	assert_int_equal(ps_cuda_sgd_apply_last(dw, dv, dacc,
	                                        dg + (count - 1) * n, n, first,
	                                        count, lr, momentum, NULL),
	                 PS_OK);
	sync_ok();
	to_host(gw, dw, n * sizeof(float));
	to_host(gv, dv, n * sizeof(float));
	EXPECT_SAME(v, gv, n, "sgd_apply_last: v");
	EXPECT_SAME(w, gw, n, "sgd_apply_last: w");

	/* server.optimizer = none: the average alone, from the same sum */
	ps_avg_last(w2, acc, g + (count - 1) * n, n, first, count);
	assert_int_equal(ps_cuda_avg_last(dw, dacc, dg + (count - 1) * n, n,
	                                  first, count, NULL),
	                 PS_OK);
	sync_ok();
	to_host(gw, dw, n * sizeof(float));
	EXPECT_SAME(w2, gw, n, "avg_last");
	memcpy(w2, w0, n * sizeof(float));

	/* not first: acc holds the other pushes; the sum of all through
	 * ps_accum_add + ps_sgd_apply (a different path to the same bits) */
	if (count > 1) {
		ps_accum_add(acc, g + (count - 1) * n, n);
		assert_int_equal(ps_cuda_accum_add(dacc, dg + (count - 1) * n,
		                                   n, NULL),
		                 PS_OK);
		to_dev(dw, w2, n * sizeof(float));
		to_dev(dv, v2, n * sizeof(float));
		ps_sgd_apply(w2, v2, acc, n, count, lr, momentum);
		assert_int_equal(ps_cuda_sgd_apply(dw, dv, dacc, n, count, lr,
		                                   momentum, NULL),
		                 PS_OK);
		sync_ok();
		to_host(gw, dw, n * sizeof(float));
		to_host(gv, dv, n * sizeof(float));
		EXPECT_SAME(v2, gv, n, "sgd_apply: v");
		EXPECT_SAME(w2, gw, n, "sgd_apply: w");
		EXPECT_SAME(w, w2, n, "CPU: apply_last against add + apply");
	}

	ps_cuda_free(dg);
	ps_cuda_free(dw);
	ps_cuda_free(dv);
	ps_cuda_free(dacc);
	free(g);
	free(w);
	free(v);
	free(w2);
	free(w0);
	free(v2);
	free(gw);
	free(gv);
	free(acc);
	free(gacc);
}

static void test_bit_equal(void **state)
{
	(void)state;
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (unsigned count = 1; count <= 4; count++)
			for (size_t l = 0; l < sizeof(lrs) / sizeof(lrs[0]); l++)
				one_case(sizes[s], count, lrs[l][0], lrs[l][1]);
}

/* Adam and AdamW: three steps of a round of `count` pushes, the moments
 * carried over, on both sides: the same bits. */
static void adam_case(size_t n, unsigned count, int decoupled)
{
	float *g = malloc(count * n * sizeof(float));
	float *w = malloc(n * sizeof(float)), *m = calloc(n, sizeof(float));
	float *sq = calloc(n, sizeof(float)), *gw = malloc(n * sizeof(float));
	double *acc = malloc(n * sizeof(double));
	assert_true(g && w && m && sq && gw && acc);
	fill(g, count * n);
	fill(w, n);
	float *dg = dev_alloc(count * n * sizeof(float));
	float *dw = dev_alloc(n * sizeof(float));
	float *dm = dev_alloc(n * sizeof(float));
	float *ds = dev_alloc(n * sizeof(float));
	double *dacc = dev_alloc(n * sizeof(double));
	to_dev(dg, g, count * n * sizeof(float));
	to_dev(dw, w, n * sizeof(float));
	to_dev(dm, m, n * sizeof(float));
	to_dev(ds, sq, n * sizeof(float));

	for (uint64_t step = 1; step <= 3; step++) {
		ps_adam a = {.lr = 0.01 * (double)step, .beta1 = 0.9,
			     .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.05,
			     .decoupled = decoupled, .step = step};
		ps_adam_scalars k;
		ps_adam_scalars_of(&a, &k);
		for (unsigned j = 0; j + 1 < count; j++) {
			if (j == 0) {
				ps_accum_set(acc, g, n);
				assert_int_equal(ps_cuda_accum_set(dacc, dg, n,
				                                   NULL), PS_OK);
			} else {
				ps_accum_add(acc, g + j * n, n);
				assert_int_equal(ps_cuda_accum_add(dacc,
				                 dg + j * n, n, NULL), PS_OK);
			}
		}
		ps_adam_apply_last(w, m, sq, acc, g + (count - 1) * n, n,
		                   count == 1, count, &k);
		assert_int_equal(ps_cuda_adam_apply_last(dw, dm, ds, dacc,
		                 dg + (count - 1) * n, n, count == 1, count,
		                 &k, NULL), PS_OK);
	}
	sync_ok();
	to_host(gw, dw, n * sizeof(float));
	EXPECT_SAME(w, gw, n, decoupled ? "adamw: w" : "adam: w");
	to_host(gw, dm, n * sizeof(float));
	EXPECT_SAME(m, gw, n, "adam: first moment");
	to_host(gw, ds, n * sizeof(float));
	EXPECT_SAME(sq, gw, n, "adam: second moment");
	ps_cuda_free(dg);
	ps_cuda_free(dw);
	ps_cuda_free(dm);
	ps_cuda_free(ds);
	ps_cuda_free(dacc);
	free(g);
	free(w);
	free(m);
	free(sq);
	free(gw);
	free(acc);
}

static void test_adam_bit_equal(void **state)
{
	(void)state;
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (unsigned count = 1; count <= 3; count++)
			for (int decoupled = 0; decoupled <= 1; decoupled++)
				adam_case(sizes[s], count, decoupled);
}

/* ps_sgd_apply_last with first and count > 1: the sum is g alone (acc is
 * not read), averaged over count. */
static void test_first_with_count(void **state)
{
	(void)state;
	const size_t n = PS_CUDA_BLOCK * 3 + 5;
	float g[PS_CUDA_BLOCK * 3 + 5], w[PS_CUDA_BLOCK * 3 + 5],
	    v[PS_CUDA_BLOCK * 3 + 5], gw[PS_CUDA_BLOCK * 3 + 5],
	    gv[PS_CUDA_BLOCK * 3 + 5];
	for (unsigned count = 2; count <= 4; count++) {
		fill(g, n);
		fill(w, n);
		fill(v, n);
		float *dg = dev_alloc(sizeof(g)), *dw = dev_alloc(sizeof(w)),
		      *dv = dev_alloc(sizeof(v));
		to_dev(dg, g, sizeof(g));
		to_dev(dw, w, sizeof(w));
		to_dev(dv, v, sizeof(v));
		ps_sgd_apply_last(w, v, NULL, g, n, 1, count, 0.1, 0.9);
		assert_int_equal(ps_cuda_sgd_apply_last(dw, dv, NULL, dg, n, 1,
		                                        count, 0.1, 0.9, NULL),
		                 PS_OK);
		sync_ok();
		to_host(gw, dw, sizeof(gw));
		to_host(gv, dv, sizeof(gv));
		EXPECT_SAME(v, gv, n, "first, count > 1: v");
		EXPECT_SAME(w, gw, n, "first, count > 1: w");
		ps_cuda_free(dg);
		ps_cuda_free(dw);
		ps_cuda_free(dv);
	}
}

static void test_bad_arguments(void **state)
{
	(void)state;
	assert_int_equal(ps_cuda_accum_set(NULL, NULL, 4, NULL), PS_EINVAL);
	assert_int_equal(ps_cuda_accum_add(NULL, NULL, 0, NULL), PS_OK);
	/* count 0 changes nothing, as on the CPU */
	assert_int_equal(
	    ps_cuda_sgd_apply_last(NULL, NULL, NULL, NULL, 4, 0, 0, 0.1, 0.9,
	                           NULL),
	    PS_OK);
}

static void test_bad_index(void **state)
{
	(void)state;
	char err[1024], want[128];
	ps_cuda_info other;
	assert_int_equal(ps_cuda_open(info.count, &other, err, sizeof(err)),
	                 PS_EINVAL);
	snprintf(want, sizeof(want),
	         "server.cuda_device = %d, but this machine has %d CUDA "
	         "device(s): 0 ",
	         info.count, info.count);
	if (strncmp(err, want, strlen(want)) != 0)
		fail_msg("bad index error: '%s'", err);
	assert_non_null(strstr(err, info.name));
	assert_int_equal(ps_cuda_open(-1, &other, err, sizeof(err)),
	                 PS_EINVAL);
	/* device 0 is still usable */
	assert_int_equal(ps_cuda_open(0, &other, err, sizeof(err)), PS_OK);
}

static void test_out_of_memory(void **state)
{
	(void)state;
	char err[1024], want[64];
	void *p = (void *)1;
	size_t ask = info.total_bytes + ((size_t)1 << 30);
	assert_int_equal(ps_cuda_alloc(&p, ask, "too big", err, sizeof(err)),
	                 PS_ENOMEM);
	assert_null(p);
	snprintf(want, sizeof(want), "cudaMalloc of %zu bytes", ask);
	if (strncmp(err, want, strlen(want)) != 0 ||
	    !strstr(err, "too big") || !strstr(err, "out of memory") ||
	    !strstr(err, "free of"))
		fail_msg("out-of-memory error: '%s'", err);
	/* the failure is not sticky: the device still works */
	p = dev_alloc(4096);
	ps_cuda_free(p);
}

int main(void)
{
	char err[1024];
	int rc = ps_cuda_open(0, &info, err, sizeof(err));
	if (rc == PS_ENOTSUP) {
		if (strncmp(err, "no CUDA device: ", 16) != 0) {
			fprintf(stderr, "unexpected error: %s\n", err);
			return 1;
		}
		printf("SKIP: %s\n", err);
		return 77;
	}
	if (rc != PS_OK) {
		fprintf(stderr, "CUDA device 0: %s\n", err);
		return 1;
	}
	printf("CUDA device %d of %d: %s (sm_%d%d), %zu of %zu bytes free\n",
	       info.index, info.count, info.name, info.major, info.minor,
	       info.free_bytes, info.total_bytes);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bit_equal),
	    cmocka_unit_test(test_adam_bit_equal),
	    cmocka_unit_test(test_first_with_count),
	    cmocka_unit_test(test_bad_arguments),
	    cmocka_unit_test(test_bad_index),
	    cmocka_unit_test(test_out_of_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
