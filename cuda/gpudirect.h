/*
 * cuda/gpudirect.h - what GPUDirect RDMA needs from CUDA (PS_WITH_CUDA=ON;
 * docs/cuda.md, "GPUDirect RDMA in the transport"): a dma-buf of device
 * memory, for the rdma transport to register with ibv_reg_dmabuf_mr, and
 * whether the nvidia-peermem module is loaded, without which ibv_reg_mr
 * refuses device pointers. The transport takes what these give it
 * (transport/transport.h: ps_transport_reg_ex with a ps_reg_req); neither
 * it nor the callers of these functions need a CUDA header.
 *
 * The order of preference (docs/cuda.md, design item 4): a dma-buf
 * (ps_cuda_dmabuf_fd, then ps_transport_reg_ex with dmabuf_fd), else the
 * device pointer itself when ps_cuda_peermem_loaded (dmabuf_fd -1), else
 * staging through pinned host memory. Each refusal comes with a sentence
 * for the log saying why that path was not taken.
 *
 * Errors are whole sentences written into the caller's buffer.
 *
 * Compiled, never run: the machine this was written on has no GPU and no
 * NVIDIA driver. What is said below about the driver's behaviour is from
 * the CUDA 13 headers' documentation, not from a run.
 */
#ifndef ORDO_CUDA_GPUDIRECT_H
#define ORDO_CUDA_GPUDIRECT_H

#include <stddef.h>
#include <stdint.h>

/* A dma-buf file descriptor exporting the device memory [dev_ptr, dev_ptr
 * + len) (cudaMalloc memory, or a cuMemMap'ed range mapped in full), by
 * the driver API's cuMemGetHandleForAddressRange, reached through the
 * runtime's driver entry points (libcuda is not linked). The driver
 * exports only ranges aligned to the host page size, so the range is
 * widened to whole host pages - its start aligned down, its end up - and
 * *offset is where dev_ptr lies in the dma-buf (ps_reg_req.dmabuf_offset;
 * the registration's address stays dev_ptr). The widened range must stay
 * inside dev_ptr's allocation: allocate memory meant for GPUDirect RDMA in
 * whole host pages. The caller owns *fd and closes it (a registration
 * holds the dma-buf itself, so at once after registering). Uses dev_ptr's
 * device and restores the calling thread's current device.
 *
 * PS_OK; PS_ENOTSUP when dma-bufs cannot be had here: no NVIDIA driver, a
 * driver without cuMemGetHandleForAddressRange (older than CUDA 11.7), a
 * device whose CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0, or the driver's
 * own CUDA_ERROR_NOT_SUPPORTED; PS_EINVAL when dev_ptr is not device
 * memory (host, pinned host or managed memory) or [dev_ptr, dev_ptr + len)
 * leaves its allocation; PS_EIO for another CUDA error. */
int ps_cuda_dmabuf_fd(const void *dev_ptr, size_t len, int *fd,
		      uint64_t *offset, char *why, size_t whylen);

/* 1 when the nvidia-peermem module (/sys/module/nvidia_peermem) or its
 * older form nv_peer_mem (/sys/module/nv_peer_mem) is loaded, so that
 * ibv_reg_mr accepts device pointers; 0 when neither is. why (NULL: not
 * wanted) says which module was found, or that none was and what that
 * means. Needs no driver: it only looks at /sys. */
int ps_cuda_peermem_loaded(char *why, size_t whylen);

#endif /* ORDO_CUDA_GPUDIRECT_H */
