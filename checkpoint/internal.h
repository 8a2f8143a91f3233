/*
 * checkpoint/internal.h - what the files of checkpoint/ share: the shard
 * file layout (docs/checkpoint-format.md), a decoded shard, the body of a
 * ps_ckpt, and the file helpers. Not installed; ps-ckpt includes it too.
 *
 * Threads: as checkpoint.h (no shared state).
 */
#ifndef ORDO_CHECKPOINT_INTERNAL_H
#define ORDO_CHECKPOINT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/errbuf.h"
#include "checkpoint/checkpoint.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error                                                                         \
    "checkpoint files hold float32 arrays as stored in memory: little-endian hosts only"
#endif

/* ---- the shard file (docs/checkpoint-format.md) ------------------------- */

#define CK_ALIGN        64u /* header, table, every array, trailer */
#define CK_HEADER_SIZE  64u
#define CK_ENTRY_SIZE   64u /* one segment in the table */
#define CK_TRAILER_SIZE 32u
#define CK_MAGIC        "ORDOCKPT" /* 8 bytes, no NUL */
#define CK_TAIL_MAGIC   "ORDOTAIL"
/* Entry flags: which arrays besides the values are stored (else zeros);
 * array a >= 1 has bit a - 1. */
#define CK_SEG_FLAG(a)  (1u << ((a)-1))
#define CK_SEG_MOMENTUM CK_SEG_FLAG(PS_CKPT_MOMENTUM)
#define CK_SEG_SECOND   CK_SEG_FLAG(PS_CKPT_SECOND) /* format 2 on */
#define CK_ITER_LIMIT   1000000000000ull /* 10^12: ckpt-<12 digits> */

/* One segment as the table records it; its arrays indexed by
 * ps_ckpt_array. */
typedef struct psi_ckpt_seg {
	uint32_t tensor;
	uint32_t flags; /* CK_SEG_MOMENTUM, CK_SEG_SECOND */
	uint64_t offset;
	uint64_t numel;
	uint64_t version;
	uint64_t at[PS_CKPT_NARRAYS];  /* byte offset in the file; 0: not
	                                  stored (the second moment's is
	                                  computed, not read from the table) */
	uint32_t crc[PS_CKPT_NARRAYS]; /* 0: not stored */
	uint32_t shard; /* index of the shard in its list (not stored) */
	uint32_t index; /* index in the shard's table (not stored) */
} psi_ckpt_seg;

/* Whether s stores array a (the values always; the others by flag). */
static inline bool psi_ckpt_stored(const psi_ckpt_seg *s, int a)
{
	return a == PS_CKPT_VALUES || (s->flags & CK_SEG_FLAG(a));
}

/* "values", "momentum" or "second moment". */
const char *psi_ckpt_array_name(int a);

/* A shard file whose header, table and trailer were read and checked. */
typedef struct psi_ckpt_shard {
	char *path;
	uint32_t rank;
	uint32_t format; /* the header's format version */
	uint32_t nsegs;
	uint64_t iteration;
	uint64_t bytes;      /* the file's size */
	uint64_t data_at;    /* first byte after header, table and padding */
	uint64_t trailer_at; /* bytes - CK_TRAILER_SIZE */
	uint32_t meta_crc;   /* crc32 of header and table */
	uint32_t file_crc;   /* crc32 of bytes [0, trailer_at), as recorded */
	psi_ckpt_seg *segs;
} psi_ckpt_shard;

/* Reads and checks path's header, table and trailer (not the data; not
 * the tensors, which the shard does not know) into *sh; shard_index goes
 * into every segment's .shard. PS_ENOENT if the file does not exist,
 * PS_EPROTO if it is damaged, PS_ENOTSUP for a newer format version. */
int psi_ckpt_shard_load(const char *path, uint32_t shard_index,
                        psi_ckpt_shard *sh, char *why, size_t whylen);
/* Reads every byte of the shard: every crc32, zero padding, and the
 * header, table and trailer still those that were loaded. */
int psi_ckpt_shard_verify(const psi_ckpt_shard *sh,
                          const ps_tensor_desc *tensors, uint32_t ntensors,
                          char *why, size_t whylen);
/* "segment 3 (tensor 'fc1.weight' elements 0..4095, second moment)"
 * into buf for array a of s (tensors may be NULL: the index instead of
 * the name); returns buf. */
const char *psi_ckpt_describe(char *buf, size_t cap, const psi_ckpt_seg *s,
                              int a, const ps_tensor_desc *tensors,
                              uint32_t ntensors);
void psi_ckpt_shard_free(psi_ckpt_shard *sh);

/* Checks every segment of shards[0..n) against the tensors (index and
 * range) and that together they cover every element of every tensor
 * exactly once. On success *order_p (free()) lists the segments sorted by
 * (tensor, offset). PS_EPROTO naming the first problem otherwise. */
int psi_ckpt_coverage(const ps_tensor_desc *tensors, uint32_t ntensors,
                      const psi_ckpt_shard *shards, uint32_t n,
                      const psi_ckpt_seg ***order_p, char *why, size_t whylen);

/* ---- the manifest ------------------------------------------------------- */

struct ps_ckpt {
	char *dir;
	ps_ckpt_meta meta; /* strings point into the three below */
	char *mode, *preset, *config_ini;
	ps_tensor_desc *tensors;
	uint32_t ntensors;
	psi_ckpt_shard *shards; /* as the manifest lists them, rank order */
	uint32_t nshards;
	const psi_ckpt_seg **order; /* every segment, by (tensor, offset) */
	size_t nsegs;
	uint32_t manifest_crc;
};

/* Writes DIR/manifest.json for shards[0..nshards) (already checked). */
int psi_ckpt_manifest_write(const char *dir, const ps_ckpt_meta *meta,
                            const ps_tensor_desc *tensors, uint32_t ntensors,
                            const psi_ckpt_shard *shards, uint32_t nshards,
                            char *why, size_t whylen);
/* Reads DIR/manifest.json into ck (dir set by the caller): meta, tensors,
 * manifest_crc, and ck->shards with path, rank, bytes, nsegs and file_crc
 * as recorded (the caller loads the files and compares). */
int psi_ckpt_manifest_load(struct ps_ckpt *ck, char *why, size_t whylen);

/* ---- directories -------------------------------------------------------- */

/* The iteration of a ckpt-<12 digits> name, or -1 for any other name. */
int psi_ckpt_parse_name(const char *name, uint64_t *iteration_p);
/* The iterations of root's ckpt-<12 digits> entries that are directories
 * (not symlinks), ascending, into *iters_p (free()). */
int psi_ckpt_scan(const char *root, uint64_t **iters_p, size_t *n_p, char *why,
                  size_t whylen);

/* Opens the checkpoint in path and checks that it holds iteration (the
 * one its name says): PS_OK if it is complete. */
int psi_ckpt_probe(const char *path, uint64_t iteration, char *why,
                   size_t whylen);

/* ---- files -------------------------------------------------------------- */

/* "PATH: WHAT: strerror(errnum)" into why; returns errnum's ps_err. */
int psi_ckpt_sys_fail(char *why, size_t whylen, int errnum, const char *path,
                      const char *what);

/* Opens path for reading only if it is a regular file: never following a
 * symlink, never waiting on a FIFO (O_NONBLOCK until fstat says it is
 * regular). PS_OK with *fd_p; PS_ENOENT (nothing in why) when there is
 * no such file; else an error naming path ("not a regular file"). */
int psi_ckpt_open_regular(const char *path, int *fd_p, char *why,
                          size_t whylen);

/* zlib's crc32 over n bytes, in pieces that fit its uInt lengths. */
uint32_t psi_ckpt_crc(uint32_t crc, const void *p, uint64_t n);

/* pwrite/pread of all n bytes at off, through EINTR and short transfers.
 * 0 when all n were moved; -1 with errno set on an error (a write that
 * moves nothing: ENOSPC). pread_all returns 1 when the file ends first,
 * with the bytes it did read in *got (may be NULL). */
int psi_ckpt_pwrite_all(int fd, const void *p, uint64_t n, uint64_t off);
int psi_ckpt_pread_all(int fd, void *p, uint64_t n, uint64_t off,
                       uint64_t *got);

/* Reads n bytes at off: PS_OK, or the error naming path (a short read:
 * PS_EPROTO, truncated). */
int psi_ckpt_read_at(int fd, void *p, uint64_t n, uint64_t off,
                     const char *path, char *why, size_t whylen);

/* Creates dir and its parents (0755). */
int psi_ckpt_mkdirs(const char *dir, char *why, size_t whylen);

/* Opens tmp for writing (created, truncated, 0644): the fd, or -1 with
 * why set and *err_p the error. */
int psi_ckpt_create_tmp(const char *tmp, int *err_p, char *why, size_t whylen);
/* Makes a written tmp file durable as path: fsync, close, rename, fsync
 * of path's directory. On failure removes tmp. Always closes fd. */
int psi_ckpt_commit(int fd, const char *tmp, const char *path, char *why,
                    size_t whylen);
/* Closes fd and removes tmp after a failed write; returns err. */
int psi_ckpt_abandon(int fd, const char *tmp, int err);

/* fsync of a directory. 0 or -1 with errno. */
int psi_ckpt_fsync_dir(const char *dir);

/* snprintf into buf that fails (PS_EINVAL, why set) when it truncates. */
int psi_ckpt_join(char *buf, size_t cap, char *why, size_t whylen,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif /* ORDO_CHECKPOINT_INTERNAL_H */
