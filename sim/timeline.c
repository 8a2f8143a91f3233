/*
 * sim/timeline.c - the simulated timeline (timeline.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/timeline.h"

typedef ps_trace_event tl_event;

typedef struct tl_node {
	tl_event *v;
	size_t n, cap;
} tl_node;

struct ps_sim_timeline {
	uint32_t servers, workers;
	tl_node *nodes; /* 1 + servers + workers; [0] unused */
	uint64_t dropped;
};

int ps_sim_timeline_create(uint32_t servers, uint32_t workers,
			   ps_sim_timeline **tl_p)
{
	ps_sim_timeline *tl = calloc(1, sizeof(*tl));

	if (!tl)
		return PS_ENOMEM;
	tl->servers = servers;
	tl->workers = workers;
	tl->nodes = calloc(1 + (size_t)servers + workers, sizeof(*tl->nodes));
	if (!tl->nodes) {
		free(tl);
		return PS_ENOMEM;
	}
	*tl_p = tl;
	return PS_OK;
}

void ps_sim_timeline_free(ps_sim_timeline **tl_p)
{
	ps_sim_timeline *tl = *tl_p;

	if (!tl)
		return;
	for (size_t i = 0; i < 1 + (size_t)tl->servers + tl->workers; i++)
		free(tl->nodes[i].v);
	free(tl->nodes);
	free(tl);
	*tl_p = NULL;
}

static uint64_t us(double t)
{
	return t > 0 ? (uint64_t)llround(t) : 0;
}

static void record(ps_sim_timeline *tl, uint32_t node, char ph,
		   ps_trace_lane lane, const char *name, double ts, double dur,
		   const ps_trace_args *a)
{
	tl_node *n;
	tl_event *e;

	if (!tl || node == 0 || node > tl->servers + tl->workers)
		return;
	n = &tl->nodes[node];
	if (n->n == n->cap) {
		size_t cap = n->cap ? 2 * n->cap : 256;
		tl_event *v = realloc(n->v, cap * sizeof(*v));
		if (!v) {
			tl->dropped++;
			return;
		}
		n->v = v;
		n->cap = cap;
	}
	e = &n->v[n->n++];
	e->ph = ph;
	e->lane = (uint8_t)lane;
	ps_trace_set_name(e->name, sizeof(e->name), name);
	/* as real runs: the end rounded, the duration what is left */
	e->ts_us = us(ts);
	e->dur_us = ph == 'X' ? us(ts + dur) - e->ts_us : 0;
	e->args = a ? *a : PS_TRACE_NO_ARGS;
}

void ps_sim_timeline_span(ps_sim_timeline *tl, uint32_t node,
			  ps_trace_lane lane, const char *name, double start_us,
			  double dur_us, const ps_trace_args *a)
{
	record(tl, node, 'X', lane, name, start_us, dur_us, a);
}

void ps_sim_timeline_instant(ps_sim_timeline *tl, uint32_t node,
			     ps_trace_lane lane, const char *name, double ts_us,
			     const ps_trace_args *a)
{
	record(tl, node, 'i', lane, name, ts_us, 0.0, a);
}

int ps_sim_timeline_write(ps_sim_timeline *tl, const char *path, char *why,
			  size_t whylen)
{
	FILE *f = fopen(path, "w");
	int first = 1;

	if (!f) {
		snprintf(why, whylen, "cannot write the timeline %s: %s", path,
			 strerror(errno));
		return PS_EIO;
	}
	fputc('[', f);
	for (uint32_t node = 1; node <= tl->servers + tl->workers; node++) {
		const tl_node *n = &tl->nodes[node];
		char pname[64];

		if (!n->n)
			continue;
		if (node <= tl->servers)
			snprintf(pname, sizeof(pname), "server %u", node - 1);
		else
			snprintf(pname, sizeof(pname), "worker %u",
				 node - 1 - tl->servers);
		ps_trace_write_process(f, node, pname, n->v, n->n, first);
		first = 0;
	}
	fputs("]\n", f);
	if (fclose(f) != 0) {
		snprintf(why, whylen, "cannot write the timeline %s", path);
		return PS_EIO;
	}
	if (tl->dropped) {
		snprintf(why, whylen, "timeline %s: %llu events dropped (out "
			 "of memory)", path, (unsigned long long)tl->dropped);
		return PS_EIO;
	}
	return PS_OK;
}
