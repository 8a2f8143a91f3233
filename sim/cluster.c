/*
 * sim/cluster.c - the simulation of a job (cluster.h): its event loop,
 * the events it schedules and dispatches, and ps_sim_run.
 *
 * The rest of the simulation: a run's state and the calls between its
 * files, sim/cluster_state.h; messages and how the links carry them,
 * sim/cluster_messages.c; the workers, sim/cluster_workers.c; the
 * servers, sim/cluster_servers.c; a run set up and torn down,
 * sim/cluster_setup.c; what a run reports, sim/cluster_results.c.
 *
 * DESIGN. One event loop over a (time, sequence) heap. Hosts are numbered
 * workers 0..W-1, then servers W..W+S-1; each has an uplink and a
 * downlink (sim/link.h). The scheduling core is called exactly where the
 * real binaries call it: ps_gate_ready when a partition becomes ready,
 * ps_gate_next until it says none (drain) after every batch of readies and
 * after every acknowledgement, ps_gate_acked when credit returns. A gate's
 * handle is the partition index (the iteration travels in the transfer).
 *
 * Versions: per worker and tensor, `ver` is the newest version complete
 * (0 at the start) and `got` counts the partitions of the next version
 * that arrived. All partitions of version v + 1 of a tensor arrive before
 * any of v + 2: v + 2 needs this worker's push of iteration v + 1, whose
 * forward pass read the whole tensor at version v + 1.
 *
 * Memory is O(W * (ops + tensors + partitions)) plus the messages in
 * flight (recycled through a free list) and, with fair sharing, two
 * streams per (worker, server holding a partition) pair (sim/fair.h): a
 * 1024-worker ResNet-50 is a few tens of MiB, 8192 x 512 servers with
 * 64 KiB partitions (every push of an iteration in flight at once) a few
 * GiB.
 */
#include <stdio.h>
#include <stdlib.h>

#include "scheduling/placement.h"
#include "sim/cluster.h"
#include "sim/cluster_state.h"
#include "sim/events.h"
#include "sim/fair.h"
#include "sim/timeline.h"

void psi_cluster_fail(sim *s, int rc)
{
	if (s->rc == PS_OK)
		s->rc = rc;
}

void psi_cluster_schedule(sim *s, double t, uint32_t kind, uint32_t node,
			  uint64_t arg)
{
	s->batch_tail = NOMSG; /* the next arrival opens a batch */
	if (ps_sim_heap_push(&s->heap, t, kind, node, arg) != PS_OK)
		psi_cluster_fail(s, PS_ENOMEM);
}

/* Message i arrives at t. Arrivals scheduled one after the other for the
 * same time are one event in the heap (EV_ARRIVALS, the messages chained
 * through next_free): they would come out of it one after the other
 * anyway, with nothing between them, and each still counts as an event.
 * A network event delivers thousands of messages at once. */
void psi_cluster_schedule_arrival(sim *s, double t, uint32_t i)
{
	s->msgs[i].next_free = NOMSG;
	if (s->batch_tail != NOMSG && t == s->batch_t) {
		s->msgs[s->batch_tail].next_free = i;
		s->batch_tail = i;
		return;
	}
	psi_cluster_schedule(s, t, EV_ARRIVALS, 0, i);
	s->batch_tail = i;
	s->batch_t = t;
}

/* Message i arrives at t. */
static void arrive(sim *s, uint32_t i, double t)
{
	msg m = s->msgs[i];

	psi_cluster_msg_free(s, i);
	if (m.kind == MSG_PUSH)
		psi_cluster_push_arrive(s, &m, t);
	else if (m.kind == MSG_PARAMS)
		psi_cluster_params_arrive(s, &m, t);
	else if (m.kind == MSG_PUSH_ACK)
		psi_cluster_push_acked(s, m.worker, m.part, m.piece, t);
	else
		psi_cluster_params_acked(s, s->pl->parts[m.part].server,
					 m.worker, m.part, m.piece, t);
}

static void run_events(sim *s, ps_sim_result *r)
{
	ps_sim_event e;

	/* The sends of all the events at one time take effect together
	 * (fair.h): held until the time moves on. */
	if (s->net)
		ps_fair_hold(s->net);
	for (uint32_t w = 0; w < s->W; w++)
		psi_cluster_try_run(s, w, 0.0);
	for (double now = 0.0; s->rc == PS_OK;) {
		if (s->net && (s->heap.n == 0 || s->heap.v[0].t > now)) {
			if (ps_fair_release(s->net, now) != PS_OK)
				psi_cluster_fail(s, PS_ENOMEM);
			ps_fair_hold(s->net);
		}
		if (!ps_sim_heap_pop(&s->heap, &e))
			break;
		now = e.t;
		r->events++;
		r->total_us = e.t;
		if (e.kind != EV_ARRIVALS)
			r->digest = psi_cluster_mix_event(
				r->digest, e.t, e.kind, e.node, e.arg);
		switch (e.kind) {
		case EV_OP_DONE:
			psi_cluster_op_done(s, e.node, e.t);
			break;
		case EV_UP_START:
			psi_cluster_up_start(s, (uint32_t)e.arg, e.t);
			break;
		case EV_ARRIVE:
			arrive(s, (uint32_t)e.arg, e.t);
			break;
		case EV_ARRIVALS:
			s->batch_tail = NOMSG; /* closed */
			r->events--; /* counted one by one */
			for (uint32_t i = (uint32_t)e.arg, next; i != NOMSG;
			     i = next) {
				next = s->msgs[i].next_free;
				r->events++;
				r->digest = psi_cluster_mix_event(
					r->digest, e.t, EV_ARRIVE, 0, i);
				arrive(s, i, e.t);
				if (s->rc != PS_OK)
					break;
			}
			break;
		case EV_NET:
			if (ps_fair_event(s->net, e.node, e.arg, e.t) != PS_OK)
				psi_cluster_fail(s, PS_ENOMEM);
			break;
		case EV_PUSH_ACK:
			psi_cluster_push_acked(s, e.node, (uint32_t)e.arg,
					       (uint32_t)(e.arg >> 32), e.t);
			break;
		case EV_PARAMS_ACK:
			psi_cluster_params_acked(
				s, s->pl->parts[(uint32_t)e.arg].server, e.node,
				(uint32_t)e.arg, (uint32_t)(e.arg >> 32), e.t);
			break;
		case EV_SERVER_OP:
			psi_cluster_server_op_done(s, e.node, e.t);
			break;
		}
	}
}

int ps_sim_run(const ps_config *cfg, const ps_dag *dag,
	       const ps_link_model *lm, ps_sim_result *res_p, char *why,
	       size_t whylen)
{
	return ps_sim_run_opts(cfg, dag, lm, NULL, res_p, why, whylen);
}

int ps_sim_run_opts(const ps_config *cfg, const ps_dag *dag,
		    const ps_link_model *lm, const ps_sim_opts *opts,
		    ps_sim_result *res_p, char *why, size_t whylen)
{
	sim s = {.cfg = cfg,
		 .dag = dag,
		 .lm = *lm,
		 .W = (uint32_t)cfg->cluster.workers,
		 .S = (uint32_t)cfg->cluster.servers,
		 .K = (uint32_t)cfg->train.iterations,
		 .trace_workers = (uint32_t)cfg->sim.trace_workers,
		 .heap = PS_SIM_HEAP_INIT,
		 .free_msg = NOMSG,
		 .batch_tail = NOMSG};
	if (opts)
		s.opts = *opts;
	ps_sim_result r = {0};
	int rc;

	why[0] = '\0';
	if (s.K == 0) {
		snprintf(why, whylen, "train.iterations must be at least 1 "
			 "to simulate");
		return PS_EINVAL;
	}
	if (s.trace_workers > s.W)
		s.trace_workers = s.W;
	r.iter_us = calloc(s.K, sizeof(double));
	rc = r.iter_us ? psi_cluster_setup(&s, why, whylen) : PS_ENOMEM;
	if (rc == PS_OK) {
		run_events(&s, &r);
		rc = s.rc;
	}
	if (rc == PS_OK) {
		for (uint32_t w = 0; w < s.W; w++)
			if (s.w[w].it < s.K) {
				snprintf(why, whylen, "worker %u stopped in "
					 "iteration %llu of %u: the model "
					 "cannot make progress", w,
					 (unsigned long long)s.w[w].it, s.K);
				rc = PS_EINVAL;
				break;
			}
	}
	if (rc == PS_OK) {
		psi_cluster_results(&s, &r);
		if (s.tl) {
			char path[PS_CFG_STR + 32];
			/* not timeline.json: a run's job.ini names the
			 * run's own directory, whose measured timeline a
			 * prediction must not replace */
			snprintf(path, sizeof(path), "%s/sim-timeline.json",
				 cfg->output.dir);
			rc = ps_sim_timeline_write(s.tl, path, why, whylen);
		}
	}
	if (rc != PS_OK && !why[0])
		snprintf(why, whylen, "simulation failed: %s", ps_strerror(rc));
	psi_cluster_teardown(&s);
	if (rc != PS_OK) {
		free(r.iter_us);
		return rc;
	}
	*res_p = r;
	return PS_OK;
}
