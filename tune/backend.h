/*
 * tune/backend.h - where ps-tune's trials run (docs/tune.md).
 *
 *  - job (tune/job.c): the real job, on this machine, through ps-launch
 *    (or a launcher of the user's that takes ps-launch's arguments).
 *    A trial with a new partition size stops the job at a checkpoint and
 *    restarts it from there; a trial with only a new credit changes the
 *    window live. Iterations and parameters carry over across trials.
 *  - sim (tune/simulate.c): ps-sim's prediction of every pair, for a
 *    cluster one does not have; seconds for the whole search.
 *
 * Both run the same loop (tune/main.c): propose, run, record, report.
 */
#ifndef ORDO_TUNE_BACKEND_H
#define ORDO_TUNE_BACKEND_H

#include "common/config.h"
#include "tune/tuner.h"

typedef struct tune_job tune_job;

typedef struct tune_job_opts {
	int argc;            /* ps-tune's own command line, passed on */
	char **argv;
	const char *worker;  /* --worker PROGRAM, or NULL */
	char launcher[4096]; /* --launcher PROGRAM (its path), "": ps-launch */
} tune_job_opts;

/* Checks what the job needs (checkpoint.dir writable, enough
 * iterations), listens for the scheduler. Messages name the problem. */
int tune_job_create(const ps_config *cfg, const tune_job_opts *o,
		    tune_job **j_p);
/* Runs one trial with trial->pair and fills the measurement (ok, samples
 * per second, how, switch_s, first, last, note). PS_OK also for a failed
 * trial (ok = 0); PS_ECLOSED when the job ended (train.iterations ran
 * out), PS_EINTR on a signal, another error when tuning cannot go on. */
int tune_job_trial(tune_job *j, tune_trial *trial);
/* After the last trial: tune.then = train (best pair until the job ends)
 * or stop (at a checkpoint). Returns the exit status for ps-tune. */
int tune_job_finish(tune_job *j, const tune_pair *best);
void tune_job_free(tune_job **j_p);

typedef struct tune_sim tune_sim;

int tune_sim_create(const ps_config *cfg, tune_sim **s_p);
/* Predicted samples/s of the pair; NAN (and a message) on failure. */
double tune_sim_samples(tune_sim *s, tune_pair pair);
/* The prior mean for the GP (tune.prior = sim): ps-sim on a grid of the
 * unit square, interpolated; computed on first use. */
double tune_sim_prior(const double *x, void *ud);
/* Binds the sim to a tuner's mapping of the square (for the prior). */
void tune_sim_bind(tune_sim *s, const tuner *t);
/* Fills a trial from ps-sim's prediction. */
int tune_sim_trial(tune_sim *s, tune_trial *trial);
void tune_sim_free(tune_sim **s_p);

#endif /* ORDO_TUNE_BACKEND_H */
