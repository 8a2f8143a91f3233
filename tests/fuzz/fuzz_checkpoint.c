/*
 * tests/fuzz/fuzz_checkpoint.c - libFuzzer harness for the checkpoint
 * reader (checkpoint/checkpoint.h, docs/checkpoint-format.md): what a
 * resuming job, ps-ckpt and the tuner read from disk.
 *
 * Input: byte 0 (flags), then a little-endian u32 length and that many
 * bytes of manifest.json, then a u32 length and shard-0.bin, the rest
 * shard-1.bin. They are written into a directory of their own and opened
 * with ps_ckpt_open; what opens is verified (ps_ckpt_verify) and every
 * tensor read back whole (ps_ckpt_read_ranges), as a resuming job reads.
 *
 * Checksums guard every structure, and a fuzzer does not find CRCs by
 * mutation: with flag bit 0 the harness first sets every checksum of the
 * shards (header, table, arrays, trailer) and of the manifest (its shards'
 * file crc32 and its own) to match the mutated bytes, so the checks behind
 * them are reached; without it the checksums are as the input has them.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <jansson.h>
#include <zlib.h>

#include "checkpoint/checkpoint.h"
#include "common/log.h"
#include "fuzz_common.h"

#define MAX_READ_ELEMS (1u << 20) /* read back only checkpoints this small */

static char dir[256];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void remove_dir(void)
{
	static const char *const names[] = {"manifest.json", "shard-0.bin",
					    "shard-1.bin"};
	char path[512];
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	ps_log_init("fuzz", -1 /* nothing: errors are expected */);
	fuzz_private_dir(dir, sizeof(dir), "ckpt", remove_dir);
	return 0;
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t crc(const unsigned char *p, size_t n)
{
	return (uint32_t)crc32(crc32(0, Z_NULL, 0), p, (uInt)n);
}

/* Sets the shard's checksums to match its bytes (as far as its header's
 * segment count fits in it); returns its file crc32. */
static uint32_t fix_shard(unsigned char *s, size_t len)
{
	if (len < 64 + 32)
		return 0;
	uint64_t n = get32(s + 28), front = 64 + 64 * n;
	if (front + 32 <= len) {
		for (uint64_t i = 0; i < n; i++) {
			unsigned char *e = s + 64 + 64 * i;
			uint64_t numel = get64(e + 16), at = get64(e + 32),
				 mat = get64(e + 40);
			if (numel < len / 4 && at <= len - 4 * numel)
				put32(e + 48, crc(s + at, 4 * numel));
			if (mat && numel < len / 4 && mat <= len - 4 * numel)
				put32(e + 52, crc(s + mat, 4 * numel));
			/* the second moment (flag bit 1): no offset stored,
			 * the next array of the canonical layout */
			uint64_t sat = (mat ? mat : at) +
				       ((4 * numel + 63) & ~(uint64_t)63);
			if ((get32(e + 4) & 2) && numel < len / 4 &&
			    sat <= len - 4 * numel)
				put32(e + 56, crc(s + sat, 4 * numel));
		}
		put32(s + 56, crc(s + 64, 64 * n));
	}
	put32(s + 60, crc(s, 60));
	unsigned char *t = s + len - 32;
	if (front <= len - 32)
		put32(t + 20, crc(s, front));
	uint32_t file = crc(s, len - 32);
	put32(t + 24, file);
	put32(t + 28, crc(t, 28));
	return file;
}

/* The manifest with its shards' crc32 and its own set to match; a
 * malloc'd string, or NULL when it is not a JSON object. */
static char *fix_manifest(const unsigned char *m, size_t len,
			  const uint32_t *file_crc, int nshards)
{
	json_t *root = json_loadb((const char *)m, len, 0, NULL);
	if (!json_is_object(root)) {
		json_decref(root);
		return NULL;
	}
	json_t *shards = json_object_get(root, "shards");
	for (int i = 0; i < nshards && json_is_array(shards); i++) {
		json_t *sh = json_array_get(shards, (size_t)i);
		if (json_is_object(sh))
			json_object_set_new(sh, "crc32",
					    json_integer(file_crc[i]));
	}
	json_object_del(root, "crc32");
	char *canon = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
	if (canon)
		json_object_set_new(
		    root, "crc32",
		    json_integer(crc((unsigned char *)canon, strlen(canon))));
	free(canon);
	char *text = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	return text;
}

static void write_file(const char *name, const void *p, size_t n)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	FUZZ_CHECK(fd >= 0, "open %s", path);
	FUZZ_CHECK(write(fd, p, n) == (ssize_t)n, "write %s", path);
	close(fd);
}

/* Takes a u32-length-prefixed piece off the input. */
static int take(const uint8_t **d, size_t *n, const uint8_t **p, size_t *len)
{
	if (*n < 4)
		return 0;
	size_t l = get32(*d);
	if (l > *n - 4)
		l = *n - 4;
	*p = *d + 4;
	*len = l;
	*d += 4 + l;
	*n -= 4 + l;
	return 1;
}

static void read_back(ps_ckpt *ck)
{
	char why[1024];
	uint32_t nt = ps_ckpt_num_tensors(ck);
	const ps_tensor_desc *t = ps_ckpt_tensors(ck);
	uint64_t total = 0;

	(void)ps_ckpt_verify(ck, why, sizeof(why));
	for (uint32_t i = 0; i < nt; i++) {
		if (t[i].numel > MAX_READ_ELEMS - total)
			return;
		total += t[i].numel;
	}
	for (uint32_t i = 0; i < nt; i++) {
		float *v = malloc(t[i].numel * sizeof(float));
		float *m = malloc(t[i].numel * sizeof(float));
		ps_ckpt_range r = {.tensor = i, .offset = 0,
				   .numel = t[i].numel, .values = v,
				   .momentum = m};
		if (v && m &&
		    ps_ckpt_read_ranges(ck, &r, 1, why, sizeof(why)) != PS_OK)
			FUZZ_CHECK(why[0] != '\0', "an error without a message");
		free(v);
		free(m);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *man = NULL, *s0 = NULL;
	size_t mlen = 0, s0len = 0;
	char why[1024];
	ps_ckpt *ck = NULL;

	if (size < 1)
		return 0;
	int fix = data[0] & 1;
	const uint8_t *d = data + 1;
	size_t n = size - 1;
	if (!take(&d, &n, &man, &mlen) || !take(&d, &n, &s0, &s0len))
		return 0;
	unsigned char *shard[2] = {malloc(s0len + 1), malloc(n + 1)};
	size_t slen[2] = {s0len, n};
	uint32_t file_crc[2] = {0, 0};
	FUZZ_CHECK(shard[0] && shard[1], "malloc");
	memcpy(shard[0], s0, s0len);
	memcpy(shard[1], d, n);
	char *mtext = NULL;
	if (fix) {
		for (int i = 0; i < 2; i++)
			file_crc[i] = fix_shard(shard[i], slen[i]);
		mtext = fix_manifest(man, mlen, file_crc, 2);
	}
	if (mtext)
		write_file("manifest.json", mtext, strlen(mtext));
	else
		write_file("manifest.json", man, mlen);
	write_file("shard-0.bin", shard[0], slen[0]);
	write_file("shard-1.bin", shard[1], slen[1]);
	free(mtext);
	free(shard[0]);
	free(shard[1]);

	why[0] = '\0';
	if (ps_ckpt_open(dir, &ck, why, sizeof(why)) != PS_OK) {
		FUZZ_CHECK(why[0] != '\0' && !ck, "an error without a message");
		return 0;
	}
	read_back(ck);
	ps_ckpt_close(&ck);
	return 0;
}
