/*
 * sim/fit.h - fitting the link model to a measured sweep (ps-sim --fit).
 *
 * A sweep is a CSV file (bench/link_sweep writes one; ps-bench may write
 * one measured on shaped links): a header naming the columns, then one row
 * per measurement. The columns used are
 *     bytes        message size m
 *     concurrency  c: messages handed to the transport at once
 *     us           microseconds until all c had arrived
 * (others are ignored; '#' starts a comment line). Under the link model
 * (sim/link.h) the first message costs a + b*m and each of the c - 1
 * others, handed to a busy link, a + gamma*b*m, so
 *     us = c*a + b*m*(1 + (c - 1)*gamma).
 * Rows with c = 1 give a and b by ordinary least squares
 * (gsl_fit_linear); the rows with c > 1 then give gamma by least squares
 * through the origin (gsl_fit_mul) of us - c*a - b*m against (c - 1)*b*m.
 * A negative a (noise around a tiny latency) is taken as 0; without rows
 * with c > 1, gamma is 1.
 *
 * Threads: pure functions.
 */
#ifndef ORDO_SIM_FIT_H
#define ORDO_SIM_FIT_H

#include <stddef.h>
#include <stdint.h>

#include "ordo/error.h"

typedef struct ps_link_fit {
	double a_us, b_us_per_byte, gamma;
	double r2;          /* of the c = 1 fit */
	uint32_t rows, rows_single;
} ps_link_fit;

/* Fits n measurements. PS_EINVAL with the reason in why when they cannot
 * determine a and b (fewer than two sizes at c = 1, time not growing with
 * size). */
int ps_link_fit_rows(const double *bytes, const double *conc,
		     const double *us, size_t n, ps_link_fit *f_p, char *why,
		     size_t whylen);

/* Reads a sweep CSV and fits it. PS_ENOENT (cannot open) or PS_EINVAL
 * (garbled: "FILE:LINE: what") with the message in why. */
int ps_link_fit_file(const char *path, ps_link_fit *f_p, char *why,
		     size_t whylen);

#endif /* ORDO_SIM_FIT_H */
