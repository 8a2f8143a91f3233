/*
 * tests/cuda/emulated_cuda.c - a host emulation of the CUDA calls that
 * server/gpu.c makes, linked into ps-server-emulated (tests/cuda/
 * emulated.sh). NOT a GPU: it checks the server's wiring (offsets,
 * staging, copy-on-write, synchronisation, checkpoints, resume) on a
 * machine without one, never the kernels (test_cuda_optimizer does that).
 *
 * "Device" memory is malloc'd and filled with garbage. Every *Async copy,
 * memset and kernel launch is queued on its stream and runs only when the
 * stream is synchronised (cudaStreamSynchronize, or cudaEventSynchronize
 * on an event recorded on it): a host read before its synchronisation, or
 * a staging buffer rewritten before the copy out of it ran, gives wrong
 * values. Copies read their source when they run, stricter than CUDA for
 * pageable sources. The kernels are server/optimizer.c's.
 *
 * EMULATED_CUDA_NO_EVENT=1: cudaEventSynchronize does not wait (a
 * negative control: the staging buffer is then overwritten too early).
 * EMULATED_CUDA_LIMIT=N: allocations above N bytes fail as out of memory.
 *
 * It defines every function of ordo_cuda and every CUDA runtime function
 * server/gpu.c calls, so the linker takes none from libordo_cuda.a or
 * libcudart_static.a.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cuda/device.h"
#include "cuda/optimizer_cuda.h"
#include "ordo/error.h"
#include "server/optimizer.h"

enum { OP_COPY, OP_SET, OP_ASET, OP_AADD, OP_APPLY, OP_LAST };

typedef struct op {
	int kind;
	void *dst;
	const void *src;
	size_t n;
	int val;
	float *w, *v;
	double *acc;
	const float *g;
	int first;
	unsigned count;
	double lr, m;
} op;

struct CUstream_st {
	op *q;
	size_t n, cap;
};

struct CUevent_st {
	struct CUstream_st *s;
};

static void enqueue(struct CUstream_st *s, op o)
{
	if (!s) {
		fprintf(stderr, "emulated CUDA: work on the legacy default "
				"stream (server/gpu.c uses its own)\n");
		abort();
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		op *q = realloc(s->q, cap * sizeof(*q));
		if (!q)
			abort();
		s->q = q;
		s->cap = cap;
	}
	s->q[s->n++] = o;
}

static void run(struct CUstream_st *s)
{
	for (size_t i = 0; i < s->n; i++) {
		op *o = &s->q[i];
		switch (o->kind) {
		case OP_COPY:
			memcpy(o->dst, o->src, o->n);
			break;
		case OP_SET:
			memset(o->dst, o->val, o->n);
			break;
		case OP_ASET:
			ps_accum_set(o->acc, o->g, o->n);
			break;
		case OP_AADD:
			ps_accum_add(o->acc, o->g, o->n);
			break;
		case OP_APPLY:
			ps_sgd_apply(o->w, o->v, o->acc, o->n, o->count, o->lr,
				     o->m);
			break;
		default:
			ps_sgd_apply_last(o->w, o->v, o->acc, o->g, o->n,
					  o->first, o->count, o->lr, o->m);
		}
	}
	s->n = 0;
}

cudaError_t cudaGetLastError(void)
{
	return cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t e)
{
	(void)e;
	return "emulated CUDA error";
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
	(void)flags;
	*s = calloc(1, sizeof(**s));
	return *s ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
	run(s);
	free(s->q);
	free(s);
	return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
	run(s);
	return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags)
{
	(void)flags;
	*e = calloc(1, sizeof(**e));
	return *e ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
	free(e);
	return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
	e->s = s;
	return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
	if (e->s && !getenv("EMULATED_CUDA_NO_EVENT"))
		run(e->s);
	return cudaSuccess;
}

cudaError_t cudaMallocHost(void **p, size_t n)
{
	*p = malloc(n ? n : 1);
	return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaFreeHost(void *p)
{
	free(p);
	return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *d, int v, size_t n, cudaStream_t s)
{
	enqueue(s, (op){.kind = OP_SET, .dst = d, .val = v, .n = n});
	return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *d, const void *src, size_t n,
			    enum cudaMemcpyKind k, cudaStream_t s)
{
	(void)k;
	enqueue(s, (op){.kind = OP_COPY, .dst = d, .src = src, .n = n});
	return cudaSuccess;
}

int ps_cuda_open(int index, ps_cuda_info *info, char *err, size_t cap)
{
	if (index != 0) {
		snprintf(err, cap, "server.cuda_device = %d, but this machine "
			 "has 1 CUDA device(s): 0 host emulation", index);
		return PS_EINVAL;
	}
	if (info) {
		memset(info, 0, sizeof(*info));
		snprintf(info->name, sizeof(info->name),
			 "host emulation, not a GPU");
		info->count = 1;
		info->total_bytes = info->free_bytes = (size_t)1 << 30;
	}
	return PS_OK;
}

int ps_cuda_alloc(void **ptr, size_t bytes, const char *what, char *err,
		  size_t cap)
{
	const char *limit = getenv("EMULATED_CUDA_LIMIT");

	*ptr = NULL;
	if (limit && bytes > strtoull(limit, NULL, 10)) {
		snprintf(err, cap, "cudaMalloc of %zu bytes (%s) on CUDA "
			 "device 0 (host emulation): out of memory; the device "
			 "has %s bytes free of %s", bytes, what, limit, limit);
		return PS_ENOMEM;
	}
	*ptr = malloc(bytes ? bytes : 1);
	if (!*ptr) {
		snprintf(err, cap, "emulated cudaMalloc of %zu bytes: out of "
			 "host memory", bytes);
		return PS_ENOMEM;
	}
	memset(*ptr, 0xA5, bytes); /* device memory is not zeroed */
	return PS_OK;
}

void ps_cuda_free(void *ptr)
{
	free(ptr);
}

int ps_cuda_sync(void *stream, char *err, size_t cap)
{
	(void)err;
	(void)cap;
	run(stream);
	return PS_OK;
}

int ps_cuda_accum_set(double *acc, const float *g, size_t n, void *stream)
{
	enqueue(stream, (op){.kind = OP_ASET, .acc = acc, .g = g, .n = n});
	return PS_OK;
}

int ps_cuda_accum_add(double *acc, const float *g, size_t n, void *stream)
{
	enqueue(stream, (op){.kind = OP_AADD, .acc = acc, .g = g, .n = n});
	return PS_OK;
}

int ps_cuda_sgd_apply(float *w, float *v, const double *acc, size_t n,
		      unsigned count, double lr, double momentum,
		      void *stream)
{
	enqueue(stream, (op){.kind = OP_APPLY, .w = w, .v = v,
			     .acc = (double *)acc, .n = n, .count = count,
			     .lr = lr, .m = momentum});
	return PS_OK;
}

int ps_cuda_sgd_apply_last(float *w, float *v, const double *acc,
			   const float *g, size_t n, int first,
			   unsigned count, double lr, double momentum,
			   void *stream)
{
	enqueue(stream, (op){.kind = OP_LAST, .w = w, .v = v,
			     .acc = (double *)acc, .g = g, .n = n,
			     .first = first, .count = count, .lr = lr,
			     .m = momentum});
	return PS_OK;
}
