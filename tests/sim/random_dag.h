/*
 * tests/sim/random_dag.h - random models for the simulator's property
 * tests (test_sim, test_sim_fair), the generator they are drawn with, and
 * the string builder they are written with.
 */
#ifndef ORDO_TESTS_SIM_RANDOM_DAG_H
#define ORDO_TESTS_SIM_RANDOM_DAG_H

#include <stddef.h>
#include <stdint.h>

/* A growing string; sb_add appends printf-style (aborts the test on
 * ENOMEM). Free p. */
typedef struct sb {
	char *p;
	size_t len, cap;
} sb;

void sb_add(sb *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* One generator for every draw of a test: seeded, then 0..n-1. */
void test_rnd_seed(uint64_t seed);
uint32_t test_rnd(uint32_t n);

#define RANDOM_DAG_MAX_TENSORS 64

/* How large a random model is drawn: 2 + rnd(forward) forward ops,
 * 1 + rnd(tensors) tensors (at most RANDOM_DAG_MAX_TENSORS); mixed: a
 * third of the tensors small (under 300 elements), to mix message
 * sizes; else all up to 400000 elements. */
typedef struct random_dag_shape {
	uint32_t forward, tensors;
	int mixed;
} random_dag_shape;

/*
 * A random model (docs/model-format.md): F forward ops in a random DAG,
 * then B (1..F) backward ops in a chain with random extra edges, T
 * tensors of random sizes, each read by one forward op (and some others)
 * and given its gradient by one backward op. Returns the JSON (free it);
 * *ntensors_p = T where not NULL.
 */
char *random_dag_json(const random_dag_shape *shape, uint32_t *ntensors_p);

#endif /* ORDO_TESTS_SIM_RANDOM_DAG_H */
