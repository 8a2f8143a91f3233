/*
 * tests/cuda/emulated_cuda.c - a host emulation of the CUDA runtime calls
 * that server/gpu.c and cuda/staging.c make (and those of the test worker
 * tests/cuda/cuda_client_worker.c), linked into ps-server-emulated and
 * cuda_client_worker_emulated (tests/cuda/emulated.sh,
 * tests/cuda/emulated_client.sh). NOT a GPU: it checks the wiring of the
 * server's update path and of the client's device tensors (offsets,
 * staging, the order of copies, events, synchronisation, checkpoints,
 * resume) on a machine without one, never the kernels
 * (test_cuda_optimizer does that).
 *
 * "Device" memory is malloc'd, filled with garbage and remembered, so that
 * cudaPointerGetAttributes tells it from host memory. Every *Async copy,
 * memset and kernel launch is queued on its stream and runs only when
 * something waits for it: cudaStreamSynchronize, cudaEventSynchronize on
 * an event recorded on the stream (up to that event only, as on a GPU),
 * or a stream that cudaStreamWaitEvent made wait for it, when that
 * stream's queue runs. So a host read before its synchronisation, or a
 * staging buffer rewritten before the copy out of it ran, gives wrong
 * values. Copies read their source when they run, stricter than CUDA for
 * pageable sources. The kernels are server/optimizer.c's. A NULL stream is
 * the legacy default stream: a stream of its own here (the synchronisation
 * of the legacy stream with blocking streams is not emulated; nothing
 * tested relies on it).
 *
 * EMULATED_CUDA_NO_EVENT=1: cudaEventSynchronize does not wait (a
 * negative control: a staging buffer is then read or overwritten too
 * early).
 * EMULATED_CUDA_LIMIT=N: device and pinned allocations above N bytes fail
 * as out of memory.
 * EMULATED_CUDA_COPY_US=N: a device-to-host copy takes N microseconds when
 * it runs (the time a real copy takes: the sends of the partitions
 * handed on before it then overlap it).
 * EMULATED_CUDA_TRACE=1: each copy out of device memory (to the host, or
 * to device memory) writes a line to stderr when it has run, on the thread
 * that made it run: read with the client's debug lines from the same
 * thread, the order of copies and hand-overs.
 * EMULATED_CUDA_PEERMEM=1: ps_cuda_peermem_loaded says the nvidia-peermem
 * module is loaded, so the client registers its "device" memory with the
 * transport as it is (on rdma: real registrations of this host memory).
 * ps_cuda_dmabuf_fd always refuses: there is no dma-buf exporter here.
 *
 * It defines every function of ordo_cuda's device.c, gpudirect.c and
 * optimizer kernels and every CUDA runtime function those callers use, so the linker takes
 * none from libordo_cuda.a or libcudart_static.a (cuda/staging.c is
 * compiled into the emulated client worker as it is).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "cuda/device.h"
#include "cuda/gpudirect.h"
#include "cuda/optimizer_cuda.h"
#include "ordo/error.h"
#include "server/optimizer.h"

enum {
	OP_COPY, OP_SET, OP_ASET, OP_AADD, OP_APPLY, OP_LAST, OP_AVG, OP_ADAM,
	OP_WAIT
};

typedef struct op {
	int kind;
	void *dst;
	const void *src;
	size_t n;
	int val;
	int to_host, from_device;
	float *w, *v, *s; /* s: OP_ADAM's second moment */
	double *acc;
	ps_adam_scalars k; /* OP_ADAM */
	const float *g;
	int first;
	unsigned count;
	double lr, m;
	struct CUstream_st *other; /* OP_WAIT: run `other` up to `mark` */
	uint64_t mark;
} op;

/* Ops q[head .. n) wait; `done` counts every op ever run, so an event's
 * mark (the count of ops enqueued before it) stays valid after the queue
 * is emptied. */
struct CUstream_st {
	op *q;
	size_t head, n, cap;
	uint64_t done;
};

struct CUevent_st {
	struct CUstream_st *s;
	uint64_t mark;
};

static struct CUstream_st legacy; /* the NULL stream */

static struct CUstream_st *stream_of(cudaStream_t s)
{
	return s ? s : &legacy;
}

static void enqueue(struct CUstream_st *s, op o)
{
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

static void pause_us(long us)
{
	struct timespec ts = {.tv_sec = us / 1000000,
			      .tv_nsec = us % 1000000 * 1000};

	while (nanosleep(&ts, &ts) != 0)
		;
}

static void run_until(struct CUstream_st *s, uint64_t mark);

static void exec(op *o)
{
	const char *copy_us;

	switch (o->kind) {
	case OP_COPY:
		copy_us = getenv("EMULATED_CUDA_COPY_US");
		if (o->to_host && copy_us)
			pause_us(atol(copy_us));
		memcpy(o->dst, o->src, o->n);
		if (o->from_device && getenv("EMULATED_CUDA_TRACE"))
			fprintf(stderr, "emulated CUDA: device-to-%s copy of "
					"%zu bytes ran\n",
				o->to_host ? "host" : "device", o->n);
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
		ps_sgd_apply(o->w, o->v, o->acc, o->n, o->count, o->lr, o->m);
		break;
	case OP_LAST:
		ps_sgd_apply_last(o->w, o->v, o->acc, o->g, o->n, o->first,
				  o->count, o->lr, o->m);
		break;
	case OP_AVG:
		ps_avg_last(o->w, o->acc, o->g, o->n, o->first, o->count);
		break;
	case OP_ADAM:
		ps_adam_apply_last(o->w, o->v, o->s, o->acc, o->g, o->n,
				   o->first, o->count, &o->k);
		break;
	default: /* OP_WAIT */
		run_until(o->other, o->mark);
	}
}

/* Runs s's ops until `mark` of them ever ran. */
static void run_until(struct CUstream_st *s, uint64_t mark)
{
	while (s->done < mark && s->head < s->n) {
		op o = s->q[s->head++]; /* a copy: exec runs other queues */
		exec(&o);
		s->done++;
	}
	if (s->head == s->n)
		s->head = s->n = 0;
}

static void run(struct CUstream_st *s)
{
	run_until(s, s->done + (s->n - s->head));
}

static uint64_t mark_of(const struct CUstream_st *s)
{
	return s->done + (s->n - s->head);
}

/* The emulated device allocations (cudaMalloc, ps_cuda_alloc). */
typedef struct alloc {
	char *p;
	size_t n;
	struct alloc *next;
} alloc;
static alloc *allocs;

static int over_limit(size_t bytes)
{
	const char *limit = getenv("EMULATED_CUDA_LIMIT");

	return limit && bytes > strtoull(limit, NULL, 10);
}

static void *device_alloc(size_t bytes)
{
	alloc *a = malloc(sizeof(*a));
	char *p = malloc(bytes ? bytes : 1);

	if (!a || !p) {
		free(a);
		free(p);
		return NULL;
	}
	memset(p, 0xA5, bytes); /* device memory is not zeroed */
	*a = (alloc){.p = p, .n = bytes, .next = allocs};
	allocs = a;
	return p;
}

static void device_free(void *p)
{
	for (alloc **a = &allocs; *a; a = &(*a)->next) {
		if ((*a)->p == p) {
			alloc *dead = *a;
			*a = dead->next;
			free(dead->p);
			free(dead);
			return;
		}
	}
}

static int is_device(const void *p)
{
	for (const alloc *a = allocs; a; a = a->next)
		if ((const char *)p >= a->p && (const char *)p < a->p + a->n)
			return 1;
	return 0;
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

cudaError_t cudaGetDeviceCount(int *count)
{
	*count = 1;
	return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device)
{
	*device = 0;
	return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
	return device == 0 ? cudaSuccess : cudaErrorInvalidDevice;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
	(void)flags;
	*s = calloc(1, sizeof(**s));
	return *s ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaStreamCreate(cudaStream_t *s)
{
	return cudaStreamCreateWithFlags(s, 0);
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
	run(s); /* as CUDA: the work enqueued still completes */
	free(s->q);
	free(s);
	return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
	run(stream_of(s));
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
	e->s = stream_of(s);
	e->mark = mark_of(e->s);
	return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
	if (e->s && !getenv("EMULATED_CUDA_NO_EVENT"))
		run_until(e->s, e->mark);
	return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e,
				unsigned int flags)
{
	(void)flags;
	if (e->s) /* an event never recorded: nothing to wait for */
		enqueue(stream_of(s), (op){.kind = OP_WAIT, .other = e->s,
					   .mark = e->mark});
	return cudaSuccess;
}

cudaError_t cudaMallocHost(void **p, size_t n)
{
	if (over_limit(n)) {
		*p = NULL;
		return cudaErrorMemoryAllocation;
	}
	*p = malloc(n ? n : 1);
	return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaHostAlloc(void **p, size_t n, unsigned int flags)
{
	(void)flags;
	return cudaMallocHost(p, n);
}

cudaError_t cudaFreeHost(void *p)
{
	free(p);
	return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t n)
{
	*p = over_limit(n) ? NULL : device_alloc(n);
	return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaFree(void *p)
{
	device_free(p);
	return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a,
				     const void *p)
{
	memset(a, 0, sizeof(*a));
	a->type = is_device(p) ? cudaMemoryTypeDevice
			       : cudaMemoryTypeUnregistered;
	a->device = is_device(p) ? 0 : -2;
	return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *d, int v, size_t n, cudaStream_t s)
{
	enqueue(stream_of(s), (op){.kind = OP_SET, .dst = d, .val = v,
				   .n = n});
	return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *d, const void *src, size_t n,
			    enum cudaMemcpyKind k, cudaStream_t s)
{
	enqueue(stream_of(s),
		(op){.kind = OP_COPY, .dst = d, .src = src, .n = n,
		     .to_host = k == cudaMemcpyDeviceToHost,
		     .from_device = k == cudaMemcpyDeviceToHost ||
				    k == cudaMemcpyDeviceToDevice});
	return cudaSuccess;
}

cudaError_t cudaMemcpy(void *d, const void *src, size_t n,
		       enum cudaMemcpyKind k)
{
	(void)k;
	memcpy(d, src, n);
	return cudaSuccess;
}

cudaError_t cudaMemset(void *d, int v, size_t n)
{
	run(&legacy); /* ordered after the legacy stream's work */
	memset(d, v, n);
	return cudaSuccess;
}

/* The legacy stream only: the streams created are not listed (every
 * caller here waits for its own streams' work by events or
 * cudaStreamSynchronize). */
cudaError_t cudaDeviceSynchronize(void)
{
	run(&legacy);
	return cudaSuccess;
}

int ps_cuda_open(int index, ps_cuda_info *info, char *why, size_t whylen)
{
	if (index != 0) {
		snprintf(why, whylen, "server.cuda_device = %d, but this machine "
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

int ps_cuda_alloc(void **ptr, size_t bytes, const char *what, char *why,
		  size_t whylen)
{
	*ptr = NULL;
	if (over_limit(bytes)) {
		snprintf(why, whylen, "cudaMalloc of %zu bytes (%s) on CUDA "
			 "device 0 (host emulation): out of memory; the device "
			 "has %s bytes free of %s", bytes, what,
			 getenv("EMULATED_CUDA_LIMIT"),
			 getenv("EMULATED_CUDA_LIMIT"));
		return PS_ENOMEM;
	}
	*ptr = device_alloc(bytes);
	if (!*ptr) {
		snprintf(why, whylen, "emulated cudaMalloc of %zu bytes: out of "
			 "host memory", bytes);
		return PS_ENOMEM;
	}
	return PS_OK;
}

void ps_cuda_free(void *ptr)
{
	device_free(ptr);
}

int ps_cuda_sync(void *stream, char *why, size_t whylen)
{
	(void)why;
	(void)whylen;
	run(stream_of(stream));
	return PS_OK;
}

/* The kernels run on the server's own stream, never the legacy one. */
static struct CUstream_st *kernel_stream(void *stream)
{
	if (!stream) {
		fprintf(stderr, "emulated CUDA: a kernel on the legacy default "
				"stream (server/gpu.c uses its own)\n");
		abort();
	}
	return stream;
}

int ps_cuda_accum_set(double *acc, const float *g, size_t n, void *stream)
{
	enqueue(kernel_stream(stream),
		(op){.kind = OP_ASET, .acc = acc, .g = g, .n = n});
	return PS_OK;
}

int ps_cuda_accum_add(double *acc, const float *g, size_t n, void *stream)
{
	enqueue(kernel_stream(stream),
		(op){.kind = OP_AADD, .acc = acc, .g = g, .n = n});
	return PS_OK;
}

int ps_cuda_sgd_apply(float *w, float *v, const double *acc, size_t n,
		      unsigned count, double lr, double momentum,
		      void *stream)
{
	enqueue(kernel_stream(stream),
		(op){.kind = OP_APPLY, .w = w, .v = v,
			     .acc = (double *)acc, .n = n, .count = count,
			     .lr = lr, .m = momentum});
	return PS_OK;
}

int ps_cuda_sgd_apply_last(float *w, float *v, const double *acc,
			   const float *g, size_t n, int first,
			   unsigned count, double lr, double momentum,
			   void *stream)
{
	enqueue(kernel_stream(stream),
		(op){.kind = OP_LAST, .w = w, .v = v,
			     .acc = (double *)acc, .g = g, .n = n,
			     .first = first, .count = count, .lr = lr,
			     .m = momentum});
	return PS_OK;
}

int ps_cuda_avg_last(float *w, const double *acc, const float *g, size_t n,
		     int first, unsigned count, void *stream)
{
	enqueue(kernel_stream(stream),
		(op){.kind = OP_AVG, .w = w, .acc = (double *)acc, .g = g,
			     .n = n, .first = first, .count = count});
	return PS_OK;
}

int ps_cuda_adam_apply_last(float *w, float *m, float *s, const double *acc,
			    const float *g, size_t n, int first,
			    unsigned count, const ps_adam_scalars *k,
			    void *stream)
{
	enqueue(kernel_stream(stream),
		(op){.kind = OP_ADAM, .w = w, .v = m, .s = s,
			     .acc = (double *)acc, .g = g, .n = n,
			     .first = first, .count = count, .k = *k});
	return PS_OK;
}

int ps_cuda_dmabuf_fd(const void *dev_ptr, size_t len, int *fd,
		      uint64_t *offset, char *why, size_t whylen)
{
	(void)dev_ptr, (void)len;
	*fd = -1;
	*offset = 0;
	snprintf(why, whylen, "no dma-buf of device memory: the host emulation "
		 "of CUDA has no dma-buf exporter");
	return PS_ENOTSUP;
}

int ps_cuda_peermem_loaded(char *why, size_t whylen)
{
	int on = getenv("EMULATED_CUDA_PEERMEM") != NULL;

	if (why && whylen)
		snprintf(why, whylen, on ? "nvidia-peermem stood in for by the "
				        "host emulation (EMULATED_CUDA_PEERMEM)"
				      : "nvidia-peermem is not loaded (host "
				        "emulation of CUDA)");
	return on;
}
