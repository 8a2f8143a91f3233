/*
 * cuda/optimizer_cuda.h - server/optimizer.h's aggregation and SGD and
 * Adam steps on a CUDA device (PS_WITH_CUDA=ON; docs/cuda.md).
 *
 * Every pointer is device memory; stream is a cudaStream_t passed as void *
 * (NULL: the legacy default stream) so that C callers need no CUDA header.
 * The launchers only enqueue: results are there once the stream is
 * synchronised.
 *
 * The arithmetic is server/optimizer.c's, operation for operation: the sum
 * in double, scale = 1 / count computed once (on the host, in IEEE double),
 * one rounding to float32, the float32 step v = m * v + g; w = w - lr * v.
 * The kernels are built with --fmad=false and use the round-to-nearest
 * intrinsics (__fmul_rn, __fadd_rn, ...), which are never contracted into
 * an FMA, so for finite values the results equal the CPU's bit for bit
 * (tests/cuda/test_cuda_optimizer.c). A NaN stays a NaN, but the GPU
 * returns the canonical NaN where x86 propagates an operand's payload.
 *
 * Returns PS_OK, PS_EINVAL (a NULL array with n > 0) or the launch's
 * error (PS_ENOMEM, PS_EIO), logged with cudaGetErrorString.
 *
 * Threads: as thread-safe as the CUDA runtime (any thread, any stream).
 */
#ifndef ORDO_CUDA_OPTIMIZER_CUDA_H
#define ORDO_CUDA_OPTIMIZER_CUDA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "common/adam_scalars.h"

/* Threads per block of every kernel (tests use sizes that are not
 * multiples of it). */
#define PS_CUDA_BLOCK 256

/* acc[i] = g[i] */
int ps_cuda_accum_set(double *acc, const float *g, size_t n, void *stream);

/* acc[i] += g[i] */
int ps_cuda_accum_add(double *acc, const float *g, size_t n, void *stream);

/* ps_sgd_apply: the step with the average acc / count (count 0: nothing) */
int ps_cuda_sgd_apply(float *w, float *v, const double *acc, size_t n,
		      unsigned count, double lr, double momentum,
		      void *stream);

/* ps_sgd_apply_last: g summed in (acc not read when first) and the step
 * applied in one pass, the sum not written back */
int ps_cuda_sgd_apply_last(float *w, float *v, const double *acc,
			   const float *g, size_t n, int first,
			   unsigned count, double lr, double momentum,
			   void *stream);

/* server.optimizer = none: w = the round's average, ps_avg_last's
 * roundings (acc not read when first). */
int ps_cuda_avg_last(float *w, const double *acc, const float *g, size_t n,
		     int first, unsigned count, void *stream);

/* server.optimizer = adam | adamw: ps_adam_apply_last with the step's
 * scalars (ps_adam_scalars_of, on the host); m and s the moments. */
int ps_cuda_adam_apply_last(float *w, float *m, float *s, const double *acc,
			    const float *g, size_t n, int first,
			    unsigned count, const ps_adam_scalars *k,
			    void *stream);

#ifdef __cplusplus
}
#endif
#endif /* ORDO_CUDA_OPTIMIZER_CUDA_H */
