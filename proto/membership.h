/*
 * proto/membership.h - the scheduler's view of who is in a job, as a state
 * machine without I/O: registration, ids, liveness, barriers and DONE.
 *
 * Registration: servers and workers REGISTER (in any order); each is
 * checked (its transport identity, its role, not twice, not one too many,
 * a worker's tensors the same as the first worker's). A server gets a
 * rank in registration order; a worker the rank it asks for (worker.rank:
 * one no other worker asked for, within cluster.workers, or it is
 * refused), and the workers that ask for none the ranks left, lowest
 * first, in registration order, once all have registered. Then ids are
 * assigned: 0 the scheduler, then servers by rank, then workers by rank.
 * A job whose nodes do not all register within cluster.register_timeout_ms
 * ends with a reason that counts who came; ps_membership_waiting says who
 * is still awaited, for the driver's log while it waits.
 *
 * Running: every message from a member is "heard" (the driver gives the
 * time); the driver asks the machine at any time whether a heartbeat is
 * due, and whether a member has been silent for longer than
 * cluster.heartbeat_timeout_ms: then the job ends with a reason naming the
 * member silent longest (when a node dies, the others may fall silent
 * after it, blocked on it: the first to go quiet is the likely cause).
 * A member whose send to another failed reports it (PEER_LOST) and stays
 * alive until the ABORT: the job ends at once, naming the lost member,
 * and the reporter is never taken for the dead one.
 * Barriers and DONE are counted per worker.
 *
 * No socket, clock or thread: ps-scheduler (scheduler/registration.c,
 * then scheduler/scheduler.c) drives it with the transport and the
 * monotonic clock; the simulation tests (tests/dst) with simulated ones.
 *
 * Threads: a machine belongs to one thread.
 */
#ifndef ORDO_PROTO_MEMBERSHIP_H
#define ORDO_PROTO_MEMBERSHIP_H

#include <stddef.h>
#include <stdint.h>

#include "proto/wire.h"

typedef struct ps_membership ps_membership;

typedef struct ps_membership_config {
	uint32_t servers, workers;
	int64_t register_timeout_ms;  /* registration */
	int64_t heartbeat_interval_ms, heartbeat_timeout_ms;
	/* A deliberate bug, for the simulation tests' proof that they can
	 * fail (tests/dst); PS_MEMBERSHIP_FAULT_NONE everywhere else. */
	int fault;
} ps_membership_config;

enum {
	PS_MEMBERSHIP_FAULT_NONE = 0,
	PS_MEMBERSHIP_FAULT_BLIND, /* never notices a silent member */
	PS_MEMBERSHIP_FAULT_BLAME_REPORTER, /* a lost member's reporter is
					       named as the lost one */
};

/* now: the driver's clock (ms), when registration opens. PS_OK,
 * PS_EINVAL, PS_ENOMEM. */
int ps_membership_create(const ps_membership_config *cfg, int64_t now,
			 ps_membership **m_p);
void ps_membership_destroy(ps_membership **m_p);

typedef enum {
	PS_MEMBER_ACCEPTED, /* registered; *index_p is its registration
			       index (0-based) */
	PS_MEMBER_DROPPED,  /* not a registration: dropped, nothing changed */
	PS_MEMBER_REFUSED,  /* a node the job has no place for: log why
			       and forget it, without connecting to it
			       (ps-scheduler does not tell it); the job
			       goes on */
	PS_MEMBER_TOLD,     /* a worker whose registration contradicts the
			       job's (other tensors, or none): refused,
			       and told why (ps-scheduler connects to it
			       and sends it an ABORT); the job goes on,
			       waiting for a worker that fits */
	PS_MEMBER_FATAL,    /* the job cannot go on: abort it, with why */
} ps_member_verdict;

/* A REGISTER that came from transport identity src. The machine keeps a
 * copy of what it needs (the first worker's tensors included). */
ps_member_verdict ps_membership_register(ps_membership *m,
					 const ps_wire_register *r,
					 uint64_t src, int64_t now,
					 uint32_t *index_p, char *why,
					 size_t whylen);
/* Every node registered. */
int ps_membership_complete(const ps_membership *m);
/* Registration ran out of time: PS_ETIMEDOUT with a reason; else PS_OK
 * and *left_p, the ms it has left (at least 1). */
int ps_membership_check_registration(const ps_membership *m, int64_t now,
				     int64_t *left_p, char *why,
				     size_t whylen);

/* "waiting for S of N server(s) and W of M worker(s) to register (T s so
 * far, at most L s: ...)": who registration still waits for. */
void ps_membership_waiting(const ps_membership *m, int64_t now, char *buf,
			   size_t cap);
/* Once complete: the ids. The id of registration index i. */
uint32_t ps_membership_id_of(const ps_membership *m, uint32_t index);

uint32_t ps_membership_registered(const ps_membership *m);
/* A registered node, by registration index (before ids) or by id (once
 * complete; id 0 is not a member). */
const ps_node_info *ps_membership_by_index(const ps_membership *m,
					   uint32_t index);
const ps_node_info *ps_membership_by_id(const ps_membership *m, uint32_t id);
/* The tensors the workers declared (the first worker's). */
const ps_tensor_desc *ps_membership_tensors(const ps_membership *m,
					    uint32_t *n_p);
/* "worker 1 (pid 42 on host, tcp://...)" */
void ps_membership_describe(const ps_node_info *n, char *buf, size_t cap);

/* Running: a message from member id arrived at now. */
void ps_membership_heard(ps_membership *m, uint32_t id, int64_t now);
/* A send to member id failed: no more heartbeats to it. */
void ps_membership_unreachable(ps_membership *m, uint32_t id);
int ps_membership_reachable(const ps_membership *m, uint32_t id);
/* Member `reporter` could not send to member `lost` (reason: what its
 * transport said). The job cannot go on: PS_EABORTED with a reason that
 * names the lost member first (as a silence does), then who lost it and
 * how long the scheduler has not heard from it (a lost node the scheduler
 * still hears means a broken link, not a dead node). PS_EPROTO with a
 * reason when reporter or lost is not another member (the report is
 * dropped). */
int ps_membership_lost(ps_membership *m, uint32_t reporter, uint32_t lost,
		       const char *reason, int64_t now, char *why,
		       size_t whylen);
/* At now: *beat_p = 1 when heartbeats are due (to every reachable
 * member; the machine counts them sent). PS_EABORTED with a reason when a
 * member has been silent too long. */
int ps_membership_tick(ps_membership *m, int64_t now, int *beat_p,
		       char *why, size_t whylen);

/* Worker id reached barrier `number`: PS_EPROTO (not a worker, another
 * number, twice) with a reason, or PS_OK; *released_p = 1 when it was the
 * last: every worker is to get BARRIER_DONE(number), and the next barrier
 * is number + 1. */
int ps_membership_barrier(ps_membership *m, uint32_t id, uint64_t number,
			  int *released_p, char *why, size_t whylen);
/* Worker id is done: PS_EPROTO (not a worker, twice), or PS_OK; *all_p
 * = 1 when it was the last. */
int ps_membership_done(ps_membership *m, uint32_t id, int *all_p,
		       char *why, size_t whylen);
int ps_membership_is_done(const ps_membership *m, uint32_t id);

#endif /* ORDO_PROTO_MEMBERSHIP_H */
