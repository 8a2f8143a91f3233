/*
 * scheduling/placement.c - cutting tensors into partitions and placing the
 * partitions on servers.
 *
 * DESIGN. Cutting: a tensor of numel elements gets partitions of
 * partition_size / PS_ELEM_SIZE elements (at least one), the last one holds
 * the remainder; partitions are numbered globally, tensor by tensor, in
 * offset order. Placing (PS_PLACE_BALANCED) is the LPT rule: partitions
 * sorted by bytes, largest first (ties keep global order), each onto the
 * server with the fewest bytes so far (ties: lowest rank). A binary min-heap
 * keyed on (bytes, rank) makes it O(P log P + P log S). PS_PLACE_ROUND_ROBIN
 * (partition i on server i % S) is the baseline it is compared with.
 * PS_PLACE_MXNET is MXNet's KVStore over ps-lite (kvstore_dist.h): a
 * tensor of MXNET_BIGARRAY elements or more is split into one piece per
 * server, piece i = round(n (i + 1) / S) - round(n i / S) elements on
 * server i; a smaller one goes whole to server (key x 9973) mod S, its key
 * being its index. Pieces larger than a partition are cut further, each
 * cut on its piece's server; there is no fusion.
 *
 * Fusion groups tensors before placing: walking from the last tensor to the
 * first (backward order), a run of consecutive tensors each smaller than a
 * partition grows while its total still fits in one; the run becomes one
 * partition. Tensors that need cutting end a run. Fused partitions are then
 * placed by the same LPT rule, so the balance does not depend on fusion.
 *
 * Everything here is a pure function of its inputs, so every node computes
 * (or checks, ps_placement_from_parts) the same placement.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/errbuf.h"
#include "common/log.h"
#include "scheduling/placement.h"

/* ---- allocation --------------------------------------------------------- */

static int placement_alloc(uint32_t n, uint32_t nparts, uint32_t servers,
                           ps_placement **p_p)
{
	ps_placement *p = calloc(1, sizeof(*p));

	if (!p)
		return PS_ENOMEM;
	p->tensors = calloc(n, sizeof(*p->tensors));
	p->first_part = calloc((size_t)n + 1, sizeof(*p->first_part));
	p->part_count = calloc(n, sizeof(*p->part_count));
	p->tensor_base = calloc(n, sizeof(*p->tensor_base));
	p->parts = calloc(nparts ? nparts : 1, sizeof(*p->parts));
	p->server_bytes = calloc(servers, sizeof(*p->server_bytes));
	if (!p->tensors || !p->first_part || !p->part_count ||
	    !p->tensor_base || !p->parts || !p->server_bytes) {
		ps_placement_free(&p);
		return PS_ENOMEM;
	}
	p->num_tensors = n;
	p->num_parts = nparts;
	p->num_servers = servers;
	*p_p = p;
	return PS_OK;
}

void ps_placement_free(ps_placement **p_p)
{
	ps_placement *p;

	if (!p_p || !*p_p)
		return;
	p = *p_p;
	free(p->tensors);
	free(p->first_part);
	free(p->part_count);
	free(p->tensor_base);
	free(p->parts);
	free(p->server_bytes);
	free(p);
	*p_p = NULL;
}

/* ---- cutting ------------------------------------------------------------ */

static uint64_t parts_of(uint64_t numel, uint64_t per_part)
{
	return numel / per_part + (numel % per_part != 0);
}

/* MXNet's bound (MXNET_KVSTORE_BIGARRAY_BOUND's default) */
#define MXNET_BIGARRAY 1000000ULL

/* Elements of the first i of `servers` pieces of an array of numel:
 * round(numel * i / servers), halves up. */
static uint64_t mxnet_edge(uint64_t numel, uint32_t i, uint32_t servers)
{
	unsigned __int128 x = (unsigned __int128)numel * i * 2 + servers;

	return (uint64_t)(x / ((unsigned __int128)servers * 2));
}

/* How many pieces MXNet splits tensor t into. */
static uint32_t mxnet_pieces(uint64_t numel, uint32_t servers)
{
	return servers > 1 && numel >= MXNET_BIGARRAY ? servers : 1;
}

/* Partitions of a tensor of numel under strategy. */
static uint64_t tensor_parts(uint64_t numel, uint64_t per_part,
                             uint32_t servers, int strategy)
{
	uint32_t pieces = strategy == PS_PLACE_MXNET
	                      ? mxnet_pieces(numel, servers)
	                      : 1;
	uint64_t count = 0;

	for (uint32_t i = 0; i < pieces; i++)
		count += parts_of(mxnet_edge(numel, i + 1, pieces) -
		                      mxnet_edge(numel, i, pieces),
		                  per_part);
	return count;
}

/* Checks the inputs of ps_placement_compute; logs and returns PS_EINVAL. */
static int check_inputs(const ps_tensor_desc *tensors, uint32_t n,
                        uint64_t partition_size, uint32_t servers, int strategy,
                        uint32_t *nparts_p)
{
	uint64_t per_part, nparts = 0, total = 0;

	if (!tensors || n == 0 || n > PS_MAX_TENSORS) {
		PS_ERROR("placement: %u tensors (need 1..%u)", n,
		         PS_MAX_TENSORS);
		return PS_EINVAL;
	}
	if (servers == 0 || servers > PS_MAX_SERVERS) {
		PS_ERROR("placement: %u servers (need 1..%u)", servers,
		         PS_MAX_SERVERS);
		return PS_EINVAL;
	}
	if (partition_size < PS_ELEM_SIZE) {
		PS_ERROR("placement: partition size %llu bytes is smaller "
		         "than one element (%d bytes)",
		         (unsigned long long)partition_size, PS_ELEM_SIZE);
		return PS_EINVAL;
	}
	if (strategy != PS_PLACE_BALANCED && strategy != PS_PLACE_ROUND_ROBIN &&
	    strategy != PS_PLACE_MXNET) {
		PS_ERROR("placement: unknown strategy %d", strategy);
		return PS_EINVAL;
	}
	per_part = partition_size / PS_ELEM_SIZE;
	for (uint32_t t = 0; t < n; t++) {
		uint64_t numel = tensors[t].numel, count;

		if (!memchr(tensors[t].name, '\0', PS_NAME_MAX)) {
			PS_ERROR("placement: tensor %u: name is not "
			         "NUL-terminated",
			         t);
			return PS_EINVAL;
		}
		if (numel == 0 || numel > UINT64_MAX / PS_ELEM_SIZE) {
			PS_ERROR(
			    "placement: tensor %u (%s): %llu elements "
			    "(need 1..%llu)",
			    t, tensors[t].name, (unsigned long long)numel,
			    (unsigned long long)(UINT64_MAX / PS_ELEM_SIZE));
			return PS_EINVAL;
		}
		if (numel * PS_ELEM_SIZE > UINT64_MAX - total) {
			PS_ERROR("placement: total size overflows 64 bits");
			return PS_EINVAL;
		}
		total += numel * PS_ELEM_SIZE;
		count = tensor_parts(numel, per_part, servers, strategy);
		if (count > PS_MAX_PARTS - nparts) {
			PS_ERROR("placement: more than %u partitions (tensor "
			         "%u, %s); use a larger partition size",
			         PS_MAX_PARTS, t, tensors[t].name);
			return PS_EINVAL;
		}
		nparts += count;
	}
	*nparts_p = (uint32_t)nparts;
	return PS_OK;
}

/* ---- balanced placement: LPT with a min-heap over (bytes, rank) --------- */

typedef struct sized {
	uint64_t bytes;
	uint32_t index;
} sized;

static int by_bytes_desc(const void *a, const void *b)
{
	const sized *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->index < y->index ? -1 : (x->index > y->index);
}

typedef struct slot {
	uint64_t bytes;
	uint32_t rank;
} slot;

static int slot_less(const slot *a, const slot *b)
{
	return a->bytes < b->bytes ||
	       (a->bytes == b->bytes && a->rank < b->rank);
}

static void heap_sift_down(slot *h, uint32_t size, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		slot tmp;

		if (l < size && slot_less(&h[l], &h[m]))
			m = l;
		if (r < size && slot_less(&h[r], &h[m]))
			m = r;
		if (m == i)
			return;
		tmp = h[i];
		h[i] = h[m];
		h[m] = tmp;
		i = m;
	}
}

static int place_balanced(ps_placement *p)
{
	sized *order = malloc((size_t)p->num_parts * sizeof(*order));
	slot *heap = malloc((size_t)p->num_servers * sizeof(*heap));

	if (!order || !heap) {
		free(order);
		free(heap);
		return PS_ENOMEM;
	}
	for (uint32_t i = 0; i < p->num_parts; i++) {
		order[i].bytes = p->parts[i].numel * PS_ELEM_SIZE;
		order[i].index = i;
	}
	qsort(order, p->num_parts, sizeof(*order), by_bytes_desc);
	/* All zero and ranks ascending: already a valid min-heap. */
	for (uint32_t s = 0; s < p->num_servers; s++) {
		heap[s].bytes = 0;
		heap[s].rank = s;
	}
	for (uint32_t i = 0; i < p->num_parts; i++) {
		p->parts[order[i].index].server = heap[0].rank;
		heap[0].bytes += order[i].bytes;
		heap_sift_down(heap, p->num_servers, 0);
	}
	free(order);
	free(heap);
	return PS_OK;
}

/* Fusion groups (see DESIGN): run[t] = the number of tensors fused into
 * the partition that starts with tensor t, 0 for a tensor inside a group
 * that starts before it, 1 for a tensor on its own. */
static void fusion_runs(const ps_tensor_desc *tensors, uint32_t n,
                        uint64_t per_part, int fuse, uint32_t *run)
{
	uint32_t t = n;

	while (t > 0) {
		uint32_t hi = --t;
		uint64_t sum = tensors[t].numel;

		if (!fuse || sum >= per_part) {
			run[t] = 1;
			continue;
		}
		while (t > 0 && tensors[t - 1].numel < per_part &&
		       sum + tensors[t - 1].numel <= per_part) {
			t--;
			sum += tensors[t].numel;
			run[t + 1] = 0;
		}
		run[t] = hi - t + 1;
	}
}

/* Writes tensor t's partitions from parts[*g] on, MXNet's way: its
 * pieces, each cut into partitions on the piece's server. */
static void cut_mxnet(ps_placement *p, uint32_t t, uint64_t per_part,
                      uint32_t *g)
{
	uint64_t numel = p->tensors[t].numel;
	uint32_t S = p->num_servers, pieces = mxnet_pieces(numel, S);

	p->first_part[t] = *g;
	for (uint32_t i = 0; i < pieces; i++) {
		uint64_t off = mxnet_edge(numel, i, pieces),
		         end = mxnet_edge(numel, i + 1, pieces);
		uint32_t server = pieces > 1
		                      ? i
		                      : (uint32_t)(((uint64_t)t * 9973) % S);

		while (off < end) {
			uint64_t left = end - off;
			ps_partition *part = &p->parts[(*g)++];

			*part = (ps_partition){
			    .tensor = t,
			    .index = p->part_count[t]++,
			    .offset = off,
			    .numel = left < per_part ? left : per_part,
			    .server = server,
			    .ntensors = 1};
			off += part->numel;
		}
	}
}

/* Writes tensor t's partitions from parts[*g] on (one fused partition when
 * run > 1) and fills the per-tensor index. */
static void cut_tensor(ps_placement *p, uint32_t t, uint32_t run,
                       uint64_t per_part, uint32_t *g)
{
	ps_partition *part = &p->parts[*g];

	if (run > 1) {
		uint64_t base = 0;

		*part = (ps_partition){.tensor = t, .ntensors = run};
		for (uint32_t u = t; u < t + run; u++) {
			p->first_part[u] = *g;
			p->part_count[u] = 1;
			p->tensor_base[u] = base;
			base += p->tensors[u].numel;
		}
		part->numel = base;
		p->num_fused++;
		(*g)++;
		return;
	}
	p->first_part[t] = *g;
	for (uint64_t off = 0; off < p->tensors[t].numel; (*g)++) {
		uint64_t left = p->tensors[t].numel - off;

		part = &p->parts[*g];
		*part = (ps_partition){.tensor = t,
		                       .index = p->part_count[t]++,
		                       .offset = off,
		                       .numel = left < per_part ? left : per_part,
		                       .ntensors = 1};
		off += part->numel;
	}
}

int ps_placement_compute(const ps_tensor_desc *tensors, uint32_t n,
                         uint64_t partition_size, int fuse, uint32_t servers,
                         int strategy, ps_placement **p_p)
{
	uint32_t nparts = 0, g = 0, *run;
	uint64_t per_part;
	ps_placement *p;
	int rc;

	if (!p_p)
		return PS_EINVAL;
	rc = check_inputs(tensors, n, partition_size, servers, strategy,
	                  &nparts);
	if (rc != PS_OK)
		return rc;
	run = calloc(n, sizeof(*run));
	rc = run ? placement_alloc(n, nparts, servers, &p) : PS_ENOMEM;
	if (rc != PS_OK) {
		PS_ERROR("placement: out of memory (%u partitions)", nparts);
		free(run);
		return rc;
	}
	p->partition_size = partition_size;
	per_part = partition_size / PS_ELEM_SIZE;
	memcpy(p->tensors, tensors, (size_t)n * sizeof(*tensors));
	if (strategy == PS_PLACE_MXNET) {
		for (uint32_t t = 0; t < n; t++)
			cut_mxnet(p, t, per_part, &g);
	} else {
		fusion_runs(tensors, n, per_part, fuse, run);
		for (uint32_t t = 0; t < n; t++)
			if (run[t] > 0)
				cut_tensor(p, t, run[t], per_part, &g);
		for (uint32_t i = 0; i < g; i++)
			p->parts[i].server = i % servers;
	}
	free(run);
	p->num_parts = g; /* nparts was the count without fusion */
	p->first_part[n] = g;
	if (strategy == PS_PLACE_BALANCED) {
		rc = place_balanced(p);
		if (rc != PS_OK) {
			PS_ERROR("placement: out of memory (%u partitions)",
			         nparts);
			ps_placement_free(&p);
			return rc;
		}
	}
	for (uint32_t i = 0; i < g; i++)
		p->server_bytes[p->parts[i].server] +=
		    p->parts[i].numel * PS_ELEM_SIZE;
	*p_p = p;
	return PS_OK;
}

ps_segment ps_placement_segment(const ps_placement *p, uint32_t t, uint32_t k)
{
	uint32_t part = p->first_part[t] + k;
	const ps_partition *q = &p->parts[part];

	if (q->ntensors > 1)
		return (ps_segment){.part = part,
		                    .tensor_offset = 0,
		                    .part_offset = p->tensor_base[t],
		                    .numel = p->tensors[t].numel};
	return (ps_segment){.part = part,
	                    .tensor_offset = q->offset,
	                    .part_offset = 0,
	                    .numel = q->numel};
}

/* ---- rebuilding a received placement ------------------------------------ */

/* A fused part i, met when tensor t is next with `covered` elements of it
 * already covered: it must start tensor t and hold whole tensors, each
 * smaller than a partition, that fit in one together. */
static int check_fused(const ps_tensor_desc *tensors, uint32_t n,
                       const ps_partition *q, uint32_t i, uint32_t t,
                       uint64_t covered, uint64_t partition_size,
                       char *why, size_t whylen)
{
	uint64_t per_part = partition_size / PS_ELEM_SIZE, sum = 0;

	if (q->tensor != t || covered != 0 || q->index != 0 || q->offset != 0)
		return ps_errf(why, whylen, PS_EPROTO,
		              "placement: fused part %u must start tensor %u "
		              "at offset 0 (it says tensor %u, index %u, "
		              "offset %llu)",
		              i, t, q->tensor, q->index,
		              (unsigned long long)q->offset);
	if (q->ntensors > n - t)
		return ps_errf(why, whylen, PS_EPROTO,
		              "placement: fused part %u holds %u tensors from "
		              "tensor %u, but there are only %u",
		              i, q->ntensors, t, n);
	for (uint32_t u = t; u < t + q->ntensors; u++) {
		if (tensors[u].numel >= per_part)
			return ps_errf(why, whylen, PS_EPROTO,
			              "placement: fused part %u holds tensor %u "
			              "(%s), which is not smaller than a "
			              "partition",
			              i, u, tensors[u].name);
		sum += tensors[u].numel;
	}
	if (sum != q->numel || sum > per_part)
		return ps_errf(why, whylen, PS_EPROTO,
		              "placement: fused part %u has %llu elements; "
		              "its tensors hold %llu (at most %llu fit)",
		              i, (unsigned long long)q->numel,
		              (unsigned long long)sum,
		              (unsigned long long)per_part);
	return PS_OK;
}

int ps_placement_from_parts(const ps_tensor_desc *tensors, uint32_t n,
                            const ps_partition *parts, uint32_t nparts,
                            uint32_t servers, uint64_t partition_size,
                            ps_placement **p_p, char *why, size_t whylen)
{
	uint64_t total = 0, covered = 0;
	uint32_t t = 0, idx = 0;
	ps_placement *p;

	if (!p_p)
		return PS_EINVAL;
	if (n == 0 || n > PS_MAX_TENSORS)
		return ps_errf(why, whylen, PS_EPROTO, "placement: %u tensors (need 1..%u)",
		              n, PS_MAX_TENSORS);
	if (nparts > PS_MAX_PARTS)
		return ps_errf(why, whylen, PS_EPROTO, "placement: %u partitions (max %u)",
		              nparts, PS_MAX_PARTS);
	if (servers == 0 || servers > PS_MAX_SERVERS)
		return ps_errf(why, whylen, PS_EPROTO, "placement: %u servers (need 1..%u)",
		              servers, PS_MAX_SERVERS);
	if (partition_size < PS_ELEM_SIZE)
		return ps_errf(why, whylen, PS_EPROTO,
		              "placement: partition size %llu bytes is "
		              "smaller than one element",
		              (unsigned long long)partition_size);
	if (!tensors || (nparts > 0 && !parts))
		return PS_EINVAL;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t numel = tensors[i].numel;

		if (!memchr(tensors[i].name, '\0', PS_NAME_MAX))
			return ps_errf(why, whylen, PS_EPROTO,
			              "placement: tensor %u: name is not "
			              "NUL-terminated",
			              i);
		if (numel == 0 || numel > UINT64_MAX / PS_ELEM_SIZE)
			return ps_errf(why, whylen, PS_EPROTO,
			              "placement: tensor %u (%s): %llu "
			              "elements",
			              i, tensors[i].name,
			              (unsigned long long)numel);
		if (numel * PS_ELEM_SIZE > UINT64_MAX - total)
			return ps_errf(why, whylen, PS_EPROTO,
			              "placement: total size overflows");
		total += numel * PS_ELEM_SIZE;
	}
	/* Walk the parts in order: each continues exactly where the previous
	 * one stopped, moving to the next tensor once one is covered; a fused
	 * part covers whole tensors. */
	for (uint32_t i = 0; i < nparts; i++) {
		const ps_partition *q = &parts[i];

		if (t >= n)
			return ps_errf(why, whylen, PS_EPROTO,
			              "placement: part %u: every tensor is "
			              "already covered (%u extra parts)",
			              i, nparts - i);
		if (q->ntensors == 0)
			return ps_errf(why, whylen, PS_EPROTO,
			              "placement: part %u holds 0 tensors", i);
		if (q->server >= servers)
			return ps_errf(why, whylen, PS_EPROTO,
			              "placement: part %u is on server %u, "
			              "but there are %u servers",
			              i, q->server, servers);
		if (q->ntensors > 1) {
			int rc = check_fused(tensors, n, q, i, t, covered,
			                     partition_size, why, whylen);
			if (rc != PS_OK)
				return rc;
			t += q->ntensors;
			continue;
		}
		if (q->tensor != t)
			return ps_errf(why, whylen, PS_EPROTO,
			              "placement: part %u belongs to tensor "
			              "%u, expected tensor %u (parts out of "
			              "order, or tensor %u not covered: %llu "
			              "of %llu elements)",
			              i, q->tensor, t, t,
			              (unsigned long long)covered,
			              (unsigned long long)tensors[t].numel);
		if (q->index != idx)
			return ps_errf(why, whylen, PS_EPROTO,
			              "placement: part %u (tensor %u) has "
			              "index %u, expected %u",
			              i, t, q->index, idx);
		if (q->offset < covered)
			return ps_errf(why, whylen, PS_EPROTO,
			              "placement: part %u (tensor %u) at "
			              "offset %llu overlaps the previous part "
			              "(which ends at %llu)",
			              i, t, (unsigned long long)q->offset,
			              (unsigned long long)covered);
		if (q->offset > covered)
			return ps_errf(why, whylen, PS_EPROTO,
			              "placement: part %u (tensor %u) at "
			              "offset %llu leaves a gap (previous "
			              "part ends at %llu)",
			              i, t, (unsigned long long)q->offset,
			              (unsigned long long)covered);
		if (q->numel == 0 || q->numel > tensors[t].numel - covered)
			return ps_errf(
			    why, whylen, PS_EPROTO,
			    "placement: part %u (tensor %u) has "
			    "%llu elements, %llu remain in the "
			    "tensor",
			    i, t, (unsigned long long)q->numel,
			    (unsigned long long)(tensors[t].numel - covered));
		if (q->numel > partition_size / PS_ELEM_SIZE)
			return ps_errf(why, whylen, PS_EPROTO,
			              "placement: part %u (tensor %u) has "
			              "%llu elements, more than a partition "
			              "of %llu bytes holds",
			              i, t, (unsigned long long)q->numel,
			              (unsigned long long)partition_size);
		covered += q->numel;
		idx++;
		if (covered == tensors[t].numel) {
			t++;
			idx = 0;
			covered = 0;
		}
	}
	if (t < n)
		return ps_errf(why, whylen, PS_EPROTO,
		              "placement: tensor %u (%s) is not covered: %llu "
		              "of %llu elements",
		              t, tensors[t].name, (unsigned long long)covered,
		              (unsigned long long)tensors[t].numel);

	if (placement_alloc(n, nparts, servers, &p) != PS_OK) {
		ps_errf(why, whylen, PS_EPROTO, "placement: out of memory");
		return PS_ENOMEM;
	}
	memcpy(p->tensors, tensors, (size_t)n * sizeof(*tensors));
	if (nparts > 0)
		memcpy(p->parts, parts, (size_t)nparts * sizeof(*parts));
	p->partition_size = partition_size;
	for (uint32_t i = 0; i < nparts; i++) {
		const ps_partition *q = &parts[i];
		uint64_t base = 0;

		p->server_bytes[q->server] += q->numel * PS_ELEM_SIZE;
		if (q->ntensors > 1)
			p->num_fused++;
		for (uint32_t u = q->tensor; u < q->tensor + q->ntensors;
		     u++) {
			if (p->part_count[u]++ == 0)
				p->first_part[u] = i;
			p->tensor_base[u] = q->ntensors > 1 ? base : 0;
			base += tensors[u].numel;
		}
	}
	p->first_part[n] = nparts;
	*p_p = p;
	return PS_OK;
}

/* ---- queries ------------------------------------------------------------ */

double ps_placement_imbalance(const ps_placement *p)
{
	uint64_t max = 0;
	double total = 0;

	if (!p || p->num_servers == 0)
		return 1.0;
	for (uint32_t s = 0; s < p->num_servers; s++) {
		if (p->server_bytes[s] > max)
			max = p->server_bytes[s];
		total += (double)p->server_bytes[s];
	}
	if (total == 0)
		return 1.0;
	return (double)max / (total / p->num_servers);
}

int64_t ps_placement_find_tensor(const ps_placement *p, const char *name)
{
	if (!p || !name)
		return -1;
	for (uint32_t t = 0; t < p->num_tensors; t++)
		if (strncmp(p->tensors[t].name, name, PS_NAME_MAX) == 0)
			return t;
	return -1;
}

static void human_bytes(uint64_t bytes, char *buf, size_t cap)
{
	static const char *const units[] = {"KiB", "MiB", "GiB",
	                                    "TiB", "PiB", "EiB"};
	double v = (double)bytes;
	int u = -1;

	if (bytes < 1024) {
		snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
		return;
	}
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(buf, cap, "%.1f %s", v, units[u]);
}

/* The strategy that produces p's assignment: recomputed, since a placement
 * does not record it (and one received from the network may be neither). */
static const char *strategy_of(const ps_placement *p)
{
	static const int strategies[] = {PS_PLACE_BALANCED,
	                                 PS_PLACE_ROUND_ROBIN, PS_PLACE_MXNET};
	static const char *const names[] = {"balanced", "round-robin",
	                                    "mxnet"};

	for (size_t k = 0; k < 3; k++) {
		ps_placement *q = NULL;
		int same;

		if (ps_placement_compute(p->tensors, p->num_tensors,
		                         p->partition_size, p->num_fused > 0,
		                         p->num_servers,
		                         strategies[k], &q) != PS_OK)
			return "custom";
		same = q->num_parts == p->num_parts;
		for (uint32_t i = 0; same && i < p->num_parts; i++)
			same = q->parts[i].server == p->parts[i].server &&
			       q->parts[i].numel == p->parts[i].numel;
		ps_placement_free(&q);
		if (same)
			return names[k];
	}
	return "custom";
}

void ps_placement_print(const ps_placement *p, FILE *out)
{
	char size[32];
	uint32_t *count;

	if (!p || !out)
		return;
	human_bytes(p->partition_size, size, sizeof(size));
	fprintf(out, "placement: %u partitions of <= %s on %u servers (%s)",
	        p->num_parts, size, p->num_servers, strategy_of(p));
	if (p->num_fused > 0)
		fprintf(out, ", %u of them fused from small tensors",
		        p->num_fused);
	fputc('\n', out);
	count = calloc(p->num_servers ? p->num_servers : 1, sizeof(*count));
	for (uint32_t i = 0; count && i < p->num_parts; i++)
		count[p->parts[i].server]++;
	for (uint32_t s = 0; s < p->num_servers; s++) {
		human_bytes(p->server_bytes[s], size, sizeof(size));
		if (count)
			fprintf(out, "  server %u: %s (%u partitions)\n", s,
			        size, count[s]);
		else
			fprintf(out, "  server %u: %s\n", s, size);
	}
	free(count);
	fprintf(out, "  imbalance max/mean = %.3f\n",
	        ps_placement_imbalance(p));
}

/* ---- pieces ------------------------------------------------------------ */

static uint64_t piece_elems(uint64_t piece_bytes)
{
	uint64_t e = piece_bytes / PS_ELEM_SIZE;

	return e ? e : 1;
}

uint64_t ps_part_pieces(const ps_partition *q, uint64_t piece_bytes)
{
	uint64_t e = piece_elems(piece_bytes);

	if (piece_bytes == 0 || q->numel <= e)
		return 1;
	return (q->numel + e - 1) / e;
}

void ps_piece_span(const ps_partition *q, uint64_t piece_bytes, uint32_t i,
		   uint64_t *offset_p, uint64_t *numel_p)
{
	uint64_t e = piece_elems(piece_bytes), off;

	if (piece_bytes == 0 || q->numel <= e) {
		*offset_p = 0;
		*numel_p = q->numel;
		return;
	}
	off = (uint64_t)i * e;
	*offset_p = off;
	*numel_p = off >= q->numel ? 0 : q->numel - off < e ? q->numel - off : e;
}

int ps_pieces_check(const ps_placement *p, uint64_t piece_bytes, char *why,
		    size_t whylen)
{
	for (uint32_t i = 0; i < p->num_parts; i++) {
		uint64_t n = ps_part_pieces(&p->parts[i], piece_bytes);
		if (n > PS_MAX_PIECES) {
			snprintf(why, whylen,
			         "partition %u would be sent in %llu pieces of "
			         "%llu bytes, more than %u",
			         i, (unsigned long long)n,
			         (unsigned long long)piece_bytes, PS_MAX_PIECES);
			return PS_EINVAL;
		}
	}
	return PS_OK;
}
