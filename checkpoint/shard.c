/*
 * checkpoint/shard.c - shard files: ps_ckpt_write_shard, and the loader
 * and verifier of internal.h. The byte layout is docs/checkpoint-format.md.
 *
 * DESIGN: the writer lays the file out before writing a byte (header and
 * table, then every segment's values, momentum and second moment - those
 * it stores - each at a 64-byte boundary, then the trailer) and then
 * writes the data front to back (the header's place left as a hole,
 * filled last). Small arrays are gathered in a staging buffer; large ones
 * go straight from the caller's memory in pwrite calls of up to CHUNK
 * bytes. Meanwhile a helper thread computes every array's crc32 from the
 * same memory: zlib's crc32 costs about twice the copy into the page
 * cache, and computed between the writes it halved the writer's speed
 * (measured against dd conv=fsync).
 * The header and table, which hold those checksums, are written last, at
 * offset 0. The checksum of the whole file before the trailer is put
 * together from the arrays' checksums (crc32_combine) and the zeros of
 * the padding, so no byte is read twice.
 *
 * The layout is canonical: the table's offsets must be exactly those the
 * writer computes, so a reader checks every offset by recomputing it, and
 * every byte that is not a field or data must be zero (verify checks).
 *
 * Threads: no shared state.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "checkpoint/internal.h"

#define CHUNK        (64u << 20) /* large arrays: one pwrite (crc32) each */
#define STAGE_SIZE   (4u << 20)  /* small arrays are gathered up to this */
#define DIRECT_MIN   (1u << 20)  /* arrays from this size are not staged */
#define PARALLEL_MIN (16u << 20) /* data from this size: crc32 on a thread */
#define VERIFY_BUF   (8u << 20)

/* ---- little-endian fields ----------------------------------------------- */

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* x rounded up to CK_ALIGN into *r; false on overflow. */
static bool align_up(uint64_t x, uint64_t *r)
{
	if (x > UINT64_MAX - (CK_ALIGN - 1))
		return false;
	*r = (x + CK_ALIGN - 1) & ~(uint64_t)(CK_ALIGN - 1);
	return true;
}

/* pos + bytes, rounded up: the next array's offset. false on overflow. */
static bool advance(uint64_t *pos, uint64_t bytes)
{
	return bytes <= UINT64_MAX - *pos && align_up(*pos + bytes, pos);
}

/* Bytes before the first array: header, table, padding. */
static bool front_size(uint64_t nsegs, uint64_t *r)
{
	return nsegs <= (UINT64_MAX - CK_HEADER_SIZE) / CK_ENTRY_SIZE &&
	       align_up(CK_HEADER_SIZE + nsegs * CK_ENTRY_SIZE, r);
}

/* ---- field offsets (docs/checkpoint-format.md) -------------------------- */

enum {
	H_MAGIC = 0,
	H_VERSION = 8,
	H_HEADER_SIZE = 12,
	H_ITERATION = 16,
	H_RANK = 24,
	H_NSEGS = 28,
	H_TABLE_AT = 32,
	H_DATA_AT = 40,
	H_TRAILER_AT = 48,
	H_TABLE_CRC = 56,
	H_HEADER_CRC = 60,

	E_TENSOR = 0,
	E_FLAGS = 4,
	E_OFFSET = 8,
	E_NUMEL = 16,
	E_VERSION = 24,
	E_VALUES_AT = 32,
	E_MOMENTUM_AT = 40,
	E_VALUES_CRC = 48,
	E_MOMENTUM_CRC = 52,
	E_SECOND_CRC = 56, /* format 2 on; format 1: reserved (zeros) */
	E_RESERVED = 60,   /* 4 bytes of zeros */

	T_MAGIC = 0,
	T_ITERATION = 8,
	T_NSEGS = 16,
	T_META_CRC = 20,
	T_FILE_CRC = 24,
	T_TRAILER_CRC = 28,
};

/* Where an entry keeps each array's offset and crc32, by ps_ckpt_array.
 * The second moment's offset is not kept: the layout is canonical, so a
 * reader computes it (as it checks every offset that is kept). */
static const int E_AT[PS_CKPT_NARRAYS] = {E_VALUES_AT, E_MOMENTUM_AT, -1};
static const int E_CRC[PS_CKPT_NARRAYS] = {E_VALUES_CRC, E_MOMENTUM_CRC,
                                           E_SECOND_CRC};

static void encode_entry(uint8_t *e, const psi_ckpt_seg *s)
{
	memset(e, 0, CK_ENTRY_SIZE);
	put32(e + E_TENSOR, s->tensor);
	put32(e + E_FLAGS, s->flags);
	put64(e + E_OFFSET, s->offset);
	put64(e + E_NUMEL, s->numel);
	put64(e + E_VERSION, s->version);
	for (int a = 0; a < PS_CKPT_NARRAYS; a++) {
		if (E_AT[a] >= 0)
			put64(e + E_AT[a], s->at[a]);
		put32(e + E_CRC[a], s->crc[a]);
	}
}

const char *psi_ckpt_array_name(int a)
{
	static const char *const names[PS_CKPT_NARRAYS] = {"values", "momentum",
	                                                   "second moment"};

	return a >= 0 && a < PS_CKPT_NARRAYS ? names[a] : "?";
}

/* The caller's arrays of s by ps_ckpt_array (NULL: not stored). */
static void seg_arrays(const ps_ckpt_segment *s,
                       const float *arr[PS_CKPT_NARRAYS])
{
	arr[PS_CKPT_VALUES] = s->values;
	arr[PS_CKPT_MOMENTUM] = s->momentum;
	arr[PS_CKPT_SECOND] = s->second;
}

/* ---- writing ------------------------------------------------------------ */

/* Data written front to back from `pos`: small arrays gathered in stage,
 * large ones written straight from the caller's memory. */
typedef struct ostream {
	int fd;
	uint64_t pos; /* file offset of stage[0] */
	uint8_t *stage;
	size_t len;
	int err; /* errno of the failure */
} ostream;

static int os_flush(ostream *os)
{
	if (os->len == 0)
		return 0;
	if (psi_ckpt_pwrite_all(os->fd, os->stage, os->len, os->pos) != 0) {
		os->err = errno;
		return -1;
	}
	os->pos += os->len;
	os->len = 0;
	return 0;
}

/* Appends an array of n bytes and the zeros up to the next boundary. */
static int os_put_array(ostream *os, const void *p, uint64_t n)
{
	uint64_t pad = (CK_ALIGN - n % CK_ALIGN) % CK_ALIGN;

	if (n >= DIRECT_MIN) {
		if (os_flush(os) != 0)
			return -1;
		for (uint64_t done = 0; done < n;) {
			uint64_t piece = n - done > CHUNK ? CHUNK : n - done;

			if (psi_ckpt_pwrite_all(os->fd,
			                        (const uint8_t *)p + done,
			                        piece, os->pos) != 0) {
				os->err = errno;
				return -1;
			}
			os->pos += piece;
			done += piece;
		}
	} else {
		if (os->len + n > STAGE_SIZE && os_flush(os) != 0)
			return -1;
		memcpy(os->stage + os->len, p, (size_t)n);
		os->len += (size_t)n;
	}
	/* the padding goes into the stage buffer (zeroed when allocated and
	 * only ever overwritten by arrays; zero it here to be sure) */
	if (os->len + pad > STAGE_SIZE && os_flush(os) != 0)
		return -1;
	memset(os->stage + os->len, 0, (size_t)pad);
	os->len += (size_t)pad;
	return 0;
}

/* Appends every array that s stores. */
static int os_put_segment(ostream *os, const ps_ckpt_segment *s)
{
	const float *arr[PS_CKPT_NARRAYS];

	seg_arrays(s, arr);
	for (int a = 0; a < PS_CKPT_NARRAYS; a++)
		if (arr[a] &&
		    os_put_array(os, arr[a], s->numel * PS_ELEM_SIZE) != 0)
			return -1;
	return 0;
}

/* The checksums of every array, computed on a helper thread while the
 * main thread writes them (crc32 costs about twice the copy into the page
 * cache: interleaved, it would halve the writer's speed). */
typedef struct crc_job {
	const ps_ckpt_segment *segs;
	psi_ckpt_seg *t; /* their crc[] is written */
	uint32_t nsegs;
	atomic_int stop; /* set when the write failed: give up */
} crc_job;

static uint32_t crc_array(crc_job *job, const void *p, uint64_t n)
{
	uint32_t crc = 0;

	for (uint64_t done = 0; done < n && !atomic_load(&job->stop);) {
		uint64_t piece = n - done > CHUNK ? CHUNK : n - done;

		crc = psi_ckpt_crc(crc, (const uint8_t *)p + done, piece);
		done += piece;
	}
	return crc;
}

static void *crc_all(void *arg)
{
	crc_job *job = arg;

	for (uint32_t i = 0; i < job->nsegs; i++) {
		uint64_t bytes = job->segs[i].numel * PS_ELEM_SIZE;
		const float *arr[PS_CKPT_NARRAYS];

		seg_arrays(&job->segs[i], arr);
		for (int a = 0; a < PS_CKPT_NARRAYS; a++)
			if (arr[a])
				job->t[i].crc[a] =
				    crc_array(job, arr[a], bytes);
	}
	return NULL;
}

/* crc32 of bytes [0, trailer_at) from the front's and the arrays' (the
 * padding is zeros). */
static uint32_t file_crc(const uint8_t *front, uint64_t data_at,
                         const psi_ckpt_seg *t, uint32_t nsegs)
{
	static const uint8_t zeros[CK_ALIGN];
	uint32_t crc = psi_ckpt_crc(0, front, data_at);

	for (uint32_t i = 0; i < nsegs; i++) {
		uint64_t bytes = t[i].numel * PS_ELEM_SIZE;
		uint64_t pad = (CK_ALIGN - bytes % CK_ALIGN) % CK_ALIGN;

		for (int a = 0; a < PS_CKPT_NARRAYS; a++) {
			if (!psi_ckpt_stored(&t[i], a))
				continue;
			crc = (uint32_t)crc32_combine(crc, t[i].crc[a],
			                              (z_off_t)bytes);
			crc = psi_ckpt_crc(crc, zeros, pad);
		}
	}
	return crc;
}

/* Checks the caller's segments and lays the file out: offsets into t[],
 * the data's start and the trailer's offset. */
static int layout(const ps_ckpt_segment *segs, uint32_t nsegs, psi_ckpt_seg *t,
                  uint64_t *data_at_p, uint64_t *trailer_at_p, const char *path,
                  char *why, size_t whylen)
{
	uint64_t pos;

	if (nsegs && !segs)
		return ps_errf(why, whylen, PS_EINVAL,
		               "%s: %u segments but no array", path, nsegs);
	if (!front_size(nsegs, &pos))
		return ps_errf(why, whylen, PS_EINVAL, "%s: too many segments",
		               path);
	*data_at_p = pos;
	for (uint32_t i = 0; i < nsegs; i++) {
		const ps_ckpt_segment *s = &segs[i];
		uint64_t bytes = s->numel * PS_ELEM_SIZE;
		const float *arr[PS_CKPT_NARRAYS];

		if (s->numel == 0 || !s->values ||
		    s->numel > UINT64_MAX / PS_ELEM_SIZE ||
		    s->offset > UINT64_MAX - s->numel)
			return ps_errf(why, whylen, PS_EINVAL,
			               "%s: segment %u (tensor %u, "
			               "offset %" PRIu64 ", %" PRIu64
			               " elements) is invalid",
			               path, i, s->tensor, s->offset, s->numel);
		t[i] = (psi_ckpt_seg){
		    .tensor = s->tensor,
		    .offset = s->offset,
		    .numel = s->numel,
		    .version = s->version,
		    .index = i,
		};
		seg_arrays(s, arr);
		for (int a = 0; a < PS_CKPT_NARRAYS; a++) {
			if (!arr[a])
				continue;
			if (a != PS_CKPT_VALUES)
				t[i].flags |= CK_SEG_FLAG(a);
			t[i].at[a] = pos;
			if (!advance(&pos, bytes))
				goto too_big;
		}
	}
	if (pos > (uint64_t)INT64_MAX - CK_TRAILER_SIZE)
		goto too_big;
	*trailer_at_p = pos;
	return PS_OK;
too_big:
	return ps_errf(why, whylen, PS_EINVAL,
	               "%s: the segments add up to more bytes than a "
	               "file can hold",
	               path);
}

int ps_ckpt_write_shard(const char *dir, uint32_t rank, uint64_t iteration,
                        const ps_ckpt_segment *segs, uint32_t nsegs, char *why,
                        size_t whylen)
{
	char path[PS_CKPT_PATH_MAX], tmp[PS_CKPT_PATH_MAX];
	uint8_t *front = NULL, trailer[CK_TRAILER_SIZE] = {0};
	psi_ckpt_seg *t = NULL;
	uint64_t data_at = 0, trailer_at = 0;
	ostream os = {.fd = -1};
	crc_job job = {.segs = segs, .nsegs = nsegs};
	pthread_t helper;
	bool threaded = false;
	int rc, fd = -1;

	if (!dir)
		return ps_errf(why, whylen, PS_EINVAL, "no directory");
	rc = psi_ckpt_join(path, sizeof(path), why, whylen, "%s/shard-%u.bin",
	                   dir, rank);
	if (!rc)
		rc = psi_ckpt_join(tmp, sizeof(tmp), why, whylen, "%s.tmp",
		                   path);
	if (rc)
		return rc;
	t = calloc(nsegs ? nsegs : 1, sizeof(*t));
	if (!t)
		return ps_errf(why, whylen, PS_ENOMEM, "%s: out of memory",
		               path);
	rc = layout(segs, nsegs, t, &data_at, &trailer_at, path, why, whylen);
	if (rc)
		goto out;
	front = calloc(1, (size_t)data_at);
	os.stage = calloc(1, STAGE_SIZE);
	if (!front || !os.stage) {
		rc = ps_errf(why, whylen, PS_ENOMEM, "%s: out of memory", path);
		goto out;
	}
	rc = psi_ckpt_mkdirs(dir, why, whylen);
	if (rc)
		goto out;
	fd = psi_ckpt_create_tmp(tmp, &rc, why, whylen);
	if (fd < 0)
		goto out;

	/* the checksums on the side (inline for small shards, or if no
	 * thread can be had), the data front to back */
	job.t = t;
	atomic_init(&job.stop, 0);
	threaded = trailer_at - data_at >= PARALLEL_MIN &&
	           pthread_create(&helper, NULL, crc_all, &job) == 0;
	if (!threaded)
		crc_all(&job);
	os.fd = fd;
	os.pos = data_at;
	for (uint32_t i = 0; i < nsegs; i++)
		if (os_put_segment(&os, &segs[i]) != 0)
			break;
	if (!os.err)
		os_flush(&os);
	if (threaded) {
		if (os.err)
			atomic_store(&job.stop, 1);
		pthread_join(helper, NULL);
	}
	if (os.err)
		goto write_failed;

	/* header and table (they hold the data's checksums), then trailer */
	for (uint32_t i = 0; i < nsegs; i++)
		encode_entry(front + CK_HEADER_SIZE + (size_t)i * CK_ENTRY_SIZE,
		             &t[i]);
	memcpy(front + H_MAGIC, CK_MAGIC, 8);
	put32(front + H_VERSION, PS_CKPT_FORMAT);
	put32(front + H_HEADER_SIZE, CK_HEADER_SIZE);
	put64(front + H_ITERATION, iteration);
	put32(front + H_RANK, rank);
	put32(front + H_NSEGS, nsegs);
	put64(front + H_TABLE_AT, CK_HEADER_SIZE);
	put64(front + H_DATA_AT, data_at);
	put64(front + H_TRAILER_AT, trailer_at);
	put32(front + H_TABLE_CRC,
	      psi_ckpt_crc(0, front + CK_HEADER_SIZE,
	                   (uint64_t)nsegs * CK_ENTRY_SIZE));
	put32(front + H_HEADER_CRC, psi_ckpt_crc(0, front, H_HEADER_CRC));

	memcpy(trailer + T_MAGIC, CK_TAIL_MAGIC, 8);
	put64(trailer + T_ITERATION, iteration);
	put32(trailer + T_NSEGS, nsegs);
	put32(trailer + T_META_CRC,
	      psi_ckpt_crc(0, front,
	                   CK_HEADER_SIZE + (uint64_t)nsegs * CK_ENTRY_SIZE));
	put32(trailer + T_FILE_CRC, file_crc(front, data_at, t, nsegs));
	put32(trailer + T_TRAILER_CRC, psi_ckpt_crc(0, trailer, T_TRAILER_CRC));
	if (psi_ckpt_pwrite_all(fd, front, data_at, 0) != 0 ||
	    psi_ckpt_pwrite_all(fd, trailer, CK_TRAILER_SIZE, trailer_at) !=
	        0) {
		os.err = errno;
		goto write_failed;
	}
	rc = psi_ckpt_commit(fd, tmp, path, why, whylen);
	goto out;

write_failed:
	rc = psi_ckpt_abandon(
	    fd, tmp, psi_ckpt_sys_fail(why, whylen, os.err, tmp, "write"));
out:
	free(os.stage);
	free(front);
	free(t);
	return rc;
}

/* ---- reading ------------------------------------------------------------ */

const char *psi_ckpt_describe(char *buf, size_t cap, const psi_ckpt_seg *s,
                              int a, const ps_tensor_desc *tensors,
                              uint32_t ntensors)
{
	const char *arr = psi_ckpt_array_name(a);

	if (tensors && s->tensor < ntensors)
		snprintf(buf, cap,
		         "segment %u (tensor '%s' elements %" PRIu64
		         "..%" PRIu64 ", %s)",
		         s->index, tensors[s->tensor].name, s->offset,
		         s->offset + s->numel - 1, arr);
	else
		snprintf(buf, cap,
		         "segment %u (tensor %u elements %" PRIu64 "..%" PRIu64
		         ", %s)",
		         s->index, s->tensor, s->offset,
		         s->offset + s->numel - 1, arr);
	return buf;
}

/* A damaged file: "PATH: MESSAGE", PS_EPROTO. */
#define BAD(...) ps_errf(why, whylen, PS_EPROTO, __VA_ARGS__)

static int decode_header(const uint8_t *h, const char *path, uint64_t size,
                         psi_ckpt_shard *sh, uint32_t *table_crc_p, char *why,
                         size_t whylen)
{
	uint32_t version = get32(h + H_VERSION);
	uint64_t front;

	if (memcmp(h + H_MAGIC, CK_MAGIC, 8) != 0)
		return BAD("%s: not an ordo checkpoint shard (bad magic)",
		           path);
	if (get32(h + H_HEADER_CRC) != psi_ckpt_crc(0, h, H_HEADER_CRC))
		return BAD("%s: header checksum mismatch", path);
	if (version > PS_CKPT_FORMAT)
		return ps_errf(why, whylen, PS_ENOTSUP,
		               "%s: format version %u is newer than "
		               "this ordo reads (%d)",
		               path, version, PS_CKPT_FORMAT);
	if (version == 0)
		return BAD("%s: format version 0 is invalid", path);
	sh->format = version;
	sh->iteration = get64(h + H_ITERATION);
	sh->rank = get32(h + H_RANK);
	sh->nsegs = get32(h + H_NSEGS);
	sh->data_at = get64(h + H_DATA_AT);
	sh->trailer_at = get64(h + H_TRAILER_AT);
	*table_crc_p = get32(h + H_TABLE_CRC);
	if (get32(h + H_HEADER_SIZE) != CK_HEADER_SIZE ||
	    get64(h + H_TABLE_AT) != CK_HEADER_SIZE ||
	    !front_size(sh->nsegs, &front) || sh->data_at != front ||
	    sh->trailer_at < sh->data_at || sh->trailer_at % CK_ALIGN)
		return BAD("%s: inconsistent header (%u segments, data at "
		           "%" PRIu64 ", trailer at %" PRIu64 ")",
		           path, sh->nsegs, sh->data_at, sh->trailer_at);
	if (sh->trailer_at > UINT64_MAX - CK_TRAILER_SIZE ||
	    sh->trailer_at + CK_TRAILER_SIZE != size)
		return BAD("%s: the file has %" PRIu64 " bytes, its header "
		           "says %" PRIu64 " (truncated or extended)",
		           path, size,
		           sh->trailer_at <= UINT64_MAX - CK_TRAILER_SIZE
		               ? sh->trailer_at + CK_TRAILER_SIZE
		               : UINT64_MAX);
	return PS_OK;
}

static int decode_trailer(const uint8_t *t, const psi_ckpt_shard *sh,
                          uint32_t meta_crc, uint32_t *file_crc_p, char *why,
                          size_t whylen)
{
	if (memcmp(t + T_MAGIC, CK_TAIL_MAGIC, 8) != 0)
		return BAD("%s: bad trailer magic (incomplete file?)",
		           sh->path);
	if (get32(t + T_TRAILER_CRC) != psi_ckpt_crc(0, t, T_TRAILER_CRC))
		return BAD("%s: trailer checksum mismatch", sh->path);
	if (get64(t + T_ITERATION) != sh->iteration ||
	    get32(t + T_NSEGS) != sh->nsegs)
		return BAD("%s: the trailer does not match the header "
		           "(iteration %" PRIu64 " vs %" PRIu64 ")",
		           sh->path, get64(t + T_ITERATION), sh->iteration);
	if (get32(t + T_META_CRC) != meta_crc)
		return BAD("%s: header and table do not match the trailer's "
		           "checksum",
		           sh->path);
	*file_crc_p = get32(t + T_FILE_CRC);
	return PS_OK;
}

/* Decodes entry i and checks it against the canonical layout (pos: where
 * its values must start; advanced past its last array). Format 1 knows
 * no second moment: its bytes 56..63 are all reserved. */
static int decode_entry(const uint8_t *e, psi_ckpt_shard *sh, uint32_t i,
                        uint64_t *pos, char *why, size_t whylen)
{
	psi_ckpt_seg *s = &sh->segs[i];
	bool v1 = sh->format < 2;
	uint32_t known = v1 ? CK_SEG_MOMENTUM : CK_SEG_MOMENTUM | CK_SEG_SECOND;
	uint64_t bytes,
	    reserved = v1 ? get64(e + E_SECOND_CRC) : get32(e + E_RESERVED);

	s->tensor = get32(e + E_TENSOR);
	s->flags = get32(e + E_FLAGS);
	s->offset = get64(e + E_OFFSET);
	s->numel = get64(e + E_NUMEL);
	s->version = get64(e + E_VERSION);
	for (int a = 0; a < PS_CKPT_NARRAYS; a++) {
		s->at[a] = E_AT[a] >= 0 ? get64(e + E_AT[a]) : 0;
		s->crc[a] = v1 && a == PS_CKPT_SECOND ? 0 : get32(e + E_CRC[a]);
	}
	s->index = i;
	bytes = s->numel * PS_ELEM_SIZE;
	if ((s->flags & ~known) || reserved || s->numel == 0 ||
	    s->numel > UINT64_MAX / PS_ELEM_SIZE ||
	    s->offset > UINT64_MAX - s->numel)
		return BAD("%s: segment %u is invalid (flags %#x, %" PRIu64
		           " elements)",
		           sh->path, i, s->flags, s->numel);
	for (int a = 0; a < PS_CKPT_NARRAYS; a++) {
		if (!psi_ckpt_stored(s, a)) {
			if (s->at[a] || s->crc[a])
				goto misplaced;
			continue;
		}
		if (E_AT[a] >= 0 && s->at[a] != *pos)
			goto misplaced;
		s->at[a] = *pos;
		if (!advance(pos, bytes) || *pos > sh->trailer_at)
			goto misplaced;
	}
	return PS_OK;
misplaced:
	return BAD("%s: segment %u: its data lies outside the file or out of "
	           "place (truncated?)",
	           sh->path, i);
}

int psi_ckpt_shard_load(const char *path, uint32_t shard_index,
                        psi_ckpt_shard *sh, char *why, size_t whylen)
{
	uint8_t header[CK_HEADER_SIZE], trailer[CK_TRAILER_SIZE];
	uint8_t *front = NULL; /* header and table */
	uint64_t table_bytes, pos;
	uint32_t table_crc = 0;
	struct stat st;
	int rc, fd;

	memset(sh, 0, sizeof(*sh));
	sh->path = strdup(path);
	if (!sh->path)
		return ps_errf(why, whylen, PS_ENOMEM, "out of memory");
	rc = psi_ckpt_open_regular(path, &fd, why, whylen);
	if (rc) {
		if (rc == PS_ENOENT)
			ps_errf(why, whylen, PS_ENOENT, "%s: missing", path);
		goto fail;
	}
	if (fstat(fd, &st) != 0) {
		rc = psi_ckpt_sys_fail(why, whylen, errno, path, "fstat");
		goto fail;
	}
	sh->bytes = (uint64_t)st.st_size;
	if (!S_ISREG(st.st_mode)) {
		rc = BAD("%s: not a regular file", path);
		goto fail;
	}
	if (sh->bytes < CK_HEADER_SIZE + CK_TRAILER_SIZE) {
		rc = BAD("%s: truncated (%" PRIu64 " bytes; a shard has at "
		         "least %u)",
		         path, sh->bytes, CK_HEADER_SIZE + CK_TRAILER_SIZE);
		goto fail;
	}
	rc = psi_ckpt_read_at(fd, header, CK_HEADER_SIZE, 0, path, why, whylen);
	if (!rc)
		rc = decode_header(header, path, sh->bytes, sh, &table_crc, why,
		                   whylen);
	if (rc)
		goto fail;
	/* the header's sizes are now known to fit in the file */
	table_bytes = (uint64_t)sh->nsegs * CK_ENTRY_SIZE;
	front = malloc(CK_HEADER_SIZE + table_bytes);
	sh->segs = calloc(sh->nsegs ? sh->nsegs : 1, sizeof(*sh->segs));
	if (!front || !sh->segs) {
		rc = ps_errf(why, whylen, PS_ENOMEM, "%s: out of memory", path);
		goto fail;
	}
	memcpy(front, header, CK_HEADER_SIZE);
	rc = psi_ckpt_read_at(fd, front + CK_HEADER_SIZE, table_bytes,
	                      CK_HEADER_SIZE, path, why, whylen);
	if (!rc)
		rc = psi_ckpt_read_at(fd, trailer, CK_TRAILER_SIZE,
		                      sh->trailer_at, path, why, whylen);
	if (rc)
		goto fail;
	if (psi_ckpt_crc(0, front + CK_HEADER_SIZE, table_bytes) != table_crc) {
		rc = BAD("%s: segment table checksum mismatch", path);
		goto fail;
	}
	sh->meta_crc = psi_ckpt_crc(0, front, CK_HEADER_SIZE + table_bytes);
	rc = decode_trailer(trailer, sh, sh->meta_crc, &sh->file_crc, why,
	                    whylen);
	pos = sh->data_at;
	for (uint32_t i = 0; !rc && i < sh->nsegs; i++) {
		rc = decode_entry(front + CK_HEADER_SIZE +
		                      (size_t)i * CK_ENTRY_SIZE,
		                  sh, i, &pos, why, whylen);
		sh->segs[i].shard = shard_index;
	}
	if (!rc && pos != sh->trailer_at)
		rc = BAD("%s: %" PRIu64 " bytes between the data and the "
		         "trailer",
		         path, sh->trailer_at - pos);
	if (rc)
		goto fail;
	free(front);
	close(fd);
	return PS_OK;
fail:
	if (fd >= 0)
		close(fd);
	free(front);
	psi_ckpt_shard_free(sh);
	return rc;
}

void psi_ckpt_shard_free(psi_ckpt_shard *sh)
{
	free(sh->path);
	free(sh->segs);
	memset(sh, 0, sizeof(*sh));
}

/* ---- verification: one pass over the file ------------------------------- */

/* A window of the file, read front to back. */
typedef struct istream {
	int fd;
	const char *path;
	const ps_tensor_desc *tensors; /* for messages */
	uint32_t ntensors;
	uint8_t *buf;
	uint64_t at, len; /* buf holds [at, at + len) */
	uint32_t crc;     /* of every byte handed out so far */
} istream;

/* Hands out the next piece of [off, off + n): *p and its length. */
static int is_next(istream *is, uint64_t off, uint64_t n, const uint8_t **p,
                   uint64_t *len, char *why, size_t whylen)
{
	uint64_t got;

	if (off < is->at || off >= is->at + is->len) {
		int r =
		    psi_ckpt_pread_all(is->fd, is->buf, VERIFY_BUF, off, &got);

		if (r < 0)
			return psi_ckpt_sys_fail(why, whylen, errno, is->path,
			                         "read");
		if (got == 0)
			return BAD("%s: truncated (short read at byte "
			           "%" PRIu64 ")",
			           is->path, off);
		is->at = off;
		is->len = got;
	}
	*p = is->buf + (off - is->at);
	*len = is->at + is->len - off;
	if (*len > n)
		*len = n;
	is->crc = psi_ckpt_crc(is->crc, *p, *len);
	return PS_OK;
}

/* The crc32 of [off, off + n) into *crc_p; with zero set, the bytes must
 * all be zero. */
static int is_span(istream *is, uint64_t off, uint64_t n, bool zero,
                   uint32_t *crc_p, char *why, size_t whylen)
{
	uint32_t crc = 0;

	while (n > 0) {
		const uint8_t *p = NULL;
		uint64_t len = 0;
		int rc = is_next(is, off, n, &p, &len, why, whylen);

		if (rc)
			return rc;
		if (zero) {
			for (uint64_t i = 0; i < len; i++)
				if (p[i])
					return BAD("%s: byte %" PRIu64
					           " should be padding (zero)",
					           is->path, off + i);
		} else {
			crc = psi_ckpt_crc(crc, p, len);
		}
		off += len;
		n -= len;
	}
	if (crc_p)
		*crc_p = crc;
	return PS_OK;
}

/* Checks array a of segment s and the padding that follows it; *pos
 * moves past both. */
static int verify_array(istream *is, const psi_ckpt_seg *s, int a,
                        uint64_t *pos, char *why, size_t whylen)
{
	uint64_t bytes = s->numel * PS_ELEM_SIZE, end = *pos;
	char what[PS_NAME_MAX + 128];
	uint32_t crc;
	int rc;

	rc = is_span(is, *pos, bytes, false, &crc, why, whylen);
	if (rc)
		return rc;
	if (crc != s->crc[a])
		return BAD("%s: checksum mismatch in %s", is->path,
		           psi_ckpt_describe(what, sizeof(what), s, a,
		                             is->tensors, is->ntensors));
	advance(&end, bytes);
	rc = is_span(is, *pos + bytes, end - *pos - bytes, true, NULL, why,
	             whylen);
	*pos = end;
	return rc;
}

int psi_ckpt_shard_verify(const psi_ckpt_shard *sh,
                          const ps_tensor_desc *tensors, uint32_t ntensors,
                          char *why, size_t whylen)
{
	psi_ckpt_shard again;
	istream is = {.fd = -1,
	              .path = sh->path,
	              .tensors = tensors,
	              .ntensors = ntensors};
	uint64_t pos = sh->data_at;
	int rc;

	/* header, table and trailer: still those the checkpoint was opened
	 * with (the meta crc covers header and table, file_crc the rest) */
	rc = psi_ckpt_shard_load(sh->path, 0, &again, why, whylen);
	if (rc)
		return rc;
	if (again.meta_crc != sh->meta_crc || again.file_crc != sh->file_crc)
		rc = BAD("%s: changed since the checkpoint was opened",
		         sh->path);
	psi_ckpt_shard_free(&again);
	if (rc)
		return rc;

	is.buf = malloc(VERIFY_BUF);
	if (!is.buf)
		return ps_errf(why, whylen, PS_ENOMEM, "out of memory");
	rc = psi_ckpt_open_regular(sh->path, &is.fd, why, whylen);
	if (rc) {
		if (rc == PS_ENOENT)
			ps_errf(why, whylen, PS_ENOENT, "%s: missing",
			        sh->path);
		goto out;
	}
	/* header and table were checked by the load; the padding after */
	rc = is_span(&is, 0, CK_HEADER_SIZE, false, NULL, why, whylen);
	if (!rc)
		rc = is_span(&is, CK_HEADER_SIZE,
		             (uint64_t)sh->nsegs * CK_ENTRY_SIZE, false, NULL,
		             why, whylen);
	if (!rc)
		rc = is_span(
		    &is, CK_HEADER_SIZE + (uint64_t)sh->nsegs * CK_ENTRY_SIZE,
		    sh->data_at - CK_HEADER_SIZE -
		        (uint64_t)sh->nsegs * CK_ENTRY_SIZE,
		    true, NULL, why, whylen);
	for (uint32_t i = 0; !rc && i < sh->nsegs; i++)
		for (int a = 0; !rc && a < PS_CKPT_NARRAYS; a++)
			if (psi_ckpt_stored(&sh->segs[i], a))
				rc = verify_array(&is, &sh->segs[i], a, &pos,
				                  why, whylen);
	if (!rc && is.crc != sh->file_crc)
		rc = BAD("%s: file checksum mismatch", sh->path);
out:
	if (is.fd >= 0)
		close(is.fd);
	free(is.buf);
	return rc;
}
