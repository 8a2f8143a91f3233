/*
 * server/optimizer.h - aggregation, SGD with momentum, Adam and AdamW,
 * and the plain average (server.optimizer = none).
 *
 * Pushed gradients are summed in double (ps_accum_set for the first push of
 * a round, ps_accum_add for the others), so the sum does not
 * depend on the order pushes arrive in, beyond double rounding. The
 * average is taken in double and rounded to float32 once; the step is
 * float32, as PyTorch's SGD computes it for float32 parameters:
 *     g = (float)(sum / count);  v = momentum * v + g;  w = w - lr * v
 * (the PyTorch/ps-lite formulation, with v starting at 0; lr and momentum
 * rounded to float32). A double step cost three times a float32 one
 * (float<->double conversions at two doubles per SSE2 vector: 148 against
 * 50 us for 1 MiB here), and on one worker and one server the step is on
 * every round trip's critical path (docs/benchmarks.md).
 *
 * Threads: pure functions over the caller's arrays.
 */
#ifndef ORDO_SERVER_OPTIMIZER_H
#define ORDO_SERVER_OPTIMIZER_H

#include <stddef.h>
#include <stdint.h>

#include "common/adam_scalars.h"

/* acc[i] = g[i] (the first push of a round: no clearing pass needed) */
void ps_accum_set(double *acc, const float *g, size_t n);

/* acc[i] += g[i] */
void ps_accum_add(double *acc, const float *g, size_t n);

/* One SGD-with-momentum step with the averaged gradient acc / count
 * (computed as acc * (1 / count) in double: exact for power-of-two counts,
 * within one double rounding otherwise, far below float32 resolution;
 * then rounded to float32 for the step). */
void ps_sgd_apply(float *w, float *v, const double *acc, size_t n,
		  unsigned count, double lr, double momentum);

/* The last gradient g of a round summed in and the step applied, in one
 * pass (the server's update of a partition whose last push just came):
 * exactly ps_accum_add(acc, g) (ps_accum_set when first: acc is not read)
 * followed by ps_sgd_apply, without writing the sum back. */
void ps_sgd_apply_last(float *w, float *v, const double *acc, const float *g,
		       size_t n, int first, unsigned count, double lr,
		       double momentum);

/* server.optimizer = none: w[i] = (float)((acc[i] + g[i]) / count), the
 * round's averaged gradient (acc not read when first), rounded as
 * ps_sgd_apply_last rounds it. */
void ps_avg_last(float *w, const double *acc, const float *g, size_t n,
		 int first, unsigned count);

/*
 * Adam and AdamW (server.optimizer = adam | adamw): torch.optim's
 * single-tensor formulas, in the same order, for the step-th update
 * (step >= 1) of the partition, g the round's average as above:
 *     adam:  g = g + wd * w            adamw:  w = w * (1 - lr * wd)
 *     m = b1 * m + (1 - b1) * g
 *     s = b2 * s + (1 - b2) * g * g
 *     w = w - (lr / (1 - b1^step)) * m / (sqrt(s) / sqrt(1 - b2^step) + eps)
 * The per-step scalars are computed in double and rounded to float32
 * once; the elementwise work is float32, as torch does it for float32
 * parameters (m and s start at 0).
 */
typedef struct ps_adam {
	double lr, beta1, beta2, eps, weight_decay;
	int decoupled; /* 1: AdamW's decoupled weight decay */
	uint64_t step; /* the update this is, from 1 */
} ps_adam;

void ps_adam_scalars_of(const ps_adam *a, ps_adam_scalars *s_p);

/* One Adam/AdamW step of the round with the step's scalars (from
 * ps_adam_scalars_of), its last gradient g summed in on the way (as
 * ps_sgd_apply_last): m and s are the first and second moments. */
void ps_adam_apply_last(float *w, float *m, float *s, const double *acc,
			const float *g, size_t n, int first, unsigned count,
			const ps_adam_scalars *k);

#endif /* ORDO_SERVER_OPTIMIZER_H */
