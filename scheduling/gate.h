/*
 * scheduling/gate.h - the sender-side gate and credit window.
 *
 * Pure logic, no clock, no sockets, no threads: the sender tells the gate
 * that a transfer is ready (ps_gate_ready) or acknowledged (ps_gate_acked),
 * and asks which transfers to hand to the transport now (ps_gate_next,
 * called until it says none). The same code decides in real senders, in
 * tests, and in the simulator.
 *
 * Gates:
 *  - PS_GATE_FIFO: in the order transfers became ready.
 *  - PS_GATE_PRIORITY: work-conserving: the ready transfer with the lowest
 *    priority number goes first; ties keep the order they became ready in
 *    (P3's and ps-lite's queues lost it with a <= comparator).
 *  - PS_GATE_COUNTER: TicTac §5.1: per receiver and iteration, a counter of
 *    transfers handed over; a transfer whose number is k waits until the
 *    counter has reached k, then the counter moves on. Equal numbers may
 *    pass together. Numbers come from ps_order_normalise.
 *
 * Credit window: bytes handed over and not yet acknowledged may not exceed
 * `credit` (0 = unlimited). The transfer the gate would release next waits
 * while it does not fit, and nothing behind it overtakes it (no head-of-
 * line bypass: a small low-priority transfer never jumps a large urgent
 * one). A transfer larger than the whole window goes when nothing is in
 * flight, so the window can never deadlock.
 *
 * Threads: a gate belongs to one thread (the sender's).
 */
#ifndef ORDO_SCHEDULING_GATE_H
#define ORDO_SCHEDULING_GATE_H

#include <stdint.h>

#include "ordo/error.h"

typedef enum {
	PS_GATE_FIFO = 0,
	PS_GATE_PRIORITY,
	PS_GATE_COUNTER,
	PS_GATE_COUNT
} ps_gate_kind;

typedef struct ps_gate ps_gate;

/* A transfer as the gate sees it. `handle` is the sender's (returned by
 * ps_gate_next untouched). */
typedef struct ps_xfer {
	uint64_t handle;
	uint32_t receiver;  /* < receivers given at create */
	uint64_t iteration; /* counter gate: counters are per iteration */
	uint32_t priority;  /* lower = sooner; counter gate: its number */
	uint64_t bytes;
} ps_xfer;

const char *ps_gate_name(ps_gate_kind kind); /* "fifo", "priority"... */

int ps_gate_create(ps_gate_kind kind, uint64_t credit, uint32_t receivers,
		   ps_gate **gate_p);
void ps_gate_destroy(ps_gate **gate_p);

/* A transfer is ready to go. PS_EINVAL for a bad receiver. */
int ps_gate_ready(ps_gate *g, const ps_xfer *x);

/* Writes the next transfer to hand over now into *x_p and returns 1, or
 * returns 0 when none may go (nothing ready, window full, or the counter
 * not there yet). The bytes count as in flight from now. */
int ps_gate_next(ps_gate *g, ps_xfer *x_p);

/* bytes of a handed-over transfer were acknowledged: credit returns.
 * PS_EINVAL if more than in flight is acknowledged. */
int ps_gate_acked(ps_gate *g, uint64_t bytes);

/* A new window (a tuner's live change; 0 = unlimited) for the next
 * decisions. Bytes already in flight stay counted: with a smaller window
 * nothing more goes until enough of them are acknowledged. */
int ps_gate_set_credit(ps_gate *g, uint64_t credit);
uint64_t ps_gate_credit(const ps_gate *g);

/* Calls fn with the handle of every transfer still pending (ready, not
 * released), in no particular order: for a sender's teardown. */
void ps_gate_foreach_pending(const ps_gate *g,
			     void (*fn)(uint64_t handle, void *ud), void *ud);

uint64_t ps_gate_in_flight(const ps_gate *g); /* bytes */
uint32_t ps_gate_pending(const ps_gate *g);   /* ready, not yet released */

#endif /* ORDO_SCHEDULING_GATE_H */
