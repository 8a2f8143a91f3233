/*
 * scheduler/tuner.c - the link to a tuner (ps-tune at tune.endpoint;
 * docs/tune.md): the scheduler connects and sends a TUNE_HELLO with a
 * nonce, the tuner attaches with one that carries it back, then hears
 * PROGRESS and the iterations its changes take effect at, and sends
 * CREDIT (scheduler/credit.c) or STOP (a checkpoint the job stops at,
 * scheduler/checkpoints.c).
 */
#include <stdio.h>
#include <stdlib.h>

#include "common/log.h"
#include "runtime/node.h"
#include "proto/wire.h"
#include "transport/transport.h"
#include "scheduler/state.h"

void psi_sched_send_tuner(coord *c, uint32_t type, uint64_t iteration)
{
	if (c->tuner.state != 2)
		return;
	if (psi_sched_send_iteration(c, c->tuner.peer, type, iteration) !=
	    PS_OK) {
		PS_WARN("the tuner at %s is gone: the job goes on without it",
			c->cfg->tune.endpoint);
		c->tuner.state = 0;
	}
}

/* tune.endpoint: connect to the tuner and say where we listen; it
 * attaches with a TUNE_HELLO of its own, which must carry back the nonce
 * this one carries (its iteration): only the process at tune.endpoint
 * has seen it, so no member of the job (which knows the job id) and no
 * stranger can attach as the tuner and change the credit or stop the
 * job. */
int psi_sched_tuner_connect(coord *c)
{
	const char *ep = c->cfg->tune.endpoint;
	void *body;
	size_t len;
	int rc;

	if (!ep[0])
		return PS_OK;
	c->tuner.nonce = ps_random_id();
	rc = ps_transport_connect(c->t, ep, &c->tuner.peer);
	if (rc == PS_OK)
		rc = ps_wire_reason_encode(c->self.endpoint, &body, &len);
	if (rc == PS_OK)
		rc = psi_sched_send_owned(
		    c, c->tuner.peer,
		    (ps_wire_header){.type = PS_MSG_TUNE_HELLO,
				     .iteration = c->tuner.nonce},
		    body, len);
	if (rc != PS_OK) {
		char why[PS_CFG_STR + 128];
		snprintf(why, sizeof(why), "cannot reach the tuner at "
			 "tune.endpoint = %s: %s", ep, ps_strerror(rc));
		psi_sched_abort_job(c, why);
		return PS_EABORTED;
	}
	c->tuner.state = 1;
	return PS_OK;
}

/* A message that is not from a node: the tuner's, or dropped. */
void psi_sched_handle_tuner(coord *c, const ps_msg *msg,
			    const ps_wire_header *h)
{
	if (c->tuner.state == 1 && h->type == PS_MSG_TUNE_HELLO &&
	    h->job_id == c->job_id && h->iteration == c->tuner.nonce) {
		c->tuner.tid = msg->src;
		c->tuner.state = 2;
		PS_INFO("tuner attached (%s)", c->cfg->tune.endpoint);
		if (c->tuner.told)
			psi_sched_send_tuner(c, PS_MSG_PROGRESS, c->tuner.told);
		return;
	}
	if (c->tuner.state != 2 || msg->src != c->tuner.tid ||
	    h->job_id != c->job_id || h->payload_len != msg->payload_len) {
		psi_note_drop(++c->dropped, ps_msg_type_name(h->type),
			      "not from a node of this job or its tuner");
		return;
	}
	switch (h->type) {
	case PS_MSG_CREDIT:
		psi_sched_change_credit(c, msg);
		return;
	case PS_MSG_STOP:
		if (!c->cfg->checkpoint.dir[0]) {
			PS_WARN("tuner: a stop needs checkpoint.dir");
			return;
		}
		if (c->tuner.stopping || c->ckpt.flushing)
			return;
		c->tuner.stopping = 1;
		psi_sched_request_checkpoint(c, 0);
		return;
	default:
		psi_note_drop(++c->dropped, ps_msg_type_name(h->type),
			      "not expected from the tuner");
	}
}
