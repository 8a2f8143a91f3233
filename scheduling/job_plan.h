/*
 * scheduling/job_plan.h - a job's plan: where every partition lives and in
 * which order each direction sends, computed once per job from the
 * configuration, the tensors and, where there is one, the model's DAG.
 *
 * ps-scheduler makes it before the WELCOME, which carries it to every
 * node; ps-sim makes the same for the job it simulates, so that the
 * simulation places and orders exactly as the real job does.
 *
 *   placement  scheduling.partition_size, fusion and placement over the
 *              tensors on `servers` servers (placement.h)
 *   orders     per tensor, for the pushes (scheduling.push_order) and the
 *              parameter sends (params_order): NULL for fifo; from the
 *              DAG (order.h; TAO's oracle is metrics.bandwidth_gbps with
 *              no fixed cost); without a DAG, the declaration order (a
 *              program declares its tensors in forward order, and without
 *              a DAG that is all an order can know)
 *
 * Threads: pure; a plan is owned by its caller.
 */
#ifndef ORDO_SCHEDULING_JOB_PLAN_H
#define ORDO_SCHEDULING_JOB_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "model/dag.h"
#include "scheduling/placement.h"

typedef struct ps_job_plan {
	ps_placement *pl;
	uint32_t *push_priority;   /* per tensor; NULL: fifo */
	uint32_t *params_priority; /* per tensor; NULL: fifo */
} ps_job_plan;

/* The plan of cfg's job over tensors[n] on `servers` servers; dag may be
 * NULL (its tensors, when given, are tensors[]). PS_OK, or an error with
 * why saying what could not be planned; plan is then empty. */
int ps_job_plan_make(const ps_config *cfg, const ps_tensor_desc *tensors,
		     uint32_t n, uint32_t servers, const ps_dag *dag,
		     ps_job_plan *plan, char *why, size_t whylen);

/* Frees what a plan holds (an empty or freed plan too). */
void ps_job_plan_free(ps_job_plan *plan);

#endif /* ORDO_SCHEDULING_JOB_PLAN_H */
