/*
 * bench/cuda_copy.c - ordo's CUDA paths against the device's own peaks
 * (docs/benchmarks.md, "CUDA copy path and GPU aggregation").
 *
 *   cuda_copy [--quick]     (CUDA device 0: pick with CUDA_VISIBLE_DEVICES)
 *
 * Prints, in Markdown:
 *  1. the device: name, compute capability, memory, L2, the memory bus's
 *     theoretical peak where the driver reports its clock and width, the
 *     PCI address and (from sysfs) the PCIe link, the copy engines;
 *  2. cudaMemcpy's peak: device to host and host to device, from pinned
 *     (cudaHostAlloc) and pageable (malloc'd, pages touched first) memory,
 *     64 KiB to 256 MiB, timed with CUDA events on the legacy default
 *     stream, best of R measurements;
 *  3. the client's copy path (docs/cuda.md, "Device tensors in the client
 *     API"): one tensor cut into partitions of 64 KiB .. 4 MiB, one
 *     cudaMemcpyAsync per partition on a non-blocking stream into pinned
 *     staging, each followed by an event, the host waiting for the events
 *     in order (device to host, as ps_client_push_stream); and the way back
 *     (host to device per partition, one event after the last, as the
 *     mirror's copy behind ps_client_ready_event). Timed on the host clock,
 *     since the host's wait is what the client sees; set beside the pinned
 *     peak of section 2 at the tensor's size, with the cost per partition;
 *  4. GPU aggregation (cuda/optimizer_cuda.h, server.device = cuda): the
 *     kernels over 1M .. 64M floats, bytes each moves per element (counted
 *     from cuda/optimizer_kernels.cu), the effective GB/s, and its ratio to
 *     a device-to-device cudaMemcpy of 256 MiB measured in the same run
 *     (read + write, counted like the kernels' bytes) and to the
 *     theoretical peak;
 *  5. the CPU's side: memcpy of the tensor's bytes between pageable
 *     buffers, into pinned memory and out of it (the client copies
 *     arrived parameters into a device tensor's pinned mirror where a host
 *     tensor's go into the application's pageable buffer), best of R.
 * GB/s are 10^9 bytes per second throughout.
 *
 * --quick: fewer repetitions, sizes up to 16 MiB, a 16 MiB tensor, 1M and
 * 4M floats (a smoke run: its aggregation sizes fit in a large L2).
 *
 * Exit status: 0; 77 with "SKIP: no CUDA device: ..." where no device
 * opens (ps_cuda_open's reason); 1 after a CUDA error, which is printed;
 * 2 for a bad option.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "cuda/device.h"
#include "cuda/optimizer_cuda.h"
#include "ordo/error.h"

#define KiB ((size_t)1024)
#define MiB (KiB * 1024)

/* A CUDA error ends the benchmark: a number measured after one would
 * mean nothing. */
#define CK(call) ck((call), #call, __LINE__)

static void ck(cudaError_t e, const char *what, int line)
{
	if (e == cudaSuccess)
		return;
	fprintf(stderr, "cuda_copy: line %d: %s: %s (%s)\n", line, what,
		cudaGetErrorString(e), cudaGetErrorName(e));
	exit(1);
}

/* An ordo_cuda launcher's status (it logged the CUDA error itself). */
static void ck_ps(int rc, const char *what)
{
	if (rc == PS_OK)
		return;
	fprintf(stderr, "cuda_copy: %s: %s\n", what, ps_strerror(rc));
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double gbps(double bytes, double seconds)
{
	return seconds > 0 ? bytes / seconds / 1e9 : 0.0;
}

static const char *human(size_t bytes, char *buf, size_t cap)
{
	if (bytes >= MiB && bytes % MiB == 0)
		snprintf(buf, cap, "%zu MiB", bytes / MiB);
	else if (bytes >= KiB && bytes % KiB == 0)
		snprintf(buf, cap, "%zu KiB", bytes / KiB);
	else
		snprintf(buf, cap, "%zu B", bytes);
	return buf;
}

/* An attribute, or 0 where this driver does not report it (CUDA 13 keeps
 * the memory clock only as an attribute: cudaDeviceProp lost the field). */
static int attr(enum cudaDeviceAttr a, int dev)
{
	int v = 0;
	if (cudaDeviceGetAttribute(&v, a, dev) != cudaSuccess) {
		(void)cudaGetLastError();
		return 0;
	}
	return v;
}

/* One line of sysfs (the PCIe link), or "" when unreadable. */
static void read_line(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	buf[0] = '\0';
	if (!f)
		return;
	if (!fgets(buf, (int)cap, f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
}

/* The theoretical memory bandwidth in GB/s from the memory clock (kHz)
 * and bus width (bits), double data rate; 0 when either is unknown. */
static double mem_peak_gbps(int dev)
{
	int khz = attr(cudaDevAttrMemoryClockRate, dev);
	int bits = attr(cudaDevAttrGlobalMemoryBusWidth, dev);
	return 2.0 * (double)khz * 1e3 * (double)bits / 8.0 / 1e9;
}

static void print_device(const ps_cuda_info *info)
{
	int dev = info->index, drv = 0, rt = 0;
	int khz = attr(cudaDevAttrMemoryClockRate, dev);
	int bits = attr(cudaDevAttrGlobalMemoryBusWidth, dev);
	int l2 = attr(cudaDevAttrL2CacheSize, dev);
	int sms = attr(cudaDevAttrMultiProcessorCount, dev);
	int engines = attr(cudaDevAttrAsyncEngineCount, dev);
	int integrated = attr(cudaDevAttrIntegrated, dev);
	char bus[64] = "", path[256], speed[64], width[64], mspeed[64],
	     mwidth[64];

	(void)cudaDriverGetVersion(&drv);
	(void)cudaRuntimeGetVersion(&rt);
	printf("## Device\n\n");
	printf("- CUDA device %d of %d: **%s**, compute capability %d.%d, "
	       "%d SMs%s\n",
	       dev, info->count, info->name, info->major, info->minor, sms,
	       integrated ? " (integrated: shares host memory)" : "");
	printf("- memory: %.1f GiB (%.1f GiB free), L2 %.1f MiB\n",
	       (double)info->total_bytes / (double)(1024 * MiB),
	       (double)info->free_bytes / (double)(1024 * MiB),
	       (double)l2 / (double)MiB);
	if (khz > 0 && bits > 0)
		printf("- memory bus: %d bits at %d MHz: theoretical peak "
		       "%.0f GB/s\n",
		       bits, khz / 1000, mem_peak_gbps(dev));
	else
		printf("- memory bus: clock or width not reported by this "
		       "driver: no theoretical peak\n");
	if (cudaDeviceGetPCIBusId(bus, sizeof(bus), dev) != cudaSuccess) {
		(void)cudaGetLastError();
		snprintf(bus, sizeof(bus), "unknown");
	}
	/* sysfs names the device in lower case: 0000:3b:00.0 */
	for (char *p = bus; *p; p++)
		if (*p >= 'A' && *p <= 'F')
			*p = (char)(*p - 'A' + 'a');
	snprintf(path, sizeof(path),
		 "/sys/bus/pci/devices/%s/current_link_speed", bus);
	read_line(path, speed, sizeof(speed));
	snprintf(path, sizeof(path),
		 "/sys/bus/pci/devices/%s/current_link_width", bus);
	read_line(path, width, sizeof(width));
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/max_link_speed",
		 bus);
	read_line(path, mspeed, sizeof(mspeed));
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/max_link_width",
		 bus);
	read_line(path, mwidth, sizeof(mwidth));
	if (speed[0] && width[0])
		printf("- PCI %s: link %s x%s now (the link may train down "
		       "when idle), %s x%s at most\n",
		       bus, speed, width, mspeed[0] ? mspeed : "?",
		       mwidth[0] ? mwidth : "?");
	else
		printf("- PCI %s: PCIe link not readable from sysfs\n", bus);
	printf("- copy engines: %d; driver %d.%d, runtime %d.%d\n\n", engines,
	       drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
}

/* ---- 2. cudaMemcpy's peak ---------------------------------------------- */

#define MAX_SIZES 16

typedef struct bufs {
	void *dev, *pinned, *pageable;
	size_t bytes;
} bufs;

/* The best time of one cudaMemcpy of `bytes`, in seconds: `reps`
 * measurements, each timing `batch` copies between two events on the
 * legacy default stream (small copies are batched, since an event's
 * resolution is about half a microsecond). */
static double best_memcpy(void *dst, const void *src, size_t bytes,
			  enum cudaMemcpyKind kind, int reps)
{
	cudaEvent_t a, b;
	double best = 1e30;
	int batch = (int)(32 * MiB / bytes);

	batch = batch < 1 ? 1 : batch > 64 ? 64 : batch;
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	CK(cudaMemcpy(dst, src, bytes, kind)); /* warm-up */
	for (int r = 0; r < reps; r++) {
		float ms = 0;
		CK(cudaEventRecord(a, 0));
		for (int k = 0; k < batch; k++)
			CK(cudaMemcpy(dst, src, bytes, kind));
		CK(cudaEventRecord(b, 0));
		CK(cudaEventSynchronize(b));
		CK(cudaEventElapsedTime(&ms, a, b));
		if (ms * 1e-3 / batch < best)
			best = ms * 1e-3 / batch;
	}
	CK(cudaEventDestroy(a));
	CK(cudaEventDestroy(b));
	return best;
}

/* Prints the peak table; returns the pinned peaks (GB/s) at `at` bytes in
 * *d2h and *h2d for section 3. */
static void peak_table(const bufs *m, const size_t *sizes, int nsizes,
		       int reps, size_t at, double *d2h, double *h2d)
{
	char sz[32];

	printf("## cudaMemcpy peak\n\n");
	printf("One `cudaMemcpy` of the size, timed with CUDA events on the "
	       "legacy default stream, best of %d (copies under 32 MiB "
	       "batched between the events); GB/s = 10^9 bytes/s.\n\n",
	       reps);
	printf("| size | D2H pinned GB/s | D2H pageable GB/s | H2D pinned "
	       "GB/s | H2D pageable GB/s |\n");
	printf("|---:|---:|---:|---:|---:|\n");
	for (int i = 0; i < nsizes; i++) {
		size_t n = sizes[i];
		double t[4];
		t[0] = best_memcpy(m->pinned, m->dev, n,
				   cudaMemcpyDeviceToHost, reps);
		t[1] = best_memcpy(m->pageable, m->dev, n,
				   cudaMemcpyDeviceToHost, reps);
		t[2] = best_memcpy(m->dev, m->pinned, n,
				   cudaMemcpyHostToDevice, reps);
		t[3] = best_memcpy(m->dev, m->pageable, n,
				   cudaMemcpyHostToDevice, reps);
		printf("| %s | %.2f | %.2f | %.2f | %.2f |\n",
		       human(n, sz, sizeof(sz)), gbps((double)n, t[0]),
		       gbps((double)n, t[1]), gbps((double)n, t[2]),
		       gbps((double)n, t[3]));
		if (n == at) {
			*d2h = gbps((double)n, t[0]);
			*h2d = gbps((double)n, t[2]);
		}
		fflush(stdout);
	}
	printf("\n");
}

/* ---- 3. the client's copy path ------------------------------------------ */

/* One push's copies: per partition a cudaMemcpyAsync device to pinned host
 * on the non-blocking stream, then an event; the host then waits for the
 * events in order (ps_client_push_stream). Seconds on the host clock. */
static double path_d2h(void *pinned, const void *dev, size_t bytes,
		       size_t part, cudaStream_t s, cudaEvent_t *ev)
{
	size_t nparts = (bytes + part - 1) / part;
	double t0 = now_s();

	for (size_t k = 0; k < nparts; k++) {
		size_t off = k * part;
		size_t len = bytes - off < part ? bytes - off : part;
		CK(cudaMemcpyAsync((char *)pinned + off,
				   (const char *)dev + off, len,
				   cudaMemcpyDeviceToHost, s));
		CK(cudaEventRecord(ev[k], s));
	}
	for (size_t k = 0; k < nparts; k++)
		CK(cudaEventSynchronize(ev[k]));
	return now_s() - t0;
}

/* The way back: per partition a copy pinned host to device, one event
 * after the last, the host waiting on it. */
static double path_h2d(void *dev, const void *pinned, size_t bytes,
		       size_t part, cudaStream_t s, cudaEvent_t done)
{
	size_t nparts = (bytes + part - 1) / part;
	double t0 = now_s();

	for (size_t k = 0; k < nparts; k++) {
		size_t off = k * part;
		size_t len = bytes - off < part ? bytes - off : part;
		CK(cudaMemcpyAsync((char *)dev + off,
				   (const char *)pinned + off, len,
				   cudaMemcpyHostToDevice, s));
	}
	CK(cudaEventRecord(done, s));
	CK(cudaEventSynchronize(done));
	return now_s() - t0;
}

static void path_table(const bufs *m, size_t tensor, int reps,
		       double d2h_peak, double h2d_peak)
{
	static const size_t parts[] = {64 * KiB, 256 * KiB, 1 * MiB,
				       4 * MiB};
	size_t maxparts = (tensor + parts[0] - 1) / parts[0];
	cudaEvent_t *ev = calloc(maxparts, sizeof(*ev));
	cudaStream_t s;
	char sz[32], ts[32];

	if (!ev) {
		fprintf(stderr, "cuda_copy: out of memory\n");
		exit(1);
	}
	/* as the library's: non-blocking stream, events without timing */
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	for (size_t k = 0; k < maxparts; k++)
		CK(cudaEventCreateWithFlags(&ev[k], cudaEventDisableTiming));
	printf("## The client's copy path\n\n");
	printf("A %s device tensor, per partition one `cudaMemcpyAsync` on a "
	       "non-blocking stream into pinned staging and an event, the "
	       "host waiting for the events in order (D2H, as "
	       "`ps_client_push_stream`); per partition a copy back and one "
	       "event after the last (H2D, as the pinned mirror's copy to the "
	       "device). Host clock, from the first enqueue to the last "
	       "wait, best of %d. \"/ peak\": against the pinned `cudaMemcpy` "
	       "of the whole %s above; \"per partition\": (time - size / "
	       "peak) / partitions, what cutting costs per cut.\n\n",
	       human(tensor, ts, sizeof(ts)), reps,
	       human(tensor, ts, sizeof(ts)));
	printf("| partition | partitions | D2H GB/s | D2H / peak | D2H per "
	       "partition us | H2D GB/s | H2D / peak | H2D per partition us "
	       "|\n");
	printf("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		size_t p = parts[i], n = (tensor + p - 1) / p;
		double dbest = 1e30, hbest = 1e30;

		(void)path_d2h(m->pinned, m->dev, tensor, p, s, ev);
		(void)path_h2d(m->dev, m->pinned, tensor, p, s, ev[0]);
		for (int r = 0; r < reps; r++) {
			double t = path_d2h(m->pinned, m->dev, tensor, p, s,
					    ev);
			dbest = t < dbest ? t : dbest;
			t = path_h2d(m->dev, m->pinned, tensor, p, s, ev[0]);
			hbest = t < hbest ? t : hbest;
		}
		double dg = gbps((double)tensor, dbest);
		double hg = gbps((double)tensor, hbest);
		double dper = (dbest - (double)tensor / (d2h_peak * 1e9)) /
			      (double)n * 1e6;
		double hper = (hbest - (double)tensor / (h2d_peak * 1e9)) /
			      (double)n * 1e6;
		printf("| %s | %zu | %.2f | %.2f | %.1f | %.2f | %.2f | %.1f "
		       "|\n",
		       human(p, sz, sizeof(sz)), n, dg, dg / d2h_peak, dper,
		       hg, hg / h2d_peak, hper);
		fflush(stdout);
	}
	printf("\n");
	for (size_t k = 0; k < maxparts; k++)
		CK(cudaEventDestroy(ev[k]));
	CK(cudaStreamDestroy(s));
	free(ev);
}

/* ---- 4. GPU aggregation ------------------------------------------------- */

/* Device-to-device cudaMemcpy of `bytes` (far above any L2), as memory
 * traffic: read + write = 2 x bytes per copy, in GB/s. */
static double d2d_traffic_gbps(size_t bytes, int reps)
{
	void *a, *b;
	double t;

	CK(cudaMalloc(&a, bytes));
	CK(cudaMalloc(&b, bytes));
	CK(cudaMemset(a, 0, bytes));
	t = best_memcpy(b, a, bytes, cudaMemcpyDeviceToDevice, reps);
	CK(cudaFree(a));
	CK(cudaFree(b));
	return gbps(2.0 * (double)bytes, t);
}

typedef struct agg {
	double *acc;
	float *g, *w, *v;
} agg;

enum { K_SET, K_ADD, K_LAST, K_LAST1, K_COUNT };

/* The bytes each kernel moves per element, from cuda/optimizer_kernels.cu
 * (reads + writes of device memory, nothing cached between elements). */
static const struct {
	const char *name, *what;
	int bytes;
} kernels[K_COUNT] = {
	[K_SET] = {"ps_cuda_accum_set", "g 4 in, acc 8 out", 12},
	[K_ADD] = {"ps_cuda_accum_add", "acc 8 + g 4 in, acc 8 out", 20},
	[K_LAST] = {"ps_cuda_sgd_apply_last (W > 1)",
		    "acc 8 + g 4 + v 4 + w 4 in, v 4 + w 4 out", 28},
	[K_LAST1] = {"ps_cuda_sgd_apply_last (W = 1)",
		     "g 4 + v 4 + w 4 in, v 4 + w 4 out", 20},
};

static void launch(int k, const agg *a, size_t n, cudaStream_t s)
{
	switch (k) {
	case K_SET:
		ck_ps(ps_cuda_accum_set(a->acc, a->g, n, s), kernels[k].name);
		break;
	case K_ADD:
		ck_ps(ps_cuda_accum_add(a->acc, a->g, n, s), kernels[k].name);
		break;
	case K_LAST: /* the last of two pushes: the sum is read */
		ck_ps(ps_cuda_sgd_apply_last(a->w, a->v, a->acc, a->g, n, 0, 2,
					     0.01, 0.9, s),
		      kernels[k].name);
		break;
	default: /* one worker: first && count == 1, the sum never read */
		ck_ps(ps_cuda_sgd_apply_last(a->w, a->v, a->acc, a->g, n, 1, 1,
					     0.01, 0.9, s),
		      kernels[k].name);
	}
}

/* The best time of one launch over n elements, in seconds (small sizes
 * batched between the events, as in best_memcpy). */
static double best_kernel(int k, const agg *a, size_t n, cudaStream_t s,
			  int reps)
{
	cudaEvent_t e0, e1;
	double best = 1e30;
	int batch = (int)((size_t)16 * 1024 * 1024 / n);

	batch = batch < 1 ? 1 : batch > 64 ? 64 : batch;
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	launch(k, a, n, s); /* warm-up */
	for (int r = 0; r < reps; r++) {
		float ms = 0;
		CK(cudaEventRecord(e0, s));
		for (int i = 0; i < batch; i++)
			launch(k, a, n, s);
		CK(cudaEventRecord(e1, s));
		CK(cudaEventSynchronize(e1));
		CK(cudaEventElapsedTime(&ms, e0, e1));
		if (ms * 1e-3 / batch < best)
			best = ms * 1e-3 / batch;
	}
	CK(cudaGetLastError());
	CK(cudaEventDestroy(e0));
	CK(cudaEventDestroy(e1));
	return best;
}

static void agg_table(const ps_cuda_info *info, const size_t *elems,
		      int nelems, int reps)
{
	const size_t ref = 256 * MiB;
	double d2d = d2d_traffic_gbps(ref, reps);
	double peak = mem_peak_gbps(info->index);
	size_t free_b = 0, total_b = 0, maxn = 0;
	cudaStream_t s;
	agg a;
	char peak_col[32];

	printf("## GPU aggregation\n\n");
	printf("Device-to-device `cudaMemcpy` of 256 MiB: %.0f GB/s of memory "
	       "traffic (read + write: twice the bytes copied), best of %d",
	       d2d, reps);
	if (peak > 0)
		printf("; %.2f of the theoretical %.0f GB/s", d2d / peak, peak);
	printf(".\n\n");
	printf("Each kernel (`cuda/optimizer_cuda.h`, what `server.device = "
	       "cuda` runs) timed with CUDA events on a stream, best of %d "
	       "launches; bytes per element counted from "
	       "`cuda/optimizer_kernels.cu`; GB/s = bytes per element x "
	       "elements / time. \"/ D2D\": against the copy above. Sizes "
	       "whose working set fits in the L2 (%.0f MiB) may exceed the "
	       "memory's bandwidth.\n\n",
	       reps,
	       (double)attr(cudaDevAttrL2CacheSize, info->index) /
		   (double)MiB);
	snprintf(peak_col, sizeof(peak_col), "%s",
		 peak > 0 ? " / theoretical |" : "");
	printf("| kernel | bytes per element | floats | time us | GB/s | / "
	       "D2D |%s\n",
	       peak_col);
	printf("|---|---|---:|---:|---:|---:|%s\n", peak > 0 ? "---:|" : "");

	CK(cudaMemGetInfo(&free_b, &total_b));
	for (int i = 0; i < nelems; i++)
		/* 20 bytes an element (acc, g, w, v), and room to spare */
		if (elems[i] * 20 + 64 * MiB <= free_b && elems[i] > maxn)
			maxn = elems[i];
	if (maxn == 0) {
		printf("(not run: %zu MiB free on the device, too little for "
		       "the smallest size)\n\n",
		       free_b / MiB);
		return;
	}
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaMalloc((void **)&a.acc, maxn * sizeof(double)));
	CK(cudaMalloc((void **)&a.g, maxn * sizeof(float)));
	CK(cudaMalloc((void **)&a.w, maxn * sizeof(float)));
	CK(cudaMalloc((void **)&a.v, maxn * sizeof(float)));
	/* zeros: every value stays finite and normal */
	CK(cudaMemset(a.acc, 0, maxn * sizeof(double)));
	CK(cudaMemset(a.g, 0, maxn * sizeof(float)));
	CK(cudaMemset(a.w, 0, maxn * sizeof(float)));
	CK(cudaMemset(a.v, 0, maxn * sizeof(float)));
	/* the kernels run on a non-blocking stream, which does not wait for
	 * the legacy default stream's memsets */
	CK(cudaDeviceSynchronize());
	for (int k = 0; k < K_COUNT; k++)
		for (int i = 0; i < nelems; i++) {
			size_t n = elems[i];
			double t, bw;
			if (n > maxn) {
				printf("| %s | %d: %s | %zuM | not run: too "
				       "little device memory | | |%s\n",
				       kernels[k].name, kernels[k].bytes,
				       kernels[k].what, n >> 20,
				       peak > 0 ? " |" : "");
				continue;
			}
			t = best_kernel(k, &a, n, s, reps);
			bw = gbps((double)kernels[k].bytes * (double)n, t);
			printf("| %s | %d: %s | %zuM | %.1f | %.0f | %.2f |",
			       kernels[k].name, kernels[k].bytes,
			       kernels[k].what, n >> 20, t * 1e6, bw, bw / d2d);
			if (peak > 0)
				printf(" %.2f |", bw / peak);
			printf("\n");
			fflush(stdout);
		}
	printf("\n");
	CK(cudaFree(a.acc));
	CK(cudaFree(a.g));
	CK(cudaFree(a.w));
	CK(cudaFree(a.v));
	CK(cudaStreamDestroy(s));
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cuda_copy [--quick] [--help]\n"
		"ordo's CUDA paths on CUDA device 0 (choose it with "
		"CUDA_VISIBLE_DEVICES), in Markdown:\n"
		"cudaMemcpy's peak (D2H, H2D, pinned, pageable, 64 KiB .. "
		"256 MiB), the client's\n"
		"per-partition copy path against it, and GPU aggregation "
		"against the device's\n"
		"memory bandwidth (docs/benchmarks.md).\n"
		"  --quick  fewer repetitions and smaller sizes (a smoke run)\n"
		"Exit status 77 with \"SKIP: ...\" where no CUDA device "
		"opens.\n");
}

/* 5. memcpy of `bytes` on the CPU: pageable to pageable, pageable to
 * pinned, pinned to pageable, best of reps; every buffer touched first. */
static void host_table(const bufs *m, size_t bytes, int reps)
{
	struct {
		const char *what;
		void *dst;
		const void *src;
	} rows[3];
	char *other = malloc(bytes);
	char hb[32];

	if (!other) {
		fprintf(stderr, "cuda_copy: cannot malloc %zu bytes\n", bytes);
		exit(1);
	}
	memset(other, 2, bytes);
	rows[0].what = "pageable to pageable";
	rows[0].dst = other;
	rows[0].src = m->pageable;
	rows[1].what = "pageable to pinned";
	rows[1].dst = m->pinned;
	rows[1].src = m->pageable;
	rows[2].what = "pinned to pageable";
	rows[2].dst = other;
	rows[2].src = m->pinned;
	printf("## The CPU's copies, pinned and pageable\n\n");
	printf("One `memcpy` of %s on the host clock, best of %d: a device "
	       "tensor's arrived parameters are copied into its pinned mirror "
	       "where a host tensor's go into pageable memory.\n\n",
	       human(bytes, hb, sizeof(hb)), reps);
	printf("| copy | GB/s |\n|---|---:|\n");
	for (int r = 0; r < 3; r++) {
		double best = 0;
		for (int i = 0; i < reps; i++) {
			double t0 = now_s();
			memcpy(rows[r].dst, rows[r].src, bytes);
			double t = now_s() - t0;
			if (i == 0 || t < best)
				best = t;
		}
		printf("| %s | %.2f |\n", rows[r].what, gbps((double)bytes, best));
	}
	printf("\n");
	fflush(stdout);
	free(other);
}

int main(int argc, char **argv)
{
	static const size_t full_sizes[] = {64 * KiB, 256 * KiB, 1 * MiB,
					    4 * MiB,  16 * MiB,  64 * MiB,
					    256 * MiB};
	static const size_t full_elems[] = {1u << 20, 4u << 20, 16u << 20,
					    64u << 20};
	int quick = 0, nsizes, nelems, reps;
	size_t tensor;
	double d2h_peak = 0, h2d_peak = 0;
	ps_cuda_info info;
	char err[1024];
	bufs m;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0) {
			quick = 1;
		} else if (strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "cuda_copy: unknown option '%s'\n",
				argv[i]);
			usage(stderr);
			return 2;
		}
	}
	if (ps_cuda_open(0, &info, err, sizeof(err)) != PS_OK) {
		printf("SKIP: %s\n", err);
		return 77;
	}
	/* quick: up to 16 MiB (5 sizes), a 16 MiB tensor, 1M and 4M floats */
	nsizes = quick ? 5 : (int)(sizeof(full_sizes) / sizeof(full_sizes[0]));
	nelems = quick ? 2 : (int)(sizeof(full_elems) / sizeof(full_elems[0]));
	reps = quick ? 3 : 20;
	tensor = quick ? 16 * MiB : 64 * MiB;

	print_device(&info);
	fflush(stdout);
	m.bytes = full_sizes[nsizes - 1];
	CK(cudaMalloc(&m.dev, m.bytes));
	CK(cudaHostAlloc(&m.pinned, m.bytes, cudaHostAllocDefault));
	m.pageable = malloc(m.bytes);
	if (!m.pageable) {
		fprintf(stderr, "cuda_copy: cannot malloc %zu bytes\n",
			m.bytes);
		return 1;
	}
	/* every page touched first: a first-touch fault is not a copy's */
	memset(m.pageable, 1, m.bytes);
	memset(m.pinned, 1, m.bytes);
	CK(cudaMemset(m.dev, 0, m.bytes));
	CK(cudaDeviceSynchronize());

	peak_table(&m, full_sizes, nsizes, reps, tensor, &d2h_peak,
		   &h2d_peak);
	path_table(&m, tensor, reps, d2h_peak, h2d_peak);
	host_table(&m, tensor, reps);
	CK(cudaFree(m.dev));
	CK(cudaFreeHost(m.pinned));
	free(m.pageable);
	agg_table(&info, full_elems, nelems, reps);
	return 0;
}
