/*
 * proto/stop.c - a job's stop at an iteration every worker agrees on: the
 * worker's and the scheduler's machines (proto/stop.h).
 */
#include "proto/stop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ordo/error.h"

uint64_t ps_stop_ask(uint64_t highest, uint64_t late, uint64_t *margin)
{
	uint64_t from = highest > late ? highest : late;

	*margin = late ? *margin * 2 : 2;
	if (*margin > PS_STOP_MARGIN_MAX || from > UINT64_MAX - *margin - 1) {
		*margin = 0;
		return 0;
	}
	return from + *margin;
}

/* ---- a worker ----------------------------------------------------------- */

int ps_stop_worker_on_stop(ps_stop_worker *s, uint64_t v, uint64_t *late,
			   char *why, size_t whylen)
{
	if (v == 0) {
		snprintf(why, whylen, "STOP before iteration 0");
		return PS_EPROTO;
	}
	if (s->now)
		return PS_OK; /* ending already: an older ask's */
	if (s->begun > v) {
		*late = s->begun;
		return 1;
	}
	if (v > s->target) { /* (a first stop: target is 0) */
		s->target = v;
		s->ready_sent = 0;
	}
	return PS_OK;
}

int ps_stop_worker_on_now(ps_stop_worker *s, uint64_t v, char *why,
			  size_t whylen)
{
	if (!s->target || v != s->target || !s->ready_sent) {
		snprintf(why, whylen, "STOP_NOW before iteration %llu, but "
			 "this worker %s", (unsigned long long)v,
			 !s->target ? "was asked for no stop"
			 : v != s->target ? "is to stop before another"
					  : "has not reached its stop");
		return PS_EPROTO;
	}
	s->now = 1;
	return PS_OK;
}

ps_stop_next ps_stop_worker_next(ps_stop_worker *s, uint64_t it,
				 int *send_ready)
{
	*send_ready = 0;
	if (s->target && it >= s->target) {
		if (s->now || s->fault == PS_STOP_FAULT_ALONE)
			return PS_STOP_END;
		if (!s->ready_sent) {
			s->ready_sent = 1;
			*send_ready = 1;
		}
		return PS_STOP_WAIT;
	}
	if (it + 1 > s->begun)
		s->begun = it + 1;
	return PS_STOP_RUN;
}

/* ---- the scheduler ------------------------------------------------------ */

int ps_stop_round_init(ps_stop_round *r, uint32_t workers)
{
	memset(r, 0, sizeof(*r));
	if (workers == 0)
		return PS_EINVAL;
	r->ready = calloc(workers, 1);
	if (!r->ready)
		return PS_ENOMEM;
	r->workers = workers;
	return PS_OK;
}

void ps_stop_round_free(ps_stop_round *r)
{
	free(r->ready);
	r->ready = NULL;
}

void ps_stop_round_start(ps_stop_round *r, uint64_t v)
{
	r->target = v;
	r->nready = 0;
	r->ended = 0;
	memset(r->ready, 0, r->workers);
}

void ps_stop_round_cancel(ps_stop_round *r)
{
	ps_stop_round_start(r, 0);
}

int ps_stop_round_on_ready(ps_stop_round *r, uint32_t rank, uint64_t v,
			   char *why, size_t whylen)
{
	if (rank >= r->workers) {
		snprintf(why, whylen, "STOP_READY from worker %u of %u", rank,
			 r->workers);
		return PS_EPROTO;
	}
	if (!r->target || v != r->target || r->ended || r->ready[rank])
		return 0; /* an older or called-off stop's, or said again */
	r->ready[rank] = 1;
	if (++r->nready < r->workers)
		return 0;
	r->ended = 1;
	return 1;
}

int ps_stop_round_on_late(const ps_stop_round *r, uint64_t late)
{
	return r->target && !r->ended && late > r->target;
}
