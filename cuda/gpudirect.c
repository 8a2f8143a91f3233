/*
 * cuda/gpudirect.c - see gpudirect.h.
 *
 * The driver API is reached through cudaGetDriverEntryPointByVersion, not
 * linked: ordo_cuda links the static runtime only, so that installed
 * binaries need no libcuda.so at link time (cuda/CMakeLists.txt), and a
 * driver too old for a symbol is then an error message instead of a
 * loader failure. Each symbol is asked for at the CUDA version that
 * introduced the signature used here (the PFN_..._vNNNNN typedefs of
 * cudaTypedefs.h), so any driver that has it answers.
 *
 * Compiled, never run (no GPU, no NVIDIA driver where it was written).
 */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include <cuda.h>         /* types and constants only: see above */
#include <cudaTypedefs.h> /* the PFN_... entry point types */
#include <cuda_runtime_api.h>

#include "cuda/gpudirect.h"
#include "common/errbuf.h"
#include "ordo/error.h"

/* The driver's entry point `sym` with the ABI of CUDA version `ver`:
 * PS_OK, or PS_ENOTSUP with why. */
static int entry(const char *sym, unsigned ver, void **fn, char *why,
		 size_t whylen)
{
	enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSuccess;
	cudaError_t e = cudaGetDriverEntryPointByVersion(sym, fn, ver,
							 cudaEnableDefault,
							 &st);

	if (e == cudaSuccess && *fn && st == cudaDriverEntryPointSuccess)
		return PS_OK;
	(void)cudaGetLastError();
	*fn = NULL;
	if (e != cudaSuccess)
		return ps_errf(why, whylen, PS_ENOTSUP,
		               "no dma-buf of device memory: the CUDA driver's "
		               "%s cannot be had: %s (no NVIDIA driver, or one "
		               "older than this program's CUDA runtime)",
		               sym, cudaGetErrorString(e));
	return ps_errf(why, whylen, PS_ENOTSUP,
	               "no dma-buf of device memory: the NVIDIA driver has no "
	               "%s of CUDA %u.%u (%s)",
	               sym, ver / 1000, ver % 1000 / 10,
	               st == cudaDriverEntryPointVersionNotSufficent
	                   ? "the driver is older"
	                   : "symbol not found");
}

/* "CUDA_ERROR_NOT_SUPPORTED (operation not supported)", from the driver
 * itself when it can say. */
static const char *cu_err(PFN_cuGetErrorString_v6000 str, CUresult r,
			  char *buf, size_t cap)
{
	const char *s = NULL;

	if (!str || str(r, &s) != CUDA_SUCCESS || !s)
		snprintf(buf, cap, "CUDA driver error %d", (int)r);
	else
		snprintf(buf, cap, "%s (CUDA driver error %d)", s, (int)r);
	return buf;
}

int ps_cuda_dmabuf_fd(const void *dev_ptr, size_t len, int *fd,
		      uint64_t *offset, char *why, size_t whylen)
{
	PFN_cuGetErrorString_v6000 get_error = NULL;
	PFN_cuDeviceGet_v2000 device_get = NULL;
	PFN_cuDeviceGetAttribute_v2000 device_attr = NULL;
	PFN_cuPointerGetAttribute_v4000 ptr_attr = NULL;
	PFN_cuMemGetHandleForAddressRange_v11070 get_handle = NULL;
	struct cudaPointerAttributes a;
	char msg[160];
	int prev = -1, rc, ok = 0, dfd = -1;
	cudaError_t e;
	CUdevice cudev;
	CUdeviceptr base = 0, p, page, start, end;
	size_t size = 0;
	long pg;
	CUresult r;

	if (!dev_ptr || len == 0 || !fd || !offset)
		return ps_errf(why, whylen, PS_EINVAL,
		               "ps_cuda_dmabuf_fd: invalid argument (%zu bytes "
		               "at %p)",
		               len, dev_ptr);
	*fd = -1;
	*offset = 0;
	e = cudaPointerGetAttributes(&a, dev_ptr);
	if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
		(void)cudaGetLastError();
		return ps_errf(
		    why, whylen, PS_ENOTSUP,
		    "no dma-buf of %p: no usable CUDA driver or device "
		    "(%s)",
		    dev_ptr, cudaGetErrorString(e));
	}
	if (e != cudaSuccess) {
		(void)cudaGetLastError();
		return ps_errf(why, whylen, PS_EINVAL,
		               "no dma-buf of %p: it is not CUDA memory (%s)",
		               dev_ptr, cudaGetErrorString(e));
	}
	if (a.type != cudaMemoryTypeDevice)
		return ps_errf(
		    why, whylen, PS_EINVAL,
		    "no dma-buf of %p: it is %s memory; only device "
		    "memory (cudaMalloc) is exported as a dma-buf here",
		    dev_ptr,
		    a.type == cudaMemoryTypeManaged ? "managed"
		    : a.type == cudaMemoryTypeHost  ? "pinned host"
		                                    : "host");

	if ((rc = entry("cuGetErrorString", 6000, (void **)&get_error, why,
			whylen)) != PS_OK ||
	    (rc = entry("cuDeviceGet", 2000, (void **)&device_get, why,
			whylen)) != PS_OK ||
	    (rc = entry("cuDeviceGetAttribute", 2000, (void **)&device_attr,
			why, whylen)) != PS_OK ||
	    (rc = entry("cuPointerGetAttribute", 4000, (void **)&ptr_attr,
			why, whylen)) != PS_OK ||
	    (rc = entry("cuMemGetHandleForAddressRange", 11070,
			(void **)&get_handle, why, whylen)) != PS_OK)
		return rc;

	/* the driver calls below act in the current context: dev_ptr's
	 * device's primary one, the caller's device restored after */
	if (cudaGetDevice(&prev) != cudaSuccess) {
		(void)cudaGetLastError();
		prev = -1;
	}
	e = cudaSetDevice(a.device);
	if (e != cudaSuccess) {
		(void)cudaGetLastError();
		rc = ps_errf(why, whylen, PS_EIO,
		             "no dma-buf of %p: cudaSetDevice(%d): %s", dev_ptr,
		             a.device, cudaGetErrorString(e));
		goto restore;
	}
	r = device_get(&cudev, a.device);
	if (r == CUDA_SUCCESS)
		r = device_attr(&ok, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
				cudev);
	if (r != CUDA_SUCCESS) {
		rc = ps_errf(why, whylen, PS_EIO,
		             "no dma-buf of %p: CU_DEVICE_ATTRIBUTE_DMA_BUF_"
		             "SUPPORTED of CUDA device %d: %s",
		             dev_ptr, a.device,
		             cu_err(get_error, r, msg, sizeof(msg)));
		goto restore;
	}
	if (!ok) {
		rc = ps_errf(
		    why, whylen, PS_ENOTSUP,
		    "CUDA device %d cannot export its memory as a "
		    "dma-buf (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is "
		    "0: that needs NVIDIA's open GPU kernel modules and "
		    "a Linux kernel with dma-buf support)",
		    a.device);
		goto restore;
	}

	/* the allocation holding dev_ptr: the widened range must stay in
	 * it */
	p = (CUdeviceptr)(uintptr_t)dev_ptr;
	r = ptr_attr(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p);
	if (r == CUDA_SUCCESS)
		r = ptr_attr(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p);
	if (r != CUDA_SUCCESS) {
		rc = ps_errf(why, whylen, PS_EIO,
		             "no dma-buf of %p: the allocation holding it: "
		             "cuPointerGetAttribute: %s",
		             dev_ptr, cu_err(get_error, r, msg, sizeof(msg)));
		goto restore;
	}
	if (p - base > size || len > size - (p - base)) {
		rc = ps_errf(why, whylen, PS_EINVAL,
		             "no dma-buf of %zu bytes at %p: they run past the "
		             "end of its allocation (%zu bytes at 0x%llx)",
		             len, dev_ptr, size, (unsigned long long)base);
		goto restore;
	}
	pg = sysconf(_SC_PAGESIZE);
	page = pg > 0 ? (CUdeviceptr)pg : 4096;
	start = p & ~(page - 1);
	end = (p + len + page - 1) & ~(page - 1);
	if (start < base || end > base + size) {
		rc = ps_errf(
		    why, whylen, PS_EINVAL,
		    "no dma-buf of %zu bytes at %p: the driver exports "
		    "whole host pages (%llu bytes), and [0x%llx, 0x%llx) "
		    "leaves the allocation of %zu bytes at 0x%llx: "
		    "allocate device memory meant for GPUDirect RDMA "
		    "in whole host pages",
		    len, dev_ptr, (unsigned long long)page,
		    (unsigned long long)start, (unsigned long long)end, size,
		    (unsigned long long)base);
		goto restore;
	}
	r = get_handle(&dfd, start, (size_t)(end - start),
		       CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	if (r != CUDA_SUCCESS || dfd < 0) {
		rc = ps_errf(
		    why, whylen,
		    r == CUDA_ERROR_NOT_SUPPORTED ? PS_ENOTSUP : PS_EIO,
		    "no dma-buf of %zu bytes at %p on CUDA device %d: "
		    "cuMemGetHandleForAddressRange: %s",
		    len, dev_ptr, a.device,
		    r != CUDA_SUCCESS ? cu_err(get_error, r, msg, sizeof(msg))
		                      : "no descriptor returned");
		goto restore;
	}
	*fd = dfd;
	*offset = (uint64_t)(p - start);
	rc = PS_OK;
restore:
	if (prev >= 0 && prev != a.device && cudaSetDevice(prev) != cudaSuccess)
		(void)cudaGetLastError();
	return rc;
}

int ps_cuda_peermem_loaded(char *why, size_t whylen)
{
	static const char *const mods[] = {"nvidia_peermem", "nv_peer_mem"};
	char path[64];

	for (size_t i = 0; i < sizeof(mods) / sizeof(mods[0]); i++) {
		snprintf(path, sizeof(path), "/sys/module/%s", mods[i]);
		if (access(path, F_OK) == 0) {
			ps_errf(why, whylen, 1,
			        "the %s module is loaded (%s): ibv_reg_mr "
			        "accepts device pointers",
			        mods[i], path);
			return 1;
		}
	}
	ps_errf(
	    why, whylen, 0,
	    "nvidia-peermem is not loaded (neither /sys/module/nvidia_peermem "
	    "nor /sys/module/nv_peer_mem): ibv_reg_mr cannot register device "
	    "pointers (`modprobe nvidia-peermem` where the NVIDIA driver "
	    "ships it)");
	return 0;
}
