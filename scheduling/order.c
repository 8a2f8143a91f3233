/*
 * scheduling/order.c - transfer orders computed from a model's DAG
 * (scheduling/order.h): FIFO, LAYER, TicTac's TIO and TAO, TAIL.
 *
 * DESIGN. TicTac (Hashemi et al., section 4) orders the recv ops of one
 * worker's partition of the DAG. Its notation on our structures:
 *
 *   paper                          ordo
 *   ------------------------------ --------------------------------------
 *   recv op r (one transfer)       parameter tensor t, index in dag->tensors
 *   Time(r)                        oracle: latency_us + bytes / bandwidth
 *                                  (TIO: 1, the general oracle of eq. 6)
 *   computation op, Time(op)       forward op, time_us (TIO: 0)
 *   edge recv -> op                t is in the forward op's reads
 *   edge op -> op                  the forward op's deps (forward ops only)
 *   op.dep (the recvs an op        dep[v]: reads(v) and dep[p] of every
 *     transitively depends on)       dep p of v; a bitset over tensors
 *   R (outstanding recvs)          tensors not yet numbered (in_r[t] = 1)
 *   op.M, r.P, r.M+                M[v], P[t], mplus[t]
 *   priority / order               the number written to prio[t]
 *
 * G holds the forward ops only: the backward pass reads no parameters and
 * orders are about the forward pass. One channel (the paper's M is a max
 * over channels; we have one link per worker and server pair).
 *
 * Algorithm 1 (UpdateProperties). Lines 2-3 (op.M = sum of Time over
 * op.dep n R) are kept current incrementally: cnt[v] = |dep[v] n R|,
 * x[v] = XOR of the indices in dep[v] n R (the single recv when cnt is
 * 1) and M[v]; removing r from R touches the ops whose dep holds r,
 * O(ops) per removal. Lines 5-8 reset P and M+ of the recvs in R. Lines
 * 9-17 walk the ops of G - R with D = op.dep n R: |D| = 1 adds Time(op)
 * to that recv's P (line 12); |D| > 1 lowers M+ of every r in D to op.M
 * (line 15). Doing line 15 literally costs sum |D| per update (cubic over
 * TAO's loop); we get the same minimum from a boundary: along any path
 * from a reader of r, dep only grows, so M and |D| never decrease; the
 * first op with |D| > 1 on such a path is either a reader of r or a
 * successor of an op whose D is exactly {r}, and it has the smallest M
 * on the path. So M+(r) = min M over (readers of r with |D| > 1) and
 * (successors with |D| > 1 of ops with D = {r}): O(ops + edges + reads).
 *
 * Algorithm 2 (TAO). Comparator, lines 1-9: A precedes B iff
 * min(P_B, M_A) < min(P_A, M_B) (Case 1, equation 5: the makespan of
 * A -> B is M_A + max(P_A, M_B) + P_B), and when those are equal (Case 2:
 * e.g. every P is 0) iff M+_A < M+_B. Note: the listing of Algorithm 2
 * writes A <- min(P_A, M_B), B <- min(P_B, M_A), return A < B, which is
 * equation 5 reversed (it would pick recv_2 first in Figure 2); we follow
 * the derivation (equation 5) and order.h. Lines 10-21: R = all recvs,
 * count = 0; while R is not empty: UpdateProperties (line 15), take the
 * minimum of R under the comparator (line 16: a linear scan in tensor
 * index order; a tensor replaces the current best only if it strictly
 * precedes it, so exact ties go to the lower index), remove it from R and
 * give it number count++ (lines 17-19). Numbers are 0..T-1, all distinct,
 * as in the paper. O(T * (ops + edges + reads + T)).
 *
 * Comparisons of M, P and M+ in TAO treat values within 1e-9 of the
 * iteration's total time (transfers plus forward ops) as equal, so that
 * rounding in the incremental sums cannot decide a tie that is exact on
 * paper (e.g. two recvs whose M+ come from the same op).
 *
 * Algorithm 3 (TIO). FindDependencies (line 2), one UpdateProperties with
 * R = all recvs and the general oracle (eq. 6: Time = 1 per recv, 0 per
 * op; the line is lost in our copy of the listing, the text says the
 * comparator reduces to M+ and needs no dynamic update), op.order = M+
 * (line 4). Partial ordering: equal M+ share a number; a recv on which no
 * op with two or more recv dependencies depends keeps M+ = +inf (line 7)
 * and goes last. Numbers are then made dense.
 *
 * LAYER: the rank of the tensor's first reader in dag->topo. TAIL: the
 * longest path by op time (forward and backward ops) from the tensor's
 * first reader, inclusive, to the end of the iteration; larger first
 * (Jackson's rule; see PACE). Both, and TIO, are made dense over distinct
 * keys (exact equality). FIFO: all 0.
 *
 * Threads: pure functions of their arguments.
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "scheduling/order.h"

#define NONE UINT32_MAX

static const char *const kind_names[PS_ORDER_COUNT] = {
    [PS_ORDER_FIFO] = "fifo", [PS_ORDER_LAYER] = "layer",
    [PS_ORDER_TIO] = "tio",   [PS_ORDER_TAO] = "tao",
    [PS_ORDER_TAIL] = "tail",
};

const char *ps_order_name(ps_order_kind kind)
{
	if ((int)kind < 0 || (int)kind >= PS_ORDER_COUNT)
		return "unknown";
	return kind_names[kind];
}

/* ---- dense numbering over keys ---------------------------------------- */

typedef struct keyed {
	double key;
	uint32_t index;
} keyed;

static int by_key(const void *a, const void *b)
{
	const keyed *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->index < y->index ? -1 : (x->index > y->index);
}

/* prio[i] = the number of distinct keys smaller than key[i]. */
static int dense_numbers(const double *key, uint32_t n, uint32_t *prio)
{
	keyed *k = malloc((n ? n : 1) * sizeof(*k));
	uint32_t number = 0;

	if (!k)
		return PS_ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		k[i].key = key[i];
		k[i].index = i;
	}
	qsort(k, n, sizeof(*k), by_key);
	for (uint32_t i = 0; i < n; i++) {
		if (i > 0 && k[i].key != k[i - 1].key)
			number++;
		prio[k[i].index] = number;
	}
	free(k);
	return PS_OK;
}

/* ---- LAYER and TAIL --------------------------------------------------- */

static int order_layer(const ps_dag *d, uint32_t *prio)
{
	uint32_t *pos = malloc((d->nops ? d->nops : 1) * sizeof(*pos));
	double *key = malloc((d->ntensors ? d->ntensors : 1) * sizeof(*key));
	int rc = PS_ENOMEM;

	if (pos && key) {
		for (uint32_t i = 0; i < d->nops; i++)
			pos[d->topo[i]] = i;
		for (uint32_t t = 0; t < d->ntensors; t++)
			key[t] = (double)pos[d->tensors[t].first_reader];
		rc = dense_numbers(key, d->ntensors, prio);
	}
	free(pos);
	free(key);
	return rc;
}

static int order_tail(const ps_dag *d, uint32_t *prio)
{
	double *tail = malloc((d->nops ? d->nops : 1) * sizeof(*tail));
	double *key = malloc((d->ntensors ? d->ntensors : 1) * sizeof(*key));
	int rc = PS_ENOMEM;

	if (tail && key) {
		/* Longest path to the end, successors first. */
		for (uint32_t i = d->nops; i-- > 0;) {
			const ps_dag_op *op = &d->ops[d->topo[i]];
			double rest = 0.0;

			for (uint32_t k = 0; k < op->nsuccs; k++)
				if (tail[op->succs[k]] > rest)
					rest = tail[op->succs[k]];
			tail[d->topo[i]] = op->time_us + rest;
		}
		/* Larger tails first: sort on the negated tail. */
		for (uint32_t t = 0; t < d->ntensors; t++)
			key[t] = -tail[d->tensors[t].first_reader];
		rc = dense_numbers(key, d->ntensors, prio);
	}
	free(tail);
	free(key);
	return rc;
}

/* ---- TicTac: the properties of Algorithm 1 ---------------------------- */

typedef struct tictac {
	const ps_dag *dag;
	uint32_t ntensors;   /* T: recv ops */
	uint32_t nfwd;       /* F: forward ops (G minus the recvs) */
	uint32_t words;      /* 64-bit words per dependency bitset */
	uint32_t *fwd;       /* F: forward op indices, in topological order */
	uint32_t *fpos;      /* nops: position in fwd, NONE for backward */
	uint64_t *dep;       /* F x words: op.dep */
	double *time_r;      /* T: Time(recv) */
	double *time_op;     /* F: Time(op) */
	unsigned char *in_r; /* T: 1 while the recv is in R */
	uint32_t *cnt;       /* F: |op.dep n R| */
	uint32_t *x;         /* F: XOR of the indices in op.dep n R */
	double *m;           /* F: op.M (Algorithm 1, line 3) */
	double *p;           /* T: recv.P */
	double *mplus;       /* T: recv.M+ */
} tictac;

static void tictac_free(tictac *g)
{
	free(g->fwd);
	free(g->fpos);
	free(g->dep);
	free(g->time_r);
	free(g->time_op);
	free(g->in_r);
	free(g->cnt);
	free(g->x);
	free(g->m);
	free(g->p);
	free(g->mplus);
}

/*
 * FindDependencies: the forward ops in topological order and op.dep of
 * each (its reads and the dep of each of its deps).
 */
static int tictac_init(tictac *g, const ps_dag *d)
{
	size_t T = d->ntensors ? d->ntensors : 1, N = d->nops ? d->nops : 1;

	memset(g, 0, sizeof(*g));
	g->dag = d;
	g->ntensors = d->ntensors;
	g->words = (d->ntensors + 63) / 64;
	if (g->words == 0)
		g->words = 1;
	for (uint32_t i = 0; i < d->nops; i++)
		g->nfwd += d->ops[i].kind == PS_OP_FORWARD;
	g->fwd = calloc(N, sizeof(*g->fwd));
	g->fpos = calloc(N, sizeof(*g->fpos));
	g->dep =
	    calloc((size_t)(g->nfwd ? g->nfwd : 1) * g->words, sizeof(*g->dep));
	g->time_r = calloc(T, sizeof(*g->time_r));
	g->time_op = calloc(N, sizeof(*g->time_op));
	g->in_r = calloc(T, sizeof(*g->in_r));
	g->cnt = calloc(N, sizeof(*g->cnt));
	g->x = calloc(N, sizeof(*g->x));
	g->m = calloc(N, sizeof(*g->m));
	g->p = calloc(T, sizeof(*g->p));
	g->mplus = calloc(T, sizeof(*g->mplus));
	if (!g->fwd || !g->fpos || !g->dep || !g->time_r || !g->time_op ||
	    !g->in_r || !g->cnt || !g->x || !g->m || !g->p || !g->mplus) {
		tictac_free(g);
		return PS_ENOMEM;
	}
	for (uint32_t i = 0; i < d->nops; i++)
		g->fpos[i] = NONE;
	for (uint32_t i = 0, f = 0; i < d->nops; i++) {
		uint32_t v = d->topo[i];

		if (d->ops[v].kind != PS_OP_FORWARD)
			continue;
		g->fwd[f] = v;
		g->fpos[v] = f++;
	}
	for (uint32_t f = 0; f < g->nfwd; f++) {
		const ps_dag_op *op = &d->ops[g->fwd[f]];
		uint64_t *dv = &g->dep[(size_t)f * g->words];

		for (uint32_t k = 0; k < op->ntensors; k++)
			dv[op->tensors[k] / 64] |= 1ull
			                           << (op->tensors[k] % 64);
		for (uint32_t k = 0; k < op->ndeps; k++) {
			uint32_t pf = g->fpos[op->deps[k]];
			const uint64_t *dp;

			if (pf == NONE) /* the loader forbids it */
				continue;
			dp = &g->dep[(size_t)pf * g->words];
			for (uint32_t w = 0; w < g->words; w++)
				dv[w] |= dp[w];
		}
	}
	return PS_OK;
}

/*
 * R = every recv; cnt, x and M of every op from the times in time_r
 * (Algorithm 1, lines 2-3, for the full R).
 */
static void tictac_fill_r(tictac *g)
{
	for (uint32_t t = 0; t < g->ntensors; t++)
		g->in_r[t] = 1;
	for (uint32_t f = 0; f < g->nfwd; f++) {
		const uint64_t *dv = &g->dep[(size_t)f * g->words];
		uint32_t cnt = 0, x = 0;
		double m = 0.0;

		for (uint32_t w = 0; w < g->words; w++) {
			uint64_t bits = dv[w];

			while (bits) {
				uint32_t r =
				    w * 64 + (uint32_t)__builtin_ctzll(bits);

				bits &= bits - 1;
				cnt++;
				x ^= r;
				m += g->time_r[r];
			}
		}
		g->cnt[f] = cnt;
		g->x[f] = x;
		g->m[f] = m;
	}
}

/* Removes r from R (Algorithm 2, line 17) and updates cnt, x and M. */
static void tictac_remove(tictac *g, uint32_t r)
{
	uint32_t w = r / 64;
	uint64_t bit = 1ull << (r % 64);

	g->in_r[r] = 0;
	for (uint32_t f = 0; f < g->nfwd; f++) {
		if (!(g->dep[(size_t)f * g->words + w] & bit))
			continue;
		g->cnt[f]--;
		g->x[f] ^= r;
		/* Exact values where we can: no rounding left behind. */
		if (g->cnt[f] == 0)
			g->m[f] = 0.0;
		else if (g->cnt[f] == 1)
			g->m[f] = g->time_r[g->x[f]];
		else
			g->m[f] -= g->time_r[r];
	}
}

/* Algorithm 1, lines 5-17, for the current R (see DESIGN for M+). */
static void tictac_update(tictac *g)
{
	const ps_dag *d = g->dag;

	for (uint32_t t = 0; t < g->ntensors; t++) {
		if (!g->in_r[t])
			continue;
		g->p[t] = 0.0;
		g->mplus[t] = INFINITY;
	}
	for (uint32_t f = 0; f < g->nfwd; f++) {
		const ps_dag_op *op = &d->ops[g->fwd[f]];

		if (g->cnt[f] == 1) {
			uint32_t r = g->x[f];

			/* line 12: D = {r} */
			g->p[r] += g->time_op[f];
			/* line 15 for the successors on r's boundary */
			for (uint32_t k = 0; k < op->nsuccs; k++) {
				uint32_t sf = g->fpos[op->succs[k]];

				if (sf != NONE && g->cnt[sf] > 1 &&
				    g->m[sf] < g->mplus[r])
					g->mplus[r] = g->m[sf];
			}
		} else if (g->cnt[f] > 1) {
			/* line 15 for the recvs this op reads directly */
			for (uint32_t k = 0; k < op->ntensors; k++) {
				uint32_t r = op->tensors[k];

				if (g->in_r[r] && g->m[f] < g->mplus[r])
					g->mplus[r] = g->m[f];
			}
		}
	}
}

/* ---- TAO (Algorithm 2) ------------------------------------------------ */

static bool same(double a, double b, double eps)
{
	if (a == b)
		return true;
	if (isinf(a) || isinf(b))
		return false;
	return fabs(a - b) <= eps;
}

/* Comparator (lines 1-9, with equation 5): does recv a precede recv b? */
static bool tao_precedes(const tictac *g, uint32_t a, uint32_t b, double eps)
{
	double ma = g->time_r[a], mb = g->time_r[b];
	double va = fmin(g->p[b], ma); /* what a -> b loses: min(P_B, M_A) */
	double vb = fmin(g->p[a], mb); /* what b -> a loses: min(P_A, M_B) */

	if (!same(va, vb, eps))
		return va < vb;
	return !same(g->mplus[a], g->mplus[b], eps) &&
	       g->mplus[a] < g->mplus[b];
}

static int order_tao(const ps_dag *d, const ps_time_oracle *oracle,
                     uint32_t *prio)
{
	tictac g;
	double total = 0.0, eps;
	int rc = tictac_init(&g, d);

	if (rc != PS_OK)
		return rc;
	for (uint32_t t = 0; t < d->ntensors; t++) {
		g.time_r[t] =
		    oracle->latency_us + (double)d->tensors[t].bytes /
		                             oracle->bandwidth_bytes_per_us;
		total += g.time_r[t];
	}
	for (uint32_t f = 0; f < g.nfwd; f++) {
		g.time_op[f] = d->ops[g.fwd[f]].time_us;
		total += g.time_op[f];
	}
	eps = 1e-9 * total;
	tictac_fill_r(&g);
	for (uint32_t count = 0; count < d->ntensors; count++) {
		uint32_t best = NONE;

		tictac_update(&g);
		for (uint32_t t = 0; t < d->ntensors; t++) {
			if (!g.in_r[t])
				continue;
			if (best == NONE || tao_precedes(&g, t, best, eps))
				best = t;
		}
		prio[best] = count;
		tictac_remove(&g, best);
	}
	tictac_free(&g);
	return PS_OK;
}

/* ---- TIO (Algorithm 3) ------------------------------------------------ */

static int order_tio(const ps_dag *d, uint32_t *prio)
{
	tictac g;
	int rc = tictac_init(&g, d);

	if (rc != PS_OK)
		return rc;
	/* The general time oracle, equation 6: recv 1, every other op 0. */
	for (uint32_t t = 0; t < d->ntensors; t++)
		g.time_r[t] = 1.0;
	tictac_fill_r(&g);
	tictac_update(&g);
	/* op.order <- op.M+; equal M+ share a number (partial ordering). */
	rc = dense_numbers(g.mplus, d->ntensors, prio);
	tictac_free(&g);
	return rc;
}

/* ---- entry points ----------------------------------------------------- */

static int check_oracle(ps_order_kind kind, const ps_time_oracle *oracle)
{
	if (!oracle) {
		PS_ERROR("order %s: needs a time oracle", ps_order_name(kind));
		return PS_EINVAL;
	}
	if (!(oracle->bandwidth_bytes_per_us > 0.0) ||
	    !isfinite(oracle->bandwidth_bytes_per_us) ||
	    !(oracle->latency_us >= 0.0) || !isfinite(oracle->latency_us)) {
		PS_ERROR("order %s: time oracle latency %g us, bandwidth %g "
		         "bytes/us (need latency >= 0, bandwidth > 0, finite)",
		         ps_order_name(kind), oracle->latency_us,
		         oracle->bandwidth_bytes_per_us);
		return PS_EINVAL;
	}
	return PS_OK;
}

int ps_order_compute(const ps_dag *dag, ps_order_kind kind,
                     const ps_time_oracle *oracle, uint32_t *prio)
{
	uint32_t *out;
	int rc;

	if (!dag || !prio) {
		PS_ERROR("order: NULL %s", dag ? "prio" : "dag");
		return PS_EINVAL;
	}
	if ((int)kind < 0 || (int)kind >= PS_ORDER_COUNT) {
		PS_ERROR("order: unknown kind %d", (int)kind);
		return PS_EINVAL;
	}
	if (kind == PS_ORDER_TAO || kind == PS_ORDER_TAIL) {
		rc = check_oracle(kind, oracle);
		if (rc != PS_OK)
			return rc;
	}
	/* prio is written only on success. */
	out = calloc(dag->ntensors ? dag->ntensors : 1, sizeof(*out));
	if (!out)
		return PS_ENOMEM;
	switch (kind) {
	case PS_ORDER_LAYER:
		rc = order_layer(dag, out);
		break;
	case PS_ORDER_TIO:
		rc = order_tio(dag, out);
		break;
	case PS_ORDER_TAO:
		rc = order_tao(dag, oracle, out);
		break;
	case PS_ORDER_TAIL:
		rc = order_tail(dag, out);
		break;
	case PS_ORDER_FIFO:
	default:
		rc = PS_OK; /* calloc: all 0 */
		break;
	}
	if (rc == PS_OK)
		memcpy(prio, out, (size_t)dag->ntensors * sizeof(*prio));
	else
		PS_ERROR("order %s: %s", ps_order_name(kind), ps_strerror(rc));
	free(out);
	return rc;
}

/* ---- normalise -------------------------------------------------------- */

static int by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : (x > y);
}

void ps_order_normalise(const uint32_t *prio, uint32_t n, uint32_t *out)
{
	uint64_t *s;

	if (!prio || !out || n == 0)
		return;
	s = malloc((size_t)n * sizeof(*s));
	if (!s) {
		/* No memory for the sort: count directly, O(n^2). */
		for (uint32_t i = 0; i < n; i++) {
			uint32_t below = 0;

			for (uint32_t j = 0; j < n; j++)
				below += prio[j] < prio[i];
			out[i] = below;
		}
		return;
	}
	/* (priority, index) in one word: sorting it sorts by priority. */
	for (uint32_t i = 0; i < n; i++)
		s[i] = (uint64_t)prio[i] << 32 | i;
	qsort(s, n, sizeof(*s), by_u64);
	for (uint32_t k = 0, below = 0; k < n; k++) {
		if (k > 0 && s[k] >> 32 != s[k - 1] >> 32)
			below = k;
		out[(uint32_t)s[k]] = below;
	}
	free(s);
}

int ps_order_partition_numbers(const ps_placement *pl,
                               const uint32_t *tensor_prio, int counter,
                               uint32_t **numbers_p)
{
	uint32_t *num, *prio = NULL, *idx = NULL, *out = NULL;
	int rc = PS_ENOMEM;

	if (!pl || !numbers_p)
		return PS_EINVAL;
	num = calloc(pl->num_parts ? pl->num_parts : 1, sizeof(*num));
	if (!num)
		return PS_ENOMEM;
	for (uint32_t i = 0; i < pl->num_parts && tensor_prio; i++) {
		const ps_partition *q = &pl->parts[i];

		/* a fused partition is as urgent as its most urgent tensor */
		num[i] = tensor_prio[q->tensor];
		for (uint32_t u = q->tensor + 1; u < q->tensor + q->ntensors;
		     u++)
			if (tensor_prio[u] < num[i])
				num[i] = tensor_prio[u];
	}
	if (!counter) {
		*numbers_p = num;
		return PS_OK;
	}
	prio = malloc(pl->num_parts * sizeof(*prio) + 1);
	idx = malloc(pl->num_parts * sizeof(*idx) + 1);
	out = malloc(pl->num_parts * sizeof(*out) + 1);
	if (!prio || !idx || !out)
		goto out;
	for (uint32_t s = 0; s < pl->num_servers; s++) {
		uint32_t n = 0;
		for (uint32_t i = 0; i < pl->num_parts; i++)
			if (pl->parts[i].server == s) {
				idx[n] = i;
				prio[n++] = num[i];
			}
		ps_order_normalise(prio, n, out);
		for (uint32_t k = 0; k < n; k++)
			num[idx[k]] = out[k];
	}
	*numbers_p = num;
	num = NULL;
	rc = PS_OK;
out:
	free(num);
	free(prio);
	free(idx);
	free(out);
	return rc;
}
