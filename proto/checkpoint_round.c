/*
 * proto/checkpoint_round.c - the servers' answers to each checkpoint
 * (checkpoint_round.h).
 */
#include <string.h>

#include "ordo/error.h"
#include "proto/checkpoint_round.h"

int ps_ckpt_rounds_init(ps_ckpt_rounds *t, uint32_t servers)
{
	memset(t, 0, sizeof(*t));
	if (servers == 0 || servers > PS_CKPT_ROUND_MAX_SERVERS)
		return PS_EINVAL;
	t->servers = servers;
	return PS_OK;
}

/* Whether round a should give its place before round b: free first, then
 * closed, then open; within a state, the older. */
static int sooner(const ps_ckpt_round *a, const ps_ckpt_round *b)
{
	static const int rank[] = {[PS_CKPT_ROUND_FREE] = 0,
				   [PS_CKPT_ROUND_CLOSED] = 1,
				   [PS_CKPT_ROUND_OPEN] = 2};

	if (rank[a->state] != rank[b->state])
		return rank[a->state] < rank[b->state];
	return a->opened < b->opened;
}

ps_ckpt_round *ps_ckpt_round_of(ps_ckpt_rounds *t, uint64_t iteration,
				int *opened_p, uint64_t *abandoned_p)
{
	ps_ckpt_round *place = &t->round[0];

	*opened_p = 0;
	*abandoned_p = 0;
	if (iteration == 0)
		return NULL;
	for (int i = 0; i < PS_CKPT_ROUNDS; i++) {
		ps_ckpt_round *k = &t->round[i];

		if (k->state != PS_CKPT_ROUND_FREE && k->iteration == iteration)
			return k;
		if (sooner(k, place))
			place = k;
	}
	if (place->state == PS_CKPT_ROUND_OPEN)
		*abandoned_p = place->iteration;
	memset(place, 0, sizeof(*place));
	place->iteration = iteration;
	place->state = PS_CKPT_ROUND_OPEN;
	place->opened = ++t->opened;
	*opened_p = 1;
	return place;
}

ps_ckpt_answer ps_ckpt_round_answer(ps_ckpt_rounds *t, ps_ckpt_round *k,
				    uint32_t rank, int ok)
{
	uint64_t bit;

	if (rank >= t->servers)
		return PS_CKPT_ANSWER_BAD_RANK;
	bit = (uint64_t)1 << (rank % 64);
	if (k->state != PS_CKPT_ROUND_OPEN ||
	    ((k->answered[rank / 64] & bit) &&
	     t->fault != PS_CKPT_ROUND_FAULT_PER_MESSAGE))
		return PS_CKPT_ANSWER_REPEATED;
	k->answered[rank / 64] |= bit;
	k->answers++;
	if (ok)
		k->written++;
	else
		k->failed = 1;
	if (k->answers < t->servers)
		return PS_CKPT_ANSWER_COUNTED;
	k->state = PS_CKPT_ROUND_CLOSED;
	return PS_CKPT_ANSWER_COMPLETE;
}
