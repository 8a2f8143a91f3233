/*
 * tune/tuner.h - the search over (partition, credit) pairs (docs/tune.md).
 *
 * A tuner holds the trials so far and proposes the next pair. Pairs live
 * in the unit square: x0 = where log2(partition) lies in
 * [log2 tune.partition_min, log2 tune.partition_max], x1 = where
 * log2(credit) lies in [log2 max(tune.credit_min, partition),
 * log2 tune.credit_max] (a credit is never below its partition size, so
 * every point of the square is a valid pair). Sizes are rounded to 4 KiB
 * (4 bytes below that).
 *
 * The first tune_design_trials() trials are a quasi-random design: Sobol
 * points shifted by a random offset drawn from tune.seed (a
 * Cranley-Patterson rotation: another seed, another design of the same
 * quality); with a prior mean the first trial is the prior's best pair
 * instead. After them every proposal maximises expected improvement
 * under a Gaussian process fitted to the measured trials (tune/gp.h).
 * A failed trial counts as the worst measurement so far, so the search
 * moves away from it rather than try it again.
 *
 * Threads: single-threaded.
 */
#ifndef ORDO_TUNE_TUNER_H
#define ORDO_TUNE_TUNER_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "tune/gp.h"

typedef struct tune_pair {
	uint64_t partition, credit; /* bytes */
} tune_pair;

typedef struct tune_trial {
	uint32_t index;    /* 1, 2, ... */
	tune_pair pair;
	double x[2];       /* its point of the unit square */
	int ok;            /* measured; else failed (note says why) */
	double samples_per_s;
	/* the model's view of x when it was proposed (NAN for the design) */
	double mean, sd, ei;
	/* how the job got to this pair: "start", "restart" (checkpoint and
	 * restart: a new partition size), "credit" (live), "sim" */
	char how[16];
	double switch_s;   /* restart: the job stood still; credit: until in
			    * force (training went on); else 0 */
	uint64_t first, last; /* iterations measured: [first, last) */
	char note[160];
} tune_trial;

typedef struct tuner tuner;

int tuner_create(const ps_config *cfg, ps_gp_prior_fn *prior, void *ud,
		 tuner **t_p);
void tuner_free(tuner **t_p);

/* Trials in the quasi-random design before the model proposes. */
uint32_t tuner_design_trials(const tuner *t);

/* The pair at a point of the unit square, and back. */
tune_pair tuner_pair_at(const tuner *t, const double *x);
void tuner_point_of(const tuner *t, tune_pair p, double *x);

/* The next trial to run (index, pair, x, mean, sd, ei filled). */
int tuner_propose(tuner *t, tune_trial *next);

/* Records a finished trial (measured or failed). */
int tuner_record(tuner *t, const tune_trial *trial);

/* tune.partition_min, _max, credit_min, _max (i = 0..3). */
uint64_t tuner_bound(const tuner *t, int i);

uint32_t tuner_count(const tuner *t);
const tune_trial *tuner_trial(const tuner *t, uint32_t i);

/* The best measured trial: the largest posterior mean among measured
 * pairs (not the luckiest sample); NULL when none was measured. With
 * mean_p/sd_p, the model's mean and sd there. */
const tune_trial *tuner_best(tuner *t, double *mean_p, double *sd_p);

/* How a pair measured, over every trial that measured it: the number of
 * those trials (0: none), their mean samples/s and sample standard
 * deviation (NAN with fewer than two). What a report gives as the pair's
 * value: a pair measured again is worth its mean, not its first
 * sample. */
uint32_t tuner_pair_measured(const tuner *t, tune_pair pair, double *mean_p,
			     double *sd_p);

#endif /* ORDO_TUNE_TUNER_H */
