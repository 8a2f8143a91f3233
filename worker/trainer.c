/*
 * worker/trainer.c - ps-worker's training loop (trainer.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "runtime/clock.h"
#include "runtime/signals.h"
#include "ordo/ordo.h"
#include "worker/small_model.h"
#include "worker/trainer.h"

int ps_params_write(FILE *out, uint32_t n, const char *const *names,
		    const uint64_t *numel, float *const *values)
{
	for (uint32_t t = 0; t < n; t++) {
		fprintf(out, "tensor %s %llu\n", names[t],
			(unsigned long long)numel[t]);
		for (uint64_t i = 0; i < numel[t]; i++)
			fprintf(out, "%.9g\n", (double)values[t][i]);
	}
	return ferror(out) ? PS_EIO : PS_OK;
}

static int dump_params(const char *path, ps_small_model *m)
{
	uint32_t n = ps_small_model_num_tensors(m);
	const char *names[8];
	uint64_t numel[8];
	float *values[8];
	FILE *f;
	int rc;

	if (n > 8)
		return PS_EINVAL;
	for (uint32_t t = 0; t < n; t++) {
		names[t] = ps_small_model_tensor_name(m, t);
		numel[t] = ps_small_model_tensor_numel(m, t);
		values[t] = ps_small_model_params(m, t);
	}
	f = fopen(path, "w");
	if (!f) {
		PS_ERROR("cannot write train.dump_params '%s': %m", path);
		return PS_EIO;
	}
	rc = ps_params_write(f, n, names, numel, values);
	if (fclose(f) != 0 || rc != PS_OK) {
		PS_ERROR("cannot write train.dump_params '%s'", path);
		return PS_EIO;
	}
	return PS_OK;
}

static void human_bytes(uint64_t b, char *buf, size_t cap)
{
	if (b >= 1024ull * 1024 * 1024)
		snprintf(buf, cap, "%.2f GiB", (double)b / 1073741824.0);
	else if (b >= 1024ull * 1024)
		snprintf(buf, cap, "%.2f MiB", (double)b / 1048576.0);
	else if (b >= 1024)
		snprintf(buf, cap, "%.1f KiB", (double)b / 1024.0);
	else
		snprintf(buf, cap, "%llu B", (unsigned long long)b);
}

/* One training iteration: parameters in, gradients out. */
static int iterate(ps_client *c, ps_small_model *m, const ps_config *cfg,
		   uint64_t it, const float *x, const int32_t *y,
		   double *loss_p)
{
	uint32_t n = ps_small_model_num_tensors(m);
	int rc = PS_OK;

	if (cfg->train.mode == PS_MODE_ASYNC)
		for (uint32_t t = 0; t < n && rc == PS_OK; t++)
			rc = ps_client_pull(c, t, -1);
	if (rc != PS_OK)
		return rc;
	*loss_p = ps_small_model_step(m, x, y, (size_t)cfg->train.batch);
	/* Backpropagation produces the last layer's gradient first; the
	 * gate sends them in the job's order. */
	for (uint32_t t = n; t-- > 0 && rc == PS_OK;)
		rc = ps_client_push(c, t, ps_small_model_grads(m, t), it);
	if (cfg->train.mode == PS_MODE_SYNC)
		for (uint32_t t = 0; t < n && rc == PS_OK; t++)
			rc = ps_client_wait(c, t, it + 1, -1);
	else if (rc == PS_OK)
		rc = ps_client_flush(c, -1);
	return rc;
}

static int train(ps_client *c, ps_small_model *m, const ps_config *cfg,
		 double *loss_p, uint64_t *done_p)
{
	int rank = ps_client_rank(c);
	size_t batch = (size_t)cfg->train.batch;
	ps_dataset *d = NULL;
	float *x = malloc(batch * (size_t)cfg->model.input_dim * sizeof(float));
	int32_t *y = malloc(batch * sizeof(int32_t));
	ps_client_stats before, after;
	int rc = x && y ? PS_OK : PS_ENOMEM;

	if (rc == PS_OK)
		rc = ps_dataset_create(cfg, (uint64_t)cfg->train.seed, rank, &d);
	ps_client_get_stats(c, &before);
	*done_p = ps_client_start_iteration(c);
	for (uint64_t it = ps_client_start_iteration(c);
	     rc == PS_OK && ps_client_next_iteration(c, it); it++) {
		uint64_t t0 = ps_now_ns();
		char pushed[32], received[32];

		ps_dataset_batch(d, it, batch, x, y);
		rc = iterate(c, m, cfg, it, x, y, loss_p);
		if (rc != PS_OK) {
			PS_ERROR("iteration %llu failed: %s",
				 (unsigned long long)it, ps_strerror(rc));
			break;
		}
		ps_client_get_stats(c, &after);
		human_bytes(after.bytes_pushed - before.bytes_pushed, pushed,
			    sizeof(pushed));
		human_bytes(after.bytes_received - before.bytes_received,
			    received, sizeof(received));
		before = after;
		printf("worker %d iter %llu/%d loss %.6f time %.3f ms pushed "
		       "%s received %s\n",
		       rank, (unsigned long long)it + 1, cfg->train.iterations,
		       *loss_p, (double)(ps_now_ns() - t0) / 1e6, pushed,
		       received);
		fflush(stdout);
		*done_p = it + 1;
	}
	ps_dataset_free(&d);
	free(x);
	free(y);
	return rc;
}

int ps_trainer_run(const ps_config *cfg)
{
	ps_small_model *m = NULL;
	ps_client *c = NULL;
	double loss = 0.0;
	uint64_t done = 0, t0;
	int rc, status = 1;

	rc = ps_small_model_create(cfg, (uint64_t)cfg->train.seed, &m);
	if (rc != PS_OK) {
		PS_ERROR("cannot build the model: %s", ps_strerror(rc));
		return 1;
	}
	rc = ps_client_create(cfg, &c);
	for (uint32_t t = 0; rc == PS_OK && t < ps_small_model_num_tensors(m); t++)
		rc = ps_client_declare(c, ps_small_model_tensor_name(m, t),
				       ps_small_model_tensor_numel(m, t),
				       ps_small_model_params(m, t), NULL);
	if (rc == PS_OK)
		rc = ps_client_start(c);
	if (rc != PS_OK) {
		PS_ERROR("cannot join the job: %s", ps_strerror(rc));
		goto out;
	}
	t0 = ps_now_ns();
	rc = train(c, m, cfg, &loss, &done);
	if (rc != PS_OK)
		goto out;
	if (ps_client_rank(c) == 0 && cfg->train.dump_params[0] &&
	    dump_params(cfg->train.dump_params, m) != PS_OK)
		goto out;
	rc = ps_client_finish(c, &(ps_client_result){
					 .iterations = done,
					 .seconds = (double)(ps_now_ns() - t0) /
						    1e9,
					 .last_loss = loss,
				 });
	if (rc != PS_OK) {
		PS_ERROR("the job did not shut down cleanly: %s",
			 ps_strerror(rc));
		goto out;
	}
	status = 0;
out:
	if (status != 0 && ps_signal_pending())
		status = ps_signal_exit_status(ps_signal_pending());
	ps_client_destroy(&c);
	ps_small_model_free(&m);
	return status;
}
