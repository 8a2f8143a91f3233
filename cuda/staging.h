/*
 * cuda/staging.h - the CUDA runtime calls of the client's device tensors
 * (client/device.c, PS_WITH_CUDA=ON; docs/cuda.md): pinned host memory,
 * streams, events and asynchronous copies, with clear errors. A thin
 * layer: what is copied in which order is decided in plain C
 * (client/copy_plan.h). Streams and events are passed as void *.
 *
 * Errors are whole sentences written into the caller's buffer.
 */
#ifndef ORDO_CUDA_STAGING_H
#define ORDO_CUDA_STAGING_H

#include <stddef.h>

/* The calling thread's current device into *device (-1 when none can be
 * had: no driver, no device). */
void ps_cuda_current(int *device);
/* Makes `device` current for the calling thread (a restore after
 * ps_cuda_current: -1 does nothing). */
void ps_cuda_set(int device);

/* Opens device `device` for a client's device tensor `what` (ps_cuda_open,
 * with the client's wording for an index the machine lacks): PS_ENOTSUP
 * (no device or driver), PS_EINVAL (no such device), PS_EIO. Leaves
 * `device` current. */
int ps_cuda_client_open(int device, const char *what, char *why,
			size_t whylen);

/* PS_OK when ptr is device (or managed) memory of `device`; PS_EINVAL
 * otherwise (host memory, another device, not CUDA memory). */
int ps_cuda_check_device_ptr(const void *ptr, int device, const char *what,
			     char *why, size_t whylen);

/* cudaHostAlloc (pinned, portable); PS_ENOMEM with the bytes asked. */
int ps_cuda_host_alloc(void **ptr, size_t bytes, const char *what,
		       char *why, size_t whylen);
void ps_cuda_host_free(void *ptr);

/* A non-blocking stream of the current device (it does not synchronise
 * with the legacy default stream). */
int ps_cuda_stream_new(void **stream, char *why, size_t whylen);
void ps_cuda_stream_free(void *stream);
/* An event without timing. */
int ps_cuda_event_new(void **event, char *why, size_t whylen);
void ps_cuda_event_free(void *event);

/* cudaEventRecord(event, stream). */
int ps_cuda_record(void *event, void *stream, char *why, size_t whylen);
/* `stream` waits for the work enqueued on `other` so far: event is
 * recorded on other and stream waits on it (cudaStreamWaitEvent). */
int ps_cuda_stream_after(void *stream, void *other, void *event, char *why,
			 size_t whylen);
/* Which way a copy goes. */
typedef enum ps_cuda_dir {
	PS_CUDA_H2D, /* host to device */
	PS_CUDA_D2H, /* device to host */
	PS_CUDA_D2D, /* device to device */
} ps_cuda_dir;

/* cudaMemcpyAsync on stream; with done, it is recorded after the copy. */
int ps_cuda_copy_async(void *dst, const void *src, size_t bytes,
		       ps_cuda_dir dir, void *stream, void *done, char *why,
		       size_t whylen);
/* cudaMemcpy (synchronous). */
int ps_cuda_copy(void *dst, const void *src, size_t bytes, ps_cuda_dir dir,
		 char *why, size_t whylen);
/* Blocks until the work recorded in event is done (an event never
 * recorded: at once). */
int ps_cuda_event_sync(void *event, char *why, size_t whylen);

#endif /* ORDO_CUDA_STAGING_H */
