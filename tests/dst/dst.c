/*
 * tests/dst/dst.c - deterministic simulation testing of the protocol core.
 *
 * Each seed builds a small random job (workers, servers, tensors, partition
 * size, fusion, iterations, and per direction - the workers' pushes and the
 * servers' parameter sends - a gate kind, a credit window, gate numbers
 * from its own tensor priorities and, in about one seed of three, pieces
 * that direction sends partitions in; in about one seed of three the
 * servers' barrier) and runs it through the real
 * server machines (proto/server.h) and the real gates (scheduling/gate.h),
 * and worker machines (proto/worker.h), with the real aggregation and
 * optimizer (server/optimizer.h), under a
 * random but legal schedule: at every step one enabled action is picked -
 * deliver the first message of one (sender, receiver) channel (channels
 * are FIFO, as one TCP connection per peer pair; different channels are
 * reordered freely, some of them slow), start or finish a server's op,
 * or let a worker compute. The application on a worker is honest and
 * minimal: when its machine holds version i of every partition it pushes
 * iteration i's gradient of every tensor (random order) and waits for
 * version i + 1; after the last iteration it is done.
 *
 * After every step it checks:
 *  - every gate's bytes in flight equal what it released minus what was
 *    acknowledged (counted from the messages), and never exceed its
 *    direction's window (or the one transfer larger than it);
 *  - each gate's release order, by its own direction's kind (a worker's:
 *    the pushes'; a server's: the parameter sends'): fifo - the order
 *    transfers became ready; priority - no pending transfer had a smaller
 *    number (ties: earlier); counter - per receiver and iteration, numbers
 *    never go back; every message carries its direction's gate number;
 *  - acknowledgements per direction (synchronous mode): a server sends a
 *    PUSH_ACK iff the pushes have a window (otherwise the PARAMS
 *    acknowledge the push), a worker acknowledges every PARAMS iff the
 *    parameter sends have one, and never otherwise;
 *  - with the barrier, a server readies (hold()) no parameter send of
 *    version v while a partition it owns is below version v (sends become
 *    ready when the barrier lets them, not when their update is done: the
 *    checkers learn of a ready send only through hold());
 *  - every PARAMS a worker receives is the next version of its partition,
 *    with values exactly the closed form (integer gradients, lr 1,
 *    momentum 0, power-of-two worker counts: every value is exact);
 *  - no machine refuses a message of an honest peer; a worker's DONE goes
 *    only after its last push is acknowledged;
 * and at the end that every job finished (no action enabled earlier is a
 * deadlock) with every server partition at version K and exact values,
 * every DONE counted by the scheduler's membership (proto/membership.h).
 *
 * The scheduler's part: every node registers in a random order (with a
 * node registering twice and one worker too many, which change nothing),
 * the WELCOMEs go out, and on a simulated clock live nodes are heard every
 * 50 ms. In one seed of five a node is to die at a random step of the
 * first 2000 (about one seed in twelve runs that long): it takes no
 * action and its messages are lost; the job must then fail with the
 * scheduler naming that node (silent longer than 500 ms, or, in half of
 * those seeds, reported lost by a live node whose send to it failed),
 * never hang, and a healthy job must never be aborted.
 *
 * A malicious member: in one seed of four (every seed with --adversary;
 * its own generator, so the other seeds replay as before) an extra node
 * (with no role in the job) or one of the workers turned hostile (its
 * honest machine and application go on beside it) sends, at random steps
 * from before any WELCOME on (kept by proto/join.h, then handed over), up
 * to 63 messages built from what a member knows: PUSH_ACKs and
 * PARAMS_ACKs of transfers never sent or acknowledged already; PUSHes of
 * the partition's version, the far future (up to 2^64 - 1) or the past,
 * of wrong, huge (2^40) or right sizes, to partitions a server does not
 * hold or one past the last; PARAMS to workers of the next, this or a
 * later version, or 2^64 - 1, of huge sizes; INITs; bursts of PULLs
 * (which no synchronous worker sends); and replays of honest messages it
 * saw (a hostile worker: its own and those sent to it). The sender a
 * machine is given is the connection's, as an authenticated transport's:
 * a hostile worker's rank, or no worker and no server. The real machines'
 * treatment, and what is checked:
 *  - every such message is refused (the drivers drop and log a refused
 *    message and the job goes on: there is no path that ends the job
 *    naming the sender), but for what the member is entitled to: a
 *    hostile worker's own next push and worker 0's INIT carry values it
 *    is trusted with (docs/security.md) and are never sent; a hostile
 *    worker's PARAMS_ACK of a PARAMS released to it but not yet received
 *    is taken (the credit returns early, its honest acknowledgement is
 *    then refused; it only lets more to itself go sooner), and so is its
 *    PULL, answered with the version the server has. A machine that takes
 *    anything else fails the seed ("took ... which has no part in it");
 *  - the honest nodes stay exact: every check above holds (a PULL's
 *    answer to the hostile worker may repeat the version it holds, goes
 *    outside the counter gate's and the barrier's order, and is checked
 *    exact for its version: a send's values are taken when it becomes
 *    ready, as ps-server's reference to them);
 *  - a server holds at most, per local partition, two sends per piece and
 *    worker waiting in its gate (a version's and one PULL's) and W pieces
 *    of pushes, an update and an INIT as ops, whatever a member sends;
 *  - no deadlock, and no honest message is lost before a WELCOME.
 * Not modelled, as no machine can tell: a member naming another as the
 * sender (the transport checks it: docs/security.md). --fault
 * forged-sender shows what it would do: the harness's transport believes
 * the claimed sender, and the servers and workers take the member's PUSH,
 * INIT, PARAMS or acknowledgements as the named node's. Also left to the
 * transport: a member's flood of more than proto/join.h's bound of
 * messages to a node before its WELCOME makes that node drop honest ones
 * (counted; the job then waits on them), so the member here sends fewer.
 *
 * A live credit change: in one seed of three (its own generator, as the
 * malicious member's) the scheduler changes, at a step of the first 64,
 * each direction's window that has one to another, telling every node at
 * once the iteration it starts at (the one after the furthest worker's,
 * as scheduler/credit.c chooses it), as ps-tune's live change and the
 * scheduler's refinement do (proto/credit_refine.h). Checked: each gate
 * keeps its window until its first transfer of that iteration (a
 * worker's push) or version (a server's parameter send) is made ready
 * after the change came, and has the new one from then on; bytes in flight stay within
 * the window each release was made under (a smaller window lets no
 * release go until enough is acknowledged); the job stays exact, with no
 * deadlock. --fault credit-early (the server takes the window when the
 * change arrives) shows the check can fail.
 *
 * A tuner's stop (proto/stop.h): in one seed of four (its own generator;
 * such a job runs 6-15 iterations) the scheduler is asked, at a step of
 * the first 150, to stop the job. It picks the iteration from the
 * PROGRESS it has heard (each worker says so when its application begins
 * an iteration; these messages are slow) and sends every worker a STOP,
 * faster to some than to others, so that a worker may begin the
 * iteration asked before its STOP comes while another stops there. Each
 * application asks its stop machine before every iteration, as
 * ps_client_next_iteration does: it begins, or waits at the stop having
 * said so (STOP_READY), until every worker is there (STOP_NOW: it ends)
 * or a late worker's STOP_LATE moved the stop on. Checked: every worker
 * ends after the same iteration, K or one the scheduler asked for, every
 * server at that version with exact values; no deadlock. --fault
 * stop-alone (a worker ends at its stop without waiting, as ps-worker
 * did) shows the hang it prevents.
 *
 * Several connections per peer pair (tcp's transport.connections_per_peer,
 * its own generator): in one seed of three 2 or 3 lanes; a partition's
 * messages (INIT, PUSH, PUSH_ACK, PARAMS, PARAMS_ACK, PULL) take lane
 * (partition + 1) mod lanes, the rest lane 0, as runtime/node.c's flows
 * do, and a channel delivers the first message of a lane drawn among
 * those that hold one: partitions overtake each other and the control
 * messages. Everything above is checked as ever. --fault
 * lane-per-message (every seed has lanes, and a partition's messages take
 * any lane) shows that one flow per partition is what the machines need:
 * pieces arrive out of order, a PARAMS overtakes its PUSH_ACK.
 *
 * Checkpoints (ckpt.c, its header says what is checked): in one seed of
 * three the servers run proto/checkpoint_take.h on a disk of their own
 * and the scheduler proto/checkpoint_round.h; in one of two seeds with a
 * complete checkpoint a second job resumes from it under a layout of its
 * own. The closed form is over tensors, not partitions, so that it holds
 * across layouts.
 *
 * A failure prints the seed, what broke, and the command that replays it.
 *
 * Usage: dst [--seeds N] [--first S] [--seed S] [--adversary]
 *            [--fault credit-leak|version-skip|drop-early|blind-scheduler|
 *                     blame-reporter|forged-sender|pull-flood|
 *                     credit-early|stop-alone|ckpt-any-version|
 *                     ckpt-per-message|lane-per-message]
 *            [--expect-failure] [--verbose]
 *
 * --fault credit-leak needs PARAMS_ACKs to leak from: it always draws a
 * window for the parameter sends. --fault version-skip draws no barrier
 * (the barrier would wait forever for the skipped version: a deadlock, not
 * the version gap the test looks for). --fault forged-sender and
 * pull-flood (proto/server.h answers every PULL, even while a send to that
 * worker waits in the gate: the bound on sends waiting must fail) give
 * every seed a malicious member; pull-flood makes it a worker, draws a
 * window for the parameter sends and sends PULLs in bursts.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ordo/error.h"
#include "proto/join.h"
#include "proto/membership.h"
#include "proto/server.h"
#include "proto/stop.h"
#include "proto/worker.h"
#include "scheduling/gate.h"
#include "scheduling/order.h"
#include "scheduling/placement.h"
#include "server/optimizer.h"
#include "dst/dst.h"

/* ---- a deterministic generator (splitmix64) ---------------------------- */

uint64_t rng_next(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint32_t rng_below(uint64_t *x, uint32_t n)
{
	return (uint32_t)(rng_next(x) % n);
}

/* ---- the job ----------------------------------------------------------- */

static const char *const fault_names[] = {
	"",		  "credit-leak",    "version-skip", "drop-early",
	"blind-scheduler", "blame-reporter", "forged-sender", "pull-flood",
	"credit-early",	   "stop-alone",     "ckpt-any-version",
	"ckpt-per-message", "lane-per-message"};

static int shard_fault(int f)
{
	return f == FAULT_CREDIT_LEAK	 ? PS_SPROTO_FAULT_CREDIT_LEAK
	       : f == FAULT_VERSION_SKIP ? PS_SPROTO_FAULT_VERSION_SKIP
	       : f == FAULT_PULL_FLOOD	 ? PS_SPROTO_FAULT_PULL_FLOOD
	       : f == FAULT_CREDIT_EARLY ? PS_SPROTO_FAULT_CREDIT_EARLY
					 : PS_SPROTO_FAULT_NONE;
}

static int membership_fault(int f)
{
	return f == FAULT_BLIND		   ? PS_MEMBERSHIP_FAULT_BLIND
	       : f == FAULT_BLAME_REPORTER ? PS_MEMBERSHIP_FAULT_BLAME_REPORTER
					   : PS_MEMBERSHIP_FAULT_NONE;
}

static int join_fault(int f)
{
	return f == FAULT_DROP_EARLY ? PS_JOIN_FAULT_DROP_EARLY
				     : PS_JOIN_FAULT_NONE;
}

const char *const msg_names[] = {
    "PUSH",	"PUSH_ACK",  "PARAMS",	   "PARAMS_ACK", "INIT",
    "WELCOME",	"PULL",	     "PROGRESS",   "STOP",	 "STOP_LATE",
    "STOP_READY", "STOP_NOW", "CKPT",	   "CKPT_DONE",	 "CKPT_LATE",
    "FLUSH",	"FLUSHED"};

/* What became of the malicious members' messages, per type (all seeds):
 * refused by the machine; dropped by the driver (a type the receiver does
 * not take); taken (a hostile worker's own PARAMS_ACK or PULL); not sent
 * (a hostile worker's own next push or worker 0's INIT: values it is
 * trusted with); and the hostile worker's honest PARAMS_ACKs refused after
 * its early ones. */
static uint64_t adv_refused[M_TYPES], adv_dropped[M_TYPES],
	adv_taken[M_TYPES], adv_trusted[M_TYPES], adv_own_refused;

#define HB_INTERVAL 50
#define HB_TIMEOUT 500

int fail(job *j, const char *fmt, ...)
{
	va_list ap;

	if (j->failure[0])
		return PS_EPROTO;
	va_start(ap, fmt);
	vsnprintf(j->failure, sizeof(j->failure), fmt, ap);
	va_end(ap);
	return PS_EPROTO;
}

void dst_locate(const job *j, uint32_t p, uint64_t e, uint32_t *t,
		uint64_t *o)
{
	const ps_partition *d = &j->pl->parts[p];
	uint32_t x = d->tensor;

	if (d->ntensors <= 1) {
		*t = d->tensor;
		*o = d->offset + e;
		return;
	}
	while (x + 1 < d->tensor + d->ntensors &&
	       j->pl->tensor_base[x + 1] <= e)
		x++;
	*t = x;
	*o = e - j->pl->tensor_base[x];
}

/* Gradient of worker w, iteration i, element o of tensor t: of the
 * tensors, not the partitions, so that a job resumed under another
 * layout has the same closed form. */
static float grad(uint32_t w, uint64_t i, uint32_t t, uint64_t o)
{
	return (float)((int)((w * 7 + i * 3 + t * 5 + o) % 9) - 4);
}

static float initial(uint32_t t, uint64_t o)
{
	return (float)((int)((t * 3 + o) % 11) - 5);
}

/* Worker w's gradient of element e of partition p, iteration i. */
static float grad_of(const job *j, uint32_t w, uint64_t i, uint32_t p,
		     uint64_t e)
{
	uint32_t t;
	uint64_t o;

	dst_locate(j, p, e, &t, &o);
	return grad(w, i, t, o);
}

/* The closed form: element e of partition p at version v (a resumed job:
 * the iterations before its start were the first job's, with its
 * workers). It never reads what a checkpoint holds. */
double expected(const job *j, uint32_t p, uint64_t e, uint64_t v)
{
	uint32_t t;
	uint64_t o;
	double x;

	dst_locate(j, p, e, &t, &o);
	x = initial(t, o);
	for (uint64_t i = 0; i < v; i++) {
		uint32_t W = i < j->start ? j->from_W : j->W;
		double sum = 0.0;
		for (uint32_t w = 0; w < W; w++)
			sum += grad(w, i, t, o);
		x -= sum / W;
	}
	return x;
}

/* ---- membership and liveness ------------------------------------------- */

/* DST node n (workers, then servers) <-> membership id (0 the scheduler,
 * servers, then workers). */
static uint32_t id_of(const job *j, uint32_t n)
{
	return n < j->W ? 1 + j->S + n : 1 + (n - j->W);
}

static int is_dead(const job *j, uint32_t n)
{
	return j->dead >= 0 && (uint32_t)j->dead == n;
}

/* Every node registers, in a random order, with an intruder or two: a
 * node registering twice (dropped) and one more worker than the job has
 * (refused); neither may change anything. Ranks go by registration order
 * per role, so DST node n is the node that registered as its role's n-th
 * (they are all alike until the WELCOME). */
static int register_all(job *j)
{
	uint32_t n = j->W + j->S, order[16], rank[2] = {0, 0};
	char why[512];

	for (uint32_t i = 0; i < n; i++)
		order[i] = i;
	for (uint32_t i = n; i > 1; i--) {
		uint32_t q = rng_below(&j->rng, i), t = order[i - 1];
		order[i - 1] = order[q];
		order[q] = t;
	}
	for (uint32_t i = 0; i < n; i++) {
		int server = order[i] >= j->W;
		ps_wire_register r = {.self = {.role = server ? PS_ROLE_SERVER
							      : PS_ROLE_WORKER,
					       .pid = (int32_t)(100 + i),
					       .transport_id = 1000 + i}};
		ps_tensor_desc td = {.name = "t", .numel = 1};
		uint32_t index;
		ps_member_verdict v;

		snprintf(r.self.host, sizeof(r.self.host), "dst");
		if (!server) {
			r.num_tensors = 1;
			r.tensors = &td;
		}
		v = ps_membership_register(j->ms, &r, r.self.transport_id,
					   j->now, &index, why, sizeof(why));
		if (v != PS_MEMBER_ACCEPTED)
			return fail(j, "membership refused node %u: %s", i, why);
		/* its role's next rank: DST node rank (workers) or W + rank */
		if (ps_membership_by_index(j->ms, index)->rank !=
		    (server ? rank[1]++ : rank[0]++))
			return fail(j, "membership ranked node %u %u, not in "
				    "registration order", i,
				    ps_membership_by_index(j->ms, index)->rank);
		if (rng_below(&j->rng, 4) == 0) { /* the same node again */
			if (ps_membership_register(j->ms, &r,
						   r.self.transport_id, j->now,
						   &index, why, sizeof(why)) !=
			    PS_MEMBER_DROPPED)
				return fail(j, "a second REGISTER of node %u "
					    "was not dropped", i);
		}
	}
	if (!ps_membership_complete(j->ms))
		return fail(j, "membership incomplete after every REGISTER");
	{ /* one worker too many */
		ps_tensor_desc td = {.name = "t", .numel = 1};
		ps_wire_register r = {.self = {.role = PS_ROLE_WORKER,
					       .pid = 999,
					       .transport_id = 99999},
				      .num_tensors = 1,
				      .tensors = &td};
		uint32_t index;
		if (ps_membership_register(j->ms, &r, 99999, j->now, &index,
					   why, sizeof(why)) !=
		    PS_MEMBER_REFUSED)
			return fail(j, "a worker too many was not refused");
	}
	for (uint32_t d = 0; d < n; d++) {
		const ps_node_info *x = ps_membership_by_id(j->ms, id_of(j, d));
		if (!x || x->id != id_of(j, d) ||
		    x->role != (d < j->W ? PS_ROLE_WORKER : PS_ROLE_SERVER))
			return fail(j, "membership has no node %u as expected",
				    id_of(j, d));
	}
	return PS_OK;
}

static int blames_the_dead(job *j, const char *why);

/* Time passes: live nodes' heartbeats are heard; the scheduler checks
 * who is silent. */
static int advance(job *j, int64_t dt)
{
	char why[600];
	int beat, rc;

	j->now += dt;
	for (uint32_t n = 0; n < j->W + j->S; n++)
		if (!is_dead(j, n) && j->now - j->last_hb[n] >= HB_INTERVAL) {
			ps_membership_heard(j->ms, id_of(j, n), j->now);
			j->last_hb[n] = j->now;
		}
	rc = ps_membership_tick(j->ms, j->now, &beat, why, sizeof(why));
	if (rc == PS_OK)
		return PS_OK;
	if (j->dead < 0)
		return fail(j, "the scheduler aborted a healthy job: %s", why);
	return blames_the_dead(j, why);
}

/* The job was aborted for why: it must name the dead node first (a
 * reason may name others after it). PS_ECLOSED: the job failed with the
 * right reason. */
static int blames_the_dead(job *j, const char *why)
{
	char who[400];

	ps_membership_describe(ps_membership_by_id(j->ms, id_of(j, j->dead)),
			       who, sizeof(who));
	if (strncmp(why, who, strlen(who)) != 0)
		return fail(j, "node %d died, but the scheduler blamed "
			    "another: %s", j->dead, why);
	return PS_ECLOSED;
}

/* ---- channels ---------------------------------------------------------- */

static void adv_record(job *j, const msg *m, uint32_t to);

static int send_piece_msg(job *j, uint32_t from, uint32_t to, int type,
			  uint32_t part, uint32_t piece, uint64_t iteration,
			  int32_t priority, float *payload)
{
	msg *m = calloc(1, sizeof(*m));
	channel *c = &j->ch[from * j->N + to];

	if (!m) {
		free(payload);
		return PS_ENOMEM;
	}
	*m = (msg){.type = type,
		   .from = from,
		   .part = part,
		   .piece = piece,
		   .iteration = iteration,
		   .priority = priority,
		   .payload = payload};
	if (c->tail)
		c->tail->next = m;
	else
		c->head = m;
	c->tail = m;
	if (j->adversary)
		adv_record(j, m, to);
	return PS_OK;
}

int send_msg(job *j, uint32_t from, uint32_t to, int type,
		    uint32_t part, uint64_t iteration, int32_t priority,
		    float *payload)
{
	return send_piece_msg(j, from, to, type, part, 0, iteration, priority,
			      payload);
}

static void free_msg(msg *m)
{
	if (m) {
		free(m->payload);
		free(m);
	}
}

/* ---- the shadow of a gate: its order, checked ------------------------- */

/* A transfer became ready; the gate had released `after` before. */
static int shadow_ready(shadow *sh, uint32_t part, uint32_t piece,
			uint32_t receiver, uint64_t iteration, uint32_t number,
			uint64_t after)
{
	if (sh->n == sh->cap) {
		uint32_t cap = sh->cap ? 2 * sh->cap : 64;
		struct pend *v = realloc(sh->v, cap * sizeof(*v));
		if (!v)
			return PS_ENOMEM;
		sh->v = v;
		sh->cap = cap;
	}
	sh->v[sh->n++] = (struct pend){.part = part,
				       .piece = piece,
				       .receiver = receiver,
				       .iteration = iteration,
				       .seq = sh->seq++,
				       .after = after,
				       .number = number};
	return PS_OK;
}

/* A release of (part, receiver, iteration) by the gate sh shadows - its
 * `released`-th, as messages leave the machine in the order the gate
 * released them - checked against the order of its kind (sh->kind: its
 * direction's) among the transfers ready by then. */
static int shadow_release(job *j, shadow *sh, const char *who, uint32_t part,
			  uint32_t piece, uint32_t receiver, uint64_t iteration,
			  uint64_t bytes)
{
	uint32_t at = UINT32_MAX;
	uint64_t nth = sh->released++;

	for (uint32_t i = 0; i < sh->n; i++)
		if (sh->v[i].part == part && sh->v[i].piece == piece &&
		    sh->v[i].receiver == receiver &&
		    sh->v[i].iteration == iteration &&
		    sh->v[i].after <= nth &&
		    (at == UINT32_MAX || sh->v[i].seq < sh->v[at].seq))
			at = i;
	if (at == UINT32_MAX)
		return fail(j, "%s's gate released partition %u piece %u to "
			    "%u (iteration %" PRIu64 "), which was not ready",
			    who, part, piece, receiver, iteration);
	struct pend r = sh->v[at];
	for (uint32_t i = 0; i < sh->n; i++) {
		const struct pend *q = &sh->v[i];
		if (q->after > nth) /* ready after this release */
			continue;
		if (sh->kind == PS_GATE_FIFO && q->seq < r.seq)
			return fail(j, "%s's fifo gate released partition %u "
				    "before partition %u, ready earlier", who,
				    r.part, q->part);
		if (sh->kind == PS_GATE_PRIORITY &&
		    (q->number < r.number ||
		     (q->number == r.number && q->seq < r.seq)))
			return fail(j, "%s's priority gate released partition "
				    "%u (number %u) before partition %u "
				    "(number %u)", who, r.part, r.number,
				    q->part, q->number);
	}
	if (sh->kind == PS_GATE_COUNTER &&
	    !(sh->server && (int32_t)receiver == j->hostile)) {
		/* (a hostile worker's PULLs are answered out of that order) */
		if (sh->last_it[receiver] == r.iteration + 1 &&
		    r.number < sh->last[receiver])
			return fail(j, "%s's counter gate went back from number "
				    "%u to %u for receiver %u", who,
				    sh->last[receiver], r.number, receiver);
		sh->last[receiver] = r.number;
		sh->last_it[receiver] = r.iteration + 1;
	}
	sh->v[at] = sh->v[--sh->n];
	sh->in_flight += bytes;
	return PS_OK;
}

/* ---- workers ----------------------------------------------------------- */

static uint64_t part_bytes(const job *j, uint32_t p)
{
	return j->pl->parts[p].numel * PS_ELEM_SIZE;
}

/* Piece i of partition p in pieces of piece_bytes: elements (first in
 * *off_p). */
static uint64_t piece_numel(const job *j, uint32_t p, uint64_t piece_bytes,
			    uint32_t i, uint64_t *off_p)
{
	uint64_t n;

	ps_piece_span(&j->pl->parts[p], piece_bytes, i, off_p, &n);
	return n;
}

static uint32_t pieces(const job *j, uint32_t p, uint64_t piece_bytes)
{
	return (uint32_t)ps_part_pieces(&j->pl->parts[p], piece_bytes);
}

/* The scheduler's node. */
static uint32_t sched(const job *j)
{
	return j->W + j->S;
}

/* The iteration worker k ends after: K, or where the job stops. */
static uint64_t worker_end(const job *j, const wk *k)
{
	return k->end_at ? k->end_at : j->K;
}

static int worker_send(job *j, uint32_t w);

/* Worker w's last iteration is done: its DONE goes once its pushes are
 * acknowledged. */
static int worker_finish(job *j, uint32_t w)
{
	int rc = ps_wproto_done(j->w[w].proto);

	return rc == PS_OK ? worker_send(j, w) : rc;
}

/* Worker w's application asks to begin iteration it, as
 * ps_client_next_iteration does (proto/stop.h): past K the job ends
 * there; at a stop it waits, having said so, until every worker is there
 * (it ends) or the stop moves on (it begins). */
static int app_next(job *j, uint32_t w, uint64_t it)
{
	wk *k = &j->w[w];
	int ready;

	if (it >= j->K)
		return PS_OK;
	switch (ps_stop_worker_next(&k->stop, it, &ready)) {
	case PS_STOP_RUN:
		k->waiting = 0;
		return j->stop_at || j->ckpt_at
			       ? send_msg(j, w, sched(j), M_PROGRESS, 0, it, 0,
					  NULL)
			       : PS_OK;
	case PS_STOP_END:
		k->waiting = 0;
		k->end_at = it;
		return k->it == it ? worker_finish(j, w) : PS_OK;
	case PS_STOP_WAIT:
		break;
	}
	k->waiting = 1;
	k->asking = it;
	return ready ? send_msg(j, w, sched(j), M_STOP_READY, 0,
				k->stop.target, 0, NULL)
		     : PS_OK;
}

/* STOP or STOP_NOW from the scheduler reaches worker w. */
static int worker_stop_message(job *j, uint32_t w, const msg *m)
{
	wk *k = &j->w[w];
	uint64_t late = 0;
	char why[256];
	int rc = m->type == M_STOP
		     ? ps_stop_worker_on_stop(&k->stop, m->iteration, &late,
					      why, sizeof(why))
		     : ps_stop_worker_on_now(&k->stop, m->iteration, why,
					     sizeof(why));

	if (rc == PS_EPROTO)
		return fail(j, "worker %u refused %s before iteration %" PRIu64
			    ": %s", w, msg_names[m->type], m->iteration, why);
	if (rc == 1)
		return send_msg(j, w, sched(j), M_STOP_LATE, 0, late, 0, NULL);
	return k->waiting ? app_next(j, w, k->asking) : PS_OK;
}

/* The scheduler asks for a stop (late: after a STOP_LATE) as ps-scheduler
 * does (scheduler/checkpoints.c), from the progress it has heard. */
int sched_ask_stop(job *j, uint64_t late)
{
	uint64_t highest = 0, v;
	int rc = PS_OK;

	for (uint32_t w = 0; w < j->W; w++)
		if (j->progress[w] > highest)
			highest = j->progress[w];
	/* with checkpoints, the servers' checkpoint is asked there too, as
	 * ps-scheduler's stop does */
	v = j->ckpt ? dst_ckpt_ask_iteration(j, late)
		    : ps_stop_ask(highest, late, &j->margin);
	if (!v) { /* given up: the job goes on */
		j->stopping = 0;
		ps_stop_round_cancel(&j->sr);
		v = PS_STOP_NEVER;
	} else {
		ps_stop_round_start(&j->sr, v);
		if (j->nasked < 32)
			j->asked[j->nasked++] = v;
		/* the servers' checkpoint there (with checkpoints) */
		rc = dst_ckpt_send_asks(j, v);
	}
	if (j->verbose)
		fprintf(stderr, "  step %" PRIu64 ": the scheduler asks a stop "
			"before iteration %" PRIu64 " (heard %" PRIu64 ", late %"
			PRIu64 ")\n", j->steps, v, highest, late);
	for (uint32_t w = 0; w < j->W && rc == PS_OK; w++)
		rc = send_msg(j, sched(j), w, M_STOP, 0, v, 0, NULL);
	return rc;
}

/* A worker's PROGRESS, STOP_LATE or STOP_READY reaches the scheduler. */
static int sched_receive(job *j, const msg *m)
{
	uint32_t w = m->from;
	char why[256];
	int rc;

	if (w >= j->W && w < j->W + j->S &&
	    (m->type == M_CKPT_DONE || m->type == M_CKPT_LATE ||
	     m->type == M_FLUSHED))
		return dst_ckpt_sched_receive(j, m);
	if (w >= j->W)
		return fail(j, "the scheduler got %s from node %u, no worker",
			    msg_names[m->type], w);
	switch (m->type) {
	case M_PROGRESS:
		if (m->iteration > j->progress[w])
			j->progress[w] = m->iteration;
		return PS_OK;
	case M_STOP_LATE:
		return j->stopping && ps_stop_round_on_late(&j->sr, m->iteration)
			       ? sched_ask_stop(j, m->iteration)
			       : PS_OK;
	case M_STOP_READY:
		rc = ps_stop_round_on_ready(&j->sr, w, m->iteration, why,
					    sizeof(why));
		if (rc == PS_EPROTO)
			return fail(j, "the scheduler refused worker %u's "
				    "STOP_READY: %s", w, why);
		if (rc != 1)
			return PS_OK;
		j->stop_now = 1;
		rc = PS_OK;
		for (uint32_t v = 0; v < j->W && rc == PS_OK; v++)
			rc = send_msg(j, sched(j), v, M_STOP_NOW, 0,
				      j->sr.target, 0, NULL);
		return rc;
	default:
		return fail(j, "the scheduler got %s from worker %u",
			    msg_names[m->type], w);
	}
}

/* Sends what worker w's machine wants sent. */
static int worker_send(job *j, uint32_t w)
{
	wk *k = &j->w[w];
	ps_wproto_msg m;
	char who[32];
	int rc = ps_wproto_flush(k->proto);

	snprintf(who, sizeof(who), "worker %u", w);
	while (rc == PS_OK && ps_wproto_next_msg(k->proto, &m)) {
		if (m.kind == PS_WPROTO_MSG_DONE) {
			if (k->sh.in_flight || k->sh.n ||
			    k->it != worker_end(j, k))
				return fail(j, "worker %u sent DONE with %" PRIu64
					    " bytes unacknowledged, %u pushes "
					    "waiting, in iteration %" PRIu64, w,
					    k->sh.in_flight, k->sh.n, k->it);
			k->done_sent = 1;
			{
				int all;
				char why2[256];
				if (ps_membership_done(j->ms, id_of(j, w), &all,
						       why2,
						       sizeof(why2)) != PS_OK)
					return fail(j, "membership: %s", why2);
				j->all_done = all;
			}
			if (j->all_done)
				rc = dst_ckpt_all_done(j);
			continue;
		}
		if (m.kind == PS_WPROTO_MSG_PARAMS_ACK) {
			if (!j->params_credit)
				return fail(j, "worker %u acknowledged PARAMS of "
					    "partition %u, but the parameter "
					    "sends have no credit window", w,
					    m.part);
			k->params_acks++;
			rc = send_piece_msg(j, w, j->W + m.server,
					    M_PARAMS_ACK, m.part, m.piece,
					    m.iteration, 0, NULL);
			continue;
		}
		if (m.priority != (int32_t)j->push_numbers[m.part])
			return fail(j, "worker %u pushed partition %u with gate "
				    "number %d, not the pushes' %u", w, m.part,
				    m.priority, j->push_numbers[m.part]);
		uint64_t off,
			 n = piece_numel(j, m.part, j->push_piece, m.piece,
					 &off);
		if (off != m.offset || n * PS_ELEM_SIZE != m.bytes)
			return fail(j, "worker %u pushed piece %u of partition "
				    "%u as elements %" PRIu64 "+%" PRIu64
				    ", not %" PRIu64 "+%" PRIu64, w, m.piece,
				    m.part, m.offset, m.bytes / PS_ELEM_SIZE,
				    off, n);
		float *g = malloc((n ? n : 1) * sizeof(float));
		if (!g)
			return PS_ENOMEM;
		for (uint64_t e = 0; e < n; e++)
			g[e] = grad_of(j, w, m.iteration, m.part, off + e);
		rc = shadow_release(j, &k->sh, who, m.part, m.piece, m.server,
				    m.iteration, m.bytes);
		if (rc == PS_OK)
			rc = send_piece_msg(j, w, j->W + m.server, M_PUSH,
					    m.part, m.piece, m.iteration,
					    m.priority, g);
		else
			free(g);
	}
	return rc;
}

static int holds(const job *j, uint32_t w, uint32_t p, uint64_t v)
{
	uint64_t have;

	return ps_wproto_part_version(j->w[w].proto, p, &have) && have == v;
}

static int worker_can_compute(const job *j, uint32_t w)
{
	const wk *k = &j->w[w];

	if (k->pushed || k->it >= j->K || k->it >= k->stop.begun)
		return 0; /* (begun: its application may begin it) */
	for (uint32_t p = 0; p < j->P; p++)
		if (!holds(j, w, p, k->it))
			return 0;
	return 1;
}

/* A partition's push became ready in the machine's gate. */
static int mirror_ready(job *j, uint32_t w, uint32_t p)
{
	ps_wproto_stats st;
	shadow *sh = &j->w[w].sh;

	if (sh->credit_pending && j->w[w].it >= sh->credit_from) {
		/* the machine's window for this iteration on */
		sh->credit = sh->credit_next;
		sh->credit_pending = 0;
		j->changes_in++;
	}

	ps_wproto_get_stats(j->w[w].proto, &st);
	for (uint32_t i = 0; i < pieces(j, p, j->push_piece); i++)
		if (shadow_ready(&j->w[w].sh, p, i, j->pl->parts[p].server,
				 j->w[w].it, j->push_numbers[p],
				 st.pushes) != PS_OK)
			return PS_ENOMEM;
	return PS_OK;
}

/* Iteration it's gradients, tensor by tensor in a random order (as a
 * backward pass produces them), the gate drained now and then. */
static int worker_compute(job *j, uint32_t w)
{
	wk *k = &j->w[w];
	uint32_t *order = malloc(j->T * sizeof(*order));
	int rc = PS_OK;

	if (!order)
		return PS_ENOMEM;
	for (uint32_t t = 0; t < j->T; t++)
		order[t] = t;
	for (uint32_t t = j->T; t > 1; t--) {
		uint32_t q = rng_below(&j->rng, t), x = order[t - 1];
		order[t - 1] = order[q];
		order[q] = x;
	}
	for (uint32_t i = 0; i < j->T && rc == PS_OK; i++) {
		uint32_t t = order[i];
		ps_wproto_staging st;
		char why[256];

		rc = ps_wproto_push(k->proto, t, k->it, NULL, &st, why,
				    sizeof(why));
		if (rc == PS_ESTATE)
			rc = fail(j, "worker %u: %s", w, why);
		else if (rc == PS_OK && st.fused && st.complete) {
			rc = ps_wproto_stage_ready(k->proto, st.part, k->it,
						   NULL);
			if (rc == PS_OK)
				rc = mirror_ready(j, w, st.part);
		} else if (rc == PS_OK && !st.fused) {
			for (uint32_t q = 0; q < j->pl->part_count[t] &&
					     rc == PS_OK; q++)
				rc = mirror_ready(j, w,
						  j->pl->first_part[t] + q);
		}
		if (rc == PS_OK && rng_below(&j->rng, 2))
			rc = worker_send(j, w); /* as ops finish */
	}
	free(order);
	k->pushed = 1;
	if (rc == PS_OK)
		rc = worker_send(j, w);
	/* its application goes on to ask for the next iteration */
	return rc == PS_OK ? app_next(j, w, k->it + 1) : rc;
}

static int worker_receive(job *j, uint32_t w, uint32_t from, msg *m)
{
	wk *k = &j->w[w];
	uint32_t p = m->part;
	uint64_t had = 0;
	char why[256];
	int rc, acked;

	if (m->type == M_STOP || m->type == M_STOP_NOW)
		return worker_stop_message(j, w, m);
	if (m->type == M_PUSH_ACK && !j->push_credit)
		return fail(j, "worker %u: a PUSH_ACK of partition %u without "
			    "a credit window for the pushes (its PARAMS "
			    "acknowledge it)", w, p);
	if (m->type == M_PUSH_ACK) {
		uint64_t off;
		rc = ps_wproto_on_push_ack(k->proto, from, p, m->piece, why,
					   sizeof(why));
		if (rc == PS_EPROTO)
			return fail(j, "worker %u refused a PUSH_ACK of "
				    "partition %u piece %u: %s", w, p,
				    m->piece, why);
		k->sh.in_flight -= piece_numel(j, p, j->push_piece, m->piece,
					       &off) *
				   PS_ELEM_SIZE;
		return rc == PS_OK ? worker_send(j, w) : rc;
	}
	if (m->type != M_PARAMS)
		return fail(j, "worker %u received %s", w,
			    msg_names[m->type]);
	if (!ps_wproto_part_version(k->proto, p, &had))
		had = j->start - 1; /* the first is version 0, or resumed's */
	/* (a hostile worker's PULL is answered with the version the server
	 * has: the one it holds, or, before the barrier lets it go, the
	 * next) */
	if (m->iteration != had + 1 &&
	    !((int32_t)w == j->hostile && m->iteration == had))
		return fail(j, "worker %u: PARAMS of partition %u version %"
			    PRIu64 " after version %" PRIu64, w, p,
			    m->iteration, had);
	uint64_t off, n = piece_numel(j, p, j->params_piece, m->piece, &off);
	for (uint64_t e = 0; e < n; e++)
		if ((double)m->payload[e] !=
		    expected(j, p, off + e, m->iteration))
			return fail(j, "worker %u: partition %u version %" PRIu64
				    " element %" PRIu64 " is %g, not %g", w, p,
				    m->iteration, off + e, (double)m->payload[e],
				    expected(j, p, off + e, m->iteration));
	rc = ps_wproto_on_params(k->proto, from, p, j->pl->parts[p].tensor,
				 m->iteration, m->piece, n * PS_ELEM_SIZE,
				 &acked, NULL, why, sizeof(why));
	if (rc == PS_EPROTO)
		return fail(j, "worker %u refused PARAMS of partition %u piece "
			    "%u: %s", w, p, m->piece, why);
	if (acked) { /* no window: these PARAMS acknowledge the push */
		if (j->push_credit)
			return fail(j, "worker %u: PARAMS of partition %u "
				    "acknowledged a push the server's PUSH_ACK "
				    "should have (push credit window %" PRIu64
				    ")", w, p, j->push_credit);
		k->sh.in_flight -= part_bytes(j, p);
	}
	if (rc == PS_OK)
		k->params_in++;
	if (rc == PS_OK)
		rc = worker_send(j, w);
	/* every PARAMS acknowledged at once iff the parameter sends have a
	 * window (proto/worker.h) */
	if (rc == PS_OK &&
	    k->params_acks != (j->params_credit ? k->params_in : 0))
		return fail(j, "worker %u acknowledged %" PRIu64 " of %" PRIu64
			    " PARAMS (params credit window %" PRIu64 ")", w,
			    k->params_acks, k->params_in, j->params_credit);
	for (uint32_t q = 0; q < j->P && rc == PS_OK; q++)
		if (!holds(j, w, q, k->it + 1))
			return PS_OK;
	if (rc != PS_OK)
		return rc;
	k->it++; /* every partition at it + 1: the iteration is done */
	k->pushed = 0;
	return k->it == worker_end(j, k) ? worker_finish(j, w) : PS_OK;
}

/* ---- servers ----------------------------------------------------------- */

/* A send of server s's local partition k to `worker` became ready (the
 * machine calls it from inside an event or op_done: a failure is recorded
 * in j->failure and ends the seed after the step). */
static void *hold(void *ud, uint32_t k, uint32_t worker)
{
	void **h = ud;
	job *j = h[0];
	uint32_t s = (uint32_t)(uintptr_t)h[1];
	const ps_sproto *sh = j->s[s].sh;
	const ps_sproto_part *sp = ps_sproto_part_at(sh, k);

	/* the barrier: version v goes to nobody before every partition the
	 * server owns has it */
	for (uint32_t q = 0; j->barrier && !j->pulling &&
			     q < ps_sproto_nparts(sh); q++) {
		const ps_sproto_part *o = ps_sproto_part_at(sh, q);
		if (o->version < sp->version)
			fail(j, "server %u readied PARAMS of partition %u "
			     "version %" PRIu64 " for worker %u while its "
			     "partition %u is at version %" PRIu64 " (barrier)",
			     s, sp->index, sp->version, worker, o->index,
			     o->version);
	}
	ps_sproto_stats st;
	uint32_t *next = &j->s[s].hold_next[(size_t)k * j->W + worker];
	uint32_t piece = *next;
	shadow *shd = &j->s[s].shd;

	if (shd->credit_pending && sp->version >= shd->credit_from) {
		/* the machine's window for this version on */
		shd->credit = shd->credit_next;
		shd->credit_pending = 0;
		j->changes_in++;
	}

	/* a send's pieces are readied in order, one hold() each */
	*next = (piece + 1) % pieces(j, sp->index, j->params_piece);
	ps_sproto_get_stats(sh, &st);
	if (shadow_ready(&j->s[s].shd, sp->index, piece, worker, sp->version,
			 j->params_numbers[sp->index], st.sends) != PS_OK)
		fail(j, "out of memory");
	/* the values as they are now (ps-server takes a reference to them):
	 * a send may go out after the next update (a PULL's answer) */
	uint64_t off, n = piece_numel(j, sp->index, j->params_piece, piece,
				      &off);
	float *vals = malloc((n ? n : 1) * sizeof(float));
	if (!vals)
		fail(j, "out of memory");
	else
		memcpy(vals, j->s[s].values[k] + off, n * sizeof(float));
	return vals;
}

static void drop_held(void *ud, void *held)
{
	(void)ud;
	free(held);
}

static int server_send(job *j, uint32_t s)
{
	srv *v = &j->s[s];
	ps_sproto_msg m;
	char who[32];

	snprintf(who, sizeof(who), "server %u", s);
	while (ps_sproto_next_msg(v->sh, &m)) {
		uint32_t to = m.worker;
		int rc;
		if (m.kind == PS_SHARD_MSG_PUSH_ACK) {
			/* synchronous: only when the pushes have a window */
			if (!j->push_credit)
				return fail(j, "server %u sent a PUSH_ACK of "
					    "partition %u to worker %u, but the "
					    "pushes have no credit window", s,
					    m.partition, to);
			if (m.priority != (int32_t)j->push_numbers[m.partition])
				return fail(j, "server %u's PUSH_ACK of partition "
					    "%u carries number %d, not the push's "
					    "%u", s, m.partition, m.priority,
					    j->push_numbers[m.partition]);
			rc = send_piece_msg(j, j->W + s, to, M_PUSH_ACK,
					    m.partition, m.piece, m.iteration,
					    m.priority, NULL);
		} else {
			if (m.priority !=
			    (int32_t)j->params_numbers[m.partition])
				return fail(j, "server %u sent PARAMS of "
					    "partition %u with gate number %d, "
					    "not the parameter sends' %u", s,
					    m.partition, m.priority,
					    j->params_numbers[m.partition]);
			uint64_t off,
				 n = piece_numel(j, m.partition, j->params_piece,
						 m.piece, &off);
			if (off != m.offset || n * PS_ELEM_SIZE != m.bytes)
				return fail(j, "server %u sent piece %u of "
					    "partition %u as %" PRIu64 " bytes at "
					    "%" PRIu64 ", not %" PRIu64 " at %"
					    PRIu64, s, m.piece, m.partition,
					    m.bytes, m.offset,
					    n * PS_ELEM_SIZE, off);
			float *vals = m.held;
			if (!vals)
				return PS_ENOMEM;
			rc = shadow_release(j, &v->shd, who, m.partition,
					    m.piece, to, m.iteration, m.bytes);
			if (rc == PS_OK)
				rc = send_piece_msg(j, j->W + s, to, M_PARAMS,
						    m.partition, m.piece,
						    m.iteration, m.priority,
						    vals);
			else
				free(vals);
		}
		if (rc != PS_OK)
			return rc;
	}
	return PS_OK;
}

static int server_receive(job *j, uint32_t s, uint32_t from, msg *m,
			  int *kept)
{
	srv *v = &j->s[s];
	char why[256] = "";
	uint64_t off;
	int rc;

	if (m->type == M_CKPT || m->type == M_FLUSH)
		return dst_ckpt_server_receive(j, s, m);
	if (m->type == M_PUSH) {
		rc = ps_sproto_on_push(v->sh, from, m->part,
				      j->pl->parts[m->part].tensor,
				      m->iteration, m->priority, m->piece,
				      piece_numel(j, m->part, j->push_piece,
						  m->piece, &off) *
					      PS_ELEM_SIZE,
				      m, 0, why, sizeof(why));
		*kept = rc == PS_OK; /* the op reads its payload */
	} else if (m->type == M_INIT) {
		rc = ps_sproto_on_init(v->sh, from, m->part,
				      j->pl->parts[m->part].tensor,
				      part_bytes(j, m->part), m, why,
				      sizeof(why));
		*kept = rc == PS_OK; /* the op reads its payload */
	} else if (m->type == M_PARAMS_ACK) {
		rc = ps_sproto_on_params_ack(v->sh, from, m->part, m->piece, why,
					    sizeof(why));
		if (rc == PS_OK)
			v->shd.in_flight -= piece_numel(j, m->part,
							j->params_piece,
							m->piece, &off) *
					    PS_ELEM_SIZE;
	} else {
		return fail(j, "server %u received %s", s,
			    msg_names[m->type]);
	}
	if (rc == PS_EPROTO && m->type == M_PARAMS_ACK &&
	    (int32_t)from == j->hostile) {
		/* its early PARAMS_ACKs took this one's place */
		adv_own_refused++;
		return PS_OK;
	}
	if (rc == PS_EPROTO)
		return fail(j, "server %u refused %s of partition %u "
			    "iteration %" PRIu64 " from worker %u: %s", s,
			    msg_names[m->type], m->part, m->iteration, from,
			    why);
	return rc == PS_OK ? server_send(j, s) : rc;
}

static int server_start_op(job *j, uint32_t s)
{
	srv *v = &j->s[s];

	if (v->running || !ps_sproto_next_op(v->sh, &v->op))
		return 0;
	v->running = 1;
	return server_send(j, s) == PS_OK; /* an update's push: its ack */
}

static int server_finish_op(job *j, uint32_t s)
{
	srv *v = &j->s[s];
	ps_sproto_op *op = &v->op;
	size_t n = ps_sproto_part_at(v->sh, op->k)->desc->numel;
	msg *m = op->ctx; /* every op carries its message (but an update of
			   * pieces summed before) */
	int rc;

	if (op->kind != PS_SHARD_OP_INIT && op->kind != PS_SHARD_OP_UPDATE &&
	    (op->offset + op->numel > n || !op->numel))
		return fail(j, "server %u: an op over elements %" PRIu64
			    "+%" PRIu64 " of a partition of %zu", s,
			    op->offset, op->numel, n);
	if (op->kind == PS_SHARD_OP_INIT)
		memcpy(v->values[op->k], m->payload, n * sizeof(float));
	else if (op->kind == PS_SHARD_OP_AGGREGATE && op->first)
		ps_accum_set(v->acc[op->k] + op->offset, m->payload,
			     op->numel);
	else if (op->kind == PS_SHARD_OP_AGGREGATE)
		ps_accum_add(v->acc[op->k] + op->offset, m->payload,
			     op->numel);
	else if (op->all_summed) { /* pieces: every gradient summed */
		float *zero = calloc(n, sizeof(float));
		if (!zero)
			return PS_ENOMEM;
		ps_sgd_apply_last(v->values[op->k], v->mom[op->k],
				  v->acc[op->k], zero, n, 0, op->count, 1.0,
				  0.0);
		free(zero);
	} else
		ps_sgd_apply_last(v->values[op->k], v->mom[op->k],
				  v->acc[op->k], m->payload, n, op->first,
				  op->count, 1.0, 0.0);
	free_msg(m);
	v->running = 0;
	rc = ps_sproto_op_done(v->sh);
	if (rc == PS_OK && op->kind == PS_SHARD_OP_UPDATE)
		rc = dst_ckpt_updated(j, s, op->k);
	return rc == PS_OK ? server_send(j, s) : rc;
}

/* ---- a malicious member ------------------------------------------------ */

/* The floats a message of this type carries (partition part, piece). */
static uint64_t payload_floats(const job *j, int type, uint32_t part,
			       uint32_t piece)
{
	uint64_t off;

	if (part >= j->P)
		return 1;
	if (type == M_INIT)
		return j->pl->parts[part].numel;
	if (type == M_PUSH && piece < pieces(j, part, j->push_piece))
		return piece_numel(j, part, j->push_piece, piece, &off);
	if (type == M_PARAMS && piece < pieces(j, part, j->params_piece))
		return piece_numel(j, part, j->params_piece, piece, &off);
	return 1;
}

static uint32_t adv_self(const job *j)
{
	return j->hostile >= 0 ? (uint32_t)j->hostile : j->X;
}

/* An honest message `m` to `to` was sent: the malicious member keeps a
 * copy of some of those it could see (a hostile worker: its own and those
 * sent to it; the extra node: any, as if captured), to replay. */
static void adv_record(job *j, const msg *m, uint32_t to)
{
	msg *c;
	uint64_t n;

	if (m->type >= M_PROGRESS)
		return; /* the stop's: between workers and the scheduler */
	if (j->injecting || m->type == M_WELCOME ||
	    (j->hostile >= 0 && m->from != (uint32_t)j->hostile &&
	     to != (uint32_t)j->hostile) ||
	    rng_below(&j->arng, 4))
		return;
	c = calloc(1, sizeof(*c));
	n = payload_floats(j, m->type, m->part, m->piece);
	if (!c)
		return;
	*c = *m;
	c->next = NULL;
	c->claimed = to; /* (where it went) */
	c->payload = NULL;
	if (m->payload && !(c->payload = malloc(n * sizeof(float)))) {
		free(c);
		return;
	}
	if (m->payload)
		memcpy(c->payload, m->payload, n * sizeof(float));
	uint32_t i = j->nseen < 8 ? j->nseen++ : rng_below(&j->arng, 8);
	free_msg(j->seen[i]);
	j->seen[i] = c;
}

/* A hostile message from the malicious member to `to`. bytes: what it
 * claims (0: the right size for its piece); its payload is garbage. */
static int adv_send(job *j, uint32_t to, int type, uint32_t part,
		    uint32_t piece, uint64_t it, uint64_t bytes)
{
	uint64_t n = payload_floats(j, type, part, piece);
	float *x = NULL;
	uint32_t from = adv_self(j);
	int rc;

	if (type == M_PUSH || type == M_PARAMS || type == M_INIT) {
		if (!(x = malloc(n * sizeof(float))))
			return PS_ENOMEM;
		for (uint64_t e = 0; e < n; e++)
			x[e] = 1e6f;
	}
	j->injecting = 1;
	rc = send_piece_msg(j, from, to, type, part, piece, it, 0, x);
	j->injecting = 0;
	if (rc != PS_OK)
		return rc;
	msg *m = j->ch[from * j->N + to].tail;
	m->hostile = 1;
	m->bytes = bytes ? bytes : n * PS_ELEM_SIZE;
	/* the sender it names: a worker (to a server), the partition's
	 * server (to a worker) */
	if (to < j->W)
		m->claimed = part < j->P ? j->pl->parts[part].server : 0;
	else
		m->claimed = rng_below(&j->arng, j->W);
	j->budget--;
	return PS_OK;
}

/* A node the malicious member sends to: a worker other than itself, or
 * a server (servers: 1 for a server). */
static uint32_t adv_target(job *j, int servers)
{
	if (!servers && j->W > 1) {
		uint32_t w = rng_below(&j->arng, j->W);
		if ((int32_t)w == j->hostile)
			w = (w + 1) % j->W;
		return w;
	}
	return j->W + rng_below(&j->arng, j->S);
}

/* The version a server holds partition p at (0 when unknown). */
static uint64_t version_at(const job *j, uint32_t p)
{
	const ps_sproto *sh;
	int32_t k;

	if (p >= j->P)
		return 0;
	sh = j->s[j->pl->parts[p].server].sh;
	k = ps_sproto_local(sh, p);
	return k < 0 ? 0 : ps_sproto_part_at(sh, (uint32_t)k)->version;
}

/* Now and then, the malicious member sends something built from what a
 * member knows: ids, partition numbers, the iteration. */
static int adversary_act(job *j)
{
	uint32_t kind, part, to, n = 1;
	uint64_t it, bytes = 0;
	int rc = PS_OK;

	if (!j->adversary || !j->budget ||
	    (j->hostile >= 0 && is_dead(j, (uint32_t)j->hostile)) ||
	    rng_below(&j->arng, 8))
		return PS_OK;
	kind = rng_below(&j->arng, 7);
	if (j->fault == FAULT_PULL_FLOOD && rng_below(&j->arng, 2))
		kind = 5;
	part = rng_below(&j->arng, j->P + 1); /* one past the last, too */
	switch (kind) {
	case 0: /* an acknowledgement of no push, or of one acknowledged */
		to = adv_target(j, 0);
		return adv_send(j, to, to < j->W ? M_PUSH_ACK : M_PARAMS_ACK,
				part, rng_below(&j->arng, 3), 0, 0);
	case 1: /* a PARAMS_ACK of no send, or of one acknowledged */
		return adv_send(j, adv_target(j, 1), M_PARAMS_ACK, part,
				rng_below(&j->arng, 3), 0, 0);
	case 2: /* a PUSH: its partition's version, the far future, the past;
		 * the right size, a wrong one, a huge one */
		it = version_at(j, part);
		switch (rng_below(&j->arng, 4)) {
		case 1: it += 1 + rng_below(&j->arng, 1000); break;
		case 2: it = UINT64_MAX - rng_below(&j->arng, 2); break;
		case 3: it = it ? it - 1 : 0; break;
		}
		switch (rng_below(&j->arng, 4)) {
		case 1: bytes = PS_ELEM_SIZE * (1 + rng_below(&j->arng, 300));
			break;
		case 2: bytes = (uint64_t)1 << 40; break;
		}
		to = part < j->P && rng_below(&j->arng, 4)
			     ? j->W + j->pl->parts[part].server
			     : adv_target(j, 1);
		return adv_send(j, to, M_PUSH, part, rng_below(&j->arng, 2),
				it, bytes);
	case 3: /* PARAMS to a worker: the next version, this one, a later
		 * one, a huge count */
		it = version_at(j, part) + rng_below(&j->arng, 3);
		if (rng_below(&j->arng, 4) == 0)
			it = UINT64_MAX;
		if (rng_below(&j->arng, 4) == 0)
			bytes = (uint64_t)1 << 40;
		return adv_send(j, adv_target(j, 0), M_PARAMS, part,
				rng_below(&j->arng, 2), it, bytes);
	case 4: /* INIT (worker 0's values are its own: see hostile_receive) */
		return adv_send(j, adv_target(j, 1), M_INIT, part, 0, 0,
				rng_below(&j->arng, 2)
					? 0
					: PS_ELEM_SIZE * (1 + rng_below(&j->arng,
									  300)));
	case 5: /* PULLs, in a burst (a synchronous worker never pulls) */
		to = part < j->P ? j->W + j->pl->parts[part].server
				 : adv_target(j, 1);
		n = 1 + rng_below(&j->arng,
				  j->fault == FAULT_PULL_FLOOD ? 32 : 6);
		for (uint32_t i = 0; i < n && j->budget && rc == PS_OK; i++)
			rc = adv_send(j, to, M_PULL, part, 0, 0, 0);
		return rc;
	default: /* a replay of an honest message, where it went (a hostile
		  * worker: what it received, to another node) */
		if (!j->nseen)
			return PS_OK;
		msg *c = j->seen[rng_below(&j->arng, j->nseen)];
		to = c->claimed;
		if (to == adv_self(j))
			to = adv_target(j, rng_below(&j->arng, 2));
		rc = adv_send(j, to, c->type, c->part, c->piece, c->iteration,
			      0);
		if (rc == PS_OK && c->payload) {
			msg *m = j->ch[adv_self(j) * j->N + to].tail;
			memcpy(m->payload, c->payload,
			       payload_floats(j, c->type, c->part, c->piece) *
				       sizeof(float));
		}
		return rc;
	}
}

/* How the harness's transport names the malicious member to a machine:
 * the connection's sender (a hostile worker's rank, or no worker and no
 * server at all), or, under --fault forged-sender, whom it claims to be. */
static uint32_t adv_from(const job *j, const msg *m, int to_server)
{
	if (j->fault == FAULT_FORGED_SENDER)
		return m->claimed;
	if (m->from < j->W)
		return to_server ? m->from : PS_WPROTO_NOT_SERVER;
	return to_server ? PS_SHARD_NOT_WORKER : PS_WPROTO_NOT_SERVER;
}

/* A malicious member's message reaches node `to`. The machine must refuse
 * it (the driver drops what it refuses, as ps-server and the client do,
 * and the job goes on), but for what the member is entitled to: a hostile
 * worker's own next push and worker 0's INIT are never sent (their values
 * are trusted), and a hostile worker's PARAMS_ACK of a PARAMS sent to it,
 * or PULL, is taken. kept: the machine holds m. */
static int hostile_receive(job *j, uint32_t to, msg *m, int *kept)
{
	int server = to >= j->W;
	uint32_t from = adv_from(j, m, server), t = m->type;
	uint32_t key = m->part < j->P ? j->pl->parts[m->part].tensor : 0;
	int own = j->hostile >= 0 && from == (uint32_t)j->hostile;
	char why[256] = "", who[64];
	int rc = PS_EPROTO;

	if (j->hostile >= 0)
		snprintf(who, sizeof(who), "the hostile worker %d%s",
			 j->hostile, own ? "" : " (named as another)");
	else
		snprintf(who, sizeof(who), "the extra node%s",
			 j->fault == FAULT_FORGED_SENDER
				 ? " (named as another node)"
				 : "");
	if (!server) {
		wk *k = &j->w[to];
		int acked;
		if (t == M_PUSH_ACK)
			rc = ps_wproto_on_push_ack(k->proto, from, m->part,
						   m->piece, why, sizeof(why));
		else if (t == M_PARAMS)
			rc = ps_wproto_on_params(k->proto, from, m->part, key,
						 m->iteration, m->piece,
						 m->bytes, &acked, NULL, why,
						 sizeof(why));
		else {
			adv_dropped[t]++; /* not a type a worker takes */
			return PS_OK;
		}
	} else {
		srv *v = &j->s[to - j->W];
		uint32_t k;
		int32_t lk = ps_sproto_local(v->sh, m->part);
		switch (t) {
		case M_PUSH:
			if (m->from < j->W &&
			    ps_sproto_check_push(v->sh, m->from, m->part, key,
						 m->iteration, m->piece,
						 m->bytes, &k, why,
						 sizeof(why)) == PS_OK) {
				adv_trusted[t]++; /* its own push */
				return PS_OK;
			}
			rc = ps_sproto_on_push(v->sh, from, m->part, key,
					      m->iteration, 0, m->piece,
					      m->bytes, m, 0, why, sizeof(why));
			*kept = rc == PS_OK;
			break;
		case M_INIT:
			if (m->from == 0 && lk >= 0 &&
			    !ps_sproto_part_at(v->sh, (uint32_t)lk)
				     ->initialized) {
				adv_trusted[t]++; /* worker 0's values */
				return PS_OK;
			}
			rc = ps_sproto_on_init(v->sh, from, m->part, key,
					      m->bytes, m, why, sizeof(why));
			*kept = rc == PS_OK;
			break;
		case M_PARAMS_ACK:
			rc = ps_sproto_on_params_ack(v->sh, from, m->part,
						    m->piece, why, sizeof(why));
			if (rc == PS_OK && own) {
				uint64_t off;
				v->shd.in_flight -=
					piece_numel(j, m->part, j->params_piece,
						    m->piece, &off) *
					PS_ELEM_SIZE;
				adv_taken[t]++;
				return server_send(j, to - j->W);
			}
			break;
		case M_PULL:
			j->pulling = 1;
			rc = ps_sproto_on_pull(v->sh, from, m->part, key, why,
					      sizeof(why));
			j->pulling = 0;
			if (rc == PS_OK && own) {
				adv_taken[t]++;
				return server_send(j, to - j->W);
			}
			break;
		default:
			adv_dropped[t]++; /* not a type a server takes */
			return PS_OK;
		}
	}
	if (rc == PS_EPROTO) {
		adv_refused[t]++;
		if (j->verbose)
			fprintf(stderr, "  %s -> node %u: %s refused: %s\n",
				who, to, msg_names[t], why);
		return PS_OK;
	}
	if (rc != PS_OK)
		return rc;
	return fail(j, "%s %u took %s of partition %u iteration %" PRIu64
		    " piece %u (%" PRIu64 " bytes) from %s, which has no part "
		    "in it", server ? "server" : "worker",
		    server ? to - j->W : to, msg_names[t], m->part,
		    m->iteration, m->piece, m->bytes, who);
}

/* ---- checks after every step ------------------------------------------- */

static uint64_t largest_part(const job *j)
{
	uint64_t m = 0;

	for (uint32_t p = 0; p < j->P; p++)
		if (part_bytes(j, p) > m)
			m = part_bytes(j, p);
	return m;
}

/* released: the machine's count of its gate's releases (every message
 * is taken after each step, so the shadow has seen each of them). */
static int check_gate(job *j, const ps_gate *g, shadow *sh,
		      uint64_t released, const char *who)
{
	uint64_t f = ps_gate_in_flight(g);
	/* bytes in flight grow only by releases, checked against the window
	 * they were made under: this step's, or the previous one's where a
	 * credit change came into force during the step */
	uint64_t window = sh->credit > sh->credit_before ? sh->credit
							 : sh->credit_before;
	uint64_t bound = window > largest_part(j) ? window : largest_part(j);
	int grew = released > sh->checked_released;

	sh->checked_released = released;
	sh->credit_before = sh->credit;

	if (released != sh->released)
		return fail(j, "%s's machine counts %" PRIu64 " releases of its "
			    "gate, its messages %" PRIu64, who, released,
			    sh->released);
	if (f != sh->in_flight)
		return fail(j, "%s's gate counts %" PRIu64 " bytes in flight, "
			    "its messages %" PRIu64 " (credit leaked or "
			    "invented)", who, f, sh->in_flight);
	if (ps_gate_credit(g) != sh->credit)
		return fail(j, "%s's gate has a window of %" PRIu64 ", not its "
			    "direction's %" PRIu64, who, ps_gate_credit(g),
			    sh->credit);
	if (sh->credit && grew && f > bound)
		return fail(j, "%s's gate has %" PRIu64 " bytes in flight, "
			    "above its window of %" PRIu64, who, f,
			    window);
	return PS_OK;
}

/* What a server holds is bounded by the placement, whatever a member
 * sends: sends waiting in its gate, two per piece of each local partition
 * and worker (a version's, and one PULL's); ops, per local partition one
 * per piece of each worker's push, the update, an INIT. */
static int check_bounds(job *j)
{
	for (uint32_t s = 0; s < j->S; s++) {
		const srv *v = &j->s[s];
		uint32_t pend = ps_gate_pending(ps_sproto_gate(v->sh)),
			 ops = ps_sproto_ops_waiting(v->sh);
		if (pend > v->bound_pending)
			return fail(j, "server %u holds %u sends waiting in its "
				    "gate, above the %" PRIu64 " its partitions "
				    "allow", s, pend, v->bound_pending);
		if (ops > v->bound_ops)
			return fail(j, "server %u holds %u ops, above the %"
				    PRIu64 " its partitions allow", s, ops,
				    v->bound_ops);
	}
	return PS_OK;
}

static int check_all(job *j)
{
	char who[32];

	if (check_bounds(j) != PS_OK)
		return PS_EPROTO;

	for (uint32_t w = 0; w < j->W; w++) {
		ps_wproto_stats st;
		ps_wproto_get_stats(j->w[w].proto, &st);
		snprintf(who, sizeof(who), "worker %u", w);
		if (check_gate(j, ps_wproto_gate(j->w[w].proto), &j->w[w].sh,
			       st.pushes, who) != PS_OK)
			return PS_EPROTO;
	}
	for (uint32_t s = 0; s < j->S; s++) {
		ps_sproto_stats st;
		ps_sproto_get_stats(j->s[s].sh, &st);
		snprintf(who, sizeof(who), "server %u", s);
		if (check_gate(j, ps_sproto_gate(j->s[s].sh), &j->s[s].shd,
			       st.sends, who) != PS_OK)
			return PS_EPROTO;
	}
	return PS_OK;
}

static int check_end(job *j)
{
	for (uint32_t n = 0; n < j->W + j->S; n++) {
		ps_join *jn = n < j->W ? j->w[n].join : j->s[n - j->W].join;
		if (ps_join_dropped(jn))
			return fail(j, "deadlock: nothing can happen; node %u "
				    "dropped %u messages that came before its "
				    "WELCOME", n, ps_join_dropped(jn));
	}
	/* every worker ends after the same iteration: K, or a stop asked */
	uint64_t end = j->W ? worker_end(j, &j->w[0]) : j->K;
	int asked = end == j->K;

	for (uint32_t i = 0; i < j->nasked; i++)
		asked |= j->asked[i] == end;
	for (uint32_t w = 0; w < j->W; w++) {
		if (j->w[w].it != worker_end(j, &j->w[w]))
			return fail(j, "deadlock: nothing can happen, and worker "
				    "%u is in iteration %" PRIu64 " of %" PRIu64
				    "%s", w, j->w[w].it, worker_end(j, &j->w[w]),
				    j->w[w].waiting ? " (waiting at its stop)"
						    : "");
		if (worker_end(j, &j->w[w]) != end)
			return fail(j, "worker %u ended after iteration %" PRIu64
				    ", worker 0 after %" PRIu64, w,
				    worker_end(j, &j->w[w]), end);
		if (!j->w[w].done_sent)
			return fail(j, "worker %u finished but never sent DONE",
				    w);
	}
	if (!asked)
		return fail(j, "the job ended after iteration %" PRIu64 ", where "
			    "no stop was asked", end);
	for (uint32_t s = 0; s < j->S; s++) {
		srv *v = &j->s[s];
		for (uint32_t k = 0; k < ps_sproto_nparts(v->sh); k++) {
			const ps_sproto_part *sp = ps_sproto_part_at(v->sh, k);
			if (sp->version != end)
				return fail(j, "server %u ends partition %u at "
					    "version %" PRIu64 ", not %" PRIu64,
					    s, sp->index, sp->version, end);
			for (uint64_t e = 0; e < sp->desc->numel; e++)
				if ((double)v->values[k][e] !=
				    expected(j, sp->index, e, end))
					return fail(j, "server %u partition %u "
						    "element %" PRIu64 " ends "
						    "wrong", s, sp->index, e);
		}
	}
	return dst_ckpt_check_end(j, end);
}

/* ---- one seed ---------------------------------------------------------- */

static int setup(job *j, void **hold_ud)
{
	ps_tensor_desc td[8];
	uint32_t push_prio[8], params_prio[8];
	static const uint64_t credits[] = {0, 4, 64, 512, 4096, 1u << 20};
	static const uint64_t sizes[] = {4, 16, 64, 256, 1024, 1u << 30};
	static const uint64_t piece_sizes[] = {4, 12, 40, 128};
	int rc;

	/* a resumed job draws a layout of its own */
	j->gen_seed = j->start ? j->seed ^ 0x2e5a3edull : j->seed;
	j->rng = j->gen_seed;
	/* the malicious member's own generator: a seed without one replays
	 * as it did before there were any */
	j->arng = j->gen_seed ^ 0xad5e7a1ull;
	j->hostile = -1;
	j->adversary = j->adversary || rng_below(&j->arng, 4) == 0 ||
		       j->fault == FAULT_FORGED_SENDER ||
		       j->fault == FAULT_PULL_FLOOD;
	/* (a resumed job has none: its INIT is no member's to send) */
	j->adversary = j->adversary && !j->start;
	j->W = 1u << rng_below(&j->rng, 3); /* 1, 2, 4: exact averages */
	j->S = 1 + rng_below(&j->rng, 3);
	j->T = 1 + rng_below(&j->rng, 6);
	j->K = 1 + rng_below(&j->rng, 4);
	/* a tuner's stop in one seed of four (its own generator, as the
	 * adversary's), in a job long enough to stop in */
	j->srng = j->gen_seed ^ 0x5709c0ffeeull;
	if (rng_below(&j->srng, 4) == 0 || j->fault == FAULT_STOP_ALONE) {
		j->K = 6 + rng_below(&j->srng, 10);
		j->stop_at = 1 + rng_below(&j->srng, 150);
	}
	/* a resumed job: the tensors that were checkpointed, from there */
	j->K += j->start;
	if (j->start)
		j->T = j->from_T;
	/* each direction its own gate, window and numbers */
	j->push_gate = (int)rng_below(&j->rng, 3);
	j->push_credit = credits[rng_below(&j->rng, 6)];
	j->params_gate = (int)rng_below(&j->rng, 3);
	j->params_credit = credits[rng_below(&j->rng, 6)];
	if (j->fault == FAULT_CREDIT_LEAK && !j->params_credit)
		/* the leak is in PARAMS_ACKs: only a window has them */
		j->params_credit = credits[1 + rng_below(&j->rng, 5)];
	if (j->fault == FAULT_PULL_FLOOD)
		/* PULLs pile up only behind a window that is full */
		j->params_credit = credits[1 + rng_below(&j->arng, 3)];
	/* a live credit change in one seed of three, to another window in
	 * each direction that has one (as ps-tune's or the scheduler's:
	 * scheduler/credit.c), at a step of the first 64 */
	j->lrng = j->gen_seed ^ 0x1a4e5c0ull;
	j->lanes = rng_below(&j->lrng, 3) == 0 ||
			   j->fault == FAULT_LANE_PER_MESSAGE
		       ? 2 + rng_below(&j->lrng, 2)
		       : 1;
	j->crng = j->gen_seed ^ 0xc4ed17c4a96eull;
	if (j->fault == FAULT_CREDIT_EARLY && !j->params_credit)
		j->params_credit = credits[1 + rng_below(&j->crng, 5)];
	if (rng_below(&j->crng, 3) == 0 || j->fault == FAULT_CREDIT_EARLY) {
		j->change_at = 1 + rng_below(&j->crng, 64);
		for (int d = 0; d < 2; d++) {
			uint64_t cur = d ? j->params_credit : j->push_credit;
			uint64_t next = 0;
			while (cur && (!next || next == cur))
				next = credits[1 + rng_below(&j->crng, 5)];
			*(d ? &j->change_params : &j->change_push) = next;
		}
	}
	j->barrier = rng_below(&j->rng, 3) == 0;
	if (j->fault == FAULT_VERSION_SKIP)
		j->barrier = 0; /* see the header */
	j->partition_size = sizes[rng_below(&j->rng, 6)];
	/* in one seed of three per direction, partitions go in pieces
	 * (never under a counter gate: the configuration refuses it) */
	j->push_piece = j->push_gate != PS_GATE_COUNTER &&
				rng_below(&j->rng, 3) == 0
			    ? piece_sizes[rng_below(&j->rng, 4)]
			    : 0;
	j->params_piece = j->params_gate != PS_GATE_COUNTER &&
				  rng_below(&j->rng, 3) == 0
			      ? piece_sizes[rng_below(&j->rng, 4)]
			      : 0;
	j->fuse = (int)rng_below(&j->rng, 2);
	for (uint32_t t = 0; t < j->T; t++) {
		snprintf(td[t].name, sizeof(td[t].name), "t%u", t);
		td[t].numel = 1 + rng_below(&j->rng, 200);
		if (j->start)
			td[t].numel = j->from_numel[t];
		j->from_numel[t] = td[t].numel;
		push_prio[t] = rng_below(&j->rng, 4);
		params_prio[t] = rng_below(&j->rng, 4);
	}
	rc = ps_placement_compute(td, j->T, j->partition_size, j->fuse, j->S,
				  (int)rng_below(&j->rng, 2), &j->pl);
	if (rc == PS_OK)
		rc = ps_order_partition_numbers(j->pl, push_prio,
						j->push_gate == PS_GATE_COUNTER,
						&j->push_numbers);
	if (rc == PS_OK)
		rc = ps_order_partition_numbers(
			j->pl, params_prio, j->params_gate == PS_GATE_COUNTER,
			&j->params_numbers);
	if (rc != PS_OK)
		return fail(j, "cannot place the job: %s", ps_strerror(rc));
	j->P = j->pl->num_parts;
	j->N = j->W + j->S + 1; /* the scheduler last */
	if (j->start) {
		rc = dst_ckpt_resume_base(j);
		if (rc != PS_OK)
			return rc;
	}
	if (j->adversary) {
		/* a hostile worker (always under pull-flood: only a worker's
		 * PULL is answered), or an extra node after the scheduler */
		j->hostile = j->fault == FAULT_PULL_FLOOD ||
					     rng_below(&j->arng, 2)
				     ? (int32_t)rng_below(&j->arng, j->W)
				     : -1;
		j->budget = 16 + rng_below(&j->arng, 48);
		if (j->hostile < 0)
			j->X = j->N++;
	}
	j->w = calloc(j->W, sizeof(*j->w));
	j->s = calloc(j->S, sizeof(*j->s));
	j->ch = calloc((size_t)j->N * j->N, sizeof(*j->ch));
	j->progress = calloc(j->W, sizeof(*j->progress));
	if (!j->w || !j->s || !j->ch || !j->progress ||
	    ps_stop_round_init(&j->sr, j->W) != PS_OK)
		return PS_ENOMEM;
	for (uint32_t c = 0; c < j->N * j->N; c++)
		j->ch[c].weight = rng_below(&j->rng, 4) ? 8 : 1; /* slow links */
	for (uint32_t w = 0; j->stop_at && w < j->W; w++) {
		/* a stop: the scheduler hears progress late, and its STOP
		 * reaches some workers sooner than others (the race the
		 * stop's protocol is for: a worker may begin the iteration
		 * asked before its STOP comes, while another stops there) */
		j->ch[w * j->N + sched(j)].weight = 1;
		j->ch[sched(j) * j->N + w].weight =
		    rng_below(&j->srng, 2) ? 8 : 1;
	}
	for (uint32_t w = 0; w < j->W; w++) {
		wk *k = &j->w[w];
		k->weight = rng_below(&j->rng, 4) ? 8 : 1; /* stragglers */
		k->sh.last = calloc(j->S, sizeof(uint32_t));
		k->sh.last_it = calloc(j->S, sizeof(uint64_t));
		k->sh.kind = j->push_gate;
		k->sh.credit = j->push_credit;
		if (j->fault == FAULT_STOP_ALONE)
			k->stop.fault = PS_STOP_FAULT_ALONE;
		if (!k->sh.last || !k->sh.last_it)
			return PS_ENOMEM;
		rc = ps_wproto_create(
			&(ps_wproto_config){.pl = j->pl,
					    .gate = (ps_gate_kind)j->push_gate,
					    .credit = j->push_credit,
					    .params_credit = j->params_credit,
					    .sync = 1,
					    .push_piece = j->push_piece,
					    .params_piece = j->params_piece,
					    .numbers = j->push_numbers},
			&k->proto);
		if (rc != PS_OK)
			return rc;
		rc = ps_join_create(JOIN_MAX, UINT64_MAX, join_fault(j->fault),
				    &k->join);
		if (rc != PS_OK)
			return rc;
	}
	for (uint32_t s = 0; s < j->S; s++) {
		srv *v = &j->s[s];
		hold_ud[2 * s] = j;
		hold_ud[2 * s + 1] = (void *)(uintptr_t)s;
		rc = ps_sproto_create(&(ps_sproto_config){
					     .pl = j->pl,
					     .server = s,
					     .workers = j->W,
					     .gate = (ps_gate_kind)j->params_gate,
					     .credit = j->params_credit,
					     .push_credit = j->push_credit,
					     .push_piece = j->push_piece,
					     .params_piece = j->params_piece,
					     .barrier = j->barrier,
					     .numbers = j->params_numbers,
					     .hold = hold,
					     .drop = drop_held,
					     .ud = &hold_ud[2 * s],
					     .fault = shard_fault(j->fault)},
				     &v->sh);
		if (rc != PS_OK)
			return rc;
		uint32_t n = ps_sproto_nparts(v->sh);
		for (uint32_t k = 0; k < n; k++) {
			uint32_t p = ps_sproto_part_at(v->sh, k)->index;
			v->bound_pending +=
				2ull * j->W * pieces(j, p, j->params_piece);
			v->bound_ops +=
				(uint64_t)j->W * pieces(j, p, j->push_piece) + 2;
		}
		v->hold_next = calloc((size_t)(n + 1) * j->W, sizeof(uint32_t));
		if (!v->hold_next)
			return PS_ENOMEM;
		v->values = calloc(n + 1, sizeof(float *));
		v->mom = calloc(n + 1, sizeof(float *));
		v->acc = calloc(n + 1, sizeof(double *));
		v->shd.last = calloc(j->W, sizeof(uint32_t));
		v->shd.last_it = calloc(j->W, sizeof(uint64_t));
		v->shd.kind = j->params_gate;
		v->shd.server = 1;
		v->shd.credit = j->params_credit;
		if (!v->values || !v->mom || !v->acc || !v->shd.last ||
		    !v->shd.last_it)
			return PS_ENOMEM;
		for (uint32_t k = 0; k < n; k++) {
			const ps_sproto_part *sp = ps_sproto_part_at(v->sh, k);
			v->values[k] = malloc(sp->desc->numel * sizeof(float));
			v->mom[k] = calloc(sp->desc->numel, sizeof(float));
			v->acc[k] = calloc(sp->desc->numel, sizeof(double));
			if (!v->values[k] || !v->mom[k] || !v->acc[k])
				return PS_ENOMEM;
			if (!j->start)
				continue;
			/* resumed: the checkpoint's values, as
			 * ps_snapshot_load reads them */
			memcpy(v->values[k], j->base[sp->index],
			       sp->desc->numel * sizeof(float));
			ps_sproto_resume(v->sh, k, j->start, j->start);
		}
		rc = ps_join_create(JOIN_MAX, UINT64_MAX, join_fault(j->fault),
				    &v->join);
		if (rc != PS_OK)
			return rc;
	}
	rc = ps_membership_create(&(ps_membership_config){
					  .servers = j->S,
					  .workers = j->W,
					  .register_timeout_ms = 10000,
					  .heartbeat_interval_ms = HB_INTERVAL,
					  .heartbeat_timeout_ms = HB_TIMEOUT,
					  .fault = membership_fault(j->fault)},
				  0, &j->ms);
	if (rc != PS_OK)
		return rc;
	j->last_hb = calloc(j->N, sizeof(*j->last_hb));
	if (!j->last_hb)
		return PS_ENOMEM;
	rc = dst_ckpt_setup(j);
	if (rc != PS_OK)
		return rc;
	rc = register_all(j);
	if (rc != PS_OK)
		return rc;
	j->dead = -1;
	/* a node dies in one seed of five, at a step of the first 2000 */
	if (rng_below(&j->rng, 5) == 0)
		j->kill_at = 1 + rng_below(&j->rng, 2000);
	j->report_lost = j->kill_at % 2 == 0;
	/* the scheduler WELCOMEs everyone; worker 0 then sends INIT */
	for (uint32_t n = 0; n < j->W + j->S; n++) {
		rc = send_msg(j, j->W + j->S, n, M_WELCOME, 0, 0, 0, NULL);
		if (rc != PS_OK)
			return rc;
	}
	/* each application asks to begin its first iteration */
	for (uint32_t w = 0; w < j->W; w++) {
		j->w[w].it = j->start;
		j->progress[w] = j->start;
	}
	for (uint32_t w = 0; w < j->W && rc == PS_OK; w++)
		rc = app_next(j, w, j->start);
	return rc;
}

static void drop_kept(void *m, void *ud)
{
	(void)ud;
	free_msg(m);
}

static void teardown(job *j)
{
	for (uint32_t c = 0; j->ch && c < j->N * j->N; c++)
		while (j->ch[c].head) {
			msg *m = j->ch[c].head;
			j->ch[c].head = m->next;
			free_msg(m);
		}
	dst_ckpt_teardown(j);
	for (uint32_t w = 0; j->w && w < j->W; w++) {
		ps_wproto_destroy(&j->w[w].proto);
		ps_join_destroy(&j->w[w].join, drop_kept, NULL);
		free(j->w[w].sh.v);
		free(j->w[w].sh.last);
		free(j->w[w].sh.last_it);
	}
	for (uint32_t s = 0; j->s && s < j->S; s++) {
		srv *v = &j->s[s];
		uint32_t n = v->sh ? ps_sproto_nparts(v->sh) : 0;
		if (v->running && v->op.ctx)
			free_msg(v->op.ctx);
		/* ops accepted, never run: their messages */
		ps_sproto_op op;
		while (v->sh && (v->running || ps_sproto_next_op(v->sh, &op))) {
			if (!v->running && op.ctx)
				free_msg(op.ctx);
			v->running = 0;
			ps_sproto_op_done(v->sh);
		}
		for (uint32_t k = 0; k < n && v->values; k++) {
			free(v->values[k]);
			free(v->mom[k]);
			free(v->acc[k]);
		}
		free(v->values);
		free(v->hold_next);
		free(v->mom);
		free(v->acc);
		free(v->shd.v);
		free(v->shd.last);
		free(v->shd.last_it);
		ps_sproto_destroy(&v->sh);
		ps_join_destroy(&v->join, drop_kept, NULL);
	}
	for (uint32_t i = 0; i < j->nseen; i++)
		free_msg(j->seen[i]);
	free(j->w);
	free(j->s);
	free(j->ch);
	free(j->push_numbers);
	free(j->params_numbers);
	free(j->last_hb);
	free(j->progress);
	ps_stop_round_free(&j->sr);
	ps_membership_destroy(&j->ms);
	ps_placement_free(&j->pl);
}

/* Actions: channels (N*N), then per server start/finish, then per worker
 * compute. Picks an enabled one by weight; -1 when none is enabled. */
static int64_t pick(job *j)
{
	uint64_t total = 0, r = 0;
	uint32_t nch = j->N * j->N;

	for (int pass = 0; pass < 2; pass++) {
		uint64_t acc = 0;
		if (pass == 1) {
			if (total == 0)
				return -1;
			r = rng_next(&j->rng) % total;
		}
		for (uint32_t c = 0; c < nch; c++)
			if (j->ch[c].head) {
				acc += j->ch[c].weight;
				if (pass == 1 && r < acc)
					return c;
			}
		for (uint32_t s = 0; s < j->S; s++) {
			srv *v = &j->s[s];
			int can = (v->running || ps_sproto_ops_waiting(v->sh) > 0) &&
				  !is_dead(j, j->W + s);
			if (can) {
				acc += 4;
				if (pass == 1 && r < acc)
					return nch + s;
			}
		}
		for (uint32_t w = 0; w < j->W; w++)
			if (worker_can_compute(j, w) && !is_dead(j, w)) {
				acc += j->w[w].weight;
				if (pass == 1 && r < acc)
					return nch + j->S + w;
			}
		for (uint32_t s = 0; s < j->S; s++)
			if (dst_ckpt_writing(j, s) && !is_dead(j, j->W + s)) {
				acc += 2; /* a disk finishes a write */
				if (pass == 1 && r < acc)
					return nch + j->S + j->W + s;
			}
		total = acc;
	}
	return -1;
}

/* Worker 0's initial values, once it is welcomed. */
static int send_init(job *j)
{
	for (uint32_t p = 0; p < j->P; p++) {
		uint64_t n = j->pl->parts[p].numel;
		float *x = malloc(n * sizeof(float));
		int rc;
		if (!x)
			return PS_ENOMEM;
		for (uint64_t e = 0; e < n; e++)
			x[e] = (float)expected(j, p, e, 0);
		rc = send_msg(j, 0, j->W + j->pl->parts[p].server, M_INIT, p, 0,
			      0, x);
		if (rc != PS_OK)
			return rc;
	}
	return PS_OK;
}

/* A message reaches a member node. */
static int deliver(job *j, uint32_t to, msg *m)
{
	int kept = 0, rc;

	if (m->hostile)
		rc = hostile_receive(j, to, m, &kept);
	else if (to < j->W)
		rc = worker_receive(j, to, m->from - j->W, m);
	else
		rc = server_receive(j, to - j->W, m->from, m, &kept);
	if (!kept)
		free_msg(m);
	return rc;
}

/* Node `from`'s send to the dead node `to` failed: it reports the lost
 * peer, and the scheduler must end the job naming `to`. */
static int report_lost(job *j, uint32_t from, uint32_t to)
{
	char why[1400];
	int rc = ps_membership_lost(j->ms, id_of(j, from), id_of(j, to),
				    "PUSH send failed: timed out", j->now, why,
				    sizeof(why));

	if (rc != PS_EABORTED)
		return fail(j, "node %u reported the dead node %u lost, and "
			    "the scheduler did not end the job: %s", from, to,
			    why);
	j->lost_reported = 1;
	return blames_the_dead(j, why);
}

/* A message reaches node `to`: through its joining machine. */
static int arrive(job *j, uint32_t to, msg *m)
{
	if (to == sched(j)) {
		int rc = sched_receive(j, m);
		free_msg(m);
		return rc;
	}
	if (is_dead(j, to)) {
		uint32_t from = m->from;
		free_msg(m);
		if (!j->report_lost || from >= j->W + j->S)
			return PS_OK;
		return report_lost(j, from, to);
	}
	ps_join *jn = to < j->W ? j->w[to].join : j->s[to - j->W].join;
	void *early;
	int rc = PS_OK;

	switch (ps_join_on_message(jn, m->from == j->W + j->S,
				   m->type == M_WELCOME, m, 1)) {
	case PS_JOIN_DELIVER:
		return deliver(j, to, m);
	case PS_JOIN_KEPT:
		return PS_OK;
	case PS_JOIN_DROP:
		free_msg(m);
		return PS_OK;
	case PS_JOIN_WELCOME:
		break;
	}
	free_msg(m);
	ps_join_welcomed(jn);
	if (to == 0 && !j->start)
		rc = send_init(j);
	if (to >= j->W && j->start) {
		/* resumed: the checkpoint's values go out as INIT's would */
		rc = ps_sproto_start(j->s[to - j->W].sh);
		if (rc == PS_OK)
			rc = server_send(j, to - j->W);
	}
	while (rc == PS_OK && ps_join_next_early(jn, &early))
		rc = deliver(j, to, early);
	return rc;
}

/* The lane a message takes (runtime/node.c's flow_of, then tcp's
 * flow % connections): a partition's messages one lane, the rest lane 0. */
static uint32_t lane_of(const job *j, const msg *m)
{
	switch (m->type) {
	case M_PUSH:
	case M_PUSH_ACK:
	case M_PARAMS:
	case M_PARAMS_ACK:
	case M_INIT:
	case M_PULL:
		if (j->fault == FAULT_LANE_PER_MESSAGE)
			return (uint32_t)((m->part + 1 + m->piece +
					   m->iteration + (uint64_t)m->type) %
					  j->lanes);
		return (m->part + 1) % j->lanes;
	default:
		return 0;
	}
}

/* Unlinks the message a channel delivers next: its first, or with
 * several lanes the first of a lane drawn among those that hold one
 * (each lane is FIFO, as one TCP connection; lanes overtake each
 * other). */
static msg *take_next(job *j, channel *c)
{
	msg *prev = NULL, *m = c->head;

	if (j->lanes > 1) {
		uint32_t present = 0, n = 0, pick;
		for (msg *x = c->head; x; x = x->next)
			present |= 1u << lane_of(j, x);
		for (uint32_t l = 0; l < j->lanes; l++)
			n += (present >> l) & 1;
		pick = n > 1 ? rng_below(&j->lrng, n) : 0;
		uint32_t lane = 0;
		for (;; lane++)
			if (((present >> lane) & 1) && pick-- == 0)
				break;
		while (lane_of(j, m) != lane) {
			prev = m;
			m = m->next;
		}
	}
	if (prev) {
		prev->next = m->next;
		j->overtakes++;
	} else
		c->head = m->next;
	if (c->tail == m)
		c->tail = prev;
	m->next = NULL;
	return m;
}

static int step(job *j, int64_t a)
{
	uint32_t nch = j->N * j->N;

	if (a < nch) {
		channel *c = &j->ch[a];
		msg *m = take_next(j, c);
		uint32_t from = (uint32_t)a / j->N, to = (uint32_t)a % j->N;

		if (j->verbose)
			fprintf(stderr, "  step %" PRIu64 ": %s %u -> %u part %u "
				"it %" PRIu64 "\n", j->steps,
				msg_names[m->type], from, to, m->part,
				m->iteration);
		return arrive(j, to, m);
	}
	a -= nch;
	if (a < j->S) {
		uint32_t s = (uint32_t)a;
		if (!j->s[s].running) {
			server_start_op(j, s);
			return PS_OK;
		}
		return server_finish_op(j, s);
	}
	a -= j->S;
	if (a < j->W)
		return worker_compute(j, (uint32_t)a);
	return dst_ckpt_finish_write(j, (uint32_t)(a - j->W));
}


/* PS_OK, or PS_EPROTO with j->failure set. */
/* The scheduler's live credit change (CREDIT, scheduler/credit.c): every
 * node of a direction with a window is told, at once, its new window and
 * the iteration it starts at, the one after the furthest worker's, as
 * the scheduler chooses it. A server may have made that version ready
 * already (a worker computing iteration i holds version i, a server may
 * be sending i + 1): it then changes at its next ready send. Each machine
 * must keep its window until its first transfer of that iteration or
 * version is made ready after the change came. */
static void credit_change(job *j)
{
	uint64_t from = 0;

	for (uint32_t w = 0; w < j->W; w++)
		if (j->w[w].it > from)
			from = j->w[w].it;
	from += 1;
	for (uint32_t w = 0; j->change_push && w < j->W; w++) {
		ps_wproto_on_credit(j->w[w].proto, j->change_push, from);
		j->w[w].sh.credit_next = j->change_push;
		j->w[w].sh.credit_from = from;
		j->w[w].sh.credit_pending = 1;
	}
	for (uint32_t s = 0; j->change_params && s < j->S; s++) {
		ps_sproto_on_credit(j->s[s].sh, j->change_params, from);
		j->s[s].shd.credit_next = j->change_params;
		j->s[s].shd.credit_from = from;
		j->s[s].shd.credit_pending = 1;
	}
	j->changed = 1;
	if (j->verbose)
		fprintf(stderr, "  step %" PRIu64 ": credit change: push %" PRIu64
			", params %" PRIu64 " from iteration %" PRIu64 "\n",
			j->steps, j->change_push, j->change_params, from);
}

static int run_seed(job *j)
{
	void **hold_ud = calloc(8, sizeof(void *));
	int rc = hold_ud ? setup(j, hold_ud) : PS_ENOMEM;

	if (rc == PS_OK && j->verbose) {
		/* the drawn settings, per direction, and every partition's
		 * numbers (push/params) */
		fprintf(stderr, "seed %" PRIu64 ": W=%u S=%u T=%u P=%u K=%u "
			"push: gate=%s credit=%" PRIu64 " pieces=%" PRIu64
			"; params: gate=%s credit=%" PRIu64 " pieces=%" PRIu64
			"; barrier=%d\n  numbers (partition:push/params):",
			j->seed, j->W, j->S, j->T, j->P, j->K,
			ps_gate_name((ps_gate_kind)j->push_gate),
			j->push_credit, j->push_piece,
			ps_gate_name((ps_gate_kind)j->params_gate),
			j->params_credit, j->params_piece, j->barrier);
		for (uint32_t p = 0; p < j->P; p++)
			fprintf(stderr, " %u:%u/%u", p, j->push_numbers[p],
				j->params_numbers[p]);
		fprintf(stderr, "\n");
		if (j->adversary && j->hostile >= 0)
			fprintf(stderr, "  malicious: worker %d\n", j->hostile);
		else if (j->adversary)
			fprintf(stderr, "  malicious: an extra node (%u)\n",
				j->X);
	}
	for (int i = 0; i < 8 && rc == PS_OK; i++) /* before any WELCOME */
		rc = adversary_act(j);
	while (rc == PS_OK && !j->failure[0]) {
		int64_t a = pick(j);
		if (a < 0 && j->dead >= 0) {
			/* everyone left waits on the dead node: the scheduler
			 * must notice and name it */
			rc = advance(j, HB_TIMEOUT + HB_INTERVAL);
			if (rc == PS_OK)
				rc = fail(j, "node %d died and the job hangs: "
					  "nothing can happen and the "
					  "scheduler does not notice", j->dead);
			break;
		}
		if (a < 0) {
			rc = check_end(j);
			if (rc == PS_OK && !j->all_done)
				rc = fail(j, "the membership did not count "
					  "every DONE");
			break;
		}
		rc = step(j, a);
		j->steps++;
		if (rc == PS_OK && j->steps == j->change_at)
			credit_change(j);
		if (rc == PS_OK && j->stop_at && j->steps == j->stop_at) {
			j->stopping = 1; /* a tuner asks: checkpoint and stop */
			rc = sched_ask_stop(j, 0);
		}
		if (rc == PS_OK && j->ckpt_at && j->steps == j->ckpt_at &&
		    !j->stopping && !j->cs.flushing)
			rc = dst_ckpt_ask(j, 0); /* SIGUSR1 */
		if (rc == PS_OK && !j->failure[0])
			rc = adversary_act(j);
		if (rc == PS_OK && !j->failure[0])
			rc = check_all(j);
		if (rc == PS_OK && j->kill_at && j->steps == j->kill_at &&
		    !j->all_done) {
			/* a node dies: a worker still training, or a server */
			uint32_t n = rng_below(&j->rng, j->W + j->S);
			if (n >= j->W || j->w[n].it < j->K)
				j->dead = (int32_t)n;
		}
		if (rc == PS_OK)
			rc = advance(j, 1 + rng_below(&j->rng, 4));
	}
	if (rc == PS_ECLOSED) /* failed with the dead node named */
		rc = PS_OK;
	if (rc == PS_ENOMEM)
		fail(j, "out of memory");
	teardown(j);
	free(hold_ud);
	return j->failure[0] ? PS_EPROTO : PS_OK;
}

int main(int argc, char **argv)
{
	uint64_t first = 1, seeds = 100, failed = 0, steps = 0, killed = 0,
		 reported = 0, adversaries = 0, changes = 0, changes_in = 0, laned = 0, overtakes = 0,
		 stops = 0, stopped = 0, moved = 0, ckpts = 0, manifests = 0,
		 ckpt_stops = 0, resumed = 0;
	int fault = FAULT_NONE, expect_failure = 0, verbose = 0,
	    adversary = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seeds") && i + 1 < argc)
			seeds = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--first") && i + 1 < argc)
			first = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
			first = strtoull(argv[++i], NULL, 10);
			seeds = 1;
		} else if (!strcmp(argv[i], "--fault") && i + 1 < argc) {
			i++;
			for (fault = FAULT_NONE + 1; fault < FAULT_COUNT;
			     fault++)
				if (!strcmp(argv[i], fault_names[fault]))
					break;
			if (fault == FAULT_COUNT) {
				fprintf(stderr, "dst: unknown fault '%s' "
					"(credit-leak, version-skip, "
					"drop-early, blind-scheduler, "
					"blame-reporter, forged-sender, "
					"pull-flood, credit-early, "
					"stop-alone, ckpt-any-version, "
					"ckpt-per-message, lane-per-message)\n",
					argv[i]);
				return 2;
			}
		} else if (!strcmp(argv[i], "--expect-failure"))
			expect_failure = 1;
		else if (!strcmp(argv[i], "--verbose"))
			verbose = 1;
		else if (!strcmp(argv[i], "--adversary"))
			adversary = 1;
		else {
			fprintf(stderr, "usage: dst [--seeds N] [--first S] "
				"[--seed S] [--adversary] [--fault credit-leak|"
				"version-skip|drop-early|blind-scheduler|"
				"blame-reporter|forged-sender|pull-flood|"
				"credit-early|stop-alone|ckpt-any-version|"
				"ckpt-per-message|lane-per-message] "
				"[--expect-failure] [--verbose]\n");
			return 2;
		}
	}
	for (uint64_t s = first; s < first + seeds; s++) {
		job j = {.seed = s,
			 .fault = fault,
			 .verbose = verbose,
			 .adversary = adversary};
		if (run_seed(&j) != PS_OK) {
			failed++;
			if (!expect_failure || failed <= 3)
				printf("seed %" PRIu64 " (W=%u S=%u T=%u P=%u "
				       "K=%u push: gate=%s credit=%" PRIu64
				       " pieces=%" PRIu64 " params: gate=%s "
				       "credit=%" PRIu64 " pieces=%" PRIu64
				       " barrier=%d partition=%" PRIu64
				       " fusion=%d lanes=%u) failed after %" PRIu64
				       " steps: %s\n  replay: %s --seed %" PRIu64
				       "%s%s%s --verbose\n",
				       s, j.W, j.S, j.T, j.P, j.K,
				       ps_gate_name((ps_gate_kind)j.push_gate),
				       j.push_credit, j.push_piece,
				       ps_gate_name((ps_gate_kind)j.params_gate),
				       j.params_credit, j.params_piece,
				       j.barrier,
				       j.partition_size, j.fuse, j.lanes,
				       j.steps, j.failure, argv[0], s,
				       adversary ? " --adversary" : "",
				       fault ? " --fault " : "",
				       fault ? fault_names[fault] : "");
		}
		job r = {0};
		if (dst_ckpt_run_resumed(&j, run_seed, &r) != PS_OK) {
			failed++;
			if (!expect_failure || failed <= 3)
				printf("seed %" PRIu64 ", the job resumed at "
				       "iteration %" PRIu64 " (W=%u S=%u P=%u "
				       "K=%u partition=%" PRIu64 " fusion=%d) "
				       "failed after %" PRIu64 " steps: %s\n"
				       "  replay: %s --seed %" PRIu64 "%s%s%s "
				       "--verbose\n", s, r.start, r.W, r.S,
				       r.P, r.K, r.partition_size, r.fuse,
				       r.steps, r.failure, argv[0], s,
				       adversary ? " --adversary" : "",
				       fault ? " --fault " : "",
				       fault ? fault_names[fault] : "");
		}
		resumed += r.start && !r.failure[0];
		steps += r.steps;
		dst_ckpt_free_disk(&r);
		dst_ckpt_free_disk(&j);
		adversaries += j.adversary;
		changes += j.changed;
		laned += j.lanes > 1;
		overtakes += j.overtakes;
		stops += j.nasked > 0;
		stopped += j.stop_now && !j.failure[0];
		moved += j.nasked > 1 && !j.failure[0];
		changes_in += j.changed && j.changes_in && !j.failure[0];
		ckpts += j.ckpt;
		manifests += (uint64_t)__builtin_popcountll(j.manifests);
		ckpt_stops += j.ckpt && j.stop_now && !j.failure[0];
		steps += j.steps;
		killed += j.dead >= 0 && !j.failure[0];
		reported += j.lost_reported && !j.failure[0];
	}
	printf("dst: %" PRIu64 " seeds from %" PRIu64 ", %" PRIu64
	       " failed, %" PRIu64 " steps checked, %" PRIu64 " with a node "
	       "killed and named by the scheduler (%" PRIu64 " reported lost "
	       "by a peer)%s%s\n", seeds, first, failed, steps, killed,
	       reported, fault ? ", fault " : "",
	       fault ? fault_names[fault] : "");
	printf("dst: %" PRIu64 " seeds asked to stop: %" PRIu64 " stopped "
	       "there, every worker at the same iteration (%" PRIu64 " after "
	       "a worker was late and the stop moved); the rest ran to their "
	       "end first\n", stops, stopped, moved);
	printf("dst: %" PRIu64 " seeds with checkpoints, %" PRIu64 " "
	       "checkpoints complete (manifest written), %" PRIu64 " seeds "
	       "stopped at theirs, %" PRIu64 " jobs resumed from one under "
	       "another layout\n", ckpts, manifests, ckpt_stops, resumed);
	printf("dst: %" PRIu64 " seeds with 2 or 3 connections per peer "
	       "pair, %" PRIu64 " messages delivered past an earlier one of "
	       "their channel\n", laned, overtakes);
	printf("dst: %" PRIu64 " seeds with a live credit change, in force "
	       "in %" PRIu64 " of them before the job ended (the rest ended "
	       "first)\n", changes, changes_in);
	if (adversaries) {
		printf("dst: %" PRIu64 " seeds with a malicious member; its "
		       "messages, per type: refused/dropped/taken/not sent:",
		       adversaries);
		for (int t = 0; t < M_PROGRESS; t++)
			if (t != M_WELCOME)
				printf(" %s %" PRIu64 "/%" PRIu64 "/%" PRIu64
				       "/%" PRIu64, msg_names[t], adv_refused[t],
				       adv_dropped[t], adv_taken[t],
				       adv_trusted[t]);
		printf("; its honest PARAMS_ACKs refused after early ones: %"
		       PRIu64 "\n", adv_own_refused);
	}
	if (expect_failure)
		return failed > 0 ? 0 : 1;
	return failed > 0 ? 1 : 0;
}
