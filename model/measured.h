/*
 * model/measured.h - a model file (docs/model-format.md) from the timings
 * a training job's workers measure in their first iterations.
 *
 * A job trained through the client library (ordo.torch included) has no
 * model file: the scheduler knows the declared tensors, not when each
 * gradient is ready or when each parameter is needed. The workers measure
 * that (client/timings.h) on a clock of their own compute: the wall clock
 * less the time spent inside ordo's calls (waiting for parameters, pushing,
 * beginning an iteration), from the iteration's anchor, its first event
 * (the first wait for its parameters, its first push, or
 * ps_client_next_iteration, whichever comes first):
 *
 *   need[t]   when the application first waits for tensor t's parameters
 *             of the iteration (-1: it never waits for them)
 *   push[t]   when it pushes t's gradient of the iteration (-1: never)
 *   length    the anchor to the next iteration's anchor
 *
 * each the median over the iterations measured, and the mean over the
 * workers (ps_timings_sum). From them, a chain of ops, one compute
 * stream as the worker ran it:
 *
 *   forward   one op per distinct need time, reading the tensors needed
 *             then, lasting until the next (an op without reads first, if
 *             the first need comes after the anchor); tensors never waited
 *             for are read by the last forward op;
 *   backward  one op per push, in push order, producing that tensor's
 *             gradient, lasting from the previous push (the first: from
 *             the end of the forward ops); a push measured before the last
 *             need is moved to it (the format's iteration is a forward
 *             pass, then a backward pass); tensors never pushed are pushed
 *             at the end;
 *   tail      an op without gradients for the rest of the iteration.
 *
 * What this cannot see: compute the application runs asynchronously (a
 * GPU's kernels after the host has moved on: the host's times are when it
 * launched them) and branches the measured iterations did not take.
 *
 * Threads: none; pure functions.
 */
#ifndef ORDO_MODEL_MEASURED_H
#define ORDO_MODEL_MEASURED_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "ordo/error.h"

#define PS_MEASURED_FILE "measured-model.json"
#define PS_TIMING_MAX_US 1e12 /* any one time: 11.6 days */

/* Whether a job of cfg measures its workers' first iterations: where it
 * has no model file (training), or replays one (the measured model then
 * checks the measurement against the file's). */
int ps_measure_wanted(const ps_config *cfg);

typedef struct ps_timings {
	uint32_t ntensors;
	uint32_t iterations; /* measured (summed over the workers) */
	uint32_t workers;    /* that measured them */
	double length_us;
	float *need_us, *push_us; /* ntensors each, -1 = never */
} ps_timings;

/* Allocates the arrays for n tensors, every time -1. PS_ENOMEM. */
int ps_timings_init(ps_timings *t, uint32_t ntensors);
void ps_timings_free(ps_timings *t);

/* Whether t's numbers are what a worker may send: every time -1 or in
 * [0, length_us], length_us in (0, PS_TIMING_MAX_US], at least one
 * iteration. PS_EPROTO with the first problem in why. */
int ps_timings_check(const ps_timings *t, char *why, size_t whylen);

/* The mean over the workers of their timings: each time over the workers
 * that measured it (-1 where none did). */
typedef struct ps_timings_sum {
	uint32_t ntensors, workers, iterations;
	double length_us;
	double *need_us, *push_us;
	uint32_t *need_n, *push_n;
} ps_timings_sum;

int ps_timings_sum_init(ps_timings_sum *s, uint32_t ntensors);
void ps_timings_sum_free(ps_timings_sum *s);
/* Adds one worker's (the same tensors: one->ntensors == s->ntensors). */
void ps_timings_sum_add(ps_timings_sum *s, const ps_timings *one);
/* The mean into *t (ps_timings_init'ed for s->ntensors). */
void ps_timings_sum_mean(const ps_timings_sum *s, ps_timings *t);

/*
 * The model file of the merged timings, as jansson's json_t (void * here:
 * the header needs no jansson) for ps_dag_from_json and json_dump_file;
 * names[i] and numel[i] are tensor i's; batch is train.batch. NULL without
 * memory.
 */
void *ps_measured_model(const ps_timings *t, const char *const *names,
			const uint64_t *numel, uint32_t batch);

#endif /* ORDO_MODEL_MEASURED_H */
