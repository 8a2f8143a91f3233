/*
 * scheduler/send.c - the messages the scheduler sends: the header every
 * one carries (sender 0, the job id), with a body the transport releases;
 * a message addressed to a member by its transport id (the WELCOME and
 * the ABORT, which a node takes before it knows its id); the ABORT that
 * ends the job for every node; and a message that says only an
 * iteration.
 */
#include <stdlib.h>

#include "common/log.h"
#include "proto/membership.h"
#include "proto/wire.h"
#include "transport/transport.h"
#include "scheduler/state.h"

/* The one way out: h's type, key and iteration as the caller set them;
 * the version, the job id, sender 0 and the payload's length filled in.
 * The body goes to the transport with free_fn(body, hint) as its
 * release, and stays the caller's when the send fails. */
int psi_sched_send_header(coord *c, ps_peer peer, ps_wire_header h,
			  void *body, size_t len, ps_free_fn *free_fn,
			  void *hint)
{
	uint8_t buf[PS_WIRE_HEADER_MAX];
	size_t hlen;
	int rc;

	h.version = PS_WIRE_VERSION;
	h.job_id = c->job_id;
	h.sender = 0;
	h.payload_len = len;
	rc = ps_wire_header_encode(&h, buf, sizeof(buf), &hlen);
	if (rc == PS_OK)
		rc = ps_transport_send(c->t, peer, buf, hlen, body, len,
				       free_fn, hint);
	return rc;
}

/* The same with a malloc'd body (or none), freed whatever happens. */
int psi_sched_send_owned(coord *c, ps_peer peer, ps_wire_header h,
			 void *body, size_t len)
{
	int rc = psi_sched_send_header(c, peer, h, body, len,
				       body ? ps_wire_free : NULL, NULL);

	if (rc != PS_OK)
		free(body);
	return rc;
}

/* A message from the scheduler; the body goes to the transport with
 * free_fn(body, hint) as its release, and stays the caller's when the send
 * fails. */
int psi_sched_send_msg_with(coord *c, ps_peer peer, uint32_t type,
			    uint32_t key, void *body, size_t len,
			    ps_free_fn *free_fn, void *hint)
{
	return psi_sched_send_header(
	    c, peer, (ps_wire_header){.type = type, .key = key}, body, len,
	    free_fn, hint);
}

/* A message with a malloc'd body (or none), freed whatever happens. */
int psi_sched_send_msg(coord *c, ps_peer peer, uint32_t type, uint32_t key,
		       void *body, size_t len)
{
	return psi_sched_send_owned(
	    c, peer, (ps_wire_header){.type = type, .key = key}, body, len);
}

/* A WELCOME or ABORT to member i, whose header names the member's
 * transport id (a node takes these before its WELCOME only so addressed:
 * the id is what others do not know). Frees body whatever happens. */
int psi_sched_send_addressed(coord *c, uint32_t i, uint32_t type,
			     void *body, size_t len)
{
	return psi_sched_send_owned(
	    c, c->members[i].peer,
	    (ps_wire_header){.type = type,
			     .iteration = c->members[i].info.transport_id},
	    body, len);
}

static void send_abort(coord *c, uint32_t i, const char *reason)
{
	void *body;
	size_t len;

	if (ps_wire_reason_encode(reason, &body, &len) == PS_OK)
		psi_sched_send_addressed(c, i, PS_MSG_ABORT, body, len);
}

/* Tells every registered node the job is over, with a reason. */
void psi_sched_abort_job(coord *c, const char *reason)
{
	uint32_t n = ps_membership_registered(c->ms);

	PS_ERROR("aborting the job: %s", reason);
	for (uint32_t i = 1; i <= n; i++)
		if (!ps_membership_complete(c->ms) ||
		    ps_membership_reachable(c->ms, i))
			send_abort(c, i, reason);
}

/* A message without a body that says an iteration. */
int psi_sched_send_iteration(coord *c, ps_peer peer, uint32_t type,
			     uint64_t iteration)
{
	return psi_sched_send_header(
	    c, peer, (ps_wire_header){.type = type, .iteration = iteration},
	    NULL, 0, NULL, NULL);
}
