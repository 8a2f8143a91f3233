/*
 * proto/worker.h - a worker's side of the protocol as a state machine,
 * without I/O: what it pushes in which order, what it accepts, what it
 * acknowledges.
 *
 * The machine holds the worker's gate (receivers = servers, the credit
 * window, a live CREDIT change), the counting of fused partitions' member
 * tensors, the version of every partition received, and the DONE held
 * until every push is acknowledged. It holds no gradient or parameter
 * bytes, no socket, thread or clock. Its driver feeds it events and drains
 * the messages it wants sent:
 *
 *   ps_wproto_push        the application pushed tensor t's gradient of
 *                         iteration it. Each partition of an unfused
 *                         tensor becomes ready in the gate (piece by
 *                         piece when pushes go in pieces), carrying ctx
 *                         (the driver's handle on the bytes; every piece
 *                         of it the same). A fused
 *                         tensor is copied by the driver into its
 *                         partition's stage (the result says which, and
 *                         whether the stage is new); once every member is
 *                         in, the driver hands the stage in with
 *                         ps_wproto_stage_ready.
 *   ps_wproto_push_part   one partition of an unfused tensor, alone.
 *   ps_wproto_flush       the gate releases what it may now (the driver
 *                         calls it once a batch of pushes is in, so the
 *                         gate chooses among all of them).
 *   ps_wproto_on_push_ack / on_params / on_credit: a message arrived
 *                         (checked: PS_EPROTO with a reason, nothing
 *                         changed, for a message the protocol does not
 *                         allow; a PUSH_ACK must match a push of its
 *                         partition in flight). In synchronous mode a
 *                         partition's PARAMS acknowledge its push still
 *                         in flight (on_params says so in *acked_p).
 *   ps_wproto_done        the application finished: DONE goes once no
 *                         push waits or is unacknowledged.
 *   ps_wproto_next_msg    PUSH, PARAMS_ACK (when the servers have a
 *                         credit window), DONE.
 *
 * ps-worker's client library (client/messages.c) drives it on its
 * communication thread; ps-sim (sim/cluster_workers.c) for every simulated
 * worker.
 *
 * Threads: a machine belongs to one thread.
 */
#ifndef ORDO_PROTO_WORKER_H
#define ORDO_PROTO_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "scheduling/gate.h"
#include "scheduling/placement.h"

/* The sender of a message that is not a server. */
#define PS_WPROTO_NOT_SERVER UINT32_MAX

typedef struct ps_wproto ps_wproto;

typedef struct ps_wproto_config {
	const ps_placement *pl;
	ps_gate_kind gate;       /* of the pushes */
	uint64_t credit;         /* bytes; 0 = no window */
	uint64_t params_credit;  /* the servers' window for their parameter
				  * sends: with one, PARAMS get a
				  * PARAMS_ACK */
	int sync;                /* synchronous training: a partition's
				  * PARAMS acknowledge its push still in
				  * flight (a server without a credit window
				  * sends no PUSH_ACK: proto/server.h) */
	/* bytes: the pieces a partition is pushed in and its parameters
	 * arrive in (placement.h, "Pieces"); 0: whole */
	uint64_t push_piece, params_piece;
	const uint32_t *numbers; /* per partition: its gate number; copied */
	/* Optional: a clock for the gate meter (ns); NULL = no meter. */
	uint64_t (*clock_ns)(void);
} ps_wproto_config;

/* The configuration of a worker of cfg's job (on pl; numbers: its
 * pushes' gate numbers): every field the job's keys decide. A driver adds
 * its own (clock_ns). */
ps_wproto_config ps_wproto_config_of(const ps_config *cfg,
				     const ps_placement *pl,
				     const uint32_t *numbers);

/* PS_OK, PS_EINVAL, PS_ENOMEM. */
int ps_wproto_create(const ps_wproto_config *cfg, ps_wproto **w_p);
void ps_wproto_destroy(ps_wproto **w_p);

/* What the driver does with a pushed tensor's bytes. */
typedef struct ps_wproto_staging {
	int fused;        /* the tensor shares partition `part` */
	uint32_t part;
	uint64_t offset;  /* its first element in the partition */
	int new_stage;    /* the first member of this iteration: a new stage */
	int complete;     /* the last member: hand the stage in */
} ps_wproto_staging;

/* Tensor t's gradient of iteration `it`. PS_OK; PS_ESTATE with a reason
 * when a member of a fused partition is pushed twice before the others, or
 * for another iteration (each must be pushed once per iteration);
 * PS_ENOMEM. */
int ps_wproto_push(ps_wproto *w, uint32_t t, uint64_t it, void *ctx,
		   ps_wproto_staging *st, char *why, size_t whylen);
/* One partition `part` (global) of unfused tensor t enters the gate on
 * its own, carrying ctx: for a driver whose partitions become ready one
 * by one (a device tensor's, as each copy to the host completes). A
 * tensor is pushed either whole or partition by partition in an
 * iteration. PS_OK; PS_EINVAL with a reason when part is not t's or t is
 * fused; PS_ENOMEM. */
int ps_wproto_push_part(ps_wproto *w, uint32_t t, uint32_t part,
			uint64_t it, void *ctx, char *why, size_t whylen);
/* A complete stage of fused partition `part` enters the gate. */
int ps_wproto_stage_ready(ps_wproto *w, uint32_t part, uint64_t it,
			  void *ctx);
/* The gate releases every push it may now. */
int ps_wproto_flush(ps_wproto *w);

/* Events: a message from server `from` (or PS_WPROTO_NOT_SERVER). A
 * partition's parameters sent in pieces arrive in order, piece by piece;
 * on_params sets *complete_p (may be NULL) when the last one is in: the
 * partition has the version from then on. */
int ps_wproto_on_push_ack(ps_wproto *w, uint32_t from, uint32_t part,
			  uint32_t piece, char *why, size_t whylen);
int ps_wproto_on_params(ps_wproto *w, uint32_t from, uint32_t part,
			uint32_t key, uint64_t version, uint32_t piece,
			size_t payload_len, int *acked_p, int *complete_p,
			char *why, size_t whylen);
void ps_wproto_on_credit(ps_wproto *w, uint64_t credit, uint64_t from);
/* The application is done: DONE once every push is acknowledged. */
int ps_wproto_done(ps_wproto *w);
/* The driver holds version `version` of partition `part` already (ps-sim
 * starts with every parameter present). */
void ps_wproto_assume(ps_wproto *w, uint32_t part, uint64_t version);

typedef enum {
	PS_WPROTO_MSG_PUSH,
	PS_WPROTO_MSG_PARAMS_ACK,
	PS_WPROTO_MSG_DONE,
} ps_wproto_msg_kind;

typedef struct ps_wproto_msg {
	ps_wproto_msg_kind kind;
	uint32_t server;    /* PUSH, PARAMS_ACK: the receiver's rank */
	uint32_t part;
	uint32_t key;       /* the partition's (first) tensor */
	uint32_t tensor;    /* PUSH: the tensor pushed (fused: the last) */
	uint64_t iteration; /* PUSH: the gradient's; PARAMS_ACK: the version */
	int32_t priority;   /* PUSH: the gate's number */
	uint32_t piece;     /* PUSH, PARAMS_ACK: the piece */
	uint64_t offset;    /* PUSH: the piece's first element within the
			     * partition */
	uint64_t bytes;
	int fused;          /* PUSH: ctx is a stage */
	void *ctx;          /* PUSH: as given */
} ps_wproto_msg;

/* The next message to send: 1, or 0 when none. */
int ps_wproto_next_msg(ps_wproto *w, ps_wproto_msg *m_p);

/* The newest version received of partition `part`: 1 and *version_p, or
 * 0 when none arrived yet. */
int ps_wproto_part_version(const ps_wproto *w, uint32_t part,
			   uint64_t *version_p);
/* The newest version of tensor t whose every partition arrived: 1 and
 * *version_p, or 0. */
int ps_wproto_tensor_version(const ps_wproto *w, uint32_t t,
			     uint64_t *version_p);
/* Pushes waiting in the gate or unacknowledged. */
int ps_wproto_idle(const ps_wproto *w);

typedef struct ps_wproto_stats {
	uint64_t pushes, gate_ns; /* released; gate time with a clock */
} ps_wproto_stats;
void ps_wproto_get_stats(const ps_wproto *w, ps_wproto_stats *st);
const ps_gate *ps_wproto_gate(const ps_wproto *w);

/* Visits every push still waiting in the gate (its ctx and whether it is
 * a stage): for the driver's teardown. */
void ps_wproto_foreach_waiting(const ps_wproto *w,
			       void (*fn)(void *ctx, int fused, void *ud),
			       void *ud);

#endif /* ORDO_PROTO_WORKER_H */
