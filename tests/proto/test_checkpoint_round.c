/*
 * tests/proto/test_checkpoint_round.c - the servers' answers to each
 * checkpoint (proto/checkpoint_round.h): counted per server, a repeat
 * never completes a round, a failed shard is said, a late repeat after
 * completion is recognised, the oldest round gives its place.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ordo/error.h"
#include "proto/checkpoint_round.h"

static ps_ckpt_round *round_of(ps_ckpt_rounds *t, uint64_t it, int want_open,
			       uint64_t want_abandoned)
{
	int opened;
	uint64_t abandoned;
	ps_ckpt_round *k = ps_ckpt_round_of(t, it, &opened, &abandoned);

	assert_non_null(k);
	assert_int_equal(k->iteration, it);
	assert_int_equal(opened, want_open);
	assert_int_equal(abandoned, want_abandoned);
	return k;
}

static void test_init(void **state)
{
	ps_ckpt_rounds t;
	int opened;
	uint64_t abandoned;

	(void)state;
	assert_int_equal(ps_ckpt_rounds_init(&t, 0), PS_EINVAL);
	assert_int_equal(
	    ps_ckpt_rounds_init(&t, PS_CKPT_ROUND_MAX_SERVERS + 1), PS_EINVAL);
	assert_int_equal(ps_ckpt_rounds_init(&t, PS_CKPT_ROUND_MAX_SERVERS),
			 PS_OK);
	assert_null(ps_ckpt_round_of(&t, 0, &opened, &abandoned));
	assert_int_equal(opened, 0);
}

/* Complete once every server answered once; a server's repeat counts
 * nothing (before, two answers from one server of two completed it). */
static void test_per_server(void **state)
{
	ps_ckpt_rounds t;
	ps_ckpt_round *k;

	(void)state;
	assert_int_equal(ps_ckpt_rounds_init(&t, 3), PS_OK);
	k = round_of(&t, 10, 1, 0);
	assert_int_equal(ps_ckpt_round_answer(&t, k, 0, 1),
			 PS_CKPT_ANSWER_COUNTED);
	assert_int_equal(ps_ckpt_round_answer(&t, k, 0, 1),
			 PS_CKPT_ANSWER_REPEATED);
	assert_int_equal(ps_ckpt_round_answer(&t, k, 0, 0),
			 PS_CKPT_ANSWER_REPEATED);
	assert_int_equal(ps_ckpt_round_answer(&t, k, 2, 1),
			 PS_CKPT_ANSWER_COUNTED);
	assert_int_equal(ps_ckpt_round_answer(&t, k, 2, 1),
			 PS_CKPT_ANSWER_REPEATED);
	assert_int_equal(k->answers, 2);
	assert_int_equal(ps_ckpt_round_answer(&t, k, 3, 1),
			 PS_CKPT_ANSWER_BAD_RANK);
	assert_int_equal(ps_ckpt_round_answer(&t, k, 1, 1),
			 PS_CKPT_ANSWER_COMPLETE);
	assert_int_equal(k->written, 3);
	assert_false(k->failed);
	/* a late repeat finds the closed round, opens none */
	assert_ptr_equal(round_of(&t, 10, 0, 0), k);
	assert_int_equal(ps_ckpt_round_answer(&t, k, 1, 1),
			 PS_CKPT_ANSWER_REPEATED);
}

/* Ranks far apart use their own bits (a bitmap of words). */
static void test_many_servers(void **state)
{
	ps_ckpt_rounds t;
	ps_ckpt_round *k;
	const uint32_t n = PS_CKPT_ROUND_MAX_SERVERS;

	(void)state;
	assert_int_equal(ps_ckpt_rounds_init(&t, n), PS_OK);
	k = round_of(&t, 5, 1, 0);
	for (uint32_t r = 0; r + 1 < n; r++)
		assert_int_equal(ps_ckpt_round_answer(&t, k, r, 1),
				 PS_CKPT_ANSWER_COUNTED);
	for (uint32_t r = 0; r + 1 < n; r += 63)
		assert_int_equal(ps_ckpt_round_answer(&t, k, r, 1),
				 PS_CKPT_ANSWER_REPEATED);
	assert_int_equal(ps_ckpt_round_answer(&t, k, n - 1, 1),
			 PS_CKPT_ANSWER_COMPLETE);
}

/* One failed shard: the round completes, failed. */
static void test_failed(void **state)
{
	ps_ckpt_rounds t;
	ps_ckpt_round *k;

	(void)state;
	assert_int_equal(ps_ckpt_rounds_init(&t, 2), PS_OK);
	k = round_of(&t, 4, 1, 0);
	assert_int_equal(ps_ckpt_round_answer(&t, k, 1, 0),
			 PS_CKPT_ANSWER_COUNTED);
	assert_true(k->failed);
	assert_int_equal(ps_ckpt_round_answer(&t, k, 0, 1),
			 PS_CKPT_ANSWER_COMPLETE);
	assert_true(k->failed);
	assert_int_equal(k->written, 1);
}

/* Places: closed rounds give theirs silently, before any open one; an
 * open round gives its place only when all are open, the oldest first,
 * and is named. */
static void test_places(void **state)
{
	ps_ckpt_rounds t;
	ps_ckpt_round *k;

	(void)state;
	assert_int_equal(ps_ckpt_rounds_init(&t, 1), PS_OK);
	k = round_of(&t, 1, 1, 0);
	assert_int_equal(ps_ckpt_round_answer(&t, k, 0, 1),
			 PS_CKPT_ANSWER_COMPLETE);
	for (uint64_t it = 2; it <= PS_CKPT_ROUNDS; it++)
		(void)round_of(&t, it, 1, 0);
	/* every place taken; 1 is closed: it goes, silently */
	(void)round_of(&t, 100, 1, 0);
	assert_int_equal(ps_ckpt_round_answer(&t, round_of(&t, 100, 0, 0), 0,
					      1),
			 PS_CKPT_ANSWER_COMPLETE);
	/* now 100 is closed and 2.. are open: 100 goes */
	(void)round_of(&t, 200, 1, 0);
	/* all open: the oldest, 2, is abandoned */
	(void)round_of(&t, 300, 1, 2);
	(void)round_of(&t, 400, 1, 3);
	/* the rounds still there keep their answers */
	k = round_of(&t, 200, 0, 0);
	assert_int_equal(k->answers, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_init),
	    cmocka_unit_test(test_per_server),
	    cmocka_unit_test(test_many_servers),
	    cmocka_unit_test(test_failed),
	    cmocka_unit_test(test_places),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
