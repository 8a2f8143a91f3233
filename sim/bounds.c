/*
 * sim/bounds.c - TicTac's bounds over a simulated cluster (bounds.h).
 */
#include <stdlib.h>

#include "sim/bounds.h"

static double max2(double a, double b)
{
	return a > b ? a : b;
}

void ps_sim_bounds_compute(const ps_dag *dag, const ps_placement *pl,
			   uint32_t workers, const ps_link_model *lm,
			   const ps_sim_costs *c, ps_sim_bounds *b_p)
{
	double aggregate_ns_per_byte = c->aggregate_ns_per_byte;
	double update_ns_per_byte = c->update_ns_per_byte;
	/* link time a full bucket saves, at most, per link and cycle */
	double burst = c->fair ? c->burst_bytes * lm->b_us_per_byte : 0.0;
	ps_link_model lo = *lm, hi = *lm;
	double compute = 0.0, worker_link = 0.0, worst, lower, msgs = 0.0;
	double machine = 0.0, paying = 0.0; /* per message, all together */
	uint64_t worker_bytes = 0, server_bytes_max = 0;
	double server_link_max = 0.0, cpu_max = 0.0, cpu_sum = 0.0;
	double W = (double)workers;

	lo.gamma = lm->gamma < 1.0 ? lm->gamma : 1.0;
	hi.gamma = lm->gamma > 1.0 ? lm->gamma : 1.0;
	if (c->fair) { /* a is latency; no gamma */
		lo.a_us = 0.0;
		lo.gamma = hi.gamma = 1.0;
		/* a message alone goes at the slower of link and machine */
		hi.b_us_per_byte = max2(max2(hi.b_us_per_byte,
					     c->machine_us_per_byte),
					c->machine_small_us_per_byte);
	}
	for (uint32_t i = 0; i < dag->nops; i++)
		compute += dag->ops[i].time_us + c->op_overhead_us;
	/* per server: its partitions' link time and thread time */
	for (uint32_t s = 0; s < pl->num_servers; s++) {
		double link = 0.0, cpu = 0.0;
		uint64_t bytes = 0;
		for (uint32_t p = 0; p < pl->num_parts; p++) {
			uint64_t m = pl->parts[p].numel * PS_ELEM_SIZE;
			if (pl->parts[p].server != s)
				continue;
			/* a busy-link message costs at least lo's price */
			link += W * ps_link_cost(&lo, m, 1);
			cpu += (W * aggregate_ns_per_byte + update_ns_per_byte) *
			       (double)m * 1e-3;
			bytes += (uint64_t)workers * m;
		}
		server_link_max = max2(server_link_max, link - burst);
		cpu_max = max2(cpu_max, cpu);
		cpu_sum += cpu;
		if (bytes > server_bytes_max)
			server_bytes_max = bytes;
	}
	for (uint32_t p = 0; p < pl->num_parts; p++) {
		uint64_t m = pl->parts[p].numel * PS_ELEM_SIZE;
		double per_msg = (double)m > c->machine_message_min_bytes
					 ? c->machine_message_us
					 : 0.0;
		worker_link += ps_link_cost(&lo, m, 1);
		msgs += ps_link_cost(&hi, m, 1);
		worker_bytes += m;
		/* every byte crosses the machine twice: pushed and sent
		 * back */
		if (c->fair) {
			machine += 2.0 * W *
				   ((double)m *
					    ((double)m <= c->machine_small_bytes
						     ? c->machine_small_us_per_byte
						     : c->machine_us_per_byte) +
				    per_msg);
			paying += per_msg;
		}
	}
	lower = max2(max2(max2(compute, worker_link - burst),
			  max2(server_link_max, cpu_max)),
		     machine);
	/* (max(link, machine + per message) <= max(link, machine) + per
	 * message: adding it to every message keeps worst an upper bound) */
	worst = W * compute +
		2.0 * W * (msgs + paying) +
		cpu_sum +
		W * (double)pl->num_parts * lm->a_us * (c->credit ? 2.0 : 1.0);
	b_p->compute_us = compute;
	b_p->worst_us = worst;
	b_p->lower_us = lower;
	b_p->speedup = lower > 0 ? (worst - lower) / lower : 0.0;
	b_p->physical_lower_us = max2(
		max2(compute, (double)(worker_bytes > server_bytes_max
					       ? worker_bytes
					       : server_bytes_max) *
					      lm->b_us_per_byte -
				      burst),
		machine);
}
