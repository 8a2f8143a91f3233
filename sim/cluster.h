/*
 * sim/cluster.h - the discrete-event simulation of a whole job.
 *
 * W workers and S servers run K synchronous iterations of a model file
 * through the very protocol machines the real binaries run (proto/:
 * engine.h, worker.h, shard.h, over the scheduling core's orders,
 * placement and gates); this file adds only time, links and costs:
 *
 *  - worker: its compute engine (proto/engine.h) runs one op at a time for
 *    its (scaled) time, as it picks them; version 0 of every tensor is
 *    there at the start. A backward op's gradients enter the worker's
 *    machine (proto/worker.h) when it finishes, and its gate is drained
 *    then and after every PUSH_ACK. No barrier between iterations.
 *  - server: its shard machine (proto/server.h) runs one op at a time on
 *    the server's CPU: summing a push costs sim.aggregate_ns_per_byte, an
 *    update sim.update_ns_per_byte (plus the summing of the round's last
 *    push, which it carries); its PUSH_ACKs and PARAMS go onto the links
 *    when it gives them. With a credit window the worker's machine answers
 *    each parameter partition with PARAMS_ACK.
 *  - links: link.sharing. fifo: sim/link.h; acknowledgements are control
 *    messages: they take the fixed cost a to arrive and occupy no link.
 *    fair: one in-order stream per (sender, receiver) pair (one ZeroMQ
 *    connection per peer), the streams in transfer share every uplink and
 *    downlink max-min fairly, updated incrementally (sim/fair.h), a
 *    message arrives a after its last byte, and acknowledgements travel
 *    in their direction's stream behind the data already in it.
 *  - sim.op_overhead_us is added to every op's time.
 *
 * Metrics, as the real job reports them: per-iteration time (the job's
 * iteration ends when its last worker ends it; iteration 0 starts at 0 with
 * every parameter present), samples/s (sum over workers of iterations *
 * model batch / the worker's time), TicTac's E and S exactly as
 * worker/replay.c computes them (metrics.bandwidth_gbps oracle), straggler
 * effect (largest share of its time any worker waited). Bounds: sim/bounds.h.
 *
 * Deterministic: events are ordered by (time, sequence) (sim/events.h) and
 * nothing depends on the wall clock, addresses or threads.
 *
 * Threads: single-threaded; a run owns everything it allocates.
 */
#ifndef ORDO_SIM_CLUSTER_H
#define ORDO_SIM_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "model/dag.h"
#include "sim/bounds.h"
#include "sim/fair.h"
#include "sim/link.h"

typedef struct ps_sim_result {
	uint32_t workers, servers, iterations;
	uint32_t partitions, fused;
	double *iter_us;        /* per iteration: the job's iteration time */
	double iteration_us;    /* mean over iterations after the first */
	double samples_per_second;
	double efficiency;      /* mean TicTac E (NAN when undefined) */
	double speedup_bound;   /* TicTac S as the workers compute it */
	double straggler;       /* max over workers of wait / time */
	double makespan_us;     /* one full cycle: iteration 0's compute,
				   pushes, updates, parameters back */
	double total_us;        /* when the last event happened */
	ps_sim_bounds bounds;
	ps_link_model link;
	uint64_t events, messages;
	/* every event in order (time, kind, node, argument), mixed: equal
	 * digests mean the same run, event for event, to the bit */
	uint64_t digest;
	ps_fair_stats fair; /* link.sharing = fair: the rate updates' work */
} ps_sim_result;

/* How to run (ps_sim_run: all zero). */
typedef struct ps_sim_opts {
	/* link.sharing = fair: recompute every stream's rate at every change
	 * (the whole-cluster progressive filling the incremental updates
	 * must equal, bit for bit) */
	int fair_full;
	/* tests only: every incremental update skips one stream, so that a
	 * comparison with fair_full can be seen to fail */
	int fair_fault;
} ps_sim_opts;

/*
 * Simulates cfg's job over dag (loaded with model.compute_scale) and link
 * model lm. With cfg->output.dir set, writes DIR/timeline.json (Chrome
 * trace events, the format of real runs: runtime/trace.h). On success
 * *res_p is filled and owns iter_us (ps_sim_result_free). Errors: PS_EINVAL
 * / PS_ENOMEM / PS_EIO with a message in why.
 */
int ps_sim_run(const ps_config *cfg, const ps_dag *dag,
	       const ps_link_model *lm, ps_sim_result *res_p, char *why,
	       size_t whylen);

/* ps_sim_run with options (NULL: the defaults). */
int ps_sim_run_opts(const ps_config *cfg, const ps_dag *dag,
		    const ps_link_model *lm, const ps_sim_opts *opts,
		    ps_sim_result *res_p, char *why, size_t whylen);

void ps_sim_result_free(ps_sim_result *r);

/* 1 if a and b are the same run: every result to the bit, the events and
 * their digest (not the fair-sharing work); else 0 with what differs in
 * why. */
int ps_sim_result_same(const ps_sim_result *a, const ps_sim_result *b,
		       char *why, size_t whylen);

#endif /* ORDO_SIM_CLUSTER_H */
