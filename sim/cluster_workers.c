/*
 * sim/cluster_workers.c - the workers of the simulated cluster.
 *
 * Each worker runs its compute engine (proto/engine.h), one op at a time
 * for its time, as the engine picks them, and the real worker protocol
 * machine (proto/worker.h): a backward op's gradients enter the machine
 * when the op finishes, and its gate is drained then and after every
 * acknowledgement; the parameters that arrive make the versions the
 * engine waits for. An iteration's end counts as worker/replay.c counts
 * it (the job's iteration time, TicTac's E); with a timeline, the traced
 * workers' compute, waits, pushes and receipts are drawn.
 */
#include <math.h>
#include <stdio.h>

#include "proto/engine.h"
#include "proto/worker.h"
#include "scheduling/efficiency.h"
#include "scheduling/placement.h"
#include "sim/cluster_state.h"
#include "sim/timeline.h"

static int traced_worker(const sim *s, uint32_t w)
{
	return s->tl && w < s->trace_workers;
}

static uint32_t worker_node(const sim *s, uint32_t w)
{
	return 1 + s->S + w;
}

static void worker_protocol_error(sim *s, uint32_t w, const char *why)
{
	fprintf(stderr, "ps-sim: worker %u: %s\n", w, why);
	psi_cluster_fail(s, PS_EPROTO);
}

/* Sends what worker w's machine wants sent, at t: the pushes its gate
 * releases and, with a credit window, PARAMS_ACKs. */
static void worker_send(sim *s, uint32_t w, double t)
{
	ps_wproto_msg m;

	if (ps_wproto_flush(s->w[w].proto) != PS_OK)
		psi_cluster_fail(s, PS_ENOMEM);
	while (ps_wproto_next_msg(s->w[w].proto, &m)) {
		if (m.kind == PS_WPROTO_MSG_PARAMS_ACK) {
			if (s->fair)
				psi_cluster_send_ack(s, MSG_PARAMS_ACK, m.part,
						     m.piece, w, t);
			else
				psi_cluster_schedule(
					s, t + s->lm.a_us, EV_PARAMS_ACK, w,
					psi_cluster_ack_arg(m.part, m.piece));
			continue;
		}
		if (m.kind != PS_WPROTO_MSG_PUSH)
			continue;
		if (traced_worker(s, w))
			s->push_sent[(size_t)w * s->pl->num_parts + m.part] = t;
		psi_cluster_hand_over(s, 1, m.part, m.piece, w, m.iteration, t);
	}
}

/* Partition part of worker w's gradients became ready at t (traced). */
static void trace_ready(sim *s, uint32_t w, uint32_t part, double t)
{
	if (traced_worker(s, w)) {
		s->push_ready[(size_t)w * s->pl->num_parts + part] = t;
		s->push_iter[(size_t)w * s->pl->num_parts + part] = s->w[w].it;
	}
}

/* Tensor tn's gradient enters worker w's machine at t. */
static void push_tensor(sim *s, uint32_t w, uint32_t tn, double t)
{
	worker *k = &s->w[w];
	ps_wproto_staging st;
	char why[256];
	int rc = ps_wproto_push(k->proto, tn, k->it, NULL, &st, why,
				sizeof(why));

	if (rc == PS_OK && st.fused && st.complete) {
		trace_ready(s, w, st.part, t);
		rc = ps_wproto_stage_ready(k->proto, st.part, k->it, NULL);
	} else if (rc == PS_OK && !st.fused) {
		for (uint32_t q = s->tparts_first[tn];
		     q < s->tparts_first[tn + 1]; q++)
			trace_ready(s, w, s->tparts[q], t);
	}
	if (rc == PS_ESTATE)
		worker_protocol_error(s, w, why);
	else if (rc != PS_OK)
		psi_cluster_fail(s, rc);
}

/* The engine's question: version `it` of tensor t is here? */
int psi_cluster_have_params(void *ud, uint32_t t, uint64_t it, int *have_p)
{
	const worker *k = ud;

	uint64_t v;

	*have_p = ps_wproto_tensor_version(k->proto, t, &v) && v >= it;
	return PS_OK;
}

static void end_iteration(sim *s, uint32_t w, double t);

/* The engine runs what it picks (the lowest-indexed ready op that can
 * run), or waits. */
void psi_cluster_try_run(sim *s, uint32_t w, double t)
{
	worker *k = &s->w[w];
	ps_engine_action what;
	uint32_t op;

	while (!k->busy && k->it < s->K) {
		ps_engine_next(k->engine, &what, &op);
		if (what == PS_ENGINE_DONE) {
			end_iteration(s, w, t);
			continue;
		}
		if (what == PS_ENGINE_WAIT) {
			if (!k->waiting) {
				k->waiting = 1;
				k->wait_since = t;
			}
			return;
		}
		if (k->waiting) {
			k->waiting = 0;
			k->wait_us += t - k->wait_since;
			if (traced_worker(s, w))
				ps_sim_timeline_span(s->tl, worker_node(s, w),
						     PS_LANE_WAIT,
						     "wait for parameters",
						     k->wait_since,
						     t - k->wait_since, NULL);
		}
		k->busy = 1;
		k->running = op;
		k->op_start = t;
		psi_cluster_schedule(s,
				     t + s->dag->ops[op].time_us +
					     s->cfg->sim.op_overhead_us,
				     EV_OP_DONE, w, 0);
	}
}

static void end_iteration(sim *s, uint32_t w, double t)
{
	worker *k = &s->w[w];
	double it_us = t - k->last_end;
	/* as replay.c: the compute this iteration really took */
	double eff = ps_ordering_efficiency(
		s->compute_us + s->dag->nops * s->cfg->sim.op_overhead_us,
		s->comm_oracle_us, it_us);

	/* as worker/replay.c: iteration 0 starts with the parameters there */
	if (k->it > 0 && isfinite(eff)) {
		k->e_sum += eff;
		k->e_n++;
	}
	if (t > s->iter_end[k->it])
		s->iter_end[k->it] = t;
	k->last_end = t;
	k->it++;
	if (k->it < s->K)
		ps_engine_begin(k->engine, k->it);
}

void psi_cluster_op_done(sim *s, uint32_t w, double t)
{
	worker *k = &s->w[w];
	const ps_dag_op *o = &s->dag->ops[k->running];

	k->busy = 0;
	if (traced_worker(s, w)) {
		ps_trace_args a = PS_TRACE_NO_ARGS;
		a.iteration = (int64_t)k->it;
		ps_sim_timeline_span(s->tl, worker_node(s, w), PS_LANE_COMPUTE,
				     o->name, k->op_start, t - k->op_start, &a);
	}
	if (o->kind == PS_OP_BACKWARD) {
		for (uint32_t j = 0; j < o->ntensors; j++)
			push_tensor(s, w, o->tensors[j], t);
		worker_send(s, w, t);
	}
	ps_engine_op_done(k->engine, k->running);
	psi_cluster_try_run(s, w, t);
}

/* The push lane's span of worker w's push of partition part, ready to
 * acknowledged at t. */
static void trace_push(sim *s, uint32_t w, uint32_t part, double t)
{
	size_t i = (size_t)w * s->pl->num_parts + part;
	const ps_partition *p = &s->pl->parts[part];

	if (!traced_worker(s, w))
		return;
	ps_trace_args a = {
		.iteration = (int64_t)s->push_iter[i],
		.tensor = p->tensor,
		.partition = part,
		.bytes = (int64_t)s->part_bytes[part],
		.ready_us = (uint64_t)llround(s->push_ready[i]),
		.sent_us = (uint64_t)llround(s->push_sent[i]),
		.acked_us = (uint64_t)llround(t),
	};
	ps_sim_timeline_span(s->tl, worker_node(s, w), PS_LANE_PUSH,
			     s->dag->tensors[p->tensor].name, s->push_ready[i],
			     t - s->push_ready[i], &a);
}

void psi_cluster_params_arrive(sim *s, const msg *m, double t)
{
	worker *k = &s->w[m->worker];
	const ps_partition *p = &s->pl->parts[m->part];
	uint32_t nt = p->ntensors;
	uint64_t v, before[nt];
	char why[256];
	int rc, acked;

	if (traced_worker(s, m->worker)) {
		ps_trace_args a = {.iteration = (int64_t)m->iteration,
				   .tensor = p->tensor,
				   .partition = m->part,
				   .bytes = (int64_t)s->part_bytes[m->part]};
		ps_sim_timeline_instant(s->tl, worker_node(s, m->worker),
					PS_LANE_RECEIVE,
					s->dag->tensors[p->tensor].name, t, &a);
	}
	/* the cycle: when every worker holds version 1 of every tensor */
	for (uint32_t j = 0; j < nt; j++)
		before[j] = ps_wproto_tensor_version(k->proto, p->tensor + j,
						     &v) ? v : 0;
	rc = ps_wproto_on_params(k->proto, p->server, m->part, p->tensor,
				 m->iteration, m->piece,
				 psi_cluster_msg_bytes(s, m), &acked, NULL,
				 why, sizeof(why));
	if (rc != PS_OK) {
		worker_protocol_error(s, m->worker, why);
		return;
	}
	if (acked) /* the push it acknowledges (no window: no PUSH_ACK) */
		trace_push(s, m->worker, m->part, t);
	worker_send(s, m->worker, t);
	for (uint32_t j = 0; j < nt; j++)
		if (before[j] < 1 &&
		    ps_wproto_tensor_version(k->proto, p->tensor + j, &v) &&
		    v >= 1 && --s->cycle_left == 0)
			s->makespan = t;
	psi_cluster_try_run(s, m->worker, t);
}

void psi_cluster_push_acked(sim *s, uint32_t w, uint32_t part, uint32_t piece,
			    double t)
{
	char why[256];

	if (piece + 1 == ps_part_pieces(&s->pl->parts[part], s->push_piece))
		trace_push(s, w, part, t); /* the push's last piece */
	if (ps_wproto_on_push_ack(s->w[w].proto, s->pl->parts[part].server,
				  part, piece, why, sizeof(why)) != PS_OK)
		worker_protocol_error(s, w, why);
	worker_send(s, w, t);
}
