/*
 * proto/engine.c - a worker's compute engine (engine.h).
 */
#include <stdlib.h>

#include "ordo/error.h"
#include "proto/engine.h"

struct ps_engine {
	const ps_dag *dag;
	ps_engine_have_fn *have;
	void *ud;
	uint64_t it;
	uint32_t *pending; /* per op: unfinished dependencies */
	uint32_t *ready;   /* ops whose dependencies are done, any order */
	uint32_t nready, done;
};

int ps_engine_create(const ps_dag *dag, ps_engine_have_fn *have, void *ud,
		     ps_engine **e_p)
{
	ps_engine *e = calloc(1, sizeof(*e));

	*e_p = NULL;
	if (!e)
		return PS_ENOMEM;
	e->dag = dag;
	e->have = have;
	e->ud = ud;
	e->pending = calloc(dag->nops ? dag->nops : 1, sizeof(uint32_t));
	e->ready = calloc(dag->nops ? dag->nops : 1, sizeof(uint32_t));
	if (!e->pending || !e->ready) {
		ps_engine_destroy(&e);
		return PS_ENOMEM;
	}
	*e_p = e;
	return PS_OK;
}

void ps_engine_destroy(ps_engine **e_p)
{
	ps_engine *e = *e_p;

	if (!e)
		return;
	free(e->pending);
	free(e->ready);
	free(e);
	*e_p = NULL;
}

void ps_engine_begin(ps_engine *e, uint64_t it)
{
	const ps_dag *d = e->dag;

	e->it = it;
	e->nready = 0;
	e->done = 0;
	for (uint32_t op = 0; op < d->nops; op++) {
		e->pending[op] = d->ops[op].ndeps;
		if (!d->ops[op].ndeps)
			e->ready[e->nready++] = op;
	}
}

/* Whether op can run now, in *can_p; PS_OK or the callback's error. */
static int can_run(const ps_engine *e, uint32_t op, int *can_p)
{
	const ps_dag_op *o = &e->dag->ops[op];

	*can_p = 1;
	if (o->kind != PS_OP_FORWARD)
		return PS_OK;
	for (uint32_t k = 0; k < o->ntensors && *can_p; k++) {
		int rc = e->have(e->ud, o->tensors[k], e->it, can_p);
		if (rc != PS_OK)
			return rc;
	}
	return PS_OK;
}

int ps_engine_next(ps_engine *e, ps_engine_action *what, uint32_t *op_p)
{
	uint32_t pos = 0;
	int found = 0;

	if (e->done == e->dag->nops) {
		*what = PS_ENGINE_DONE;
		return PS_OK;
	}
	/* the lowest-indexed ready op that can run */
	for (uint32_t i = 0; i < e->nready; i++) {
		int can, rc;
		if (found && e->ready[i] > e->ready[pos])
			continue;
		rc = can_run(e, e->ready[i], &can);
		if (rc != PS_OK)
			return rc;
		if (can) {
			pos = i;
			found = 1;
		}
	}
	if (!found) {
		*what = PS_ENGINE_WAIT;
		return PS_OK;
	}
	*what = PS_ENGINE_RUN;
	*op_p = e->ready[pos];
	e->ready[pos] = e->ready[--e->nready];
	return PS_OK;
}

void ps_engine_op_done(ps_engine *e, uint32_t op)
{
	const ps_dag_op *o = &e->dag->ops[op];

	for (uint32_t k = 0; k < o->nsuccs; k++)
		if (--e->pending[o->succs[k]] == 0)
			e->ready[e->nready++] = o->succs[k];
	e->done++;
}

uint64_t ps_engine_iteration(const ps_engine *e)
{
	return e->it;
}
