/*
 * sim/cluster_setup.c - a run of the simulated cluster set up and torn
 * down: the job's plan (placement, both directions' gate numbers), every
 * worker's engine and protocol machine, every server's shard machine,
 * the fair sharing of the links where link.sharing = fair, the
 * timeline's buffers; the keys that do not go together refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/engine.h"
#include "proto/server.h"
#include "proto/worker.h"
#include "scheduling/gate.h"
#include "scheduling/job_plan.h"
#include "scheduling/order.h"
#include "scheduling/placement.h"
#include "sim/cluster_state.h"
#include "sim/events.h"
#include "sim/fair.h"
#include "sim/timeline.h"

/* One direction's gate numbers per partition, from its order in the job's
 * plan (NULL: fifo), renumbered for its gate. */
static int direction_numbers(sim *s, const uint32_t *prio, int gate,
			     uint32_t **numbers_p, char *why, size_t whylen)
{
	int rc = ps_order_partition_numbers(s->pl, prio,
					    gate == PS_GATE_COUNTER,
					    numbers_p);

	if (rc != PS_OK)
		snprintf(why, whylen, "cannot number the partitions: %s",
			 ps_strerror(rc));
	return rc;
}

int psi_cluster_setup(sim *s, char *why, size_t whylen)
{
	const ps_config *cfg = s->cfg;
	const ps_dag *d = s->dag;
	ps_tensor_desc *descs;
	ps_job_plan plan;
	char reason[512];
	uint32_t P, T = d->ntensors;
	uint64_t total_bytes = 0;
	int rc;

	descs = calloc(T, sizeof(*descs));
	if (!descs)
		return PS_ENOMEM;
	for (uint32_t t = 0; t < T; t++) {
		snprintf(descs[t].name, sizeof(descs[t].name), "%s",
			 d->tensors[t].name);
		descs[t].numel = d->tensors[t].numel;
		total_bytes += d->tensors[t].bytes;
	}
	rc = ps_job_plan_make(cfg, descs, T, s->S, d, &plan, reason,
			      sizeof(reason));
	free(descs);
	if (rc != PS_OK) {
		snprintf(why, whylen, "%s: %s", d->name, reason);
		return rc;
	}
	s->pl = plan.pl;
	plan.pl = NULL;
	P = s->pl->num_parts;
	rc = direction_numbers(s, plan.params_priority,
			       cfg->scheduling.params.gate, &s->number, why,
			       whylen);
	if (rc == PS_OK &&
	    cfg->scheduling.push.order == cfg->scheduling.params.order &&
	    cfg->scheduling.push.gate == cfg->scheduling.params.gate) {
		/* the same numbers: computed once */
		s->push_number = malloc((P ? P : 1) * sizeof(uint32_t));
		if (!s->push_number)
			rc = PS_ENOMEM;
		else
			memcpy(s->push_number, s->number,
			       P * sizeof(uint32_t));
	} else if (rc == PS_OK) {
		rc = direction_numbers(s, plan.push_priority,
				       cfg->scheduling.push.gate,
				       &s->push_number, why, whylen);
	}
	ps_job_plan_free(&plan);
	if (rc != PS_OK)
		return rc;
	s->part_bytes = calloc(P, sizeof(*s->part_bytes));
	s->tparts_first = calloc((size_t)T + 1, sizeof(uint32_t));
	s->iter_end = calloc(s->K, sizeof(*s->iter_end));
	if (!s->part_bytes || !s->tparts_first ||
	    !s->iter_end)
		return PS_ENOMEM;
	for (uint32_t p = 0; p < P; p++)
		s->part_bytes[p] = s->pl->parts[p].numel * PS_ELEM_SIZE;
	for (uint32_t t = 0; t < T; t++)
		s->tparts_first[t + 1] = s->tparts_first[t] +
					 s->pl->part_count[t];
	s->tparts = calloc(s->tparts_first[T] ? s->tparts_first[T] : 1,
			   sizeof(uint32_t));
	if (!s->tparts)
		return PS_ENOMEM;
	for (uint32_t t = 0; t < T; t++)
		for (uint32_t k = 0; k < s->pl->part_count[t]; k++)
			s->tparts[s->tparts_first[t] + k] =
				ps_placement_segment(s->pl, t, k).part;

	s->compute_us = 0.0;
	for (uint32_t op = 0; op < d->nops; op++)
		s->compute_us += d->ops[op].time_us;
	s->comm_oracle_us = (double)total_bytes * 8.0 /
			    (cfg->metrics.bandwidth_gbps * 1e9) * 1e6;

	s->push_piece = ps_config_pieces_size(cfg, 0);
	s->params_piece = ps_config_pieces_size(cfg, 1);
	s->w = calloc(s->W, sizeof(*s->w));
	s->shard = calloc(s->S, sizeof(*s->shard));
	s->up = calloc((size_t)s->W + s->S, sizeof(*s->up));
	s->down = calloc((size_t)s->W + s->S, sizeof(*s->down));
	if (!s->w || !s->shard || !s->up || !s->down)
		return PS_ENOMEM;
	for (uint32_t w = 0; w < s->W; w++) {
		worker *k = &s->w[w];
		rc = ps_engine_create(d, psi_cluster_have_params, k,
				      &k->engine);
		if (rc != PS_OK)
			return rc;
		ps_wproto_config wc =
			ps_wproto_config_of(cfg, s->pl, s->push_number);
		wc.sync = 1; /* ps-sim simulates synchronous training */
		rc = ps_wproto_create(&wc, &k->proto);
		if (rc != PS_OK)
			return rc;
		/* every parameter is there at the start, at version 0 */
		for (uint32_t q = 0; q < P; q++)
			ps_wproto_assume(k->proto, q, 0);
		ps_engine_begin(k->engine, 0);
	}
	for (uint32_t srv = 0; srv < s->S; srv++) {
		ps_sproto_config sc =
			ps_sproto_config_of(cfg, s->pl, srv, s->W, s->number);
		sc.async = 0; /* ps-sim simulates synchronous training */
		sc.hold = psi_cluster_param_ready;
		sc.ud = s;
		rc = ps_sproto_create(&sc, &s->shard[srv]);
		if (rc != PS_OK)
			return rc;
		/* every parameter is there at the start, at version 0 */
		for (uint32_t k = 0; k < ps_sproto_nparts(s->shard[srv]); k++)
			ps_sproto_resume(s->shard[srv], k, 0, 0);
	}
	s->fair = cfg->link.sharing == PS_SHARING_FAIR;
	if (!s->fair && cfg->link.burst_bytes > 0) {
		snprintf(why, whylen, "link.burst_bytes = %d needs link.sharing "
			 "= fair (fifo links carry one message at one rate)",
			 cfg->link.burst_bytes);
		return PS_EINVAL;
	}
	if (!s->fair && cfg->sim.machine_gbps > 0) {
		snprintf(why, whylen, "sim.machine_gbps = %g needs link.sharing "
			 "= fair (fifo links do not share a machine)",
			 cfg->sim.machine_gbps);
		return PS_EINVAL;
	}
	if (!s->fair && cfg->link.latency_jitter > 0) {
		snprintf(why, whylen, "link.latency_jitter = %g needs "
			 "link.sharing = fair (fifo links keep one latency)",
			 cfg->link.latency_jitter);
		return PS_EINVAL;
	}
	if (cfg->sim.machine_small_gbps > 0 && !(cfg->sim.machine_gbps > 0)) {
		snprintf(why, whylen, "sim.machine_small_gbps = %g needs "
			 "sim.machine_gbps (the rate of the other messages)",
			 cfg->sim.machine_small_gbps);
		return PS_EINVAL;
	}
	if (cfg->sim.machine_message_us > 0 && !(cfg->sim.machine_gbps > 0)) {
		snprintf(why, whylen, "sim.machine_message_us = %g needs "
			 "sim.machine_gbps (the machine it is spent on)",
			 cfg->sim.machine_message_us);
		return PS_EINVAL;
	}
	if (s->fair) {
		double rate = 1.0 / s->lm.b_us_per_byte;
		uint8_t *used = calloc(s->S, 1);
		if (!used)
			return PS_ENOMEM;
		for (uint32_t p = 0; p < P; p++)
			used[s->pl->parts[p].server] = 1;
		/* Gbit/s -> bytes/us */
		s->machine_cap = cfg->sim.machine_gbps * 1e3 / 8.0;
		s->small_bytes = (uint64_t)cfg->sim.machine_small_bytes;
		s->small_w = cfg->sim.machine_small_gbps > 0
				     ? cfg->sim.machine_gbps /
					       cfg->sim.machine_small_gbps
				     : 1.0;
		s->msg_min = (uint64_t)cfg->sim.machine_message_min_bytes;
		ps_fair_config fc = {
			.workers = s->W,
			.servers = s->S,
			.server_used = used,
			.rate = rate,
			.burst = (double)cfg->link.burst_bytes,
			/* Gbit/s -> bytes/us; 0: ten times the link's rate */
			.burst_rate = cfg->link.burst_gbps > 0
					      ? cfg->link.burst_gbps * 1e3 / 8.0
					      : 10.0 * rate,
			.machine_cap = s->machine_cap,
			.small_bytes = s->small_bytes,
			.small_w = s->small_w,
			.msg_bytes = cfg->sim.machine_message_us * s->machine_cap,
			.msg_min = s->msg_min,
			.full = s->opts.fair_full,
			.fault = s->opts.fair_fault,
			.ops = {.schedule = psi_cluster_fair_schedule,
				.sent = psi_cluster_fair_sent,
				.bytes = psi_cluster_fair_bytes,
				.next = psi_cluster_fair_next,
				.set_next = psi_cluster_fair_set_next,
				.ud = s},
		};
		if (fc.burst_rate < rate)
			fc.burst_rate = rate;
		if (cfg->link.latency_jitter > 0) {
			/* both directions of every worker-server pair */
			s->stream_last = calloc((size_t)2 * s->W * s->S,
						sizeof(double));
			if (!s->stream_last) {
				free(used);
				return PS_ENOMEM;
			}
		}
		rc = ps_fair_create(&fc, &s->net);
		free(used);
		if (rc != PS_OK)
			return rc;
	}
	s->cycle_left = (uint64_t)s->W * T;
	s->free_msg = NOMSG;
	if (cfg->output.dir[0]) {
		size_t n = (size_t)s->trace_workers * P;
		rc = ps_sim_timeline_create(s->S, s->W, &s->tl);
		if (rc != PS_OK)
			return rc;
		s->push_ready = calloc(n ? n : 1, sizeof(double));
		s->push_sent = calloc(n ? n : 1, sizeof(double));
		s->param_ready = calloc(n ? n : 1, sizeof(double));
		s->push_iter = calloc(n ? n : 1, sizeof(uint64_t));
		if (!s->push_ready || !s->push_sent || !s->param_ready ||
		    !s->push_iter)
			return PS_ENOMEM;
	}
	return PS_OK;
}

void psi_cluster_teardown(sim *s)
{
	if (s->w)
		for (uint32_t w = 0; w < s->W; w++) {
			ps_engine_destroy(&s->w[w].engine);
			ps_wproto_destroy(&s->w[w].proto);
		}
	if (s->shard)
		for (uint32_t srv = 0; srv < s->S; srv++)
			ps_sproto_destroy(&s->shard[srv]);
	free(s->w);
	free(s->shard);
	free(s->up);
	free(s->down);
	free(s->iter_end);
	free(s->part_bytes);
	free(s->tparts);
	free(s->tparts_first);
	free(s->number);
	free(s->push_number);
	free(s->msgs);
	free(s->up_end);
	free(s->stream_last);
	free(s->push_ready);
	free(s->push_sent);
	free(s->param_ready);
	free(s->push_iter);
	ps_fair_destroy(&s->net);
	ps_sim_heap_free(&s->heap);
	ps_sim_timeline_free(&s->tl);
	ps_placement_free(&s->pl);
}
