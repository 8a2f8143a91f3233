/*
 * proto/join.h - a node joining a job, as a state machine without I/O:
 * what happens to the messages that arrive before the WELCOME.
 *
 * A server or worker REGISTERs with the scheduler and waits for the
 * WELCOME that tells it who it is and who the others are. The scheduler
 * sends the WELCOMEs one after the other, so a peer that got its own
 * first may already send to this node (a server's parameters, a worker's
 * pushes) before this node's WELCOME arrives. Those messages belong to the
 * job: they are kept, in their order, and handed to the node once it is
 * welcomed, before anything received later. Before the WELCOME only the
 * scheduler's WELCOME or ABORT ends the wait; anything else from the
 * scheduler is dropped with a reason. The number and the bytes kept are
 * bounded; beyond either bound messages are dropped (counted), never an
 * unbounded allocation.
 *
 * The driver (runtime/node.c, tests/dst) owns the messages; the machine
 * stores the driver's pointers.
 *
 * Threads: a machine belongs to one thread.
 */
#ifndef ORDO_PROTO_JOIN_H
#define ORDO_PROTO_JOIN_H

#include <stdint.h>

typedef struct ps_join ps_join;

/* A deliberate bug, for the simulation tests' proof that they can fail. */
enum {
	PS_JOIN_FAULT_NONE = 0,
	PS_JOIN_FAULT_DROP_EARLY, /* messages before the WELCOME are lost:
				     the race the join machine closes */
};

/* PS_OK, PS_ENOMEM. max_early: how many messages are kept at most;
 * max_bytes: how many bytes (as the driver counts them) at most. */
int ps_join_create(uint32_t max_early, uint64_t max_bytes, int fault,
		   ps_join **j_p);
/* Frees the machine; messages still kept are handed to drop(msg, ud). */
void ps_join_destroy(ps_join **j_p, void (*drop)(void *msg, void *ud),
		     void *ud);

typedef enum {
	PS_JOIN_DELIVER, /* a member: handle the message now */
	PS_JOIN_KEPT,    /* before the WELCOME: kept (the machine holds it) */
	PS_JOIN_WELCOME, /* the scheduler's WELCOME or ABORT: the driver
			    decodes it (then ps_join_welcomed) */
	PS_JOIN_DROP,    /* drop it: the scheduler's message is not a
			    WELCOME, or too many are kept already */
} ps_join_verdict;

/* A message of `bytes` from the scheduler (from_scheduler) or a peer
 * arrived; welcome_or_abort: it is a WELCOME or ABORT. */
ps_join_verdict ps_join_on_message(ps_join *j, int from_scheduler,
				   int welcome_or_abort, void *msg,
				   uint64_t bytes);

/* The WELCOME was accepted: the node is a member. */
void ps_join_welcomed(ps_join *j);
int ps_join_member(const ps_join *j);

/* The next message kept before the WELCOME, in arrival order, once a
 * member: 1 and *msg_p (the driver's again), or 0. */
int ps_join_next_early(ps_join *j, void **msg_p);

/* Messages kept so far (all time) and dropped for the bounds; the bytes
 * kept so far and the bytes dropped for the bounds. */
uint32_t ps_join_kept(const ps_join *j);
uint32_t ps_join_dropped(const ps_join *j);
uint64_t ps_join_kept_bytes(const ps_join *j);
uint64_t ps_join_dropped_bytes(const ps_join *j);

#endif /* ORDO_PROTO_JOIN_H */
