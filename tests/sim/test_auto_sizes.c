/*
 * tests/sim/test_auto_sizes.c - the sizes chosen at a job's start
 * (sim/auto_sizes.h): the choice for two shipped models pinned, the same
 * on every call, never a window under four partitions and robust to the
 * latency, within a fixed size the user gave, the fallback without
 * a model, the line that states it, and a large cluster simulated small.
 *
 * ORDO_MODELS_DIR is the conf/models directory (set by tests/CMakeLists.txt).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "common/config.h"
#include "model/dag.h"
#include "sim/auto_sizes.h"
#include "sim/link.h"

#ifndef ORDO_MODELS_DIR
#error "ORDO_MODELS_DIR must be defined to the conf/models directory"
#endif

#define KIB ((uint64_t)1 << 10)
#define MIB ((uint64_t)1 << 20)
#define TIB ((uint64_t)1 << 40)

static void set(ps_config *cfg, const char *key, const char *value)
{
	char err[512] = "";
	int rc = ps_config_set_kv(cfg, key, value, "test", err, sizeof(err));

	if (rc != PS_OK)
		print_error("%s = %s: %s\n", key, value, err);
	assert_int_equal(rc, PS_OK);
}

/* A job of `model` on 2 x 2 at 1 Gbit/s with preset ordo. */
static void job(ps_config *cfg, const char *model)
{
	char path[512];

	ps_config_defaults(cfg);
	snprintf(path, sizeof(path), "%s/%s.json", ORDO_MODELS_DIR, model);
	set(cfg, "model.file", path);
	set(cfg, "cluster.workers", "2");
	set(cfg, "cluster.servers", "2");
	set(cfg, "link.bandwidth_gbps", "1");
	set(cfg, "scheduling.preset", "ordo");
}

static int choose(ps_config *cfg, ps_auto_choice *c)
{
	char err[1024] = "";
	ps_link_model lm;
	ps_dag *dag = NULL;
	int rc;

	ps_config_finalize(cfg);
	assert_int_equal(ps_config_validate(cfg, err, sizeof(err)), PS_OK);
	assert_int_equal(ps_link_model_from_config(cfg, &lm, err,
						   sizeof(err)),
			 PS_OK);
	assert_int_equal(ps_dag_load(cfg->model.file,
				     cfg->model.compute_scale, &dag, err,
				     sizeof(err)),
			 PS_OK);
	rc = ps_auto_sizes_choose(cfg, dag, &lm, c, err, sizeof(err));
	if (rc != PS_OK)
		print_message("ps_auto_sizes_choose: %s\n", err);
	ps_dag_free(&dag);
	return rc;
}

static void test_preset_ordo_is_auto(void **state)
{
	ps_config cfg;

	(void)state;
	job(&cfg, "resnet50");
	assert_true(ps_auto_sizes_wanted(&cfg));
	assert_true(cfg.scheduling.partition_size == PS_SIZE_AUTO);
	assert_true(cfg.scheduling.push.credit_size == PS_SIZE_AUTO);
	assert_true(cfg.scheduling.params.credit_size == PS_SIZE_AUTO);
	set(&cfg, "scheduling.preset", "p3");
	assert_false(ps_auto_sizes_wanted(&cfg));
}

/* The choice, pinned for two shipped models: a change of ps-sim or of the
 * candidates that moves it shows here. Chosen twice: the same, the second
 * time with the job's links jittered (link.latency_jitter), which the
 * choice leaves out (it moved the Transformer's choice to a pair that ran
 * 1.66x slower). The
 * parameters go without a window, and the prediction is of that job. */
static void test_pinned(void **state)
{
	static const struct {
		const char *model;
		uint64_t partition, credit;
	} want[] = {
		{"resnet50", 64 * KIB, 512 * KIB},
		{"vgg16", 512 * KIB, 8 * MIB},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		ps_config a, b;
		ps_auto_choice ca, cb;

		job(&a, want[i].model);
		job(&b, want[i].model);
		set(&b, "link.sharing", "fair");
		set(&b, "link.latency_jitter", "0.5");
		assert_int_equal(choose(&a, &ca), PS_OK);
		assert_int_equal(choose(&b, &cb), PS_OK);
		if (ca.partition_size != want[i].partition ||
		    ca.push_credit != want[i].credit)
			print_message("%s: chose %llu / %llu\n", want[i].model,
				      (unsigned long long)ca.partition_size,
				      (unsigned long long)ca.push_credit);
		assert_int_equal(ca.chosen, 1);
		assert_int_equal(ca.fallback, 0);
		assert_int_equal(a.scheduling.partition_size,
				 want[i].partition);
		assert_int_equal(a.scheduling.push.credit_size,
				 want[i].credit);
		assert_int_equal(a.scheduling.params.credit_size, 0);
		assert_int_equal(ca.params_credit, 0);
		{
			double us;
			char err[256];
			ps_link_model lm;
			ps_dag *dag = NULL;
			assert_int_equal(ps_link_model_from_config(
					     &a, &lm, err, sizeof(err)),
					 PS_OK);
			assert_int_equal(ps_dag_load(a.model.file,
						     a.model.compute_scale,
						     &dag, err, sizeof(err)),
					 PS_OK);
			assert_int_equal(ps_auto_sizes_predict(&a, dag, &lm,
							       &us, err,
							       sizeof(err)),
					 PS_OK);
			ps_dag_free(&dag);
			assert_true(us == ca.iteration_us);
		}
		assert_int_equal(ca.partition_size, cb.partition_size);
		assert_int_equal(ca.push_credit, cb.push_credit);
		assert_true(ca.iteration_us == cb.iteration_us);
		assert_true(ca.iteration_us > 0.0);
		/* the runner-up is another preset, one that fixes its sizes */
		assert_true(ca.runner_up >= 0);
		assert_int_not_equal(ca.runner_up, PS_PRESET_ORDO);
		assert_true(ca.runner_up_us > 0.0);
		assert_int_equal(ca.sim_workers, 2);
		assert_int_equal(ca.sim_servers, 2);
		/* what it chose is a valid configuration */
		char err[256];
		assert_int_equal(ps_config_validate(&a, err, sizeof(err)),
				 PS_OK);
	}
}

/* More workers than servers (3 x 2, 2 x 1, 4 x 2): a server's sends go to
 * more workers than a worker's to servers. The choice, ranked as the job
 * runs (no window on the parameters), is predicted ahead of every preset
 * that fixes its sizes, and its partitions are small (64-128K here; 4-16M
 * when the candidates were ranked with a window on the parameters too,
 * which ran 1.2-1.5x slower than these on the emulated cluster). */
static void test_more_workers_than_servers(void **state)
{
	static const struct {
		const char *model, *workers, *servers;
	} jobs[] = {
		{"resnet50", "3", "2"},
		{"resnet50", "2", "1"},
		{"densenet121", "4", "2"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++) {
		ps_config cfg;
		ps_auto_choice c;

		job(&cfg, jobs[i].model);
		set(&cfg, "cluster.workers", jobs[i].workers);
		set(&cfg, "cluster.servers", jobs[i].servers);
		assert_int_equal(choose(&cfg, &c), PS_OK);
		print_message("%s %s x %s: %llu / %llu, %.1f ms; runner-up "
			      "%.1f ms\n",
			      jobs[i].model, jobs[i].workers, jobs[i].servers,
			      (unsigned long long)c.partition_size,
			      (unsigned long long)c.push_credit,
			      c.iteration_us / 1e3, c.runner_up_us / 1e3);
		assert_true(c.runner_up >= 0);
		assert_true(c.iteration_us < c.runner_up_us);
		assert_true(c.partition_size <= 256 * KIB);
		assert_int_equal(c.params_credit, 0);
	}
}

/* Always a window, never of fewer than AUTO_MIN_WINDOW partitions, on
 * models of large and of many small tensors, at 1, 10 and 100 Gbit/s;
 * the choice's
 * regret is stated against both latencies. And where the pair fastest at
 * the link's latency is slow at four times it (ResNet-50 at 10 Gbit/s:
 * ps-sim puts one pair ahead at 20 us and another at 80 us), the choice
 * gives up some speed at one for the other: its regret is above 1. */
static void test_robust_choice(void **state)
{
	static const char *const models[] = {"resnet50", "mobilenet_v2",
					     "densenet121", "transformer",
					     "seq32"};
	static const char *const gbps[] = {"1", "10", "100"};
	int traded = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++)
		for (size_t b = 0; b < sizeof(gbps) / sizeof(gbps[0]); b++) {
			ps_config cfg;
			ps_auto_choice c;
			uint64_t p, cr;

			job(&cfg, models[i]);
			set(&cfg, "link.bandwidth_gbps", gbps[b]);
			assert_int_equal(choose(&cfg, &c), PS_OK);
			p = cfg.scheduling.push.partition_size;
			cr = cfg.scheduling.push.credit_size;
			/* always a window (Seq-32 at 1 Gbit/s was best
			 * without one in ps-sim) */
			if (cr < AUTO_MIN_WINDOW * p)
				print_error("%s at %s Gbit/s: window %llu of "
					    "partitions %llu\n",
					    models[i], gbps[b],
					    (unsigned long long)cr,
					    (unsigned long long)p);
			assert_true(cr >= AUTO_MIN_WINDOW * p);
			assert_int_equal(cfg.scheduling.params.credit_size,
					 0);
			assert_true(c.regret >= 1.0 && c.regret < 1.5);
			assert_true(c.latency_us == cfg.link.latency_us);
			if (strcmp(models[i], "resnet50") == 0 &&
			    strcmp(gbps[b], "10") == 0)
				traded = c.regret > 1.0;
		}
	assert_true(traded);
}

/* A credit the user fixed stays, and the partition fits under it; a
 * partition the user fixed stays, and the credit is a window of it. */
static void test_within_fixed_sizes(void **state)
{
	ps_config cfg;
	ps_auto_choice c;
	uint64_t cr;

	(void)state;
	job(&cfg, "resnet50");
	set(&cfg, "scheduling.credit_size", "192K");
	assert_int_equal(choose(&cfg, &c), PS_OK);
	assert_int_equal(cfg.scheduling.push.credit_size, 192 * KIB);
	assert_int_equal(cfg.scheduling.params.credit_size, 192 * KIB);
	assert_true(cfg.scheduling.partition_size <= 192 * KIB);

	job(&cfg, "resnet50");
	set(&cfg, "scheduling.partition_size", "3M");
	assert_int_equal(choose(&cfg, &c), PS_OK);
	assert_int_equal(cfg.scheduling.partition_size, 3 * MIB);
	cr = cfg.scheduling.push.credit_size;
	assert_true(cr == 12 * MIB || cr == 24 * MIB || cr == 48 * MIB);
	assert_int_equal(cfg.scheduling.params.credit_size, 0);

	/* whole tensors: no window to count in partitions, so none */
	job(&cfg, "resnet50");
	set(&cfg, "scheduling.partition_size", "1T");
	assert_int_equal(choose(&cfg, &c), PS_OK);
	assert_int_equal(cfg.scheduling.partition_size, TIB);
	assert_int_equal(cfg.scheduling.push.credit_size, 0);

	/* one direction auto, the other fixed: the fixed one stays */
	job(&cfg, "resnet50");
	set(&cfg, "scheduling.push_credit_size", "0");
	assert_int_equal(choose(&cfg, &c), PS_OK);
	assert_int_equal(cfg.scheduling.push.credit_size, 0);
	assert_int_equal(cfg.scheduling.params.credit_size, 0);
	job(&cfg, "resnet50");
	set(&cfg, "scheduling.params_credit_size", "3M");
	assert_int_equal(choose(&cfg, &c), PS_OK);
	assert_int_equal(cfg.scheduling.params.credit_size, 3 * MIB);
	cr = cfg.scheduling.push.credit_size;
	assert_true(cr != PS_SIZE_AUTO && cr != 3 * MIB);
}

/* Too small a fixed credit for any candidate: refused, saying why. */
static void test_no_candidate(void **state)
{
	ps_config cfg;
	ps_auto_choice c;
	char err[1024] = "";
	ps_link_model lm;
	ps_dag *dag = NULL;

	(void)state;
	job(&cfg, "resnet50");
	set(&cfg, "scheduling.credit_size", "16K");
	assert_int_equal(ps_link_model_from_config(&cfg, &lm, err,
						   sizeof(err)),
			 PS_OK);
	assert_int_equal(ps_dag_load(cfg.model.file, 1.0, &dag, err,
				     sizeof(err)),
			 PS_OK);
	assert_int_equal(ps_auto_sizes_choose(&cfg, dag, &lm, &c, err,
					      sizeof(err)),
			 PS_EINVAL);
	assert_non_null(strstr(err, "fits under the fixed credit"));
	assert_true(cfg.scheduling.partition_size == PS_SIZE_AUTO);
	ps_dag_free(&dag);
}

/* Nothing to choose: the config is left as it is. */
static void test_nothing_to_choose(void **state)
{
	ps_config cfg, before;
	ps_auto_choice c;

	(void)state;
	job(&cfg, "resnet50");
	set(&cfg, "scheduling.preset", "bytescheduler");
	ps_config_finalize(&cfg);
	before = cfg;
	assert_int_equal(choose(&cfg, &c), PS_OK);
	assert_int_equal(c.chosen, 0);
	assert_memory_equal(&cfg, &before, sizeof(cfg));
}

/* Without timings: the stated fallback, a valid configuration. */
static void test_fallback(void **state)
{
	ps_config cfg;
	ps_auto_choice c;
	char line[768], err[256];

	(void)state;
	ps_config_defaults(&cfg);
	set(&cfg, "scheduling.preset", "ordo");
	set(&cfg, "link.bandwidth_gbps", "25");
	ps_auto_sizes_fallback(&cfg, 100 * MIB, &c);
	assert_int_equal(c.fallback, 1);
	assert_int_equal(cfg.scheduling.partition_size,
			 AUTO_FALLBACK_PARTITION);
	/* the bandwidth-delay credit (2M at 25 Gbit/s and 20 us), raised
	 * to the smallest window tried when there are timings */
	assert_int_equal(ps_config_bdp_credit(&cfg), 2 * MIB);
	assert_int_equal(cfg.scheduling.push.credit_size,
			 AUTO_MIN_WINDOW * AUTO_FALLBACK_PARTITION);
	assert_int_equal(cfg.scheduling.params.credit_size, 0);
	ps_config_defaults(&cfg);
	set(&cfg, "scheduling.preset", "ordo");
	set(&cfg, "link.bandwidth_gbps", "25");
	set(&cfg, "link.latency_us", "1000");
	ps_auto_sizes_fallback(&cfg, 100 * MIB, &c);
	assert_true(cfg.scheduling.push.credit_size ==
		    ps_config_bdp_credit(&cfg));
	assert_true(cfg.scheduling.push.credit_size > 4 * MIB);
	assert_int_equal(ps_config_validate(&cfg, err, sizeof(err)), PS_OK);
	ps_auto_choice_describe(&c, line, sizeof(line));
	assert_non_null(strstr(line, "auto sizes: partition 1M"));
	assert_non_null(strstr(line, "fallback"));
	assert_non_null(strstr(line, "params credit unlimited"));
	assert_non_null(strstr(line, "push credit (at least 4 partitions)"));
	assert_non_null(strstr(line, "25 Gbit/s"));

	/* under a fixed credit smaller than the fallback partition */
	ps_config_defaults(&cfg);
	set(&cfg, "scheduling.preset", "ordo");
	set(&cfg, "scheduling.credit_size", "256K");
	ps_auto_sizes_fallback(&cfg, 100 * MIB, &c);
	assert_int_equal(cfg.scheduling.partition_size, 256 * KIB);
	assert_int_equal(ps_config_validate(&cfg, err, sizeof(err)), PS_OK);
	/* the link rate's source is said: here not the link's own key */
	ps_auto_choice_describe(&c, line, sizeof(line));
	assert_non_null(strstr(line, "at 10 Gbit/s (metrics.bandwidth_gbps: "
				     "link.bandwidth_gbps is 0)"));

	/* a model too small for two 1M partitions per server: smaller ones,
	 * said; never below the smallest candidate */
	ps_config_defaults(&cfg);
	set(&cfg, "cluster.servers", "2");
	ps_auto_sizes_fallback(&cfg, 556 * KIB, &c);
	assert_int_equal(cfg.scheduling.partition_size, 128 * KIB);
	ps_auto_choice_describe(&c, line, sizeof(line));
	assert_non_null(strstr(line, "auto sizes: partition 128K"));
	assert_non_null(strstr(line, "1M partitions (less: two per server)"));
	ps_config_defaults(&cfg);
	set(&cfg, "cluster.servers", "8");
	ps_auto_sizes_fallback(&cfg, 4 * KIB, &c);
	assert_int_equal(cfg.scheduling.partition_size, AUTO_MIN_PARTITION);
	/* the caller's account of the link rate replaces the keys' */
	snprintf(c.link_how, sizeof(c.link_how), "measured to server 0");
	ps_auto_choice_describe(&c, line, sizeof(line));
	assert_non_null(strstr(line, "Gbit/s (measured to server 0)"));
}

static void test_describe(void **state)
{
	ps_config cfg;
	ps_auto_choice c;
	char line[768];

	(void)state;
	job(&cfg, "resnet50");
	assert_int_equal(choose(&cfg, &c), PS_OK);
	ps_auto_choice_describe(&c, line, sizeof(line));
	assert_non_null(strstr(line, "auto sizes: partition 64K, push "
				     "credit 512K, params credit unlimited "
				     "(ps-sim: "));
	assert_non_null(strstr(line, "on 2 x 2 at 1 Gbit/s; runner-up "
				     "preset "));
	c.params_credit = c.push_credit;
	ps_auto_choice_describe(&c, line, sizeof(line));
	assert_non_null(strstr(line, "partition 64K, credit 512K (ps-sim: "));
}

/* Many workers: simulated on AUTO_MAX_WORKERS in the job's ratio. */
static void test_large_cluster(void **state)
{
	ps_config cfg;
	ps_auto_choice c;

	(void)state;
	job(&cfg, "resnet50");
	set(&cfg, "cluster.workers", "64");
	set(&cfg, "cluster.servers", "16");
	assert_int_equal(choose(&cfg, &c), PS_OK);
	assert_int_equal(c.sim_workers, AUTO_MAX_WORKERS);
	assert_int_equal(c.sim_servers, 1);
	assert_int_equal(cfg.cluster.workers, 64); /* the job's, untouched */
	assert_int_equal(cfg.cluster.servers, 16);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_preset_ordo_is_auto),
	    cmocka_unit_test(test_pinned),
	    cmocka_unit_test(test_more_workers_than_servers),
	    cmocka_unit_test(test_robust_choice),
	    cmocka_unit_test(test_within_fixed_sizes),
	    cmocka_unit_test(test_no_candidate),
	    cmocka_unit_test(test_nothing_to_choose),
	    cmocka_unit_test(test_fallback),
	    cmocka_unit_test(test_describe),
	    cmocka_unit_test(test_large_cluster),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
