/*
 * sim/events.c - the event heap (events.h).
 */
#include <stdlib.h>

#include "sim/events.h"

static int before(const ps_sim_event *a, const ps_sim_event *b)
{
	if (a->t != b->t)
		return a->t < b->t;
	return a->seq < b->seq;
}

/* A 4-ary heap: half the levels of a binary one, and a node's children
 * in one or two cache lines; (t, seq) is unique, so the order is the
 * same. */
#define ARITY 4

int ps_sim_heap_push(ps_sim_heap *h, double t, uint32_t kind, uint32_t node,
		     uint64_t arg)
{
	size_t i;

	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 1024;
		ps_sim_event *v = realloc(h->v, cap * sizeof(*v));
		if (!v)
			return PS_ENOMEM;
		h->v = v;
		h->cap = cap;
	}
	i = h->n++;
	ps_sim_event e = {.t = t, .seq = h->next_seq++, .kind = kind,
			  .node = node, .arg = arg};
	while (i > 0) {
		size_t up = (i - 1) / ARITY;
		if (!before(&e, &h->v[up]))
			break;
		h->v[i] = h->v[up];
		i = up;
	}
	h->v[i] = e;
	return PS_OK;
}

int ps_sim_heap_pop(ps_sim_heap *h, ps_sim_event *e_p)
{
	ps_sim_event last;
	size_t i = 0;

	if (h->n == 0)
		return 0;
	*e_p = h->v[0];
	last = h->v[--h->n];
	for (;;) {
		size_t c = ARITY * i + 1, end = c + ARITY, best;
		if (c >= h->n)
			break;
		if (end > h->n)
			end = h->n;
		best = c;
		for (size_t k = c + 1; k < end; k++)
			if (before(&h->v[k], &h->v[best]))
				best = k;
		if (!before(&h->v[best], &last))
			break;
		h->v[i] = h->v[best];
		i = best;
	}
	if (h->n)
		h->v[i] = last;
	return 1;
}

void ps_sim_heap_free(ps_sim_heap *h)
{
	free(h->v);
	*h = PS_SIM_HEAP_INIT;
}
