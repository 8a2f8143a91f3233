/*
 * tune/tuner.c - the search over (partition, credit) pairs (tuner.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_qrng.h>
#include <gsl/gsl_rng.h>

#include "tune/tuner.h"

#define DESIGN 3        /* quasi-random trials before the model, no prior */
#define CANDIDATES 2048 /* Sobol candidates of each EI search */
#define PRIOR_GRID 33   /* the prior's best pair: searched on this grid */
#define ROUND 4096      /* sizes are rounded to this (4 bytes below it) */

struct tuner {
	double lo[2], hi[2]; /* log2 bounds: partition; credit's upper */
	double credit_lo;    /* log2 tune.credit_min */
	uint64_t bounds[4];  /* partition min, max, credit min, max */
	uint32_t trials_wanted;
	double offset[2];    /* the design's rotation, from tune.seed */
	tune_trial *trials;
	uint32_t n, cap;
	ps_gp_prior_fn *prior;
	void *prior_ud;
	double prior_scale;  /* measurements / prior, fitted */
};

static double clamp01(double v)
{
	return v < 0.0 ? 0.0 : v > 1.0 ? 1.0 : v;
}

static uint64_t round_size(double bytes, uint64_t lo, uint64_t hi)
{
	uint64_t step = bytes >= ROUND ? ROUND : 4, v;

	v = (uint64_t)llround(bytes / (double)step) * step;
	if (v < lo)
		v = (lo + step - 1) / step * step;
	if (v > hi)
		v = hi / step * step;
	if (v < lo) /* no multiple of step in [lo, hi]: the bound itself */
		v = lo;
	return v;
}

int tuner_create(const ps_config *cfg, ps_gp_prior_fn *prior, void *ud,
		 tuner **t_p)
{
	tuner *t = calloc(1, sizeof(*t));
	gsl_rng *rng;

	if (!t)
		return PS_ENOMEM;
	t->bounds[0] = cfg->tune.partition_min;
	t->bounds[1] = cfg->tune.partition_max;
	t->bounds[2] = cfg->tune.credit_min;
	t->bounds[3] = cfg->tune.credit_max;
	t->lo[0] = log2((double)t->bounds[0]);
	t->hi[0] = log2((double)t->bounds[1]);
	t->credit_lo = log2((double)t->bounds[2]);
	t->hi[1] = log2((double)t->bounds[3]);
	t->trials_wanted = (uint32_t)cfg->tune.trials;
	t->prior = prior;
	t->prior_ud = ud;
	t->prior_scale = 1.0;
	rng = gsl_rng_alloc(gsl_rng_mt19937);
	if (!rng) {
		free(t);
		return PS_ENOMEM;
	}
	gsl_rng_set(rng, (unsigned long)cfg->tune.seed);
	t->offset[0] = gsl_rng_uniform(rng);
	t->offset[1] = gsl_rng_uniform(rng);
	gsl_rng_free(rng);
	*t_p = t;
	return PS_OK;
}

void tuner_free(tuner **t_p)
{
	if (!t_p || !*t_p)
		return;
	free((*t_p)->trials);
	free(*t_p);
	*t_p = NULL;
}

uint32_t tuner_design_trials(const tuner *t)
{
	uint32_t n = t->prior ? 1 : DESIGN;
	return n < t->trials_wanted ? n : t->trials_wanted;
}

tune_pair tuner_pair_at(const tuner *t, const double *x)
{
	tune_pair p;
	double lo;

	p.partition = round_size(exp2(t->lo[0] + clamp01(x[0]) *
					  (t->hi[0] - t->lo[0])),
				 t->bounds[0], t->bounds[1]);
	lo = fmax(t->credit_lo, log2((double)p.partition));
	p.credit = round_size(exp2(lo + clamp01(x[1]) * (t->hi[1] - lo)),
			      p.partition > t->bounds[2] ? p.partition
							 : t->bounds[2],
			      t->bounds[3]);
	return p;
}

void tuner_point_of(const tuner *t, tune_pair p, double *x)
{
	double lp = log2((double)p.partition), lo;

	x[0] = t->hi[0] > t->lo[0]
		       ? clamp01((lp - t->lo[0]) / (t->hi[0] - t->lo[0]))
		       : 0.5;
	lo = fmax(t->credit_lo, lp);
	x[1] = t->hi[1] > lo ? clamp01((log2((double)p.credit) - lo) /
				       (t->hi[1] - lo))
			     : 0.5;
}

/* The prior as the GP sees it: scaled to the measurements. */
static double scaled_prior(const double *x, void *ud)
{
	const tuner *t = ud;
	return t->prior_scale * t->prior(x, t->prior_ud);
}

/* Design point i: Sobol point i, rotated by the seed's offset. */
static int design_point(const tuner *t, uint32_t i, double *x)
{
	gsl_qrng *q = gsl_qrng_alloc(gsl_qrng_sobol, 2);
	double v[2];

	if (!q)
		return PS_ENOMEM;
	for (uint32_t k = 0; k <= i; k++)
		gsl_qrng_get(q, v);
	gsl_qrng_free(q);
	for (int d = 0; d < 2; d++)
		x[d] = fmod(v[d] + t->offset[d], 1.0);
	return PS_OK;
}

/* The prior's best pair, on a grid. */
static void prior_best(const tuner *t, double *x)
{
	double best = -INFINITY;

	for (int i = 0; i < PRIOR_GRID; i++)
		for (int j = 0; j < PRIOR_GRID; j++) {
			double p[2] = {(double)i / (PRIOR_GRID - 1),
				       (double)j / (PRIOR_GRID - 1)};
			double v = t->prior(p, t->prior_ud);
			if (v > best) {
				best = v;
				x[0] = p[0];
				x[1] = p[1];
			}
		}
}

/* Fits the model to the trials: measured ones, and failed ones as the
 * worst measurement (when `failed` is set and one was measured). *gp_p is
 * NULL when there is nothing to fit. idx (n entries) maps data to
 * trials. */
static int fit(tuner *t, int failed, ps_gp **gp_p, uint32_t *idx)
{
	double *x = malloc(2 * (t->n + 1) * sizeof(*x));
	double *y = malloc((t->n + 1) * sizeof(*y));
	double worst = INFINITY, ratio = 0.0;
	size_t n = 0, nratio = 0;
	int rc = PS_OK;

	*gp_p = NULL;
	if (!x || !y) {
		free(x);
		free(y);
		return PS_ENOMEM;
	}
	for (uint32_t i = 0; i < t->n; i++) {
		const tune_trial *tr = &t->trials[i];
		if (!tr->ok)
			continue;
		if (tr->samples_per_s < worst)
			worst = tr->samples_per_s;
		if (t->prior) {
			double p = t->prior(tr->x, t->prior_ud);
			if (p > 0.0) {
				ratio += tr->samples_per_s / p;
				nratio++;
			}
		}
	}
	t->prior_scale = nratio ? ratio / (double)nratio : 1.0;
	for (uint32_t i = 0; i < t->n; i++) {
		const tune_trial *tr = &t->trials[i];
		if (!tr->ok && (!failed || !isfinite(worst)))
			continue;
		x[2 * n] = tr->x[0];
		x[2 * n + 1] = tr->x[1];
		y[n] = tr->ok ? tr->samples_per_s : worst;
		if (idx)
			idx[n] = i;
		n++;
	}
	if (n > 0)
		rc = ps_gp_fit(x, y, n, 2, t->prior ? scaled_prior : NULL, t,
			       gp_p);
	free(x);
	free(y);
	return rc;
}

/* A pair measured this often is known well enough: the model proposes
 * other pairs (ps-tune measures a pair again to see past one noisy
 * sample, the prior's especially, but not over and over). */
#define CONFIRMED 2

/* Whether the pair at x is worth a trial: not confirmed yet. */
static int unconfirmed(void *ud, const double *x)
{
	const tuner *t = ud;
	double mean, sd;

	return tuner_pair_measured(t, tuner_pair_at(t, x), &mean, &sd) <
	       CONFIRMED;
}

int tuner_propose(tuner *t, tune_trial *next)
{
	uint32_t design = tuner_design_trials(t);
	ps_gp *gp = NULL;
	int rc = PS_OK;

	memset(next, 0, sizeof(*next));
	next->index = t->n + 1;
	next->mean = next->sd = next->ei = NAN;
	if (t->n >= design)
		rc = fit(t, 1, &gp, NULL);
	if (rc != PS_OK)
		return rc;
	if (gp) {
		next->ei = ps_gp_propose_where(gp, CANDIDATES, unconfirmed, t,
					       next->x);
		ps_gp_predict(gp, next->x, &next->mean, &next->sd);
		ps_gp_free(&gp);
	} else if (t->prior && t->n == 0) {
		prior_best(t, next->x);
	} else {
		rc = design_point(t, t->n - (t->prior ? 1 : 0), next->x);
		if (rc != PS_OK)
			return rc;
	}
	next->pair = tuner_pair_at(t, next->x);
	/* the point the pair really is (after rounding and the credit's
	 * floor): what the model learns from */
	tuner_point_of(t, next->pair, next->x);
	return PS_OK;
}

int tuner_record(tuner *t, const tune_trial *trial)
{
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? 2 * t->cap : 16;
		tune_trial *a = realloc(t->trials, cap * sizeof(*a));
		if (!a)
			return PS_ENOMEM;
		t->trials = a;
		t->cap = cap;
	}
	t->trials[t->n++] = *trial;
	return PS_OK;
}

uint64_t tuner_bound(const tuner *t, int i)
{
	return i >= 0 && i < 4 ? t->bounds[i] : 0;
}

uint32_t tuner_count(const tuner *t)
{
	return t->n;
}

const tune_trial *tuner_trial(const tuner *t, uint32_t i)
{
	return i < t->n ? &t->trials[i] : NULL;
}

uint32_t tuner_pair_measured(const tuner *t, tune_pair pair, double *mean_p,
			     double *sd_p)
{
	double sum = 0, sq = 0;
	uint32_t n = 0;

	for (uint32_t i = 0; i < t->n; i++) {
		const tune_trial *tr = &t->trials[i];
		if (!tr->ok || tr->pair.partition != pair.partition ||
		    tr->pair.credit != pair.credit)
			continue;
		sum += tr->samples_per_s;
		sq += tr->samples_per_s * tr->samples_per_s;
		n++;
	}
	*mean_p = n ? sum / n : NAN;
	*sd_p = n > 1 ? sqrt(fmax(0.0, (sq - sum * sum / n) / (n - 1))) : NAN;
	return n;
}

const tune_trial *tuner_best(tuner *t, double *mean_p, double *sd_p)
{
	uint32_t *idx = calloc(t->n + 1, sizeof(*idx));
	const tune_trial *best = NULL;
	ps_gp *gp = NULL;

	if (idx && fit(t, 0, &gp, idx) == PS_OK && gp) {
		best = &t->trials[idx[ps_gp_best_index(gp)]];
		if (mean_p && sd_p)
			ps_gp_predict(gp, best->x, mean_p, sd_p);
	}
	ps_gp_free(&gp);
	free(idx);
	return best;
}
