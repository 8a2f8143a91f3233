/*
 * bench/cuda_overlap_worker.c - how much of the client's device-to-host
 * copies a push from device memory hides behind its sends
 * (docs/benchmarks.md, "CUDA copy path and GPU aggregation"). A worker
 * program for `ps-launch --worker` (bench/cuda_paths.sh runs it).
 *
 * It declares N device tensors (ps_client_declare_cuda) and N host tensors
 * (ps_client_declare) of the same size, cut by scheduling.partition_size,
 * and in every iteration times three modes, one after the other, in an
 * order that rotates with the iteration (so neither warms the caches or
 * the connections for the other always):
 *   a. copies alone: per tensor, per partition one cudaMemcpyAsync of the
 *      device gradient into pinned memory of its own on a non-blocking
 *      stream and an event, then the host waits for the events in order:
 *      the copies ps_client_push_stream makes (docs/cuda.md), without a
 *      push;
 *   b. sends alone: ps_client_push of the host tensors' gradients, then
 *      ps_client_wait for their new parameters;
 *   c. both: ps_client_push_stream of the device tensors' gradients, then
 *      ps_client_wait for their parameters (in the pinned mirror, their
 *      copy to the device enqueued). The copy to the device is then waited
 *      for (ps_client_ready_event, cudaEventSynchronize) and reported on
 *      its own as the "ready tail", not counted in c, so that it does not
 *      spill into the next mode.
 * overlap = (a + b - c) / min(a, b), on the medians over the iterations
 * after the first: 1 when the copies are wholly hidden behind the sends
 * (c = b, or c = a when the sends are the shorter), 0 when c costs both in
 * full. When the sends take far longer than the copies (loopback), the
 * ratio divides the noise of b and c by a small a: so the paired
 * difference c - b of each iteration is reported too, its median and
 * quartiles (near 0 when the copies are hidden, near a when not). What
 * the library does (a hand-over per tensor or per partition) is what is
 * measured; nothing here depends on it.
 *
 * With more than one worker every mode starts after a barrier of all
 * workers (ps_client_barrier, not timed), so that a mode's time is its
 * own and not the wait for a worker still in the previous one.
 *
 * Needs synchronous training, and a setting under which a worker can push
 * the host tensors while the device tensors wait (and the reverse): no
 * fusion of a device tensor with a host tensor (tensors larger than a
 * partition, or scheduling.fusion = off), and no counter gate with an
 * order other than fifo (it would hold one kind's pushes for the other's).
 * Gradients are zeros: the values stay finite, and the servers' arithmetic
 * costs the same in b and c.
 *
 * Under a priority gate with a credit window, b is a best case that c
 * cannot have: b's four pushes reach the gate together (they take
 * microseconds), so the gate releases the most urgent tensor's partitions
 * first; c's partitions reach it one by one, at the copies' pace, and the
 * least urgent tensor (pushed first) fills the window before the urgent
 * ones are there, which then wait behind it. c - b then holds that
 * reordering as well as the copies. CUDA_OVERLAP_PACE=1 takes it out: in b
 * each host tensor is pushed when its device twin's first partition came
 * out of its copy in the latest mode a (the time c hands that tensor's
 * first partition over), so that b and c reach the gate in the same
 * pattern and c - b is the copies' own cost.
 *
 * Environment: CUDA_OVERLAP_TENSORS (default 4, 1..64), CUDA_OVERLAP_MIB
 * (default 16, the size of each tensor in MiB, 1..4096),
 * CUDA_OVERLAP_VERBOSE=1 (every iteration's times on stderr, as
 * "cuda_overlap_iteration worker=R iteration=I copies_ms=.. ..."),
 * CUDA_OVERLAP_PACE=1 (b paced as above; the result line says paced=1).
 * CUDA device 0 (choose with CUDA_VISIBLE_DEVICES). At least 2 iterations.
 *
 * Output, one line per worker on stdout (bench/cuda_paths.sh reads it):
 *   cuda_overlap worker=R workers=W servers=S tensors=N tensor_bytes=B
 *     partition_bytes=P partitions=K iterations=I copies_ms=a
 *     copies_gbps=G sends_ms=b device_ms=c tail_ms=T overlap=X
 *     c_minus_b_ms=D c_minus_b_q1_ms=Q1 c_minus_b_q3_ms=Q3 paced=0|1
 * and "cuda_overlap_device: NAME". Without a CUDA device: "SKIP: no CUDA
 * device: ...", exit 77. Exit 2 for a setting it cannot measure, 1 for a
 * failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "common/cli.h"
#include "common/log.h"
#include "cuda/device.h"
#include "ordo/ordo.h"
#include "runtime/clock.h"
#include "scheduling/gate.h"
#include "scheduling/order.h"

#define MAX_TENSORS 64

enum { MODE_COPIES, MODE_SENDS, MODE_DEVICE, MODES };

#define CK(call)                                                              \
	do {                                                                  \
		cudaError_t e_ = (call);                                      \
		if (e_ != cudaSuccess) {                                      \
			PS_ERROR("%s: %s", #call, cudaGetErrorString(e_));    \
			rc = PS_EIO;                                          \
			goto out;                                             \
		}                                                             \
	} while (0)

/* An environment variable as an integer in [lo, hi], or dflt when unset;
 * -1 (after an error) when it is not one. */
static long env_int(const char *name, long dflt, long lo, long hi)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s)
		return dflt;
	v = strtol(s, &end, 10);
	if (*end || v < lo || v > hi) {
		PS_ERROR("%s = '%s': expected an integer in [%ld, %ld]", name,
			 s, lo, hi);
		return -1;
	}
	return v;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The q-quantile of v[0..n) (sorted in place), interpolated linearly:
 * q = 0.5 the median. */
static double quantile(double *v, size_t n, double q)
{
	double x = q * (double)(n - 1);
	size_t i = (size_t)x;

	qsort(v, n, sizeof(*v), cmp_double);
	return i + 1 < n ? v[i] + (x - (double)i) * (v[i + 1] - v[i]) : v[i];
}

/* Mode a: per tensor, in the backward pass's order (the last tensor's
 * gradient is ready first), per partition one copy into pinned memory and
 * an event, then the host waits for the events in order; the first error,
 * or cudaSuccess. first_ns[k]: when tensor k's first partition was out of
 * its copy, in ns from t0. */
static cudaError_t copies_alone(float **staging, float **dgrad, long n,
				size_t bytes, size_t part, cudaStream_t s,
				cudaEvent_t *ev, uint64_t t0,
				uint64_t *first_ns)
{
	size_t nparts = (bytes + part - 1) / part;
	cudaError_t e = cudaSuccess;

	for (long k = n; k-- > 0 && e == cudaSuccess;) {
		for (size_t p = 0; p < nparts && e == cudaSuccess; p++) {
			size_t off = p * part;
			size_t len = bytes - off < part ? bytes - off : part;
			e = cudaMemcpyAsync((char *)staging[k] + off,
					    (const char *)dgrad[k] + off, len,
					    cudaMemcpyDeviceToHost, s);
			if (e == cudaSuccess)
				e = cudaEventRecord(ev[p], s);
		}
		for (size_t p = 0; p < nparts && e == cudaSuccess; p++) {
			e = cudaEventSynchronize(ev[p]);
			if (p == 0)
				first_ns[k] = ps_now_ns() - t0;
		}
	}
	return e;
}

/* Modes b and c: the n tensors' gradients pushed in the backward pass's
 * order (stream NULL: host tensors, ps_client_push; else device tensors,
 * ps_client_push_stream from that stream), then their parameters of
 * it + 1 waited for. pace_ns (b only, or NULL): tensor k is pushed no
 * sooner than pace_ns[k] after t0 (a spin, as cudaEventSynchronize's). */
static int push_and_wait(ps_client *c, const uint32_t *ids, float **grads,
			 long n, uint64_t it, cudaStream_t stream,
			 uint64_t t0, const uint64_t *pace_ns)
{
	int rc = PS_OK;

	for (long k = n; k-- > 0 && rc == PS_OK;) {
		while (pace_ns && ps_now_ns() - t0 < pace_ns[k])
			;
		rc = stream ? ps_client_push_stream(c, ids[k], grads[k], it,
						    stream)
			    : ps_client_push(c, ids[k], grads[k], it);
	}
	for (long k = 0; k < n && rc == PS_OK; k++)
		rc = ps_client_wait(c, ids[k], it + 1, -1);
	return rc;
}

int main(int argc, char **argv)
{
	const ps_cli_info cli = {
		.prog = "cuda_overlap_worker",
		.summary = "Times device-to-host copies alone, sends alone and "
			   "pushes from device memory, for ps-launch --worker "
			   "(bench/cuda_paths.sh); CUDA_OVERLAP_TENSORS, "
			   "CUDA_OVERLAP_MIB set the tensors.",
	};
	float *dgrad[MAX_TENSORS] = {0}, *dval[MAX_TENSORS] = {0};
	float *hgrad[MAX_TENSORS] = {0}, *hval[MAX_TENSORS] = {0};
	float *staging[MAX_TENSORS] = {0};
	uint32_t td[MAX_TENSORS], th[MAX_TENSORS];
	cudaEvent_t ready[MAX_TENSORS] = {0}, *ev = NULL;
	uint64_t first_ns[MAX_TENSORS] = {0}; /* the latest a's, for b */
	cudaStream_t copy = NULL, app = NULL;
	double *samples[MODES] = {0}, *tail = NULL, *diff = NULL;
	size_t counted = 0, nparts, part, bytes;
	uint64_t it = 0, start, began;
	long ntensors, mib;
	ps_client_result result = {0};
	ps_client *c = NULL;
	ps_cuda_info info;
	ps_cli_status st;
	ps_config cfg;
	char err[1024];
	int rc = PS_OK, status = 1, rank, workers, verbose, pace;

	st = ps_cli_parse(argc, argv, &cli, &cfg);
	if (st != PS_CLI_RUN)
		return ps_cli_exit_status(st);
	ps_log_init("cuda-overlap", cfg.log.level);
	ntensors = env_int("CUDA_OVERLAP_TENSORS", 4, 1, MAX_TENSORS);
	mib = env_int("CUDA_OVERLAP_MIB", 16, 1, 4096);
	verbose = (int)env_int("CUDA_OVERLAP_VERBOSE", 0, 0, 1);
	pace = (int)env_int("CUDA_OVERLAP_PACE", 0, 0, 1);
	if (ntensors < 0 || mib < 0 || verbose < 0 || pace < 0)
		return 2;
	bytes = (size_t)mib << 20;
	part = cfg.scheduling.partition_size < bytes
		       ? (size_t)cfg.scheduling.partition_size
		       : bytes;
	if (part < sizeof(float)) {
		PS_ERROR("scheduling.partition_size = %zu: less than a float",
			 part);
		return 2;
	}
	nparts = (bytes + part - 1) / part;
	if (cfg.train.mode != PS_MODE_SYNC) {
		PS_ERROR("needs train.mode = sync (each mode waits for the "
			 "parameters its pushes produce)");
		return 2;
	}
	if (cfg.train.iterations < 2) {
		PS_ERROR("needs train.iterations >= 2 (the first is not "
			 "counted)");
		return 2;
	}
	if (cfg.scheduling.fusion && cfg.scheduling.partition_size >= bytes) {
		PS_ERROR("scheduling.fusion = on with partitions of %llu bytes "
			 "would fuse %ld-MiB device and host tensors into one "
			 "transfer, which no mode could push alone: set "
			 "scheduling.fusion = off or a smaller partition_size",
			 (unsigned long long)cfg.scheduling.partition_size,
			 mib);
		return 2;
	}
	if (cfg.scheduling.push.gate == PS_GATE_COUNTER &&
	    cfg.scheduling.push.order != PS_ORDER_FIFO) {
		PS_ERROR("scheduling.push_gate = counter with an order other "
			 "than fifo would hold the host tensors' pushes for the "
			 "device tensors' (or the reverse): use the fifo order "
			 "or another gate");
		return 2;
	}
	rc = ps_cuda_open(0, &info, err, sizeof(err));
	if (rc != PS_OK) {
		printf("SKIP: %s\n", err);
		return 77;
	}
	for (int m = 0; m < MODES; m++)
		samples[m] = calloc((size_t)cfg.train.iterations,
				    sizeof(double));
	tail = calloc((size_t)cfg.train.iterations, sizeof(double));
	diff = calloc((size_t)cfg.train.iterations, sizeof(double));
	ev = calloc(nparts, sizeof(*ev));
	if (!samples[0] || !samples[1] || !samples[2] || !tail || !diff ||
	    !ev) {
		rc = PS_ENOMEM;
		goto out;
	}
	CK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&app, cudaStreamNonBlocking));
	for (size_t p = 0; p < nparts; p++)
		CK(cudaEventCreateWithFlags(&ev[p], cudaEventDisableTiming));
	for (long k = 0; k < ntensors; k++) {
		CK(cudaMalloc((void **)&dval[k], bytes));
		CK(cudaMalloc((void **)&dgrad[k], bytes));
		CK(cudaMemset(dval[k], 0, bytes));
		CK(cudaMemset(dgrad[k], 0, bytes));
		CK(cudaHostAlloc((void **)&staging[k], bytes,
				 cudaHostAllocDefault));
		CK(cudaEventCreateWithFlags(&ready[k], cudaEventDisableTiming));
		hval[k] = calloc(1, bytes);
		hgrad[k] = calloc(1, bytes);
		if (!hval[k] || !hgrad[k]) {
			rc = PS_ENOMEM;
			goto out;
		}
	}
	/* the memsets (legacy default stream) are done before the library
	 * reads the initial values and before any copy on a non-blocking
	 * stream, which would not wait for them */
	CK(cudaDeviceSynchronize());
	rc = ps_client_create(&cfg, &c);
	for (long k = 0; rc == PS_OK && k < ntensors; k++) {
		char name[32];

		snprintf(name, sizeof(name), "device%ld", k);
		rc = ps_client_declare_cuda(c, name, bytes / sizeof(float),
					    dval[k], 0, &td[k]);
		if (rc != PS_OK)
			break;
		snprintf(name, sizeof(name), "host%ld", k);
		rc = ps_client_declare(c, name, bytes / sizeof(float), hval[k],
				       &th[k]);
	}
	if (rc == PS_OK)
		rc = ps_client_start(c);
	if (rc != PS_OK) {
		PS_ERROR("cannot start: %s", ps_strerror(rc));
		goto out;
	}
	rank = ps_client_rank(c);
	workers = ps_client_num_workers(c);
	start = ps_client_start_iteration(c);
	began = ps_now_ns();
	for (it = start; rc == PS_OK && ps_client_next_iteration(c, it);
	     it++) {
		double t[MODES] = {0}, t_tail = 0;

		for (int s = 0; s < MODES && rc == PS_OK; s++) {
			int m = (int)((it + (uint64_t)s) % MODES);
			uint64_t t0, t1;

			if (workers > 1) {
				rc = ps_client_barrier(c, -1);
				if (rc != PS_OK)
					break;
			}
			t0 = ps_now_ns();
			if (m == MODE_COPIES) {
				CK(copies_alone(staging, dgrad, ntensors, bytes,
						part, copy, ev, t0, first_ns));
			} else if (m == MODE_SENDS) {
				rc = push_and_wait(c, th, hgrad, ntensors, it,
						   NULL, t0,
						   pace ? first_ns : NULL);
			} else {
				rc = push_and_wait(c, td, dgrad, ntensors, it,
						   app, t0, NULL);
			}
			t1 = ps_now_ns();
			t[m] = (double)(t1 - t0) * 1e-6;
			if (m != MODE_DEVICE || rc != PS_OK)
				continue;
			/* the parameters' copy to the device, outside c */
			for (long k = 0; k < ntensors && rc == PS_OK; k++) {
				rc = ps_client_ready_event(c, td[k], it + 1,
							   ready[k]);
				if (rc == PS_OK)
					CK(cudaEventSynchronize(ready[k]));
			}
			t_tail = (double)(ps_now_ns() - t1) * 1e-6;
		}
		if (rc != PS_OK)
			break;
		if (verbose)
			fprintf(stderr,
				"cuda_overlap_iteration worker=%d "
				"iteration=%llu copies_ms=%.3f sends_ms=%.3f "
				"device_ms=%.3f tail_ms=%.3f\n",
				rank, (unsigned long long)it, t[MODE_COPIES],
				t[MODE_SENDS], t[MODE_DEVICE], t_tail);
		if (it == start)
			continue; /* connections, pages, the library's first
				   * allocations */
		for (int m = 0; m < MODES; m++)
			samples[m][counted] = t[m];
		diff[counted] = t[MODE_DEVICE] - t[MODE_SENDS];
		tail[counted++] = t_tail;
	}
	if (rc != PS_OK) {
		PS_ERROR("iteration %llu failed: %s", (unsigned long long)it,
			 ps_strerror(rc));
		goto out;
	}
	result.iterations = it;
	result.seconds = (double)(ps_now_ns() - began) * 1e-9;
	rc = ps_client_finish(c, &result);
	if (rc != PS_OK) {
		PS_ERROR("finish failed: %s", ps_strerror(rc));
		goto out;
	}
	if (counted == 0) {
		PS_ERROR("no iteration counted (the job ran %llu)",
			 (unsigned long long)(it - start));
		goto out;
	}
	{
		double a = quantile(samples[MODE_COPIES], counted, 0.5);
		double b = quantile(samples[MODE_SENDS], counted, 0.5);
		double d = quantile(samples[MODE_DEVICE], counted, 0.5);
		double lo = a < b ? a : b;
		double dq1 = quantile(diff, counted, 0.25);
		double dq2 = quantile(diff, counted, 0.5);
		double dq3 = quantile(diff, counted, 0.75);

		printf("cuda_overlap_device: %s\n", info.name);
		printf("cuda_overlap worker=%d workers=%d servers=%d "
		       "tensors=%ld tensor_bytes=%zu partition_bytes=%zu "
		       "partitions=%zu "
		       "iterations=%zu copies_ms=%.3f copies_gbps=%.2f "
		       "sends_ms=%.3f device_ms=%.3f tail_ms=%.3f "
		       "overlap=%.2f c_minus_b_ms=%.3f c_minus_b_q1_ms=%.3f "
		       "c_minus_b_q3_ms=%.3f paced=%d\n",
		       rank, workers, cfg.cluster.servers, ntensors, bytes,
		       part, nparts, counted, a,
		       (double)ntensors * (double)bytes / (a * 1e-3) / 1e9, b,
		       d, quantile(tail, counted, 0.5),
		       lo > 0 ? (a + b - d) / lo : 0.0, dq2, dq1, dq3, pace);
		fflush(stdout);
	}
	status = 0;
out:
	if (rc != PS_OK && status != 0)
		PS_ERROR("cuda_overlap_worker: %s", ps_strerror(rc));
	ps_client_destroy(&c);
	for (long k = 0; k < MAX_TENSORS; k++) {
		cudaFree(dval[k]);
		cudaFree(dgrad[k]);
		cudaFreeHost(staging[k]);
		if (ready[k])
			cudaEventDestroy(ready[k]);
		free(hval[k]);
		free(hgrad[k]);
	}
	for (size_t p = 0; ev && p < nparts; p++)
		if (ev[p])
			cudaEventDestroy(ev[p]);
	if (copy)
		cudaStreamDestroy(copy);
	if (app)
		cudaStreamDestroy(app);
	free(ev);
	free(tail);
	free(diff);
	for (int m = 0; m < MODES; m++)
		free(samples[m]);
	return status;
}
