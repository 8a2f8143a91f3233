/*
 * server/server.c - ps-server's event loop over its shard (see server.h).
 *
 * DESIGN. One thread, one loop: ps_node_recv() hands over checked messages
 * and keeps heartbeats going; nothing else runs. Parameter values are sent
 * to the workers without copying: a partition's values live in a
 * reference-counted buffer, each send holds a reference that the transport
 * drops (from its I/O thread) when the bytes are gone. An update writes in
 * place only when no send still holds the buffer; otherwise it first moves
 * the values to a fresh buffer (copy-on-write), so a send in flight never
 * sees values change under it.
 *
 * The state of a partition (values, momentum, version) is all a checkpoint
 * needs; restarts with a new placement will load it per partition.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/memory.h"
#include "common/node.h"
#include "common/signals.h"
#include "common/trace.h"
#include "scheduler/gate.h"
#include "scheduler/gate_meter.h"
#include "scheduler/order.h"
#include "server/optimizer.h"
#include "server/server.h"
#include "server/shard.h"
#include "server/snapshot.h"

/* A buffer of numel values: at `data` (in the arena) or, if NULL, its
 * own. */
static pbuf *pbuf_new(size_t numel, float *data)
{
	pbuf *b = malloc(sizeof(*b) + (data ? 0 : numel * sizeof(float)));
	if (!b)
		return NULL;
	atomic_init(&b->refs, 1);
	b->numel = numel;
	b->data = data ? data : b->mem;
	return b;
}

void pbuf_unref(void *data, void *hint)
{
	pbuf *b = hint;
	(void)data;
	if (atomic_fetch_sub(&b->refs, 1) == 1)
		free(b);
}

/* Makes p->values safe to write (see DESIGN). */
static int make_writable(server *s, shard_part *p)
{
	pbuf *nb;

	uint64_t t0;

	if (atomic_load(&p->values->refs) == 1)
		return PS_OK;
	t0 = ps_now_ns();
	nb = pbuf_new(p->values->numel, NULL);
	if (!nb)
		return PS_ENOMEM;
	memcpy(nb->data, p->values->data, nb->numel * sizeof(float));
	pbuf_unref(NULL, p->values);
	p->values = nb;
	s->cow_ns += ps_now_ns() - t0;
	return PS_OK;
}

static int setup_shard(server *s)
{
	const ps_placement *pl = s->node.welcome.placement;
	uint32_t k = 0;
	uint64_t bytes = 0;

	s->workers = s->node.welcome.num_workers;
	s->local = malloc(pl->num_parts * sizeof(*s->local));
	if (!s->local)
		return PS_ENOMEM;
	for (uint32_t i = 0; i < pl->num_parts; i++) {
		s->local[i] = -1;
		if (pl->parts[i].server == s->node.rank)
			s->nparts++;
	}
	s->parts = calloc(s->nparts ? s->nparts : 1, sizeof(*s->parts));
	if (!s->parts)
		return PS_ENOMEM;
	for (uint32_t i = 0; i < pl->num_parts; i++)
		if (pl->parts[i].server == s->node.rank)
			s->arena_numel += pl->parts[i].numel;
	s->values_arena = ps_alloc_big(s->arena_numel * sizeof(float));
	s->momentum_arena = ps_alloc_big(s->arena_numel * sizeof(float));
	s->acc_arena = ps_alloc_big(s->arena_numel * sizeof(double));
	if (!s->values_arena || !s->momentum_arena || !s->acc_arena)
		return PS_ENOMEM;
	for (uint32_t i = 0; i < pl->num_parts; i++) {
		shard_part *p;
		size_t n = pl->parts[i].numel;

		if (pl->parts[i].server != s->node.rank)
			continue;
		p = &s->parts[k];
		s->local[i] = (int32_t)k++;
		p->desc = &pl->parts[i];
		p->index = i;
		p->values = pbuf_new(n, s->values_arena + bytes / sizeof(float));
		p->momentum = s->momentum_arena + bytes / sizeof(float);
		p->acc = s->acc_arena + bytes / sizeof(float);
		p->pushed = calloc(s->workers, 1);
		if (s->cfg->train.mode == PS_MODE_ASYNC)
			p->next_it = calloc(s->workers, sizeof(*p->next_it));
		if (!p->values || !p->pushed ||
		    (s->cfg->train.mode == PS_MODE_ASYNC && !p->next_it))
			return PS_ENOMEM;
		bytes += n * sizeof(float);
	}
	PS_INFO("holding %u of %u partitions, %.2f MiB", s->nparts,
		pl->num_parts, (double)bytes / (1024.0 * 1024.0));
	{
		int rc = ps_order_partition_numbers(
			pl, s->node.welcome.priority,
			s->cfg->scheduling.gate == PS_GATE_COUNTER, &s->number);
		if (rc == PS_OK)
			rc = ps_gate_create((ps_gate_kind)s->cfg->scheduling.gate,
					    s->cfg->scheduling.credit_size,
					    s->workers, &s->gate);
		return rc;
	}
}

static void drop_pending(uint64_t handle, void *ud);

static void free_shard(server *s)
{
	ps_snapshot_free(s); /* joins a writer reading the arenas */
	if (s->gate) /* sends never released: the job ended or failed */
		ps_gate_foreach_pending(s->gate, drop_pending, NULL);
	ps_gate_destroy(&s->gate);
	free(s->number);
	for (uint32_t k = 0; k < s->nparts; k++) {
		shard_part *p = &s->parts[k];
		if (p->values)
			pbuf_unref(NULL, p->values);
		free(p->pushed);
		free(p->next_it);
		for (uint32_t i = 0; i < p->nheld; i++)
			ps_msg_free(&p->held[i].msg);
		free(p->held);
	}
	/* the transport is closed: no send holds arena memory any more */
	ps_free_big(s->values_arena, s->arena_numel * sizeof(float));
	ps_free_big(s->momentum_arena, s->arena_numel * sizeof(float));
	ps_free_big(s->acc_arena, s->arena_numel * sizeof(double));
	free(s->parts);
	free(s->local);
	free(s->scratch);
}

/* A parameter send waiting in the gate; the gate's handle points to it.
 * It holds a reference to the values as they were when it became ready. */
typedef struct pending {
	shard_part *p;
	pbuf *values;
	uint64_t version, ready_us;
	uint32_t wrank;
} pending;

static void drop_pending(uint64_t handle, void *ud)
{
	pending *e = (pending *)(uintptr_t)handle;
	(void)ud;
	pbuf_unref(NULL, e->values);
	free(e);
}

/* Hands over every parameter send the gate releases now. */
static int drain_gate(server *s)
{
	ps_xfer x;

	while (ps_gate_next_metered(s->gate, &s->meter, &x) == 1) {
		pending *e = (pending *)(uintptr_t)x.handle;
		shard_part *p = e->p;
		ps_wire_header h = {
			.type = PS_MSG_PARAMS,
			.key = p->desc->tensor,
			.partition = p->index,
			.iteration = e->version,
			.priority = (int32_t)x.priority,
		};
		size_t len = e->values->numel * sizeof(float);
		int rc = ps_node_send(&s->node,
				      ps_node_worker_id(&s->node, e->wrank), &h,
				      e->values->data, len, pbuf_unref,
				      e->values);

		if (rc != PS_OK) {
			/* Synchronous training cannot go on without this
			 * worker: fail, and let the scheduler end the job. */
			PS_ERROR("cannot send parameters to worker %u: %s",
				 e->wrank, ps_strerror(rc));
			drop_pending(x.handle, NULL);
			return rc;
		}
		if (ps_trace_enabled()) {
			uint64_t sent = ps_trace_now_us();
			ps_trace_args a = {.iteration = (int64_t)e->version,
					   .tensor = p->desc->tensor,
					   .partition = p->index,
					   .bytes = (int64_t)len,
					   .ready_us = e->ready_us,
					   .sent_us = sent};
			char what[40];
			snprintf(what, sizeof(what), "params to worker %u",
				 e->wrank);
			ps_trace_span(PS_LANE_SEND, what, e->ready_us,
				      sent - e->ready_us, &a);
		}
		s->bytes_out += len;
		free(e); /* the transport holds the values now */
	}
	return PS_OK;
}

/* The partition's current values become ready to go to worker wrank. */
static int send_params(server *s, shard_part *p, uint32_t wrank)
{
	pending *e = malloc(sizeof(*e));
	int rc;

	if (!e)
		return PS_ENOMEM;
	if (s->credit_pending && p->version >= s->credit_from) {
		ps_gate_set_credit(s->gate, s->credit_next);
		s->credit_pending = 0;
	}
	atomic_fetch_add(&p->values->refs, 1);
	*e = (pending){.p = p,
		       .values = p->values,
		       .version = p->version,
		       .ready_us = ps_trace_now_us(),
		       .wrank = wrank};
	rc = ps_gate_ready_metered(s->gate, &s->meter,
			   &(ps_xfer){.handle = (uintptr_t)e,
				      .receiver = wrank,
				      .iteration = p->version,
				      .priority = s->number[p->index],
				      .bytes = p->values->numel *
					       sizeof(float)});
	if (rc != PS_OK) {
		drop_pending((uintptr_t)e, NULL);
		return rc;
	}
	return drain_gate(s);
}

/* A worker received parameters: the credit they held returns. */
static int handle_params_ack(server *s, const ps_wire_header *h, char *why,
			     size_t whylen)
{
	const ps_placement *pl = s->node.welcome.placement;

	if (s->node.welcome.nodes[h->sender].role != PS_ROLE_WORKER ||
	    h->partition >= pl->num_parts || s->local[h->partition] < 0 ||
	    ps_gate_acked_metered(s->gate, &s->meter,
				  pl->parts[h->partition].numel *
					  sizeof(float)) != PS_OK) {
		snprintf(why, whylen, "PARAMS_ACK from node %u for partition "
			 "%u, which is not in flight", h->sender,
			 h->partition);
		return PS_EPROTO;
	}
	return drain_gate(s);
}

static int broadcast_params(server *s, shard_part *p)
{
	int rc = PS_OK;
	for (uint32_t w = 0; w < s->workers && rc == PS_OK; w++)
		rc = send_params(s, p, w);
	return rc;
}

static void send_ack(server *s, uint32_t to, const ps_wire_header *push)
{
	ps_wire_header h = {
		.type = PS_MSG_PUSH_ACK,
		.key = push->key,
		.partition = push->partition,
		.iteration = push->iteration,
		.priority = push->priority,
	};
	int rc = ps_node_send(&s->node, to, &h, NULL, 0, NULL, NULL);
	if (rc != PS_OK)
		PS_WARN("cannot acknowledge a push to node %u: %s", to,
			ps_strerror(rc));
}

/* The payload as aligned floats (ZeroMQ keeps tiny messages inline). */
static const float *payload_floats(server *s, const ps_msg *msg)
{
	if (((uintptr_t)msg->payload % _Alignof(float)) == 0)
		return msg->payload;
	if (s->scratch_cap < msg->payload_len) {
		float *n = realloc(s->scratch, msg->payload_len);
		if (!n)
			return NULL;
		s->scratch = n;
		s->scratch_cap = msg->payload_len;
	}
	memcpy(s->scratch, msg->payload, msg->payload_len);
	return s->scratch;
}

/* The partition a data message names, checked; NULL with a reason. */
static shard_part *lookup_part(server *s, const ps_wire_header *h,
			       size_t payload_len, int want_payload, char *why,
			       size_t whylen)
{
	const ps_placement *pl = s->node.welcome.placement;
	shard_part *p;

	if (h->partition >= pl->num_parts || s->local[h->partition] < 0) {
		snprintf(why, whylen, "partition %u is not held by this server",
			 h->partition);
		return NULL;
	}
	p = &s->parts[s->local[h->partition]];
	if (h->key != p->desc->tensor) {
		snprintf(why, whylen, "partition %u belongs to tensor %u, not "
			 "%u", h->partition, p->desc->tensor, h->key);
		return NULL;
	}
	if (want_payload && payload_len != p->desc->numel * sizeof(float)) {
		snprintf(why, whylen, "partition %u needs %llu bytes, got %zu",
			 h->partition,
			 (unsigned long long)(p->desc->numel * sizeof(float)),
			 payload_len);
		return NULL;
	}
	return p;
}

static int handle_init(server *s, const ps_msg *msg, const ps_wire_header *h,
		       char *why, size_t whylen)
{
	shard_part *p;

	if (h->sender != ps_node_worker_id(&s->node, 0)) {
		snprintf(why, whylen, "INIT from node %u, not worker 0",
			 h->sender);
		return PS_EPROTO;
	}
	p = lookup_part(s, h, msg->payload_len, 1, why, whylen);
	if (!p)
		return PS_EPROTO;
	if (p->initialized) {
		snprintf(why, whylen, "partition %u is already initialised",
			 h->partition);
		return PS_EPROTO;
	}
	memcpy(p->values->data, msg->payload, msg->payload_len);
	p->initialized = 1;
	p->version = 0;
	return broadcast_params(s, p);
}

static int apply_update(server *s, shard_part *p, unsigned count)
{
	uint64_t start = ps_trace_now_us();
	int rc = make_writable(s, p);
	if (rc != PS_OK) {
		PS_ERROR("out of memory updating partition %u", p->index);
		return rc;
	}
	/* in slices, with heartbeats between: a whole 400 MB tensor takes
	 * long enough to look dead */
	for (size_t off = 0; off < p->desc->numel; off += SLICE) {
		size_t n = p->desc->numel - off < SLICE ? p->desc->numel - off
							: SLICE;
		ps_sgd_apply(p->values->data + off, p->momentum + off,
			     p->acc + off, n, count, s->cfg->train.lr,
			     s->cfg->train.momentum);
		ps_node_tick(&s->node);
	}
	memset(p->pushed, 0, s->workers);
	p->count = 0;
	p->version++;
	s->updates++;
	if (ps_trace_enabled()) {
		ps_trace_args a = {.iteration = (int64_t)p->version,
				   .tensor = p->desc->tensor,
				   .partition = p->index,
				   .bytes = (int64_t)(p->desc->numel *
						      sizeof(float))};
		ps_trace_span(PS_LANE_UPDATE, "update", start,
			      ps_trace_now_us() - start, &a);
	}
	return ps_snapshot_on_update(s, p);
}

/* The initialised partition a worker's PUSH or PULL names; NULL with a
 * reason when the sender is no worker or the partition is not ready. */
static shard_part *worker_request(server *s, const ps_wire_header *h,
				  size_t payload_len, char *why, size_t whylen)
{
	int push = h->type == PS_MSG_PUSH;
	shard_part *p;

	if (s->node.welcome.nodes[h->sender].role != PS_ROLE_WORKER) {
		snprintf(why, whylen, "%s from node %u, not a worker",
			 ps_msg_type_name(h->type), h->sender);
		return NULL;
	}
	p = lookup_part(s, h, payload_len, push, why, whylen);
	if (p && !p->initialized) {
		snprintf(why, whylen, "%s for partition %u before INIT",
			 ps_msg_type_name(h->type), h->partition);
		return NULL;
	}
	return p;
}

/* Sums a checked push into its partition and, when it completes the
 * iteration (sync) or at once (async), applies the update. */
static int apply_push(server *s, shard_part *p, const ps_msg *msg,
		      const ps_wire_header *h, int acked)
{
	const ps_node_info *from = &s->node.welcome.nodes[h->sender];
	const float *g = payload_floats(s, msg);
	int rc;

	if (!g)
		return PS_ENOMEM;
	for (size_t off = 0; off < p->desc->numel; off += SLICE) {
		size_t n = p->desc->numel - off < SLICE ? p->desc->numel - off
							: SLICE;
		if (p->count == 0)
			ps_accum_set(p->acc + off, g + off, n);
		else
			ps_accum_add(p->acc + off, g + off, n);
		ps_node_tick(&s->node);
	}
	p->pushed[from->rank] = 1;
	p->count++;
	s->pushes++;
	if (ps_trace_enabled()) {
		ps_trace_args a = {.iteration = (int64_t)h->iteration,
				   .tensor = h->key,
				   .partition = h->partition,
				   .bytes = (int64_t)msg->payload_len};
		char what[32];
		snprintf(what, sizeof(what), "push from worker %u",
			 from->rank);
		ps_trace_instant(PS_LANE_RECEIVE, what, ps_trace_now_us(), &a);
	}
	s->bytes_in += msg->payload_len;
	if (!acked)
		send_ack(s, h->sender, h);
	if (s->cfg->train.mode == PS_MODE_ASYNC) {
		if (h->iteration + 1 > p->next_it[from->rank])
			p->next_it[from->rank] = h->iteration + 1;
		return apply_update(s, p, 1);
	}
	if (p->count < s->workers)
		return PS_OK;
	rc = apply_update(s, p, s->workers);
	if (rc == PS_OK)
		rc = broadcast_params(s, p);
	return rc;
}

/* Async: a push a checkpoint makes wait (snapshot.h) is acknowledged now
 * (the sender's credit returns) and applied later. Takes the message. */
static int hold_push(server *s, shard_part *p, ps_msg **msg_p,
		     const ps_wire_header *h)
{
	if (p->nheld == p->held_cap) {
		uint32_t cap = p->held_cap ? 2 * p->held_cap : 8;
		held *n = realloc(p->held, cap * sizeof(*n));
		if (!n)
			return PS_ENOMEM;
		p->held = n;
		p->held_cap = cap;
	}
	p->held[p->nheld++] = (held){.msg = *msg_p, .h = *h};
	*msg_p = NULL;
	s->nheld++;
	send_ack(s, h->sender, h);
	return PS_OK;
}

/* Whether a push of this sender waits in p: its later ones wait too. */
static int holds_from(const shard_part *p, uint32_t sender)
{
	for (uint32_t i = 0; i < p->nheld; i++)
		if (p->held[i].h.sender == sender)
			return 1;
	return 0;
}

/* Applies held pushes that no checkpoint holds back any more, in order. */
static int release_held(server *s)
{
	int rc = PS_OK;

	for (uint32_t k = 0; k < s->nparts && s->nheld > 0 && rc == PS_OK;
	     k++) {
		shard_part *p = &s->parts[k];
		uint32_t done = 0;

		while (done < p->nheld && rc == PS_OK &&
		       !ps_snapshot_holds(s, p, p->held[done].h.iteration)) {
			held *e = &p->held[done++];
			rc = ps_snapshot_on_push(s, p, e->h.iteration);
			if (rc == PS_OK &&
			    !ps_snapshot_holds(s, p, e->h.iteration))
				rc = apply_push(s, p, e->msg, &e->h, 1);
			else if (rc == PS_OK) {
				done--; /* a new checkpoint holds it */
				break;
			}
			ps_msg_free(&e->msg);
		}
		if (done == 0)
			continue;
		memmove(p->held, p->held + done,
			(p->nheld - done) * sizeof(*p->held));
		p->nheld -= done;
		s->nheld -= done;
	}
	return rc;
}

static int handle_push(server *s, ps_msg **msg_p, const ps_wire_header *h,
		       char *why, size_t whylen)
{
	const ps_node_info *from = &s->node.welcome.nodes[h->sender];
	const ps_msg *msg = *msg_p;
	shard_part *p;
	int rc;

	p = worker_request(s, h, msg->payload_len, why, whylen);
	if (!p)
		return PS_EPROTO;
	if (s->cfg->train.mode == PS_MODE_SYNC) {
		if (h->iteration != p->version) {
			snprintf(why, whylen, "PUSH of iteration %llu for "
				 "partition %u, which is at version %llu",
				 (unsigned long long)h->iteration,
				 h->partition,
				 (unsigned long long)p->version);
			return PS_EPROTO;
		}
		if (p->pushed[from->rank]) {
			snprintf(why, whylen, "second PUSH from worker %u for "
				 "partition %u iteration %llu", from->rank,
				 h->partition,
				 (unsigned long long)h->iteration);
			return PS_EPROTO;
		}
		return apply_push(s, p, msg, h, 0);
	}
	rc = ps_snapshot_on_push(s, p, h->iteration);
	if (rc == PS_OK && (ps_snapshot_holds(s, p, h->iteration) ||
			    holds_from(p, h->sender)))
		return hold_push(s, p, msg_p, h); /* keeps its order */
	return rc == PS_OK ? apply_push(s, p, msg, h, 0) : rc;
}

/* CREDIT from the scheduler: a new window for the parameters of an
 * iteration on (the boundary the scheduler chose, docs/tune.md). */
static int handle_credit(server *s, const ps_msg *msg,
			 const ps_wire_header *h, char *why, size_t whylen)
{
	uint64_t credit;

	if (ps_wire_credit_decode(h, msg->payload, msg->payload_len,
				  s->cfg->scheduling.credit_size, &credit, why,
				  whylen) != PS_OK)
		return PS_EPROTO;
	s->credit_next = credit;
	s->credit_from = h->iteration;
	s->credit_pending = 1;
	return PS_OK;
}

static int handle_pull(server *s, const ps_wire_header *h, char *why,
		       size_t whylen)
{
	shard_part *p = worker_request(s, h, 0, why, whylen);

	if (!p)
		return PS_EPROTO;
	return send_params(s, p, s->node.welcome.nodes[h->sender].rank);
}

/* Handles one message: PS_OK, PS_ECLOSED on SHUTDOWN, PS_EPROTO (dropped,
 * reason logged), or a fatal error. */
static int handle(server *s, ps_msg **msg_p, const ps_wire_header *h)
{
	const ps_msg *msg = *msg_p;
	char why[256] = "";
	int rc;

	switch (h->type) {
	case PS_MSG_INIT:
		rc = handle_init(s, msg, h, why, sizeof(why));
		break;
	case PS_MSG_PUSH:
		rc = handle_push(s, msg_p, h, why, sizeof(why));
		break;
	case PS_MSG_PULL:
		rc = handle_pull(s, h, why, sizeof(why));
		break;
	case PS_MSG_PARAMS_ACK:
		rc = handle_params_ack(s, h, why, sizeof(why));
		break;
	case PS_MSG_CREDIT:
		rc = handle_credit(s, msg, h, why, sizeof(why));
		break;
	case PS_MSG_SHUTDOWN:
		return h->sender == 0 ? PS_ECLOSED : PS_EPROTO;
	case PS_MSG_CKPT:
	case PS_MSG_FLUSH:
		if (h->sender != 0 || !s->cfg->checkpoint.dir[0]) {
			snprintf(why, sizeof(why), "%s from node %u%s",
				 ps_msg_type_name(h->type), h->sender,
				 h->sender ? "" : " without checkpoint.dir");
			rc = PS_EPROTO;
		} else if (h->type == PS_MSG_CKPT) {
			rc = ps_snapshot_request(s, h->iteration);
		} else {
			rc = ps_snapshot_flush(s);
		}
		break;
	default:
		snprintf(why, sizeof(why), "unexpected %s from node %u",
			 ps_msg_type_name(h->type), h->sender);
		rc = PS_EPROTO;
	}
	if (rc == PS_EPROTO)
		psi_note_drop(++s->node.dropped, "message", why);
	if (rc == PS_EPROTO || rc == PS_OK)
		rc = release_held(s);
	return rc;
}

int ps_server_run(const ps_config *cfg)
{
	server s;
	int status = 1, rc;

	memset(&s, 0, sizeof(s));
	s.cfg = cfg;
	rc = ps_node_join(&s.node, cfg, PS_ROLE_SERVER, NULL, 0);
	if (rc != PS_OK)
		goto out;
	rc = setup_shard(&s);
	if (rc != PS_OK) {
		PS_ERROR("cannot set up the shard: %s", ps_strerror(rc));
		goto out;
	}
	if (cfg->checkpoint.dir[0]) {
		rc = ps_snapshot_prepare(&s);
		if (rc != PS_OK)
			goto out;
	}
	if (s.node.welcome.start_iteration > 0) {
		rc = ps_snapshot_load(&s);
		if (rc != PS_OK)
			goto out;
	}
	rc = ps_node_connect_role(&s.node, PS_ROLE_WORKER);
	if (rc != PS_OK)
		goto out;
	/* resumed: the checkpoint's values go out as INIT's would */
	for (uint32_t k = 0; k < s.nparts && rc == PS_OK &&
			     s.node.welcome.start_iteration > 0;
	     k++)
		rc = broadcast_params(&s, &s.parts[k]);
	if (rc != PS_OK)
		goto out;
	for (;;) {
		ps_msg *msg = NULL;
		ps_wire_header h;

		if (ps_signal_pending()) {
			PS_WARN("interrupted by signal %d", ps_signal_pending());
			status = ps_signal_exit_status(ps_signal_pending());
			goto out;
		}
		ps_snapshot_poll(&s);
		rc = ps_node_recv(&s.node, -1, &msg, &h);
		if (rc == PS_EAGAIN)
			continue;
		if (rc != PS_OK) {
			if (rc != PS_EABORTED)
				PS_ERROR("receive failed: %s", ps_strerror(rc));
			goto out;
		}
		rc = handle(&s, &msg, &h);
		ps_msg_free(&msg);
		if (rc == PS_ECLOSED) {
			status = 0;
			break;
		}
		if (rc != PS_OK)
			goto out;
	}
	{
		uint64_t lo = UINT64_MAX, hi = 0;
		for (uint32_t k = 0; k < s.nparts; k++) {
			if (s.parts[k].version < lo)
				lo = s.parts[k].version;
			if (s.parts[k].version > hi)
				hi = s.parts[k].version;
		}
		/* with every worker's pushes applied once: iterations (sync)
		 * or workers x iterations (async), across restarts too */
		PS_INFO("partitions at versions %llu..%llu",
			(unsigned long long)(s.nparts ? lo : 0),
			(unsigned long long)hi);
	}
	PS_INFO("copy-on-write of values (a send or a checkpoint held "
		"them): %.3f s in all", (double)s.cow_ns / 1e9);
	PS_INFO("shut down: %llu pushes, %llu updates, %.2f MiB in, "
		"%.2f MiB out, %llu dropped; gate: %llu sends, %.0f ns each",
		(unsigned long long)s.pushes, (unsigned long long)s.updates,
		(double)s.bytes_in / 1048576.0,
		(double)s.bytes_out / 1048576.0,
		(unsigned long long)s.node.dropped,
		(unsigned long long)s.meter.released,
		ps_gate_meter_per_transfer(&s.meter));
out:
	ps_node_close(&s.node, status == 0 ? 2000 : 200);
	free_shard(&s);
	return status;
}
