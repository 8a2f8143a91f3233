/*
 * proto/checkpoint_take.c - a server's side of checkpoints
 * (checkpoint_take.h).
 */
#include <stdlib.h>
#include <string.h>

#include "ordo/error.h"
#include "proto/checkpoint_take.h"

int ps_ckpt_take_init(ps_ckpt_take *t, const ps_sproto *sh, uint32_t workers,
		      int async, uint64_t every)
{
	memset(t, 0, sizeof(*t));
	t->sh = sh;
	t->nparts = ps_sproto_nparts(sh);
	t->workers = workers;
	t->async = async;
	t->every = every;
	t->taken = calloc(t->nparts + 1, 1);
	return t->taken ? PS_OK : PS_ENOMEM;
}

void ps_ckpt_take_free(ps_ckpt_take *t)
{
	free(t->taken);
	t->taken = NULL;
}

void ps_ckpt_take_resumed(ps_ckpt_take *t, uint64_t it)
{
	if (it > t->last)
		t->last = it;
}

int ps_ckpt_take_is_at(const ps_ckpt_take *t, uint32_t k, uint64_t it)
{
	const ps_sproto_part *p = ps_sproto_part_at(t->sh, k);

	if (!t->async)
		return p->version == it;
	for (uint32_t w = 0; w < t->workers; w++)
		if (p->next_it[w] != it)
			return 0;
	return 1;
}

uint64_t ps_ckpt_take_highest(const ps_ckpt_take *t, uint32_t k)
{
	const ps_sproto_part *p = ps_sproto_part_at(t->sh, k);
	uint64_t h = t->async ? 0 : p->version;

	for (uint32_t w = 0; t->async && w < t->workers; w++)
		if (p->next_it[w] > h)
			h = p->next_it[w];
	return h;
}

uint64_t ps_ckpt_take_top(const ps_ckpt_take *t)
{
	uint64_t top = 0;

	for (uint32_t k = 0; k < t->nparts; k++)
		if (ps_ckpt_take_highest(t, k) > top)
			top = ps_ckpt_take_highest(t, k);
	return top;
}

static void collect(ps_ckpt_take *t, uint64_t it, int requested)
{
	memset(t->taken, 0, t->nparts);
	t->collect = it;
	t->requested = requested;
	t->missing = t->nparts;
	/* a server that holds nothing has its (empty) shard at once */
	t->ready = t->nparts == 0;
	if (it > t->last)
		t->last = it;
}

ps_ckpt_step ps_ckpt_take_due(ps_ckpt_take *t, uint64_t it)
{
	if (t->every == 0 || it % t->every != 0 || it <= t->last)
		return PS_CKPT_NOTHING;
	if (t->collect && !t->ready) {
		/* one asked for, or async workers further apart than every:
		 * one at a time */
		t->last = it;
		return PS_CKPT_SKIPPED;
	}
	if (t->collect)
		return PS_CKPT_WAIT_WRITE; /* one written, the next complete */
	collect(t, it, 0);
	return PS_CKPT_COLLECT;
}

ps_ckpt_step ps_ckpt_take_request(ps_ckpt_take *t, uint64_t it, uint64_t *top)
{
	*top = ps_ckpt_take_top(t);
	if (t->collect && t->collect == it) {
		t->requested = 1;
		return PS_CKPT_JOINED;
	}
	if (*top > it)
		return PS_CKPT_LATE;
	if (t->collect && t->ready)
		/* one written, the next complete: wait for the disk rather
		 * than refuse a checkpoint asked for (a job's last) */
		return PS_CKPT_WAIT_WRITE;
	/* a periodic one, or an older request, gives way */
	collect(t, it, 1);
	return PS_CKPT_COLLECT;
}

int ps_ckpt_take_wants(const ps_ckpt_take *t, uint32_t k)
{
	return t->collect && !t->ready && k < t->nparts && !t->taken[k] &&
	       (ps_ckpt_take_is_at(t, k, t->collect) ||
		t->fault == PS_CKPT_TAKE_FAULT_ANY_VERSION);
}

void ps_ckpt_take_took(ps_ckpt_take *t, uint32_t k)
{
	if (!t->collect || t->ready || k >= t->nparts || t->taken[k])
		return;
	t->taken[k] = 1;
	if (--t->missing == 0)
		t->ready = 1;
}

int ps_ckpt_take_can_write(const ps_ckpt_take *t)
{
	return t->collect && t->ready && !t->writing;
}

uint64_t ps_ckpt_take_write(ps_ckpt_take *t)
{
	t->writing = t->collect;
	t->collect = 0;
	t->ready = 0;
	t->requested = 0;
	return t->writing;
}

void ps_ckpt_take_written(ps_ckpt_take *t)
{
	t->writing = 0;
}

int ps_ckpt_take_drop(ps_ckpt_take *t)
{
	int tell = t->collect && t->requested;

	t->collect = 0;
	t->ready = 0;
	t->requested = 0;
	return tell;
}

int ps_ckpt_take_holds(const ps_ckpt_take *t, uint32_t k, uint64_t iteration)
{
	return t->collect && !t->ready && k < t->nparts && !t->taken[k] &&
	       iteration >= t->collect;
}
