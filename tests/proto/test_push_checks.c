/*
 * tests/proto/test_push_checks.c - a server's checks of a PUSH before it
 * is applied (ps_sproto_check_push, proto/server.h): in asynchronous
 * training, where no version pins it, the iteration must be one the job
 * runs (below train.iterations); in synchronous training it must be the
 * partition's version.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ordo/error.h"
#include "proto/server.h"
#include "scheduling/order.h"
#include "scheduling/placement.h"

/* One tensor of 100 floats, one partition, on one server, two workers;
 * initialised (version 0). */
static ps_sproto *shard(int async, uint64_t iterations, ps_placement **pl,
			uint32_t **numbers)
{
	ps_tensor_desc td[1] = {{.name = "a", .numel = 100}};
	uint32_t prio[1] = {0};
	ps_sproto *sh;
	ps_sproto_op op;
	ps_sproto_msg m;
	char why[128];

	assert_int_equal(ps_placement_compute(td, 1, 1 << 20, 0, 1, 0, pl),
			 PS_OK);
	assert_int_equal(ps_order_partition_numbers(*pl, prio, 0, numbers),
			 PS_OK);
	assert_int_equal(ps_sproto_create(&(ps_sproto_config){
						 .pl = *pl,
						 .server = 0,
						 .workers = 2,
						 .async = async,
						 .gate = PS_GATE_FIFO,
						 .iterations = iterations,
						 .numbers = *numbers},
					 &sh),
			 PS_OK);
	/* its initial values (worker 0's INIT), applied */
	assert_int_equal(ps_sproto_on_init(sh, 0, 0, 0, 400, NULL, why,
					  sizeof(why)),
			 PS_OK);
	assert_int_equal(ps_sproto_next_op(sh, &op), 1);
	assert_int_equal(ps_sproto_op_done(sh), PS_OK);
	while (ps_sproto_next_msg(sh, &m))
		;
	return sh;
}

static void check(int async, uint64_t iterations, uint64_t it, int want)
{
	ps_placement *pl;
	uint32_t *numbers, k = 99;
	ps_sproto *sh = shard(async, iterations, &pl, &numbers);
	char why[256] = "";

	int rc = ps_sproto_check_push(sh, 1, 0, 0, it, 0, 400, &k, why,
				      sizeof(why));

	if (rc != want)
		print_error("iteration %llu: %s\n", (unsigned long long)it,
			    why);
	assert_int_equal(rc, want);
	if (want == PS_OK)
		assert_int_equal(k, 0);
	else if (async)
		assert_non_null(strstr(why, "beyond the job's"));
	ps_sproto_destroy(&sh);
	free(numbers);
	ps_placement_free(&pl);
}

/* Asynchronous: any iteration the job runs; none at or past its end (a
 * far-future one would start a checkpoint no other worker reaches). */
static void test_async_bounded(void **state)
{
	(void)state;
	check(1, 20, 0, PS_OK);
	check(1, 20, 19, PS_OK);
	check(1, 20, 20, PS_EPROTO);
	check(1, 20, UINT64_MAX, PS_EPROTO);
	check(1, 0, 1000000, PS_OK); /* no bound given */
}

/* Synchronous: the partition's version pins the iteration. */
static void test_sync_version(void **state)
{
	(void)state;
	check(0, 20, 0, PS_OK);
	check(0, 20, 1, PS_EPROTO);
	check(0, 20, UINT64_MAX, PS_EPROTO);
	check(0, 0, 0, PS_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_async_bounded),
	    cmocka_unit_test(test_sync_version),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
