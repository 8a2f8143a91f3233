/*
 * scheduler/registration.c - the job's nodes from their REGISTER to their
 * WELCOME (scheduler.h, steps 1, 2 and 4): the registration loop and
 * whom it still waits for, each REGISTER judged by the membership
 * machine before the scheduler connects back, the ids in rank order, and
 * the WELCOME every node gets.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common/log.h"
#include "runtime/clock.h"
#include "runtime/node.h"
#include "proto/membership.h"
#include "proto/wire.h"
#include "transport/transport.h"
#include "scheduler/state.h"

/* A worker refused for what it declared (PS_MEMBER_TOLD) learns why: an
 * ABORT addressed to its transport id, on a connection made for it (the
 * scheduler waits at most TELL_MS for it: the endpoint is the refused
 * node's word) and closed after. A node not reached that soon stays
 * untold: the scheduler's log says why. */
#define TELL_MS 2000
static void tell_refused(coord *c, const ps_node_info *n, const char *why)
{
	ps_peer peer;
	void *body;
	size_t len;

	if (ps_transport_connect_within(c->t, n->endpoint, TELL_MS, &peer) !=
	    PS_OK)
		return;
	if (ps_wire_reason_encode(why, &body, &len) == PS_OK)
		psi_sched_send_owned(
		    c, peer,
		    (ps_wire_header){.type = PS_MSG_ABORT,
				     .iteration = n->transport_id},
		    body, len);
	ps_transport_disconnect(c->t, peer);
}

/* Handles a REGISTER during registration. Returns PS_OK, PS_EPROTO
 * (dropped), or PS_EABORTED (the job cannot go on). */
static int handle_register(coord *c, const ps_msg *msg,
			   const ps_wire_header *h)
{
	ps_wire_register r;
	const ps_node_info *info;
	char why[1024];
	uint32_t index;
	ps_peer peer;
	int rc;

	if (h->job_id != 0 || h->payload_len != msg->payload_len) {
		psi_note_drop_from(++c->dropped, "REGISTER", msg->src,
				   "bad job id or length");
		return PS_EPROTO;
	}
	rc = ps_wire_register_decode(msg->payload, msg->payload_len, &r, why,
				     sizeof(why));
	if (rc != PS_OK) {
		psi_note_drop_from(++c->dropped, "REGISTER", msg->src, why);
		return PS_EPROTO;
	}
	/* The verdict first: a REGISTER the job has no place for is never
	 * connected back to, so an unexpected peer (an unreachable endpoint
	 * included) cannot hold the scheduler for connect_timeout_ms. */
	/* its key id is the connection's, whatever it says */
	r.self.kid = msg->kid;
	switch (ps_membership_register(c->ms, &r, msg->src, ps_now_ms(),
				       &index, why, sizeof(why))) {
	case PS_MEMBER_ACCEPTED:
		break;
	case PS_MEMBER_DROPPED:
		psi_note_drop(++c->dropped, "REGISTER", why);
		ps_wire_register_clear(&r);
		return PS_EPROTO;
	case PS_MEMBER_REFUSED:
		/* not told: reaching it could block; it ends when its wait
		 * for a WELCOME does, and this line says why */
		PS_ERROR("refusing a node: %s", why);
		ps_wire_register_clear(&r);
		return PS_EPROTO;
	case PS_MEMBER_TOLD:
		PS_ERROR("refusing a node: %s", why);
		tell_refused(c, &r.self, why);
		ps_wire_register_clear(&r);
		return PS_EPROTO;
	case PS_MEMBER_FATAL:
		psi_sched_abort_job(c, why);
		ps_wire_register_clear(&r);
		return PS_EABORTED;
	}
	rc = ps_transport_connect(c->t, r.self.endpoint, &peer);
	if (rc != PS_OK) {
		char reason[PS_REASON_MAX];
		snprintf(reason, sizeof(reason),
			 "cannot reach %s pid %d at %s, which registered: %s "
			 "(cluster.advertise_host?)",
			 ps_role_name(r.self.role), (int)r.self.pid,
			 r.self.endpoint, ps_strerror(rc));
		ps_wire_register_clear(&r);
		psi_sched_abort_job(c, reason);
		return PS_EABORTED;
	}
	ps_wire_register_clear(&r);
	info = ps_membership_by_index(c->ms, index);
	c->members[1 + index].peer = peer;
	c->members[1 + index].kid = msg->kid;
	c->members[1 + index].info = *info;
	PS_INFO("registered %s %u: pid %d on %s, %s",
		ps_role_name(info->role), info->rank, info->pid, info->host,
		info->endpoint);
	return PS_OK;
}

/* Orders members by id: the scheduler, servers by rank, workers by rank. */
int psi_sched_assign_ids(coord *c)
{
	member *sorted = calloc(1 + c->servers + c->workers, sizeof(*sorted));
	if (!sorted)
		return PS_ENOMEM;
	for (uint32_t i = 0; i < ps_membership_registered(c->ms); i++) {
		uint32_t id = ps_membership_id_of(c->ms, i);
		sorted[id] = c->members[1 + i];
		sorted[id].info = *ps_membership_by_id(c->ms, id);
	}
	sorted[0].info = c->self;
	c->tensors = ps_membership_tensors(c->ms, &c->ntensors);
	free(c->members);
	c->members = sorted;
	return PS_OK;
}

int psi_sched_send_welcomes(coord *c)
{
	uint32_t n = 1 + c->servers + c->workers;
	ps_node_info *nodes = calloc(n, sizeof(*nodes));
	int rc = PS_OK;

	if (!nodes)
		return PS_ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		nodes[i] = c->members[i].info;
	for (uint32_t i = 1; i < n && rc == PS_OK; i++) {
		ps_wire_welcome w = {
			.your_id = i,
			.num_servers = c->servers,
			.num_workers = c->workers,
			.num_nodes = n,
			.nodes = nodes,
			.placement = c->placement,
			.priority = c->priority,
			.push_priority = c->push_priority,
			.start_iteration = c->start_iteration,
			.has_sizes = 1,
			.push_credit = c->cfg->scheduling.push.credit_size,
			.params_credit = c->cfg->scheduling.params.credit_size,
			.push_partition =
				c->cfg->scheduling.push.partition_size,
			.params_partition =
				c->cfg->scheduling.params.partition_size,
		};
		void *body;
		size_t len;

		rc = ps_wire_welcome_encode(&w, &body, &len);
		if (rc == PS_OK && len > ps_config_max_message(c->cfg)) {
			char why[256];
			snprintf(why, sizeof(why),
				 "the WELCOME (%u partitions) is %zu bytes, "
				 "more than transport.max_message = %llu: raise "
				 "it",
				 c->placement->num_parts, len,
				 (unsigned long long)ps_config_max_message(
					 c->cfg));
			free(body);
			psi_sched_abort_job(c, why);
			free(nodes);
			return PS_EABORTED;
		}
		if (rc == PS_OK)
			rc = psi_sched_send_addressed(c, i, PS_MSG_WELCOME,
						      body, len);
		if (rc != PS_OK) {
			char who[400];
			psi_sched_describe(&c->members[i], who, sizeof(who));
			PS_ERROR("cannot send the WELCOME to %s: %s", who,
				 ps_strerror(rc));
		}
	}
	free(nodes);
	return rc;
}

/* Registration says whom it waits for from connect_timeout_ms on (where
 * a slow start used to fail), then every REGISTRATION_SAY_MS. */
#define REGISTRATION_SAY_MS 10000

int psi_sched_registration(coord *c)
{
	int64_t start = ps_now_ms();
	int64_t say_at = start + c->cfg->cluster.connect_timeout_ms;

	while (!ps_membership_complete(c->ms)) {
		int64_t left, now = ps_now_ms();
		ps_wire_header h;
		ps_msg *msg = NULL;
		char why[256];
		int rc;

		if (psi_sched_interrupted(c))
			return PS_EINTR;
		if (ps_membership_check_registration(c->ms, now, &left, why,
						     sizeof(why)) != PS_OK) {
			psi_sched_abort_job(c, why);
			return PS_ETIMEDOUT;
		}
		if (now >= say_at) {
			ps_membership_waiting(c->ms, now, why, sizeof(why));
			PS_INFO("%s", why);
			say_at = now + REGISTRATION_SAY_MS;
		}
		if (left > say_at - now)
			left = say_at - now > 1 ? say_at - now : 1;
		rc = ps_transport_recv(c->t, (int)left, &msg);
		if (rc == PS_ETIMEDOUT || rc == PS_EAGAIN)
			continue;
		if (rc != PS_OK)
			return rc;
		rc = ps_wire_header_decode(msg->hdr, msg->hdr_len, &h, why,
					   sizeof(why));
		if (rc != PS_OK) {
			psi_note_drop_from(++c->dropped, "message", msg->src,
					   why);
		} else if (h.type != PS_MSG_REGISTER) {
			/* Heartbeats cannot come before the WELCOME; anything
			 * else is a stray. */
			psi_note_drop(++c->dropped, ps_msg_type_name(h.type),
				      "not expected during registration");
		} else if (handle_register(c, msg, &h) == PS_EABORTED) {
			ps_msg_free(&msg);
			return PS_EABORTED;
		}
		ps_msg_free(&msg);
	}
	return PS_OK;
}
