/*
 * tests/sim/random_dag.c - random models for the simulator's property
 * tests (tests/sim/random_dag.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/random_dag.h"

void sb_add(sb *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if ((size_t)n < b->cap - b->len)
			break;
		b->cap = 2 * b->cap + (size_t)n + 64;
		b->p = realloc(b->p, b->cap);
		if (!b->p) {
			fprintf(stderr, "out of memory\n");
			abort();
		}
	}
	b->len += (size_t)n;
}

static uint64_t rng_state;

void test_rnd_seed(uint64_t seed)
{
	rng_state = seed;
}

uint32_t test_rnd(uint32_t n)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng_state >> 33) % n;
}

/* The names PREFIX<t>, as JSON strings, of the t < n with of[t] == want,
 * and where also_one_in, of one in that many of the others. */
static void name_list(sb *b, char prefix, uint32_t n, const uint32_t *of,
		      uint32_t want, uint32_t also_one_in)
{
	int first = 1;

	for (uint32_t t = 0; t < n; t++)
		if (of[t] == want ||
		    (also_one_in && test_rnd(also_one_in) == 0)) {
			sb_add(b, "%s\"%c%u\"", first ? "" : ",", prefix, t);
			first = 0;
		}
}

char *random_dag_json(const random_dag_shape *shape, uint32_t *ntensors_p)
{
	uint32_t F = 2 + test_rnd(shape->forward), B = 1 + test_rnd(F);
	uint32_t T = 1 + test_rnd(shape->tensors);
	uint32_t reader[RANDOM_DAG_MAX_TENSORS], grad[RANDOM_DAG_MAX_TENSORS];
	sb b = {0};

	if (T > RANDOM_DAG_MAX_TENSORS)
		T = RANDOM_DAG_MAX_TENSORS;
	sb_add(&b, "{\"format\":\"ordo-model\",\"version\":1,\"name\":"
		   "\"random\",\"batch\":8,\"times\":{\"source\":"
		   "\"measured\"},\"tensors\":[");
	for (uint32_t t = 0; t < T; t++) {
		reader[t] = test_rnd(F);
		grad[t] = test_rnd(B);
		sb_add(&b, "%s{\"name\":\"t%u\",\"shape\":[%u]}", t ? "," : "",
		       t,
		       1 + (!shape->mixed || test_rnd(3) ? test_rnd(400000)
							 : test_rnd(300)));
	}
	sb_add(&b, "],\"ops\":[");
	for (uint32_t i = 0; i < F; i++) {
		int first = 1;
		sb_add(&b, "{\"name\":\"f%u\",\"kind\":\"forward\","
			   "\"time_us\":%u,\"reads\":[",
		       i, test_rnd(3000));
		name_list(&b, 't', T, reader, i, 5);
		sb_add(&b, "],\"deps\":[");
		for (uint32_t j = 0; j < i; j++)
			if (test_rnd(3) == 0) {
				sb_add(&b, "%s\"f%u\"", first ? "" : ",", j);
				first = 0;
			}
		sb_add(&b, "]},");
	}
	for (uint32_t i = 0; i < B; i++) {
		int first = 1;
		sb_add(&b, "{\"name\":\"b%u\",\"kind\":\"backward\","
			   "\"time_us\":%u,\"grads\":[",
		       i, test_rnd(3000));
		name_list(&b, 't', T, grad, i, 0);
		sb_add(&b, "],\"deps\":[");
		if (i == 0)
			for (uint32_t j = 0; j < F; j++) {
				sb_add(&b, "%s\"f%u\"", first ? "" : ",", j);
				first = 0;
			}
		else
			for (uint32_t j = 0; j < i; j++)
				if (j == i - 1 || test_rnd(3) == 0) {
					sb_add(&b, "%s\"b%u\"", first ? "" : ",",
					       j);
					first = 0;
				}
		sb_add(&b, "]}%s", i + 1 < B ? "," : "");
	}
	sb_add(&b, "]}");
	if (ntensors_p)
		*ntensors_p = T;
	return b.p;
}
