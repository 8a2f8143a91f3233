/*
 * tune/gp.h - Gaussian-process regression and expected improvement,
 * the optimiser under ps-tune (ByteScheduler §4.3).
 *
 * Inputs live in the unit cube [0,1]^d (the tuner maps log2 of partition
 * and credit sizes there); outputs are what is maximised (samples/s).
 * The model: a constant mean (the sample mean, or a prior mean function
 * given by the caller), a Matern 5/2 kernel with one length scale per
 * dimension and a signal variance, plus a noise variance (measurements are
 * noisy). Hyperparameters maximise the log marginal likelihood, from
 * several deterministic starts (Sobol points) with GSL's Nelder-Mead
 * simplex; the linear algebra is GSL's Cholesky. Nothing is random: the
 * same data give the same model and the same proposals.
 *
 * Threads: a ps_gp is immutable after ps_gp_fit; share it freely.
 */
#ifndef ORDO_TUNE_GP_H
#define ORDO_TUNE_GP_H

#include <stddef.h>

#include "ordo/error.h"

#define PS_GP_MAX_DIMS 8

typedef struct ps_gp ps_gp;

/* Prior mean at x (NULL: the data's mean); ud is passed through. */
typedef double ps_gp_prior_fn(const double *x, void *ud);

/* Fits a GP to n points x (n x d, row-major, in [0,1]^d) with values y.
 * n >= 1, 1 <= d <= PS_GP_MAX_DIMS. */
int ps_gp_fit(const double *x, const double *y, size_t n, size_t d,
	      ps_gp_prior_fn *prior, void *prior_ud, ps_gp **gp_p);

/* The same model with given hyperparameters instead of fitted ones:
 * length scales (d, > 0), signal and noise standard deviations in the
 * units of y (signal_sd > 0, noise_sd >= 0; with 0 the model interpolates,
 * with a little jitter if K is numerically singular). For tests and for
 * callers that know the hyperparameters. */
int ps_gp_fit_fixed(const double *x, const double *y, size_t n, size_t d,
		    const double *lengths, double signal_sd, double noise_sd,
		    ps_gp_prior_fn *prior, void *prior_ud, ps_gp **gp_p);
void ps_gp_free(ps_gp **gp_p);

/* Posterior mean and standard deviation of the latent function at x. */
void ps_gp_predict(const ps_gp *gp, const double *x, double *mean_p,
		   double *sd_p);

/* Expected improvement over `best` (maximisation) at x. */
double ps_gp_ei(const ps_gp *gp, const double *x, double best);

/* The fitted hyperparameters: length scales (d), signal and noise sd. */
void ps_gp_hyper(const ps_gp *gp, double *lengths, double *signal_sd,
		 double *noise_sd);

/* The log marginal likelihood of the data under the model, log p(y | x,
 * hyperparameters), the mean taken as given: what ps_gp_fit maximises,
 * so two models of the same data compare by it. */
double ps_gp_log_lik(const ps_gp *gp);

/* The point of [0,1]^d to measure next: the largest expected improvement
 * over the best posterior mean among the data points, searched over
 * ncand Sobol points, the best few refined by Nelder-Mead. Writes it
 * into x_p and returns its EI. */
double ps_gp_propose(const ps_gp *gp, size_t ncand, double *x_p);

/* ps_gp_propose among the points allowed(ud, x) accepts (a refinement that
 * leaves them keeps its candidate); where no candidate is allowed, the
 * unrestricted proposal. */
double ps_gp_propose_where(const ps_gp *gp, size_t ncand,
			   int (*allowed)(void *ud, const double *x),
			   void *ud, double *x_p);

/* Index of the data point with the largest posterior mean: the reported
 * best (not the luckiest sample). */
size_t ps_gp_best_index(const ps_gp *gp);

#endif /* ORDO_TUNE_GP_H */
