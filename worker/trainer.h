/*
 * worker/trainer.h - ps-worker's training loop over the client API.
 *
 * Builds the model of cfg->model, loads this worker's data shard, declares
 * the model's tensors, and trains for train.iterations: each iteration
 * computes the gradient of its batch, pushes every tensor (last layer
 * first, as backpropagation produces them), and waits for the next
 * version of the parameters (sync) or pulls them (async). One progress line
 * per iteration goes to stdout:
 *   worker 0 iter 3/30 loss 2.012345 time 1.234 ms pushed 12.3 KiB received 12.3 KiB
 * Worker 0 writes the final parameters to train.dump_params if set, as text:
 * for each tensor a line "tensor NAME NUMEL" and then NUMEL lines of values
 * printed with %.9g (exact float32 round trip).
 */
#ifndef ORDO_WORKER_TRAINER_H
#define ORDO_WORKER_TRAINER_H

#include <stdio.h>

#include "common/config.h"

/* Returns the process exit status (0, 1, 128 + signal). */
int ps_trainer_run(const ps_config *cfg);

/* Writes tensors in the dump format above. */
int ps_params_write(FILE *out, uint32_t n, const char *const *names,
		    const uint64_t *numel, float *const *values);

#endif /* ORDO_WORKER_TRAINER_H */
