/*
 * scheduler/placement.h - tensors cut into partitions, partitions on servers.
 *
 * Keys are (tensor, partition). A tensor of numel float32 elements is cut
 * into ceil(bytes / partition_size) partitions of at most partition_size
 * bytes (whole elements; the last may be shorter). Partitions are numbered
 * globally, tensor by tensor: tensor t owns parts[first_part[t]] ..
 * parts[first_part[t + 1] - 1], in offset order.
 *
 * Placement (balanced): partitions sorted by size, largest first, each onto
 * the server with the fewest bytes so far (ties: lowest rank; equal sizes
 * keep global order) - the LPT rule, within 4/3 of the optimum makespan and
 * far better than round-robin or hashing when one tensor dominates (VGG16's
 * fc6). Round-robin is kept as the baseline it is compared with.
 *
 * The placement is a pure function of (tensors, partition_size, servers,
 * strategy): every node that has the same inputs gets the same result.
 *
 * Threads: a placement is immutable after creation; share it freely.
 */
#ifndef ORDO_SCHEDULER_PLACEMENT_H
#define ORDO_SCHEDULER_PLACEMENT_H

#include <stdint.h>
#include <stdio.h>

#include "ordo/error.h"

#define PS_NAME_MAX 64       /* tensor names, including the NUL */
#define PS_ELEM_SIZE 4       /* float32 */
#define PS_MAX_TENSORS (1u << 20)
#define PS_MAX_PARTS (1u << 24)
#define PS_MAX_SERVERS 4096

typedef struct ps_tensor_desc {
	char name[PS_NAME_MAX];
	uint64_t numel; /* float32 elements, > 0 */
} ps_tensor_desc;

typedef struct ps_partition {
	uint32_t tensor; /* index into tensors */
	uint32_t index;  /* partition number within the tensor */
	uint64_t offset; /* first element within the tensor */
	uint64_t numel;  /* elements, > 0 */
	uint32_t server; /* server rank, < num_servers */
} ps_partition;

typedef struct ps_placement {
	uint32_t num_tensors;
	ps_tensor_desc *tensors;
	uint32_t *first_part; /* num_tensors + 1 entries */
	uint32_t num_parts;
	ps_partition *parts;
	uint32_t num_servers;
	uint64_t *server_bytes; /* num_servers entries */
	uint64_t partition_size;
} ps_placement;

/* Cuts and places. strategy is a ps_place_strategy (common/config.h).
 * PS_EINVAL for n == 0, numel == 0, servers == 0 or > PS_MAX_SERVERS,
 * partition_size < PS_ELEM_SIZE, or more than PS_MAX_PARTS partitions. */
int ps_placement_compute(const ps_tensor_desc *tensors, uint32_t n,
			 uint64_t partition_size, uint32_t servers,
			 int strategy, ps_placement **p_p);

/* Rebuilds a placement received from the network and checks it: every
 * tensor covered exactly, in order, by its partitions; every server <
 * servers. PS_EPROTO (with a reason in why) when it does not hold. */
int ps_placement_from_parts(const ps_tensor_desc *tensors, uint32_t n,
			    const ps_partition *parts, uint32_t nparts,
			    uint32_t servers, uint64_t partition_size,
			    ps_placement **p_p, char *why, size_t whylen);

/* max(server bytes) / mean(server bytes); 1.0 is perfect. */
double ps_placement_imbalance(const ps_placement *p);

/* Index of a tensor by name, or -1. */
int64_t ps_placement_find_tensor(const ps_placement *p, const char *name);

/* Human-readable summary: partitions, per-server bytes, max/mean. */
void ps_placement_print(const ps_placement *p, FILE *out);

void ps_placement_free(ps_placement **p_p);

#endif /* ORDO_SCHEDULER_PLACEMENT_H */
