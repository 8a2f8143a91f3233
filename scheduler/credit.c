/*
 * scheduler/credit.c - the credit window changed while the job runs:
 * every sender takes the new window from an iteration boundary the
 * scheduler picks (CREDIT). The change is the tuner's (its CREDIT) or,
 * without a tuner, the refinement's from measured iterations
 * (scheduling.credit_refine, proto/credit_refine.h), which this file
 * drives as the workers progress.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common/log.h"
#include "runtime/clock.h"
#include "runtime/node.h"
#include "proto/membership.h"
#include "proto/wire.h"
#include "proto/credit_refine.h"
#include "transport/transport.h"
#include "scheduler/state.h"

/* Every sender takes window `credit` from the iteration after the
 * furthest worker's (a boundary none has pushed yet, or one it is just
 * reaching: the change is never applied mid-way); returns that
 * iteration. Servers whose sends have no window (an auto params credit:
 * sim/auto_sizes.h) keep none: only the workers' pushes change. */
static uint64_t set_credit(coord *c, uint64_t credit)
{
	uint64_t from = 0;
	uint32_t n = 1 + c->servers + c->workers;
	uint32_t first = c->cfg->scheduling.params.credit_size
			     ? 1
			     : 1 + c->servers;

	for (uint32_t r = 0; r < c->workers; r++)
		if (c->members[1 + c->servers + r].progress > from)
			from = c->members[1 + c->servers + r].progress;
	from++;
	for (uint32_t i = first; i < n; i++) {
		void *body;
		size_t len;
		if (!ps_membership_reachable(c->ms, i) ||
		    ps_wire_u64_encode(credit, &body, &len) != PS_OK)
			continue;
		(void)psi_sched_send_owned(
		    c, c->members[i].peer,
		    (ps_wire_header){.type = PS_MSG_CREDIT, .iteration = from},
		    body, len);
	}
	return from;
}

/* CREDIT from the tuner, which from then on drives the credit alone. */
void psi_sched_change_credit(coord *c, const ps_msg *msg)
{
	uint64_t credit, from;
	char why[256];

	if (ps_wire_u64_decode(msg->payload, msg->payload_len, &credit, why,
			       sizeof(why)) != PS_OK) {
		psi_note_drop(++c->dropped, "CREDIT", why);
		return;
	}
	if (credit == 0 || !c->cfg->scheduling.push.credit_size ||
	    !c->cfg->scheduling.params.credit_size ||
	    credit < c->cfg->scheduling.partition_size) {
		PS_WARN("tuner: credit %llu refused: a live change needs a "
			"window before in both directions "
			"(scheduling.push_credit_size and params_credit_size) "
			"and after, at least scheduling.partition_size",
			(unsigned long long)credit);
		return;
	}
	c->refining = 0;
	from = set_credit(c, credit);
	PS_INFO("tuner: credit window %llu bytes from iteration %llu",
		(unsigned long long)credit, (unsigned long long)from);
	psi_sched_send_tuner(c, PS_MSG_CREDIT, from);
}

/* Whether the credit is refined during this job: chosen at the start, a
 * window for the pushes and the same or none for the parameters,
 * synchronous, long enough, no tuner. */
void psi_sched_start_refining(coord *c)
{
	const ps_config *cfg = c->cfg;
	uint64_t credit = cfg->scheduling.push.credit_size, cap;

	if (!cfg->scheduling.credit_refine || !c->credit_chosen ||
	    cfg->tune.endpoint[0] || /* ps-tune drives the credit */
	    credit == 0 ||
	    (cfg->scheduling.params.credit_size != credit &&
	     cfg->scheduling.params.credit_size != 0) ||
	    cfg->train.mode != PS_MODE_SYNC ||
	    (uint64_t)cfg->train.iterations <= c->start_iteration)
		return;
	cap = psi_sched_model_bytes(c);
	c->refining = ps_refine_init(
	    &c->refine, credit, cfg->scheduling.partition_size,
	    cap > credit ? cap : credit,
	    (uint64_t)cfg->train.iterations - c->start_iteration);
	c->refine_floor = c->start_iteration;
}

/* Every worker began iteration `floor`: the refinement's step. */
void psi_sched_refine_step(coord *c, uint64_t floor)
{
	uint64_t credit, from;
	int changed;
	char size[32], line[512];
	ps_refine_action a;

	a = ps_refine_on_iteration(&c->refine, floor - c->start_iteration,
				   (double)ps_now_ns() * 1e-3, &credit,
				   &changed);
	if (a == PS_REFINE_NOTHING)
		return;
	from = changed ? set_credit(c, credit) : floor;
	ps_config_format_size(credit, size, sizeof(size));
	if (a == PS_REFINE_APPLY) {
		ps_refine_applied(&c->refine, from - c->start_iteration);
		printf("scheduling: credit refinement: trying %s from "
		       "iteration %llu\n",
		       size, (unsigned long long)from);
	} else {
		c->refining = 0;
		ps_refine_describe(&c->refine, line, sizeof(line));
		printf("scheduling: credit refined from measured iterations: "
		       "%s (from iteration %llu)\n",
		       line, (unsigned long long)from);
	}
	fflush(stdout);
}
