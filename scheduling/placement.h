/*
 * scheduling/placement.h - tensors cut into partitions, partitions on servers.
 *
 * Keys are (tensor, partition). A tensor of numel float32 elements is cut
 * into ceil(bytes / partition_size) partitions of at most partition_size
 * bytes (whole elements; the last may be shorter). Partitions are numbered
 * globally, tensor by tensor, in offset order: tensor t's elements are in
 * parts[first_part[t]] .. parts[first_part[t] + part_count[t] - 1].
 *
 * Fusion (PACE): with fuse set, consecutive tensors that are each smaller
 * than partition_size are packed, whole, into one partition of at most
 * partition_size bytes. Groups are formed walking the tensors from the last
 * to the first - the order in which the backward pass produces their
 * gradients - so a fused transfer holds gradients that become ready
 * together. A fused partition has ntensors > 1 and holds tensors
 * tensor .. tensor + ntensors - 1 back to back; each of them has
 * part_count 1 and starts at element tensor_base[t] of the partition's
 * payload. A fused partition is placed like any other, so placement stays
 * byte-balanced.
 *
 * Placement (balanced): partitions sorted by size, largest first, each onto
 * the server with the fewest bytes so far (ties: lowest rank; equal sizes
 * keep global order) - the LPT rule, within 4/3 of the optimum makespan and
 * far better than round-robin or hashing when one tensor dominates (VGG16's
 * fc6). Round-robin is kept as the baseline it is compared with (and as
 * TensorFlow's replica_device_setter); mxnet is MXNet's KVStore (a tensor
 * of a million elements or more in one equal piece per server, others
 * whole on server (index x 9973) mod S; pieces cut further by
 * partition_size; no fusion: fuse is ignored).
 *
 * The placement is a pure function of (tensors, partition_size, servers,
 * strategy): every node that has the same inputs gets the same result.
 *
 * Threads: a placement is immutable after creation; share it freely.
 */
#ifndef ORDO_SCHEDULING_PLACEMENT_H
#define ORDO_SCHEDULING_PLACEMENT_H

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
	uint32_t tensor;   /* index into tensors (fused: the first one) */
	uint32_t index;    /* partition number within the tensor (fused: 0) */
	uint64_t offset;   /* first element within the tensor (fused: 0) */
	uint64_t numel;    /* elements, > 0 (fused: all tensors' together) */
	uint32_t server;   /* server rank, < num_servers */
	uint32_t ntensors; /* 1, or the number of whole tensors fused */
} ps_partition;

/* Where a piece of a tensor travels: `numel` elements starting at element
 * tensor_offset of the tensor are elements part_offset.. of partition
 * `part`'s payload. */
typedef struct ps_segment {
	uint32_t part;
	uint64_t tensor_offset;
	uint64_t part_offset;
	uint64_t numel;
} ps_segment;

typedef struct ps_placement {
	uint32_t num_tensors;
	ps_tensor_desc *tensors;
	uint32_t *first_part; /* num_tensors + 1 entries (last: num_parts) */
	uint32_t *part_count; /* num_tensors entries */
	uint64_t *tensor_base; /* num_tensors entries: 0 unless fused */
	uint32_t num_parts;
	ps_partition *parts;
	uint32_t num_servers;
	uint64_t *server_bytes; /* num_servers entries */
	uint64_t partition_size;
	uint32_t num_fused; /* partitions with ntensors > 1 */
} ps_placement;

/* Cuts (and, with fuse, fuses) and places. strategy is a
 * ps_place_strategy (common/config.h). PS_EINVAL for n == 0, numel == 0,
 * servers == 0 or > PS_MAX_SERVERS, partition_size < PS_ELEM_SIZE, or more
 * than PS_MAX_PARTS partitions. */
int ps_placement_compute(const ps_tensor_desc *tensors, uint32_t n,
			 uint64_t partition_size, int fuse, uint32_t servers,
			 int strategy, ps_placement **p_p);

/* Segment k (< part_count[t]) of tensor t. */
ps_segment ps_placement_segment(const ps_placement *p, uint32_t t,
				uint32_t k);

/* Rebuilds a placement received from the network and checks it: every
 * tensor covered exactly, in order, by its partitions (a fused partition
 * by whole tensors whose sizes add up to its numel, none larger than
 * partition_size); every server < servers. PS_EPROTO (with a reason in
 * why) when it does not hold. */
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

/*
 * Pieces. A direction whose partition size is below the placement's
 * (scheduling.push_partition_size / params_partition_size) sends each
 * partition in pieces of at most piece_bytes (whole elements; the last
 * may be shorter), numbered from 0 in offset order; piece_bytes 0 (or at
 * least the partition) sends it whole, as one piece. A partition has at
 * most PS_MAX_PIECES pieces (ps_pieces_check).
 */
#define PS_MAX_PIECES (1u << 24)

/* How many pieces partition q is sent in (at least 1). */
uint64_t ps_part_pieces(const ps_partition *q, uint64_t piece_bytes);

/* Piece i's first element within the partition and its length. */
void ps_piece_span(const ps_partition *q, uint64_t piece_bytes, uint32_t i,
		   uint64_t *offset_p, uint64_t *numel_p);

/* PS_OK, or PS_EINVAL with a reason when a partition of p would have
 * more than PS_MAX_PIECES pieces of piece_bytes. */
int ps_pieces_check(const ps_placement *p, uint64_t piece_bytes, char *why,
		    size_t whylen);

#endif /* ORDO_SCHEDULING_PLACEMENT_H */
