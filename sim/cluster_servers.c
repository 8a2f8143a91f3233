/*
 * sim/cluster_servers.c - the servers of the simulated cluster.
 *
 * Each server runs the real shard machine (proto/server.h): an arriving
 * push is an event, the machine's ops run one at a time on the server's
 * simulated CPU (sim.aggregate_ns_per_byte for summing a push, an
 * update's last one included, sim.update_ns_per_byte for the optimizer),
 * and the messages it gives (PUSH_ACK when a sum is done or an update
 * carrying the push starts, PARAMS as its gate releases them) go onto the
 * links.
 */
#include <math.h>
#include <stdio.h>

#include "proto/server.h"
#include "sim/cluster_state.h"
#include "sim/timeline.h"

/* A parameter send became ready in server srv's gate (the machine's
 * hold). */
void *psi_cluster_param_ready(void *ud, uint32_t k, uint32_t w)
{
	sim *s = ud;

	if (s->tl && w < s->trace_workers) {
		uint32_t part = ps_sproto_part_at(s->shard[s->cur_srv], k)->index;
		s->param_ready[(size_t)w * s->pl->num_parts + part] = s->now;
	}
	return NULL;
}

static void server_protocol_error(sim *s, uint32_t srv, const char *what,
				  const char *why)
{
	fprintf(stderr, "ps-sim: server %u refused %s: %s\n", srv, what, why);
	psi_cluster_fail(s, PS_EPROTO);
}

/* Sends what server srv's machine wants sent, at t. */
static void server_send(sim *s, uint32_t srv, double t)
{
	ps_sproto_msg m;

	while (ps_sproto_next_msg(s->shard[srv], &m)) {
		if (m.kind == PS_SHARD_MSG_PUSH_ACK) {
			if (s->fair)
				psi_cluster_send_ack(s, MSG_PUSH_ACK,
						     m.partition, m.piece,
						     m.worker, t);
			else
				psi_cluster_schedule(
					s, t + s->lm.a_us, EV_PUSH_ACK,
					m.worker,
					psi_cluster_ack_arg(m.partition,
							    m.piece));
			continue;
		}
		if (s->tl && m.worker < s->trace_workers) {
			double r = s->param_ready[(size_t)m.worker *
						  s->pl->num_parts +
						  m.partition];
			ps_trace_args a = {
				.iteration = (int64_t)m.iteration,
				.tensor = m.key,
				.partition = m.partition,
				.bytes = (int64_t)m.bytes,
				.ready_us = (uint64_t)llround(r),
				.sent_us = (uint64_t)llround(t),
			};
			char what[40];
			snprintf(what, sizeof(what), "params to worker %u",
				 m.worker);
			ps_sim_timeline_span(s->tl, 1 + srv, PS_LANE_SEND, what,
					     r, t - r, &a);
		}
		psi_cluster_hand_over(s, 0, m.partition, m.piece, m.worker,
				      m.iteration, t);
	}
}

/* Starts server srv's next op, if it is idle and one waits. */
static void server_run(sim *s, uint32_t srv, double t)
{
	ps_sproto_op op;
	double bytes, sum_us, upd_us;

	server_send(s, srv, t);
	if (!ps_sproto_next_op(s->shard[srv], &op))
		return;
	server_send(s, srv, t); /* an update's push is acknowledged now */
	bytes = (double)op.numel * PS_ELEM_SIZE;
	/* summing a push in (every op but INIT, which ps-sim never has, and
	 * an update of pieces summed before), then the optimizer */
	sum_us = op.all_summed
			 ? 0.0
			 : bytes * s->cfg->sim.aggregate_ns_per_byte * 1e-3;
	upd_us = op.kind == PS_SHARD_OP_UPDATE
			 ? bytes * s->cfg->sim.update_ns_per_byte * 1e-3
			 : 0.0;
	if (op.kind == PS_SHARD_OP_UPDATE && s->tl) {
		const ps_sproto_part *p = ps_sproto_part_at(s->shard[srv], op.k);
		ps_trace_args a = {.iteration = (int64_t)p->version + 1,
				   .tensor = p->desc->tensor,
				   .partition = p->index,
				   .bytes = (int64_t)bytes};
		ps_sim_timeline_span(s->tl, 1 + srv, PS_LANE_UPDATE, "update",
				     t + sum_us, upd_us, &a);
	}
	psi_cluster_schedule(s, t + sum_us + upd_us, EV_SERVER_OP, srv, 0);
}

void psi_cluster_server_op_done(sim *s, uint32_t srv, double t)
{
	int rc;

	s->now = t;
	s->cur_srv = srv;
	rc = ps_sproto_op_done(s->shard[srv]);

	if (rc != PS_OK)
		psi_cluster_fail(s, rc);
	server_run(s, srv, t);
}

void psi_cluster_push_arrive(sim *s, const msg *m, double t)
{
	uint32_t part = m->part, srv = s->pl->parts[part].server;
	char why[256];
	int rc;

	if (s->tl && (m->worker < s->trace_workers || s->W <= 64)) {
		ps_trace_args a = {.iteration = (int64_t)m->iteration,
				   .tensor = s->pl->parts[part].tensor,
				   .partition = part,
				   .bytes = (int64_t)s->part_bytes[part]};
		char what[32];
		snprintf(what, sizeof(what), "push from worker %u", m->worker);
		ps_sim_timeline_instant(s->tl, 1 + srv, PS_LANE_RECEIVE, what,
					t, &a);
	}
	rc = ps_sproto_on_push(s->shard[srv], m->worker, part,
			      s->pl->parts[part].tensor, m->iteration,
			      (int32_t)s->push_number[part], m->piece,
			      psi_cluster_msg_bytes(s, m), NULL, 0, why,
			      sizeof(why));
	if (rc == PS_EPROTO)
		server_protocol_error(s, srv, "a push", why);
	else if (rc != PS_OK)
		psi_cluster_fail(s, rc);
	server_run(s, srv, t);
}

/* A worker's PARAMS_ACK reached server srv: its credit returns. */
void psi_cluster_params_acked(sim *s, uint32_t srv, uint32_t w, uint32_t part,
			      uint32_t piece, double t)
{
	char why[256];
	int rc = ps_sproto_on_params_ack(s->shard[srv], w, part, piece, why,
					sizeof(why));

	if (s->tl && (w < s->trace_workers || s->W <= 64)) {
		ps_trace_args a = {.iteration = -1, .tensor = -1,
				   .partition = part, .bytes = -1};
		char what[40];
		snprintf(what, sizeof(what), "params ack from worker %u", w);
		ps_sim_timeline_instant(s->tl, 1 + srv, PS_LANE_RECEIVE, what,
					t, &a);
	}

	if (rc == PS_EPROTO)
		server_protocol_error(s, srv, "a PARAMS_ACK", why);
	else if (rc != PS_OK)
		psi_cluster_fail(s, rc);
	server_send(s, srv, t);
}
