/*
 * tune/main.c - ps-tune: Bayesian optimisation of partition and credit
 * sizes (docs/tune.md).
 *
 * One loop for both backends: propose a pair (tune/tuner.h), run the
 * trial (tune/backend.h), record it, rewrite tune.csv; at the end
 * best.ini and tune.png, and the job trains on or stops (tune.then).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cli.h"
#include "common/dirs.h"
#include "common/log.h"
#include "runtime/signals.h"
#include "tune/backend.h"
#include "tune/report.h"

typedef struct opts {
	int sim;              /* --backend sim */
	const char *worker;   /* --worker PROGRAM */
	const char *launcher; /* --launcher PROGRAM */
} opts;

static int on_opt(void *ud, const char *name, const char *arg, char *why,
		  size_t whylen)
{
	opts *o = ud;

	if (strcmp(name, "backend") == 0) {
		if (strcmp(arg, "job") == 0 || strcmp(arg, "sim") == 0) {
			o->sim = strcmp(arg, "sim") == 0;
			return PS_OK;
		}
		snprintf(why, whylen, "--backend: '%s' is not a backend "
			 "(allowed: job, sim)", arg);
		return PS_EINVAL;
	}
	if (!arg || !*arg) {
		snprintf(why, whylen, "--%s needs a program", name);
		return PS_EINVAL;
	}
	if (strcmp(name, "launcher") == 0)
		o->launcher = arg;
	else
		o->worker = arg;
	return PS_OK;
}

/* An executable plain file (access() alone says yes to a directory). */
static int is_program(const char *file)
{
	struct stat st;

	return stat(file, &st) == 0 && S_ISREG(st.st_mode) &&
	       access(file, X_OK) == 0;
}

/* PROGRAM as execvp would run it, resolved once here so that a typo is
 * refused before any trial rather than as every job's failure: a path
 * (with a '/') as given, a bare name looked up in PATH, an empty element
 * of PATH being the current directory, and execvp's default PATH when
 * none is set. PS_ENOENT when no executable file is found. */
static int find_program(const char *prog, char *out, size_t cap)
{
	const char *path = getenv("PATH");

	if (strchr(prog, '/')) {
		snprintf(out, cap, "%s", prog);
		return is_program(out) ? PS_OK : PS_ENOENT;
	}
	if (!path)
		path = "/bin:/usr/bin";
	for (;;) {
		size_t n = strcspn(path, ":");

		if (n)
			snprintf(out, cap, "%.*s/%s", (int)n, path, prog);
		else
			snprintf(out, cap, "./%s", prog);
		if (is_program(out))
			return PS_OK;
		if (!path[n])
			return PS_ENOENT;
		path += n + 1;
	}
}

static void say_trial(const ps_config *cfg, tuner *t, const tune_trial *tr)
{
	char part[32], credit[32];
	const tune_trial *best = tuner_best(t, NULL, NULL);

	ps_config_format_size(tr->pair.partition, part, sizeof(part));
	ps_config_format_size(tr->pair.credit, credit, sizeof(credit));
	printf("ps-tune: trial %u/%d: partition %s, credit %s (%s", tr->index,
	       cfg->tune.trials, part, credit, tr->how);
	if (strcmp(tr->how, "restart") == 0)
		printf(", job down %.3f s", tr->switch_s);
	else if (strcmp(tr->how, "credit") == 0)
		printf(", in force after %.3f s", tr->switch_s);
	if (tr->ok)
		printf("): %.1f samples/s over iterations %llu..%llu", 
		       tr->samples_per_s, (unsigned long long)tr->first,
		       (unsigned long long)tr->last);
	else
		printf("): failed: %s", tr->note);
	if (best)
		printf("; best: trial %u\n", best->index);
	else
		printf("\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static const ps_cli_opt cli_opts[] = {
		{"backend", "job|sim",
		 "job (default): tune the real job on this machine, through "
		 "ps-launch (or --launcher); sim: tune in ps-sim, for a "
		 "cluster described by the config (seconds)"},
		{"worker", "PROGRAM",
		 "job backend: passed to ps-launch (a worker program of your "
		 "own)"},
		{"launcher", "PROGRAM",
		 "job backend: start each trial's job with PROGRAM (a path, or "
		 "a name in PATH) instead of ps-launch. It gets ps-launch's "
		 "arguments, must start the whole job (scheduler, servers, "
		 "workers) so that the scheduler reaches tune.endpoint on "
		 "127.0.0.1 (ps-tune's machine and network namespace), pass "
		 "SIGTERM on to the job, and exit 0 only when the job ended "
		 "well (ps-bench --tune uses one)"},
		{NULL, NULL, NULL},
	};
	opts o = {0};
	const ps_cli_info info = {
		.prog = "ps-tune",
		.summary = "Tunes scheduling.partition_size and credit_size "
			   "with Bayesian optimisation while the job trains "
			   "(checkpoint and restart for a new partition size, "
			   "live for a new credit); writes tune.csv, best.ini "
			   "and tune.png into output.dir.",
		.opts = cli_opts,
		.on_opt = on_opt,
		.ud = &o,
	};
	tune_job_opts jo = {.argc = argc, .argv = argv};
	tune_job *job = NULL;
	tune_sim *sim = NULL;
	tuner *t = NULL;
	ps_config cfg;
	ps_cli_status st;
	const tune_trial *best;
	int rc = PS_OK, status = 1, failures = 0;
	char why[PS_CFG_STR + 128];

	ps_signals_install();
	st = ps_cli_parse(argc, argv, &info, &cfg);
	if (st != PS_CLI_RUN)
		return ps_cli_exit_status(st);
	ps_log_init("tune", cfg.log.level);
	if (o.launcher && o.sim) {
		fprintf(stderr, "ps-tune: error: --launcher starts the real "
			"job's trials; --backend sim runs none\n");
		return 2;
	}
	if (o.launcher &&
	    find_program(o.launcher, jo.launcher, sizeof(jo.launcher)) !=
		    PS_OK) {
		fprintf(stderr, "ps-tune: error: --launcher %s: no executable "
			"file%s\n", o.launcher,
			strchr(o.launcher, '/') ? "" : " of that name in PATH");
		return 2;
	}
	if (!cfg.output.dir[0])
		snprintf(cfg.output.dir, sizeof(cfg.output.dir),
			 "ps-tune-out");
	if (ps_make_dirs(cfg.output.dir, why, sizeof(why)) != PS_OK) {
		fprintf(stderr, "ps-tune: error: output.dir: %s\n", why);
		return 1;
	}
	if (o.sim || cfg.tune.prior == PS_TUNE_PRIOR_SIM) {
		rc = tune_sim_create(&cfg, &sim);
		if (rc != PS_OK)
			goto out;
	}
	rc = tuner_create(&cfg, cfg.tune.prior == PS_TUNE_PRIOR_SIM
					? tune_sim_prior
					: NULL,
			  sim, &t);
	if (rc != PS_OK)
		goto out;
	if (sim)
		tune_sim_bind(sim, t);
	if (!o.sim) {
		jo.worker = o.worker;
		rc = tune_job_create(&cfg, &jo, &job);
		if (rc != PS_OK)
			goto out;
	}
	printf("ps-tune: %d trials (%u quasi-random first) in %s, partition "
	       "%llu..%llu bytes, credit %llu..%llu bytes, prior %s; outputs "
	       "in %s\n",
	       cfg.tune.trials, tuner_design_trials(t), o.sim ? "ps-sim" :
	       "the job", (unsigned long long)cfg.tune.partition_min,
	       (unsigned long long)cfg.tune.partition_max,
	       (unsigned long long)cfg.tune.credit_min,
	       (unsigned long long)cfg.tune.credit_max,
	       ps_config_enum_name("tune.prior", cfg.tune.prior),
	       cfg.output.dir);
	fflush(stdout);
	for (int i = 0; i < cfg.tune.trials && rc == PS_OK; i++) {
		tune_trial tr;

		rc = tuner_propose(t, &tr);
		if (rc != PS_OK)
			break;
		rc = o.sim ? tune_sim_trial(sim, &tr) : tune_job_trial(job, &tr);
		if (rc != PS_OK && rc != PS_ECLOSED)
			break;
		if (rc == PS_ECLOSED) {
			printf("ps-tune: %s after %d trials\n", tr.note, i);
			break;
		}
		tuner_record(t, &tr);
		say_trial(&cfg, t, &tr);
		tune_write_csv(t, cfg.output.dir);
		failures = tr.ok ? 0 : failures + 1;
		if (failures >= 3) {
			PS_ERROR("3 trials in a row failed: giving up (see "
				 "tune.csv and the job's messages above)");
			rc = PS_EABORTED;
		}
	}
	if (rc == PS_EINTR)
		PS_WARN("interrupted: tune.csv holds the trials so far");
	best = tuner_best(t, NULL, NULL);
	if (tuner_count(t) > 0) {
		tune_write_csv(t, cfg.output.dir);
		tune_write_best(t, cfg.output.dir, o.sim ? "sim" : "job");
		tune_write_plot(t, cfg.output.dir);
	}
	if (best) {
		char part[32], credit[32];
		double avg, spread;
		uint32_t times = tuner_pair_measured(t, best->pair, &avg,
						     &spread);
		ps_config_format_size(best->pair.partition, part,
				      sizeof(part));
		ps_config_format_size(best->pair.credit, credit,
				      sizeof(credit));
		printf("ps-tune: best: partition %s, credit %s (%.1f "
		       "samples/s, the mean of %u trial(s) of the pair, "
		       "first trial %u); %s/best.ini\n",
		       part, credit, avg, times, best->index, cfg.output.dir);
		fflush(stdout);
	}
	if (o.sim) {
		status = best && rc == PS_OK ? 0 : 1;
		goto out;
	}
	if (rc == PS_ECLOSED) {
		status = 0; /* the job ended by itself, every iteration run */
	} else if (rc == PS_OK) {
		status = tune_job_finish(job, best ? &best->pair : NULL);
		if (!best) {
			/* the job was stopped at a checkpoint, but nothing was
			 * tuned: not a success */
			PS_ERROR("every trial failed (tune.csv says why): no "
				 "pair to %s", cfg.tune.then == PS_TUNE_THEN_TRAIN
						       ? "train on with"
						       : "report");
			status = 1;
		} else if (status == 0 && cfg.tune.then == PS_TUNE_THEN_TRAIN)
			printf("ps-tune: the job trained on with the best "
			       "pair to train.iterations and ended\n");
	}
out:
	if (status != 0 && ps_signal_pending())
		status = ps_signal_exit_status(ps_signal_pending());
	tune_job_free(&job);
	tune_sim_free(&sim);
	tuner_free(&t);
	return status;
}
