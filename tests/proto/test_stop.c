/*
 * tests/proto/test_stop.c - a stop every worker agrees on (proto/stop.h):
 * the iteration asked for and its margin, a worker that waits at its stop
 * until every worker is there, a late worker that moves the stop, a stop
 * called off, and what the scheduler's round counts.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ordo/error.h"
#include "proto/stop.h"

static void test_ask(void **state)
{
	uint64_t margin = 0;

	(void)state;
	assert_int_equal(ps_stop_ask(10, 0, &margin), 12); /* first: + 2 */
	assert_int_equal(margin, 2);
	assert_int_equal(ps_stop_ask(10, 13, &margin), 17); /* late: x 2 */
	assert_int_equal(margin, 4);
	assert_int_equal(ps_stop_ask(20, 0, &margin), 22); /* a new ask */
	for (int i = 0; i < 9; i++) /* 4, 8, ... 1024 */
		assert_true(ps_stop_ask(20, 21, &margin) != 0);
	assert_int_equal(margin, PS_STOP_MARGIN_MAX);
	assert_int_equal(ps_stop_ask(20, 21, &margin), 0); /* given up */
	assert_int_equal(margin, 0);
	margin = 0;
	assert_int_equal(ps_stop_ask(UINT64_MAX - 1, 0, &margin), 0);
}

static ps_stop_next next(ps_stop_worker *s, uint64_t it, int want_ready)
{
	int ready = -1;
	ps_stop_next n = ps_stop_worker_next(s, it, &ready);

	assert_int_equal(ready, want_ready);
	return n;
}

static void test_worker_waits(void **state)
{
	ps_stop_worker s = {0};
	uint64_t late = 0;
	char why[128];

	(void)state;
	assert_int_equal(next(&s, 0, 0), PS_STOP_RUN);
	assert_int_equal(next(&s, 1, 0), PS_STOP_RUN);
	assert_int_equal(s.begun, 2);
	/* began 1: can stop before 2, not before 1 */
	assert_int_equal(ps_stop_worker_on_stop(&s, 1, &late, why,
						sizeof(why)), 1);
	assert_int_equal(late, 2);
	assert_int_equal(ps_stop_worker_on_stop(&s, 3, &late, why,
						sizeof(why)), PS_OK);
	assert_int_equal(next(&s, 2, 0), PS_STOP_RUN);
	/* at the stop: says so once, and waits */
	assert_int_equal(next(&s, 3, 1), PS_STOP_WAIT);
	assert_int_equal(next(&s, 3, 0), PS_STOP_WAIT);
	/* an older stop changes nothing */
	assert_int_equal(ps_stop_worker_on_stop(&s, 2, &late, why,
						sizeof(why)), 1);
	assert_int_equal(next(&s, 3, 0), PS_STOP_WAIT);
	/* a STOP_NOW for another stop is refused */
	assert_int_equal(ps_stop_worker_on_now(&s, 4, why, sizeof(why)),
			 PS_EPROTO);
	assert_int_equal(ps_stop_worker_on_now(&s, 3, why, sizeof(why)),
			 PS_OK);
	assert_int_equal(next(&s, 3, 0), PS_STOP_END);
	assert_int_equal(ps_stop_worker_on_stop(&s, 0, &late, why,
						sizeof(why)), PS_EPROTO);
}

static void test_worker_moves_on(void **state)
{
	ps_stop_worker s = {0};
	uint64_t late = 0;
	char why[128];

	(void)state;
	assert_int_equal(ps_stop_worker_on_stop(&s, 2, &late, why,
						sizeof(why)), PS_OK);
	assert_int_equal(next(&s, 0, 0), PS_STOP_RUN);
	assert_int_equal(next(&s, 1, 0), PS_STOP_RUN);
	assert_int_equal(next(&s, 2, 1), PS_STOP_WAIT);
	/* another worker was late: the stop moves, the wait ends */
	assert_int_equal(ps_stop_worker_on_stop(&s, 5, &late, why,
						sizeof(why)), PS_OK);
	assert_int_equal(next(&s, 2, 0), PS_STOP_RUN);
	assert_int_equal(next(&s, 4, 0), PS_STOP_RUN);
	assert_int_equal(next(&s, 5, 1), PS_STOP_WAIT); /* said again */
	/* called off */
	assert_int_equal(ps_stop_worker_on_stop(&s, PS_STOP_NEVER, &late, why,
						sizeof(why)), PS_OK);
	assert_int_equal(next(&s, 5, 0), PS_STOP_RUN);
	/* a STOP_NOW without a wait is refused */
	assert_int_equal(ps_stop_worker_on_now(&s, PS_STOP_NEVER, why,
					       sizeof(why)), PS_EPROTO);
}

static void test_worker_alone(void **state)
{
	ps_stop_worker s = {.fault = PS_STOP_FAULT_ALONE};
	uint64_t late = 0;
	char why[128];

	(void)state;
	assert_int_equal(ps_stop_worker_on_stop(&s, 1, &late, why,
						sizeof(why)), PS_OK);
	assert_int_equal(next(&s, 0, 0), PS_STOP_RUN);
	assert_int_equal(next(&s, 1, 0), PS_STOP_END); /* the bug */
}

static void test_round(void **state)
{
	ps_stop_round r;
	char why[128];

	(void)state;
	assert_int_equal(ps_stop_round_init(&r, 0), PS_EINVAL);
	assert_int_equal(ps_stop_round_init(&r, 3), PS_OK);
	/* nothing asked: readies are ignored, lates move nothing */
	assert_int_equal(ps_stop_round_on_ready(&r, 0, 5, why, sizeof(why)), 0);
	assert_int_equal(ps_stop_round_on_late(&r, 9), 0);
	ps_stop_round_start(&r, 5);
	assert_int_equal(ps_stop_round_on_ready(&r, 3, 5, why, sizeof(why)),
			 PS_EPROTO);
	assert_int_equal(ps_stop_round_on_ready(&r, 0, 5, why, sizeof(why)), 0);
	assert_int_equal(ps_stop_round_on_ready(&r, 0, 5, why, sizeof(why)), 0);
	assert_int_equal(ps_stop_round_on_ready(&r, 1, 5, why, sizeof(why)), 0);
	/* worker 2 began 5: the stop must move; older answers do not */
	assert_int_equal(ps_stop_round_on_late(&r, 5), 0);
	assert_int_equal(ps_stop_round_on_late(&r, 6), 1);
	ps_stop_round_start(&r, 9);
	assert_int_equal(ps_stop_round_on_late(&r, 6), 0);
	/* readiness starts over; a ready for 5 counts no more */
	assert_int_equal(ps_stop_round_on_ready(&r, 0, 5, why, sizeof(why)), 0);
	assert_int_equal(ps_stop_round_on_ready(&r, 0, 9, why, sizeof(why)), 0);
	assert_int_equal(ps_stop_round_on_ready(&r, 1, 9, why, sizeof(why)), 0);
	assert_int_equal(ps_stop_round_on_ready(&r, 2, 9, why, sizeof(why)), 1);
	assert_true(r.ended);
	/* ended: nothing more counts or moves it */
	assert_int_equal(ps_stop_round_on_ready(&r, 2, 9, why, sizeof(why)), 0);
	assert_int_equal(ps_stop_round_on_late(&r, 12), 0);
	/* called off */
	ps_stop_round_start(&r, 20);
	ps_stop_round_cancel(&r);
	assert_int_equal(ps_stop_round_on_ready(&r, 0, 20, why, sizeof(why)), 0);
	assert_int_equal(ps_stop_round_on_late(&r, 30), 0);
	ps_stop_round_free(&r);
	ps_stop_round_free(&r); /* twice: harmless */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ask),
	    cmocka_unit_test(test_worker_waits),
	    cmocka_unit_test(test_worker_moves_on),
	    cmocka_unit_test(test_worker_alone),
	    cmocka_unit_test(test_round),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
