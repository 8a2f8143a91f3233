/*
 * sim/link.c - the alpha-beta-gamma link (link.h).
 */
#include <stdio.h>

#include "sim/fit.h"
#include "sim/link.h"

double ps_link_b_from_gbps(double gbps)
{
	/* gbps * 1e9 bit/s = gbps * 125 bytes per microsecond */
	return 1.0 / (gbps * 125.0);
}

double ps_link_gbps_from_b(double b_us_per_byte)
{
	return 1.0 / (b_us_per_byte * 125.0);
}

double ps_link_cost(const ps_link_model *m, uint64_t bytes, int busy)
{
	double per_byte = busy ? m->gamma * m->b_us_per_byte
			       : m->b_us_per_byte;

	return m->a_us + per_byte * (double)bytes;
}

double ps_link_reserve(ps_link *l, const ps_link_model *m, double t,
		       uint64_t bytes, double *end_p)
{
	int busy = l->free_at > t;
	double start = busy ? l->free_at : t;
	double cost = ps_link_cost(m, bytes, busy);

	l->free_at = start + cost;
	l->busy_us += cost;
	l->bytes += bytes;
	l->messages++;
	*end_p = l->free_at;
	return start;
}

int ps_link_model_kind_of(const ps_config *cfg)
{
	if (cfg->link.model == PS_LINK_MODEL_TCP ||
	    cfg->link.model == PS_LINK_MODEL_RDMA)
		return cfg->link.model;
	return cfg->transport.type == PS_TRANSPORT_RDMA ? PS_LINK_MODEL_RDMA
							: PS_LINK_MODEL_TCP;
}

const char *ps_link_model_name(int kind)
{
	switch (kind) {
	case PS_LINK_MODEL_TCP:
		return "tcp";
	case PS_LINK_MODEL_RDMA:
		return "rdma";
	default:
		return "auto";
	}
}

int ps_link_model_from_config(const ps_config *cfg, ps_link_model *m_p,
			      char *why, size_t whylen)
{
	double gbps = cfg->link.bandwidth_gbps > 0 ? cfg->link.bandwidth_gbps
						   : cfg->metrics.bandwidth_gbps;
	int rdma = ps_link_model_kind_of(cfg) == PS_LINK_MODEL_RDMA;
	double eff = rdma ? cfg->link.rdma_efficiency : cfg->link.efficiency;
	ps_link_model m = {
		.a_us = rdma ? cfg->link.rdma_latency_us : cfg->link.latency_us,
		.gamma = rdma ? cfg->link.rdma_gamma : cfg->link.gamma};

	if (!(gbps > 0)) {
		snprintf(why, whylen, "link.bandwidth_gbps: must be > 0");
		return PS_EINVAL;
	}
	if (!(eff > 0 && eff <= 1)) {
		snprintf(why, whylen, "link.%sefficiency = %g: must be in (0, 1]",
			 rdma ? "rdma_" : "", eff);
		return PS_EINVAL;
	}
	m.b_us_per_byte = ps_link_b_from_gbps(gbps * eff);
	if (cfg->link.fit_file[0]) {
		/* a sweep of the transport itself: its a, b and gamma, whatever
		 * the model's defaults say */
		ps_link_fit f;
		int rc = ps_link_fit_file(cfg->link.fit_file, &f, why, whylen);
		if (rc != PS_OK)
			return rc;
		m.a_us = f.a_us;
		m.b_us_per_byte = f.b_us_per_byte;
		m.gamma = f.gamma;
	}
	*m_p = m;
	return PS_OK;
}
