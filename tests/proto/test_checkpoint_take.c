/*
 * tests/proto/test_checkpoint_take.c - a server's side of checkpoints
 * (proto/checkpoint_take.h), over the real shard machine (proto/server.h)
 * driven by workers' pushes: a partition is taken exactly when it is at
 * the checkpoint's iteration; a complete checkpoint is written once the
 * disk is free, never more than one written and one collected; a periodic
 * checkpoint that comes due with both waits for the write, one that comes
 * due while another is collected (asynchronous workers far apart) is
 * skipped, and none is due at or below one begun or resumed; a request for a passed
 * iteration is late with the furthest one reached, a repeat joins the one
 * collected, a new one takes over from a periodic one; only a request's
 * failure is reported; asynchronous pushes of the checkpoint's iteration
 * or later wait until the partition is taken.
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
#include "proto/checkpoint_take.h"
#include "proto/server.h"
#include "scheduling/order.h"
#include "scheduling/placement.h"

#define T 2 /* tensors, one partition each */
#define W 2 /* workers */

typedef struct fixture {
	ps_placement *pl;
	uint32_t *numbers;
	ps_sproto *sh;
	ps_ckpt_take t;
} fixture;

static void run_ops(fixture *f)
{
	ps_sproto_op op;
	ps_sproto_msg m;

	while (ps_sproto_next_op(f->sh, &op))
		assert_int_equal(ps_sproto_op_done(f->sh), PS_OK);
	while (ps_sproto_next_msg(f->sh, &m))
		;
}

/* A shard of T partitions on one server (servers: 2 gives server 0 none
 * of them where `empty`), checkpoints every `every`. */
static void setup(fixture *f, int async, uint64_t every, int empty)
{
	ps_tensor_desc td[T];
	char why[128];

	memset(td, 0, sizeof(td));
	for (int t = 0; t < T; t++) {
		snprintf(td[t].name, sizeof(td[t].name), "t%d", t);
		td[t].numel = 10;
	}
	assert_int_equal(ps_placement_compute(td, T, 1 << 20, 0, 1, 0,
					      &f->pl),
			 PS_OK);
	assert_int_equal(ps_order_partition_numbers(f->pl, NULL, 0,
						    &f->numbers),
			 PS_OK);
	assert_int_equal(ps_sproto_create(&(ps_sproto_config){
						 .pl = f->pl,
						 .server = empty ? 1 : 0,
						 .workers = W,
						 .async = async,
						 .gate = PS_GATE_FIFO,
						 .numbers = f->numbers},
					 &f->sh),
			 PS_OK);
	for (uint32_t p = 0; !empty && p < T; p++) {
		assert_int_equal(ps_sproto_on_init(f->sh, 0, p,
						  f->pl->parts[p].tensor, 40,
						  NULL, why, sizeof(why)),
				 PS_OK);
		run_ops(f);
	}
	assert_int_equal(ps_ckpt_take_init(&f->t, f->sh, W, async, every),
			 PS_OK);
}

static void teardown(fixture *f)
{
	ps_ckpt_take_free(&f->t);
	ps_sproto_destroy(&f->sh);
	free(f->numbers);
	ps_placement_free(&f->pl);
}

/* Worker w's push of iteration it to partition p, applied. */
static void push(fixture *f, uint32_t w, uint32_t p, uint64_t it)
{
	char why[128];

	assert_int_equal(ps_sproto_on_push(f->sh, w, p, f->pl->parts[p].tensor,
					   it, 0, 0, 40, NULL, 0, why,
					   sizeof(why)),
			 PS_OK);
	run_ops(f);
}

/* Synchronous: every worker's push of partition p's version: p moves on
 * one version. */
static uint64_t advance(fixture *f, uint32_t p)
{
	uint64_t v = ps_sproto_part_at(f->sh, p)->version;

	for (uint32_t w = 0; w < W; w++)
		push(f, w, p, v);
	return v + 1;
}

/* What a driver does after partition p's update: a periodic checkpoint
 * may come due; p is taken if wanted. Returns the machine's step. */
static ps_ckpt_step updated(fixture *f, uint32_t p)
{
	ps_ckpt_step st =
	    ps_ckpt_take_due(&f->t, ps_sproto_part_at(f->sh, p)->version);

	if (ps_ckpt_take_wants(&f->t, p))
		ps_ckpt_take_took(&f->t, p);
	return st;
}

static void take_wanted(fixture *f)
{
	for (uint32_t k = 0; k < T; k++)
		if (ps_ckpt_take_wants(&f->t, k))
			ps_ckpt_take_took(&f->t, k);
}

static void test_periodic_pipeline(void **state)
{
	fixture f;

	(void)state;
	setup(&f, 0, 2, 0);
	advance(&f, 0);
	assert_int_equal(updated(&f, 0), PS_CKPT_NOTHING);
	advance(&f, 0);
	/* partition 0 reaches 2 first: the checkpoint of 2 begins, 0 is
	 * taken, 1 (at 0) is not yet */
	assert_int_equal(updated(&f, 0), PS_CKPT_COLLECT);
	assert_int_equal(f.t.collect, 2);
	assert_false(ps_ckpt_take_wants(&f.t, 1));
	assert_false(ps_ckpt_take_can_write(&f.t));
	advance(&f, 1);
	assert_int_equal(updated(&f, 1), PS_CKPT_NOTHING);
	assert_false(ps_ckpt_take_wants(&f.t, 1));
	advance(&f, 1);
	assert_int_equal(updated(&f, 1), PS_CKPT_NOTHING);
	assert_true(ps_ckpt_take_can_write(&f.t));
	assert_int_equal(ps_ckpt_take_write(&f.t), 2);
	/* 4 is collected while 2 is written; complete, it waits */
	for (int i = 0; i < 2; i++)
		for (uint32_t p = 0; p < T; p++) {
			advance(&f, p);
			updated(&f, p);
		}
	assert_int_equal(f.t.collect, 4);
	assert_false(ps_ckpt_take_can_write(&f.t));
	/* 6 comes due with 2 written and 4 complete: wait for the disk */
	advance(&f, 0);
	advance(&f, 0);
	assert_int_equal(ps_ckpt_take_due(&f.t, 6), PS_CKPT_WAIT_WRITE);
	assert_int_equal(f.t.collect, 4);
	ps_ckpt_take_written(&f.t);
	assert_true(ps_ckpt_take_can_write(&f.t));
	assert_int_equal(ps_ckpt_take_write(&f.t), 4);
	assert_int_equal(updated(&f, 0), PS_CKPT_COLLECT);
	assert_int_equal(f.t.collect, 6);
	/* a periodic checkpoint given up is nobody's to hear of */
	assert_int_equal(ps_ckpt_take_drop(&f.t), 0);
	assert_int_equal(f.t.collect, 0);
	teardown(&f);
}

static void test_request(void **state)
{
	fixture f;
	uint64_t top;

	(void)state;
	setup(&f, 0, 0, 0);
	for (int i = 0; i < 3; i++)
		advance(&f, 0);
	advance(&f, 1);
	advance(&f, 1);
	/* partition 0 is at 3: a request for 2 is late */
	assert_int_equal(ps_ckpt_take_request(&f.t, 2, &top), PS_CKPT_LATE);
	assert_int_equal(top, 3);
	assert_int_equal(f.t.collect, 0);
	/* 3: partition 0 at once, 1 when it gets there */
	assert_int_equal(ps_ckpt_take_request(&f.t, 3, &top), PS_CKPT_COLLECT);
	assert_true(ps_ckpt_take_wants(&f.t, 0));
	assert_false(ps_ckpt_take_wants(&f.t, 1));
	take_wanted(&f);
	assert_int_equal(ps_ckpt_take_request(&f.t, 3, &top), PS_CKPT_JOINED);
	/* a request given up is reported */
	assert_int_equal(ps_ckpt_take_drop(&f.t), 1);
	assert_int_equal(ps_ckpt_take_request(&f.t, 3, &top), PS_CKPT_COLLECT);
	take_wanted(&f);
	advance(&f, 1);
	take_wanted(&f);
	assert_true(ps_ckpt_take_can_write(&f.t));
	assert_int_equal(ps_ckpt_take_write(&f.t), 3);
	/* nothing more is taken into a checkpoint being written */
	assert_false(ps_ckpt_take_wants(&f.t, 0));
	teardown(&f);
}

static void test_request_over_periodic(void **state)
{
	fixture f;
	uint64_t top;

	(void)state;
	setup(&f, 0, 1, 0);
	advance(&f, 0);
	assert_int_equal(updated(&f, 0), PS_CKPT_COLLECT);
	assert_int_equal(f.t.collect, 1);
	/* a request for later takes over; partition 0 (at 1) is not at it */
	assert_int_equal(ps_ckpt_take_request(&f.t, 3, &top), PS_CKPT_COLLECT);
	assert_int_equal(f.t.collect, 3);
	assert_false(ps_ckpt_take_wants(&f.t, 0));
	/* periodic 2 is not due behind the request for 3, nor is 3 started
	 * again when it comes */
	advance(&f, 1);
	advance(&f, 0);
	assert_int_equal(updated(&f, 0), PS_CKPT_NOTHING);
	assert_int_equal(f.t.collect, 3);
	advance(&f, 1);
	advance(&f, 0);
	assert_int_equal(updated(&f, 0), PS_CKPT_NOTHING);
	advance(&f, 1);
	updated(&f, 1);
	assert_int_equal(ps_ckpt_take_write(&f.t), 3);
	/* a resumed iteration is not due again */
	ps_ckpt_take_resumed(&f.t, 5);
	assert_int_equal(ps_ckpt_take_due(&f.t, 5), PS_CKPT_NOTHING);
	assert_int_equal(ps_ckpt_take_due(&f.t, 6), PS_CKPT_COLLECT);
	teardown(&f);
}

static void test_empty_server(void **state)
{
	fixture f;
	uint64_t top;

	(void)state;
	setup(&f, 0, 2, 1);
	assert_int_equal(ps_sproto_nparts(f.sh), 0);
	/* a server holding nothing has its empty shard at once */
	assert_int_equal(ps_ckpt_take_request(&f.t, 4, &top), PS_CKPT_COLLECT);
	assert_int_equal(top, 0);
	assert_true(ps_ckpt_take_can_write(&f.t));
	assert_int_equal(ps_ckpt_take_write(&f.t), 4);
	teardown(&f);
}

static void test_async_holds(void **state)
{
	fixture f;
	uint64_t top;

	(void)state;
	setup(&f, 1, 4, 0);
	/* worker 0 runs two iterations ahead on partition 0 */
	push(&f, 0, 0, 0);
	push(&f, 0, 0, 1);
	assert_int_equal(ps_ckpt_take_request(&f.t, 2, &top), PS_CKPT_COLLECT);
	assert_int_equal(top, 2);
	/* worker 1 has pushed nothing: partition 0 is not at 2, and worker
	 * 0's push of 2 waits; one of 1 would not */
	assert_false(ps_ckpt_take_wants(&f.t, 0));
	assert_true(ps_ckpt_take_holds(&f.t, 0, 2));
	assert_false(ps_ckpt_take_holds(&f.t, 0, 1));
	/* worker 0 so far ahead that periodic 4 comes due: skipped, one
	 * checkpoint at a time */
	assert_int_equal(ps_ckpt_take_due(&f.t, 4), PS_CKPT_SKIPPED);
	assert_int_equal(f.t.collect, 2);
	assert_int_equal(ps_ckpt_take_due(&f.t, 4), PS_CKPT_NOTHING);
	push(&f, 1, 0, 0);
	push(&f, 1, 0, 1);
	assert_true(ps_ckpt_take_is_at(&f.t, 0, 2));
	assert_true(ps_ckpt_take_wants(&f.t, 0));
	ps_ckpt_take_took(&f.t, 0);
	assert_false(ps_ckpt_take_holds(&f.t, 0, 2));
	/* partition 1 (nothing pushed) still holds its pushes of 2 */
	assert_true(ps_ckpt_take_holds(&f.t, 1, 2));
	teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_periodic_pipeline),
	    cmocka_unit_test(test_request),
	    cmocka_unit_test(test_request_over_periodic),
	    cmocka_unit_test(test_empty_server),
	    cmocka_unit_test(test_async_holds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
