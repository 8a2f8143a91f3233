/*
 * cuda/optimizer_kernels.cu - server/optimizer.c on a CUDA device.
 *
 * Each kernel is a grid-stride loop over i; each element is computed by the
 * same operations, in the same order, as the CPU loop. Every floating-point
 * operation is an explicit round-to-nearest intrinsic (never contracted
 * into an FMA), and the file is compiled with --fmad=false besides
 * (cuda/CMakeLists.txt), so nothing depends on the contraction rules.
 * 1 / count is computed on the host, as the CPU code computes it once
 * outside its loop: no division in the kernels.
 */
#include <cuda_runtime.h>

#include "cuda/optimizer_cuda.h"
#include "ordo/error.h"
extern "C" {
#include "common/log.h" /* a C header without extern "C" */
}

namespace {

__global__ void accum_set(double *__restrict__ acc,
			  const float *__restrict__ g, size_t n)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		acc[i] = (double)g[i];
}

__global__ void accum_add(double *__restrict__ acc,
			  const float *__restrict__ g, size_t n)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		acc[i] = __dadd_rn(acc[i], (double)g[i]);
}

/* v = mf * v + g; w = w - lrf * v, as float32 operations */
__device__ __forceinline__ void step(float *__restrict__ w,
				     float *__restrict__ v, size_t i, float g,
				     float lrf, float mf)
{
	float vi = __fadd_rn(__fmul_rn(mf, v[i]), g);
	v[i] = vi;
	w[i] = __fsub_rn(w[i], __fmul_rn(lrf, vi));
}

__global__ void sgd_apply(float *__restrict__ w, float *__restrict__ v,
			  const double *__restrict__ acc, size_t n,
			  double scale, float lrf, float mf)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		step(w, v, i, __double2float_rn(__dmul_rn(acc[i], scale)),
		     lrf, mf);
}

/* first && count == 1 in the CPU code: g[i] itself is the average */
__global__ void sgd_apply_only(float *__restrict__ w, float *__restrict__ v,
			       const float *__restrict__ g, size_t n,
			       float lrf, float mf)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		step(w, v, i, g[i], lrf, mf);
}

__global__ void sgd_apply_last(float *__restrict__ w, float *__restrict__ v,
			       const double *__restrict__ acc,
			       const float *__restrict__ g, size_t n,
			       int first, double scale, float lrf, float mf)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		double sum = first ? (double)g[i]
				   : __dadd_rn(acc[i], (double)g[i]);
		step(w, v, i, __double2float_rn(__dmul_rn(sum, scale)), lrf,
		     mf);
	}
}

/* server.optimizer = none: the average itself (ps_avg_last) */
__global__ void avg_last(float *__restrict__ w,
			 const double *__restrict__ acc,
			 const float *__restrict__ g, size_t n, int first,
			 double scale)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		double sum = first ? (double)g[i]
				   : __dadd_rn(acc[i], (double)g[i]);
		w[i] = __double2float_rn(__dmul_rn(sum, scale));
	}
}

/* Adam / AdamW (ps_adam_apply_last), operation for operation */
__global__ void adam_apply_last(float *__restrict__ w, float *__restrict__ m,
				float *__restrict__ s,
				const double *__restrict__ acc,
				const float *__restrict__ g, size_t n,
				int first, double scale, ps_adam_scalars k)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		double sum = first ? (double)g[i]
				   : __dadd_rn(acc[i], (double)g[i]);
		float gi = __double2float_rn(__dmul_rn(sum, scale));
		float wi = __fmul_rn(w[i], k.decay);
		gi = __fadd_rn(gi, __fmul_rn(k.wd, w[i]));
		float mi = __fadd_rn(__fmul_rn(k.beta1, m[i]),
				     __fmul_rn(k.one_minus_beta1, gi));
		float si = __fadd_rn(__fmul_rn(k.beta2, s[i]),
				     __fmul_rn(__fmul_rn(k.one_minus_beta2, gi),
					       gi));
		float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(si), k.bc2_sqrt),
					k.eps);
		m[i] = mi;
		s[i] = si;
		w[i] = __fsub_rn(wi, __fmul_rn(k.step_size,
					       __fdiv_rn(mi, denom)));
	}
}

/* Blocks for n elements: one element per thread up to 2^20 blocks, then
 * the grid-stride loops take over. */
unsigned blocks_for(size_t n)
{
	size_t b = (n + PS_CUDA_BLOCK - 1) / PS_CUDA_BLOCK;
	return b > (1u << 20) ? (1u << 20) : (unsigned)b;
}

int launched(const char *what)
{
	cudaError_t e = cudaGetLastError();
	if (e == cudaSuccess)
		return PS_OK;
	ps_log(PS_LOG_ERROR, "CUDA kernel %s: launch failed: %s", what,
	       cudaGetErrorString(e));
	return e == cudaErrorMemoryAllocation ? PS_ENOMEM : PS_EIO;
}

} // namespace

extern "C" int ps_cuda_accum_set(double *acc, const float *g, size_t n,
				 void *stream)
{
	if (n == 0)
		return PS_OK;
	if (!acc || !g)
		return PS_EINVAL;
	accum_set<<<blocks_for(n), PS_CUDA_BLOCK, 0, (cudaStream_t)stream>>>(
	    acc, g, n);
	return launched("accum_set");
}

extern "C" int ps_cuda_accum_add(double *acc, const float *g, size_t n,
				 void *stream)
{
	if (n == 0)
		return PS_OK;
	if (!acc || !g)
		return PS_EINVAL;
	accum_add<<<blocks_for(n), PS_CUDA_BLOCK, 0, (cudaStream_t)stream>>>(
	    acc, g, n);
	return launched("accum_add");
}

extern "C" int ps_cuda_sgd_apply(float *w, float *v, const double *acc,
				 size_t n, unsigned count, double lr,
				 double momentum, void *stream)
{
	if (count == 0 || n == 0)
		return PS_OK;
	if (!w || !v || !acc)
		return PS_EINVAL;
	const double scale = 1.0 / (double)count; /* host IEEE division */
	sgd_apply<<<blocks_for(n), PS_CUDA_BLOCK, 0, (cudaStream_t)stream>>>(
	    w, v, acc, n, scale, (float)lr, (float)momentum);
	return launched("sgd_apply");
}

extern "C" int ps_cuda_sgd_apply_last(float *w, float *v, const double *acc,
				      const float *g, size_t n, int first,
				      unsigned count, double lr,
				      double momentum, void *stream)
{
	if (count == 0 || n == 0)
		return PS_OK;
	if (!w || !v || !g || (!first && !acc))
		return PS_EINVAL;
	const double scale = 1.0 / (double)count;
	const float lrf = (float)lr, mf = (float)momentum;
	if (first && count == 1) {
		sgd_apply_only<<<blocks_for(n), PS_CUDA_BLOCK, 0,
				 (cudaStream_t)stream>>>(w, v, g, n, lrf, mf);
		return launched("sgd_apply_only");
	}
	sgd_apply_last<<<blocks_for(n), PS_CUDA_BLOCK, 0,
			 (cudaStream_t)stream>>>(w, v, acc, g, n, first, scale,
						 lrf, mf);
	return launched("sgd_apply_last");
}

extern "C" int ps_cuda_avg_last(float *w, const double *acc, const float *g,
				size_t n, int first, unsigned count,
				void *stream)
{
	if (count == 0 || n == 0)
		return PS_OK;
	if (!w || !g || (!first && !acc))
		return PS_EINVAL;
	if (first && count == 1) { /* g itself, as ps_avg_last copies it */
		cudaError_t e = cudaMemcpyAsync(w, g, n * sizeof(float),
						cudaMemcpyDeviceToDevice,
						(cudaStream_t)stream);
		if (e == cudaSuccess)
			return PS_OK;
		ps_log(PS_LOG_ERROR, "avg_last: cudaMemcpyAsync: %s",
		       cudaGetErrorString(e));
		return PS_EIO;
	}
	avg_last<<<blocks_for(n), PS_CUDA_BLOCK, 0, (cudaStream_t)stream>>>(
	    w, acc, g, n, first, 1.0 / (double)count);
	return launched("avg_last");
}

extern "C" int ps_cuda_adam_apply_last(float *w, float *m, float *s,
				       const double *acc, const float *g,
				       size_t n, int first, unsigned count,
				       const ps_adam_scalars *k, void *stream)
{
	if (count == 0 || n == 0)
		return PS_OK;
	if (!w || !m || !s || !g || !k || (!first && !acc))
		return PS_EINVAL;
	adam_apply_last<<<blocks_for(n), PS_CUDA_BLOCK, 0,
			  (cudaStream_t)stream>>>(w, m, s, acc, g, n, first,
						  1.0 / (double)count, *k);
	return launched("adam_apply_last");
}
