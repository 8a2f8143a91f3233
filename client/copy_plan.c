/*
 * client/copy_plan.c - see copy_plan.h.
 */
#include <stdlib.h>

#include "ordo/error.h"
#include "client/copy_plan.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int ps_copy_plan(const ps_placement *pl, const uint32_t *numbers, uint32_t t,
		 ps_copy_step *steps)
{
	uint32_t first, n;
	uint64_t *keys;

	if (!pl || !numbers || !steps || t >= pl->num_tensors)
		return PS_EINVAL;
	first = pl->first_part[t];
	n = pl->part_count[t];
	if (n == 0)
		return PS_EINVAL;
	if (pl->parts[first].ntensors > 1) { /* fused: the whole tensor */
		steps[0] = (ps_copy_step){.part = first,
					  .offset = 0,
					  .numel = pl->tensors[t].numel};
		return PS_OK;
	}
	/* (gate number, partition): one sortable key each */
	keys = malloc(n * sizeof(*keys));
	if (!keys)
		return PS_ENOMEM;
	for (uint32_t k = 0; k < n; k++)
		keys[k] = (uint64_t)numbers[first + k] << 32 | (first + k);
	qsort(keys, n, sizeof(*keys), cmp_u64);
	for (uint32_t k = 0; k < n; k++) {
		uint32_t part = (uint32_t)keys[k];
		steps[k] = (ps_copy_step){.part = part,
					  .offset = pl->parts[part].offset,
					  .numel = pl->parts[part].numel};
	}
	free(keys);
	return PS_OK;
}
