/*
 * checkpoint/checkpoint.c - checkpoints as directories: ps_ckpt_path,
 * ps_ckpt_write_manifest, ps_ckpt_open and its accessors, check_model,
 * ps_ckpt_latest and ps_ckpt_prune. Shard files are checkpoint/shard.c,
 * the manifest checkpoint/manifest.c, reading data checkpoint/read.c.
 *
 * DESIGN: a checkpoint is complete when its manifest is; the manifest is
 * written only after every shard it names was loaded and checked here
 * (header, table, trailer, iteration, rank) and the segments of all of
 * them were found to tile every tensor exactly once. ps_ckpt_open checks
 * the same again plus the manifest's own record of each shard (size,
 * segment count, file checksum), so a reader never trusts a shard file
 * the manifest does not describe exactly. Tiling is checked by sorting
 * every segment by (tensor, offset): O(S log S) for S segments.
 *
 * Pruning, "latest" and ps_ckpt_open consider only entries named
 * ckpt-<12 digits> that are directories themselves (lstat; a symlink is
 * never followed), and a directory is removed by unlinking its entries
 * (never recursing) and then rmdir. The manifest and shards are read only
 * as regular files (psi_ckpt_open_regular: no symlink, no FIFO to wait
 * on).
 *
 * Threads: no shared state; an open ps_ckpt is read-only.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint/internal.h"

#define BAD(...) ps_errf(why, whylen, PS_EPROTO, __VA_ARGS__)

int ps_ckpt_path(const char *root, uint64_t iteration, char *buf, size_t cap)
{
	int n;

	if (!root || !buf || iteration >= CK_ITER_LIMIT)
		return PS_EINVAL;
	n = snprintf(buf, cap, "%s/ckpt-%012" PRIu64, root, iteration);
	return n < 0 || (size_t)n >= cap ? PS_EINVAL : PS_OK;
}

/* ---- tiling ------------------------------------------------------------- */

static int cmp_seg(const void *a, const void *b)
{
	const psi_ckpt_seg *x = *(const psi_ckpt_seg *const *)a;
	const psi_ckpt_seg *y = *(const psi_ckpt_seg *const *)b;

	if (x->tensor != y->tensor)
		return x->tensor < y->tensor ? -1 : 1;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	if (x->shard != y->shard)
		return x->shard < y->shard ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

int psi_ckpt_coverage(const ps_tensor_desc *tensors, uint32_t ntensors,
                      const psi_ckpt_shard *shards, uint32_t n,
                      const psi_ckpt_seg ***order_p, char *why, size_t whylen)
{
	const psi_ckpt_seg **order;
	size_t total = 0, k = 0;
	int rc = PS_OK;

	for (uint32_t i = 0; i < n; i++) {
		for (uint32_t j = 0; j < shards[i].nsegs; j++) {
			const psi_ckpt_seg *s = &shards[i].segs[j];

			if (s->tensor >= ntensors)
				return BAD("%s: segment %u is of tensor %u; "
				           "the model has %u tensors",
				           shards[i].path, j, s->tensor,
				           ntensors);
			if (s->offset + s->numel > tensors[s->tensor].numel)
				return BAD("%s: segment %u: elements "
				           "%" PRIu64 "..%" PRIu64
				           " are outside tensor '%s' "
				           "(%" PRIu64 " elements)",
				           shards[i].path, j, s->offset,
				           s->offset + s->numel - 1,
				           tensors[s->tensor].name,
				           tensors[s->tensor].numel);
		}
		total += shards[i].nsegs;
	}
	order = malloc((total ? total : 1) * sizeof(*order));
	if (!order)
		return ps_errf(why, whylen, PS_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < shards[i].nsegs; j++)
			order[k++] = &shards[i].segs[j];
	qsort(order, total, sizeof(*order), cmp_seg);

	k = 0;
	for (uint32_t t = 0; t < ntensors && !rc; t++) {
		const ps_tensor_desc *td = &tensors[t];
		uint64_t next = 0; /* first element not yet covered */

		for (; k < total && order[k]->tensor == t && !rc; k++) {
			const psi_ckpt_seg *s = order[k];
			const psi_ckpt_seg *prev = k ? order[k - 1] : s;

			if (s->offset > next)
				rc = BAD("tensor %u '%s': elements %" PRIu64
				         "..%" PRIu64 " are in no shard",
				         t, td->name, next, s->offset - 1);
			else if (s->offset < next)
				rc = BAD("tensor %u '%s': element %" PRIu64
				         " is in two segments (%s segment "
				         "%u and %s segment %u)",
				         t, td->name, s->offset,
				         base_name(shards[prev->shard].path),
				         prev->index,
				         base_name(shards[s->shard].path),
				         s->index);
			next = s->offset + s->numel;
		}
		if (!rc && next < td->numel)
			rc = BAD("tensor %u '%s': elements %" PRIu64
			         "..%" PRIu64 " are in no shard",
			         t, td->name, next, td->numel - 1);
	}
	if (rc) {
		free(order);
		return rc;
	}
	*order_p = order;
	return PS_OK;
}

/* ---- writing the manifest ----------------------------------------------- */

static int check_tensors(const ps_tensor_desc *tensors, uint32_t n, char *why,
                         size_t whylen)
{
	if (!tensors || n == 0 || n > PS_MAX_TENSORS)
		return ps_errf(why, whylen, PS_EINVAL,
		               "%u tensors (1 to 2^20 expected)", n);
	for (uint32_t i = 0; i < n; i++)
		if (memchr(tensors[i].name, '\0', PS_NAME_MAX) == NULL ||
		    tensors[i].name[0] == '\0' || tensors[i].numel == 0 ||
		    tensors[i].numel > (uint64_t)INT64_MAX)
			return ps_errf(why, whylen, PS_EINVAL,
			               "tensor %u: invalid name or size", i);
	return PS_OK;
}

static void free_shards(psi_ckpt_shard *shards, uint32_t n)
{
	if (!shards)
		return;
	for (uint32_t i = 0; i < n; i++)
		psi_ckpt_shard_free(&shards[i]);
	free(shards);
}

int ps_ckpt_write_manifest(const char *dir, const ps_ckpt_meta *meta,
                           const ps_tensor_desc *tensors, uint32_t ntensors,
                           uint32_t nshards, char *why, size_t whylen)
{
	char path[PS_CKPT_PATH_MAX];
	const psi_ckpt_seg **order = NULL;
	psi_ckpt_shard *shards;
	int rc;

	if (!dir || !meta || !meta->mode)
		return ps_errf(why, whylen, PS_EINVAL,
		               "no directory, meta or mode");
	if (nshards == 0 || nshards > PS_MAX_SERVERS)
		return ps_errf(why, whylen, PS_EINVAL,
		               "%u shards (1 to %u expected)", nshards,
		               PS_MAX_SERVERS);
	rc = check_tensors(tensors, ntensors, why, whylen);
	if (rc)
		return rc;
	shards = calloc(nshards, sizeof(*shards));
	if (!shards)
		return ps_errf(why, whylen, PS_ENOMEM, "out of memory");
	for (uint32_t r = 0; r < nshards && !rc; r++) {
		rc = psi_ckpt_join(path, sizeof(path), why, whylen,
		                   "%s/shard-%u.bin", dir, r);
		if (!rc)
			rc = psi_ckpt_shard_load(path, r, &shards[r], why,
			                         whylen);
		if (rc)
			break;
		if (shards[r].rank != r)
			rc =
			    BAD("%s: written by rank %u", path, shards[r].rank);
		else if (shards[r].iteration != meta->iteration)
			rc = BAD("%s: written for iteration %" PRIu64
			         ", not %" PRIu64,
			         path, shards[r].iteration, meta->iteration);
	}
	if (!rc)
		rc = psi_ckpt_coverage(tensors, ntensors, shards, nshards,
		                       &order, why, whylen);
	if (!rc)
		rc = psi_ckpt_manifest_write(dir, meta, tensors, ntensors,
		                             shards, nshards, why, whylen);
	free(order);
	free_shards(shards, nshards);
	return rc;
}

/* ---- opening ------------------------------------------------------------ */

/* Loads the shard the manifest records in *rec and checks it is that one;
 * *rec is then replaced by the loaded shard. */
static int open_shard(ps_ckpt *ck, uint32_t i, char *why, size_t whylen)
{
	psi_ckpt_shard *rec = &ck->shards[i], sh;
	int rc = psi_ckpt_shard_load(rec->path, i, &sh, why, whylen);

	if (rc)
		return rc;
	if (sh.bytes != rec->bytes)
		rc = BAD("%s: %" PRIu64 " bytes, the manifest says %" PRIu64,
		         sh.path, sh.bytes, rec->bytes);
	else if (sh.rank != i)
		rc = BAD("%s: written by rank %u", sh.path, sh.rank);
	else if (sh.iteration != ck->meta.iteration)
		rc = BAD("%s: written for iteration %" PRIu64
		         ", the manifest is of %" PRIu64,
		         sh.path, sh.iteration, ck->meta.iteration);
	else if (sh.nsegs != rec->nsegs)
		rc = BAD("%s: %u segments, the manifest says %u", sh.path,
		         sh.nsegs, rec->nsegs);
	else if (sh.file_crc != rec->file_crc)
		rc = BAD("%s: not the file the manifest names (checksum "
		         "%08x, the manifest says %08x)",
		         sh.path, sh.file_crc, rec->file_crc);
	if (rc) {
		psi_ckpt_shard_free(&sh);
		return rc;
	}
	psi_ckpt_shard_free(rec);
	*rec = sh;
	return PS_OK;
}

int ps_ckpt_open(const char *dir, ps_ckpt **ck_p, char *why, size_t whylen)
{
	ps_ckpt *ck;
	int rc;

	if (!dir || !ck_p)
		return ps_errf(why, whylen, PS_EINVAL, "no directory");
	/* as "latest" and pruning: an entry named ckpt-<12 digits> is a
	 * checkpoint only as a directory itself (a path of the user's own
	 * naming, e.g. ckpt/latest, may be a symlink) */
	{
		const char *base = strrchr(dir, '/');
		struct stat st;
		uint64_t it;

		base = base ? base + 1 : dir;
		if (psi_ckpt_parse_name(base, &it) == 0 &&
		    lstat(dir, &st) == 0 && S_ISLNK(st.st_mode))
			return ps_errf(why, whylen, PS_EPROTO,
			               "%s: a symbolic link, not a checkpoint "
			               "directory (a ckpt-<12 digits> entry is "
			               "never followed; name the directory it "
			               "points to)",
			               dir);
	}
	ck = calloc(1, sizeof(*ck));
	if (!ck || !(ck->dir = strdup(dir))) {
		free(ck);
		return ps_errf(why, whylen, PS_ENOMEM, "out of memory");
	}
	rc = psi_ckpt_manifest_load(ck, why, whylen);
	for (uint32_t i = 0; !rc && i < ck->nshards; i++)
		rc = open_shard(ck, i, why, whylen);
	if (!rc)
		rc = psi_ckpt_coverage(ck->tensors, ck->ntensors, ck->shards,
		                       ck->nshards, &ck->order, why, whylen);
	if (rc) {
		ps_ckpt_close(&ck);
		return rc;
	}
	for (uint32_t i = 0; i < ck->nshards; i++)
		ck->nsegs += ck->shards[i].nsegs;
	*ck_p = ck;
	return PS_OK;
}

void ps_ckpt_close(ps_ckpt **ck_p)
{
	ps_ckpt *ck = ck_p ? *ck_p : NULL;

	if (!ck)
		return;
	free_shards(ck->shards, ck->nshards);
	free(ck->order);
	free(ck->tensors);
	free(ck->mode);
	free(ck->preset);
	free(ck->config_ini);
	free(ck->dir);
	free(ck);
	*ck_p = NULL;
}

const ps_ckpt_meta *ps_ckpt_info(const ps_ckpt *ck)
{
	return &ck->meta;
}

uint32_t ps_ckpt_num_tensors(const ps_ckpt *ck)
{
	return ck->ntensors;
}

const ps_tensor_desc *ps_ckpt_tensors(const ps_ckpt *ck)
{
	return ck->tensors;
}

uint32_t ps_ckpt_num_shards(const ps_ckpt *ck)
{
	return ck->nshards;
}

const char *ps_ckpt_dir(const ps_ckpt *ck)
{
	return ck->dir;
}

int ps_ckpt_check_model(const ps_ckpt *ck, const ps_tensor_desc *tensors,
                        uint32_t n, char *why, size_t whylen)
{
	uint32_t common = n < ck->ntensors ? n : ck->ntensors;

	for (uint32_t i = 0; i < common; i++) {
		const ps_tensor_desc *a = &ck->tensors[i], *b = &tensors[i];

		if (strncmp(a->name, b->name, PS_NAME_MAX) != 0 ||
		    a->numel != b->numel)
			return ps_errf(why, whylen, PS_EINVAL,
			               "tensor %u: the checkpoint has "
			               "'%s' (%" PRIu64
			               " elements), the job '%.*s' "
			               "(%" PRIu64 ")",
			               i, a->name, a->numel, PS_NAME_MAX - 1,
			               b->name, b->numel);
	}
	if (n < ck->ntensors)
		return ps_errf(why, whylen, PS_EINVAL,
		               "tensor %u: the checkpoint has '%s' "
		               "(%" PRIu64 " elements), the job has "
		               "only %u tensors",
		               n, ck->tensors[n].name, ck->tensors[n].numel, n);
	if (n > ck->ntensors)
		return ps_errf(why, whylen, PS_EINVAL,
		               "tensor %u: the job has '%.*s' "
		               "(%" PRIu64 " elements), the checkpoint "
		               "only %u tensors",
		               ck->ntensors, PS_NAME_MAX - 1,
		               tensors[ck->ntensors].name,
		               tensors[ck->ntensors].numel, ck->ntensors);
	return PS_OK;
}

/* ---- the checkpoints under a root --------------------------------------- */

int psi_ckpt_probe(const char *path, uint64_t iteration, char *why,
                   size_t whylen)
{
	ps_ckpt *ck;
	int rc = ps_ckpt_open(path, &ck, why, whylen);

	if (rc)
		return rc;
	if (ck->meta.iteration != iteration)
		rc = BAD("%s: holds iteration %" PRIu64 ", its name says "
		         "%" PRIu64,
		         path, ck->meta.iteration, iteration);
	ps_ckpt_close(&ck);
	return rc;
}

int ps_ckpt_latest(const char *root, char *buf, size_t cap,
                   uint64_t *iteration_p)
{
	char path[PS_CKPT_PATH_MAX], why[16];
	uint64_t *iters;
	size_t n;
	int rc;

	if (!root || !buf)
		return PS_EINVAL;
	rc = psi_ckpt_scan(root, &iters, &n, why, sizeof(why));
	if (rc)
		return rc;
	rc = PS_ENOENT;
	for (size_t i = n; i-- > 0;) {
		if (ps_ckpt_path(root, iters[i], path, sizeof(path)) != PS_OK ||
		    psi_ckpt_probe(path, iters[i], why, sizeof(why)) != PS_OK)
			continue;
		if (strlen(path) >= cap) {
			rc = PS_EINVAL;
		} else {
			strcpy(buf, path);
			if (iteration_p)
				*iteration_p = iters[i];
			rc = PS_OK;
		}
		break;
	}
	free(iters);
	return rc;
}

/* Unlinks every entry of the directory path (never recursing, never
 * following a symlink), then removes it. */
static int remove_dir(const char *path, char *why, size_t whylen)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct dirent *de;
	DIR *d;
	int rc = PS_OK;

	if (fd < 0)
		return psi_ckpt_sys_fail(why, whylen, errno, path, "open");
	d = fdopendir(fd);
	if (!d) {
		rc = psi_ckpt_sys_fail(why, whylen, errno, path, "opendir");
		close(fd);
		return rc;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (unlinkat(fd, de->d_name, 0) != 0 && rc == PS_OK) {
			char what[300];

			snprintf(what, sizeof(what), "cannot remove '%s'",
			         de->d_name);
			rc = psi_ckpt_sys_fail(why, whylen, errno, path, what);
		}
	}
	closedir(d);
	if (rc == PS_OK && rmdir(path) != 0)
		rc = psi_ckpt_sys_fail(why, whylen, errno, path, "rmdir");
	return rc;
}

int ps_ckpt_prune(const char *root, uint32_t keep, char *why, size_t whylen)
{
	char path[PS_CKPT_PATH_MAX], skip[16];
	uint64_t *iters;
	unsigned char *complete;
	size_t n, kept = 0, newest = SIZE_MAX;
	int rc, first = PS_OK;

	if (!root || keep == 0)
		return ps_errf(why, whylen, PS_EINVAL,
		               "prune: no root, or keep = 0");
	rc = psi_ckpt_scan(root, &iters, &n, why, whylen);
	if (rc)
		return rc;
	complete = calloc(n ? n : 1, 1);
	if (!complete) {
		free(iters);
		return ps_errf(why, whylen, PS_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		complete[i] =
		    ps_ckpt_path(root, iters[i], path, sizeof(path)) == PS_OK &&
		    psi_ckpt_probe(path, iters[i], skip, sizeof(skip)) == PS_OK;
		if (complete[i])
			newest = i;
	}
	/* newest first: keep `keep` complete ones; remove older complete
	 * ones and every incomplete one older than the newest complete */
	for (size_t i = n; newest != SIZE_MAX && i-- > 0;) {
		if (complete[i] && kept < keep) {
			kept++;
			continue;
		}
		if (!complete[i] && i > newest)
			continue;
		if (ps_ckpt_path(root, iters[i], path, sizeof(path)) != PS_OK)
			continue;
		rc = remove_dir(path, first ? skip : why,
		                first ? sizeof(skip) : whylen);
		if (rc && !first)
			first = rc;
	}
	free(complete);
	free(iters);
	return first;
}

int ps_ckpt_prepare_root(const char *root, uint64_t after,
                         uint64_t *newer_p, uint32_t *removed_p, char *why,
                         size_t whylen)
{
	char path[PS_CKPT_PATH_MAX], skip[16];
	uint64_t *iters;
	size_t n;
	int rc;

	*newer_p = 0;
	*removed_p = 0;
	rc = psi_ckpt_mkdirs(root, why, whylen);
	if (rc)
		return rc;
	if (access(root, W_OK | X_OK) != 0)
		return psi_ckpt_sys_fail(why, whylen, errno, root,
		                         "cannot write");
	rc = psi_ckpt_scan(root, &iters, &n, why, whylen);
	if (rc)
		return rc;
	for (size_t i = 0; i < n && rc == PS_OK; i++) {
		if (iters[i] <= after ||
		    ps_ckpt_path(root, iters[i], path, sizeof(path)) != PS_OK)
			continue;
		if (psi_ckpt_probe(path, iters[i], skip, sizeof(skip)) ==
		    PS_OK) {
			*newer_p = iters[i];
			continue;
		}
		rc = remove_dir(path, why, whylen);
		*removed_p += rc == PS_OK;
	}
	free(iters);
	return rc;
}
