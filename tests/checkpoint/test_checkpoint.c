/*
 * tests/checkpoint/test_checkpoint.c - the checkpoint library
 * (checkpoint/checkpoint.h, docs/checkpoint-format.md): round trips read
 * back under another cut, every refusal of write_manifest and open with
 * its message, a full disk, latest and prune, the .npy export, and random
 * single-byte corruption that must never crash nor return wrong data.
 * The second moment: every combination of stored arrays, its place in the
 * file, its checksum; a format-1 file (written by the format-1 writer)
 * still read; a newer format refused.
 *
 * Every checkpoint lives under one mkdtemp() directory, removed (whole
 * tree) at the end.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "support/ckpt_fixture.h"
#include "support/tmpdir.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <zlib.h>

#include "checkpoint/checkpoint.h"

static char tmpdir[64];
static char why[1024];

/* ---- the checkpoints of ckpt_fixture.h ---------------------------------- */

#define MODEL    CKPT_FIX_MODEL
#define NT       CKPT_FIX_NT
#define CUT      CKPT_FIX_CUT
#define NCUT     CKPT_FIX_NCUT
#define PATH_CAP (PS_CKPT_PATH_MAX + 64) /* a checkpoint dir + a name */
/* Elements whose bytes pass the writer's threshold (16 MiB) for computing
 * the checksums on a helper thread. */
#define BIG_NUMEL 5000000u

static int write_shard_of(const char *dir, uint32_t shard, uint64_t iteration,
                          const ckpt_fix_spec *sp, size_t nsp)
{
	return ckpt_fix_write_shard(dir, shard, iteration, sp, nsp, why,
	                            sizeof(why));
}

/* ROOT/ckpt-ITER with both shards and (with manifest) the manifest. */
static const char *write_ckpt(const char *root, uint64_t iteration,
                              int manifest)
{
	static char dir[PS_CKPT_PATH_MAX];

	if (ckpt_fix_write(root, iteration, manifest, dir, sizeof(dir), why,
	                   sizeof(why)) != PS_OK)
		fail_msg("writing %s: %s", dir, why);
	return dir;
}

/* A checkpoint of one shard in dir: segs of model, as iteration. */
static void write_single(const char *dir, uint64_t iteration,
                         const ps_ckpt_segment *segs, uint32_t nsegs,
                         const ps_tensor_desc *model, uint32_t nt)
{
	ps_ckpt_meta meta = CKPT_FIX_META;

	meta.iteration = iteration;
	meta.servers = 1;
	if (ps_ckpt_write_shard(dir, 0, iteration, segs, nsegs, why,
	                        sizeof(why)) != PS_OK ||
	    ps_ckpt_write_manifest(dir, &meta, model, nt, 1, why,
	                           sizeof(why)) != PS_OK)
		fail_msg("writing %s: %s", dir, why);
}

/* A path under tmpdir (static, 8 in rotation). */
static const char *at(const char *fmt, ...)
{
	static char bufs[8][PS_CKPT_PATH_MAX];
	static int next;
	char *b = bufs[next++ % 8], rel[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	snprintf(b, PS_CKPT_PATH_MAX, "%s/%s", tmpdir, rel);
	return b;
}

static int rm_entry(const char *path, const struct stat *st, int flag,
                    struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void rm_tree(const char *path)
{
	nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static void assert_why(const char *needle)
{
	if (!strstr(why, needle))
		fail_msg("message '%s' does not contain '%s'", why, needle);
}

/* ---- reading back ------------------------------------------------------- */

/* Fills and checks ranges of chunk elements over every tensor (shuffled
 * with seed), values, momentum and second moment; versions: the smallest
 * of the written segments each range overlaps. */
static int read_cut(const ps_ckpt *ck, uint64_t chunk, unsigned seed)
{
	size_t n = 0, cap = 0;
	ps_ckpt_range *r = NULL;
	int rc;

	for (uint32_t t = 0; t < NT; t++)
		cap += (MODEL[t].numel + chunk - 1) / chunk;
	r = calloc(cap, sizeof(*r));
	assert_non_null(r);
	for (uint32_t t = 0; t < NT; t++)
		for (uint64_t o = 0; o < MODEL[t].numel; o += chunk) {
			uint64_t len = MODEL[t].numel - o < chunk
			                   ? MODEL[t].numel - o
			                   : chunk;

			r[n++] = (ps_ckpt_range){
			    .tensor = t,
			    .offset = o,
			    .numel = len,
			    .values = malloc(len * sizeof(float)),
			    .momentum = malloc(len * sizeof(float)),
			    .second = malloc(len * sizeof(float)),
			};
		}
	srand(seed);
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)rand() % i;
		ps_ckpt_range x = r[i - 1];

		r[i - 1] = r[j];
		r[j] = x;
	}
	rc = ps_ckpt_read_ranges(ck, r, n, why, sizeof(why));
	for (size_t i = 0; i < n && rc == PS_OK; i++) {
		uint64_t want_version = UINT64_MAX;

		for (uint64_t e = 0; e < r[i].numel; e++) {
			uint64_t el = r[i].offset + e;

			assert_true(r[i].values[e] ==
			            ckpt_fix_value(r[i].tensor, el));
			assert_true(r[i].momentum[e] ==
			            ckpt_fix_momentum(r[i].tensor, el));
			assert_true(r[i].second[e] ==
			            ckpt_fix_second(r[i].tensor, el));
		}
		for (size_t k = 0; k < NCUT; k++)
			if (CUT[k].tensor == r[i].tensor &&
			    CUT[k].offset < r[i].offset + r[i].numel &&
			    CUT[k].offset + CUT[k].numel > r[i].offset &&
			    ckpt_fix_version(CUT[k].tensor, CUT[k].offset) <
			        want_version)
				want_version = ckpt_fix_version(CUT[k].tensor,
				                                CUT[k].offset);
		assert_int_equal(r[i].version, want_version);
	}
	for (size_t i = 0; i < n; i++) {
		free(r[i].values);
		free(r[i].momentum);
		free(r[i].second);
	}
	free(r);
	return rc;
}

static void test_round_trip(void **state)
{
	const char *dir = write_ckpt(at("rt"), 10, 1);
	const ps_ckpt_meta *m;
	ps_ckpt *ck;

	(void)state;
	assert_int_equal(ps_ckpt_open(dir, &ck, why, sizeof(why)), PS_OK);
	m = ps_ckpt_info(ck);
	assert_int_equal(m->iteration, 10);
	assert_string_equal(m->mode, "sync");
	assert_int_equal(m->workers, 4);
	assert_int_equal(m->servers, 2);
	assert_int_equal(m->partition_size, 8192);
	assert_string_equal(m->preset, "ordo");
	assert_int_equal(m->seed, -42);
	assert_string_equal(m->config_ini, CKPT_FIX_META.config_ini);
	assert_int_equal(ps_ckpt_num_tensors(ck), NT);
	assert_int_equal(ps_ckpt_num_shards(ck), 2);
	assert_string_equal(ps_ckpt_dir(ck), dir);
	for (uint32_t t = 0; t < NT; t++) {
		assert_string_equal(ps_ckpt_tensors(ck)[t].name, MODEL[t].name);
		assert_int_equal(ps_ckpt_tensors(ck)[t].numel, MODEL[t].numel);
	}
	assert_int_equal(ps_ckpt_check_model(ck, MODEL, NT, why, sizeof(why)),
	                 PS_OK);
	assert_int_equal(ps_ckpt_verify(ck, why, sizeof(why)), PS_OK);

	/* exactly the written segments: the versions as written */
	for (size_t k = 0; k < NCUT; k++) {
		float *v = malloc(CUT[k].numel * sizeof(float));
		float *mo = malloc(CUT[k].numel * sizeof(float));
		float *se = malloc(CUT[k].numel * sizeof(float));
		ps_ckpt_range r = {.tensor = CUT[k].tensor,
		                   .offset = CUT[k].offset,
		                   .numel = CUT[k].numel,
		                   .values = v,
		                   .momentum = mo,
		                   .second = se};

		assert_int_equal(
		    ps_ckpt_read_ranges(ck, &r, 1, why, sizeof(why)), PS_OK);
		assert_int_equal(
		    r.version, ckpt_fix_version(CUT[k].tensor, CUT[k].offset));
		for (uint64_t e = 0; e < r.numel; e++) {
			assert_true(v[e] ==
			            ckpt_fix_value(r.tensor, r.offset + e));
			assert_true(mo[e] ==
			            ckpt_fix_momentum(r.tensor, r.offset + e));
			assert_true(se[e] ==
			            ckpt_fix_second(r.tensor, r.offset + e));
		}
		free(v);
		free(mo);
		free(se);
	}
	/* other cuts: many small ranges, crossing segments and shards */
	assert_int_equal(read_cut(ck, 37, 1), PS_OK);
	assert_int_equal(read_cut(ck, 1, 2), PS_OK);
	assert_int_equal(read_cut(ck, 1000, 3), PS_OK);
	assert_int_equal(read_cut(ck, 5000, 4), PS_OK);

	/* values only, momentum only, second moment only (conv.w across
	 * its two shards; fc.w stores none: zeros), overlapping ranges */
	{
		float a[200], b[300], c[2], d[20], z[10];
		ps_ckpt_range r[5] = {
		    {.tensor = 2, .offset = 1950, .numel = 200, .values = a},
		    {.tensor = 2, .offset = 1900, .numel = 300, .momentum = b},
		    {.tensor = 2, .offset = 2046, .numel = 2, .values = c},
		    {.tensor = 0, .offset = 320, .numel = 20, .second = d},
		    {.tensor = 2, .offset = 2040, .numel = 10, .second = z},
		};

		assert_int_equal(
		    ps_ckpt_read_ranges(ck, r, 5, why, sizeof(why)), PS_OK);
		for (int e = 0; e < 20; e++)
			assert_true(d[e] ==
			            ckpt_fix_second(0, 320 + (uint64_t)e));
		for (int e = 0; e < 10; e++)
			assert_true(z[e] == 0.0f);
		for (int e = 0; e < 200; e++)
			assert_true(a[e] ==
			            ckpt_fix_value(2, 1950 + (uint64_t)e));
		for (int e = 0; e < 300; e++)
			assert_true(b[e] ==
			            ckpt_fix_momentum(2, 1900 + (uint64_t)e));
		assert_true(c[0] == ckpt_fix_value(2, 2046));
		assert_true(c[1] == ckpt_fix_value(2, 2047));
		assert_int_equal(r[0].version, ckpt_fix_version(2, 0));
	}
	/* ranges outside a tensor */
	{
		float a[8];
		ps_ckpt_range r = {
		    .tensor = 1, .offset = 3, .numel = 5, .values = a};

		assert_int_equal(
		    ps_ckpt_read_ranges(ck, &r, 1, why, sizeof(why)),
		    PS_EINVAL);
		assert_why("not within tensor 'conv.b' (7 elements)");
		r.tensor = NT;
		assert_int_equal(
		    ps_ckpt_read_ranges(ck, &r, 1, why, sizeof(why)),
		    PS_EINVAL);
	}
	ps_ckpt_close(&ck);
	assert_null(ck);
}

/* Many segments and many tiny ranges: linear, and still exact. */
static void test_many_ranges(void **state)
{
	enum { NUMEL = 300000, SEGS = 1000, RANGE = 3 };
	ps_tensor_desc model[1] = {{"big", NUMEL}};
	const char *dir = at("many");
	ps_ckpt_segment *segs = calloc(SEGS, sizeof(*segs));
	float *v = malloc(NUMEL * sizeof(float)), *out;
	size_t nr = (NUMEL + RANGE - 1) / RANGE;
	ps_ckpt_range *r = calloc(nr, sizeof(*r));
	ps_ckpt_meta meta = CKPT_FIX_META;
	ps_ckpt *ck;

	(void)state;
	assert_non_null(segs);
	assert_non_null(v);
	assert_non_null(r);
	for (uint64_t i = 0; i < NUMEL; i++)
		v[i] = (float)i;
	/* segments of 300 elements, round robin over 3 shards */
	for (uint32_t s = 0; s < 3; s++) {
		uint32_t n = 0;

		for (uint32_t k = s; k < SEGS; k += 3)
			segs[n++] = (ps_ckpt_segment){
			    .tensor = 0,
			    .offset = (uint64_t)k * (NUMEL / SEGS),
			    .numel = NUMEL / SEGS,
			    .version = k,
			    .values = v + (uint64_t)k * (NUMEL / SEGS),
			};
		assert_int_equal(
		    ps_ckpt_write_shard(dir, s, 7, segs, n, why, sizeof(why)),
		    PS_OK);
	}
	meta.iteration = 7;
	assert_int_equal(
	    ps_ckpt_write_manifest(dir, &meta, model, 1, 3, why, sizeof(why)),
	    PS_OK);
	assert_int_equal(ps_ckpt_open(dir, &ck, why, sizeof(why)), PS_OK);
	out = malloc(NUMEL * sizeof(float));
	for (size_t i = 0; i < nr; i++) {
		size_t j = nr - 1 - i; /* reverse order */
		uint64_t off = (uint64_t)j * RANGE;

		r[i] = (ps_ckpt_range){
		    .tensor = 0,
		    .offset = off,
		    .numel = NUMEL - off < RANGE ? NUMEL - off : RANGE,
		    .values = out + off,
		};
	}
	assert_int_equal(ps_ckpt_read_ranges(ck, r, nr, why, sizeof(why)),
	                 PS_OK);
	assert_memory_equal(out, v, NUMEL * sizeof(float));
	for (size_t i = 0; i < nr; i++)
		assert_int_equal(r[i].version, r[i].offset / (NUMEL / SEGS));
	ps_ckpt_close(&ck);
	free(out);
	free(r);
	free(v);
	free(segs);
}

/* A shard of 42 MB: checksums on the writer's helper thread, arrays read
 * straight into the caller's buffers, and through the bounce buffer. */
static void test_big_shard(void **state)
{
	enum { TAIL = 500000 };
	ps_tensor_desc model[2] = {{"huge", BIG_NUMEL + TAIL}, {"tiny", 3}};
	const char *dir = at("big");
	float *v = malloc((BIG_NUMEL + TAIL) * sizeof(float));
	float *m = malloc(BIG_NUMEL * sizeof(float));
	float *s2 = malloc(BIG_NUMEL * sizeof(float));
	float *out = malloc((BIG_NUMEL + TAIL) * sizeof(float));
	float *mout = malloc((BIG_NUMEL + TAIL) * sizeof(float));
	float *sout = malloc((BIG_NUMEL + TAIL) * sizeof(float));
	float tiny[3] = {1.5f, 2.5f, 3.5f};
	ps_ckpt_range r[6];
	ps_ckpt *ck;

	(void)state;
	assert_non_null(v);
	assert_non_null(m);
	assert_non_null(s2);
	assert_non_null(out);
	assert_non_null(mout);
	assert_non_null(sout);
	for (uint32_t i = 0; i < BIG_NUMEL + TAIL; i++)
		v[i] = (float)i;
	for (uint32_t i = 0; i < BIG_NUMEL; i++) {
		m[i] = -(float)i;
		s2[i] = (float)i * 0.5f + 1.0f;
	}
	{
		ps_ckpt_segment segs[3] = {
		    {.tensor = 0,
		     .offset = 0,
		     .numel = BIG_NUMEL,
		     .version = 5,
		     .values = v,
		     .momentum = m,
		     .second = s2},
		    {.tensor = 1,
		     .offset = 0,
		     .numel = 3,
		     .version = 6,
		     .values = tiny},
		    {.tensor = 0,
		     .offset = BIG_NUMEL,
		     .numel = TAIL,
		     .version = 4,
		     .values = v + BIG_NUMEL},
		};

		write_single(dir, 9, segs, 3, model, 2);
	}
	assert_int_equal(ps_ckpt_open(dir, &ck, why, sizeof(why)), PS_OK);
	assert_int_equal(ps_ckpt_verify(ck, why, sizeof(why)), PS_OK);
	/* one range: both segments wholly inside it, read in place */
	r[0] = (ps_ckpt_range){.tensor = 0,
	                       .numel = BIG_NUMEL + TAIL,
	                       .values = out,
	                       .momentum = mout,
	                       .second = sout};
	assert_int_equal(ps_ckpt_read_ranges(ck, r, 1, why, sizeof(why)),
	                 PS_OK);
	assert_memory_equal(out, v, (BIG_NUMEL + TAIL) * sizeof(float));
	assert_memory_equal(mout, m, BIG_NUMEL * sizeof(float));
	assert_memory_equal(sout, s2, BIG_NUMEL * sizeof(float));
	for (uint32_t i = 0; i < TAIL; i++) {
		assert_true(mout[BIG_NUMEL + i] == 0.0f);
		assert_true(sout[BIG_NUMEL + i] == 0.0f);
	}
	assert_int_equal(r[0].version, 4);
	/* five ranges across the segment border: through the buffer */
	memset(out, 0, (BIG_NUMEL + TAIL) * sizeof(float));
	for (int k = 0; k < 5; k++)
		r[k] = (ps_ckpt_range){
		    .tensor = 0,
		    .offset = (uint64_t)k * (BIG_NUMEL + TAIL) / 5,
		    .numel = (BIG_NUMEL + TAIL) / 5,
		    .values = out + (uint64_t)k * (BIG_NUMEL + TAIL) / 5,
		};
	assert_int_equal(ps_ckpt_read_ranges(ck, r, 5, why, sizeof(why)),
	                 PS_OK);
	assert_memory_equal(out, v, (BIG_NUMEL + TAIL) * sizeof(float));
	assert_int_equal(r[0].version, 5);
	assert_int_equal(r[4].version, 4);
	ps_ckpt_close(&ck);
	free(v);
	free(m);
	free(s2);
	free(out);
	free(mout);
	free(sout);
}

/* ---- write_manifest's checks -------------------------------------------- */

static int manifest_of(const char *dir, uint64_t iteration, uint32_t nshards)
{
	ps_ckpt_meta meta = CKPT_FIX_META;

	meta.iteration = iteration;
	return ps_ckpt_write_manifest(dir, &meta, MODEL, NT, nshards, why,
	                              sizeof(why));
}

static void test_manifest_refuses(void **state)
{
	ckpt_fix_spec cut[16];
	const char *dir;

	(void)state;
	/* a gap: fc.w elements 2047..4098 missing (shard 1 lacks them) */
	dir = at("gap");
	memcpy(cut, CUT, NCUT * sizeof(*cut));
	cut[6].numel = 2000;
	assert_int_equal(write_shard_of(dir, 0, 5, cut, NCUT), PS_OK);
	assert_int_equal(write_shard_of(dir, 1, 5, cut, NCUT), PS_OK);
	assert_int_equal(manifest_of(dir, 5, 2), PS_EPROTO);
	assert_why("tensor 2 'fc.w': elements 4047..4098 are in no shard");
	assert_false(exists(at("gap/manifest.json")));

	/* an overlap: one more segment of conv.w in shard 1 */
	dir = at("overlap");
	memcpy(cut, CUT, NCUT * sizeof(*cut));
	cut[NCUT] = (ckpt_fix_spec){1, 0, 300, 40};
	assert_int_equal(write_shard_of(dir, 0, 5, cut, NCUT + 1), PS_OK);
	assert_int_equal(write_shard_of(dir, 1, 5, cut, NCUT + 1), PS_OK);
	assert_int_equal(manifest_of(dir, 5, 2), PS_EPROTO);
	assert_why("tensor 0 'conv.w': element 300 is in two segments "
	           "(shard-0.bin segment 0 and shard-1.bin segment 5)");

	/* a tensor missing entirely, segments outside a tensor */
	dir = at("missing-tensor");
	memcpy(cut, CUT, NCUT * sizeof(*cut));
	cut[5].tensor = 4; /* fc.b's segment becomes out.w 0..12 */
	assert_int_equal(write_shard_of(dir, 0, 5, cut, NCUT), PS_OK);
	assert_int_equal(write_shard_of(dir, 1, 5, cut, NCUT), PS_OK);
	assert_int_equal(manifest_of(dir, 5, 2), PS_EPROTO);
	assert_why("tensor 3 'fc.b': elements 0..12 are in no shard");
	cut[5] = (ckpt_fix_spec){1, 3, 5, 13};
	assert_int_equal(write_shard_of(dir, 1, 5, cut, NCUT), PS_OK);
	assert_int_equal(manifest_of(dir, 5, 2), PS_EPROTO);
	assert_why("shard-1.bin: segment 2: elements 5..17 are outside "
	           "tensor 'fc.b' (13 elements)");

	/* a missing shard, a shard of another iteration */
	dir = write_ckpt(at("shards"), 5, 0);
	assert_int_equal(manifest_of(dir, 5, 3), PS_ENOENT);
	assert_why("shard-2.bin: missing");
	assert_int_equal(manifest_of(dir, 6, 2), PS_EPROTO);
	assert_why("shard-0.bin: written for iteration 5, not 6");
	assert_int_equal(write_shard_of(dir, 1, 4, CUT, NCUT), PS_OK);
	assert_int_equal(manifest_of(dir, 5, 2), PS_EPROTO);
	assert_why("shard-1.bin: written for iteration 4, not 5");
	assert_int_equal(write_shard_of(dir, 1, 5, CUT, NCUT), PS_OK);
	assert_int_equal(manifest_of(dir, 5, 2), PS_OK);
	assert_false(exists(at("shards/ckpt-000000000005/manifest.json.tmp")));
}

/* ---- open's checks ------------------------------------------------------ */

static uint8_t *slurp(const char *path, size_t *len)
{
	uint8_t *b = test_read_file(path, len);

	assert_non_null(b);
	return b;
}

static void spit(const char *path, const void *b, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* Opens dir, verifies it and reads everything back. PS_OK only if all of
 * that succeeds with the data exact; an error otherwise (never wrong data
 * without one). */
static int open_and_read(const char *dir)
{
	ps_ckpt *ck;
	int rc = ps_ckpt_open(dir, &ck, why, sizeof(why));

	if (rc)
		return rc;
	rc = read_cut(ck, 37, 9);
	if (!rc)
		rc = ps_ckpt_verify(ck, why, sizeof(why));
	ps_ckpt_close(&ck);
	return rc;
}

static void test_open_truncated(void **state)
{
	const char *dir = write_ckpt(at("trunc"), 3, 1);
	char shard[PATH_CAP];
	uint8_t *orig;
	size_t len;

	(void)state;
	snprintf(shard, sizeof(shard), "%s/shard-1.bin", dir);
	orig = slurp(shard, &len);
	const size_t cuts[] = {0,       10,       64,       100,    700,
	                       len / 2, len - 33, len - 32, len - 1};
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		spit(shard, orig, cuts[i]);
		assert_int_not_equal(open_and_read(dir), PS_OK);
		assert_why("shard-1.bin");
	}
	spit(shard, orig, len - 32);
	assert_int_equal(open_and_read(dir), PS_EPROTO);
	assert_why("shard-1.bin: the file has");
	spit(shard, orig, len);
	assert_int_equal(open_and_read(dir), PS_OK);
	free(orig);
}

/* Flips byte off of dir/name, expects open or read to fail with a message
 * containing needle, restores the byte. */
static void flip(const char *dir, const char *name, size_t off,
                 const char *needle)
{
	char path[PATH_CAP];
	uint8_t *b;
	size_t len;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	b = slurp(path, &len);
	assert_true(off < len);
	b[off] ^= 0x10;
	spit(path, b, len);
	assert_int_not_equal(open_and_read(dir), PS_OK);
	assert_why(needle);
	b[off] ^= 0x10;
	spit(path, b, len);
	assert_int_equal(open_and_read(dir), PS_OK);
	free(b);
}

static void test_open_flipped(void **state)
{
	const char *dir = write_ckpt(at("flip"), 3, 1);
	ps_ckpt *ck;
	float v[7];
	ps_ckpt_range r = {.tensor = 1, .numel = 7, .values = v};

	(void)state;
	/* shard 1: 5 segments; data at 64 + 5 * 64 = 384 */
	flip(dir, "shard-1.bin", 20, "shard-1.bin: header checksum mismatch");
	flip(dir, "shard-1.bin", 64 + 64 + 9,
	     "shard-1.bin: segment table checksum mismatch");
	/* segment 0 of shard 1: conv.w 333..999, values, momentum, second
	 * moment (667 * 4 = 2668 bytes each, 2688 with the padding) */
	flip(dir, "shard-1.bin", 384 + 100,
	     "shard-1.bin: checksum mismatch in segment 0 (tensor 'conv.w' "
	     "elements 333..999, values)");
	flip(dir, "shard-1.bin", 384 + 2688 + 5,
	     "shard-1.bin: checksum mismatch in segment 0 (tensor 'conv.w' "
	     "elements 333..999, momentum)");
	flip(dir, "shard-1.bin", 384 + 2 * 2688 + 2667,
	     "shard-1.bin: checksum mismatch in segment 0 (tensor 'conv.w' "
	     "elements 333..999, second moment)");
	/* segment 1: conv.b, values (7 * 4 bytes, 64 with the padding) and
	 * second moment, no momentum */
	flip(dir, "shard-1.bin", 384 + 3 * 2688 + 64,
	     "shard-1.bin: checksum mismatch in segment 1 (tensor 'conv.b' "
	     "elements 0..6, second moment)");
	/* padding after each array of conv.w */
	flip(dir, "shard-1.bin", 384 + 2670, "should be padding");
	flip(dir, "shard-1.bin", 384 + 3 * 2688 - 1, "should be padding");
	flip(dir, "shard-1.bin", 384 + 3 * 2688 + 64 + 28, "should be padding");
	flip(dir, "manifest.json", 30, "manifest.json");

	/* a flipped value: open succeeds, the read fails, nothing wrong is
	 * ever handed out as good */
	{
		char path[PATH_CAP];
		uint8_t *b;
		size_t len;

		snprintf(path, sizeof(path), "%s/shard-1.bin", dir);
		b = slurp(path, &len);
		b[384 + 3 * 2688] ^= 1;
		spit(path, b, len);
		assert_int_equal(ps_ckpt_open(dir, &ck, why, sizeof(why)),
		                 PS_OK);
		assert_int_equal(
		    ps_ckpt_read_ranges(ck, &r, 1, why, sizeof(why)),
		    PS_EPROTO);
		assert_why("checksum mismatch in segment 1 (tensor 'conv.b' "
		           "elements 0..6, values)");
		assert_int_equal(ps_ckpt_verify(ck, why, sizeof(why)),
		                 PS_EPROTO);
		ps_ckpt_close(&ck);
		b[384 + 3 * 2688] ^= 1;
		spit(path, b, len);
		free(b);
	}
}

static void test_open_missing(void **state)
{
	const char *dir = write_ckpt(at("miss"), 3, 1);
	char path[PATH_CAP];
	ps_ckpt *ck = NULL;

	(void)state;
	snprintf(path, sizeof(path), "%s/shard-0.bin", dir);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(ps_ckpt_open(dir, &ck, why, sizeof(why)), PS_ENOENT);
	assert_why("shard-0.bin: missing");
	assert_null(ck);

	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(ps_ckpt_open(dir, &ck, why, sizeof(why)), PS_ENOENT);
	assert_why("not a checkpoint (no manifest.json)");
	assert_int_equal(ps_ckpt_open(at("nowhere"), &ck, why, sizeof(why)),
	                 PS_ENOENT);
}

static void test_check_model(void **state)
{
	const char *dir = write_ckpt(at("model"), 3, 1);
	ps_tensor_desc other[NT + 1];
	ps_ckpt *ck;

	(void)state;
	assert_int_equal(ps_ckpt_open(dir, &ck, why, sizeof(why)), PS_OK);
	memcpy(other, MODEL, NT * sizeof(*other));
	strcpy(other[2].name, "fc.x");
	assert_int_equal(ps_ckpt_check_model(ck, other, NT, why, sizeof(why)),
	                 PS_EINVAL);
	assert_string_equal(why, "tensor 2: the checkpoint has 'fc.w' (4099 "
	                         "elements), the job 'fc.x' (4099)");
	memcpy(other, MODEL, NT * sizeof(*other));
	other[3].numel = 14;
	assert_int_equal(ps_ckpt_check_model(ck, other, NT, why, sizeof(why)),
	                 PS_EINVAL);
	assert_why("tensor 3: the checkpoint has 'fc.b' (13 elements), the "
	           "job 'fc.b' (14)");
	assert_int_equal(
	    ps_ckpt_check_model(ck, MODEL, NT - 1, why, sizeof(why)),
	    PS_EINVAL);
	assert_why("tensor 4: the checkpoint has 'out.w'");
	memcpy(other, MODEL, NT * sizeof(*other));
	other[NT] = (ps_tensor_desc){"extra", 3};
	assert_int_equal(
	    ps_ckpt_check_model(ck, other, NT + 1, why, sizeof(why)),
	    PS_EINVAL);
	assert_why("tensor 5: the job has 'extra'");
	ps_ckpt_close(&ck);
}

/* Rewrites dir's manifest after edit() with a correct checksum. */
static void edit_manifest(const char *dir, void (*edit)(json_t *), int fix)
{
	char path[PATH_CAP], *text;
	json_error_t je;
	json_t *root;

	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	root = json_load_file(path, 0, &je);
	assert_non_null(root);
	edit(root);
	if (fix) {
		json_object_del(root, "crc32");
		text = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
		json_object_set_new(root, "crc32",
		                    json_integer((json_int_t)crc32(
		                        0, (void *)text, (uInt)strlen(text))));
		free(text);
	}
	assert_int_equal(json_dump_file(root, path, JSON_INDENT(2)), 0);
	json_decref(root);
}

static void newer(json_t *m)
{
	json_object_set_new(m, "format_version",
	                    json_integer(PS_CKPT_FORMAT + 1));
}

static void no_seed(json_t *m)
{
	json_object_del(m, "seed");
}

static void servers_string(json_t *m)
{
	json_object_set_new(json_object_get(m, "layout"), "servers",
	                    json_string("2"));
}

static void other_iteration(json_t *m)
{
	json_object_set_new(m, "iteration", json_integer(99));
}

static void path_escape(json_t *m)
{
	json_t *s = json_array_get(json_object_get(m, "shards"), 0);

	json_object_set_new(s, "file", json_string("../shard-0.bin"));
}

static void long_name(json_t *m)
{
	json_t *t = json_array_get(json_object_get(m, "tensors"), 1);
	char name[PS_NAME_MAX + 1];

	memset(name, 'x', PS_NAME_MAX); /* one byte too many */
	name[PS_NAME_MAX] = '\0';
	json_object_set_new(t, "name", json_string(name));
}

static void no_change(json_t *m)
{
	(void)m;
}

static const struct edit_case {
	void (*edit)(json_t *);
	int fix; /* the checksum */
	int rc;
	const char *needle;
} EDITS[] = {
    {other_iteration, 0, PS_EPROTO, "manifest.json: checksum mismatch"},
    {other_iteration, 1, PS_EPROTO,
     "shard-0.bin: written for iteration 4, the manifest is of 99"},
    {no_seed, 1, PS_EPROTO, "manifest.json: 'seed' is missing"},
    {servers_string, 1, PS_EPROTO,
     "manifest.json: 'layout.servers' is not an integer"},
    {path_escape, 1, PS_EPROTO,
     "'shards[0]' names a file other than its rank's"},
    {long_name, 1, PS_EPROTO,
     "'tensors[1].name' is empty or longer than 63 bytes"},
};

static void test_manifest_edits(void **state)
{
	const char *dir = write_ckpt(at("edit"), 3, 1);
	ps_ckpt *ck;

	(void)state;
	edit_manifest(dir, newer, 1);
	assert_int_equal(ps_ckpt_open(dir, &ck, why, sizeof(why)), PS_ENOTSUP);
	assert_why("manifest.json: format version 3 is newer than this ordo "
	           "reads (2)");
	edit_manifest(dir, newer, 0); /* still refused: newer, not damaged */
	assert_int_equal(ps_ckpt_open(dir, &ck, why, sizeof(why)), PS_ENOTSUP);

	/* each edit on a fresh checkpoint, with or without the checksum
	 * fixed: the error and the message */
	for (size_t i = 0; i < sizeof(EDITS) / sizeof(EDITS[0]); i++) {
		const struct edit_case *e = &EDITS[i];

		dir = write_ckpt(at("edit"), 4, 1);
		edit_manifest(dir, e->edit, e->fix);
		assert_int_equal(ps_ckpt_open(dir, &ck, why, sizeof(why)),
		                 e->rc);
		assert_why(e->needle);
	}

	/* re-indented, same content: still good */
	dir = write_ckpt(at("edit"), 8, 1);
	edit_manifest(dir, no_change, 0);
	assert_int_equal(ps_ckpt_open(dir, &ck, why, sizeof(why)), PS_OK);
	ps_ckpt_close(&ck);

	/* garbage */
	dir = write_ckpt(at("edit"), 9, 1);
	assert_non_null(test_write_file(dir, "manifest.json", "{\"format\": "));
	assert_int_equal(ps_ckpt_open(dir, &ck, why, sizeof(why)), PS_EPROTO);
	assert_why("manifest.json: not valid JSON");
	assert_non_null(test_write_file(dir, "manifest.json", "[1, 2]"));
	assert_int_equal(ps_ckpt_open(dir, &ck, why, sizeof(why)), PS_EPROTO);
	assert_why("manifest.json: not a JSON object");
	assert_non_null(test_write_file(dir, "manifest.json",
	                                "{\"format\": \"ordo-model\"}"));
	assert_int_equal(ps_ckpt_open(dir, &ck, why, sizeof(why)), PS_EPROTO);
	assert_why("not an ordo checkpoint manifest (format 'ordo-model')");
}

/* ---- writing failures --------------------------------------------------- */

static void test_unwritable(void **state)
{
	const char *file = test_write_file(tmpdir, "plain-file", "x");
	char dir[PS_CKPT_PATH_MAX];
	float v[4] = {1, 2, 3, 4};
	ps_ckpt_segment s = {.tensor = 0, .numel = 4, .values = v};

	(void)state;
	assert_non_null(file);
	snprintf(dir, sizeof(dir), "%s/sub/ckpt", file);
	assert_int_not_equal(
	    ps_ckpt_write_shard(dir, 0, 1, &s, 1, why, sizeof(why)), PS_OK);
	assert_why(file);
	assert_why("Not a directory");

	if (geteuid() != 0) {
		const char *ro = at("readonly");

		assert_int_equal(mkdir(ro, 0555), 0);
		assert_int_equal(
		    ps_ckpt_write_shard(ro, 0, 1, &s, 1, why, sizeof(why)),
		    PS_EIO);
		assert_why("Permission denied");
		chmod(ro, 0755);
	} else {
		print_message("running as root: the chmod 0555 case is "
		              "skipped (root writes anyway)\n");
	}

	/* bad segments */
	s.numel = 0;
	assert_int_equal(
	    ps_ckpt_write_shard(at("bad"), 0, 1, &s, 1, why, sizeof(why)),
	    PS_EINVAL);
	s.numel = 4;
	s.values = NULL;
	assert_int_equal(
	    ps_ckpt_write_shard(at("bad"), 0, 1, &s, 1, why, sizeof(why)),
	    PS_EINVAL);
	assert_int_equal(
	    ps_ckpt_path(tmpdir, 1000000000000ull, dir, sizeof(dir)),
	    PS_EINVAL);
	assert_int_equal(ps_ckpt_path(tmpdir, 1, dir, 10), PS_EINVAL);
	assert_int_equal(ps_ckpt_prune(tmpdir, 0, why, sizeof(why)), PS_EINVAL);
}

static void test_disk_full(void **state)
{
	char mnt[PS_CKPT_PATH_MAX], dir[PS_CKPT_PATH_MAX];
	float *big;
	ps_tensor_desc model[1] = {{"w", 100000}};
	ps_ckpt_segment s = {.tensor = 0, .numel = 100000, .version = 1};
	ps_ckpt *ck;

	(void)state;
	snprintf(mnt, sizeof(mnt), "%s", at("small-fs"));
	assert_int_equal(mkdir(mnt, 0755), 0);
	if (mount("ordo-test", mnt, "tmpfs", 0, "size=1m") != 0) {
		print_message("cannot mount a tmpfs (%s): the disk-full case "
		              "is skipped\n",
		              strerror(errno));
		return;
	}
	big = calloc(BIG_NUMEL, sizeof(float));
	assert_non_null(big);
	s.values = big;
	s.momentum = big;
	/* 100000 elements, values and momentum: 800 KB, fits */
	assert_int_equal(ps_ckpt_path(mnt, 1, dir, sizeof(dir)), PS_OK);
	write_single(dir, 1, &s, 1, model, 1);
	/* the second does not fit */
	assert_int_equal(ps_ckpt_path(mnt, 2, dir, sizeof(dir)), PS_OK);
	assert_int_equal(
	    ps_ckpt_write_shard(dir, 0, 2, &s, 1, why, sizeof(why)), PS_EIO);
	assert_why("shard-0.bin.tmp");
	assert_why("No space left on device");
	assert_false(exists(at("small-fs/ckpt-000000000002/shard-0.bin.tmp")));
	assert_false(exists(at("small-fs/ckpt-000000000002/shard-0.bin")));
	/* nor does a big one, its checksums computed on a thread */
	s.numel = BIG_NUMEL;
	assert_int_equal(
	    ps_ckpt_write_shard(dir, 0, 2, &s, 1, why, sizeof(why)), PS_EIO);
	assert_why("shard-0.bin.tmp: write: No space left on device");
	assert_false(exists(at("small-fs/ckpt-000000000002/shard-0.bin.tmp")));
	/* the first is intact */
	assert_int_equal(ps_ckpt_path(mnt, 1, dir, sizeof(dir)), PS_OK);
	assert_int_equal(ps_ckpt_open(dir, &ck, why, sizeof(why)), PS_OK);
	assert_int_equal(ps_ckpt_verify(ck, why, sizeof(why)), PS_OK);
	ps_ckpt_close(&ck);
	{
		char root[PS_CKPT_PATH_MAX];
		uint64_t it;

		assert_int_equal(ps_ckpt_latest(mnt, root, sizeof(root), &it),
		                 PS_OK);
		assert_int_equal(it, 1);
	}
	free(big);
	assert_int_equal(umount2(mnt, MNT_DETACH), 0);
}

/* ---- latest and prune --------------------------------------------------- */

static void test_latest(void **state)
{
	char root[PS_CKPT_PATH_MAX], path[PS_CKPT_PATH_MAX];
	uint64_t it = 0;

	(void)state;
	snprintf(root, sizeof(root), "%s", at("latest"));
	assert_int_equal(ps_ckpt_latest(root, path, sizeof(path), &it),
	                 PS_ENOENT);
	write_ckpt(root, 10, 1);
	write_ckpt(root, 20, 1);
	write_ckpt(root, 30, 0); /* shards, no manifest */
	/* a damaged manifest, a symlink and a longer name: all ignored */
	write_ckpt(root, 40, 1);
	assert_non_null(test_write_file(at("latest/ckpt-000000000040"),
	                                "manifest.json", "{"));
	assert_int_equal(
	    symlink("ckpt-000000000020", at("latest/ckpt-000000000050")), 0);
	assert_int_equal(mkdir(at("latest/ckpt-0000000000060"), 0755), 0);
	assert_int_equal(ps_ckpt_latest(root, path, sizeof(path), &it), PS_OK);
	assert_int_equal(it, 20);
	assert_string_equal(path, at("latest/ckpt-000000000020"));
	assert_int_equal(ps_ckpt_latest(root, path, 8, NULL), PS_EINVAL);
	assert_int_equal(
	    ps_ckpt_latest(at("nowhere"), path, sizeof(path), NULL), PS_ENOENT);
}

/* Files that are not what their names say: a FIFO named manifest.json
 * or like a shard (opening one for reading would wait for a writer
 * forever), a symlinked manifest or shard, a symlinked ckpt-<12 digits>
 * directory named explicitly. Each is refused at once, naming the path;
 * "latest" passes over them. alarm: a hang guard. */
static void test_not_regular(void **state)
{
	char root[PS_CKPT_PATH_MAX], path[PS_CKPT_PATH_MAX];
	ps_ckpt *ck = NULL;
	uint64_t it = 0;
	const char *dir;

	(void)state;
	alarm(60);
	snprintf(root, sizeof(root), "%s", at("odd"));
	write_ckpt(root, 10, 1);
	/* a FIFO as the newest checkpoint's manifest */
	dir = write_ckpt(root, 20, 0);
	assert_int_equal(mkfifo(at("odd/ckpt-000000000020/manifest.json"),
	                        0644),
	                 0);
	assert_int_equal(ps_ckpt_open(at("odd/ckpt-000000000020"), &ck, why,
	                              sizeof(why)),
	                 PS_EPROTO);
	assert_why("ckpt-000000000020/manifest.json: not a regular file");
	assert_int_equal(ps_ckpt_latest(root, path, sizeof(path), &it), PS_OK);
	assert_int_equal(it, 10);
	/* a FIFO as a shard (the manifest names it) */
	dir = write_ckpt(root, 30, 1);
	assert_int_equal(unlink(at("odd/ckpt-000000000030/shard-0.bin")),
	                 0);
	assert_int_equal(mkfifo(at("odd/ckpt-000000000030/shard-0.bin"),
	                        0644),
	                 0);
	assert_int_equal(ps_ckpt_open(dir, &ck, why, sizeof(why)), PS_EPROTO);
	assert_why("shard-0.bin: not a regular file");
	assert_int_equal(ps_ckpt_latest(root, path, sizeof(path), &it), PS_OK);
	assert_int_equal(it, 10);
	/* a symlinked manifest: not followed */
	dir = write_ckpt(root, 40, 1);
	assert_int_equal(rename(at("odd/ckpt-000000000040/manifest.json"),
	                        at("odd/manifest-40.json")),
	                 0);
	assert_int_equal(symlink(at("odd/manifest-40.json"),
	                         at("odd/ckpt-000000000040/manifest.json")),
	                 0);
	assert_int_equal(ps_ckpt_open(dir, &ck, why, sizeof(why)), PS_EPROTO);
	assert_why("ckpt-000000000040/manifest.json: not a regular file (a "
	           "symbolic link)");
	/* a ckpt-<12 digits> symlink to a complete checkpoint, named as the
	 * one to resume from: refused; under another name, a path the user
	 * chose, followed */
	write_ckpt(at("elsewhere"), 50, 1);
	assert_int_equal(symlink(at("elsewhere/ckpt-000000000050"),
	                         at("odd/ckpt-000000000050")),
	                 0);
	assert_int_equal(ps_ckpt_open(at("odd/ckpt-000000000050"), &ck, why,
	                              sizeof(why)),
	                 PS_EPROTO);
	assert_why("ckpt-000000000050: a symbolic link");
	assert_int_equal(ps_ckpt_latest(root, path, sizeof(path), &it), PS_OK);
	assert_int_equal(it, 10);
	assert_int_equal(symlink(at("elsewhere/ckpt-000000000050"),
	                         at("odd/chosen")),
	                 0);
	assert_int_equal(ps_ckpt_open(at("odd/chosen"), &ck, why,
	                              sizeof(why)),
	                 PS_OK);
	ps_ckpt_close(&ck);
	alarm(0);
}

static void test_prune(void **state)
{
	char root[PS_CKPT_PATH_MAX], outside[PS_CKPT_PATH_MAX];

	(void)state;
	snprintf(root, sizeof(root), "%s", at("prune"));
	snprintf(outside, sizeof(outside), "%s", at("prune-outside"));
	write_ckpt(root, 10, 1);
	write_ckpt(root, 15, 0); /* incomplete, older than the newest */
	write_ckpt(root, 20, 1);
	write_ckpt(root, 30, 1);
	write_ckpt(root, 40, 1);
	write_ckpt(root, 50, 0); /* incomplete, newer: maybe in progress */
	assert_non_null(test_write_file(root, "notes.txt", "keep me"));
	assert_int_equal(mkdir(at("prune/ckpt-abc"), 0755), 0);
	assert_int_equal(mkdir(at("prune/ckpt-0000000000001"), 0755), 0);
	assert_int_equal(mkdir(outside, 0755), 0);
	assert_non_null(test_write_file(outside, "precious", "x"));
	assert_int_equal(symlink(outside, at("prune/ckpt-000000000005")), 0);

	assert_int_equal(ps_ckpt_prune(root, 2, why, sizeof(why)), PS_OK);
	assert_false(exists(at("prune/ckpt-000000000010")));
	assert_false(exists(at("prune/ckpt-000000000015")));
	assert_false(exists(at("prune/ckpt-000000000020")));
	assert_true(exists(at("prune/ckpt-000000000030/manifest.json")));
	assert_true(exists(at("prune/ckpt-000000000040/manifest.json")));
	assert_true(exists(at("prune/ckpt-000000000050/shard-0.bin")));
	assert_true(exists(at("prune/notes.txt")));
	assert_true(exists(at("prune/ckpt-abc")));
	assert_true(exists(at("prune/ckpt-0000000000001")));
	assert_true(exists(at("prune/ckpt-000000000005")));
	assert_true(exists(at("prune-outside/precious")));

	assert_int_equal(ps_ckpt_prune(root, 1, why, sizeof(why)), PS_OK);
	assert_false(exists(at("prune/ckpt-000000000030")));
	assert_true(exists(at("prune/ckpt-000000000040/manifest.json")));
	assert_true(exists(at("prune/ckpt-000000000050/shard-0.bin")));
	assert_true(exists(at("prune-outside/precious")));
	/* an old directory holding a directory: not recursed into; the
	 * error names it, and the rest is pruned all the same */
	write_ckpt(root, 60, 1);
	write_ckpt(root, 2, 0);
	assert_int_equal(mkdir(at("prune/ckpt-000000000002/sub"), 0755), 0);
	assert_non_null(
	    test_write_file(at("prune/ckpt-000000000002/sub"), "deep", "x"));
	assert_int_equal(ps_ckpt_prune(root, 1, why, sizeof(why)), PS_EIO);
	assert_why("ckpt-000000000002: cannot remove 'sub': Is a directory");
	assert_true(exists(at("prune/ckpt-000000000002/sub/deep")));
	assert_false(exists(at("prune/ckpt-000000000002/shard-0.bin")));
	assert_false(exists(at("prune/ckpt-000000000040")));
	assert_true(exists(at("prune/ckpt-000000000060/manifest.json")));
	assert_true(exists(at("prune-outside/precious")));

	/* nothing complete: nothing removed */
	write_ckpt(at("prune-none"), 1, 0);
	assert_int_equal(ps_ckpt_prune(at("prune-none"), 1, why, sizeof(why)),
	                 PS_OK);
	assert_true(exists(at("prune-none/ckpt-000000000001/shard-1.bin")));
}

/* ---- .npy --------------------------------------------------------------- */

static void check_npy(const char *path, uint32_t t, ps_ckpt_array a)
{
	char want[128];
	uint8_t *b;
	size_t len, hlen;
	uint64_t n = MODEL[t].numel;

	b = slurp(path, &len);
	assert_memory_equal(b, "\x93NUMPY\x01\x00", 8);
	hlen = b[8] | (size_t)b[9] << 8;
	assert_int_equal((10 + hlen) % 64, 0);
	assert_int_equal(len, 10 + hlen + n * 4);
	snprintf(want, sizeof(want),
	         "{'descr': '<f4', 'fortran_order': False, 'shape': (%" PRIu64
	         ",), }",
	         n);
	assert_memory_equal(b + 10, want, strlen(want));
	for (size_t i = 10 + strlen(want); i < 10 + hlen - 1; i++)
		assert_int_equal(b[i], ' ');
	assert_int_equal(b[10 + hlen - 1], '\n');
	for (uint64_t i = 0; i < n; i++) {
		float f;

		memcpy(&f, b + 10 + hlen + i * 4, 4);
		assert_true(f == ckpt_fix_array(a, t, i));
	}
	free(b);
}

static void test_export_npy(void **state)
{
	const char *dir = write_ckpt(at("npy"), 3, 1);
	ps_ckpt *ck;

	(void)state;
	assert_int_equal(ps_ckpt_open(dir, &ck, why, sizeof(why)), PS_OK);
	static const struct {
		uint32_t tensor;
		ps_ckpt_array array;
		const char *file;
	} cases[] = {
	    {2, PS_CKPT_VALUES, "fc.w.npy"},
	    {0, PS_CKPT_MOMENTUM, "conv.w.m.npy"},
	    {1, PS_CKPT_MOMENTUM, "conv.b.m.npy"}, /* zeros */
	    {0, PS_CKPT_SECOND, "conv.w.s.npy"},   /* across both shards */
	    {1, PS_CKPT_SECOND, "conv.b.s.npy"},   /* without momentum */
	    {2, PS_CKPT_SECOND, "fc.w.s.npy"},     /* zeros */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(ps_ckpt_export_npy(
		                     ck, cases[i].tensor, cases[i].array,
		                     at("%s", cases[i].file), why, sizeof(why)),
		                 PS_OK);
		check_npy(at("%s", cases[i].file), cases[i].tensor,
		          cases[i].array);
	}
	assert_false(exists(at("fc.w.npy.tmp")));
	assert_int_equal(
	    ps_ckpt_export_npy(ck, NT, 0, at("x.npy"), why, sizeof(why)),
	    PS_EINVAL);
	assert_int_equal(ps_ckpt_export_npy(ck, 0, (ps_ckpt_array)3,
	                                    at("x.npy"), why, sizeof(why)),
	                 PS_EINVAL);
	assert_why("array 3: not values (0), momentum (1) or second moment "
	           "(2)");
	assert_false(exists(at("x.npy")));
	assert_int_not_equal(ps_ckpt_export_npy(ck, 0, 0,
	                                        at("plain-npy/x/y.npy"), why,
	                                        sizeof(why)),
	                     PS_OK);
	ps_ckpt_close(&ck);
}

/* ---- the second moment ------------------------------------------------ */

/* Little-endian fields of a shard file (docs/checkpoint-format.md). */
static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t crc_of(const uint8_t *p, size_t n)
{
	return (uint32_t)crc32(0, p, (uInt)n);
}

/* After an edit of the shard file at path: its table, header and trailer
 * checksums set to match its bytes. Returns its file crc32. */
static uint32_t reseal_shard(const char *path)
{
	size_t len;
	uint8_t *b = slurp(path, &len), *t = b + len - 32;
	uint32_t n = le32(b + 28), file;

	put_le32(b + 56, crc_of(b + 64, 64 * (size_t)n));
	put_le32(b + 60, crc_of(b, 60));
	put_le32(t + 20, crc_of(b, 64 + 64 * (size_t)n));
	file = crc_of(b, len - 32);
	put_le32(t + 24, file);
	put_le32(t + 28, crc_of(t, 28));
	spit(path, b, len);
	free(b);
	return file;
}

static uint32_t resealed_crc; /* for shard0_crc */

static void shard0_crc(json_t *m)
{
	json_object_set_new(json_array_get(json_object_get(m, "shards"), 0),
	                    "crc32", json_integer(resealed_crc));
}

/* Edits the 4 bytes at off of dir's shard 0 to v and reseals it (and the
 * manifest's record of it). */
static void patch_shard0(const char *dir, size_t off, uint32_t v)
{
	char path[PATH_CAP];
	uint8_t *b;
	size_t len;

	snprintf(path, sizeof(path), "%s/shard-0.bin", dir);
	b = slurp(path, &len);
	put_le32(b + off, v);
	spit(path, b, len);
	free(b);
	resealed_crc = reseal_shard(path);
	edit_manifest(dir, shard0_crc, 1);
}

/* Sets the 4 bytes at off of dir's shard 0 (zeros) to v: open must
 * refuse the file, why containing needle. Then sets them back, and the
 * checkpoint must open and verify. */
static void refused_edit(const char *dir, size_t off, uint32_t v,
                         const char *needle)
{
	ps_ckpt *ck;

	patch_shard0(dir, off, v);
	assert_int_equal(ps_ckpt_open(dir, &ck, why, sizeof(why)), PS_EPROTO);
	assert_why(needle);
	patch_shard0(dir, off, 0);
	assert_int_equal(ps_ckpt_open(dir, &ck, why, sizeof(why)), PS_OK);
	assert_int_equal(ps_ckpt_verify(ck, why, sizeof(why)), PS_OK);
	ps_ckpt_close(&ck);
}

/* Tensor "w" of 50 elements in four segments, one of each kind: none
 * (values only), momentum only, second moment only, both; on two shards
 * (0: the first and third, 1: the others). */
enum { W_NUMEL = 50 };
static const struct {
	uint64_t offset, numel;
	int momentum, second;
} W_SEGS[4] = {{0, 10, 0, 0}, {10, 17, 1, 0}, {27, 6, 0, 1}, {33, 17, 1, 1}};

static float w_value(uint64_t i)
{
	return (float)i + 0.5f;
}

/* Element i's momentum or second moment as written (zeros where its
 * segment stores none). */
static float w_state(uint64_t i, ps_ckpt_array a)
{
	for (int k = 0; k < 4; k++)
		if (i >= W_SEGS[k].offset &&
		    i < W_SEGS[k].offset + W_SEGS[k].numel)
			return a == PS_CKPT_MOMENTUM
			           ? (W_SEGS[k].momentum ? -(float)i : 0.0f)
			           : (W_SEGS[k].second ? (float)i * 0.25f + 100
			                               : 0.0f);
	fail_msg("element %" PRIu64 " is in no segment", i);
	return 0;
}

/* Reads [off, off + n) of w in ranges of `chunk`, every array, and
 * checks them. */
static void check_w(const ps_ckpt *ck, uint64_t off, uint64_t n, uint64_t chunk)
{
	float v[W_NUMEL], m[W_NUMEL], s2[W_NUMEL];
	ps_ckpt_range r[W_NUMEL];
	size_t nr = 0;

	memset(v, 0xff, sizeof(v));
	memset(m, 0xff, sizeof(m));
	memset(s2, 0xff, sizeof(s2));
	for (uint64_t o = off; o < off + n; o += chunk)
		r[nr++] = (ps_ckpt_range){
		    .tensor = 0,
		    .offset = o,
		    .numel = off + n - o < chunk ? off + n - o : chunk,
		    .values = v + o,
		    .momentum = m + o,
		    .second = s2 + o,
		};
	assert_int_equal(ps_ckpt_read_ranges(ck, r, nr, why, sizeof(why)),
	                 PS_OK);
	for (uint64_t i = off; i < off + n; i++) {
		assert_true(v[i] == w_value(i));
		assert_true(m[i] == w_state(i, PS_CKPT_MOMENTUM));
		assert_true(s2[i] == w_state(i, PS_CKPT_SECOND));
	}
}

static void test_second_moment(void **state)
{
	ps_tensor_desc model[1] = {{"w", W_NUMEL}};
	float v[W_NUMEL], m[W_NUMEL], s2[W_NUMEL];
	const char *dir = at("second");
	char path[PATH_CAP];
	ps_ckpt_meta meta = CKPT_FIX_META;
	ps_ckpt *ck;
	uint8_t *b;
	size_t len;

	(void)state;
	for (uint64_t i = 0; i < W_NUMEL; i++) {
		v[i] = w_value(i);
		m[i] = -(float)i;
		s2[i] = (float)i * 0.25f + 100;
	}
	for (uint32_t shard = 0; shard < 2; shard++) {
		ps_ckpt_segment segs[2];
		uint32_t n = 0;

		for (int k = (int)shard; k < 4; k += 2)
			segs[n++] = (ps_ckpt_segment){
			    .tensor = 0,
			    .offset = W_SEGS[k].offset,
			    .numel = W_SEGS[k].numel,
			    .version = 20 + (uint64_t)k,
			    .values = v + W_SEGS[k].offset,
			    .momentum = W_SEGS[k].momentum
			                    ? m + W_SEGS[k].offset
			                    : NULL,
			    .second =
			        W_SEGS[k].second ? s2 + W_SEGS[k].offset : NULL,
			};
		assert_int_equal(ps_ckpt_write_shard(dir, shard, 6, segs, n,
		                                     why, sizeof(why)),
		                 PS_OK);
	}
	meta.iteration = 6;
	assert_int_equal(
	    ps_ckpt_write_manifest(dir, &meta, model, 1, 2, why, sizeof(why)),
	    PS_OK);

	/* the bytes as documented: shard 0 holds segments 0 (values only:
	 * 40 bytes, 64 with the padding) and 2 (27..32: values, then the
	 * second moment right after them, its offset not recorded) */
	snprintf(path, sizeof(path), "%s/shard-0.bin", dir);
	b = slurp(path, &len);
	assert_int_equal(le32(b + 8), 2); /* format version */
	assert_int_equal(len, 64 + 2 * 64 + 64 + 64 + 64 + 32);
	assert_int_equal(le32(b + 64 + 4), 0); /* flags of segment 0 */
	{
		const uint8_t *e = b + 128; /* segment 2's entry */

		assert_int_equal(le32(e + 4), 2);    /* flags: bit 1 */
		assert_int_equal(le32(e + 32), 256); /* values offset */
		assert_int_equal(le32(e + 40), 0);   /* no momentum */
		assert_int_equal(le32(e + 52), 0);
		assert_int_equal(le32(e + 56),
		                 crc_of((uint8_t *)(s2 + 27), 24));
		assert_int_equal(le32(e + 60), 0); /* reserved */
		assert_memory_equal(b + 320, s2 + 27, 24);
	}
	free(b);
	/* shard 1: segment 1 (momentum only), segment 3 (both): 17 elements
	 * are 68 bytes, 128 with the padding */
	snprintf(path, sizeof(path), "%s/shard-1.bin", dir);
	b = slurp(path, &len);
	assert_int_equal(len, 64 + 2 * 64 + 5 * 128 + 32);
	assert_int_equal(le32(b + 128 + 4), 3);
	assert_memory_equal(b + 192 + 4 * 128, s2 + 33, 68);
	free(b);

	assert_int_equal(ps_ckpt_open(dir, &ck, why, sizeof(why)), PS_OK);
	assert_int_equal(ps_ckpt_verify(ck, why, sizeof(why)), PS_OK);
	/* one range: each segment read straight into it; then ranges that
	 * cross segments and shards, through the reader's buffers */
	check_w(ck, 0, W_NUMEL, W_NUMEL);
	check_w(ck, 0, W_NUMEL, 1);
	check_w(ck, 0, W_NUMEL, 3);
	check_w(ck, 5, 40, 7);
	check_w(ck, 26, 9, 9);
	/* the second moment alone, across all four segments */
	{
		float out[44];
		ps_ckpt_range r = {
		    .tensor = 0, .offset = 3, .numel = 44, .second = out};

		assert_int_equal(
		    ps_ckpt_read_ranges(ck, &r, 1, why, sizeof(why)), PS_OK);
		for (uint64_t i = 0; i < 44; i++)
			assert_true(out[i] == w_state(3 + i, PS_CKPT_SECOND));
		assert_int_equal(r.version, 20);
	}
	ps_ckpt_close(&ck);

	/* a flipped byte of a second moment: the values still read, the
	 * second moment does not, verify names it */
	snprintf(path, sizeof(path), "%s/shard-0.bin", dir);
	b = slurp(path, &len);
	b[320 + 9] ^= 0x04;
	spit(path, b, len);
	assert_int_equal(ps_ckpt_open(dir, &ck, why, sizeof(why)), PS_OK);
	{
		float out[6];
		ps_ckpt_range r = {
		    .tensor = 0, .offset = 27, .numel = 6, .values = out};

		assert_int_equal(
		    ps_ckpt_read_ranges(ck, &r, 1, why, sizeof(why)), PS_OK);
		r = (ps_ckpt_range){
		    .tensor = 0, .offset = 27, .numel = 6, .second = out};
		assert_int_equal(
		    ps_ckpt_read_ranges(ck, &r, 1, why, sizeof(why)),
		    PS_EPROTO);
		assert_why("shard-0.bin: checksum mismatch in segment 1 "
		           "(tensor 'w' elements 27..32, second moment)");
	}
	assert_int_equal(ps_ckpt_verify(ck, why, sizeof(why)), PS_EPROTO);
	assert_why("shard-0.bin: checksum mismatch in segment 1 (tensor 'w' "
	           "elements 27..32, second moment)");
	ps_ckpt_close(&ck);
	b[320 + 9] ^= 0x04;
	spit(path, b, len);
	free(b);

	/* entries that do not match the file: a second moment flagged but
	 * not there (the next segment is then out of place); unflagged but
	 * with a checksum; a reserved byte set; an unknown flag */
	refused_edit(dir, 64 + 4, 2,
	             "shard-0.bin: segment 1: its data lies outside the file "
	             "or out of place");
	refused_edit(dir, 64 + 56, 1,
	             "shard-0.bin: segment 0: its data lies outside the file "
	             "or out of place");
	refused_edit(dir, 64 + 60, 1,
	             "shard-0.bin: segment 0 is invalid (flags 0, 10 "
	             "elements)");
	refused_edit(dir, 64 + 4, 4,
	             "shard-0.bin: segment 0 is invalid (flags 0x4");
}

/* ---- format versions ---------------------------------------------------- */

/* A checkpoint written by the format-1 writer: tensor "w" (5 elements),
 * segment 0 elements 0..2 with momentum, segment 1 elements 3..4
 * without; iteration 7. */
static const uint8_t V1_SHARD[416] = {
    0x4f, 0x52, 0x44, 0x4f, 0x43, 0x4b, 0x50, 0x54, 0x01, 0x00, 0x00, 0x00,
    0x40, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0x8f, 0xd2, 0x50,
    0xec, 0x35, 0x22, 0x10, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x0b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x18, 0x23, 0x84, 0x9e, 0xa4, 0x95, 0x35, 0x5b,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x40, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1b, 0xda, 0xea, 0xec,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0xc0, 0x3f, 0x00, 0x00, 0x10, 0xc0, 0x00, 0x00, 0x40, 0x40,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xbe, 0x00, 0x00, 0x80, 0x3e,
    0x00, 0x00, 0x80, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x3f,
    0x00, 0x00, 0xf8, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x4f, 0x52, 0x44, 0x4f, 0x54, 0x41, 0x49, 0x4c, 0x07, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x73, 0xf0, 0xf3, 0x57,
    0xf1, 0x92, 0x93, 0xba, 0x1e, 0xa3, 0xe7, 0x98,
};
static const char V1_MANIFEST[] =
    "{\"format\":\"ordo-checkpoint\",\"format_version\":1,\"itera"
    "tion\":7,\"mode\":\"sync\",\"layout\":{\"workers\":1,\"serve"
    "rs\":1,\"partition_size\":12,\"preset\":\"ordo\"},\"seed\":3"
    ",\"tensors\":[{\"name\":\"w\",\"numel\":5}],\"shards\":[{\"f"
    "ile\":\"shard-0.bin\",\"rank\":0,\"bytes\":416,\"segments\":"
    "2,\"crc32\":3130233585}],\"config\":\"[train]\\nseed = 3\\n\""
    ",\"crc32\":2481265922}";
static const float V1_VALUES[5] = {1.5f, -2.25f, 3.0f, 0.5f, 7.75f};
static const float V1_MOMENTUM[5] = {-0.125f, 0.25f, -4.0f, 0, 0};

static void test_format1(void **state)
{
	const char *dir = at("v1");
	char path[PATH_CAP];
	float v[5], m[5], s2[5];
	ps_ckpt_range r = {
	    .tensor = 0, .numel = 5, .values = v, .momentum = m, .second = s2};
	ps_ckpt *ck;

	(void)state;
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/shard-0.bin", dir);
	spit(path, V1_SHARD, sizeof(V1_SHARD));
	assert_non_null(test_write_file(dir, "manifest.json", V1_MANIFEST));
	assert_int_equal(ps_ckpt_open(dir, &ck, why, sizeof(why)), PS_OK);
	assert_int_equal(ps_ckpt_info(ck)->iteration, 7);
	assert_int_equal(ps_ckpt_verify(ck, why, sizeof(why)), PS_OK);
	memset(s2, 0xff, sizeof(s2));
	assert_int_equal(ps_ckpt_read_ranges(ck, &r, 1, why, sizeof(why)),
	                 PS_OK);
	assert_memory_equal(v, V1_VALUES, sizeof(v));
	assert_memory_equal(m, V1_MOMENTUM, sizeof(m));
	for (int i = 0; i < 5; i++)
		assert_true(s2[i] == 0.0f); /* format 1 has none */
	assert_int_equal(r.version, 11);
	ps_ckpt_close(&ck);

	/* this writer, given the same segments, lays out the same bytes:
	 * only the version and the checksums that cover it differ */
	{
		ps_ckpt_segment segs[2] = {
		    {.tensor = 0,
		     .offset = 0,
		     .numel = 3,
		     .version = 11,
		     .values = V1_VALUES,
		     .momentum = V1_MOMENTUM},
		    {.tensor = 0,
		     .offset = 3,
		     .numel = 2,
		     .version = 12,
		     .values = V1_VALUES + 3},
		};
		uint8_t *b;
		size_t len;

		assert_int_equal(ps_ckpt_write_shard(at("v2"), 0, 7, segs, 2,
		                                     why, sizeof(why)),
		                 PS_OK);
		b = slurp(at("v2/shard-0.bin"), &len);
		assert_int_equal(len, sizeof(V1_SHARD));
		assert_int_equal(le32(b + 8), 2);
		assert_memory_equal(b, V1_SHARD, 8);
		assert_memory_equal(b + 12, V1_SHARD + 12, 60 - 12);
		assert_memory_equal(b + 64, V1_SHARD + 64, len - 64 - 12);
		free(b);
	}

	/* format 1 knows no second moment: flag bit 1, or any of entry
	 * bytes 56..63, is a damaged file */
	refused_edit(dir, 128 + 4, 2,
	             "shard-0.bin: segment 1 is invalid (flags 0x2, 2 "
	             "elements)");
	refused_edit(dir, 128 + 56, 0x1234,
	             "shard-0.bin: segment 1 is invalid (flags 0, 2 "
	             "elements)");
	refused_edit(dir, 128 + 60, 1,
	             "shard-0.bin: segment 1 is invalid (flags 0, 2 "
	             "elements)");
}

static void test_newer_shard(void **state)
{
	const char *dir = write_ckpt(at("newer-shard"), 3, 1);
	char path[PATH_CAP];
	ps_ckpt *ck;
	uint8_t *b;
	size_t len;

	(void)state;
	snprintf(path, sizeof(path), "%s/shard-0.bin", dir);
	b = slurp(path, &len);
	put_le32(b + 8, PS_CKPT_FORMAT + 1);
	put_le32(b + 60, crc_of(b, 60)); /* the header's checksum holds */
	spit(path, b, len);
	free(b);
	assert_int_equal(ps_ckpt_open(dir, &ck, why, sizeof(why)), PS_ENOTSUP);
	assert_why("shard-0.bin: format version 3 is newer than this ordo "
	           "reads (2)");
}

/* ---- random corruption -------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void test_random_corruption(void **state)
{
	static const char *const files[] = {"shard-0.bin", "shard-1.bin",
	                                    "manifest.json"};
	const char *dir = write_ckpt(at("random"), 11, 1);
	uint8_t *orig[3];
	size_t len[3];
	char path[3][PATH_CAP];
	int caught = 0, harmless = 0;

	(void)state;
	for (int f = 0; f < 3; f++) {
		snprintf(path[f], sizeof(path[f]), "%s/%s", dir, files[f]);
		orig[f] = slurp(path[f], &len[f]);
	}
	for (int i = 0; i < 500; i++) {
		int f = (int)(rng() % 3);
		size_t off = (size_t)(rng() % len[f]);
		uint8_t mask = (uint8_t)(1 + rng() % 255);
		int rc;

		orig[f][off] ^= mask;
		spit(path[f], orig[f], len[f]);
		rc = open_and_read(dir); /* exact data, or an error */
		if (rc == PS_OK)
			harmless++;
		else
			caught++;
		orig[f][off] ^= mask;
		spit(path[f], orig[f], len[f]);
	}
	print_message("random corruption: %d caught, %d harmless (JSON "
	              "layout)\n",
	              caught, harmless);
	assert_true(caught > 400);
	assert_int_equal(open_and_read(dir), PS_OK);
	for (int f = 0; f < 3; f++)
		free(orig[f]);
}

/* ---- setup -------------------------------------------------------------- */

static int group_setup(void **state)
{
	(void)state;
	return test_tmpdir_create(tmpdir, sizeof(tmpdir), "ckpt");
}

static int group_teardown(void **state)
{
	(void)state;
	umount2(at("small-fs"), MNT_DETACH); /* if a failed test left it */
	rm_tree(tmpdir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_many_ranges),
	    cmocka_unit_test(test_big_shard),
	    cmocka_unit_test(test_manifest_refuses),
	    cmocka_unit_test(test_open_truncated),
	    cmocka_unit_test(test_open_flipped),
	    cmocka_unit_test(test_open_missing),
	    cmocka_unit_test(test_check_model),
	    cmocka_unit_test(test_manifest_edits),
	    cmocka_unit_test(test_unwritable),
	    cmocka_unit_test(test_disk_full),
	    cmocka_unit_test(test_latest),
	    cmocka_unit_test(test_prune),
	    cmocka_unit_test(test_not_regular),
	    cmocka_unit_test(test_export_npy),
	    cmocka_unit_test(test_second_moment),
	    cmocka_unit_test(test_format1),
	    cmocka_unit_test(test_newer_shard),
	    cmocka_unit_test(test_random_corruption),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
