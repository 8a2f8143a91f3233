/*
 * tune/simulate.c - ps-tune's trials in ps-sim (backend.h): --backend sim,
 * and the prior mean of tune.prior = sim.
 *
 * A pair's prediction is ps-sim's samples/s for the job's config with that
 * partition and credit, over 1 + tune.measure_iterations iterations (the
 * first starts with every parameter present and is not counted: the same
 * steady state the job's measurement sees). The link model is the
 * config's (link.*, sim.*): ps-bench's calibration of this machine, or
 * the user's description of a cluster they do not have.
 *
 * The prior is ps-sim on a PRIOR_GRID x PRIOR_GRID grid of the tuner's
 * unit square, bilinearly interpolated: the GP evaluates its prior mean
 * thousands of times per proposal, a simulation costs milliseconds.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "model/dag.h"
#include "sim/cluster.h"
#include "sim/link.h"
#include "tune/backend.h"

#define PRIOR_GRID 9

struct tune_sim {
	ps_config cfg;
	ps_dag *dag;
	ps_link_model lm;
	const tuner *t;
	double *grid; /* PRIOR_GRID^2 predictions, NULL until first use */
	int grid_failed;
};

int tune_sim_create(const ps_config *cfg, tune_sim **s_p)
{
	tune_sim *s = calloc(1, sizeof(*s));
	char err[1024];

	if (!s)
		return PS_ENOMEM;
	*s_p = s;
	s->cfg = *cfg;
	s->cfg.output.dir[0] = '\0'; /* no timelines of the trials */
	s->cfg.train.iterations = 1 + cfg->tune.measure_iterations;
	if (!cfg->model.file[0]) {
		PS_ERROR("ps-sim needs model.file (e.g. --set "
			 "model.file=conf/models/resnet50.json)");
		return PS_EINVAL;
	}
	if (ps_link_model_from_config(cfg, &s->lm, err, sizeof(err)) !=
	    PS_OK) {
		PS_ERROR("link.fit_file: %s", err);
		return PS_EINVAL;
	}
	if (ps_dag_load(cfg->model.file, cfg->model.compute_scale, &s->dag,
			err, sizeof(err)) != PS_OK) {
		PS_ERROR("cannot load model.file: %s", err);
		return PS_EINVAL;
	}
	return PS_OK;
}

double tune_sim_samples(tune_sim *s, tune_pair pair)
{
	ps_sim_result r;
	char err[1024];
	double v;

	ps_config_set_partition_size(&s->cfg, pair.partition);
	/* the pair's credit is both directions' window, as the trial's
	 * --set scheduling.credit_size makes it */
	s->cfg.scheduling.push.credit_size = pair.credit;
	s->cfg.scheduling.params.credit_size = pair.credit;
	if (ps_sim_run(&s->cfg, s->dag, &s->lm, &r, err, sizeof(err)) !=
	    PS_OK) {
		PS_ERROR("ps-sim: %s", err);
		return NAN;
	}
	/* steady state, as the job's trials measure it: the mean
	 * iteration after the first */
	v = r.iteration_us > 0.0 ? (double)r.workers * s->dag->batch * 1e6 /
					   r.iteration_us
				 : NAN;
	ps_sim_result_free(&r);
	return v;
}

void tune_sim_bind(tune_sim *s, const tuner *t)
{
	s->t = t;
}

static int fill_grid(tune_sim *s)
{
	s->grid = malloc(PRIOR_GRID * PRIOR_GRID * sizeof(*s->grid));
	if (!s->grid)
		return PS_ENOMEM;
	for (int i = 0; i < PRIOR_GRID; i++)
		for (int k = 0; k < PRIOR_GRID; k++) {
			double x[2] = {(double)i / (PRIOR_GRID - 1),
				       (double)k / (PRIOR_GRID - 1)};
			double v = tune_sim_samples(s,
						    tuner_pair_at(s->t, x));
			if (!isfinite(v))
				return PS_EINVAL;
			s->grid[i * PRIOR_GRID + k] = v;
		}
	return PS_OK;
}

double tune_sim_prior(const double *x, void *ud)
{
	tune_sim *s = ud;
	double u, v, fu, fv, g00, g01, g10, g11;
	int i, k;

	if (!s->grid && !s->grid_failed && fill_grid(s) != PS_OK) {
		PS_WARN("tune.prior = sim: ps-sim failed on the grid; no "
			"prior");
		free(s->grid);
		s->grid = NULL;
		s->grid_failed = 1;
	}
	if (!s->grid)
		return 0.0;
	u = fmin(fmax(x[0], 0.0), 1.0) * (PRIOR_GRID - 1);
	v = fmin(fmax(x[1], 0.0), 1.0) * (PRIOR_GRID - 1);
	i = u >= PRIOR_GRID - 1 ? PRIOR_GRID - 2 : (int)u;
	k = v >= PRIOR_GRID - 1 ? PRIOR_GRID - 2 : (int)v;
	fu = u - i;
	fv = v - k;
	g00 = s->grid[i * PRIOR_GRID + k];
	g01 = s->grid[i * PRIOR_GRID + k + 1];
	g10 = s->grid[(i + 1) * PRIOR_GRID + k];
	g11 = s->grid[(i + 1) * PRIOR_GRID + k + 1];
	return (1 - fu) * ((1 - fv) * g00 + fv * g01) +
	       fu * ((1 - fv) * g10 + fv * g11);
}

int tune_sim_trial(tune_sim *s, tune_trial *tr)
{
	double v = tune_sim_samples(s, tr->pair);

	snprintf(tr->how, sizeof(tr->how), "sim");
	tr->first = 1;
	tr->last = 1 + (uint64_t)s->cfg.tune.measure_iterations;
	if (!isfinite(v)) {
		tr->ok = 0;
		snprintf(tr->note, sizeof(tr->note), "ps-sim failed");
		return PS_OK;
	}
	tr->ok = 1;
	tr->samples_per_s = v;
	return PS_OK;
}

void tune_sim_free(tune_sim **s_p)
{
	if (!s_p || !*s_p)
		return;
	ps_dag_free(&(*s_p)->dag);
	free((*s_p)->grid);
	free(*s_p);
	*s_p = NULL;
}
