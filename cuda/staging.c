/*
 * cuda/staging.c - see staging.h.
 */
#include <stdio.h>

#include <cuda_runtime_api.h>

#include "cuda/device.h"
#include "cuda/staging.h"
#include "common/errbuf.h"
#include "ordo/error.h"

static int cuda_err(cudaError_t e, char *why, size_t whylen, const char *call)
{
	if (e == cudaSuccess)
		return PS_OK;
	return ps_errf(why, whylen,
	               e == cudaErrorMemoryAllocation ? PS_ENOMEM : PS_EIO,
	               "%s: %s", call, cudaGetErrorString(e));
}

void ps_cuda_current(int *device)
{
	if (cudaGetDevice(device) != cudaSuccess) {
		(void)cudaGetLastError();
		*device = -1;
	}
}

void ps_cuda_set(int device)
{
	if (device >= 0 && cudaSetDevice(device) != cudaSuccess)
		(void)cudaGetLastError();
}

int ps_cuda_client_open(int device, const char *what, char *why, size_t whylen)
{
	int count = 0;
	cudaError_t e = cudaGetDeviceCount(&count);
	char detail[768];
	int rc;

	if (e == cudaSuccess && count > 0 && (device < 0 || device >= count))
		return ps_errf(why, whylen, PS_EINVAL,
		               "%s: CUDA device %d asked, but this machine has "
		               "%d CUDA device(s) (0 to %d)",
		               what, device, count, count - 1);
	(void)cudaGetLastError();
	rc = ps_cuda_open(device, NULL, detail, sizeof(detail));
	if (rc != PS_OK)
		return ps_errf(why, whylen, rc, "%s: %s", what, detail);
	return PS_OK;
}

int ps_cuda_check_device_ptr(const void *ptr, int device, const char *what,
			     char *why, size_t whylen)
{
	struct cudaPointerAttributes a;
	cudaError_t e = cudaPointerGetAttributes(&a, ptr);

	if (e != cudaSuccess) {
		(void)cudaGetLastError();
		return ps_errf(why, whylen, PS_EINVAL,
		               "%s: %p is not CUDA memory (%s)", what, ptr,
		               cudaGetErrorString(e));
	}
	if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)
		return ps_errf(
		    why, whylen, PS_EINVAL,
		    "%s: %p is %s memory, not device memory (declare "
		    "host memory with ps_client_declare)",
		    what, ptr,
		    a.type == cudaMemoryTypeHost ? "pinned host" : "host");
	if (a.type == cudaMemoryTypeDevice && a.device != device)
		return ps_errf(
		    why, whylen, PS_EINVAL,
		    "%s: %p is memory of CUDA device %d, not of device "
		    "%d",
		    what, ptr, a.device, device);
	return PS_OK;
}

int ps_cuda_host_alloc(void **ptr, size_t bytes, const char *what,
		       char *why, size_t whylen)
{
	cudaError_t e = cudaHostAlloc(ptr, bytes, cudaHostAllocPortable);

	if (e == cudaSuccess)
		return PS_OK;
	(void)cudaGetLastError();
	*ptr = NULL;
	return ps_errf(
	    why, whylen, e == cudaErrorMemoryAllocation ? PS_ENOMEM : PS_EIO,
	    "cudaHostAlloc of %zu bytes (%s): %s", bytes, what,
	    e == cudaErrorMemoryAllocation ? "out of pinned host memory"
	                                   : cudaGetErrorString(e));
}

void ps_cuda_host_free(void *ptr)
{
	if (ptr)
		cudaFreeHost(ptr);
}

int ps_cuda_stream_new(void **stream, char *why, size_t whylen)
{
	cudaStream_t s;
	cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);

	*stream = e == cudaSuccess ? (void *)s : NULL;
	return cuda_err(e, why, whylen, "cudaStreamCreateWithFlags");
}

void ps_cuda_stream_free(void *stream)
{
	if (stream)
		cudaStreamDestroy((cudaStream_t)stream);
}

int ps_cuda_event_new(void **event, char *why, size_t whylen)
{
	cudaEvent_t ev;
	cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);

	*event = e == cudaSuccess ? (void *)ev : NULL;
	return cuda_err(e, why, whylen, "cudaEventCreateWithFlags");
}

void ps_cuda_event_free(void *event)
{
	if (event)
		cudaEventDestroy((cudaEvent_t)event);
}

int ps_cuda_record(void *event, void *stream, char *why, size_t whylen)
{
	return cuda_err(cudaEventRecord((cudaEvent_t)event,
					(cudaStream_t)stream),
			why, whylen, "cudaEventRecord");
}

int ps_cuda_stream_after(void *stream, void *other, void *event, char *why,
			 size_t whylen)
{
	int rc = ps_cuda_record(event, other, why, whylen);

	if (rc != PS_OK)
		return rc;
	return cuda_err(cudaStreamWaitEvent((cudaStream_t)stream,
					    (cudaEvent_t)event, 0),
			why, whylen, "cudaStreamWaitEvent");
}

static const struct {
	enum cudaMemcpyKind kind;
	const char *async, *sync; /* the call, in errors */
} copies[] = {
	[PS_CUDA_H2D] = {cudaMemcpyHostToDevice,
			 "cudaMemcpyAsync (host to device)",
			 "cudaMemcpy (host to device)"},
	[PS_CUDA_D2H] = {cudaMemcpyDeviceToHost,
			 "cudaMemcpyAsync (device to host)",
			 "cudaMemcpy (device to host)"},
	[PS_CUDA_D2D] = {cudaMemcpyDeviceToDevice,
			 "cudaMemcpyAsync (device to device)",
			 "cudaMemcpy (device to device)"},
};

int ps_cuda_copy_async(void *dst, const void *src, size_t bytes,
		       ps_cuda_dir dir, void *stream, void *done, char *why,
		       size_t whylen)
{
	int rc = cuda_err(cudaMemcpyAsync(dst, src, bytes, copies[dir].kind,
					  (cudaStream_t)stream),
			  why, whylen, copies[dir].async);

	if (rc == PS_OK && done)
		rc = ps_cuda_record(done, stream, why, whylen);
	return rc;
}

int ps_cuda_copy(void *dst, const void *src, size_t bytes, ps_cuda_dir dir,
		 char *why, size_t whylen)
{
	return cuda_err(cudaMemcpy(dst, src, bytes, copies[dir].kind), why,
			whylen, copies[dir].sync);
}

int ps_cuda_event_sync(void *event, char *why, size_t whylen)
{
	return cuda_err(cudaEventSynchronize((cudaEvent_t)event), why, whylen,
			"cudaEventSynchronize");
}
