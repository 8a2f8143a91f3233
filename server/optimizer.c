/*
 * server/optimizer.c - gradient accumulation and SGD with momentum.
 *
 * Plain loops over restrict-qualified arrays so the compiler can vectorise
 * them. The running sum and every intermediate of the update are doubles;
 * only the stored weights and momentum buffer are float32.
 */
#include <math.h>
#include <string.h>

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
	const float lrf = (float)lr, mf = (float)momentum;

	for (size_t i = 0; i < n; i++) {
		float g = (float)(acc[i] * scale); /* no division in the loop */
		float vi = mf * v[i] + g;
		v[i] = vi;
		w[i] = w[i] - lrf * vi;
	}
}

/* As ps_accum_add (or ps_accum_set when first) of g, then ps_sgd_apply,
 * in one pass: the same roundings, so the same results to the bit. */
void ps_sgd_apply_last(float *restrict w, float *restrict v,
		       const double *restrict acc, const float *restrict g,
		       size_t n, int first, unsigned count, double lr,
		       double momentum)
{
	if (count == 0)
		return;
	const double scale = 1.0 / (double)count;
	const float lrf = (float)lr, mf = (float)momentum;

	if (first && count == 1) { /* the only gradient, averaged over one:
				    * (float)(double)g[i] is g[i] */
		for (size_t i = 0; i < n; i++) {
			float vi = mf * v[i] + g[i];
			v[i] = vi;
			w[i] = w[i] - lrf * vi;
		}
		return;
	}
	for (size_t i = 0; i < n; i++) {
		double sum = first ? (double)g[i] : acc[i] + (double)g[i];
		float gi = (float)(sum * scale);
		float vi = mf * v[i] + gi;
		v[i] = vi;
		w[i] = w[i] - lrf * vi;
	}
}

/* server.optimizer = none: the round's average is the result. The sum and
 * its rounding are ps_sgd_apply_last's, so a worker that steps SGD itself
 * on it gets what the server's SGD would have given. */
void ps_avg_last(float *restrict w, const double *restrict acc,
		 const float *restrict g, size_t n, int first, unsigned count)
{
	if (count == 0)
		return;
	const double scale = 1.0 / (double)count;

	if (first && count == 1) {
		memcpy(w, g, n * sizeof(float));
		return;
	}
	for (size_t i = 0; i < n; i++) {
		double sum = first ? (double)g[i] : acc[i] + (double)g[i];
		w[i] = (float)(sum * scale);
	}
}

void ps_adam_scalars_of(const ps_adam *a, ps_adam_scalars *s)
{
	const double step = (double)a->step;

	s->step_size = (float)(a->lr / (1.0 - pow(a->beta1, step)));
	s->bc2_sqrt = (float)sqrt(1.0 - pow(a->beta2, step));
	s->beta1 = (float)a->beta1;
	s->one_minus_beta1 = (float)(1.0 - a->beta1);
	s->beta2 = (float)a->beta2;
	s->one_minus_beta2 = (float)(1.0 - a->beta2);
	s->eps = (float)a->eps;
	s->wd = a->decoupled ? 0.0f : (float)a->weight_decay;
	s->decay = a->decoupled ? (float)(1.0 - a->lr * a->weight_decay) : 1.0f;
}

/* torch's order: the decay (AdamW) or the L2 term (Adam), the moments,
 * then param.addcdiv_(m, sqrt(s) / bc2_sqrt + eps, -step_size). */
void ps_adam_apply_last(float *restrict w, float *restrict m,
			float *restrict s, const double *restrict acc,
			const float *restrict g, size_t n, int first,
			unsigned count, const ps_adam_scalars *kp)
{
	if (count == 0)
		return;
	const ps_adam_scalars k = *kp;
	const double scale = 1.0 / (double)count;

	for (size_t i = 0; i < n; i++) {
		double sum = first ? (double)g[i] : acc[i] + (double)g[i];
		float gi = (float)(sum * scale);
		float wi = w[i] * k.decay;
		gi = gi + k.wd * w[i];
		float mi = k.beta1 * m[i] + k.one_minus_beta1 * gi;
		float si = k.beta2 * s[i] + k.one_minus_beta2 * gi * gi;
		float denom = sqrtf(si) / k.bc2_sqrt + k.eps;
		m[i] = mi;
		s[i] = si;
		w[i] = wi - k.step_size * (mi / denom);
	}
}
