/*
 * tune/gp.c - Gaussian-process regression and expected improvement
 * (gp.h).
 *
 * DESIGN. Outputs are standardised (residuals from the prior mean divided
 * by their standard deviation) so that one box of hyperparameters fits
 * any scale of samples/s. Hyperparameters are searched in log space
 * inside fixed bounds (a step outside costs a large penalty, which keeps
 * Nelder-Mead inside); a kernel matrix that is not positive definite gets
 * growing jitter on its diagonal before it is given up on.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_multimin.h>
#include <gsl/gsl_qrng.h>
#include <gsl/gsl_randist.h>

#include "tune/gp.h"

#define STARTS 8       /* hyperparameter searches from Sobol points */
#define NM_ITERS 300   /* Nelder-Mead iterations per search */
#define REFINE 5       /* EI candidates refined locally */
#define BAD 1e30       /* objective outside the bounds or not PD */

/* log bounds of the hyperparameters (outputs standardised, inputs in the
 * unit cube) */
static const double LOG_LS[2] = {-4.6, 2.3};    /* length 0.01 .. 10 */
static const double LOG_SF2[2] = {-4.6, 4.6};   /* signal var 0.01 .. 100 */
static const double LOG_SN2[2] = {-13.8, 1.0};  /* noise var 1e-6 .. 2.7 */

struct ps_gp {
	size_t n, d;
	double *x;     /* n x d */
	double *z;     /* standardised residuals */
	double *prior; /* prior mean at each point */
	ps_gp_prior_fn *prior_fn;
	void *prior_ud;
	double ymean, yscale;
	double ls[PS_GP_MAX_DIMS], sf2, sn2;
	double lml;        /* log marginal likelihood of z */
	gsl_matrix *L;     /* Cholesky factor of K + sn2 I */
	gsl_vector *alpha; /* (K + sn2 I)^-1 z */
};

static double matern52(const double *a, const double *b, size_t d,
		       const double *ls, double sf2)
{
	double r2 = 0.0, r;

	for (size_t i = 0; i < d; i++) {
		double t = (a[i] - b[i]) / ls[i];
		r2 += t * t;
	}
	r = sqrt(5.0 * r2);
	return sf2 * (1.0 + r + r * r / 3.0) * exp(-r);
}

static double prior_at(const ps_gp *gp, const double *x)
{
	return gp->prior_fn ? gp->prior_fn(x, gp->prior_ud) : gp->ymean;
}

/* Factors K + sn2 I of the current hyperparameters into gp->L and solves
 * alpha; returns the log marginal likelihood, or -BAD. */
static double factor(ps_gp *gp)
{
	size_t n = gp->n;
	double jitter = 0.0, lml = 0.0;

	for (int attempt = 0; attempt < 6; attempt++) {
		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j <= i; j++) {
				double k = matern52(gp->x + i * gp->d,
						    gp->x + j * gp->d, gp->d,
						    gp->ls, gp->sf2);
				if (i == j)
					k += gp->sn2 + jitter;
				gsl_matrix_set(gp->L, i, j, k);
				gsl_matrix_set(gp->L, j, i, k);
			}
		if (gsl_linalg_cholesky_decomp1(gp->L) == GSL_SUCCESS)
			break;
		jitter = jitter ? jitter * 10.0 : 1e-10;
		if (attempt == 5)
			return -BAD;
	}
	for (size_t i = 0; i < n; i++)
		gsl_vector_set(gp->alpha, i, gp->z[i]);
	gsl_linalg_cholesky_svx(gp->L, gp->alpha);
	for (size_t i = 0; i < n; i++)
		lml -= 0.5 * gp->z[i] * gsl_vector_get(gp->alpha, i) +
		       log(gsl_matrix_get(gp->L, i, i));
	return lml - 0.5 * (double)n * log(2.0 * M_PI);
}

/* theta = (log ls_1..d, log sf2, log sn2) */
static int set_theta(ps_gp *gp, const gsl_vector *t)
{
	for (size_t i = 0; i < gp->d + 2; i++) {
		const double *b = i < gp->d ? LOG_LS
				  : i == gp->d ? LOG_SF2 : LOG_SN2;
		double v = gsl_vector_get(t, i);
		if (!(v >= b[0] && v <= b[1]))
			return 0;
	}
	for (size_t i = 0; i < gp->d; i++)
		gp->ls[i] = exp(gsl_vector_get(t, i));
	gp->sf2 = exp(gsl_vector_get(t, gp->d));
	gp->sn2 = exp(gsl_vector_get(t, gp->d + 1));
	return 1;
}

static double neg_lml(const gsl_vector *t, void *params)
{
	ps_gp *gp = params;
	double lml;

	if (!set_theta(gp, t))
		return BAD;
	lml = factor(gp);
	return lml <= -BAD ? BAD : -lml;
}

/* Nelder-Mead from `start` (size n) with step sizes `step`; the minimum
 * into start, its value returned. */
static double minimise(gsl_multimin_function *f, gsl_vector *start,
		       double step)
{
	const gsl_multimin_fminimizer_type *T =
		gsl_multimin_fminimizer_nmsimplex2;
	gsl_multimin_fminimizer *m = gsl_multimin_fminimizer_alloc(T, f->n);
	gsl_vector *ss = gsl_vector_alloc(f->n);
	double best;

	if (!m || !ss) {
		gsl_multimin_fminimizer_free(m);
		gsl_vector_free(ss);
		return BAD;
	}
	gsl_vector_set_all(ss, step);
	gsl_multimin_fminimizer_set(m, f, start, ss);
	for (int it = 0; it < NM_ITERS; it++) {
		if (gsl_multimin_fminimizer_iterate(m) != GSL_SUCCESS)
			break;
		if (gsl_multimin_test_size(gsl_multimin_fminimizer_size(m),
					   1e-4) == GSL_SUCCESS)
			break;
	}
	gsl_vector_memcpy(start, gsl_multimin_fminimizer_x(m));
	best = gsl_multimin_fminimizer_minimum(m);
	gsl_multimin_fminimizer_free(m);
	gsl_vector_free(ss);
	return best;
}

static int fit_hyper(ps_gp *gp)
{
	size_t k = gp->d + 2;
	gsl_multimin_function f = {.f = neg_lml, .n = k, .params = gp};
	gsl_qrng *q = gsl_qrng_alloc(gsl_qrng_sobol, (unsigned)k);
	gsl_vector *t = gsl_vector_alloc(k), *best = gsl_vector_alloc(k);
	double u[PS_GP_MAX_DIMS + 2], best_val = BAD;
	int rc = PS_OK;

	if (!q || !t || !best) {
		rc = PS_ENOMEM;
		goto out;
	}
	for (int s = 0; s < STARTS; s++) {
		double v;
		gsl_qrng_get(q, u);
		for (size_t i = 0; i < k; i++) {
			const double *b = i < gp->d ? LOG_LS
					  : i == gp->d ? LOG_SF2 : LOG_SN2;
			gsl_vector_set(t, i, b[0] + (b[1] - b[0]) *
						     (0.1 + 0.8 * u[i]));
		}
		v = minimise(&f, t, 0.5);
		if (v < best_val) {
			best_val = v;
			gsl_vector_memcpy(best, t);
		}
	}
	if (best_val >= BAD || !set_theta(gp, best) ||
	    (gp->lml = factor(gp)) <= -BAD)
		rc = PS_EINVAL;
out:
	gsl_qrng_free(q);
	gsl_vector_free(t);
	gsl_vector_free(best);
	return rc;
}

/* Checks the data and builds a model with standardised residuals and no
 * hyperparameters yet; *gp_p is NULL on failure. */
static int gp_new(const double *x, const double *y, size_t n, size_t d,
		  ps_gp_prior_fn *prior, void *prior_ud, ps_gp **gp_p)
{
	ps_gp *gp;
	double var = 0.0;

	*gp_p = NULL;
	if (!x || !y || n == 0 || d == 0 || d > PS_GP_MAX_DIMS)
		return PS_EINVAL;
	for (size_t i = 0; i < n * d; i++)
		if (!(x[i] >= 0.0 && x[i] <= 1.0))
			return PS_EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!isfinite(y[i]))
			return PS_EINVAL;
	gsl_set_error_handler_off(); /* errors come back as codes */
	gp = calloc(1, sizeof(*gp));
	if (!gp)
		return PS_ENOMEM;
	gp->n = n;
	gp->d = d;
	gp->prior_fn = prior;
	gp->prior_ud = prior_ud;
	gp->x = malloc(n * d * sizeof(double));
	gp->z = malloc(n * sizeof(double));
	gp->prior = malloc(n * sizeof(double));
	gp->L = gsl_matrix_alloc(n, n);
	gp->alpha = gsl_vector_alloc(n);
	if (!gp->x || !gp->z || !gp->prior || !gp->L || !gp->alpha) {
		ps_gp_free(&gp);
		return PS_ENOMEM;
	}
	memcpy(gp->x, x, n * d * sizeof(double));
	for (size_t i = 0; i < n; i++)
		gp->ymean += y[i] / (double)n;
	for (size_t i = 0; i < n; i++) {
		gp->prior[i] = prior_at(gp, x + i * d);
		gp->z[i] = y[i] - gp->prior[i];
		var += gp->z[i] * gp->z[i] / (double)n;
	}
	gp->yscale = var > 0.0 ? sqrt(var) : 1.0;
	for (size_t i = 0; i < n; i++)
		gp->z[i] /= gp->yscale;
	*gp_p = gp;
	return PS_OK;
}

int ps_gp_fit(const double *x, const double *y, size_t n, size_t d,
	      ps_gp_prior_fn *prior, void *prior_ud, ps_gp **gp_p)
{
	ps_gp *gp;
	int rc;

	*gp_p = NULL;
	rc = gp_new(x, y, n, d, prior, prior_ud, &gp);
	if (rc != PS_OK)
		return rc;
	rc = fit_hyper(gp);
	if (rc != PS_OK) {
		ps_gp_free(&gp);
		return rc;
	}
	*gp_p = gp;
	return PS_OK;
}

int ps_gp_fit_fixed(const double *x, const double *y, size_t n, size_t d,
		    const double *lengths, double signal_sd, double noise_sd,
		    ps_gp_prior_fn *prior, void *prior_ud, ps_gp **gp_p)
{
	ps_gp *gp;
	int rc;

	*gp_p = NULL;
	if (!lengths || !(signal_sd > 0.0) || !isfinite(signal_sd) ||
	    !(noise_sd >= 0.0) || !isfinite(noise_sd))
		return PS_EINVAL;
	rc = gp_new(x, y, n, d, prior, prior_ud, &gp);
	if (rc != PS_OK)
		return rc;
	for (size_t i = 0; i < d; i++)
		if (!(lengths[i] > 0.0) || !isfinite(lengths[i])) {
			ps_gp_free(&gp);
			return PS_EINVAL;
		}
	/* the model works on standardised residuals: scale the given
	 * variances the same way, so that the model is exactly the one
	 * asked for in the caller's units */
	for (size_t i = 0; i < d; i++)
		gp->ls[i] = lengths[i];
	gp->sf2 = signal_sd * signal_sd / (gp->yscale * gp->yscale);
	gp->sn2 = noise_sd * noise_sd / (gp->yscale * gp->yscale);
	gp->lml = factor(gp);
	if (gp->lml <= -BAD) {
		ps_gp_free(&gp);
		return PS_EINVAL;
	}
	*gp_p = gp;
	return PS_OK;
}

void ps_gp_free(ps_gp **gp_p)
{
	ps_gp *gp = gp_p ? *gp_p : NULL;

	if (!gp)
		return;
	free(gp->x);
	free(gp->z);
	free(gp->prior);
	gsl_matrix_free(gp->L);
	gsl_vector_free(gp->alpha);
	free(gp);
	*gp_p = NULL;
}

void ps_gp_predict(const ps_gp *gp, const double *x, double *mean_p,
		   double *sd_p)
{
	gsl_vector *k = gsl_vector_alloc(gp->n);
	double mean = 0.0, var;

	for (size_t i = 0; i < gp->n; i++) {
		double v = matern52(x, gp->x + i * gp->d, gp->d, gp->ls,
				    gp->sf2);
		gsl_vector_set(k, i, v);
		mean += v * gsl_vector_get(gp->alpha, i);
	}
	/* v = L^-1 k; var = k(x, x) - v.v */
	gsl_blas_dtrsv(CblasLower, CblasNoTrans, CblasNonUnit, gp->L, k);
	var = gp->sf2;
	for (size_t i = 0; i < gp->n; i++)
		var -= gsl_vector_get(k, i) * gsl_vector_get(k, i);
	gsl_vector_free(k);
	*mean_p = prior_at(gp, x) + gp->yscale * mean;
	*sd_p = gp->yscale * sqrt(var > 0.0 ? var : 0.0);
}

double ps_gp_ei(const ps_gp *gp, const double *x, double best)
{
	double mean, sd, z;

	ps_gp_predict(gp, x, &mean, &sd);
	if (sd < 1e-12)
		return mean > best ? mean - best : 0.0;
	z = (mean - best) / sd;
	return (mean - best) * gsl_cdf_ugaussian_P(z) +
	       sd * gsl_ran_ugaussian_pdf(z);
}

void ps_gp_hyper(const ps_gp *gp, double *lengths, double *signal_sd,
		 double *noise_sd)
{
	for (size_t i = 0; i < gp->d; i++)
		lengths[i] = gp->ls[i];
	*signal_sd = gp->yscale * sqrt(gp->sf2);
	*noise_sd = gp->yscale * sqrt(gp->sn2);
}

double ps_gp_log_lik(const ps_gp *gp)
{
	/* z = (y - m) / yscale: the density of y is that of z over
	 * yscale^n */
	return gp->lml - (double)gp->n * log(gp->yscale);
}

size_t ps_gp_best_index(const ps_gp *gp)
{
	size_t best = 0;
	double best_mean = -INFINITY;

	for (size_t i = 0; i < gp->n; i++) {
		double mean, sd;
		ps_gp_predict(gp, gp->x + i * gp->d, &mean, &sd);
		if (mean > best_mean) {
			best_mean = mean;
			best = i;
		}
	}
	return best;
}

typedef struct ei_ctx {
	const ps_gp *gp;
	double best;
} ei_ctx;

static double neg_ei(const gsl_vector *t, void *params)
{
	const ei_ctx *e = params;
	double x[PS_GP_MAX_DIMS];

	for (size_t i = 0; i < e->gp->d; i++) {
		x[i] = gsl_vector_get(t, i);
		if (!(x[i] >= 0.0 && x[i] <= 1.0))
			return BAD;
	}
	return -ps_gp_ei(e->gp, x, e->best);
}

double ps_gp_propose(const ps_gp *gp, size_t ncand, double *x_p)
{
	return ps_gp_propose_where(gp, ncand, NULL, NULL, x_p);
}

double ps_gp_propose_where(const ps_gp *gp, size_t ncand,
			   int (*allowed)(void *ud, const double *x),
			   void *ud, double *x_p)
{
	size_t d = gp->d, top[REFINE], ntop = 0;
	double top_ei[REFINE], best_mean, sd, best_ei = -1.0;
	double *cand = malloc((ncand ? ncand : 1) * d * sizeof(double));
	gsl_qrng *q = gsl_qrng_alloc(gsl_qrng_sobol, (unsigned)d);
	gsl_vector *t = gsl_vector_alloc(d);
	ei_ctx e = {.gp = gp};
	gsl_multimin_function f = {.f = neg_ei, .n = d, .params = &e};

	ps_gp_predict(gp, gp->x + ps_gp_best_index(gp) * d, &best_mean, &sd);
	e.best = best_mean;
	for (size_t i = 0; i < d; i++)
		x_p[i] = 0.5;
	if (!cand || !q || !t)
		goto out;
	for (size_t c = 0; c < ncand; c++) {
		double ei;
		size_t slot;

		gsl_qrng_get(q, cand + c * d);
		if (allowed && !allowed(ud, cand + c * d))
			continue;
		ei = ps_gp_ei(gp, cand + c * d, e.best);
		if (ntop < REFINE) {
			slot = ntop++;
		} else {
			slot = 0;
			for (size_t k = 1; k < REFINE; k++)
				if (top_ei[k] < top_ei[slot])
					slot = k;
			if (ei <= top_ei[slot])
				continue;
		}
		top[slot] = c;
		top_ei[slot] = ei;
	}
	for (size_t k = 0; k < ntop; k++) {
		double v;
		for (size_t i = 0; i < d; i++)
			gsl_vector_set(t, i, cand[top[k] * d + i]);
		v = -minimise(&f, t, 0.05);
		if (allowed && !allowed(ud, t->data)) /* left what is allowed */
			v = -1.0;
		if (v < top_ei[k]) { /* refinement lost: keep the candidate */
			v = top_ei[k];
			for (size_t i = 0; i < d; i++)
				gsl_vector_set(t, i, cand[top[k] * d + i]);
		}
		if (v > best_ei) {
			best_ei = v;
			for (size_t i = 0; i < d; i++)
				x_p[i] = gsl_vector_get(t, i);
		}
	}
out:
	free(cand);
	gsl_qrng_free(q);
	gsl_vector_free(t);
	if (allowed && ntop == 0) /* nothing allowed: the unrestricted one */
		return ps_gp_propose_where(gp, ncand, NULL, NULL, x_p);
	return best_ei < 0.0 ? 0.0 : best_ei;
}
