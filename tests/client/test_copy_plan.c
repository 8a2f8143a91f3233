/*
 * tests/client/test_copy_plan.c - the order of a device tensor's
 * device-to-host copies (client/copy_plan.h), which runs on the CPU, and,
 * in a build without CUDA, the device-memory functions of the public API
 * (include/ordo/ordo.h): each refuses with PS_ENOTSUP.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "ordo/ordo.h"
#include "scheduling/placement.h"
#include "client/copy_plan.h"
#ifdef PS_WITH_CUDA
#include "cuda/device.h"
#endif

static ps_placement *place(const uint64_t *sizes, uint32_t n,
			   uint64_t part_bytes, int fuse)
{
	ps_tensor_desc d[8];
	ps_placement *pl = NULL;

	assert_true(n <= 8);
	for (uint32_t i = 0; i < n; i++) {
		snprintf(d[i].name, sizeof(d[i].name), "t%u", i);
		d[i].numel = sizes[i];
	}
	assert_int_equal(ps_placement_compute(d, n, part_bytes, fuse, 3,
					      PS_PLACE_BALANCED, &pl),
			 PS_OK);
	return pl;
}

/* Every step is in the gate's order and the steps cover the tensor once. */
static void check_plan(const ps_placement *pl, const uint32_t *numbers,
		       uint32_t t)
{
	uint32_t n = pl->part_count[t];
	ps_copy_step *s = calloc(n, sizeof(*s));
	unsigned char *seen = calloc(pl->tensors[t].numel, 1);

	assert_non_null(s);
	assert_non_null(seen);
	assert_int_equal(ps_copy_plan(pl, numbers, t, s), PS_OK);
	for (uint32_t k = 0; k < n; k++) {
		assert_true(s[k].part >= pl->first_part[t] &&
			    s[k].part < pl->first_part[t] + n);
		assert_true(s[k].numel > 0);
		assert_true(s[k].offset + s[k].numel <= pl->tensors[t].numel);
		for (uint64_t j = 0; j < s[k].numel; j++) {
			assert_int_equal(seen[s[k].offset + j], 0);
			seen[s[k].offset + j] = 1;
		}
		if (k > 0) {
			uint32_t a = numbers[s[k - 1].part];
			uint32_t b = numbers[s[k].part];
			assert_true(a < b ||
				    (a == b && s[k - 1].part < s[k].part));
		}
	}
	for (uint64_t j = 0; j < pl->tensors[t].numel; j++)
		assert_int_equal(seen[j], 1);
	free(seen);
	free(s);
}

/* A gate that sends the last partition first: the copies go backwards. */
static void test_reversed(void **state)
{
	uint64_t sizes[] = {10, 37};
	ps_placement *pl = place(sizes, 2, 4 * 4, 0);
	uint32_t *numbers = calloc(pl->num_parts, sizeof(*numbers));
	ps_copy_step s[16];

	(void)state;
	for (uint32_t p = 0; p < pl->num_parts; p++)
		numbers[p] = pl->num_parts - p;
	for (uint32_t t = 0; t < 2; t++)
		check_plan(pl, numbers, t);
	assert_int_equal(pl->part_count[1], 10); /* 37 = 9 x 4 + 1 */
	assert_int_equal(ps_copy_plan(pl, numbers, 1, s), PS_OK);
	assert_int_equal(s[0].offset, 36);
	assert_int_equal(s[0].numel, 1);
	assert_int_equal(s[9].offset, 0);
	assert_int_equal(s[9].numel, 4);
	free(numbers);
	ps_placement_free(&pl);
}

/* An urgent partition in the middle of a large tensor is copied first;
 * equal numbers keep the partitions' order. */
static void test_urgent_and_ties(void **state)
{
	uint64_t sizes[] = {64};
	ps_placement *pl = place(sizes, 1, 8 * 4, 0);
	uint32_t numbers[8] = {5, 5, 5, 0, 5, 5, 5, 5};
	ps_copy_step s[8];

	(void)state;
	assert_int_equal(pl->num_parts, 8);
	assert_int_equal(ps_copy_plan(pl, numbers, 0, s), PS_OK);
	assert_int_equal(s[0].part, 3);
	assert_int_equal(s[0].offset, 24);
	for (uint32_t k = 1; k < 8; k++)
		assert_int_equal(s[k].part, k <= 3 ? k - 1 : k);
	check_plan(pl, numbers, 0);
	ps_placement_free(&pl);
}

/* A fused tensor is one copy of the whole tensor, from element 0 (its
 * place in the shared partition is the host path's business). */
static void test_fused(void **state)
{
	uint64_t sizes[] = {3, 2, 100};
	ps_placement *pl = place(sizes, 3, 16 * 4, 1);
	uint32_t *numbers = calloc(pl->num_parts, sizeof(*numbers));
	ps_copy_step s[1];

	(void)state;
	assert_true(pl->parts[pl->first_part[0]].ntensors > 1);
	for (uint32_t t = 0; t < 2; t++) {
		assert_int_equal(ps_copy_plan(pl, numbers, t, s), PS_OK);
		assert_int_equal(s[0].part, pl->first_part[t]);
		assert_int_equal(s[0].offset, 0);
		assert_int_equal(s[0].numel, sizes[t]);
	}
	check_plan(pl, numbers, 2);
	free(numbers);
	ps_placement_free(&pl);
}

static void test_invalid(void **state)
{
	uint64_t sizes[] = {4};
	ps_placement *pl = place(sizes, 1, 16, 0);
	uint32_t numbers[1] = {0};
	ps_copy_step s[1];

	(void)state;
	assert_int_equal(ps_copy_plan(pl, numbers, 1, s), PS_EINVAL);
	assert_int_equal(ps_copy_plan(NULL, numbers, 0, s), PS_EINVAL);
	assert_int_equal(ps_copy_plan(pl, NULL, 0, s), PS_EINVAL);
	assert_int_equal(ps_copy_plan(pl, numbers, 0, NULL), PS_EINVAL);
	ps_placement_free(&pl);
}

/* A build without CUDA: the device-memory API exists and says no. In a
 * CUDA build on a machine without a device, a device tensor is refused
 * with PS_ENOTSUP ("no CUDA device: ..."); a host tensor is never pushed
 * from a stream. */
static void test_no_cuda_api(void **state)
{
#ifdef PS_WITH_CUDA
	ps_config *cfg = NULL;
	ps_client *c = NULL;
	float v[4] = {0};
	uint32_t t = 7;
	char err[512];

	(void)state;
	assert_int_equal(ps_config_new(&cfg), PS_OK);
	assert_int_equal(ps_client_create(cfg, &c), PS_OK);
	assert_int_equal(ps_client_declare(c, "h", 4, v, &t), PS_OK);
	assert_int_equal(ps_client_push_stream(c, t, v, 0, NULL), PS_EINVAL);
	assert_int_equal(ps_client_ready_event(c, t, 0, v), PS_EINVAL);
	if (ps_cuda_open(0, NULL, err, sizeof(err)) == PS_OK) {
		ps_client_destroy(&c);
		ps_config_free(&cfg);
		skip(); /* a device: tests/cuda/client.sh checks it */
	}
	t = 7;
	assert_int_equal(ps_client_declare_cuda(c, "w", 4, v, 0, &t),
			 PS_ENOTSUP);
	assert_int_equal(t, 7);
	ps_client_destroy(&c);
	ps_config_free(&cfg);
#else
	ps_config *cfg = NULL;
	ps_client *c = NULL;
	float v[4] = {0};
	uint32_t t = 7;
	int dummy;

	(void)state;
	assert_int_equal(ps_config_new(&cfg), PS_OK);
	assert_int_equal(ps_client_create(cfg, &c), PS_OK);
	assert_int_equal(ps_client_declare_cuda(c, "w", 4, v, 0, &t),
			 PS_ENOTSUP);
	assert_int_equal(t, 7); /* nothing declared */
	assert_int_equal(ps_client_push_stream(c, 0, v, 0, NULL), PS_ENOTSUP);
	assert_int_equal(ps_client_ready_event(c, 0, 0, &dummy), PS_ENOTSUP);
	/* the host API is untouched */
	assert_int_equal(ps_client_declare(c, "w", 4, v, &t), PS_OK);
	assert_int_equal(t, 0);
	ps_client_destroy(&c);
	ps_config_free(&cfg);
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reversed),
		cmocka_unit_test(test_urgent_and_ties),
		cmocka_unit_test(test_fused),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_no_cuda_api),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
