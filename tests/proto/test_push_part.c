/*
 * tests/proto/test_push_part.c - a worker machine's pushes partition by
 * partition (ps_wproto_push_part, proto/worker.h): what a device tensor's
 * driver does as each partition's copy to the host completes. The gate
 * still decides: under the counter gate a partition handed in early waits
 * for the ones numbered before it; under the priority gate each goes as
 * it arrives. A partition that is not the tensor's, or a fused tensor, is
 * refused with a reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ordo/error.h"
#include "proto/worker.h"
#include "scheduling/placement.h"

/* Tensor "a" (300 floats) cut into partitions 0, 1, 2 of 100 floats, and
 * tensor "b" (100 floats, partition 3), on one server. */
typedef struct fixture {
	ps_placement *pl;
	ps_wproto *w;
} fixture;

static void setup(fixture *f, ps_gate_kind gate, const uint32_t *numbers)
{
	ps_tensor_desc td[2] = {{.name = "a", .numel = 300},
				{.name = "b", .numel = 100}};

	assert_int_equal(ps_placement_compute(td, 2, 400, 0, 1, 0, &f->pl),
			 PS_OK);
	assert_int_equal(f->pl->num_parts, 4);
	assert_int_equal(f->pl->part_count[0], 3);
	assert_int_equal(ps_wproto_create(&(ps_wproto_config){
						  .pl = f->pl,
						  .gate = gate,
						  .sync = 1,
						  .numbers = numbers},
					  &f->w),
			 PS_OK);
}

static void teardown(fixture *f)
{
	ps_wproto_destroy(&f->w);
	ps_placement_free(&f->pl);
}

static void push_part(fixture *f, uint32_t t, uint32_t part, uint64_t it)
{
	char why[128];

	assert_int_equal(ps_wproto_push_part(f->w, t, part, it,
					     (void *)(uintptr_t)(part + 1),
					     why, sizeof(why)),
			 PS_OK);
	assert_int_equal(ps_wproto_flush(f->w), PS_OK);
}

/* The partitions released so far, in order, into out; their count. */
static int drain(fixture *f, uint32_t *out, int cap)
{
	ps_wproto_msg m;
	int n = 0;

	while (ps_wproto_next_msg(f->w, &m)) {
		assert_int_equal(m.kind, PS_WPROTO_MSG_PUSH);
		assert_int_equal(m.tensor, 0);
		assert_false(m.fused);
		/* ctx travels with its partition */
		assert_ptr_equal(m.ctx, (void *)(uintptr_t)(m.part + 1));
		assert_true(n < cap);
		out[n++] = m.part;
	}
	return n;
}

/* Counter gate, numbers 2, 0, 1 for partitions 0, 1, 2: handed in as
 * 0, 2, 1, they leave as 1, 2, 0, and nothing leaves before its turn. */
static void test_counter_gate_keeps_its_order(void **state)
{
	const uint32_t numbers[4] = {2, 0, 1, 0};
	uint32_t out[4];
	fixture f;

	(void)state;
	setup(&f, PS_GATE_COUNTER, numbers);
	push_part(&f, 0, 0, 1);
	assert_int_equal(drain(&f, out, 4), 0); /* waits for 0 and 1 */
	push_part(&f, 0, 2, 1);
	assert_int_equal(drain(&f, out, 4), 0); /* waits for 0 */
	push_part(&f, 0, 1, 1);
	assert_int_equal(drain(&f, out, 4), 3);
	assert_int_equal(out[0], 1);
	assert_int_equal(out[1], 2);
	assert_int_equal(out[2], 0);
	teardown(&f);
}

/* Priority gate: each partition goes as soon as it is handed in (the
 * point of handing them in one by one: a send starts while the next
 * partition is still being copied). */
static void test_priority_gate_sends_each_at_once(void **state)
{
	const uint32_t numbers[4] = {2, 0, 1, 0};
	uint32_t out[4];
	fixture f;

	(void)state;
	setup(&f, PS_GATE_PRIORITY, numbers);
	for (uint32_t part = 0; part < 3; part++) {
		push_part(&f, 0, part, 1);
		assert_int_equal(drain(&f, out, 4), 1);
		assert_int_equal(out[0], part);
	}
	teardown(&f);
}

static void test_refusals(void **state)
{
	const uint32_t numbers[4] = {0, 0, 0, 0};
	ps_tensor_desc td[2] = {{.name = "x", .numel = 10},
				{.name = "y", .numel = 10}};
	ps_placement *fused;
	ps_wproto *w;
	char why[128] = "";
	fixture f;

	(void)state;
	setup(&f, PS_GATE_FIFO, numbers);
	/* partition 3 is tensor b's */
	assert_int_equal(ps_wproto_push_part(f.w, 0, 3, 1, NULL, why,
					     sizeof(why)),
			 PS_EINVAL);
	assert_non_null(strstr(why, "not one of tensor 0's"));
	assert_int_equal(ps_wproto_push_part(f.w, 2, 0, 1, NULL, why,
					     sizeof(why)),
			 PS_EINVAL);
	teardown(&f);

	/* two small tensors fused into one partition: pushed whole only */
	assert_int_equal(ps_placement_compute(td, 2, 400, 1, 1, 0, &fused),
			 PS_OK);
	assert_int_equal(fused->num_parts, 1);
	assert_int_equal(ps_wproto_create(&(ps_wproto_config){
						  .pl = fused,
						  .gate = PS_GATE_FIFO,
						  .numbers = numbers},
					  &w),
			 PS_OK);
	assert_int_equal(ps_wproto_push_part(w, 1, 0, 1, NULL, why,
					     sizeof(why)),
			 PS_EINVAL);
	assert_non_null(strstr(why, "fused partition 0"));
	ps_wproto_destroy(&w);
	ps_placement_free(&fused);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_counter_gate_keeps_its_order),
	    cmocka_unit_test(test_priority_gate_sends_each_at_once),
	    cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
