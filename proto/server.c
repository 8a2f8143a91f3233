/*
 * proto/server.c - a server's shard as a protocol state machine (shard.h).
 *
 * DESIGN. Two FIFOs: ops (the work a message starts, run one at a time)
 * and messages (what the driver sends). A push is checked and counted when
 * it arrives (so a second push of the same worker is refused at once) and
 * summed when its op runs; the push that completes a version queues the
 * update right behind its sum, ahead of pushes that arrive meanwhile - the
 * real server updates in the same turn of its loop as that sum. A
 * parameter send waits in the gate with a record of what it is (its
 * handle); released sends become PARAMS messages.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mix64.h"
#include "ordo/error.h"
#include "proto/ring.h"
#include "proto/server.h"
#include "scheduling/gate_meter.h"

typedef struct part_state {
	ps_sproto_part pub;
	int held;          /* barrier: updated, its sends wait */
	uint32_t npush, nparams; /* pieces a push / a send comes in */
	uint32_t *got;     /* sync: per worker rank, pieces accepted this
			    * version (npush: the worker's push is in) */
	uint32_t accepted; /* sync: workers whose push is in this version */
	uint32_t *piece_in; /* sync, npush > 1: per piece, workers whose
			     * piece is in this version */
	uint64_t *unacked; /* per worker rank: PARAMS sent, not acknowledged
			    * (a PARAMS_ACK must match one) */
	uint32_t *next_ack; /* nparams > 1: per worker rank, the piece whose
			     * PARAMS_ACK comes next */
	int made;           /* version 0 exists: INIT's op ran (or resumed);
			     * a PULL before would send values not there */
	uint32_t *waiting;  /* per worker rank: pieces of sends to it ready
			     * in the gate, not released (a PULL adds none
			     * while any wait: the gate's memory stays
			     * bounded by the placement) */
} part_state;

/* A parameter send in the gate. */
typedef struct pending {
	uint32_t k, worker, piece;
	uint64_t version;
	void *held;
} pending;

struct ps_sproto {
	ps_sproto_config cfg;
	uint32_t *numbers;
	uint32_t nparts;
	part_state *parts;
	int32_t *local; /* global partition -> local, or -1 */
	ps_gate *gate;
	ps_gate_meter meter;
	/* a live credit change: the window for version credit_from on */
	uint64_t credit_next, credit_from;
	int credit_pending;
	PS_RING(ps_sproto_op) ops;
	int running;
	PS_RING(ps_sproto_msg) msgs;
	ps_sproto_stats st;
	uint64_t params_acks; /* PARAMS_ACKs accepted (fault injection) */
	/* barrier: sends of version barrier_v wait until all nparts local
	 * partitions have it (barrier_in of them do); 0: not started */
	uint64_t barrier_v;
	uint32_t barrier_in;
	uint32_t *held, nheld; /* local partitions whose sends wait */
	uint32_t *perm;        /* workers x nparts: the release orders */
};

/* ---- queues ------------------------------------------------------------ */

static int push_op(ps_sproto *sh, const ps_sproto_op *op)
{
	PS_RING_PUSH(sh->ops, *op);
	return PS_OK;
}

static int push_msg(ps_sproto *sh, const ps_sproto_msg *m)
{
	PS_RING_PUSH(sh->msgs, *m);
	return PS_OK;
}

/* ---- the gate ---------------------------------------------------------- */

/* Piece i of a direction cut in pieces of piece_bytes: elements, bytes. */
static uint64_t piece_span(const part_state *p, uint64_t piece_bytes,
			   uint32_t i, uint64_t *offset_p)
{
	uint64_t n;

	ps_piece_span(p->pub.desc, piece_bytes, i, offset_p, &n);
	return n;
}

/* Every parameter send the gate releases now becomes a message. */
static int drain(ps_sproto *sh)
{
	for (;;) {
		ps_xfer x;
		int got = ps_gate_next_metered(sh->gate, &sh->meter, &x);
		if (got != 1)
			return PS_OK;
		pending *e = (pending *)(uintptr_t)x.handle;
		const part_state *p = &sh->parts[e->k];
		ps_sproto_msg m = {
			.kind = PS_SHARD_MSG_PARAMS,
			.worker = e->worker,
			.k = e->k,
			.partition = p->pub.index,
			.key = p->pub.desc->tensor,
			.iteration = e->version,
			.priority = (int32_t)x.priority,
			.piece = e->piece,
			.bytes = x.bytes,
			.held = e->held,
		};
		piece_span(p, sh->cfg.params_piece, e->piece, &m.offset);
		free(e);
		sh->st.sends++;
		sh->parts[m.k].unacked[m.worker]++;
		sh->parts[m.k].waiting[m.worker]--;
		int rc = push_msg(sh, &m);
		if (rc != PS_OK) {
			if (sh->cfg.drop)
				sh->cfg.drop(sh->cfg.ud, m.held);
			return rc;
		}
	}
}

/* Whether pushes get a PUSH_ACK: always in asynchronous mode; in
 * synchronous mode only when the workers have a credit window for their
 * pushes (their credit returns when the bytes are here). Without one the
 * partition's next PARAMS is the acknowledgement (proto/worker.h): one
 * message fewer per push. A live CREDIT never opens or closes a window
 * (the scheduler changes only windows that exist in both directions). */
static int acks_sent(const ps_sproto *sh)
{
	return sh->cfg.async || sh->cfg.push_credit != 0;
}

/* Piece `piece` of partition k's current version becomes ready to go to
 * `worker` (in the gate, not yet released). */
static int ready_piece(ps_sproto *sh, uint32_t k, uint32_t worker,
		       uint32_t piece)
{
	part_state *p = &sh->parts[k];
	pending *e = malloc(sizeof(*e));
	uint64_t off;
	int rc;

	if (!e)
		return PS_ENOMEM;
	*e = (pending){.k = k,
		       .worker = worker,
		       .piece = piece,
		       .version = p->pub.version,
		       .held = sh->cfg.hold ? sh->cfg.hold(sh->cfg.ud, k, worker)
					    : NULL};
	rc = ps_gate_ready_metered(
		sh->gate, &sh->meter,
		&(ps_xfer){.handle = (uintptr_t)e,
			   .receiver = worker,
			   .iteration = p->pub.version,
			   .priority = sh->numbers[p->pub.index],
			   .bytes = piece_span(p, sh->cfg.params_piece, piece,
					       &off) *
				    PS_ELEM_SIZE});
	if (rc != PS_OK) {
		if (sh->cfg.drop)
			sh->cfg.drop(sh->cfg.ud, e->held);
		free(e);
	} else {
		p->waiting[worker]++;
	}
	return rc;
}

/* Partition k's current version becomes ready to go to `worker`, piece
 * by piece in order. */
static int ready_params(ps_sproto *sh, uint32_t k, uint32_t worker)
{
	part_state *p = &sh->parts[k];
	int rc = PS_OK;

	if (sh->credit_pending && p->pub.version >= sh->credit_from) {
		ps_gate_set_credit(sh->gate, sh->credit_next);
		sh->credit_pending = 0;
	}
	for (uint32_t i = 0; i < p->nparams && rc == PS_OK; i++)
		rc = ready_piece(sh, k, worker, i);
	return rc;
}

/* Ready, then released as far as the gate allows. */
static int send_params(ps_sproto *sh, uint32_t k, uint32_t worker)
{
	int rc = ready_params(sh, k, worker);

	return rc == PS_OK ? drain(sh) : rc;
}

/* Ready, then drain, worker by worker (rank order). */
static int broadcast(ps_sproto *sh, uint32_t k)
{
	int rc = PS_OK;

	for (uint32_t w = 0; w < sh->cfg.workers && rc == PS_OK; w++)
		rc = send_params(sh, k, w);
	return rc;
}

/* ---- the barrier ------------------------------------------------------- */

/* Local partitions at version barrier_v or later. */
static void barrier_count(ps_sproto *sh)
{
	sh->barrier_in = 0;
	for (uint32_t k = 0; k < sh->nparts; k++)
		sh->barrier_in += sh->parts[k].pub.version >= sh->barrier_v;
}

/* Every local partition has version barrier_v: the held sends become
 * ready, in a seeded random order per worker (Fisher-Yates), interleaved
 * across workers as their connections would carry them; all of them
 * before the gate releases any, so that an ordering gate chooses among
 * the whole iteration. */
static int barrier_release(ps_sproto *sh)
{
	uint32_t n = sh->nheld, W = sh->cfg.workers;
	int rc = PS_OK;

	for (uint32_t w = 0; w < W; w++) {
		uint32_t *perm = &sh->perm[(size_t)w * sh->nparts];
		uint64_t seed = sh->cfg.server;

		seed = ps_splitmix64(&seed) ^ sh->barrier_v;
		seed = ps_splitmix64(&seed) ^ w;

		memcpy(perm, sh->held, n * sizeof(*perm));
		for (uint32_t i = n; i > 1; i--) {
			uint32_t j = (uint32_t)(ps_splitmix64(&seed) % i);
			uint32_t t = perm[i - 1];
			perm[i - 1] = perm[j];
			perm[j] = t;
		}
	}
	for (uint32_t i = 0; i < n; i++)
		sh->parts[sh->held[i]].held = 0;
	sh->nheld = 0;
	for (uint32_t i = 0; i < n && rc == PS_OK; i++)
		for (uint32_t w = 0; w < W && rc == PS_OK; w++)
			rc = ready_params(sh,
					  sh->perm[(size_t)w * sh->nparts + i],
					  w);
	sh->barrier_v++;
	barrier_count(sh);
	return rc == PS_OK ? drain(sh) : rc;
}

/* Partition k was updated from version `was`: with the barrier its sends
 * wait for the others'; without, they are ready now. */
static int updated(ps_sproto *sh, uint32_t k, uint64_t was)
{
	part_state *p = &sh->parts[k];

	if (!sh->cfg.barrier)
		return broadcast(sh, k);
	if (sh->barrier_v == 0) { /* the first update of this run */
		sh->barrier_v = was + 1;
		barrier_count(sh);
	} else if (was < sh->barrier_v && p->pub.version >= sh->barrier_v) {
		sh->barrier_in++;
	}
	/* held already: updated twice before the others once, which
	 * synchronous training cannot do (the next version needs every
	 * worker's push, which needs this one); it goes at the release,
	 * with its newest version */
	if (!p->held) {
		p->held = 1;
		sh->held[sh->nheld++] = k;
	}
	return sh->barrier_in == sh->nparts ? barrier_release(sh) : PS_OK;
}

/* ---- setup ------------------------------------------------------------- */

ps_sproto_config ps_sproto_config_of(const ps_config *cfg,
				     const ps_placement *pl, uint32_t server,
				     uint32_t workers, const uint32_t *numbers)
{
	return (ps_sproto_config){
		.pl = pl,
		.server = server,
		.workers = workers,
		.async = cfg->train.mode == PS_MODE_ASYNC,
		.gate = (ps_gate_kind)cfg->scheduling.params.gate,
		.credit = cfg->scheduling.params.credit_size,
		.push_credit = cfg->scheduling.push.credit_size,
		.push_piece = ps_config_pieces_size(cfg, 0),
		.params_piece = ps_config_pieces_size(cfg, 1),
		.barrier = cfg->scheduling.params_barrier,
		.iterations = (uint64_t)cfg->train.iterations,
		.numbers = numbers,
	};
}

int ps_sproto_create(const ps_sproto_config *cfg, ps_sproto **sh_p)
{
	const ps_placement *pl = cfg->pl;
	ps_sproto *sh;
	uint32_t k = 0;
	int rc;

	*sh_p = NULL;
	if (!pl || !cfg->numbers || cfg->workers == 0)
		return PS_EINVAL;
	/* what pieces cannot do (ps_config_validate says so to the user) */
	if ((cfg->push_piece && cfg->async) ||
	    (cfg->params_piece && cfg->gate == PS_GATE_COUNTER))
		return PS_EINVAL;
	sh = calloc(1, sizeof(*sh));
	if (!sh)
		return PS_ENOMEM;
	sh->cfg = *cfg;
	sh->meter.clock_ns = cfg->clock_ns;
	sh->numbers = malloc((pl->num_parts ? pl->num_parts : 1) *
			     sizeof(*sh->numbers));
	sh->local = malloc((pl->num_parts ? pl->num_parts : 1) *
			   sizeof(*sh->local));
	if (!sh->numbers || !sh->local)
		goto nomem;
	memcpy(sh->numbers, cfg->numbers, pl->num_parts * sizeof(uint32_t));
	for (uint32_t i = 0; i < pl->num_parts; i++) {
		sh->local[i] = -1;
		if (pl->parts[i].server == cfg->server)
			sh->nparts++;
	}
	sh->parts = calloc(sh->nparts ? sh->nparts : 1, sizeof(*sh->parts));
	if (!sh->parts)
		goto nomem;
	for (uint32_t i = 0; i < pl->num_parts; i++) {
		part_state *p;
		if (pl->parts[i].server != cfg->server)
			continue;
		p = &sh->parts[k];
		sh->local[i] = (int32_t)k++;
		p->pub.desc = &pl->parts[i];
		p->pub.index = i;
		uint64_t np = ps_part_pieces(p->pub.desc, cfg->push_piece),
			 nq = ps_part_pieces(p->pub.desc, cfg->params_piece);
		if (np > PS_MAX_PIECES || nq > PS_MAX_PIECES) {
			ps_sproto_destroy(&sh);
			return PS_EINVAL;
		}
		p->npush = (uint32_t)np;
		p->nparams = (uint32_t)nq;
		p->got = calloc(cfg->workers, sizeof(*p->got));
		p->unacked = calloc(cfg->workers, sizeof(uint64_t));
		p->waiting = calloc(cfg->workers, sizeof(*p->waiting));
		if (!p->got || !p->unacked || !p->waiting)
			goto nomem;
		if (p->npush > 1 &&
		    !(p->piece_in = calloc(p->npush, sizeof(*p->piece_in))))
			goto nomem;
		if (p->nparams > 1 &&
		    !(p->next_ack = calloc(cfg->workers,
					   sizeof(*p->next_ack))))
			goto nomem;
		if (cfg->async) {
			p->pub.next_it = calloc(cfg->workers, sizeof(uint64_t));
			if (!p->pub.next_it)
				goto nomem;
		}
	}
	if (cfg->barrier && !cfg->async) {
		sh->held = calloc(sh->nparts ? sh->nparts : 1,
				  sizeof(*sh->held));
		sh->perm = calloc((size_t)cfg->workers *
					  (sh->nparts ? sh->nparts : 1),
				  sizeof(*sh->perm));
		if (!sh->held || !sh->perm)
			goto nomem;
	} else {
		sh->cfg.barrier = 0;
	}
	rc = ps_gate_create(cfg->gate, cfg->credit, cfg->workers, &sh->gate);
	if (rc != PS_OK) {
		ps_sproto_destroy(&sh);
		return rc;
	}
	*sh_p = sh;
	return PS_OK;
nomem:
	ps_sproto_destroy(&sh);
	return PS_ENOMEM;
}

static void drop_pending(uint64_t handle, void *ud)
{
	ps_sproto *sh = ud;
	pending *e = (pending *)(uintptr_t)handle;

	if (sh->cfg.drop)
		sh->cfg.drop(sh->cfg.ud, e->held);
	free(e);
}

void ps_sproto_destroy(ps_sproto **sh_p)
{
	ps_sproto *sh = *sh_p;

	if (!sh)
		return;
	if (sh->gate) /* sends never released: the job ended or failed */
		ps_gate_foreach_pending(sh->gate, drop_pending, sh);
	ps_gate_destroy(&sh->gate);
	for (uint32_t i = 0; i < sh->msgs.n; i++) {
		ps_sproto_msg *m = &PS_RING_AT(sh->msgs, i);
		if (m->kind == PS_SHARD_MSG_PARAMS && sh->cfg.drop)
			sh->cfg.drop(sh->cfg.ud, m->held);
	}
	for (uint32_t k = 0; sh->parts && k < sh->nparts; k++) {
		free(sh->parts[k].got);
		free(sh->parts[k].piece_in);
		free(sh->parts[k].unacked);
		free(sh->parts[k].waiting);
		free(sh->parts[k].next_ack);
		free(sh->parts[k].pub.next_it);
	}
	free(sh->parts);
	free(sh->local);
	free(sh->numbers);
	free(sh->held);
	free(sh->perm);
	free(sh->ops.v);
	free(sh->msgs.v);
	free(sh);
	*sh_p = NULL;
}

uint32_t ps_sproto_nparts(const ps_sproto *sh)
{
	return sh->nparts;
}

const ps_sproto_part *ps_sproto_part_at(const ps_sproto *sh, uint32_t k)
{
	return k < sh->nparts ? &sh->parts[k].pub : NULL;
}

int32_t ps_sproto_local(const ps_sproto *sh, uint32_t part)
{
	return part < sh->cfg.pl->num_parts ? sh->local[part] : -1;
}

const ps_gate *ps_sproto_gate(const ps_sproto *sh)
{
	return sh->gate;
}

void ps_sproto_get_stats(const ps_sproto *sh, ps_sproto_stats *st)
{
	*st = sh->st;
	st->gate_ns = sh->meter.ns;
}

uint32_t ps_sproto_ops_waiting(const ps_sproto *sh)
{
	return sh->ops.n;
}

/* ---- checks ------------------------------------------------------------ */

static const char *type_name(int push)
{
	return push ? "PUSH" : "PULL";
}

/* The local partition a data message names, checked (with want_payload
 * a payload of the whole partition): -1 with a reason. */
static int32_t lookup(const ps_sproto *sh, uint32_t part, uint32_t key,
		      size_t payload_len, int want_payload, char *why,
		      size_t whylen)
{
	int32_t k = ps_sproto_local(sh, part);
	const ps_partition *d;

	if (k < 0) {
		snprintf(why, whylen, "partition %u is not held by this server",
			 part);
		return -1;
	}
	d = sh->parts[k].pub.desc;
	if (key != d->tensor) {
		snprintf(why, whylen, "partition %u belongs to tensor %u, not "
			 "%u", part, d->tensor, key);
		return -1;
	}
	if (want_payload && payload_len != d->numel * PS_ELEM_SIZE) {
		snprintf(why, whylen, "partition %u needs %llu bytes, got %zu",
			 part, (unsigned long long)(d->numel * PS_ELEM_SIZE),
			 payload_len);
		return -1;
	}
	return k;
}

/* A worker's PUSH or PULL of an initialised partition: -1 with a reason
 * otherwise (the payload of a PUSH is checked against its piece by the
 * caller). */
static int32_t worker_request(const ps_sproto *sh, int push, uint32_t from,
			      uint32_t part, uint32_t key, char *why,
			      size_t whylen)
{
	int32_t k;

	if (from == PS_SHARD_NOT_WORKER || from >= sh->cfg.workers) {
		snprintf(why, whylen, "%s from a node that is not a worker",
			 type_name(push));
		return -1;
	}
	k = lookup(sh, part, key, 0, 0, why, whylen);
	if (k >= 0 && (push ? !sh->parts[k].pub.initialized
			    : !sh->parts[k].made)) {
		snprintf(why, whylen, "%s for partition %u before INIT",
			 type_name(push), part);
		return -1;
	}
	return k;
}

int ps_sproto_check_push(const ps_sproto *sh, uint32_t from, uint32_t part,
			uint32_t key, uint64_t iteration, uint32_t piece,
			size_t payload_len, uint32_t *k_p, char *why,
			size_t whylen)
{
	int32_t k = worker_request(sh, 1, from, part, key, why, whylen);
	const part_state *p;
	uint64_t off, n;

	if (k < 0)
		return PS_EPROTO;
	p = &sh->parts[k];
	if (piece >= p->npush) {
		snprintf(why, whylen, "PUSH of piece %u of partition %u, which "
			 "is pushed in %u", piece, part, p->npush);
		return PS_EPROTO;
	}
	n = piece_span(p, sh->cfg.push_piece, piece, &off);
	if (payload_len != n * PS_ELEM_SIZE) {
		snprintf(why, whylen, "partition %u%s needs %llu bytes, got "
			 "%zu", part, p->npush > 1 ? " piece" : "",
			 (unsigned long long)(n * PS_ELEM_SIZE), payload_len);
		return PS_EPROTO;
	}
	if (sh->cfg.async && sh->cfg.iterations &&
	    iteration >= sh->cfg.iterations) {
		/* no worker of the job pushes it, and it would start a
		 * checkpoint no other worker reaches (in synchronous
		 * training the partition's version pins the iteration) */
		snprintf(why, whylen, "PUSH of iteration %llu for partition "
			 "%u, beyond the job's %llu iterations",
			 (unsigned long long)iteration, part,
			 (unsigned long long)sh->cfg.iterations);
		return PS_EPROTO;
	}
	if (!sh->cfg.async) {
		if (iteration != p->pub.version) {
			snprintf(why, whylen, "PUSH of iteration %llu for "
				 "partition %u, which is at version %llu",
				 (unsigned long long)iteration, part,
				 (unsigned long long)p->pub.version);
			return PS_EPROTO;
		}
		if (p->got[from] == p->npush) {
			snprintf(why, whylen, "second PUSH from worker %u for "
				 "partition %u iteration %llu", from, part,
				 (unsigned long long)iteration);
			return PS_EPROTO;
		}
		if (piece != p->got[from]) {
			snprintf(why, whylen, "PUSH of piece %u of partition "
				 "%u from worker %u, where piece %u comes "
				 "next", piece, part, from, p->got[from]);
			return PS_EPROTO;
		}
	}
	*k_p = (uint32_t)k;
	return PS_OK;
}

/* ---- events ------------------------------------------------------------ */

int ps_sproto_on_init(ps_sproto *sh, uint32_t from, uint32_t part,
		     uint32_t key, size_t payload_len, void *ctx, char *why,
		     size_t whylen)
{
	int32_t k;

	if (from != 0) {
		snprintf(why, whylen, "INIT from a node other than worker 0");
		return PS_EPROTO;
	}
	k = lookup(sh, part, key, payload_len, 1, why, whylen);
	if (k < 0)
		return PS_EPROTO;
	if (sh->parts[k].pub.initialized) {
		snprintf(why, whylen, "partition %u is already initialised",
			 part);
		return PS_EPROTO;
	}
	sh->parts[k].pub.initialized = 1;
	sh->parts[k].pub.version = 0;
	return push_op(sh, &(ps_sproto_op){
				   .kind = PS_SHARD_OP_INIT,
				   .k = (uint32_t)k,
				   .worker = from,
				   .numel = sh->parts[k].pub.desc->numel,
				   .ctx = ctx});
}

int ps_sproto_on_push(ps_sproto *sh, uint32_t from, uint32_t part,
		     uint32_t key, uint64_t iteration, int32_t priority,
		     uint32_t piece, size_t payload_len, void *ctx, int acked,
		     char *why, size_t whylen)
{
	uint32_t k;
	part_state *p;
	int rc;

	rc = ps_sproto_check_push(sh, from, part, key, iteration, piece,
				 payload_len, &k, why, whylen);
	if (rc != PS_OK)
		return rc;
	p = &sh->parts[k];
	ps_sproto_op op = {.kind = PS_SHARD_OP_AGGREGATE,
			  .k = k,
			  .worker = from,
			  .iteration = iteration,
			  .first = sh->cfg.async || p->accepted == 0,
			  .priority = priority,
			  .ack = !acked,
			  .piece = piece,
			  .ctx = ctx};
	op.numel = piece_span(p, sh->cfg.push_piece, piece, &op.offset);
	if (sh->cfg.async) {
		if (iteration + 1 > p->pub.next_it[from])
			p->pub.next_it[from] = iteration + 1;
		op.count = 1;
	} else {
		if (p->npush > 1)
			op.first = p->piece_in[piece]++ == 0;
		if (++p->got[from] == p->npush)
			p->accepted++;
		if (p->accepted < sh->cfg.workers)
			return push_op(sh, &op);
		op.count = sh->cfg.workers;
	}
	if (p->npush > 1) {
		/* the round's last piece: summed like the others, then the
		 * update over the whole sum */
		rc = push_op(sh, &op);
		if (rc != PS_OK)
			return rc;
		return push_op(sh, &(ps_sproto_op){
					   .kind = PS_SHARD_OP_UPDATE,
					   .k = k,
					   .worker = from,
					   .iteration = iteration,
					   .count = op.count,
					   .priority = priority,
					   .all_summed = 1,
					   .numel = p->pub.desc->numel});
	}
	/* the round's last push: the update sums it in */
	op.kind = PS_SHARD_OP_UPDATE;
	return push_op(sh, &op);
}

int ps_sproto_ack(ps_sproto *sh, uint32_t from, uint32_t part,
		 uint64_t iteration, int32_t priority, uint32_t piece)
{
	int32_t k = ps_sproto_local(sh, part);

	if (k < 0)
		return PS_EINVAL;
	if (!acks_sent(sh))
		return PS_OK;
	return push_msg(sh, &(ps_sproto_msg){
				    .kind = PS_SHARD_MSG_PUSH_ACK,
				    .worker = from,
				    .k = (uint32_t)k,
				    .partition = part,
				    .key = sh->parts[k].pub.desc->tensor,
				    .iteration = iteration,
				    .priority = priority,
				    .piece = piece});
}

int ps_sproto_on_pull(ps_sproto *sh, uint32_t from, uint32_t part,
		     uint32_t key, char *why, size_t whylen)
{
	int32_t k = worker_request(sh, 0, from, part, key, why, whylen);

	if (k < 0)
		return PS_EPROTO;
	if (sh->parts[k].waiting[from] &&
	    sh->cfg.fault != PS_SPROTO_FAULT_PULL_FLOOD) {
		/* its values are on their way already: a worker repeating
		 * PULLs faster than the window lets them go must not make
		 * the gate hold a send per PULL */
		snprintf(why, whylen, "PULL of partition %u while PARAMS of it "
			 "to that worker wait to be sent", part);
		return PS_EPROTO;
	}
	return send_params(sh, (uint32_t)k, from);
}

int ps_sproto_on_params_ack(ps_sproto *sh, uint32_t from, uint32_t part,
			   uint32_t piece, char *why, size_t whylen)
{
	int32_t k = ps_sproto_local(sh, part);
	part_state *p;
	uint64_t off;
	int rc;

	if (from == PS_SHARD_NOT_WORKER || from >= sh->cfg.workers || k < 0 ||
	    sh->parts[k].unacked[from] == 0) {
		snprintf(why, whylen, "PARAMS_ACK for partition %u, which is "
			 "not in flight to that worker", part);
		return PS_EPROTO;
	}
	p = &sh->parts[k];
	if (piece != (p->nparams > 1 ? p->next_ack[from] : 0)) {
		snprintf(why, whylen, "PARAMS_ACK for piece %u of partition "
			 "%u, where piece %u is acknowledged next", piece, part,
			 p->nparams > 1 ? p->next_ack[from] : 0);
		return PS_EPROTO;
	}
	if (sh->cfg.fault == PS_SPROTO_FAULT_CREDIT_LEAK &&
	    ++sh->params_acks % 3 == 0)
		rc = PS_OK; /* the deliberate leak: the credit never returns */
	else
		rc = ps_gate_acked_metered(
			sh->gate, &sh->meter,
			piece_span(p, sh->cfg.params_piece, piece, &off) *
				PS_ELEM_SIZE);
	if (rc != PS_OK) {
		snprintf(why, whylen, "PARAMS_ACK for partition %u, which is "
			 "not in flight", part);
		return PS_EPROTO;
	}
	p->unacked[from]--;
	if (p->nparams > 1)
		p->next_ack[from] = (piece + 1) % p->nparams;
	return drain(sh);
}

void ps_sproto_on_credit(ps_sproto *sh, uint64_t credit, uint64_t from)
{
	if (sh->cfg.fault == PS_SPROTO_FAULT_CREDIT_EARLY) {
		ps_gate_set_credit(sh->gate, credit);
		return;
	}
	sh->credit_next = credit;
	sh->credit_from = from;
	sh->credit_pending = 1;
}

void ps_sproto_resume(ps_sproto *sh, uint32_t k, uint64_t version,
		     uint64_t next_it)
{
	part_state *p = &sh->parts[k];

	p->pub.version = version;
	p->pub.initialized = 1;
	p->made = 1;
	for (uint32_t w = 0; p->pub.next_it && w < sh->cfg.workers; w++)
		p->pub.next_it[w] = next_it;
}

int ps_sproto_start(ps_sproto *sh)
{
	int rc = PS_OK;

	for (uint32_t k = 0; k < sh->nparts && rc == PS_OK; k++)
		if (sh->parts[k].pub.initialized)
			rc = broadcast(sh, k);
	return rc;
}

/* ---- ops --------------------------------------------------------------- */

/* The PUSH_ACK of the push op sums in. */
static int push_ack(ps_sproto *sh, const ps_sproto_op *op)
{
	const part_state *p = &sh->parts[op->k];

	if (!acks_sent(sh))
		return PS_OK;
	return push_msg(sh, &(ps_sproto_msg){.kind = PS_SHARD_MSG_PUSH_ACK,
					    .worker = op->worker,
					    .k = op->k,
					    .partition = p->pub.index,
					    .key = p->pub.desc->tensor,
					    .iteration = op->iteration,
					    .priority = op->priority,
					    .piece = op->piece});
}

int ps_sproto_next_op(ps_sproto *sh, ps_sproto_op *op_p)
{
	ps_sproto_op *op;

	if (sh->running || sh->ops.n == 0)
		return 0;
	op = &PS_RING_AT(sh->ops, 0);
	if (op->kind == PS_SHARD_OP_UPDATE && op->ack) {
		/* the push's bytes are here: its credit returns now */
		if (push_ack(sh, op) != PS_OK)
			return 0; /* out of memory: tried again next time */
		op->ack = 0;
	}
	*op_p = *op;
	sh->running = 1;
	return 1;
}

int ps_sproto_op_done(ps_sproto *sh)
{
	ps_sproto_op op;
	part_state *p;
	uint64_t was;

	if (!sh->running)
		return PS_EINVAL;
	op = PS_RING_AT(sh->ops, 0);
	PS_RING_POP(sh->ops);
	sh->running = 0;
	p = &sh->parts[op.k];
	switch (op.kind) {
	case PS_SHARD_OP_INIT:
		p->made = 1;
		return broadcast(sh, op.k);
	case PS_SHARD_OP_AGGREGATE:
		sh->st.pushes++;
		return op.ack ? push_ack(sh, &op) : PS_OK;
	case PS_SHARD_OP_UPDATE:
		was = p->pub.version;
		sh->st.pushes++;
		p->pub.version++;
		if (sh->cfg.fault == PS_SPROTO_FAULT_VERSION_SKIP && op.k == 0 &&
		    p->pub.version == 1)
			p->pub.version++; /* the deliberate off-by-one */
		sh->st.updates++;
		if (sh->cfg.async)
			return PS_OK;
		memset(p->got, 0, sh->cfg.workers * sizeof(*p->got));
		if (p->piece_in)
			memset(p->piece_in, 0,
			       p->npush * sizeof(*p->piece_in));
		p->accepted = 0;
		return updated(sh, op.k, was);
	}
	return PS_EINVAL;
}

int ps_sproto_next_msg(ps_sproto *sh, ps_sproto_msg *m_p)
{
	if (sh->msgs.n == 0)
		return 0;
	*m_p = PS_RING_AT(sh->msgs, 0);
	PS_RING_POP(sh->msgs);
	return 1;
}
