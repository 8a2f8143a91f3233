/*
 * tests/scheduling/test_gate.c - the sender-side gate (scheduling/gate.h): FIFO,
 * priority and TicTac counter gates, and the credit window (ByteScheduler
 * §4.2). Property tests run a naive reference model beside the gate with a
 * fixed-seed PRNG; speed is measured in bench/gate_decisions.c, never here.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "scheduling/gate.h"

static ps_xfer mk(uint64_t handle, uint32_t receiver, uint64_t iteration,
                  uint32_t priority, uint64_t bytes)
{
	ps_xfer x;

	memset(&x, 0, sizeof(x));
	x.handle = handle;
	x.receiver = receiver;
	x.iteration = iteration;
	x.priority = priority;
	x.bytes = bytes;
	return x;
}

static void ready(ps_gate *g, uint64_t handle, uint32_t receiver,
                  uint64_t iteration, uint32_t priority, uint64_t bytes)
{
	ps_xfer x = mk(handle, receiver, iteration, priority, bytes);

	assert_int_equal(ps_gate_ready(g, &x), PS_OK);
}

/* The next handle released; -1 if none may go. */
static int64_t next(ps_gate *g)
{
	ps_xfer x;

	if (!ps_gate_next(g, &x))
		return -1;
	return (int64_t)x.handle;
}

static ps_gate *gate_new(ps_gate_kind kind, uint64_t credit, uint32_t receivers)
{
	ps_gate *g = NULL;

	assert_int_equal(ps_gate_create(kind, credit, receivers, &g), PS_OK);
	assert_non_null(g);
	return g;
}

/* xorshift64*: fixed seeds, same sequence everywhere. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static uint32_t rnd_below(uint64_t *s, uint32_t n)
{
	return (uint32_t)(rnd(s) % n);
}

/* ---- basics ------------------------------------------------------------- */

static void test_names_and_args(void **state)
{
	ps_gate *g = NULL;
	ps_xfer x = mk(1, 2, 0, 0, 10);

	(void)state;
	assert_string_equal(ps_gate_name(PS_GATE_FIFO), "fifo");
	assert_string_equal(ps_gate_name(PS_GATE_PRIORITY), "priority");
	assert_string_equal(ps_gate_name(PS_GATE_COUNTER), "counter");
	assert_int_equal(ps_gate_create(PS_GATE_COUNT, 0, 1, &g), PS_EINVAL);
	assert_int_equal(ps_gate_create(PS_GATE_FIFO, 0, 0, &g), PS_EINVAL);
	assert_null(g);
	for (int k = 0; k < PS_GATE_COUNT; k++) {
		g = gate_new((ps_gate_kind)k, 0, 2);
		assert_int_equal(ps_gate_ready(g, &x), PS_EINVAL);
		assert_int_equal(ps_gate_pending(g), 0);
		assert_int_equal(next(g), -1);
		ps_gate_destroy(&g);
		assert_null(g);
	}
	ps_gate_destroy(&g); /* NULL: no-op */
}

/* The released transfer comes back exactly as it went in. */
static void test_fields_round_trip(void **state)
{
	(void)state;
	for (int k = 0; k < PS_GATE_COUNT; k++) {
		ps_gate *g = gate_new((ps_gate_kind)k, 0, 5);
		ps_xfer in = mk(0xdeadbeef12345ull, 4, 77, 0, 123456789ull);
		ps_xfer out;

		assert_int_equal(ps_gate_ready(g, &in), PS_OK);
		assert_int_equal(ps_gate_pending(g), 1);
		assert_int_equal(ps_gate_next(g, &out), 1);
		assert_int_equal(out.handle, in.handle);
		assert_int_equal(out.receiver, in.receiver);
		assert_int_equal(out.iteration, in.iteration);
		assert_int_equal(out.priority, in.priority);
		assert_int_equal(out.bytes, in.bytes);
		assert_int_equal(ps_gate_in_flight(g), in.bytes);
		assert_int_equal(ps_gate_pending(g), 0);
		assert_int_equal(ps_gate_next(g, &out), 0);
		ps_gate_destroy(&g);
	}
}

/* ---- ByteScheduler §4.2 ------------------------------------------------- */

/*
 * Tensor 1 is in flight; 2, 3, 4 become ready in that order, one partition
 * each, 4 the most urgent (the paper: p1 < p2 < p3 < p4 with a higher p
 * more urgent, stop-and-wait sends 1->4->3->2). Here lower numbers go
 * sooner: 1:3, 2:2, 3:1, 4:0. Every arrival is followed by the sender
 * asking the gate (ps_gate_next until none), every completion by an ack.
 */
static void credit_example(uint64_t window, const int64_t *expect)
{
	const uint64_t part = 1000;
	ps_gate *g = gate_new(PS_GATE_PRIORITY, window, 1);
	int64_t order[4];
	int n = 0;
	int64_t h;

	ready(g, 1, 0, 0, 3, part);
	while ((h = next(g)) >= 0)
		order[n++] = h;
	assert_int_equal(n, 1); /* tensor 1 is being transmitted */
	for (uint64_t t = 2; t <= 4; t++) {
		ready(g, t, 0, 0, (uint32_t)(4 - t), part);
		while ((h = next(g)) >= 0)
			order[n++] = h;
	}
	/* Transmissions complete one partition at a time. */
	while (ps_gate_in_flight(g) > 0) {
		assert_int_equal(ps_gate_acked(g, part), PS_OK);
		while ((h = next(g)) >= 0) {
			assert_true(n < 4);
			order[n++] = h;
		}
	}
	assert_int_equal(n, 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(order[i], expect[i]);
	ps_gate_destroy(&g);
}

static void test_bytescheduler_stop_and_wait(void **state)
{
	static const int64_t expect[4] = {1, 4, 3, 2};

	(void)state;
	credit_example(1000, expect);
}

static void test_bytescheduler_window_of_two(void **state)
{
	static const int64_t expect[4] = {1, 2, 4, 3};

	(void)state;
	credit_example(2000, expect);
}

/* ---- FIFO and priority -------------------------------------------------- */

static void test_priority_ties_keep_arrival_order(void **state)
{
	enum { N = 2000 };
	ps_gate *g = gate_new(PS_GATE_PRIORITY, 0, 1);

	(void)state;
	/* All equal: release order == ready order (a <= comparator in a
	 * binary heap scrambles this). */
	for (uint64_t i = 0; i < N; i++)
		ready(g, i, 0, 0, 7, 1);
	for (int64_t i = 0; i < N; i++)
		assert_int_equal(next(g), i);
	assert_int_equal(next(g), -1);
	ps_gate_destroy(&g);
}

static void test_priority_order_is_stable(void **state)
{
	enum { N = 3000, LEVELS = 5 };
	ps_gate *g = gate_new(PS_GATE_PRIORITY, 0, 1);
	uint32_t prio[N];
	uint64_t s = 42;
	int64_t last_h = -1;
	uint32_t last_p = 0;

	(void)state;
	for (uint64_t i = 0; i < N; i++) {
		prio[i] = rnd_below(&s, LEVELS);
		ready(g, i, 0, 0, prio[i], 1);
	}
	/* Sorted by priority, and within one priority by ready order. */
	for (int i = 0; i < N; i++) {
		int64_t h = next(g);

		assert_true(h >= 0);
		assert_true(prio[h] >= last_p);
		if (prio[h] == last_p)
			assert_true(h > last_h);
		last_p = prio[h];
		last_h = h;
	}
	assert_int_equal(next(g), -1);
	ps_gate_destroy(&g);
}

static void test_priority_is_work_conserving_and_urgent_first(void **state)
{
	ps_gate *g = gate_new(PS_GATE_PRIORITY, 0, 2);

	(void)state;
	ready(g, 1, 0, 0, 9, 10);
	ready(g, 2, 1, 0, 3, 10);
	ready(g, 3, 0, 0, 5, 10);
	assert_int_equal(next(g), 2);
	ready(g, 4, 1, 0, 0, 10); /* arrives later, most urgent */
	assert_int_equal(next(g), 4);
	assert_int_equal(next(g), 3);
	assert_int_equal(next(g), 1);
	assert_int_equal(next(g), -1);
	ps_gate_destroy(&g);
}

static void test_fifo_ignores_priorities(void **state)
{
	enum { N = 500 };
	ps_gate *g = gate_new(PS_GATE_FIFO, 0, 3);
	uint64_t s = 7;

	(void)state;
	for (uint64_t i = 0; i < N; i++)
		ready(g, i, (uint32_t)(i % 3), 0,
		      (uint32_t)(N - i) ^ rnd_below(&s, 1000), 1);
	for (int64_t i = 0; i < N; i++)
		assert_int_equal(next(g), i);
	assert_int_equal(next(g), -1);
	ps_gate_destroy(&g);
}

/* The FIFO ring keeps its order when it grows while wrapped round. */
static void test_fifo_ring_wraps_and_grows(void **state)
{
	ps_gate *g = gate_new(PS_GATE_FIFO, 0, 1);
	uint64_t in = 0;
	int64_t out = 0;

	(void)state;
	for (int round = 0; round < 200; round++) {
		int k = 1 + round % 37, m = 1 + (round * 7) % 29;

		for (int i = 0; i < k; i++)
			ready(g, in++, 0, 0, 0, 1);
		for (int i = 0; i < m && out < (int64_t)in; i++)
			assert_int_equal(next(g), out++);
	}
	while (out < (int64_t)in)
		assert_int_equal(next(g), out++);
	assert_int_equal(next(g), -1);
	ps_gate_destroy(&g);
}

/* ---- counter gate ------------------------------------------------------- */

/* TicTac: later-numbered transfers ready first still go strictly in order. */
static void test_counter_tictac_strict_order(void **state)
{
	ps_gate *g = gate_new(PS_GATE_COUNTER, 0, 1);

	(void)state;
	for (uint32_t k = 5; k >= 1; k--) {
		ready(g, k, 0, 0, k, 10);
		assert_int_equal(next(g), -1); /* counter still 0 */
	}
	ready(g, 0, 0, 0, 0, 10);
	for (int64_t k = 0; k <= 5; k++)
		assert_int_equal(next(g), k);
	assert_int_equal(next(g), -1);
	ps_gate_destroy(&g);
}

static void test_counter_waits_for_its_number(void **state)
{
	ps_gate *g = gate_new(PS_GATE_COUNTER, 0, 1);

	(void)state;
	ready(g, 3, 0, 0, 3, 1);
	ready(g, 0, 0, 0, 0, 1);
	assert_int_equal(next(g), 0);
	assert_int_equal(next(g), -1); /* counter 1 < 3 */
	ready(g, 1, 0, 0, 1, 1);
	assert_int_equal(next(g), 1);
	assert_int_equal(next(g), -1); /* counter 2 < 3 */
	ready(g, 2, 0, 0, 2, 1);
	assert_int_equal(next(g), 2);
	assert_int_equal(next(g), 3);
	assert_int_equal(ps_gate_pending(g), 0);
	ps_gate_destroy(&g);
}

/* Priorities 0 1 1 1 2 normalise to 0 1 1 1 4: the three 1s pass
 * together once 0 went; 4 waits for all three. */
static void test_counter_equal_numbers_pass_together(void **state)
{
	ps_gate *g = gate_new(PS_GATE_COUNTER, 0, 1);
	int seen[5] = {0};

	(void)state;
	ready(g, 4, 0, 0, 4, 1);
	ready(g, 1, 0, 0, 1, 1);
	ready(g, 2, 0, 0, 1, 1);
	assert_int_equal(next(g), -1);
	ready(g, 0, 0, 0, 0, 1);
	assert_int_equal(next(g), 0);
	ready(g, 3, 0, 0, 1, 1);
	for (int i = 0; i < 3; i++) {
		int64_t h = next(g);

		assert_true(h >= 1 && h <= 3);
		assert_int_equal(seen[h], 0);
		seen[h] = 1;
	}
	assert_int_equal(next(g), 4);
	assert_int_equal(next(g), -1);
	ps_gate_destroy(&g);
}

static void test_counter_receivers_independent(void **state)
{
	ps_gate *g = gate_new(PS_GATE_COUNTER, 0, 3);

	(void)state;
	ready(g, 10, 0, 0, 1, 1); /* receiver 0 waits for its number 0 */
	ready(g, 20, 1, 0, 0, 1);
	ready(g, 21, 1, 0, 1, 1);
	ready(g, 30, 2, 0, 2, 1); /* receiver 2 waits for two */
	assert_int_equal(next(g), 20);
	assert_int_equal(next(g), 21);
	assert_int_equal(next(g), -1);
	ready(g, 31, 2, 0, 0, 1);
	ready(g, 32, 2, 0, 1, 1);
	assert_int_equal(next(g), 31);
	assert_int_equal(next(g), 32);
	assert_int_equal(next(g), 30);
	assert_int_equal(next(g), -1);
	ready(g, 11, 0, 0, 0, 1);
	assert_int_equal(next(g), 11);
	assert_int_equal(next(g), 10);
	ps_gate_destroy(&g);
}

static void test_counter_iterations_independent(void **state)
{
	ps_gate *g = gate_new(PS_GATE_COUNTER, 0, 1);

	(void)state;
	ready(g, 1, 0, 5, 1, 1); /* iteration 5 waits for its number 0 */
	ready(g, 2, 0, 6, 0, 1); /* iteration 6 starts meanwhile */
	ready(g, 3, 0, 6, 1, 1);
	assert_int_equal(next(g), 2);
	assert_int_equal(next(g), 3);
	ready(g, 4, 0, 6, 1, 1); /* iteration 6's counter is 2: goes */
	assert_int_equal(next(g), 4);
	assert_int_equal(next(g), -1);
	ready(g, 0, 0, 5, 0, 1);
	assert_int_equal(next(g), 0);
	assert_int_equal(next(g), 1);
	assert_int_equal(next(g), -1);
	ps_gate_destroy(&g);
}

/* Between receivers: eligible transfers go in arrival order, so one that
 * waited for its counter goes before an eligible one that arrived after
 * it (round-robin would alternate receivers instead). */
static void test_counter_between_receivers_arrival_order(void **state)
{
	ps_gate *g = gate_new(PS_GATE_COUNTER, 0, 2);

	(void)state;
	ready(g, 100, 0, 0, 1, 1); /* s0: waits */
	ready(g, 101, 0, 0, 0, 1); /* s1 */
	ready(g, 200, 1, 0, 0, 1); /* s2 */
	ready(g, 201, 1, 0, 1, 1); /* s3 */
	assert_int_equal(next(g), 101);
	assert_int_equal(next(g), 100); /* s0 now eligible, before s2 */
	assert_int_equal(next(g), 200);
	assert_int_equal(next(g), 201);
	ps_gate_destroy(&g);
}

/*
 * Counter lifetime (gate.c): per receiver, lanes of the newest 4 iterations
 * seen are kept (plus older ones with pending transfers); a transfer for an
 * older iteration whose lane is gone is stale and goes without waiting.
 */
static void test_counter_iteration_window(void **state)
{
	ps_gate *g = gate_new(PS_GATE_COUNTER, 0, 2);

	(void)state;
	ready(g, 1, 0, 0, 0, 1);
	assert_int_equal(next(g), 1);
	for (uint64_t it = 1; it <= 3; it++) /* iterations 1..3 start */
		ready(g, 10 + it, 0, it, 0, 1);
	for (int64_t h = 11; h <= 13; h++)
		assert_int_equal(next(g), h);
	/* Iteration 0 is still in the window: its counter (1) is exact. */
	ready(g, 2, 0, 0, 2, 1);
	assert_int_equal(next(g), -1);
	ready(g, 3, 0, 0, 1, 1);
	assert_int_equal(next(g), 3);
	assert_int_equal(next(g), 2);
	/* An iteration 3 ahead of a waiting one keeps it exact too. */
	ready(g, 30, 0, 3, 5, 1);
	assert_int_equal(next(g), -1);
	/* Iteration 4 starts: iteration 0 (nothing pending) is dropped,
	 * iteration 3's waiting transfer keeps its lane. */
	ready(g, 14, 0, 4, 0, 1);
	assert_int_equal(next(g), 14);
	assert_int_equal(next(g), -1);
	ready(g, 4, 0, 0, 9, 1); /* stale: goes at once */
	assert_int_equal(next(g), 4);
	/* Stale transfers keep arrival order with the eligible ones. */
	ready(g, 15, 0, 4, 1, 1);
	ready(g, 5, 0, 0, 0, 1);
	assert_int_equal(next(g), 15);
	assert_int_equal(next(g), 5);
	/* A lane below the window stays exact while it has pending work. */
	ready(g, 50, 1, 10, 1, 1); /* receiver 1, iteration 10 waits */
	for (uint64_t it = 11; it <= 20; it++)
		ready(g, 1000 + it, 1, it, 0, 1);
	for (int64_t h = 1011; h <= 1020; h++)
		assert_int_equal(next(g), h);
	assert_int_equal(next(g), -1); /* 50 still waits */
	ready(g, 51, 1, 10, 0, 1);
	assert_int_equal(next(g), 51);
	assert_int_equal(next(g), 50);
	ready(g, 52, 1, 10, 7, 1); /* lane 10 emptied and dropped: stale */
	assert_int_equal(next(g), 52);
	assert_int_equal(next(g), -1);
	assert_int_equal(ps_gate_pending(g), 1); /* 30 still waits */
	ps_gate_destroy(&g);
}

/* ---- credit window ------------------------------------------------------ */

/* A big urgent transfer that does not fit blocks a small later one that
 * would (no head-of-line bypass), under every gate. */
static void test_credit_head_of_line(void **state)
{
	(void)state;
	for (int k = 0; k < PS_GATE_COUNT; k++) {
		ps_gate *g = gate_new((ps_gate_kind)k, 10, 1);

		ready(g, 1, 0, 0, 0, 4);
		assert_int_equal(next(g), 1);
		ready(g, 2, 0, 0, 1, 8); /* urgent (and first), too big now */
		/* Would fit; later, less urgent (counter: tied, eligible). */
		ready(g, 3, 0, 0, k == PS_GATE_COUNTER ? 1 : 5, 2);
		assert_int_equal(next(g), -1);
		assert_int_equal(ps_gate_in_flight(g), 4);
		assert_int_equal(ps_gate_acked(g, 4), PS_OK);
		assert_int_equal(next(g), 2);
		assert_int_equal(next(g), 3); /* 8 + 2 == credit: fits */
		assert_int_equal(ps_gate_in_flight(g), 10);
		ps_gate_destroy(&g);
	}
}

static void test_credit_oversized_goes_alone(void **state)
{
	(void)state;
	for (int k = 0; k < PS_GATE_COUNT; k++) {
		ps_gate *g = gate_new((ps_gate_kind)k, 10, 1);

		ready(g, 1, 0, 0, 0, 3);
		assert_int_equal(next(g), 1);
		ready(g, 2, 0, 0, 1, 100); /* larger than the whole window */
		ready(g, 3, 0, 0, 2, 1);
		assert_int_equal(next(g), -1); /* 3 bytes in flight */
		assert_int_equal(ps_gate_acked(g, 3), PS_OK);
		assert_int_equal(next(g), 2); /* nothing in flight: goes */
		assert_int_equal(ps_gate_in_flight(g), 100);
		assert_int_equal(next(g), -1); /* over the window: alone */
		assert_int_equal(ps_gate_acked(g, 60), PS_OK);
		assert_int_equal(next(g), -1); /* still 40 > 10 in flight */
		assert_int_equal(ps_gate_acked(g, 40), PS_OK);
		assert_int_equal(next(g), 3);
		ps_gate_destroy(&g);
	}
}

static void test_credit_over_ack(void **state)
{
	(void)state;
	for (int k = 0; k < PS_GATE_COUNT; k++) {
		ps_gate *g = gate_new((ps_gate_kind)k, 0, 1);

		assert_int_equal(ps_gate_acked(g, 1), PS_EINVAL);
		assert_int_equal(ps_gate_acked(g, 0), PS_OK);
		ready(g, 1, 0, 0, 0, 50);
		assert_int_equal(next(g), 1);
		assert_int_equal(ps_gate_acked(g, 51), PS_EINVAL);
		assert_int_equal(ps_gate_in_flight(g), 50);
		assert_int_equal(ps_gate_acked(g, 20), PS_OK);
		assert_int_equal(ps_gate_acked(g, 30), PS_OK);
		assert_int_equal(ps_gate_acked(g, 1), PS_EINVAL);
		assert_int_equal(ps_gate_in_flight(g), 0);
		ps_gate_destroy(&g);
	}
}

static void test_credit_unlimited(void **state)
{
	ps_gate *g = gate_new(PS_GATE_PRIORITY, 0, 1);

	(void)state;
	for (uint64_t i = 0; i < 100; i++)
		ready(g, i, 0, 0, 0, 1ull << 40);
	for (int64_t i = 0; i < 100; i++)
		assert_int_equal(next(g), i);
	assert_int_equal(ps_gate_in_flight(g), 100ull << 40);
	ps_gate_destroy(&g);
}

/* A tuner's live change: a smaller window holds transfers back until the
 * bytes in flight under the old one are acknowledged; a larger one lets
 * more go at once. */
static void test_credit_live_change(void **state)
{
	(void)state;
	for (int k = 0; k < PS_GATE_COUNT; k++) {
		ps_gate *g = gate_new((ps_gate_kind)k, 10, 1);

		assert_int_equal(ps_gate_credit(g), 10);
		for (int64_t h = 1; h <= 6; h++)
			ready(g, h, 0, 0, k == PS_GATE_COUNTER ? 0 :
				(uint32_t)h, 4);
		assert_int_equal(next(g), 1);
		assert_int_equal(next(g), 2);
		assert_int_equal(next(g), -1); /* 8 + 4 > 10 */
		assert_int_equal(ps_gate_set_credit(g, 4), PS_OK);
		assert_int_equal(ps_gate_acked(g, 4), PS_OK);
		assert_int_equal(next(g), -1); /* 4 in flight: window full */
		assert_int_equal(ps_gate_acked(g, 4), PS_OK);
		assert_int_equal(next(g), 3);
		assert_int_equal(next(g), -1);
		assert_int_equal(ps_gate_set_credit(g, 12), PS_OK);
		assert_int_equal(next(g), 4);
		assert_int_equal(next(g), 5);
		assert_int_equal(next(g), -1); /* 12 in flight */
		assert_int_equal(ps_gate_credit(g), 12);
		assert_int_equal(ps_gate_set_credit(NULL, 1), PS_EINVAL);
		ps_gate_destroy(&g);
	}
}

/* ---- property test: a naive reference model beside the gate ------------- */

enum {
	P_RECV = 3,
	P_ITERS = 3,
	P_GROUP = 12,
	P_MAX = P_RECV * P_ITERS * P_GROUP
};

typedef struct model {
	ps_gate_kind kind;
	uint64_t credit, in_flight;
	ps_xfer x[P_MAX];
	uint64_t seq[P_MAX];
	int state[P_MAX]; /* 0 not ready, 1 pending, 2 released */
	uint64_t count[P_RECV][P_ITERS];
	uint64_t next_seq;
} model;

/* The transfer the model would release next; -1 if none may go. */
static int model_pick(const model *m, int n)
{
	int best = -1;

	for (int i = 0; i < n; i++) {
		const ps_xfer *x = &m->x[i];

		if (m->state[i] != 1)
			continue;
		if (m->kind == PS_GATE_COUNTER &&
		    m->count[x->receiver][x->iteration] < x->priority)
			continue;
		if (best < 0) {
			best = i;
			continue;
		}
		if (m->kind == PS_GATE_PRIORITY &&
		    x->priority != m->x[best].priority) {
			if (x->priority < m->x[best].priority)
				best = i;
		} else if (m->seq[i] < m->seq[best]) {
			best = i;
		}
	}
	if (best < 0)
		return -1;
	if (m->in_flight > 0 &&
	    (m->credit ? m->in_flight + m->x[best].bytes > m->credit : 0))
		return -1;
	return best;
}

/* Numbers of one (receiver, iteration) group, as ps_order_normalise gives
 * them: how many members have a strictly smaller priority. */
static void normalise(const uint32_t *prio, uint32_t n, uint32_t *out)
{
	for (uint32_t i = 0; i < n; i++) {
		out[i] = 0;
		for (uint32_t j = 0; j < n; j++)
			out[i] += prio[j] < prio[i];
	}
}

static void property_run(ps_gate_kind kind, uint64_t credit, uint64_t seed)
{
	model *m = calloc(1, sizeof(*m));
	ps_gate *g = gate_new(kind, credit, P_RECV);
	uint64_t s = seed;
	int order[P_MAX], inflight[P_MAX], nin = 0, nready = 0, nrel = 0;
	uint32_t released_in_group[P_RECV][P_ITERS] = {{0}};

	assert_non_null(m);
	m->kind = kind;
	m->credit = credit;
	/* Groups of P_GROUP transfers per (receiver, iteration), numbers
	 * normalised from random priorities with ties. */
	for (int r = 0; r < P_RECV; r++) {
		for (int it = 0; it < P_ITERS; it++) {
			uint32_t prio[P_GROUP], num[P_GROUP];
			int base = (r * P_ITERS + it) * P_GROUP;

			for (int i = 0; i < P_GROUP; i++)
				prio[i] = rnd_below(&s, 6);
			normalise(prio, P_GROUP, num);
			for (int i = 0; i < P_GROUP; i++) {
				/* Sometimes larger than the whole window. */
				uint64_t b = rnd_below(&s, 16) == 0
				                 ? 1 + rnd_below(&s, 400)
				                 : 1 + rnd_below(&s, 60);

				m->x[base + i] = mk(
				    (uint64_t)(base + i), (uint32_t)r,
				    (uint64_t)it,
				    kind == PS_GATE_COUNTER ? num[i] : prio[i],
				    b);
			}
		}
	}
	/* Random ready order. */
	for (int i = 0; i < P_MAX; i++)
		order[i] = i;
	for (int i = P_MAX - 1; i > 0; i--) {
		int j = (int)rnd_below(&s, (uint32_t)i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	while (nrel < P_MAX) {
		uint32_t op = rnd_below(&s, 10);
		ps_xfer out;
		int want, got;

		if (op < 4 && nready < P_MAX) {
			int i = order[nready++];

			assert_int_equal(ps_gate_ready(g, &m->x[i]), PS_OK);
			m->state[i] = 1;
			m->seq[i] = m->next_seq++;
		} else if (op < 8 || (nin == 0 && nready == P_MAX)) {
			want = model_pick(m, P_MAX);
			got = ps_gate_next(g, &out);
			assert_int_equal(got, want >= 0);
			if (got) {
				const ps_xfer *x = &m->x[out.handle];

				assert_int_equal(out.handle, (uint64_t)want);
				assert_int_equal(m->state[want], 1);
				if (kind == PS_GATE_COUNTER)
					assert_true(
					    released_in_group[x->receiver]
					                     [x->iteration] >=
					    x->priority);
				released_in_group[x->receiver][x->iteration]++;
				m->count[x->receiver][x->iteration]++;
				m->state[want] = 2;
				m->in_flight += x->bytes;
				inflight[nin++] = want;
				nrel++;
			} else if (nin == 0 && nready == P_MAX) {
				fail_msg("gate stalled"); /* must not */
			}
		} else if (nin > 0) {
			int j = (int)rnd_below(&s, (uint32_t)nin);
			uint64_t b = m->x[inflight[j]].bytes;

			assert_int_equal(ps_gate_acked(g, b), PS_OK);
			m->in_flight -= b;
			inflight[j] = inflight[--nin];
		}
		/* Invariants after every step. */
		assert_int_equal(ps_gate_in_flight(g), m->in_flight);
		assert_int_equal(ps_gate_pending(g), (uint32_t)(nready - nrel));
		if (credit)
			assert_true(m->in_flight <= credit || nin == 1);
	}
	while (nin > 0) {
		assert_int_equal(ps_gate_acked(g, m->x[inflight[--nin]].bytes),
		                 PS_OK);
	}
	assert_int_equal(ps_gate_in_flight(g), 0);
	assert_int_equal(ps_gate_pending(g), 0);
	for (int i = 0; i < P_MAX; i++)
		assert_int_equal(m->state[i], 2); /* each exactly once */
	assert_int_equal(ps_gate_next(g, &(ps_xfer){0}), 0);
	ps_gate_destroy(&g);
	free(m);
}

static void test_property_every_gate_every_window(void **state)
{
	static const uint64_t credits[] = {0, 50, 100, 250, 1};

	(void)state;
	for (int k = 0; k < PS_GATE_COUNT; k++)
		for (size_t c = 0; c < sizeof(credits) / sizeof(credits[0]);
		     c++)
			for (uint64_t round = 0; round < 200; round++)
				property_run((ps_gate_kind)k, credits[c],
				             0x9e3779b97f4a7c15ull ^
				                 (round * 1000003 + c * 31 +
				                  (uint64_t)k));
}

/* ---- property test: the whole contract, step by step --------------------- */

/*
 * A second reference model, obviously correct rather than fast: every
 * decision scans all transfers. It keeps the counter gate's lanes with
 * their lifetime (the newest REF_WINDOW iterations per receiver, older
 * ones while they have pending transfers, stale transfers eligible at
 * once), so random runs cover iterations that come and go, arrivals far
 * behind, live credit changes, over-acknowledgements, and numbers that
 * become ready in order, in reverse order, nearly in order, or at random.
 * After every call the gate must answer exactly as the model: the same
 * transfer (ties included), the same errors, the same bytes in flight.
 */
enum {
	REF_MAX = 700, /* transfers per run, at most */
	REF_RECV = 3,
	REF_WINDOW = 4,  /* gate.c's ITER_WINDOW */
	REF_LANES = 256, /* lanes ever created in a run, at most */
	REF_ORDERS = 5
};

typedef struct ref_lane {
	uint32_t receiver;
	uint64_t iteration, count;
	uint32_t pending;
	int live;
} ref_lane;

typedef struct ref {
	ps_gate_kind kind;
	uint64_t credit, in_flight, next_seq;
	ps_xfer x[REF_MAX];
	uint64_t seq[REF_MAX];
	int state[REF_MAX]; /* 1 pending, 2 released */
	int lane[REF_MAX];  /* counter gate: index in lanes, -1 stale */
	int n;              /* transfers made ready so far */
	uint32_t pending;
	ref_lane lanes[REF_LANES];
	int nlanes;
	uint64_t newest[REF_RECV];
} ref;

static uint64_t ref_floor(uint64_t newest)
{
	return newest >= REF_WINDOW - 1 ? newest - (REF_WINDOW - 1) : 0;
}

static int ref_lane_of(const ref *m, uint32_t receiver, uint64_t iteration)
{
	for (int i = 0; i < m->nlanes; i++)
		if (m->lanes[i].live && m->lanes[i].receiver == receiver &&
		    m->lanes[i].iteration == iteration)
			return i;
	return -1;
}

static void ref_ready(ref *m, const ps_xfer *x)
{
	int i = m->n++;
	uint32_t r = x->receiver;
	uint64_t newest =
	    m->newest[r] > x->iteration ? m->newest[r] : x->iteration;

	m->x[i] = *x;
	m->seq[i] = m->next_seq++;
	m->state[i] = 1;
	m->lane[i] = -1;
	m->pending++;
	if (m->kind != PS_GATE_COUNTER)
		return;
	m->lane[i] = ref_lane_of(m, r, x->iteration);
	if (m->lane[i] < 0 && x->iteration >= ref_floor(newest)) {
		assert_true(m->nlanes < REF_LANES);
		m->lane[i] = m->nlanes++;
		m->lanes[m->lane[i]] = (ref_lane){
		    .receiver = r, .iteration = x->iteration, .live = 1};
	}
	if (m->lane[i] >= 0)
		m->lanes[m->lane[i]].pending++;
	if (newest != m->newest[r]) {
		m->newest[r] = newest;
		for (int l = 0; l < m->nlanes; l++)
			if (m->lanes[l].receiver == r &&
			    m->lanes[l].iteration < ref_floor(newest) &&
			    m->lanes[l].pending == 0)
				m->lanes[l].live = 0;
	}
}

/* Transfer i goes before transfer j (both may go now). */
static int ref_before(const ref *m, int i, int j)
{
	if (m->kind == PS_GATE_PRIORITY && m->x[i].priority != m->x[j].priority)
		return m->x[i].priority < m->x[j].priority;
	return m->seq[i] < m->seq[j];
}

/* The transfer the model releases next; -1 if none may go. */
static int ref_pick(const ref *m)
{
	int best = -1;

	for (int i = 0; i < m->n; i++) {
		if (m->state[i] != 1)
			continue;
		if (m->lane[i] >= 0 &&
		    m->lanes[m->lane[i]].count < m->x[i].priority)
			continue; /* waits for its counter */
		if (best < 0 || ref_before(m, i, best))
			best = i;
	}
	if (best >= 0 && m->in_flight > 0 && m->credit > 0 &&
	    m->in_flight + m->x[best].bytes > m->credit)
		return -1; /* no head-of-line bypass */
	return best;
}

static void ref_release(ref *m, int i)
{
	m->state[i] = 2;
	m->pending--;
	m->in_flight += m->x[i].bytes;
	if (m->lane[i] >= 0) {
		ref_lane *l = &m->lanes[m->lane[i]];

		l->count++;
		l->pending--;
		if (l->pending == 0 &&
		    l->iteration < ref_floor(m->newest[l->receiver]))
			l->live = 0;
	}
}

/* The number (or priority) of the k-th transfer of one (receiver,
 * iteration), in one of REF_ORDERS orders. */
static uint32_t ref_number(int order, uint32_t k, uint64_t *s)
{
	switch (order) {
	case 0:
		return k / 2 * 2; /* in order, pairs tie */
	case 1:
		return 1000 - k; /* reverse order (a backward pass) */
	case 2:
		return k + rnd_below(s, 40); /* nearly, sometimes far out */
	case 3:
		return rnd_below(s, 60); /* any order, with gaps */
	default:
		return rnd_below(s, 4) ? k : rnd_below(s, 30); /* mixed */
	}
}

static void sum_handle(uint64_t handle, void *ud)
{
	uint64_t *acc = ud;

	acc[0]++;
	acc[1] += handle;
	acc[2] ^= handle * 0x9e3779b97f4a7c15ull;
}

/* Gate and model side by side: one random run. */
static void reference_run(ps_gate_kind kind, int order, uint64_t seed)
{
	ref *m = calloc(1, sizeof(*m));
	uint64_t s = seed;
	uint32_t receivers = 1 + rnd_below(&s, REF_RECV);
	uint64_t iter[REF_RECV] = {0};
	uint32_t made[REF_RECV][64] = {{0}};
	int inflight[REF_MAX], nin = 0;
	int steps = 100 + (int)rnd_below(&s, 1200);
	uint64_t acc_gate[3] = {0}, acc_ref[3] = {0};
	ps_gate *g;

	assert_non_null(m);
	m->kind = kind;
	m->credit = rnd_below(&s, 3) == 0 ? 0 : 1 + rnd_below(&s, 600);
	g = gate_new(kind, m->credit, receivers);
	/* Random steps, then drain: release and acknowledge while anything
	 * may go or is in flight. */
	for (int step = 0; step < steps || nin > 0 || ref_pick(m) >= 0;
	     step++) {
		uint32_t op = step < steps ? rnd_below(&s, 100) : 50;
		ps_xfer x, out;
		int want, got;

		if (op < 40 && m->n < REF_MAX) {
			uint32_t r = rnd_below(&s, receivers);
			uint32_t t = rnd_below(&s, 100);
			uint64_t it;

			/* Mostly the receiver's current iteration; now and
			 * then the next one, a jump past the window, or an
			 * older one (its lane maybe gone: stale). */
			if (t < 4)
				iter[r]++;
			else if (t < 6)
				iter[r] += REF_WINDOW + rnd_below(&s, 3);
			it = iter[r];
			if (t >= 92)
				it -= rnd_below(&s,
				                it < 8 ? (uint32_t)it + 1 : 8);
			x = mk((uint64_t)m->n, r, it,
			       ref_number(order, made[r][it % 64]++, &s),
			       rnd_below(&s, 12) == 0 ? 1 + rnd_below(&s, 900)
			                              : 1 + rnd_below(&s, 90));
			assert_int_equal(ps_gate_ready(g, &x), PS_OK);
			ref_ready(m, &x);
		} else if (op < 75) {
			want = ref_pick(m);
			got = ps_gate_next(g, &out);
			assert_int_equal(got, want >= 0);
			if (got) {
				x = m->x[want];
				assert_int_equal(out.handle, x.handle);
				assert_int_equal(out.receiver, x.receiver);
				assert_int_equal(out.iteration, x.iteration);
				assert_int_equal(out.priority, x.priority);
				assert_int_equal(out.bytes, x.bytes);
				ref_release(m, want);
				inflight[nin++] = want;
			} else if (step >= steps && nin > 0) {
				op = 80; /* draining: complete one */
			}
		} else if (op >= 92) {
			uint64_t c =
			    rnd_below(&s, 4) == 0 ? 0 : 1 + rnd_below(&s, 600);

			assert_int_equal(ps_gate_set_credit(g, c), PS_OK);
			m->credit = c;
		}
		if (op >= 75 && op < 92 && nin > 0) {
			int j = step < steps ? (int)rnd_below(&s, (uint32_t)nin)
			                     : nin - 1;
			uint64_t b = m->x[inflight[j]].bytes;

			assert_int_equal(ps_gate_acked(g, b), PS_OK);
			m->in_flight -= b;
			inflight[j] = inflight[--nin];
		} else if (op >= 75 && op < 92 && rnd_below(&s, 64) == 0) {
			/* More than in flight: refused, nothing changes. */
			assert_int_equal(ps_gate_acked(g, m->in_flight + 1),
			                 PS_EINVAL);
		}
		assert_int_equal(ps_gate_in_flight(g), m->in_flight);
		assert_int_equal(ps_gate_credit(g), m->credit);
		assert_int_equal(ps_gate_pending(g), m->pending);
	}
	/* Left pending (waiting for numbers that never came): the same. */
	for (int i = 0; i < m->n; i++)
		if (m->state[i] == 1)
			sum_handle(m->x[i].handle, acc_ref);
	ps_gate_foreach_pending(g, sum_handle, acc_gate);
	assert_int_equal(ps_gate_pending(g), acc_ref[0]);
	assert_memory_equal(acc_gate, acc_ref, sizeof(acc_ref));
	assert_int_equal(ps_gate_next(g, &(ps_xfer){0}), 0);
	ps_gate_destroy(&g);
	free(m);
}

static void test_property_reference_model(void **state)
{
	(void)state;
	for (int k = 0; k < PS_GATE_COUNT; k++)
		for (int order = 0; order < REF_ORDERS; order++)
			for (uint64_t round = 0; round < 40; round++)
				reference_run((ps_gate_kind)k, order,
				              0x2545f4914f6cdd1dull +
				                  round * 7919 +
				                  (uint64_t)order * 131 +
				                  (uint64_t)k * 17);
}

/* Many pending transfers: growth, then every one released exactly once. */
static void test_large_exactly_once(void **state)
{
	enum { N = 100000, R = 8 };
	static unsigned char seen[N];
	static ps_xfer xs[N];

	(void)state;
	for (int k = 0; k < PS_GATE_COUNT; k++) {
		ps_gate *g = gate_new((ps_gate_kind)k, 0, R);
		uint64_t s = 99;
		ps_xfer out;
		int n = 0;

		/* Counter gate: per receiver, numbers 0, 1, 2... in ready
		 * order, with a quarter of the pairs (2j, 2j+1) swapped. */
		for (uint32_t i = 0; i < N; i++)
			xs[i] = mk(i, i % R, 0,
			           k == PS_GATE_COUNTER ? i / R
			                                : rnd_below(&s, 100),
			           1 + rnd_below(&s, 1000));
		for (uint32_t i = 0; i + R < N; i++) {
			if ((i / R) % 2 == 0 && rnd_below(&s, 4) == 0) {
				ps_xfer t = xs[i];

				xs[i] = xs[i + R];
				xs[i + R] = t;
			}
		}
		for (uint32_t i = 0; i < N; i++)
			assert_int_equal(ps_gate_ready(g, &xs[i]), PS_OK);
		assert_int_equal(ps_gate_pending(g), N);
		memset(seen, 0, sizeof(seen));
		while (ps_gate_next(g, &out)) {
			assert_true(out.handle < N);
			assert_int_equal(seen[out.handle], 0);
			seen[out.handle] = 1;
			n++;
		}
		assert_int_equal(n, N);
		assert_int_equal(ps_gate_pending(g), 0);
		ps_gate_destroy(&g);
	}
}

/* Teardown: every pending (and only pending) handle is visited. */
static void count_handle(uint64_t handle, void *ud)
{
	uint64_t *sum = ud;
	*sum += handle;
}

static void test_foreach_pending(void **state)
{
	(void)state;
	for (int kind = 0; kind < PS_GATE_COUNT; kind++) {
		ps_gate *g = NULL;
		ps_xfer x;
		uint64_t sum = 0, released = 0;

		assert_int_equal(ps_gate_create((ps_gate_kind)kind, 0, 2, &g),
				 PS_OK);
		for (uint64_t h = 1; h <= 10; h++)
			assert_int_equal(
			    ps_gate_ready(g, &(ps_xfer){.handle = h,
							.receiver = h % 2,
							.priority = 0,
							.bytes = 1}),
			    PS_OK);
		for (int i = 0; i < 4 && ps_gate_next(g, &x) == 1; i++)
			released += x.handle;
		ps_gate_foreach_pending(g, count_handle, &sum);
		assert_int_equal(sum + released, 55);
		assert_int_equal(ps_gate_pending(g), 6);
		ps_gate_destroy(&g);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_foreach_pending),
	    cmocka_unit_test(test_names_and_args),
	    cmocka_unit_test(test_fields_round_trip),
	    cmocka_unit_test(test_bytescheduler_stop_and_wait),
	    cmocka_unit_test(test_bytescheduler_window_of_two),
	    cmocka_unit_test(test_priority_ties_keep_arrival_order),
	    cmocka_unit_test(test_priority_order_is_stable),
	    cmocka_unit_test(test_priority_is_work_conserving_and_urgent_first),
	    cmocka_unit_test(test_fifo_ignores_priorities),
	    cmocka_unit_test(test_fifo_ring_wraps_and_grows),
	    cmocka_unit_test(test_counter_tictac_strict_order),
	    cmocka_unit_test(test_counter_waits_for_its_number),
	    cmocka_unit_test(test_counter_equal_numbers_pass_together),
	    cmocka_unit_test(test_counter_receivers_independent),
	    cmocka_unit_test(test_counter_iterations_independent),
	    cmocka_unit_test(test_counter_between_receivers_arrival_order),
	    cmocka_unit_test(test_counter_iteration_window),
	    cmocka_unit_test(test_credit_head_of_line),
	    cmocka_unit_test(test_credit_oversized_goes_alone),
	    cmocka_unit_test(test_credit_over_ack),
	    cmocka_unit_test(test_credit_unlimited),
	    cmocka_unit_test(test_credit_live_change),
	    cmocka_unit_test(test_property_every_gate_every_window),
	    cmocka_unit_test(test_property_reference_model),
	    cmocka_unit_test(test_large_exactly_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
