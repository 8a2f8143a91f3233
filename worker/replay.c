/*
 * worker/replay.c - the replay engine (replay.h).
 *
 * DESIGN. Everything here runs on the application thread; the client's
 * communication thread moves the bytes. The engine keeps, per iteration,
 * each op's count of unfinished dependencies and the set of ops whose count
 * is zero (`ready`). It runs the lowest-indexed ready op that can run (the
 * documented replay order): an op whose parameters are missing does not
 * block the others. The ready set is scanned linearly: it holds a handful
 * of ops (the DAG's width), and each scan is far cheaper than an op.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/log.h"
#include "common/memory.h"
#include "common/output.h"
#include "runtime/clock.h"
#include "runtime/signals.h"
#include "runtime/trace.h"
#include "model/dag.h"
#include "ordo/ordo.h"
#include "proto/engine.h"
#include "scheduling/efficiency.h"
#include "client/internal.h"
#include "worker/replay.h"
#ifdef PS_WITH_CUDA
#include "cuda/device.h"
#include "cuda/staging.h"
#endif

typedef struct engine {
	const ps_config *cfg;
	const ps_dag *dag;
	ps_client *client;
	int rank;
	float **values;   /* per tensor: parameters (received) */
	float *zeros;     /* the gradient of every push: read-only zeros */
	ps_engine *engine; /* which op runs next (proto/engine.h) */
	uint64_t *have;   /* per tensor: version copied in, +1 (0: none) */
	uint64_t seen;    /* arrivals counter for ps_client_wait_any */
	uint64_t dev_end; /* the device's clock: when its last op ended (ns;
			   * 0: idle, waiting for parameters) */
	uint64_t woke;    /* when the host woke from that op */
	double comm_us;   /* model bytes / bandwidth: one direction */
	FILE *csv;
#ifdef PS_WITH_CUDA
	/* worker.gradients = cuda: every tensor in device memory, the
	 * gradient pushed from device zeros, an event per tensor for its
	 * parameters' copies to the device (DESIGN, device gradients) */
	int cuda;
	float **dev_values;
	float *dev_zeros;
	void **ready_ev;
#endif
} engine;

#ifdef PS_WITH_CUDA
/*
 * DESIGN (device gradients, docs/cuda.md). With worker.gradients = cuda a
 * replaying worker holds its parameters and gradients where a GPU
 * framework does: each tensor is declared with ps_client_declare_cuda, a
 * backward op's gradients are pushed with ps_client_push_stream (copied
 * to pinned host memory partition by partition in the gate's order, each
 * handed to the gate as its copy completes) and an op runs only once its
 * parameters are in device memory: the copy of an arrival to the device
 * is waited for (its event), as the op's kernels would wait in their
 * stream. The host blocks where a GPU's stream would: the replayed device
 * is the host's clock. So the copies' cost in both directions is part of
 * the measured iteration time, beside the transfers' own.
 */
static int cuda_have(engine *e, uint32_t t, uint64_t it, int *have_p)
{
	char err[512];
	int rc = ps_client_ready_event(e->client, t, it, e->ready_ev[t]);

	if (rc == PS_EAGAIN) {
		*have_p = 0;
		return PS_OK;
	}
	if (rc == PS_OK)
		rc = ps_cuda_event_sync(e->ready_ev[t], err, sizeof(err));
	if (rc != PS_OK)
		PS_ERROR("tensor '%s': waiting for its parameters' copy to "
			 "CUDA device %d: %s", e->dag->tensors[t].name,
			 e->cfg->worker.cuda_device,
			 rc == PS_EIO ? err : ps_strerror(rc));
	return rc;
}
#endif

/* The engine's question: are version `it` of tensor t's parameters here?
 * (copied into the tensor's values on the way) */
static int have_params(void *ud, uint32_t t, uint64_t it, int *have_p)
{
	engine *e = ud;
	int rc;

	*have_p = 1;
	if (e->have[t] > it)
		return PS_OK;
#ifdef PS_WITH_CUDA
	if (e->cuda) {
		rc = cuda_have(e, t, it, have_p);
		if (rc == PS_OK && *have_p)
			e->have[t] = it + 1;
		return rc;
	}
#endif
	rc = ps_client_try(e->client, t, it);
	if (rc == PS_EAGAIN) {
		*have_p = 0;
		return PS_OK;
	}
	if (rc != PS_OK)
		return rc;
	e->have[t] = it + 1;
	return PS_OK;
}

/* Waits until the monotonic clock reads end_ns (sleeping or spinning). */
static void run_until(const engine *e, uint64_t end_ns)
{
	if (e->cfg->worker.compute == PS_COMPUTE_SPIN) {
		while (ps_now_ns() < end_ns)
			;
	} else {
		struct timespec ts = {.tv_sec = (time_t)(end_ns / 1000000000u),
				      .tv_nsec = (long)(end_ns % 1000000000u)};
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
				       NULL) == EINTR && !ps_signal_pending())
			;
	}
}

/*
 * Runs op on the emulated device; returns its device time. The device
 * runs ops back to back: an op that follows another without a wait for
 * parameters starts when that one ended on the device plus the host's
 * work since it woke (pushing, picking the next op), not when the host
 * woke. A sleep overshoots its deadline (timer slack, a busy machine:
 * 50-250 us per op on ps-bench's 2 cores), and a GPU does not pay that
 * per kernel; so the overshoot of one op never delays the next, and a
 * late host catches up by not sleeping. After a wait the op starts now.
 */
static uint64_t run_op(engine *e, uint32_t op, uint64_t it)
{
	uint64_t now = ps_now_ns(), trace_us = ps_trace_now_us();
	uint64_t start = e->dev_end ? e->dev_end + (now - e->woke) : now;
	uint64_t end = start + (uint64_t)(e->dag->ops[op].time_us * 1000.0);
	uint64_t ns = end - (e->dev_end ? e->dev_end : start);

	if (end > now)
		run_until(e, end);
	e->woke = ps_now_ns();
	e->dev_end = end;
	if (ps_trace_enabled()) {
		ps_trace_args a = PS_TRACE_NO_ARGS;
		a.iteration = (int64_t)it;
		ps_trace_span(PS_LANE_COMPUTE, e->dag->ops[op].name,
			      trace_us - (now - start) / 1000,
			      (end - start) / 1000, &a);
	}
	return ns;
}

static int finish_op(engine *e, uint32_t op, uint64_t it)
{
	const ps_dag_op *o = &e->dag->ops[op];
	int rc = PS_OK;

	if (o->kind == PS_OP_BACKWARD)
		for (uint32_t k = 0; k < o->ntensors && rc == PS_OK; k++) {
#ifdef PS_WITH_CUDA
			if (e->cuda) { /* the legacy stream: no kernels */
				rc = ps_client_push_stream(e->client,
							   o->tensors[k],
							   e->dev_zeros, it,
							   NULL);
				continue;
			}
#endif
			rc = ps_client_push(e->client, o->tensors[k], e->zeros,
					    it);
		}
	ps_engine_op_done(e->engine, op);
	return rc;
}

typedef struct iter_stats {
	uint64_t compute_ns, wait_ns;
} iter_stats;

/* Runs the ops of iteration it, as the engine picks them. */
static int run_iteration(engine *e, uint64_t it, iter_stats *st)
{
	ps_engine_begin(e->engine, it);
	for (;;) {
		ps_engine_action what;
		uint32_t op;
		int rc;

		if (ps_signal_pending())
			return PS_EINTR;
		rc = ps_engine_next(e->engine, &what, &op);
		if (rc != PS_OK)
			return rc;
		if (what == PS_ENGINE_DONE)
			return PS_OK;
		if (what == PS_ENGINE_WAIT) {
			uint64_t w0 = ps_now_ns(), us0 = ps_trace_now_us();
			rc = ps_client_wait_any(e->client, &e->seen, 1000);
			if (rc != PS_OK && rc != PS_ETIMEDOUT)
				return rc;
			st->wait_ns += ps_now_ns() - w0;
			e->dev_end = 0;
			ps_trace_span(PS_LANE_WAIT, "wait for parameters", us0,
				      ps_trace_now_us() - us0, NULL);
			continue;
		}
		st->compute_ns += run_op(e, op, it);
		rc = finish_op(e, op, it);
		if (rc != PS_OK)
			return rc;
	}
}

#ifdef PS_WITH_CUDA
/* worker.gradients = cuda: device memory for every tensor (zeros, as a
 * host tensor's values start) and for the pushed gradient, declared as
 * device tensors. */
static int cuda_setup(engine *e, uint64_t most)
{
	const ps_dag *d = e->dag;
	int dev = e->cfg->worker.cuda_device;
	ps_cuda_info info;
	char err[1024];
	int rc;

	rc = ps_cuda_client_open(dev, "worker.gradients = cuda", err,
				 sizeof(err));
	if (rc == PS_OK)
		rc = ps_cuda_open(dev, &info, err, sizeof(err));
	if (rc != PS_OK) {
		PS_ERROR("%s", err);
		return rc;
	}
	e->dev_values = calloc(d->ntensors, sizeof(*e->dev_values));
	e->ready_ev = calloc(d->ntensors, sizeof(*e->ready_ev));
	if (!e->dev_values || !e->ready_ev)
		return PS_ENOMEM;
	rc = ps_cuda_alloc((void **)&e->dev_zeros, most * sizeof(float),
			   "the replayed gradient", err, sizeof(err));
	if (rc == PS_OK)
		rc = ps_cuda_copy(e->dev_zeros, e->zeros, most * sizeof(float),
				  PS_CUDA_H2D, err, sizeof(err));
	for (uint32_t t = 0; t < d->ntensors && rc == PS_OK; t++) {
		const ps_dag_tensor *x = &d->tensors[t];
		rc = ps_cuda_alloc((void **)&e->dev_values[t],
				   x->numel * sizeof(float), x->name, err,
				   sizeof(err));
		if (rc == PS_OK)
			rc = ps_cuda_copy(e->dev_values[t], e->zeros,
					  x->numel * sizeof(float),
					  PS_CUDA_H2D, err, sizeof(err));
		if (rc == PS_OK)
			rc = ps_cuda_event_new(&e->ready_ev[t], err,
					       sizeof(err));
		if (rc == PS_OK) {
			rc = ps_client_declare_cuda(e->client, x->name,
						    x->numel, e->dev_values[t],
						    dev, NULL);
			if (rc != PS_OK)
				return rc; /* the client said why */
		}
	}
	if (rc != PS_OK) {
		PS_ERROR("worker.gradients = cuda: %s", err);
		return rc;
	}
	e->cuda = 1;
	PS_INFO("worker.gradients = cuda: device %d (%s, %.1f GiB): "
		"gradients pushed from device memory through pinned host "
		"staging, parameters copied back to the device", dev,
		info.name, (double)info.total_bytes / 1073741824.0);
	return PS_OK;
}

static void cuda_teardown(engine *e)
{
	if (e->dev_values)
		for (uint32_t t = 0; t < e->dag->ntensors; t++)
			ps_cuda_free(e->dev_values[t]);
	if (e->ready_ev)
		for (uint32_t t = 0; t < e->dag->ntensors; t++)
			ps_cuda_event_free(e->ready_ev[t]);
	ps_cuda_free(e->dev_zeros);
	free(e->dev_values);
	free(e->ready_ev);
}
#endif

static int setup(engine *e)
{
	const ps_dag *d = e->dag;
	uint64_t most = 0, bytes = 0;
	int rc = PS_OK;

	e->values = calloc(d->ntensors, sizeof(*e->values));
	e->have = calloc(d->ntensors, sizeof(*e->have));
	if (!e->values || !e->have)
		return PS_ENOMEM;
	rc = ps_engine_create(d, have_params, e, &e->engine);
	if (rc != PS_OK)
		return rc;
	for (uint32_t t = 0; t < d->ntensors; t++) {
		const ps_dag_tensor *x = &d->tensors[t];
		if (x->numel > most)
			most = x->numel;
		bytes += x->bytes;
	}
	e->zeros = ps_alloc_big(most * sizeof(float));
	if (!e->zeros)
		return PS_ENOMEM;
	e->comm_us = (double)bytes * 8.0 /
		     (e->cfg->metrics.bandwidth_gbps * 1e9) * 1e6;
#ifdef PS_WITH_CUDA
	if (e->cfg->worker.gradients == PS_DEVICE_CUDA)
		return cuda_setup(e, most);
#endif
	for (uint32_t t = 0; t < d->ntensors && rc == PS_OK; t++) {
		const ps_dag_tensor *x = &d->tensors[t];
		e->values[t] = ps_alloc_big(x->numel * sizeof(float));
		if (!e->values[t])
			return PS_ENOMEM;
		rc = ps_client_declare(e->client, x->name, x->numel,
				       e->values[t], NULL);
	}
	return rc;
}

static void teardown(engine *e)
{
	uint64_t most = 0;

#ifdef PS_WITH_CUDA
	cuda_teardown(e);
#endif
	if (e->values)
		for (uint32_t t = 0; t < e->dag->ntensors; t++) {
			const ps_dag_tensor *x = &e->dag->tensors[t];
			if (e->values[t])
				ps_free_big(e->values[t],
					    x->numel * sizeof(float));
			if (x->numel > most)
				most = x->numel;
		}
	free(e->values);
	ps_free_big(e->zeros, most * sizeof(float));
	ps_engine_destroy(&e->engine);
	free(e->have);
	if (e->csv)
		fclose(e->csv);
}

static FILE *open_csv(const ps_config *cfg, int rank)
{
	char name[64];
	FILE *f;

	snprintf(name, sizeof(name), "metrics-worker-%d.csv", rank);
	f = ps_output_open(cfg, name);
	if (!f)
		return NULL;
	fprintf(f, "iteration,time_ms,samples_per_s,compute_ms,wait_ms,"
		"comm_oracle_ms,efficiency,speedup_bound\n");
	return f;
}

/* Replays train.iterations iterations; fills the result and the
 * replay's measures. */
static int replay(engine *e, ps_client_result *res, ps_replay_result *rr)
{
	const ps_config *cfg = e->cfg;
	ps_dag_stats ds;
	uint64_t prev, start, first = ps_client_start_iteration(e->client);
	double e_sum = 0.0;
	unsigned e_n = 0;
	int rc = PS_OK;

	ps_dag_get_stats(e->dag, &ds);
	rr->speedup_bound = ps_speedup_bound(ds.forward_us + ds.backward_us,
					      e->comm_us);
	e->csv = open_csv(cfg, e->rank);
	start = prev = ps_now_ns();
	res->iterations = first;
	for (uint64_t it = first; ps_client_next_iteration(e->client, it);
	     it++) {
		iter_stats st = {0};
		ps_client_stats cs;
		double t_us, eff;
		uint64_t now;

		rc = run_iteration(e, it, &st);
		if (rc != PS_OK) {
			PS_ERROR("iteration %llu failed: %s",
				 (unsigned long long)it, ps_strerror(rc));
			return rc;
		}
		/* on the device's clock: the host's last overshoot is not
		 * part of the iteration */
		now = e->dev_end ? e->dev_end : ps_now_ns();
		t_us = (double)(now - prev) / 1000.0;
		prev = now;
		eff = ps_ordering_efficiency((double)st.compute_ns / 1000.0,
					     e->comm_us, t_us);
		if (it > first && isfinite(eff)) {
			/* the first starts with every parameter present */
			e_sum += eff;
			e_n++;
		}
		rr->wait_seconds += (double)st.wait_ns / 1e9;
		ps_client_get_stats(e->client, &cs);
		printf("worker %d iter %llu/%d time %.3f ms samples/s %.1f "
		       "compute %.3f ms wait %.3f ms E %.3f\n",
		       e->rank, (unsigned long long)it + 1,
		       cfg->train.iterations, t_us / 1000.0,
		       e->dag->batch / (t_us / 1e6),
		       (double)st.compute_ns / 1e6, (double)st.wait_ns / 1e6,
		       eff);
		fflush(stdout);
		if (e->csv)
			fprintf(e->csv, "%llu,%.3f,%.1f,%.3f,%.3f,%.3f,%.4f,"
				"%.4f\n", (unsigned long long)it + 1,
				t_us / 1000.0, e->dag->batch / (t_us / 1e6),
				(double)st.compute_ns / 1e6,
				(double)st.wait_ns / 1e6, e->comm_us / 1000.0,
				eff, rr->speedup_bound);
		res->iterations = it + 1;
	}
	res->seconds = (double)(ps_now_ns() - start) / 1e9;
	rr->efficiency = e_n ? e_sum / e_n : NAN;
	rr->samples_per_second =
		res->seconds > 0 ? (double)(res->iterations - first) *
					   e->dag->batch / res->seconds
				 : 0.0;
	/* The servers answer the last pushes with the final parameters:
	 * take them before leaving (a worker gone before its servers' last
	 * sends would make them fail). */
	for (uint32_t t = 0; t < e->dag->ntensors && rc == PS_OK; t++)
		rc = ps_client_wait(e->client, t, res->iterations, -1);
	return rc;
}

int ps_replay_run(const ps_config *cfg)
{
	engine e = {.cfg = cfg};
	ps_client_result res = {0};
	ps_replay_result rr = {0};
	ps_dag *dag = NULL;
	char err[1024];
	int rc, status = 1;

	rc = ps_dag_load(cfg->model.file, cfg->model.compute_scale, &dag, err,
			 sizeof(err));
	if (rc != PS_OK) {
		PS_ERROR("cannot load model.file: %s", err);
		return 1;
	}
	e.dag = dag;
	rc = ps_client_create(cfg, &e.client);
	if (rc == PS_OK)
		rc = setup(&e);
	if (rc == PS_OK)
		rc = ps_client_start(e.client);
	if (rc != PS_OK) {
		PS_ERROR("cannot join the job: %s", ps_strerror(rc));
		goto out;
	}
	e.rank = ps_client_rank(e.client);
	if (e.rank == 0)
		PS_INFO("replaying %s: %u ops, %u tensors, %.2f MiB per "
			"iteration each way", dag->name, dag->nops,
			dag->ntensors,
			e.comm_us * cfg->metrics.bandwidth_gbps * 1e3 / 8.0 /
				1048576.0);
	rc = replay(&e, &res, &rr);
	if (rc == PS_OK)
		rc = psi_client_finish_replay(e.client, &res, &rr);
	if (rc == PS_OK)
		status = 0;
	else
		PS_ERROR("replay failed: %s", ps_strerror(rc));
out:
	if (status != 0 && ps_signal_pending())
		status = ps_signal_exit_status(ps_signal_pending());
	ps_client_destroy(&e.client);
	teardown(&e);
	ps_dag_free(&dag);
	return status;
}
