/*
 * tests/proto/test_acks.c - acknowledgements in the protocol machines. A
 * worker's (proto/worker.h): a PUSH_ACK must match a push of its partition
 * in flight, and in synchronous mode a partition's PARAMS acknowledge its
 * push. A server's (proto/server.h): no PUSH_ACK in synchronous mode
 * without a credit window, and a PARAMS_ACK must match a PARAMS sent to
 * that worker and not yet acknowledged. Each direction's window decides
 * its own acknowledgements: PUSH_ACKs follow the workers' push window,
 * PARAMS_ACKs the servers' parameter window. A PULL while a send of its
 * partition to that worker waits in the gate is refused, and so is one
 * before the INIT's op has run (the values are not there yet).
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
#include "proto/server.h"
#include "proto/worker.h"
#include "scheduling/order.h"
#include "scheduling/placement.h"

/* Two tensors of 100 floats, one partition each, on one server. */
typedef struct fixture {
	ps_placement *pl;
	uint32_t *numbers;
	ps_wproto *w;
} fixture;

static void setup2(fixture *f, uint64_t credit, uint64_t params_credit,
		   int sync)
{
	ps_tensor_desc td[2] = {{.name = "a", .numel = 100},
				{.name = "b", .numel = 100}};
	uint32_t prio[2] = {0, 1};

	assert_int_equal(ps_placement_compute(td, 2, 1 << 20, 0, 1, 0,
					      &f->pl), PS_OK);
	assert_int_equal(f->pl->num_parts, 2);
	assert_int_equal(ps_order_partition_numbers(f->pl, prio, 0,
						    &f->numbers), PS_OK);
	assert_int_equal(ps_wproto_create(&(ps_wproto_config){
						  .pl = f->pl,
						  .gate = PS_GATE_FIFO,
						  .credit = credit,
						  .params_credit =
							  params_credit,
						  .sync = sync,
						  .numbers = f->numbers},
					  &f->w),
			 PS_OK);
}

/* The same window both ways. */
static void setup(fixture *f, uint64_t credit, int sync)
{
	setup2(f, credit, credit, sync);
}

static void teardown(fixture *f)
{
	ps_wproto_destroy(&f->w);
	free(f->numbers);
	ps_placement_free(&f->pl);
}

/* Pushes tensor t of iteration it and drains the PUSH it releases. */
static void push(fixture *f, uint32_t t, uint64_t it)
{
	ps_wproto_staging st;
	ps_wproto_msg m;
	char why[128];

	assert_int_equal(ps_wproto_push(f->w, t, it, NULL, &st, why,
					sizeof(why)), PS_OK);
	assert_int_equal(ps_wproto_flush(f->w), PS_OK);
	assert_int_equal(ps_wproto_next_msg(f->w, &m), 1);
	assert_int_equal(m.kind, PS_WPROTO_MSG_PUSH);
	assert_int_equal(m.part, t);
}

static int params(fixture *f, uint32_t part, uint64_t version, int *acked)
{
	char why[128];

	return ps_wproto_on_params(f->w, 0, part, part, version, 0, 400, acked,
				   NULL, why, sizeof(why));
}

static void test_params_acknowledge_without_window(void **state)
{
	fixture f;
	char why[128];
	int acked = -1;
	ps_wproto_msg m;

	(void)state;
	setup(&f, 0, 1);
	push(&f, 0, 0);
	assert_false(ps_wproto_idle(f.w));
	/* a PUSH_ACK for the other partition matches nothing in flight */
	assert_int_equal(ps_wproto_on_push_ack(f.w, 0, 1, 0, why, sizeof(why)),
			 PS_EPROTO);
	assert_non_null(strstr(why, "no push in flight"));
	/* the other partition's PARAMS acknowledge nothing */
	assert_int_equal(params(&f, 1, 1, &acked), PS_OK);
	assert_int_equal(acked, 0);
	assert_false(ps_wproto_idle(f.w));
	/* version 1 of partition 0: its push of iteration 0 was applied */
	assert_int_equal(params(&f, 0, 1, &acked), PS_OK);
	assert_int_equal(acked, 1);
	assert_true(ps_wproto_idle(f.w));
	/* and only once: a PUSH_ACK after it is refused */
	assert_int_equal(ps_wproto_on_push_ack(f.w, 0, 0, 0, why, sizeof(why)),
			 PS_EPROTO);
	/* DONE goes at once: nothing unacknowledged */
	assert_int_equal(ps_wproto_done(f.w), PS_OK);
	assert_int_equal(ps_wproto_next_msg(f.w, &m), 1);
	assert_int_equal(m.kind, PS_WPROTO_MSG_DONE);
	teardown(&f);
}

static void test_push_ack_first_with_window(void **state)
{
	fixture f;
	char why[128];
	int acked = -1;
	ps_wproto_msg m;

	(void)state;
	setup(&f, 1 << 20, 1);
	push(&f, 0, 0);
	assert_int_equal(ps_wproto_on_push_ack(f.w, 0, 0, 0, why, sizeof(why)),
			 PS_OK);
	assert_true(ps_wproto_idle(f.w));
	/* the PARAMS after it acknowledge nothing more; they are acked */
	assert_int_equal(params(&f, 0, 1, &acked), PS_OK);
	assert_int_equal(acked, 0);
	assert_int_equal(ps_wproto_next_msg(f.w, &m), 1);
	assert_int_equal(m.kind, PS_WPROTO_MSG_PARAMS_ACK);
	teardown(&f);
}

static void test_async_needs_push_acks(void **state)
{
	fixture f;
	char why[128];
	int acked = -1;

	(void)state;
	setup(&f, 0, 0);
	push(&f, 0, 0);
	assert_int_equal(params(&f, 0, 1, &acked), PS_OK);
	assert_int_equal(acked, 0);
	assert_false(ps_wproto_idle(f.w));
	assert_int_equal(ps_wproto_on_push_ack(f.w, 0, 0, 0, why, sizeof(why)),
			 PS_OK);
	assert_true(ps_wproto_idle(f.w));
	teardown(&f);
}

/* PARAMS of the version the push is for (not after it) acknowledge
 * nothing: only a later version proves the push was applied. */
static void test_same_version_acknowledges_nothing(void **state)
{
	fixture f;
	int acked = -1;

	(void)state;
	setup(&f, 0, 1);
	assert_int_equal(params(&f, 0, 1, &acked), PS_OK);
	push(&f, 0, 1);
	assert_int_equal(params(&f, 0, 1, &acked), PS_OK);
	assert_int_equal(acked, 0);
	assert_int_equal(params(&f, 0, 2, &acked), PS_OK);
	assert_int_equal(acked, 1);
	teardown(&f);
}

/* ---- the server's side -------------------------------------------- */

/* One server holding both partitions of the fixture's placement, for two
 * workers; INIT of partition 0 from worker 0, run: version 0 goes to both
 * workers (through a window of `credit` bytes). */
static ps_sproto *shard_with_params(fixture *f, uint64_t credit,
				   uint64_t push_credit, int async)
{
	ps_sproto *sh;
	ps_sproto_op op;
	ps_sproto_msg m;
	char why[128];
	int sent = 0;

	assert_int_equal(ps_sproto_create(&(ps_sproto_config){
						 .pl = f->pl,
						 .server = 0,
						 .workers = 2,
						 .async = async,
						 .gate = PS_GATE_FIFO,
						 .credit = credit,
						 .push_credit = push_credit,
						 .numbers = f->numbers},
					 &sh),
			 PS_OK);
	assert_int_equal(ps_sproto_on_init(sh, 0, 0, 0, 400, NULL, why,
					  sizeof(why)),
			 PS_OK);
	assert_int_equal(ps_sproto_next_op(sh, &op), 1);
	assert_int_equal(ps_sproto_op_done(sh), PS_OK);
	while (ps_sproto_next_msg(sh, &m)) {
		assert_int_equal(m.kind, PS_SHARD_MSG_PARAMS);
		sent++;
	}
	assert_int_equal(sent, 2); /* 400 bytes each: both fit in 1 KiB */
	return sh;
}

static void test_params_ack_must_match(void **state)
{
	fixture f;
	ps_sproto *sh;
	char why[128];

	(void)state;
	setup(&f, 1024, 1);
	sh = shard_with_params(&f, 1024, 1024, 0);
	/* partition 1 was never sent: its ack is forged */
	assert_int_equal(ps_sproto_on_params_ack(sh, 0, 1, 0, why, sizeof(why)),
			 PS_EPROTO);
	assert_non_null(strstr(why, "not in flight to that worker"));
	/* each worker acknowledges its own copy, once */
	assert_int_equal(ps_sproto_on_params_ack(sh, 0, 0, 0, why, sizeof(why)),
			 PS_OK);
	assert_int_equal(ps_sproto_on_params_ack(sh, 0, 0, 0, why, sizeof(why)),
			 PS_EPROTO);
	assert_int_equal(ps_gate_in_flight(ps_sproto_gate(sh)), 400);
	assert_int_equal(ps_sproto_on_params_ack(sh, 1, 0, 0, why, sizeof(why)),
			 PS_OK);
	assert_int_equal(ps_gate_in_flight(ps_sproto_gate(sh)), 0);
	/* not a worker at all */
	assert_int_equal(ps_sproto_on_params_ack(sh, PS_SHARD_NOT_WORKER, 0, 0,
						why, sizeof(why)),
			 PS_EPROTO);
	ps_sproto_destroy(&sh);
	teardown(&f);
}

/* A worker repeating PULLs while the window is full: each was answered
 * with a send of its own, held in the gate until the window opens, so one
 * member could make a server hold as many sends as it sent PULLs. */
static void test_pulls_while_waiting_are_refused(void **state)
{
	fixture f;
	ps_sproto *sh;
	ps_sproto_op op;
	ps_sproto_msg m;
	char why[128];
	int sent = 0;

	(void)state;
	setup(&f, 400, 1);
	assert_int_equal(ps_sproto_create(&(ps_sproto_config){
						 .pl = f.pl,
						 .server = 0,
						 .workers = 2,
						 .gate = PS_GATE_FIFO,
						 .credit = 400,
						 .push_credit = 400,
						 .numbers = f.numbers},
					 &sh),
			 PS_OK);
	assert_int_equal(ps_sproto_on_init(sh, 0, 0, 0, 400, NULL, why,
					  sizeof(why)),
			 PS_OK);
	/* the INIT's values are not copied yet: nothing to send */
	assert_int_equal(ps_sproto_on_pull(sh, 1, 0, 0, why, sizeof(why)),
			 PS_EPROTO);
	assert_non_null(strstr(why, "before INIT"));
	assert_int_equal(ps_sproto_next_op(sh, &op), 1);
	assert_int_equal(ps_sproto_op_done(sh), PS_OK);
	while (ps_sproto_next_msg(sh, &m))
		sent++;
	assert_int_equal(sent, 1); /* worker 1's copy waits for the window */
	assert_int_equal(ps_gate_pending(ps_sproto_gate(sh)), 1);
	/* worker 1's values wait: its PULLs add nothing */
	for (int i = 0; i < 100; i++)
		assert_int_equal(ps_sproto_on_pull(sh, 1, 0, 0, why,
						  sizeof(why)),
				 PS_EPROTO);
	assert_non_null(strstr(why, "wait to be sent"));
	assert_int_equal(ps_gate_pending(ps_sproto_gate(sh)), 1);
	/* worker 0's copy went: one PULL is answered, the next waits */
	assert_int_equal(ps_sproto_on_pull(sh, 0, 0, 0, why, sizeof(why)),
			 PS_OK);
	for (int i = 0; i < 100; i++)
		assert_int_equal(ps_sproto_on_pull(sh, 0, 0, 0, why,
						  sizeof(why)),
				 PS_EPROTO);
	assert_int_equal(ps_gate_pending(ps_sproto_gate(sh)), 2);
	/* the window opens: both go, and a PULL is answered again */
	assert_int_equal(ps_sproto_on_params_ack(sh, 0, 0, 0, why,
						sizeof(why)),
			 PS_OK);
	assert_int_equal(ps_sproto_next_msg(sh, &m), 1);
	assert_int_equal(m.worker, 1);
	assert_int_equal(ps_sproto_on_params_ack(sh, 1, 0, 0, why,
						sizeof(why)),
			 PS_OK);
	assert_int_equal(ps_sproto_next_msg(sh, &m), 1);
	assert_int_equal(m.worker, 0);
	assert_int_equal(ps_gate_pending(ps_sproto_gate(sh)), 0);
	assert_int_equal(ps_sproto_on_pull(sh, 1, 0, 0, why, sizeof(why)),
			 PS_OK);
	ps_sproto_destroy(&sh);
	teardown(&f);
}

/* The pushes of both workers for partition 0's version 0, summed and
 * updated; how many PUSH_ACKs come out. */
static int push_acks_of_a_round(uint64_t push_credit, uint64_t params_credit,
				int async)
{
	fixture f;
	ps_sproto *sh;
	ps_sproto_op op;
	ps_sproto_msg m;
	char why[128];
	int acks = 0;

	setup2(&f, push_credit, params_credit, !async);
	sh = shard_with_params(&f, params_credit, push_credit, async);
	for (uint32_t w = 0; w < 2; w++) {
		assert_int_equal(ps_sproto_on_push(sh, w, 0, 0, 0, 0, 0, 400,
						  NULL, 0, why, sizeof(why)),
				 PS_OK);
		while (ps_sproto_next_op(sh, &op)) {
			while (ps_sproto_next_msg(sh, &m))
				acks += m.kind == PS_SHARD_MSG_PUSH_ACK;
			assert_int_equal(ps_sproto_op_done(sh), PS_OK);
		}
		while (ps_sproto_next_msg(sh, &m))
			acks += m.kind == PS_SHARD_MSG_PUSH_ACK;
	}
	ps_sproto_destroy(&sh);
	teardown(&f);
	return acks;
}

static void test_push_acks_only_with_window_or_async(void **state)
{
	(void)state;
	assert_int_equal(push_acks_of_a_round(0, 0, 0), 0);
	assert_int_equal(push_acks_of_a_round(1024, 1024, 0), 2);
	assert_int_equal(push_acks_of_a_round(0, 0, 1), 2);
	/* the workers' push window decides, not the server's own */
	assert_int_equal(push_acks_of_a_round(1024, 0, 0), 2);
	assert_int_equal(push_acks_of_a_round(0, 1024, 0), 0);
}

/* A worker acknowledges PARAMS when the servers have a window for them,
 * whatever its own window for pushes. */
static void test_params_acks_follow_the_params_window(void **state)
{
	fixture f;
	int acked = -1;
	ps_wproto_msg m;

	(void)state;
	setup2(&f, 0, 1 << 20, 1);
	assert_int_equal(params(&f, 0, 1, &acked), PS_OK);
	assert_int_equal(ps_wproto_next_msg(f.w, &m), 1);
	assert_int_equal(m.kind, PS_WPROTO_MSG_PARAMS_ACK);
	teardown(&f);
	setup2(&f, 1 << 20, 0, 1);
	assert_int_equal(params(&f, 0, 1, &acked), PS_OK);
	assert_int_equal(ps_wproto_next_msg(f.w, &m), 0);
	teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_params_acknowledge_without_window),
	    cmocka_unit_test(test_push_ack_first_with_window),
	    cmocka_unit_test(test_async_needs_push_acks),
	    cmocka_unit_test(test_same_version_acknowledges_nothing),
	    cmocka_unit_test(test_params_ack_must_match),
	    cmocka_unit_test(test_pulls_while_waiting_are_refused),
	    cmocka_unit_test(test_push_acks_only_with_window_or_async),
	    cmocka_unit_test(test_params_acks_follow_the_params_window),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
