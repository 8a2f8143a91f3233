/*
 * tests/sim/test_sim_fair.c - link.sharing = fair: the incremental rate
 * updates (sim/fair.h) against the full recomputation.
 *
 * Every case simulates one job twice, with ps_sim_opts.fair_full (every
 * stream's rate recomputed over the whole cluster at every change) and
 * without (only what a change can change), and requires the same run to
 * the bit: every result, the number of events and the digest of every
 * event's time, kind and argument (ps_sim_result_same). The jobs are
 * random: synthetic DAGs and the shipped models, every preset, 1 to 96
 * workers, 1 to 8 servers, random links, token buckets, a machine. Some
 * are large enough that links get certified and withdrawn, so that the
 * decomposition that makes updates cheap is exercised, not only the
 * trivial case where one component is everything.
 *
 * The comparison can fail: with ps_sim_opts.fair_fault every incremental
 * update forgets one stream, and the same comparison must then report a
 * difference.
 *
 * ORDO_MODELS_DIR is the conf/models directory (tests/CMakeLists.txt).
 */
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
#include "sim/auto_sizes.h"
#include "sim/cluster.h"
#include "sim/random_dag.h"
#include "sim/link.h"
#include "support/tmpdir.h"

#ifndef ORDO_MODELS_DIR
#error "ORDO_MODELS_DIR must be defined to the conf/models directory"
#endif

static char dir[256];

static const char *const presets[] = {
	"baseline", "tensorflow", "mxnet", "p3",
	"tictac-tio", "tictac-tao", "bytescheduler", "ordo"};
#define NPRESETS (sizeof(presets) / sizeof(presets[0]))

static int group_setup(void **state)
{
	(void)state;
	return test_tmpdir_create(dir, sizeof(dir), "simfair");
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

	if (ps_config_set_kv(cfg, key, value, "--set", err, sizeof(err)) !=
	    PS_OK)
		fail_msg("%s=%s: %s", key, value, err);
}

static void setf(ps_config *cfg, const char *key, const char *fmt, ...)
{
	char v[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(v, sizeof(v), fmt, ap);
	va_end(ap);
	set(cfg, key, v);
}

static ps_dag *load_json(const char *name, const char *json)
{
	const char *path = test_write_file(dir, name, json);
	char err[1024];
	ps_dag *d = NULL;

	assert_non_null(path);
	if (ps_dag_load(path, 1.0, &d, err, sizeof(err)) != PS_OK)
		fail_msg("%s", err);
	return d;
}

static ps_dag *load_model(const char *name, double scale)
{
	char path[512], err[1024];
	ps_dag *d = NULL;

	snprintf(path, sizeof(path), "%s/%s.json", ORDO_MODELS_DIR, name);
	if (ps_dag_load(path, scale, &d, err, sizeof(err)) != PS_OK)
		fail_msg("%s: %s", path, err);
	return d;
}

/* A random fair job of W workers and S servers; knobs, from 0: only the
 * links; 1: token buckets on some; 2: a machine on some too. */
static void random_config(ps_config *cfg, uint32_t W, uint32_t S, int knobs)
{
	ps_config_defaults(cfg);
	set(cfg, "scheduling.preset", presets[test_rnd(NPRESETS)]);
	setf(cfg, "cluster.workers", "%u", W);
	setf(cfg, "cluster.servers", "%u", S);
	setf(cfg, "train.iterations", "%u", 1 + test_rnd(3));
	set(cfg, "link.sharing", "fair");
	setf(cfg, "link.latency_us", "%u", test_rnd(60));
	setf(cfg, "link.bandwidth_gbps", "%.2f", 0.5 + test_rnd(200) / 10.0);
	setf(cfg, "metrics.bandwidth_gbps", "%.2f", 0.5 + test_rnd(200) / 10.0);
	setf(cfg, "sim.aggregate_ns_per_byte", "%.2f", test_rnd(50) / 100.0);
	setf(cfg, "sim.update_ns_per_byte", "%.2f", test_rnd(50) / 100.0);
	if (test_rnd(3) == 0) {
		/* one direction in pieces, where the preset's gate allows */
		static const char *const size[] = {"64K", "256K", "1M", "4M"};
		char err[512];
		set(cfg, "scheduling.push_partition_size", size[test_rnd(4)]);
		set(cfg, "scheduling.params_partition_size", size[test_rnd(4)]);
		if (ps_config_validate(cfg, err, sizeof(err)) != PS_OK)
			set(cfg, "scheduling.partition_size", "1M");
	}
	if (knobs >= 1 && test_rnd(3) == 0) {
		setf(cfg, "link.burst_bytes", "%u", test_rnd(400000));
		setf(cfg, "link.burst_gbps", "%u", test_rnd(100));
	}
	if (knobs >= 2 && test_rnd(4) == 0) {
		setf(cfg, "sim.machine_gbps", "%.2f", 0.2 + test_rnd(100) / 10.0);
		if (test_rnd(2)) {
			setf(cfg, "sim.machine_small_bytes", "%u",
			     test_rnd(4u << 20));
			setf(cfg, "sim.machine_small_gbps", "%.2f",
			     0.2 + test_rnd(200) / 10.0);
		}
		if (test_rnd(2)) {
			setf(cfg, "sim.machine_message_us", "%u", test_rnd(200));
			setf(cfg, "sim.machine_message_min_bytes", "%u",
			     test_rnd(1u << 16));
		}
	}
}

typedef struct tally {
	unsigned cases, differ;
	uint64_t certified, uncertified, updates;
} tally;

/* Simulates cfg's job both ways (sizes chosen first, as ps-sim does);
 * fails unless they agree. With fault, the incremental run is sabotaged
 * and a difference is counted instead. */
static void compare(ps_config *cfg, const ps_dag *d, const char *what,
		    int fault, tally *t)
{
	ps_sim_result inc, full;
	ps_auto_choice ch;
	ps_link_model lm;
	ps_sim_opts o_inc = {.fair_fault = fault}, o_full = {.fair_full = 1};
	char err[1024], why[256];

	assert_int_equal(ps_link_model_from_config(cfg, &lm, err, sizeof(err)),
			 PS_OK);
	if (ps_auto_sizes_choose(cfg, d, &lm, &ch, err, sizeof(err)) != PS_OK)
		fail_msg("%s: auto sizes: %s", what, err);
	if (ps_sim_run_opts(cfg, d, &lm, &o_inc, &inc, err, sizeof(err)) !=
	    PS_OK)
		fail_msg("%s: incremental: %s", what, err);
	if (ps_sim_run_opts(cfg, d, &lm, &o_full, &full, err, sizeof(err)) !=
	    PS_OK)
		fail_msg("%s: full: %s", what, err);
	if (!ps_sim_result_same(&inc, &full, why, sizeof(why))) {
		if (!fault)
			fail_msg("%s: incremental and full recomputation "
				 "differ: %s", what, why);
		t->differ++;
	}
	t->cases++;
	t->certified += inc.fair.certified;
	t->uncertified += inc.fair.uncertified;
	t->updates += inc.fair.updates;
	ps_sim_result_free(&inc);
	ps_sim_result_free(&full);
}

/* ---- random synthetic jobs --------------------------------------------- */

static void random_jobs(int fault, tally *t, unsigned n, uint32_t maxw,
			uint32_t maxs, uint64_t seed0)
{
	/* up to 24 tensors, some small, to mix message sizes */
	static const random_dag_shape shape = {
	    .forward = 8, .tensors = 24, .mixed = 1};
	for (uint64_t seed = seed0; seed < seed0 + n; seed++) {
		char name[64], what[96], *json;
		ps_config cfg;
		ps_dag *d;

		test_rnd_seed(seed);
		json = random_dag_json(&shape, NULL);
		snprintf(name, sizeof(name), "random%llu.json",
			 (unsigned long long)seed);
		d = load_json(name, json);
		random_config(&cfg, 1 + test_rnd(maxw), 1 + test_rnd(maxs), 2);
		snprintf(what, sizeof(what), "seed %llu (%d x %d, %s)",
			 (unsigned long long)seed, cfg.cluster.workers,
			 cfg.cluster.servers,
			 presets[cfg.scheduling.preset]);
		compare(&cfg, d, what, fault, t);
		ps_dag_free(&d);
		free(json);
	}
}

static void test_random_small_jobs(void **state)
{
	tally t = {0};
	(void)state;

	random_jobs(0, &t, 600, 6, 4, 1);
	print_message("%u small jobs: identical (%llu updates)\n", t.cases,
		      (unsigned long long)t.updates);
}

/* Dozens of workers on a few servers: the workers' links carry a small
 * share of their capacity, get certified, and are withdrawn when a server
 * runs out of streams and its share jumps. */
static void test_random_wide_jobs(void **state)
{
	tally t = {0};
	(void)state;

	random_jobs(0, &t, 120, 96, 8, 1001);
	print_message("%u wide jobs: identical (%llu updates, %llu links "
		      "certified, %llu withdrawn)\n",
		      t.cases, (unsigned long long)t.updates,
		      (unsigned long long)t.certified,
		      (unsigned long long)t.uncertified);
	assert_true(t.certified > 0);
	assert_true(t.uncertified > 0);
}

/* ---- the shipped models ------------------------------------------------- */

static void test_shipped_models(void **state)
{
	static const char *const models[] = {"resnet50", "alexnet", "seq32",
					     "par32", "mobilenet_v2",
					     "inception_v3", "vgg16",
					     "transformer"};
	tally t = {0};
	(void)state;

	test_rnd_seed(77);
	for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++) {
		/* short runs of each: one or two iterations, a few workers,
		 * then (k = 2) 32 workers on 4 servers */
		for (int k = 0; k < 3; k++) {
			ps_dag *d = load_model(models[i], 1.0);
			ps_config cfg;
			char what[96];
			random_config(&cfg, k == 2 ? 32 : 1 + test_rnd(6),
				      k == 2 ? 4 : 1 + test_rnd(4), k == 1 ? 2 : 1);
			setf(&cfg, "train.iterations", "%u", 1 + test_rnd(2));
			snprintf(what, sizeof(what), "%s (%d x %d, %s)",
				 models[i], cfg.cluster.workers,
				 cfg.cluster.servers,
				 presets[cfg.scheduling.preset]);
			compare(&cfg, d, what, 0, &t);
			ps_dag_free(&d);
		}
	}
	print_message("%u jobs of shipped models: identical (%llu updates, "
		      "%llu links certified)\n", t.cases,
		      (unsigned long long)t.updates,
		      (unsigned long long)t.certified);
}

/* ---- the comparison can fail -------------------------------------------- */

static void test_sabotage_is_seen(void **state)
{
	tally t = {0};
	(void)state;

	random_jobs(1, &t, 40, 6, 4, 1);
	print_message("an update that forgets a stream: %u of %u jobs "
		      "differ\n", t.differ, t.cases);
	assert_true(t.differ > 0);
}

/* ---- streams only for pairs that exchange data -------------------------- */

static void test_streams_only_where_data_goes(void **state)
{
	/* baseline places whole tensors: three tensors use at most three of
	 * the eight servers, and only those pairs get streams */
	static const char json[] =
		"{\"format\":\"ordo-model\",\"version\":1,\"name\":\"three\","
		"\"batch\":8,\"times\":{\"source\":\"measured\"},"
		"\"tensors\":[{\"name\":\"a\",\"shape\":[1000]},"
		"{\"name\":\"b\",\"shape\":[2000]},"
		"{\"name\":\"c\",\"shape\":[3000]}],"
		"\"ops\":[{\"name\":\"f\",\"kind\":\"forward\",\"time_us\":10,"
		"\"reads\":[\"a\",\"b\",\"c\"],\"deps\":[]},"
		"{\"name\":\"g\",\"kind\":\"backward\",\"time_us\":10,"
		"\"grads\":[\"a\",\"b\",\"c\"],\"deps\":[\"f\"]}]}";
	ps_dag *d = load_json("three.json", json);
	ps_config cfg;
	ps_sim_result r;
	ps_link_model lm;
	char err[1024];
	(void)state;

	ps_config_defaults(&cfg);
	set(&cfg, "scheduling.preset", "baseline"); /* a partition a tensor */
	set(&cfg, "cluster.workers", "5");
	set(&cfg, "cluster.servers", "8");
	set(&cfg, "link.sharing", "fair");
	assert_int_equal(ps_link_model_from_config(&cfg, &lm, err, sizeof(err)),
			 PS_OK);
	assert_int_equal(ps_sim_run(&cfg, d, &lm, &r, err, sizeof(err)),
			 PS_OK);
	/* 5 workers x 3 servers, each way */
	assert_int_equal(r.fair.streams, 2 * 5 * 3);
	ps_sim_result_free(&r);
	ps_dag_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_small_jobs),
		cmocka_unit_test(test_random_wide_jobs),
		cmocka_unit_test(test_shipped_models),
		cmocka_unit_test(test_sabotage_is_seen),
		cmocka_unit_test(test_streams_only_where_data_goes),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
