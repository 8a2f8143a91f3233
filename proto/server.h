/*
 * proto/server.h - a server's shard as a protocol state machine, without
 * I/O.
 *
 * The machine holds what the protocol decides for the partitions a server
 * owns: which messages are legal, how many gradients of which version are
 * in, when a partition is updated, its version, and which parameter sends
 * go out in which order under the credit window (the server's ps_gate).
 * It holds no values, sockets, threads or clock. Its driver feeds it
 * events and drains what it wants done:
 *
 *   events   ps_sproto_on_init / on_push / on_pull / on_params_ack /
 *            on_credit: a message arrived (checked: a message the
 *            protocol does not allow is refused with PS_EPROTO and a
 *            reason, and changes nothing);
 *            ps_sproto_op_done: the op the machine started has finished.
 *   ops      ps_sproto_next_op: the work to do now, one op at a time in
 *            the order the messages were accepted (a server has one
 *            thread): copy INIT's values, sum a gradient into the
 *            partition's accumulator, apply the optimizer.
 *   messages ps_sproto_next_msg: PUSH_ACK and PARAMS to send, in order.
 *
 * ps-server (server/server.c) runs every op at once on its thread, with
 * the payload the op names; ps-sim (sim/cluster_servers.c) charges each
 * op its time on the server's simulated CPU and carries the messages over
 * its simulated links. Both run this machine, so they cannot disagree
 * about the protocol.
 *
 * Semantics (as docs/design-notes.md):
 *  - synchronous: a push of iteration i is legal for a partition at
 *    version i, once per worker; the W-th push of a version is summed in
 *    by the update itself (one pass over the partition, not two); the
 *    update makes version i + 1, whose values become ready to go to every
 *    worker in rank order.
 *  - pieces (placement.h): a partition pushed in pieces takes each
 *    worker's pieces in order (0, 1, ...; over one connection they arrive
 *    so), each summed into its part of the sum; the update follows the
 *    last piece of the round, over the whole sum. Parameters sent in
 *    pieces go as one transfer per piece, and their PARAMS_ACKs must come
 *    in the same order.
 *  - asynchronous: every push is applied by itself (an update of one
 *    gradient); parameters go out only when a worker pulls.
 *  - a PUSH_ACK is sent when the push's sum is done, or, for the push an
 *    update carries, when the update starts (the sender's credit returns:
 *    its bytes have arrived) - in synchronous mode only with a credit
 *    window: without one, the partition's next PARAMS acknowledges the
 *    push (proto/worker.h), one message fewer per push; a PARAMS_ACK
 *    returns a parameter send's credit, and must match a PARAMS of its
 *    partition sent to that worker and not yet acknowledged (a forged or
 *    duplicated one is refused: it cannot enlarge the window).
 *  - PULL: the partition's current values go to the worker (in
 *    synchronous mode too) once its INIT's op has run (before, the values
 *    are not there: refused), unless a send of the partition to that
 *    worker waits in the gate already: then it is refused (its values are on
 *    their way), so that PULLs repeated faster than the window releases
 *    cannot make the gate hold a send each; at most two sends per
 *    partition and worker wait.
 *  - CREDIT: a new window from the first parameter send of version
 *    `from` on.
 *  - barrier (synchronous only): the sends of version v become ready
 *    only once every partition the server owns has version v, then in a
 *    random order per worker (a seeded permutation per server, version
 *    and worker, interleaved across workers): TensorFlow's PS, where
 *    workers read every parameter at the start of the next iteration in
 *    no enforced order.
 *
 * Values: a parameter send is ready when its version is made and goes out
 * when the gate releases it. The driver decides what it sends then: the
 * config's hold() is called when a send becomes ready (ps-server takes a
 * reference to the values as they are) and its result comes back with the
 * PARAMS message; drop() frees it for sends never released.
 *
 * Threads: a machine belongs to one thread.
 */
#ifndef ORDO_PROTO_SERVER_H
#define ORDO_PROTO_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "scheduling/gate.h"
#include "scheduling/placement.h"

/* The sender of a message that is not a worker. */
#define PS_SHARD_NOT_WORKER UINT32_MAX

typedef struct ps_sproto ps_sproto;

typedef struct ps_sproto_config {
	const ps_placement *pl;
	uint32_t server;  /* this server's rank: it owns pl's partitions
			   * with .server == rank */
	uint32_t workers;
	int async;
	ps_gate_kind gate;       /* of the parameter sends */
	uint64_t credit;         /* bytes; 0 = no window */
	uint64_t push_credit;    /* the workers' window for their pushes:
				  * with one, pushes get a PUSH_ACK */
	/* bytes: the pieces partitions are pushed in and their parameters
	 * sent in (placement.h, "Pieces"); 0: whole. Pushes in pieces need
	 * synchronous mode and a gate other than counter for sends in
	 * pieces (ps_config_validate says why; create refuses them). */
	uint64_t push_piece, params_piece;
	int barrier;             /* see "barrier" above */
	uint64_t iterations;     /* async: pushes are of iterations below
				  * it (the job's train.iterations); 0: no
				  * bound */
	const uint32_t *numbers; /* per global partition: the gate number of
				  * its parameter sends
				  * (ps_order_partition_numbers); copied */
	/* Optional. hold(ud, k, worker): a send of local partition k to
	 * worker became ready; its result is the message's `held`.
	 * drop(ud, held): a ready send is discarded (destroy). */
	void *(*hold)(void *ud, uint32_t k, uint32_t worker);
	void (*drop)(void *ud, void *held);
	/* Optional: a clock for the gate meter (ns); NULL = no meter. */
	uint64_t (*clock_ns)(void);
	void *ud;
	/* A deliberate bug, for the simulation tests' proof that they can
	 * fail (tests/dst); PS_SPROTO_FAULT_NONE everywhere else. */
	int fault;
} ps_sproto_config;

enum {
	PS_SPROTO_FAULT_NONE = 0,
	PS_SPROTO_FAULT_CREDIT_LEAK,  /* every third PARAMS_ACK returns no
					credit */
	PS_SPROTO_FAULT_VERSION_SKIP, /* the first update of the first local
					partition makes version + 2 */
	PS_SPROTO_FAULT_PULL_FLOOD,   /* a PULL is answered even while a send
					of its partition to that worker
					waits in the gate */
	PS_SPROTO_FAULT_CREDIT_EARLY, /* a credit change takes effect when
					it arrives, not at its version */
};

/* A local partition's protocol state (read-only for the driver, except
 * through ps_sproto_resume). */
typedef struct ps_sproto_part {
	const ps_partition *desc;
	uint32_t index;   /* global partition index */
	uint64_t version; /* updates applied (sync: the iteration reached) */
	int initialized;
	/* asynchronous mode: per worker rank, 1 + the iteration of the last
	 * push accepted */
	uint64_t *next_it;
} ps_sproto_part;

typedef enum {
	PS_SHARD_OP_INIT,      /* copy the INIT payload into the values */
	PS_SHARD_OP_AGGREGATE, /* sum the push's gradient (set if first)
				* into elements offset .. offset + numel of
				* the partition's sum (a piece, or all) */
	PS_SHARD_OP_UPDATE,    /* optimizer over `count` gradients, the last
				* of them the round's last push (ctx),
				* summed in on the way (first: it is the
				* only one) - one pass, no sum written;
				* with ctx NULL (pushes in pieces) every
				* gradient is in the sum already */
} ps_sproto_op_kind;

typedef struct ps_sproto_op {
	ps_sproto_op_kind kind;
	uint32_t k;         /* local partition */
	uint32_t worker;    /* INIT, AGGREGATE: the sender's rank */
	uint64_t iteration; /* AGGREGATE, UPDATE: the push's */
	uint32_t count;     /* UPDATE: gradients summed */
	int first;          /* the push is the first of its sum (set, not
			     * add) */
	int32_t priority;   /* AGGREGATE, UPDATE: the push's */
	int ack;            /* AGGREGATE: a PUSH_ACK follows the sum;
			     * UPDATE: it was queued when the op started */
	uint32_t piece;     /* AGGREGATE: the push's piece */
	int all_summed;     /* UPDATE: every gradient of the round is in the
			     * sum already (pushes in pieces; ctx NULL) */
	uint64_t offset;    /* the elements the op covers: AGGREGATE its
			     * piece's, else the whole partition's */
	uint64_t numel;
	void *ctx;          /* the message's, as given with it */
} ps_sproto_op;

typedef enum {
	PS_SHARD_MSG_PUSH_ACK,
	PS_SHARD_MSG_PARAMS,
} ps_sproto_msg_kind;

typedef struct ps_sproto_msg {
	ps_sproto_msg_kind kind;
	uint32_t worker;    /* receiver's rank */
	uint32_t k;         /* local partition */
	uint32_t partition; /* global */
	uint32_t key;       /* the partition's (first) tensor */
	uint64_t iteration; /* PUSH_ACK: the push's; PARAMS: the version */
	int32_t priority;   /* PUSH_ACK: the push's; PARAMS: the gate's */
	uint32_t piece;     /* PUSH_ACK: the push's; PARAMS: its piece */
	uint64_t offset;    /* PARAMS: the piece's first element */
	uint64_t bytes;     /* PARAMS: the payload (the piece's) */
	void *held;         /* PARAMS: hold()'s result */
} ps_sproto_msg;

/* PS_OK, PS_EINVAL (bad config), PS_ENOMEM. */
/* The configuration of server `server` of cfg's job (on pl, with
 * `workers` workers; numbers: its parameter sends' gate numbers): every
 * field the job's keys decide. A driver adds its own (hold, drop,
 * clock_ns, ud). */
ps_sproto_config ps_sproto_config_of(const ps_config *cfg,
				     const ps_placement *pl, uint32_t server,
				     uint32_t workers,
				     const uint32_t *numbers);

int ps_sproto_create(const ps_sproto_config *cfg, ps_sproto **sh_p);
/* Drops every send still waiting (drop()). NULL-safe; sets *sh_p NULL. */
void ps_sproto_destroy(ps_sproto **sh_p);

uint32_t ps_sproto_nparts(const ps_sproto *sh);
const ps_sproto_part *ps_sproto_part_at(const ps_sproto *sh, uint32_t k);
/* The local index of global partition `part`, or -1. */
int32_t ps_sproto_local(const ps_sproto *sh, uint32_t part);

/*
 * Events: a message from worker `from` (or PS_SHARD_NOT_WORKER) about
 * partition `part` of tensor `key`. PS_OK; PS_EPROTO with a reason in why
 * (the message is refused, nothing changed); PS_ENOMEM.
 * ctx goes with the op the message starts. acked (push): its PUSH_ACK was
 * sent already (ps_sproto_ack), none is sent when it is summed.
 */
int ps_sproto_on_init(ps_sproto *sh, uint32_t from, uint32_t part,
		     uint32_t key, size_t payload_len, void *ctx, char *why,
		     size_t whylen);
int ps_sproto_on_push(ps_sproto *sh, uint32_t from, uint32_t part,
		     uint32_t key, uint64_t iteration, int32_t priority,
		     uint32_t piece, size_t payload_len, void *ctx, int acked,
		     char *why, size_t whylen);
int ps_sproto_on_pull(ps_sproto *sh, uint32_t from, uint32_t part,
		     uint32_t key, char *why, size_t whylen);
int ps_sproto_on_params_ack(ps_sproto *sh, uint32_t from, uint32_t part,
			   uint32_t piece, char *why, size_t whylen);
void ps_sproto_on_credit(ps_sproto *sh, uint64_t credit, uint64_t from);

/* Checks a push as ps_sproto_on_push would, without taking it: PS_OK with
 * the local partition in *k_p, or PS_EPROTO with a reason. For a driver
 * that holds pushes back (asynchronous checkpoints, server/snapshot.h). */
int ps_sproto_check_push(const ps_sproto *sh, uint32_t from, uint32_t part,
			uint32_t key, uint64_t iteration, uint32_t piece,
			size_t payload_len, uint32_t *k_p, char *why,
			size_t whylen);
/* Queues the PUSH_ACK of a push held back (see acked above). */
int ps_sproto_ack(ps_sproto *sh, uint32_t from, uint32_t part,
		 uint64_t iteration, int32_t priority, uint32_t piece);

/* Resuming from a checkpoint: local partition k holds version `version`
 * and is initialised; in asynchronous mode every worker's next iteration
 * is next_it. Then ps_sproto_start sends every partition's values. */
void ps_sproto_resume(ps_sproto *sh, uint32_t k, uint64_t version,
		     uint64_t next_it);
int ps_sproto_start(ps_sproto *sh);

/* The op to run now, marked running: 1, or 0 when one runs already or
 * none waits. */
int ps_sproto_next_op(ps_sproto *sh, ps_sproto_op *op_p);
/* The running op finished. PS_OK, PS_EINVAL (none runs), PS_ENOMEM. */
int ps_sproto_op_done(ps_sproto *sh);
/* Ops accepted and not finished (the running one included). */
uint32_t ps_sproto_ops_waiting(const ps_sproto *sh);

/* The next message to send: 1, or 0 when none. */
int ps_sproto_next_msg(ps_sproto *sh, ps_sproto_msg *m_p);

/* Counters: pushes summed, updates applied, parameter sends released,
 * gate time (ns, with a clock) */
typedef struct ps_sproto_stats {
	uint64_t pushes, updates, sends, gate_ns;
} ps_sproto_stats;
void ps_sproto_get_stats(const ps_sproto *sh, ps_sproto_stats *st);

/* For checkers (deterministic simulation): the gate's credit window and
 * the bytes it holds in flight. */
const ps_gate *ps_sproto_gate(const ps_sproto *sh);

#endif /* ORDO_PROTO_SERVER_H */
