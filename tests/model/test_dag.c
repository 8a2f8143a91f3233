/*
 * tests/model/test_dag.c - the model file loader (model/dag.c): a good
 * model's values, order and stats; every rule of docs/model-format.md with
 * the exact error text (file and JSON path); large generated DAGs.
 *
 * Model files live in one mkdtemp() directory, removed at the end.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "support/tmpdir.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/dag.h"

static char tmpdir[64];

/*
 * A diamond, listed out of order so that the topological order is not the
 * index order:
 *
 *        in(1) -> left(0)  -> join(3) -> join.bwd(7) -> left.bwd(6)  ->
 * in.bwd(4)
 *              -> right(2) ->                        -> right.bwd(5) ->
 *
 * Critical path: 10 + 30 + 5 + 7 + 13 + 17 = 82 us (via left); via right
 * 10 + 20 + 5 + 7 + 11 + 17 = 70 us.
 */
static const char GOOD[] =
    "{\n"
    "  \"format\": \"ordo-model\",\n"
    "  \"version\": 1,\n"
    "  \"name\": \"diamond\",\n"
    "  \"description\": \"a test model\",\n"
    "  \"batch\": 8,\n"
    "  \"times\": {\"source\": \"roofline\", \"device\": \"Test GPU\", "
    "\"peak_flops\": 1e12, \"mem_bandwidth\": 5e11, \"overhead_us\": 5, "
    "\"note\": \"n\"},\n"
    "  \"tensors\": [\n"
    "    {\"name\": \"wa\", \"shape\": [2, 3]},\n"
    "    {\"name\": \"wb\", \"shape\": [4]},\n"
    "    {\"name\": \"wc\", \"shape\": [5, 5]},\n"
    "    {\"name\": \"wd\", \"shape\": [7]}\n"
    "  ],\n"
    "  \"ops\": [\n"
    "    {\"name\": \"left\", \"kind\": \"forward\", \"time_us\": 30, "
    "\"reads\": [\"wb\", \"wa\"], \"deps\": [\"in\"]},\n"
    "    {\"name\": \"in\", \"kind\": \"forward\", \"time_us\": 10, "
    "\"flops\": 1000, \"bytes\": 24, \"reads\": [\"wa\"], \"deps\": []},\n"
    "    {\"name\": \"right\", \"kind\": \"forward\", \"time_us\": 20, "
    "\"reads\": [\"wc\"], \"deps\": [\"in\"]},\n"
    "    {\"name\": \"join\", \"kind\": \"forward\", \"time_us\": 5, "
    "\"reads\": [\"wd\"], \"deps\": [\"left\", \"right\"]},\n"
    "    {\"name\": \"in.bwd\", \"kind\": \"backward\", \"time_us\": 17, "
    "\"grads\": [\"wa\"], \"deps\": [\"left.bwd\", \"right.bwd\"]},\n"
    "    {\"name\": \"right.bwd\", \"kind\": \"backward\", \"time_us\": 11, "
    "\"grads\": [\"wc\"], \"deps\": [\"join.bwd\"]},\n"
    "    {\"name\": \"left.bwd\", \"kind\": \"backward\", \"time_us\": 13, "
    "\"grads\": [\"wb\"], \"deps\": [\"join.bwd\"]},\n"
    "    {\"name\": \"join.bwd\", \"kind\": \"backward\", \"time_us\": 7, "
    "\"grads\": [\"wd\"], \"deps\": [\"join\"]}\n"
    "  ]\n"
    "}\n";

/* A valid top level; a test appends "tensors" and "ops" and the brace. */
#define HEAD                                                                   \
	"{\"format\": \"ordo-model\", \"version\": 1, \"name\": \"m\", "       \
	"\"batch\": 1, \"times\": {\"source\": \"measured\"}, "

/* ---- helpers ---------------------------------------------------------- */

/* Writes text to tmpdir/name; returns the path (static, one per call). */
static const char *write_file(const char *name, const char *text)
{
	const char *path = test_write_file(tmpdir, name, text);

	assert_non_null(path);
	return path;
}

/* GOOD with `from` (which must occur exactly once) replaced by `to`. */
static const char *edit(const char *from, const char *to)
{
	static char buf[16384];
	const char *at = strstr(GOOD, from);

	assert_non_null(at);
	assert_null(strstr(at + 1, from));
	assert_true(strlen(GOOD) + strlen(to) < sizeof(buf));
	snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - GOOD), GOOD, to,
	         at + strlen(from));
	return buf;
}

static ps_dag *load_ok(const char *text, double scale)
{
	const char *path = write_file("good.json", text);
	ps_dag *d = NULL;
	char err[1024] = "";
	int rc = ps_dag_load(path, scale, &d, err, sizeof(err));

	if (rc)
		print_error("unexpected error: %s\n", err);
	assert_int_equal(rc, PS_OK);
	assert_non_null(d);
	return d;
}

/* Asserts that loading text fails with want_rc and exactly
 * "FILE: " + want. */
static void expect_error_rc(const char *text, int want_rc, const char *want)
{
	const char *path = write_file("bad.json", text);
	char err[1024], full[1200];
	ps_dag *d = NULL;

	memset(err, 'x', sizeof(err));
	assert_int_equal(ps_dag_load(path, 1.0, &d, err, sizeof(err)), want_rc);
	assert_null(d);
	snprintf(full, sizeof(full), "%s: %s", path, want);
	assert_string_equal(err, full);
}

static void expect_error(const char *text, const char *want)
{
	expect_error_rc(text, PS_EINVAL, want);
}

static char *stats_text(const ps_dag *d)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	ps_dag_print_stats(d, f);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* ---- fixtures --------------------------------------------------------- */

static int group_setup(void **state)
{
	(void)state;
	return test_tmpdir_create(tmpdir, sizeof(tmpdir), "dag");
}

static int group_teardown(void **state)
{
	(void)state;
	return test_tmpdir_remove(tmpdir);
}

/* ---- a good model ----------------------------------------------------- */

static void test_good_values(void **state)
{
	ps_dag *d;
	const ps_dag_tensor *t;
	const ps_dag_op *op;

	(void)state;
	d = load_ok(GOOD, 1.0);
	assert_string_equal(d->name, "diamond");
	assert_string_equal(d->description, "a test model");
	assert_int_equal(d->batch, 8);
	assert_string_equal(d->time_source, "roofline");
	assert_string_equal(d->device, "Test GPU");
	assert_int_equal(d->ntensors, 4);
	assert_int_equal(d->nops, 8);

	t = &d->tensors[2];
	assert_string_equal(t->name, "wc");
	assert_int_equal(t->ndim, 2);
	assert_int_equal(t->shape[0], 5);
	assert_int_equal(t->shape[1], 5);
	assert_int_equal(t->numel, 25);
	assert_int_equal(t->bytes, 100);

	op = &d->ops[1];
	assert_string_equal(op->name, "in");
	assert_int_equal(op->kind, PS_OP_FORWARD);
	assert_true(op->time_us == 10.0);
	assert_true(op->flops == 1000.0);
	assert_true(op->bytes == 24.0);
	assert_int_equal(op->ndeps, 0);
	assert_int_equal(op->ntensors, 1);
	assert_int_equal(op->tensors[0], 0);
	assert_true(d->ops[0].flops == 0.0 && d->ops[0].bytes == 0.0);

	op = &d->ops[0]; /* left: reads wb, wa; deps in */
	assert_int_equal(op->ntensors, 2);
	assert_int_equal(op->tensors[0], 1);
	assert_int_equal(op->tensors[1], 0);
	assert_int_equal(op->ndeps, 1);
	assert_int_equal(op->deps[0], 1);

	op = &d->ops[3]; /* join: deps left, right */
	assert_int_equal(op->ndeps, 2);
	assert_int_equal(op->deps[0], 0);
	assert_int_equal(op->deps[1], 2);

	op = &d->ops[4]; /* in.bwd */
	assert_int_equal(op->kind, PS_OP_BACKWARD);
	assert_int_equal(op->ntensors, 1);
	assert_int_equal(op->tensors[0], 0);

	assert_int_equal(ps_dag_find_op(d, "join"), 3);
	assert_int_equal(ps_dag_find_op(d, "join.bwd"), 7);
	assert_int_equal(ps_dag_find_op(d, "nope"), -1);
	assert_int_equal(ps_dag_find_op(d, "wa"), -1);
	assert_int_equal(ps_dag_find_tensor(d, "wd"), 3);
	assert_int_equal(ps_dag_find_tensor(d, "in"), -1);
	ps_dag_free(&d);
	assert_null(d);
	ps_dag_free(&d); /* NULL is fine */
}

static void test_good_order(void **state)
{
	static const uint32_t topo[] = {1, 0, 2, 3, 7, 5, 6, 4};
	/* succs of each op, sorted by index */
	static const uint32_t nsuccs[] = {1, 2, 1, 1, 0, 1, 1, 2};
	static const uint32_t succs[][2] = {{3}, {0, 2}, {3}, {7},
	                                    {0}, {4},    {4}, {5, 6}};
	ps_dag *d;
	uint32_t i, k;

	(void)state;
	d = load_ok(GOOD, 1.0);
	for (i = 0; i < 8; i++)
		assert_int_equal(d->topo[i], topo[i]);
	for (i = 0; i < 8; i++) {
		assert_int_equal(d->ops[i].nsuccs, nsuccs[i]);
		for (k = 0; k < nsuccs[i]; k++)
			assert_int_equal(d->ops[i].succs[k], succs[i][k]);
	}
	/* wa: read by left (index 0) and in (index 1); in comes first in
	 * topological order */
	assert_int_equal(d->tensors[0].first_reader, 1);
	assert_int_equal(d->tensors[1].first_reader, 0);
	assert_int_equal(d->tensors[2].first_reader, 2);
	assert_int_equal(d->tensors[3].first_reader, 3);
	assert_int_equal(d->tensors[0].grad_op, 4);
	assert_int_equal(d->tensors[1].grad_op, 6);
	assert_int_equal(d->tensors[2].grad_op, 5);
	assert_int_equal(d->tensors[3].grad_op, 7);
	ps_dag_free(&d);
}

static void test_good_stats(void **state)
{
	ps_dag_stats s;
	ps_dag *d;
	char *text;

	(void)state;
	d = load_ok(GOOD, 1.0);
	ps_dag_get_stats(d, &s);
	assert_int_equal(s.tensors, 4);
	assert_int_equal(s.ops, 8);
	assert_int_equal(s.forward_ops, 4);
	assert_int_equal(s.backward_ops, 4);
	assert_int_equal(s.params, 6 + 4 + 25 + 7);
	assert_int_equal(s.bytes, 4 * 42);
	assert_int_equal(s.largest_tensor_bytes, 100);
	assert_true(fabs(s.forward_us - 65) < 1e-9);
	assert_true(fabs(s.backward_us - 48) < 1e-9);
	assert_true(fabs(s.critical_path_us - 82) < 1e-9);

	text = stats_text(d);
	assert_non_null(strstr(text, "model diamond\n"));
	assert_non_null(strstr(text, "\nbatch 8\n"));
	assert_non_null(strstr(text, "\ntimes roofline (Test GPU)\n"));
	assert_non_null(strstr(text, "\ntensors 4\n"));
	assert_non_null(strstr(text, "\nparams 42\n"));
	assert_non_null(strstr(text, "\nbytes 168\n"));
	assert_non_null(strstr(text, "\nlargest_tensor_bytes 100\n"));
	assert_non_null(strstr(text, "\nops 8 (4 forward, 4 backward)\n"));
	assert_non_null(strstr(text, "\nforward_ms 0.065\n"));
	assert_non_null(strstr(text, "\nbackward_ms 0.048\n"));
	assert_non_null(strstr(text, "\ncritical_path_ms 0.082\n"));
	free(text);
	ps_dag_free(&d);
}

static void test_compute_scale(void **state)
{
	char err[256];
	ps_dag_stats s;
	ps_dag *d;
	const char *path;

	(void)state;
	d = load_ok(GOOD, 2.5);
	assert_true(fabs(d->ops[0].time_us - 75) < 1e-9);
	ps_dag_get_stats(d, &s);
	assert_true(fabs(s.forward_us - 162.5) < 1e-9);
	assert_true(fabs(s.critical_path_us - 205) < 1e-9);
	ps_dag_free(&d);

	path = write_file("scale.json", GOOD);
	assert_int_equal(ps_dag_load(path, 0, &d, err, sizeof(err)), PS_EINVAL);
	assert_non_null(strstr(err, "compute_scale"));
	assert_int_equal(ps_dag_load(path, -1, &d, err, sizeof(err)),
	                 PS_EINVAL);
	assert_int_equal(ps_dag_load(path, NAN, &d, err, sizeof(err)),
	                 PS_EINVAL);
	assert_int_equal(ps_dag_load(path, INFINITY, &d, err, sizeof(err)),
	                 PS_EINVAL);
	assert_null(d);
	/* an op time that the scale makes too large */
	expect_error(edit("\"time_us\": 30", "\"time_us\": 1e300"),
	             "$.ops[0].time_us: 1e+300 us (times compute_scale 1) is "
	             "too large (at most 1e+15)");
}

static void test_measured_times(void **state)
{
	ps_dag *d;

	(void)state;
	d = load_ok(edit("{\"source\": \"roofline\", \"device\": \"Test GPU\", "
	                 "\"peak_flops\": 1e12, \"mem_bandwidth\": 5e11, "
	                 "\"overhead_us\": 5, \"note\": \"n\"}",
	                 "{\"source\": \"measured\"}"),
	            1.0);
	assert_string_equal(d->time_source, "measured");
	assert_string_equal(d->device, "");
	ps_dag_free(&d);
	/* description is optional */
	d = load_ok(edit("  \"description\": \"a test model\",\n", ""), 1.0);
	assert_string_equal(d->description, "");
	ps_dag_free(&d);
}

/* ---- errors: files and syntax ------------------------------------------ */

static void test_missing_file(void **state)
{
	char err[512], path[128];
	ps_dag *d = NULL;

	(void)state;
	snprintf(path, sizeof(path), "%s/no-such-model.json", tmpdir);
	assert_int_equal(ps_dag_load(path, 1.0, &d, err, sizeof(err)),
	                 PS_ENOENT);
	assert_null(d);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "cannot open"));
}

static void test_bad_json(void **state)
{
	const char *path;
	char err[512], want[256];
	ps_dag *d = NULL;

	(void)state;
	path = write_file("syntax.json", "{\n  \"format\": \"ordo-model\",\n"
	                                 "  \"version\": 1,,\n}\n");
	assert_int_equal(ps_dag_load(path, 1.0, &d, err, sizeof(err)),
	                 PS_EINVAL);
	assert_null(d);
	snprintf(want, sizeof(want), "%s:3:16: invalid JSON: ", path);
	assert_memory_equal(err, want, strlen(want));

	/* duplicate keys are rejected by the parser */
	path = write_file("dupkey.json",
	                  edit("\"batch\": 8,", "\"batch\": 8, \"batch\": 9,"));
	assert_int_equal(ps_dag_load(path, 1.0, &d, err, sizeof(err)),
	                 PS_EINVAL);
	snprintf(want, sizeof(want), "%s:6:", path);
	assert_memory_equal(err, want, strlen(want));
	assert_non_null(strstr(err, "invalid JSON: duplicate object key"));

	expect_error("[1, 2]", "$: must be an object (an ordo model)");
}

/* ---- errors: top level ------------------------------------------------ */

static void test_format_version(void **state)
{
	(void)state;
	expect_error(edit("\"ordo-model\"", "\"ordo-modle\""),
	             "$.format: must be \"ordo-model\"");
	expect_error(edit("\"ordo-model\"", "1"),
	             "$.format: must be \"ordo-model\"");
	expect_error(edit("\"version\": 1", "\"version\": 2"),
	             "$.version: unsupported version 2 (this is version 1)");
	expect_error(edit("\"version\": 1", "\"version\": 1.0"),
	             "$.version: must be an integer");
}

static void test_missing_fields(void **state)
{
	(void)state;
	expect_error(edit("  \"batch\": 8,\n", ""), "$: missing field 'batch'");
	expect_error(edit("  \"format\": \"ordo-model\",\n", ""),
	             "$: missing field 'format'");
	expect_error(edit("\"peak_flops\": 1e12, ", ""),
	             "$.times: missing field 'peak_flops'");
	expect_error(edit("\"time_us\": 10, ", ""),
	             "$.ops[1]: missing field 'time_us'");
	expect_error(edit("\"time_us\": 30, \"reads\": [\"wb\", \"wa\"], "
	                  "\"deps\": [\"in\"]",
	                  "\"time_us\": 30, \"reads\": [\"wb\", \"wa\"]"),
	             "$.ops[0]: missing field 'deps'");
	expect_error(
	    edit("{\"name\": \"wb\", \"shape\": [4]}", "{\"name\": \"wb\"}"),
	    "$.tensors[1]: missing field 'shape'");
	expect_error(edit("\"kind\": \"backward\", \"time_us\": 7, ",
	                  "\"time_us\": 7, "),
	             "$.ops[7]: missing field 'kind'");
}

static void test_unknown_fields(void **state)
{
	(void)state;
	expect_error(edit("\"batch\": 8,", "\"batch\": 8, \"batchsize\": 8,"),
	             "$: unknown field 'batchsize'");
	expect_error(edit("{\"name\": \"wb\", \"shape\": [4]}",
	                  "{\"name\": \"wb\", \"shape\": [4], \"colour\": 1}"),
	             "$.tensors[1]: unknown field 'colour'");
	expect_error(edit("\"time_us\": 20, ", "\"time_us\": 20, \"tme\": 1, "),
	             "$.ops[2]: unknown field 'tme'");
	expect_error(edit("\"note\": \"n\"", "\"notes\": \"n\""),
	             "$.times: unknown field 'notes'");
	/* reads on a backward op, grads on a forward op */
	expect_error(
	    edit("\"time_us\": 20, ", "\"time_us\": 20, \"grads\": [], "),
	    "$.ops[2].grads: forward ops have no 'grads' (use "
	    "'reads')");
	expect_error(
	    edit("\"time_us\": 7, ", "\"time_us\": 7, \"reads\": [], "),
	    "$.ops[7].reads: backward ops have no 'reads' (use "
	    "'grads')");
}

static void test_wrong_types(void **state)
{
	(void)state;
	expect_error(edit("\"batch\": 8", "\"batch\": \"8\""),
	             "$.batch: must be an integer");
	expect_error(edit("\"batch\": 8", "\"batch\": 0"),
	             "$.batch: must be an integer from 1 to 4294967295");
	expect_error(edit("\"name\": \"diamond\"", "\"name\": 7"),
	             "$.name: must be a string");
	expect_error(edit("\"name\": \"diamond\"",
	                  "\"name\": \"0123456789012345678901234567890123456"
	                  "789012345678901234567890123\""),
	             "$.name: must be 1 to 63 characters long");
	expect_error(edit("\"name\": \"diamond\"", "\"name\": \"\""),
	             "$.name: must be 1 to 63 characters long");
	expect_error(edit("\"source\": \"roofline\"", "\"source\": \"guess\""),
	             "$.times.source: must be \"roofline\" or \"measured\"");
	expect_error(edit("\"peak_flops\": 1e12", "\"peak_flops\": 0"),
	             "$.times.peak_flops: must be a finite number > 0");
	expect_error(edit("\"overhead_us\": 5", "\"overhead_us\": -1"),
	             "$.times.overhead_us: must be a finite number >= 0");
	expect_error(edit("\"shape\": [4]", "\"shape\": \"4\""),
	             "$.tensors[1].shape: must be an array of integers");
	expect_error(edit("\"shape\": [4]", "\"shape\": [4.0]"),
	             "$.tensors[1].shape[0]: must be an integer >= 1");
	expect_error(edit("\"deps\": [\"join\"]", "\"deps\": \"join\""),
	             "$.ops[7].deps: must be an array of names");
	expect_error(edit("\"deps\": [\"join\"]", "\"deps\": [3]"),
	             "$.ops[7].deps[0]: must be an op name (a string)");
	expect_error(edit("\"grads\": [\"wd\"]", "\"grads\": [null]"),
	             "$.ops[7].grads[0]: must be a tensor name (a string)");
	expect_error(edit("\"kind\": \"backward\", \"time_us\": 7",
	                  "\"kind\": \"bwd\", \"time_us\": 7"),
	             "$.ops[7].kind: must be \"forward\" or \"backward\"");
	expect_error(edit("\"flops\": 1000", "\"flops\": -1000"),
	             "$.ops[1].flops: must be a finite number >= 0");
	expect_error(HEAD "\"tensors\": {}, \"ops\": []}",
	             "$.tensors: must be a non-empty array");
	expect_error(HEAD "\"tensors\": [3], \"ops\": [{}]}",
	             "$.tensors[0]: must be an object");
	expect_error(HEAD "\"tensors\": [{\"name\": \"w\", \"shape\": [1]}], "
	                  "\"ops\": [[]]}",
	             "$.ops[0]: must be an object");
}

static void test_bad_times(void **state)
{
	(void)state;
	/* JSON cannot carry NaN: a string and a negative number instead */
	expect_error(edit("\"time_us\": 30", "\"time_us\": \"NaN\""),
	             "$.ops[0].time_us: must be a finite number >= 0");
	expect_error(edit("\"time_us\": 30", "\"time_us\": -0.5"),
	             "$.ops[0].time_us: must be a finite number >= 0");
	expect_error(edit("\"time_us\": 30", "\"time_us\": null"),
	             "$.ops[0].time_us: must be a finite number >= 0");
}

static void test_empty_lists(void **state)
{
	static const char tensors[] =
	    "    {\"name\": \"wa\", \"shape\": [2, 3]},\n"
	    "    {\"name\": \"wb\", \"shape\": [4]},\n"
	    "    {\"name\": \"wc\", \"shape\": [5, 5]},\n"
	    "    {\"name\": \"wd\", \"shape\": [7]}\n";

	(void)state;
	expect_error(edit(tensors, ""), "$.tensors: must be a non-empty array");
	expect_error(HEAD "\"tensors\": [{\"name\": \"w\", \"shape\": [1]}], "
	                  "\"ops\": []}",
	             "$.ops: must be a non-empty array");
	expect_error(HEAD "\"tensors\": [{\"name\": \"w\", \"shape\": [1]}]}",
	             "$: missing field 'ops'");
}

/* ---- errors: names and references ------------------------------------- */

static void test_unknown_names(void **state)
{
	(void)state;
	expect_error(edit("\"wa\"], \"deps\": [\"in\"]}",
	                  "\"wa\"], \"deps\": [\"inn\"]}"),
	             "$.ops[0].deps[0]: unknown op 'inn'");
	expect_error(edit("\"deps\": [\"left\", \"right\"]",
	                  "\"deps\": [\"left\", \"rite\"]"),
	             "$.ops[3].deps[1]: unknown op 'rite'");
	expect_error(
	    edit("\"reads\": [\"wb\", \"wa\"]", "\"reads\": [\"wb\", \"wz\"]"),
	    "$.ops[0].reads[1]: unknown tensor 'wz'");
	expect_error(edit("\"grads\": [\"wc\"]", "\"grads\": [\"wcc\"]"),
	             "$.ops[5].grads[0]: unknown tensor 'wcc'");
	/* a name in the wrong namespace */
	expect_error(edit("\"grads\": [\"wc\"]", "\"grads\": [\"right\"]"),
	             "$.ops[5].grads[0]: unknown tensor 'right'");
}

static void test_duplicates(void **state)
{
	(void)state;
	expect_error(edit("{\"name\": \"right\"", "{\"name\": \"left\""),
	             "$.ops[2].name: duplicate op name 'left' (also $.ops[0])");
	expect_error(edit("{\"name\": \"wc\"", "{\"name\": \"wa\""),
	             "$.tensors[2].name: duplicate tensor name 'wa' (also "
	             "$.tensors[0])");
	expect_error(edit("\"deps\": [\"left\", \"right\"]",
	                  "\"deps\": [\"left\", \"right\", \"left\"]"),
	             "$.ops[3].deps[2]: dependency 'left' listed twice");
	expect_error(edit("\"reads\": [\"wb\", \"wa\"]",
	                  "\"reads\": [\"wb\", \"wa\", \"wb\"]"),
	             "$.ops[0].reads[2]: tensor 'wb' listed twice");
}

static void test_self_dependency(void **state)
{
	(void)state;
	expect_error(edit("\"deps\": [\"left\", \"right\"]",
	                  "\"deps\": [\"left\", \"join\"]"),
	             "$.ops[3].deps[1]: op 'join' depends on itself");
}

static void test_cycle(void **state)
{
	(void)state;
	/* in -> left -> join -> in; printed in running order from the op
	 * with the lowest index */
	expect_error(edit("\"deps\": []", "\"deps\": [\"join\"]"),
	             "$.ops: cycle: left -> join -> in -> left");
	/* a two-op cycle among backward ops */
	expect_error(edit("\"grads\": [\"wc\"], \"deps\": [\"join.bwd\"]",
	                  "\"grads\": [\"wc\"], \"deps\": [\"join.bwd\", "
	                  "\"in.bwd\"]"),
	             "$.ops: cycle: in.bwd -> right.bwd -> in.bwd");
}

static void test_forward_on_backward(void **state)
{
	(void)state;
	expect_error(edit("\"wa\"], \"deps\": [\"in\"]}",
	                  "\"wa\"], \"deps\": [\"in\", \"join.bwd\"]}"),
	             "$.ops[0].deps[1]: forward op 'left' depends on backward "
	             "op 'join.bwd' ($.ops[7])");
}

static void test_tensor_coverage(void **state)
{
	(void)state;
	/* wd read by nobody */
	expect_error(edit("\"reads\": [\"wd\"], ", ""),
	             "$.tensors[3]: tensor 'wd' is not read by any forward "
	             "op");
	/* wc: no gradient producer */
	expect_error(edit("\"grads\": [\"wc\"], ", ""),
	             "$.tensors[2]: tensor 'wc' has no gradient producer (no "
	             "backward op lists it in 'grads')");
	/* wd: two gradient producers */
	expect_error(edit("\"grads\": [\"wa\"]", "\"grads\": [\"wa\", \"wd\"]"),
	             "$.ops[7].grads[0]: tensor 'wd' already has its gradient "
	             "produced by op 'in.bwd' ($.ops[4])");
}

static void test_shapes(void **state)
{
	const char *path;
	char err[512];
	ps_dag *d = NULL;

	(void)state;
	expect_error(edit("\"shape\": [4]", "\"shape\": []"),
	             "$.tensors[1].shape: must have 1 to 8 dimensions (has "
	             "0)");
	expect_error(
	    edit("\"shape\": [4]", "\"shape\": [1, 1, 1, 1, 1, 1, 1, 1, 4]"),
	    "$.tensors[1].shape: must have 1 to 8 dimensions (has "
	    "9)");
	expect_error(edit("\"shape\": [2, 3]", "\"shape\": [2, 0]"),
	             "$.tensors[0].shape[1]: must be an integer >= 1");
	expect_error(edit("\"shape\": [2, 3]", "\"shape\": [2, -3]"),
	             "$.tensors[0].shape[1]: must be an integer >= 1");
	/* 2^32 x 2^32 elements */
	expect_error(
	    edit("\"shape\": [2, 3]", "\"shape\": [4294967296, 4294967296]"),
	    "$.tensors[0].shape[1]: tensor size (4 bytes x "
	    "elements) overflows 64 bits");
	/* 2^62 elements: 2^64 bytes */
	expect_error(
	    edit("\"shape\": [2, 3]", "\"shape\": [4611686018427387904]"),
	    "$.tensors[0].shape[0]: tensor size (4 bytes x "
	    "elements) overflows 64 bits");
	/* beyond int64: the parser refuses it */
	path =
	    write_file("huge.json", edit("\"shape\": [2, 3]",
	                                 "\"shape\": [99999999999999999999]"));
	assert_int_equal(ps_dag_load(path, 1.0, &d, err, sizeof(err)),
	                 PS_EINVAL);
	assert_null(d);
	assert_non_null(strstr(err, "invalid JSON"));
	/* each fits (6 and 2^62 - 4 elements), the sum does not */
	expect_error(edit("\"shape\": [4]", "\"shape\": [4611686018427387900]"),
	             "$.tensors[1].shape: the total size of all tensors "
	             "overflows 64 bits");
	/* eight dimensions are fine */
	d = load_ok(
	    edit("\"shape\": [4]", "\"shape\": [1, 2, 1, 2, 1, 2, 1, 3]"), 1.0);
	assert_int_equal(d->tensors[1].ndim, 8);
	assert_int_equal(d->tensors[1].numel, 24);
	ps_dag_free(&d);
}

/* ---- large generated DAGs --------------------------------------------- */

/* Writes a chain: n/2 forward ops f0 -> f1 -> ..., then backward ops
 * b(n/2-1) -> ... -> b0, each pair with its tensor; listed in reverse
 * order, so that the index order is the opposite of the only valid
 * order. */
static const char *write_chain(uint32_t n)
{
	static char path[128];
	uint32_t half = n / 2, i;
	FILE *f;

	snprintf(path, sizeof(path), "%s/chain.json", tmpdir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "{\"format\": \"ordo-model\", \"version\": 1, "
	           "\"name\": \"chain\", \"batch\": 1, "
	           "\"times\": {\"source\": \"measured\"},\n\"tensors\": [");
	for (i = 0; i < half; i++)
		fprintf(f, "%s{\"name\": \"t%u\", \"shape\": [%u]}",
		        i ? ",\n" : "", i, i + 1);
	fprintf(f, "],\n\"ops\": [");
	/* ops index 0..half-1: b0 .. b(half-1) (b_i depends on b_(i+1),
	 * b(half-1) on f(half-1)); then f(half-1) .. f0 */
	for (i = 0; i < half; i++) {
		fprintf(f,
		        "%s{\"name\": \"b%u\", \"kind\": \"backward\", "
		        "\"time_us\": 2, \"grads\": [\"t%u\"], ",
		        i ? ",\n" : "", i, i);
		if (i + 1 < half)
			fprintf(f, "\"deps\": [\"b%u\"]}", i + 1);
		else
			fprintf(f, "\"deps\": [\"f%u\"]}", i);
	}
	for (i = half; i-- > 0;) {
		fprintf(f,
		        ",\n{\"name\": \"f%u\", \"kind\": \"forward\", "
		        "\"time_us\": 1, \"reads\": [\"t%u\"], ",
		        i, i);
		if (i > 0)
			fprintf(f, "\"deps\": [\"f%u\"]}", i - 1);
		else
			fprintf(f, "\"deps\": []}");
	}
	fprintf(f, "]}\n");
	assert_int_equal(fclose(f), 0);
	return path;
}

static void test_large_chain(void **state)
{
	const uint32_t n = 5000, half = n / 2;
	const char *path = write_chain(n);
	char err[512] = "";
	ps_dag_stats s;
	ps_dag *d = NULL;
	uint32_t i;

	(void)state;
	/* How long loading takes is not asserted (a busy machine); a loader
	 * that blows up on 5000 ops is ended by CTest's TIMEOUT. */
	assert_int_equal(ps_dag_load(path, 1.0, &d, err, sizeof(err)), PS_OK);
	assert_int_equal(d->nops, n);
	assert_int_equal(d->ntensors, half);
	/* f0 (index n-1) .. f(half-1) (index half), then b(half-1) .. b0 */
	for (i = 0; i < half; i++)
		assert_int_equal(d->topo[i], n - 1 - i);
	for (i = 0; i < half; i++)
		assert_int_equal(d->topo[half + i], half - 1 - i);
	for (i = 0; i < half; i++) {
		assert_int_equal(d->tensors[i].grad_op, i);
		assert_int_equal(d->tensors[i].first_reader, n - 1 - i);
	}
	assert_int_equal(ps_dag_find_op(d, "f1234"), n - 1 - 1234);
	assert_int_equal(ps_dag_find_tensor(d, "t2499"), 2499);
	ps_dag_get_stats(d, &s);
	assert_true(fabs(s.critical_path_us - 3.0 * half) < 1e-6);
	assert_int_equal(s.params, (uint64_t)half * (half + 1) / 2);
	ps_dag_free(&d);
}

/* One root and n-1 forward ops that all depend on it (listed in reverse),
 * plus one backward op: among the many ready ops the lowest index comes
 * first. */
static void test_large_fan_out(void **state)
{
	const uint32_t n = 5000;
	char path[128], err[512] = "";
	ps_dag *d = NULL;
	uint32_t i;
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/fan.json", tmpdir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "{\"format\": \"ordo-model\", \"version\": 1, "
	           "\"name\": \"fan\", \"batch\": 1, "
	           "\"times\": {\"source\": \"measured\"},\n"
	           "\"tensors\": [{\"name\": \"w\", \"shape\": [1]}],\n"
	           "\"ops\": [");
	for (i = 0; i + 2 < n; i++)
		fprintf(f,
		        "{\"name\": \"f%u\", \"kind\": \"forward\", "
		        "\"time_us\": %u, \"deps\": [\"root\"]},\n",
		        i, i % 7);
	fprintf(f,
	        "{\"name\": \"root\", \"kind\": \"forward\", "
	        "\"time_us\": 1, \"reads\": [\"w\"], \"deps\": []},\n"
	        "{\"name\": \"bwd\", \"kind\": \"backward\", "
	        "\"time_us\": 1, \"grads\": [\"w\"], \"deps\": [\"f0\"]}]}\n");
	assert_int_equal(fclose(f), 0);

	assert_int_equal(ps_dag_load(path, 1.0, &d, err, sizeof(err)), PS_OK);
	assert_int_equal(d->topo[0], n - 2);
	/* bwd (index n-1) becomes ready after f0 but has the highest index */
	for (i = 1; i + 1 < n; i++)
		assert_int_equal(d->topo[i], i - 1);
	assert_int_equal(d->topo[n - 1], n - 1);
	assert_int_equal(d->ops[n - 2].nsuccs, n - 2);
	ps_dag_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_good_values),
	    cmocka_unit_test(test_good_order),
	    cmocka_unit_test(test_good_stats),
	    cmocka_unit_test(test_compute_scale),
	    cmocka_unit_test(test_measured_times),
	    cmocka_unit_test(test_missing_file),
	    cmocka_unit_test(test_bad_json),
	    cmocka_unit_test(test_format_version),
	    cmocka_unit_test(test_missing_fields),
	    cmocka_unit_test(test_unknown_fields),
	    cmocka_unit_test(test_wrong_types),
	    cmocka_unit_test(test_bad_times),
	    cmocka_unit_test(test_empty_lists),
	    cmocka_unit_test(test_unknown_names),
	    cmocka_unit_test(test_duplicates),
	    cmocka_unit_test(test_self_dependency),
	    cmocka_unit_test(test_cycle),
	    cmocka_unit_test(test_forward_on_backward),
	    cmocka_unit_test(test_tensor_coverage),
	    cmocka_unit_test(test_shapes),
	    cmocka_unit_test(test_large_chain),
	    cmocka_unit_test(test_large_fan_out),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
