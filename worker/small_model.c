/*
 * worker/small_model.c - softmax regression / two-layer MLP and its synthetic
 * data set.
 *
 * DESIGN. Parameters are float32 (what travels to the servers); every
 * forward and backward computation is done in double, one sample at a
 * time, with gradients summed into per-tensor double buffers and divided
 * by n at the end, then stored as float32. So a gradient over n samples
 * barely depends on the order of the samples, and the gradient of a union
 * of batches is the mean of the batches' gradients up to float rounding.
 *
 * Random numbers come from GSL's MT19937, always seeded explicitly from a
 * splitmix64 mix of the caller's seed and a per-purpose constant (never
 * the GSL global environment): one stream for parameter init, one for the
 * teacher, and one per data sample, seeded from (seed, global sample
 * index). Sample k is therefore the same whichever worker generates it
 * and however many workers there are.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "common/log.h"
#include "common/mix64.h"
#include "worker/small_model.h"

#define MAX_TENSORS 4

/* Stream separators, xor-ed into the seed before mixing. */
#define SEED_PARAMS  0x5061726d496e6974ull /* "ParmInit" */
#define SEED_TEACHER 0x5465616368657231ull /* "Teacher1" */
#define SEED_SAMPLES 0x53616d706c657331ull /* "Samples1" */

/* Teacher label noise (std of Gaussian noise on unit-scale logits). */
#define TEACHER_NOISE 0.1

struct ps_small_model {
	int kind; /* ps_small_model_kind */
	size_t in, hid, cls;
	uint32_t ntensors;
	const char *names[MAX_TENSORS];
	size_t numel[MAX_TENSORS];
	float *params[MAX_TENSORS];
	float *grads[MAX_TENSORS];
	double *acc[MAX_TENSORS]; /* gradient sums of one step */
	/* per-sample scratch */
	double *z1;     /* hidden pre-activation [hid] */
	double *h;      /* hidden activation [hid] */
	double *dh;     /* d loss / d z1 [hid] */
	double *logits; /* [cls], then probabilities, then d loss / d logits */
};

struct ps_dataset {
	size_t in;
	size_t spw;
	float *x;   /* spw x in */
	int32_t *y; /* spw */
};

/* MT19937 uses the low 32 bits of its seed: fold all 64 in. */
static void rng_seed(gsl_rng *r, uint64_t s)
{
	uint64_t h = ps_mix64(s);
	gsl_rng_set(r, (unsigned long)((h ^ (h >> 32)) & 0xffffffffull));
}

/* *out = a * b, 0 if it overflows size_t. */
static int mul_ok(size_t a, size_t b, size_t *out)
{
	if (a != 0 && b > SIZE_MAX / a)
		return 0;
	*out = a * b;
	return 1;
}

/* Checks the model.* sizes of cfg; returns PS_EINVAL (logged) if bad. */
static int check_sizes(const ps_config *cfg, int need_hidden)
{
	if (cfg->model.input_dim < 1 || cfg->model.classes < 2 ||
	    (need_hidden && cfg->model.hidden < 1)) {
		PS_ERROR("model: bad sizes input_dim=%d hidden=%d classes=%d",
		         cfg->model.input_dim, cfg->model.hidden,
		         cfg->model.classes);
		return PS_EINVAL;
	}
	return PS_OK;
}

/* ---- model ------------------------------------------------------------ */

static int add_tensor(ps_small_model *m, const char *name, size_t rows, size_t cols)
{
	size_t numel, fbytes, dbytes;
	uint32_t t = m->ntensors;

	if (!mul_ok(rows, cols, &numel) ||
	    !mul_ok(numel, sizeof(float), &fbytes) ||
	    !mul_ok(numel, sizeof(double), &dbytes)) {
		PS_ERROR("model: tensor %s of %zu x %zu overflows", name, rows,
		         cols);
		return PS_ENOMEM;
	}
	m->names[t] = name;
	m->numel[t] = numel;
	m->params[t] = calloc(numel, sizeof(float));
	m->grads[t] = calloc(numel, sizeof(float));
	m->acc[t] = calloc(numel, sizeof(double));
	m->ntensors++; /* freed by ps_small_model_free even if an alloc failed */
	if (!m->params[t] || !m->grads[t] || !m->acc[t]) {
		PS_ERROR("model: out of memory for tensor %s (%zu floats)",
		         name, numel);
		return PS_ENOMEM;
	}
	return PS_OK;
}

/* He init: Gaussian with std sqrt(2 / fan_in). */
static void init_he(gsl_rng *r, float *w, size_t numel, size_t fan_in)
{
	double sd = sqrt(2.0 / (double)fan_in);

	for (size_t i = 0; i < numel; i++)
		w[i] = (float)gsl_ran_gaussian(r, sd);
}

int ps_small_model_create(const ps_config *cfg, uint64_t seed, ps_small_model **m_p)
{
	ps_small_model *m;
	gsl_rng *r;
	size_t scratch;
	int rc;

	if (!cfg || !m_p)
		return PS_EINVAL;
	if (cfg->model.name != PS_MODEL_SOFTMAX &&
	    cfg->model.name != PS_MODEL_MLP) {
		PS_ERROR("model: unknown model kind %d", cfg->model.name);
		return PS_EINVAL;
	}
	rc = check_sizes(cfg, cfg->model.name == PS_MODEL_MLP);
	if (rc != PS_OK)
		return rc;

	m = calloc(1, sizeof(*m));
	if (!m) {
		PS_ERROR("model: out of memory");
		return PS_ENOMEM;
	}
	m->kind = cfg->model.name;
	m->in = (size_t)cfg->model.input_dim;
	m->cls = (size_t)cfg->model.classes;
	m->hid = m->kind == PS_MODEL_MLP ? (size_t)cfg->model.hidden : 0;

	if (m->kind == PS_MODEL_SOFTMAX) {
		if ((rc = add_tensor(m, "fc.weight", m->cls, m->in)) ||
		    (rc = add_tensor(m, "fc.bias", m->cls, 1)))
			goto fail_model;
	} else {
		if ((rc = add_tensor(m, "fc1.weight", m->hid, m->in)) ||
		    (rc = add_tensor(m, "fc1.bias", m->hid, 1)) ||
		    (rc = add_tensor(m, "fc2.weight", m->cls, m->hid)) ||
		    (rc = add_tensor(m, "fc2.bias", m->cls, 1)))
			goto fail_model;
	}

	/* One block: z1, h, dh (hid each, possibly 0) and logits (cls). */
	scratch = 3 * m->hid + m->cls; /* small ints from cfg: no overflow */
	m->z1 = calloc(scratch, sizeof(double));
	if (!m->z1) {
		PS_ERROR("model: out of memory for scratch");
		rc = PS_ENOMEM;
		goto fail_model;
	}
	m->h = m->z1 + m->hid;
	m->dh = m->h + m->hid;
	m->logits = m->dh + m->hid;

	r = gsl_rng_alloc(gsl_rng_mt19937);
	if (!r) {
		PS_ERROR("model: out of memory for the random generator");
		rc = PS_ENOMEM;
		goto fail_model;
	}
	rng_seed(r, seed ^ SEED_PARAMS);
	/* Weights Gaussian (He), biases stay 0 (calloc). */
	init_he(r, m->params[0], m->numel[0], m->in);
	if (m->kind == PS_MODEL_MLP)
		init_he(r, m->params[2], m->numel[2], m->hid);
	gsl_rng_free(r);

	*m_p = m;
	return PS_OK;

fail_model:
	ps_small_model_free(&m);
	return rc;
}

void ps_small_model_free(ps_small_model **m_p)
{
	ps_small_model *m;

	if (!m_p || !*m_p)
		return;
	m = *m_p;
	for (uint32_t t = 0; t < m->ntensors; t++) {
		free(m->params[t]);
		free(m->grads[t]);
		free(m->acc[t]);
	}
	free(m->z1);
	free(m);
	*m_p = NULL;
}

uint32_t ps_small_model_num_tensors(const ps_small_model *m)
{
	return m ? m->ntensors : 0;
}

const char *ps_small_model_tensor_name(const ps_small_model *m, uint32_t t)
{
	return m && t < m->ntensors ? m->names[t] : NULL;
}

uint64_t ps_small_model_tensor_numel(const ps_small_model *m, uint32_t t)
{
	return m && t < m->ntensors ? (uint64_t)m->numel[t] : 0;
}

float *ps_small_model_params(ps_small_model *m, uint32_t t)
{
	return m && t < m->ntensors ? m->params[t] : NULL;
}

float *ps_small_model_grads(ps_small_model *m, uint32_t t)
{
	return m && t < m->ntensors ? m->grads[t] : NULL;
}

/* out[r] = b[r] + sum_c W[r][c] * x[c], W rows x cols. */
static void affine_f(const float *w, const float *b, const float *x,
                     size_t rows, size_t cols, double *out)
{
	for (size_t r = 0; r < rows; r++) {
		const float *wr = w + r * cols;
		double s = (double)b[r];
		for (size_t c = 0; c < cols; c++)
			s += (double)wr[c] * (double)x[c];
		out[r] = s;
	}
}

static void affine_d(const float *w, const float *b, const double *x,
                     size_t rows, size_t cols, double *out)
{
	for (size_t r = 0; r < rows; r++) {
		const float *wr = w + r * cols;
		double s = (double)b[r];
		for (size_t c = 0; c < cols; c++)
			s += (double)wr[c] * x[c];
		out[r] = s;
	}
}

/*
 * Forward pass of one sample into m->logits; if probs, turns them into
 * softmax probabilities. Returns the cross-entropy loss of label y.
 */
static double forward(ps_small_model *m, const float *x, int32_t y, int probs)
{
	double *z = m->logits, mx, sum = 0.0, loss;
	size_t k = m->cls;

	if (m->kind == PS_MODEL_SOFTMAX) {
		affine_f(m->params[0], m->params[1], x, k, m->in, z);
	} else {
		affine_f(m->params[0], m->params[1], x, m->hid, m->in, m->z1);
		for (size_t j = 0; j < m->hid; j++)
			m->h[j] = m->z1[j] > 0.0 ? m->z1[j] : 0.0;
		affine_d(m->params[2], m->params[3], m->h, k, m->hid, z);
	}
	/* log-sum-exp with the max subtracted */
	mx = z[0];
	for (size_t c = 1; c < k; c++)
		if (z[c] > mx)
			mx = z[c];
	for (size_t c = 0; c < k; c++)
		sum += exp(z[c] - mx);
	loss = log(sum) + mx - z[y];
	if (probs)
		for (size_t c = 0; c < k; c++)
			z[c] = exp(z[c] - mx) / sum;
	return loss;
}

/* acc[r][c] += d[r] * x[c] (outer product), acc rows x cols. */
static void outer_add_f(double *acc, const double *d, const float *x,
                        size_t rows, size_t cols)
{
	for (size_t r = 0; r < rows; r++) {
		double *ar = acc + r * cols, dr = d[r];
		if (dr == 0.0)
			continue;
		for (size_t c = 0; c < cols; c++)
			ar[c] += dr * (double)x[c];
	}
}

static void outer_add_d(double *acc, const double *d, const double *x,
                        size_t rows, size_t cols)
{
	for (size_t r = 0; r < rows; r++) {
		double *ar = acc + r * cols, dr = d[r];
		if (dr == 0.0)
			continue;
		for (size_t c = 0; c < cols; c++)
			ar[c] += dr * x[c];
	}
}

/* Backward of one sample; m->logits holds the probabilities. */
static void backward(ps_small_model *m, const float *x, int32_t y)
{
	double *d = m->logits;
	size_t k = m->cls;

	d[y] -= 1.0; /* d loss / d logits = p - onehot(y) */
	if (m->kind == PS_MODEL_SOFTMAX) {
		outer_add_f(m->acc[0], d, x, k, m->in);
		for (size_t c = 0; c < k; c++)
			m->acc[1][c] += d[c];
		return;
	}
	outer_add_d(m->acc[2], d, m->h, k, m->hid);
	for (size_t c = 0; c < k; c++)
		m->acc[3][c] += d[c];
	/* dh = W2^T d, gated by ReLU */
	for (size_t j = 0; j < m->hid; j++)
		m->dh[j] = 0.0;
	for (size_t c = 0; c < k; c++) {
		const float *w2 = m->params[2] + c * m->hid;
		for (size_t j = 0; j < m->hid; j++)
			m->dh[j] += d[c] * (double)w2[j];
	}
	for (size_t j = 0; j < m->hid; j++)
		if (m->z1[j] <= 0.0)
			m->dh[j] = 0.0;
	outer_add_f(m->acc[0], m->dh, x, m->hid, m->in);
	for (size_t j = 0; j < m->hid; j++)
		m->acc[1][j] += m->dh[j];
}

/* Labels outside [0, classes) are a caller bug: logged, NAN returned. */
static int labels_ok(const ps_small_model *m, const int32_t *y, size_t n)
{
	for (size_t s = 0; s < n; s++) {
		if (y[s] < 0 || (size_t)y[s] >= m->cls) {
			PS_ERROR(
			    "model: label %d of sample %zu not in [0, %zu)",
			    (int)y[s], s, m->cls);
			return 0;
		}
	}
	return 1;
}

/*
 * n == 0 gives zero gradients and loss 0. Bad labels give zero gradients
 * and NAN.
 */
double ps_small_model_step(ps_small_model *m, const float *x, const int32_t *y, size_t n)
{
	double loss = 0.0;

	for (uint32_t t = 0; t < m->ntensors; t++)
		memset(m->acc[t], 0, m->numel[t] * sizeof(double));
	if (n > 0 && !labels_ok(m, y, n)) {
		for (uint32_t t = 0; t < m->ntensors; t++)
			memset(m->grads[t], 0, m->numel[t] * sizeof(float));
		return NAN;
	}
	for (size_t s = 0; s < n; s++) {
		const float *xs = x + s * m->in;
		loss += forward(m, xs, y[s], 1);
		backward(m, xs, y[s]);
	}
	if (n == 0)
		n = 1; /* zeros divided by 1 */
	for (uint32_t t = 0; t < m->ntensors; t++) {
		const double *a = m->acc[t];
		float *g = m->grads[t];
		for (size_t i = 0; i < m->numel[t]; i++)
			g[i] = (float)(a[i] / (double)n);
	}
	return loss / (double)n;
}

double ps_small_model_loss(ps_small_model *m, const float *x, const int32_t *y, size_t n)
{
	double loss = 0.0;

	if (n == 0)
		return 0.0;
	if (!labels_ok(m, y, n))
		return NAN;
	for (size_t s = 0; s < n; s++)
		loss += forward(m, x + s * m->in, y[s], 0);
	return loss / (double)n;
}

/* ---- data set --------------------------------------------------------- */

int ps_dataset_create(const ps_config *cfg, uint64_t seed, int rank,
                      ps_dataset **d_p)
{
	ps_dataset *d;
	gsl_rng *r;
	double *teacher, *logit, tscale;
	uint64_t sample_base;
	size_t in, cls, spw, nx, tn;
	int rc;

	if (!cfg || !d_p)
		return PS_EINVAL;
	rc = check_sizes(cfg, 0);
	if (rc != PS_OK)
		return rc;
	if (rank < 0 || cfg->model.samples_per_worker < 1) {
		PS_ERROR("dataset: bad rank %d or samples_per_worker %d", rank,
		         cfg->model.samples_per_worker);
		return PS_EINVAL;
	}
	in = (size_t)cfg->model.input_dim;
	cls = (size_t)cfg->model.classes;
	spw = (size_t)cfg->model.samples_per_worker;
	if (!mul_ok(spw, in, &nx) || nx > SIZE_MAX / sizeof(float) ||
	    !mul_ok(cls, in, &tn) || tn > SIZE_MAX / sizeof(double) - cls) {
		PS_ERROR("dataset: %zu samples x %zu inputs overflow", spw, in);
		return PS_ENOMEM;
	}

	rc = PS_ENOMEM;
	d = calloc(1, sizeof(*d));
	if (!d)
		goto fail;
	d->in = in;
	d->spw = spw;
	d->x = malloc(nx * sizeof(float));
	d->y = malloc(spw * sizeof(int32_t));
	if (!d->x || !d->y)
		goto fail_dataset;
	/* teacher weights [cls x in], then one logit row [cls] */
	teacher = malloc((tn + cls) * sizeof(double));
	if (!teacher)
		goto fail_dataset;
	logit = teacher + tn;
	r = gsl_rng_alloc(gsl_rng_mt19937);
	if (!r)
		goto fail_teacher;

	/* Teacher: N(0, 1/in) weights, so its logits are about unit scale. */
	tscale = 1.0 / sqrt((double)in);
	rng_seed(r, seed ^ SEED_TEACHER);
	for (size_t i = 0; i < tn; i++)
		teacher[i] = gsl_ran_gaussian(r, tscale);

	sample_base = ps_mix64(seed ^ SEED_SAMPLES);
	for (size_t j = 0; j < spw; j++) {
		uint64_t k = (uint64_t)rank * (uint64_t)spw + j; /* global */
		float *xj = d->x + j * in;
		size_t best = 0;

		rng_seed(r, sample_base + k);
		for (size_t i = 0; i < in; i++)
			xj[i] = (float)gsl_ran_gaussian(r, 1.0);
		for (size_t c = 0; c < cls; c++) {
			const double *tw = teacher + c * in;
			double s = 0.0;
			for (size_t i = 0; i < in; i++)
				s += tw[i] * (double)xj[i];
			logit[c] = s + gsl_ran_gaussian(r, TEACHER_NOISE);
		}
		for (size_t c = 1; c < cls; c++)
			if (logit[c] > logit[best])
				best = c;
		d->y[j] = (int32_t)best;
	}

	gsl_rng_free(r);
	free(teacher);
	*d_p = d;
	return PS_OK;

fail_teacher:
	free(teacher);
fail_dataset:
	ps_dataset_free(&d);
fail:
	PS_ERROR("dataset: out of memory (%zu samples x %zu inputs)", spw, in);
	return rc;
}

void ps_dataset_free(ps_dataset **d_p)
{
	if (!d_p || !*d_p)
		return;
	free((*d_p)->x);
	free((*d_p)->y);
	free(*d_p);
	*d_p = NULL;
}

void ps_dataset_batch(const ps_dataset *d, uint64_t iteration, size_t batch,
                      float *x, int32_t *y)
{
	const uint64_t spw = d->spw;
	/* (iteration * batch) mod spw without overflow: both factors are
	 * reduced below spw <= INT_MAX first, so the product fits. */
	uint64_t idx = ((iteration % spw) * ((uint64_t)batch % spw)) % spw;

	for (size_t b = 0; b < batch; b++) {
		memcpy(x + b * d->in, d->x + (size_t)idx * d->in,
		       d->in * sizeof(float));
		y[b] = d->y[idx];
		if (++idx == spw)
			idx = 0;
	}
}
