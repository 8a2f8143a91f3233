/*
 * tests/proto/test_pieces.c - partitions sent in pieces (placement.h,
 * "Pieces"): a direction whose partition size is below the partition a
 * server places and sums sends each partition in pieces. The geometry;
 * the server's machine (proto/server.h) taking a partition's pushed pieces
 * in order, summing each into its part of the sum and updating after the
 * round's last, and sending parameters piece by piece with their
 * acknowledgements in order; the worker's (proto/worker.h) pushing piece
 * by piece and taking parameters piece by piece, the version there only
 * once the last is in; and the refusals of what is out of order, of the
 * wrong size, or a combination the machines do not do.
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
#include "scheduling/gate.h"
#include "scheduling/order.h"
#include "scheduling/placement.h"

/* One tensor of 10 floats in one partition on one server; pieces of 16
 * bytes: 4 + 4 + 2 elements. */
#define NUMEL 10
#define PIECE 16
#define NPIECES 3

typedef struct fixture {
	ps_placement *pl;
	uint32_t *numbers;
} fixture;

static void setup(fixture *f)
{
	ps_tensor_desc td[1] = {{.name = "a", .numel = NUMEL}};
	uint32_t prio[1] = {0};

	assert_int_equal(ps_placement_compute(td, 1, 1 << 20, 0, 1, 0,
					      &f->pl), PS_OK);
	assert_int_equal(ps_order_partition_numbers(f->pl, prio, 0,
						    &f->numbers), PS_OK);
}

static void teardown(fixture *f)
{
	free(f->numbers);
	ps_placement_free(&f->pl);
}

static void test_geometry(void **state)
{
	ps_partition q = {.numel = NUMEL};
	uint64_t off, n, total = 0;

	(void)state;
	assert_int_equal(ps_part_pieces(&q, 0), 1);       /* whole */
	assert_int_equal(ps_part_pieces(&q, 1 << 20), 1); /* larger */
	assert_int_equal(ps_part_pieces(&q, 40), 1);      /* exactly */
	assert_int_equal(ps_part_pieces(&q, PIECE), NPIECES);
	assert_int_equal(ps_part_pieces(&q, 4), NUMEL);
	assert_int_equal(ps_part_pieces(&q, 2), NUMEL); /* whole elements */
	for (uint32_t i = 0; i < NPIECES; i++) {
		ps_piece_span(&q, PIECE, i, &off, &n);
		assert_int_equal(off, total); /* back to back, in order */
		total += n;
	}
	assert_int_equal(total, NUMEL);
	ps_piece_span(&q, PIECE, 2, &off, &n);
	assert_int_equal(off, 8);
	assert_int_equal(n, 2); /* the last is shorter */
	ps_piece_span(&q, 0, 0, &off, &n);
	assert_int_equal(off, 0);
	assert_int_equal(n, NUMEL);
}

/* ---- the server's side -------------------------------------------- */

/* A server of two workers holding the partition, initialised; pushes
 * (push_piece) and parameters (params_piece) in pieces or whole. The
 * parameters of version 0 are drained (and acknowledged with a window). */
static ps_sproto *shard(fixture *f, uint64_t push_piece, uint64_t params_piece,
		       uint64_t credit)
{
	ps_sproto *sh;
	ps_sproto_op op;
	ps_sproto_msg m;
	char why[128];

	assert_int_equal(ps_sproto_create(&(ps_sproto_config){
						 .pl = f->pl,
						 .server = 0,
						 .workers = 2,
						 .gate = PS_GATE_PRIORITY,
						 .credit = credit,
						 .push_credit = credit,
						 .push_piece = push_piece,
						 .params_piece = params_piece,
						 .numbers = f->numbers},
					 &sh),
			 PS_OK);
	assert_int_equal(ps_sproto_on_init(sh, 0, 0, 0, NUMEL * 4, NULL, why,
					  sizeof(why)),
			 PS_OK);
	assert_int_equal(ps_sproto_next_op(sh, &op), 1);
	assert_int_equal(ps_sproto_op_done(sh), PS_OK);
	while (ps_sproto_next_msg(sh, &m))
		if (credit)
			assert_int_equal(ps_sproto_on_params_ack(sh, m.worker,
								0, m.piece,
								why,
								sizeof(why)),
					 PS_OK);
	return sh;
}

static int push(ps_sproto *sh, uint32_t w, uint32_t piece, size_t bytes,
		char *why)
{
	return ps_sproto_on_push(sh, w, 0, 0, 0, 0, piece, bytes, NULL, 1, why,
				128);
}

static void test_shard_sums_pieces_then_updates(void **state)
{
	fixture f;
	ps_sproto *sh;
	ps_sproto_op op;
	char why[128];
	static const uint64_t offs[NPIECES] = {0, 4, 8}, ns[NPIECES] = {4, 4,
									 2};

	(void)state;
	setup(&f);
	sh = shard(&f, PIECE, 0, 0);
	/* in order, each its size; out of order, wrong size: refused */
	assert_int_equal(push(sh, 0, 1, 16, why), PS_EPROTO);
	assert_non_null(strstr(why, "PUSH of piece 1 of partition 0 from "
				    "worker 0, where piece 0 comes next"));
	assert_int_equal(push(sh, 0, 0, 40, why), PS_EPROTO);
	assert_non_null(strstr(why, "needs 16 bytes, got 40"));
	assert_int_equal(push(sh, 0, 3, 8, why), PS_EPROTO);
	assert_non_null(strstr(why, "which is pushed in 3"));
	/* worker 0's pieces, then worker 1's interleaved: each summed into
	 * its elements, set by the first worker's, added by the second's */
	for (uint32_t i = 0; i < NPIECES; i++)
		assert_int_equal(push(sh, 0, i, ns[i] * 4, why), PS_OK);
	assert_int_equal(push(sh, 0, 0, 16, why), PS_EPROTO); /* a 4th */
	assert_non_null(strstr(why, "second PUSH from worker 0"));
	for (uint32_t i = 0; i < NPIECES; i++) {
		assert_int_equal(ps_sproto_next_op(sh, &op), 1);
		assert_int_equal(op.kind, PS_SHARD_OP_AGGREGATE);
		assert_int_equal(op.piece, i);
		assert_int_equal(op.offset, offs[i]);
		assert_int_equal(op.numel, ns[i]);
		assert_true(op.first);
		assert_int_equal(ps_sproto_op_done(sh), PS_OK);
	}
	for (uint32_t i = 0; i < NPIECES; i++)
		assert_int_equal(push(sh, 1, i, ns[i] * 4, why), PS_OK);
	for (uint32_t i = 0; i < NPIECES; i++) {
		assert_int_equal(ps_sproto_next_op(sh, &op), 1);
		assert_int_equal(op.kind, PS_SHARD_OP_AGGREGATE);
		assert_int_equal(op.offset, offs[i]);
		assert_false(op.first);
		assert_int_equal(ps_sproto_op_done(sh), PS_OK);
	}
	/* the round's last piece is in: the update over the whole sum */
	assert_int_equal(ps_sproto_part_at(sh, 0)->version, 0);
	assert_int_equal(ps_sproto_next_op(sh, &op), 1);
	assert_int_equal(op.kind, PS_SHARD_OP_UPDATE);
	assert_true(op.all_summed);
	assert_null(op.ctx);
	assert_int_equal(op.count, 2);
	assert_int_equal(op.offset, 0);
	assert_int_equal(op.numel, NUMEL);
	assert_int_equal(ps_sproto_op_done(sh), PS_OK);
	assert_int_equal(ps_sproto_part_at(sh, 0)->version, 1);
	/* the next round starts from piece 0 again */
	assert_int_equal(ps_sproto_on_push(sh, 0, 0, 0, 1, 0, 1, 16, NULL, 1,
					  why, sizeof(why)),
			 PS_EPROTO);
	assert_int_equal(ps_sproto_on_push(sh, 0, 0, 0, 1, 0, 0, 16, NULL, 1,
					  why, sizeof(why)),
			 PS_OK);
	ps_sproto_destroy(&sh);
	teardown(&f);
}

static void test_shard_sends_pieces(void **state)
{
	fixture f;
	ps_sproto *sh;
	ps_sproto_op op;
	ps_sproto_msg m;
	ps_sproto_stats st;
	char why[128];
	uint32_t n = 0;

	(void)state;
	setup(&f);
	/* a window of one piece: one in flight at a time */
	sh = shard(&f, 0, PIECE, PIECE);
	for (uint32_t w = 0; w < 2; w++)
		assert_int_equal(push(sh, w, 0, NUMEL * 4, why), PS_OK);
	while (ps_sproto_next_op(sh, &op))
		assert_int_equal(ps_sproto_op_done(sh), PS_OK);
	/* worker 0's pieces, one by one as each is acknowledged, in order;
	 * then worker 1's */
	for (uint32_t k = 0; k < 2 * NPIECES; k++) {
		do
			assert_int_equal(ps_sproto_next_msg(sh, &m), 1);
		while (m.kind == PS_SHARD_MSG_PUSH_ACK);
		assert_int_equal(m.kind, PS_SHARD_MSG_PARAMS);
		assert_int_equal(m.worker, k / NPIECES);
		assert_int_equal(m.piece, k % NPIECES);
		assert_int_equal(m.offset, 4 * (k % NPIECES));
		assert_int_equal(m.bytes, k % NPIECES == 2 ? 8 : 16);
		assert_int_equal(m.iteration, 1);
		assert_int_equal(ps_sproto_next_msg(sh, &m), 0); /* window */
		if (k % NPIECES == 0 && k) {
			/* an acknowledgement out of order is refused */
			assert_int_equal(ps_sproto_on_params_ack(sh, k / NPIECES,
								0, 1, why,
								sizeof(why)),
					 PS_EPROTO);
			assert_non_null(strstr(why, "where piece 0 is "
						    "acknowledged next"));
		}
		assert_int_equal(ps_sproto_on_params_ack(sh, k / NPIECES, 0,
							k % NPIECES, why,
							sizeof(why)),
				 PS_OK);
		n++;
	}
	assert_int_equal(n, 2 * NPIECES);
	assert_int_equal(ps_gate_in_flight(ps_sproto_gate(sh)), 0);
	/* nothing more in flight: a further ack is forged */
	assert_int_equal(ps_sproto_on_params_ack(sh, 0, 0, 0, why, sizeof(why)),
			 PS_EPROTO);
	ps_sproto_get_stats(sh, &st);
	assert_int_equal(st.sends, 4 * NPIECES); /* versions 0 and 1 */
	ps_sproto_destroy(&sh);
	teardown(&f);
}

static void test_shard_refuses_what_pieces_cannot(void **state)
{
	fixture f;
	ps_sproto *sh = NULL;

	(void)state;
	setup(&f);
	/* pushes in pieces: synchronous mode only */
	assert_int_equal(ps_sproto_create(&(ps_sproto_config){
						 .pl = f.pl,
						 .workers = 2,
						 .async = 1,
						 .gate = PS_GATE_FIFO,
						 .push_piece = PIECE,
						 .numbers = f.numbers},
					 &sh),
			 PS_EINVAL);
	/* parameters in pieces: not under the counter gate */
	assert_int_equal(ps_sproto_create(&(ps_sproto_config){
						 .pl = f.pl,
						 .workers = 2,
						 .gate = PS_GATE_COUNTER,
						 .params_piece = PIECE,
						 .numbers = f.numbers},
					 &sh),
			 PS_EINVAL);
	assert_null(sh);
	teardown(&f);
}

/* ---- the worker's side -------------------------------------------- */

static ps_wproto *worker(fixture *f, uint64_t push_piece,
			 uint64_t params_piece, uint64_t credit)
{
	ps_wproto *w;

	assert_int_equal(ps_wproto_create(&(ps_wproto_config){
						  .pl = f->pl,
						  .gate = PS_GATE_PRIORITY,
						  .credit = credit,
						  .params_credit = credit,
						  .sync = 1,
						  .push_piece = push_piece,
						  .params_piece = params_piece,
						  .numbers = f->numbers},
					  &w),
			 PS_OK);
	return w;
}

static void test_worker_pushes_pieces(void **state)
{
	fixture f;
	ps_wproto *w;
	ps_wproto_staging st;
	ps_wproto_msg m;
	char why[128];
	int acked, complete;

	(void)state;
	setup(&f);
	w = worker(&f, PIECE, 0, 0);
	assert_int_equal(ps_wproto_push(w, 0, 0, (void *)&f, &st, why,
					sizeof(why)),
			 PS_OK);
	assert_int_equal(ps_wproto_flush(w), PS_OK);
	for (uint32_t i = 0; i < NPIECES; i++) {
		assert_int_equal(ps_wproto_next_msg(w, &m), 1);
		assert_int_equal(m.kind, PS_WPROTO_MSG_PUSH);
		assert_int_equal(m.piece, i);
		assert_int_equal(m.offset, 4 * i);
		assert_int_equal(m.bytes, i == 2 ? 8 : 16);
		assert_ptr_equal(m.ctx, &f); /* every piece the same bytes */
	}
	assert_false(ps_wproto_idle(w));
	/* without a window, the partition's next version acknowledges
	 * every piece at once */
	assert_int_equal(ps_wproto_on_params(w, 0, 0, 0, 1, 0, NUMEL * 4,
					     &acked, &complete, why,
					     sizeof(why)),
			 PS_OK);
	assert_int_equal(acked, 1);
	assert_int_equal(complete, 1);
	assert_true(ps_wproto_idle(w));
	ps_wproto_destroy(&w);

	/* with a window, a PUSH_ACK per piece, in order */
	w = worker(&f, PIECE, 0, 1024);
	assert_int_equal(ps_wproto_push(w, 0, 0, NULL, &st, why, sizeof(why)),
			 PS_OK);
	assert_int_equal(ps_wproto_flush(w), PS_OK);
	while (ps_wproto_next_msg(w, &m))
		;
	assert_int_equal(ps_gate_in_flight(ps_wproto_gate(w)), NUMEL * 4);
	assert_int_equal(ps_wproto_on_push_ack(w, 0, 0, 1, why, sizeof(why)),
			 PS_EPROTO);
	assert_non_null(strstr(why, "where piece 0 is acknowledged next"));
	for (uint32_t i = 0; i < NPIECES; i++)
		assert_int_equal(ps_wproto_on_push_ack(w, 0, 0, i, why,
						       sizeof(why)),
				 PS_OK);
	assert_int_equal(ps_gate_in_flight(ps_wproto_gate(w)), 0);
	assert_true(ps_wproto_idle(w));
	assert_int_equal(ps_wproto_on_push_ack(w, 0, 0, 0, why, sizeof(why)),
			 PS_EPROTO);
	ps_wproto_destroy(&w);
	teardown(&f);
}

static void test_worker_gathers_parameter_pieces(void **state)
{
	fixture f;
	ps_wproto *w;
	ps_wproto_msg m;
	char why[128];
	uint64_t v;
	int acked, complete;

	(void)state;
	setup(&f);
	w = worker(&f, 0, PIECE, 1024);
#define PARAMS(version, piece, bytes)                                          \
	ps_wproto_on_params(w, 0, 0, 0, version, piece, bytes, &acked,        \
			    &complete, why, sizeof(why))
	/* out of order, of the wrong size, past the last: refused */
	assert_int_equal(PARAMS(0, 1, 16), PS_EPROTO);
	assert_non_null(strstr(why, "PARAMS piece 1 of partition 0, where "
				    "piece 0 comes next"));
	assert_int_equal(PARAMS(0, 0, 40), PS_EPROTO);
	assert_int_equal(PARAMS(0, 3, 8), PS_EPROTO);
	/* in order: the version is there once the last is in */
	assert_int_equal(PARAMS(0, 0, 16), PS_OK);
	assert_int_equal(complete, 0);
	assert_int_equal(ps_wproto_part_version(w, 0, &v), 0);
	/* a later piece of another version: refused */
	assert_int_equal(PARAMS(1, 1, 16), PS_EPROTO);
	assert_non_null(strstr(why, "has version 1, its first piece 0"));
	assert_int_equal(PARAMS(0, 1, 16), PS_OK);
	assert_int_equal(complete, 0);
	assert_int_equal(PARAMS(0, 2, 8), PS_OK);
	assert_int_equal(complete, 1);
	assert_int_equal(ps_wproto_part_version(w, 0, &v), 1);
	assert_int_equal(v, 0);
	/* a PARAMS_ACK per piece, in order, naming it */
	for (uint32_t i = 0; i < NPIECES; i++) {
		assert_int_equal(ps_wproto_next_msg(w, &m), 1);
		assert_int_equal(m.kind, PS_WPROTO_MSG_PARAMS_ACK);
		assert_int_equal(m.piece, i);
	}
	/* the next version starts at piece 0; then an older one is stale */
	assert_int_equal(PARAMS(1, 0, 16), PS_OK);
	assert_int_equal(PARAMS(1, 1, 16), PS_OK);
	assert_int_equal(PARAMS(1, 2, 8), PS_OK);
	assert_int_equal(complete, 1);
	assert_int_equal(PARAMS(0, 0, 16), PS_EPROTO);
	assert_non_null(strstr(why, "stale"));
#undef PARAMS
	ps_wproto_destroy(&w);

	/* pushes in pieces: synchronous mode only, not under counter */
	assert_int_equal(ps_wproto_create(&(ps_wproto_config){
						  .pl = f.pl,
						  .gate = PS_GATE_PRIORITY,
						  .sync = 0,
						  .push_piece = PIECE,
						  .numbers = f.numbers},
					  &w),
			 PS_EINVAL);
	assert_int_equal(ps_wproto_create(&(ps_wproto_config){
						  .pl = f.pl,
						  .gate = PS_GATE_COUNTER,
						  .sync = 1,
						  .push_piece = PIECE,
						  .numbers = f.numbers},
					  &w),
			 PS_EINVAL);
	teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_geometry),
	    cmocka_unit_test(test_shard_sums_pieces_then_updates),
	    cmocka_unit_test(test_shard_sends_pieces),
	    cmocka_unit_test(test_shard_refuses_what_pieces_cannot),
	    cmocka_unit_test(test_worker_pushes_pieces),
	    cmocka_unit_test(test_worker_gathers_parameter_pieces),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
