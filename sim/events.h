/*
 * sim/events.h - the simulator's event queue: a (4-ary) min-heap.
 *
 * Events are ordered by (time, sequence number): the sequence number is
 * given at insertion and increases by one per event, so two events at the
 * same simulated time come out in the order they were scheduled. Nothing
 * else (no pointer value, no hash order, no wall clock) decides, which is
 * what makes a simulation reproducible bit for bit.
 *
 * Times are double microseconds of simulated time.
 *
 * Threads: a heap belongs to one thread (the simulator is single-threaded).
 */
#ifndef ORDO_SIM_EVENTS_H
#define ORDO_SIM_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "ordo/error.h"

typedef struct ps_sim_event {
	double t;     /* simulated microseconds */
	uint64_t seq; /* insertion number: ties in t keep insertion order */
	uint32_t kind; /* the simulator's event kind */
	uint32_t node; /* a worker or server index, by kind */
	uint64_t arg;  /* by kind: a message, a partition... */
} ps_sim_event;

typedef struct ps_sim_heap {
	ps_sim_event *v;
	size_t n, cap;
	uint64_t next_seq;
} ps_sim_heap;

/* An empty heap (no allocation until the first push). */
#define PS_SIM_HEAP_INIT ((ps_sim_heap){0})

/* Schedules an event; PS_ENOMEM if the heap cannot grow. */
int ps_sim_heap_push(ps_sim_heap *h, double t, uint32_t kind, uint32_t node,
		     uint64_t arg);

/* Removes the earliest event into *e_p and returns 1, or returns 0 when the
 * heap is empty. */
int ps_sim_heap_pop(ps_sim_heap *h, ps_sim_event *e_p);

void ps_sim_heap_free(ps_sim_heap *h);

#endif /* ORDO_SIM_EVENTS_H */
