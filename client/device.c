/*
 * client/device.c - tensors in device memory: ps_client_declare_cuda,
 * ps_client_push_stream and ps_client_ready_event, the copies between a
 * device tensor and its pinned host buffers, and GPUDirect RDMA where the
 * transport can send device memory. Without PS_WITH_CUDA the three calls
 * fail with PS_ENOTSUP.
 *
 * DESIGN (device tensors, docs/cuda.md). A tensor declared with
 * ps_client_declare_cuda has two pinned host buffers: `mirror`, which is
 * the tensor's `values` for everything else (initial values, received
 * parameters copied out in wait/try/pull), and `grad`, the staging of its
 * pushed gradient, which is what the host push path sends. All CUDA work
 * is enqueued by the application thread, on two streams of the client's:
 *  - d2h: ps_client_push_stream makes it wait for the application's stream
 *    (an event recorded there), enqueues one copy per partition in the
 *    gate's order (client/copy_plan.h, plain C), each followed by its
 *    event, then waits for the events in that order and hands each
 *    partition to the gate as soon as its own event completed
 *    (ps_wproto_push_part): the communication thread sends partition k
 *    while partition k + 1 is still being copied. A fused tensor is one
 *    copy into its shared partition's stage, pushed whole.
 *  - h2d: after copy_out (client/client.c) wrote partitions into the
 *    mirror, each is copied to device memory, then `h2d_done` is
 *    recorded. copy_out waits for it only before it writes a partition
 *    again whose last copy may still be reading the mirror (the next
 *    version's): the partitions of one version arrive, are written and
 *    copied without waiting for each other's copies.
 *    ps_client_ready_event records the application's event on h2d.
 * Before `grad` is written again the tensor's last push must be released
 * by the transport (its inflight count is 0).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "ordo/ordo.h"
#include "client/state.h"
#ifdef PS_WITH_CUDA
#include "cuda/device.h"
#include "cuda/gpudirect.h"
#include "cuda/staging.h"
#include "client/copy_plan.h"
#endif

#ifndef PS_WITH_CUDA
static int no_cuda(void)
{
	return psi_client_api_errf(PS_ENOTSUP, "this build has no CUDA support "
				   "(configure with -DPS_WITH_CUDA=ON)");
}

static int declare_cuda(ps_client *c, const char *name, uint64_t numel,
			float *device_values, int device, uint32_t *tensor_p)
{
	(void)c, (void)name, (void)numel, (void)device_values, (void)device;
	(void)tensor_p;
	return no_cuda();
}

static int push_stream(ps_client *c, uint32_t tensor_id,
		       const float *device_grad, uint64_t iteration,
		       void *cuda_stream)
{
	(void)c, (void)tensor_id, (void)device_grad, (void)iteration;
	(void)cuda_stream;
	return no_cuda();
}

static int ready_event(ps_client *c, uint32_t tensor_id, uint64_t version,
		       void *cuda_event)
{
	(void)c, (void)tensor_id, (void)version, (void)cuda_event;
	return no_cuda();
}
#else
/* Frees a device tensor's resources (on the client's device). */
void psi_client_dev_free(ps_client *c, dev_tensor *d, uint32_t nparts)
{
	int prev;

	if (!d)
		return;
	ps_cuda_current(&prev);
	ps_cuda_set(c->cuda_device);
	if (c->h2d)
		ps_cuda_sync(c->h2d, NULL, 0);
	if (c->d2h)
		ps_cuda_sync(c->d2h, NULL, 0);
	ps_cuda_host_free(d->mirror);
	ps_cuda_host_free(d->grad);
	ps_cuda_free(d->dgrad_alloc); /* deregistered with the transport */
	ps_cuda_event_free(d->app_ev);
	ps_cuda_event_free(d->h2d_done);
	if (d->part_ev)
		for (uint32_t k = 0; k < nparts; k++)
			ps_cuda_event_free(d->part_ev[k]);
	free(d->part_ev);
	free(d->plan);
	free(d->dirty);
	free(d);
	ps_cuda_set(prev);
}

/* The CUDA side of a declaration, on the device made current. */
static int dev_new(ps_client *c, const char *name, uint64_t numel,
		   float *device_values, int device, dev_tensor **d_p)
{
	size_t bytes = numel * sizeof(float);
	char what[PS_NAME_MAX + 64], err[1024];
	dev_tensor *d;
	int rc;

	snprintf(what, sizeof(what), "device tensor '%s'", name);
	if (c->cuda_device >= 0 && device != c->cuda_device) {
		PS_ERROR("%s: on CUDA device %d, but this client's device "
			 "tensors are on device %d (one device per client)",
			 what, device, c->cuda_device);
		return PS_EINVAL;
	}
	rc = ps_cuda_client_open(device, what, err, sizeof(err));
	if (rc == PS_OK)
		rc = ps_cuda_check_device_ptr(device_values, device, what, err,
					      sizeof(err));
	if (rc != PS_OK) {
		PS_ERROR("%s", err);
		return rc;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return PS_ENOMEM;
	d->dev_values = device_values;
	snprintf(what, sizeof(what), "pinned mirror of device tensor '%s'",
		 name);
	rc = ps_cuda_host_alloc((void **)&d->mirror, bytes, what, err,
				sizeof(err));
	if (rc == PS_OK) {
		snprintf(what, sizeof(what),
			 "pinned gradient staging of device tensor '%s'", name);
		rc = ps_cuda_host_alloc((void **)&d->grad, bytes, what, err,
					sizeof(err));
	}
	if (rc == PS_OK)
		rc = ps_cuda_event_new(&d->app_ev, err, sizeof(err));
	if (rc == PS_OK)
		rc = ps_cuda_event_new(&d->h2d_done, err, sizeof(err));
	if (rc == PS_OK && !c->d2h)
		rc = ps_cuda_stream_new(&c->d2h, err, sizeof(err));
	if (rc == PS_OK && !c->h2d)
		rc = ps_cuda_stream_new(&c->h2d, err, sizeof(err));
	if (rc == PS_OK) /* the initial values, as a host tensor has them */
		rc = ps_cuda_copy(d->mirror, device_values, bytes, PS_CUDA_D2H, err,
				  sizeof(err));
	if (rc != PS_OK) {
		PS_ERROR("device tensor '%s' (%llu elements): %s", name,
			 (unsigned long long)numel, err);
		c->cuda_device = device; /* for psi_client_dev_free */
		psi_client_dev_free(c, d, 0);
		return rc;
	}
	*d_p = d;
	return PS_OK;
}

static int declare_cuda(ps_client *c, const char *name, uint64_t numel,
			float *device_values, int device, uint32_t *tensor_p)
{
	dev_tensor *d = NULL;
	int had = c ? c->cuda_device : -1;
	int prev, rc;
	uint32_t id = 0;

	if (numel > SIZE_MAX / sizeof(float))
		return psi_client_api_errf(PS_EINVAL, "tensor '%s': %llu "
					   "elements do not fit in memory",
					   name ? name : "(NULL)",
					   (unsigned long long)numel);
	rc = psi_client_declare_check(c, name, numel, device_values);
	if (rc != PS_OK)
		return rc;
	ps_cuda_current(&prev);
	rc = dev_new(c, name, numel, device_values, device, &d);
	ps_cuda_set(prev);
	if (rc != PS_OK) {
		if (had < 0 && c->cuda_device >= 0) { /* streams made here */
			ps_cuda_current(&prev);
			ps_cuda_set(c->cuda_device);
			ps_cuda_stream_free(c->d2h);
			ps_cuda_stream_free(c->h2d);
			c->d2h = c->h2d = NULL;
			ps_cuda_set(prev);
		}
		c->cuda_device = had;
		return rc;
	}
	c->cuda_device = device;
	rc = psi_client_declare(c, name, numel, d->mirror, &id);
	if (rc != PS_OK) {
		psi_client_dev_free(c, d, 0);
		c->cuda_device = had;
		return rc;
	}
	c->tensors[id].dev = d;
	if (tensor_p)
		*tensor_p = id;
	return PS_OK;
}

/*
 * DESIGN (GPUDirect, docs/cuda.md). Where the transport can send device
 * memory (caps.device_memory: rdma), each unfused device tensor gets a
 * second device buffer, registered with the transport once the node has
 * its RDMA device (after the WELCOME, on the driver's thread, which owns
 * the transport): a push copies the gradient into it device to device,
 * partition by partition in the gate's order, and each partition is sent
 * from there, the NIC reading device memory: no copy to the host. The
 * application's buffer is free when the push returns, as with staging.
 * Registration is tried by dma-buf first (ps_cuda_dmabuf_fd, then
 * ibv_reg_dmabuf_mr in the transport), then by the device pointer itself
 * where nvidia-peermem is loaded; else, and for fused tensors (copied
 * into a shared host stage) and on tcp, pushes are staged through pinned
 * host memory. Received parameters always come through pinned host
 * memory (the transport picks where a message lands). One log line says
 * which path was taken and why the others were not.
 */
static int dev_direct(ps_client *c, tensor *t, const char **how,
		      char *why_dmabuf, char *why_peer, size_t cap)
{
	dev_tensor *d = t->dev;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t bytes = (t->numel * sizeof(float) + page - 1) / page * page;
	char what[PS_NAME_MAX + 64];
	ps_reg_req req = {.kind = PS_MEM_CUDA, .dmabuf_fd = -1};
	int rc;

	snprintf(what, sizeof(what), "GPUDirect send buffer of device tensor "
		 "'%s'", t->name);
	/* a page more, so the registered range is whole host pages inside
	 * the allocation (what the driver exports as a dma-buf) */
	rc = ps_cuda_alloc(&d->dgrad_alloc, bytes + page, what, why_dmabuf,
			   cap);
	if (rc != PS_OK) {
		snprintf(why_peer, cap, "(no device memory for it)");
		return rc;
	}
	d->dgrad = (float *)(((uintptr_t)d->dgrad_alloc + page - 1) /
			     page * page);
	req.addr = d->dgrad;
	req.len = bytes;
	rc = ps_cuda_dmabuf_fd(d->dgrad, bytes, &req.dmabuf_fd,
			       &req.dmabuf_offset, why_dmabuf, cap);
	if (rc == PS_OK) {
		rc = ps_transport_reg_ex(c->node.transport, &req, &d->dmr,
					 why_dmabuf, cap);
		close(req.dmabuf_fd); /* the registration holds the dma-buf */
		if (rc == PS_OK) {
			*how = "a dma-buf";
			return PS_OK;
		}
	}
	rc = PS_ENOTSUP;
	if (ps_cuda_peermem_loaded(why_peer, cap)) {
		req.dmabuf_fd = -1; /* the device pointer as it is */
		req.dmabuf_offset = 0;
		rc = ps_transport_reg_ex(c->node.transport, &req, &d->dmr,
					 why_peer, cap);
		if (rc == PS_OK) {
			*how = "its device pointer (nvidia-peermem)";
			return PS_OK;
		}
	}
	ps_cuda_free(d->dgrad_alloc);
	d->dgrad_alloc = NULL;
	d->dgrad = NULL;
	return rc;
}

void psi_client_dev_direct_all(ps_client *c)
{
	char why_dmabuf[512] = "", why_peer[512] = "";
	uint32_t direct = 0, staged = 0, fused = 0;
	const char *how = NULL;
	ps_transport_caps caps;
	int prev;

	if (c->cuda_device < 0)
		return; /* no device tensor */
	ps_transport_caps_of(c->node.transport, &caps);
	ps_cuda_current(&prev);
	ps_cuda_set(c->cuda_device);
	for (uint32_t i = 0; i < c->ntensors; i++) {
		tensor *t = &c->tensors[i];
		if (!t->dev)
			continue;
		if (t->fused)
			fused++;
		else if (caps.device_memory &&
			 dev_direct(c, t, &how, why_dmabuf, why_peer,
				    sizeof(why_dmabuf)) == PS_OK)
			direct++;
		else
			staged++;
	}
	ps_cuda_set(prev);
	if (!caps.device_memory)
		PS_INFO("device tensors: pushes staged through pinned host "
			"memory, not GPUDirect RDMA: transport.type = tcp "
			"sends host memory only (ZeroMQ reads payloads with "
			"the CPU)");
	else if (direct && !staged)
		PS_INFO("device tensors: GPUDirect RDMA: %u tensor(s) pushed "
			"from device memory registered by %s, no copy to the "
			"host%s%s%s; %u fused tensor(s) staged through pinned "
			"host memory; received parameters through pinned host "
			"memory", direct, how, why_dmabuf[0] ? " (dma-buf: " : "",
			why_dmabuf, why_dmabuf[0] ? ")" : "", fused);
	else if (direct)
		PS_WARN("device tensors: GPUDirect RDMA for %u tensor(s) "
			"(registered by %s), %u staged through pinned host "
			"memory: dma-buf: %s; nvidia-peermem: %s", direct, how,
			staged, why_dmabuf, why_peer);
	else if (staged)
		PS_INFO("device tensors: pushes staged through pinned host "
			"memory, not GPUDirect RDMA: dma-buf: %s; "
			"nvidia-peermem: %s", why_dmabuf, why_peer);
	else
		PS_INFO("device tensors: %u fused tensor(s), staged through "
			"pinned host memory", fused);
}

/* A device tensor's push plan and events, made at its first push (the
 * placement is known then). */
static int dev_plan(ps_client *c, tensor *t, char *why, size_t whylen)
{
	dev_tensor *d = t->dev;
	int rc;

	if (d->plan)
		return PS_OK;
	if (!c->numbers) {
		snprintf(why, whylen, "no gate order");
		return PS_ESTATE;
	}
	d->plan = calloc(t->nparts, sizeof(*d->plan));
	d->part_ev = calloc(t->nparts, sizeof(*d->part_ev));
	if (!d->plan || !d->part_ev) {
		snprintf(why, whylen, "out of memory");
		return PS_ENOMEM;
	}
	for (uint32_t k = 0; k < t->nparts; k++) {
		rc = ps_cuda_event_new(&d->part_ev[k], why, whylen);
		if (rc != PS_OK)
			return rc;
	}
	rc = ps_copy_plan(c->node.welcome.placement, c->numbers,
			  (uint32_t)(t - c->tensors), d->plan);
	if (rc != PS_OK) {
		snprintf(why, whylen, "copy plan: %s", ps_strerror(rc));
		free(d->plan);
		d->plan = NULL;
	}
	return rc;
}

static int dev_copy_failed(ps_client *c, const tensor *t, uint64_t it,
			   const char *err, int rc)
{
	PS_ERROR("tensor '%s': copying the gradient of iteration %llu from "
		 "CUDA device %d: %s", t->name, (unsigned long long)it,
		 c->cuda_device, err);
	return rc;
}

/* The tensor's last push released: its staging may be written. */
static int dev_staging_free(ps_client *c, tensor *t)
{
	int rc = PS_OK;

	pthread_mutex_lock(&c->mu);
	while (rc == PS_OK && t->inflight) {
		if (c->state != ST_RUNNING) {
			rc = c->state == ST_FAILED ? c->fail_code : PS_ESTATE;
			break;
		}
		c->wants_release = 1;
		rc = psi_client_wait_until(c, -1);
		c->wants_release = 0;
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}

static int push_stream(ps_client *c, uint32_t tensor_id,
		       const float *device_grad, uint64_t iteration,
		       void *cuda_stream)
{
	char err[1024] = "";
	dev_tensor *d;
	float *dst;
	tensor *t;
	int prev, rc;

	rc = psi_client_tensor_check(c, tensor_id);
	if (rc != PS_OK)
		return rc;
	t = &c->tensors[tensor_id];
	if (!device_grad)
		return psi_client_api_errf(PS_EINVAL,
					   "tensor '%s': device_grad is NULL",
					   t->name);
	d = t->dev;
	if (!d)
		return psi_client_api_errf(PS_EINVAL, "tensor '%s' is in host "
					   "memory (use ps_client_push)",
					   t->name);
	if (c->state == ST_CREATED || c->state == ST_JOINING)
		return PS_ESTATE;
	rc = dev_staging_free(c, t);
	if (rc != PS_OK)
		return rc;
	ps_cuda_current(&prev);
	ps_cuda_set(c->cuda_device);
	rc = dev_plan(c, t, err, sizeof(err));
	/* the gradient is complete when the application's stream gets here */
	if (rc == PS_OK)
		rc = ps_cuda_stream_after(c->d2h, cuda_stream, d->app_ev, err,
					  sizeof(err));
	/* into pinned memory, or (GPUDirect) the registered device copy */
	dst = d->dmr ? d->dgrad : d->grad;
	for (uint32_t k = 0; rc == PS_OK && k < t->nparts; k++) {
		const ps_copy_step *s = &d->plan[k];
		size_t bytes = s->numel * sizeof(float);
		rc = ps_cuda_copy_async(dst + s->offset,
					device_grad + s->offset, bytes,
					d->dmr ? PS_CUDA_D2D : PS_CUDA_D2H,
					c->d2h, d->part_ev[k], err,
					sizeof(err));
	}
	if (t->fused) { /* one copy, one shared partition: pushed whole */
		if (rc == PS_OK)
			rc = ps_cuda_event_sync(d->part_ev[0], err,
						sizeof(err));
		ps_cuda_set(prev);
		if (rc != PS_OK)
			return dev_copy_failed(c, t, iteration, err, rc);
		PS_DEBUG("tensor '%s' (%llu bytes, in fused partition %u) of "
			 "iteration %llu copied from the device and handed to "
			 "the gate", t->name,
			 (unsigned long long)(t->numel * sizeof(float)),
			 t->first_part, (unsigned long long)iteration);
		return psi_client_push_cmd(c, tensor_id, d->grad, iteration,
					   PUSH_WHOLE);
	}
	/* In the same order, each partition goes to the gate as soon as its
	 * own copy is done: its send overlaps the copies behind it. Once a
	 * copy failed the partitions after it are never handed in (their
	 * bytes are not there); the job fails with the error. */
	for (uint32_t k = 0; rc == PS_OK && k < t->nparts; k++) {
		rc = ps_cuda_event_sync(d->part_ev[k], err, sizeof(err));
		if (rc != PS_OK)
			break;
		rc = psi_client_push_cmd(c, tensor_id, dst, iteration,
					 d->plan[k].part);
		if (rc != PS_OK) {
			ps_cuda_set(prev);
			return rc;
		}
		PS_DEBUG("tensor '%s' partition %u (%llu bytes) of iteration "
			 "%llu copied from the device and handed to the gate",
			 t->name, d->plan[k].part,
			 (unsigned long long)(d->plan[k].numel * sizeof(float)),
			 (unsigned long long)iteration);
	}
	ps_cuda_set(prev);
	if (rc != PS_OK)
		return dev_copy_failed(c, t, iteration, err, rc);
	return PS_OK;
}

/* Partition k (0 when fused) of a device tensor's mirror is about to be
 * written: if it was written since the last wait, its copy to device
 * memory may still be reading it, so every copy enqueued so far must be
 * done first (h2d_done follows the latest). Other partitions of the same
 * version need no wait: they are other bytes of the mirror. */
int psi_client_dev_before_write(ps_client *c, tensor *t, uint32_t k)
{
	dev_tensor *d = t->dev;
	uint32_t n = t->fused ? 1 : t->nparts;
	char err[512];
	int rc;

	(void)c;
	if (!d->dirty)
		d->dirty = calloc(n, 1); /* NULL: wait every time, as safe */
	if (d->dirty && !d->dirty[k]) {
		d->dirty[k] = 1;
		return PS_OK;
	}
	rc = ps_cuda_event_sync(d->h2d_done, err, sizeof(err));
	if (rc != PS_OK) {
		PS_ERROR("tensor '%s': %s", t->name, err);
		return rc;
	}
	if (d->dirty) {
		memset(d->dirty, 0, n);
		d->dirty[k] = 1;
	}
	return PS_OK;
}

/* numel elements from element `offset` of the mirror go to device memory
 * on h2d; with last, h2d_done is recorded after them. */
int psi_client_dev_copy_in(ps_client *c, tensor *t, uint64_t offset,
			   uint64_t numel, int last)
{
	char err[512];
	int prev, rc;

	ps_cuda_current(&prev);
	ps_cuda_set(c->cuda_device);
	rc = ps_cuda_copy_async(t->dev->dev_values + offset,
				t->dev->mirror + offset, numel * sizeof(float),
				PS_CUDA_H2D, c->h2d,
				last ? t->dev->h2d_done : NULL, err,
				sizeof(err));
	ps_cuda_set(prev);
	if (rc != PS_OK)
		PS_ERROR("tensor '%s': copying parameters to CUDA device %d: "
			 "%s", t->name, c->cuda_device, err);
	return rc;
}

static int ready_event(ps_client *c, uint32_t tensor_id, uint64_t version,
		       void *cuda_event)
{
	char err[512];
	int prev, rc;

	rc = psi_client_tensor_check(c, tensor_id);
	if (rc != PS_OK)
		return rc;
	if (!cuda_event)
		return psi_client_api_errf(PS_EINVAL,
					   "tensor '%s': cuda_event is NULL",
					   c->tensors[tensor_id].name);
	if (!c->tensors[tensor_id].dev)
		return psi_client_api_errf(PS_EINVAL,
					   "tensor '%s' is in host memory",
					   c->tensors[tensor_id].name);
	rc = psi_client_try_params(c, tensor_id, version); /* copies enqueued */
	if (rc != PS_OK)
		return rc;
	ps_cuda_current(&prev);
	ps_cuda_set(c->cuda_device);
	rc = ps_cuda_record(cuda_event, c->h2d, err, sizeof(err));
	ps_cuda_set(prev);
	if (rc != PS_OK)
		return psi_client_api_errf(rc, "tensor '%s': %s",
					   c->tensors[tensor_id].name, err);
	return rc;
}
#endif

int ps_client_declare_cuda(ps_client *c, const char *name, uint64_t numel,
			   float *device_values, int device,
			   uint32_t *tensor_p)
{
	api_call a = psi_client_api_begin("ps_client_declare_cuda");

	return psi_client_api_end(&a, c,
				  declare_cuda(c, name, numel, device_values,
					       device, tensor_p));
}

int ps_client_push_stream(ps_client *c, uint32_t tensor_id,
			  const float *device_grad, uint64_t iteration,
			  void *cuda_stream)
{
	api_call a = psi_client_api_begin("ps_client_push_stream");

	return psi_client_api_end(&a, c,
				  push_stream(c, tensor_id, device_grad,
					      iteration, cuda_stream));
}

/* PS_EAGAIN (not arrived yet) is no failure: it leaves api_error. */
int ps_client_ready_event(ps_client *c, uint32_t tensor_id,
			  uint64_t version, void *cuda_event)
{
	api_call a = psi_client_api_begin("ps_client_ready_event");
	int rc = ready_event(c, tensor_id, version, cuda_event);

	if (rc == PS_EAGAIN) {
		psi_client_api_end_quiet();
		return rc;
	}
	return psi_client_api_end(&a, c, rc);
}
