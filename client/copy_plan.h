/*
 * client/copy_plan.h - the order in which a device tensor's gradient is
 * copied to host memory, partition by partition (docs/cuda.md, item 2).
 *
 * Plain C, no CUDA: the client's CUDA path (PS_WITH_CUDA) enqueues one
 * device-to-host copy per step, in the steps' order, so that the
 * partition the gate sends first is copied first and an urgent partition
 * is never queued behind a large one on the copy stream. Unit-tested on the
 * CPU (tests/client/test_copy_plan.c).
 */
#ifndef ORDO_CLIENT_COPY_PLAN_H
#define ORDO_CLIENT_COPY_PLAN_H

#include <stdint.h>

#include "scheduling/placement.h"

/* One copy: `numel` elements from element `offset` of the tensor, which
 * travel in global partition `part`. */
typedef struct ps_copy_step {
	uint32_t part;
	uint64_t offset;
	uint64_t numel;
} ps_copy_step;

/* Fills steps[0 .. pl->part_count[t]) with tensor t's copies in the gate's
 * order: ascending gate number (numbers: per global partition, as given
 * to the gate: lower = sooner), ties by partition number. A fused tensor
 * is one step: its whole gradient (it travels in one shared partition).
 * The steps cover the tensor exactly once. PS_OK, PS_EINVAL (t out of
 * range, NULL arguments), PS_ENOMEM. */
int ps_copy_plan(const ps_placement *pl, const uint32_t *numbers, uint32_t t,
		 ps_copy_step *steps);

#endif /* ORDO_CLIENT_COPY_PLAN_H */
