/*
 * sim/cluster_state.h - what the files of the simulated cluster share: a
 * run (sim), its workers and messages, the kinds of its events, and the
 * calls from one file to another. Not installed: sim/cluster.h is the
 * entry point; the DESIGN of the simulation is in sim/cluster.c.
 */
#ifndef ORDO_SIM_CLUSTER_STATE_H
#define ORDO_SIM_CLUSTER_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "model/dag.h"
#include "proto/engine.h"
#include "proto/server.h"
#include "proto/worker.h"
#include "scheduling/placement.h"
#include "sim/cluster.h"
#include "sim/events.h"
#include "sim/fair.h"
#include "sim/link.h"
#include "sim/timeline.h"

enum {
	EV_OP_DONE,     /* node: worker */
	EV_UP_START,    /* arg: message */
	EV_ARRIVE,      /* arg: message */
	EV_PUSH_ACK,    /* node: worker, arg: partition | piece << 32 */
	EV_PARAMS_ACK,  /* node: worker, arg: partition | piece << 32 */
	EV_SERVER_OP,   /* node: server: its running op is done */
	EV_NET,         /* fair sharing: arg: generation */
	EV_ARRIVALS,    /* arg: the first of messages chained by next_free,
			 * each as an EV_ARRIVE */
};

/* What a message carries (fair sharing sends acknowledgements as
 * messages too). */
enum { MSG_PARAMS = 0, MSG_PUSH = 1, MSG_PUSH_ACK, MSG_PARAMS_ACK };

/* 20 bytes: with fair sharing and no credit, every push of an iteration
 * is in flight at once (26 million at 8192 x 512 with 64 KiB partitions). */
typedef struct msg {
	uint32_t part, worker;
	uint32_t iteration;  /* < train.iterations <= 10^9 */
	uint32_t next_free;  /* also: next in its stream (fair sharing) */
	uint32_t kind : 2;   /* MSG_* */
	uint32_t piece : 30; /* < PS_MAX_PIECES */
} msg;
_Static_assert(sizeof(msg) == 20, "a message stays 20 bytes");

typedef struct worker {
	ps_wproto *proto;    /* its side of the protocol (proto/worker.h) */
	ps_engine *engine;   /* which op runs next (proto/engine.h) */
	uint64_t it;
	int busy, waiting;
	uint32_t running;
	double op_start, wait_since, wait_us, last_end, e_sum;
	unsigned e_n;
} worker;

typedef struct sim {
	const ps_config *cfg;
	const ps_dag *dag;
	ps_link_model lm;
	ps_placement *pl;
	uint32_t W, S, K;
	uint32_t *number;     /* per partition: gate number of its
			       * parameter sends */
	uint32_t *push_number; /* ... and of its pushes */
	uint64_t *part_bytes; /* per partition */
	uint64_t push_piece, params_piece; /* pieces' bytes; 0: whole */
	uint32_t *tparts, *tparts_first; /* per tensor: its partitions */
	worker *w;
	ps_sproto **shard; /* per server: its protocol (proto/server.h) */
	double now;       /* when server cur_srv's op finished (param_ready) */
	uint32_t cur_srv;
	ps_link *up, *down; /* per host */
	/* fair sharing (link.sharing = fair) */
	int fair;
	ps_fair *net;
	ps_sim_opts opts;
	double machine_cap; /* bytes/us of all streams together, 0 = none */
	uint64_t small_bytes; /* messages up to this size cost small_w */
	double small_w;       /* machine_cap / their rate */
	uint64_t msg_min;     /* messages up to this size pay no
			       * machine_message_us */
	/* link.latency_jitter (NULL: none): per stream, its last arrival */
	double *stream_last;
	uint64_t jitter_rng; /* its draws' splitmix64 state, from 0 */
	msg *msgs;
	uint32_t nmsgs, capmsgs, free_msg;
	uint32_t batch_tail; /* last of the open EV_ARRIVALS, or NOMSG */
	double batch_t;      /* its time */
	double *up_end; /* fifo: per message, when its uplink carried it */
	ps_sim_heap heap;
	double compute_us, comm_oracle_us;
	double *iter_end; /* per iteration: the job's end (max) */
	uint64_t cycle_left; /* (worker, tensor) pairs without version 1 */
	double makespan;
	uint64_t messages;
	/* timeline (NULL: off) */
	ps_sim_timeline *tl;
	uint32_t trace_workers;
	double *push_ready, *push_sent, *param_ready; /* [w * P + p] */
	uint64_t *push_iter;                          /* [w * P + p] */
	int rc;
} sim;

#define NOMSG UINT32_MAX

/* ---- the calls between the files ---------------------------------------- */

/* sim/cluster.c: the event loop */

/* The run fails with rc (the first failure is kept). */
void psi_cluster_fail(sim *s, int rc);
/* An event (kind, node, arg) at t. */
void psi_cluster_schedule(sim *s, double t, uint32_t kind, uint32_t node,
			  uint64_t arg);
/* Message i arrives at t (arrivals at one time: one EV_ARRIVALS). */
void psi_cluster_schedule_arrival(sim *s, double t, uint32_t i);

/* sim/cluster_messages.c: messages and links */

/* Message i goes back to the free list. */
void psi_cluster_msg_free(sim *s, uint32_t i);
/* Fair sharing's ps_fair_ops (sim/fair.h) over the run's messages; ud is
 * the run */
void psi_cluster_fair_schedule(void *ud, double t, uint32_t node, uint64_t arg);
void psi_cluster_fair_sent(void *ud, uint32_t m, double t);
uint64_t psi_cluster_fair_bytes(void *ud, uint32_t m);
uint32_t psi_cluster_fair_next(void *ud, uint32_t m);
void psi_cluster_fair_set_next(void *ud, uint32_t m, uint32_t next);
/* The payload message m carries: its piece of its partition, or none
 * (an acknowledgement). */
uint64_t psi_cluster_msg_bytes(const sim *s, const msg *m);
/* fifo: message i starts on its sender's uplink at t. */
void psi_cluster_up_start(sim *s, uint32_t i, double t);
/* Fair sharing: an acknowledgement (no payload) enters its stream. */
void psi_cluster_send_ack(sim *s, int kind, uint32_t part, uint32_t piece,
			  uint32_t wrank, double t);
/* An acknowledgement event's argument: the partition and its piece. */
uint64_t psi_cluster_ack_arg(uint32_t part, uint32_t piece);
/* A sender hands a message (a piece of a partition) to the transport at
 * t. */
void psi_cluster_hand_over(sim *s, int push, uint32_t part, uint32_t piece,
			   uint32_t wrank, uint64_t iteration, double t);

/* sim/cluster_workers.c: the workers */

/* The engine's question (proto/engine.h): version `it` of tensor t is
 * here? ud is the worker. */
int psi_cluster_have_params(void *ud, uint32_t t, uint64_t it, int *have_p);
/* Worker w runs the ops its engine picks from t on, or waits. */
void psi_cluster_try_run(sim *s, uint32_t w, double t);
/* Worker w's running op is done at t. */
void psi_cluster_op_done(sim *s, uint32_t w, double t);
/* Parameters (a piece of a partition) reach their worker at t. */
void psi_cluster_params_arrive(sim *s, const msg *m, double t);
/* A PUSH_ACK reached worker w: the push of part's piece is done. */
void psi_cluster_push_acked(sim *s, uint32_t w, uint32_t part, uint32_t piece,
			    double t);

/* sim/cluster_servers.c: the servers */

/* The shard machine's hold (proto/server.h): a parameter send became
 * ready in the gate of the server whose op just finished; ud is the
 * run. */
void *psi_cluster_param_ready(void *ud, uint32_t k, uint32_t w);
/* Server srv's running op is done at t: its next one starts. */
void psi_cluster_server_op_done(sim *s, uint32_t srv, double t);
/* A push (a piece of it) reaches its server at t. */
void psi_cluster_push_arrive(sim *s, const msg *m, double t);
/* A worker's PARAMS_ACK reached server srv: its credit returns. */
void psi_cluster_params_acked(sim *s, uint32_t srv, uint32_t w, uint32_t part,
			      uint32_t piece, double t);

/* sim/cluster_setup.c: a run set up and torn down */

/* The job's plan, its workers, servers and links (why: what is wrong). */
int psi_cluster_setup(sim *s, char *why, size_t whylen);
/* Frees what a run holds, also after a failed setup. */
void psi_cluster_teardown(sim *s);

/* sim/cluster_results.c: what a run reports */

/* The digest after one more event (time, kind, node, argument). */
uint64_t psi_cluster_mix_event(uint64_t digest, double t, uint32_t kind,
			       uint32_t node, uint64_t arg);
/* The metrics and bounds of a run that completed, into r. */
void psi_cluster_results(sim *s, ps_sim_result *r);

#endif /* ORDO_SIM_CLUSTER_STATE_H */
