/*
 * scheduling/efficiency.h - TicTac's ordering efficiency E and speed-up
 * bound S (paper section 3.1).
 *
 * The resources are the compute engine, the receive link and the send
 * link; a transfer of b bytes costs b / metrics.bandwidth_gbps:
 *     sum   = compute + bytes / bw (receive) + bytes / bw (send)
 *     lower = max(compute, bytes / bw)
 *     E     = (sum - t) / (sum - lower),  S = (sum - lower) / lower
 * ps-worker's replay and ps-sim compute them alike.
 *
 * Threads: pure functions.
 */
#ifndef ORDO_SCHEDULING_EFFICIENCY_H
#define ORDO_SCHEDULING_EFFICIENCY_H

/* TicTac's E for one iteration of t_us; NAN when ordering cannot matter
 * (sum - lower below 1% of lower, i.e. S < 0.01). */
double ps_ordering_efficiency(double compute_us, double comm_us, double t_us);
/* TicTac's S; 0 when lower == 0. */
double ps_speedup_bound(double compute_us, double comm_us);

#endif /* ORDO_SCHEDULING_EFFICIENCY_H */
