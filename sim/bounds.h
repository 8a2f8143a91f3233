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
 * With fair sharing (link.sharing = fair) a is latency, not link time: a
 * link's total in lower counts b*m per message only, and gamma is 1.
 * Every op's compute counts its time plus op_overhead_us. A token bucket
 * of B bytes (link.burst_bytes) lets a link carry X bytes in (X - B) * b
 * at best, so each link's total in lower and physical_lower is that.
 * With a machine (sim.machine_gbps) every byte of a cycle over the
 * machine's rate for its message's size (sim.machine_small_*), plus
 * sim.machine_message_us per message, is one more resource's total, and
 * a message alone is priced at the slower of link and machine in worst
 * (plus its time per message).
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
#include "scheduling/placement.h"
#include "sim/link.h"

typedef struct ps_sim_bounds {
	double worst_us, lower_us, speedup, physical_lower_us;
	double compute_us; /* one worker's compute per iteration */
} ps_sim_bounds;

/* What the bounds take besides the DAG, the placement and the links. */
typedef struct ps_sim_costs {
	double aggregate_ns_per_byte, update_ns_per_byte; /* server thread */
	double op_overhead_us; /* added to every op */
	double burst_bytes;    /* fair: every link's token bucket, 0 = none */
	double machine_us_per_byte; /* fair: all streams together, 0 = none */
	double machine_small_us_per_byte; /* ...for messages of at most */
	double machine_small_bytes;       /* this many bytes (0: none) */
	double machine_message_us;        /* and per message (0: none) */
	double machine_message_min_bytes; /* above this size */
	int credit;            /* parameter partitions are acknowledged */
	int fair;              /* link sharing is fair (a as latency) */
} ps_sim_costs;

/* The bounds of one iteration cycle of `workers` workers over placement
 * pl. */
void ps_sim_bounds_compute(const ps_dag *dag, const ps_placement *pl,
			   uint32_t workers, const ps_link_model *lm,
			   const ps_sim_costs *c, ps_sim_bounds *b_p);

#endif /* ORDO_SIM_BOUNDS_H */
