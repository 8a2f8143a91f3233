/*
 * checkpoint/manifest.c - manifest.json (docs/checkpoint-format.md): the
 * writer and the strict reader.
 *
 * DESIGN: the manifest holds only strings, integers, arrays and objects,
 * so jansson re-serialises what it parsed byte for byte the same. Its
 * checksum ("crc32") is zlib's crc32 of the canonical form of every other
 * member: json_dumps(JSON_COMPACT | JSON_SORT_KEYS). The file itself is
 * indented for people; the reader drops "crc32", dumps the rest the same
 * way and compares. The format name and version are checked before the
 * checksum: a newer version may checksum differently, and "newer" is the
 * message its reader needs. Every member is then checked for presence,
 * type and range, and every error names the file and the member's path
 * ("layout.servers", "shards[1].bytes"). Unknown members are ignored
 * (covered by the checksum all the same).
 *
 * Threads: no shared state.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "checkpoint/internal.h"

#define FORMAT_NAME  "ordo-checkpoint"
#define CANONICAL    (JSON_COMPACT | JSON_SORT_KEYS)
#define MANIFEST_MAX (1ull << 30) /* bytes: far above any real manifest */
#define SHARD_NAME   "shard-%u.bin"

/* crc32 of the canonical serialisation of obj. */
static int canonical_crc(const json_t *obj, uint32_t *crc_p)
{
	char *text = json_dumps(obj, CANONICAL);

	if (!text)
		return PS_ENOMEM;
	*crc_p = psi_ckpt_crc(0, text, strlen(text));
	free(text);
	return PS_OK;
}

/* ---- writing ------------------------------------------------------------ */

/* Adds key = val to obj (val may be NULL: then *bad is set). */
static void set(json_t *obj, const char *key, json_t *val, int *bad)
{
	if (json_object_set_new(obj, key, val) != 0)
		*bad = 1;
}

static void append(json_t *arr, json_t *val, int *bad)
{
	if (json_array_append_new(arr, val) != 0)
		*bad = 1;
}

/* A json integer, or NULL (refused by set) above INT64_MAX. */
static json_t *uint_json(uint64_t v)
{
	return v > INT64_MAX ? NULL : json_integer((json_int_t)v);
}

static json_t *build(const ps_ckpt_meta *meta, const ps_tensor_desc *tensors,
                     uint32_t ntensors, const psi_ckpt_shard *shards,
                     uint32_t nshards)
{
	json_t *root = json_object(), *layout = json_object();
	json_t *tl = json_array(), *sl = json_array();
	int bad = !root || !layout || !tl || !sl;

	for (uint32_t i = 0; i < ntensors && !bad; i++) {
		json_t *t = json_object();

		set(t, "name", json_string(tensors[i].name), &bad);
		set(t, "numel", uint_json(tensors[i].numel), &bad);
		append(tl, t, &bad);
	}
	for (uint32_t i = 0; i < nshards && !bad; i++) {
		const psi_ckpt_shard *sh = &shards[i];
		json_t *s = json_object();
		char name[32];

		snprintf(name, sizeof(name), SHARD_NAME, sh->rank);
		set(s, "file", json_string(name), &bad);
		set(s, "rank", json_integer(sh->rank), &bad);
		set(s, "bytes", uint_json(sh->bytes), &bad);
		set(s, "segments", json_integer(sh->nsegs), &bad);
		set(s, "crc32", json_integer(sh->file_crc), &bad);
		append(sl, s, &bad);
	}
	set(layout, "workers", json_integer(meta->workers), &bad);
	set(layout, "servers", json_integer(meta->servers), &bad);
	set(layout, "partition_size", uint_json(meta->partition_size), &bad);
	set(layout, "preset", json_string(meta->preset ? meta->preset : ""),
	    &bad);
	set(root, "format", json_string(FORMAT_NAME), &bad);
	set(root, "format_version", json_integer(PS_CKPT_FORMAT), &bad);
	set(root, "iteration", uint_json(meta->iteration), &bad);
	set(root, "mode", json_string(meta->mode), &bad);
	set(root, "layout", layout, &bad);
	set(root, "seed", json_integer(meta->seed), &bad);
	set(root, "tensors", tl, &bad);
	set(root, "shards", sl, &bad);
	set(root, "config",
	    json_string(meta->config_ini ? meta->config_ini : ""), &bad);
	if (bad) {
		json_decref(root);
		return NULL;
	}
	return root;
}

int psi_ckpt_manifest_write(const char *dir, const ps_ckpt_meta *meta,
                            const ps_tensor_desc *tensors, uint32_t ntensors,
                            const psi_ckpt_shard *shards, uint32_t nshards,
                            char *why, size_t whylen)
{
	char path[PS_CKPT_PATH_MAX], tmp[PS_CKPT_PATH_MAX];
	json_t *root;
	char *text = NULL;
	uint32_t crc;
	int rc, fd;

	rc = psi_ckpt_join(path, sizeof(path), why, whylen, "%s/%s", dir,
	                   PS_CKPT_MANIFEST);
	if (!rc)
		rc = psi_ckpt_join(tmp, sizeof(tmp), why, whylen, "%s.tmp",
		                   path);
	if (rc)
		return rc;
	root = build(meta, tensors, ntensors, shards, nshards);
	if (!root)
		return ps_errf(why, whylen, PS_EINVAL,
		               "%s: cannot represent the checkpoint's "
		               "record (out of memory, a string that "
		               "is not UTF-8, or a number above 2^63)",
		               path);
	rc = canonical_crc(root, &crc);
	if (!rc && json_object_set_new(root, "crc32", json_integer(crc)) != 0)
		rc = PS_ENOMEM;
	if (!rc) {
		text = json_dumps(root, JSON_INDENT(2));
		rc = text ? PS_OK : PS_ENOMEM;
	}
	json_decref(root);
	if (rc) {
		free(text);
		return ps_errf(why, whylen, rc, "%s: out of memory", path);
	}
	fd = psi_ckpt_create_tmp(tmp, &rc, why, whylen);
	if (fd >= 0) {
		size_t len = strlen(text);

		text[len] = '\n'; /* json_dumps ends without one */
		if (psi_ckpt_pwrite_all(fd, text, len + 1, 0) != 0)
			rc = psi_ckpt_abandon(fd, tmp,
			                      psi_ckpt_sys_fail(why, whylen,
			                                        errno, tmp,
			                                        "write"));
		else
			rc = psi_ckpt_commit(fd, tmp, path, why, whylen);
	}
	free(text);
	return rc;
}

/* ---- reading ------------------------------------------------------------ */

typedef struct reader {
	const char *path;
	char *why;
	size_t whylen;
} reader;

/* "PATH: 'WHERE' PROBLEM"; PS_EPROTO. */
static int bad_member(const reader *r, const char *where, const char *problem)
{
	return ps_errf(r->why, r->whylen, PS_EPROTO, "%s: '%s' %s", r->path,
	               where, problem);
}

/* obj[key], as path prefix.key in messages, of the given type. */
static int member(const reader *r, const json_t *obj, const char *prefix,
                  const char *key, json_type type, json_t **v_p)
{
	static const char *const names[] = {
	    [JSON_OBJECT] = "an object",
	    [JSON_ARRAY] = "an array",
	    [JSON_STRING] = "a string",
	    [JSON_INTEGER] = "an integer",
	};
	char where[96];
	json_t *v = json_object_get(obj, key);

	snprintf(where, sizeof(where), "%s%s", prefix, key);
	if (!v)
		return bad_member(r, where, "is missing");
	if (json_typeof(v) != type) {
		char problem[64];

		snprintf(problem, sizeof(problem), "is not %s", names[type]);
		return bad_member(r, where, problem);
	}
	*v_p = v;
	return PS_OK;
}

static int get_int(const reader *r, const json_t *obj, const char *prefix,
                   const char *key, int64_t min, int64_t max, int64_t *out)
{
	json_t *v = NULL;
	int rc = member(r, obj, prefix, key, JSON_INTEGER, &v);

	if (rc)
		return rc;
	if (json_integer_value(v) < min || json_integer_value(v) > max) {
		char where[96], problem[96];

		snprintf(where, sizeof(where), "%s%s", prefix, key);
		snprintf(problem, sizeof(problem),
		         "is out of range (%" PRId64 "; %" PRId64 "..%" PRId64
		         ")",
		         (int64_t)json_integer_value(v), min, max);
		return bad_member(r, where, problem);
	}
	*out = json_integer_value(v);
	return PS_OK;
}

/* A copy of obj[key] (a string) into *out (free()). */
static int get_str(const reader *r, const json_t *obj, const char *prefix,
                   const char *key, char **out)
{
	json_t *v = NULL;
	int rc = member(r, obj, prefix, key, JSON_STRING, &v);

	if (rc)
		return rc;
	*out = strdup(json_string_value(v));
	return *out ? PS_OK
	            : ps_errf(r->why, r->whylen, PS_ENOMEM, "out of memory");
}

/* root[key]: an array of 1 to max entries into *arr_p; *items_p: as many
 * zeroed items of size bytes (free()), their count in *n_p. */
static int get_list(const reader *r, const json_t *root, const char *key,
                    size_t max, size_t size, json_t **arr_p, void **items_p,
                    size_t *n_p)
{
	char problem[64];
	size_t n;
	int rc = member(r, root, "", key, JSON_ARRAY, arr_p);

	if (rc)
		return rc;
	n = json_array_size(*arr_p);
	if (n == 0 || n > max) {
		snprintf(problem, sizeof(problem), "must hold 1 to %zu entries",
		         max);
		return bad_member(r, key, problem);
	}
	*items_p = calloc(n, size);
	if (!*items_p)
		return ps_errf(r->why, r->whylen, PS_ENOMEM, "out of memory");
	*n_p = n;
	return PS_OK;
}

/* arr[i] (of list key): an object into *obj_p; its members' prefix
 * ("key[i].") into prefix. */
static int get_item(const reader *r, const json_t *arr, const char *key,
                    size_t i, char *prefix, size_t cap, json_t **obj_p)
{
	snprintf(prefix, cap, "%s[%zu]", key, i);
	*obj_p = json_array_get(arr, i);
	if (!json_is_object(*obj_p))
		return bad_member(r, prefix, "is not an object");
	strncat(prefix, ".", cap - strlen(prefix) - 1);
	return PS_OK;
}

static int load_tensors(const reader *r, const json_t *root, struct ps_ckpt *ck)
{
	json_t *arr = NULL, *t;
	void *items = NULL;
	size_t n = 0;
	int rc = get_list(r, root, "tensors", PS_MAX_TENSORS,
	                  sizeof(*ck->tensors), &arr, &items, &n);

	if (rc)
		return rc;
	ck->tensors = items;
	ck->ntensors = (uint32_t)n;
	for (size_t i = 0; i < n; i++) {
		char prefix[48];
		json_t *name;
		int64_t numel;

		rc = get_item(r, arr, "tensors", i, prefix, sizeof(prefix), &t);
		if (!rc)
			rc = member(r, t, prefix, "name", JSON_STRING, &name);
		if (!rc)
			rc = get_int(r, t, prefix, "numel", 1, INT64_MAX,
			             &numel);
		if (rc)
			return rc;
		if (json_string_length(name) == 0 ||
		    json_string_length(name) >= PS_NAME_MAX) {
			strncat(prefix, "name",
			        sizeof(prefix) - strlen(prefix) - 1);
			return bad_member(r, prefix,
			                  "is empty or longer than 63 bytes");
		}
		strcpy(ck->tensors[i].name, json_string_value(name));
		ck->tensors[i].numel = (uint64_t)numel;
	}
	return PS_OK;
}

static int load_shards(const reader *r, const json_t *root, struct ps_ckpt *ck)
{
	json_t *arr = NULL, *s, *file;
	void *items = NULL;
	size_t n = 0;
	int rc = get_list(r, root, "shards", PS_MAX_SERVERS,
	                  sizeof(*ck->shards), &arr, &items, &n);

	if (rc)
		return rc;
	ck->shards = items;
	ck->nshards = (uint32_t)n;
	for (size_t i = 0; i < n; i++) {
		psi_ckpt_shard *sh = &ck->shards[i];
		char prefix[48], name[32], path[PS_CKPT_PATH_MAX];
		int64_t rank, bytes, segs, crc;

		rc = get_item(r, arr, "shards", i, prefix, sizeof(prefix), &s);
		if (!rc)
			rc = member(r, s, prefix, "file", JSON_STRING, &file);
		if (!rc)
			rc = get_int(r, s, prefix, "rank", (int64_t)i,
			             (int64_t)i, &rank);
		if (!rc)
			rc = get_int(r, s, prefix, "bytes",
			             CK_HEADER_SIZE + CK_TRAILER_SIZE,
			             INT64_MAX, &bytes);
		if (!rc)
			rc = get_int(r, s, prefix, "segments", 0, UINT32_MAX,
			             &segs);
		if (!rc)
			rc =
			    get_int(r, s, prefix, "crc32", 0, UINT32_MAX, &crc);
		if (rc)
			return rc;
		/* the name is fixed by the rank: nothing outside dir */
		snprintf(name, sizeof(name), SHARD_NAME, (unsigned)i);
		if (strcmp(json_string_value(file), name) != 0) {
			prefix[strlen(prefix) - 1] = '\0';
			return bad_member(r, prefix,
			                  "names a file other than its rank's");
		}
		rc = psi_ckpt_join(path, sizeof(path), r->why, r->whylen,
		                   "%s/%s", ck->dir, name);
		if (rc)
			return rc;
		sh->path = strdup(path);
		if (!sh->path)
			return ps_errf(r->why, r->whylen, PS_ENOMEM,
			               "out of memory");
		sh->rank = (uint32_t)rank;
		sh->bytes = (uint64_t)bytes;
		sh->nsegs = (uint32_t)segs;
		sh->file_crc = (uint32_t)crc;
	}
	return PS_OK;
}

static int load_meta(const reader *r, const json_t *root, struct ps_ckpt *ck)
{
	json_t *layout;
	int64_t iteration, workers, servers, psize, seed;
	int rc;

	rc = get_int(r, root, "", "iteration", 0, INT64_MAX, &iteration);
	if (!rc)
		rc = get_str(r, root, "", "mode", &ck->mode);
	if (!rc)
		rc = member(r, root, "", "layout", JSON_OBJECT, &layout);
	if (!rc)
		rc = get_int(r, layout, "layout.", "workers", 0, UINT32_MAX,
		             &workers);
	if (!rc)
		rc = get_int(r, layout, "layout.", "servers", 0, UINT32_MAX,
		             &servers);
	if (!rc)
		rc = get_int(r, layout, "layout.", "partition_size", 0,
		             INT64_MAX, &psize);
	if (!rc)
		rc = get_str(r, layout, "layout.", "preset", &ck->preset);
	if (!rc)
		rc = get_int(r, root, "", "seed", INT64_MIN, INT64_MAX, &seed);
	if (!rc)
		rc = get_str(r, root, "", "config", &ck->config_ini);
	if (rc)
		return rc;
	ck->meta = (ps_ckpt_meta){
	    .iteration = (uint64_t)iteration,
	    .mode = ck->mode,
	    .workers = (uint32_t)workers,
	    .servers = (uint32_t)servers,
	    .partition_size = (uint64_t)psize,
	    .preset = ck->preset,
	    .seed = seed,
	    .config_ini = ck->config_ini,
	};
	return PS_OK;
}

/* Format name and version, then the checksum (removed from root). */
static int check_envelope(const reader *r, json_t *root, uint32_t *crc_p)
{
	json_t *format;
	int64_t version, crc;
	uint32_t actual;
	int rc;

	rc = member(r, root, "", "format", JSON_STRING, &format);
	if (rc)
		return rc;
	if (strcmp(json_string_value(format), FORMAT_NAME) != 0)
		return ps_errf(r->why, r->whylen, PS_EPROTO,
		               "%s: not an ordo checkpoint manifest "
		               "(format '%.64s')",
		               r->path, json_string_value(format));
	rc = get_int(r, root, "", "format_version", 1, INT64_MAX, &version);
	if (rc)
		return rc;
	if (version > PS_CKPT_FORMAT)
		return ps_errf(r->why, r->whylen, PS_ENOTSUP,
		               "%s: format version %" PRId64
		               " is newer than this ordo reads (%d)",
		               r->path, version, PS_CKPT_FORMAT);
	rc = get_int(r, root, "", "crc32", 0, UINT32_MAX, &crc);
	if (rc)
		return rc;
	json_object_del(root, "crc32");
	if (canonical_crc(root, &actual) != PS_OK)
		return ps_errf(r->why, r->whylen, PS_ENOMEM, "out of memory");
	if (actual != (uint32_t)crc)
		return ps_errf(r->why, r->whylen, PS_EPROTO,
		               "%s: checksum mismatch (damaged or "
		               "edited)",
		               r->path);
	*crc_p = actual;
	return PS_OK;
}

int psi_ckpt_manifest_load(struct ps_ckpt *ck, char *why, size_t whylen)
{
	char path[PS_CKPT_PATH_MAX];
	reader r = {.path = path, .why = why, .whylen = whylen};
	json_error_t je;
	json_t *root;
	struct stat st;
	FILE *f;
	int rc, fd;

	rc = psi_ckpt_join(path, sizeof(path), why, whylen, "%s/%s", ck->dir,
	                   PS_CKPT_MANIFEST);
	if (rc)
		return rc;
	rc = psi_ckpt_open_regular(path, &fd, why, whylen);
	if (rc == PS_ENOENT)
		return ps_errf(why, whylen, PS_ENOENT,
		               "%s: not a checkpoint (no %s)", ck->dir,
		               PS_CKPT_MANIFEST);
	if (rc)
		return rc;
	f = fdopen(fd, "r");
	if (!f) {
		rc = psi_ckpt_sys_fail(why, whylen, errno, path, "open");
		close(fd);
		return rc;
	}
	if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > MANIFEST_MAX) {
		fclose(f);
		return ps_errf(why, whylen, PS_EPROTO,
		               "%s: not a regular file of at most 1 GiB", path);
	}
	root = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
	fclose(f);
	if (!root)
		return ps_errf(why, whylen, PS_EPROTO,
		               "%s: not valid JSON: line %d column %d: "
		               "%s",
		               path, je.line, je.column, je.text);
	if (!json_is_object(root))
		rc = ps_errf(why, whylen, PS_EPROTO, "%s: not a JSON object",
		             path);
	if (!rc)
		rc = check_envelope(&r, root, &ck->manifest_crc);
	if (!rc)
		rc = load_meta(&r, root, ck);
	if (!rc)
		rc = load_tensors(&r, root, ck);
	if (!rc)
		rc = load_shards(&r, root, ck);
	json_decref(root);
	return rc;
}
