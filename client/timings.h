/*
 * client/timings.h - what a worker measures of its first iterations for
 * the scheduler's measured model (model/measured.h, which says what each
 * time means).
 *
 * The recorder keeps a clock of the application's own compute: the wall
 * clock (CLOCK_MONOTONIC) less the time spent inside ordo's calls
 * (ps_timing_rec_blocked). Events carry the iteration they belong to:
 * a wait for parameters of version v is a need of iteration v (the
 * parameters iteration v computes with), a push of iteration i's gradient
 * a push of i, ps_client_next_iteration(i) a begin of i. An iteration's
 * anchor is its first event. Iterations first .. first + n - 1 are
 * measured; the anchor of first + n ends the measurement (the last
 * iteration's length is known then), and the result is per tensor the
 * median over the n iterations of its time from the anchor.
 *
 * Threads: none; the client calls it under its mutex.
 */
#ifndef ORDO_CLIENT_TIMINGS_H
#define ORDO_CLIENT_TIMINGS_H

#include <stdint.h>

#include "model/measured.h"

typedef enum {
	PS_TIMING_BEGIN,
	PS_TIMING_NEED,
	PS_TIMING_PUSH,
} ps_timing_kind;

typedef struct ps_timing_rec {
	uint32_t ntensors, n;
	uint64_t first;     /* the first iteration measured */
	double origin_us;   /* the wall clock at creation */
	double blocked_us;  /* inside ordo's calls since */
	double *anchor;     /* n + 1, -1 until seen */
	float *need, *push; /* n x ntensors, -1 until seen */
	int complete;
} ps_timing_rec;

/* Measures iterations first .. first + n - 1 of ntensors tensors (n >= 1).
 * PS_ENOMEM. */
int ps_timing_rec_init(ps_timing_rec *r, uint32_t ntensors, uint64_t first,
		       uint32_t n);
void ps_timing_rec_free(ps_timing_rec *r);

/* The wall clock, us (CLOCK_MONOTONIC). */
double ps_timing_wall_us(void);

/* A call into ordo that began at wall clock `since` (ps_timing_wall_us)
 * ended now: its time is not the application's compute. */
void ps_timing_rec_blocked(ps_timing_rec *r, double since);

/* An event at wall clock `wall` (taken as the call began). Returns 1 when
 * it completes the measurement (once), else 0. */
int ps_timing_rec_event(ps_timing_rec *r, ps_timing_kind kind,
			uint32_t tensor, uint64_t iteration, double wall);

/* The medians (the measurement complete) into *t (ps_timings_init'ed for
 * r->ntensors). */
void ps_timing_rec_result(const ps_timing_rec *r, ps_timings *t);

#endif /* ORDO_CLIENT_TIMINGS_H */
