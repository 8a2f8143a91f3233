/*
 * checkpoint/checkpoint.h - durable job snapshots, stored per tensor.
 *
 * A checkpoint of iteration V is a directory ROOT/ckpt-<V, 12 digits>/
 * holding one shard file per server that wrote it (shard-<rank>.bin) and,
 * written last and atomically, manifest.json. A directory without a valid
 * manifest is not a checkpoint: readers ignore it and pruning removes it.
 * The format is documented in docs/checkpoint-format.md and versioned
 * (PS_CKPT_FORMAT); every file carries checksums (zlib's crc32).
 *
 * Stored per tensor, not per partition: a shard file is a list of segments,
 * each a run of elements of one tensor (values, the optimizer's momentum
 * and second moment, and the version of the partition it came from). A
 * fused partition gives one segment per tensor it holds. So a checkpoint
 * written by S servers with partition size P can be read back into any
 * other placement: a reader asks for ranges of tensors and gets them from
 * whatever segments cover them.
 *
 * Who calls what:
 *   server     ps_ckpt_write_shard (from a background thread)
 *   scheduler  ps_ckpt_write_manifest once every shard is durable, then
 *              ps_ckpt_prune; ps_ckpt_latest / ps_ckpt_open to resume
 *   server     ps_ckpt_open + ps_ckpt_read_ranges on resume
 *   ps-ckpt    list / show / verify / export
 *
 * Errors: every failing call returns a ps_err and writes into why a message
 * that names the file and the problem ("ckpt-000000000010/shard-1.bin:
 * checksum mismatch in segment 3 (tensor 'fc1.weight' elements 0..4095,
 * second moment)").
 * Codes: PS_ENOENT a file or checkpoint that is not there, PS_ENOTSUP a
 * format version newer than PS_CKPT_FORMAT, PS_EPROTO a damaged or
 * inconsistent file (checksum, size, layout, gap or overlap), PS_EINVAL a
 * bad argument, and errno's mapping (ps_err_from_errno) for system errors
 * (a full disk: PS_EIO, why saying "No space left on device").
 * Nothing is half-written: files are written under a temporary name,
 * fsync'd and renamed, then their directory is fsync'd; on failure the
 * temporary file is removed and every older file is left as it was.
 *
 * Threads: no shared state; calls on different objects may run
 * concurrently. A ps_ckpt is read-only after ps_ckpt_open and may be
 * shared by threads that only read it.
 */
#ifndef ORDO_CHECKPOINT_CHECKPOINT_H
#define ORDO_CHECKPOINT_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "ordo/error.h"
#include "scheduling/placement.h" /* ps_tensor_desc */

#define PS_CKPT_FORMAT 2 /* the format version this code writes */
#define PS_CKPT_MANIFEST "manifest.json"
#define PS_CKPT_PATH_MAX 4096

/* One run of elements of one tensor, as a server holds it. */
typedef struct ps_ckpt_segment {
	uint32_t tensor;  /* index in the job's tensor list */
	uint64_t offset;  /* first element within the tensor */
	uint64_t numel;   /* > 0 */
	uint64_t version; /* updates applied to the partition it came from */
	const float *values;
	const float *momentum; /* NULL: not stored (all zeros) */
	const float *second;   /* NULL: not stored (all zeros) */
} ps_ckpt_segment;

/* The arrays a segment holds, in the order a shard file stores them:
 * the values, the optimizer's first moment (momentum) and its second
 * moment (Adam, AdamW). */
typedef enum ps_ckpt_array {
	PS_CKPT_VALUES = 0,
	PS_CKPT_MOMENTUM = 1,
	PS_CKPT_SECOND = 2,
} ps_ckpt_array;
#define PS_CKPT_NARRAYS 3

/* What the manifest records about the job that wrote the checkpoint. */
typedef struct ps_ckpt_meta {
	uint64_t iteration;     /* iterations completed: training resumes here */
	const char *mode;       /* "sync" or "async" */
	uint32_t workers;       /* the layout that wrote it (informational) */
	uint32_t servers;
	uint64_t partition_size;
	const char *preset;
	int64_t seed;           /* train.seed: with the iteration, the data */
	const char *config_ini; /* the effective configuration, INI text */
} ps_ckpt_meta;

/* ROOT/ckpt-%012llu into buf. PS_EINVAL if it does not fit, or if
 * iteration >= 10^12 (the name would not have 12 digits). */
int ps_ckpt_path(const char *root, uint64_t iteration, char *buf,
		 size_t cap);

/*
 * Writes DIR/shard-RANK.bin for iteration: creates DIR (and its parents)
 * if needed, writes DIR/shard-RANK.bin.tmp, fsyncs it, renames it, fsyncs
 * DIR. Disk full, no permission, ...: the temporary file is removed and
 * the error returned with why naming the path and errno's text.
 */
int ps_ckpt_write_shard(const char *dir, uint32_t rank, uint64_t iteration,
			const ps_ckpt_segment *segs, uint32_t nsegs,
			char *why, size_t whylen);

/*
 * Writes DIR/manifest.json once every shard of the checkpoint is durable:
 * first checks that DIR/shard-R.bin exists for every 0 <= R < nshards, is
 * complete (trailer and checksums of header and segment table), was
 * written for meta->iteration, and that the segments of all shards
 * together cover every element of every tensor exactly once. Then writes
 * manifest.json.tmp, fsync, rename, fsync DIR. The manifest names every
 * shard file (with its size and checksum), the iteration, the model's
 * fingerprint (tensor names and element counts, in order) and meta.
 */
int ps_ckpt_write_manifest(const char *dir, const ps_ckpt_meta *meta,
			   const ps_tensor_desc *tensors, uint32_t ntensors,
			   uint32_t nshards, char *why, size_t whylen);

/* The newest complete checkpoint under root (the highest iteration whose
 * manifest opens without error): its path into buf, its iteration into
 * *iteration_p (may be NULL). PS_ENOENT if there is none. */
int ps_ckpt_latest(const char *root, char *buf, size_t cap,
		   uint64_t *iteration_p);

/* Keeps the newest `keep` (>= 1) complete checkpoints under root and
 * removes the older ones, and removes incomplete directories (no valid
 * manifest) older than the newest complete one. Never touches anything
 * that is not a ckpt-<digits> directory. */
int ps_ckpt_prune(const char *root, uint32_t keep, char *why, size_t whylen);

/* Before a job writes checkpoints under root, resuming at iteration
 * `after` (0: from the start): creates root if needed and checks that it
 * is writable; removes the incomplete ckpt directories above `after`
 * (left by a run that died while writing; their count in *removed_p);
 * and reports in *newer_p the newest complete checkpoint above `after`
 * (0: none) - one of another history, which the caller must not mix with
 * its own. */
int ps_ckpt_prepare_root(const char *root, uint64_t after, uint64_t *newer_p,
			 uint32_t *removed_p, char *why, size_t whylen);

/* ---- reading ------------------------------------------------------------ */

typedef struct ps_ckpt ps_ckpt;

/*
 * Opens the checkpoint in DIR: reads and checks the manifest (format name,
 * format version - a newer one is refused naming both versions - and its
 * checksum) and every shard it names (present, size as recorded, header,
 * segment table and trailer checksums, iteration). Data checksums are
 * checked when data is read (ps_ckpt_read_ranges, ps_ckpt_verify).
 */
int ps_ckpt_open(const char *dir, ps_ckpt **ck_p, char *why, size_t whylen);
void ps_ckpt_close(ps_ckpt **ck_p);

/* The manifest's record (strings owned by ck). */
const ps_ckpt_meta *ps_ckpt_info(const ps_ckpt *ck);
uint32_t ps_ckpt_num_tensors(const ps_ckpt *ck);
const ps_tensor_desc *ps_ckpt_tensors(const ps_ckpt *ck);
uint32_t ps_ckpt_num_shards(const ps_ckpt *ck);
const char *ps_ckpt_dir(const ps_ckpt *ck);

/* PS_OK if the job's tensors are the checkpoint's: same count, names and
 * element counts, in order. Otherwise PS_EINVAL, why naming the first
 * tensor that differs and how ("tensor 3: the checkpoint has 'fc2.weight'
 * (4096 elements), the job 'fc2.bias' (10)"). */
int ps_ckpt_check_model(const ps_ckpt *ck, const ps_tensor_desc *tensors,
			uint32_t n, char *why, size_t whylen);

/* A range of a tensor to read back. */
typedef struct ps_ckpt_range {
	uint32_t tensor;
	uint64_t offset;
	uint64_t numel;
	float *values;    /* receives numel values; NULL: not wanted */
	float *momentum;  /* receives numel values; NULL: not wanted */
	float *second;    /* receives numel values; NULL: not wanted */
	uint64_t version; /* out: the smallest version of the pieces read */
} ps_ckpt_range;

/*
 * Fills every range from the shards (a momentum or second moment that a
 * segment does not store reads as zeros). Each segment that overlaps any
 * range is read once and its checksums verified before anything is copied
 * out of it, so the cost is linear in the bytes of the overlapping segments
 * whatever the number of ranges. (A segment wholly inside the only range
 * that wants it is read straight into that range's buffers and checked
 * there.) Ranges have numel > 0 and may be in any order. A range outside its
 * tensor, a checksum mismatch or a short read is an error naming the file;
 * the destination buffers may then be partly written and must not be used.
 */
int ps_ckpt_read_ranges(const ps_ckpt *ck, ps_ckpt_range *ranges, size_t n,
			char *why, size_t whylen);

/* Reads every byte of every shard and checks every checksum. */
int ps_ckpt_verify(const ps_ckpt *ck, char *why, size_t whylen);

/* Writes one array of a tensor (its values, momentum or second moment)
 * as NumPy's .npy (format 1.0, '<f4', shape (numel,)), atomically.
 * PS_EINVAL for an array that is none of ps_ckpt_array's. */
int ps_ckpt_export_npy(const ps_ckpt *ck, uint32_t tensor,
		       ps_ckpt_array array, const char *path, char *why,
		       size_t whylen);

#endif /* ORDO_CHECKPOINT_CHECKPOINT_H */
