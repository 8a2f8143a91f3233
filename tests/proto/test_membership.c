/*
 * tests/proto/test_membership.c - the ranks workers ask for at registration
 * (worker.rank): kept, the others numbered around them, and the requests
 * a job cannot grant refused with a reason; a worker declaring other
 * tensors than the first, or none, refused and told (PS_MEMBER_TOLD)
 * while the job goes on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "proto/membership.h"

static ps_tensor_desc tensor = {.name = "w", .numel = 4};
static const ps_tensor_desc *declared = &tensor; /* what reg() declares */
static uint32_t ndeclared = 1;

/* Registers a node (src is also its pid): a server, or a worker asking
 * for rank want - 1 (want 0: any). */
static ps_member_verdict reg(ps_membership *m, uint32_t role, uint64_t src,
			     uint32_t want, char *why, size_t whylen)
{
	ps_wire_register r;
	uint32_t index;

	memset(&r, 0, sizeof(r));
	r.self.role = role;
	r.self.pid = (int32_t)src;
	r.self.transport_id = src;
	snprintf(r.self.host, sizeof(r.self.host), "h%llu",
		 (unsigned long long)src);
	if (role == PS_ROLE_WORKER) {
		r.num_tensors = ndeclared;
		r.tensors = (ps_tensor_desc *)declared;
		r.want_rank = want;
	}
	return ps_membership_register(m, &r, src, 0, &index, why, whylen);
}

static ps_membership *job(uint32_t servers, uint32_t workers)
{
	ps_membership_config cfg = {.servers = servers, .workers = workers,
				    .register_timeout_ms = 1000,
				    .heartbeat_interval_ms = 100,
				    .heartbeat_timeout_ms = 1000};
	ps_membership *m;

	assert_int_equal(ps_membership_create(&cfg, 0, &m), PS_OK);
	return m;
}

/* The rank of the worker registered from src, once complete. */
static uint32_t rank_of(const ps_membership *m, uint64_t src)
{
	for (uint32_t i = 0; i < ps_membership_registered(m); i++) {
		const ps_node_info *n =
			ps_membership_by_id(m, ps_membership_id_of(m, i));
		if (n->transport_id == src) {
			assert_int_equal(n->role, PS_ROLE_WORKER);
			return n->rank;
		}
	}
	fail_msg("no node from %llu", (unsigned long long)src);
	return UINT32_MAX;
}

/* Asked-for ranks are kept whatever the order of registration; workers
 * that ask for none take the ranks left, lowest first, in the order they
 * came; ids follow the ranks. */
static void test_asked_ranks(void **state)
{
	ps_membership *m = job(1, 4);
	char why[256];

	(void)state;
	assert_int_equal(reg(m, PS_ROLE_WORKER, 10, 0, why, sizeof(why)),
			 PS_MEMBER_ACCEPTED); /* any */
	assert_int_equal(reg(m, PS_ROLE_WORKER, 11, 1, why, sizeof(why)),
			 PS_MEMBER_ACCEPTED); /* rank 0 */
	assert_int_equal(reg(m, PS_ROLE_SERVER, 1, 0, why, sizeof(why)),
			 PS_MEMBER_ACCEPTED);
	assert_int_equal(reg(m, PS_ROLE_WORKER, 12, 0, why, sizeof(why)),
			 PS_MEMBER_ACCEPTED); /* any */
	assert_int_equal(reg(m, PS_ROLE_WORKER, 13, 3, why, sizeof(why)),
			 PS_MEMBER_ACCEPTED); /* rank 2 */
	assert_true(ps_membership_complete(m));
	assert_int_equal(rank_of(m, 11), 0);
	assert_int_equal(rank_of(m, 13), 2);
	assert_int_equal(rank_of(m, 10), 1);
	assert_int_equal(rank_of(m, 12), 3);
	for (uint32_t r = 0; r < 4; r++)
		assert_int_equal(ps_membership_by_id(m, 2 + r)->rank, r);
	ps_membership_destroy(&m);
}

/* A rank asked for twice, or outside the job: refused, saying which. */
static void test_refused_ranks(void **state)
{
	ps_membership *m = job(1, 2);
	char why[256];

	(void)state;
	assert_int_equal(reg(m, PS_ROLE_WORKER, 10, 2, why, sizeof(why)),
			 PS_MEMBER_ACCEPTED); /* rank 1 */
	assert_int_equal(reg(m, PS_ROLE_WORKER, 11, 2, why, sizeof(why)),
			 PS_MEMBER_REFUSED);
	assert_non_null(strstr(why, "worker pid 11 on h11 asks for rank 1 "
				    "(worker.rank), which worker pid 10 on "
				    "h10 has already"));
	assert_int_equal(reg(m, PS_ROLE_WORKER, 12, 3, why, sizeof(why)),
			 PS_MEMBER_REFUSED);
	assert_non_null(strstr(why, "asks for rank 2 (worker.rank), but the "
				    "job has 2 worker(s)"));
	/* the refused ones took no place: the job completes without them */
	assert_int_equal(reg(m, PS_ROLE_WORKER, 14, 0, why, sizeof(why)),
			 PS_MEMBER_ACCEPTED);
	assert_int_equal(reg(m, PS_ROLE_SERVER, 1, 0, why, sizeof(why)),
			 PS_MEMBER_ACCEPTED);
	assert_true(ps_membership_complete(m));
	assert_int_equal(rank_of(m, 10), 1);
	assert_int_equal(rank_of(m, 14), 0);
	ps_membership_destroy(&m);
}

/* Workers whose tensors differ from the first worker's, or who declare
 * none: refused and told (not the job's end), taking no place; a worker
 * that fits completes the job after them. */
static void test_other_tensors(void **state)
{
	ps_membership *m = job(1, 2);
	ps_tensor_desc bigger = {.name = "w", .numel = 5};
	ps_tensor_desc renamed = {.name = "v", .numel = 4};
	char why[256];

	(void)state;
	assert_int_equal(reg(m, PS_ROLE_WORKER, 10, 0, why, sizeof(why)),
			 PS_MEMBER_ACCEPTED);
	declared = &bigger;
	assert_int_equal(reg(m, PS_ROLE_WORKER, 11, 0, why, sizeof(why)),
			 PS_MEMBER_TOLD);
	assert_non_null(strstr(why, "worker pid 11 on h11 tensor 0 is 'w' (5 "
				    "elements), the first worker to register "
				    "declared 'w' (4)"));
	declared = &renamed;
	assert_int_equal(reg(m, PS_ROLE_WORKER, 12, 0, why, sizeof(why)),
			 PS_MEMBER_TOLD);
	ndeclared = 0;
	assert_int_equal(reg(m, PS_ROLE_WORKER, 13, 0, why, sizeof(why)),
			 PS_MEMBER_TOLD);
	assert_non_null(strstr(why, "worker pid 13 on h13 declared no tensors"));
	declared = &tensor;
	ndeclared = 1;
	assert_false(ps_membership_complete(m));
	assert_int_equal(reg(m, PS_ROLE_WORKER, 14, 0, why, sizeof(why)),
			 PS_MEMBER_ACCEPTED);
	assert_int_equal(reg(m, PS_ROLE_SERVER, 1, 0, why, sizeof(why)),
			 PS_MEMBER_ACCEPTED);
	assert_true(ps_membership_complete(m));
	assert_int_equal(rank_of(m, 10), 0);
	assert_int_equal(rank_of(m, 14), 1);
	ps_membership_destroy(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_asked_ranks),
	    cmocka_unit_test(test_refused_ranks),
	    cmocka_unit_test(test_other_tensors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
