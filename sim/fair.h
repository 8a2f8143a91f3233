/*
 * sim/fair.h - link.sharing = fair: per-pair streams sharing every uplink
 * and downlink max-min fairly, updated incrementally.
 *
 * Every (worker, server) pair that exchanges data has one in-order stream
 * each way (one ZeroMQ connection per peer). A stream whose head message
 * has bytes is active: it crosses its sender's uplink, its receiver's
 * downlink and, with a machine (sim.machine_gbps), the machine. The active
 * streams share those resources max-min fairly, by progressive filling:
 * the resource with the smallest fair share (its capacity left over the
 * streams not yet fixed; the lowest index among equals) fixes every stream
 * through it at that share; repeat. An acknowledgement (no payload) at the
 * head of a stream goes through at once.
 *
 * DESIGN (incremental, exact). The rates change only when a stream starts
 * or goes idle or a capacity changes (a token bucket running dry or
 * refilling). Two ideas keep an update local while giving the very doubles
 * the full recomputation gives (docs/sim.md, "Incremental sharing"):
 *
 *  - Rate groups. All streams fixed by one resource get the same double,
 *    its share: a resource is a group with one virtual clock (bytes each
 *    member carried since the group was last empty) and a heap of its
 *    members by the virtual time at which each finishes its head message.
 *    A share that changes rebases one clock, not every member; a stream's
 *    progress depends only on its own group's history, so the same rates
 *    give the same completion times, whatever else is recomputed.
 *
 *  - Certified links. Progressive filling restricted to a connected
 *    component of the (resource, stream) graph gives the component exactly
 *    what the whole computation gives it (rounds of different components
 *    touch different numbers, and within a component they come in the
 *    same order), and a link that is never picked changes nothing for
 *    anyone and may be left out, which splits components. A certified
 *    link is one whose streams' rates are bounded (each by its group's
 *    ceiling, summed exactly in integers) below its capacity by a margin,
 *    so that it cannot be picked. With thousands of workers pushing to
 *    each server, the workers' links are certified and a server's link is
 *    a component of its own: an update costs O(log n), not O(streams).
 *    Certification only decides what is recomputed: a bound about to fail
 *    withdraws it (and widens the update) before any rate is applied.
 *
 * Events are those of the whole-cluster model: one network event at the
 * earliest completion (or bucket running dry), moved after every change;
 * at it, every stream within a ns of its last byte is done, and they are
 * delivered in the order of the list of active streams, as a scan of
 * that list finds them.
 *
 * With token buckets every link's tokens depend on its carried rate, so no
 * link is certified (the update is the component); with a machine every
 * stream crosses it, so the update is everything. `full` recomputes every
 * rate at every change with the whole-cluster progressive filling: the
 * reference the incremental updates are tested against (bit for bit).
 *
 * Threads: a ps_fair belongs to one simulation (single-threaded).
 */
#ifndef ORDO_SIM_FAIR_H
#define ORDO_SIM_FAIR_H

#include <stddef.h>
#include <stdint.h>

typedef struct ps_fair ps_fair;

/* What the simulator provides: its event queue and its messages (the
 * stream queues are linked through the messages' own next field). */
typedef struct ps_fair_ops {
	/* schedule a fair-sharing event at t: ps_fair_event(f, node, arg) */
	void (*schedule)(void *ud, double t, uint32_t node, uint64_t arg);
	/* message m's last byte went at t (an acknowledgement: it reached the
	 * head of its stream at t) */
	void (*sent)(void *ud, uint32_t m, double t);
	uint64_t (*bytes)(void *ud, uint32_t m); /* payload; 0 = an ack */
	uint32_t (*next)(void *ud, uint32_t m);
	void (*set_next)(void *ud, uint32_t m, uint32_t next);
	void *ud;
} ps_fair_ops;

typedef struct ps_fair_config {
	uint32_t workers, servers;
	/* per server: nonzero if it holds a partition (only those exchange
	 * data, so only their pairs get streams) */
	const uint8_t *server_used;
	double rate;           /* a link's bytes/us */
	double burst;          /* token buckets: bytes (0 = none) */
	double burst_rate;     /* a link's bytes/us while it holds tokens */
	double machine_cap;    /* the machine's bytes/us (0 = none) */
	uint64_t small_bytes;  /* messages up to this size weigh small_w */
	double small_w;        /* on the machine */
	double msg_bytes;      /* a message's own cost on the machine */
	uint64_t msg_min;      /* messages up to this size do not pay it */
	int full;              /* recompute every rate at every change */
	int fault;             /* tests only: each update skips one stream */
	ps_fair_ops ops;
} ps_fair_config;

/* Work done, for --stats and the tests. */
typedef struct ps_fair_stats {
	uint64_t streams;       /* streams allocated */
	uint64_t updates;       /* rate computations */
	uint64_t links;         /* resources over all computations */
	uint64_t coupled;       /* streams fixed one by one, over all */
	uint64_t certified;     /* links certified (cumulative) */
	uint64_t uncertified;   /* certifications withdrawn */
} ps_fair_stats;

/* PS_ENOMEM, PS_EINVAL. */
int ps_fair_create(const ps_fair_config *c, ps_fair **f_p);
void ps_fair_destroy(ps_fair **f_p);

/* Message m enters the stream from worker w to server srv (up) or from
 * srv to w, behind what is already queued there. PS_ENOMEM. */
int ps_fair_send(ps_fair *f, int up, uint32_t w, uint32_t srv, uint32_t m,
		 double t);

/* Sends between ps_fair_hold and ps_fair_release (all at the same time t)
 * take effect together: one rate update and one new network event at the
 * release (or at a network event meanwhile) instead of one per stream that
 * starts. The simulator holds the sends of all the events at one time:
 * when 8192 workers start pushing to a server at once, that is one update,
 * not 8192 growing ones. ps_fair_release: PS_ENOMEM. */
void ps_fair_hold(ps_fair *f);
int ps_fair_release(ps_fair *f, double t);

/* One of the events the module scheduled (stale ones are ignored).
 * PS_ENOMEM. */
int ps_fair_event(ps_fair *f, uint32_t node, uint64_t arg, double t);

void ps_fair_get_stats(const ps_fair *f, ps_fair_stats *s);

#endif /* ORDO_SIM_FAIR_H */
