/*
 * cuda/device.c - device choice and device memory, with errors that say
 * what was asked and what the machine has.
 */
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cuda/device.h"
#include "common/errbuf.h"
#include "ordo/error.h"

static double gib(size_t bytes)
{
	return (double)bytes / (1024.0 * 1024.0 * 1024.0);
}

int ps_cuda_open(int index, ps_cuda_info *info, char *why, size_t whylen)
{
	int count = 0;
	cudaError_t e = cudaGetDeviceCount(&count);
	if (e != cudaSuccess) {
		(void)cudaGetLastError(); /* not sticky: clear it */
		if (e == cudaErrorInsufficientDriver) {
			int rt = 0;
			(void)cudaRuntimeGetVersion(&rt);
			return ps_errf(
			    why, whylen, PS_ENOTSUP,
			    "no CUDA device: cudaGetDeviceCount: %s (no "
			    "NVIDIA driver loaded, or one older than this "
			    "CUDA %d.%d runtime)",
			    cudaGetErrorString(e), rt / 1000, rt % 1000 / 10);
		}
		return ps_errf(why, whylen, PS_ENOTSUP,
		               "no CUDA device: cudaGetDeviceCount: %s",
		               cudaGetErrorString(e));
	}
	if (count <= 0)
		return ps_errf(why, whylen, PS_ENOTSUP,
		               "no CUDA device: cudaGetDeviceCount: 0 devices");
	if (index < 0 || index >= count) {
		char list[1024] = "";
		size_t used = 0;
		for (int i = 0; i < count && used < sizeof(list); i++) {
			struct cudaDeviceProp p;
			const char *name = cudaGetDeviceProperties(&p, i) ==
			                           cudaSuccess
			                       ? p.name
			                       : "(properties unreadable)";
			int k = snprintf(list + used, sizeof(list) - used,
			                 "%s%d %s", i ? ", " : "", i, name);
			if (k < 0)
				break;
			used += (size_t)k;
		}
		(void)cudaGetLastError();
		return ps_errf(
		    why, whylen, PS_EINVAL,
		    "server.cuda_device = %d, but this machine has %d "
		    "CUDA device(s): %s",
		    index, count, list);
	}
	struct cudaDeviceProp p;
	e = cudaGetDeviceProperties(&p, index);
	if (e == cudaSuccess)
		e = cudaSetDevice(index);
	size_t free_b = 0, total_b = 0;
	if (e == cudaSuccess)
		e = cudaMemGetInfo(&free_b, &total_b);
	if (e != cudaSuccess) {
		(void)cudaGetLastError();
		return ps_errf(why, whylen, PS_EIO, "CUDA device %d: %s", index,
		               cudaGetErrorString(e));
	}
	if (info) {
		memset(info, 0, sizeof(*info));
		info->index = index;
		info->count = count;
		snprintf(info->name, sizeof(info->name), "%s", p.name);
		info->major = p.major;
		info->minor = p.minor;
		info->total_bytes = total_b;
		info->free_bytes = free_b;
	}
	return PS_OK;
}

int ps_cuda_alloc(void **ptr, size_t bytes, const char *what, char *why,
		  size_t whylen)
{
	if (!ptr)
		return ps_errf(why, whylen, PS_EINVAL,
		               "ps_cuda_alloc: no pointer");
	*ptr = NULL;
	cudaError_t e = cudaMalloc(ptr, bytes);
	if (e == cudaSuccess)
		return PS_OK;
	(void)cudaGetLastError();
	*ptr = NULL;
	int dev = -1;
	struct cudaDeviceProp p;
	size_t free_b = 0, total_b = 0;
	const char *name = "?";
	if (cudaGetDevice(&dev) == cudaSuccess &&
	    cudaGetDeviceProperties(&p, dev) == cudaSuccess)
		name = p.name;
	(void)cudaMemGetInfo(&free_b, &total_b);
	(void)cudaGetLastError();
	if (e == cudaErrorMemoryAllocation)
		return ps_errf(
		    why, whylen, PS_ENOMEM,
		    "cudaMalloc of %zu bytes (%.2f GiB, %s) on CUDA "
		    "device %d (%s): out of memory; the device has %zu "
		    "bytes (%.2f GiB) free of %zu (%.2f GiB)",
		    bytes, gib(bytes), what ? what : "buffer", dev, name,
		    free_b, gib(free_b), total_b, gib(total_b));
	return ps_errf(
	    why, whylen, PS_EIO,
	    "cudaMalloc of %zu bytes (%s) on CUDA device %d (%s): %s", bytes,
	    what ? what : "buffer", dev, name, cudaGetErrorString(e));
}

void ps_cuda_free(void *ptr)
{
	if (ptr)
		(void)cudaFree(ptr);
}

int ps_cuda_sync(void *stream, char *why, size_t whylen)
{
	cudaError_t e = cudaStreamSynchronize((cudaStream_t)stream);
	if (e == cudaSuccess)
		return PS_OK;
	(void)cudaGetLastError();
	return ps_errf(why, whylen, PS_EIO, "CUDA stream: %s",
	               cudaGetErrorString(e));
}
