/*
 * tests/proto/test_checkpoint_sched.c - the scheduler's side of
 * checkpoints (proto/checkpoint_sched.h): an ask a little ahead of the
 * furthest progress, asked again past a CKPT_LATE and given up in the
 * end; late answers to older asks ignored; a round's first answer asks
 * the servers that hold nothing, unless the checkpoint was asked of every
 * server; the manifest once every server wrote its shard, never after a
 * failure or on a repeated answer; the request cleared once taken up; the
 * flush counted per FLUSH sent, refusing one not asked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ordo/error.h"
#include "proto/checkpoint_sched.h"
#include "proto/stop.h"

static void test_ask_and_late(void **state)
{
	ps_ckpt_sched c;
	uint64_t v, w;

	(void)state;
	assert_int_equal(ps_ckpt_sched_init(&c, 0), PS_EINVAL);
	assert_int_equal(ps_ckpt_sched_init(&c, 2), PS_OK);
	v = ps_ckpt_sched_ask(&c, 10, 0);
	assert_true(v > 10);
	assert_int_equal(c.asked, v);
	/* a server already past it: asked again, further */
	assert_true(ps_ckpt_sched_on_late(&c, v + 3));
	w = ps_ckpt_sched_ask(&c, 10, v + 3);
	assert_true(w > v + 3);
	/* a late answer to the older ask is not acted on */
	assert_false(ps_ckpt_sched_on_late(&c, v));
	/* the servers keep passing it: given up in the end */
	while (w)
		w = ps_ckpt_sched_ask(&c, w, w + 1);
	assert_int_equal(c.asked, 0);
	assert_false(ps_ckpt_sched_on_late(&c, 1000));
	ps_ckpt_sched_free(&c);
}

static void test_rounds(void **state)
{
	ps_ckpt_sched c;
	ps_ckpt_done d;
	uint64_t v;

	(void)state;
	assert_int_equal(ps_ckpt_sched_init(&c, 2), PS_OK);
	assert_int_equal(ps_ckpt_sched_on_done(&c, 0, 0, 1, &d), PS_EINVAL);
	/* a periodic checkpoint: its first answer asks the empty servers */
	assert_int_equal(ps_ckpt_sched_on_done(&c, 1, 4, 1, &d), PS_OK);
	assert_true(d.ask_empty);
	assert_false(d.manifest);
	assert_int_equal(ps_ckpt_sched_on_done(&c, 1, 4, 1, &d), PS_OK);
	assert_int_equal(d.answer, PS_CKPT_ANSWER_REPEATED);
	assert_false(d.ask_empty);
	assert_int_equal(ps_ckpt_sched_on_done(&c, 0, 4, 1, &d), PS_OK);
	assert_int_equal(d.answer, PS_CKPT_ANSWER_COMPLETE);
	assert_true(d.manifest);
	/* a late repeat after completion writes nothing again */
	assert_int_equal(ps_ckpt_sched_on_done(&c, 0, 4, 1, &d), PS_OK);
	assert_false(d.manifest);
	/* one asked for went to every server: no empty ask; a failure
	 * takes the request up but writes no manifest */
	v = ps_ckpt_sched_ask(&c, 6, 0);
	assert_int_equal(ps_ckpt_sched_on_done(&c, 0, v, 0, &d), PS_OK);
	assert_false(d.ask_empty);
	assert_int_equal(c.asked, 0);
	assert_int_equal(ps_ckpt_sched_on_done(&c, 1, v, 1, &d), PS_OK);
	assert_int_equal(d.answer, PS_CKPT_ANSWER_COMPLETE);
	assert_false(d.manifest);
	assert_int_equal(ps_ckpt_sched_on_done(&c, 2, v, 1, &d), PS_OK);
	assert_int_equal(d.answer, PS_CKPT_ANSWER_BAD_RANK);
	ps_ckpt_sched_free(&c);
}

static void test_flush(void **state)
{
	ps_ckpt_sched c;

	(void)state;
	assert_int_equal(ps_ckpt_sched_init(&c, 2), PS_OK);
	assert_int_equal(ps_ckpt_sched_on_flushed(&c, 0), PS_EPROTO);
	ps_ckpt_sched_flush(&c);
	/* a CKPT_LATE while flushing asks nothing more */
	c.asked = 3;
	assert_false(ps_ckpt_sched_on_late(&c, 5));
	/* server 1 holds nothing: asked its shard and FLUSHed again */
	ps_ckpt_sched_reflush(&c, 1);
	assert_int_equal(ps_ckpt_sched_on_flushed(&c, 1), 0);
	assert_int_equal(ps_ckpt_sched_on_flushed(&c, 0), 0);
	assert_int_equal(ps_ckpt_sched_on_flushed(&c, 1), 1);
	assert_int_equal(ps_ckpt_sched_on_flushed(&c, 1), PS_EPROTO);
	assert_int_equal(ps_ckpt_sched_on_flushed(&c, 7), PS_EPROTO);
	ps_ckpt_sched_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ask_and_late),
	    cmocka_unit_test(test_rounds),
	    cmocka_unit_test(test_flush),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
