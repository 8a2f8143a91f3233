/*
 * sim/bounds.h - TicTac's makespan bounds (§3.1) over a simulated cluster.
 *
 * The "ops" of one iteration cycle - every worker's compute ops, every
 * message (push and parameter partition), every server's aggregation and
 * optimizer work and every acknowledgement - each with its time under the
 * model, and the resources they run on: each worker's compute engine, each
 * host's uplink and downlink (a message uses both), each server's thread.
 *
 *  - worst  = sum of all op times: everything in sequence. A message
 *    counts once (it occupies its two links at the same time) at its
 *    dearest cost a + max(1, gamma)*b*m; an acknowledgement counts a.
 *  - lower  = the busiest resource's total, messages at their cheapest
 *    cost a + min(1, gamma)*b*m (it ignores the DAG, so it may not be
 *    reachable).
 *  - speedup = (worst - lower) / lower, TicTac's S for the cluster.
 *  - physical_lower = max(compute per iteration, bytes per iteration
 *    through the busiest host's busier direction / bandwidth): no fixed
 *    costs, no servers' work.
 *
 * A simulated cycle (sim/cluster.h, makespan) always lies in [lower,
 * worst]; tests/sim checks it over random DAGs and configs.
 *
 * Threads: pure functions.
 */
#ifndef ORDO_SIM_BOUNDS_H
#define ORDO_SIM_BOUNDS_H

#include <stdint.h>

#include "model/dag.h"
#include "scheduler/placement.h"
#include "sim/link.h"

typedef struct ps_sim_bounds {
	double worst_us, lower_us, speedup, physical_lower_us;
	double compute_us; /* one worker's compute per iteration */
} ps_sim_bounds;

/* The bounds of one iteration cycle of `workers` workers over placement
 * pl. credit: whether parameter partitions are acknowledged. */
void ps_sim_bounds_compute(const ps_dag *dag, const ps_placement *pl,
			   uint32_t workers, const ps_link_model *lm,
			   double aggregate_ns_per_byte,
			   double update_ns_per_byte, int credit,
			   ps_sim_bounds *b_p);

#endif /* ORDO_SIM_BOUNDS_H */
