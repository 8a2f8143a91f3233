/*
 * proto/membership.c - who is in a job (membership.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ordo/error.h"
#include "proto/membership.h"

typedef struct member {
	ps_node_info info;
	uint32_t want; /* workers: 1 + the rank asked for; 0: any */
	int64_t last_heard;
	int unreachable, done, in_barrier;
} member;

struct ps_membership {
	ps_membership_config cfg;
	int64_t opened;
	member *reg;    /* by registration index */
	uint32_t nreg, nservers, nworkers;
	member *by_id;  /* by id, once complete (0: unused) */
	ps_tensor_desc *tensors;
	uint32_t ntensors;
	int64_t last_beat;
	uint64_t barrier;
	uint32_t in_barrier, done;
};

int ps_membership_create(const ps_membership_config *cfg, int64_t now,
			 ps_membership **m_p)
{
	ps_membership *m;

	*m_p = NULL;
	if (cfg->servers == 0 || cfg->workers == 0)
		return PS_EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return PS_ENOMEM;
	m->cfg = *cfg;
	m->opened = now;
	m->reg = calloc((size_t)cfg->servers + cfg->workers, sizeof(*m->reg));
	if (!m->reg) {
		free(m);
		return PS_ENOMEM;
	}
	*m_p = m;
	return PS_OK;
}

void ps_membership_destroy(ps_membership **m_p)
{
	ps_membership *m = *m_p;

	if (!m)
		return;
	free(m->reg);
	free(m->by_id);
	free(m->tensors);
	free(m);
	*m_p = NULL;
}

void ps_membership_describe(const ps_node_info *n, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s %u (pid %d on %s, %s)", ps_role_name(n->role),
		 n->rank, n->pid, n->host, n->endpoint);
}

static int same_tensors(const ps_membership *m, const ps_wire_register *r,
			char *why, size_t whylen)
{
	if (r->num_tensors != m->ntensors) {
		snprintf(why, whylen, "declares %u tensors, the first worker "
			 "to register declared %u", r->num_tensors,
			 m->ntensors);
		return 0;
	}
	for (uint32_t i = 0; i < r->num_tensors; i++) {
		const ps_tensor_desc *a = &m->tensors[i], *b = &r->tensors[i];
		if (strcmp(a->name, b->name) != 0 || a->numel != b->numel) {
			snprintf(why, whylen, "tensor %u is '%s' (%llu "
				 "elements), the first worker to register "
				 "declared '%s' (%llu)", i,
				 b->name, (unsigned long long)b->numel,
				 a->name, (unsigned long long)a->numel);
			return 0;
		}
	}
	return 1;
}

/* After the last registration: the workers that asked for no rank take
 * the ranks no one asked for, lowest first, in registration order. */
static void settle_ranks(ps_membership *m)
{
	uint32_t next = 0;

	for (uint32_t i = 0; i < m->nreg; i++) {
		member *x = &m->reg[i];
		if (x->info.role != PS_ROLE_WORKER || x->want)
			continue;
		for (;;) {
			int taken = 0;
			for (uint32_t j = 0; j < m->nreg && !taken; j++)
				taken = m->reg[j].want == next + 1;
			if (!taken)
				break;
			next++;
		}
		x->info.rank = next++;
	}
}

/* After the last registration: members by id. */
static int assign_ids(ps_membership *m)
{
	uint32_t n = 1 + m->cfg.servers + m->cfg.workers;

	m->by_id = calloc(n, sizeof(*m->by_id));
	if (!m->by_id)
		return PS_ENOMEM;
	for (uint32_t i = 0; i < m->nreg; i++) {
		member *x = &m->reg[i];
		uint32_t id = x->info.role == PS_ROLE_SERVER
				      ? 1 + x->info.rank
				      : 1 + m->cfg.servers + x->info.rank;
		x->info.id = id;
		m->by_id[id] = *x;
	}
	return PS_OK;
}

ps_member_verdict ps_membership_register(ps_membership *m,
					 const ps_wire_register *r,
					 uint64_t src, int64_t now,
					 uint32_t *index_p, char *why,
					 size_t whylen)
{
	const ps_node_info *s = &r->self;
	int server = s->role == PS_ROLE_SERVER;
	member *x;

	if (s->transport_id != src ||
	    (s->role != PS_ROLE_SERVER && s->role != PS_ROLE_WORKER)) {
		snprintf(why, whylen, "identity or role does not match");
		return PS_MEMBER_DROPPED;
	}
	for (uint32_t i = 0; i < m->nreg; i++)
		if (m->reg[i].info.transport_id == src) {
			snprintf(why, whylen, "node registered twice");
			return PS_MEMBER_DROPPED;
		}
	if ((server && m->nservers == m->cfg.servers) ||
	    (!server && m->nworkers == m->cfg.workers)) {
		snprintf(why, whylen, "the job already has its %u %s(s) "
			 "(cluster.%ss); %s pid %d on %s is one too many",
			 server ? m->cfg.servers : m->cfg.workers,
			 ps_role_name(s->role), ps_role_name(s->role),
			 ps_role_name(s->role), s->pid, s->host);
		return PS_MEMBER_REFUSED;
	}
	if (!server) {
		char detail[512];
		if (r->num_tensors == 0) {
			snprintf(why, whylen, "worker pid %d on %s declared no "
				 "tensors", s->pid, s->host);
			return PS_MEMBER_TOLD;
		}
		if (!m->tensors) {
			m->tensors = malloc(r->num_tensors *
					    sizeof(*m->tensors));
			if (!m->tensors) {
				snprintf(why, whylen, "out of memory");
				return PS_MEMBER_FATAL;
			}
			memcpy(m->tensors, r->tensors,
			       r->num_tensors * sizeof(*m->tensors));
			m->ntensors = r->num_tensors;
		} else if (!same_tensors(m, r, detail, sizeof(detail))) {
			snprintf(why, whylen, "worker pid %d on %s %s", s->pid,
				 s->host, detail);
			return PS_MEMBER_TOLD;
		}
	}
	if (!server && r->want_rank) {
		if (r->want_rank > m->cfg.workers) {
			snprintf(why, whylen, "worker pid %d on %s asks for rank "
				 "%u (worker.rank), but the job has %u "
				 "worker(s) (cluster.workers): ranks 0..%u",
				 s->pid, s->host, r->want_rank - 1,
				 m->cfg.workers, m->cfg.workers - 1);
			return PS_MEMBER_REFUSED;
		}
		for (uint32_t i = 0; i < m->nreg; i++)
			if (m->reg[i].want == r->want_rank) {
				snprintf(why, whylen, "worker pid %d on %s asks "
					 "for rank %u (worker.rank), which "
					 "worker pid %d on %s has already",
					 s->pid, s->host, r->want_rank - 1,
					 m->reg[i].info.pid,
					 m->reg[i].info.host);
				return PS_MEMBER_REFUSED;
			}
	}
	x = &m->reg[m->nreg];
	memset(x, 0, sizeof(*x));
	x->info = *s;
	/* a worker's rank is final once every node has registered
	 * (settle_ranks): until then, the one it asked for or its place */
	x->want = server ? 0 : r->want_rank;
	x->info.rank = server ? m->nservers++
		       : r->want_rank ? (m->nworkers++, r->want_rank - 1)
				      : m->nworkers++;
	x->last_heard = now;
	*index_p = m->nreg++;
	if (ps_membership_complete(m))
		settle_ranks(m);
	if (ps_membership_complete(m) && assign_ids(m) != PS_OK) {
		snprintf(why, whylen, "out of memory");
		return PS_MEMBER_FATAL;
	}
	return PS_MEMBER_ACCEPTED;
}

int ps_membership_complete(const ps_membership *m)
{
	return m->nreg == m->cfg.servers + m->cfg.workers;
}

int ps_membership_check_registration(const ps_membership *m, int64_t now,
				     int64_t *left_p, char *why,
				     size_t whylen)
{
	int64_t left = m->opened + m->cfg.register_timeout_ms - now;

	*left_p = left > 1 ? left : 1;
	if (ps_membership_complete(m) || left > 0)
		return PS_OK;
	snprintf(why, whylen, "only %u of %u server(s) and %u of %u worker(s) "
		 "registered within %lld ms (cluster.register_timeout_ms)",
		 m->nservers, m->cfg.servers, m->nworkers, m->cfg.workers,
		 (long long)m->cfg.register_timeout_ms);
	return PS_ETIMEDOUT;
}

void ps_membership_waiting(const ps_membership *m, int64_t now, char *buf,
			   size_t cap)
{
	snprintf(buf, cap, "waiting for %u of %u server(s) and %u of %u "
		 "worker(s) to register (%lld s so far, at most %lld s: "
		 "cluster.register_timeout_ms)",
		 m->cfg.servers - m->nservers, m->cfg.servers,
		 m->cfg.workers - m->nworkers, m->cfg.workers,
		 (long long)((now - m->opened) / 1000),
		 (long long)(m->cfg.register_timeout_ms / 1000));
}

uint32_t ps_membership_id_of(const ps_membership *m, uint32_t index)
{
	return m->by_id && index < m->nreg ? m->reg[index].info.id : 0;
}

uint32_t ps_membership_registered(const ps_membership *m)
{
	return m->nreg;
}

const ps_node_info *ps_membership_by_index(const ps_membership *m,
					   uint32_t index)
{
	return index < m->nreg ? &m->reg[index].info : NULL;
}

static member *by_id(const ps_membership *m, uint32_t id)
{
	if (!m->by_id || id == 0 || id > m->cfg.servers + m->cfg.workers)
		return NULL;
	return &m->by_id[id];
}

const ps_node_info *ps_membership_by_id(const ps_membership *m, uint32_t id)
{
	const member *x = by_id(m, id);

	return x ? &x->info : NULL;
}

const ps_tensor_desc *ps_membership_tensors(const ps_membership *m,
					    uint32_t *n_p)
{
	*n_p = m->ntensors;
	return m->tensors;
}

void ps_membership_heard(ps_membership *m, uint32_t id, int64_t now)
{
	member *x = by_id(m, id);

	if (x)
		x->last_heard = now;
}

void ps_membership_unreachable(ps_membership *m, uint32_t id)
{
	member *x = by_id(m, id);

	if (x)
		x->unreachable = 1;
}

int ps_membership_reachable(const ps_membership *m, uint32_t id)
{
	const member *x = by_id(m, id);

	return x && !x->unreachable;
}

int ps_membership_lost(ps_membership *m, uint32_t reporter, uint32_t lost,
		       const char *reason, int64_t now, char *why,
		       size_t whylen)
{
	const member *r = by_id(m, reporter), *x = by_id(m, lost);
	char rwho[400], xwho[400];

	if (!r || !x || reporter == lost) {
		snprintf(why, whylen, "PEER_LOST from node %u about node %u: "
			 "not another member of the job", reporter, lost);
		return PS_EPROTO;
	}
	if (m->cfg.fault == PS_MEMBERSHIP_FAULT_BLAME_REPORTER) {
		const member *t = r;
		r = x;
		x = t;
	}
	ps_membership_describe(&r->info, rwho, sizeof(rwho));
	ps_membership_describe(&x->info, xwho, sizeof(xwho));
	snprintf(why, whylen, "%s unreachable from %s: %s; the scheduler "
		 "last heard from it %lld ms ago", xwho, rwho, reason,
		 (long long)(now - x->last_heard));
	return PS_EABORTED;
}

int ps_membership_tick(ps_membership *m, int64_t now, int *beat_p,
		       char *why, size_t whylen)
{
	uint32_t n = m->cfg.servers + m->cfg.workers, worst = 0;
	int64_t longest = 0;

	*beat_p = 0;
	if (!m->by_id)
		return PS_OK;
	/* When a node dies, others may fall silent after it (blocked on
	 * it); the one silent longest is the likely cause: report that
	 * one. */
	for (uint32_t id = 1; id <= n; id++) {
		int64_t silent = now - m->by_id[id].last_heard;
		if (silent > longest) {
			longest = silent;
			worst = id;
		}
	}
	if (longest > m->cfg.heartbeat_timeout_ms &&
	    m->cfg.fault != PS_MEMBERSHIP_FAULT_BLIND) {
		char who[400];
		ps_membership_describe(&m->by_id[worst].info, who, sizeof(who));
		snprintf(why, whylen, "%s silent for %lld ms "
			 "(cluster.heartbeat_timeout_ms = %lld)", who,
			 (long long)longest,
			 (long long)m->cfg.heartbeat_timeout_ms);
		return PS_EABORTED;
	}
	if (now - m->last_beat >= m->cfg.heartbeat_interval_ms) {
		m->last_beat = now;
		*beat_p = 1;
	}
	return PS_OK;
}

/* Member id as a worker, or NULL with a reason. */
static member *worker(ps_membership *m, uint32_t id, const char *what,
		      char *why, size_t whylen)
{
	member *x = by_id(m, id);

	if (!x || x->info.role != PS_ROLE_WORKER) {
		snprintf(why, whylen, "%s from node %u, not a worker", what,
			 id);
		return NULL;
	}
	return x;
}

int ps_membership_barrier(ps_membership *m, uint32_t id, uint64_t number,
			  int *released_p, char *why, size_t whylen)
{
	member *x = worker(m, id, "BARRIER", why, whylen);

	*released_p = 0;
	if (!x)
		return PS_EPROTO;
	if (number != m->barrier || x->in_barrier) {
		snprintf(why, whylen, "BARRIER %llu from worker %u: %s",
			 (unsigned long long)number, x->info.rank,
			 x->in_barrier ? "twice" : "not the current one");
		return PS_EPROTO;
	}
	x->in_barrier = 1;
	if (++m->in_barrier < m->cfg.workers)
		return PS_OK;
	for (uint32_t r = 0; r < m->cfg.workers; r++)
		m->by_id[1 + m->cfg.servers + r].in_barrier = 0;
	m->in_barrier = 0;
	m->barrier++;
	*released_p = 1;
	return PS_OK;
}

int ps_membership_done(ps_membership *m, uint32_t id, int *all_p, char *why,
		       size_t whylen)
{
	member *x = worker(m, id, "DONE", why, whylen);

	*all_p = 0;
	if (!x)
		return PS_EPROTO;
	if (x->done) {
		snprintf(why, whylen, "DONE twice from worker %u",
			 x->info.rank);
		return PS_EPROTO;
	}
	x->done = 1;
	*all_p = ++m->done == m->cfg.workers;
	return PS_OK;
}

int ps_membership_is_done(const ps_membership *m, uint32_t id)
{
	const member *x = by_id(m, id);

	return x && x->done;
}
