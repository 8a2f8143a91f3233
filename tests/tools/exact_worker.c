/*
 * tests/tools/exact_worker.c - a worker program for the exactness test.
 *
 * Tensor sizes come from --sizes N,N,... or, when started by ps-launch
 * (which passes only common options on), from EXACT_WORKER_SIZES.
 *
 * Its training loop uses only the public client API, as a user's program
 * would (the command line comes from the internal helper), and it is
 * started by `ps-launch --worker`. It declares tensors of the sizes given
 * with --sizes, pushes integer-valued gradients, and after every iteration
 * checks every parameter against the closed form:
 *
 *   initial     w0[k][j] = (j % 1000) + 1000 k
 *   gradient    g_r[k][j](i) = W ((j + k) % 13 + i) + 2 r      (worker r)
 *   average     m[k][j](i) = W ((j + k) % 13 + i) + (W - 1)
 *   with lr = 1 and momentum = 0:  w_{i+1} = w_i - m(i)
 *
 * All values are small integers, exact in float32, so any lost, duplicated
 * or misplaced partition shows as an inexact value. Exits 0 only if every
 * value of every iteration matched.
 *
 * A job resumed from a checkpoint starts at ps_client_start_iteration()
 * V: the values received then are checked against the closed form at V
 * too, so a checkpoint that lost or repeated an update fails here. The
 * iterations before V were trained by EXACT_WORKER_HISTORY_WORKERS workers
 * (default: as many as now).
 *
 * EXACT_WORKER_HOLD=FILE: the last iteration (or iteration
 * EXACT_WORKER_HOLD_AT, counted from 0) waits until FILE exists, so a test
 * can act on the running job (fuzz.sh, tune.sh) before it gets past it,
 * however fast the job runs; the communication thread keeps the
 * heartbeats going. A job that stops earlier (ps_client_next_iteration)
 * never waits. EXACT_WORKER_HELD=FILE: created when the wait begins (so a
 * test knows how long the application has been away from the library).
 * EXACT_WORKER_LIE_PROGRESS=I: before training, says it begins iteration
 * I (ps_client_next_iteration), as a buggy or lying application could
 * (hostile.sh: the scheduler must drop it).
 * EXACT_WORKER_EVERY=N: prints "exact: worker R at iteration I" (flushed)
 * after every N-th iteration, milestones a test can wait on (bench/soak.sh
 * samples every process's memory at them).
 *
 * With server.optimizer = none the servers send the round's average back
 * instead of new parameters: after iteration i every value is m[k][j](i)
 * itself (any lr and momentum then: the servers ignore them).
 *
 * EXACT_WORKER_DUMP=FILE: worker 0 writes every tensor's final parameters
 * (float32, tensor after tensor) to FILE, so two jobs can be compared byte
 * for byte (cmp), e.g. server.device = cuda against cpu
 * (scripts/device-check.sh). With it any train.lr and train.momentum are
 * accepted; the values are then checked only where lr = 1 and momentum =
 * 0 (the closed form above), and the result line says "dumped".
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cli.h"
#include "common/log.h"
#include "runtime/clock.h"
#include "runtime/signals.h"
#include "ordo/ordo.h"

#define MAX_TENSORS 512 /* a model's tensors: VGG16 has 32, DenseNet-121 364 */

typedef struct opts {
	uint64_t sizes[MAX_TENSORS];
	uint32_t n;
} opts;

static int on_opt(void *ud, const char *name, const char *arg, char *why,
		  size_t whylen)
{
	opts *o = ud;
	char *copy, *tok, *save = NULL;

	(void)name;
	copy = strdup(arg);
	if (!copy)
		return PS_ENOMEM;
	o->n = 0;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long long v = strtoull(tok, &end, 10);
		if (*end || v == 0 || o->n == MAX_TENSORS) {
			snprintf(why, whylen, "--sizes: bad list '%s'", arg);
			free(copy);
			return PS_EINVAL;
		}
		o->sizes[o->n++] = v;
	}
	free(copy);
	return PS_OK;
}

/* Waits until path exists (or a signal came); path NULL: no wait. Creates
 * held (when not NULL) first. */
static void hold_until(const char *path, const char *held)
{
	struct timespec tick = {0, 10 * 1000 * 1000};

	if (path && held) {
		FILE *f = fopen(held, "w");
		if (!f)
			PS_ERROR("cannot create %s", held);
		else
			fclose(f);
	}
	while (path && access(path, F_OK) != 0 && !ps_signal_pending())
		nanosleep(&tick, NULL);
}

/* EXACT_WORKER_DUMP: every tensor's values, float32, in order; 0 or -1
 * with the error logged */
static int dump_values(const char *path, float *const *values, const opts *o)
{
	FILE *f = fopen(path, "wb");
	int bad;

	if (!f) {
		PS_ERROR("cannot write EXACT_WORKER_DUMP '%s': %m", path);
		return -1;
	}
	bad = 0;
	for (uint32_t k = 0; k < o->n && !bad; k++)
		bad = fwrite(values[k], sizeof(float), o->sizes[k], f) !=
		      o->sizes[k];
	if (fclose(f) != 0 || bad) {
		PS_ERROR("cannot write EXACT_WORKER_DUMP '%s'", path);
		return -1;
	}
	return 0;
}

static double mean_grad(uint32_t k, uint64_t j, uint64_t i, int workers)
{
	return (double)workers * (double)((j + k) % 13 + i) + (workers - 1);
}

int main(int argc, char **argv)
{
	static const ps_cli_opt extra[] = {
		{"sizes", "N,N,...", "tensor sizes in elements"},
		{NULL, NULL, NULL},
	};
	opts o = {.sizes = {1000, 4097, 10}, .n = 3};
	const ps_cli_info info = {
		.prog = "exact_worker",
		.summary = "Checks that training is exact (a test program).",
		.opts = extra,
		.on_opt = on_opt,
		.ud = &o,
	};
	float *values[MAX_TENSORS] = {0}, *grads[MAX_TENSORS] = {0};
	double *expect[MAX_TENSORS] = {0};
	uint64_t checked = 0, wrong = 0;
	ps_client *c = NULL;
	ps_cli_status st;
	ps_config cfg;
	int rc, status = 1, rank, workers, history;
	const char *dump;
	bool check, avg;
	uint64_t t0 = 0, first = 0, i = 0, hold_at;

	ps_signals_install();
	if (getenv("EXACT_WORKER_SIZES")) {
		char err[256];
		if (on_opt(&o, "sizes", getenv("EXACT_WORKER_SIZES"), err,
			   sizeof(err)) != PS_OK) {
			fprintf(stderr, "exact_worker: %s\n", err);
			return 2;
		}
	}
	st = ps_cli_parse(argc, argv, &info, &cfg);
	if (st != PS_CLI_RUN)
		return ps_cli_exit_status(st);
	ps_log_init("exact-worker", cfg.log.level);
	dump = getenv("EXACT_WORKER_DUMP");
	avg = cfg.server.optimizer == PS_OPTIMIZER_NONE;
	check = avg || (cfg.train.lr == 1.0 && cfg.train.momentum == 0.0);
	if ((!check && !dump) || cfg.train.mode != PS_MODE_SYNC) {
		PS_ERROR("needs train.lr = 1, train.momentum = 0, sync mode "
			 "(any lr and momentum with EXACT_WORKER_DUMP or "
			 "server.optimizer = none)");
		return 2;
	}
	rc = ps_client_create(&cfg, &c);
	for (uint32_t k = 0; rc == PS_OK && k < o.n; k++) {
		char name[32];
		values[k] = malloc(o.sizes[k] * sizeof(float));
		grads[k] = malloc(o.sizes[k] * sizeof(float));
		if (check)
			expect[k] = malloc(o.sizes[k] * sizeof(double));
		if (!values[k] || !grads[k] || (check && !expect[k])) {
			rc = PS_ENOMEM;
			break;
		}
		for (uint64_t j = 0; j < o.sizes[k]; j++) {
			values[k][j] = (float)((j % 1000) + 1000 * k);
			if (check)
				expect[k][j] = values[k][j];
		}
		snprintf(name, sizeof(name), "t%u", k);
		rc = ps_client_declare(c, name, o.sizes[k], values[k], NULL);
	}
	if (rc == PS_OK)
		rc = ps_client_start(c);
	if (rc != PS_OK) {
		PS_ERROR("cannot start: %s", ps_strerror(rc));
		goto out;
	}
	rank = ps_client_rank(c);
	workers = ps_client_num_workers(c);
	first = ps_client_start_iteration(c);
	history = getenv("EXACT_WORKER_HISTORY_WORKERS")
			  ? atoi(getenv("EXACT_WORKER_HISTORY_WORKERS"))
			  : workers;
	for (uint32_t k = 0; check && k < o.n; k++)
		for (uint64_t j = 0; j < o.sizes[k]; j++) {
			for (uint64_t h = 0; h < first && !avg; h++)
				expect[k][j] -= mean_grad(k, j, h, history);
			if (avg && first > 0)
				expect[k][j] = mean_grad(k, j, first - 1,
							 history);
			checked++;
			if ((double)values[k][j] != expect[k][j] && wrong++ < 10)
				PS_ERROR("resumed at iteration %llu: tensor %u "
					 "element %llu: %.1f, expected %.1f",
					 (unsigned long long)first, k,
					 (unsigned long long)j,
					 (double)values[k][j], expect[k][j]);
		}
	hold_at = getenv("EXACT_WORKER_HOLD_AT")
			  ? strtoull(getenv("EXACT_WORKER_HOLD_AT"), NULL, 10)
			  : (uint64_t)cfg.train.iterations - 1;
	uint64_t every = getenv("EXACT_WORKER_EVERY")
			     ? strtoull(getenv("EXACT_WORKER_EVERY"), NULL, 10)
			     : 0;
	t0 = ps_now_ns();
	if (getenv("EXACT_WORKER_LIE_PROGRESS"))
		(void)ps_client_next_iteration(
		    c, strtoull(getenv("EXACT_WORKER_LIE_PROGRESS"), NULL, 10));
	for (i = first; rc == PS_OK && ps_client_next_iteration(c, i); i++) {
		if (every && i > first && (i - first) % every == 0) {
			printf("exact: worker %d at iteration %llu\n", rank,
			       (unsigned long long)i);
			fflush(stdout);
		}
		if (i == hold_at)
			hold_until(getenv("EXACT_WORKER_HOLD"),
				   getenv("EXACT_WORKER_HELD"));
		for (uint32_t k = o.n; k-- > 0 && rc == PS_OK;) {
			for (uint64_t j = 0; j < o.sizes[k]; j++)
				grads[k][j] = (float)(workers *
						      ((j + k) % 13 + i) +
						      2 * rank);
			rc = ps_client_push(c, k, grads[k], i);
		}
		for (uint32_t k = 0; k < o.n && rc == PS_OK; k++) {
			rc = ps_client_wait(c, k, i + 1, -1);
			for (uint64_t j = 0; check && rc == PS_OK && j < o.sizes[k];
			     j++) {
				if (avg) /* the average itself */
					expect[k][j] =
						mean_grad(k, j, i, workers);
				else
					expect[k][j] -=
						mean_grad(k, j, i, workers);
				checked++;
				if ((double)values[k][j] == expect[k][j])
					continue;
				if (wrong++ < 10)
					PS_ERROR("iteration %llu tensor %u "
						 "element %llu: %.1f, expected "
						 "%.1f",
						 (unsigned long long)i + 1, k,
						 (unsigned long long)j,
						 (double)values[k][j],
						 expect[k][j]);
			}
		}
	}
	if (rc != PS_OK) {
		PS_ERROR("training failed: %s", ps_strerror(rc));
		goto out;
	}
	rc = ps_client_finish(
	    c, &(ps_client_result){
		   .iterations = i,
		   .seconds = (double)(ps_now_ns() - t0) / 1e9,
	       });
	if (rc != PS_OK) {
		PS_ERROR("finish failed: %s", ps_strerror(rc));
		goto out;
	}
	if (dump && rank == 0 && dump_values(dump, values, &o) != 0)
		goto out;
	if (!check) {
		printf("exact: worker %d of %d: iterations %llu..%d dumped, "
		       "not checked (lr %g, momentum %g)\n",
		       rank, workers, (unsigned long long)first + 1, (int)i,
		       cfg.train.lr, cfg.train.momentum);
		status = 0;
		goto out;
	}
	printf("exact: worker %d of %d: %llu values checked over iterations "
	       "%llu..%d, %llu wrong\n",
	       rank, workers, (unsigned long long)checked,
	       (unsigned long long)first + 1, (int)i,
	       (unsigned long long)wrong);
	status = wrong == 0 && checked > 0 ? 0 : 1;
out:
	ps_client_destroy(&c);
	for (uint32_t k = 0; k < o.n; k++) {
		free(values[k]);
		free(grads[k]);
		free(expect[k]);
	}
	return status;
}
