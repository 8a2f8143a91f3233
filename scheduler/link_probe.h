/*
 * scheduler/link_probe.h - measuring the link rate at a job's start.
 *
 * Where the partition and credit sizes are chosen at the start
 * (sim/auto_sizes.h) and link.bandwidth_gbps is 0, the scheduler measures
 * the rate of its link to one node before it chooses: it sends that node
 * PROBEs (payloads of zeros) and times each until the node's PROBE_ACK.
 *
 *   1. Three empty PROBEs: the round trip without payload (the least).
 *   2. A PROBE of 256 KiB, doubled while one takes less than
 *      PROBE_TARGET_US and stays within the byte limit.
 *   3. Two more at the last size; the least of the three is the
 *      transfer's time. rate = bytes / (time - empty round trip).
 *
 * On a 1 Gbit/s link that is about 0.15 s and 12 MiB; on loopback or a
 * fast NIC, probes of up to the limit (16 MiB by default), a few ms each.
 * The node answers every PROBE at once, before its WELCOME
 * (runtime/node.c); the key of a PROBE is its sequence number, echoed, so
 * that an answer to a probe given up on is not taken for a later one.
 *
 * Threads: the caller's; it owns the transport while probing.
 */
#ifndef ORDO_SCHEDULER_LINK_PROBE_H
#define ORDO_SCHEDULER_LINK_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "transport/transport.h"

#define PROBE_FIRST_BYTES ((uint64_t)256 << 10)
#define PROBE_MAX_BYTES ((uint64_t)16 << 20)
#define PROBE_TARGET_US 20000.0

typedef struct ps_link_probe {
	double gbps;    /* payload rate measured */
	uint64_t bytes; /* the size of the probes it rests on */
	double rtt_us;  /* an empty probe's round trip (the least) */
	double us;      /* a probe of `bytes`: its round trip (the least) */
	uint32_t sent;  /* probes sent in all */
} ps_link_probe;

/*
 * Measures the link to `peer`, the node whose transport id is `tid`, in
 * job `job_id`: probes of at most max_bytes, each answered within
 * timeout_ms. Other messages that arrive meanwhile are dropped and
 * counted in *dropped. Returns PS_OK with *r filled; PS_ETIMEDOUT (no
 * answer in time), PS_EINTR (a signal) or the transport's error, with a
 * reason in why.
 */
int ps_link_probe_run(ps_transport *t, uint64_t job_id, ps_peer peer,
		      uint64_t tid, uint64_t max_bytes, int timeout_ms,
		      ps_link_probe *r, uint64_t *dropped, char *why,
		      size_t whylen);

#endif /* ORDO_SCHEDULER_LINK_PROBE_H */
