/*
 * checkpoint/read.c - reading data back: ps_ckpt_read_ranges,
 * ps_ckpt_verify and ps_ckpt_export_npy.
 *
 * DESIGN (read_ranges): the ranges are sorted by (tensor, offset) and
 * given, within each tensor, the running maximum of their ends; the
 * segments are already sorted (ps_ckpt_open). For each segment a binary
 * search finds the first range that can reach it, and a scan from there
 * the ranges it overlaps. Segments that no range wants are never read.
 * The wanted ones are then read in file order (by shard, then offset),
 * one file open at a time, each array once, its crc32 checked before a
 * value is copied out. A segment that lies wholly inside the one range
 * that wants it is read straight into that range's buffer (no copy).
 * Cost: O((S + R) log R) to plan, plus the bytes of the wanted segments.
 *
 * Threads: no shared state; ck is only read.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint/internal.h"
#include "common/memory.h"

/* A range, sorted; maxend: the largest end of the tensor's ranges up to
 * and including this one (non-decreasing within a tensor). */
typedef struct rkey {
	uint32_t tensor;
	uint64_t off, end, maxend;
	size_t idx;
} rkey;

/* A segment to read, and the first range key that can overlap it. */
typedef struct job {
	const psi_ckpt_seg *seg;
	size_t first;
	unsigned want;         /* bit a: some range wants array a */
	ps_ckpt_range *direct; /* the one range that holds all of it */
} job;

static int cmp_rkey(const void *a, const void *b)
{
	const rkey *x = a, *y = b;

	if (x->tensor != y->tensor)
		return x->tensor < y->tensor ? -1 : 1;
	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

static int cmp_job(const void *a, const void *b)
{
	const psi_ckpt_seg *x = ((const job *)a)->seg,
	                   *y = ((const job *)b)->seg;

	if (x->shard != y->shard)
		return x->shard < y->shard ? -1 : 1;
	return x->at[PS_CKPT_VALUES] < y->at[PS_CKPT_VALUES]
	           ? -1
	           : x->at[PS_CKPT_VALUES] > y->at[PS_CKPT_VALUES];
}

/* The first key that can overlap a segment starting at (tensor, off). */
static size_t first_key(const rkey *keys, size_t n, uint32_t tensor,
                        uint64_t off)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (keys[mid].tensor < tensor ||
		    (keys[mid].tensor == tensor && keys[mid].maxend <= off))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Whether keys[k] (k < n) starts within s's tensor before s ends: the
 * scan from first_key() goes on while this holds. */
static bool reaches(const rkey *keys, size_t n, size_t k, const psi_ckpt_seg *s)
{
	return k < n && keys[k].tensor == s->tensor &&
	       keys[k].off < s->offset + s->numel;
}

typedef struct reader {
	const ps_ckpt *ck;
	ps_ckpt_range *ranges;
	rkey *keys;
	size_t nkeys;
	uint64_t *filled; /* per range */
	int fd;
	uint32_t fd_shard;
	float *buf[PS_CKPT_NARRAYS]; /* a segment's arrays */
	size_t cap[PS_CKPT_NARRAYS]; /* bytes */
	char *why;
	size_t whylen;
} reader;

static int check_ranges(const ps_ckpt *ck, const ps_ckpt_range *ranges,
                        size_t n, char *why, size_t whylen)
{
	for (size_t i = 0; i < n; i++) {
		const ps_ckpt_range *r = &ranges[i];

		if (r->tensor >= ck->ntensors)
			return ps_errf(why, whylen, PS_EINVAL,
			               "%s: range %zu: tensor %u; the "
			               "checkpoint has %u tensors",
			               ck->dir, i, r->tensor, ck->ntensors);
		if (r->numel == 0 || r->offset > ck->tensors[r->tensor].numel ||
		    r->numel > ck->tensors[r->tensor].numel - r->offset)
			return ps_errf(why, whylen, PS_EINVAL,
			               "%s: range %zu: %" PRIu64
			               " elements from "
			               "%" PRIu64 " are not within tensor '%s' "
			               "(%" PRIu64 " elements)",
			               ck->dir, i, r->numel, r->offset,
			               ck->tensors[r->tensor].name,
			               ck->tensors[r->tensor].numel);
	}
	return PS_OK;
}

/* Where r receives array a (ps_ckpt_array), or NULL for no such array. */
static float **slot(ps_ckpt_range *r, int a)
{
	switch (a) {
	case PS_CKPT_VALUES:
		return &r->values;
	case PS_CKPT_MOMENTUM:
		return &r->momentum;
	case PS_CKPT_SECOND:
		return &r->second;
	default:
		return NULL;
	}
}

/* Grows *buf to bytes. */
static int reserve(float **buf, size_t *cap, uint64_t bytes)
{
	float *more;

	if (bytes <= *cap)
		return 0;
	if (bytes > SIZE_MAX)
		return -1;
	more = malloc((size_t)bytes);
	if (!more)
		return -1;
	free(*buf);
	*buf = more;
	*cap = (size_t)bytes;
	return 0;
}

/* Reads array a of s into dst and checks its crc32. */
static int read_array(reader *rd, const psi_ckpt_seg *s, int a, float *dst)
{
	const psi_ckpt_shard *sh = &rd->ck->shards[s->shard];
	uint64_t bytes = s->numel * PS_ELEM_SIZE;
	char what[PS_NAME_MAX + 128];
	int rc;

	if (rd->fd < 0 || rd->fd_shard != s->shard) {
		if (rd->fd >= 0)
			close(rd->fd);
		rc = psi_ckpt_open_regular(sh->path, &rd->fd, rd->why,
		                           rd->whylen);
		rd->fd_shard = s->shard;
		if (rc == PS_ENOENT)
			return ps_errf(rd->why, rd->whylen, PS_ENOENT,
			               "%s: missing", sh->path);
		if (rc)
			return rc;
	}
	rc = psi_ckpt_read_at(rd->fd, dst, bytes, s->at[a], sh->path, rd->why,
	                      rd->whylen);
	if (rc)
		return rc;
	if (psi_ckpt_crc(0, dst, bytes) != s->crc[a])
		return ps_errf(rd->why, rd->whylen, PS_EPROTO,
		               "%s: checksum mismatch in %s", sh->path,
		               psi_ckpt_describe(what, sizeof(what), s, a,
		                                 rd->ck->tensors,
		                                 rd->ck->ntensors));
	return PS_OK;
}

/* Reads array a of s into the reader's buffer for it: *out. */
static int load(reader *rd, const psi_ckpt_seg *s, int a, const float **out)
{
	uint64_t bytes = s->numel * PS_ELEM_SIZE;
	int rc;

	if (reserve(&rd->buf[a], &rd->cap[a], bytes) != 0)
		return ps_errf(rd->why, rd->whylen, PS_ENOMEM,
		               "%s: out of memory for a segment of "
		               "%" PRIu64 " bytes",
		               rd->ck->shards[s->shard].path, bytes);
	rc = read_array(rd, s, a, rd->buf[a]);
	if (rc == PS_OK)
		*out = rd->buf[a];
	return rc;
}

/* Reads what job j wants and copies it into every range it overlaps. */
static int do_job(reader *rd, const job *j)
{
	const psi_ckpt_seg *s = j->seg;
	uint64_t bytes = s->numel * PS_ELEM_SIZE;
	const float *src[PS_CKPT_NARRAYS] = {NULL}; /* NULL: zeros */
	int rc;

	if (j->direct) {
		ps_ckpt_range *r = j->direct;
		uint64_t at = s->offset - r->offset;

		for (int a = 0; a < PS_CKPT_NARRAYS; a++) {
			float *dst = *slot(r, a);

			if (!dst)
				continue;
			if (!psi_ckpt_stored(s, a)) {
				memset(dst + at, 0, (size_t)bytes);
				continue;
			}
			rc = read_array(rd, s, a, dst + at);
			if (rc)
				return rc;
		}
		rd->filled[r - rd->ranges] += s->numel;
		if (s->version < r->version)
			r->version = s->version;
		return PS_OK;
	}
	for (int a = 0; a < PS_CKPT_NARRAYS; a++) {
		if (!(j->want & (1u << a)) || !psi_ckpt_stored(s, a))
			continue;
		rc = load(rd, s, a, &src[a]);
		if (rc)
			return rc;
	}
	for (size_t k = j->first; reaches(rd->keys, rd->nkeys, k, s); k++) {
		ps_ckpt_range *r = &rd->ranges[rd->keys[k].idx];
		uint64_t lo = r->offset > s->offset ? r->offset : s->offset;
		uint64_t hi = rd->keys[k].end < s->offset + s->numel
		                  ? rd->keys[k].end
		                  : s->offset + s->numel;
		size_t len;

		if (rd->keys[k].end <= s->offset)
			continue; /* ends before s (reached by maxend) */
		len = (size_t)(hi - lo) * PS_ELEM_SIZE;
		for (int a = 0; a < PS_CKPT_NARRAYS; a++) {
			float *dst = *slot(r, a);

			if (!dst)
				continue;
			if (src[a])
				memcpy(dst + (lo - r->offset),
				       src[a] + (lo - s->offset), len);
			else
				memset(dst + (lo - r->offset), 0, len);
		}
		rd->filled[rd->keys[k].idx] += hi - lo;
		if (s->version < r->version)
			r->version = s->version;
	}
	return PS_OK;
}

/* The segments some range wants, in file order, into *jobs_p. */
static int plan(reader *rd, job **jobs_p, size_t *njobs_p)
{
	const ps_ckpt *ck = rd->ck;
	job *jobs = malloc((ck->nsegs ? ck->nsegs : 1) * sizeof(*jobs));
	size_t nj = 0;

	if (!jobs)
		return PS_ENOMEM;
	for (size_t i = 0; i < ck->nsegs; i++) {
		const psi_ckpt_seg *s = ck->order[i];
		size_t first =
		    first_key(rd->keys, rd->nkeys, s->tensor, s->offset);
		job j = {.seg = s, .first = first};
		size_t hits = 0;

		for (size_t k = first; reaches(rd->keys, rd->nkeys, k, s);
		     k++) {
			ps_ckpt_range *r = &rd->ranges[rd->keys[k].idx];

			if (rd->keys[k].end <= s->offset)
				continue;
			for (int a = 0; a < PS_CKPT_NARRAYS; a++)
				if (*slot(r, a))
					j.want |= 1u << a;
			j.direct =
			    r->offset <= s->offset &&
			            rd->keys[k].end >= s->offset + s->numel
			        ? r
			        : NULL;
			hits++;
		}
		if (hits == 0)
			continue;
		if (hits > 1)
			j.direct = NULL;
		jobs[nj++] = j;
	}
	qsort(jobs, nj, sizeof(*jobs), cmp_job);
	*jobs_p = jobs;
	*njobs_p = nj;
	return PS_OK;
}

int ps_ckpt_read_ranges(const ps_ckpt *ck, ps_ckpt_range *ranges, size_t n,
                        char *why, size_t whylen)
{
	reader rd = {
	    .ck = ck, .ranges = ranges, .fd = -1, .why = why, .whylen = whylen};
	job *jobs = NULL;
	size_t njobs = 0;
	int rc;

	if (!ck || (n && !ranges))
		return ps_errf(why, whylen, PS_EINVAL,
		               "no checkpoint "
		               "or ranges");
	rc = check_ranges(ck, ranges, n, why, whylen);
	if (rc)
		return rc;
	rd.keys = malloc((n ? n : 1) * sizeof(*rd.keys));
	rd.filled = calloc(n ? n : 1, sizeof(*rd.filled));
	if (!rd.keys || !rd.filled) {
		rc = ps_errf(why, whylen, PS_ENOMEM, "out of memory");
		goto out;
	}
	rd.nkeys = n;
	for (size_t i = 0; i < n; i++) {
		ranges[i].version = UINT64_MAX;
		rd.keys[i] = (rkey){.tensor = ranges[i].tensor,
		                    .off = ranges[i].offset,
		                    .end = ranges[i].offset + ranges[i].numel,
		                    .idx = i};
	}
	qsort(rd.keys, n, sizeof(*rd.keys), cmp_rkey);
	for (size_t i = 0; i < n; i++) {
		rkey *k = &rd.keys[i];

		k->maxend = k->end;
		if (i > 0 && k[-1].tensor == k->tensor && k[-1].maxend > k->end)
			k->maxend = k[-1].maxend;
	}
	rc = plan(&rd, &jobs, &njobs);
	if (rc) {
		ps_errf(why, whylen, rc, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < njobs && !rc; i++)
		rc = do_job(&rd, &jobs[i]);
	for (size_t i = 0; i < n && !rc; i++)
		if (rd.filled[i] != ranges[i].numel)
			rc = ps_errf(why, whylen, PS_EPROTO,
			             "%s: range %zu (tensor '%s' "
			             "elements %" PRIu64 "..%" PRIu64
			             "): %" PRIu64 " elements found, "
			             "not %" PRIu64,
			             ck->dir, i,
			             ck->tensors[ranges[i].tensor].name,
			             ranges[i].offset,
			             ranges[i].offset + ranges[i].numel - 1,
			             rd.filled[i], ranges[i].numel);
out:
	if (rd.fd >= 0)
		close(rd.fd);
	for (int a = 0; a < PS_CKPT_NARRAYS; a++)
		free(rd.buf[a]);
	free(jobs);
	free(rd.keys);
	free(rd.filled);
	return rc;
}

int ps_ckpt_verify(const ps_ckpt *ck, char *why, size_t whylen)
{
	ps_ckpt *again;
	int rc;

	if (!ck)
		return ps_errf(why, whylen, PS_EINVAL, "no checkpoint");
	/* the manifest and every shard's header, table and trailer, read
	 * again; then every byte of every shard */
	rc = ps_ckpt_open(ck->dir, &again, why, whylen);
	if (rc)
		return rc;
	if (again->manifest_crc != ck->manifest_crc)
		rc = ps_errf(why, whylen, PS_EPROTO,
		             "%s/%s: changed since the checkpoint was "
		             "opened",
		             ck->dir, PS_CKPT_MANIFEST);
	ps_ckpt_close(&again);
	for (uint32_t i = 0; !rc && i < ck->nshards; i++)
		rc = psi_ckpt_shard_verify(&ck->shards[i], ck->tensors,
		                           ck->ntensors, why, whylen);
	return rc;
}

/* ---- .npy --------------------------------------------------------------- */

/* NumPy's format 1.0 header for a float32 vector into buf (128 bytes
 * suffice); returns its length, a multiple of 64. */
static size_t npy_header(char *buf, uint64_t numel)
{
	char dict[96];
	int dlen = snprintf(dict, sizeof(dict),
	                    "{'descr': '<f4', 'fortran_order': False, "
	                    "'shape': (%" PRIu64 ",), }",
	                    numel);
	size_t total = 10 + (size_t)dlen + 1, hlen;

	total = (total + 63) / 64 * 64;
	hlen = total - 10;
	memcpy(buf, "\x93NUMPY\x01\x00", 8);
	buf[8] = (char)(hlen & 0xff);
	buf[9] = (char)(hlen >> 8);
	memcpy(buf + 10, dict, (size_t)dlen);
	memset(buf + 10 + dlen, ' ', hlen - (size_t)dlen - 1);
	buf[total - 1] = '\n';
	return total;
}

int ps_ckpt_export_npy(const ps_ckpt *ck, uint32_t tensor, ps_ckpt_array array,
                       const char *path, char *why, size_t whylen)
{
	char tmp[PS_CKPT_PATH_MAX], header[128];
	ps_ckpt_range r = {.tensor = tensor, .offset = 0};
	float **dst = slot(&r, (int)array);
	uint64_t bytes;
	size_t hlen;
	float *buf;
	int rc, fd;

	if (!ck || !path)
		return ps_errf(why, whylen, PS_EINVAL, "no checkpoint or path");
	if (!dst)
		return ps_errf(why, whylen, PS_EINVAL,
		               "array %d: not values (%d), momentum (%d) or "
		               "second moment (%d)",
		               (int)array, PS_CKPT_VALUES, PS_CKPT_MOMENTUM,
		               PS_CKPT_SECOND);
	if (tensor >= ck->ntensors)
		return ps_errf(why, whylen, PS_EINVAL,
		               "%s: tensor %u; the checkpoint has %u", ck->dir,
		               tensor, ck->ntensors);
	rc = psi_ckpt_join(tmp, sizeof(tmp), why, whylen, "%s.tmp", path);
	if (rc)
		return rc;
	r.numel = ck->tensors[tensor].numel;
	bytes = r.numel * PS_ELEM_SIZE;
	buf = bytes <= SIZE_MAX ? ps_alloc_big((size_t)bytes) : NULL;
	if (!buf)
		return ps_errf(why, whylen, PS_ENOMEM,
		               "out of memory for tensor '%s' "
		               "(%" PRIu64 " bytes)",
		               ck->tensors[tensor].name, bytes);
	*dst = buf;
	rc = ps_ckpt_read_ranges(ck, &r, 1, why, whylen);
	if (rc)
		goto out;
	hlen = npy_header(header, r.numel);
	fd = psi_ckpt_create_tmp(tmp, &rc, why, whylen);
	if (fd < 0)
		goto out;
	if (psi_ckpt_pwrite_all(fd, header, hlen, 0) != 0 ||
	    psi_ckpt_pwrite_all(fd, buf, bytes, hlen) != 0)
		rc = psi_ckpt_abandon(
		    fd, tmp,
		    psi_ckpt_sys_fail(why, whylen, errno, tmp, "write"));
	else
		rc = psi_ckpt_commit(fd, tmp, path, why, whylen);
out:
	ps_free_big(buf, (size_t)bytes);
	return rc;
}
