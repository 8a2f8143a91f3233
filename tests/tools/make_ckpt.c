/*
 * tests/tools/make_ckpt.c - writes checkpoints for the tests of ps-ckpt
 * (tests/checkpoint/cli.sh) and times the shard writer.
 *
 *   make_ckpt ROOT ITERATION [--no-manifest]
 *       ROOT/ckpt-ITERATION holding the checkpoint of ckpt_fixture.h
 *       (without manifest.json: an incomplete one); prints its path.
 *   make_ckpt --bench MIB DIR [TIMES]
 *       DIR/shard-0.bin: one segment of MIB MiB of values (no momentum),
 *       written and fsync'd by ps_ckpt_write_shard TIMES times (default
 *       1) from the same buffer, as a server writes its resident shard;
 *       prints "bytes B seconds S MiB/s R" for each (compare:
 *       dd bs=64M conv=fsync from a file in /dev/shm).
 *
 * Exit status: 0 done, 1 the write failed, 2 usage error.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/ckpt_fixture.h"
#include "common/log.h"
#include "common/memory.h"
#include "runtime/clock.h"

static int bench(const char *mib_arg, const char *dir, int times)
{
	char why[1024], *end;
	uint64_t mib = strtoull(mib_arg, &end, 10), bytes, t0, t1;
	ps_ckpt_segment seg = {.tensor = 0, .version = 1};
	float *v;
	double s;

	if (*mib_arg == '\0' || *end != '\0' || mib == 0 || mib > (1u << 20)) {
		fprintf(stderr,
		        "make_ckpt: --bench: '%s' is not a size in "
		        "MiB\n",
		        mib_arg);
		return 2;
	}
	bytes = mib << 20;
	v = ps_alloc_big((size_t)bytes);
	if (!v) {
		fprintf(stderr, "make_ckpt: out of memory\n");
		return 1;
	}
	for (uint64_t i = 0; i < bytes / 4; i++) /* touch every page */
		v[i] = (float)(i & 0xffff);
	seg.numel = bytes / 4;
	seg.values = v;
	for (int i = 0; i < times; i++) {
		t0 = ps_now_ns();
		if (ps_ckpt_write_shard(dir, 0, 1, &seg, 1, why, sizeof(why)) !=
		    PS_OK) {
			fprintf(stderr, "make_ckpt: %s\n", why);
			ps_free_big(v, (size_t)bytes);
			return 1;
		}
		t1 = ps_now_ns();
		s = (double)(t1 - t0) / 1e9;
		printf("bytes %" PRIu64 " seconds %.3f MiB/s %.1f\n", bytes, s,
		       (double)mib / s);
		fflush(stdout);
	}
	ps_free_big(v, (size_t)bytes);
	return 0;
}

int main(int argc, char **argv)
{
	char dir[PS_CKPT_PATH_MAX], why[1024], *end;
	uint64_t iteration;
	int manifest = 1;

	if ((argc == 4 || argc == 5) && strcmp(argv[1], "--bench") == 0)
		return bench(argv[2], argv[3], argc == 5 ? atoi(argv[4]) : 1);
	if (argc == 4 && strcmp(argv[3], "--no-manifest") == 0)
		manifest = 0;
	else if (argc != 3) {
		fprintf(
		    stderr,
		    "usage: make_ckpt ROOT ITERATION "
		    "[--no-manifest] | make_ckpt --bench MIB DIR [TIMES]\n");
		return 2;
	}
	iteration = strtoull(argv[2], &end, 10);
	if (argv[2][0] == '\0' || *end != '\0') {
		fprintf(stderr, "make_ckpt: '%s' is not an iteration\n",
		        argv[2]);
		return 2;
	}
	if (ckpt_fix_write(argv[1], iteration, manifest, dir, sizeof(dir), why,
	                   sizeof(why)) != PS_OK) {
		fprintf(stderr, "make_ckpt: %s\n", why);
		return 1;
	}
	printf("%s\n", dir);
	return 0;
}
