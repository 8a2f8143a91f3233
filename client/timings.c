/*
 * client/timings.c - a worker's measurement of its first iterations
 * (client/timings.h).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/timings.h"

int ps_timing_rec_init(ps_timing_rec *r, uint32_t ntensors, uint64_t first,
		       uint32_t n)
{
	size_t cells = (size_t)n * ntensors;

	memset(r, 0, sizeof(*r));
	if (n < 1)
		return PS_EINVAL;
	r->anchor = malloc((n + 1) * sizeof(double));
	r->need = malloc((cells ? cells : 1) * sizeof(float));
	r->push = malloc((cells ? cells : 1) * sizeof(float));
	if (!r->anchor || !r->need || !r->push) {
		ps_timing_rec_free(r);
		return PS_ENOMEM;
	}
	for (uint32_t k = 0; k <= n; k++)
		r->anchor[k] = -1.0;
	for (size_t i = 0; i < cells; i++)
		r->need[i] = r->push[i] = -1.0f;
	r->ntensors = ntensors;
	r->n = n;
	r->first = first;
	r->origin_us = ps_timing_wall_us();
	return PS_OK;
}

void ps_timing_rec_free(ps_timing_rec *r)
{
	free(r->anchor);
	free(r->need);
	free(r->push);
	memset(r, 0, sizeof(*r));
	r->complete = 1; /* nothing more is recorded */
}

double ps_timing_wall_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

void ps_timing_rec_blocked(ps_timing_rec *r, double since)
{
	double now = ps_timing_wall_us();

	if (!r->complete && r->anchor && now > since)
		r->blocked_us += now - since;
}

int ps_timing_rec_event(ps_timing_rec *r, ps_timing_kind kind,
			uint32_t tensor, uint64_t iteration, double wall)
{
	double at = wall - r->origin_us - r->blocked_us;
	uint64_t k;

	if (r->complete || !r->anchor || iteration < r->first ||
	    iteration - r->first > r->n || tensor >= r->ntensors)
		return 0;
	k = iteration - r->first;
	if (r->anchor[k] < 0 || at < r->anchor[k])
		r->anchor[k] = at;
	if (k == r->n) { /* the next iteration began: the last one's end */
		r->complete = 1;
		return 1;
	}
	float *cell = kind == PS_TIMING_NEED   ? &r->need[k * r->ntensors]
		      : kind == PS_TIMING_PUSH ? &r->push[k * r->ntensors]
					       : NULL;
	if (cell && cell[tensor] < 0)
		cell[tensor] = (float)at; /* the first: a tensor's need */
	return 0;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of v[0..n) (sorted in place); -1 when n is 0. */
static double median(double *v, uint32_t n)
{
	if (n == 0)
		return -1.0;
	qsort(v, n, sizeof(double), by_value);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Tensor i's times of one kind from each iteration's anchor, within the
 * iteration, medianed. */
static double tensor_median(const ps_timing_rec *r, const float *cells,
			    uint32_t i, double length, double *scratch)
{
	uint32_t m = 0;

	for (uint32_t k = 0; k < r->n; k++) {
		float x = cells[(size_t)k * r->ntensors + i];
		if (x < 0 || r->anchor[k] < 0 || r->anchor[k + 1] < 0)
			continue;
		double d = x - r->anchor[k];
		double len = r->anchor[k + 1] - r->anchor[k];
		scratch[m++] = d < 0 ? 0 : d > len ? len : d;
	}
	double v = median(scratch, m);
	return v > length ? length : v;
}

void ps_timing_rec_result(const ps_timing_rec *r, ps_timings *t)
{
	double scratch[r->n];
	uint32_t m = 0;

	for (uint32_t k = 0; k < r->n; k++)
		if (r->anchor[k] >= 0 && r->anchor[k + 1] >= r->anchor[k])
			scratch[m++] = r->anchor[k + 1] - r->anchor[k];
	t->length_us = median(scratch, m);
	if (t->length_us <= 0)
		t->length_us = 1.0; /* nothing computed: a token iteration */
	t->iterations = r->n;
	t->workers = 1;
	for (uint32_t i = 0; i < r->ntensors && i < t->ntensors; i++) {
		t->need_us[i] = (float)tensor_median(r, r->need, i,
						     t->length_us, scratch);
		t->push_us[i] = (float)tensor_median(r, r->push, i,
						     t->length_us, scratch);
	}
}
