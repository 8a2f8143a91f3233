/*
 * sim/auto_sizes.c - the sizes chosen at a job's start (auto_sizes.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/auto_sizes.h"
#include "sim/cluster.h"

#define TIB ((uint64_t)1 << 40)

/* The windows tried, in partitions (0: unlimited). None below
 * AUTO_MIN_WINDOW: ps-sim sees a message's round trip as its link's
 * latency, and a real one (wake-ups, the receiver's turn, the
 * acknowledgement's way back) is several times that; a window of one or
 * two partitions the model finds enough left the link idle for every
 * round trip it underestimated (docs/auto-sizes.md, "Why no window of
 * fewer than four partitions"). */
static const unsigned credit_multiples[] = {AUTO_MIN_WINDOW, 8, 16, 0};

/* The link rate the link model is built from (sim/link.h). */
static double link_gbps(const ps_config *cfg)
{
	return cfg->link.bandwidth_gbps > 0 ? cfg->link.bandwidth_gbps
					    : cfg->metrics.bandwidth_gbps;
}

int ps_auto_sizes_wanted(const ps_config *cfg)
{
	return cfg->scheduling.partition_size == PS_SIZE_AUTO ||
	       cfg->scheduling.push.credit_size == PS_SIZE_AUTO ||
	       cfg->scheduling.params.credit_size == PS_SIZE_AUTO;
}

/* The cluster the candidates are simulated on: the job's, or for a large
 * one AUTO_MAX_WORKERS workers and servers in the job's ratio. */
static void sim_cluster(const ps_config *cfg, uint32_t *w_p, uint32_t *s_p)
{
	uint32_t w = (uint32_t)cfg->cluster.workers;
	uint32_t s = (uint32_t)cfg->cluster.servers;

	if (w > AUTO_MAX_WORKERS) {
		s = (uint32_t)lround((double)s * AUTO_MAX_WORKERS / w);
		if (s < 1)
			s = 1;
		if (s > AUTO_MAX_WORKERS)
			s = AUTO_MAX_WORKERS;
		w = AUTO_MAX_WORKERS;
	}
	*w_p = w;
	*s_p = s;
}

/* ps-sim's steady-state iteration time of k (us), or -1 with why. */
static double simulate(ps_config k, const ps_dag *dag,
		       const ps_link_model *lm, uint32_t w, uint32_t s,
		       char *why, size_t whylen)
{
	ps_sim_result r;
	double us;

	k.output.dir[0] = '\0';
	k.train.iterations = AUTO_ITERATIONS;
	/* one stream per peer pair, a message's latency a delay that a
	 * window hides (as TCP's), not a cost each message holds its link
	 * for: what makes a window too small for the round trip show */
	k.link.sharing = PS_SHARING_FAIR;
	/* every message waits exactly a: with jittered latencies ps-sim
	 * prefers no push window on the Transformer at 1 Gbit/s, which ran
	 * 1.66x slower there (docs/auto-sizes.md); the choices were
	 * measured without */
	k.link.latency_jitter = 0.0;
	k.cluster.workers = (int)w;
	k.cluster.servers = (int)s;
	if (ps_sim_run(&k, dag, lm, &r, why, whylen) != PS_OK)
		return -1.0;
	us = r.iteration_us;
	ps_sim_result_free(&r);
	return us > 0.0 ? us : -1.0;
}

int ps_auto_sizes_predict(const ps_config *cfg, const ps_dag *dag,
			  const ps_link_model *lm, double *us_p, char *why,
			  size_t whylen)
{
	uint32_t w, s;

	sim_cluster(cfg, &w, &s);
	*us_p = simulate(*cfg, dag, lm, w, s, why, whylen);
	return *us_p > 0.0 ? PS_OK : PS_EINVAL;
}

/* A direction's credit for candidate multiple m of partition p: the
 * config's unless it is auto. */
static uint64_t credit_for(uint64_t configured, uint64_t p, unsigned m)
{
	if (configured != PS_SIZE_AUTO)
		return configured;
	return m == 0 ? 0 : (uint64_t)m * p;
}

/* Whether partition p fits under a direction's fixed credit. */
static int fits(uint64_t credit, uint64_t p)
{
	return credit == PS_SIZE_AUTO || credit == 0 || credit >= p;
}

static void runner_up(const ps_config *cfg, const ps_dag *dag,
		      const ps_link_model *lm, uint32_t w, uint32_t s,
		      ps_auto_choice *c)
{
	char err[256];

	c->runner_up = -1;
	for (int p = 0; p < PS_PRESET_COUNT; p++) {
		ps_config k = *cfg;
		double us;

		if (p == cfg->scheduling.preset || ps_config_preset_has_auto(p))
			continue;
		if (ps_config_apply_preset(&k, p, err, sizeof(err)) != PS_OK)
			continue;
		us = simulate(k, dag, lm, w, s, err, sizeof(err));
		if (us > 0.0 && (c->runner_up < 0 || us < c->runner_up_us)) {
			c->runner_up = p;
			c->runner_up_us = us;
		}
	}
}

/* Candidate (partition p, window of m partitions) as a config in *k;
 * 0 where it is no candidate. */
static int candidate(const ps_config *cfg, uint64_t p, unsigned m,
		     ps_config *k)
{
	const uint64_t up = cfg->scheduling.push.credit_size;
	const uint64_t down = cfg->scheduling.params.credit_size;

	*k = *cfg;
	if (cfg->scheduling.partition_size == PS_SIZE_AUTO)
		ps_config_set_partition_size(k, p);
	/* a push window of m of the pushes' own pieces; a fixed params
	 * credit stays as configured */
	uint64_t pu = k->scheduling.push.partition_size,
		 pd = k->scheduling.params.partition_size;
	if ((pu >= TIB || pd >= TIB) && m != 0)
		return 0; /* whole tensors: no window */
	k->scheduling.push.credit_size = credit_for(up, pu, m);
	if (down == PS_SIZE_AUTO) {
		/* as the job runs: an auto params credit is unlimited
		 * (auto_sizes.h, "The parameters' window") */
		k->scheduling.params.credit_size = 0;
		k->scheduling.params.credit_bdp = 0;
	}
	ps_config_finalize(k);
	return 1;
}

typedef struct {
	uint64_t p;
	unsigned m;
	double us[2]; /* at the link's latency, at AUTO_LATENCY_FACTOR x */
} scored;

int ps_auto_sizes_choose(ps_config *cfg, const ps_dag *dag,
			 const ps_link_model *lm, ps_auto_choice *c,
			 char *why, size_t whylen)
{
	const uint64_t part = cfg->scheduling.partition_size;
	const uint64_t up = cfg->scheduling.push.credit_size;
	const uint64_t down = cfg->scheduling.params.credit_size;
	const int credit_auto = up == PS_SIZE_AUTO || down == PS_SIZE_AUTO;
	const size_t nmult =
	    sizeof(credit_multiples) / sizeof(credit_multiples[0]);
	uint64_t p_lo = part, p_hi = part;
	ps_link_model slow = *lm;
	const ps_link_model *models[2] = {lm, &slow};
	scored cand[64];
	size_t n = 0, pick = 0;
	double best[2] = {-1.0, -1.0}, regret = -1.0;
	uint32_t w, s;

	memset(c, 0, sizeof(*c));
	c->runner_up = -1;
	c->link_gbps = link_gbps(cfg);
	c->link_from_metrics = !(cfg->link.bandwidth_gbps > 0);
	if (!ps_auto_sizes_wanted(cfg)) {
		c->partition_size = part;
		c->push_credit = up;
		c->params_credit = down;
		return PS_OK;
	}
	slow.a_us *= AUTO_LATENCY_FACTOR;
	sim_cluster(cfg, &w, &s);
	c->sim_workers = w;
	c->sim_servers = s;
	if (part == PS_SIZE_AUTO) {
		uint64_t total = 0;
		for (uint32_t i = 0; i < dag->ntensors; i++)
			total += dag->tensors[i].numel * PS_ELEM_SIZE;
		p_lo = AUTO_MIN_PARTITION;
		while (p_lo < PS_AUTO_PARTITION_MAX &&
		       total / p_lo > AUTO_MAX_PARTITIONS)
			p_lo *= 2;
		p_hi = PS_AUTO_PARTITION_MAX;
	}
	if (why && whylen)
		why[0] = '\0';
	for (uint64_t p = p_lo; p <= p_hi; p *= 2) {
		if (!fits(up, p) || !fits(down, p))
			continue;
		for (size_t i = 0; i < nmult; i++) {
			ps_config k;
			scored *sc = &cand[n];
			int ok = 1;

			if (!credit_auto && i > 0)
				break; /* one candidate: the fixed credit */
			if (n == sizeof(cand) / sizeof(cand[0]) ||
			    !candidate(cfg, p, credit_multiples[i], &k))
				continue;
			sc->p = p;
			sc->m = credit_multiples[i];
			for (int l = 0; l < 2; l++) {
				sc->us[l] = simulate(k, dag, models[l], w, s,
						     why, whylen);
				ok = ok && sc->us[l] > 0.0;
			}
			c->candidates++;
			if (!ok)
				continue;
			for (int l = 0; l < 2; l++)
				if (best[l] < 0.0 || sc->us[l] < best[l])
					best[l] = sc->us[l];
			n++;
		}
		if (p >= TIB)
			break;
	}
	if (n == 0) {
		if (why && whylen && !why[0])
			snprintf(why, whylen,
				 "no partition of %lluK to %lluM fits under "
				 "the fixed credit",
				 (unsigned long long)(p_lo >> 10),
				 (unsigned long long)(PS_AUTO_PARTITION_MAX >>
						      20));
		return PS_EINVAL;
	}
	/* The least regret: the pair whose slowdown against the best pair
	 * is least at whichever latency is worse for it (the first on
	 * ties, the smallest sizes). A pair without a window is a yardstick
	 * for the best, not a choice, while a windowed pair exists: without
	 * a window the gate hands everything over at once and the transport
	 * sends it in that order, which ps-sim ranks too kindly (measured
	 * against a window of 2M on 128K partitions: 2.4 % to 6.6 % slower
	 * on three models of four, 1.3 % faster on one; docs/auto-sizes.md,
	 * "Never without a window"). */
	for (int windowed = 1; windowed >= 0 && regret < 0.0; windowed--)
		for (size_t i = 0; i < n; i++) {
			double r0 = cand[i].us[0] / best[0],
			       r1 = cand[i].us[1] / best[1];
			double r = r0 > r1 ? r0 : r1;

			if (windowed && cand[i].m == 0)
				continue;
			if (regret < 0.0 || r < regret) {
				regret = r;
				pick = i;
			}
		}
	{
		ps_config k;
		(void)candidate(cfg, cand[pick].p, cand[pick].m, &k);
		*cfg = k;
	}
	c->iteration_us = cand[pick].us[0];
	c->chosen = 1;
	c->partition_size = cfg->scheduling.partition_size;
	c->push_credit = cfg->scheduling.push.credit_size;
	c->params_credit = cfg->scheduling.params.credit_size;
	c->regret = regret;
	c->latency_us = lm->a_us;
	runner_up(cfg, dag, lm, w, s, c);
	return PS_OK;
}

void ps_auto_sizes_fallback(ps_config *cfg, uint64_t model_bytes,
			    ps_auto_choice *c)
{
	uint64_t bdp;

	memset(c, 0, sizeof(*c));
	c->runner_up = -1;
	if (!ps_auto_sizes_wanted(cfg)) {
		c->partition_size = cfg->scheduling.partition_size;
		c->push_credit = cfg->scheduling.push.credit_size;
		c->params_credit = cfg->scheduling.params.credit_size;
		return;
	}
	c->partition_auto = cfg->scheduling.partition_size == PS_SIZE_AUTO;
	if (c->partition_auto) {
		uint64_t p = AUTO_FALLBACK_PARTITION;
		uint64_t servers = (uint64_t)cfg->cluster.servers;
		while (p > AUTO_MIN_PARTITION && model_bytes < 2 * servers * p)
			p /= 2;
		/* under a fixed credit */
		for (int d = 0; d < 2; d++) {
			uint64_t cr = d ? cfg->scheduling.params.credit_size
					: cfg->scheduling.push.credit_size;
			if (cr != PS_SIZE_AUTO && cr != 0 && cr < p)
				p = cr & ~(uint64_t)3;
		}
		ps_config_set_partition_size(cfg, p);
	}
	bdp = ps_config_bdp_credit(cfg);
	if (bdp < AUTO_MIN_WINDOW * cfg->scheduling.partition_size)
		bdp = AUTO_MIN_WINDOW * cfg->scheduling.partition_size;
	if (cfg->scheduling.push.credit_size == PS_SIZE_AUTO)
		cfg->scheduling.push.credit_size = bdp;
	if (cfg->scheduling.params.credit_size == PS_SIZE_AUTO) {
		cfg->scheduling.params.credit_size = 0; /* no window */
		cfg->scheduling.params.credit_bdp = 0;
	}
	ps_config_finalize(cfg);
	c->chosen = 1;
	c->fallback = 1;
	c->partition_size = cfg->scheduling.partition_size;
	c->push_credit = cfg->scheduling.push.credit_size;
	c->params_credit = cfg->scheduling.params.credit_size;
	c->link_gbps = link_gbps(cfg);
	c->link_from_metrics = !(cfg->link.bandwidth_gbps > 0);
}

static void credit_words(uint64_t credit, char *buf, size_t cap)
{
	if (credit == 0)
		snprintf(buf, cap, "unlimited");
	else
		ps_config_format_size(credit, buf, cap);
}

void ps_auto_describe_credits(uint64_t push, uint64_t params, char *buf,
			      size_t cap)
{
	char up[32], down[32];

	credit_words(push, up, sizeof(up));
	credit_words(params, down, sizeof(down));
	if (strcmp(up, down) == 0)
		snprintf(buf, cap, "credit %s", up);
	else
		snprintf(buf, cap, "push credit %s, params credit %s", up,
			 down);
}

void ps_auto_choice_describe(const ps_auto_choice *c, char *buf,
			     size_t cap)
{
	char part[32], credit[96], rest[896] = "";
	char fb[96] = "";

	if (c->partition_size >= TIB)
		snprintf(part, sizeof(part), "whole tensors");
	else
		ps_config_format_size(c->partition_size, part, sizeof(part));
	ps_auto_describe_credits(c->push_credit, c->params_credit, credit,
				 sizeof(credit));
	char link[512];

	if (c->partition_auto) {
		ps_config_format_size(AUTO_FALLBACK_PARTITION, fb, sizeof(fb));
		if (c->partition_size < AUTO_FALLBACK_PARTITION)
			snprintf(fb + strlen(fb), sizeof(fb) - strlen(fb),
				 " partitions (less: two per server) and ");
		else
			strcat(fb, " partitions and ");
	}
	if (c->link_how[0])
		snprintf(link, sizeof(link), "%.3g Gbit/s (%s)", c->link_gbps,
			 c->link_how);
	else
		snprintf(link, sizeof(link), "%.3g Gbit/s%s", c->link_gbps,
			 c->link_from_metrics ? " (metrics.bandwidth_gbps: "
						"link.bandwidth_gbps is 0)"
					      : "");
	if (c->fallback)
		snprintf(rest, sizeof(rest),
			 "no model timings to simulate (model.file is not "
			 "set): the fallback, %sthe bandwidth-delay push credit "
			 "(at least %d partitions) at %s",
			 fb, AUTO_MIN_WINDOW, link);
	else {
		char runner[128] = "";
		if (c->runner_up >= 0)
			snprintf(runner, sizeof(runner),
				 "; runner-up preset %s: %.1f ms",
				 ps_config_enum_name("scheduling.preset",
						     c->runner_up),
				 c->runner_up_us / 1e3);
		snprintf(rest, sizeof(rest),
			 "ps-sim: %.1f ms per iteration, %.1f %% behind the "
			 "best of %u pairs at %.3g or %.3g us of latency, on "
			 "%u x %u at %s%s",
			 c->iteration_us / 1e3, (c->regret - 1.0) * 100.0,
			 c->candidates, c->latency_us,
			 c->latency_us * AUTO_LATENCY_FACTOR, c->sim_workers,
			 c->sim_servers, link, runner);
	}
	snprintf(buf, cap, "auto sizes: partition %s, %s (%s)", part, credit,
		 rest);
}
