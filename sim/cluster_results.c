/*
 * sim/cluster_results.c - what a run of the simulated cluster reports
 * (cluster.h): its metrics and bounds, the digest of its events, and the
 * comparison of two runs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mix64.h"
#include "scheduling/efficiency.h"
#include "sim/bounds.h"
#include "sim/cluster.h"
#include "sim/cluster_state.h"
#include "sim/fair.h"

static uint64_t dbits(double x)
{
	uint64_t u;

	memcpy(&u, &x, sizeof(u));
	return u;
}

/* The digest after one more event (time, kind, node, argument). */
uint64_t psi_cluster_mix_event(uint64_t digest, double t, uint32_t kind,
			       uint32_t node, uint64_t arg)
{
	uint64_t x = dbits(t) ^ (((uint64_t)kind << 32 | node) *
				 0xbf58476d1ce4e5b9ULL) ^
		     arg * 0x94d049bb133111ebULL;

	return ps_mix64(digest + x);
}

void psi_cluster_results(sim *s, ps_sim_result *r)
{
	double e_sum = 0.0, prev = 0.0;
	unsigned e_workers = 0;

	r->workers = s->W;
	r->servers = s->S;
	r->iterations = s->K;
	r->partitions = s->pl->num_parts;
	r->fused = s->pl->num_fused;
	r->link = s->lm;
	r->messages = s->messages;
	if (s->net)
		ps_fair_get_stats(s->net, &r->fair);
	/* every op of the cycle: the parameters back and the compute done
	 * (the last backward ops may produce no gradient) */
	r->makespan_us = s->makespan > s->iter_end[0] ? s->makespan
						       : s->iter_end[0];
	for (uint32_t i = 0; i < s->K; i++) {
		r->iter_us[i] = s->iter_end[i] - prev;
		prev = s->iter_end[i];
	}
	if (s->K == 1) {
		r->iteration_us = r->iter_us[0];
	} else {
		double sum = 0.0;
		for (uint32_t i = 1; i < s->K; i++)
			sum += r->iter_us[i];
		r->iteration_us = sum / (double)(s->K - 1);
	}
	for (uint32_t w = 0; w < s->W; w++) {
		const worker *k = &s->w[w];
		if (k->last_end > 0) {
			r->samples_per_second += (double)s->K * s->dag->batch /
						 (k->last_end / 1e6);
			if (k->wait_us / k->last_end > r->straggler)
				r->straggler = k->wait_us / k->last_end;
		}
		/* the scheduler's mean: NAN from any worker stays NAN */
		e_sum += k->e_n ? k->e_sum / k->e_n : NAN;
		e_workers++;
	}
	r->efficiency = e_workers ? e_sum / e_workers : NAN;
	r->speedup_bound = ps_speedup_bound(s->compute_us, s->comm_oracle_us);
	ps_sim_costs c = {
		.aggregate_ns_per_byte = s->cfg->sim.aggregate_ns_per_byte,
		.update_ns_per_byte = s->cfg->sim.update_ns_per_byte,
		.op_overhead_us = s->cfg->sim.op_overhead_us,
		.burst_bytes = (double)s->cfg->link.burst_bytes,
		.machine_us_per_byte = s->machine_cap > 0 ? 1.0 / s->machine_cap
							  : 0.0,
		.machine_small_us_per_byte =
			s->machine_cap > 0 ? s->small_w / s->machine_cap : 0.0,
		.machine_small_bytes = (double)s->small_bytes,
		.machine_message_us =
			s->machine_cap > 0 ? s->cfg->sim.machine_message_us : 0.0,
		.machine_message_min_bytes = (double)s->msg_min,
		.credit = s->cfg->scheduling.push.credit_size != 0 ||
			  s->cfg->scheduling.params.credit_size != 0,
		.fair = s->fair,
	};
	ps_sim_bounds_compute(s->dag, s->pl, s->W, &s->lm, &c, &r->bounds);
}

void ps_sim_result_free(ps_sim_result *r)
{
	free(r->iter_us);
	r->iter_us = NULL;
}

static int same_d(double a, double b)
{
	return dbits(a) == dbits(b);
}

int ps_sim_result_same(const ps_sim_result *a, const ps_sim_result *b,
		       char *why, size_t whylen)
{
	const struct {
		const char *name;
		double x, y;
	} d[] = {
		{"iteration_us", a->iteration_us, b->iteration_us},
		{"samples_per_second", a->samples_per_second,
		 b->samples_per_second},
		{"efficiency", a->efficiency, b->efficiency},
		{"speedup_bound", a->speedup_bound, b->speedup_bound},
		{"straggler", a->straggler, b->straggler},
		{"makespan_us", a->makespan_us, b->makespan_us},
		{"total_us", a->total_us, b->total_us},
	};

	if (a->iterations != b->iterations || a->workers != b->workers ||
	    a->servers != b->servers) {
		snprintf(why, whylen, "different jobs");
		return 0;
	}
	for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++)
		if (!same_d(d[i].x, d[i].y)) {
			snprintf(why, whylen, "%s: %.17g vs %.17g", d[i].name,
				 d[i].x, d[i].y);
			return 0;
		}
	for (uint32_t i = 0; i < a->iterations; i++)
		if (!same_d(a->iter_us[i], b->iter_us[i])) {
			snprintf(why, whylen, "iteration %u: %.17g vs %.17g us",
				 i, a->iter_us[i], b->iter_us[i]);
			return 0;
		}
	if (memcmp(&a->bounds, &b->bounds, sizeof(a->bounds)) != 0) {
		snprintf(why, whylen, "bounds");
		return 0;
	}
	if (a->events != b->events || a->messages != b->messages) {
		snprintf(why, whylen, "%llu vs %llu events, %llu vs %llu "
			 "messages", (unsigned long long)a->events,
			 (unsigned long long)b->events,
			 (unsigned long long)a->messages,
			 (unsigned long long)b->messages);
		return 0;
	}
	if (a->digest != b->digest) {
		snprintf(why, whylen, "event digest %016llx vs %016llx",
			 (unsigned long long)a->digest,
			 (unsigned long long)b->digest);
		return 0;
	}
	return 1;
}
