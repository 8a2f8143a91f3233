/*
 * scheduler/state.h - what the files of ps-scheduler share: the job as
 * the scheduler holds it (coord), what it keeps per member, and the calls
 * from one file to another. Not installed: scheduler/scheduler.h is the
 * entry point; the DESIGN of the loop is in scheduler/scheduler.c.
 */
#ifndef ORDO_SCHEDULER_STATE_H
#define ORDO_SCHEDULER_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "model/dag.h"
#include "model/measured.h"
#include "proto/checkpoint_sched.h"
#include "proto/credit_refine.h"
#include "proto/membership.h"
#include "proto/stop.h"
#include "proto/wire.h"
#include "scheduling/placement.h"
#include "transport/transport.h"

typedef struct member {
	ps_node_info info; /* the machine's, copied once ids are given */
	ps_peer peer;
	uint64_t progress; /* server: highest version, from its heartbeats;
			    * worker: the iteration it began (PROGRESS) */
	ps_wire_done stats;
	uint64_t kid;      /* the key id its REGISTER came with (msg->kid,
			    * security.mode = secret): its messages must
			    * come with it; 0: not checked */
} member;

typedef struct coord {
	const ps_config *cfg; /* &in_force */
	const ps_config *given; /* the configuration as given */
	/* the job's configuration with its auto sizes chosen */
	ps_config in_force;
	ps_transport *t;
	ps_node_info self;
	uint64_t job_id;
	uint32_t servers, workers;
	ps_membership *ms; /* who is in the job (proto/membership.h) */
	member *members; /* 1 + registration index, then by node id */
	const ps_tensor_desc *tensors; /* the machine's: what workers declared */
	uint32_t ntensors;
	/* model.file's DAG from its load to the job's plan (NULL: none, or
	 * neither the sizes nor the orders need it) */
	ps_dag *dag;
	int measured; /* dag is checkpoint.dir's measured model */
	ps_placement *placement;
	/* per tensor: the order of parameter sends (scheduling.params_order)
	 * and of pushes (scheduling.push_order); NULL: fifo */
	uint32_t *priority, *push_priority;
	uint64_t dropped;
	/* the data of the barrier being gathered, from its root worker
	 * (ps_client_broadcast), shared by the BARRIER_DONEs that carry
	 * it; NULL: none */
	struct bcast *bcast;
	uint32_t bcast_from; /* the root's node id */
	int64_t started_ms;
	uint64_t start_iteration; /* of the checkpoint resumed, or 0 */
	ps_ckpt_sched ckpt; /* the checkpoints (proto/checkpoint_sched.h) */
	ps_stop_round stop; /* a tuner's stop: the workers ready at it */
	int progress_fd;  /* the launcher's pipe after the port, or -1 */
	uint64_t progress_told; /* last "progress N" written there */
	/* the credit refined from measured iterations
	 * (scheduling.credit_refine, proto/credit_refine.h) */
	int credit_chosen; /* the credit was auto: chosen at the start */
	int refining;
	ps_refine refine;
	uint64_t refine_floor; /* the last iteration every worker began */
	/* the workers' timings of their first iterations
	 * (model.measure_iterations, scheduler/measured.c): per worker
	 * rank whether they came; NULL: none expected (any more) */
	uint8_t *timed;
	ps_timings_sum timings;
	/* the model they made, written, and how it was measured and where
	 * it went; NULL: none (yet) */
	ps_dag *measured_dag;
	char measured_how[160];
	char measured_at[2 * PS_CFG_STR + 160];
	/* a tuner (ps-tune, tune.endpoint; docs/tune.md) */
	struct {
		int state;        /* 0 none, 1 HELLO sent, 2 attached */
		ps_peer peer;
		uint64_t tid;     /* its transport id, once attached */
		uint64_t told;    /* last PROGRESS it was sent */
		int stopping;     /* it asked for a stop at a checkpoint */
		uint64_t nonce;   /* sent only to tune.endpoint; the tuner's
				   * TUNE_HELLO must carry it back */
	} tuner;
} coord;

/* ---- the calls between the files ---------------------------------------- */

/* scheduler/scheduler.c: the loop, the job's start and end */

/* Says who member m is (ps_membership_describe) into buf. */
void psi_sched_describe(const member *m, char *buf, size_t cap);
/* After SIGINT/SIGTERM: aborts the job and returns 1; else 0. */
int psi_sched_interrupted(coord *c);

/* scheduler/send.c: the messages the scheduler sends */

/* h (its type, key, iteration) with the version, job id, sender 0 and
 * length filled in; the body released with free_fn(body, hint), the
 * caller's when the send fails. */
int psi_sched_send_header(coord *c, ps_peer peer, ps_wire_header h,
			  void *body, size_t len, ps_free_fn *free_fn,
			  void *hint);
/* The same with a malloc'd body (or none), freed whatever happens. */
int psi_sched_send_owned(coord *c, ps_peer peer, ps_wire_header h,
			 void *body, size_t len);
/* A message whose body the transport releases with free_fn(body, hint). */
int psi_sched_send_msg_with(coord *c, ps_peer peer, uint32_t type,
			    uint32_t key, void *body, size_t len,
			    ps_free_fn *free_fn, void *hint);
/* A message with a malloc'd body (or none), freed whatever happens. */
int psi_sched_send_msg(coord *c, ps_peer peer, uint32_t type, uint32_t key,
		       void *body, size_t len);
/* A WELCOME or ABORT to member i, by its transport id; frees body. */
int psi_sched_send_addressed(coord *c, uint32_t i, uint32_t type,
			     void *body, size_t len);
/* Tells every registered node the job is over, with a reason. */
void psi_sched_abort_job(coord *c, const char *reason);
/* A message without a body that says an iteration. */
int psi_sched_send_iteration(coord *c, ps_peer peer, uint32_t type,
			     uint64_t iteration);

/* scheduler/registration.c: from the REGISTERs to the WELCOME */

/* Takes REGISTERs until every node has registered, or the job is over. */
int psi_sched_registration(coord *c);
/* Orders members by id: the scheduler, servers by rank, workers by rank. */
int psi_sched_assign_ids(coord *c);
/* The WELCOME to every node: the node table, the plan, the sizes. */
int psi_sched_send_welcomes(coord *c);

/* scheduler/measured.c: the model the workers' timings make */

/* Expects every worker's TIMINGS (model.measure_iterations, no
 * model.file). */
void psi_sched_timings_start(coord *c);
/* A worker's TIMINGS: kept; the last one makes the model and writes
 * it. A malformed one is refused with a
 * warning (advisory: the job goes on). */
int psi_sched_timings(coord *c, const member *m, const ps_msg *msg);
void psi_sched_timings_free(coord *c);
/* At the job's end: what ps-sim makes of the measured model, one line. */
void psi_sched_say_measured(coord *c);
/* Everything of the above. */
void psi_sched_measured_free(coord *c);
/* A start without model.file: checkpoint.dir's measured model, if its
 * tensors are the workers' (1, said on stdout), else 0 (a warning says
 * why where there is one). */
int psi_sched_load_measured(coord *c, ps_dag **dag_p);

/* scheduler/plan.c: the job's plan, before the WELCOME */

/* Where d's tensors differ from the workers': -1 nowhere, else the first
 * tensor that differs (name or size), or the shorter list's length where
 * the counts differ. */
int64_t psi_sched_first_difference(const coord *c, const ps_dag *d);

/* The bytes of the tensors the workers declared. */
uint64_t psi_sched_model_bytes(const coord *c);
/* model.file's DAG into c->dag, where the sizes or the orders need it. */
int psi_sched_load_model(coord *c);
/* The sizes left auto, chosen (the link measured first where needed). */
int psi_sched_choose_sizes(coord *c);
/* The placement and the orders (scheduling/job_plan.h), said and written. */
int psi_sched_plan_job(coord *c);
/* Says the transfer orders; writes them and the configuration in force. */
void psi_sched_say_orders(coord *c);

/* scheduler/summary.c: the summary of a completed job */

/* Prints the summary and writes output.dir/summary.csv. */
void psi_sched_print_summary(coord *c);

/* scheduler/checkpoints.c: checkpoints, and the stop at one */

/* checkpoint.resume, checked against the workers' tensors. */
int psi_sched_open_resume(coord *c);
/* checkpoint.dir, checked and cleaned before anything is written there. */
int psi_sched_prepare_checkpoints(coord *c);
/* A checkpoint a little ahead of the fastest node (late: CKPT_LATE's). */
void psi_sched_request_checkpoint(coord *c, uint64_t late);
/* A worker's STOP_LATE or STOP_READY (proto/stop.h). */
void psi_sched_stop_answer(coord *c, const member *m,
			   const ps_wire_header *h);
/* CKPT_DONE, CKPT_LATE, FLUSHED: PS_ECLOSED once every server flushed. */
int psi_sched_handle_checkpoint(coord *c, member *m, const ps_msg *msg,
				const ps_wire_header *h);
/* Every worker is done: PS_ECLOSED, or PS_OK while the servers flush. */
int psi_sched_job_done(coord *c);
/* A failed job: logs the checkpoint it can be resumed from. */
void psi_sched_say_resume_from(const coord *c);

/* scheduler/tuner.c: the tuner's link */

/* An iteration to the attached tuner; one it cannot reach is given up. */
void psi_sched_send_tuner(coord *c, uint32_t type, uint64_t iteration);
/* tune.endpoint: connects to the tuner and sends it a TUNE_HELLO. */
int psi_sched_tuner_connect(coord *c);
/* A message that is not from a node: the tuner's, or dropped. */
void psi_sched_handle_tuner(coord *c, const ps_msg *msg,
			    const ps_wire_header *h);

/* scheduler/credit.c: the credit window changed during the job */

/* CREDIT from the tuner, which from then on drives the credit alone. */
void psi_sched_change_credit(coord *c, const ps_msg *msg);
/* Starts the credit refinement where this job has one (c->refining). */
void psi_sched_start_refining(coord *c);
/* Every worker began iteration `floor`: the refinement's step. */
void psi_sched_refine_step(coord *c, uint64_t floor);

/* scheduler/progress.c: the workers' progress, the launcher's pipe */

/* PROGRESS from worker m; a new floor goes to whoever follows it. */
void psi_sched_worker_progress(coord *c, member *m, uint64_t iteration);
/* "PORT\n" on the launcher's pipe (ready_fd), kept for "progress N". */
int psi_sched_announce_port(coord *c, int ready_fd);

#endif /* ORDO_SCHEDULER_STATE_H */
