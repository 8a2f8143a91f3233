/*
 * client/client.c - the worker client library (include/ordo/ordo.h).
 * A client's state, and how its two threads share it (DESIGN, threads):
 * client/state.h.
 *
 * DESIGN (fusion). A fused partition holds several small tensors whole
 * (scheduling/placement.h). Their gradients are copied, on the
 * communication thread, into a staging buffer of the partition's size -
 * the only copy on the push path, and a small one by construction - and
 * the partition enters the gate once every member tensor of that
 * iteration is in. A staging buffer is allocated per fused transfer and
 * freed by the transport's release callback, so a buffer is never written
 * while the transport may still read it. Received fused partitions stay
 * in their slot until every member tensor has copied its piece out (under
 * `mu`: the pieces are small) or a newer version replaces them.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/config.h"
#include "common/log.h"
#include "runtime/clock.h"
#include "runtime/node.h"
#include "runtime/signals.h"
#include "runtime/trace.h"
#include "proto/wire.h"
#include "ordo/ordo.h"
#include "proto/worker.h"
#include "scheduling/order.h"
#include "client/internal.h"
#include "client/state.h"
#ifdef PS_WITH_CUDA
#include "cuda/device.h"
#include "cuda/gpudirect.h"
#include "cuda/staging.h"
#include "client/copy_plan.h"
#endif

/* The job failed with code; why says what happened (as logged; NULL or
 * "": the code's description). Caller holds mu. */
void psi_client_fail_locked(ps_client *c, int code, const char *why)
{
	if (c->state != ST_FAILED && c->state != ST_SHUTDOWN) {
		c->state = ST_FAILED;
		c->fail_code = code;
		snprintf(c->fail_why, sizeof(c->fail_why), "%s",
			 why && why[0] ? why : ps_strerror(code));
	}
	pthread_cond_broadcast(&c->cv);
}

/* Sent bytes were released (ZeroMQ's I/O thread): the application is
 * woken when it waits for that alone - it may wait on cv, or drive,
 * blocked in the transport's receive. Usually the bytes are long gone
 * when the parameters come back, and a wake-up then would only take a
 * CPU from the server and the transport. Caller holds mu. */
static void notify_app_locked(ps_client *c)
{
	if (!c->wants_release)
		return;
	pthread_cond_broadcast(&c->cv);
	if (c->driver == DRIVER_APP)
		ps_node_wake(&c->node);
}

/* The pieces partition `part` is pushed in (1: whole). */
static uint32_t push_pieces_of(const ps_client *c, uint32_t part)
{
	return (uint32_t)ps_part_pieces(
		&c->node.welcome.placement->parts[part],
		ps_config_pieces_size(&c->cfg, 0));
}

/* Each tensor's pushes, counted in pieces (its inflight count's unit). */
static int count_push_pieces(ps_client *c)
{
	for (uint32_t i = 0; i < c->ntensors; i++) {
		tensor *t = &c->tensors[i];
		uint64_t n = 0;

		for (uint32_t k = 0; k < t->nparts; k++)
			n += push_pieces_of(c, t->first_part + k);
		if (n > UINT32_MAX / 2) {
			PS_ERROR("tensor '%s' would be pushed in %llu pieces: "
				 "raise scheduling.push_partition_size",
				 t->name, (unsigned long long)n);
			return PS_EINVAL;
		}
		t->push_pieces = (uint32_t)n;
	}
	return PS_OK;
}

static void release_payload(void *data, void *hint)
{
	tensor *t = hint;
	ps_client *c = t->client;

	(void)data;
	pthread_mutex_lock(&c->mu);
	if (--t->inflight == 0)
		notify_app_locked(c);
	pthread_mutex_unlock(&c->mu);
}

/* One piece sent from a stage (or all of it) is released: the last frees
 * it. */
static void release_stage(void *data, void *hint)
{
	stage *st = hint;
	ps_client *c = st->client;
	int last;

	(void)data;
	pthread_mutex_lock(&c->mu);
	last = --st->refs == 0;
	if (last && --c->fused_inflight == 0)
		notify_app_locked(c);
	pthread_mutex_unlock(&c->mu);
	if (last)
		free(st);
}

static stage *stage_new(ps_client *c, uint32_t part)
{
	const ps_partition *p = &c->node.welcome.placement->parts[part];
	stage *st = malloc(sizeof(*st) + p->numel * sizeof(float));

	if (!st) {
		PS_ERROR("out of memory staging fused partition %u (%llu "
			 "elements)", part, (unsigned long long)p->numel);
		return NULL;
	}
	st->client = c;
	st->refs = 1;
	return st;
}

/* The learning rate set for the pushes of `iteration`: 1 and *lr_p, or 0
 * when none was set (the servers use train.lr). An iteration older than
 * every change kept takes the oldest. */
static int lr_of(ps_client *c, uint64_t iteration, double *lr_p)
{
	int found = 0;

	pthread_mutex_lock(&c->lr_mu);
	for (uint32_t k = c->nlr; k-- > 0;) {
		if (c->lr_from[k] <= iteration || k == 0) {
			*lr_p = c->lr[k];
			found = 1;
			break;
		}
	}
	pthread_mutex_unlock(&c->lr_mu);
	return found;
}

/* Sends piece `piece` of a partition, elements offset .. offset + numel
 * of it (the whole partition: piece 0 of all of them): from a tensor's
 * buffer (base = the tensor's values or gradient; the tensor's inflight
 * count must already include it) or, with st, from a stage (one of its
 * refs). Whichever holds the bytes is released here if the send fails. */
static int send_piece(ps_client *c, tensor *t, stage *st, uint32_t part,
		      uint32_t piece, uint64_t offset, uint64_t numel,
		      uint32_t type, const float *base, uint64_t iteration,
		      int32_t priority)
{
	const ps_partition *p = &c->node.welcome.placement->parts[part];
	ps_wire_header h = {
		.type = type,
		.key = p->tensor,
		.partition = part,
		.iteration = iteration,
		.priority = priority,
		.piece = piece,
	};
	size_t len = numel * sizeof(float);
	int rc;

	if (type == PS_MSG_PUSH)
		h.has_lr = lr_of(c, iteration, &h.lr);

	rc = ps_node_send(&c->node, ps_node_server_id(&c->node, p->server), &h,
			  st ? (void *)(st->data + offset)
			     : (void *)(base + p->offset + offset),
			  len, st ? release_stage : release_payload,
			  st ? (void *)st : (void *)t);
	if (rc != PS_OK && st)
		release_stage(NULL, st);
	pthread_mutex_lock(&c->mu);
	if (rc != PS_OK) {
		if (!st)
			t->inflight--;
		PS_ERROR("cannot send %s of tensor '%s' partition %u to server "
			 "%u: %s", ps_msg_type_name(type), t->name, part,
			 p->server, ps_strerror(rc));
		psi_client_fail_locked(c, rc, ps_log_last_error());
	} else {
		c->stats.bytes_pushed += len;
		c->stats.pushes++;
	}
	pthread_mutex_unlock(&c->mu);
	if (rc == PS_OK && type == PS_MSG_PUSH) {
		slot *s = &c->slots[part];
		s->push_iteration = iteration; /* ready_us: queue_push */
		s->push_sent_us = ps_trace_now_us();
	}
	return rc;
}

/* Sends a whole partition (INIT), as send_piece. */
static int send_part(ps_client *c, tensor *t, stage *st, uint32_t part,
		     uint32_t type, const float *base, uint64_t iteration,
		     int32_t priority)
{
	const ps_partition *p = &c->node.welcome.placement->parts[part];

	return send_piece(c, t, st, part, 0, 0, p->numel, type, base,
			  iteration, priority);
}

static int send_tensor(ps_client *c, tensor *t, uint32_t type,
		       const float *base, uint64_t iteration, int32_t priority)
{
	for (uint32_t k = 0; k < t->nparts; k++) {
		int rc = send_part(c, t, NULL, t->first_part + k, type, base,
				   iteration, priority);
		if (rc != PS_OK) {
			/* the parts never sent hold no reference */
			pthread_mutex_lock(&c->mu);
			t->inflight -= t->nparts - k - 1;
			pthread_cond_broadcast(&c->cv);
			pthread_mutex_unlock(&c->mu);
			return rc;
		}
	}
	return PS_OK;
}

/* Sends what the machine wants sent: pushes as its gate releases them,
 * PARAMS_ACKs, DONE. */
int psi_client_send_msgs(ps_client *c)
{
	ps_wproto_msg m;
	int rc = ps_wproto_flush(c->proto);

	while (rc == PS_OK && ps_wproto_next_msg(c->proto, &m)) {
		ps_wire_header h = {.key = m.key,
				    .partition = m.part,
				    .iteration = m.iteration,
				    .piece = m.piece};
		switch (m.kind) {
		case PS_WPROTO_MSG_PUSH:
			rc = send_piece(c, &c->tensors[m.tensor],
					m.fused ? m.ctx : NULL, m.part, m.piece,
					m.offset, m.bytes / sizeof(float),
					PS_MSG_PUSH, m.fused ? NULL : m.ctx,
					m.iteration, m.priority);
			break;
		case PS_WPROTO_MSG_PARAMS_ACK:
			h.type = PS_MSG_PARAMS_ACK;
			rc = ps_node_send(&c->node,
					  ps_node_server_id(&c->node, m.server),
					  &h, NULL, 0, NULL, NULL);
			break;
		case PS_WPROTO_MSG_DONE:
			h = (ps_wire_header){.type = PS_MSG_DONE};
			rc = ps_node_send(&c->node, 0, &h, c->done_body,
					  c->done_len, ps_wire_free, NULL);
			if (rc != PS_OK)
				free(c->done_body);
			c->done_body = NULL;
			break;
		}
	}
	return rc;
}

/* A pushed tensor enters the machine: an unfused tensor's partitions go
 * into the gate as they are (the caller drains it once a whole batch of
 * commands is in, so the gate chooses among all of them); a fused
 * tensor's gradient is copied into its partition's stage - the only copy
 * on the push path, and a small one by construction - so the
 * application's buffer is free at once, and the stage enters the gate
 * once its last member tensor is in. */
static int queue_push(ps_client *c, const cmd *k)
{
	tensor *t = &c->tensors[k->tensor];
	ps_wproto_staging st;
	stage *sg = NULL;
	char why[512];
	uint64_t now = ps_trace_now_us();
	int rc;

	if (k->part != PUSH_WHOLE) { /* one partition, as its copy is done */
		rc = ps_wproto_push_part(c->proto, k->tensor, k->part,
					 k->iteration, (void *)k->data, why,
					 sizeof(why));
		if (rc == PS_OK) {
			c->slots[k->part].push_ready_us = now;
			return PS_OK;
		}
		PS_ERROR("tensor '%s': %s", t->name, why);
		pthread_mutex_lock(&c->mu);
		t->inflight -= push_pieces_of(c, k->part); /* never queued */
		pthread_cond_broadcast(&c->cv);
		pthread_mutex_unlock(&c->mu);
		return rc;
	}
	rc = ps_wproto_push(c->proto, k->tensor, k->iteration,
			    (void *)k->data, &st, why, sizeof(why));
	if (rc == PS_ESTATE)
		PS_ERROR("tensor '%s': %s", t->name, why);
	if (rc == PS_OK && st.fused) {
		sg = st.new_stage ? stage_new(c, st.part) : c->stages[st.part];
		if (!sg)
			rc = PS_ENOMEM;
		else
			memcpy(sg->data + st.offset, k->data,
			       t->numel * sizeof(float));
		c->stages[st.part] = st.complete ? NULL : sg;
	}
	pthread_mutex_lock(&c->mu);
	if (rc != PS_OK || st.fused) {
		/* copied, or never queued: no partition holds the buffer */
		t->inflight -= t->push_pieces;
		pthread_cond_broadcast(&c->cv);
	}
	if (rc == PS_OK && st.complete)
		c->fused_inflight++;
	pthread_mutex_unlock(&c->mu);
	if (rc != PS_OK)
		return rc;
	if (st.fused && !st.complete)
		return PS_OK;
	if (st.fused) {
		c->slots[st.part].push_ready_us = now;
		/* one ref per piece that will be sent from it */
		pthread_mutex_lock(&c->mu);
		sg->refs = push_pieces_of(c, st.part);
		pthread_mutex_unlock(&c->mu);
		rc = ps_wproto_stage_ready(c->proto, st.part, k->iteration, sg);
		if (rc != PS_OK) {
			pthread_mutex_lock(&c->mu);
			sg->refs = 1;
			pthread_mutex_unlock(&c->mu);
			release_stage(NULL, sg);
		}
		return rc;
	}
	for (uint32_t i = 0; i < t->nparts; i++)
		c->slots[t->first_part + i].push_ready_us = now;
	return PS_OK;
}

/* A push (piece) never released: a stage's ref is the client's to
 * drop. */
static void free_waiting(void *ctx, int fused, void *ud)
{
	(void)ud;
	if (fused)
		release_stage(NULL, ctx);
}

static int send_pulls(ps_client *c, tensor *t)
{
	for (uint32_t k = 0; k < t->nparts; k++) {
		uint32_t part = t->first_part + k;
		const ps_partition *p = &c->node.welcome.placement->parts[part];
		ps_wire_header h = {
			.type = PS_MSG_PULL,
			.key = p->tensor,
			.partition = part,
		};
		int rc = ps_node_send(&c->node,
				      ps_node_server_id(&c->node, p->server),
				      &h, NULL, 0, NULL, NULL);
		if (rc != PS_OK) {
			PS_ERROR("cannot send PULL to server %u: %s",
				 p->server, ps_strerror(rc));
			return rc;
		}
	}
	return PS_OK;
}

int psi_client_run_command(ps_client *c, cmd *k)
{
	ps_wire_header h = {.key = (uint32_t)k->iteration};
	void *body;
	size_t len;
	int rc;

	switch (k->kind) {
	case CMD_PUSH:
		return queue_push(c, k);
	case CMD_PULL:
		return send_pulls(c, &c->tensors[k->tensor]);
	case CMD_BARRIER:
		h.type = PS_MSG_BARRIER;
		h.payload_len = k->payload_len;
		rc = ps_node_send(&c->node, 0, &h, k->payload, k->payload_len,
				  k->payload ? ps_wire_free : NULL, NULL);
		if (rc != PS_OK)
			free(k->payload);
		k->payload = NULL;
		return rc;
	case CMD_DONE:
		rc = ps_wire_done_encode(&k->done, &body, &len);
		if (rc != PS_OK)
			return rc;
		c->done_body = body;
		c->done_len = len;
		rc = ps_wproto_done(c->proto);
		return rc == PS_OK ? psi_client_send_msgs(c) : rc;
	case CMD_PROGRESS:
		h.type = PS_MSG_PROGRESS;
		h.key = 0;
		h.iteration = k->iteration;
		return ps_node_send(&c->node, 0, &h, NULL, 0, NULL, NULL);
	}
	return PS_EINVAL;
}

/* The server rank of a node, or PS_WPROTO_NOT_SERVER. */
static uint32_t server_rank(const ps_client *c, uint32_t node)
{
	const ps_node_info *n = &c->node.welcome.nodes[node];

	return n->role == PS_ROLE_SERVER ? n->rank : PS_WPROTO_NOT_SERVER;
}

/* A PARAMS message the machine accepted is stored in its slot, which
 * owns msg from then on. */
/* A gradient partition's life on the push lane: ready -> sent -> acked. */
/* (the push of `iteration` of partition `part` was acknowledged: by its
 * PUSH_ACK, or in synchronous mode without a window by the next PARAMS) */
static void trace_ack(ps_client *c, uint32_t part, uint64_t iteration)
{
	const ps_placement *pl = c->node.welcome.placement;
	const slot *s;
	uint64_t now;

	if (!ps_trace_enabled() || part >= pl->num_parts)
		return;
	s = &c->slots[part];
	if (s->push_iteration != iteration || !s->push_sent_us)
		return;
	now = ps_trace_now_us();
	ps_trace_args a = {
		.iteration = (int64_t)iteration,
		.tensor = pl->parts[part].tensor,
		.partition = part,
		.bytes = (int64_t)(pl->parts[part].numel * sizeof(float)),
		.ready_us = s->push_ready_us,
		.sent_us = s->push_sent_us,
		.acked_us = now,
	};
	ps_trace_span(PS_LANE_PUSH, c->tensors[pl->parts[part].tensor].name,
		      s->push_ready_us, now - s->push_ready_us, &a);
}

/* A message of its own holding a whole partition's parameters, gathered
 * from pieces. */
typedef struct gathered {
	ps_msg msg;
	float data[];
} gathered;

static void gathered_release(ps_msg *msg)
{
	free(msg);
}

/* Piece h->piece of a partition's parameters into its slot's gather
 * (the first piece starts one): 1 when it was the last, and *msg_p is
 * then the whole partition's message; 0 while pieces are missing. Takes
 * the piece's message. */
static int gather_piece(ps_client *c, ps_msg **msg_p,
			const ps_wire_header *h)
{
	const ps_partition *p = &c->node.welcome.placement->parts[h->partition];
	uint64_t piece = ps_config_pieces_size(&c->cfg, 1), off, n;
	slot *s = &c->slots[h->partition];

	if (!s->gather) {
		gathered *g = malloc(sizeof(*g) + p->numel * sizeof(float));
		if (!g)
			return -1;
		g->msg = (ps_msg){.payload = g->data,
				  .payload_len = p->numel * sizeof(float),
				  .release = gathered_release};
		s->gather = &g->msg;
	}
	ps_piece_span(p, piece, h->piece, &off, &n);
	memcpy((float *)s->gather->payload + off, (*msg_p)->payload,
	       n * sizeof(float));
	ps_msg_free(msg_p);
	if (h->piece + 1 < ps_part_pieces(p, piece))
		return 0;
	*msg_p = s->gather;
	s->gather = NULL;
	return 1;
}

static int accept_params(ps_client *c, ps_msg **msg_p,
			 const ps_wire_header *h, char *why, size_t whylen)
{
	const ps_placement *pl = c->node.welcome.placement;
	ps_msg *msg = *msg_p;
	slot *s;
	int acked, complete;
	int rc = ps_wproto_on_params(c->proto, server_rank(c, h->sender),
				     h->partition, h->key, h->iteration,
				     h->piece, msg->payload_len, &acked,
				     &complete, why, whylen);

	if (rc != PS_OK)
		return rc;
	if (ps_config_pieces_size(&c->cfg, 1)) {
		/* in pieces: gathered until the last is in */
		int last = gather_piece(c, msg_p, h);
		if (last < 0) {
			PS_ERROR("out of memory gathering partition %u",
				 h->partition);
			return PS_ENOMEM;
		}
		msg = *msg_p;
		if (!complete)
			return PS_OK;
	}
	if (acked) /* the push of the iteration before */
		trace_ack(c, h->partition,
			  c->slots[h->partition].push_iteration);
	pthread_mutex_lock(&c->mu);
	s = &c->slots[h->partition];
	ps_msg_free(&s->msg);
	s->msg = msg;
	s->version = h->iteration;
	s->seq++;
	s->copies_left = pl->parts[h->partition].ntensors;
	s->have = 1;
	s->pull_pending = 0;
	c->stats.bytes_received += msg->payload_len;
	c->stats.params_received++;
	*msg_p = NULL; /* the slot's now */
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	if (ps_trace_enabled()) {
		ps_trace_args a = {
			.iteration = (int64_t)h->iteration,
			.tensor = h->key,
			.partition = h->partition,
			.bytes = (int64_t)h->payload_len,
		};
		ps_trace_instant(PS_LANE_RECEIVE, c->tensors[h->key].name,
				 ps_trace_now_us(), &a);
	}
	return PS_OK;
}

/* CREDIT from the scheduler: a new window from an iteration on. */
static int handle_credit(ps_client *c, const ps_msg *msg,
			 const ps_wire_header *h, char *why, size_t whylen)
{
	uint64_t credit;

	if (ps_wire_credit_decode(h, msg->payload, msg->payload_len,
				  c->cfg.scheduling.push.credit_size, &credit,
				  why,
				  whylen) != PS_OK)
		return PS_EPROTO;
	ps_wproto_on_credit(c->proto, credit, h->iteration);
	if (credit)
		c->unwindowed_sync = 0; /* acknowledgements to handle now */
	PS_INFO("credit: window %llu bytes from iteration %llu",
		(unsigned long long)credit,
		(unsigned long long)h->iteration);
	return PS_OK;
}

/* STOP from the scheduler: the job ends before h->iteration, unless the
 * application has begun it already: then the scheduler hears how far. */
static int handle_stop(ps_client *c, const ps_wire_header *h, char *why,
		       size_t whylen)
{
	ps_wire_header late = {.type = PS_MSG_STOP_LATE};
	uint64_t begun;

	if (h->sender != 0 || h->iteration == 0) {
		snprintf(why, whylen, "STOP before %llu from node %u",
			 (unsigned long long)h->iteration, h->sender);
		return PS_EPROTO;
	}
	pthread_mutex_lock(&c->mu);
	begun = c->begun;
	if (begun <= h->iteration) /* iteration - 1 is the last begun */
		c->stop_at = h->iteration;
	pthread_mutex_unlock(&c->mu);
	if (begun <= h->iteration)
		return PS_OK;
	late.iteration = begun; /* began begun - 1: can stop before begun */
	return ps_node_send(&c->node, 0, &late, NULL, 0, NULL, NULL);
}

/* Handles one received message. Returns PS_OK, PS_ECLOSED on SHUTDOWN. */
int psi_client_handle(ps_client *c, ps_msg *msg, const ps_wire_header *h)
{
	char why[256] = "";
	int rc = PS_OK;

	switch (h->type) {
	case PS_MSG_PARAMS:
		rc = accept_params(c, &msg, h, why, sizeof(why));
		if (rc != PS_OK)
			break;
		/* the slot owns msg now (a piece: its gather); with a credit
		 * window a PARAMS_ACK goes back */
		return psi_client_send_msgs(c);
	case PS_MSG_PUSH_ACK:
		if (h->partition < c->nparts &&
		    h->piece + 1 == push_pieces_of(c, h->partition))
			trace_ack(c, h->partition, h->iteration); /* the last */
		rc = ps_wproto_on_push_ack(c->proto, server_rank(c, h->sender),
					   h->partition, h->piece, why,
					   sizeof(why));
		if (rc != PS_OK)
			break;
		rc = psi_client_send_msgs(c);
		if (rc != PS_OK) {
			ps_msg_free(&msg);
			return rc;
		}
		break;
	case PS_MSG_BARRIER_DONE:
		if (h->sender != 0) {
			rc = PS_EPROTO;
			snprintf(why, sizeof(why), "BARRIER_DONE from node %u",
				 h->sender);
			break;
		}
		pthread_mutex_lock(&c->mu);
		free(c->bcast); /* a broadcast nobody claimed */
		c->bcast = NULL;
		c->bcast_len = 0;
		if (msg->payload_len) { /* a broadcast's data */
			c->bcast = malloc(msg->payload_len);
			if (c->bcast) {
				memcpy(c->bcast, msg->payload,
				       msg->payload_len);
				c->bcast_len = msg->payload_len;
			}
		}
		c->bcast_barrier = h->key;
		c->barriers_done++;
		pthread_cond_broadcast(&c->cv);
		pthread_mutex_unlock(&c->mu);
		break;
	case PS_MSG_CREDIT:
		rc = handle_credit(c, msg, h, why, sizeof(why));
		break;
	case PS_MSG_STOP:
		rc = handle_stop(c, h, why, sizeof(why));
		if (rc != PS_OK && rc != PS_EPROTO) {
			ps_msg_free(&msg);
			return rc;
		}
		break;
	case PS_MSG_SHUTDOWN:
		if (h->sender == 0) {
			ps_msg_free(&msg);
			return PS_ECLOSED;
		}
		rc = PS_EPROTO;
		snprintf(why, sizeof(why), "SHUTDOWN from node %u", h->sender);
		break;
	default:
		rc = PS_EPROTO;
		snprintf(why, sizeof(why), "unexpected %s from node %u",
			 ps_msg_type_name(h->type), h->sender);
	}
	if (rc == PS_EPROTO) {
		pthread_mutex_lock(&c->mu);
		c->stats.dropped++;
		pthread_mutex_unlock(&c->mu);
		psi_note_drop(++c->node.dropped, "message", why);
	}
	ps_msg_free(&msg);
	return PS_OK;
}

/* Maps tensors to partitions, allocates the slots and connects to the
 * servers: everything the application may use once state is RUNNING. */
int psi_client_setup_after_join(ps_client *c)
{
	const ps_placement *pl = c->node.welcome.placement;
	int rc;

	if (pl->num_tensors != c->ntensors) {
		PS_ERROR("the job's placement holds %u tensors, this worker "
			 "declared %u", pl->num_tensors, c->ntensors);
		return PS_EPROTO;
	}
	for (uint32_t i = 0; i < c->ntensors; i++) {
		tensor *t = &c->tensors[i];
		t->first_part = pl->first_part[i];
		t->nparts = pl->part_count[i];
		t->fused = pl->parts[t->first_part].ntensors > 1;
		t->part_base = pl->tensor_base[i];
		t->detached = calloc(t->nparts, sizeof(*t->detached));
		t->detached_part = calloc(t->nparts, sizeof(*t->detached_part));
		if (!t->detached || !t->detached_part)
			return PS_ENOMEM;
		/* where the tensor's buffer is born for the transport: the
		 * initial values leave from it (gradients come at push time,
		 * anywhere: transport/transport.h) */
		rc = ps_transport_reg(c->node.transport, t->values,
				      t->numel * sizeof(float), PS_MEM_HOST,
				      &t->mr);
		if (rc != PS_OK) {
			PS_ERROR("cannot register tensor '%s' (%llu elements) "
				 "with the transport: %s", t->name,
				 (unsigned long long)t->numel, ps_strerror(rc));
			return rc;
		}
	}
#ifdef PS_WITH_CUDA
	psi_client_dev_direct_all(c); /* the transport has its device now */
#endif
	c->slots = calloc(pl->num_parts, sizeof(*c->slots));
	c->stages = calloc(pl->num_parts, sizeof(*c->stages));
	if (!c->slots || !c->stages)
		return PS_ENOMEM;
	c->nparts = pl->num_parts;
	ps_wire_welcome_sizes(&c->node.welcome, &c->cfg);
	c->unwindowed_sync = c->cfg.train.mode == PS_MODE_SYNC &&
			     c->cfg.scheduling.push.credit_size == 0;
	{
		uint32_t *numbers = NULL;
		rc = ps_order_partition_numbers(
			pl, c->node.welcome.push_priority,
			c->cfg.scheduling.push.gate == PS_GATE_COUNTER,
			&numbers);
		if (rc == PS_OK) {
			ps_wproto_config wc =
				ps_wproto_config_of(&c->cfg, pl, numbers);
			wc.clock_ns = ps_now_ns;
			rc = ps_wproto_create(&wc, &c->proto);
		}
		if (rc == PS_OK)
			rc = count_push_pieces(c);
#ifdef PS_WITH_CUDA
		c->numbers = numbers; /* the copy order of device tensors */
#else
		free(numbers);
#endif
	}
	if (rc != PS_OK)
		return rc;
	return ps_node_connect_role(&c->node, PS_ROLE_SERVER);
}

/* The initial values of a fused partition, gathered from its tensors. */
static int send_fused_init(ps_client *c, uint32_t part)
{
	const ps_partition *p = &c->node.welcome.placement->parts[part];
	stage *st = stage_new(c, part);

	if (!st)
		return PS_ENOMEM;
	for (uint32_t i = p->tensor; i < p->tensor + p->ntensors; i++)
		memcpy(st->data + c->tensors[i].part_base, c->tensors[i].values,
		       c->tensors[i].numel * sizeof(float));
	pthread_mutex_lock(&c->mu);
	c->fused_inflight++;
	pthread_mutex_unlock(&c->mu);
	return send_part(c, &c->tensors[p->tensor], st, part, PS_MSG_INIT,
			 st->data, 0, 0);
}

/* Worker 0's values are the initial parameters. */
int psi_client_send_initial_values(ps_client *c)
{
	int rc = PS_OK;

	if (c->node.rank != 0)
		return PS_OK;
	for (uint32_t i = 0; i < c->ntensors && rc == PS_OK; i++) {
		tensor *t = &c->tensors[i];

		if (t->fused) {
			if (t->part_base == 0) /* its partition's first */
				rc = send_fused_init(c, t->first_part);
			continue;
		}
		pthread_mutex_lock(&c->mu);
		t->inflight += t->nparts;
		pthread_mutex_unlock(&c->mu);
		rc = send_tensor(c, t, PS_MSG_INIT, t->values, 0, 0);
	}
	return rc;
}

/* ---- application side ------------------------------------------------- */

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

int ps_client_next_iteration(ps_client *c, uint64_t it)
{
	cmd *k;
	int run;

	if (!c || c->state == ST_CREATED || c->state == ST_JOINING) {
		api_call a = psi_client_api_begin("ps_client_next_iteration");
		psi_client_api_end(&a, c,
				   c ? PS_ESTATE
				     : psi_client_api_errf(PS_EINVAL, "the "
							   "client is NULL"));
		return 0;
	}
	k = calloc(1, sizeof(*k));
	pthread_mutex_lock(&c->mu);
	run = it < (uint64_t)c->cfg.train.iterations &&
	      (c->stop_at == 0 || it < c->stop_at);
	if (run && it + 1 > c->begun)
		c->begun = it + 1;
	if (k) { /* progress is advisory: without memory, none is said */
		k->kind = CMD_PROGRESS;
		k->iteration = it;
		enqueue(c, k); /* frees k when the client stopped */
	}
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
					   : push_pieces_of(c, part);
	cmd *k = calloc(1, sizeof(*k));
	int rc;

	if (!k)
		return PS_ENOMEM;
	k->kind = CMD_PUSH;
	k->tensor = tensor_id;
	k->part = part;
	k->data = grad;
	k->iteration = iteration;
	pthread_mutex_lock(&c->mu);
	{
		cmd *queued;
		if (psi_client_app_take_drive(c, &queued)) {
			/* sent from here */
			t->inflight += held;
			rc = psi_client_app_drive(c, queued, k, APP_NO_RECV);
			pthread_mutex_unlock(&c->mu);
			return rc;
		}
	}
	rc = enqueue(c, k);
	if (rc == PS_OK)
		t->inflight += held;
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
	pthread_mutex_lock(&c->mu);
	rc = joined_locked(c);
	if (rc == PS_OK)
		rc = wait_tensor(c, &c->tensors[tensor_id], version,
				 deadline_of(timeout_ms));
	if (rc == PS_ETIMEDOUT)
		wait_timed_out(c, &c->tensors[tensor_id], version, timeout_ms);
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
	pthread_mutex_lock(&c->mu);
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
	pthread_mutex_lock(&c->mu);
	while (rc == PS_OK && c->stats.params_received == *seen) {
		if (c->state != ST_RUNNING) {
			rc = c->state == ST_FAILED ? c->fail_code : PS_ESTATE;
			break;
		}
		rc = psi_client_wait_until(c, deadline);
	}
	*seen = c->stats.params_received;
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
		ps_wproto_foreach_waiting(c->proto, free_waiting, NULL);
	ps_wproto_destroy(&c->proto);
	pthread_cond_destroy(&c->cv);
	pthread_cond_destroy(&c->comm_cv);
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->lr_mu);
	free(c->bcast);
	free(c);
	*client_p = NULL;
}
