/*
 * scheduling/job_plan.c - a job's placement and orders (job_plan.h).
 */
#include "scheduling/job_plan.h"

#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "ordo/error.h"
#include "scheduling/order.h"

/* One direction's order: NULL for fifo, else one number per tensor. */
static int order_of(const ps_config *cfg, const ps_dag *dag, uint32_t n,
		    ps_order_kind kind, uint32_t **prio_p, char *why,
		    size_t whylen)
{
	ps_time_oracle oracle = {
		.latency_us = 0.0,
		.bandwidth_bytes_per_us =
			cfg->metrics.bandwidth_gbps * 1e3 / 8.0,
	};
	uint32_t *prio;
	int rc = PS_OK;

	*prio_p = NULL;
	if (kind == PS_ORDER_FIFO)
		return PS_OK;
	prio = calloc(n ? n : 1, sizeof(*prio));
	if (!prio)
		return ps_errf(why, whylen, PS_ENOMEM,
			       "cannot compute order %s: out of memory",
			       ps_order_name(kind));
	if (!dag)
		for (uint32_t i = 0; i < n; i++)
			prio[i] = i;
	else
		rc = ps_order_compute(dag, kind, &oracle, prio);
	if (rc != PS_OK) {
		free(prio);
		return ps_errf(why, whylen, rc, "cannot compute order %s: %s",
			       ps_order_name(kind), ps_strerror(rc));
	}
	*prio_p = prio;
	return PS_OK;
}

int ps_job_plan_make(const ps_config *cfg, const ps_tensor_desc *tensors,
		     uint32_t n, uint32_t servers, const ps_dag *dag,
		     ps_job_plan *plan, char *why, size_t whylen)
{
	ps_order_kind up = (ps_order_kind)cfg->scheduling.push.order,
		      down = (ps_order_kind)cfg->scheduling.params.order;
	int rc;

	memset(plan, 0, sizeof(*plan));
	rc = ps_placement_compute(tensors, n, cfg->scheduling.partition_size,
				  cfg->scheduling.fusion, servers,
				  cfg->scheduling.placement, &plan->pl);
	if (rc != PS_OK)
		return ps_errf(why, whylen, rc,
			       "cannot place %u tensors on %u servers: %s", n,
			       servers, ps_strerror(rc));
	rc = order_of(cfg, dag, n, down, &plan->params_priority, why, whylen);
	if (rc == PS_OK && up == down && plan->params_priority) {
		/* the same order: computed once */
		plan->push_priority = malloc((n ? n : 1) * sizeof(uint32_t));
		if (!plan->push_priority)
			rc = ps_errf(why, whylen, PS_ENOMEM,
				     "cannot copy the order: out of memory");
		else
			memcpy(plan->push_priority, plan->params_priority,
			       n * sizeof(uint32_t));
	} else if (rc == PS_OK) {
		rc = order_of(cfg, dag, n, up, &plan->push_priority, why,
			      whylen);
	}
	if (rc != PS_OK)
		ps_job_plan_free(plan);
	return rc;
}

void ps_job_plan_free(ps_job_plan *plan)
{
	ps_placement_free(&plan->pl);
	free(plan->push_priority);
	free(plan->params_priority);
	plan->push_priority = plan->params_priority = NULL;
}
