/*
 * tests/support/ckpt_fixture.c - see ckpt_fixture.h.
 */
#include <stdlib.h>

#include "support/ckpt_fixture.h"

const ps_tensor_desc CKPT_FIX_MODEL[CKPT_FIX_NT] = {
    {"conv.w", 1000}, {"conv.b", 7},  {"fc.w", 4099},
    {"fc.b", 13},     {"out.w", 257},
};

const ckpt_fix_spec CKPT_FIX_CUT[] = {
    {0, 0, 0, 333}, {0, 2, 0, 2047}, {0, 4, 100, 157},   {1, 0, 333, 667},
    {1, 1, 0, 7},   {1, 3, 0, 13},   {1, 2, 2047, 2052}, {1, 4, 0, 100},
};
const size_t CKPT_FIX_NCUT = sizeof(CKPT_FIX_CUT) / sizeof(CKPT_FIX_CUT[0]);

const ps_ckpt_meta CKPT_FIX_META = {
    .iteration = 0,
    .mode = "sync",
    .workers = 4,
    .servers = 2,
    .partition_size = 8192,
    .preset = "ordo",
    .seed = -42,
    .config_ini = "[train]\nseed = -42\n[cluster]\nservers = 2\n",
};

/* Exact in float32: every value below 2^24 quarters. */
float ckpt_fix_value(uint32_t t, uint64_t i)
{
	return (float)(t * 100000u + i) * 0.25f;
}

float ckpt_fix_momentum(uint32_t t, uint64_t i)
{
	return t == 1 ? 0.0f : -(float)i - (float)t * 0.5f;
}

float ckpt_fix_second(uint32_t t, uint64_t i)
{
	return t <= 1 ? (float)i * 0.5f + (float)t + 0.125f : 0.0f;
}

float ckpt_fix_array(ps_ckpt_array a, uint32_t t, uint64_t i)
{
	switch (a) {
	case PS_CKPT_MOMENTUM:
		return ckpt_fix_momentum(t, i);
	case PS_CKPT_SECOND:
		return ckpt_fix_second(t, i);
	default:
		return ckpt_fix_value(t, i);
	}
}

uint64_t ckpt_fix_version(uint32_t t, uint64_t offset)
{
	return 100 + t * 10 + offset % 7;
}

int ckpt_fix_write_shard(const char *dir, uint32_t shard, uint64_t iteration,
                         const ckpt_fix_spec *sp, size_t nsp, char *why,
                         size_t whylen)
{
	ps_ckpt_segment *segs = calloc(nsp ? nsp : 1, sizeof(*segs));
	uint32_t n = 0;
	int rc = segs ? PS_OK : PS_ENOMEM;

	for (size_t k = 0; k < nsp && !rc; k++) {
		const ckpt_fix_spec *s = &sp[k];
		/* which arrays the segment stores: see ckpt_fixture.h */
		int stored[PS_CKPT_NARRAYS] = {1, s->tensor != 1,
		                               s->tensor <= 1};
		float *arr[PS_CKPT_NARRAYS] = {NULL};

		if (s->shard != shard)
			continue;
		for (int a = 0; a < PS_CKPT_NARRAYS; a++) {
			if (!stored[a])
				continue;
			arr[a] = malloc(s->numel * sizeof(float));
			if (!arr[a])
				rc = PS_ENOMEM;
			for (uint64_t i = 0; arr[a] && i < s->numel; i++)
				arr[a][i] = ckpt_fix_array(
				    (ps_ckpt_array)a, s->tensor, s->offset + i);
		}
		segs[n++] = (ps_ckpt_segment){
		    .tensor = s->tensor,
		    .offset = s->offset,
		    .numel = s->numel,
		    .version = ckpt_fix_version(s->tensor, s->offset),
		    .values = arr[PS_CKPT_VALUES],
		    .momentum = arr[PS_CKPT_MOMENTUM],
		    .second = arr[PS_CKPT_SECOND],
		};
	}
	if (!rc)
		rc = ps_ckpt_write_shard(dir, shard, iteration, segs, n, why,
		                         whylen);
	for (uint32_t i = 0; i < n; i++) {
		free((void *)segs[i].values);
		free((void *)segs[i].momentum);
		free((void *)segs[i].second);
	}
	free(segs);
	return rc;
}

int ckpt_fix_write(const char *root, uint64_t iteration, int manifest,
                   char *dir, size_t cap, char *why, size_t whylen)
{
	ps_ckpt_meta meta = CKPT_FIX_META;
	int rc = ps_ckpt_path(root, iteration, dir, cap);

	for (uint32_t r = 0; !rc && r < CKPT_FIX_SHARDS; r++)
		rc = ckpt_fix_write_shard(dir, r, iteration, CKPT_FIX_CUT,
		                          CKPT_FIX_NCUT, why, whylen);
	meta.iteration = iteration;
	if (!rc && manifest)
		rc = ps_ckpt_write_manifest(dir, &meta, CKPT_FIX_MODEL,
		                            CKPT_FIX_NT, CKPT_FIX_SHARDS, why,
		                            whylen);
	return rc;
}
