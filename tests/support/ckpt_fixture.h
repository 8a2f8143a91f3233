/*
 * tests/support/ckpt_fixture.h - a small checkpoint with known contents,
 * shared by test_checkpoint and tests/tools/make_ckpt (tests/checkpoint/
 * cli.sh checks ps-ckpt's output against the same formulas).
 *
 * The model: conv.w (1000 elements), conv.b (7), fc.w (4099), fc.b (13),
 * out.w (257). Element i of tensor t holds (t * 100000 + i) * 0.25 and has
 * momentum -i - t * 0.5, except conv.b (t = 1), written without momentum
 * (zeros); conv.w and conv.b (t <= 1) have the second moment
 * i * 0.5 + t + 0.125, the others none (zeros). So the segments store
 * values and momentum and second moment (conv.w), values and second
 * moment (conv.b), values and momentum (the rest). Two shards, the
 * segments cut at odd offsets (CKPT_FIX_CUT); shard 1 holds conv.b and
 * fc.b whole, as a fused partition does.
 */
#ifndef ORDO_TESTS_CKPT_FIXTURE_H
#define ORDO_TESTS_CKPT_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "checkpoint/checkpoint.h"

#define CKPT_FIX_NT     5u
#define CKPT_FIX_SHARDS 2u

typedef struct ckpt_fix_spec {
	uint32_t shard, tensor;
	uint64_t offset, numel;
} ckpt_fix_spec;

extern const ps_tensor_desc CKPT_FIX_MODEL[CKPT_FIX_NT];
extern const ckpt_fix_spec CKPT_FIX_CUT[];
extern const size_t CKPT_FIX_NCUT;
extern const ps_ckpt_meta CKPT_FIX_META; /* iteration 0: set your own */

float ckpt_fix_value(uint32_t t, uint64_t i);
float ckpt_fix_momentum(uint32_t t, uint64_t i);
float ckpt_fix_second(uint32_t t, uint64_t i);
/* Element i of array a (ps_ckpt_array) of tensor t. */
float ckpt_fix_array(ps_ckpt_array a, uint32_t t, uint64_t i);
uint64_t ckpt_fix_version(uint32_t t, uint64_t offset);

/* Writes shard `shard` of iteration into dir: the specs of that shard. */
int ckpt_fix_write_shard(const char *dir, uint32_t shard, uint64_t iteration,
                         const ckpt_fix_spec *sp, size_t nsp, char *why,
                         size_t whylen);

/* ROOT/ckpt-ITER (into dir) with both shards and, if manifest, the
 * manifest. */
int ckpt_fix_write(const char *root, uint64_t iteration, int manifest,
                   char *dir, size_t cap, char *why, size_t whylen);

#endif /* ORDO_TESTS_CKPT_FIXTURE_H */
