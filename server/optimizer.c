/*
 * server/optimizer.c - gradient accumulation and SGD with momentum.
 *
 * Plain loops over restrict-qualified arrays so the compiler can vectorise
 * them. The running sum and every intermediate of the update are doubles;
 * only the stored weights and momentum buffer are float32.
 */
#include "server/optimizer.h"

/* (restrict on the definition only: parameter qualifiers do not change the
 * function's type, so this matches the header.) */
void ps_accum_set(double *restrict acc, const float *restrict g, size_t n)
{
	for (size_t i = 0; i < n; i++)
		acc[i] = (double)g[i];
}

void ps_accum_add(double *restrict acc, const float *restrict g, size_t n)
{
	for (size_t i = 0; i < n; i++)
		acc[i] += (double)g[i];
}

/*
 * count == 0 means nothing was pushed: the call changes nothing (rather
 * than dividing by zero).
 */
void ps_sgd_apply(float *restrict w, float *restrict v,
                  const double *restrict acc, size_t n, unsigned count,
                  double lr, double momentum)
{
	if (count == 0)
		return;
	const double scale = 1.0 / (double)count;

	for (size_t i = 0; i < n; i++) {
		double g = acc[i] * scale; /* no division in the loop */
		double vi = momentum * (double)v[i] + g;
		v[i] = (float)vi;
		w[i] = (float)((double)w[i] - lr * vi);
	}
}

/* As ps_accum_add (or ps_accum_set when first) of g, then ps_sgd_apply,
 * in one pass: the same doubles, so the same results to the bit. */
void ps_sgd_apply_last(float *restrict w, float *restrict v,
		       const double *restrict acc, const float *restrict g,
		       size_t n, int first, unsigned count, double lr,
		       double momentum)
{
	if (count == 0)
		return;
	const double scale = 1.0 / (double)count;

	if (first) { /* the only gradient: no sum to read */
		for (size_t i = 0; i < n; i++) {
			double gi = (double)g[i] * scale;
			double vi = momentum * (double)v[i] + gi;
			v[i] = (float)vi;
			w[i] = (float)((double)w[i] - lr * vi);
		}
		return;
	}
	for (size_t i = 0; i < n; i++) {
		double gi = (acc[i] + (double)g[i]) * scale;
		double vi = momentum * (double)v[i] + gi;
		v[i] = (float)vi;
		w[i] = (float)((double)w[i] - lr * vi);
	}
}
