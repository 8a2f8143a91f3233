/*
 * tests/common/test_trace_metrics.c - the timeline writer and TicTac's
 * ordering metrics.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/trace.h"
#include "scheduling/efficiency.h"
#include "worker/replay.h"

/* TicTac §3.1: E = (sum - t) / (sum - lower), S = (sum - lower) / lower,
 * resources compute, receive, send (comm each way). */
static void test_metrics(void **state)
{
	(void)state;
	/* compute 100, comm 50 each way: sum 200, lower 100 */
	assert_true(fabs(ps_ordering_efficiency(100, 50, 100) - 1.0) < 1e-12);
	assert_true(fabs(ps_ordering_efficiency(100, 50, 200) - 0.0) < 1e-12);
	assert_true(fabs(ps_ordering_efficiency(100, 50, 150) - 0.5) < 1e-12);
	assert_true(fabs(ps_speedup_bound(100, 50) - 1.0) < 1e-12);
	/* communication-bound: lower = comm */
	assert_true(fabs(ps_speedup_bound(10, 100) - 1.1) < 1e-12);
	assert_true(fabs(ps_ordering_efficiency(10, 100, 100) - 1.0) < 1e-12);
	/* no room for ordering: E undefined, S 0 */
	assert_true(isnan(ps_ordering_efficiency(100, 0, 100)));
	assert_true(ps_speedup_bound(100, 0) == 0.0);
	assert_true(ps_speedup_bound(0, 0) == 0.0);
}

static json_t *load(const char *path)
{
	json_error_t err;
	json_t *j = json_load_file(path, 0, &err);
	if (!j)
		fail_msg("%s: %s", path, err.text);
	return j;
}

static const json_t *find(const json_t *arr, const char *ph,
			  const char *name)
{
	size_t i;
	json_t *e;

	json_array_foreach(arr, i, e)
	{
		if (!strcmp(json_string_value(json_object_get(e, "ph")), ph) &&
		    !strcmp(json_string_value(json_object_get(e, "name")), name))
			return e;
	}
	return NULL;
}

static void test_timeline(void **state)
{
	char dir[] = "/tmp/ordo-trace-XXXXXX", a[128], b[128], out[128];
	const char *parts[2] = {a, b};
	ps_trace_args args = PS_TRACE_NO_ARGS;
	const json_t *e;
	json_t *j;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(a, sizeof(a), "%s/worker-0.json", dir);
	snprintf(b, sizeof(b), "%s/server-0.json", dir);
	snprintf(out, sizeof(out), "%s/timeline.json", dir);

	/* off: nothing recorded, nothing written */
	assert_int_equal(ps_trace_open("", "x", 1, "x"), 0);
	assert_false(ps_trace_enabled());
	ps_trace_span(PS_LANE_COMPUTE, "ignored", 1, 2, NULL);
	assert_int_equal(ps_trace_close(), 0);

	assert_int_equal(ps_trace_open(dir, "worker-0", 3, "worker 0"), 0);
	assert_true(ps_trace_enabled());
	args.iteration = 2;
	args.tensor = 5;
	args.ready_us = 10;
	args.sent_us = 20;
	args.acked_us = 30;
	ps_trace_span(PS_LANE_PUSH, "fc\"6\\weight", 10, 20, &args);
	ps_trace_instant(PS_LANE_RECEIVE, "fc7", 40, NULL);
	assert_int_equal(ps_trace_close(), 0);
	assert_int_equal(ps_trace_open(dir, "server-0", 1, "server 0"), 0);
	ps_trace_span(PS_LANE_UPDATE, "update", 50, 5, NULL);
	assert_int_equal(ps_trace_close(), 0);

	j = load(a);
	e = find(j, "M", "process_name");
	assert_non_null(e);
	assert_string_equal(json_string_value(json_object_get(
				json_object_get(e, "args"), "name")),
			    "worker 0");
	e = find(j, "X", "fc\"6\\weight"); /* escaped, read back intact */
	assert_non_null(e);
	assert_int_equal(json_integer_value(json_object_get(e, "pid")), 3);
	assert_int_equal(json_integer_value(json_object_get(e, "tid")),
			 PS_LANE_PUSH);
	assert_int_equal(json_integer_value(json_object_get(e, "ts")), 10);
	assert_int_equal(json_integer_value(json_object_get(e, "dur")), 20);
	assert_int_equal(json_integer_value(json_object_get(
				 json_object_get(e, "args"), "acked_us")),
			 30);
	assert_int_equal(json_integer_value(json_object_get(
				 json_object_get(e, "args"), "iteration")),
			 2);
	/* absent fields are left out */
	assert_null(json_object_get(json_object_get(e, "args"), "bytes"));
	assert_non_null(find(j, "i", "fc7"));
	json_decref(j);

	assert_int_equal(ps_trace_merge(parts, 2, out), 0);
	j = load(out);
	assert_non_null(find(j, "X", "fc\"6\\weight"));
	assert_non_null(find(j, "X", "update"));
	json_decref(j);

	unlink(a);
	unlink(b);
	unlink(out);
	rmdir(dir);
}

/* An event's name longer than its field is cut between characters: a
 * model's op names are UTF-8, and half a character is not JSON. */
static void test_event_names(void **state)
{
	(void)state;
	ps_trace_event e;
	char name[128];

	memset(name, 'a', 44);
	strcpy(name + 44, "\xc3\xa9t\xc3\xa9"); /* "été" from byte 44 */
	ps_trace_set_name(e.name, sizeof(e.name), name);
	assert_int_equal(strlen(e.name), 44); /* not 45: half of the é */
	json_t *j = json_string(e.name);
	assert_non_null(j);
	json_decref(j);
	/* a 4-byte character across the end, and names that fit */
	memset(name, 'b', 43);
	strcpy(name + 43, "\xf0\x9f\x98\x80");
	ps_trace_set_name(e.name, sizeof(e.name), name);
	assert_int_equal(strlen(e.name), 43);
	name[45] = '\0'; /* 45 bytes: fits, as given */
	memset(name, 'c', 45);
	ps_trace_set_name(e.name, sizeof(e.name), name);
	assert_string_equal(e.name, name);
	ps_trace_set_name(e.name, sizeof(e.name), "update");
	assert_string_equal(e.name, "update");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_metrics),
	    cmocka_unit_test(test_timeline),
	    cmocka_unit_test(test_event_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
