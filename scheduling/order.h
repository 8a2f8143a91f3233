/*
 * scheduling/order.h - transfer orders computed from a model's DAG.
 *
 * An order gives every parameter tensor a priority number: lower numbers
 * are transferred sooner; equal numbers may go together. Orders rank the
 * transfers that feed the forward pass (a tensor's parameters are needed by
 * the forward ops that read it); the same numbers rank its gradient push.
 *
 *  - PS_ORDER_FIFO:  no order: every tensor gets 0.
 *  - PS_ORDER_LAYER: P3 / ByteScheduler: forward position, i.e. the
 *    position of the tensor's first reader in the forward pass (the DAG's
 *    topological order); tensors read first go first.
 *  - PS_ORDER_TIO / PS_ORDER_TAO: TicTac's timing-independent and
 *    timing-aware orders (Hashemi et al., Algorithms 1-3: op properties
 *    M, P, M+ from communication dependencies; TAO's comparator
 *    min(P_B, M_A) < min(P_A, M_B) with M+ breaking ties, using the time
 *    oracle; TIO with every transfer costing 1 and equal M+ getting equal
 *    numbers).
 *  - PS_ORDER_TAIL: largest remaining downstream compute first: a tensor's
 *    key is the longest compute path (sum of op times) from its first
 *    forward reader to the end of the iteration; larger tails go first
 *    (Jackson's rule for 1|r,pmtn|max(C+q): with preemption at partition
 *    boundaries, optimal on a single link).
 *
 * Numbers are dense: 0..k-1 over the distinct keys (ties share a number).
 * ps_order_normalise() then renumbers per (sender, receiver) into "the
 * number of transfers that must be handed over before this one", which is
 * what the counter gate consumes.
 *
 * Threads: pure functions.
 */
#ifndef ORDO_SCHEDULING_ORDER_H
#define ORDO_SCHEDULING_ORDER_H

#include <stdint.h>

#include "model/dag.h"
#include "ordo/error.h"
#include "scheduling/placement.h"

typedef enum {
	PS_ORDER_FIFO = 0,
	PS_ORDER_LAYER,
	PS_ORDER_TIO,
	PS_ORDER_TAO,
	PS_ORDER_TAIL,
	PS_ORDER_COUNT
} ps_order_kind;

/* Transfer time of a tensor of `bytes`: a + bytes / bandwidth. */
typedef struct ps_time_oracle {
	double latency_us;            /* a */
	double bandwidth_bytes_per_us; /* 1 / b; > 0 */
} ps_time_oracle;

const char *ps_order_name(ps_order_kind kind); /* "fifo", "tio"... */

/* Priority number per tensor (dag->ntensors entries in prio). The oracle is
 * used by TAO and TAIL only (may be NULL for the others). */
int ps_order_compute(const ps_dag *dag, ps_order_kind kind,
		     const ps_time_oracle *oracle, uint32_t *prio);

/*
 * Renumbers the transfers of one (sender, receiver) pair: given the
 * priority of each of n transfers, writes into out[i] the number of
 * transfers with a strictly smaller priority (so ties share a number, and
 * the counter gate lets a transfer go once that many went before it).
 */
void ps_order_normalise(const uint32_t *prio, uint32_t n, uint32_t *out);

/*
 * The gate number of every partition of a placement, from its tensor's
 * priority (a fused partition: its most urgent tensor's; tensor_prio NULL:
 * all 0). For the counter gate (counter != 0)
 * the numbers are normalised per server: among the partitions a server
 * holds, the number of partitions with a smaller priority - the same for
 * pushes from any worker to that server and for that server's parameter
 * sends to any worker. Otherwise a partition's number is its tensor's
 * priority. *numbers_p (num_parts entries) is malloc'd.
 */
int ps_order_partition_numbers(const ps_placement *pl,
			       const uint32_t *tensor_prio, int counter,
			       uint32_t **numbers_p);

#endif /* ORDO_SCHEDULING_ORDER_H */
