/*
 * cuda/device.h - choosing a CUDA device, and device memory with clear
 * errors (PS_WITH_CUDA=ON; docs/cuda.md).
 *
 * Errors are written into the caller's buffer, whole sentences naming what
 * was asked and what the machine has:
 *   no CUDA device: cudaGetDeviceCount: <cudaGetErrorString>
 *   server.cuda_device = 3, but this machine has 1 CUDA device(s): 0 NVIDIA H100 ...
 *   cudaMalloc of N bytes (what) on CUDA device 0 (NAME): out of memory; F of T bytes free
 *
 * Threads: ps_cuda_open sets the calling thread's current device
 * (cudaSetDevice); the others act on the current device.
 */
#ifndef ORDO_CUDA_DEVICE_H
#define ORDO_CUDA_DEVICE_H

#include <stddef.h>

typedef struct ps_cuda_info {
	int index;            /* the device opened */
	int count;            /* devices on this machine */
	char name[256];       /* "NVIDIA H100 80GB HBM3" */
	int major, minor;     /* compute capability */
	size_t total_bytes;   /* device memory */
	size_t free_bytes;    /* free when opened */
} ps_cuda_info;

/* Makes device `index` current (server.cuda_device) and fills info (may be
 * NULL). PS_ENOTSUP when the machine has no usable CUDA device or driver,
 * PS_EINVAL for an index it does not have, PS_EIO for another failure. */
int ps_cuda_open(int index, ps_cuda_info *info, char *why, size_t whylen);

/* cudaMalloc of `bytes` on the current device; `what` names the buffer in
 * the error. PS_ENOMEM when the device has not the memory (the error gives
 * the bytes asked and the device's free and total memory), PS_EIO for
 * another failure. */
int ps_cuda_alloc(void **ptr, size_t bytes, const char *what, char *why,
		  size_t whylen);

/* cudaFree (NULL: nothing). */
void ps_cuda_free(void *ptr);

/* Waits for everything enqueued on stream (a cudaStream_t; NULL: the
 * default stream); PS_EIO with the CUDA error in why. */
int ps_cuda_sync(void *stream, char *why, size_t whylen);

#endif /* ORDO_CUDA_DEVICE_H */
