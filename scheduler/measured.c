/*
 * scheduler/measured.c - the model of a training job from its workers'
 * measurements (model/measured.h): TIMINGS gathered from every worker,
 * their mean made a model file, written where the next start finds it
 * (checkpoint.dir) and where the user looks (output.dir), and simulated:
 * the sizes ps-sim would choose on it against the sizes in force, said
 * in one line. At a start without model.file, a measured model in
 * checkpoint.dir whose tensors are the workers' is the job's model.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "common/log.h"
#include "model/measured.h"
#include "runtime/node.h"
#include "sim/auto_sizes.h"
#include "sim/link.h"
#include "scheduler/state.h"

/* dir/measured-model.json into buf; 0 where dir is empty or too long. */
static int measured_path(const char *dir, char *buf, size_t cap)
{
	return dir[0] && (size_t)snprintf(buf, cap, "%s/%s", dir,
					  PS_MEASURED_FILE) < cap;
}

/* model as dir/measured-model.json, whole or not at all: written to a
 * new temporary file (never through a link), synced, then renamed. 0, or
 * -1 with a warning. */
static int write_model(json_t *model, const char *dir, char *path,
		       size_t cap)
{
	char tmp[PS_CFG_STR + 64];
	FILE *f = NULL;
	int fd, ok;

	if (!measured_path(dir, path, cap) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -1;
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0644);
	if (fd >= 0 && !(f = fdopen(fd, "w")))
		close(fd);
	ok = f && json_dumpf(model, f, JSON_INDENT(1) |
					   JSON_REAL_PRECISION(9)) == 0 &&
	     fflush(f) == 0 && fsync(fileno(f)) == 0;
	if (f && fclose(f) != 0)
		ok = 0;
	if (!ok || rename(tmp, path) != 0) {
		PS_WARN("cannot write the measured model to %s: %s", path,
			strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* What ps-sim makes of the measured model: the sizes it would choose
 * (where the config leaves them to be chosen) against the sizes in
 * force, into buf. */
static void simulate(coord *c, const ps_dag *d, char *buf, size_t cap)
{
	ps_config k = *c->given;
	ps_link_model lm;
	ps_auto_choice ch;
	char err[512], line[1280], part[32], credit[96];
	double now_us;

	/* the link as the start measured it */
	k.link.bandwidth_gbps = c->cfg->link.bandwidth_gbps;
	if (ps_link_model_from_config(c->cfg, &lm, err, sizeof(err)) != PS_OK ||
	    ps_auto_sizes_predict(c->cfg, d, &lm, &now_us, err, sizeof(err)) !=
		PS_OK) {
		snprintf(buf, cap, "ps-sim cannot run it: %s", err);
		return;
	}
	if (!ps_auto_sizes_wanted(&k)) {
		snprintf(buf, cap,
			 "ps-sim: %.1f ms per iteration with the sizes in "
			 "force (none is auto: nothing to choose)",
			 now_us / 1e3);
		return;
	}
	if (ps_auto_sizes_choose(&k, d, &lm, &ch, err, sizeof(err)) != PS_OK) {
		snprintf(buf, cap, "ps-sim cannot choose on it: %s", err);
		return;
	}
	ps_auto_choice_describe(&ch, line, sizeof(line));
	ps_config_format_size(c->cfg->scheduling.push.partition_size, part,
			      sizeof(part));
	ps_auto_describe_credits(c->cfg->scheduling.push.credit_size,
				 c->cfg->scheduling.params.credit_size, credit,
				 sizeof(credit));
	snprintf(buf, cap,
		 "on it, %s; the sizes in force (partition %s, %s): "
		 "%.1f ms per iteration",
		 line, part, credit, now_us / 1e3);
}

/* Every worker's timings are in: the model, checked and written (what
 * ps-sim makes of it is said at the job's end, psi_sched_say_measured:
 * simulating here would hold the loop and its heartbeats). */
static void model_done(coord *c)
{
	ps_timings t;
	const char **names = calloc(c->ntensors, sizeof(*names));
	uint64_t *numel = calloc(c->ntensors, sizeof(*numel));
	json_t *model = NULL;
	ps_dag *d = NULL;
	char why[1024], path[PS_CFG_STR + 32];
	size_t at;

	if (!names || !numel || ps_timings_init(&t, c->ntensors) != PS_OK) {
		PS_WARN("out of memory for the measured model");
		goto out;
	}
	ps_timings_sum_mean(&c->timings, &t);
	for (uint32_t i = 0; i < c->ntensors; i++) {
		names[i] = c->tensors[i].name;
		numel[i] = c->tensors[i].numel;
	}
	model = ps_measured_model(&t, names, numel,
				  (uint32_t)c->cfg->train.batch);
	if (!model ||
	    ps_dag_from_json(model, "the measured model", 1.0, &d, why,
			     sizeof(why)) != PS_OK) {
		PS_WARN("the measured model: %s", model ? why : "out of memory");
		goto out_t;
	}
	snprintf(c->measured_how, sizeof(c->measured_how),
		 "%u iteration(s) on each of %u worker(s), %.1f ms of compute "
		 "per iteration", t.workers ? t.iterations / t.workers : 0,
		 t.workers, t.length_us / 1e3);
	at = 0;
	if (write_model(model, c->cfg->checkpoint.dir, path, sizeof(path)) == 0)
		at += (size_t)snprintf(c->measured_at, sizeof(c->measured_at),
				       "; written to %s (the next start with "
				       "this checkpoint.dir takes it)", path);
	if (at < sizeof(c->measured_at) &&
	    write_model(model, c->cfg->output.dir, path, sizeof(path)) == 0)
		snprintf(c->measured_at + at, sizeof(c->measured_at) - at,
			 "%s %s (model.file for ps-sim, ps-tune or a start)",
			 at ? " and" : "; written to", path);
	if (!c->measured_at[0])
		snprintf(c->measured_at, sizeof(c->measured_at),
			 "; not written (no checkpoint.dir or output.dir: with "
			 "checkpoint.dir the next start takes it)");
	c->measured_dag = d; /* simulated at the job's end */
out_t:
	json_decref(model);
	ps_timings_free(&t);
out:
	free(names);
	free(numel);
}

void psi_sched_say_measured(coord *c)
{
	char sim[2048];

	if (!c->measured_dag)
		return;
	simulate(c, c->measured_dag, sim, sizeof(sim));
	printf("scheduling: measured model: %s; %s%s\n", c->measured_how, sim,
	       c->measured_at);
	fflush(stdout);
}

int psi_sched_timings(coord *c, const member *m, const ps_msg *msg)
{
	uint32_t w = m->info.rank;
	ps_timings t;
	char why[512];

	if (m->info.role != PS_ROLE_WORKER || w >= c->workers ||
	    !c->timings.need_us || c->timed[w]) {
		psi_note_drop(++c->dropped, "TIMINGS",
			      "not a worker's, not expected, or its second");
		return PS_OK;
	}
	if (ps_timings_init(&t, c->ntensors) != PS_OK)
		return PS_OK; /* advisory: without memory, no model */
	if (ps_wire_timings_decode(msg->payload, msg->payload_len, &t, why,
				   sizeof(why)) != PS_OK) {
		PS_WARN("worker %u's timings refused: %s", w, why);
		ps_timings_free(&t);
		return PS_OK;
	}
	c->timed[w] = 1;
	ps_timings_sum_add(&c->timings, &t);
	ps_timings_free(&t);
	if (c->timings.workers == c->workers) {
		model_done(c);
		psi_sched_timings_free(c); /* once per job */
	}
	return PS_OK;
}

void psi_sched_timings_start(coord *c)
{
	if (!ps_measure_wanted(c->cfg))
		return;
	c->timed = calloc(c->workers, 1);
	if (!c->timed ||
	    ps_timings_sum_init(&c->timings, c->ntensors) != PS_OK) {
		psi_sched_timings_free(c);
		PS_WARN("out of memory for the workers' timings: no measured "
			"model");
	}
}

void psi_sched_timings_free(coord *c)
{
	ps_timings_sum_free(&c->timings);
	free(c->timed);
	c->timed = NULL;
}

void psi_sched_measured_free(coord *c)
{
	psi_sched_timings_free(c);
	ps_dag_free(&c->measured_dag);
}

int psi_sched_load_measured(coord *c, ps_dag **dag_p)
{
	char path[PS_CFG_STR + 32], why[1024];
	ps_dag *d = NULL;
	struct stat st;

	*dag_p = NULL;
	if (!measured_path(c->cfg->checkpoint.dir, path, sizeof(path)) ||
	    lstat(path, &st) != 0)
		return 0;
	if (!S_ISREG(st.st_mode)) { /* a FIFO would block the start */
		PS_WARN("not taking the measured model %s: not a regular file",
			path);
		return 0;
	}
	if (ps_dag_load(path, 1.0, &d, why, sizeof(why)) != PS_OK) {
		PS_WARN("not taking the measured model: %s", why);
		return 0;
	}
	int64_t i = psi_sched_first_difference(c, d);
	if (i >= 0) {
		if (d->ntensors != c->ntensors)
			PS_WARN("not taking the measured model %s: %u tensors, "
				"the workers declared %u", path, d->ntensors,
				c->ntensors);
		else
			PS_WARN("not taking the measured model %s: tensor %u "
				"is '%s' there, '%s' here", path, (uint32_t)i,
				d->tensors[i].name, c->tensors[i].name);
		ps_dag_free(&d);
		return 0;
	}
	printf("scheduling: model: the timings an earlier run of this job "
	       "measured (%s)\n", path);
	*dag_p = d;
	return 1;
}
