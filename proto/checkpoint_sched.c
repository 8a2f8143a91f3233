/*
 * proto/checkpoint_sched.c - the scheduler's side of checkpoints
 * (checkpoint_sched.h).
 */
#include <stdlib.h>
#include <string.h>

#include "ordo/error.h"
#include "proto/checkpoint_sched.h"
#include "proto/stop.h"

int ps_ckpt_sched_init(ps_ckpt_sched *c, uint32_t servers)
{
	int rc;

	memset(c, 0, sizeof(*c));
	rc = ps_ckpt_rounds_init(&c->rounds, servers);
	if (rc != PS_OK)
		return rc;
	c->servers = servers;
	c->flush_wait = calloc(servers, sizeof(*c->flush_wait));
	return c->flush_wait ? PS_OK : PS_ENOMEM;
}

void ps_ckpt_sched_free(ps_ckpt_sched *c)
{
	free(c->flush_wait);
	c->flush_wait = NULL;
}

uint64_t ps_ckpt_sched_ask(ps_ckpt_sched *c, uint64_t highest, uint64_t late)
{
	c->asked = ps_stop_ask(highest, late, &c->margin);
	return c->asked;
}

int ps_ckpt_sched_on_late(const ps_ckpt_sched *c, uint64_t it)
{
	return c->asked && it >= c->asked && !c->flushing;
}

int ps_ckpt_sched_on_done(ps_ckpt_sched *c, uint32_t rank, uint64_t it,
			  int ok, ps_ckpt_done *d)
{
	int opened;
	ps_ckpt_round *k;

	memset(d, 0, sizeof(*d));
	if (it == 0)
		return PS_EINVAL;
	k = ps_ckpt_round_of(&c->rounds, it, &opened, &d->abandoned);
	d->round = k;
	/* (a checkpoint asked for went to every server already) */
	d->ask_empty = opened && it != c->asked;
	d->answer = ps_ckpt_round_answer(&c->rounds, k, rank, ok);
	if (d->answer == PS_CKPT_ANSWER_REPEATED ||
	    d->answer == PS_CKPT_ANSWER_BAD_RANK)
		return PS_OK;
	if (it == c->asked && (k->failed || k->written))
		c->asked = 0; /* the request was taken up */
	d->manifest = d->answer == PS_CKPT_ANSWER_COMPLETE && !k->failed;
	return PS_OK;
}

void ps_ckpt_sched_flush(ps_ckpt_sched *c)
{
	c->flushing = 1;
	for (uint32_t r = 0; r < c->servers; r++)
		c->flush_wait[r]++;
}

void ps_ckpt_sched_reflush(ps_ckpt_sched *c, uint32_t rank)
{
	if (rank < c->servers)
		c->flush_wait[rank]++;
}

int ps_ckpt_sched_on_flushed(ps_ckpt_sched *c, uint32_t rank)
{
	if (rank >= c->servers || c->flush_wait[rank] == 0)
		return PS_EPROTO;
	c->flush_wait[rank]--;
	for (uint32_t r = 0; r < c->servers; r++)
		if (c->flush_wait[r] > 0)
			return 0;
	return 1;
}
