/*
 * ordo/ordo.h - the public C API of ordo: configuration and the worker
 * client (declare tensors, push gradients, receive parameters).
 *
 * A worker program: cfg comes from ps_config_new, ps_config_load and
 * ps_config_set (below), w1 and g1 are buffers of N floats, and failed()
 * prints ps_client_last_error(). examples/worker.c is the whole program;
 * the test api_example checks that this text is part of it, builds it
 * and runs it in a job.
 *
 *     if (ps_client_create(cfg, &c) != PS_OK ||
 *         ps_client_declare(c, "fc1.weight", N, w1, &t1) != PS_OK ||
 *         ps_client_start(c) != PS_OK)     // joins: w1 holds version 0
 *         return failed(&c, &cfg);
 *     for (it = ps_client_start_iteration(c);
 *          ps_client_next_iteration(c, it); it++) {
 *         gradient(w1, g1, N);         // forward/backward into g1
 *         if (ps_client_push(c, t1, g1, it) != PS_OK ||  // each tensor
 *             ps_client_wait(c, t1, it + 1, -1) != PS_OK) // w1: it + 1
 *             return failed(&c, &cfg);
 *     }
 *     ps_client_result r = {.iterations = it}; // for the job summary
 *     rc = ps_client_finish(c, &r);            // waits for the shutdown
 *     if (rc != PS_OK)
 *         return failed(&c, &cfg);
 *     ps_client_destroy(&c);
 *
 * Synchronous mode (train.mode = sync): servers sum the pushes of all
 * workers for iteration i, apply SGD with momentum, and send version i + 1
 * to every worker unasked. Asynchronous mode: each push is applied at once;
 * ps_client_pull() fetches the current values.
 *
 * Buffers: `values` given to ps_client_declare belongs to the caller and
 * must outlive the client; ordo writes it only inside ps_client_start,
 * ps_client_wait and ps_client_pull, on the calling thread, so reading it
 * during compute is safe. A gradient buffer given to ps_client_push is sent
 * without copying: keep it valid and unchanged until ps_client_wait for a
 * later iteration (or ps_client_flush) has returned.
 *
 * Threads: a ps_client is used by one application thread. It runs one
 * communication thread of its own, which keeps the heartbeats going and
 * handles the transport while the application is away from the library;
 * in synchronous training without a credit window the application's own
 * push and wait calls send and receive, without a hand-off between
 * threads (client/driving.c).
 */
#ifndef ORDO_ORDO_H
#define ORDO_ORDO_H

#include <stddef.h>
#include <stdint.h>

#include "ordo/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ORDO_VERSION_MAJOR 0
#define ORDO_VERSION_MINOR 1
#define ORDO_VERSION_PATCH 0
#define ORDO_VERSION_STRING "0.1.0"

/* ---- configuration ---------------------------------------------------- */

typedef struct ps_config ps_config;

/* A configuration holding every option's default. */
int ps_config_new(ps_config **cfg_p);
/* Loads an INI file over cfg; why receives "FILE:LINE: message". */
int ps_config_load(ps_config *cfg, const char *path, char *why,
		   size_t whylen);
/* Sets "section.key=value". */
int ps_config_set(ps_config *cfg, const char *assignment, char *why,
		  size_t whylen);
/* The value of "section.key" as text, in the form ps_config_set takes
 * (a size as "4M", an enum by name); PS_ENOENT for a key that does not
 * exist (value then says so), PS_EINVAL when cap is too small. */
int ps_config_get(const ps_config *cfg, const char *key, char *value,
		  size_t cap);
void ps_config_free(ps_config **cfg_p);

/* ---- worker client ---------------------------------------------------- */

typedef struct ps_client ps_client;

typedef struct ps_client_stats {
	uint64_t bytes_pushed;   /* payload bytes sent to servers */
	uint64_t bytes_received; /* payload bytes received from servers */
	uint64_t pushes;
	uint64_t params_received;
	uint64_t dropped;        /* malformed or unexpected messages */
} ps_client_stats;

/* Errors. Every ps_client_* call that fails logs one error line that
 * names the call and the problem ("ps_client_push: tensor 7 is not
 * declared (this client declared 3 tensors)") and leaves the same text
 * for ps_client_last_error. Failing is: returning a ps_err other than
 * PS_OK (PS_EAGAIN from ps_client_try and ps_client_ready_event excepted:
 * the version has not arrived yet, nothing failed); ps_client_rank and
 * ps_client_num_workers returning -1; ps_client_next_iteration returning
 * 0 for a client that has not joined its job. A call that fails because
 * the job failed (a node died, the scheduler ended the job, a send
 * failed on the communication thread) says "the job failed: " and what
 * was logged then. */

/* The text of the last failure of a ps_client_* call on the calling
 * thread ("" while there was none). Per thread, like errno: a call that
 * succeeds leaves it as it was, so read it right after a call reported a
 * failure; it stays valid until the thread's next failing call. Per
 * thread rather than per client because ps_client_create can fail
 * before there is a client (a client is used by one thread anyway).
 * Never NULL. */
const char *ps_client_last_error(void);

/* Creates a client (nothing is sent yet). The client copies cfg. */
int ps_client_create(const ps_config *cfg, ps_client **client_p);

/* Declares a float32 tensor of numel elements; values holds the initial
 * values (worker rank 0's are used) and receives parameters. Only before
 * ps_client_start. Every worker must declare the same tensors in the same
 * order. */
int ps_client_declare(ps_client *c, const char *name, uint64_t numel,
		      float *values, uint32_t *tensor_p);

/* Registers with the scheduler, receives rank and placement; worker 0
 * sends the initial values; returns when every tensor holds version 0.
 * When the job resumes from a checkpoint (checkpoint.resume), nobody sends
 * initial values: the servers send the checkpoint's, and ps_client_start
 * returns when every tensor holds version ps_client_start_iteration(). */
int ps_client_start(ps_client *c);

/* The iteration training starts at: 0, or the iteration of the checkpoint
 * the job resumes from. A training loop runs from there:
 *     for (it = ps_client_start_iteration(c);
 *          ps_client_next_iteration(c, it); it++) */
uint64_t ps_client_start_iteration(const ps_client *c);

/* Call before beginning iteration `it` (the ones before it are done): it
 * tells the scheduler how far this worker is, and returns 1 when `it` is
 * to run, 0 when the job ends before it: train.iterations is reached, or
 * the job was asked to stop there (ps-tune stops a job at a checkpoint to
 * restart it with other settings; the application then finishes as at
 * the end: ps_client_finish with `it` iterations). At such a stop the
 * call waits until every worker has reached it (all then return 0), or
 * until the stop moves further on because another worker had begun `it`
 * already (then it returns 1): every worker ends after the same
 * iteration. */
int ps_client_next_iteration(ps_client *c, uint64_t it);

int ps_client_rank(const ps_client *c);
int ps_client_num_workers(const ps_client *c);

/* Pushes the gradient of a tensor for an iteration (see Buffers above).
 * The push goes through the worker's sender gate, in the job's order:
 * the scheduler numbers every tensor from the model
 * (scheduling.push_order), the same numbers on every worker, and the gate
 * (scheduling.push_gate) releases each partition by its number (a fused
 * partition by its most urgent tensor's). A push has no priority of its
 * own: a number chosen by the application would disagree with the job's
 * order, and the counter gate, which lets a partition go once as many
 * transfers as its number went before it, could wait forever on one. */
int ps_client_push(ps_client *c, uint32_t tensor, const float *grad,
		   uint64_t iteration);

/* The learning rate of the servers' optimizer (server.optimizer = sgd,
 * adam, adamw) for the updates made from this worker's gradients of
 * iteration `iteration` and later, until a later call: every push carries
 * its iteration's rate (those before the first call carry none, and the
 * servers use train.lr). In synchronous mode an update uses the rate of
 * the lowest-ranked worker's push of the round: call it on every worker,
 * as a learning-rate schedule runs on every worker. PS_EINVAL (logged)
 * for a rate that is negative, NaN or infinite. */
int ps_client_set_lr(ps_client *c, uint64_t iteration, double lr);

/* Waits until the tensor's parameters of version >= version have arrived
 * and copies them into its values buffer. timeout_ms -1: no limit (the
 * job's heartbeats still end it if a node dies). PS_EABORTED if the job
 * failed, PS_ETIMEDOUT on timeout. */
int ps_client_wait(ps_client *c, uint32_t tensor, uint64_t version,
		   int timeout_ms);

/* Non-blocking ps_client_wait: PS_OK (copied, as ps_client_wait) when the
 * tensor's version >= version has arrived, PS_EAGAIN when not yet. */
int ps_client_try(ps_client *c, uint32_t tensor, uint64_t version);

/* Waits until any parameter partition arrives after *seen (a counter of
 * arrivals, start it at 0) or timeout_ms passes, and updates *seen. Lets a
 * program run whatever became ready instead of blocking on one tensor.
 * PS_OK, PS_ETIMEDOUT, or the job's failure. */
int ps_client_wait_any(ps_client *c, uint64_t *seen, int timeout_ms);

/* Asynchronous mode: fetches the tensor's current values from its servers
 * into its values buffer. */
int ps_client_pull(ps_client *c, uint32_t tensor, int timeout_ms);

/* ---- tensors in CUDA device memory (docs/cuda.md) ----------------------
 *
 * Only in a build configured with -DPS_WITH_CUDA=ON. Elsewhere these
 * functions exist, log "this build has no CUDA support (configure with
 * -DPS_WITH_CUDA=ON)" and return PS_ENOTSUP. CUDA handles are passed as
 * void * (a cudaStream_t, a cudaEvent_t): no CUDA header is needed here.
 *
 * A device tensor has a pinned host mirror owned by the library; received
 * parameters land there first (ps_client_wait, ps_client_try and
 * ps_client_pull copy them in, as into a host tensor's values) and are
 * then copied to device_values on a stream of the library's, without
 * blocking the calling thread: ps_client_ready_event says when they are
 * there. ps_client_start returns with version 0 (or the checkpoint's) in
 * device memory. The library's copies run on the tensor's device; the
 * calling thread's current device is left as it was. All device tensors
 * of a client are on one device. */

/* Declares a float32 tensor of numel elements whose values live in device
 * memory (device_values, a cudaMalloc'd pointer of CUDA device `device`),
 * like ps_client_declare: device_values holds the initial values (read
 * here) and receives parameters; it must outlive the client. PS_ENOTSUP
 * without CUDA support or a usable device; PS_EINVAL for a device this
 * machine lacks, a pointer that is not device memory of that device, or a
 * device other than the client's earlier device tensors'; PS_ENOMEM when
 * the pinned host memory (2 x numel floats) cannot be had; the log says
 * which. */
int ps_client_declare_cuda(ps_client *c, const char *name, uint64_t numel,
			   float *device_values, int device,
			   uint32_t *tensor_p);

/* Pushes a device tensor's gradient (device_grad: numel floats of device
 * memory) for an iteration. The gradient is produced by work enqueued on
 * cuda_stream (a cudaStream_t; NULL: the legacy default stream): the
 * library's copy stream waits for that work, then copies the gradient to
 * pinned host memory partition by partition, in the gate's order (the
 * partition sent first is copied first), and each partition enters the
 * gate as soon as its own copy is complete, so its send overlaps the
 * copies of the partitions after it. Returns once every copy is complete:
 * device_grad may be overwritten then. Only after ps_client_start. */
int ps_client_push_stream(ps_client *c, uint32_t tensor,
			  const float *device_grad, uint64_t iteration,
			  void *cuda_stream);

/* Records cuda_event (a cudaEvent_t of the tensor's device, created by
 * the caller) so that it completes once the device tensor's parameters of
 * version >= version are in its device memory: wait on it in your own
 * stream (cudaStreamWaitEvent) before kernels read them. Non-blocking,
 * like ps_client_try: PS_OK (recorded; the parameters were taken as by
 * ps_client_try), PS_EAGAIN when that version has not arrived yet (call
 * ps_client_wait first to block until it has), PS_EINVAL for a host
 * tensor. */
int ps_client_ready_event(ps_client *c, uint32_t tensor, uint64_t version,
			  void *cuda_event);

/* Waits until every pushed gradient buffer has been released. */
int ps_client_flush(ps_client *c, int timeout_ms);

/* Barrier over all workers. */
int ps_client_barrier(ps_client *c, int timeout_ms);

/* Every worker calls it with the same root and len: root's len bytes at
 * buf are copied into buf on every other worker, bit for bit (through the
 * scheduler, in messages of at most transport.max_message bytes, each a
 * barrier). For what the servers do not hold: buffers, optimizer state,
 * a model loaded on one worker. PS_EINVAL for a root that is not a
 * worker's rank; PS_EPROTO (logged) when the workers disagree on the root
 * or the length; the job ends if two workers broadcast as root at once. */
int ps_client_broadcast(ps_client *c, int root, void *buf, size_t len,
			int timeout_ms);

/* What a worker reports at the end, for the job summary (the
 * scheduler's "summary: worker R: ..." lines and summary.csv). The
 * library adds the bytes it pushed and received. */
typedef struct ps_client_result {
	uint64_t iterations; /* iterations done */
	double seconds;      /* time they took (0: not measured) */
	double last_loss;    /* the last iteration's loss (0: none) */
} ps_client_result;

/* Reports this worker's result to the scheduler and waits until the job
 * shuts down. In synchronous mode, call it after receiving the parameters
 * of the last update (ps_client_wait for version = the iteration
 * ps_client_next_iteration stopped before): servers
 * send them to every worker, and a worker gone before they arrive makes
 * its servers fail. */
int ps_client_finish(ps_client *c, const ps_client_result *result);

void ps_client_get_stats(const ps_client *c, ps_client_stats *stats_p);

/* Stops the communication thread and frees everything. */
void ps_client_destroy(ps_client **client_p);

#ifdef __cplusplus
}
#endif
#endif /* ORDO_ORDO_H */
