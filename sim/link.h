/*
 * sim/link.h - the alpha-beta-gamma link model (ASC-WFBP §III).
 *
 * Every host (worker or server) has an uplink and a downlink, full duplex,
 * of the same bandwidth. A message of m bytes costs a + b*m on a link: a is
 * its fixed cost (startup, headers, a system call, a wake-up), b the time
 * per byte (1 / bandwidth). A message handed to a link that is still busy
 * with earlier messages costs a + gamma*b*m instead: gamma > 1 models the
 * slowdown of streams that share a link (ASC-WFBP measured 1 < gamma <= 2),
 * gamma < 1 the better use that several streams make of a link one stream
 * cannot fill.
 *
 * DESIGN (sharing). A link serves its messages one at a time, first come
 * first served (FIFO), each for its whole cost. That is how one ZeroMQ
 * connection behaves (one TCP stream per peer pair; a message goes out
 * whole, in order), and it is also what the gates assume: they release
 * transfers in the order they want them to arrive, and processor sharing
 * would undo that order on the link. Different peers' streams interleave
 * on a real NIC; the FIFO link gives the same busy period (the same bytes
 * through the same bandwidth) and lets gamma carry the cost of sharing.
 * A message occupies its sender's uplink and its receiver's downlink at
 * once (cut-through, so a + b*m is paid once, not twice): it is queued on
 * the uplink when the sender hands it over, queued on the downlink when it
 * starts on the uplink, and arrives when both have carried it. Serving in
 * order needs only each link's "free at" time: O(1) per message, which is
 * what lets ps-sim run thousands of hosts. It misleads where a sender's
 * streams to different receivers meet different bottlenecks (a counter
 * gate releasing one server's transfers, then the other's, serves them
 * one server after the other); link.sharing = fair
 * (sim/cluster_messages.c, sim/fair.h) shares the links between per-pair
 * streams instead (docs/sim.md).
 *
 * Threads: plain data.
 */
#ifndef ORDO_SIM_LINK_H
#define ORDO_SIM_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"

typedef struct ps_link_model {
	double a_us;          /* fixed cost per message */
	double b_us_per_byte; /* 1 / bandwidth */
	double gamma;         /* per-byte factor on a busy link */
} ps_link_model;

typedef struct ps_link {
	double free_at; /* simulated us when its last message is through */
	double busy_us; /* total time spent carrying messages */
	uint64_t bytes, messages;
} ps_link;

/* b for a bandwidth in Gbit/s. */
double ps_link_b_from_gbps(double gbps);
/* The bandwidth in Gbit/s of b. */
double ps_link_gbps_from_b(double b_us_per_byte);

/* Cost of a message of `bytes` on a link that is busy (1) or idle (0). */
double ps_link_cost(const ps_link_model *m, uint64_t bytes, int busy);

/* A message handed to link l at time t: it is served after everything
 * queued before it. Returns its start; *end_p is when it is through. */
double ps_link_reserve(ps_link *l, const ps_link_model *m, double t,
		       uint64_t bytes, double *end_p);

/* Which transport's link model a config asks for: link.model, or with
 * link.model = auto, transport.type's (PS_LINK_MODEL_TCP or
 * PS_LINK_MODEL_RDMA, never AUTO). */
int ps_link_model_kind_of(const ps_config *cfg);
/* "tcp", "rdma" ("auto" for anything else). */
const char *ps_link_model_name(int kind);

/* The model of a config: link.* with link.bandwidth_gbps = 0 meaning
 * metrics.bandwidth_gbps. Per transport (ps_link_model_kind_of):
 *     tcp   a = link.latency_us,      b = 1 / (bandwidth * link.efficiency),
 *           gamma = link.gamma
 *     rdma  a = link.rdma_latency_us, b = 1 / (bandwidth *
 *           link.rdma_efficiency), gamma = link.rdma_gamma
 * (docs/sim.md gives the sources of the rdma defaults). With link.fit_file
 * set, a, b and gamma fitted from that sweep (sim/fit.h) instead, whichever
 * the model: a sweep measures the transport itself. PS_EINVAL/PS_ENOENT
 * with a message in why naming the problem. */
int ps_link_model_from_config(const ps_config *cfg, ps_link_model *m_p,
			      char *why, size_t whylen);

#endif /* ORDO_SIM_LINK_H */
