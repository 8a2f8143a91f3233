/*
 * scheduler/plan.c - the job's plan, made between the ids and the WELCOME
 * (scheduler.h, step 3): model.file loaded and checked against the
 * tensors the workers declared, the sizes left auto chosen (the link
 * measured first where link.bandwidth_gbps is 0), the placement and the
 * transfer orders (scheduling/job_plan.h), said on stdout and written to
 * output.dir (config.ini, order.csv, placement.csv).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/output.h"
#include "scheduling/job_plan.h"
#include "scheduling/order.h"
#include "scheduling/placement.h"
#include "model/dag.h"
#include "scheduler/link_probe.h"
#include "sim/auto_sizes.h"
#include "sim/link.h"
#include "scheduler/state.h"

int64_t psi_sched_first_difference(const coord *c, const ps_dag *d)
{
	uint32_t n = d->ntensors < c->ntensors ? d->ntensors : c->ntensors;

	for (uint32_t i = 0; i < n; i++)
		if (strcmp(d->tensors[i].name, c->tensors[i].name) != 0 ||
		    d->tensors[i].numel != c->tensors[i].numel)
			return i;
	return d->ntensors != c->ntensors ? (int64_t)n : -1;
}

/* The tensors the workers declared must be the model file's, in order. */
static int same_as_model(const coord *c, const ps_dag *d)
{
	int64_t i = psi_sched_first_difference(c, d);

	if (i < 0)
		return 1;
	if (d->ntensors != c->ntensors)
		PS_ERROR("model.file has %u tensors, the workers declared %u",
			 d->ntensors, c->ntensors);
	else
		PS_ERROR("tensor %u: model.file has '%s', the workers "
			 "declared '%s'", (uint32_t)i, d->tensors[i].name,
			 c->tensors[i].name);
	return 0;
}

/*
 * scheduling.partition_size / *_credit_size = auto: chosen now, before the
 * placement, by simulating the job's model on its links
 * (sim/auto_sizes.h); the partitions reach every node in the WELCOME's
 * placement, the credits in its credit element. Without model.file there
 * are no timings to simulate: the stated fallback.
 */
/* The bytes of the tensors the workers declared. */
uint64_t psi_sched_model_bytes(const coord *c)
{
	uint64_t bytes = 0;

	for (uint32_t i = 0; i < c->ntensors; i++)
		bytes += c->tensors[i].numel * PS_ELEM_SIZE;
	return bytes;
}

/* The address part of an endpoint ("tcp://10.0.0.2:5000" -> "10.0.0.2"). */
static void endpoint_address(const char *endpoint, char *buf, size_t cap)
{
	const char *a = strstr(endpoint, "://"), *colon;

	a = a ? a + 3 : endpoint;
	colon = strrchr(a, ':');
	snprintf(buf, cap, "%.*s", (int)(colon ? colon - a : (long)strlen(a)),
		 a);
}

/* The node to measure the link to: the first server at another address
 * than the scheduler's, else the first worker, else server 0 (the whole
 * job on the scheduler's address: its link is what the job uses). */
static uint32_t probe_target(const coord *c)
{
	char self[PS_ENDPOINT_MAX], a[PS_ENDPOINT_MAX];

	endpoint_address(c->self.endpoint, self, sizeof(self));
	for (uint32_t i = 1; i <= c->servers + c->workers; i++) {
		endpoint_address(c->members[i].info.endpoint, a, sizeof(a));
		if (strcmp(a, self) != 0)
			return i;
	}
	return 1;
}

/*
 * link.bandwidth_gbps = 0 with sizes to choose: the link measured to one
 * node (scheduler/link_probe.h), its rate put in force for the choice
 * and said in how. A probe that fails leaves metrics.bandwidth_gbps, with
 * a warning. PS_EINTR when a signal came.
 */
static int measure_link(coord *c, char *how, size_t cap)
{
	ps_config *cfg = &c->in_force;
	uint32_t id = probe_target(c);
	const member *m = &c->members[id];
	uint64_t max = ps_config_max_message(cfg);
	char addr[PS_ENDPOINT_MAX], size[32], why[256];
	ps_link_probe r;
	int rc;

	how[0] = '\0';
	if (cfg->link.bandwidth_gbps > 0)
		return PS_OK;
	rc = ps_link_probe_run(c->t, c->job_id, m->peer,
			       m->info.transport_id,
			       max < PROBE_MAX_BYTES ? max : PROBE_MAX_BYTES,
			       cfg->cluster.connect_timeout_ms, &r,
			       &c->dropped, why, sizeof(why));
	if (rc == PS_EINTR) {
		psi_sched_abort_job(
		    c, "scheduler interrupted while measuring the link");
		return PS_EINTR;
	}
	endpoint_address(m->info.endpoint, addr, sizeof(addr));
	if (rc != PS_OK) {
		PS_WARN("cannot measure the link to %s %u at %s: %s; the "
			"sizes are chosen for metrics.bandwidth_gbps = %g",
			ps_role_name(m->info.role), m->info.rank, addr, why,
			cfg->metrics.bandwidth_gbps);
		return PS_OK;
	}
	cfg->link.bandwidth_gbps = r.gbps;
	ps_config_format_size(r.bytes, size, sizeof(size));
	snprintf(how, cap,
		 "measured to %s %u at %s: %s probes, %.0f us each, "
		 "round trip %.0f us; link.bandwidth_gbps is 0",
		 ps_role_name(m->info.role), m->info.rank, addr, size, r.us,
		 r.rtt_us);
	return PS_OK;
}

/*
 * model.file's DAG, where the sizes or the orders need it: auto sizes
 * simulate it, orders other than fifo follow it. The workers' tensors must
 * be its own (same_as_model says which differs).
 */
int psi_sched_load_model(coord *c)
{
	const ps_config *cfg = c->cfg;
	char err[1024], why[1100];
	int rc;

	if (!ps_auto_sizes_wanted(cfg) &&
	    cfg->scheduling.push.order == PS_ORDER_FIFO &&
	    cfg->scheduling.params.order == PS_ORDER_FIFO)
		return PS_OK;
	if (!cfg->model.file[0]) {
		/* not under ps-tune: its trials must differ in their sizes
		 * alone, not in orders the first trial's timings changed */
		if (!cfg->tune.endpoint[0])
			c->measured = psi_sched_load_measured(c, &c->dag);
		return PS_OK;
	}
	rc = ps_dag_load(cfg->model.file, cfg->model.compute_scale, &c->dag,
			 err, sizeof(err));
	if (rc != PS_OK) {
		snprintf(why, sizeof(why), "cannot load model.file: %s", err);
		psi_sched_abort_job(c, why);
		return PS_EABORTED;
	}
	if (!same_as_model(c, c->dag)) {
		psi_sched_abort_job(
		    c, "the workers' tensors are not model.file's");
		return PS_EABORTED;
	}
	return PS_OK;
}

int psi_sched_choose_sizes(coord *c)
{
	ps_config *cfg = &c->in_force;
	ps_auto_choice ch;
	ps_link_model lm;
	char err[1024], line[1280], why[1100], how[384];
	struct timespec t0, t1;
	int rc = PS_OK;

	if (!ps_auto_sizes_wanted(cfg))
		return PS_OK;
	c->credit_chosen = cfg->scheduling.push.credit_size == PS_SIZE_AUTO &&
			   cfg->scheduling.params.credit_size == PS_SIZE_AUTO;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (measure_link(c, how, sizeof(how)) != PS_OK)
		return PS_EINTR;
	if (!c->dag) {
		ps_auto_sizes_fallback(cfg, psi_sched_model_bytes(c), &ch);
	} else {
		rc = ps_link_model_from_config(cfg, &lm, err, sizeof(err));
		if (rc == PS_OK)
			rc = ps_auto_sizes_choose(cfg, c->dag, &lm, &ch, err,
						  sizeof(err));
		if (rc != PS_OK) {
			snprintf(why, sizeof(why),
				 "cannot choose the auto sizes: %s", err);
			psi_sched_abort_job(c, why);
			return PS_EABORTED;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	snprintf(ch.link_how, sizeof(ch.link_how), "%s", how);
	ps_auto_choice_describe(&ch, line, sizeof(line));
	printf("scheduling: %s; chosen in %.3f s\n", line,
	       (double)(t1.tv_sec - t0.tv_sec) +
		       (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
	fflush(stdout);
	return PS_OK;
}

/* DIR/config.ini: the configuration the job runs with, every key. */
static void write_config_ini(const coord *c)
{
	FILE *f = ps_output_open(c->cfg, "config.ini");

	if (!f)
		return;
	ps_config_write_ini(c->cfg, f);
	fclose(f);
}

static void write_order_csv(const coord *c)
{
	FILE *f = ps_output_open(c->cfg, "order.csv");

	if (!f)
		return;
	fprintf(f, "tensor,name,push_priority,params_priority\n");
	for (uint32_t i = 0; i < c->ntensors; i++)
		fprintf(f, "%u,%s,%u,%u\n", i, c->tensors[i].name,
			c->push_priority ? c->push_priority[i] : 0,
			c->priority ? c->priority[i] : 0);
	fclose(f);
}

/*
 * Says the transfer orders of the job's plan (computed with the
 * placement, scheduling/job_plan.h) and writes them with the
 * configuration in force.
 */
void psi_sched_say_orders(coord *c)
{
	const ps_config *cfg = c->cfg;
	char line[320];

	ps_config_describe_scheduling(cfg, line, sizeof(line));
	printf("scheduling: %s%s\n", line,
	       ps_config_directions_alike(cfg)
		       ? " (worker pushes and server parameter sends alike)"
		       : "");
	if ((cfg->scheduling.push.order != PS_ORDER_FIFO ||
	     cfg->scheduling.params.order != PS_ORDER_FIFO) &&
	    !cfg->model.file[0] && !c->measured)
		printf("scheduling: no model.file: orders other than fifo "
		       "follow the tensors' declaration order\n");
	write_order_csv(c);
	write_config_ini(c);
	fflush(stdout);
}

/* DIR/placement.csv: which server holds which partition. */
static void write_placement_csv(const coord *c)
{
	const ps_placement *pl = c->placement;
	FILE *f = ps_output_open(c->cfg, "placement.csv");

	if (!f)
		return;
	fprintf(f, "partition,tensor,index,offset,numel,server,ntensors\n");
	for (uint32_t i = 0; i < pl->num_parts; i++)
		fprintf(f, "%u,%u,%u,%llu,%llu,%u,%u\n", i,
			pl->parts[i].tensor, pl->parts[i].index,
			(unsigned long long)pl->parts[i].offset,
			(unsigned long long)pl->parts[i].numel,
			pl->parts[i].server, pl->parts[i].ntensors);
	fclose(f);
}

/* The job's plan (scheduling/job_plan.h): the placement, said and
 * written, and the orders. */
int psi_sched_plan_job(coord *c)
{
	ps_job_plan plan;
	char why[1024];
	int rc = ps_job_plan_make(c->cfg, c->tensors, c->ntensors, c->servers,
				  c->dag, &plan, why, sizeof(why));

	ps_dag_free(&c->dag);
	if (rc != PS_OK) {
		PS_ERROR("%s", why);
		return rc;
	}
	c->placement = plan.pl;
	c->priority = plan.params_priority;
	c->push_priority = plan.push_priority;
	/* every partition's payload must pass every node's transport */
	uint64_t max = ps_config_max_message(c->cfg);
	for (uint32_t i = 0; i < c->placement->num_parts; i++) {
		const ps_partition *p = &c->placement->parts[i];
		if (p->numel <= max / sizeof(float))
			continue;
		snprintf(why, sizeof(why),
			 "partition %u (tensor '%s') is %llu bytes, more than "
			 "transport.max_message = %llu: raise it or lower "
			 "scheduling.partition_size",
			 i, c->tensors[p->tensor].name,
			 (unsigned long long)(p->numel * sizeof(float)),
			 (unsigned long long)max);
		psi_sched_abort_job(c, why);
		return PS_EABORTED;
	}
	ps_placement_print(c->placement, stdout);
	fflush(stdout);
	write_placement_csv(c);
	return PS_OK;
}
