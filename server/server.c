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
#include "runtime/clock.h"
#include "runtime/node.h"
#include "runtime/signals.h"
#include "runtime/trace.h"
#include "proto/server.h"
#include "scheduling/order.h"
#ifdef PS_WITH_CUDA
#include "server/gpu.h"
#endif
#include "server/optimizer.h"
#include "server/server.h"
#include "server/state.h"
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

/* A parameter send from ready to released: the values as they were
 * when it became ready (proto/server.h's hold). */
typedef struct held_send {
	pbuf *values;
	uint64_t ready_us;
} held_send;

static void *hold_values(void *ud, uint32_t k, uint32_t worker)
{
	server *s = ud;
	held_send *h = malloc(sizeof(*h));

	(void)worker;
	if (!h)
		return NULL; /* sent as the values are then (see send_msgs) */
	atomic_fetch_add(&s->parts[k].values->refs, 1);
	*h = (held_send){.values = s->parts[k].values,
			 .ready_us = ps_trace_now_us()};
	return h;
}

static void drop_values(void *ud, void *kept)
{
	held_send *h = kept;

	(void)ud;
	if (!h)
		return;
	pbuf_unref(NULL, h->values);
	free(h);
}

static int setup_shard(server *s)
{
	const ps_placement *pl = s->node.welcome.placement;
	uint32_t *numbers = NULL;
	uint64_t bytes = 0;
	int rc;

	s->workers = s->node.welcome.num_workers;
	ps_wire_welcome_sizes(&s->node.welcome, &s->in_force);
	rc = ps_order_partition_numbers(pl, s->node.welcome.priority,
					s->cfg->scheduling.params.gate ==
						PS_GATE_COUNTER,
					&numbers);
	if (rc != PS_OK)
		return rc;
	ps_sproto_config sc = ps_sproto_config_of(s->cfg, pl, s->node.rank,
						  s->workers, numbers);
	sc.hold = hold_values;
	sc.drop = drop_values;
	sc.clock_ns = ps_now_ns;
	sc.ud = s;
	rc = ps_sproto_create(&sc, &s->shard);
	free(numbers);
	if (rc != PS_OK)
		return rc;
	s->nparts = ps_sproto_nparts(s->shard);
	s->parts = calloc(s->nparts ? s->nparts : 1, sizeof(*s->parts));
	if (!s->parts)
		return PS_ENOMEM;
	/* the WELCOME's placement says how much: checked sums, so that no
	 * count from the network wraps an allocation's size around */
	for (uint32_t k = 0; k < s->nparts; k++) {
		uint64_t n = ps_sproto_part_at(s->shard, k)->desc->numel;
		if (n > SIZE_MAX / sizeof(double) - s->arena_numel) {
			PS_ERROR("the placement gives this server more than "
				 "%zu elements: more than it can address",
				 SIZE_MAX / sizeof(double));
			return PS_EINVAL;
		}
		s->arena_numel += n;
	}
	s->values_arena = ps_alloc_big(s->arena_numel * sizeof(float));
	s->momentum_arena = ps_alloc_big(s->arena_numel * sizeof(float));
	s->acc_arena = ps_alloc_big(s->arena_numel * sizeof(double));
	if (ps_server_has_second(s)) {
		s->second_arena = ps_alloc_big(s->arena_numel * sizeof(float));
		if (!s->second_arena)
			return PS_ENOMEM;
	}
	if (!s->values_arena || !s->momentum_arena || !s->acc_arena)
		return PS_ENOMEM;
	for (uint32_t k = 0; k < s->nparts; k++) {
		const ps_sproto_part *sp = ps_sproto_part_at(s->shard, k);
		shard_part *p = &s->parts[k];
		size_t n = sp->desc->numel;

		p->desc = sp->desc;
		p->index = sp->index;
		p->values = pbuf_new(n, s->values_arena + bytes / sizeof(float));
		p->momentum = s->momentum_arena + bytes / sizeof(float);
		if (s->second_arena)
			p->second = s->second_arena + bytes / sizeof(float);
		p->acc = s->acc_arena + bytes / sizeof(float);
		if (!p->values)
			return PS_ENOMEM;
		bytes += n * sizeof(float);
	}
	PS_INFO("holding %u of %u partitions, %.2f MiB", s->nparts,
		pl->num_parts, (double)bytes / (1024.0 * 1024.0));
	if (bytes == 0)
		return PS_OK;
	rc = ps_transport_reg(s->node.transport, s->values_arena, bytes,
			      PS_MEM_HOST, &s->values_mr);
	if (rc != PS_OK)
		PS_ERROR("cannot register the shard's %.2f MiB of values with "
			 "the transport: %s",
			 (double)bytes / (1024.0 * 1024.0), ps_strerror(rc));
	return rc;
}

static void free_shard(server *s)
{
	ps_snapshot_free(s); /* joins a writer reading the arenas */
#ifdef PS_WITH_CUDA
	ps_gpu_free(s);
#endif
	ps_sproto_destroy(&s->shard); /* drops sends never released */
	for (uint32_t k = 0; k < s->nparts; k++) {
		shard_part *p = &s->parts[k];
		if (p->values)
			pbuf_unref(NULL, p->values);
		for (uint32_t i = 0; i < p->nheld; i++)
			ps_msg_free(&p->held[i].msg);
		free(p->held);
		free(p->pull_waits);
	}
	/* the transport is closed: no send holds arena memory any more */
	ps_free_big(s->values_arena, s->arena_numel * sizeof(float));
	ps_free_big(s->momentum_arena, s->arena_numel * sizeof(float));
	ps_free_big(s->second_arena, s->arena_numel * sizeof(float));
	ps_free_big(s->acc_arena, s->arena_numel * sizeof(double));
	free(s->parts);
	free(s->scratch);
}

static void trace_send(const ps_sproto_msg *m, uint64_t ready_us, size_t len)
{
	uint64_t sent = ps_trace_now_us();
	ps_trace_args a = {.iteration = (int64_t)m->iteration,
			   .tensor = m->key,
			   .partition = m->partition,
			   .bytes = (int64_t)len,
			   .ready_us = ready_us,
			   .sent_us = sent};
	char what[40];

	snprintf(what, sizeof(what), "params to worker %u", m->worker);
	ps_trace_span(PS_LANE_SEND, what, ready_us, sent - ready_us, &a);
}

/* Sends what the machine wants sent: acknowledgements, and parameters as
 * the gate releases them. */
static int send_msgs(server *s)
{
	ps_sproto_msg m;

	while (ps_sproto_next_msg(s->shard, &m)) {
		uint32_t to = ps_node_worker_id(&s->node, m.worker);
		ps_wire_header h = {.key = m.key,
				    .partition = m.partition,
				    .iteration = m.iteration,
				    .priority = m.priority,
				    .piece = m.piece};
		held_send *hs = m.held;
		pbuf *values;
		size_t len;
		int rc;

		if (m.kind == PS_SHARD_MSG_PUSH_ACK) {
			h.type = PS_MSG_PUSH_ACK;
			rc = ps_node_send(&s->node, to, &h, NULL, 0, NULL, NULL);
			if (rc != PS_OK)
				PS_WARN("cannot acknowledge a push to node %u: %s",
					to, ps_strerror(rc));
			continue;
		}
		h.type = PS_MSG_PARAMS;
		/* without a hold (out of memory), the values as they are */
		values = hs ? hs->values : s->parts[m.k].values;
		if (!hs)
			atomic_fetch_add(&values->refs, 1);
		len = m.bytes; /* the piece: the whole partition, or a part */
		rc = ps_node_send(&s->node, to, &h, values->data + m.offset,
				  len, pbuf_unref, values);
		if (rc != PS_OK) {
			/* Training cannot go on without this worker: the
			 * scheduler was told (runtime/node.h) and ended the
			 * job. */
			PS_ERROR("cannot send parameters to worker %u: %s",
				 m.worker, ps_strerror(rc));
			pbuf_unref(NULL, values);
			free(hs);
			return rc;
		}
		if (ps_trace_enabled())
			trace_send(&m, hs ? hs->ready_us : ps_trace_now_us(),
				   len);
		s->bytes_out += len;
		free(hs); /* the transport holds the values now */
	}
	return PS_OK;
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

/* The push an op carries arrived (traced, counted). */
static void push_in(server *s, const ps_sproto_op *op)
{
	const shard_part *p = &s->parts[op->k];
	const ps_msg *msg = op->ctx;

	if (!msg)
		return; /* an update of pieces summed before: no push */
	if (ps_trace_enabled()) {
		ps_trace_args a = {.iteration = (int64_t)op->iteration,
				   .tensor = p->desc->tensor,
				   .partition = p->index,
				   .bytes = (int64_t)msg->payload_len};
		char what[32];
		snprintf(what, sizeof(what), "push from worker %u",
			 op->worker);
		ps_trace_instant(PS_LANE_RECEIVE, what, ps_trace_now_us(), &a);
	}
	s->bytes_in += msg->payload_len;
}

int ps_server_has_second(const server *s)
{
	return s->cfg->server.optimizer == PS_OPTIMIZER_ADAM ||
	       s->cfg->server.optimizer == PS_OPTIMIZER_ADAMW;
}

/* The push being run joins its partition's round (pieces: every piece
 * joins; the lowest rank wins all the same, since every worker pushes
 * every piece): the round's learning
 * rate is the lowest-ranked worker's (the same whatever order the pushes
 * arrive in). */
static void round_lr_add(server *s, shard_part *p, int first)
{
	if (first || s->push_rank < p->lr_rank) {
		p->lr_rank = s->push_rank;
		p->has_lr = s->push_has_lr;
		p->lr = s->push_lr;
	}
}

/* The Adam/AdamW step an update of p makes now. */
void ps_server_adam(const server *s, const shard_part *p, ps_adam *a)
{
	const ps_config *cfg = s->cfg;
	const ps_sproto_part *sp = ps_sproto_part_at(s->shard,
						   (uint32_t)(p - s->parts));

	*a = (ps_adam){.lr = ps_server_round_lr(s, p),
		       .beta1 = cfg->train.beta1,
		       .beta2 = cfg->train.beta2,
		       .eps = cfg->train.eps,
		       .weight_decay = cfg->train.weight_decay,
		       .decoupled = cfg->server.optimizer == PS_OPTIMIZER_ADAMW,
		       .step = sp->version + 1};
}

/* The learning rate of the round an update completes. */
double ps_server_round_lr(const server *s, const shard_part *p)
{
	return p->has_lr ? p->lr : s->cfg->train.lr;
}

/* Sums a push's gradient into its partition (the op's message). */
static int aggregate(server *s, const ps_sproto_op *op)
{
	shard_part *p = &s->parts[op->k];
	const float *g;

	round_lr_add(s, p, op->first);
#ifdef PS_WITH_CUDA
	if (s->gpu) {
		int rc = ps_gpu_aggregate(s, op);
		if (rc == PS_OK)
			push_in(s, op);
		return rc;
	}
#endif
	g = payload_floats(s, op->ctx);
	if (!g)
		return PS_ENOMEM;
	/* the push's elements: the partition's, or a piece's */
	double *acc = p->acc + op->offset;
	for (size_t off = 0; off < op->numel; off += SLICE) {
		size_t n = op->numel - off < SLICE ? op->numel - off : SLICE;
		if (op->first)
			ps_accum_set(acc + off, g + off, n);
		else
			ps_accum_add(acc + off, g + off, n);
		ps_node_tick(&s->node);
	}
	push_in(s, op);
	return PS_OK;
}

/* Zeros in place of a last gradient where every gradient of the round is
 * in the sum already (pushes in pieces): the optimizer's one pass then
 * adds nothing. Never written; not const, so that it stays in .bss (16 MiB
 * of zeros would otherwise be in the binary). */
static float no_gradient[SLICE];

/* The optimizer over the round's gradients, the op's push (the last)
 * summed in on the way (ps_sgd_apply_last). */
static int apply_update(server *s, const ps_sproto_op *op)
{
	shard_part *p = &s->parts[op->k];
	uint64_t start = ps_trace_now_us();
	const float *g;
	int rc;

	round_lr_add(s, p, op->first);
#ifdef PS_WITH_CUDA
	if (s->gpu) {
		/* the device writes the new values into the host buffer:
		 * the writable one */
		rc = make_writable(s, p);
		if (rc != PS_OK) {
			PS_ERROR("out of memory updating partition %u",
				 p->index);
			return rc;
		}
		rc = ps_gpu_update(s, op);
		if (rc != PS_OK)
			return rc;
		goto done;
	}
#endif
	g = op->all_summed ? no_gradient : payload_floats(s, op->ctx);
	rc = g ? make_writable(s, p) : PS_ENOMEM;
	if (rc != PS_OK) {
		PS_ERROR("out of memory updating partition %u", p->index);
		return rc;
	}
	const double lr = ps_server_round_lr(s, p);
	ps_adam_scalars adam_k;
	if (ps_server_has_second(s)) { /* adam, adamw */
		ps_adam adam;
		ps_server_adam(s, p, &adam);
		ps_adam_scalars_of(&adam, &adam_k);
	}
	/* in slices, with heartbeats between: a whole 400 MB tensor takes
	 * long enough to look dead */
	for (size_t off = 0; off < p->desc->numel; off += SLICE) {
		size_t n = p->desc->numel - off < SLICE ? p->desc->numel - off
							: SLICE;
		const float *gi = op->all_summed ? g : g + off;
		switch (s->cfg->server.optimizer) {
		case PS_OPTIMIZER_NONE:
			ps_avg_last(p->values->data + off, p->acc + off,
				    gi, n, op->first, op->count);
			break;
		case PS_OPTIMIZER_ADAM:
		case PS_OPTIMIZER_ADAMW:
			ps_adam_apply_last(p->values->data + off,
					   p->momentum + off, p->second + off,
					   p->acc + off, gi, n, op->first,
					   op->count, &adam_k);
			break;
		default:
			ps_sgd_apply_last(p->values->data + off,
					  p->momentum + off, p->acc + off,
					  gi, n, op->first, op->count, lr,
					  s->cfg->train.momentum);
		}
		ps_node_tick(&s->node);
	}
#ifdef PS_WITH_CUDA
done:
#endif
	push_in(s, op);
	if (ps_trace_enabled()) {
		ps_trace_args a = {.iteration = (int64_t)ps_sproto_part_at(
					   s->shard, op->k)->version + 1,
				   .tensor = p->desc->tensor,
				   .partition = p->index,
				   .bytes = (int64_t)(p->desc->numel *
						      sizeof(float))};
		ps_trace_span(PS_LANE_UPDATE, "update", start,
			      ps_trace_now_us() - start, &a);
	}
	return PS_OK;
}

/* Runs every op the machine starts, each at once (one thread), and sends
 * what they produce. The messages the ops name are alive until it
 * returns. */
static int run_ops(server *s)
{
	ps_sproto_op op;
	int rc = send_msgs(s);

	while (rc == PS_OK && ps_sproto_next_op(s->shard, &op)) {
		shard_part *p = &s->parts[op.k];
		/* an update's push is acknowledged as the update starts */
		rc = send_msgs(s);
		if (rc != PS_OK)
			break;
		if (op.kind == PS_SHARD_OP_INIT) {
			const ps_msg *msg = op.ctx;
			memcpy(p->values->data, msg->payload, msg->payload_len);
#ifdef PS_WITH_CUDA
			if (s->gpu)
				rc = ps_gpu_upload(s, p, 0);
#endif
		} else if (op.kind == PS_SHARD_OP_AGGREGATE) {
			rc = aggregate(s, &op);
		} else {
			rc = apply_update(s, &op);
		}
		if (rc == PS_OK)
			rc = ps_sproto_op_done(s->shard);
		if (rc == PS_OK && op.kind == PS_SHARD_OP_UPDATE)
			rc = ps_snapshot_on_update(s, p);
		if (rc == PS_OK)
			rc = send_msgs(s);
	}
	return rc;
}

/* The worker rank of a node, or PS_SHARD_NOT_WORKER. */
static uint32_t worker_rank(const server *s, uint32_t node)
{
	const ps_node_info *n = &s->node.welcome.nodes[node];

	return n->role == PS_ROLE_WORKER ? n->rank : PS_SHARD_NOT_WORKER;
}

/* A checked push, summed (and applied) now. */
static int push_now(server *s, const ps_msg *msg, const ps_wire_header *h,
		    int acked, char *why, size_t whylen)
{
	int rc;

	s->push_rank = worker_rank(s, h->sender);
	s->push_has_lr = h->has_lr;
	s->push_lr = h->lr;
	rc = ps_sproto_on_push(s->shard, s->push_rank,
				  h->partition, h->key, h->iteration,
				  h->priority, h->piece, msg->payload_len,
				  (void *)msg, acked, why, whylen);

	return rc == PS_OK ? run_ops(s) : rc;
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
	if (++s->nheld > s->held_max)
		s->held_max = s->nheld;
	if (ps_sproto_ack(s->shard, worker_rank(s, h->sender), h->partition,
			 h->iteration, h->priority, h->piece) != PS_OK)
		return PS_ENOMEM;
	return send_msgs(s);
}

/* How many of this sender's pushes wait in p (its later ones wait too). */
static uint32_t holds_from(const shard_part *p, uint32_t sender)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < p->nheld; i++)
		n += p->held[i].h.sender == sender;
	return n;
}

/* PULLs of p that waited for their workers' held pushes, answered once
 * those are applied. */
static int answer_waiting_pulls(server *s, shard_part *p)
{
	char why[256];
	int rc = PS_OK;

	for (uint32_t w = 0; p->pull_waits && w < s->workers && rc == PS_OK;
	     w++) {
		if (!p->pull_waits[w] ||
		    holds_from(p, ps_node_worker_id(&s->node, w)))
			continue;
		p->pull_waits[w] = 0;
		if (!s->pull_wait_answered) {
			s->pull_wait_answered = 1;
			PS_INFO("checkpoint %llu: the PULLs that waited for it "
				"are answered",
				(unsigned long long)s->pull_wait_for);
		}
		rc = ps_sproto_on_pull(s->shard, w, p->index, p->desc->tensor,
				       why, sizeof(why));
		if (rc == PS_EPROTO) { /* checked when it waited */
			PS_ERROR("a PULL that waited: %s", why);
			rc = PS_OK;
		}
	}
	return rc == PS_OK ? send_msgs(s) : rc;
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
			    !ps_snapshot_holds(s, p, e->h.iteration)) {
				char why[256];
				rc = push_now(s, e->msg, &e->h, 1, why,
					      sizeof(why));
				if (rc == PS_EPROTO) /* checked when held */
					PS_ERROR("a held push: %s", why);
			} else if (rc == PS_OK) {
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
		if (rc == PS_OK)
			rc = answer_waiting_pulls(s, p);
	}
	return rc;
}

static int handle_push(server *s, ps_msg **msg_p, const ps_wire_header *h,
		       char *why, size_t whylen)
{
	const ps_msg *msg = *msg_p;
	uint32_t k;
	shard_part *p;
	int rc;

	if (s->cfg->train.mode == PS_MODE_SYNC)
		return push_now(s, msg, h, 0, why, whylen);
	rc = ps_sproto_check_push(s->shard, worker_rank(s, h->sender),
				 h->partition, h->key, h->iteration, h->piece,
				 msg->payload_len, &k, why, whylen);
	if (rc != PS_OK)
		return rc;
	p = &s->parts[k];
	rc = ps_snapshot_on_push(s, p, h->iteration);
	if (rc != PS_OK)
		return rc;
	if (!ps_snapshot_holds(s, p, h->iteration) && !holds_from(p, h->sender))
		return push_now(s, msg, h, 0, why, whylen);
	if (holds_from(p, h->sender) >= PS_HELD_PER_WORKER) {
		snprintf(why, whylen, "PUSH of partition %u iteration %llu: %u "
			 "of this worker's pushes there wait for checkpoint "
			 "%llu already (a worker pulls a partition before it "
			 "pushes it again)", h->partition,
			 (unsigned long long)h->iteration, PS_HELD_PER_WORKER,
			 (unsigned long long)s->snap.m.collect);
		return PS_EPROTO;
	}
	return hold_push(s, p, msg_p, h); /* keeps its order */
}

/* A PULL. Async: where the worker's pushes to that partition are held for
 * a checkpoint (snapshot.h), it waits until they are applied
 * (answer_waiting_pulls): a worker pulls before each iteration, so one
 * that runs ahead of a checkpoint waiting for a slower worker stops there,
 * one iteration past it, and what is held stays within
 * PS_HELD_PER_WORKER pushes per worker and partition. */
static int handle_pull(server *s, const ps_wire_header *h, char *why,
		       size_t whylen)
{
	uint32_t from = worker_rank(s, h->sender);
	int32_t k = ps_sproto_local(s->shard, h->partition);
	shard_part *p = k >= 0 ? &s->parts[k] : NULL;
	int rc;

	if (p && from < s->workers && holds_from(p, h->sender)) {
		if (!p->pull_waits)
			p->pull_waits = calloc(s->workers, 1);
		if (!p->pull_waits)
			return PS_ENOMEM;
		if (!p->pull_waits[from])
			s->pulls_waited++;
		if (s->pull_wait_for != s->snap.m.collect) {
			s->pull_wait_for = s->snap.m.collect;
			s->pull_wait_answered = 0;
			PS_INFO("checkpoint %llu: worker %u's PULL of partition "
				"%u waits until its pushes held for the "
				"checkpoint are applied (a slower worker has "
				"not reached it yet)",
				(unsigned long long)s->snap.m.collect, from,
				h->partition);
		}
		p->pull_waits[from] = 1;
		return PS_OK;
	}
	rc = ps_sproto_on_pull(s->shard, from, h->partition, h->key, why,
			       whylen);
	return rc == PS_OK ? send_msgs(s) : rc;
}

/* CREDIT from the scheduler: a new window for the parameters of an
 * iteration on (the boundary the scheduler chose, docs/tune.md). */
static int handle_credit(server *s, const ps_msg *msg,
			 const ps_wire_header *h, char *why, size_t whylen)
{
	uint64_t credit;

	if (ps_wire_credit_decode(h, msg->payload, msg->payload_len,
				  s->cfg->scheduling.params.credit_size, &credit,
				  why,
				  whylen) != PS_OK)
		return PS_EPROTO;
	ps_sproto_on_credit(s->shard, credit, h->iteration);
	return PS_OK;
}

/* Handles one message: PS_OK, PS_ECLOSED on SHUTDOWN, PS_EPROTO (dropped,
 * reason logged), or a fatal error. */
static int handle(server *s, ps_msg **msg_p, const ps_wire_header *h)
{
	const ps_msg *msg = *msg_p;
	uint32_t from = worker_rank(s, h->sender);
	char why[256] = "";
	int rc;

	switch (h->type) {
	case PS_MSG_INIT:
		rc = ps_sproto_on_init(s->shard, from, h->partition, h->key,
				      msg->payload_len, (void *)msg, why,
				      sizeof(why));
		if (rc == PS_OK)
			rc = run_ops(s);
		break;
	case PS_MSG_PUSH:
		rc = handle_push(s, msg_p, h, why, sizeof(why));
		break;
	case PS_MSG_PULL:
		rc = handle_pull(s, h, why, sizeof(why));
		break;
	case PS_MSG_PARAMS_ACK:
		if (ps_trace_enabled()) {
			ps_trace_args a = {.iteration = (int64_t)h->iteration,
					   .tensor = -1,
					   .partition = h->partition,
					   .bytes = -1};
			char what[40];
			snprintf(what, sizeof(what),
				 "params ack from worker %u", from);
			ps_trace_instant(PS_LANE_RECEIVE, what,
					 ps_trace_now_us(), &a);
		}
		rc = ps_sproto_on_params_ack(s->shard, from, h->partition,
					    h->piece, why, sizeof(why));
		if (rc == PS_OK)
			rc = send_msgs(s);
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
	if (rc == PS_EPROTO) {
		char line[300];
		snprintf(line, sizeof(line), "%s (from node %u)", why,
			 h->sender);
		psi_note_drop(++s->node.dropped, "message", line);
	}
	if (rc == PS_EPROTO || rc == PS_OK)
		rc = release_held(s);
	return rc;
}

/* The loop: every message handled as it comes, until the scheduler's
 * SHUTDOWN (PS_ECLOSED), a signal (PS_EINTR) or an error that ends the
 * job (an ABORT: PS_EABORTED). */
static int serve(server *s)
{
	for (;;) {
		ps_msg *msg = NULL;
		ps_wire_header h;
		int rc;

		if (ps_signal_pending())
			return PS_EINTR;
		ps_snapshot_poll(s);
		rc = ps_node_recv(&s->node, -1, &msg, &h);
		if (rc == PS_EAGAIN)
			continue;
		if (rc != PS_OK) {
			if (rc != PS_EABORTED)
				PS_ERROR("receive failed: %s", ps_strerror(rc));
			return rc;
		}
		rc = handle(s, &msg, &h);
		ps_msg_free(&msg);
		if (rc != PS_OK)
			return rc;
	}
}

/* What the shard did, at a clean end. */
static void report(server *s)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	ps_sproto_stats st;

	for (uint32_t k = 0; k < s->nparts; k++) {
		uint64_t v = ps_sproto_part_at(s->shard, k)->version;
		if (v < lo)
			lo = v;
		if (v > hi)
			hi = v;
	}
	/* with every worker's pushes applied once: iterations (sync)
	 * or workers x iterations (async), across restarts too */
	if (s->nparts == 0)
		PS_INFO("partitions at versions: it holds none");
	else
		PS_INFO("partitions at versions %llu..%llu",
			(unsigned long long)lo, (unsigned long long)hi);
	PS_INFO("copy-on-write of values (a send or a checkpoint held "
		"them): %.3f s in all", (double)s->cow_ns / 1e9);
	ps_sproto_get_stats(s->shard, &st);
	PS_INFO("shut down: %llu pushes, %llu updates, %.2f MiB in, "
		"%.2f MiB out, %llu dropped; gate: %llu sends, %.0f ns "
		"each",
		(unsigned long long)st.pushes,
		(unsigned long long)st.updates,
		(double)s->bytes_in / 1048576.0,
		(double)s->bytes_out / 1048576.0,
		(unsigned long long)s->node.dropped,
		(unsigned long long)st.sends,
		st.sends ? (double)st.gate_ns / (double)st.sends : 0.0);
}

/*
 * server.device = cuda (only a build with PS_WITH_CUDA accepts it): the
 * device must be there before the server joins the job; the server then
 * aggregates and applies updates on it (server/gpu.h).
 */
static int check_device(const ps_config *cfg)
{
	if (cfg->server.device != PS_DEVICE_CUDA)
		return PS_OK;
#ifdef PS_WITH_CUDA
	return ps_gpu_open(cfg);
#else
	PS_ERROR("server.device = cuda: this build has no CUDA support "
	         "(configure with -DPS_WITH_CUDA=ON)");
	return PS_ENOTSUP;
#endif
}

int ps_server_run(const ps_config *cfg)
{
	server s;
	int status = 1, rc;

	if (check_device(cfg) != PS_OK)
		return 1; /* before anything is set up */
	memset(&s, 0, sizeof(s));
	s.in_force = *cfg;
	s.cfg = &s.in_force;
	rc = ps_node_join(&s.node, cfg, PS_ROLE_SERVER, NULL, 0);
	if (rc != PS_OK)
		goto out;
	rc = setup_shard(&s);
	if (rc != PS_OK) {
		PS_ERROR("cannot set up the shard: %s", ps_strerror(rc));
		goto out;
	}
#ifdef PS_WITH_CUDA
	if (cfg->server.device == PS_DEVICE_CUDA) {
		rc = ps_gpu_setup(&s);
		if (rc != PS_OK) {
			PS_ERROR("cannot set up the shard on the GPU: %s",
				 ps_strerror(rc));
			goto out;
		}
	}
#endif
	rc = ps_snapshot_init(&s);
	if (rc != PS_OK)
		goto out;
	if (s.node.welcome.start_iteration > 0) {
		rc = ps_snapshot_load(&s);
#ifdef PS_WITH_CUDA
		/* the checkpoint's values and momentum to the device */
		for (uint32_t k = 0; s.gpu && rc == PS_OK && k < s.nparts; k++)
			rc = ps_gpu_upload(&s, &s.parts[k], 1);
#endif
		if (rc != PS_OK)
			goto out;
	}
	rc = ps_node_connect_role(&s.node, PS_ROLE_WORKER);
	/* resumed: the checkpoint's values go out as INIT's would */
	if (rc == PS_OK && s.node.welcome.start_iteration > 0) {
		rc = ps_sproto_start(s.shard);
		if (rc == PS_OK)
			rc = send_msgs(&s);
	}
	if (rc == PS_OK)
		rc = serve(&s);
	if (rc == PS_ECLOSED) { /* SHUTDOWN, here or while connecting */
		status = 0;
		report(&s);
	} else if (rc == PS_EINTR && ps_signal_pending()) {
		PS_WARN("interrupted by signal %d", ps_signal_pending());
		status = ps_signal_exit_status(ps_signal_pending());
	}
out:
	if (s.shard && s.cfg->train.mode == PS_MODE_ASYNC &&
	    s.cfg->checkpoint.dir[0])
		PS_INFO("async checkpoints: at most %llu pushes held at once, "
			"%llu PULLs waited for them",
			(unsigned long long)s.held_max,
			(unsigned long long)s.pulls_waited);
	ps_node_stop(&s.node, status == 0 ? 2000 : 200);
	ps_transport_dereg(s.node.transport, &s.values_mr);
	ps_node_close(&s.node, 0);
	free_shard(&s);
	return status;
}
