/*
 * tests/tune/test_gp.c - the Gaussian process and expected improvement of
 * tune/gp.c: the posterior against small examples worked by hand,
 * interpolation, noise, the reported best, a prior mean, determinism, a
 * Bayesian-optimisation loop finding a known optimum, and bad input.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "tune/gp.h"

/* A deterministic "noise" in [-1, 1]. */
static double wobble(unsigned i)
{
	uint32_t h = i * 2654435761u;
	h ^= h >> 15;
	return (double)(h % 2001) / 1000.0 - 1.0;
}

/*
 * Matern 5/2 as Rasmussen & Williams write it (eq. 4.17), in the form
 * k(r) = sf^2 (1 + sqrt(5) r / l + 5 r^2 / (3 l^2)) exp(-sqrt(5) r / l),
 * with the per-dimension scaled distance r / l; written here apart from
 * gp.c so that a slip in either shows.
 */
static double kernel(const double *a, const double *b, size_t d,
		     const double *ls, double sf)
{
	double s = 0.0;

	for (size_t i = 0; i < d; i++)
		s += (a[i] - b[i]) * (a[i] - b[i]) / (ls[i] * ls[i]);
	s = sqrt(s);
	return sf * sf * (1.0 + sqrt(5.0) * s + 5.0 * s * s / 3.0) *
	       exp(-sqrt(5.0) * s);
}

static double det3(const double m[3][3])
{
	return m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
	       m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
	       m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
}

/* a^T A^-1 b for a 3 x 3 A, by Cramer's rule: A^-1 b has components
 * det(A with column i replaced by b) / det(A). */
static double quad3(const double A[3][3], const double *a, const double *b)
{
	double det = det3(A), s = 0.0;

	for (int i = 0; i < 3; i++) {
		double m[3][3];
		for (int r = 0; r < 3; r++)
			for (int c = 0; c < 3; c++)
				m[r][c] = c == i ? b[r] : A[r][c];
		s += a[i] * det3(m) / det;
	}
	return s;
}

/*
 * 1-D, two noiseless points, hyperparameters fixed: x = 0.2, 0.5,
 * y = 1, 3, l = 0.3, sf = 2, no prior function (so the mean is the data
 * mean, 2). With rho(t) = (1 + sqrt5 t + 5t^2/3) exp(-sqrt5 t) at
 * t = distance / l, K = 4 [[1, p], [p, 1]] with p = rho(1) (the points
 * are one length scale apart) and K^-1 (y - 2) = (-1, 1) / (4 (1 - p)):
 *   at 0.35 (midway, t = 0.5 from both, k = 4 q, q = rho(0.5)): the mean
 *     is 2 by symmetry, var = 4 - 2 (4q)^2 / (4 + 4p) = 4 - 8q^2/(1+p);
 *   at 0.8 (t = 2 and 1, k = 4 (u, p), u = rho(2)):
 *     mean = 2 + (p - u) / (1 - p),
 *     var = 4 - 4 (u^2 - 2 p^2 u + p^2) / (1 - p^2);
 *   at the data points: the data, with no spread.
 * The numbers (p = 0.52399411, q = 0.82864914, u = 0.13866022) are also
 * written out, from python3's math module with the formulas above and
 * again with a generic Gaussian-elimination solve: 0.6288678508 and
 * 2.8095149595 / 1.6732811594. The log marginal likelihood is
 * -r^T K^-1 r / 2 - log det K / 2 - log 2pi with r = (-1, 1):
 * -1 / (4 (1 - p)) - log(16 (1 - p^2)) / 2 - log 2pi.
 */
static void test_posterior_two_points(void **state)
{
	const double x[2] = {0.2, 0.5}, y[2] = {1.0, 3.0}, ls = 0.3;
	double p, q, u, mean, sd;
	ps_gp *gp = NULL;

	(void)state;
	p = kernel(&(double){0.0}, &(double){1.0}, 1, &(double){1.0}, 1.0);
	q = kernel(&(double){0.0}, &(double){0.5}, 1, &(double){1.0}, 1.0);
	u = kernel(&(double){0.0}, &(double){2.0}, 1, &(double){1.0}, 1.0);
	assert_true(fabs(p - 0.5239941088) < 1e-9);
	assert_true(fabs(q - 0.8286491424) < 1e-9);
	assert_true(fabs(u - 0.1386602191) < 1e-9);

	assert_int_equal(ps_gp_fit_fixed(x, y, 2, 1, &ls, 2.0, 0.0, NULL,
					 NULL, &gp),
			 PS_OK);
	ps_gp_predict(gp, &(double){0.35}, &mean, &sd);
	assert_true(fabs(mean - 2.0) < 1e-9);
	assert_true(fabs(sd - sqrt(4.0 - 8.0 * q * q / (1.0 + p))) < 1e-9);
	assert_true(fabs(sd - 0.6288678508) < 1e-9);
	ps_gp_predict(gp, &(double){0.8}, &mean, &sd);
	assert_true(fabs(mean - (2.0 + (p - u) / (1.0 - p))) < 1e-9);
	assert_true(fabs(mean - 2.8095149595) < 1e-9);
	assert_true(fabs(sd - sqrt(4.0 - 4.0 * (u * u - 2.0 * p * p * u +
						  p * p) /
						 (1.0 - p * p))) < 1e-9);
	assert_true(fabs(sd - 1.6732811594) < 1e-9);
	assert_true(fabs(ps_gp_log_lik(gp) -
			 (-1.0 / (4.0 * (1.0 - p)) -
			  0.5 * log(16.0 * (1.0 - p * p)) - log(2.0 * M_PI))) <
		    1e-9);
	/* noiseless: through the data, with (numerically) no spread; the
	 * spread is the root of a difference of two numbers near sf^2 = 4,
	 * so its rounding is about sqrt(4 * 1e-16) = 2e-8 */
	for (int i = 0; i < 2; i++) {
		ps_gp_predict(gp, &x[i], &mean, &sd);
		assert_true(fabs(mean - y[i]) < 1e-9);
		assert_true(sd < 1e-6);
	}
	ps_gp_free(&gp);
}

/* A prior of 4 + 2 x0 (the slope passed through ud). */
static double slope_prior(const double *x, void *ud)
{
	return 4.0 + *(const double *)ud * x[0];
}

/*
 * 2-D, three noisy points, anisotropic length scales and a prior mean,
 * hyperparameters fixed: the posterior is, with A = K + sn^2 I and k the
 * kernel between x* and the data (R&W eqs. 2.23-2.24),
 *   mean(x*) = m(x*) + k^T A^-1 (y - m(X)),  var(x*) = sf^2 - k^T A^-1 k,
 * computed here with the kernel above and Cramer's rule, and compared at
 * two new points and at a data point (where, with noise, the mean is
 * pulled towards the prior and some spread remains).
 */
static void test_posterior_three_points(void **state)
{
	const double x[6] = {0.1, 0.2, 0.4, 0.9, 0.7, 0.5};
	const double y[3] = {5.0, 3.0, 6.5}, ls[2] = {0.25, 0.6};
	const double sf = 1.5, sn = 0.3, at[3][2] = {
		{0.3, 0.4}, {0.9, 0.1}, {0.4, 0.9}};
	double slope = 2.0, A[3][3], r[3], len[2], sig, noise;
	ps_gp *gp = NULL;

	(void)state;
	for (int i = 0; i < 3; i++) {
		for (int j = 0; j < 3; j++)
			A[i][j] = kernel(x + 2 * i, x + 2 * j, 2, ls, sf) +
				  (i == j ? sn * sn : 0.0);
		r[i] = y[i] - slope_prior(x + 2 * i, &slope);
	}
	assert_int_equal(ps_gp_fit_fixed(x, y, 3, 2, ls, sf, sn, slope_prior,
					 &slope, &gp),
			 PS_OK);
	ps_gp_hyper(gp, len, &sig, &noise);
	assert_true(fabs(len[0] - ls[0]) < 1e-12 &&
		    fabs(len[1] - ls[1]) < 1e-12);
	assert_true(fabs(sig - sf) < 1e-12 && fabs(noise - sn) < 1e-12);
	for (int p = 0; p < 3; p++) {
		double k[3], mean, sd, want_mean, want_sd;
		for (int i = 0; i < 3; i++)
			k[i] = kernel(at[p], x + 2 * i, 2, ls, sf);
		want_mean = slope_prior(at[p], &slope) + quad3(A, k, r);
		want_sd = sqrt(sf * sf - quad3(A, k, k));
		ps_gp_predict(gp, at[p], &mean, &sd);
		if (fabs(mean - want_mean) > 1e-9 || fabs(sd - want_sd) > 1e-9)
			fail_msg("at (%.1f, %.1f): mean %.12f sd %.12f, by "
				 "hand %.12f %.12f", at[p][0], at[p][1], mean,
				 sd, want_mean, want_sd);
	}
	/* at the data point (0.4, 0.9) a spread remains, below the noise's:
	 * the measurement there pins the function to about sn */
	double mean, sd;
	ps_gp_predict(gp, at[2], &mean, &sd);
	assert_true(sd > 0.01 && sd < sn);
	ps_gp_free(&gp);
}

/*
 * Length scales are recovered from a sample of a GP prior with known
 * hyperparameters: l = (0.15, 0.6), sf = 1, sn = 0.05, at 64 uniform
 * points of the unit square (gsl_rng mt19937, seed 1), drawn as
 * chol(K + sn^2 I) e with e standard normal.
 *
 * Two checks. First, the optimiser: the fitted model's log marginal
 * likelihood is at least that of the true hyperparameters (the truth is
 * one point of the search space, so a search that ends below it has
 * failed). Second, the statistics: each fitted length scale is within a
 * factor 1.75 of the truth. One 64-point path pins a length scale down
 * only so far: over seeds 1..40 the worst dimension's factor had median
 * 1.16, 90th percentile 1.43 and maximum 1.67 (and the likelihood check
 * held for all 40), so 1.75 holds for any of them, not for a lucky seed.
 * It still separates the two dimensions (0.086..0.26 against 0.34..1.05)
 * and rejects a swap (a factor of 4); and the fitted ratio l1/l0 must be
 * within the same factor of 4.
 */
static void test_recovers_length_scales(void **state)
{
	enum { N = 64 };
	const double ls[2] = {0.15, 0.6}, sf = 1.0, sn = 0.05;
	double x[2 * N], y[N], e[N], len[2], sig, noise;
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_matrix *K = gsl_matrix_alloc(N, N);
	ps_gp *gp = NULL, *truth = NULL;

	(void)state;
	assert_non_null(r);
	assert_non_null(K);
	gsl_rng_set(r, 1);
	for (int i = 0; i < 2 * N; i++)
		x[i] = gsl_rng_uniform(r);
	for (int i = 0; i < N; i++) {
		for (int j = 0; j < N; j++)
			gsl_matrix_set(K, i, j,
				       kernel(x + 2 * i, x + 2 * j, 2, ls, sf) +
					       (i == j ? sn * sn : 0.0));
		e[i] = gsl_ran_ugaussian(r);
	}
	assert_int_equal(gsl_linalg_cholesky_decomp1(K), GSL_SUCCESS);
	for (int i = 0; i < N; i++) {
		y[i] = 0.0;
		for (int j = 0; j <= i; j++)
			y[i] += gsl_matrix_get(K, i, j) * e[j];
	}
	gsl_matrix_free(K);
	gsl_rng_free(r);

	assert_int_equal(ps_gp_fit(x, y, N, 2, NULL, NULL, &gp), PS_OK);
	assert_int_equal(ps_gp_fit_fixed(x, y, N, 2, ls, sf, sn, NULL, NULL,
					 &truth),
			 PS_OK);
	ps_gp_hyper(gp, len, &sig, &noise);
	print_message("fitted l = (%.3f, %.3f), sf %.3f, sn %.4f; log "
		      "likelihood %.3f, at the truth %.3f\n",
		      len[0], len[1], sig, noise, ps_gp_log_lik(gp),
		      ps_gp_log_lik(truth));
	assert_true(ps_gp_log_lik(gp) >= ps_gp_log_lik(truth) - 1e-6);
	for (int i = 0; i < 2; i++)
		assert_true(len[i] > ls[i] / 1.75 && len[i] < ls[i] * 1.75);
	assert_true(len[1] / len[0] > 4.0 / 1.75 &&
		    len[1] / len[0] < 4.0 * 1.75);
	ps_gp_free(&gp);
	ps_gp_free(&truth);
}

/* EI = (mu - best) Phi(z) + sd phi(z), z = (mu - best) / sd (Jones et
 * al. 1998, for maximisation), with Phi from erfc rather than GSL's
 * cdf, which gp.c uses. */
static double ei_by_formula(double mu, double sd, double best)
{
	double z = (mu - best) / sd;

	return (mu - best) * 0.5 * erfc(-z / sqrt(2.0)) +
	       sd * exp(-0.5 * z * z) / sqrt(2.0 * M_PI);
}

/*
 * Expected improvement against its closed form, computed here from
 * ps_gp_predict's mean and spread: at 21 points across [0, 1] and for
 * bests below, at and above the data, with fixed hyperparameters and
 * with fitted ones. The tolerance, 1e-12 absolute plus 1e-9 relative, is
 * rounding: both sides evaluate the same expression from the same mean
 * and spread, and the two normal cdfs agree to about 1e-15.
 *
 * Then its limits:
 *   - mu = best: z = 0, EI = sd phi(0) = sd / sqrt(2 pi);
 *   - at a data point of a noiseless model the spread vanishes (to
 *     about 1e-8, the root of rounding near sf^2) and EI = max(mu -
 *     best, 0) to within sd phi(0) < 1e-6;
 *   - a best 10 sd below mu: EI = mu - best, up to rounding (the
 *     exact remainder, sd (phi(10) - 10 Phi(-10)), is below 1e-24 sd);
 *     a best 10 sd above: EI = sd (phi(10) - 10 Phi(-10)) < 1e-20 sd;
 *   - everywhere EI >= max(mu - best, 0) (Jensen: E max(f - best, 0) >=
 *     max(E f - best, 0)) and EI falls as best rises.
 */
static void test_ei_closed_form(void **state)
{
	const double x[4] = {0.1, 0.4, 0.55, 0.9}, y[4] = {1.0, 2.5, 2.2, 0.3};
	const double ls = 0.2, bests[4] = {-1.0, 1.5, 2.5, 3.5};
	ps_gp *models[2] = {NULL, NULL};

	(void)state;
	assert_int_equal(ps_gp_fit_fixed(x, y, 4, 1, &ls, 1.0, 0.0, NULL,
					 NULL, &models[0]),
			 PS_OK);
	assert_int_equal(ps_gp_fit(x, y, 4, 1, NULL, NULL, &models[1]), PS_OK);
	for (int m = 0; m < 2; m++) {
		const ps_gp *gp = models[m];
		for (int i = 0; i <= 20; i++) {
			double at = i / 20.0, mu, sd, last = INFINITY;
			ps_gp_predict(gp, &at, &mu, &sd);
			if (sd < 1e-3) /* too near a datum: below */
				continue;
			for (int b = 0; b < 4; b++) {
				double ei = ps_gp_ei(gp, &at, bests[b]);
				double want = ei_by_formula(mu, sd, bests[b]);
				if (fabs(ei - want) > 1e-12 + 1e-9 * want)
					fail_msg("model %d at %.2f, best %.1f: "
						 "EI %.17g, formula %.17g", m,
						 at, bests[b], ei, want);
				assert_true(ei >= 0.0 &&
					    ei >= mu - bests[b] - 1e-12);
				assert_true(ei <= last);
				last = ei;
			}
			assert_true(fabs(ps_gp_ei(gp, &at, mu) -
					 sd / sqrt(2.0 * M_PI)) <
				    1e-12 * sd + 1e-15);
			assert_true(fabs(ps_gp_ei(gp, &at, mu - 10.0 * sd) -
					 10.0 * sd) < 1e-12 * (sd + fabs(mu)));
			assert_true(ps_gp_ei(gp, &at, mu + 10.0 * sd) <
				    1e-20 * sd);
		}
	}
	/* the noiseless model at its data: sd -> 0 */
	for (int i = 0; i < 4; i++) {
		double mu, sd;
		ps_gp_predict(models[0], &x[i], &mu, &sd);
		assert_true(fabs(mu - y[i]) < 1e-9 && sd < 1e-6);
		for (int b = 0; b < 4; b++) {
			double ei = ps_gp_ei(models[0], &x[i], bests[b]);
			double gain = y[i] > bests[b] ? y[i] - bests[b] : 0.0;
			if (fabs(ei - gain) > 1e-6)
				fail_msg("at datum %.2f, best %.1f: EI %.9g, "
					 "want %.9g", x[i], bests[b], ei, gain);
		}
	}
	ps_gp_free(&models[0]);
	ps_gp_free(&models[1]);
}

static void test_interpolates(void **state)
{
	double x[8], y[8], mean, sd, sd_far, near_sd;
	ps_gp *gp = NULL;

	(void)state;
	for (int i = 0; i < 8; i++) {
		x[i] = i / 7.0;
		y[i] = 100.0 + 20.0 * sin(6.0 * x[i]);
	}
	assert_int_equal(ps_gp_fit(x, y, 8, 1, NULL, NULL, &gp), PS_OK);
	for (int i = 0; i < 8; i++) {
		ps_gp_predict(gp, &x[i], &mean, &sd);
		assert_true(fabs(mean - y[i]) < 0.5);
	}
	/* between two points: close to the function, less sure */
	ps_gp_predict(gp, &(double){0.5 / 7.0}, &mean, &near_sd);
	assert_true(fabs(mean - (100.0 + 20.0 * sin(6.0 * 0.5 / 7.0))) < 2.0);
	ps_gp_predict(gp, &x[0], &mean, &sd);
	assert_true(near_sd > sd);
	/* far outside the data the posterior returns to its prior spread */
	ps_gp_free(&gp);
	double x2[2] = {0.0, 0.05}, y2[2] = {10.0, 11.0};
	assert_int_equal(ps_gp_fit(x2, y2, 2, 1, NULL, NULL, &gp), PS_OK);
	ps_gp_predict(gp, &(double){1.0}, &mean, &sd_far);
	ps_gp_predict(gp, &x2[0], &mean, &sd);
	assert_true(sd_far > sd);
	ps_gp_free(&gp);
}

static int left_of_03(void *ud, const double *x)
{
	(void)ud;
	return x[0] < 0.3;
}

static int nowhere(void *ud, const double *x)
{
	(void)ud, (void)x;
	return 0;
}

/* ps_gp_propose_where: a peak at 0.7 draws the unrestricted proposal
 * beyond 0.3; restricted to x < 0.3 the proposal stays there; with
 * nothing allowed, the unrestricted proposal. */
static void test_propose_where(void **state)
{
	double x[6], y[6], free_x, left_x, none_x;
	ps_gp *gp = NULL;

	(void)state;
	for (int i = 0; i < 6; i++) {
		x[i] = i / 5.0;
		y[i] = 100.0 - 200.0 * (x[i] - 0.7) * (x[i] - 0.7);
	}
	assert_int_equal(ps_gp_fit(x, y, 6, 1, NULL, NULL, &gp), PS_OK);
	ps_gp_propose(gp, 256, &free_x);
	assert_true(free_x > 0.3);
	ps_gp_propose_where(gp, 256, left_of_03, NULL, &left_x);
	assert_true(left_x < 0.3);
	ps_gp_propose_where(gp, 256, nowhere, NULL, &none_x);
	assert_true(none_x == free_x);
	ps_gp_free(&gp);
}

/* Noisy samples: the noise is estimated, and the reported best is the
 * best posterior mean, not the luckiest sample. */
static void test_noise_and_best(void **state)
{
	double x[24], y[24], len[1], sig, noise;
	ps_gp *gp = NULL;
	size_t best;

	(void)state;
	/* a smooth function peaking at 0.2; one lucky sample at 0.75 */
	for (unsigned i = 0; i < 24; i++) {
		x[i] = i / 23.0;
		y[i] = 50.0 - 40.0 * (x[i] - 0.2) * (x[i] - 0.2) +
		       1.5 * wobble(i);
	}
	y[17] += 12.0; /* x = 0.739: a sample far above its neighbours */
	assert_int_equal(ps_gp_fit(x, y, 24, 1, NULL, NULL, &gp), PS_OK);
	ps_gp_hyper(gp, len, &sig, &noise);
	assert_true(noise > 0.3); /* the wobble and the spike are noise */
	best = ps_gp_best_index(gp);
	assert_true(x[best] > 0.05 && x[best] < 0.35);
	ps_gp_free(&gp);
}

static double bowl(const double *x, void *ud)
{
	(void)ud;
	return 10.0 - 30.0 * ((x[0] - 0.3) * (x[0] - 0.3) +
			      (x[1] - 0.7) * (x[1] - 0.7));
}

/* With the truth as its prior mean, the GP predicts it away from data. */
static void test_prior_mean(void **state)
{
	double x[4] = {0.1, 0.1, 0.9, 0.9}, y[2], mean, sd;
	ps_gp *gp = NULL;

	(void)state;
	y[0] = bowl(x, NULL);
	y[1] = bowl(x + 2, NULL);
	assert_int_equal(ps_gp_fit(x, y, 2, 2, bowl, NULL, &gp), PS_OK);
	ps_gp_predict(gp, (double[]){0.3, 0.7}, &mean, &sd);
	assert_true(fabs(mean - 10.0) < 1e-6);
	ps_gp_free(&gp);
}

/* Bayesian optimisation of a bowl from 4 points: within 15 proposals a
 * point within 0.03 of the optimum (0.3, 0.7) has been measured (0.011
 * when written; 15 random points come that close 4% of the time). The
 * same data give the same model and proposal. */
static void test_optimises(void **state)
{
	double x[2 * 40], y[40], p[2], q[2];
	size_t n = 0, best;
	ps_gp *gp = NULL, *again = NULL;
	double dist;

	(void)state;
	const double init[8] = {0.1, 0.1, 0.9, 0.2, 0.15, 0.95, 0.8, 0.85};
	for (; n < 4; n++) {
		x[2 * n] = init[2 * n];
		x[2 * n + 1] = init[2 * n + 1];
		y[n] = bowl(x + 2 * n, NULL) + 0.05 * wobble((unsigned)n);
	}
	for (int it = 0; it < 15; it++, n++) {
		assert_int_equal(ps_gp_fit(x, y, n, 2, NULL, NULL, &gp),
				 PS_OK);
		assert_true(ps_gp_propose(gp, 256, p) >= 0.0);
		assert_true(p[0] >= 0.0 && p[0] <= 1.0 && p[1] >= 0.0 &&
			    p[1] <= 1.0);
		if (it == 0) { /* deterministic */
			assert_int_equal(ps_gp_fit(x, y, n, 2, NULL, NULL,
						   &again),
					 PS_OK);
			ps_gp_propose(again, 256, q);
			assert_true(p[0] == q[0] && p[1] == q[1]);
			ps_gp_free(&again);
		}
		ps_gp_free(&gp);
		x[2 * n] = p[0];
		x[2 * n + 1] = p[1];
		y[n] = bowl(p, NULL) + 0.05 * wobble((unsigned)n);
	}
	assert_int_equal(ps_gp_fit(x, y, n, 2, NULL, NULL, &gp), PS_OK);
	best = ps_gp_best_index(gp);
	dist = hypot(x[2 * best] - 0.3, x[2 * best + 1] - 0.7);
	if (dist > 0.03)
		fail_msg("best after 15 proposals at (%.3f, %.3f), %.3f from "
			 "the optimum", x[2 * best], x[2 * best + 1], dist);
	ps_gp_free(&gp);
}

/* Branin-Hoo on [-5, 10] x [0, 15], read from the unit square; its
 * minimum, 5 / (4 pi) = 0.397887, is at three points. */
static double branin(const double *u)
{
	const double b = 5.1 / (4.0 * M_PI * M_PI), c = 5.0 / M_PI;
	const double t = 1.0 / (8.0 * M_PI);
	double x1 = -5.0 + 15.0 * u[0], x2 = 15.0 * u[1];
	double q = x2 - b * x1 * x1 + c * x1 - 6.0;

	return q * q + 10.0 * (1.0 - t) * cos(x1) + 10.0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * Bayesian optimisation of Branin (maximising -branin, as the tuner
 * maximises samples/s): from 3 uniform random points (gsl_rng mt19937,
 * seeds 1..20; the GP itself is deterministic, the seed only moves the
 * initial design), 17 proposals of ps_gp_propose over 256 candidates, 20
 * evaluations in all. For every seed the best value measured must be
 * within 5% of the minimum, where 5% is of the gap between a typical
 * point and the minimum:
 *   f_best - f* <= 0.05 (f_median - f*),
 * f_median being Branin's median over the square (35.07, computed below
 * on a 256 x 256 grid), so f_best <= 2.13. Why this yardstick: Branin's
 * values are offset-arbitrary (5% of f* = 0.40 itself would change if a
 * constant were added), and its range is dominated by one corner (max
 * 308 at (-5, 0)): 5% of the range (f_best <= 15.7) holds for 24% of the
 * square, so 20 uniform random points meet it in 99.6% of runs (all 20
 * seeds: 92%), a test of nothing. The median-relative bound holds for
 * 3.3% of the square: 20 random points meet it with probability 0.49
 * per seed, all 20 seeds about 1e-6.
 *
 * Measured when written: every seed of 1..20 met it (the worst, seed 5,
 * at 1.28; the median of the 20 at 0.45), and 99 of seeds 1..100 (seed
 * 67 reached 2.71). The stricter 5% of f* itself (f_best <= 0.418) was
 * met by 20 of seeds 1..100 in 20 evaluations, and by all of seeds 1..20
 * in 30: EI spends its early evaluations on Branin's three minima and
 * the edges before it settles in one.
 *
 * The reported best (the data point with the best posterior mean, what
 * the tuner would report) must meet the same bound: the measurements are
 * exact, so it is the best measured point or one nearly as good.
 */
static void test_branin(void **state)
{
	enum { SEEDS = 20, INIT = 3, EVALS = 20, GRID = 256 };
	const double fstar = 5.0 / (4.0 * M_PI);
	double *grid = malloc(GRID * GRID * sizeof(double)), median, bound;
	double worst = 0.0;

	(void)state;
	assert_non_null(grid);
	for (int i = 0; i < GRID; i++)
		for (int j = 0; j < GRID; j++)
			grid[i * GRID + j] = branin((double[]){
				(i + 0.5) / GRID, (j + 0.5) / GRID});
	qsort(grid, GRID * GRID, sizeof(double), cmp_double);
	median = 0.5 * (grid[GRID * GRID / 2 - 1] + grid[GRID * GRID / 2]);
	free(grid);
	assert_true(fabs(median - 35.07) < 0.1);
	bound = fstar + 0.05 * (median - fstar);

	for (unsigned long seed = 1; seed <= SEEDS; seed++) {
		gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
		double x[2 * EVALS], y[EVALS], fbest = INFINITY, freported;
		ps_gp *gp = NULL;
		size_t n = 0;

		assert_non_null(r);
		gsl_rng_set(r, seed);
		for (; n < INIT; n++) {
			x[2 * n] = gsl_rng_uniform(r);
			x[2 * n + 1] = gsl_rng_uniform(r);
		}
		gsl_rng_free(r);
		for (size_t i = 0; i < EVALS; i++) {
			if (i >= INIT) {
				assert_int_equal(ps_gp_fit(x, y, i, 2, NULL,
							   NULL, &gp),
						 PS_OK);
				ps_gp_propose(gp, 256, x + 2 * i);
				ps_gp_free(&gp);
			}
			y[i] = -branin(x + 2 * i);
			if (-y[i] < fbest)
				fbest = -y[i];
		}
		assert_int_equal(ps_gp_fit(x, y, EVALS, 2, NULL, NULL, &gp),
				 PS_OK);
		freported = -y[ps_gp_best_index(gp)];
		ps_gp_free(&gp);
		if (fbest > bound || freported > bound)
			fail_msg("seed %lu: best measured %.4f, reported %.4f, "
				 "above %.4f (f* %.6f)", seed, fbest,
				 freported, bound, fstar);
		if (fbest > worst)
			worst = fbest;
	}
	print_message("Branin: worst best-of-%d over %d seeds %.4f (bound "
		      "%.4f)\n", EVALS, SEEDS, worst, bound);
}

static void test_bad_input(void **state)
{
	double x[2] = {0.5, 0.2}, y[2] = {1.0, 2.0};
	ps_gp *gp = NULL;

	(void)state;
	assert_int_equal(ps_gp_fit(x, y, 0, 1, NULL, NULL, &gp), PS_EINVAL);
	assert_int_equal(ps_gp_fit(x, y, 2, 0, NULL, NULL, &gp), PS_EINVAL);
	assert_int_equal(ps_gp_fit(x, y, 1, PS_GP_MAX_DIMS + 1, NULL, NULL,
				   &gp),
			 PS_EINVAL);
	x[1] = 1.5;
	assert_int_equal(ps_gp_fit(x, y, 2, 1, NULL, NULL, &gp), PS_EINVAL);
	x[1] = 0.2;
	y[1] = NAN;
	assert_int_equal(ps_gp_fit(x, y, 2, 1, NULL, NULL, &gp), PS_EINVAL);
	assert_null(gp);
	/* one point, or the same value everywhere: still a model */
	y[1] = 1.0;
	assert_int_equal(ps_gp_fit(x, y, 1, 1, NULL, NULL, &gp), PS_OK);
	ps_gp_free(&gp);
	assert_int_equal(ps_gp_fit(x, y, 2, 1, NULL, NULL, &gp), PS_OK);
	ps_gp_free(&gp);
	/* fixed hyperparameters must be usable ones */
	const double ls[1] = {0.3}, bad_ls[1] = {0.0};
	assert_int_equal(ps_gp_fit_fixed(x, y, 2, 1, bad_ls, 1.0, 0.1, NULL,
					 NULL, &gp),
			 PS_EINVAL);
	assert_int_equal(ps_gp_fit_fixed(x, y, 2, 1, ls, 0.0, 0.1, NULL,
					 NULL, &gp),
			 PS_EINVAL);
	assert_int_equal(ps_gp_fit_fixed(x, y, 2, 1, ls, 1.0, -0.1, NULL,
					 NULL, &gp),
			 PS_EINVAL);
	assert_int_equal(ps_gp_fit_fixed(x, y, 2, 1, ls, 1.0, NAN, NULL,
					 NULL, &gp),
			 PS_EINVAL);
	assert_null(gp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_posterior_two_points),
		cmocka_unit_test(test_posterior_three_points),
		cmocka_unit_test(test_recovers_length_scales),
		cmocka_unit_test(test_ei_closed_form),
		cmocka_unit_test(test_propose_where),
		cmocka_unit_test(test_interpolates),
		cmocka_unit_test(test_noise_and_best),
		cmocka_unit_test(test_prior_mean),
		cmocka_unit_test(test_optimises),
		cmocka_unit_test(test_branin),
		cmocka_unit_test(test_bad_input),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
