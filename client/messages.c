/*
 * client/messages.c - what the node's driver sends and what it does with
 * what arrives: pushes (through the machine's gate, fused partitions
 * staged), pulls, barriers, progress and DONE; received parameters into
 * their slots (gathered from pieces), acknowledgements, CREDIT, STOP and
 * SHUTDOWN; and, once the job is joined, the client's setup and worker
 * 0's initial values. Runs on whichever thread drives (client/driving.c).
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
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/log.h"
#include "runtime/clock.h"
#include "runtime/node.h"
#include "runtime/trace.h"
#include "proto/wire.h"
#include "proto/worker.h"
#include "scheduling/order.h"
#include "client/state.h"

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
uint32_t psi_client_push_pieces_of(const ps_client *c, uint32_t part)
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
			n += psi_client_push_pieces_of(c, t->first_part + k);
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
		/* never queued */
		t->inflight -= psi_client_push_pieces_of(c, k->part);
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
		sg->refs = psi_client_push_pieces_of(c, st.part);
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
void psi_client_free_waiting(void *ctx, int fused, void *ud)
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
	case CMD_TIMINGS:
		h.type = PS_MSG_TIMINGS;
		h.key = 0;
		h.payload_len = k->payload_len;
		rc = ps_node_send(&c->node, 0, &h, k->payload, k->payload_len,
				  ps_wire_free, NULL);
		if (rc != PS_OK)
			free(k->payload);
		k->payload = NULL;
		return rc;
	case CMD_PROGRESS:
	case CMD_STOP_READY:
		h.type = k->kind == CMD_PROGRESS ? PS_MSG_PROGRESS
						 : PS_MSG_STOP_READY;
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

/* STOP from the scheduler: the job is to end before h->iteration, unless
 * the application has begun it already: then the scheduler hears how far
 * (STOP_LATE). STOP_NOW: every worker waits there; the job ends. The
 * application waiting in ps_client_next_iteration is woken (proto/stop.h). */
static int handle_stop(ps_client *c, const ps_wire_header *h, char *why,
		       size_t whylen)
{
	ps_wire_header late = {.type = PS_MSG_STOP_LATE};
	int rc;

	if (h->sender != 0) {
		snprintf(why, whylen, "%s from node %u",
			 ps_msg_type_name(h->type), h->sender);
		return PS_EPROTO;
	}
	pthread_mutex_lock(&c->mu);
	rc = h->type == PS_MSG_STOP
		     ? ps_stop_worker_on_stop(&c->stopping, h->iteration,
					      &late.iteration, why, whylen)
		     : ps_stop_worker_on_now(&c->stopping, h->iteration,
					     why, whylen);
	pthread_cond_broadcast(&c->cv); /* the application may wait on it */
	pthread_mutex_unlock(&c->mu);
	if (rc != 1)
		return rc;
	/* began the iteration asked: the first it can still stop before */
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
		    h->piece + 1 == psi_client_push_pieces_of(c, h->partition))
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
	case PS_MSG_STOP_NOW:
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
	/* heartbeating meanwhile; what the servers send is kept */
	rc = ps_node_connect_role(&c->node, PS_ROLE_SERVER);
	if (rc == PS_ECLOSED) { /* the job cannot end without this worker */
		PS_ERROR("the scheduler shut the job down before this worker "
			 "had connected to every server");
		rc = PS_EPROTO;
	}
	return rc;
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
