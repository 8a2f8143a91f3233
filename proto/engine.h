/*
 * proto/engine.h - a worker's compute engine as a state machine, without
 * I/O: which op of a model's DAG runs next.
 *
 * One engine, like a GPU stream, runs one op at a time. Among the ops
 * whose dependencies are done it runs the lowest-indexed one that can
 * run: a forward op of iteration i needs version i of every tensor it
 * reads. When none can, the engine waits for parameters. A backward op's
 * gradients are pushed when it finishes (its tensors, in order). There is
 * no barrier between iterations beyond the DAG: the next iteration's
 * first ops start as soon as their own parameters are there.
 *
 * The machine does not run ops or hold parameters: its driver says which
 * tensor versions it holds (the `have` callback), runs the op the machine
 * names for its time, and reports it done. ps-worker's replay
 * (worker/replay.c) drives it with a real clock and the client API; ps-sim
 * (sim/cluster_workers.c) with a simulated one.
 *
 * Threads: an engine belongs to one thread.
 */
#ifndef ORDO_PROTO_ENGINE_H
#define ORDO_PROTO_ENGINE_H

#include <stdint.h>

#include "model/dag.h"

typedef struct ps_engine ps_engine;

/* Whether the driver holds version `version` (or newer) of `tensor`, in
 * *have_p: PS_OK, or an error that ps_engine_next returns. */
typedef int ps_engine_have_fn(void *ud, uint32_t tensor, uint64_t version,
			      int *have_p);

/* PS_OK, PS_ENOMEM. dag must outlive the engine. */
int ps_engine_create(const ps_dag *dag, ps_engine_have_fn *have, void *ud,
		     ps_engine **e_p);
void ps_engine_destroy(ps_engine **e_p);

/* Iteration `it` begins: every op is to run once. */
void ps_engine_begin(ps_engine *e, uint64_t it);

typedef enum {
	PS_ENGINE_RUN,  /* *op_p is to run now */
	PS_ENGINE_WAIT, /* no op can run until parameters arrive */
	PS_ENGINE_DONE, /* every op of the iteration is done */
} ps_engine_action;

/* What to do now, in *what: PS_ENGINE_RUN (*op_p, taken off the ready
 * set), PS_ENGINE_WAIT or PS_ENGINE_DONE. PS_OK, or the have callback's
 * error. */
int ps_engine_next(ps_engine *e, ps_engine_action *what, uint32_t *op_p);

/* The op ps_engine_next gave has finished: its successors may run. */
void ps_engine_op_done(ps_engine *e, uint32_t op);

uint64_t ps_engine_iteration(const ps_engine *e);

#endif /* ORDO_PROTO_ENGINE_H */
