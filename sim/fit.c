/*
 * sim/fit.c - least-squares fit of a, b, gamma (fit.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_fit.h>

#include "sim/fit.h"

#define MAX_ROWS 1000000
#define MAX_COLS 32
/* The largest value of each column a sweep's row may hold (bytes: 1 TiB
 * messages; concurrency: a million streams; us: 10^12 us, 11.6 days):
 * beyond them the fit's sums of squares overflow. */
static const double col_max[3] = {1099511627776.0, 1e6, 1e12};

int ps_link_fit_rows(const double *bytes, const double *conc,
		     const double *us, size_t n, ps_link_fit *f_p, char *why,
		     size_t whylen)
{
	ps_link_fit f = {.gamma = 1.0, .rows = (uint32_t)n};
	double *x = malloc((n ? n : 1) * sizeof(double));
	double *y = malloc((n ? n : 1) * sizeof(double));
	double c0, c1, cov00, cov01, cov11, sumsq, ymean = 0.0, sstot = 0.0;
	size_t k = 0, distinct = 0;
	int rc = PS_EINVAL;

	if (!x || !y) {
		rc = PS_ENOMEM;
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (conc[i] != 1.0)
			continue;
		if (k && bytes[i] != x[0])
			distinct = 1;
		x[k] = bytes[i];
		y[k++] = us[i];
	}
	f.rows_single = (uint32_t)k;
	if (k < 2 || !distinct) {
		snprintf(why, whylen, "the sweep needs rows with concurrency "
			 "1 at two or more message sizes to fit a and b (it "
			 "has %zu such rows)", k);
		goto out;
	}
	gsl_fit_linear(x, 1, y, 1, k, &c0, &c1, &cov00, &cov01, &cov11,
		       &sumsq);
	if (!(c1 > 0) || !isfinite(c1) || !isfinite(c0)) {
		snprintf(why, whylen, "the time does not grow with the "
			 "message size (b = %g us/byte): is this a link "
			 "sweep?", c1);
		goto out;
	}
	for (size_t i = 0; i < k; i++)
		ymean += y[i] / (double)k;
	for (size_t i = 0; i < k; i++)
		sstot += (y[i] - ymean) * (y[i] - ymean);
	f.r2 = sstot > 0 ? 1.0 - sumsq / sstot : 1.0;
	if (!isfinite(f.r2)) { /* rows read otherwise than from a file */
		snprintf(why, whylen, "the times are too large to fit (their "
			 "sums of squares overflow)");
		goto out;
	}
	f.a_us = c0 > 0 ? c0 : 0.0;
	f.b_us_per_byte = c1;
	k = 0;
	for (size_t i = 0; i < n; i++) {
		if (!(conc[i] > 1.0))
			continue;
		x[k] = (conc[i] - 1.0) * f.b_us_per_byte * bytes[i];
		y[k++] = us[i] - conc[i] * f.a_us - f.b_us_per_byte * bytes[i];
	}
	if (k) {
		double g, cov;
		gsl_fit_mul(x, 1, y, 1, k, &g, &cov, &sumsq);
		if (!isfinite(g)) {
			snprintf(why, whylen, "gamma could not be fitted");
			goto out;
		}
		f.gamma = g < 0.01 ? 0.01 : g > 100.0 ? 100.0 : g;
	}
	*f_p = f;
	rc = PS_OK;
out:
	free(x);
	free(y);
	return rc;
}

/* Splits a CSV line in place at commas; returns the field count. */
static int split(char *line, char **fields)
{
	int n = 0;
	char *p = line;

	for (;;) {
		if (n == MAX_COLS)
			return -1;
		fields[n++] = p;
		p = strchr(p, ',');
		if (!p)
			break;
		*p++ = '\0';
	}
	for (int i = 0; i < n; i++) { /* trim */
		char *s = fields[i], *e;
		while (*s == ' ' || *s == '\t')
			s++;
		e = s + strlen(s);
		while (e > s && (e[-1] == ' ' || e[-1] == '\t' ||
				 e[-1] == '\r' || e[-1] == '\n'))
			*--e = '\0';
		fields[i] = s;
	}
	return n;
}

int ps_link_fit_file(const char *path, ps_link_fit *f_p, char *why,
		     size_t whylen)
{
	FILE *fp = fopen(path, "r");
	char line[1024], *fields[MAX_COLS];
	int col_b = -1, col_c = -1, col_t = -1, header = 0, lineno = 0;
	double *v[3] = {NULL, NULL, NULL};
	size_t n = 0, cap = 0;
	int rc = PS_EINVAL;

	if (!fp) {
		snprintf(why, whylen, "cannot open the link sweep '%s': %s",
			 path, strerror(errno));
		return PS_ENOENT;
	}
	while (fgets(line, sizeof(line), fp)) {
		int nf;
		lineno++;
		if (!strchr(line, '\n') && !feof(fp)) {
			snprintf(why, whylen, "%s:%d: line too long", path,
				 lineno);
			goto out;
		}
		if (line[0] == '#' || strspn(line, " \t\r\n") == strlen(line))
			continue;
		nf = split(line, fields);
		if (nf < 0) {
			snprintf(why, whylen, "%s:%d: more than %d columns",
				 path, lineno, MAX_COLS);
			goto out;
		}
		if (!header) {
			for (int i = 0; i < nf; i++) {
				if (!strcmp(fields[i], "bytes"))
					col_b = i;
				else if (!strcmp(fields[i], "concurrency"))
					col_c = i;
				else if (!strcmp(fields[i], "us"))
					col_t = i;
			}
			if (col_b < 0 || col_c < 0 || col_t < 0) {
				snprintf(why, whylen, "%s:%d: the header must "
					 "name the columns bytes, concurrency "
					 "and us (a CSV from bench/link_sweep)",
					 path, lineno);
				goto out;
			}
			header = 1;
			continue;
		}
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 64;
			if (nc > MAX_ROWS) {
				snprintf(why, whylen, "%s:%d: more than %d "
					 "rows", path, lineno, MAX_ROWS);
				goto out;
			}
			for (int j = 0; j < 3; j++) {
				double *q = realloc(v[j], nc * sizeof(double));
				if (!q) {
					snprintf(why, whylen, "out of memory");
					rc = PS_ENOMEM;
					goto out;
				}
				v[j] = q;
			}
			cap = nc;
		}
		const int cols[3] = {col_b, col_c, col_t};
		static const char *const names[3] = {"bytes", "concurrency",
						     "us"};
		for (int j = 0; j < 3; j++) {
			char *end;
			double d;
			if (cols[j] >= nf) {
				snprintf(why, whylen, "%s:%d: no value in "
					 "column '%s'", path, lineno,
					 names[j]);
				goto out;
			}
			errno = 0;
			d = strtod(fields[cols[j]], &end);
			if (end == fields[cols[j]] || *end || errno ||
			    !isfinite(d) || d < 0 || (j == 1 && d < 1) ||
			    (j == 1 && d != floor(d))) {
				snprintf(why, whylen, "%s:%d: column '%s': "
					 "'%s' is not a %s", path, lineno,
					 names[j], fields[cols[j]],
					 j == 1 ? "whole number >= 1"
						: "finite number >= 0");
				goto out;
			}
			if (d > col_max[j]) {
				snprintf(why, whylen, "%s:%d: column '%s': "
					 "%s is more than %g: not a link "
					 "sweep's", path, lineno, names[j],
					 fields[cols[j]], col_max[j]);
				goto out;
			}
			v[j][n] = d;
		}
		n++;
	}
	if (ferror(fp)) {
		snprintf(why, whylen, "%s: read error", path);
		goto out;
	}
	if (!header) {
		snprintf(why, whylen, "%s: empty: no header, no rows", path);
		goto out;
	}
	{
		char reason[512];
		rc = ps_link_fit_rows(v[0], v[1], v[2], n, f_p, reason,
				      sizeof(reason));
		if (rc != PS_OK)
			snprintf(why, whylen, "%s: %s", path, reason);
	}
out:
	fclose(fp);
	for (int j = 0; j < 3; j++)
		free(v[j]);
	return rc;
}
