/*
 * tests/scheduling/test_placement.c - cutting tensors into partitions, placing
 * them on servers (LPT vs round-robin), and checking received placements.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "scheduling/placement.h"

#define KIB 1024ull
#define MIB (1024ull * 1024ull)

/* Every invariant a placement promises (placement.h): walking the tensors'
 * segments in order visits every partition once, in order; each tensor is
 * covered exactly; a fused partition holds whole tensors back to back,
 * each smaller than a partition. */
static void check_invariants(const ps_placement *p)
{
	uint64_t *bytes;
	uint32_t g = 0, fused = 0;

	assert_non_null(p);
	assert_true(p->num_tensors > 0);
	assert_true(p->num_servers > 0);
	assert_true(p->partition_size >= PS_ELEM_SIZE);
	bytes = calloc(p->num_servers, sizeof(*bytes));
	assert_non_null(bytes);
	for (uint32_t i = 0; i < p->num_parts; i++) {
		const ps_partition *q = &p->parts[i];

		assert_true(q->numel > 0);
		assert_true(q->numel * PS_ELEM_SIZE <= p->partition_size);
		assert_true(q->server < p->num_servers);
		assert_true(q->ntensors >= 1);
		fused += q->ntensors > 1;
		bytes[q->server] += q->numel * PS_ELEM_SIZE;
	}
	assert_int_equal(fused, p->num_fused);
	for (uint32_t t = 0; t < p->num_tensors; t++) {
		uint64_t off = 0;

		assert_true(p->part_count[t] >= 1);
		for (uint32_t k = 0; k < p->part_count[t]; k++) {
			ps_segment sg = ps_placement_segment(p, t, k);
			const ps_partition *q = &p->parts[sg.part];

			assert_int_equal(sg.tensor_offset, off);
			assert_true(sg.part_offset + sg.numel <= q->numel);
			if (q->ntensors > 1) {
				/* whole, right after the previous member */
				assert_int_equal(p->part_count[t], 1);
				assert_true(t >= q->tensor &&
				            t < q->tensor + q->ntensors);
				assert_int_equal(sg.numel,
				                 p->tensors[t].numel);
				assert_true(sg.numel * PS_ELEM_SIZE <
				            p->partition_size);
				if (t == q->tensor)
					assert_int_equal(sg.part_offset, 0);
				else
					assert_int_equal(
					    sg.part_offset,
					    p->tensor_base[t - 1] +
					        p->tensors[t - 1].numel);
				if (t + 1 == q->tensor + q->ntensors)
					assert_int_equal(sg.part_offset +
					                     sg.numel,
					                 q->numel);
			} else {
				assert_int_equal(q->tensor, t);
				assert_int_equal(q->index, k);
				assert_int_equal(sg.part_offset, 0);
				assert_int_equal(sg.numel, q->numel);
			}
			/* partitions are visited once each, in order */
			if (q->ntensors == 1 || t == q->tensor)
				assert_int_equal(sg.part, g++);
			off += sg.numel;
		}
		assert_int_equal(off, p->tensors[t].numel);
	}
	assert_int_equal(g, p->num_parts);
	assert_int_equal(p->first_part[p->num_tensors], p->num_parts);
	for (uint32_t s = 0; s < p->num_servers; s++)
		assert_int_equal(bytes[s], p->server_bytes[s]);
	free(bytes);
}

static uint64_t max_part_bytes(const ps_placement *p)
{
	uint64_t m = 0;

	for (uint32_t i = 0; i < p->num_parts; i++)
		if (p->parts[i].numel * PS_ELEM_SIZE > m)
			m = p->parts[i].numel * PS_ELEM_SIZE;
	return m;
}

/* LPT (indeed any greedy least-loaded rule): max <= mean + largest part. */
static void check_lpt_bound(const ps_placement *p)
{
	uint64_t max = 0, total = 0;

	for (uint32_t s = 0; s < p->num_servers; s++) {
		total += p->server_bytes[s];
		if (p->server_bytes[s] > max)
			max = p->server_bytes[s];
	}
	assert_true((double)max <=
	            (double)total / p->num_servers + (double)max_part_bytes(p));
}

static ps_tensor_desc tensor(const char *name, uint64_t numel)
{
	ps_tensor_desc t;

	memset(&t, 0, sizeof(t));
	snprintf(t.name, sizeof(t.name), "%s", name);
	t.numel = numel;
	return t;
}

/* The 32 parameter tensors of VGG16 (weights and biases). */
static uint32_t vgg16(ps_tensor_desc *t)
{
	static const uint32_t conv[13][2] = {
	    {3, 64},    {64, 64},   {64, 128},  {128, 128}, {128, 256},
	    {256, 256}, {256, 256}, {256, 512}, {512, 512}, {512, 512},
	    {512, 512}, {512, 512}, {512, 512}};
	static const uint64_t fc[3][2] = {
	    {25088, 4096}, {4096, 4096}, {4096, 1000}};
	uint32_t n = 0;
	char name[PS_NAME_MAX];

	for (int i = 0; i < 13; i++) {
		snprintf(name, sizeof(name), "conv%d.weight", i + 1);
		t[n++] = tensor(name, 9ull * conv[i][0] * conv[i][1]);
		snprintf(name, sizeof(name), "conv%d.bias", i + 1);
		t[n++] = tensor(name, conv[i][1]);
	}
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "fc%d.weight", i + 6);
		t[n++] = tensor(name, fc[i][0] * fc[i][1]);
		snprintf(name, sizeof(name), "fc%d.bias", i + 6);
		t[n++] = tensor(name, fc[i][1]);
	}
	return n;
}

static void test_uneven_split(void **state)
{
	ps_tensor_desc t[3] = {tensor("a", 4097), tensor("b", 256),
	                       tensor("c", 255)};
	ps_placement *p = NULL;

	(void)state;
	/* 1 KiB = 256 elements: a -> 16 full + 1 of 1 element; b -> 1; c -> 1
	 */
	assert_int_equal(
	    ps_placement_compute(t, 3, 1 * KIB, 0, 3, PS_PLACE_BALANCED, &p),
	    PS_OK);
	check_invariants(p);
	assert_int_equal(p->num_parts, 19);
	assert_int_equal(p->first_part[0], 0);
	assert_int_equal(p->first_part[1], 17);
	assert_int_equal(p->first_part[2], 18);
	assert_int_equal(p->first_part[3], 19);
	for (uint32_t i = 0; i < 16; i++) {
		assert_int_equal(p->parts[i].offset, 256ull * i);
		assert_int_equal(p->parts[i].numel, 256);
	}
	assert_int_equal(p->parts[16].offset, 4096);
	assert_int_equal(p->parts[16].numel, 1);
	assert_int_equal(p->parts[17].numel, 256);
	assert_int_equal(p->parts[18].numel, 255);
	assert_int_equal(p->partition_size, 1 * KIB);
	ps_placement_free(&p);
	assert_null(p);

	/* a partition size that is not a multiple of 4: 1023 -> 255 elements */
	assert_int_equal(
	    ps_placement_compute(t, 3, 1023, 0, 2, PS_PLACE_ROUND_ROBIN, &p),
	    PS_OK);
	check_invariants(p);
	assert_int_equal(p->first_part[1], 17); /* 16 * 255 = 4080, + 17 */
	assert_int_equal(p->parts[16].numel, 17);
	assert_int_equal(p->first_part[2] - p->first_part[1], 2); /* 255+1 */
	assert_int_equal(p->first_part[3] - p->first_part[2], 1);
	assert_int_equal(p->num_parts, 20);
	ps_placement_free(&p);

	/* one element per partition */
	assert_int_equal(
	    ps_placement_compute(t, 3, 7, 0, 5, PS_PLACE_BALANCED, &p), PS_OK);
	check_invariants(p);
	assert_int_equal(p->num_parts, 4097 + 256 + 255);
	ps_placement_free(&p);
}

static void test_partition_larger_than_tensors(void **state)
{
	ps_tensor_desc t[3] = {tensor("a", 1000), tensor("b", 1),
	                       tensor("c", 123456)};
	ps_placement *p = NULL;

	(void)state;
	assert_int_equal(
	    ps_placement_compute(t, 3, 1024 * MIB, 0, 2, PS_PLACE_BALANCED, &p),
	    PS_OK);
	check_invariants(p);
	assert_int_equal(p->num_parts, 3);
	for (uint32_t i = 0; i < 3; i++) {
		assert_int_equal(p->parts[i].tensor, i);
		assert_int_equal(p->parts[i].offset, 0);
		assert_int_equal(p->parts[i].numel, t[i].numel);
	}
	/* LPT: c (largest) -> 0, a -> 1, b -> 1 */
	assert_int_equal(p->parts[2].server, 0);
	assert_int_equal(p->parts[0].server, 1);
	assert_int_equal(p->parts[1].server, 1);
	/* exactly one partition per tensor at partition == tensor bytes */
	ps_placement_free(&p);
	assert_int_equal(
	    ps_placement_compute(t, 3, 123456 * 4, 0, 2, PS_PLACE_BALANCED, &p),
	    PS_OK);
	assert_int_equal(p->num_parts, 3);
	ps_placement_free(&p);
}

static void test_lpt_ties_and_round_robin(void **state)
{
	ps_tensor_desc t[6] = {tensor("t0", 5), tensor("t1", 3),
	                       tensor("t2", 3), tensor("t3", 2),
	                       tensor("t4", 2), tensor("t5", 2)};
	static const uint32_t lpt[6] = {0, 1, 1, 0, 1, 0};
	ps_placement *p = NULL;

	(void)state;
	assert_int_equal(
	    ps_placement_compute(t, 6, 1 * MIB, 0, 2, PS_PLACE_BALANCED, &p),
	    PS_OK);
	check_invariants(p);
	for (int i = 0; i < 6; i++)
		assert_int_equal(p->parts[i].server, lpt[i]);
	assert_int_equal(p->server_bytes[0], 36);
	assert_int_equal(p->server_bytes[1], 32);
	assert_true(ps_placement_imbalance(p) > 1.058 &&
	            ps_placement_imbalance(p) < 1.059); /* 36 / 34 */
	ps_placement_free(&p);

	assert_int_equal(
	    ps_placement_compute(t, 6, 1 * MIB, 0, 4, PS_PLACE_ROUND_ROBIN, &p),
	    PS_OK);
	check_invariants(p);
	for (uint32_t i = 0; i < 6; i++)
		assert_int_equal(p->parts[i].server, i % 4);
	ps_placement_free(&p);

	/* equal sizes: LPT keeps global order, servers by rank */
	for (int i = 0; i < 6; i++)
		t[i].numel = 7;
	assert_int_equal(
	    ps_placement_compute(t, 6, 1 * MIB, 0, 4, PS_PLACE_BALANCED, &p),
	    PS_OK);
	for (uint32_t i = 0; i < 6; i++)
		assert_int_equal(p->parts[i].server, i % 4);
	ps_placement_free(&p);
}

static void test_determinism(void **state)
{
	ps_tensor_desc t[32];
	uint32_t n = vgg16(t);
	ps_placement *a = NULL, *b = NULL;

	(void)state;
	assert_int_equal(
	    ps_placement_compute(t, n, 1 * MIB, 0, 5, PS_PLACE_BALANCED, &a),
	    PS_OK);
	assert_int_equal(
	    ps_placement_compute(t, n, 1 * MIB, 0, 5, PS_PLACE_BALANCED, &b),
	    PS_OK);
	assert_int_equal(a->num_parts, b->num_parts);
	for (uint32_t i = 0; i < a->num_parts; i++) {
		assert_int_equal(a->parts[i].server, b->parts[i].server);
		assert_int_equal(a->parts[i].offset, b->parts[i].offset);
		assert_int_equal(a->parts[i].numel, b->parts[i].numel);
	}
	assert_memory_equal(a->server_bytes, b->server_bytes,
	                    5 * sizeof(uint64_t));
	assert_memory_equal(a->first_part, b->first_part,
	                    (n + 1) * sizeof(uint32_t));
	ps_placement_free(&a);
	ps_placement_free(&b);
}

static void test_vgg16(void **state)
{
	ps_tensor_desc t[32];
	uint32_t n = vgg16(t);
	ps_placement *bal = NULL, *rr = NULL;
	uint64_t total = 0;
	double ib, ir;

	(void)state;
	assert_int_equal(n, 32);
	for (uint32_t i = 0; i < n; i++)
		total += t[i].numel;
	assert_int_equal(total, 138357544ull);

	assert_int_equal(
	    ps_placement_compute(t, n, 4 * MIB, 0, 4, PS_PLACE_BALANCED, &bal),
	    PS_OK);
	assert_int_equal(
	    ps_placement_compute(t, n, 4 * MIB, 0, 4, PS_PLACE_ROUND_ROBIN, &rr),
	    PS_OK);
	check_invariants(bal);
	check_invariants(rr);
	check_lpt_bound(bal);
	assert_int_equal(bal->first_part[27] - bal->first_part[26], 98);
	ib = ps_placement_imbalance(bal);
	ir = ps_placement_imbalance(rr);
	print_message("VGG16, 4 MiB partitions, 4 servers: %u partitions, "
	              "imbalance balanced %.4f, round-robin %.4f\n",
	              bal->num_parts, ib, ir);
	ps_placement_print(bal, stdout);
	ps_placement_print(rr, stdout);
	assert_true(ib <= 1.05);
	assert_true(ir > ib);
	assert_int_equal(ps_placement_find_tensor(bal, "fc6.weight"), 26);
	assert_int_equal(ps_placement_find_tensor(bal, "conv1.weight"), 0);
	assert_int_equal(ps_placement_find_tensor(bal, "fc9.weight"), -1);
	assert_int_equal(ps_placement_find_tensor(bal, ""), -1);
	ps_placement_free(&bal);
	ps_placement_free(&rr);
}

static void test_sweep(void **state)
{
	static const uint64_t sizes[] = {256 * KIB, 1 * MIB,  3 * MIB + 4,
	                                 4 * MIB,   16 * MIB, 512 * MIB};
	ps_tensor_desc t[32];
	uint32_t n = vgg16(t);

	(void)state;
	for (uint32_t s = 1; s <= 8; s++) {
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			for (int strat = 0; strat < 4; strat++) {
				ps_placement *p = NULL;

				/* strat / 2: fusion off, on */
				assert_int_equal(
				    ps_placement_compute(t, n, sizes[k],
				                         strat / 2, s,
				                         strat % 2, &p),
				    PS_OK);
				check_invariants(p);
				if (strat % 2 == PS_PLACE_BALANCED)
					check_lpt_bound(p);
				assert_true(ps_placement_imbalance(p) >= 1.0);
				if (s == 1)
					assert_true(ps_placement_imbalance(p) ==
					            1.0);
				ps_placement_free(&p);
			}
		}
	}
}

static void test_compute_rejects(void **state)
{
	ps_tensor_desc t[2] = {tensor("a", 10), tensor("b", 20)};
	ps_placement *p = NULL;

	(void)state;
	assert_int_equal(ps_placement_compute(t, 0, 1024, 0, 1, 0, &p), PS_EINVAL);
	assert_int_equal(ps_placement_compute(NULL, 2, 1024, 0, 1, 0, &p),
	                 PS_EINVAL);
	assert_int_equal(ps_placement_compute(t, 2, 1024, 0, 0, 0, &p), PS_EINVAL);
	assert_int_equal(
	    ps_placement_compute(t, 2, 1024, 0, PS_MAX_SERVERS + 1, 0, &p),
	    PS_EINVAL);
	assert_int_equal(ps_placement_compute(t, 2, 3, 0, 1, 0, &p), PS_EINVAL);
	assert_int_equal(ps_placement_compute(t, 2, 1024, 0, 1, 7, &p), PS_EINVAL);
	t[1].numel = 0;
	assert_int_equal(ps_placement_compute(t, 2, 1024, 0, 1, 0, &p), PS_EINVAL);
	t[1].numel = UINT64_MAX / PS_ELEM_SIZE + 1; /* bytes overflow */
	assert_int_equal(ps_placement_compute(t, 2, 1024, 0, 1, 0, &p), PS_EINVAL);
	t[1].numel = PS_MAX_PARTS; /* + a's 10 -> too many partitions */
	assert_int_equal(ps_placement_compute(t, 2, 4, 0, 1, 0, &p), PS_EINVAL);
	t[1].numel = UINT64_MAX / PS_ELEM_SIZE; /* huge, but fits */
	assert_int_equal(ps_placement_compute(t, 2, UINT64_MAX, 0, 1, 0, &p),
	                 PS_EINVAL); /* total bytes overflow */
	assert_int_equal(ps_placement_compute(&t[1], 1, UINT64_MAX, 0, 1, 0, &p),
	                 PS_OK);
	check_invariants(p);
	ps_placement_free(&p);
	memset(t[0].name, 'x', sizeof(t[0].name)); /* no NUL */
	assert_int_equal(ps_placement_compute(t, 2, 1024, 0, 1, 0, &p), PS_EINVAL);
	assert_null(p);
}

/* from_parts on a copy of a computed placement's parts. */
static int rebuild(const ps_placement *p, const ps_partition *parts,
                   uint32_t nparts, uint32_t servers, ps_placement **q_p,
                   char *why, size_t whylen)
{
	return ps_placement_from_parts(p->tensors, p->num_tensors, parts,
	                               nparts, servers, p->partition_size, q_p,
	                               why, whylen);
}

static void test_from_parts(void **state)
{
	ps_tensor_desc t[3] = {tensor("a", 4097), tensor("b", 256),
	                       tensor("c", 255)};
	ps_placement *p = NULL, *q = NULL;
	ps_partition *parts;
	char why[256];
	uint32_t np;

	(void)state;
	assert_int_equal(
	    ps_placement_compute(t, 3, 1 * KIB, 0, 3, PS_PLACE_BALANCED, &p),
	    PS_OK);
	np = p->num_parts;
	parts = malloc(np * sizeof(*parts));
	assert_non_null(parts);

	/* a faithful copy is accepted and equal */
	memcpy(parts, p->parts, np * sizeof(*parts));
	assert_int_equal(rebuild(p, parts, np, 3, &q, why, sizeof(why)), PS_OK);
	check_invariants(q);
	assert_memory_equal(q->server_bytes, p->server_bytes,
	                    3 * sizeof(uint64_t));
	assert_memory_equal(q->first_part, p->first_part, 4 * sizeof(uint32_t));
	ps_placement_free(&q);

	/* overlap */
	parts[3].offset -= 1;
	assert_int_equal(rebuild(p, parts, np, 3, &q, why, sizeof(why)),
	                 PS_EPROTO);
	assert_null(q);
	assert_non_null(strstr(why, "overlaps"));
	print_message("overlap: %s\n", why);
	/* gap */
	memcpy(parts, p->parts, np * sizeof(*parts));
	parts[3].offset += 1;
	assert_int_equal(rebuild(p, parts, np, 3, &q, why, sizeof(why)),
	                 PS_EPROTO);
	assert_non_null(strstr(why, "gap"));
	/* out of order: two parts of a swapped */
	memcpy(parts, p->parts, np * sizeof(*parts));
	parts[4] = p->parts[5];
	parts[5] = p->parts[4];
	assert_int_equal(rebuild(p, parts, np, 3, &q, why, sizeof(why)),
	                 PS_EPROTO);
	/* out of order: tensors b and c swapped */
	memcpy(parts, p->parts, np * sizeof(*parts));
	parts[17] = p->parts[18];
	parts[18] = p->parts[17];
	assert_int_equal(rebuild(p, parts, np, 3, &q, why, sizeof(why)),
	                 PS_EPROTO);
	assert_non_null(strstr(why, "out of order"));
	/* server >= S */
	memcpy(parts, p->parts, np * sizeof(*parts));
	parts[7].server = 3;
	assert_int_equal(rebuild(p, parts, np, 3, &q, why, sizeof(why)),
	                 PS_EPROTO);
	assert_non_null(strstr(why, "server"));
	/* numel mismatch: the last part of a too long, too short */
	memcpy(parts, p->parts, np * sizeof(*parts));
	parts[16].numel = 2;
	assert_int_equal(rebuild(p, parts, np, 3, &q, why, sizeof(why)),
	                 PS_EPROTO);
	parts[16].numel = 0;
	assert_int_equal(rebuild(p, parts, np, 3, &q, why, sizeof(why)),
	                 PS_EPROTO);
	/* a part longer than the partition size */
	{
		ps_tensor_desc big[3] = {t[0], tensor("b", 257), t[2]};
		ps_partition fat[19];

		memcpy(fat, p->parts, sizeof(fat));
		fat[17].numel = 257;
		assert_int_equal(ps_placement_from_parts(big, 3, fat, 19, 3,
		                                         1 * KIB, &q, why,
		                                         sizeof(why)),
		                 PS_EPROTO);
		assert_non_null(strstr(why, "partition"));
	}
	/* tensor not covered: the last part missing */
	memcpy(parts, p->parts, np * sizeof(*parts));
	assert_int_equal(rebuild(p, parts, np - 1, 3, &q, why, sizeof(why)),
	                 PS_EPROTO);
	assert_non_null(strstr(why, "not covered"));
	/* an extra part after everything is covered */
	{
		ps_partition more[20];

		memcpy(more, p->parts, 19 * sizeof(*more));
		more[19] = more[18];
		assert_int_equal(ps_placement_from_parts(t, 3, more, 20, 3,
		                                         1 * KIB, &q, why,
		                                         sizeof(why)),
		                 PS_EPROTO);
	}
	/* wrong index */
	memcpy(parts, p->parts, np * sizeof(*parts));
	parts[2].index = 7;
	assert_int_equal(rebuild(p, parts, np, 3, &q, why, sizeof(why)),
	                 PS_EPROTO);
	/* bad global arguments */
	memcpy(parts, p->parts, np * sizeof(*parts));
	assert_int_equal(rebuild(p, parts, np, 0, &q, why, sizeof(why)),
	                 PS_EPROTO);
	assert_int_equal(ps_placement_from_parts(t, 0, parts, np, 3, 1 * KIB,
	                                         &q, why, sizeof(why)),
	                 PS_EPROTO);
	assert_int_equal(ps_placement_from_parts(t, 3, parts, np, 3, 2, &q, why,
	                                         sizeof(why)),
	                 PS_EPROTO);
	/* no why buffer is fine */
	parts[0].server = 99;
	assert_int_equal(rebuild(p, parts, np, 3, &q, NULL, 0), PS_EPROTO);
	assert_null(q);
	free(parts);
	ps_placement_free(&p);
}

/* MXNet's KVStore placement: an array of a million elements or more in
 * one equal piece per server (piece i on server i), a smaller one whole on
 * server (index x 9973) mod S; pieces larger than a partition cut further,
 * on their piece's server; one server: nothing split. */
static void test_mxnet(void **state)
{
	ps_tensor_desc t[4] = {tensor("a", 2000001), tensor("b", 10),
	                       tensor("c", 999999), tensor("d", 3000000)};
	ps_placement *p = NULL, *back = NULL;
	char why[256];
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_int_equal(ps_placement_compute(t, 4, 1ull << 40, 0, 3,
	                                      PS_PLACE_MXNET, &p),
	                 PS_OK);
	check_invariants(p);
	assert_int_equal(p->num_parts, 3 + 1 + 1 + 3);
	/* a: 2000001 / 3 = 666667 each */
	for (uint32_t i = 0; i < 3; i++) {
		assert_int_equal(p->parts[i].tensor, 0);
		assert_int_equal(p->parts[i].numel, 666667);
		assert_int_equal(p->parts[i].server, i);
	}
	assert_int_equal(p->parts[3].server, 9973 % 3);     /* b: 1 */
	assert_int_equal(p->parts[4].server, 2 * 9973 % 3); /* c: 2 */
	assert_int_equal(p->parts[4].numel, 999999);        /* under the bound */
	for (uint32_t i = 0; i < 3; i++) {
		assert_int_equal(p->parts[5 + i].numel, 1000000);
		assert_int_equal(p->parts[5 + i].server, i);
	}
	/* its print names it; a node receiving it accepts it */
	f = open_memstream(&text, &len);
	assert_non_null(f);
	ps_placement_print(p, f);
	fclose(f);
	assert_non_null(strstr(text, "(mxnet)"));
	free(text);
	assert_int_equal(ps_placement_from_parts(p->tensors, 4, p->parts,
	                                         p->num_parts, 3,
	                                         p->partition_size, &back, why,
	                                         sizeof(why)),
	                 PS_OK);
	ps_placement_free(&back);
	ps_placement_free(&p);

	/* uneven pieces: the edges are rounded, 2000000 on 3 servers is
	 * 666667, 666666, 666667 */
	t[0].numel = 2000000;
	assert_int_equal(ps_placement_compute(t, 1, 1ull << 40, 0, 3,
	                                      PS_PLACE_MXNET, &p),
	                 PS_OK);
	assert_int_equal(p->parts[0].numel, 666667);
	assert_int_equal(p->parts[1].numel, 666666);
	assert_int_equal(p->parts[2].numel, 666667);
	ps_placement_free(&p);

	/* partitions of 1 MiB (262144 elements) cut each piece further */
	assert_int_equal(ps_placement_compute(t, 4, 1ull << 20, 0, 2,
	                                      PS_PLACE_MXNET, &p),
	                 PS_OK);
	check_invariants(p);
	for (uint32_t i = 0; i < p->num_parts; i++) {
		const ps_partition *q = &p->parts[i];
		if (q->tensor == 0)
			assert_int_equal(q->server, q->offset < 1000000 ? 0 : 1);
	}
	/* a: 1000000 per piece = 4 partitions each */
	assert_int_equal(p->part_count[0], 8);
	ps_placement_free(&p);

	/* one server: nothing split, everything on it */
	assert_int_equal(ps_placement_compute(t, 4, 1ull << 40, 0, 1,
	                                      PS_PLACE_MXNET, &p),
	                 PS_OK);
	assert_int_equal(p->num_parts, 4);
	ps_placement_free(&p);
}

static void test_print_and_imbalance(void **state)
{
	ps_tensor_desc t[2] = {tensor("w", 3 * 1024 * 1024), tensor("b", 10)};
	ps_placement *p = NULL;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_int_equal(
	    ps_placement_compute(t, 2, 4 * MIB, 0, 3, PS_PLACE_BALANCED, &p),
	    PS_OK);
	f = open_memstream(&text, &len);
	assert_non_null(f);
	ps_placement_print(p, f);
	fclose(f);
	assert_non_null(strstr(text, "placement: 4 partitions of <= 4.0 "
	                             "MiB on 3 servers (balanced)"));
	assert_non_null(strstr(text, "server 0: 4.0 MiB (2 partitions)"));
	assert_non_null(strstr(text, "imbalance max/mean = "));
	free(text);
	/* 4 MiB, 4 MiB, 4 MiB + 40 B: max / mean just above 1 */
	assert_true(ps_placement_imbalance(p) >= 1.0 &&
	            ps_placement_imbalance(p) < 1.0001);
	ps_placement_free(&p);
	ps_placement_free(&p); /* NULL is fine */
	ps_placement_free(NULL);
	assert_true(ps_placement_imbalance(NULL) == 1.0);
}

/* The worked example of presets.sh: 256 KiB partitions (65536 elements);
 * from the last tensor back, 3000 + 20 fuse, 300000 is cut, 50000 + 10 + 7
 * fuse, 100000 is cut, 1000 stays alone. */
static void test_fusion_groups(void **state)
{
	ps_tensor_desc t[8] = {tensor("t0", 1000),   tensor("t1", 100000),
	                       tensor("t2", 10),     tensor("t3", 50000),
	                       tensor("t4", 7),      tensor("t5", 300000),
	                       tensor("t6", 3000),   tensor("t7", 20)};
	static const uint32_t first[8] = {0, 1, 3, 3, 3, 4, 9, 9};
	static const uint32_t count[8] = {1, 2, 1, 1, 1, 5, 1, 1};
	static const uint64_t base[8] = {0, 0, 0, 10, 50010, 0, 0, 3000};
	ps_placement *p = NULL, *off = NULL;

	(void)state;
	assert_int_equal(ps_placement_compute(t, 8, 256 * KIB, 1, 2,
	                                      PS_PLACE_BALANCED, &p),
	                 PS_OK);
	check_invariants(p);
	assert_int_equal(p->num_parts, 10);
	assert_int_equal(p->num_fused, 2);
	for (uint32_t i = 0; i < 8; i++) {
		assert_int_equal(p->first_part[i], first[i]);
		assert_int_equal(p->part_count[i], count[i]);
		assert_int_equal(p->tensor_base[i], base[i]);
	}
	assert_int_equal(p->parts[3].ntensors, 3);
	assert_int_equal(p->parts[3].numel, 50017);
	assert_int_equal(p->parts[9].ntensors, 2);
	assert_int_equal(p->parts[9].numel, 3020);
	/* without fusion: one partition per small tensor */
	assert_int_equal(ps_placement_compute(t, 8, 256 * KIB, 0, 2,
	                                      PS_PLACE_BALANCED, &off),
	                 PS_OK);
	check_invariants(off);
	assert_int_equal(off->num_parts, 13);
	assert_int_equal(off->num_fused, 0);
	ps_placement_free(&off);
	ps_placement_free(&p);

	/* a run is cut where the next tensor no longer fits: 40000 x 3
	 * from the back gives (t1, t2) fused and t0 alone */
	{
		ps_tensor_desc r[3] = {tensor("a", 40000), tensor("b", 30000),
		                       tensor("c", 30000)};
		assert_int_equal(ps_placement_compute(r, 3, 256 * KIB, 1, 1,
		                                      PS_PLACE_BALANCED, &p),
		                 PS_OK);
		check_invariants(p);
		assert_int_equal(p->num_parts, 2);
		assert_int_equal(p->parts[0].ntensors, 1);
		assert_int_equal(p->parts[1].ntensors, 2);
		assert_int_equal(p->parts[1].numel, 60000);
		ps_placement_free(&p);
	}
}

/* Fusion keeps placement byte-balanced: ResNet-like many small tensors
 * with a few big ones, 1 MiB partitions on 4 servers. */
static void test_fusion_balance(void **state)
{
	ps_tensor_desc t[200];
	ps_placement *p = NULL;
	uint32_t n = 0;

	(void)state;
	srand(7);
	for (; n < 200; n++) {
		char name[16];
		uint64_t numel = n % 20 == 0 ? 2000000 + rand() % 100000
		                             : 64 + rand() % 60000;
		snprintf(name, sizeof(name), "t%u", n);
		t[n] = tensor(name, numel);
	}
	assert_int_equal(
	    ps_placement_compute(t, n, 1 * MIB, 1, 4, PS_PLACE_BALANCED, &p),
	    PS_OK);
	check_invariants(p);
	check_lpt_bound(p);
	print_message("200 tensors, 1 MiB partitions, fused: %u partitions "
	              "(%u fused), imbalance %.4f\n",
	              p->num_parts, p->num_fused, ps_placement_imbalance(p));
	assert_true(p->num_fused > 10);
	assert_true(ps_placement_imbalance(p) <= 1.05);
	ps_placement_free(&p);
}

static void test_fused_from_parts(void **state)
{
	ps_tensor_desc t[4] = {tensor("a", 100), tensor("b", 30),
	                       tensor("c", 20), tensor("d", 400)};
	ps_placement *p = NULL, *q = NULL;
	ps_partition parts[8];
	char why[256];
	uint32_t np;

	(void)state;
	/* 512 B = 128 elements: d is cut in 4, (b, c) fused, a alone */
	assert_int_equal(
	    ps_placement_compute(t, 4, 512, 1, 2, PS_PLACE_BALANCED, &p),
	    PS_OK);
	check_invariants(p);
	np = p->num_parts;
	assert_int_equal(np, 6);
	assert_int_equal(p->parts[1].ntensors, 2);
	memcpy(parts, p->parts, np * sizeof(*parts));
	assert_int_equal(rebuild(p, parts, np, 2, &q, why, sizeof(why)), PS_OK);
	check_invariants(q);
	assert_memory_equal(q->tensor_base, p->tensor_base,
	                    4 * sizeof(uint64_t));
	assert_memory_equal(q->part_count, p->part_count, 4 * sizeof(uint32_t));
	ps_placement_free(&q);

	/* no tensors */
	parts[1].ntensors = 0;
	assert_int_equal(rebuild(p, parts, np, 2, &q, why, sizeof(why)),
	                 PS_EPROTO);
	assert_non_null(strstr(why, "0 tensors"));
	/* sizes do not add up */
	memcpy(parts, p->parts, np * sizeof(*parts));
	parts[1].numel = 49;
	assert_int_equal(rebuild(p, parts, np, 2, &q, why, sizeof(why)),
	                 PS_EPROTO);
	assert_non_null(strstr(why, "its tensors hold 50"));
	/* reaching into a tensor that must be cut */
	memcpy(parts, p->parts, np * sizeof(*parts));
	parts[1].ntensors = 3;
	parts[1].numel = 450;
	assert_int_equal(rebuild(p, parts, np, 2, &q, why, sizeof(why)),
	                 PS_EPROTO);
	assert_non_null(strstr(why, "not smaller than a partition"));
	/* past the last tensor */
	memcpy(parts, p->parts, np * sizeof(*parts));
	parts[1].ntensors = 9;
	assert_int_equal(rebuild(p, parts, np, 2, &q, why, sizeof(why)),
	                 PS_EPROTO);
	assert_non_null(strstr(why, "there are only 4"));
	/* not at the start of a tensor */
	memcpy(parts, p->parts, np * sizeof(*parts));
	parts[1].offset = 3;
	assert_int_equal(rebuild(p, parts, np, 2, &q, why, sizeof(why)),
	                 PS_EPROTO);
	assert_non_null(strstr(why, "must start tensor"));
	/* on a server that does not exist */
	memcpy(parts, p->parts, np * sizeof(*parts));
	parts[1].server = 2;
	assert_int_equal(rebuild(p, parts, np, 2, &q, why, sizeof(why)),
	                 PS_EPROTO);
	assert_null(q);
	ps_placement_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_uneven_split),
	    cmocka_unit_test(test_partition_larger_than_tensors),
	    cmocka_unit_test(test_lpt_ties_and_round_robin),
	    cmocka_unit_test(test_determinism),
	    cmocka_unit_test(test_vgg16),
	    cmocka_unit_test(test_sweep),
	    cmocka_unit_test(test_compute_rejects),
	    cmocka_unit_test(test_from_parts),
	    cmocka_unit_test(test_mxnet),
	    cmocka_unit_test(test_print_and_imbalance),
	    cmocka_unit_test(test_fusion_groups),
	    cmocka_unit_test(test_fusion_balance),
	    cmocka_unit_test(test_fused_from_parts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
