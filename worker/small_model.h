/*
 * worker/small_model.h - a small real model trained numerically.
 *
 * Softmax regression (one tensor pair: weight [classes x input], bias
 * [classes]) or a two-layer MLP (fc1 [hidden x input] + bias, ReLU, fc2
 * [classes x hidden] + bias), float32 parameters, cross-entropy loss on
 * a synthetic classification data set.
 *
 * Data set: generated deterministically from the seed, independent of the
 * number of workers: a fixed random "teacher" softmax-regression labels
 * Gaussian inputs. Worker w's shard is global samples
 * [w * samples_per_worker, (w + 1) * samples_per_worker). Iteration i of
 * worker w uses the `batch` samples starting at (i * batch) mod
 * samples_per_worker of its shard (wrapping around).
 *
 * Gradients are the mean over the batch, accumulated in double so that the
 * order of summation barely matters (the equivalence test compares W
 * workers with one process on the union of their batches).
 *
 * Threads: a model is used by one thread.
 */
#ifndef ORDO_WORKER_SMALL_MODEL_H
#define ORDO_WORKER_SMALL_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"

typedef struct ps_small_model ps_small_model;
typedef struct ps_dataset ps_dataset;

/* Model from cfg->model (kind and sizes); parameters initialised from
 * seed (same seed, same values). */
int ps_small_model_create(const ps_config *cfg, uint64_t seed, ps_small_model **m_p);
void ps_small_model_free(ps_small_model **m_p);

uint32_t ps_small_model_num_tensors(const ps_small_model *m);
const char *ps_small_model_tensor_name(const ps_small_model *m, uint32_t t);
uint64_t ps_small_model_tensor_numel(const ps_small_model *m, uint32_t t);
float *ps_small_model_params(ps_small_model *m, uint32_t t); /* numel floats */
float *ps_small_model_grads(ps_small_model *m, uint32_t t);  /* numel floats */

/* Forward and backward over n samples (x: n x input_dim, y: labels):
 * fills every gradient buffer with the mean gradient, returns mean loss. */
double ps_small_model_step(ps_small_model *m, const float *x, const int32_t *y, size_t n);

/* Mean loss only (no gradients). */
double ps_small_model_loss(ps_small_model *m, const float *x, const int32_t *y, size_t n);

/* The data set shard of worker `rank` (see above). */
int ps_dataset_create(const ps_config *cfg, uint64_t seed, int rank,
		      ps_dataset **d_p);
void ps_dataset_free(ps_dataset **d_p);
/* Copies iteration i's batch into x (batch x input_dim) and y (batch). */
void ps_dataset_batch(const ps_dataset *d, uint64_t iteration, size_t batch,
		      float *x, int32_t *y);

#endif /* ORDO_WORKER_SMALL_MODEL_H */
