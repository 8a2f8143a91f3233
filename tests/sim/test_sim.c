/*
 * tests/sim/test_sim.c - ps-sim's model, checked against hand-computed
 * numbers, TicTac's examples, its bounds on random DAGs, and itself.
 *
 * Models are written as JSON into a scratch directory (docs/model-format.md)
 * and loaded with ps_dag_load, exactly as ps-sim loads model.file.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/config.h"
#include "model/dag.h"
#include "sim/cluster.h"
#include "sim/random_dag.h"
#include "sim/events.h"
#include "sim/fit.h"
#include "sim/link.h"
#include "support/tmpdir.h"

static char dir[256];

/* |a - b| <= eps, with both values in the failure message */
#define assert_double_equal(a, b, eps)                                         \
	do {                                                                   \
		double a_ = (a), b_ = (b);                                     \
		if (!(fabs(a_ - b_) <= (eps)))                                 \
			fail_msg("%s = %.9f, want %.9f", #a, a_, b_);          \
	} while (0)

static int group_setup(void **state)
{
	(void)state;
	return test_tmpdir_create(dir, sizeof(dir), "sim");
}

static int group_teardown(void **state)
{
	(void)state;
	return test_tmpdir_remove(dir);
}

/* ---- helpers ----------------------------------------------------------- */

static void set(ps_config *cfg, const char *key, const char *value)
{
	char err[512];
	int rc = ps_config_set_kv(cfg, key, value, "--set", err, sizeof(err));
	if (rc != PS_OK)
		fail_msg("%s=%s: %s", key, value, err);
}

static ps_dag *load(const char *name, const char *json)
{
	const char *path = test_write_file(dir, name, json);
	char err[1024];
	ps_dag *d = NULL;

	assert_non_null(path);
	if (ps_dag_load(path, 1.0, &d, err, sizeof(err)) != PS_OK)
		fail_msg("%s", err);
	return d;
}

/* Simulates; returns the result (caller frees). */
static ps_sim_result simulate(const ps_config *cfg, const ps_dag *d)
{
	ps_sim_result r;
	ps_link_model lm;
	char err[1024];

	assert_int_equal(ps_link_model_from_config(cfg, &lm, err, sizeof(err)),
			 PS_OK);
	if (ps_sim_run(cfg, d, &lm, &r, err, sizeof(err)) != PS_OK)
		fail_msg("ps_sim_run: %s", err);
	return r;
}

/* Simulates and checks iteration 1's time and, unless lower < 0, the
 * lower bound. */
static void expect_times(const ps_config *cfg, const ps_dag *d, double iter1,
			 double lower)
{
	ps_sim_result r = simulate(cfg, d);

	assert_double_equal(r.iter_us[1], iter1, 1e-6);
	if (lower >= 0)
		assert_double_equal(r.bounds.lower_us, lower, 1e-6);
	ps_sim_result_free(&r);
}

/* The hand computations below are of a plain PS: whole tensors, fifo. */
static void base_config(ps_config *cfg)
{
	ps_config_defaults(cfg);
	set(cfg, "scheduling.preset", "baseline");
	set(cfg, "link.latency_us", "10");
	set(cfg, "link.bandwidth_gbps", "1"); /* b = 0.008 us per byte */
	set(cfg, "link.gamma", "1");
	set(cfg, "sim.aggregate_ns_per_byte", "0");
	set(cfg, "sim.update_ns_per_byte", "0");
	set(cfg, "train.iterations", "3");
}

#define HEAD                                                                   \
	"{\"format\":\"ordo-model\",\"version\":1,\"name\":\"%s\","            \
	"\"batch\":8,\"times\":{\"source\":\"measured\"},"

/* ---- the event heap ---------------------------------------------------- */

static void test_heap_order(void **state)
{
	ps_sim_heap h = PS_SIM_HEAP_INIT;
	ps_sim_event e;
	double last = -1.0;
	uint64_t last_seq = 0;
	(void)state;

	/* equal times come out in insertion order */
	for (uint32_t i = 0; i < 5000; i++)
		assert_int_equal(ps_sim_heap_push(&h, (double)((i * 7919u) % 50),
						  0, i, i), PS_OK);
	for (uint32_t i = 0; i < 5000; i++) {
		assert_int_equal(ps_sim_heap_pop(&h, &e), 1);
		assert_true(e.t >= last);
		if (e.t == last)
			assert_true(e.seq > last_seq);
		assert_int_equal(e.seq, e.arg);
		last = e.t;
		last_seq = e.seq;
	}
	assert_int_equal(ps_sim_heap_pop(&h, &e), 0);
	ps_sim_heap_free(&h);
}

/* ---- hand-checked: one tensor, one link --------------------------------- */

static const char one_tensor[] = HEAD
	"\"tensors\":[{\"name\":\"w\",\"shape\":[250000]}],"
	"\"ops\":["
	"{\"name\":\"f\",\"kind\":\"forward\",\"time_us\":1000,"
	"\"reads\":[\"w\"],\"deps\":[]},"
	"{\"name\":\"b\",\"kind\":\"backward\",\"time_us\":2000,"
	"\"grads\":[\"w\"],\"deps\":[\"f\"]}]}";

/* one_tensor's DAG, and cfg with `sharing` links, 0.5 ns per byte to sum
 * a push and 1 to update */
static ps_dag *one_tensor_job(ps_config *cfg, const char *sharing)
{
	char json[sizeof(one_tensor) + 16];

	snprintf(json, sizeof(json), one_tensor, "one");
	base_config(cfg);
	set(cfg, "link.sharing", sharing);
	set(cfg, "sim.aggregate_ns_per_byte", "0.5");
	set(cfg, "sim.update_ns_per_byte", "1");
	return load("one.json", json);
}

static void test_one_tensor_by_hand(void **state)
{
	ps_config cfg;
	ps_dag *d = one_tensor_job(&cfg, "fifo");
	ps_sim_result r;
	(void)state;

	r = simulate(&cfg, d);
	/* 1,000,000 bytes: a + b*m = 10 + 8000 us each way; aggregation
	 * 500 us, update 1000 us; compute 3000 us */
	assert_double_equal(r.iter_us[0], 3000.0, 1e-9);
	assert_double_equal(r.iter_us[1], 3000.0 + 2 * 8010.0 + 1500.0, 1e-9);
	assert_double_equal(r.iter_us[2], 20520.0, 1e-9);
	assert_double_equal(r.iteration_us, 20520.0, 1e-9);
	/* the cycle: compute, push, aggregate + update, parameters back */
	assert_double_equal(r.makespan_us, 20520.0, 1e-9);
	assert_double_equal(r.samples_per_second,
			    3 * 8 / ((3000.0 + 2 * 20520.0) / 1e6), 1e-6);
	/* waited for parameters: 2 iterations x 17520 us */
	assert_double_equal(r.straggler, 2 * 17520.0 / (3000.0 + 2 * 20520.0),
			    1e-12);
	/* bounds: lower = busiest resource = one message per link 8010;
	 * worst = 3000 + 2 * 8010 + 1500 + one push ack (10) */
	assert_double_equal(r.bounds.lower_us, 8010.0, 1e-9);
	assert_double_equal(r.bounds.worst_us, 3000 + 16020 + 1500 + 10,
			    1e-9);
	assert_double_equal(r.bounds.physical_lower_us, 8000.0, 1e-9);
	assert_int_equal(r.messages, 6);
	ps_sim_result_free(&r);

	/* two workers, one server: the pushes queue on the server's
	 * downlink, the parameters on its uplink */
	set(&cfg, "cluster.workers", "2");
	r = simulate(&cfg, d);
	assert_double_equal(r.iter_us[1], 3000 + 4 * 8010.0 + 500 + 1000,
			    1e-9);
	ps_sim_result_free(&r);

	/* gamma: the second push finds the downlink busy */
	set(&cfg, "link.gamma", "1.5");
	r = simulate(&cfg, d);
	assert_double_equal(r.iter_us[1],
			    3000 + 8010 + (10 + 12000) + 500 + 1000 + 8010 +
				    (10 + 12000),
			    1e-9);
	ps_sim_result_free(&r);

	/* a fixed cost paid by every partition: 4 partitions of 250000 B */
	set(&cfg, "cluster.workers", "1");
	set(&cfg, "link.gamma", "1");
	set(&cfg, "sim.aggregate_ns_per_byte", "0");
	set(&cfg, "sim.update_ns_per_byte", "0");
	set(&cfg, "scheduling.partition_size", "250000");
	r = simulate(&cfg, d);
	/* pushes leave back to back; each partition is updated and sent
	 * on as it arrives: the last one is back 5 messages after the
	 * first left */
	assert_double_equal(r.iter_us[1], 3000 + 5 * (10 + 2000.0), 1e-9);
	ps_sim_result_free(&r);
	ps_dag_free(&d);
}

/* ---- hand-checked: fair sharing ---------------------------------------- */

static const char two_tensors[] = HEAD
	"\"tensors\":[{\"name\":\"x\",\"shape\":[250000]},"
	"{\"name\":\"y\",\"shape\":[250000]}],"
	"\"ops\":["
	"{\"name\":\"f\",\"kind\":\"forward\",\"time_us\":1000,"
	"\"reads\":[\"x\",\"y\"],\"deps\":[]},"
	"{\"name\":\"b\",\"kind\":\"backward\",\"time_us\":2000,"
	"\"grads\":[\"x\",\"y\"],\"deps\":[\"f\"]}]}";

static void test_fair_sharing_by_hand(void **state)
{
	char json[sizeof(two_tensors) + 16];
	ps_config cfg;
	ps_dag *d;
	ps_sim_result r;
	(void)state;

	/* one stream each way: the same as the FIFO link (8000 us of bytes,
	 * a = 10 us as latency), see test_one_tensor_by_hand */
	d = one_tensor_job(&cfg, "fair");
	r = simulate(&cfg, d);
	assert_double_equal(r.iter_us[1], 3000.0 + 2 * 8010.0 + 1500.0, 1e-6);
	assert_int_equal(r.messages, 6);
	ps_sim_result_free(&r);

	/* op_overhead_us: every op takes 100 us longer */
	set(&cfg, "sim.op_overhead_us", "100");
	r = simulate(&cfg, d);
	assert_double_equal(r.iter_us[0], 3200.0, 1e-6);
	assert_double_equal(r.iter_us[1], 3200.0 + 2 * 8010.0 + 1500.0, 1e-6);
	ps_sim_result_free(&r);

	/* token buckets of 250000 B at 4 Gbit/s (500 B/us): a message on
	 * links with full buckets goes at 500 B/us while the tokens last,
	 * 250000 / (500 - 125) = 666.67 us, carrying 333333.3 B; the other
	 * 666666.7 B at 125 B/us take 5333.33 us: 6000 us, + a. The buckets
	 * are full again after each idle gap (>= 2000 us of refill). */
	set(&cfg, "sim.op_overhead_us", "0");
	set(&cfg, "sim.aggregate_ns_per_byte", "0");
	set(&cfg, "sim.update_ns_per_byte", "0");
	set(&cfg, "link.burst_bytes", "250000");
	set(&cfg, "link.burst_gbps", "4");
	r = simulate(&cfg, d);
	assert_double_equal(r.iter_us[1], 3000.0 + 2 * 6010.0, 1e-6);
	assert_double_equal(r.iter_us[2], 3000.0 + 2 * 6010.0, 1e-6);
	/* a link carries X bytes in (X - 250000) * b at best */
	assert_double_equal(r.bounds.lower_us, 6000.0, 1e-6);
	assert_double_equal(r.bounds.physical_lower_us, 6000.0, 1e-6);
	ps_sim_result_free(&r);
	/* a bucket at the link's own rate changes nothing */
	set(&cfg, "link.burst_gbps", "1");
	r = simulate(&cfg, d);
	assert_double_equal(r.iter_us[1], 3000.0 + 2 * 8010.0, 1e-6);
	ps_sim_result_free(&r);

	/* a machine moving 0.5 Gbit/s (62.5 B/us) over all links: the
	 * message alone goes at the machine's rate, 16000 us; bounds count
	 * every byte over the machine (pushed and sent back) */
	set(&cfg, "link.burst_bytes", "0");
	set(&cfg, "sim.machine_gbps", "0.5");
	r = simulate(&cfg, d);
	assert_double_equal(r.iter_us[1], 3000.0 + 2 * 16010.0, 1e-6);
	assert_double_equal(r.bounds.lower_us, 32000.0, 1e-6);
	assert_double_equal(r.bounds.physical_lower_us, 32000.0, 1e-6);
	ps_sim_result_free(&r);
	/* two workers share it: 31.25 B/us each */
	set(&cfg, "cluster.workers", "2");
	r = simulate(&cfg, d);
	assert_double_equal(r.iter_us[1], 3000.0 + 2 * 32010.0, 1e-6);
	ps_sim_result_free(&r);
	/* messages of at most 1 MB cost half as much on it (1 Gbit/s):
	 * 62.5 B/us each, the server's downlink's half; the bounds count
	 * them at that cost */
	set(&cfg, "sim.machine_small_bytes", "1000000");
	set(&cfg, "sim.machine_small_gbps", "1");
	expect_times(&cfg, d, 3000.0 + 2 * 16010.0, 32000.0);
	/* one byte short of the message: the machine's own rate again */
	set(&cfg, "sim.machine_small_bytes", "999999");
	expect_times(&cfg, d, 3000.0 + 2 * 32010.0, 64000.0);
	set(&cfg, "sim.machine_small_bytes", "0");
	set(&cfg, "sim.machine_small_gbps", "0");
	/* 1000 us of the machine per message on top of its bytes: the
	 * message alone takes 17000 us; the bounds count it per message
	 * (two workers: four messages over the machine) */
	set(&cfg, "sim.machine_message_us", "1000");
	expect_times(&cfg, d, 3000.0 + 2 * 34010.0, 64000.0 + 4000.0);
	set(&cfg, "cluster.workers", "1");
	expect_times(&cfg, d, 3000.0 + 2 * 17010.0, 32000.0 + 2000.0);
	/* a message of at most machine_message_min_bytes pays none of it
	 * (ZeroMQ batches such messages); one byte more and it pays */
	set(&cfg, "sim.machine_message_min_bytes", "1000000");
	expect_times(&cfg, d, 3000.0 + 2 * 16010.0, 32000.0);
	set(&cfg, "sim.machine_message_min_bytes", "999999");
	expect_times(&cfg, d, 3000.0 + 2 * 17010.0, -1);
	set(&cfg, "sim.machine_message_min_bytes", "0");
	set(&cfg, "sim.machine_message_us", "0");
	set(&cfg, "cluster.workers", "2");
	ps_dag_free(&d);

	/* 2 workers x 2 servers, x and y on different servers: the four
	 * pushes share every link (half the rate each: 16000 us), so do the
	 * four parameter sends. The FIFO link serves one server's pushes
	 * after the other's instead. */
	snprintf(json, sizeof(json), two_tensors, "two");
	d = load("two.json", json);
	base_config(&cfg);
	set(&cfg, "cluster.workers", "2");
	set(&cfg, "cluster.servers", "2");
	set(&cfg, "link.sharing", "fair");
	r = simulate(&cfg, d);
	assert_double_equal(r.iter_us[1], 3000.0 + 2 * 16010.0, 1e-6);
	assert_double_equal(r.iter_us[2], 3000.0 + 2 * 16010.0, 1e-6);
	ps_sim_result_free(&r);

	/* one server: a PUSH_ACK travels behind the parameters already on
	 * its stream. Credit 1 MB (one tensor at a time) on one worker: x's
	 * push (8010), then x's parameters are handed over at once, y's
	 * push goes when x's ack arrives: with the ack first in the stream
	 * (sent before the update's parameters) that is 8010 + 10. */
	set(&cfg, "cluster.workers", "1");
	set(&cfg, "cluster.servers", "1");
	set(&cfg, "scheduling.credit_size", "1000000");
	r = simulate(&cfg, d);
	/* y's push 8020..16020 (+10), its parameters behind x's (8010 ..
	 * 16010) on the server's uplink: 16030 .. 24030, +10 */
	assert_double_equal(r.iter_us[1], 3000.0 + 24040.0, 1e-6);
	ps_sim_result_free(&r);
	ps_dag_free(&d);
}

/* ---- TicTac Figure 2: recv1 before recv2 is the good order -------------- */

static const char fig2[] = HEAD
	"\"tensors\":[{\"name\":\"r1\",\"shape\":[250000]},"
	"{\"name\":\"r2\",\"shape\":[250000]}],"
	"\"ops\":["
	"{\"name\":\"op1\",\"kind\":\"forward\",\"time_us\":4000,"
	"\"reads\":[\"r1\"],\"deps\":[]},"
	"{\"name\":\"op2\",\"kind\":\"forward\",\"time_us\":4000,"
	"\"reads\":[\"r2\"],\"deps\":[\"op1\"]},"
	"{\"name\":\"bwd\",\"kind\":\"backward\",\"time_us\":1000,"
	"\"grads\":[\"r2\",\"r1\"],\"deps\":[\"op2\"]}]}";

static void test_tictac_figure2(void **state)
{
	/* order, gate, whether r1 goes first */
	static const struct {
		const char *order, *gate;
		int good;
	} cases[] = {
		{"fifo", "fifo", 0},
		{"layer", "priority", 1},
		{"tao", "counter", 1},
		{"tail", "priority", 1},
		/* TIO gives r1 and r2 equal numbers (equal M+, TicTac §4.1):
		 * the counter lets both go in the order they became ready */
		{"tio", "counter", 0},
		/* a fifo gate ignores the order */
		{"layer", "fifo", 0},
	};
	char json[sizeof(fig2) + 16];
	ps_config cfg;
	ps_sim_result r;
	ps_dag *d;
	const double c = 8010.0;
	(void)state;

	snprintf(json, sizeof(json), fig2, "fig2");
	d = load("fig2.json", json);
	/* Both gradients are ready at once (one backward op). r2 first
	 * (listed first): op1 waits for the second transfer: 3c + 2 * op +
	 * bwd. r1 first: op1 overlaps with r2's transfer: 3c + op + bwd. */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		base_config(&cfg);
		set(&cfg, "scheduling.order", cases[i].order);
		set(&cfg, "scheduling.gate", cases[i].gate);
		r = simulate(&cfg, d);
		double want = cases[i].good ? 3 * c + 4000 + 1000
					    : 3 * c + 2 * 4000 + 1000;
		if (fabs(r.iter_us[1] - want) > 1e-9)
			fail_msg("order %s gate %s: %.3f us, want %.3f",
				 cases[i].order, cases[i].gate, r.iter_us[1],
				 want);
		ps_sim_result_free(&r);
	}
	ps_dag_free(&d);
}

/* ---- Seq-32 and Par-32: every order ties --------------------------------- */

/* Seq-32: f0 -> ... -> f31 -> b31 -> ... -> b0; Par-32: f_i independent,
 * one add, then b_i each after the add's backward. */
static char *toy32(int par, int elems, int fwd_us, int bwd_us)
{
	sb b = {0};

	sb_add(&b, HEAD, par ? "par32" : "seq32");
	sb_add(&b, "\"tensors\":[");
	for (int i = 0; i < 32; i++)
		sb_add(&b, "%s{\"name\":\"t%d\",\"shape\":[%d]}", i ? "," : "", i,
		    elems);
	sb_add(&b, "],\"ops\":[");
	for (int i = 0; i < 32; i++) {
		sb_add(&b, "{\"name\":\"f%d\",\"kind\":\"forward\",\"time_us\":%d,"
		    "\"reads\":[\"t%d\"],\"deps\":[", i, fwd_us, i);
		if (!par && i > 0)
			sb_add(&b, "\"f%d\"", i - 1);
		sb_add(&b, "]},");
	}
	if (par) {
		sb_add(&b, "{\"name\":\"add\",\"kind\":\"forward\",\"time_us\":%d,"
		    "\"deps\":[", fwd_us);
		for (int i = 0; i < 32; i++)
			sb_add(&b, "%s\"f%d\"", i ? "," : "", i);
		sb_add(&b, "]},{\"name\":\"add.bwd\",\"kind\":\"backward\","
		    "\"time_us\":%d,\"deps\":[\"add\"]},", bwd_us);
	}
	for (int i = 31; i >= 0; i--) {
		sb_add(&b, "{\"name\":\"b%d\",\"kind\":\"backward\",\"time_us\":%d,"
		    "\"grads\":[\"t%d\"],\"deps\":[", i, bwd_us, i);
		if (par)
			sb_add(&b, "\"add.bwd\"");
		else if (i == 31)
			sb_add(&b, "\"f31\"");
		else
			sb_add(&b, "\"b%d\"", i + 1);
		sb_add(&b, "]}%s", i ? "," : "");
	}
	sb_add(&b, "]}");
	return b.p;
}

static void all_orders_tie(const ps_dag *d, int with_counter)
{
	static const char *const orders[] = {"fifo", "layer", "tio", "tao",
					     "tail"};
	static const char *const gates[] = {"fifo", "priority", "counter"};
	double first = -1.0;
	ps_config cfg;

	for (size_t g = 0; g < (with_counter ? 3u : 2u); g++)
		for (size_t o = 0; o < 5; o++) {
			ps_sim_result r;
			base_config(&cfg);
			set(&cfg, "scheduling.order", orders[o]);
			set(&cfg, "scheduling.gate", gates[g]);
			r = simulate(&cfg, d);
			if (first < 0)
				first = r.iteration_us;
			if (r.iteration_us != first)
				fail_msg("%s: order %s gate %s: %.6f us, "
					 "fifo/fifo %.6f us", d->name,
					 orders[o], gates[g], r.iteration_us,
					 first);
			ps_sim_result_free(&r);
		}
	assert_true(first > 0);
}

static void test_seq32_orders_tie(void **state)
{
	/* each transfer (10 + 32 us) is shorter than a backward op and a
	 * forward op: nothing queues, t0 is ready last in every order */
	char *json = toy32(0, 1000, 50, 100);
	ps_dag *d = load("seq32.json", json);
	(void)state;

	all_orders_tie(d, 1);
	ps_dag_free(&d);
	free(json);
}

static void test_par32_orders_tie(void **state)
{
	/* equal tensors and ops: whichever tensor a work-conserving gate
	 * sends, the link schedule and the compute that follows are the
	 * same (a strict counter would idle: it is not work-conserving) */
	char *json = toy32(1, 100000, 50, 100);
	ps_dag *d = load("par32.json", json);
	(void)state;

	all_orders_tie(d, 0);
	ps_dag_free(&d);
	free(json);
}

/* ---- property: lower <= simulated cycle <= worst ------------------------ */

static void test_bounds_hold_on_random_dags(void **state)
{
	static const char *const presets[] = {"baseline", "p3", "tictac-tio",
					      "tictac-tao", "bytescheduler",
					      "ordo"};
	/* small models: every tensor whole to 1.6 MB */
	static const random_dag_shape shape = {.forward = 5, .tensors = 6};
	unsigned cases = 0;
	(void)state;

	for (uint64_t seed = 1; seed <= 120; seed++) {
		uint32_t T;
		char name[32], v[32], *json;
		ps_dag *d;

		test_rnd_seed(seed);
		json = random_dag_json(&shape, &T);
		snprintf(name, sizeof(name), "random%llu.json",
			 (unsigned long long)seed);
		d = load(name, json);
		for (size_t p = 0; p < 6; p++) {
			ps_config cfg;
			ps_sim_result r;
			base_config(&cfg);
			set(&cfg, "scheduling.preset", presets[p]);
			snprintf(v, sizeof(v), "%u", 1 + test_rnd(3));
			set(&cfg, "cluster.workers", v);
			snprintf(v, sizeof(v), "%u", 1 + test_rnd(3));
			set(&cfg, "cluster.servers", v);
			snprintf(v, sizeof(v), "%u", test_rnd(60));
			set(&cfg, "link.latency_us", v);
			snprintf(v, sizeof(v), "%.2f", 0.5 + test_rnd(200) / 10.0);
			set(&cfg, "link.bandwidth_gbps", v);
			snprintf(v, sizeof(v), "%.2f", 0.5 + test_rnd(16) / 10.0);
			set(&cfg, "link.gamma", v);
			snprintf(v, sizeof(v), "%.2f", test_rnd(100) / 100.0);
			set(&cfg, "sim.aggregate_ns_per_byte", v);
			snprintf(v, sizeof(v), "%.2f", test_rnd(100) / 100.0);
			set(&cfg, "sim.update_ns_per_byte", v);
			/* every other case with fair sharing */
			set(&cfg, "link.sharing", (seed + p) % 2 ? "fair" : "fifo");
			/* and every other fair case with token buckets */
			if ((seed + p) % 4 == 1) {
				snprintf(v, sizeof(v), "%u", test_rnd(400000));
				set(&cfg, "link.burst_bytes", v);
				snprintf(v, sizeof(v), "%u", test_rnd(100));
				set(&cfg, "link.burst_gbps", v);
			}
			/* and some with the machine as a shared resource */
			if ((seed + p) % 6 == 3) {
				snprintf(v, sizeof(v), "%.2f",
					 0.2 + test_rnd(100) / 10.0);
				set(&cfg, "sim.machine_gbps", v);
				/* half of them cheaper (or dearer) for small
				 * messages */
				if ((seed + p) % 12 == 3) {
					snprintf(v, sizeof(v), "%u",
						 test_rnd(4u << 20));
					set(&cfg, "sim.machine_small_bytes", v);
					snprintf(v, sizeof(v), "%.2f",
						 0.2 + test_rnd(200) / 10.0);
					set(&cfg, "sim.machine_small_gbps", v);
				}
				/* and some with a time per message */
				if ((seed + p) % 18 == 3) {
					snprintf(v, sizeof(v), "%u", test_rnd(200));
					set(&cfg, "sim.machine_message_us", v);
					snprintf(v, sizeof(v), "%u", test_rnd(1u << 16));
					set(&cfg, "sim.machine_message_min_bytes",
					    v);
				}
			}
			r = simulate(&cfg, d);
			double tol = 1e-9 * r.bounds.worst_us;
			if (!(r.makespan_us >= r.bounds.lower_us - tol &&
			      r.makespan_us <= r.bounds.worst_us + tol &&
			      r.iteration_us <= r.bounds.worst_us + tol &&
			      /* gamma < 1 carries bytes faster than b */
			      (r.link.gamma < 1.0 ||
			       r.bounds.physical_lower_us <=
				       r.bounds.lower_us + tol)))
				fail_msg("seed %llu preset %s: cycle %.3f, "
					 "iteration %.3f, bounds [%.3f, %.3f], "
					 "physical %.3f",
					 (unsigned long long)seed, presets[p],
					 r.makespan_us, r.iteration_us,
					 r.bounds.lower_us, r.bounds.worst_us,
					 r.bounds.physical_lower_us);
			ps_sim_result_free(&r);
			cases++;
		}
		ps_dag_free(&d);
		free(json);
	}
	assert_true(cases >= 100);
}

/* ---- determinism -------------------------------------------------------- */

static void test_deterministic(void **state)
{
	char *json = toy32(1, 70000, 30, 80);
	ps_dag *d = load("det.json", json);
	ps_config cfg;
	ps_sim_result a, b;
	(void)state;

	base_config(&cfg);
	set(&cfg, "scheduling.preset", "ordo");
	set(&cfg, "cluster.workers", "5");
	set(&cfg, "cluster.servers", "3");
	set(&cfg, "link.gamma", "1.3");
	set(&cfg, "train.iterations", "4");
	a = simulate(&cfg, d);
	b = simulate(&cfg, d);
	assert_memory_equal(a.iter_us, b.iter_us, 4 * sizeof(double));
	assert_memory_equal(&a.iteration_us, &b.iteration_us, sizeof(double));
	assert_memory_equal(&a.bounds, &b.bounds, sizeof(a.bounds));
	assert_memory_equal(&a.makespan_us, &b.makespan_us, sizeof(double));
	assert_int_equal(a.events, b.events);
	ps_sim_result_free(&a);
	ps_sim_result_free(&b);
	ps_dag_free(&d);
	free(json);
}

/* ---- link.latency_jitter ------------------------------------------------- */

static void test_latency_jitter(void **state)
{
	char *json = toy32(0, 40000, 20, 40);
	ps_dag *d;
	ps_config cfg;
	ps_sim_result r, again;
	ps_link_model lm;
	char err[1024];
	(void)state;

	/* one message each way on the critical path (see
	 * test_one_tensor_by_hand): each waits a = 10 us drawn within
	 * 10 (1 +- 0.5), so iteration 1 is within 2 x 5 us of the exact
	 * 3000 + 2 x 8010 + 1500, and not exactly it */
	d = one_tensor_job(&cfg, "fair");
	set(&cfg, "link.latency_jitter", "0.5");
	r = simulate(&cfg, d);
	if (!(fabs(r.iter_us[1] - (3000.0 + 2 * 8010.0 + 1500.0)) <= 10.0 +
								       1e-9) ||
	    r.iter_us[1] == 3000.0 + 2 * 8010.0 + 1500.0)
		fail_msg("iteration 1: %.6f us, want 20520 +- 10, not 20520",
			 r.iter_us[1]);
	ps_sim_result_free(&r);
	/* fifo links keep one latency: refused, naming the key */
	set(&cfg, "link.sharing", "fifo");
	assert_int_equal(ps_link_model_from_config(&cfg, &lm, err,
						   sizeof(err)),
			 PS_OK);
	assert_int_equal(ps_sim_run(&cfg, d, &lm, &r, err, sizeof(err)),
			 PS_EINVAL);
	assert_non_null(strstr(err, "link.latency_jitter"));
	ps_dag_free(&d);

	/* p3 (stop-and-wait slices, acknowledgements in the streams behind
	 * data), 2 x 2, latencies from 0 to 2a: no message overtakes an
	 * earlier one of its stream, or a worker would take a PUSH_ACK
	 * before the parameters queued ahead of it and the protocol
	 * machines would stop the run; the same seed gives the same run */
	d = load("jitter.json", json);
	base_config(&cfg);
	set(&cfg, "scheduling.preset", "p3");
	set(&cfg, "scheduling.partition_size", "16K");
	set(&cfg, "cluster.workers", "2");
	set(&cfg, "cluster.servers", "2");
	set(&cfg, "link.sharing", "fair");
	set(&cfg, "link.latency_us", "300");
	set(&cfg, "link.burst_bytes", "30000");
	set(&cfg, "link.latency_jitter", "1");
	r = simulate(&cfg, d);
	again = simulate(&cfg, d);
	assert_memory_equal(r.iter_us, again.iter_us,
			    3 * sizeof(double));
	assert_int_equal(r.events, again.events);
	ps_sim_result_free(&again);
	set(&cfg, "link.latency_jitter", "0");
	again = simulate(&cfg, d);
	assert_true(r.iteration_us != again.iteration_us);
	ps_sim_result_free(&again);
	ps_sim_result_free(&r);
	ps_dag_free(&d);
	free(json);
}

/* ---- the fit ------------------------------------------------------------- */

static void test_fit_recovers_parameters(void **state)
{
	const double a = 35.0, bb = 0.0016, g = 1.4;
	double m[40], c[40], us[40];
	ps_link_fit f;
	char err[256];
	size_t n = 0;
	(void)state;

	for (int k = 0; k < 8; k++)
		for (int conc = 1; conc <= 4; conc++) {
			m[n] = 1024.0 * (1 << k);
			c[n] = conc;
			us[n] = conc * a + bb * m[n] * (1 + (conc - 1) * g);
			n++;
		}
	assert_int_equal(ps_link_fit_rows(m, c, us, n, &f, err, sizeof(err)),
			 PS_OK);
	assert_double_equal(f.a_us, a, 1e-6);
	assert_double_equal(f.b_us_per_byte, bb, 1e-12);
	assert_double_equal(f.gamma, g, 1e-9);
	assert_double_equal(f.r2, 1.0, 1e-12);

	/* one size only at concurrency 1: a and b are not determined */
	assert_int_equal(ps_link_fit_rows(m, c, us, 4, &f, err, sizeof(err)),
			 PS_EINVAL);
	assert_non_null(strstr(err, "two or more message sizes"));
}

static void test_fit_file_errors(void **state)
{
	ps_link_fit f;
	char err[512];
	const char *p;
	(void)state;

	assert_int_equal(ps_link_fit_file("/nonexistent/sweep.csv", &f, err,
					  sizeof(err)), PS_ENOENT);
	assert_non_null(strstr(err, "/nonexistent/sweep.csv"));
	p = test_write_file(dir, "nohdr.csv", "1,2,3\n");
	assert_int_equal(ps_link_fit_file(p, &f, err, sizeof(err)), PS_EINVAL);
	assert_non_null(strstr(err, ":1: the header"));
	p = test_write_file(dir, "garbled.csv",
			    "bytes,concurrency,us\n1024,1,20\n2048,x,30\n");
	assert_int_equal(ps_link_fit_file(p, &f, err, sizeof(err)), PS_EINVAL);
	assert_non_null(strstr(err, ":3: column 'concurrency'"));
	p = test_write_file(dir, "short.csv",
			    "bytes,concurrency,us\n1024,1\n");
	assert_int_equal(ps_link_fit_file(p, &f, err, sizeof(err)), PS_EINVAL);
	assert_non_null(strstr(err, ":2: no value in column 'us'"));
	p = test_write_file(dir, "flat.csv",
			    "bytes,concurrency,us\n1024,1,50\n4096,1,40\n");
	assert_int_equal(ps_link_fit_file(p, &f, err, sizeof(err)), PS_EINVAL);
	assert_non_null(strstr(err, "does not grow"));
	/* a time whose square overflows (fuzz_fit found r2 = NaN) */
	p = test_write_file(dir, "huge.csv",
			    "bytes,concurrency,us\n1036,1,6\n"
			    "655368576576,1,5.2055555555555553e241\n");
	assert_int_equal(ps_link_fit_file(p, &f, err, sizeof(err)), PS_EINVAL);
	assert_non_null(strstr(err, ":3: column 'us': "
				    "5.2055555555555553e241 is more than"));
	{ /* the same rows given to the fit itself */
		const double b[2] = {1036, 655368576576.0}, c[2] = {1, 1},
			     t[2] = {6, 5.2055555555555553e241};
		assert_int_equal(ps_link_fit_rows(b, c, t, 2, &f, err,
						  sizeof(err)),
				 PS_EINVAL);
		assert_non_null(strstr(err, "too large to fit"));
	}
	p = test_write_file(dir, "ok.csv",
			    "# a comment\nus,bytes,concurrency,reps\n"
			    "30,1000,1,5\n50,2000,1,5\n100,2000,2,5\n");
	assert_int_equal(ps_link_fit_file(p, &f, err, sizeof(err)), PS_OK);
	assert_double_equal(f.a_us, 10.0, 1e-9);
	assert_double_equal(f.b_us_per_byte, 0.02, 1e-12);
	/* 100 = 2*10 + 40*(1 + gamma) */
	assert_double_equal(f.gamma, 1.0, 1e-9);
}

/* ---- the link model per transport --------------------------------------- */

static void model_of(const ps_config *cfg, ps_link_model *lm)
{
	char err[512];

	if (ps_link_model_from_config(cfg, lm, err, sizeof(err)) != PS_OK)
		fail_msg("ps_link_model_from_config: %s", err);
}

static void test_link_model_per_transport(void **state)
{
	ps_config cfg;
	ps_link_model lm;
	(void)state;

	ps_config_defaults(&cfg);
	set(&cfg, "link.bandwidth_gbps", "10");
	/* defaults: the tcp model, a = 20 us, the whole rate, gamma 1 */
	assert_int_equal(ps_link_model_kind_of(&cfg), PS_LINK_MODEL_TCP);
	model_of(&cfg, &lm);
	assert_double_equal(lm.a_us, 20.0, 1e-12);
	assert_double_equal(lm.b_us_per_byte, 1.0 / 1250.0, 1e-15);
	assert_double_equal(lm.gamma, 1.0, 1e-12);

	/* an rdma job (auto): the rdma model and its published defaults,
	 * a 2 us, 97 % of the rate, gamma 1 (docs/sim.md) */
	cfg.transport.type = PS_TRANSPORT_RDMA; /* refused by non-rdma builds'
						 * validation, not here */
	assert_int_equal(ps_link_model_kind_of(&cfg), PS_LINK_MODEL_RDMA);
	model_of(&cfg, &lm);
	assert_double_equal(lm.a_us, 2.0, 1e-12);
	assert_double_equal(lm.b_us_per_byte, 1.0 / (1250.0 * 0.97), 1e-15);
	assert_double_equal(lm.gamma, 1.0, 1e-12);
	assert_string_equal(ps_link_model_name(ps_link_model_kind_of(&cfg)),
			    "rdma");

	/* the rdma keys move the rdma model only, the tcp keys the tcp one */
	set(&cfg, "link.rdma_latency_us", "3.5");
	set(&cfg, "link.rdma_efficiency", "0.5");
	set(&cfg, "link.rdma_gamma", "1.25");
	set(&cfg, "link.latency_us", "99");
	set(&cfg, "link.gamma", "3");
	model_of(&cfg, &lm);
	assert_double_equal(lm.a_us, 3.5, 1e-12);
	assert_double_equal(lm.b_us_per_byte, 1.0 / 625.0, 1e-15);
	assert_double_equal(lm.gamma, 1.25, 1e-12);

	/* link.model overrides transport.type, both ways */
	set(&cfg, "link.model", "tcp");
	assert_int_equal(ps_link_model_kind_of(&cfg), PS_LINK_MODEL_TCP);
	set(&cfg, "link.efficiency", "0.8");
	model_of(&cfg, &lm);
	assert_double_equal(lm.a_us, 99.0, 1e-12);
	assert_double_equal(lm.b_us_per_byte, 1.0 / 1000.0, 1e-15);
	assert_double_equal(lm.gamma, 3.0, 1e-12);
	cfg.transport.type = PS_TRANSPORT_TCP;
	set(&cfg, "link.model", "rdma");
	assert_int_equal(ps_link_model_kind_of(&cfg), PS_LINK_MODEL_RDMA);
	model_of(&cfg, &lm);
	assert_double_equal(lm.a_us, 3.5, 1e-12);

	/* a fit file still overrides whichever model is selected */
	set(&cfg, "link.fit_file",
	    test_write_file(dir, "rdma-sweep.csv",
			    "bytes,concurrency,us\n1000,1,30\n2000,1,50\n"
			    "2000,2,100\n"));
	model_of(&cfg, &lm);
	assert_double_equal(lm.a_us, 10.0, 1e-9);
	assert_double_equal(lm.b_us_per_byte, 0.02, 1e-12);
	assert_double_equal(lm.gamma, 1.0, 1e-9);
	set(&cfg, "link.model", "tcp");
	model_of(&cfg, &lm);
	assert_double_equal(lm.a_us, 10.0, 1e-9);
}

/* The same job under both models: one message of 1,000,000 B each way at
 * 1 Gbit/s (one_tensor_job: a 10 us, compute 3000 us, server 1500 us) */
static void test_rdma_model_iteration_by_hand(void **state)
{
	ps_config cfg;
	ps_dag *d = one_tensor_job(&cfg, "fifo");
	ps_sim_result r;
	double b_rdma = 0.008 / 0.97;
	(void)state;

	r = simulate(&cfg, d);
	assert_double_equal(r.iter_us[1], 3000.0 + 2 * 8010.0 + 1500.0, 1e-9);
	ps_sim_result_free(&r);
	set(&cfg, "link.model", "rdma");
	r = simulate(&cfg, d);
	assert_double_equal(r.link.a_us, 2.0, 1e-12);
	assert_double_equal(r.iter_us[1],
			    3000.0 + 2 * (2.0 + b_rdma * 1e6) + 1500.0, 1e-6);
	ps_sim_result_free(&r);
	/* many small partitions: the fixed cost decides; 100 of 10,000 B */
	set(&cfg, "scheduling.partition_size", "10000");
	set(&cfg, "sim.aggregate_ns_per_byte", "0");
	set(&cfg, "sim.update_ns_per_byte", "0");
	set(&cfg, "link.model", "tcp");
	r = simulate(&cfg, d);
	/* pushes back to back, each partition sent on as it arrives: the
	 * last is back 101 messages after the first left */
	assert_double_equal(r.iter_us[1], 3000 + 101 * (10 + 80.0), 1e-9);
	ps_sim_result_free(&r);
	set(&cfg, "link.model", "rdma");
	r = simulate(&cfg, d);
	assert_double_equal(r.iter_us[1], 3000 + 101 * (2 + 10000 * b_rdma),
			    1e-6);
	ps_sim_result_free(&r);
	ps_dag_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_heap_order),
		cmocka_unit_test(test_one_tensor_by_hand),
		cmocka_unit_test(test_fair_sharing_by_hand),
		cmocka_unit_test(test_tictac_figure2),
		cmocka_unit_test(test_seq32_orders_tie),
		cmocka_unit_test(test_par32_orders_tie),
		cmocka_unit_test(test_bounds_hold_on_random_dags),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_latency_jitter),
		cmocka_unit_test(test_fit_recovers_parameters),
		cmocka_unit_test(test_fit_file_errors),
		cmocka_unit_test(test_link_model_per_transport),
		cmocka_unit_test(test_rdma_model_iteration_by_hand),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
