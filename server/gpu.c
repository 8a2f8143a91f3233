/*
 * server/gpu.c - the server's update path on a CUDA device (see gpu.h).
 *
 * Copies, per push: payload (transport memory, pageable) -> pinned staging
 * (memcpy) -> device gradient (cudaMemcpyAsync, asynchronous from pinned
 * memory) -> kernel. The staging buffer is written again only after the
 * event recorded behind the last copy out of it has completed. The device
 * gradient buffer needs no such wait: the next copy into it is enqueued on
 * the same stream, after the kernels that read it.
 *
 * After an update the new values are copied device -> host with
 * cudaMemcpyAsync into the writable host buffer, then the stream is
 * synchronised (cudaStreamSynchronize), so the values a send or a
 * checkpoint reads afterwards are the update's. Work is done in SLICEs with
 * heartbeat ticks between, as on the CPU.
 */
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "common/log.h"
#include "cuda/device.h"
#include "cuda/optimizer_cuda.h"
#include "server/gpu.h"

struct ps_gpu {
	cudaStream_t stream;
	cudaEvent_t staged; /* the last copy out of h_stage is done */
	int staged_pending;
	float *d_values, *d_momentum;
	float *d_second; /* adam, adamw: the second moment */
	double *d_acc;
	float *d_grad;  /* a push's gradient (the largest partition) */
	float *h_stage; /* pinned, the largest partition */
	size_t stage_numel;
};

static double gib(size_t bytes)
{
	return (double)bytes / (1024.0 * 1024.0 * 1024.0);
}

/* Logs a failed CUDA call; PS_EIO. */
static int cuda_fail(const char *what, cudaError_t e)
{
	(void)cudaGetLastError();
	PS_ERROR("server.device = cuda: %s: %s", what, cudaGetErrorString(e));
	return PS_EIO;
}

int ps_gpu_open(const ps_config *cfg)
{
	char err[1024];
	ps_cuda_info info;
	int rc = ps_cuda_open(cfg->server.cuda_device, &info, err,
			      sizeof(err));

	if (rc != PS_OK) {
		PS_ERROR("%s", err);
		return rc;
	}
	PS_INFO("server.device = cuda: device %d (%s, %.1f GiB): aggregation "
		"and SGD on the GPU",
		info.index, info.name, gib(info.total_bytes));
	return PS_OK;
}

/* Offset of a partition in the arenas (host and device alike). */
static size_t at(const server *s, const shard_part *p)
{
	return (size_t)(p->momentum - s->momentum_arena);
}

static int dev_alloc(void **ptr, size_t bytes, const char *what)
{
	char err[1024];
	int rc = ps_cuda_alloc(ptr, bytes, what, err, sizeof(err));

	if (rc != PS_OK)
		PS_ERROR("server.device = cuda: cannot hold the shard on the "
			 "device: %s",
			 err);
	return rc;
}

int ps_gpu_setup(server *s)
{
	struct ps_gpu *g = calloc(1, sizeof(*g));
	size_t n = s->arena_numel, big = 0;
	cudaError_t e;
	int rc;

	if (!g)
		return PS_ENOMEM;
	s->gpu = g;
	for (uint32_t k = 0; k < s->nparts; k++)
		if (s->parts[k].desc->numel > big)
			big = s->parts[k].desc->numel;
	e = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking);
	if (e != cudaSuccess)
		return cuda_fail("cudaStreamCreateWithFlags", e);
	e = cudaEventCreateWithFlags(&g->staged, cudaEventDisableTiming);
	if (e != cudaSuccess) {
		g->staged = NULL;
		return cuda_fail("cudaEventCreateWithFlags", e);
	}
	if (n == 0)
		return PS_OK; /* no partition here: nothing to hold */
	rc = dev_alloc((void **)&g->d_values, n * sizeof(float),
		       "the shard's values");
	if (rc == PS_OK)
		rc = dev_alloc((void **)&g->d_momentum, n * sizeof(float),
			       "the shard's momentum");
	if (rc == PS_OK && ps_server_has_second(s))
		rc = dev_alloc((void **)&g->d_second, n * sizeof(float),
			       "the shard's second moment (Adam)");
	if (rc == PS_OK)
		rc = dev_alloc((void **)&g->d_acc, n * sizeof(double),
			       "the shard's gradient sums, in double");
	if (rc == PS_OK)
		rc = dev_alloc((void **)&g->d_grad, big * sizeof(float),
			       "a push's gradient, the largest partition");
	if (rc != PS_OK)
		return rc;
	e = cudaMallocHost((void **)&g->h_stage, big * sizeof(float));
	if (e != cudaSuccess) {
		g->h_stage = NULL;
		(void)cudaGetLastError();
		PS_ERROR("server.device = cuda: cudaMallocHost of %zu bytes "
			 "(%.2f GiB, pinned staging for pushes, the largest "
			 "partition): %s",
			 big * sizeof(float), gib(big * sizeof(float)),
			 cudaGetErrorString(e));
		return e == cudaErrorMemoryAllocation ? PS_ENOMEM : PS_EIO;
	}
	g->stage_numel = big;
	/* v starts at 0, as the CPU's zeroed arena */
	e = cudaMemsetAsync(g->d_momentum, 0, n * sizeof(float), g->stream);
	if (e == cudaSuccess && g->d_second)
		e = cudaMemsetAsync(g->d_second, 0, n * sizeof(float),
				    g->stream);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(g->stream);
	if (e != cudaSuccess)
		return cuda_fail("zeroing the momentum", e);
	PS_INFO("server.device = cuda: the shard on the device: %.2f MiB "
		"(values, momentum, sums in double, one partition's "
		"gradient); %.2f MiB of pinned staging",
		(double)(n * 16 + big * sizeof(float)) / 1048576.0,
		(double)(big * sizeof(float)) / 1048576.0);
	return PS_OK;
}

int ps_gpu_upload(server *s, const shard_part *p, int momentum)
{
	struct ps_gpu *g = s->gpu;
	size_t bytes = p->desc->numel * sizeof(float);
	cudaError_t e;

	if (bytes == 0)
		return PS_OK;
	/* from pageable memory: the call returns once the source may be
	 * reused; the synchronisation waits for the copy to land */
	e = cudaMemcpyAsync(g->d_values + at(s, p), p->values->data, bytes,
			    cudaMemcpyHostToDevice, g->stream);
	if (e == cudaSuccess && momentum)
		e = cudaMemcpyAsync(g->d_momentum + at(s, p), p->momentum,
				    bytes, cudaMemcpyHostToDevice, g->stream);
	if (e == cudaSuccess && momentum && g->d_second)
		e = cudaMemcpyAsync(g->d_second + at(s, p), p->second, bytes,
				    cudaMemcpyHostToDevice, g->stream);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(g->stream);
	return e == cudaSuccess ? PS_OK : cuda_fail("uploading values", e);
}

/* Copies [off, off + n) of the op's payload to the device gradient
 * buffer, through the pinned staging buffer. */
static int stage(struct ps_gpu *g, const ps_msg *msg, size_t off, size_t n)
{
	cudaError_t e;

	if (off + n > g->stage_numel ||
	    msg->payload_len < (off + n) * sizeof(float)) {
		PS_ERROR("server.device = cuda: a push of %zu bytes, elements "
			 "%zu..%zu: past the staging buffer",
			 msg->payload_len, off, off + n);
		return PS_EINVAL;
	}
	if (g->staged_pending) {
		/* the previous push's copies out of h_stage */
		e = cudaEventSynchronize(g->staged);
		if (e != cudaSuccess)
			return cuda_fail("waiting for the staging buffer", e);
		g->staged_pending = 0;
	}
	memcpy(g->h_stage + off, (const char *)msg->payload +
					 off * sizeof(float),
	       n * sizeof(float));
	e = cudaMemcpyAsync(g->d_grad + off, g->h_stage + off,
			    n * sizeof(float), cudaMemcpyHostToDevice,
			    g->stream);
	return e == cudaSuccess ? PS_OK : cuda_fail("copying a push", e);
}

/* After the last slice of a push: the staging buffer is free again once
 * the copies enqueued so far are done. */
static int staged(struct ps_gpu *g)
{
	cudaError_t e = cudaEventRecord(g->staged, g->stream);

	if (e != cudaSuccess)
		return cuda_fail("cudaEventRecord", e);
	g->staged_pending = 1;
	return PS_OK;
}

int ps_gpu_aggregate(server *s, const ps_sproto_op *op)
{
	struct ps_gpu *g = s->gpu;
	shard_part *p = &s->parts[op->k];
	double *acc = g->d_acc + at(s, p);
	int rc = PS_OK;

	for (size_t off = 0; off < p->desc->numel && rc == PS_OK;
	     off += SLICE) {
		size_t n = p->desc->numel - off < SLICE ? p->desc->numel - off
							: SLICE;
		rc = stage(g, op->ctx, off, n);
		if (rc == PS_OK)
			rc = op->first ? ps_cuda_accum_set(acc + off,
							   g->d_grad + off, n,
							   g->stream)
				       : ps_cuda_accum_add(acc + off,
							   g->d_grad + off, n,
							   g->stream);
		ps_node_tick(&s->node);
	}
	return rc == PS_OK ? staged(g) : rc;
}

int ps_gpu_update(server *s, const ps_sproto_op *op)
{
	struct ps_gpu *g = s->gpu;
	shard_part *p = &s->parts[op->k];
	size_t o = at(s, p);
	const int kind = s->cfg->server.optimizer;
	const double lr = ps_server_round_lr(s, p);
	ps_adam_scalars k;
	cudaError_t e;
	int rc = PS_OK;

	if (ps_server_has_second(s)) { /* adam, adamw */
		ps_adam adam;
		ps_server_adam(s, p, &adam);
		ps_adam_scalars_of(&adam, &k);
	}

	for (size_t off = 0; off < p->desc->numel && rc == PS_OK;
	     off += SLICE) {
		size_t n = p->desc->numel - off < SLICE ? p->desc->numel - off
							: SLICE;
		rc = stage(g, op->ctx, off, n);
		if (rc != PS_OK)
			break;
		if (kind == PS_OPTIMIZER_NONE)
			rc = ps_cuda_avg_last(g->d_values + o + off,
					      g->d_acc + o + off,
					      g->d_grad + off, n, op->first,
					      op->count, g->stream);
		else if (kind == PS_OPTIMIZER_ADAM || kind == PS_OPTIMIZER_ADAMW)
			rc = ps_cuda_adam_apply_last(
				g->d_values + o + off, g->d_momentum + o + off,
				g->d_second + o + off, g->d_acc + o + off,
				g->d_grad + off, n, op->first, op->count, &k,
				g->stream);
		else
			rc = ps_cuda_sgd_apply_last(
				g->d_values + o + off, g->d_momentum + o + off,
				g->d_acc + o + off, g->d_grad + off, n,
				op->first, op->count, lr,
				s->cfg->train.momentum, g->stream);
		ps_node_tick(&s->node);
	}
	if (rc == PS_OK)
		rc = staged(g);
	if (rc != PS_OK)
		return rc;
	if (p->desc->numel == 0)
		return PS_OK;
	/* into the buffer make_writable left (no send holds it) */
	e = cudaMemcpyAsync(p->values->data, g->d_values + o,
			    p->desc->numel * sizeof(float),
			    cudaMemcpyDeviceToHost, g->stream);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(g->stream);
	if (e == cudaSuccess)
		g->staged_pending = 0; /* the stream is idle */
	return e == cudaSuccess ? PS_OK : cuda_fail("updating partition", e);
}

int ps_gpu_momentum_to_host(server *s, const shard_part *p)
{
	struct ps_gpu *g = s->gpu;
	cudaError_t e;

	if (p->desc->numel == 0)
		return PS_OK;
	e = cudaMemcpyAsync(p->momentum, g->d_momentum + at(s, p),
			    p->desc->numel * sizeof(float),
			    cudaMemcpyDeviceToHost, g->stream);
	if (e == cudaSuccess && g->d_second)
		e = cudaMemcpyAsync(p->second, g->d_second + at(s, p),
				    p->desc->numel * sizeof(float),
				    cudaMemcpyDeviceToHost, g->stream);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(g->stream);
	return e == cudaSuccess ? PS_OK
				: cuda_fail("copying momentum for a "
					    "checkpoint",
					    e);
}

void ps_gpu_free(server *s)
{
	struct ps_gpu *g = s->gpu;

	if (!g)
		return;
	if (g->stream)
		(void)cudaStreamSynchronize(g->stream);
	ps_cuda_free(g->d_values);
	ps_cuda_free(g->d_momentum);
	ps_cuda_free(g->d_second);
	ps_cuda_free(g->d_acc);
	ps_cuda_free(g->d_grad);
	if (g->h_stage)
		(void)cudaFreeHost(g->h_stage);
	if (g->staged)
		(void)cudaEventDestroy(g->staged);
	if (g->stream)
		(void)cudaStreamDestroy(g->stream);
	(void)cudaGetLastError();
	free(g);
	s->gpu = NULL;
}
