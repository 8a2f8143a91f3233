/*
 * client/client.c - the worker client library (include/ordo/ordo.h): its
 * public calls on the application thread - creating a client, declaring
 * tensors, starting (joining the job), pushes, waits and pulls, the
 * learning rate, barriers and broadcasts, finishing and destroying - and
 * the copies of received parameters into the tensors' values.
 *
 * The rest of the library: a client's state, and how its two threads
 * share it (DESIGN, threads), client/state.h; who drives the node,
 * client/driving.c; what is sent and received, client/messages.c; the
 * errors of the public calls, client/errors.c; tensors in device memory,
 * client/device.c.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/config.h"
#include "common/log.h"
#include "runtime/clock.h"
#include "runtime/node.h"
#include "ordo/ordo.h"
#include "proto/worker.h"
#include "client/internal.h"
#include "client/state.h"
#ifdef PS_WITH_CUDA
#include "cuda/device.h"
#include "cuda/staging.h"
#endif

static int enqueue(ps_client *c, cmd *k)
{
	/* caller holds mu */
	if (c->state != ST_RUNNING) {
		psi_client_cmd_free(k);
		return c->state == ST_FAILED ? c->fail_code : PS_ESTATE;
	}
	if (c->tail)
		c->tail->next = k;
	else
		c->head = k;
	c->tail = k;
	/* progress is advisory: it goes with the next drive, whoever's */
	if (k->kind == CMD_PROGRESS && c->driver == DRIVER_NONE)
		return PS_OK;
	if (c->comm_alive)
		ps_node_wake(&c->node);
	pthread_cond_signal(&c->comm_cv);
	return PS_OK;
}

/* Waits on cv until deadline (ms, monotonic; < 0 none). PS_ETIMEDOUT. */
int psi_client_wait_until(ps_client *c, int64_t deadline_ms)
{
	struct timespec ts;
	cmd *queued;

	if (psi_client_app_take_drive(c, &queued)) {
		/* receive what is waited for */
		int64_t left = deadline_ms < 0 ? -1 : deadline_ms - ps_now_ms();
		int rc = psi_client_app_drive(
			c, queued, NULL,
			left < 0 && deadline_ms >= 0 ? 0
			: left > INT32_MAX	     ? INT32_MAX
						     : (int)left);
		/* an error that ends the job: the state says it soon */
		return rc == PS_ETIMEDOUT ? PS_ETIMEDOUT : PS_OK;
	}
	if (deadline_ms < 0) {
		pthread_cond_wait(&c->cv, &c->mu);
		return PS_OK;
	}
	if (ps_now_ms() >= deadline_ms)
		return PS_ETIMEDOUT;
	ts.tv_sec = deadline_ms / 1000;
	ts.tv_nsec = (deadline_ms % 1000) * 1000000L;
	pthread_cond_timedwait(&c->cv, &c->mu, &ts);
	return PS_OK;
}

static int64_t deadline_of(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : ps_now_ms() + timeout_ms;
}

/* Copies a tensor's arrived partitions into its values (caller holds mu). */
/* Called with mu held; returns with mu held, but drops it for the copy:
 * a copy of hundreds of MiB must not hold up the communication thread,
 * nor ZeroMQ's I/O thread, which takes mu to release sent payloads. The
 * messages are detached from their slots first, so nothing else touches
 * them; only this (application) thread writes the values. A device
 * tensor's values are its mirror, copied on to device memory
 * (client/device.c, DESIGN device tensors). PS_OK, or a CUDA error. */
static int copy_out(ps_client *c, tensor *t)
{
	const ps_placement *pl = c->node.welcome.placement;
	uint32_t n = 0;
	int rc = PS_OK;

	if (t->fused) { /* a small piece of a shared message: under mu */
		slot *s = &c->slots[t->first_part];

		if (!s->msg || t->copied_seq == s->seq)
			return PS_OK;
#ifdef PS_WITH_CUDA
		if (t->dev)
			rc = psi_client_dev_before_write(c, t, 0);
		if (rc != PS_OK)
			return rc;
#endif
		memcpy(t->values,
		       (const float *)s->msg->payload + t->part_base,
		       t->numel * sizeof(float));
		t->copied_seq = s->seq;
		if (--s->copies_left == 0)
			ps_msg_free(&s->msg);
#ifdef PS_WITH_CUDA
		if (t->dev)
			rc = psi_client_dev_copy_in(c, t, 0, t->numel, 1);
#endif
		return rc;
	}
	for (uint32_t k = 0; k < t->nparts; k++) {
		slot *s = &c->slots[t->first_part + k];
		if (!s->msg)
			continue;
		t->detached[n] = s->msg;
		t->detached_part[n++] = t->first_part + k;
		s->msg = NULL;
	}
	if (n == 0)
		return PS_OK;
	pthread_mutex_unlock(&c->mu);
	for (uint32_t k = 0; k < n; k++) {
		const ps_partition *p = &pl->parts[t->detached_part[k]];
#ifdef PS_WITH_CUDA
		if (rc == PS_OK && t->dev)
			rc = psi_client_dev_before_write(
				c, t, t->detached_part[k] - t->first_part);
#endif
		if (rc == PS_OK)
			memcpy(t->values + p->offset, t->detached[k]->payload,
			       t->detached[k]->payload_len);
#ifdef PS_WITH_CUDA
		if (rc == PS_OK && t->dev)
			rc = psi_client_dev_copy_in(c, t, p->offset, p->numel,
						    k + 1 == n);
#endif
		ps_msg_free(&t->detached[k]);
	}
	pthread_mutex_lock(&c->mu);
	return rc;
}

/* Every partition of t is there at `version` or newer (caller holds mu). */
static int params_ready(const ps_client *c, const tensor *t, uint64_t version)
{
	for (uint32_t k = 0; k < t->nparts; k++) {
		const slot *s = &c->slots[t->first_part + k];
		if (!s->have || s->version < version || s->pull_pending)
			return 0;
	}
	return 1;
}

/* ... and its gradient's bytes released by the transport. */
static int tensor_ready(const ps_client *c, const tensor *t, uint64_t version)
{
	return !t->inflight && params_ready(c, t, version);
}

static int wait_tensor(ps_client *c, tensor *t, uint64_t version,
		       int64_t deadline)
{
	int rc = PS_OK;

	while (rc == PS_OK && !tensor_ready(c, t, version)) {
		if (c->state != ST_RUNNING)
			return c->state == ST_FAILED ? c->fail_code
						     : PS_ESTATE;
		c->wants_release = params_ready(c, t, version);
		rc = psi_client_wait_until(c, deadline);
		c->wants_release = 0;
	}
	if (rc == PS_OK)
		rc = copy_out(c, t);
	return rc;
}

/* Whether the client has joined its job (caller holds mu): PS_OK; else
 * PS_ESTATE, or the failure that ended the joining (psi_client_api_end
 * says why). */
static int joined_locked(const ps_client *c)
{
	if (c->state == ST_CREATED || c->state == ST_JOINING)
		return PS_ESTATE;
	if (c->state == ST_FAILED && !c->slots) /* never set up */
		return c->fail_code;
	return PS_OK;
}

static int create(const ps_config *cfg, ps_client **client_p)
{
	ps_client *c;
	char err[512];

	if (!cfg || !client_p)
		return psi_client_api_errf(PS_EINVAL, "%s is NULL",
					   !cfg ? "cfg" : "client_p");
	if (ps_config_validate(cfg, err, sizeof(err)) != PS_OK ||
	    ps_config_validate_job(cfg, err, sizeof(err)) != PS_OK)
		return psi_client_api_errf(PS_ECONFIG,
					   "invalid configuration: %s", err);
	c = calloc(1, sizeof(*c));
	if (!c)
		return psi_client_api_errf(PS_ENOMEM,
					   "out of memory for the client");
	c->cfg = *cfg;
	ps_config_finalize(&c->cfg);
	pthread_mutex_init(&c->mu, NULL);
	pthread_mutex_init(&c->lr_mu, NULL);
	{
		pthread_condattr_t attr;
		pthread_condattr_init(&attr);
		pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
		pthread_cond_init(&c->cv, &attr);
		pthread_cond_init(&c->comm_cv, &attr);
		pthread_condattr_destroy(&attr);
	}
	c->state = ST_CREATED;
#ifdef PS_WITH_CUDA
	c->cuda_device = -1;
#endif
	*client_p = c;
	return PS_OK;
}

int ps_client_create(const ps_config *cfg, ps_client **client_p)
{
	api_call a = psi_client_api_begin("ps_client_create");

	return psi_client_api_end(&a, NULL, create(cfg, client_p));
}

/* The checks of a new tensor's declaration: arguments, state, a name not
 * declared before. */
int psi_client_declare_check(const ps_client *c, const char *name,
			     uint64_t numel, const float *values)
{
	size_t len;

	if (!c)
		return psi_client_api_errf(PS_EINVAL, "the client is NULL");
	if (!name)
		return psi_client_api_errf(PS_EINVAL,
					   "the tensor's name is NULL");
	len = strlen(name);
	if (len == 0 || len >= PS_NAME_MAX)
		return psi_client_api_errf(PS_EINVAL, "tensor name '%.*s%s' is "
					   "%zu bytes: a name is 1 to %d bytes",
					   64, name, len > 64 ? "..." : "", len,
					   PS_NAME_MAX - 1);
	if (!values)
		return psi_client_api_errf(PS_EINVAL,
					   "tensor '%s': values is NULL", name);
	if (numel == 0)
		return psi_client_api_errf(PS_EINVAL,
					   "tensor '%s' has 0 elements", name);
	if (c->state != ST_CREATED)
		return psi_client_api_errf(PS_ESTATE, "tensor '%s' declared "
					   "after ps_client_start: declare "
					   "every tensor before", name);
	for (uint32_t i = 0; i < c->ntensors; i++)
		if (strcmp(c->tensors[i].name, name) == 0)
			return psi_client_api_errf(
				PS_EINVAL,
				"tensor '%s' is declared already (tensor %u)",
				name, i);
	return PS_OK;
}

int psi_client_declare(ps_client *c, const char *name, uint64_t numel,
		       float *values, uint32_t *tensor_p)
{
	tensor *t;
	int rc = psi_client_declare_check(c, name, numel, values);

	if (rc != PS_OK)
		return rc;
	if (c->ntensors == c->cap) {
		uint32_t cap = c->cap ? 2 * c->cap : 16;
		tensor *n = realloc(c->tensors, cap * sizeof(*n));
		if (!n)
			return psi_client_api_errf(
				PS_ENOMEM,
				"out of memory declaring tensor '%s'", name);
		c->tensors = n;
		c->cap = cap;
	}
	t = &c->tensors[c->ntensors];
	memset(t, 0, sizeof(*t));
	t->client = c;
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->numel = numel;
	t->values = values;
	if (tensor_p)
		*tensor_p = c->ntensors;
	c->ntensors++;
	return PS_OK;
}

int ps_client_declare(ps_client *c, const char *name, uint64_t numel,
		      float *values, uint32_t *tensor_p)
{
	api_call a = psi_client_api_begin("ps_client_declare");

	return psi_client_api_end(&a, c,
				  psi_client_declare(c, name, numel, values,
						     tensor_p));
}

static int start(ps_client *c)
{
	client_state state;
	int rc = PS_OK;

	if (!c)
		return psi_client_api_errf(PS_EINVAL, "the client is NULL");
	pthread_mutex_lock(&c->mu);
	state = c->state;
	pthread_mutex_unlock(&c->mu);
	if (state == ST_FAILED)
		return PS_ESTATE; /* psi_client_api_end says why */
	if (state != ST_CREATED)
		return psi_client_api_errf(PS_ESTATE,
					   "the client has started already");
	if (c->ntensors == 0)
		return psi_client_api_errf(PS_ESTATE, "no tensor declared: "
					   "declare them (ps_client_declare) "
					   "before");
	c->state = ST_JOINING;
	if (pthread_create(&c->thread, NULL, psi_client_comm_main, c) != 0) {
		c->state = ST_FAILED;
		snprintf(c->fail_why, sizeof(c->fail_why), "%s",
			 "cannot start the communication thread");
		return psi_client_api_errf(PS_ENOMEM, "%s", c->fail_why);
	}
	c->thread_started = 1;
	pthread_mutex_lock(&c->mu);
	while (c->state == ST_JOINING)
		pthread_cond_wait(&c->cv, &c->mu);
	rc = joined_locked(c); /* the joining failed: no partition to wait */
	for (uint32_t i = 0; i < c->ntensors && rc == PS_OK; i++)
		rc = wait_tensor(c, &c->tensors[i],
				 c->node.welcome.start_iteration, -1);
	/* the scheduler has no model of a job without model.file: the
	 * iterations after the first are measured for it (the first pays
	 * for warming up) */
	if (rc == PS_OK && ps_measure_wanted(&c->cfg) &&
	    ps_timing_rec_init(&c->timing, c->ntensors,
			       c->node.welcome.start_iteration + 1,
			       (uint32_t)c->cfg.model.measure_iterations) !=
		PS_OK)
		PS_WARN("out of memory for measuring the first iterations: "
			"the scheduler gets no timings");
	pthread_mutex_unlock(&c->mu);
#ifdef PS_WITH_CUDA
	if (rc == PS_OK && c->h2d) { /* device tensors hold them too */
		char err[512];
		int prev;
		ps_cuda_current(&prev);
		ps_cuda_set(c->cuda_device);
		rc = ps_cuda_sync(c->h2d, err, sizeof(err));
		ps_cuda_set(prev);
		if (rc != PS_OK)
			PS_ERROR("copying the initial parameters to CUDA "
				 "device %d: %s", c->cuda_device, err);
	}
#endif
	return rc;
}

int ps_client_start(ps_client *c)
{
	api_call a = psi_client_api_begin("ps_client_start");

	return psi_client_api_end(&a, c, start(c));
}

uint64_t ps_client_start_iteration(const ps_client *c)
{
	return c && c->state != ST_CREATED && c->state != ST_JOINING
		       ? c->node.welcome.start_iteration
		       : 0;
}

/* Whether iteration it begins (caller holds mu): within
 * train.iterations, and not at a stop. At a stop the application waits
 * until every worker is there (STOP_NOW: it does not begin) or the stop
 * moves on (it does), having said it is there (STOP_READY): a worker that
 * ended on its own could leave another, late, waiting for its gradients
 * for ever (proto/stop.h). */
static int may_begin(ps_client *c, uint64_t it)
{
	if (it >= (uint64_t)c->cfg.train.iterations)
		return 0;
	for (;;) {
		int send_ready;
		ps_stop_next n =
		    ps_stop_worker_next(&c->stopping, it, &send_ready);
		if (n != PS_STOP_WAIT)
			return n == PS_STOP_RUN;
		if (c->state != ST_RUNNING)
			return 0; /* the job ended while it waited */
		if (send_ready) {
			cmd *r = calloc(1, sizeof(*r));
			if (!r) {
				PS_ERROR("out of memory saying this worker "
					 "waits at its stop");
				return 0;
			}
			r->kind = CMD_STOP_READY;
			r->iteration = c->stopping.target;
			enqueue(c, r);
		}
		psi_client_wait_until(c, -1);
	}
}

/* An event of the first iterations' measurement (client/timings.h) at
 * wall clock `wall`; the measurement, once complete, goes to the
 * scheduler (TIMINGS). Caller holds mu. */
static void timing_event(ps_client *c, ps_timing_kind kind, uint32_t tid,
			 uint64_t iteration, double wall)
{
	ps_timings t;
	cmd *k;

	if (!ps_timing_rec_event(&c->timing, kind, tid, iteration, wall))
		return;
	k = calloc(1, sizeof(*k));
	if (k && ps_timings_init(&t, c->ntensors) == PS_OK) {
		ps_timing_rec_result(&c->timing, &t);
		k->kind = CMD_TIMINGS;
		if (ps_wire_timings_encode(&t, &k->payload, &k->payload_len) ==
		    PS_OK)
			enqueue(c, k); /* frees k when the client stopped */
		else
			free(k);
		ps_timings_free(&t);
	} else {
		free(k);
	}
	ps_timing_rec_free(&c->timing);
}

/*
 * Tells the scheduler that the application began iteration it (PROGRESS:
 * the credit refinement, ps-tune and the choice of a checkpoint's or a
 * credit change's iteration step on it). always: said again even where
 * a later one was (ps_client_next_iteration, as the application calls
 * it); else only an iteration past every one said: the first push of
 * each iteration, for an application that never calls
 * ps_client_next_iteration. Progress is advisory: without memory, none is
 * said. Caller holds mu.
 */
static void say_progress(ps_client *c, uint64_t it, int always)
{
	cmd *k;

	if (!always && (it < c->progress_next ||
			it >= (uint64_t)c->cfg.train.iterations))
		return;
	if (it >= c->progress_next)
		c->progress_next = it + 1;
	k = calloc(1, sizeof(*k));
	if (!k)
		return;
	k->kind = CMD_PROGRESS;
	k->iteration = it;
	enqueue(c, k); /* frees k when the client stopped */
}

int ps_client_next_iteration(ps_client *c, uint64_t it)
{
	int run;

	if (!c || c->state == ST_CREATED || c->state == ST_JOINING) {
		api_call a = psi_client_api_begin("ps_client_next_iteration");
		psi_client_api_end(&a, c,
				   c ? PS_ESTATE
				     : psi_client_api_errf(PS_EINVAL, "the "
							   "client is NULL"));
		return 0;
	}
	double wall = ps_timing_wall_us();
	pthread_mutex_lock(&c->mu);
	timing_event(c, PS_TIMING_BEGIN, 0, it, wall);
	run = may_begin(c, it);
	say_progress(c, it, 1);
	ps_timing_rec_blocked(&c->timing, wall);
	pthread_mutex_unlock(&c->mu);
	return run;
}

/* A query that needs the job (rank, number of workers): 1 when the client
 * has joined; else 0, and the call fails as fn. */
static int joined(const ps_client *c, const char *fn)
{
	api_call a;

	if (c && c->state != ST_CREATED && c->state != ST_JOINING)
		return 1;
	a = psi_client_api_begin(fn);
	psi_client_api_end(&a, c,
			   c ? PS_ESTATE
			     : psi_client_api_errf(PS_EINVAL,
						   "the client is NULL"));
	return 0;
}

int ps_client_rank(const ps_client *c)
{
	return joined(c, "ps_client_rank") ? (int)c->node.rank : -1;
}

int ps_client_num_workers(const ps_client *c)
{
	return joined(c, "ps_client_num_workers")
		       ? (int)c->node.welcome.num_workers
		       : -1;
}

/* Tensor tensor_id's gradient (part = PUSH_WHOLE) or one partition of it
 * enters the machine: sent from here when nobody drives, else queued for
 * the driver. grad is the whole tensor's buffer in both cases. */
int psi_client_push_cmd(ps_client *c, uint32_t tensor_id, const float *grad,
			uint64_t iteration, uint32_t part)
{
	tensor *t = &c->tensors[tensor_id];
	uint32_t held = part == PUSH_WHOLE ? t->push_pieces
					   : psi_client_push_pieces_of(c, part);
	cmd *k = calloc(1, sizeof(*k));
	int rc;

	if (!k)
		return PS_ENOMEM;
	k->kind = CMD_PUSH;
	k->tensor = tensor_id;
	k->part = part;
	k->data = grad;
	k->iteration = iteration;
	double wall = ps_timing_wall_us();
	pthread_mutex_lock(&c->mu);
	timing_event(c, PS_TIMING_PUSH, tensor_id, iteration, wall);
	say_progress(c, iteration, 0);
	{
		cmd *queued;
		if (psi_client_app_take_drive(c, &queued)) {
			/* sent from here */
			t->inflight += held;
			rc = psi_client_app_drive(c, queued, k, APP_NO_RECV);
			ps_timing_rec_blocked(&c->timing, wall);
			pthread_mutex_unlock(&c->mu);
			return rc;
		}
	}
	rc = enqueue(c, k);
	if (rc == PS_OK)
		t->inflight += held;
	ps_timing_rec_blocked(&c->timing, wall);
	pthread_mutex_unlock(&c->mu);
	return rc;
}

/* The checks of a call on a declared tensor: 0 or its error. */
int psi_client_tensor_check(const ps_client *c, uint32_t tensor_id)
{
	if (!c)
		return psi_client_api_errf(PS_EINVAL, "the client is NULL");
	if (tensor_id >= c->ntensors)
		return psi_client_api_errf(PS_EINVAL, "tensor %u is not "
					   "declared (this client declared %u "
					   "tensor%s)", tensor_id, c->ntensors,
					   c->ntensors == 1 ? "" : "s");
	return PS_OK;
}

static int push(ps_client *c, uint32_t tensor_id, const float *grad,
		uint64_t iteration)
{
	int rc = psi_client_tensor_check(c, tensor_id);

	if (rc != PS_OK)
		return rc;
	if (!grad)
		return psi_client_api_errf(PS_EINVAL,
					   "tensor '%s': grad is NULL",
					   c->tensors[tensor_id].name);
	return psi_client_push_cmd(c, tensor_id, grad, iteration, PUSH_WHOLE);
}

int ps_client_push(ps_client *c, uint32_t tensor_id, const float *grad,
		   uint64_t iteration)
{
	api_call a = psi_client_api_begin("ps_client_push");

	return psi_client_api_end(&a, c, push(c, tensor_id, grad, iteration));
}

static int set_lr(ps_client *c, uint64_t iteration, double lr)
{
	if (!c)
		return psi_client_api_errf(PS_EINVAL, "the client is NULL");
	if (!isfinite(lr) || lr < 0)
		return psi_client_api_errf(PS_EINVAL, "%g is not a learning "
					   "rate (finite, >= 0)", lr);
	pthread_mutex_lock(&c->lr_mu);
	/* a change from an iteration at or before the newest replaces the
	 * changes it covers */
	while (c->nlr > 0 && c->lr_from[c->nlr - 1] >= iteration)
		c->nlr--;
	if (c->nlr == LR_KEEP) {
		memmove(c->lr_from, c->lr_from + 1,
			(LR_KEEP - 1) * sizeof(c->lr_from[0]));
		memmove(c->lr, c->lr + 1, (LR_KEEP - 1) * sizeof(c->lr[0]));
		c->nlr--;
	}
	c->lr_from[c->nlr] = iteration;
	c->lr[c->nlr] = lr;
	c->nlr++;
	pthread_mutex_unlock(&c->lr_mu);
	return PS_OK;
}

int ps_client_set_lr(ps_client *c, uint64_t iteration, double lr)
{
	api_call a = psi_client_api_begin("ps_client_set_lr");

	return psi_client_api_end(&a, c, set_lr(c, iteration, lr));
}

/* Fails a wait for version of t that timed out after timeout_ms, saying
 * what it still waits for. Caller holds mu. */
static int wait_timed_out(const ps_client *c, const tensor *t,
			  uint64_t version, int timeout_ms)
{
	uint64_t low = UINT64_MAX;
	uint32_t missing = 0;

	for (uint32_t k = 0; k < t->nparts; k++) {
		const slot *s = &c->slots[t->first_part + k];
		if (!s->have || s->version < version || s->pull_pending)
			missing++;
		if (s->have && s->version < low)
			low = s->version;
	}
	if (!missing)
		return psi_client_api_errf(PS_ETIMEDOUT, "tensor '%s': version "
					   "%llu arrived, but the gradient "
					   "pushed from its buffer was not "
					   "released by the transport within "
					   "%d ms", t->name,
					   (unsigned long long)version,
					   timeout_ms);
	if (low == UINT64_MAX)
		return psi_client_api_errf(PS_ETIMEDOUT, "tensor '%s': no "
					   "version arrived within %d ms "
					   "(waiting for %llu)", t->name,
					   timeout_ms,
					   (unsigned long long)version);
	return psi_client_api_errf(PS_ETIMEDOUT, "tensor '%s': version %llu "
				   "did not arrive within %d ms (%u of its %u "
				   "partitions not there, the oldest at "
				   "version %llu)", t->name,
				   (unsigned long long)version, timeout_ms,
				   missing, t->nparts, (unsigned long long)low);
}

static int wait_params(ps_client *c, uint32_t tensor_id, uint64_t version,
		       int timeout_ms)
{
	int rc = psi_client_tensor_check(c, tensor_id);

	if (rc != PS_OK)
		return rc;
	double wall = ps_timing_wall_us();
	pthread_mutex_lock(&c->mu);
	rc = joined_locked(c);
	if (rc == PS_OK) {
		timing_event(c, PS_TIMING_NEED, tensor_id, version, wall);
		rc = wait_tensor(c, &c->tensors[tensor_id], version,
				 deadline_of(timeout_ms));
	}
	if (rc == PS_ETIMEDOUT)
		wait_timed_out(c, &c->tensors[tensor_id], version, timeout_ms);
	ps_timing_rec_blocked(&c->timing, wall);
	pthread_mutex_unlock(&c->mu);
	return rc;
}

int ps_client_wait(ps_client *c, uint32_t tensor_id, uint64_t version,
		   int timeout_ms)
{
	api_call a = psi_client_api_begin("ps_client_wait");

	return psi_client_api_end(&a, c, wait_params(c, tensor_id, version,
						     timeout_ms));
}

int psi_client_try_params(ps_client *c, uint32_t tensor_id, uint64_t version)
{
	int rc = psi_client_tensor_check(c, tensor_id);

	if (rc != PS_OK)
		return rc;
	double wall = ps_timing_wall_us();
	pthread_mutex_lock(&c->mu);
	/* the first try for a version is when the program needs it */
	timing_event(c, PS_TIMING_NEED, tensor_id, version, wall);
	{ /* what has arrived counts, even while nobody drove */
		cmd *queued;
		if (!tensor_ready(c, &c->tensors[tensor_id], version) &&
		    psi_client_app_take_drive(c, &queued))
			psi_client_app_drive(c, queued, NULL, APP_DRAIN);
	}
	if (c->state != ST_RUNNING)
		rc = c->state == ST_FAILED ? c->fail_code : PS_ESTATE;
	else if (!tensor_ready(c, &c->tensors[tensor_id], version))
		rc = PS_EAGAIN;
	else
		rc = copy_out(c, &c->tensors[tensor_id]);
	ps_timing_rec_blocked(&c->timing, wall);
	pthread_mutex_unlock(&c->mu);
	return rc;
}

/* PS_EAGAIN (not arrived yet) is no failure: it leaves api_error. */
int ps_client_try(ps_client *c, uint32_t tensor_id, uint64_t version)
{
	api_call a = psi_client_api_begin("ps_client_try");
	int rc = psi_client_try_params(c, tensor_id, version);

	if (rc == PS_EAGAIN) {
		psi_client_api_end_quiet();
		return rc;
	}
	return psi_client_api_end(&a, c, rc);
}

static int wait_any(ps_client *c, uint64_t *seen, int timeout_ms)
{
	int64_t deadline = deadline_of(timeout_ms);
	int rc = PS_OK;

	if (!c || !seen)
		return psi_client_api_errf(PS_EINVAL, "%s is NULL",
					   !c ? "the client" : "seen");
	double wall = ps_timing_wall_us();
	pthread_mutex_lock(&c->mu);
	while (rc == PS_OK && c->stats.params_received == *seen) {
		if (c->state != ST_RUNNING) {
			rc = c->state == ST_FAILED ? c->fail_code : PS_ESTATE;
			break;
		}
		rc = psi_client_wait_until(c, deadline);
	}
	*seen = c->stats.params_received;
	ps_timing_rec_blocked(&c->timing, wall);
	pthread_mutex_unlock(&c->mu);
	if (rc == PS_ETIMEDOUT)
		psi_client_api_errf(rc, "no parameters arrived within %d ms "
				    "(%llu arrivals so far)", timeout_ms,
				    (unsigned long long)*seen);
	return rc;
}

int ps_client_wait_any(ps_client *c, uint64_t *seen, int timeout_ms)
{
	api_call a = psi_client_api_begin("ps_client_wait_any");

	return psi_client_api_end(&a, c, wait_any(c, seen, timeout_ms));
}

static int pull(ps_client *c, uint32_t tensor_id, int timeout_ms)
{
	tensor *t;
	cmd *k;
	int rc = psi_client_tensor_check(c, tensor_id);

	if (rc != PS_OK)
		return rc;
	k = calloc(1, sizeof(*k));
	if (!k)
		return psi_client_api_errf(PS_ENOMEM, "out of memory");
	k->kind = CMD_PULL;
	k->tensor = tensor_id;
	t = &c->tensors[tensor_id];
	pthread_mutex_lock(&c->mu);
	rc = enqueue(c, k);
	for (uint32_t i = 0; rc == PS_OK && i < t->nparts; i++)
		c->slots[t->first_part + i].pull_pending = 1;
	if (rc == PS_OK)
		rc = wait_tensor(c, t, 0, deadline_of(timeout_ms));
	if (rc == PS_ETIMEDOUT)
		psi_client_api_errf(rc, "tensor '%s': the servers' values did "
				    "not arrive within %d ms", t->name,
				    timeout_ms);
	pthread_mutex_unlock(&c->mu);
	return rc;
}

int ps_client_pull(ps_client *c, uint32_t tensor_id, int timeout_ms)
{
	api_call a = psi_client_api_begin("ps_client_pull");

	return psi_client_api_end(&a, c, pull(c, tensor_id, timeout_ms));
}

static int flush(ps_client *c, int timeout_ms)
{
	int64_t deadline = deadline_of(timeout_ms);
	int rc = PS_OK;
	uint32_t i;

	if (!c)
		return psi_client_api_errf(PS_EINVAL, "the client is NULL");
	pthread_mutex_lock(&c->mu);
	for (i = 0; i <= c->ntensors && rc == PS_OK; i++) {
		/* i == ntensors: the fused transfers */
		while (rc == PS_OK && (i < c->ntensors ? c->tensors[i].inflight
						       : c->fused_inflight)) {
			if (c->state == ST_FAILED) {
				rc = c->fail_code;
				break;
			}
			c->wants_release = 1;
			rc = psi_client_wait_until(c, deadline);
			c->wants_release = 0;
		}
	}
	if (rc == PS_ETIMEDOUT && i <= c->ntensors)
		psi_client_api_errf(rc, "the gradient of tensor '%s' was not "
				    "released by the transport within %d ms",
				    c->tensors[i - 1].name, timeout_ms);
	else if (rc == PS_ETIMEDOUT)
		psi_client_api_errf(rc, "fused gradients were not released by "
				    "the transport within %d ms", timeout_ms);
	pthread_mutex_unlock(&c->mu);
	return rc;
}

int ps_client_flush(ps_client *c, int timeout_ms)
{
	api_call a = psi_client_api_begin("ps_client_flush");

	return psi_client_api_end(&a, c, flush(c, timeout_ms));
}

/* A barrier; send (len bytes, or NULL) goes to the scheduler with it (a
 * broadcast's root), and recv (len bytes, or NULL) receives what the
 * barrier's root sent. */
static int barrier_with(ps_client *c, const void *send, void *recv,
			size_t len, int64_t deadline, int timeout_ms)
{
	uint64_t target, number;
	cmd *k = calloc(1, sizeof(*k));
	int rc;

	if (!k)
		return psi_client_api_errf(PS_ENOMEM, "out of memory");
	k->kind = CMD_BARRIER;
	if (send) {
		k->payload = malloc(len ? len : 1);
		if (!k->payload) {
			free(k);
			return psi_client_api_errf(
				PS_ENOMEM, "out of memory for %zu bytes", len);
		}
		memcpy(k->payload, send, len);
		k->payload_len = len;
	}
	pthread_mutex_lock(&c->mu);
	number = c->barriers_asked;
	k->iteration = number;
	rc = enqueue(c, k); /* k is the queue's, or freed */
	if (rc == PS_OK)
		c->barriers_asked++;
	target = c->barriers_asked;
	while (rc == PS_OK && c->barriers_done < target) {
		if (c->state != ST_RUNNING) {
			rc = c->state == ST_FAILED ? c->fail_code : PS_ESTATE;
			break;
		}
		rc = psi_client_wait_until(c, deadline);
	}
	if (rc == PS_ETIMEDOUT)
		psi_client_api_errf(rc, "barrier %llu: not every worker "
				    "arrived within %d ms",
				    (unsigned long long)number, timeout_ms);
	if (rc == PS_OK && recv) {
		if (c->bcast_barrier != number || c->bcast_len != len) {
			rc = psi_client_api_errf(
				PS_EPROTO, "barrier %llu brought %zu bytes, "
				"this worker expects %zu: every worker must "
				"broadcast as many bytes from the same root",
				(unsigned long long)number,
				c->bcast_barrier == number ? c->bcast_len : 0,
				len);
		} else if (len) {
			memcpy(recv, c->bcast, len);
		}
	}
	free(c->bcast);
	c->bcast = NULL;
	c->bcast_len = 0;
	pthread_mutex_unlock(&c->mu);
	return rc;
}

int ps_client_barrier(ps_client *c, int timeout_ms)
{
	api_call a = psi_client_api_begin("ps_client_barrier");

	return psi_client_api_end(
		&a, c,
		c ? barrier_with(c, NULL, NULL, 0, deadline_of(timeout_ms),
				 timeout_ms)
		  : psi_client_api_errf(PS_EINVAL, "the client is NULL"));
}

static int broadcast(ps_client *c, int root, void *buf, size_t len,
		     int timeout_ms)
{
	int64_t deadline = deadline_of(timeout_ms);
	int rank, workers;
	size_t chunk, off = 0;

	if (!c)
		return psi_client_api_errf(PS_EINVAL, "the client is NULL");
	if (!buf && len)
		return psi_client_api_errf(PS_EINVAL,
					   "buf is NULL for %zu bytes", len);
	if (c->state == ST_CREATED || c->state == ST_JOINING)
		return PS_ESTATE;
	rank = (int)c->node.rank;
	workers = (int)c->node.welcome.num_workers;
	if (root < 0 || root >= workers)
		return psi_client_api_errf(PS_EINVAL, "root %d is not a "
					   "worker's rank (0..%d)", root,
					   workers - 1);
	/* in messages the transport takes (transport.max_message), every
	 * worker cutting the same len alike */
	chunk = (size_t)ps_config_max_message(&c->cfg);
	do {
		size_t n = len - off < chunk ? len - off : chunk;
		int rc = barrier_with(c, rank == root ? (char *)buf + off : NULL,
				      rank == root ? NULL : (char *)buf + off,
				      n, deadline, timeout_ms);
		if (rc != PS_OK)
			return rc;
		off += n;
	} while (off < len);
	return PS_OK;
}

int ps_client_broadcast(ps_client *c, int root, void *buf, size_t len,
			int timeout_ms)
{
	api_call a = psi_client_api_begin("ps_client_broadcast");

	return psi_client_api_end(&a, c,
				  broadcast(c, root, buf, len, timeout_ms));
}

static int finish(ps_client *c, const ps_client_result *result,
		  const ps_replay_result *replay)
{
	cmd *k;
	int rc;

	if (!c || !result)
		return psi_client_api_errf(PS_EINVAL, "%s is NULL",
					   !c ? "the client" : "result");
	rc = flush(c, -1);
	if (rc != PS_OK)
		return rc;
	k = calloc(1, sizeof(*k));
	if (!k)
		return psi_client_api_errf(PS_ENOMEM, "out of memory");
	k->kind = CMD_DONE;
	k->done.iterations = result->iterations;
	k->done.seconds = result->seconds;
	k->done.last_loss = result->last_loss;
	if (replay) {
		k->done.wait_seconds = replay->wait_seconds;
		k->done.efficiency = replay->efficiency;
		k->done.speedup_bound = replay->speedup_bound;
		k->done.samples_per_second = replay->samples_per_second;
	}
	pthread_mutex_lock(&c->mu);
	k->done.bytes_pushed = c->stats.bytes_pushed;
	k->done.bytes_received = c->stats.bytes_received;
	if (c->state == ST_SHUTDOWN) {
		psi_client_cmd_free(k);
		pthread_mutex_unlock(&c->mu);
		return psi_client_api_errf(PS_ESTATE, "called again: the job "
					   "has shut down already");
	}
	rc = enqueue(c, k);
	while (rc == PS_OK && c->state == ST_RUNNING)
		psi_client_wait_until(c, -1);
	if (rc == PS_OK && c->state == ST_FAILED)
		rc = c->fail_code;
	pthread_mutex_unlock(&c->mu);
	return rc;
}

int psi_client_finish_replay(ps_client *c, const ps_client_result *result,
			     const ps_replay_result *replay)
{
	api_call a = psi_client_api_begin("ps_client_finish");

	return psi_client_api_end(&a, c, finish(c, result, replay));
}

int ps_client_finish(ps_client *c, const ps_client_result *result)
{
	return psi_client_finish_replay(c, result, NULL);
}

void ps_client_get_stats(const ps_client *c, ps_client_stats *stats_p)
{
	ps_client *m = (ps_client *)c;

	if (!c || !stats_p)
		return;
	pthread_mutex_lock(&m->mu);
	*stats_p = c->stats;
	pthread_mutex_unlock(&m->mu);
}

void ps_client_destroy(ps_client **client_p)
{
	ps_client *c;

	if (!client_p || !*client_p)
		return;
	c = *client_p;
	if (c->thread_started) {
		pthread_mutex_lock(&c->mu);
		c->stop = 1;
		if (c->comm_alive)
			ps_node_wake(&c->node);
		pthread_cond_signal(&c->comm_cv);
		pthread_mutex_unlock(&c->mu);
		pthread_join(c->thread, NULL);
	}
	while (c->head) {
		cmd *next = c->head->next;
		psi_client_cmd_free(c->head);
		c->head = next;
	}
	if (c->slots) {
		for (uint32_t p = 0; p < c->nparts; p++)
		{
			ps_msg_free(&c->slots[p].msg);
			ps_msg_free(&c->slots[p].gather);
		}
		free(c->slots);
	}
	ps_timing_rec_free(&c->timing);
	if (c->stages) { /* partly filled, never sent */
		for (uint32_t p = 0; p < c->nparts; p++)
			free(c->stages[p]);
		free(c->stages);
	}
	for (uint32_t i = 0; i < c->ntensors; i++) {
		free(c->tensors[i].detached);
		free(c->tensors[i].detached_part);
#ifdef PS_WITH_CUDA
		psi_client_dev_free(c, c->tensors[i].dev, c->tensors[i].nparts);
#endif
	}
	free(c->tensors);
#ifdef PS_WITH_CUDA
	if (c->cuda_device >= 0) {
		int prev;
		ps_cuda_current(&prev);
		ps_cuda_set(c->cuda_device);
		ps_cuda_stream_free(c->d2h);
		ps_cuda_stream_free(c->h2d);
		ps_cuda_set(prev);
	}
	free(c->numbers);
#endif
	if (c->proto) /* pushes never released: the job failed */
		ps_wproto_foreach_waiting(c->proto, psi_client_free_waiting,
					  NULL);
	ps_wproto_destroy(&c->proto);
	pthread_cond_destroy(&c->cv);
	pthread_cond_destroy(&c->comm_cv);
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->lr_mu);
	free(c->bcast);
	free(c);
	*client_p = NULL;
}
