/*
 * sim/main.c - ps-sim: simulate a job from its config (docs/sim.md).
 *
 *   ps-sim --config FILE [--set key=value ...] [--json] [--stats]
 *          [--fair-full | --fair-check]
 *   ps-sim --fit SWEEP.csv [--json]
 *
 * The first form simulates cluster.workers workers and cluster.servers
 * servers for train.iterations iterations of model.file (sim/cluster.h)
 * and prints per-iteration times, throughput, E, straggler effect and the
 * bounds; with --json, exactly one JSON object on stdout. The second fits
 * the link model to a measured sweep (sim/fit.h) and prints the link.*
 * keys to put in a config. Exit status: 0, 1 on a simulation or input
 * error, 2 on a usage or config error.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <jansson.h>

#include "common/cli.h"
#include "common/dirs.h"
#include "common/log.h"
#include "model/dag.h"
#include "sim/auto_sizes.h"
#include "sim/cluster.h"
#include "sim/fit.h"
#include "sim/link.h"

typedef struct opts {
	int json, stats, fair_full, fair_check;
	const char *fit;
} opts;

static int on_opt(void *ud, const char *name, const char *arg, char *why,
		  size_t whylen)
{
	opts *o = ud;

	if (!strcmp(name, "json"))
		o->json = 1;
	else if (!strcmp(name, "stats"))
		o->stats = 1;
	else if (!strcmp(name, "fit"))
		o->fit = arg;
	else if (!strcmp(name, "fair-full"))
		o->fair_full = 1;
	else if (!strcmp(name, "fair-check"))
		o->fair_check = 1;
	else {
		snprintf(why, whylen, "unknown option --%s", name);
		return PS_EINVAL;
	}
	return PS_OK;
}

static json_t *num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static int fit_main(const opts *o)
{
	ps_link_fit f;
	char err[1024];
	int rc = ps_link_fit_file(o->fit, &f, err, sizeof(err));

	if (rc != PS_OK) {
		fprintf(stderr, "ps-sim: error: %s\n", err);
		return 1;
	}
	if (o->json) {
		json_t *j = json_object();
		json_object_set_new(j, "latency_us", num(f.a_us));
		json_object_set_new(j, "bandwidth_gbps",
				    num(ps_link_gbps_from_b(f.b_us_per_byte)));
		json_object_set_new(j, "gamma", num(f.gamma));
		json_object_set_new(j, "r2", num(f.r2));
		json_object_set_new(j, "rows", json_integer(f.rows));
		json_object_set_new(j, "rows_single",
				    json_integer(f.rows_single));
		json_dumpf(j, stdout, JSON_COMPACT);
		fputc('\n', stdout);
		json_decref(j);
		return 0;
	}
	printf("# fitted from %s: %u rows, %u at concurrency 1 (R^2 %.4f)\n"
	       "# us = c*a + b*m*(1 + (c - 1)*gamma)\n"
	       "[link]\nlatency_us = %.6g\nbandwidth_gbps = %.6g\n"
	       "gamma = %.6g\n",
	       o->fit, f.rows, f.rows_single, f.r2, f.a_us,
	       ps_link_gbps_from_b(f.b_us_per_byte), f.gamma);
	return 0;
}

static void print_json(const ps_config *cfg, const ps_dag *dag,
		       const ps_sim_result *r)
{
	json_t *j = json_object(), *its = json_array(), *link = json_object();
	const char *preset =
		ps_config_enum_name("scheduling.preset", cfg->scheduling.preset);

	json_object_set_new(j, "model", json_string(dag->name));
	json_object_set_new(j, "preset", json_string(preset ? preset : "?"));
	json_object_set_new(j, "workers", json_integer(r->workers));
	json_object_set_new(j, "servers", json_integer(r->servers));
	json_object_set_new(j, "iterations", json_integer(r->iterations));
	json_object_set_new(j, "iteration_ms", num(r->iteration_us / 1e3));
	json_object_set_new(j, "samples_per_second",
			    num(r->samples_per_second));
	json_object_set_new(j, "efficiency", num(r->efficiency));
	json_object_set_new(j, "straggler", num(r->straggler));
	json_object_set_new(j, "speedup_bound", num(r->speedup_bound));
	json_object_set_new(j, "worst_ms", num(r->bounds.worst_us / 1e3));
	json_object_set_new(j, "lower_ms", num(r->bounds.lower_us / 1e3));
	json_object_set_new(j, "cluster_speedup_bound",
			    num(r->bounds.speedup));
	json_object_set_new(j, "physical_lower_ms",
			    num(r->bounds.physical_lower_us / 1e3));
	json_object_set_new(j, "makespan_ms", num(r->makespan_us / 1e3));
	json_object_set_new(j, "compute_ms", num(r->bounds.compute_us / 1e3));
	for (uint32_t i = 0; i < r->iterations; i++)
		json_array_append_new(its, num(r->iter_us[i] / 1e3));
	json_object_set_new(j, "iteration_ms_each", its);
	json_object_set_new(link, "latency_us", num(r->link.a_us));
	json_object_set_new(link, "bandwidth_gbps",
			    num(ps_link_gbps_from_b(r->link.b_us_per_byte)));
	json_object_set_new(link, "gamma", num(r->link.gamma));
	json_object_set_new(link, "model",
			    json_string(ps_link_model_name(
				    ps_link_model_kind_of(cfg))));
	json_object_set_new(link, "fitted",
			    json_boolean(cfg->link.fit_file[0] != 0));
	json_object_set_new(j, "link", link);
	json_object_set_new(j, "partition_size",
			    json_integer((json_int_t)cfg->scheduling
						 .partition_size));
	json_object_set_new(j, "push_partition_size",
			    json_integer((json_int_t)cfg->scheduling.push
						 .partition_size));
	json_object_set_new(j, "params_partition_size",
			    json_integer((json_int_t)cfg->scheduling.params
						 .partition_size));
	json_object_set_new(j, "push_credit_size",
			    json_integer((json_int_t)cfg->scheduling.push
						 .credit_size));
	json_object_set_new(j, "params_credit_size",
			    json_integer((json_int_t)cfg->scheduling.params
						 .credit_size));
	json_object_set_new(j, "partitions", json_integer(r->partitions));
	json_object_set_new(j, "fused_partitions", json_integer(r->fused));
	json_object_set_new(j, "messages", json_integer((json_int_t)r->messages));
	json_object_set_new(j, "events", json_integer((json_int_t)r->events));
	json_dumpf(j, stdout, JSON_COMPACT);
	fputc('\n', stdout);
	json_decref(j);
}

static void print_text(const ps_config *cfg, const ps_dag *dag,
		       const ps_sim_result *r)
{
	char line[256];

	ps_config_describe_scheduling(cfg, line, sizeof(line));
	printf("ps-sim: %s, %u worker(s) x %u server(s), %u iteration(s); "
	       "%s; %u partitions (%u fused)\n",
	       dag->name, r->workers, r->servers, r->iterations, line,
	       r->partitions, r->fused);
	printf("link: %s model%s, a %.3f us, b %.6g us/byte (%.3f Gbit/s of "
	       "payload), gamma %.3f\n",
	       ps_link_model_name(ps_link_model_kind_of(cfg)),
	       cfg->link.fit_file[0] ? " (fitted from link.fit_file)" : "",
	       r->link.a_us, r->link.b_us_per_byte,
	       ps_link_gbps_from_b(r->link.b_us_per_byte), r->link.gamma);
	for (uint32_t i = 0; i < r->iterations; i++)
		printf("iter %u/%u time %.3f ms\n", i + 1, r->iterations,
		       r->iter_us[i] / 1e3);
	printf("summary: iteration %.3f ms, throughput %.1f samples/s, "
	       "ordering efficiency E %.3f, speedup bound S %.3f, straggler "
	       "effect %.3f\n",
	       r->iteration_us / 1e3, r->samples_per_second, r->efficiency,
	       r->speedup_bound, r->straggler);
	printf("bounds: cycle makespan %.3f ms in [lower %.3f, worst %.3f] "
	       "ms (cluster S %.3f); physical lower bound %.3f ms; compute "
	       "%.3f ms\n",
	       r->makespan_us / 1e3, r->bounds.lower_us / 1e3,
	       r->bounds.worst_us / 1e3, r->bounds.speedup,
	       r->bounds.physical_lower_us / 1e3, r->bounds.compute_us / 1e3);
}

int main(int argc, char **argv)
{
	static const ps_cli_opt cli_opts[] = {
		{"json", NULL,
		 "print exactly one JSON object on stdout (docs/sim.md)"},
		{"stats", NULL,
		 "print ps-sim's own wall time and peak memory on stderr"},
		{"fit", "SWEEP.csv",
		 "fit a, b, gamma to a link sweep and print the link.* keys"},
		{"fair-full", NULL,
		 "link.sharing = fair: recompute every stream's rate at every "
		 "change (the reference for the incremental updates; slow)"},
		{"fair-check", NULL,
		 "run the job incrementally and with --fair-full and fail "
		 "unless both give the same run, bit for bit"},
		{NULL, NULL, NULL},
	};
	opts o = {0};
	const ps_cli_info info = {
		.prog = "ps-sim",
		.summary = "Simulates a job (workers, servers, links, the "
			   "scheduling core) and predicts its iteration time.",
		.opts = cli_opts,
		.on_opt = on_opt,
		.ud = &o,
		.simulated = 1,
	};
	struct timespec t0, t1;
	ps_sim_result r;
	ps_auto_choice ch;
	ps_link_model lm;
	ps_dag *dag = NULL;
	ps_config cfg;
	ps_cli_status st;
	char err[1024];
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	st = ps_cli_parse(argc, argv, &info, &cfg);
	if (st != PS_CLI_RUN)
		return ps_cli_exit_status(st);
	ps_log_init("sim", cfg.log.level);
	if (o.fit)
		return fit_main(&o);
	if (!cfg.model.file[0]) {
		fprintf(stderr, "ps-sim: error: model.file is not set: the "
			"simulator needs a model file (e.g. --set "
			"model.file=conf/models/resnet50.json)\n");
		return 2;
	}
	/* the timeline goes there, as a job's would (ps-launch creates it) */
	if (cfg.output.dir[0] &&
	    ps_make_dirs(cfg.output.dir, err, sizeof(err)) != PS_OK) {
		fprintf(stderr, "ps-sim: error: output.dir: %s\n", err);
		return 1;
	}
	rc = ps_link_model_from_config(&cfg, &lm, err, sizeof(err));
	if (rc != PS_OK) {
		fprintf(stderr, "ps-sim: error: %s%s\n",
			cfg.link.fit_file[0] ? "link.fit_file: " : "", err);
		return 1;
	}
	rc = ps_dag_load(cfg.model.file, cfg.model.compute_scale, &dag, err,
			 sizeof(err));
	if (rc != PS_OK) {
		fprintf(stderr, "ps-sim: error: cannot load model.file: %s\n",
			err);
		return 1;
	}
	rc = ps_auto_sizes_choose(&cfg, dag, &lm, &ch, err, sizeof(err));
	if (rc != PS_OK) {
		fprintf(stderr, "ps-sim: error: cannot choose the auto sizes: "
			"%s\n", err);
		ps_dag_free(&dag);
		return 1;
	}
	if (ch.chosen) {
		char line[1280];
		ps_auto_choice_describe(&ch, line, sizeof(line));
		/* as the scheduler says it; on stderr beside --json */
		fprintf(o.json ? stderr : stdout, "scheduling: %s\n", line);
	}
	ps_sim_opts so = {.fair_full = o.fair_full};
	rc = ps_sim_run_opts(&cfg, dag, &lm, &so, &r, err, sizeof(err));
	if (rc != PS_OK) {
		fprintf(stderr, "ps-sim: error: %s\n", err);
		ps_dag_free(&dag);
		return 1;
	}
	if (o.fair_check) {
		ps_sim_result ref;
		char why[256];
		int same;
		so.fair_full = 1;
		rc = ps_sim_run_opts(&cfg, dag, &lm, &so, &ref, err,
				     sizeof(err));
		if (rc != PS_OK) {
			fprintf(stderr, "ps-sim: error: %s\n", err);
			ps_sim_result_free(&r);
			ps_dag_free(&dag);
			return 1;
		}
		same = ps_sim_result_same(&r, &ref, why, sizeof(why));
		ps_sim_result_free(&ref);
		if (!same) {
			fprintf(stderr, "ps-sim: error: fair check: the "
				"incremental run differs from the full "
				"recomputation: %s\n", why);
			ps_sim_result_free(&r);
			ps_dag_free(&dag);
			return 1;
		}
		fprintf(stderr, "fair check: incremental and full "
			"recomputation give the same run (%llu events, "
			"digest %016llx)\n", (unsigned long long)r.events,
			(unsigned long long)r.digest);
	}
	if (o.json)
		print_json(&cfg, dag, &r);
	else
		print_text(&cfg, dag, &r);
	fflush(stdout);
	if (o.stats) {
		struct rusage ru;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		getrusage(RUSAGE_SELF, &ru);
		fprintf(stderr, "stats: wall %.3f s, peak RSS %.1f MiB, %llu "
			"events, %llu messages\n",
			(double)(t1.tv_sec - t0.tv_sec) +
				(double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
			(double)ru.ru_maxrss / 1024.0,
			(unsigned long long)r.events,
			(unsigned long long)r.messages);
		if (r.fair.updates)
			fprintf(stderr, "stats: fair sharing: %llu streams, "
				"%llu rate updates over %.1f links and %.1f "
				"streams each (mean), %llu links certified, "
				"%llu withdrawn\n",
				(unsigned long long)r.fair.streams,
				(unsigned long long)r.fair.updates,
				(double)r.fair.links / (double)r.fair.updates,
				(double)r.fair.coupled /
					(double)r.fair.updates,
				(unsigned long long)r.fair.certified,
				(unsigned long long)r.fair.uncertified);
	}
	ps_sim_result_free(&r);
	ps_dag_free(&dag);
	return 0;
}
