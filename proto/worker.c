/*
 * proto/worker.c - a worker's side of the protocol (worker.h).
 *
 * DESIGN. A push waiting in the gate is a record (its handle) naming the
 * partition, the tensor, the iteration and the driver's ctx; released
 * pushes and PARAMS_ACKs become messages in one FIFO. A fused partition's
 * members are counted per stage: a stage is the iteration it gathers and
 * how many members are in; a tensor remembers the stage it joined (by a
 * sequence number), so a second push of it into the same stage is
 * refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ordo/error.h"
#include "proto/ring.h"
#include "proto/worker.h"
#include "scheduling/gate_meter.h"

typedef struct pending {
	uint32_t part, tensor, piece;
	uint64_t iteration;
	int fused;
	void *ctx;
} pending;

typedef struct part_state {
	uint64_t version; /* newest received */
	int have;
	uint32_t npush, nparams; /* pieces a push / parameters come in */
	uint32_t next_ack;       /* the push piece acknowledged next */
	uint32_t got;            /* pieces in of the parameters arriving */
	uint64_t got_version;    /* ... and their version */
	/* fused: the stage being gathered */
	uint64_t stage_it, stage_seq;
	uint32_t staged; /* members in; 0: no stage */
	/* pushes handed over and not acknowledged; the oldest's iteration */
	uint32_t unacked;
	uint64_t unacked_it;
} part_state;

struct ps_wproto {
	ps_wproto_config cfg;
	uint32_t *numbers;
	part_state *parts;
	uint64_t *joined; /* per tensor: the stage seq it joined last */
	/* per tensor, for ps_wproto_tensor_version: how many of its
	 * partitions are missing, the oldest version among them when none
	 * is, and how many are at it (counted again when that reaches 0:
	 * O(1) per update, amortized, instead of O(partitions) per query) */
	uint32_t *tmiss, *tcnt;
	uint64_t *tmin;
	uint64_t seq;
	ps_gate *gate;
	ps_gate_meter meter;
	uint64_t credit_next, credit_from;
	int credit_pending;
	int done_wanted;
	PS_RING(ps_wproto_msg) msgs;
	ps_wproto_stats st;
};

static int push_msg(ps_wproto *w, const ps_wproto_msg *m)
{
	PS_RING_PUSH(w->msgs, *m);
	return PS_OK;
}

/* Piece i of partition part in pieces of piece_bytes: its bytes, and its
 * first element in *offset_p. */
static uint64_t piece_bytes(const ps_wproto *w, uint32_t part,
			    uint64_t piece_bytes, uint32_t i,
			    uint64_t *offset_p)
{
	uint64_t n;

	ps_piece_span(&w->cfg.pl->parts[part], piece_bytes, i, offset_p, &n);
	return n * PS_ELEM_SIZE;
}

ps_wproto_config ps_wproto_config_of(const ps_config *cfg,
				     const ps_placement *pl,
				     const uint32_t *numbers)
{
	return (ps_wproto_config){
		.pl = pl,
		.gate = (ps_gate_kind)cfg->scheduling.push.gate,
		.credit = cfg->scheduling.push.credit_size,
		.params_credit = cfg->scheduling.params.credit_size,
		.sync = cfg->train.mode == PS_MODE_SYNC,
		.push_piece = ps_config_pieces_size(cfg, 0),
		.params_piece = ps_config_pieces_size(cfg, 1),
		.numbers = numbers,
	};
}

int ps_wproto_create(const ps_wproto_config *cfg, ps_wproto **w_p)
{
	const ps_placement *pl = cfg->pl;
	ps_wproto *w;
	int rc;

	*w_p = NULL;
	if (!pl || !cfg->numbers)
		return PS_EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return PS_ENOMEM;
	w->cfg = *cfg;
	w->meter.clock_ns = cfg->clock_ns;
	w->numbers = malloc((pl->num_parts ? pl->num_parts : 1) *
			    sizeof(*w->numbers));
	w->parts = calloc(pl->num_parts ? pl->num_parts : 1,
			  sizeof(*w->parts));
	w->joined = calloc(pl->num_tensors ? pl->num_tensors : 1,
			   sizeof(*w->joined));
	w->tmiss = calloc(pl->num_tensors ? pl->num_tensors : 1,
			  sizeof(*w->tmiss));
	w->tcnt = calloc(pl->num_tensors ? pl->num_tensors : 1,
			 sizeof(*w->tcnt));
	w->tmin = calloc(pl->num_tensors ? pl->num_tensors : 1,
			 sizeof(*w->tmin));
	if (!w->numbers || !w->parts || !w->joined || !w->tmiss || !w->tcnt ||
	    !w->tmin) {
		ps_wproto_destroy(&w);
		return PS_ENOMEM;
	}
	for (uint32_t t = 0; t < pl->num_tensors; t++)
		w->tmiss[t] = pl->part_count[t];
	memcpy(w->numbers, cfg->numbers, pl->num_parts * sizeof(uint32_t));
	for (uint32_t i = 0; i < pl->num_parts; i++) {
		uint64_t np = ps_part_pieces(&pl->parts[i], cfg->push_piece),
			 nq = ps_part_pieces(&pl->parts[i], cfg->params_piece);
		if (np > PS_MAX_PIECES || nq > PS_MAX_PIECES ||
		    (np > 1 && (!cfg->sync || cfg->gate == PS_GATE_COUNTER))) {
			/* ps_config_validate says why to the user */
			ps_wproto_destroy(&w);
			return PS_EINVAL;
		}
		w->parts[i].npush = (uint32_t)np;
		w->parts[i].nparams = (uint32_t)nq;
	}
	rc = ps_gate_create(cfg->gate, cfg->credit, pl->num_servers, &w->gate);
	if (rc != PS_OK) {
		ps_wproto_destroy(&w);
		return rc;
	}
	*w_p = w;
	return PS_OK;
}

static void free_pending(uint64_t handle, void *ud)
{
	(void)ud;
	free((pending *)(uintptr_t)handle);
}

void ps_wproto_destroy(ps_wproto **w_p)
{
	ps_wproto *w = *w_p;

	if (!w)
		return;
	if (w->gate)
		ps_gate_foreach_pending(w->gate, free_pending, NULL);
	ps_gate_destroy(&w->gate);
	free(w->numbers);
	free(w->parts);
	free(w->joined);
	free(w->tmiss);
	free(w->tcnt);
	free(w->tmin);
	free(w->msgs.v);
	free(w);
	*w_p = NULL;
}

typedef struct visit {
	void (*fn)(void *ctx, int fused, void *ud);
	void *ud;
} visit;

static void visit_pending(uint64_t handle, void *ud)
{
	const pending *e = (const pending *)(uintptr_t)handle;
	const visit *v = ud;

	v->fn(e->ctx, e->fused, v->ud);
}

void ps_wproto_foreach_waiting(const ps_wproto *w,
			       void (*fn)(void *ctx, int fused, void *ud),
			       void *ud)
{
	visit v = {.fn = fn, .ud = ud};

	ps_gate_foreach_pending(w->gate, visit_pending, &v);
}

/* One piece of a partition's push becomes ready in the gate. */
static int ready_piece(ps_wproto *w, uint32_t part, uint32_t tensor,
		       uint64_t it, int fused, void *ctx, uint32_t piece)
{
	const ps_partition *p = &w->cfg.pl->parts[part];
	pending *e = malloc(sizeof(*e));
	uint64_t off;
	int rc;

	if (!e)
		return PS_ENOMEM;
	*e = (pending){.part = part,
		       .tensor = tensor,
		       .piece = piece,
		       .iteration = it,
		       .fused = fused,
		       .ctx = ctx};
	rc = ps_gate_ready_metered(
		w->gate, &w->meter,
		&(ps_xfer){.handle = (uintptr_t)e,
			   .receiver = p->server,
			   .iteration = it,
			   .priority = w->numbers[part],
			   .bytes = piece_bytes(w, part, w->cfg.push_piece,
						piece, &off)});
	if (rc != PS_OK)
		free(e);
	return rc;
}

/* One partition's push becomes ready in the gate, piece by piece. */
static int ready(ps_wproto *w, uint32_t part, uint32_t tensor, uint64_t it,
		 int fused, void *ctx)
{
	int rc = PS_OK;

	if (w->credit_pending && it >= w->credit_from) {
		/* the iteration boundary the scheduler chose: every push of
		 * this iteration and later goes under the new window */
		ps_gate_set_credit(w->gate, w->credit_next);
		w->credit_pending = 0;
	}
	for (uint32_t i = 0; i < w->parts[part].npush && rc == PS_OK; i++)
		rc = ready_piece(w, part, tensor, it, fused, ctx, i);
	return rc;
}

int ps_wproto_push(ps_wproto *w, uint32_t t, uint64_t it, void *ctx,
		   ps_wproto_staging *st, char *why, size_t whylen)
{
	const ps_placement *pl = w->cfg.pl;
	uint32_t first, n;
	part_state *p;
	int rc = PS_OK;

	memset(st, 0, sizeof(*st));
	if (t >= pl->num_tensors) {
		snprintf(why, whylen, "no tensor %u", t);
		return PS_EINVAL;
	}
	first = pl->first_part[t];
	n = pl->part_count[t];
	if (pl->parts[first].ntensors <= 1) {
		for (uint32_t k = 0; k < n && rc == PS_OK; k++)
			rc = ready(w, first + k, t, it, 0, ctx);
		return rc;
	}
	p = &w->parts[first];
	if (p->staged && (p->stage_it != it || w->joined[t] == p->stage_seq)) {
		snprintf(why, whylen, "tensor %u pushed for iteration %llu "
			 "while the fused partition it shares with other "
			 "tensors waits for iteration %llu: each tensor of a "
			 "fused partition must be pushed once per iteration",
			 t, (unsigned long long)it,
			 (unsigned long long)p->stage_it);
		return PS_ESTATE;
	}
	*st = (ps_wproto_staging){.fused = 1,
				  .part = first,
				  .offset = pl->tensor_base[t],
				  .new_stage = p->staged == 0};
	if (p->staged == 0) {
		p->stage_it = it;
		p->stage_seq = ++w->seq;
	}
	w->joined[t] = p->stage_seq;
	if (++p->staged == pl->parts[first].ntensors) {
		p->staged = 0;
		st->complete = 1;
	}
	return PS_OK;
}

int ps_wproto_push_part(ps_wproto *w, uint32_t t, uint32_t part,
			uint64_t it, void *ctx, char *why, size_t whylen)
{
	const ps_placement *pl = w->cfg.pl;

	if (t >= pl->num_tensors || part < pl->first_part[t] ||
	    part - pl->first_part[t] >= pl->part_count[t]) {
		snprintf(why, whylen, "partition %u is not one of tensor %u's",
			 part, t);
		return PS_EINVAL;
	}
	if (pl->parts[part].ntensors > 1) {
		snprintf(why, whylen, "tensor %u shares fused partition %u: "
			 "it is pushed whole", t, part);
		return PS_EINVAL;
	}
	return ready(w, part, t, it, 0, ctx);
}

int ps_wproto_stage_ready(ps_wproto *w, uint32_t part, uint64_t it,
			  void *ctx)
{
	const ps_partition *p = &w->cfg.pl->parts[part];

	return ready(w, part, p->tensor + p->ntensors - 1, it, 1, ctx);
}

/* DONE goes once nothing waits in the gate or is unacknowledged. */
static int maybe_done(ps_wproto *w)
{
	if (!w->done_wanted || !ps_wproto_idle(w))
		return PS_OK;
	w->done_wanted = 0;
	return push_msg(w, &(ps_wproto_msg){.kind = PS_WPROTO_MSG_DONE});
}

int ps_wproto_flush(ps_wproto *w)
{
	for (;;) {
		ps_xfer x;
		int got = ps_gate_next_metered(w->gate, &w->meter, &x), rc;
		if (got != 1)
			return maybe_done(w);
		pending *e = (pending *)(uintptr_t)x.handle;
		ps_wproto_msg m = {.kind = PS_WPROTO_MSG_PUSH,
				   .server = x.receiver,
				   .part = e->part,
				   .key = w->cfg.pl->parts[e->part].tensor,
				   .tensor = e->tensor,
				   .iteration = e->iteration,
				   .priority = (int32_t)x.priority,
				   .piece = e->piece,
				   .bytes = x.bytes,
				   .fused = e->fused,
				   .ctx = e->ctx};
		piece_bytes(w, e->part, w->cfg.push_piece, e->piece,
			    &m.offset);
		free(e);
		w->st.pushes++;
		if (w->parts[m.part].unacked++ == 0)
			w->parts[m.part].unacked_it = m.iteration;
		rc = push_msg(w, &m);
		if (rc != PS_OK)
			return rc;
	}
}

/* The push piece of partition `part` acknowledged next leaves the gate's
 * window. */
static int ack_piece(ps_wproto *w, uint32_t part)
{
	part_state *s = &w->parts[part];
	uint64_t off;
	int rc = ps_gate_acked_metered(
		w->gate, &w->meter,
		piece_bytes(w, part, w->cfg.push_piece, s->next_ack, &off));

	if (rc != PS_OK)
		return rc;
	s->unacked--;
	s->next_ack = (s->next_ack + 1) % s->npush;
	return PS_OK;
}

int ps_wproto_on_push_ack(ps_wproto *w, uint32_t from, uint32_t part,
			  uint32_t piece, char *why, size_t whylen)
{
	const ps_placement *pl = w->cfg.pl;

	if (part >= pl->num_parts || from != pl->parts[part].server) {
		snprintf(why, whylen, "PUSH_ACK for partition %u from a node "
			 "that does not hold it", part);
		return PS_EPROTO;
	}
	if (w->parts[part].unacked == 0) {
		snprintf(why, whylen, "PUSH_ACK for partition %u, which has "
			 "no push in flight", part);
		return PS_EPROTO;
	}
	if (piece != w->parts[part].next_ack) {
		snprintf(why, whylen, "PUSH_ACK for piece %u of partition %u, "
			 "where piece %u is acknowledged next", piece, part,
			 w->parts[part].next_ack);
		return PS_EPROTO;
	}
	if (ack_piece(w, part) != PS_OK) {
		snprintf(why, whylen, "PUSH_ACK for nothing in flight "
			 "(partition %u)", part);
		return PS_EPROTO;
	}
	/* (asynchronous mode may have several in flight: the oldest's
	 * iteration is only used in synchronous mode, where there is one) */
	return ps_wproto_flush(w);
}

/* Tensor t's oldest version, counted from its partitions. */
static void tensor_count(ps_wproto *w, uint32_t t)
{
	const ps_placement *pl = w->cfg.pl;
	uint64_t v = UINT64_MAX;
	uint32_t n = 0, miss = 0;

	for (uint32_t k = 0; k < pl->part_count[t]; k++) {
		const part_state *s = &w->parts[pl->first_part[t] + k];
		if (!s->have) {
			miss++;
		} else if (s->version < v) {
			v = s->version;
			n = 1;
		} else if (s->version == v) {
			n++;
		}
	}
	w->tmiss[t] = miss;
	w->tmin[t] = v;
	w->tcnt[t] = n;
}

/* Partition part now holds `version` (before: had, old). */
static void set_version(ps_wproto *w, uint32_t part, uint64_t version)
{
	const ps_partition *p = &w->cfg.pl->parts[part];
	part_state *s = &w->parts[part];
	int had = s->have;
	uint64_t old = s->version;

	s->version = version;
	s->have = 1;
	if (had && version == old)
		return;
	for (uint32_t t = p->tensor; t < p->tensor + p->ntensors; t++) {
		if (!had) {
			if (--w->tmiss[t] == 0)
				tensor_count(w, t);
		} else if (w->tmiss[t] == 0 &&
			   (version < old ||
			    (old == w->tmin[t] && --w->tcnt[t] == 0))) {
			tensor_count(w, t);
		}
	}
}

int ps_wproto_on_params(ps_wproto *w, uint32_t from, uint32_t part,
			uint32_t key, uint64_t version, uint32_t piece,
			size_t payload_len, int *acked_p, int *complete_p,
			char *why, size_t whylen)
{
	const ps_placement *pl = w->cfg.pl;
	const ps_partition *p;
	part_state *s;
	uint64_t off;
	int rc;

	if (acked_p)
		*acked_p = 0;
	if (complete_p)
		*complete_p = 0;
	if (part >= pl->num_parts) {
		snprintf(why, whylen, "PARAMS for partition %u of %u", part,
			 pl->num_parts);
		return PS_EPROTO;
	}
	p = &pl->parts[part];
	s = &w->parts[part];
	if (from != p->server || key != p->tensor || piece >= s->nparams ||
	    payload_len != piece_bytes(w, part, w->cfg.params_piece, piece,
				       &off)) {
		snprintf(why, whylen, "PARAMS for partition %u does not match "
			 "the placement", part);
		return PS_EPROTO;
	}
	if (piece != s->got) {
		snprintf(why, whylen, "PARAMS piece %u of partition %u, where "
			 "piece %u comes next", piece, part, s->got);
		return PS_EPROTO;
	}
	if (piece == 0 && s->have && version < s->version) {
		snprintf(why, whylen, "stale PARAMS version %llu for "
			 "partition %u (have %llu)",
			 (unsigned long long)version, part,
			 (unsigned long long)s->version);
		return PS_EPROTO;
	}
	if (piece > 0 && version != s->got_version) {
		snprintf(why, whylen, "PARAMS piece %u of partition %u has "
			 "version %llu, its first piece %llu", piece, part,
			 (unsigned long long)version,
			 (unsigned long long)s->got_version);
		return PS_EPROTO;
	}
	if (w->cfg.params_credit) {
		/* with a credit window the server needs to know the bytes
		 * arrived */
		rc = push_msg(w, &(ps_wproto_msg){
					 .kind = PS_WPROTO_MSG_PARAMS_ACK,
					 .server = from,
					 .part = part,
					 .key = key,
					 .iteration = version,
					 .piece = piece});
		if (rc != PS_OK)
			return rc;
	}
	s->got_version = version;
	if (++s->got < s->nparams)
		return PS_OK;
	s->got = 0;
	set_version(w, part, version);
	if (complete_p)
		*complete_p = 1;
	/* Synchronous: version `version` exists, so the push of an earlier
	 * iteration still unacknowledged was applied - this is its
	 * acknowledgement, every piece of it (a server without a credit
	 * window sends no PUSH_ACK; with one, its PUSH_ACKs came first on
	 * this connection) */
	if (!w->cfg.sync || s->unacked == 0 || s->unacked_it >= version)
		return PS_OK;
	while (s->unacked > 0)
		if (ack_piece(w, part) != PS_OK) {
			snprintf(why, whylen, "PARAMS of partition %u "
				 "acknowledge a push the gate does not hold",
				 part);
			return PS_EPROTO;
		}
	if (acked_p)
		*acked_p = 1;
	return ps_wproto_flush(w);
}

void ps_wproto_on_credit(ps_wproto *w, uint64_t credit, uint64_t from)
{
	w->credit_next = credit;
	w->credit_from = from;
	w->credit_pending = 1;
}

int ps_wproto_done(ps_wproto *w)
{
	w->done_wanted = 1;
	return maybe_done(w);
}

void ps_wproto_assume(ps_wproto *w, uint32_t part, uint64_t version)
{
	set_version(w, part, version);
	w->parts[part].got = 0;
}

int ps_wproto_next_msg(ps_wproto *w, ps_wproto_msg *m_p)
{
	if (w->msgs.n == 0)
		return 0;
	*m_p = PS_RING_AT(w->msgs, 0);
	PS_RING_POP(w->msgs);
	return 1;
}

int ps_wproto_part_version(const ps_wproto *w, uint32_t part,
			   uint64_t *version_p)
{
	if (part >= w->cfg.pl->num_parts || !w->parts[part].have)
		return 0;
	*version_p = w->parts[part].version;
	return 1;
}

int ps_wproto_tensor_version(const ps_wproto *w, uint32_t t,
			     uint64_t *version_p)
{
	if (t >= w->cfg.pl->num_tensors || w->tmiss[t] > 0)
		return 0;
	*version_p = w->tmin[t];
	return 1;
}

int ps_wproto_idle(const ps_wproto *w)
{
	return ps_gate_in_flight(w->gate) == 0 && ps_gate_pending(w->gate) == 0;
}

void ps_wproto_get_stats(const ps_wproto *w, ps_wproto_stats *st)
{
	*st = w->st;
	st->gate_ns = w->meter.ns;
}

const ps_gate *ps_wproto_gate(const ps_wproto *w)
{
	return w->gate;
}
