/*
 * tests/scheduling/test_order.c - transfer orders (scheduling/order.c): the
 * worked examples of TicTac (Figure 2; Case 1 and Case 2 of TAO's
 * comparator; TIO's partial order), LAYER and TAIL on hand-computed DAGs,
 * ps_order_normalise, every shipped model with every kind, and 200 random
 * DAGs checked against a literal transcription of Algorithms 1-3.
 *
 * Models are written as JSON into one mkdtemp() directory (removed at the
 * end) and loaded with ps_dag_load. The shipped models are read from
 * ORDO_MODELS_DIR when the build defines it, else from conf/models next to
 * this source file.
 *
 * Unless a test says otherwise the time oracle is latency 0, bandwidth
 * 4 bytes/us: a tensor of n float32 elements takes n us to transfer.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "support/tmpdir.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/dag.h"
#include "scheduling/order.h"

static char tmpdir[64];

static const ps_time_oracle UNIT = {.latency_us = 0.0,
                                    .bandwidth_bytes_per_us = 4.0};

/* ---- building models -------------------------------------------------- */

#define MAX_T 64
#define MAX_O 64

/*
 * A model's forward pass; the backward pass mirrors it: op X gets X.bwd
 * (time bwd_us), which depends on Y.bwd for every forward op Y that
 * depends on X, or on X itself when none does; the gradient of a tensor
 * comes from the .bwd of the first op (in list order) that reads it.
 * Forward ops must be listed in a topological order.
 */
typedef struct model {
	uint32_t nt, no;
	char tname[MAX_T][16];
	uint64_t numel[MAX_T]; /* Time under UNIT, in us */
	char oname[MAX_O][16];
	double fwd_us[MAX_O], bwd_us[MAX_O];
	uint32_t nreads[MAX_O], reads[MAX_O][MAX_T];
	uint32_t ndeps[MAX_O], deps[MAX_O][MAX_O];
} model;

static model *model_new(void)
{
	model *m = calloc(1, sizeof(*m));

	assert_non_null(m);
	return m;
}

static uint32_t model_find(char names[][16], uint32_t n, const char *name)
{
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	fail_msg("unknown name '%s'", name);
	return 0;
}

static void add_tensor(model *m, const char *name, uint64_t numel)
{
	assert_true(m->nt < MAX_T);
	snprintf(m->tname[m->nt], 16, "%s", name);
	m->numel[m->nt++] = numel;
}

/* reads and deps: names separated by spaces ("" for none). */
static void add_op(model *m, const char *name, double fwd_us, const char *reads,
                   const char *deps, double bwd_us)
{
	uint32_t i = m->no++;
	char buf[256], *tok, *save = NULL;

	assert_true(i < MAX_O);
	snprintf(m->oname[i], 16, "%s", name);
	m->fwd_us[i] = fwd_us;
	m->bwd_us[i] = bwd_us;
	snprintf(buf, sizeof(buf), "%s", reads);
	for (tok = strtok_r(buf, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save))
		m->reads[i][m->nreads[i]++] = model_find(m->tname, m->nt, tok);
	snprintf(buf, sizeof(buf), "%s", deps);
	for (tok = strtok_r(buf, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save))
		m->deps[i][m->ndeps[i]++] = model_find(m->oname, i, tok);
}

static void write_names(FILE *f, char names[][16], const uint32_t *idx,
                        uint32_t n, const char *suffix)
{
	for (uint32_t k = 0; k < n; k++)
		fprintf(f, "%s\"%s%s\"", k ? ", " : "", names[idx[k]], suffix);
}

static ps_dag *model_load(const model *m)
{
	static unsigned serial;
	char path[128], err[1024] = "";
	uint32_t grad_of[MAX_T], list[MAX_O], n;
	ps_dag *d = NULL;
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/m%u.json", tmpdir, serial++);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "{\"format\": \"ordo-model\", \"version\": 1, "
	           "\"name\": \"t\", \"batch\": 1, "
	           "\"times\": {\"source\": \"measured\"},\n\"tensors\": [");
	for (uint32_t t = 0; t < m->nt; t++) {
		fprintf(f, "%s\n {\"name\": \"%s\", \"shape\": [%llu]}",
		        t ? "," : "", m->tname[t],
		        (unsigned long long)m->numel[t]);
		grad_of[t] = UINT32_MAX;
	}
	for (uint32_t i = 0; i < m->no; i++)
		for (uint32_t k = 0; k < m->nreads[i]; k++)
			if (grad_of[m->reads[i][k]] == UINT32_MAX)
				grad_of[m->reads[i][k]] = i;
	fprintf(f, "],\n\"ops\": [");
	for (uint32_t i = 0; i < m->no; i++) {
		fprintf(f,
		        "%s\n {\"name\": \"%s\", \"kind\": \"forward\", "
		        "\"time_us\": %.17g, \"reads\": [",
		        i ? "," : "", m->oname[i], m->fwd_us[i]);
		for (uint32_t k = 0; k < m->nreads[i]; k++)
			fprintf(f, "%s\"%s\"", k ? ", " : "",
			        m->tname[m->reads[i][k]]);
		fprintf(f, "], \"deps\": [");
		write_names(f, (char(*)[16])m->oname, m->deps[i], m->ndeps[i],
		            "");
		fprintf(f, "]}");
	}
	for (uint32_t i = 0; i < m->no; i++) {
		fprintf(f,
		        ",\n {\"name\": \"%s.bwd\", \"kind\": \"backward\", "
		        "\"time_us\": %.17g, \"grads\": [",
		        m->oname[i], m->bwd_us[i]);
		n = 0;
		for (uint32_t t = 0; t < m->nt; t++)
			if (grad_of[t] == i)
				fprintf(f, "%s\"%s\"", n++ ? ", " : "",
				        m->tname[t]);
		fprintf(f, "], \"deps\": [");
		n = 0;
		for (uint32_t j = i + 1; j < m->no; j++)
			for (uint32_t k = 0; k < m->ndeps[j]; k++)
				if (m->deps[j][k] == i)
					list[n++] = j;
		if (n)
			write_names(f, (char(*)[16])m->oname, list, n, ".bwd");
		else
			fprintf(f, "\"%s\"", m->oname[i]);
		fprintf(f, "]}");
	}
	fprintf(f, "\n]}\n");
	assert_int_equal(fclose(f), 0);
	rc = ps_dag_load(path, 1.0, &d, err, sizeof(err));
	if (rc)
		print_error("%s: %s\n", path, err);
	assert_int_equal(rc, PS_OK);
	return d;
}

static uint32_t tensor(const ps_dag *d, const char *name)
{
	int64_t t = ps_dag_find_tensor(d, name);

	assert_true(t >= 0);
	return (uint32_t)t;
}

/* Computes kind and asserts prio[name_k] == want_k for every tensor. */
static void expect_order(const ps_dag *d, ps_order_kind kind,
                         const char *const *names, const uint32_t *want)
{
	uint32_t prio[MAX_T];

	assert_true(d->ntensors <= MAX_T);
	assert_int_equal(ps_order_compute(d, kind, &UNIT, prio), PS_OK);
	for (uint32_t k = 0; k < d->ntensors; k++) {
		uint32_t t = tensor(d, names[k]);

		if (prio[t] != want[k])
			print_error("%s: %s got %u, want %u\n",
			            ps_order_name(kind), names[k], prio[t],
			            want[k]);
		assert_int_equal(prio[t], want[k]);
	}
}

/*
 * The makespan of the forward pass under an order, as in the paper's
 * examples: one channel sends the transfers in priority order (ties by
 * index), back to back; one compute stream runs a ready forward op as soon
 * as its deps finished and its reads arrived (earliest first, ties in
 * topological order).
 */
static double makespan(const ps_dag *d, const uint32_t *prio,
                       const ps_time_oracle *o)
{
	double *arrive = calloc(d->ntensors, sizeof(*arrive));
	double *finish = calloc(d->nops, sizeof(*finish));
	char *done = calloc(d->nops, 1), *sent = calloc(d->ntensors, 1);
	double now = 0.0, link = 0.0;

	assert_true(arrive && finish && done && sent);
	for (uint32_t n = 0; n < d->ntensors; n++) {
		uint32_t best = UINT32_MAX;

		for (uint32_t t = 0; t < d->ntensors; t++)
			if (!sent[t] &&
			    (best == UINT32_MAX || prio[t] < prio[best]))
				best = t;
		sent[best] = 1;
		link += o->latency_us + (double)d->tensors[best].bytes /
		                            o->bandwidth_bytes_per_us;
		arrive[best] = link;
	}
	for (;;) {
		uint32_t pick = UINT32_MAX;
		double pick_ready = 0.0;

		for (uint32_t i = 0; i < d->nops; i++) {
			const ps_dag_op *op = &d->ops[d->topo[i]];
			double ready = 0.0;
			int ok = op->kind == PS_OP_FORWARD && !done[d->topo[i]];

			for (uint32_t k = 0; ok && k < op->ndeps; k++) {
				ok = done[op->deps[k]];
				ready = fmax(ready, finish[op->deps[k]]);
			}
			for (uint32_t k = 0; ok && k < op->ntensors; k++)
				ready = fmax(ready, arrive[op->tensors[k]]);
			if (ok && (pick == UINT32_MAX || ready < pick_ready)) {
				pick = d->topo[i];
				pick_ready = ready;
			}
		}
		if (pick == UINT32_MAX)
			break;
		now = fmax(now, pick_ready) + d->ops[pick].time_us;
		finish[pick] = now;
		done[pick] = 1;
	}
	free(arrive);
	free(finish);
	free(done);
	free(sent);
	return now;
}

/* Numbers within [0, n) and dense: every number below the max is used. */
static void assert_dense(const uint32_t *prio, uint32_t n)
{
	char used[1024] = {0};
	uint32_t max = 0;

	assert_true(n <= sizeof(used));
	for (uint32_t t = 0; t < n; t++) {
		assert_true(prio[t] < n);
		used[prio[t]] = 1;
		if (prio[t] > max)
			max = prio[t];
	}
	for (uint32_t k = 0; k <= max; k++)
		assert_true(used[k]);
}

/* ---- fixtures --------------------------------------------------------- */

static int group_setup(void **state)
{
	(void)state;
	return test_tmpdir_create(tmpdir, sizeof(tmpdir), "order");
}

static int group_teardown(void **state)
{
	(void)state;
	return test_tmpdir_remove(tmpdir);
}

/* ---- TicTac, Figure 2 ------------------------------------------------- */

/*
 * Figure 2a: recv1 -> op1, recv2 -> op2, op1 -> op2 (op1.dep = {recv1},
 * op2.dep = {recv1, recv2}); every op and transfer takes 1 unit.
 *   r1 -> r2 (2b): r1 [0,1]; r2 [1,2] overlaps op1 [1,2]; op2 [2,3]: 3.
 *   r2 -> r1 (2c): r2 [0,1]; r1 [1,2]; op1 [2,3]; op2 [3,4]:         4.
 * Properties with R = {r1, r2}: r1.P = Time(op1) = 1, r2.P = 0,
 * M = 1 each, r1.M+ = r2.M+ = 2 (op2.M). TAO: min(P_r2, M_r1) = 0 <
 * min(P_r1, M_r2) = 1, so r1 precedes r2. TIO: equal M+, equal numbers.
 * r2 is listed first so that index order would be the wrong answer.
 */
static ps_dag *figure2(void)
{
	model *m = model_new();
	ps_dag *d;

	add_tensor(m, "r2", 1);
	add_tensor(m, "r1", 1);
	add_op(m, "op1", 1, "r1", "", 1);
	add_op(m, "op2", 1, "r2", "op1", 1);
	d = model_load(m);
	free(m);
	return d;
}

static void test_figure2(void **state)
{
	static const char *const names[] = {"r1", "r2"};
	static const uint32_t tao[] = {0, 1}, tio[] = {0, 0}, layer[] = {0, 1},
	                      tail[] = {0, 1}, fifo[] = {0, 0};
	ps_dag *d = figure2();
	uint32_t good[2], bad[2], prio[2];

	(void)state;
	expect_order(d, PS_ORDER_TAO, names, tao);
	expect_order(d, PS_ORDER_TIO, names, tio);
	expect_order(d, PS_ORDER_LAYER, names, layer);
	expect_order(d, PS_ORDER_TAIL, names, tail);
	expect_order(d, PS_ORDER_FIFO, names, fifo);
	/* The makespans of Figures 2b and 2c, and TAO's is the good one. */
	good[tensor(d, "r1")] = 0;
	good[tensor(d, "r2")] = 1;
	bad[tensor(d, "r1")] = 1;
	bad[tensor(d, "r2")] = 0;
	assert_true(makespan(d, good, &UNIT) == 3.0);
	assert_true(makespan(d, bad, &UNIT) == 4.0);
	assert_int_equal(ps_order_compute(d, PS_ORDER_TAO, &UNIT, prio), PS_OK);
	assert_true(makespan(d, prio, &UNIT) == 3.0);
	ps_dag_free(&d);
}

/* ---- TAO's comparator, Case 1 ----------------------------------------- */

/*
 * Case 1 (Figure 4a): two reads, A -> opA (P_A) and B -> opB (P_B), both
 * summed by a 0-time join; M_A, M_B are the transfer times. TAO puts A
 * first iff min(P_B, M_A) < min(P_A, M_B) (equation 5), i.e. iff
 * M_A + max(P_A, M_B) + P_B < M_B + max(P_B, M_A) + P_A.
 * `first` names the tensor listed first in the file (index 0).
 */
static void case1(uint64_t ma, double pa, uint64_t mb, double pb,
                  const char *first, const char *want_first, double want_ab,
                  double want_ba)
{
	model *m = model_new();
	uint32_t prio[2], ab[2], ba[2], a, b;
	ps_dag *d;

	if (strcmp(first, "A") == 0) {
		add_tensor(m, "A", ma);
		add_tensor(m, "B", mb);
	} else {
		add_tensor(m, "B", mb);
		add_tensor(m, "A", ma);
	}
	add_op(m, "opA", pa, "A", "", 1);
	add_op(m, "opB", pb, "B", "", 1);
	add_op(m, "join", 0, "", "opA opB", 1);
	d = model_load(m);
	free(m);
	a = tensor(d, "A");
	b = tensor(d, "B");
	ab[a] = 0;
	ab[b] = 1;
	ba[a] = 1;
	ba[b] = 0;
	assert_true(makespan(d, ab, &UNIT) == want_ab);
	assert_true(makespan(d, ba, &UNIT) == want_ba);
	assert_int_equal(ps_order_compute(d, PS_ORDER_TAO, &UNIT, prio), PS_OK);
	assert_int_equal(prio[tensor(d, want_first)], 0);
	assert_int_equal(prio[a] + prio[b], 1);
	assert_true(makespan(d, prio, &UNIT) == fmin(want_ab, want_ba));
	ps_dag_free(&d);
}

static void test_tao_case1(void **state)
{
	(void)state;
	/* M_A 2, P_A 5, M_B 4, P_B 1: min(1, 2) = 1 < min(5, 4) = 4: A.
	 * A -> B: 2 + max(5, 4) + 1 = 8; B -> A: 4 + max(1, 2) + 5 = 11. */
	case1(2, 5, 4, 1, "B", "A", 8, 11);
	/* M_A 3, P_A 1, M_B 1, P_B 3: min(3, 3) = 3 > min(1, 1) = 1: B.
	 * A -> B: 3 + max(1, 1) + 3 = 7; B -> A: 1 + max(3, 3) + 1 = 5. */
	case1(3, 1, 1, 3, "A", "B", 7, 5);
	/* The larger transfer first: M_A 4, P_A 10, M_B 2, P_B 1:
	 * min(1, 4) = 1 < min(10, 2) = 2: A (the listing of Algorithm 2, read
	 * literally, would pick B).
	 * A -> B: 4 + max(10, 2) + 1 = 15; B -> A: 2 + max(1, 4) + 10 = 16. */
	case1(4, 10, 2, 1, "B", "A", 15, 16);
}

/* ---- TAO's comparator, Case 2, and TIO's partial order ---------------- */

/*
 * Figure 4: op1 reads A and B; op2 (after op1) reads C; op3 (after op2)
 * reads D. Time(A) 2, Time(B) 3, Time(C) 1, Time(D) 1; ops 1 each.
 * With every recv outstanding every P is 0 (no op has a single
 * outstanding dependency), so equation 5 ties (0 = 0) and M+ decides:
 * A.M+ = B.M+ = 5 < C.M+ = 6 < D.M+ = 7. A and B tie; the lower index
 * (A) goes first. Then B.P = Time(op1) = 1: min(P_C, M_B) = 0 <
 * min(P_B, M_C) = 1, so B; then C.P = 1 puts C before D.
 * TIO (every transfer 1): M+ = 2, 2, 3, 4: A and B share number 0.
 * Listed C, A, D, B so that neither index order nor smallest transfer
 * first gives the answer.
 */
static ps_dag *figure4(void)
{
	model *m = model_new();
	ps_dag *d;

	add_tensor(m, "C", 1);
	add_tensor(m, "A", 2);
	add_tensor(m, "D", 1);
	add_tensor(m, "B", 3);
	add_op(m, "op1", 1, "A B", "", 1);
	add_op(m, "op2", 1, "C", "op1", 1);
	add_op(m, "op3", 1, "D", "op2", 1);
	d = model_load(m);
	free(m);
	return d;
}

static void test_tao_case2(void **state)
{
	static const char *const names[] = {"A", "B", "C", "D"};
	static const uint32_t tao[] = {0, 1, 2, 3};
	ps_dag *d = figure4();

	(void)state;
	expect_order(d, PS_ORDER_TAO, names, tao);
	ps_dag_free(&d);
}

/*
 * A second DAG for TIO: M+ reached through ops with one dependency, and
 * M+ = +inf (Algorithm 1, line 7) for a recv that no op with two or more
 * outstanding dependencies depends on.
 *   lone (reads g)                      dep {g}, a sink
 *   x (reads c) -> y -> z (reads e)     z.dep = {c, e}
 *   p (reads a, b, h)                   p.dep = {a, b, h}
 *   q (after z, p) -> s (reads f)       s.dep = {a, b, c, e, f, h}
 * M+ with every transfer 1: c = e = 2 (z); a = b = h = 3 (p); f = 6 (s);
 * g = +inf. Numbers: c, e 0; a, b, h 1; f 2; g 3.
 */
static void test_tio_partial_order(void **state)
{
	static const char *const names4[] = {"A", "B", "C", "D"};
	static const uint32_t tio4[] = {0, 0, 1, 2};
	static const char *const names[] = {"c", "e", "a", "b", "h", "f", "g"};
	static const uint32_t tio[] = {0, 0, 1, 1, 1, 2, 3};
	ps_dag *d = figure4();
	model *m;

	(void)state;
	expect_order(d, PS_ORDER_TIO, names4, tio4);
	ps_dag_free(&d);

	m = model_new();
	add_tensor(m, "g", 5);
	add_tensor(m, "f", 5);
	add_tensor(m, "a", 5);
	add_tensor(m, "b", 5);
	add_tensor(m, "e", 5);
	add_tensor(m, "c", 5);
	add_tensor(m, "h", 5);
	add_op(m, "lone", 1, "g", "", 1);
	add_op(m, "x", 1, "c", "", 1);
	add_op(m, "y", 1, "", "x", 1);
	add_op(m, "z", 1, "e", "y", 1);
	add_op(m, "p", 1, "a b h", "", 1);
	add_op(m, "q", 1, "", "z p", 1);
	add_op(m, "s", 1, "f", "q", 1);
	d = model_load(m);
	free(m);
	expect_order(d, PS_ORDER_TIO, names, tio);
	ps_dag_free(&d);
}

/* ---- LAYER, TAIL, FIFO ------------------------------------------------ */

/*
 * A chain a -> b -> c reading t0, t1, t2 (listed t2, t0, t1), forward
 * 1, 2, 3 us, backward 1, 2, 3 us (c.bwd -> b.bwd -> a.bwd).
 * LAYER: topological ranks 0, 1, 2.
 * TAIL: a: 1 + 2 + 3 + 3 + 2 + 1 = 12; b: 11; c: 3 + 3 + 2 + 1 = 9.
 */
static void test_layer_tail_chain(void **state)
{
	static const char *const names[] = {"t0", "t1", "t2"};
	static const uint32_t want[] = {0, 1, 2}, zero[] = {0, 0, 0};
	model *m = model_new();
	ps_dag *d;

	(void)state;
	add_tensor(m, "t2", 10);
	add_tensor(m, "t0", 10);
	add_tensor(m, "t1", 10);
	add_op(m, "a", 1, "t0", "", 1);
	add_op(m, "b", 2, "t1", "a", 2);
	add_op(m, "c", 3, "t2", "b", 3);
	d = model_load(m);
	free(m);
	expect_order(d, PS_ORDER_LAYER, names, want);
	expect_order(d, PS_ORDER_TAIL, names, want);
	expect_order(d, PS_ORDER_TIO, names, (const uint32_t[]){0, 0, 1});
	expect_order(d, PS_ORDER_TAO, names, want);
	expect_order(d, PS_ORDER_FIFO, names, zero);
	ps_dag_free(&d);
}

/*
 * Branchy: in -> {S, L, R}; {L, R} -> J; S is a side branch (an auxiliary
 * head). Listed in, S, L, R, J, so topo = in, S, L, R, J.
 *   forward  in 1, S 5, L 10, R 2, J 1
 *   backward in 1, S 3, L 4, R 6, J 2
 *   reads: in {w_in}, S {w_s, w_sh}, L {w_l}, R {w_r, w_sh}, J {w_j}
 * Backward: J.bwd <- J; S.bwd <- S; L.bwd, R.bwd <- J.bwd;
 * in.bwd <- L.bwd, R.bwd, S.bwd.
 * Longest paths to the end: in.bwd 1; S.bwd 4; L.bwd 5; R.bwd 7;
 * J.bwd 2 + 7 = 9; J 10; S 5 + 4 = 9; L 10 + 10 = 20; R 2 + 10 = 12;
 * in 1 + max(9, 20, 12) = 21.
 * TAIL keys (first reader): w_in 21, w_l 20, w_r 12, w_j 10, w_s 9,
 * w_sh 9 (first reader S, not R) -> 0, 1, 2, 3, 4, 4.
 * LAYER (topo ranks): w_in 0, w_s 1, w_sh 1, w_l 2, w_r 3, w_j 4.
 */
static void test_layer_tail_branchy(void **state)
{
	static const char *const names[] = {"w_in", "w_s", "w_sh",
	                                    "w_l",  "w_r", "w_j"};
	static const uint32_t layer[] = {0, 1, 1, 2, 3, 4};
	static const uint32_t tail[] = {0, 4, 4, 1, 2, 3};
	static const uint32_t fifo[] = {0, 0, 0, 0, 0, 0};
	model *m = model_new();
	ps_dag *d;

	(void)state;
	add_tensor(m, "w_j", 7);
	add_tensor(m, "w_sh", 7);
	add_tensor(m, "w_r", 7);
	add_tensor(m, "w_l", 7);
	add_tensor(m, "w_s", 7);
	add_tensor(m, "w_in", 7);
	add_op(m, "in", 1, "w_in", "", 1);
	add_op(m, "S", 5, "w_s w_sh", "in", 3);
	add_op(m, "L", 10, "w_l", "in", 4);
	add_op(m, "R", 2, "w_r w_sh", "in", 6);
	add_op(m, "J", 1, "w_j", "L R", 2);
	d = model_load(m);
	free(m);
	assert_int_equal(d->tensors[tensor(d, "w_sh")].first_reader,
	                 (uint32_t)ps_dag_find_op(d, "S"));
	expect_order(d, PS_ORDER_LAYER, names, layer);
	expect_order(d, PS_ORDER_TAIL, names, tail);
	expect_order(d, PS_ORDER_FIFO, names, fifo);
	ps_dag_free(&d);
}

/* ---- normalise -------------------------------------------------------- */

static void test_normalise(void **state)
{
	static const uint32_t p1[] = {5, 1, 5, 3}, w1[] = {2, 0, 2, 1};
	static const uint32_t p2[] = {7, 7, 1, 1, 9}, w2[] = {2, 2, 0, 0, 4};
	static const uint32_t p3[] = {3, 2, 1, 0}, w3[] = {3, 2, 1, 0};
	static const uint32_t p4[] = {0, 0, 0}, w4[] = {0, 0, 0};
	static const uint32_t p5[] = {UINT32_MAX, 0, UINT32_MAX},
	                      w5[] = {1, 0, 1};
	uint32_t out[8], big[1000], bout[1000], seed = 12345;

	(void)state;
	ps_order_normalise(p1, 4, out);
	assert_memory_equal(out, w1, sizeof(w1));
	ps_order_normalise(p2, 5, out);
	assert_memory_equal(out, w2, sizeof(w2));
	ps_order_normalise(p3, 4, out);
	assert_memory_equal(out, w3, sizeof(w3));
	ps_order_normalise(p4, 3, out);
	assert_memory_equal(out, w4, sizeof(w4));
	ps_order_normalise(p5, 3, out);
	assert_memory_equal(out, w5, sizeof(w5));
	out[0] = 77;
	ps_order_normalise(p1, 0, out);
	ps_order_normalise(NULL, 4, out);
	ps_order_normalise(p1, 4, NULL);
	assert_int_equal(out[0], 77);
	/* Against counting directly. */
	for (uint32_t i = 0; i < 1000; i++) {
		seed = seed * 1103515245u + 12345u;
		big[i] = (seed >> 16) % 50;
	}
	ps_order_normalise(big, 1000, bout);
	for (uint32_t i = 0; i < 1000; i++) {
		uint32_t below = 0;

		for (uint32_t j = 0; j < 1000; j++)
			below += big[j] < big[i];
		assert_int_equal(bout[i], below);
	}
}

/* ---- arguments -------------------------------------------------------- */

static void test_invalid(void **state)
{
	ps_dag *d = figure2();
	uint32_t prio[2] = {99, 99};
	ps_time_oracle bad = UNIT;

	(void)state;
	assert_int_equal(ps_order_compute(NULL, PS_ORDER_FIFO, &UNIT, prio),
	                 PS_EINVAL);
	assert_int_equal(ps_order_compute(d, PS_ORDER_FIFO, &UNIT, NULL),
	                 PS_EINVAL);
	assert_int_equal(ps_order_compute(d, (ps_order_kind)-1, &UNIT, prio),
	                 PS_EINVAL);
	assert_int_equal(ps_order_compute(d, PS_ORDER_COUNT, &UNIT, prio),
	                 PS_EINVAL);
	assert_int_equal(ps_order_compute(d, PS_ORDER_TAO, NULL, prio),
	                 PS_EINVAL);
	assert_int_equal(ps_order_compute(d, PS_ORDER_TAIL, NULL, prio),
	                 PS_EINVAL);
	bad.bandwidth_bytes_per_us = 0;
	assert_int_equal(ps_order_compute(d, PS_ORDER_TAO, &bad, prio),
	                 PS_EINVAL);
	assert_int_equal(ps_order_compute(d, PS_ORDER_TAIL, &bad, prio),
	                 PS_EINVAL);
	bad.bandwidth_bytes_per_us = -4;
	assert_int_equal(ps_order_compute(d, PS_ORDER_TAO, &bad, prio),
	                 PS_EINVAL);
	bad.bandwidth_bytes_per_us = NAN;
	assert_int_equal(ps_order_compute(d, PS_ORDER_TAO, &bad, prio),
	                 PS_EINVAL);
	bad = UNIT;
	bad.latency_us = -1;
	assert_int_equal(ps_order_compute(d, PS_ORDER_TAO, &bad, prio),
	                 PS_EINVAL);
	/* prio is written only on success */
	assert_int_equal(prio[0], 99);
	assert_int_equal(prio[1], 99);
	/* the oracle is optional for the others, and ignored */
	assert_int_equal(ps_order_compute(d, PS_ORDER_FIFO, NULL, prio), PS_OK);
	assert_int_equal(ps_order_compute(d, PS_ORDER_LAYER, NULL, prio),
	                 PS_OK);
	assert_int_equal(ps_order_compute(d, PS_ORDER_TIO, &bad, prio), PS_OK);
	assert_string_equal(ps_order_name(PS_ORDER_FIFO), "fifo");
	assert_string_equal(ps_order_name(PS_ORDER_LAYER), "layer");
	assert_string_equal(ps_order_name(PS_ORDER_TIO), "tio");
	assert_string_equal(ps_order_name(PS_ORDER_TAO), "tao");
	assert_string_equal(ps_order_name(PS_ORDER_TAIL), "tail");
	assert_string_equal(ps_order_name(PS_ORDER_COUNT), "unknown");
	ps_dag_free(&d);
}

/* ---- the shipped models ----------------------------------------------- */

static const char *models_dir(void)
{
#ifdef ORDO_MODELS_DIR
	return ORDO_MODELS_DIR;
#else
	static char dir[1024];
	const char *at = strstr(__FILE__, "tests/scheduling/test_order.c");

	if (!at || __FILE__[0] != '/')
		return NULL;
	snprintf(dir, sizeof(dir), "%.*sconf/models", (int)(at - __FILE__),
	         __FILE__);
	return dir;
#endif
}

/* Within a chain the numbers follow the forward order of first readers. */
static void assert_forward_order(const ps_dag *d, const uint32_t *prio)
{
	uint32_t *pos = calloc(d->nops, sizeof(*pos));

	assert_non_null(pos);
	for (uint32_t i = 0; i < d->nops; i++)
		pos[d->topo[i]] = i;
	for (uint32_t a = 0; a < d->ntensors; a++)
		for (uint32_t b = 0; b < d->ntensors; b++)
			if (pos[d->tensors[a].first_reader] <
			    pos[d->tensors[b].first_reader])
				assert_true(prio[a] <= prio[b]);
	free(pos);
}

static void test_shipped_models(void **state)
{
	/* 10 Gb/s and 20 us per transfer. */
	static const ps_time_oracle net = {.latency_us = 20,
	                                   .bandwidth_bytes_per_us = 1250};
	const char *dir = models_dir();
	struct dirent *de;
	DIR *dd;
	int nmodels = 0;

	(void)state;
	if (!dir)
		skip();
	dd = opendir(dir);
	assert_non_null(dd);
	while ((de = readdir(dd)) != NULL) {
		size_t len = strlen(de->d_name);
		char path[1400], err[1024] = "";
		int chain, par;
		uint32_t *prio;
		ps_dag *d = NULL;

		if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (ps_dag_load(path, 1.0, &d, err, sizeof(err)) != PS_OK)
			fail_msg("%s", err);
		nmodels++;
		chain = strcmp(de->d_name, "seq32.json") == 0 ||
		        strcmp(de->d_name, "vgg16.json") == 0;
		par = strcmp(de->d_name, "par32.json") == 0;
		prio = calloc(d->ntensors, sizeof(*prio));
		assert_non_null(prio);
		for (int k = 0; k < PS_ORDER_COUNT; k++) {
			assert_int_equal(
			    ps_order_compute(d, (ps_order_kind)k, &net, prio),
			    PS_OK);
			assert_dense(prio, d->ntensors);
			if (chain && (k == PS_ORDER_LAYER ||
			              k == PS_ORDER_TIO || k == PS_ORDER_TAO))
				assert_forward_order(d, prio);
			if (k == PS_ORDER_TAO) /* a total order */
				for (uint32_t t = 0; t < d->ntensors; t++)
					assert_true(prio[t] < d->ntensors);
			if (par && k == PS_ORDER_TIO)
				for (uint32_t t = 0; t < d->ntensors; t++)
					assert_int_equal(prio[t], 0);
			if (k == PS_ORDER_FIFO)
				for (uint32_t t = 0; t < d->ntensors; t++)
					assert_int_equal(prio[t], 0);
		}
		/* TAO is a permutation: dense with ntensors distinct. */
		assert_int_equal(ps_order_compute(d, PS_ORDER_TAO, &net, prio),
		                 PS_OK);
		{
			uint32_t max = 0;

			for (uint32_t t = 0; t < d->ntensors; t++)
				max = prio[t] > max ? prio[t] : max;
			assert_int_equal(max, d->ntensors - 1);
		}
		free(prio);
		ps_dag_free(&d);
	}
	closedir(dd);
	assert_true(nmodels >= 9);
}

/* ---- random DAGs against a literal Algorithm 1-3 ---------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % n);
}

/*
 * Algorithms 1-3 as written (equation 5 for the comparator), with sets
 * as boolean arrays and every property recomputed from scratch. Times
 * are integers here, so all sums are exact.
 */
typedef struct ref {
	uint32_t nt, nf;
	uint32_t fwd[MAX_O];    /* forward ops, topological order */
	char dep[MAX_O][MAX_T]; /* op.dep */
	double time_r[MAX_T], time_op[MAX_O];
	char in_r[MAX_T];
	double m[MAX_O], p[MAX_T], mplus[MAX_T];
} ref;

static void ref_init(ref *g, const ps_dag *d, int general)
{
	uint32_t fpos[2 * MAX_O];

	memset(g, 0, sizeof(*g));
	g->nt = d->ntensors;
	for (uint32_t i = 0; i < d->nops; i++) {
		uint32_t v = d->topo[i];
		const ps_dag_op *op = &d->ops[v];

		if (op->kind != PS_OP_FORWARD)
			continue;
		fpos[v] = g->nf;
		g->fwd[g->nf] = v;
		g->time_op[g->nf] = general ? 0 : op->time_us;
		for (uint32_t k = 0; k < op->ntensors; k++)
			g->dep[g->nf][op->tensors[k]] = 1;
		for (uint32_t k = 0; k < op->ndeps; k++)
			for (uint32_t t = 0; t < g->nt; t++)
				g->dep[g->nf][t] |=
				    g->dep[fpos[op->deps[k]]][t];
		g->nf++;
	}
	for (uint32_t t = 0; t < g->nt; t++) {
		g->time_r[t] = general ? 1.0 : (double)d->tensors[t].bytes / 4;
		g->in_r[t] = 1;
	}
}

static void ref_update(ref *g)
{
	for (uint32_t f = 0; f < g->nf; f++) { /* lines 2-4 */
		g->m[f] = 0;
		for (uint32_t t = 0; t < g->nt; t++)
			if (g->dep[f][t] && g->in_r[t])
				g->m[f] += g->time_r[t];
	}
	for (uint32_t t = 0; t < g->nt; t++) { /* lines 5-8 */
		g->p[t] = 0;
		g->mplus[t] = INFINITY;
	}
	for (uint32_t f = 0; f < g->nf; f++) { /* lines 9-17 */
		uint32_t n = 0, last = 0;

		for (uint32_t t = 0; t < g->nt; t++)
			if (g->dep[f][t] && g->in_r[t]) {
				n++;
				last = t;
			}
		if (n == 1)
			g->p[last] += g->time_op[f];
		if (n > 1)
			for (uint32_t t = 0; t < g->nt; t++)
				if (g->dep[f][t] && g->in_r[t])
					g->mplus[t] =
					    fmin(g->mplus[t], g->m[f]);
	}
}

static int ref_precedes(const ref *g, uint32_t a, uint32_t b)
{
	double x = fmin(g->p[b], g->time_r[a]), y = fmin(g->p[a], g->time_r[b]);

	if (x != y)
		return x < y;
	return g->mplus[a] < g->mplus[b];
}

static void ref_tao(const ps_dag *d, uint32_t *prio)
{
	static ref g;

	ref_init(&g, d, 0);
	for (uint32_t count = 0; count < g.nt; count++) {
		uint32_t best = UINT32_MAX;

		ref_update(&g);
		for (uint32_t t = 0; t < g.nt; t++)
			if (g.in_r[t] &&
			    (best == UINT32_MAX || ref_precedes(&g, t, best)))
				best = t;
		prio[best] = count;
		g.in_r[best] = 0;
	}
}

static void ref_tio(const ps_dag *d, uint32_t *prio)
{
	static ref g;

	ref_init(&g, d, 1);
	ref_update(&g);
	/* dense numbers over distinct M+ */
	for (uint32_t t = 0; t < g.nt; t++) {
		uint32_t below = 0;

		for (uint32_t u = 0; u < g.nt; u++) {
			int smaller_distinct = g.mplus[u] < g.mplus[t];

			for (uint32_t w = 0; smaller_distinct && w < u; w++)
				if (g.mplus[w] == g.mplus[u])
					smaller_distinct = 0;
			below += smaller_distinct;
		}
		prio[t] = below;
	}
}

/*
 * Up to 31 forward ops, each depending on a few earlier ones; every tensor
 * read by one or two random ops; integer times >= 1 (so every P of an op
 * that runs is > 0 and every transfer takes >= 1 us).
 */
static model *random_model(void)
{
	model *m = model_new();
	uint32_t no = 2 + rnd(30), nt = 1 + rnd(no + 6 < 40 ? no + 6 : 40);
	char name[16], reads[512], deps[512];
	uint64_t rmask[MAX_O] = {0};

	for (uint32_t t = 0; t < nt; t++) {
		snprintf(name, sizeof(name), "t%u", t);
		add_tensor(m, name, 1 + rnd(100));
		rmask[rnd(no)] |= 1ull << t;
		if (rnd(4) == 0)
			rmask[rnd(no)] |= 1ull << t;
	}
	for (uint32_t i = 0; i < no; i++) {
		size_t len = 0;

		reads[0] = deps[0] = '\0';
		for (uint32_t t = 0; t < nt; t++)
			if (rmask[i] >> t & 1)
				len += (size_t)snprintf(reads + len,
				                        sizeof(reads) - len,
				                        "t%u ", t);
		len = 0;
		for (uint32_t j = 0; j < i; j++)
			if (rnd(i + 1) < 2 || (j + 1 == i && rnd(2)))
				len += (size_t)snprintf(
				    deps + len, sizeof(deps) - len, "o%u ", j);
		snprintf(name, sizeof(name), "o%u", i);
		add_op(m, name, 1 + rnd(20), reads, deps, 1 + rnd(20));
	}
	return m;
}

/* Every reader of a is a (strict) ancestor of every reader of b. */
static int before_all(const model *m, const uint64_t *anc, uint32_t a,
                      uint32_t b)
{
	for (uint32_t u = 0; u < m->no; u++)
		for (uint32_t k = 0; k < m->nreads[u]; k++) {
			if (m->reads[u][k] != a)
				continue;
			for (uint32_t v = 0; v < m->no; v++)
				for (uint32_t l = 0; l < m->nreads[v]; l++)
					if (m->reads[v][l] == b &&
					    !(anc[v] >> u & 1))
						return 0;
		}
	return 1;
}

static void test_random_dags(void **state)
{
	uint32_t prio[PS_ORDER_COUNT][MAX_T], want[MAX_T];
	uint64_t anc[MAX_O];
	int related = 0;

	(void)state;
	for (int iter = 0; iter < 200; iter++) {
		model *m = random_model();
		ps_dag *d = model_load(m);

		for (uint32_t i = 0; i < m->no; i++) {
			anc[i] = 0;
			for (uint32_t k = 0; k < m->ndeps[i]; k++)
				anc[i] |=
				    anc[m->deps[i][k]] | 1ull << m->deps[i][k];
		}
		for (int k = 0; k < PS_ORDER_COUNT; k++) {
			assert_int_equal(ps_order_compute(d, (ps_order_kind)k,
			                                  &UNIT, prio[k]),
			                 PS_OK);
			assert_dense(prio[k], d->ntensors);
		}
		ref_tao(d, want);
		assert_memory_equal(prio[PS_ORDER_TAO], want,
		                    d->ntensors * sizeof(*want));
		ref_tio(d, want);
		assert_memory_equal(prio[PS_ORDER_TIO], want,
		                    d->ntensors * sizeof(*want));
		for (uint32_t a = 0; a < m->nt; a++)
			for (uint32_t b = 0; b < m->nt; b++) {
				if (a == b || !before_all(m, anc, a, b))
					continue;
				related++;
				assert_true(prio[PS_ORDER_TIO][a] <=
				            prio[PS_ORDER_TIO][b]);
				assert_true(prio[PS_ORDER_TAO][a] <=
				            prio[PS_ORDER_TAO][b]);
				assert_true(prio[PS_ORDER_LAYER][a] <=
				            prio[PS_ORDER_LAYER][b]);
				assert_true(prio[PS_ORDER_TAIL][a] <=
				            prio[PS_ORDER_TAIL][b]);
			}
		ps_dag_free(&d);
		free(m);
	}
	/* the property was exercised */
	assert_true(related > 200);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_figure2),
	    cmocka_unit_test(test_tao_case1),
	    cmocka_unit_test(test_tao_case2),
	    cmocka_unit_test(test_tio_partial_order),
	    cmocka_unit_test(test_layer_tail_chain),
	    cmocka_unit_test(test_layer_tail_branchy),
	    cmocka_unit_test(test_normalise),
	    cmocka_unit_test(test_invalid),
	    cmocka_unit_test(test_shipped_models),
	    cmocka_unit_test(test_random_dags),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
