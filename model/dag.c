/*
 * model/dag.c - loads and checks a model file (docs/model-format.md).
 *
 * DESIGN: the file is parsed by jansson (duplicate keys rejected) and then
 * checked in passes, each reporting the first problem with the file name
 * and the JSON path of the offending value:
 *   1. the top level and `times`;
 *   2. every tensor (name, shape, sizes) into a hash table of names;
 *   3. every op's own fields (name, kind, time, numbers) into a second hash
 *      table, counting its deps and tensor references;
 *   4. the references: deps, reads and grads resolved through the tables
 *      (unknown names, self and duplicate dependencies, forward ops that
 *      depend on backward ops, tensors with two gradient producers);
 *   5. the order: successor lists, then Kahn's algorithm with a min-heap on
 *      the op index (among ready ops the lowest index comes first, the
 *      replay order); ops left over lie on or behind a cycle, and walking
 *      their unfinished deps finds one to report;
 *   6. the tensors' coverage (read by a forward op, one gradient producer),
 *      first readers in topological order, and the summary numbers.
 * Everything is O(ops + tensors + deps + references).
 *
 * A ps_dag is the first member of a private struct (struct dag) that also
 * holds the name tables, the one array behind every op's deps, tensors and
 * succs, and the precomputed stats; so a ps_dag must come from
 * ps_dag_load() and go to ps_dag_free().
 *
 * Threads: no shared state; a loaded DAG is read-only.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "model/dag.h"

/* Bounds on what a file may hold (beyond those in the format). */
#define MAX_OPS     1000000u
#define MAX_TENSORS 1000000u
#define MAX_REFS    64000000u /* deps, and reads + grads, over all ops */
#define MAX_TIME_US 1e15      /* one op, after compute_scale (~31 years) */
#define NONE        UINT32_MAX

/* A name table: open addressing, linear probing; slots hold index + 1. */
typedef struct name_table {
	uint32_t *slots;
	uint64_t mask;
} name_table;

typedef struct dag {
	ps_dag pub; /* first: a ps_dag * is a struct dag * */
	name_table tensor_names, op_names;
	uint32_t *refs; /* behind every op's deps, tensors and succs */
	ps_dag_stats stats;
} dag;

/* The checker's state: where errors go and the JSON path being checked. */
typedef struct loader {
	const char *file;
	char *err;
	size_t errlen;
	char path[256];
	size_t plen;
	dag *g;
} loader;

/* ---- errors and JSON paths -------------------------------------------- */

static int fail(loader *L, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Writes "FILE: $.path: message" into err; returns PS_EINVAL. */
static int fail(loader *L, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!L->err || L->errlen == 0)
		return PS_EINVAL;
	n = snprintf(L->err, L->errlen, "%s: %s: ", L->file, L->path);
	if (n >= 0 && (size_t)n < L->errlen) {
		va_start(ap, fmt);
		vsnprintf(L->err + n, L->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return PS_EINVAL;
}

/* Appends ".key" to the path; returns the length to restore. */
static size_t path_key(loader *L, const char *key)
{
	size_t old = L->plen;
	int n = snprintf(L->path + old, sizeof(L->path) - old, ".%s", key);

	if (n > 0)
		L->plen = old + (size_t)n < sizeof(L->path)
		              ? old + (size_t)n
		              : sizeof(L->path) - 1;
	return old;
}

/* Appends "[i]" to the path; returns the length to restore. */
static size_t path_index(loader *L, size_t i)
{
	size_t old = L->plen;
	int n = snprintf(L->path + old, sizeof(L->path) - old, "[%zu]", i);

	if (n > 0)
		L->plen = old + (size_t)n < sizeof(L->path)
		              ? old + (size_t)n
		              : sizeof(L->path) - 1;
	return old;
}

static void path_pop(loader *L, size_t old)
{
	L->plen = old;
	L->path[old] = '\0';
}

/* A name from the file made fit for a message: at most 80 bytes, control
 * characters replaced by '?', "..." when cut. */
static const char *show(const char *s, char *buf, size_t n)
{
	size_t i, max = n - 4;

	for (i = 0; s[i] && i < max; i++)
		buf[i] =
		    (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	if (s[i]) {
		memcpy(buf + i, "...", 3);
		i += 3;
	}
	buf[i] = '\0';
	return buf;
}

#define SHOW_MAX 84

/* ---- name tables ------------------------------------------------------ */

static uint64_t hash_name(const char *s)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

static int table_init(name_table *t, uint32_t n)
{
	uint64_t cap = 16;

	while (cap < 2 * (uint64_t)n)
		cap *= 2;
	t->slots = calloc(cap, sizeof(*t->slots));
	if (!t->slots)
		return PS_ENOMEM;
	t->mask = cap - 1;
	return PS_OK;
}

/* The name's index, or NONE; names(i) gives the name at index i. */
static uint32_t table_find(const name_table *t, const char *name,
                           const char *(*names)(const ps_dag *, uint32_t),
                           const ps_dag *d)
{
	uint64_t h;

	if (!t->slots)
		return NONE;
	for (h = hash_name(name) & t->mask; t->slots[h];
	     h = (h + 1) & t->mask) {
		if (strcmp(names(d, t->slots[h] - 1), name) == 0)
			return t->slots[h] - 1;
	}
	return NONE;
}

/* Inserts index i under name; returns NONE, or the index already there. */
static uint32_t table_add(name_table *t, const char *name, uint32_t i,
                          const char *(*names)(const ps_dag *, uint32_t),
                          const ps_dag *d)
{
	uint64_t h;

	for (h = hash_name(name) & t->mask; t->slots[h];
	     h = (h + 1) & t->mask) {
		if (strcmp(names(d, t->slots[h] - 1), name) == 0)
			return t->slots[h] - 1;
	}
	t->slots[h] = i + 1;
	return NONE;
}

static const char *tensor_name(const ps_dag *d, uint32_t i)
{
	return d->tensors[i].name;
}

static const char *op_name(const ps_dag *d, uint32_t i)
{
	return d->ops[i].name;
}

/* ---- typed fields ----------------------------------------------------- */

/* Fails on the first key of obj not in allowed (NULL-terminated). */
static int check_keys(loader *L, json_t *obj, const char *const *allowed)
{
	const char *key;
	json_t *v = NULL;
	char buf[SHOW_MAX];

	json_object_foreach(obj, key, v)
	{
		const char *const *a;

		for (a = allowed; *a && strcmp(*a, key) != 0; a++)
			;
		if (!*a)
			return fail(L, "unknown field '%s'",
			            show(key, buf, sizeof(buf)));
	}
	return PS_OK;
}

/* obj[key], or an error naming the missing field. */
static int get_required(loader *L, json_t *obj, const char *key, json_t **v_p)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return fail(L, "missing field '%s'", key);
	*v_p = v;
	return PS_OK;
}

/* A string of min..max bytes (path already names the field). */
static int string_value(loader *L, json_t *v, size_t min, size_t max,
                        const char **s_p)
{
	size_t n;

	if (!json_is_string(v))
		return fail(L, "must be a string");
	n = json_string_length(v);
	if (n < min || n > max || strlen(json_string_value(v)) != n) {
		if (min > 0)
			return fail(L, "must be %zu to %zu characters long",
			            min, max);
		return fail(L, "must be at most %zu characters long", max);
	}
	*s_p = json_string_value(v);
	return PS_OK;
}

/* Copies free text into dst[n], cut at a UTF-8 character boundary. */
static void copy_text(char *dst, size_t n, const char *src)
{
	size_t len = strlen(src);

	if (len >= n) {
		len = n - 1;
		while (len > 0 && ((unsigned char)src[len] & 0xc0) == 0x80)
			len--;
	}
	memcpy(dst, src, len);
	dst[len] = '\0';
}

/* A finite number v with v >= 0 (or v > 0 when positive). */
static int number_value(loader *L, json_t *v, bool positive, double *x_p)
{
	double x;

	if (!json_is_number(v))
		return fail(L, "must be a finite number %s 0",
		            positive ? ">" : ">=");
	x = json_number_value(v);
	if (!isfinite(x) || x < 0 || (positive && x == 0))
		return fail(L, "must be a finite number %s 0",
		            positive ? ">" : ">=");
	*x_p = x;
	return PS_OK;
}

/* An integer in [min, max]. */
static int integer_value(loader *L, json_t *v, json_int_t min, json_int_t max,
                         json_int_t *x_p)
{
	json_int_t x = 0;

	if (!json_is_integer(v))
		return fail(L, "must be an integer");
	x = json_integer_value(v);
	if (x < min || x > max)
		return fail(L, "must be an integer from %lld to %lld",
		            (long long)min, (long long)max);
	*x_p = x;
	return PS_OK;
}

/* An optional number field, checked by number_value if present (x_p keeps
 * its value otherwise). */
static int optional_number(loader *L, json_t *obj, const char *key,
                           bool positive, double *x_p)
{
	json_t *v = json_object_get(obj, key);
	size_t old;
	int rc;

	if (!v)
		return PS_OK;
	old = path_key(L, key);
	rc = number_value(L, v, positive, x_p);
	path_pop(L, old);
	return rc;
}

/* A required field checked by number_value. */
static int required_number(loader *L, json_t *obj, const char *key,
                           bool positive, double *x_p)
{
	json_t *v = NULL;
	size_t old;
	int rc;

	rc = get_required(L, obj, key, &v);
	if (rc)
		return rc;
	old = path_key(L, key);
	rc = number_value(L, v, positive, x_p);
	path_pop(L, old);
	return rc;
}

/* ---- pass 1: top level ------------------------------------------------ */

static int check_times(loader *L, json_t *times)
{
	static const char *const keys[] = {
	    "source",      "device", "peak_flops", "mem_bandwidth",
	    "overhead_us", "note",   NULL};
	ps_dag *d = &L->g->pub;
	const char *source, *device = NULL, *note;
	double x;
	bool roofline;
	json_t *v = NULL;
	size_t old;
	int rc;

	if (!json_is_object(times))
		return fail(L, "must be an object");
	rc = check_keys(L, times, keys);
	if (rc)
		return rc;

	rc = get_required(L, times, "source", &v);
	if (rc)
		return rc;
	old = path_key(L, "source");
	if (!json_is_string(v) ||
	    (strcmp(json_string_value(v), "roofline") != 0 &&
	     strcmp(json_string_value(v), "measured") != 0))
		return fail(L, "must be \"roofline\" or \"measured\"");
	path_pop(L, old);
	source = json_string_value(v);
	roofline = strcmp(source, "roofline") == 0;
	copy_text(d->time_source, sizeof(d->time_source), source);

	v = json_object_get(times, "device");
	if (!v && roofline)
		return fail(L, "missing field 'device' (required for "
		               "\"roofline\" times)");
	if (v) {
		old = path_key(L, "device");
		if (!json_is_string(v) || json_string_length(v) == 0)
			return fail(L, "must be a non-empty string");
		path_pop(L, old);
		device = json_string_value(v);
	}
	if (roofline) {
		copy_text(d->device, sizeof(d->device), device);
		rc = required_number(L, times, "peak_flops", true, &x);
		if (!rc)
			rc = required_number(L, times, "mem_bandwidth", true,
			                     &x);
	} else {
		rc = optional_number(L, times, "peak_flops", true, &x);
		if (!rc)
			rc = optional_number(L, times, "mem_bandwidth", true,
			                     &x);
	}
	if (!rc)
		rc = optional_number(L, times, "overhead_us", false, &x);
	if (rc)
		return rc;
	v = json_object_get(times, "note");
	if (v) {
		old = path_key(L, "note");
		rc = string_value(L, v, 0, SIZE_MAX, &note);
		if (rc)
			return rc;
		path_pop(L, old);
	}
	return PS_OK;
}

/* Checks the top-level fields other than tensors and ops. */
static int check_header(loader *L, json_t *root)
{
	static const char *const keys[] = {"format",      "version", "name",
	                                   "description", "batch",   "times",
	                                   "tensors",     "ops",     NULL};
	ps_dag *d = &L->g->pub;
	const char *s = NULL;
	json_int_t x = 0;
	json_t *v = NULL;
	size_t old;
	int rc;

	if (!json_is_object(root))
		return fail(L, "must be an object (an ordo model)");
	rc = check_keys(L, root, keys);
	if (rc)
		return rc;

	rc = get_required(L, root, "format", &v);
	if (rc)
		return rc;
	old = path_key(L, "format");
	if (!json_is_string(v) ||
	    strcmp(json_string_value(v), "ordo-model") != 0)
		return fail(L, "must be \"ordo-model\"");
	path_pop(L, old);

	rc = get_required(L, root, "version", &v);
	if (rc)
		return rc;
	old = path_key(L, "version");
	if (!json_is_integer(v))
		return fail(L, "must be an integer");
	if (json_integer_value(v) != 1)
		return fail(L, "unsupported version %lld (this is version 1)",
		            (long long)json_integer_value(v));
	path_pop(L, old);

	rc = get_required(L, root, "name", &v);
	if (rc)
		return rc;
	old = path_key(L, "name");
	rc = string_value(L, v, 1, PS_DAG_NAME_MAX - 1, &s);
	if (rc)
		return rc;
	path_pop(L, old);
	memcpy(d->name, s, strlen(s) + 1);

	v = json_object_get(root, "description");
	if (v) {
		old = path_key(L, "description");
		rc = string_value(L, v, 0, SIZE_MAX, &s);
		if (rc)
			return rc;
		path_pop(L, old);
		copy_text(d->description, sizeof(d->description), s);
	}

	rc = get_required(L, root, "batch", &v);
	if (rc)
		return rc;
	old = path_key(L, "batch");
	rc = integer_value(L, v, 1, UINT32_MAX, &x);
	if (rc)
		return rc;
	path_pop(L, old);
	d->batch = (uint32_t)x;

	rc = get_required(L, root, "times", &v);
	if (rc)
		return rc;
	old = path_key(L, "times");
	rc = check_times(L, v);
	if (rc)
		return rc;
	path_pop(L, old);
	return PS_OK;
}

/* A non-empty array of at most max entries at root[key]. */
static int get_list(loader *L, json_t *root, const char *key, uint32_t max,
                    json_t **v_p)
{
	json_t *v = NULL;
	size_t old;
	int rc;

	rc = get_required(L, root, key, &v);
	if (rc)
		return rc;
	old = path_key(L, key);
	if (!json_is_array(v) || json_array_size(v) == 0)
		return fail(L, "must be a non-empty array");
	if (json_array_size(v) > max)
		return fail(L, "%zu entries (at most %" PRIu32 " allowed)",
		            json_array_size(v), max);
	path_pop(L, old);
	*v_p = v;
	return PS_OK;
}

/* ---- pass 2: tensors -------------------------------------------------- */

static int check_shape(loader *L, json_t *shape, ps_dag_tensor *t)
{
	uint64_t numel = 1;
	json_int_t x = 0;
	size_t i, n, old;
	json_t *v = NULL;

	if (!json_is_array(shape))
		return fail(L, "must be an array of integers");
	n = json_array_size(shape);
	if (n < 1 || n > PS_DAG_MAX_DIMS)
		return fail(L, "must have 1 to %d dimensions (has %zu)",
		            PS_DAG_MAX_DIMS, n);
	for (i = 0; i < n; i++) {
		old = path_index(L, i);
		v = json_array_get(shape, i);
		if (!json_is_integer(v) || json_integer_value(v) < 1)
			return fail(L, "must be an integer >= 1");
		x = json_integer_value(v);
		if ((uint64_t)x > UINT64_MAX / 4 / numel)
			return fail(L, "tensor size (4 bytes x elements) "
			               "overflows 64 bits");
		path_pop(L, old);
		t->shape[i] = (uint64_t)x;
		numel *= (uint64_t)x;
	}
	t->ndim = (uint32_t)n;
	t->numel = numel;
	t->bytes = 4 * numel;
	return PS_OK;
}

static int check_tensors(loader *L, json_t *list)
{
	static const char *const keys[] = {"name", "shape", NULL};
	ps_dag *d = &L->g->pub;
	ps_dag_stats *st = &L->g->stats;
	char buf[SHOW_MAX];
	uint32_t i, prev;
	size_t old, old2;
	json_t *obj, *v = NULL;
	const char *s = NULL;
	int rc;

	d->ntensors = (uint32_t)json_array_size(list);
	d->tensors = calloc(d->ntensors, sizeof(*d->tensors));
	if (!d->tensors)
		return PS_ENOMEM;
	rc = table_init(&L->g->tensor_names, d->ntensors);
	if (rc)
		return rc;
	old = path_key(L, "tensors");
	for (i = 0; i < d->ntensors; i++) {
		ps_dag_tensor *t = &d->tensors[i];

		t->grad_op = NONE;
		t->first_reader = NONE;
		obj = json_array_get(list, i);
		old2 = path_index(L, i);
		if (!json_is_object(obj))
			return fail(L, "must be an object");
		rc = check_keys(L, obj, keys);
		if (!rc)
			rc = get_required(L, obj, "name", &v);
		if (rc)
			return rc;
		path_key(L, "name");
		rc = string_value(L, v, 1, PS_DAG_NAME_MAX - 1, &s);
		if (rc)
			return rc;
		memcpy(t->name, s, strlen(s) + 1);
		prev =
		    table_add(&L->g->tensor_names, t->name, i, tensor_name, d);
		if (prev != NONE)
			return fail(L,
			            "duplicate tensor name '%s' (also "
			            "$.tensors[%" PRIu32 "])",
			            show(s, buf, sizeof(buf)), prev);
		path_pop(L, old2);
		path_index(L, i);

		rc = get_required(L, obj, "shape", &v);
		if (rc)
			return rc;
		path_key(L, "shape");
		rc = check_shape(L, v, t);
		if (rc)
			return rc;
		if (t->numel > UINT64_MAX / 4 - st->params)
			return fail(L, "the total size of all tensors "
			               "overflows 64 bits");
		st->params += t->numel;
		st->bytes += t->bytes;
		if (t->bytes > st->largest_tensor_bytes)
			st->largest_tensor_bytes = t->bytes;
		path_pop(L, old2);
	}
	path_pop(L, old);
	st->tensors = d->ntensors;
	return PS_OK;
}

/* ---- pass 3: ops' own fields ------------------------------------------ */

/* An optional array field of an op; returns its size in *n_p (0 absent). */
static int op_list(loader *L, json_t *obj, const char *key, uint32_t max,
                   uint64_t *n_p)
{
	json_t *v = json_object_get(obj, key);
	size_t old;

	*n_p = 0;
	if (!v)
		return PS_OK;
	old = path_key(L, key);
	if (!json_is_array(v))
		return fail(L, "must be an array of names");
	if (json_array_size(v) > max)
		return fail(L, "%zu entries (at most %" PRIu32 " allowed)",
		            json_array_size(v), max);
	path_pop(L, old);
	*n_p = json_array_size(v);
	return PS_OK;
}

static int check_op(loader *L, json_t *obj, uint32_t i, double scale,
                    uint64_t *ndeps_p, uint64_t *nrefs_p)
{
	static const char *const keys[] = {"name",  "kind",  "time_us",
	                                   "deps",  "flops", "bytes",
	                                   "reads", "grads", NULL};
	ps_dag *d = &L->g->pub;
	ps_dag_op *op = &d->ops[i];
	char buf[SHOW_MAX];
	const char *s = NULL, *own, *other;
	json_t *v = NULL;
	uint32_t prev;
	size_t old;
	double t;
	int rc;

	if (!json_is_object(obj))
		return fail(L, "must be an object");
	rc = check_keys(L, obj, keys);
	if (rc)
		return rc;

	rc = get_required(L, obj, "name", &v);
	if (rc)
		return rc;
	old = path_key(L, "name");
	rc = string_value(L, v, 1, PS_DAG_OP_NAME_MAX - 1, &s);
	if (rc)
		return rc;
	memcpy(op->name, s, strlen(s) + 1);
	prev = table_add(&L->g->op_names, op->name, i, op_name, d);
	if (prev != NONE)
		return fail(L,
		            "duplicate op name '%s' (also $.ops[%" PRIu32 "])",
		            show(s, buf, sizeof(buf)), prev);
	path_pop(L, old);

	rc = get_required(L, obj, "kind", &v);
	if (rc)
		return rc;
	old = path_key(L, "kind");
	if (json_is_string(v) && strcmp(json_string_value(v), "forward") == 0)
		op->kind = PS_OP_FORWARD;
	else if (json_is_string(v) &&
	         strcmp(json_string_value(v), "backward") == 0)
		op->kind = PS_OP_BACKWARD;
	else
		return fail(L, "must be \"forward\" or \"backward\"");
	path_pop(L, old);
	own = op->kind == PS_OP_FORWARD ? "reads" : "grads";
	other = op->kind == PS_OP_FORWARD ? "grads" : "reads";
	if (json_object_get(obj, other)) {
		old = path_key(L, other);
		return fail(L, "%s ops have no '%s' (use '%s')",
		            op->kind == PS_OP_FORWARD ? "forward" : "backward",
		            other, own);
	}

	rc = required_number(L, obj, "time_us", false, &t);
	if (rc)
		return rc;
	op->time_us = t * scale;
	if (!(op->time_us <= MAX_TIME_US)) {
		old = path_key(L, "time_us");
		return fail(L,
		            "%g us (times compute_scale %g) is too large "
		            "(at most %g)",
		            t, scale, MAX_TIME_US);
	}
	rc = optional_number(L, obj, "flops", false, &op->flops);
	if (!rc)
		rc = optional_number(L, obj, "bytes", false, &op->bytes);
	if (rc)
		return rc;

	rc = get_required(L, obj, "deps", &v);
	if (!rc)
		rc = op_list(L, obj, "deps", d->nops, ndeps_p);
	if (!rc)
		rc = op_list(L, obj, own, d->ntensors, nrefs_p);
	return rc;
}

/* ---- pass 4: references ----------------------------------------------- */

/* Resolves op i's deps into op->deps (marks: scratch, one per op). */
static int resolve_deps(loader *L, json_t *list, uint32_t i, uint32_t *marks)
{
	ps_dag *d = &L->g->pub;
	ps_dag_op *op = &d->ops[i];
	char buf[SHOW_MAX], buf2[SHOW_MAX];
	size_t k, old;
	uint32_t j;
	json_t *v = NULL;

	for (k = 0; k < op->ndeps; k++) {
		v = json_array_get(list, k);
		old = path_index(L, k);
		if (!json_is_string(v))
			return fail(L, "must be an op name (a string)");
		j = table_find(&L->g->op_names, json_string_value(v), op_name,
		               d);
		if (j == NONE)
			return fail(
			    L, "unknown op '%s'",
			    show(json_string_value(v), buf, sizeof(buf)));
		if (j == i)
			return fail(L, "op '%s' depends on itself",
			            show(op->name, buf, sizeof(buf)));
		if (marks[j] == i + 1)
			return fail(L, "dependency '%s' listed twice",
			            show(d->ops[j].name, buf, sizeof(buf)));
		if (op->kind == PS_OP_FORWARD &&
		    d->ops[j].kind == PS_OP_BACKWARD)
			return fail(L,
			            "forward op '%s' depends on backward op "
			            "'%s' ($.ops[%" PRIu32 "])",
			            show(op->name, buf, sizeof(buf)),
			            show(d->ops[j].name, buf2, sizeof(buf2)),
			            j);
		marks[j] = i + 1;
		op->deps[k] = j;
		path_pop(L, old);
	}
	return PS_OK;
}

/* Resolves op i's reads or grads into op->tensors (marks: one per tensor;
 * nreads: per tensor, forward ops reading it). */
static int resolve_tensors(loader *L, json_t *list, uint32_t i, uint32_t *marks,
                           uint32_t *nreads)
{
	ps_dag *d = &L->g->pub;
	ps_dag_op *op = &d->ops[i];
	char buf[SHOW_MAX], buf2[SHOW_MAX];
	size_t k, old;
	uint32_t j;
	json_t *v = NULL;

	for (k = 0; k < op->ntensors; k++) {
		ps_dag_tensor *t;

		v = json_array_get(list, k);
		old = path_index(L, k);
		if (!json_is_string(v))
			return fail(L, "must be a tensor name (a string)");
		j = table_find(&L->g->tensor_names, json_string_value(v),
		               tensor_name, d);
		if (j == NONE)
			return fail(
			    L, "unknown tensor '%s'",
			    show(json_string_value(v), buf, sizeof(buf)));
		t = &d->tensors[j];
		if (marks[j] == i + 1)
			return fail(L, "tensor '%s' listed twice",
			            show(t->name, buf, sizeof(buf)));
		if (op->kind == PS_OP_BACKWARD && t->grad_op != NONE)
			return fail(
			    L,
			    "tensor '%s' already has its gradient "
			    "produced by op '%s' ($.ops[%" PRIu32 "])",
			    show(t->name, buf, sizeof(buf)),
			    show(d->ops[t->grad_op].name, buf2, sizeof(buf2)),
			    t->grad_op);
		if (op->kind == PS_OP_BACKWARD)
			t->grad_op = i;
		else
			nreads[j]++;
		marks[j] = i + 1;
		op->tensors[k] = j;
		path_pop(L, old);
	}
	return PS_OK;
}

/* ---- pass 5: order ---------------------------------------------------- */

static void heap_push(uint32_t *h, uint32_t *n, uint32_t v)
{
	uint32_t i = (*n)++;

	while (i > 0 && h[(i - 1) / 2] > v) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = v;
}

static uint32_t heap_pop(uint32_t *h, uint32_t *n)
{
	uint32_t top = h[0], v = h[--*n], i = 0, c;

	for (;;) {
		c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1] < h[c])
			c++;
		if (h[c] >= v)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n > 0)
		h[i] = v;
	return top;
}

/* Reports a cycle among the ops Kahn's algorithm left (indeg > 0): each
 * has an unfinished dep, so following those must come back to an op seen
 * on the way. seq and pos: scratch, nops entries each. */
static int report_cycle(loader *L, const uint32_t *indeg, uint32_t *seq,
                        uint32_t *pos)
{
	const ps_dag *d = &L->g->pub;
	char msg[1024], buf[SHOW_MAX];
	uint32_t cur, len = 0, start, n, low, k, i;
	size_t m = 0;

	for (cur = 0; indeg[cur] == 0; cur++)
		;
	for (i = 0; i < d->nops; i++)
		pos[i] = NONE;
	while (pos[cur] == NONE) {
		const ps_dag_op *op = &d->ops[cur];

		pos[cur] = len;
		seq[len++] = cur;
		for (k = 0; indeg[op->deps[k]] == 0; k++)
			;
		cur = op->deps[k];
	}
	/* seq[start..len-1]: each op depends on the next, the last on the
	 * first. Print it in running order, from its lowest op index. */
	start = pos[cur];
	n = len - start;
	low = start;
	for (i = start; i < len; i++)
		if (seq[i] < seq[low])
			low = i;
	for (i = 0; i <= n && i <= 16; i++) {
		uint32_t at = start + (low - start + n - (i % n)) % n;
		int w;

		if (i == 16 && i < n) {
			snprintf(msg + m, sizeof(msg) - m,
			         " -> ... (%" PRIu32 " ops)", n);
			break;
		}
		w = snprintf(msg + m, sizeof(msg) - m, "%s%s", i ? " -> " : "",
		             show(d->ops[seq[at]].name, buf, sizeof(buf)));
		if (w < 0 || (size_t)w >= sizeof(msg) - m)
			break;
		m += (size_t)w;
	}
	return fail(L, "cycle: %s", msg);
}

/* Fills succs (into refs after the deps and tensors), topo, first readers;
 * fails on a cycle. */
static int order_ops(loader *L, uint32_t *succ_pool, uint32_t *indeg,
                     uint32_t *heap, uint32_t *scratch)
{
	ps_dag *d = &L->g->pub;
	uint32_t i, k, n = 0, nheap = 0, nout = 0;
	uint32_t *fill = scratch;

	for (i = 0; i < d->nops; i++)
		for (k = 0; k < d->ops[i].ndeps; k++)
			d->ops[d->ops[i].deps[k]].nsuccs++;
	for (i = 0; i < d->nops; i++) {
		d->ops[i].succs = d->ops[i].nsuccs ? succ_pool + n : NULL;
		n += d->ops[i].nsuccs;
		fill[i] = 0;
		indeg[i] = d->ops[i].ndeps;
	}
	/* In increasing index of the successor: succs come out sorted. */
	for (i = 0; i < d->nops; i++)
		for (k = 0; k < d->ops[i].ndeps; k++) {
			uint32_t p = d->ops[i].deps[k];

			d->ops[p].succs[fill[p]++] = i;
		}

	for (i = 0; i < d->nops; i++)
		if (indeg[i] == 0)
			heap_push(heap, &nheap, i);
	while (nheap > 0) {
		const ps_dag_op *op;

		i = heap_pop(heap, &nheap);
		d->topo[nout++] = i;
		op = &d->ops[i];
		for (k = 0; k < op->nsuccs; k++)
			if (--indeg[op->succs[k]] == 0)
				heap_push(heap, &nheap, op->succs[k]);
	}
	if (nout < d->nops) {
		size_t old = path_key(L, "ops");
		int rc = report_cycle(L, indeg, heap, scratch);

		path_pop(L, old);
		return rc;
	}
	return PS_OK;
}

/* ---- pass 6: coverage and summary ------------------------------------- */

static int check_coverage(loader *L, const uint32_t *nreads)
{
	ps_dag *d = &L->g->pub;
	char buf[SHOW_MAX];
	uint32_t i, k;
	size_t old, old2;

	old = path_key(L, "tensors");
	for (i = 0; i < d->ntensors; i++) {
		const ps_dag_tensor *t = &d->tensors[i];

		old2 = path_index(L, i);
		if (nreads[i] == 0)
			return fail(L,
			            "tensor '%s' is not read by any "
			            "forward op",
			            show(t->name, buf, sizeof(buf)));
		if (t->grad_op == NONE)
			return fail(L,
			            "tensor '%s' has no gradient producer (no "
			            "backward op lists it in 'grads')",
			            show(t->name, buf, sizeof(buf)));
		path_pop(L, old2);
	}
	path_pop(L, old);

	for (i = 0; i < d->nops; i++) {
		const ps_dag_op *op = &d->ops[d->topo[i]];

		if (op->kind != PS_OP_FORWARD)
			continue;
		for (k = 0; k < op->ntensors; k++)
			if (d->tensors[op->tensors[k]].first_reader == NONE)
				d->tensors[op->tensors[k]].first_reader =
				    d->topo[i];
	}
	return PS_OK;
}

/* Op counts, time sums and the critical path (finish: scratch). */
static void summarise(dag *g, double *finish)
{
	const ps_dag *d = &g->pub;
	ps_dag_stats *st = &g->stats;
	uint32_t i, k;

	st->ops = d->nops;
	for (i = 0; i < d->nops; i++) {
		const ps_dag_op *op = &d->ops[d->topo[i]];
		double start = 0;

		if (op->kind == PS_OP_FORWARD) {
			st->forward_ops++;
			st->forward_us += op->time_us;
		} else {
			st->backward_ops++;
			st->backward_us += op->time_us;
		}
		for (k = 0; k < op->ndeps; k++)
			if (finish[op->deps[k]] > start)
				start = finish[op->deps[k]];
		finish[d->topo[i]] = start + op->time_us;
		if (finish[d->topo[i]] > st->critical_path_us)
			st->critical_path_us = finish[d->topo[i]];
	}
}

/* ---- loading ---------------------------------------------------------- */

static void dag_destroy(dag *g)
{
	if (!g)
		return;
	free(g->pub.tensors);
	free(g->pub.ops);
	free(g->pub.topo);
	free(g->tensor_names.slots);
	free(g->op_names.slots);
	free(g->refs);
	free(g);
}

/* Passes 3 to 6 over the ops list. */
static int check_ops(loader *L, json_t *list, double scale)
{
	dag *g = L->g;
	ps_dag *d = &g->pub;
	uint64_t ndeps, nrefs, total_deps = 0, total_refs = 0;
	uint32_t *scratch = NULL, *marks, *tmarks, *nreads, *heap, *indeg;
	double *finish = NULL;
	size_t old, old2;
	uint32_t i;
	int rc;

	d->nops = (uint32_t)json_array_size(list);
	d->ops = calloc(d->nops, sizeof(*d->ops));
	d->topo = calloc(d->nops, sizeof(*d->topo));
	if (!d->ops || !d->topo)
		return PS_ENOMEM;
	rc = table_init(&g->op_names, d->nops);
	if (rc)
		return rc;

	old = path_key(L, "ops");
	for (i = 0; i < d->nops; i++) {
		old2 = path_index(L, i);
		rc = check_op(L, json_array_get(list, i), i, scale, &ndeps,
		              &nrefs);
		if (rc)
			return rc;
		d->ops[i].ndeps = (uint32_t)ndeps;
		d->ops[i].ntensors = (uint32_t)nrefs;
		total_deps += ndeps;
		total_refs += nrefs;
		if (total_deps > MAX_REFS || total_refs > MAX_REFS)
			return fail(L,
			            "too many deps or tensor references "
			            "over all ops (at most %u of each)",
			            MAX_REFS);
		path_pop(L, old2);
	}

	/* deps, then tensors, then succs (as many as deps). */
	g->refs = malloc((2 * total_deps + total_refs + 1) * sizeof(*g->refs));
	scratch = malloc(((size_t)3 * d->nops + 2 * (size_t)d->ntensors) *
	                 sizeof(*scratch));
	finish = malloc(d->nops * sizeof(*finish));
	if (!g->refs || !scratch || !finish) {
		rc = PS_ENOMEM;
		goto out;
	}
	marks = scratch;
	heap = marks + d->nops;
	indeg = heap + d->nops;
	tmarks = indeg + d->nops;
	nreads = tmarks + d->ntensors;
	memset(marks, 0, d->nops * sizeof(*marks));
	memset(tmarks, 0, 2 * (size_t)d->ntensors * sizeof(*tmarks));

	{
		uint32_t *q = g->refs;

		for (i = 0; i < d->nops; i++) {
			d->ops[i].deps = d->ops[i].ndeps ? q : NULL;
			q += d->ops[i].ndeps;
		}
		for (i = 0; i < d->nops; i++) {
			d->ops[i].tensors = d->ops[i].ntensors ? q : NULL;
			q += d->ops[i].ntensors;
		}
	}
	for (i = 0; i < d->nops; i++) {
		json_t *obj = json_array_get(list, i);
		ps_dag_op *op = &d->ops[i];
		const char *key = op->kind == PS_OP_FORWARD ? "reads" : "grads";

		old2 = path_index(L, i);
		path_key(L, "deps");
		rc = resolve_deps(L, json_object_get(obj, "deps"), i, marks);
		if (rc)
			goto out;
		path_pop(L, old2);
		path_index(L, i);
		path_key(L, key);
		rc = resolve_tensors(L, json_object_get(obj, key), i, tmarks,
		                     nreads);
		if (rc)
			goto out;
		path_pop(L, old2);
	}
	path_pop(L, old);

	rc =
	    order_ops(L, g->refs + total_deps + total_refs, indeg, heap, marks);
	if (rc)
		goto out;
	rc = check_coverage(L, nreads);
	if (rc)
		goto out;
	summarise(g, finish);
out:
	free(finish);
	free(scratch);
	return rc;
}

/* "FILE: cannot open: REASON" or "FILE:LINE:COL: invalid JSON: TEXT". */
static int json_failure(loader *L, const json_error_t *je)
{
	static const char prefix[] = "unable to open ";
	const char *reason = je->text;
	size_t n = strlen(L->file);

	if (json_error_code(je) == json_error_cannot_open_file) {
		if (strncmp(reason, prefix, sizeof(prefix) - 1) == 0 &&
		    strncmp(reason + sizeof(prefix) - 1, L->file, n) == 0 &&
		    strncmp(reason + sizeof(prefix) - 1 + n, ": ", 2) == 0)
			reason += sizeof(prefix) - 1 + n + 2;
		if (L->err && L->errlen)
			snprintf(L->err, L->errlen, "%s: cannot open: %s",
			         L->file, reason);
		return PS_ENOENT;
	}
	if (json_error_code(je) == json_error_out_of_memory)
		return PS_ENOMEM;
	if (L->err && L->errlen)
		snprintf(L->err, L->errlen, "%s:%d:%d: invalid JSON: %s",
		         L->file, je->line, je->column, je->text);
	return PS_EINVAL;
}

/* Checks root (the file's JSON, named label in errors) into *dag_p. */
static int load_root(json_t *root, const char *label, double compute_scale,
		     ps_dag **dag_p, char *why, size_t whylen)
{
	loader L = {.file = label, .err = why, .errlen = whylen};
	json_t *tensors, *ops;
	int rc;

	if (!isfinite(compute_scale) || compute_scale <= 0) {
		if (why && whylen)
			snprintf(why, whylen,
			         "%s: compute_scale %g: must be a finite "
			         "number > 0",
			         label, compute_scale);
		return PS_EINVAL;
	}
	L.g = calloc(1, sizeof(*L.g));
	if (!L.g)
		return PS_ENOMEM;
	strcpy(L.path, "$");
	L.plen = 1;

	rc = check_header(&L, root);
	if (!rc)
		rc = get_list(&L, root, "tensors", MAX_TENSORS, &tensors);
	if (!rc)
		rc = get_list(&L, root, "ops", MAX_OPS, &ops);
	if (!rc)
		rc = check_tensors(&L, tensors);
	if (!rc)
		rc = check_ops(&L, ops, compute_scale);
	if (rc) {
		if (rc == PS_ENOMEM && why && whylen)
			snprintf(why, whylen, "%s: out of memory", label);
		dag_destroy(L.g);
		return rc;
	}
	/* The name tables stay for ps_dag_find_*; the checker's marks are
	 * gone. */
	*dag_p = &L.g->pub;
	return PS_OK;
}

int ps_dag_load(const char *path, double compute_scale, ps_dag **dag_p,
                char *why, size_t whylen)
{
	loader L = {.file = path, .err = why, .errlen = whylen};
	json_t *root;
	json_error_t je;
	int rc;

	if (why && whylen)
		why[0] = '\0';
	if (!path || !dag_p) {
		if (why && whylen)
			snprintf(why, whylen, "ps_dag_load: no file");
		return PS_EINVAL;
	}
	root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return json_failure(&L, &je);
	rc = load_root(root, path, compute_scale, dag_p, why, whylen);
	json_decref(root);
	return rc;
}

int ps_dag_from_json(void *root, const char *label, double compute_scale,
		     ps_dag **dag_p, char *why, size_t whylen)
{
	if (why && whylen)
		why[0] = '\0';
	if (!root || !label || !dag_p) {
		if (why && whylen)
			snprintf(why, whylen, "ps_dag_from_json: no model");
		return PS_EINVAL;
	}
	return load_root(root, label, compute_scale, dag_p, why, whylen);
}

void ps_dag_free(ps_dag **dag_p)
{
	if (!dag_p || !*dag_p)
		return;
	dag_destroy((dag *)*dag_p);
	*dag_p = NULL;
}

int64_t ps_dag_find_tensor(const ps_dag *d, const char *name)
{
	uint32_t i;

	if (!d || !name)
		return -1;
	i = table_find(&((const dag *)d)->tensor_names, name, tensor_name, d);
	return i == NONE ? -1 : (int64_t)i;
}

int64_t ps_dag_find_op(const ps_dag *d, const char *name)
{
	uint32_t i;

	if (!d || !name)
		return -1;
	i = table_find(&((const dag *)d)->op_names, name, op_name, d);
	return i == NONE ? -1 : (int64_t)i;
}

/* ---- stats ------------------------------------------------------------ */

void ps_dag_get_stats(const ps_dag *d, ps_dag_stats *s_p)
{
	*s_p = ((const dag *)d)->stats;
}

void ps_dag_print_stats(const ps_dag *d, FILE *out)
{
	static const uint64_t limits[] = {64 << 10, 1 << 20, 16 << 20};
	ps_dag_stats s;
	uint64_t buckets[4] = {0, 0, 0, 0};
	uint64_t edges = 0, bucket_bytes[4] = {0, 0, 0, 0};
	uint32_t i, b;

	ps_dag_get_stats(d, &s);
	for (i = 0; i < d->ntensors; i++) {
		for (b = 0; b < 3 && d->tensors[i].bytes >= limits[b]; b++)
			;
		buckets[b]++;
		bucket_bytes[b] += d->tensors[i].bytes;
	}
	for (i = 0; i < d->nops; i++)
		edges += d->ops[i].ndeps;

	fprintf(out, "model %s\n", d->name);
	if (d->description[0])
		fprintf(out, "description %s\n", d->description);
	fprintf(out, "batch %" PRIu32 "\n", d->batch);
	if (d->device[0])
		fprintf(out, "times %s (%s)\n", d->time_source, d->device);
	else
		fprintf(out, "times %s\n", d->time_source);
	fprintf(out, "tensors %" PRIu32 "\n", s.tensors);
	fprintf(out, "params %" PRIu64 "\n", s.params);
	fprintf(out, "bytes %" PRIu64 "\n", s.bytes);
	fprintf(out, "largest_tensor_bytes %" PRIu64 "\n",
	        s.largest_tensor_bytes);
	fprintf(out,
	        "tensors_by_size <64KiB: %" PRIu64 " (%" PRIu64
	        " bytes), 64KiB-1MiB: %" PRIu64 " (%" PRIu64
	        " bytes), 1MiB-16MiB: %" PRIu64 " (%" PRIu64
	        " bytes), >=16MiB: %" PRIu64 " (%" PRIu64 " bytes)\n",
	        buckets[0], bucket_bytes[0], buckets[1], bucket_bytes[1],
	        buckets[2], bucket_bytes[2], buckets[3], bucket_bytes[3]);
	fprintf(out,
	        "ops %" PRIu32 " (%" PRIu32 " forward, %" PRIu32 " backward)\n",
	        s.ops, s.forward_ops, s.backward_ops);
	fprintf(out, "deps %" PRIu64 "\n", edges);
	fprintf(out, "forward_ms %.3f\n", s.forward_us / 1000.0);
	fprintf(out, "backward_ms %.3f\n", s.backward_us / 1000.0);
	fprintf(out, "iteration_ms %.3f\n",
	        (s.forward_us + s.backward_us) / 1000.0);
	fprintf(out, "critical_path_ms %.3f\n", s.critical_path_us / 1000.0);
}
