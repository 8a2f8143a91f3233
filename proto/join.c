/*
 * proto/join.c - a node joining a job (join.h).
 */
#include <stdlib.h>

#include "ordo/error.h"
#include "proto/join.h"

struct ps_join {
	uint32_t max;
	uint64_t max_bytes;
	uint64_t bytes, dropped_bytes;
	int fault;
	int member;
	void **early; /* allocated at the first kept message */
	uint32_t n, next;
	uint32_t kept, dropped;
};

int ps_join_create(uint32_t max_early, uint64_t max_bytes, int fault,
		   ps_join **j_p)
{
	ps_join *j = calloc(1, sizeof(*j));

	*j_p = j;
	if (!j)
		return PS_ENOMEM;
	j->max = max_early;
	j->max_bytes = max_bytes;
	j->fault = fault;
	return PS_OK;
}

void ps_join_destroy(ps_join **j_p, void (*drop)(void *msg, void *ud),
		     void *ud)
{
	ps_join *j = *j_p;

	if (!j)
		return;
	for (uint32_t i = j->next; i < j->n; i++)
		if (drop)
			drop(j->early[i], ud);
	free(j->early);
	free(j);
	*j_p = NULL;
}

ps_join_verdict ps_join_on_message(ps_join *j, int from_scheduler,
				   int welcome_or_abort, void *msg,
				   uint64_t bytes)
{
	if (j->member)
		return PS_JOIN_DELIVER;
	if (from_scheduler)
		return welcome_or_abort ? PS_JOIN_WELCOME : PS_JOIN_DROP;
	if (j->fault == PS_JOIN_FAULT_DROP_EARLY || j->n == j->max ||
	    bytes > j->max_bytes - j->bytes)
		goto drop;
	if (!j->early) {
		j->early = calloc(j->max, sizeof(*j->early));
		if (!j->early)
			goto drop;
	}
	j->early[j->n++] = msg;
	j->kept++;
	j->bytes += bytes;
	return PS_JOIN_KEPT;
drop:
	j->dropped++;
	j->dropped_bytes += bytes;
	return PS_JOIN_DROP;
}

void ps_join_welcomed(ps_join *j)
{
	j->member = 1;
}

int ps_join_member(const ps_join *j)
{
	return j->member;
}

int ps_join_next_early(ps_join *j, void **msg_p)
{
	if (!j->member || j->next == j->n)
		return 0;
	*msg_p = j->early[j->next];
	j->early[j->next++] = NULL;
	return 1;
}

uint32_t ps_join_kept(const ps_join *j)
{
	return j->kept;
}

uint32_t ps_join_dropped(const ps_join *j)
{
	return j->dropped;
}

uint64_t ps_join_kept_bytes(const ps_join *j)
{
	return j->bytes;
}

uint64_t ps_join_dropped_bytes(const ps_join *j)
{
	return j->dropped_bytes;
}
