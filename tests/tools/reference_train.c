/*
 * tests/tools/reference_train.c - one process, SGD on the union of the W
 * workers' batches, compared with what a distributed job produced.
 *
 *   reference_train --config JOB.ini [--set ...] --compare DUMP [--tol T]
 *
 * Iteration i uses, as one batch, the concatenation of every worker's batch
 * of iteration i (the same data set shards ps-worker uses), takes the mean
 * gradient over it and applies the same optimizer. It then reads DUMP (the
 * file ps-worker 0 wrote with train.dump_params) and checks each tensor's
 * relative difference ||a - b|| / ||b|| (Euclidean norms) against T. The
 * largest element-wise difference |a - b| / max(|b|, rms(b)) is printed
 * too. Exits 0 when every tensor is within T.
 *
 * The two computations differ only in float rounding: the distributed job
 * averages W float32 batch means, the reference takes one mean over the
 * union; the difference grows slowly with iterations.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cli.h"
#include "common/log.h"
#include "server/optimizer.h"
#include "worker/small_model.h"

typedef struct opts {
	const char *compare;
	double tol;
} opts;

static int on_opt(void *ud, const char *name, const char *arg, char *why,
		  size_t whylen)
{
	opts *o = ud;
	if (strcmp(name, "compare") == 0) {
		o->compare = arg;
		return PS_OK;
	}
	o->tol = strtod(arg, NULL);
	if (!(o->tol > 0)) {
		snprintf(why, whylen, "--tol must be positive");
		return PS_EINVAL;
	}
	return PS_OK;
}

static int compare_tensor(FILE *f, ps_small_model *m, uint32_t t, double tol,
			  double *worst_p, double *worst_norm_p)
{
	const float *ref = ps_small_model_params(m, t);
	uint64_t n = ps_small_model_tensor_numel(m, t), numel;
	char name[128];
	double rms = 0.0, diff2 = 0.0, rel;

	if (fscanf(f, " tensor %127s %llu", name,
		   (unsigned long long *)&numel) != 2 ||
	    strcmp(name, ps_small_model_tensor_name(m, t)) != 0 || numel != n) {
		PS_ERROR("dump: expected tensor %s with %llu values",
			 ps_small_model_tensor_name(m, t), (unsigned long long)n);
		return 1;
	}
	for (uint64_t i = 0; i < n; i++)
		rms += (double)ref[i] * ref[i];
	rms = sqrt(rms / (double)n);
	for (uint64_t i = 0; i < n; i++) {
		double got, scale, err;
		if (fscanf(f, "%lf", &got) != 1) {
			PS_ERROR("dump: tensor %s ends early", name);
			return 1;
		}
		scale = fmax(fabs((double)ref[i]), rms);
		err = fabs(got - (double)ref[i]) / scale;
		diff2 += (got - (double)ref[i]) * (got - (double)ref[i]);
		if (err > *worst_p)
			*worst_p = err;
	}
	rel = rms > 0 ? sqrt(diff2 / (double)n) / rms : sqrt(diff2);
	if (rel > *worst_norm_p)
		*worst_norm_p = rel;
	if (rel > tol) {
		PS_ERROR("%s: relative difference %.3g exceeds %.3g", name, rel,
			 tol);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const ps_cli_opt extra[] = {
		{"compare", "DUMP", "parameters written by ps-worker 0"},
		{"tol", "T", "relative tolerance (default 1e-6)"},
		{NULL, NULL, NULL},
	};
	opts o = {.tol = 1e-6};
	const ps_cli_info info = {
		.prog = "reference_train",
		.summary = "Single-process SGD on the union of the workers' "
			   "batches (a test program).",
		.opts = extra,
		.on_opt = on_opt,
		.ud = &o,
	};
	ps_cli_status st;
	ps_config cfg;
	ps_small_model *m = NULL;
	ps_dataset **shards;
	float *x, **mom;
	int32_t *y;
	double *acc, worst = 0.0, worst_norm = 0.0;
	size_t b, in, W, most = 0;
	int bad = 0;
	FILE *f;

	st = ps_cli_parse(argc, argv, &info, &cfg);
	if (st != PS_CLI_RUN)
		return ps_cli_exit_status(st);
	ps_log_init("reference", cfg.log.level);
	if (!o.compare) {
		PS_ERROR("--compare DUMP is required");
		return 2;
	}
	b = (size_t)cfg.train.batch;
	in = (size_t)cfg.model.input_dim;
	W = (size_t)cfg.cluster.workers;
	if (ps_small_model_create(&cfg, (uint64_t)cfg.train.seed, &m) != PS_OK)
		return 1;
	uint32_t nt = ps_small_model_num_tensors(m);
	for (uint32_t t = 0; t < nt; t++)
		if (ps_small_model_tensor_numel(m, t) > most)
			most = ps_small_model_tensor_numel(m, t);
	shards = calloc(W, sizeof(*shards));
	x = malloc(W * b * in * sizeof(float));
	y = malloc(W * b * sizeof(int32_t));
	acc = malloc(most * sizeof(double));
	mom = calloc(nt, sizeof(*mom));
	if (!shards || !x || !y || !acc || !mom)
		return 1;
	for (uint32_t t = 0; t < nt; t++) {
		mom[t] = calloc(ps_small_model_tensor_numel(m, t), sizeof(float));
		if (!mom[t])
			return 1;
	}
	for (size_t w = 0; w < W; w++)
		if (ps_dataset_create(&cfg, (uint64_t)cfg.train.seed, (int)w,
				      &shards[w]) != PS_OK)
			return 1;
	for (int i = 0; i < cfg.train.iterations; i++) {
		for (size_t w = 0; w < W; w++)
			ps_dataset_batch(shards[w], (uint64_t)i, b,
					 x + w * b * in, y + w * b);
		ps_small_model_step(m, x, y, W * b);
		for (uint32_t t = 0; t < nt; t++) {
			size_t n = ps_small_model_tensor_numel(m, t);
			ps_accum_set(acc, ps_small_model_grads(m, t), n);
			ps_sgd_apply(ps_small_model_params(m, t), mom[t], acc, n, 1,
				     cfg.train.lr, cfg.train.momentum);
		}
	}
	f = fopen(o.compare, "r");
	if (!f) {
		PS_ERROR("cannot open %s: %m", o.compare);
		return 1;
	}
	for (uint32_t t = 0; t < nt; t++)
		bad += compare_tensor(f, m, t, o.tol, &worst, &worst_norm);
	fclose(f);
	printf("reference: %d iterations, %zu workers' batches per step: "
	       "largest tensor relative difference %.3g (tolerance %.3g), "
	       "largest element difference %.3g, %d tensor(s) off\n",
	       cfg.train.iterations, W, worst_norm, o.tol, worst, bad);
	for (size_t w = 0; w < W; w++)
		ps_dataset_free(&shards[w]);
	for (uint32_t t = 0; t < nt; t++)
		free(mom[t]);
	free(mom);
	free(shards);
	free(x);
	free(y);
	free(acc);
	ps_small_model_free(&m);
	return bad ? 1 : 0;
}
