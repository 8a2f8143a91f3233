/*
 * tests/proto/test_barrier.c - the parameter barrier of a server's shard
 * (proto/server.h, scheduling.params_barrier): no send of version v is
 * ready while a partition the server owns is below v; then every
 * (partition, worker) send of v is ready exactly once, in an order that
 * is a permutation per worker, differs between workers and iterations,
 * and is the same in every run. Without the barrier a partition's sends
 * are ready as soon as it is updated.
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
#include "scheduling/order.h"
#include "scheduling/placement.h"

#define T 8 /* tensors, one partition each, all on server 0 */
#define W 3 /* workers */
#define ITERATIONS 4

typedef struct fixture {
	ps_placement *pl;
	uint32_t *numbers;
	ps_sproto *sh;
} fixture;

static void setup(fixture *f, int barrier)
{
	ps_tensor_desc td[T];
	char why[128];
	ps_sproto_op op;
	ps_sproto_msg m;

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
						 .server = 0,
						 .workers = W,
						 .gate = PS_GATE_FIFO,
						 .barrier = barrier,
						 .numbers = f->numbers},
					 &f->sh),
			 PS_OK);
	/* version 0 of every partition goes at once, barrier or not */
	for (uint32_t p = 0; p < T; p++) {
		assert_int_equal(ps_sproto_on_init(f->sh, 0, p,
						  f->pl->parts[p].tensor, 40,
						  NULL, why, sizeof(why)),
				 PS_OK);
		while (ps_sproto_next_op(f->sh, &op))
			assert_int_equal(ps_sproto_op_done(f->sh), PS_OK);
	}
	for (int n = 0; n < T * W; n++) {
		assert_int_equal(ps_sproto_next_msg(f->sh, &m), 1);
		assert_int_equal(m.kind, PS_SHARD_MSG_PARAMS);
		assert_int_equal(m.iteration, 0);
	}
	assert_int_equal(ps_sproto_next_msg(f->sh, &m), 0);
}

static void teardown(fixture *f)
{
	ps_sproto_destroy(&f->sh);
	free(f->numbers);
	ps_placement_free(&f->pl);
}

/* Every worker's push of iteration `it` for partition p, run to the end;
 * returns how many PARAMS came out (their partitions, per worker in the
 * order they came, appended to order[worker][*n_w]). */
static int round_of(fixture *f, uint32_t p, uint64_t it,
		    uint32_t order[W][T], int n_w[W])
{
	char why[128];
	ps_sproto_op op;
	ps_sproto_msg m;
	int sent = 0;

	for (uint32_t w = 0; w < W; w++) {
		assert_int_equal(ps_sproto_on_push(f->sh, w, p,
						  f->pl->parts[p].tensor, it, 0,
						  0, 40, NULL, 0, why,
						  sizeof(why)),
				 PS_OK);
		while (ps_sproto_next_op(f->sh, &op))
			assert_int_equal(ps_sproto_op_done(f->sh), PS_OK);
	}
	while (ps_sproto_next_msg(f->sh, &m)) {
		assert_int_equal(m.kind, PS_SHARD_MSG_PARAMS);
		assert_int_equal(m.iteration, it + 1);
		assert_true(n_w[m.worker] < T);
		order[m.worker][n_w[m.worker]++] = m.partition;
		sent++;
	}
	return sent;
}

/* Runs ITERATIONS rounds with the barrier; orders[it][w] is what worker
 * w received in iteration it. */
static void run_barrier(uint32_t orders[ITERATIONS][W][T])
{
	fixture f;

	setup(&f, 1);
	for (uint64_t it = 0; it < ITERATIONS; it++) {
		int n_w[W] = {0};
		/* pushes arrive in backward order, last tensor first */
		for (int p = T - 1; p > 0; p--)
			assert_int_equal(round_of(&f, (uint32_t)p, it,
						  orders[it], n_w),
					 0); /* held: partition 0 is behind */
		assert_int_equal(round_of(&f, 0, it, orders[it], n_w), T * W);
		for (int w = 0; w < W; w++) {
			int seen[T] = {0};
			assert_int_equal(n_w[w], T);
			for (int i = 0; i < T; i++)
				seen[orders[it][w][i]]++;
			for (int p = 0; p < T; p++)
				assert_int_equal(seen[p], 1);
		}
	}
	teardown(&f);
}

static void test_barrier_holds_then_shuffles(void **state)
{
	static uint32_t a[ITERATIONS][W][T], b[ITERATIONS][W][T];
	int differ_workers = 0, differ_iterations = 0, backward = 0;

	(void)state;
	run_barrier(a);
	run_barrier(b);
	/* deterministic: the same job gives the same orders */
	assert_memory_equal(a, b, sizeof(a));
	for (int it = 0; it < ITERATIONS; it++)
		for (int w = 0; w < W; w++) {
			differ_workers +=
			    w > 0 && memcmp(a[it][w], a[it][0],
					    sizeof(a[it][w])) != 0;
			differ_iterations +=
			    it > 0 && memcmp(a[it][w], a[0][w],
					     sizeof(a[it][w])) != 0;
			/* not simply the order the updates finished in */
			backward += a[it][w][0] == T - 1 &&
				    a[it][w][T - 1] == 0;
		}
	assert_true(differ_workers > 0);
	assert_true(differ_iterations > 0);
	assert_true(backward < ITERATIONS * W);
}

/* Without the barrier each update's sends are ready at once, in the
 * order the updates finish. */
static void test_no_barrier_sends_at_once(void **state)
{
	uint32_t order[W][T];
	int n_w[W] = {0};
	fixture f;

	(void)state;
	setup(&f, 0);
	for (int p = T - 1; p >= 0; p--)
		assert_int_equal(round_of(&f, (uint32_t)p, 0, order, n_w), W);
	for (int w = 0; w < W; w++)
		for (int i = 0; i < T; i++)
			assert_int_equal(order[w][i], T - 1 - i);
	teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_barrier_holds_then_shuffles),
	    cmocka_unit_test(test_no_barrier_sends_at_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
