/*
 * runtime/node.c - joining a job and receiving checked messages (node.h).
 *
 * DESIGN. Membership is scheduler-centred: a node knows the scheduler's
 * address from the config, everything else from the WELCOME. Identity is
 * checked on every message: the header's sender id must map, in the node
 * table, to the transport id the transport saw the message come from, and
 * the job id must be this job's, so a stray or forged message (a process of
 * an older job, a fuzzer) is dropped before it can touch any state.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common/errbuf.h"
#include "common/log.h"
#include "proto/join.h"
#include "runtime/interface.h"
#include "transport/keys.h"
#include "runtime/clock.h"
#include "runtime/node.h"
#include "runtime/signals.h"
#include "runtime/trace.h"

uint64_t ps_random_id(void)
{
	uint64_t x = 0;
	while (x == 0) {
		if (getrandom(&x, sizeof(x), 0) != (ssize_t)sizeof(x))
			x = ps_now_ns() ^ ((uint64_t)getpid() << 32) ^
			    (uint64_t)time(NULL);
	}
	return x;
}

int ps_send_timeout_ms(const ps_config *cfg)
{
	return cfg->transport.send_timeout_ms <
			       cfg->cluster.heartbeat_interval_ms
		       ? cfg->transport.send_timeout_ms
		       : cfg->cluster.heartbeat_interval_ms;
}

void psi_note_drop(uint64_t count, const char *what, const char *why)
{
	/* The first drops are all logged; then one line per 1000, so that a
	 * flood of garbage cannot flood the log. */
	if (count <= 20 || count % 1000 == 0)
		PS_WARN("dropped %s: %s (%llu dropped so far)", what, why,
			(unsigned long long)count);
}

void psi_note_drop_from(uint64_t count, const char *what, uint64_t src,
			const char *why)
{
	if (count <= 20 || count % 1000 == 0)
		PS_WARN("dropped %s from transport id %016llx: %s (%llu "
			"dropped so far)",
			what, (unsigned long long)src, why,
			(unsigned long long)count);
}

/* The transport flow of a message (ps_transport_send_flow): a
 * partition's messages keep their order (the protocol machines need it:
 * a partition's pieces, its INIT before its pushes); the order between
 * partitions, and between them and the rest, is not needed (the
 * deterministic simulation, tests/dst, delivers them so). */
static uint32_t flow_of(const ps_wire_header *h)
{
	switch (h->type) {
	case PS_MSG_INIT:
	case PS_MSG_PUSH:
	case PS_MSG_PUSH_ACK:
	case PS_MSG_PARAMS:
	case PS_MSG_PULL:
	case PS_MSG_PARAMS_ACK:
		return h->partition + 1;
	default:
		return 0;
	}
}

static int send_to_peer(ps_node *n, ps_peer peer, ps_wire_header *h,
			void *payload, size_t payload_len, ps_free_fn *free_fn,
			void *hint)
{
	uint8_t buf[PS_WIRE_HEADER_MAX];
	size_t len;
	int rc;

	h->version = PS_WIRE_VERSION;
	h->job_id = n->job_id;
	h->sender = n->id;
	h->payload_len = payload_len;
	rc = ps_wire_header_encode(h, buf, sizeof(buf), &len);
	if (rc != PS_OK)
		return rc;
	return ps_transport_send_flow(n->transport, peer, flow_of(h), buf, len,
				      payload, payload_len, free_fn, hint);
}

/* A send of `what` to node `to` failed with rc (timed out: not connected;
 * closed): the job cannot go on. The scheduler is told (PEER_LOST) and
 * ends the job naming node `to`; until its ABORT this node keeps
 * receiving (dropping what comes) and heartbeating, so that it is never
 * the one that looks dead. Returns PS_EABORTED (the ABORT came, or the
 * scheduler fell silent), or rc where the scheduler cannot be told or
 * does not answer within 2 * heartbeat_timeout_ms. */
static int peer_lost(ps_node *n, uint32_t to, const char *what, int rc)
{
	const ps_node_info *x = &n->welcome.nodes[to];
	int64_t deadline = ps_now_ms() +
			   2 * (int64_t)n->cfg->cluster.heartbeat_timeout_ms;
	ps_wire_header h = {.type = PS_MSG_PEER_LOST, .key = to};
	char reason[PS_REASON_MAX];
	void *body;
	size_t len;

	if (n->lost_reported)
		return rc;
	n->lost_reported = 1;
	PS_ERROR("cannot send %s to %s %u (%s): %s; asking the scheduler to "
		 "end the job", what, ps_role_name(x->role), x->rank,
		 x->endpoint, ps_strerror(rc));
	snprintf(reason, sizeof(reason), "%s send failed: %s", what,
		 ps_strerror(rc));
	if (ps_wire_reason_encode(reason, &body, &len) != PS_OK)
		return rc;
	if (send_to_peer(n, n->scheduler, &h, body, len, ps_wire_free,
			 NULL) != PS_OK) {
		free(body);
		return rc;
	}
	for (;;) {
		int64_t left = deadline - ps_now_ms();
		ps_msg *msg = NULL;
		int r;

		if (left <= 0) {
			PS_ERROR("no ABORT from the scheduler within %lld ms "
				 "of reporting %s %u lost",
				 (long long)(2 * (int64_t)n->cfg->cluster
							 .heartbeat_timeout_ms),
				 ps_role_name(x->role), x->rank);
			return rc;
		}
		if (ps_signal_pending())
			return rc;
		r = ps_node_recv(n, (int)left, &msg, &h);
		if (r == PS_OK) { /* the job is over: nothing more is done */
			int shutdown = h.sender == 0 &&
				       h.type == PS_MSG_SHUTDOWN;
			ps_msg_free(&msg);
			if (shutdown) /* it ended before the report was read */
				return rc;
		} else if (r != PS_EAGAIN && r != PS_ETIMEDOUT) {
			return r;
		}
	}
}

int ps_node_send(ps_node *n, uint32_t to, ps_wire_header *h, void *payload,
		 size_t payload_len, ps_free_fn *free_fn, void *hint)
{
	int rc;

	if (to >= n->welcome.num_nodes || !n->connected[to])
		return PS_ESTATE;
	rc = send_to_peer(n, n->peers[to], h, payload, payload_len, free_fn,
			  hint);
	if (to != 0 && (rc == PS_ETIMEDOUT || rc == PS_ECLOSED))
		return peer_lost(n, to, ps_msg_type_name(h->type), rc);
	return rc;
}

static int send_register(ps_node *n, const ps_tensor_desc *tensors,
			 uint32_t ntensors)
{
	ps_wire_register reg;
	ps_wire_header h = {.type = PS_MSG_REGISTER};
	void *body;
	size_t len;
	int rc;

	memset(&reg, 0, sizeof(reg));
	reg.self.role = n->role;
	reg.self.pid = (int32_t)getpid();
	reg.self.transport_id = n->transport_id;
	if (gethostname(reg.self.host, sizeof(reg.self.host)) != 0)
		snprintf(reg.self.host, sizeof(reg.self.host), "unknown");
	reg.self.host[sizeof(reg.self.host) - 1] = '\0';
	snprintf(reg.self.endpoint, sizeof(reg.self.endpoint), "%s",
		 n->endpoint);
	reg.num_tensors = ntensors;
	reg.tensors = (ps_tensor_desc *)tensors;
	if (n->role == PS_ROLE_WORKER && n->cfg->worker.rank >= 0)
		reg.want_rank = (uint32_t)n->cfg->worker.rank + 1;
	rc = ps_wire_register_encode(&reg, &body, &len);
	if (rc != PS_OK)
		return rc;
	rc = send_to_peer(n, n->scheduler, &h, body, len, ps_wire_free, NULL);
	if (rc != PS_OK)
		free(body);
	return rc;
}

static int accept_welcome(ps_node *n, ps_msg *msg, const ps_wire_header *h)
{
	char why[256];
	ps_wire_welcome *w = &n->welcome;
	int rc;

	rc = ps_wire_welcome_decode(msg->payload, msg->payload_len, w, why,
				    sizeof(why));
	if (rc != PS_OK) {
		PS_ERROR("malformed WELCOME from the scheduler: %s", why);
		return rc;
	}
	if (w->your_id == 0 || w->your_id >= w->num_nodes ||
	    w->nodes[w->your_id].transport_id != n->transport_id ||
	    w->nodes[w->your_id].role != n->role ||
	    w->nodes[0].transport_id != msg->src || !w->placement) {
		PS_ERROR("inconsistent WELCOME from the scheduler");
		ps_wire_welcome_clear(w);
		return PS_EPROTO;
	}
	n->id = w->your_id;
	n->rank = w->nodes[n->id].rank;
	n->job_id = h->job_id;
	n->peers = calloc(w->num_nodes, sizeof(*n->peers));
	n->connected = calloc(w->num_nodes, 1);
	if (!n->peers || !n->connected)
		return PS_ENOMEM;
	n->peers[0] = n->scheduler;
	n->connected[0] = 1;
	ps_log_default_role(ps_role_name(n->role));
	ps_log_set_rank((int)n->rank);
	return PS_OK;
}

/* A peer's message that came before the WELCOME is kept for
 * ps_node_recv (at most PS_EARLY_MAX of them and cluster.early_bytes_max
 * bytes of headers and payloads; whether it belongs to the job is checked
 * then). */
#define PS_EARLY_MAX 4096

/* A PROBE's answer (scheduler/link_probe.h): its number, in its job. A
 * send that fails is the scheduler's to time out on. */
static void answer_probe(ps_node *n, const ps_wire_header *probe)
{
	ps_wire_header h = {.version = PS_WIRE_VERSION,
			    .type = PS_MSG_PROBE_ACK,
			    .job_id = probe->job_id,
			    .key = probe->key};
	uint8_t buf[PS_WIRE_HEADER_MAX];
	size_t len;

	if (ps_wire_header_encode(&h, buf, sizeof(buf), &len) == PS_OK)
		(void)ps_transport_send(n->transport, n->scheduler, buf, len,
					NULL, 0, NULL, NULL);
}

/* Waits for the WELCOME (or an ABORT) after REGISTER. */
static int await_welcome(ps_node *n)
{
	/* The scheduler waits up to register_timeout_ms for every node to
	 * register; allow that plus the time to reach it. */
	int64_t wait_ms = (int64_t)n->cfg->cluster.register_timeout_ms +
			  n->cfg->cluster.connect_timeout_ms;
	int64_t deadline = ps_now_ms() + wait_ms;
	char why[256];

	for (;;) {
		int64_t left = deadline - ps_now_ms();
		ps_wire_header h;
		ps_msg *msg = NULL;
		int rc;

		if (left <= 0) {
			PS_ERROR("no WELCOME from the scheduler within %d ms: "
				 "not all %d server(s) and %d worker(s) "
				 "registered?",
				 (int)wait_ms,
				 n->cfg->cluster.servers,
				 n->cfg->cluster.workers);
			return PS_ETIMEDOUT;
		}
		rc = ps_transport_recv(n->transport, (int)left, &msg);
		if (rc == PS_ETIMEDOUT)
			continue;
		if (rc != PS_OK)
			return rc == PS_EAGAIN ? PS_EINTR : rc;
		rc = ps_wire_header_decode(msg->hdr, msg->hdr_len, &h, why,
					   sizeof(why));
		if (rc == PS_OK && h.payload_len != msg->payload_len) {
			snprintf(why, sizeof(why), "payload of %zu bytes, "
				 "header says %llu", msg->payload_len,
				 (unsigned long long)h.payload_len);
			rc = PS_EPROTO;
		}
		if (rc == PS_OK && h.sender == 0 &&
		    (h.type == PS_MSG_WELCOME || h.type == PS_MSG_ABORT) &&
		    h.iteration != n->transport_id) {
			/* the scheduler names the node it welcomes or
			 * refuses; others do not know the id */
			snprintf(why, sizeof(why), "%s addressed to transport "
				 "id %016llx, not to this node",
				 ps_msg_type_name(h.type),
				 (unsigned long long)h.iteration);
			rc = PS_EPROTO;
		}
		if (rc == PS_OK && h.sender == 0 && h.type == PS_MSG_PROBE) {
			/* the scheduler measures the link: answered at once */
			answer_probe(n, &h);
			ps_msg_free(&msg);
			continue;
		}
		ps_join_verdict v =
			rc != PS_OK ? PS_JOIN_DROP
				    : ps_join_on_message(
					      n->join, h.sender == 0,
					      h.type == PS_MSG_WELCOME ||
						      h.type == PS_MSG_ABORT,
					      msg,
					      (uint64_t)msg->hdr_len +
						      msg->payload_len);
		if (v == PS_JOIN_KEPT) {
			atomic_fetch_add_explicit(&n->early_kept, 1,
						  memory_order_relaxed);
			continue;
		}
		if (v != PS_JOIN_WELCOME) {
			psi_note_drop_from(++n->dropped,
					   "message before WELCOME", msg->src,
				      rc != PS_OK ? why
				      : h.sender != 0
					      ? "more than 4096 messages or "
						"cluster.early_bytes_max bytes "
						"kept before the WELCOME"
					      : "unexpected");
			ps_msg_free(&msg);
			continue;
		}
		if (h.type == PS_MSG_ABORT) {
			if (ps_wire_reason_decode(msg->payload,
						  msg->payload_len,
						  n->abort_reason,
						  sizeof(n->abort_reason), why,
						  sizeof(why)) != PS_OK)
				snprintf(n->abort_reason,
					 sizeof(n->abort_reason), "(%s)", why);
			PS_ERROR("the scheduler refused this node: %s",
				 n->abort_reason);
			ps_msg_free(&msg);
			return PS_EABORTED;
		}
		rc = accept_welcome(n, msg, &h);
		ps_msg_free(&msg);
		if (rc == PS_OK)
			ps_join_welcomed(n->join);
		if (rc == PS_OK && ps_join_dropped(n->join))
			PS_ERROR("%u message(s), %llu bytes, reached this node "
				 "before its WELCOME beyond the bounds (4096 "
				 "messages, cluster.early_bytes_max = %llu "
				 "bytes) and were dropped; if they were this "
				 "job's, raise cluster.early_bytes_max",
				 ps_join_dropped(n->join),
				 (unsigned long long)ps_join_dropped_bytes(
					 n->join),
				 (unsigned long long)n->cfg->cluster
					 .early_bytes_max);
		return rc;
	}
}

int ps_job_secret_ensure(const ps_config *cfg, int may_make,
			 char *env_secret, int *made, char *why,
			 size_t whylen)
{
	char secret[PS_SECRET_LEN + 1], from[PS_CFG_STR + 16];
	int rc;

	*made = 0;
	if (env_secret)
		env_secret[0] = '\0';
	if (cfg->security.mode != PS_SECURITY_AUTO &&
	    cfg->security.mode != PS_SECURITY_SECRET &&
	    cfg->security.mode != PS_SECURITY_SEALED)
		return PS_OK;
	rc = ps_secret_find(cfg->security.keys_dir, secret, from,
			    sizeof(from), why, whylen);
	if (rc == PS_OK && !secret[0] && !may_make)
		rc = ps_errf(why, whylen, PS_ECONFIG,
			     "security.mode = %s needs the job's secret on "
			     "every node, and none is here: `export %s=$(ps-keygen "
			     "--secret)` before starting each (srun passes "
			     "it on; mpirun: -x %s), or give security.keys_dir "
			     "(ps-keygen DIR, on every node), or set "
			     "security.mode = none",
			     ps_config_enum_name("security.mode",
						 cfg->security.mode),
			     PS_SECRET_ENV, PS_SECRET_ENV);
	if (rc == PS_OK && !secret[0]) {
		rc = ps_secret_make(secret, why, whylen);
		if (rc == PS_OK && setenv(PS_SECRET_ENV, secret, 1) != 0)
			rc = ps_errf(why, whylen, PS_ENOMEM, "setenv %s: %s",
				     PS_SECRET_ENV, strerror(errno));
		if (rc == PS_OK) {
			*made = 1;
			snprintf(from, sizeof(from), "%s", PS_SECRET_ENV);
		}
	}
	if (rc == PS_OK && env_secret && strcmp(from, PS_SECRET_ENV) == 0)
		memcpy(env_secret, secret, sizeof(secret));
	memset(secret, 0, sizeof(secret));
	return rc;
}

/* security.mode = secret or auto: the job's secret into secret ("" for
 * auto without one), saying at start what the node admits. */
static int job_secret(const ps_config *cfg, char *secret)
{
	char err[1024], from[PS_CFG_STR + 16];
	int rc = ps_secret_find(cfg->security.keys_dir, secret, from,
				sizeof(from), err, sizeof(err));
	int secret_mode = cfg->security.mode == PS_SECURITY_SECRET ||
			  cfg->security.mode == PS_SECURITY_SEALED;

	if (rc != PS_OK) {
		PS_ERROR("security: %s", err);
		return rc;
	}
	if (!secret[0] && secret_mode) {
		PS_ERROR("security: security.mode = %s, but this job has "
			 "no secret: set %s (`export %s=$(ps-keygen "
			 "--secret)` before starting every node) or "
			 "security.keys_dir (a directory ps-keygen DIR wrote); "
			 "ps-launch makes one for its job",
			 ps_config_enum_name("security.mode",
					     cfg->security.mode),
			 PS_SECRET_ENV, PS_SECRET_ENV);
		return PS_ECONFIG;
	}
	if (secret[0] && cfg->security.mode == PS_SECURITY_SEALED)
		PS_INFO("security: peers must prove they hold the job's "
			"secret (%s), and every frame is sealed (AES-256-GCM)",
			from);
	else if (secret[0])
		PS_INFO("security: peers must present the job's secret (%s)",
			from);
	else
		PS_INFO("security: auto, and this job has no secret (%s "
			"unset, no job.secret in security.keys_dir): any "
			"process that reaches this node's port can send to "
			"it",
			PS_SECRET_ENV);
	return PS_OK;
}

/* The process's soft limit of open files raised to its hard limit: a
 * node's connections (every peer's, and whoever else connects until the
 * handshake timeout closes them) and its checkpoint files all take file
 * descriptors, and the soft limit (often 1024) is the one a flood of
 * connections would exhaust first. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max)
		return;
	rlim_t was = rl.rlim_cur;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
		PS_DEBUG("open files: soft limit raised from %llu to %llu",
			 (unsigned long long)was,
			 (unsigned long long)rl.rlim_max);
}

_Static_assert(PS_TCP_CONNECTIONS_MAX <= PS_TCP_LANES_MAX,
	       "transport.connections_per_peer allows more than tcp has");

/* transport.connections_per_peer, 0 resolved (see its help): under
 * curve one connection per two cores, up to PS_TCP_CURVE_CONNECTIONS (a
 * connection's cipher takes a core at each end; on two cores the second
 * connection only contends with the first, measured in docs/benchmarks.md,
 * "What security costs") */
static int connections_per_peer(const ps_config *cfg)
{
	long cores;

	if (cfg->transport.connections_per_peer > 0)
		return cfg->transport.connections_per_peer;
	if (cfg->security.mode != PS_SECURITY_CURVE)
		return 1;
	cores = sysconf(_SC_NPROCESSORS_ONLN);
	if (cores < 4)
		return 1;
	return cores / 2 < PS_TCP_CURVE_CONNECTIONS ? (int)(cores / 2)
						    : PS_TCP_CURVE_CONNECTIONS;
}

int ps_job_transport_create(const ps_config *cfg, uint64_t *id_p,
			    ps_transport **t_p)
{
	const char *tname = ps_config_enum_name("transport.type",
						cfg->transport.type);
	ps_transport_opts opts = {
		.id = ps_random_id(),
		.send_timeout_ms = ps_send_timeout_ms(cfg),
		.connect_timeout_ms = cfg->cluster.connect_timeout_ms,
		.io_threads = cfg->transport.io_threads,
		.connections_per_peer = connections_per_peer(cfg),
		.handshake_timeout_ms = cfg->transport.handshake_timeout_ms,
		.max_message = ps_config_max_message(cfg),
		.rdma_gid_index = cfg->transport.rdma_gid_index,
		.rdma_busy_poll = cfg->transport.rdma_poll == PS_RDMA_POLL_BUSY,
	};
	int rc;

	raise_fd_limit();
	if (strlen(cfg->transport.rdma_device) >= sizeof(opts.rdma_device)) {
		PS_ERROR("transport.rdma_device \"%s\" is longer than an RDMA "
			 "device name can be (%zu characters)",
			 cfg->transport.rdma_device,
			 sizeof(opts.rdma_device) - 1);
		return PS_EINVAL;
	}
	memcpy(opts.rdma_device, cfg->transport.rdma_device,
	       strlen(cfg->transport.rdma_device) + 1);
	if (cfg->security.mode == PS_SECURITY_SECRET ||
	    cfg->security.mode == PS_SECURITY_SEALED ||
	    cfg->security.mode == PS_SECURITY_AUTO) {
		opts.sealed = cfg->security.mode == PS_SECURITY_SEALED;
		rc = job_secret(cfg, opts.job_secret);
		if (rc != PS_OK)
			return rc;
		/* this process's own token: its messages carry its key id */
		char err[256];
		if (opts.job_secret[0] &&
		    ps_secret_make(opts.job_token, err, sizeof(err)) != PS_OK) {
			PS_ERROR("security: %s", err);
			return PS_EIO;
		}
	}
	if (cfg->security.mode == PS_SECURITY_CURVE) {
		ps_job_keys keys;
		char err[1024];
		rc = ps_keys_load(cfg->security.keys_dir, &keys, err,
				  sizeof(err));
		if (rc != PS_OK) {
			PS_ERROR("security: %s", err);
			return rc;
		}
		memcpy(opts.curve_public, keys.pub, sizeof(keys.pub));
		memcpy(opts.curve_secret, keys.sec, sizeof(keys.sec));
		memset(keys.sec, 0, sizeof(keys.sec));
	}
	rc = ps_transport_create(tname, &opts, t_p);
	memset(opts.curve_secret, 0, sizeof(opts.curve_secret));
	memset(opts.job_secret, 0, sizeof(opts.job_secret));
	memset(opts.job_token, 0, sizeof(opts.job_token));
	if (rc != PS_OK) {
		PS_ERROR("cannot create the %s transport: %s", tname,
			 ps_strerror(rc));
		return rc;
	}
	*id_p = opts.id;
	ps_signals_set_wake(*t_p);
	return PS_OK;
}

int ps_node_join(ps_node *n, const ps_config *cfg, uint32_t role,
		 const ps_tensor_desc *tensors, uint32_t ntensors)
{
	const char *tname = ps_config_enum_name("transport.type",
						cfg->transport.type);
	char sched[PS_CFG_STR + 48];
	int rc;

	memset(n, 0, sizeof(*n));
	n->cfg = cfg;
	n->role = role;
	rc = ps_join_create(PS_EARLY_MAX, cfg->cluster.early_bytes_max,
			    PS_JOIN_FAULT_NONE, &n->join);
	if (rc != PS_OK)
		return rc;
	rc = ps_job_transport_create(cfg, &n->transport_id, &n->transport);
	if (rc != PS_OK)
		return rc;
	/* cluster.interface: bind and advertise that interface's address
	 * (an explicit advertise_host still wins) */
	const char *bind = cfg->cluster.bind_host;
	const char *advertise = cfg->cluster.advertise_host;
	char ifaddr[64];
	if (cfg->cluster.interface[0]) {
		char err[1200];
		rc = ps_interface_ipv4(cfg->cluster.interface, ifaddr,
				       sizeof(ifaddr), err, sizeof(err));
		if (rc != PS_OK) {
			PS_ERROR("%s", err);
			return rc;
		}
		bind = ifaddr;
		if (!advertise[0])
			advertise = ifaddr;
	}
	rc = ps_transport_listen(n->transport, bind, 0, advertise, n->endpoint,
				 sizeof(n->endpoint));
	if (rc != PS_OK) {
		PS_ERROR("cannot listen on %s: %s", bind, ps_strerror(rc));
		return rc;
	}
	PS_INFO("listening on %s", n->endpoint);
	snprintf(sched, sizeof(sched), "%s://%s:%d", tname,
		 cfg->cluster.scheduler_host, cfg->cluster.scheduler_port);
	rc = ps_transport_connect(n->transport, sched, &n->scheduler);
	if (rc != PS_OK) {
		PS_ERROR("scheduler %s unreachable after %d ms: %s", sched,
			 cfg->cluster.connect_timeout_ms, ps_strerror(rc));
		return rc;
	}
	rc = send_register(n, tensors, ntensors);
	if (rc != PS_OK) {
		PS_ERROR("cannot register with the scheduler %s: %s", sched,
			 ps_strerror(rc));
		return rc;
	}
	rc = await_welcome(n);
	if (rc != PS_OK)
		return rc;
	n->last_heard_ms = n->last_beat_ms = ps_now_ms();
	{
		char stem[32], pname[32];
		snprintf(stem, sizeof(stem), "%s-%u", ps_role_name(role),
			 n->rank);
		snprintf(pname, sizeof(pname), "%s %u", ps_role_name(role),
			 n->rank);
		ps_trace_open(cfg->output.dir, stem, n->id, pname);
	}
	PS_INFO("joined job %016llx as %s %u (node %u of %u, transport id "
		"%016llx)",
		(unsigned long long)n->job_id, ps_role_name(role), n->rank,
		n->id, n->welcome.num_nodes,
		(unsigned long long)n->transport_id);
	return PS_OK;
}

uint32_t ps_node_server_id(const ps_node *n, uint32_t rank)
{
	(void)n;
	return 1 + rank;
}

uint32_t ps_node_worker_id(const ps_node *n, uint32_t rank)
{
	return 1 + n->welcome.num_servers + rank;
}

void ps_node_tick(ps_node *n)
{
	ps_wire_header h = {.type = PS_MSG_HEARTBEAT,
			    .iteration = n->progress};
	int64_t now = ps_now_ms();
	int rc;

	if (now - n->last_beat_ms < n->cfg->cluster.heartbeat_interval_ms)
		return;
	n->last_beat_ms = now;
	rc = ps_node_send(n, 0, &h, NULL, 0, NULL, NULL);
	if (rc != PS_OK)
		PS_WARN("heartbeat to the scheduler failed: %s",
			ps_strerror(rc));
}

/* The scheduler counts as silent only when nothing is waiting to be read:
 * after a long computation its heartbeats are queued, not missing. */
static int scheduler_silent(ps_node *n)
{
	int64_t silent = ps_now_ms() - n->last_heard_ms;

	if (silent <= n->cfg->cluster.heartbeat_timeout_ms)
		return 0;
	snprintf(n->abort_reason, sizeof(n->abort_reason),
		 "scheduler silent for %lld ms (heartbeat timeout %d ms)",
		 (long long)silent, n->cfg->cluster.heartbeat_timeout_ms);
	PS_ERROR("%s", n->abort_reason);
	return 1;
}

/* Header and identity checks; PS_OK or a reason in why. */
static int check_message(ps_node *n, const ps_msg *msg, ps_wire_header *h,
			 char *why, size_t whylen)
{
	if (ps_wire_header_decode(msg->hdr, msg->hdr_len, h, why, whylen) !=
	    PS_OK)
		return PS_EPROTO;
	if (h->job_id != n->job_id) {
		snprintf(why, whylen, "%s for job %016llx, not this job",
			 ps_msg_type_name(h->type),
			 (unsigned long long)h->job_id);
		return PS_EPROTO;
	}
	if (h->sender >= n->welcome.num_nodes ||
	    n->welcome.nodes[h->sender].transport_id != msg->src) {
		snprintf(why, whylen, "%s claims to come from node %u, which "
			 "did not send it", ps_msg_type_name(h->type),
			 h->sender);
		return PS_EPROTO;
	}
	const ps_node_info *s = &n->welcome.nodes[h->sender];
	if (s->kid && msg->kid != s->kid) {
		/* another member (or a holder of the secret that is none)
		 * on a connection in that node's routing id */
		char who[160];
		snprintf(who, sizeof(who), "a holder of the job's secret that "
			 "is no node of the job (key id %016llx)",
			 (unsigned long long)msg->kid);
		for (uint32_t i = 0; i < n->welcome.num_nodes; i++)
			if (msg->kid && n->welcome.nodes[i].kid == msg->kid)
				snprintf(who, sizeof(who), "%s %u (node %u)",
					 ps_role_name(n->welcome.nodes[i].role),
					 n->welcome.nodes[i].rank, i);
		snprintf(why, whylen, "%s in the name of %s %u (node %u) came "
			 "from %s: a member passing for another",
			 ps_msg_type_name(h->type), ps_role_name(s->role),
			 s->rank, h->sender, who);
		return PS_EPROTO;
	}
	if (h->payload_len != msg->payload_len) {
		snprintf(why, whylen, "%s header says %llu payload bytes, "
			 "frame has %zu", ps_msg_type_name(h->type),
			 (unsigned long long)h->payload_len,
			 msg->payload_len);
		return PS_EPROTO;
	}
	return PS_OK;
}

/* ps_node_recv of what has not been kept (by ps_node_connect_role). */
static int recv_arrived(ps_node *n, int timeout_ms, ps_msg **msg_p,
			ps_wire_header *h_p)
{
	int64_t start = ps_now_ms();
	char why[256];

	int looked = 0; /* timeout 0: one look, without waiting */

	for (;;) {
		int64_t now = ps_now_ms(), wait;
		ps_msg *msg = NULL;
		int rc;

		ps_node_tick(n);
		wait = n->last_beat_ms + n->cfg->cluster.heartbeat_interval_ms -
		       now;
		if (wait < 1)
			wait = 1;
		if (timeout_ms >= 0) {
			int64_t left = start + timeout_ms - now;
			if (left <= 0 && (timeout_ms > 0 || looked))
				return PS_ETIMEDOUT;
			if (left < wait)
				wait = left < 0 ? 0 : left;
		}
		looked = 1;
		void *kept;
		if (n->join && ps_join_next_early(n->join, &kept)) {
			msg = kept; /* kept before the WELCOME */
			rc = PS_OK;
		} else {
			rc = ps_transport_recv(n->transport, (int)wait, &msg);
		}
		if (rc == PS_ETIMEDOUT) {
			if (scheduler_silent(n))
				return PS_EABORTED;
			continue;
		}
		if (rc != PS_OK)
			return rc;
		if (check_message(n, msg, h_p, why, sizeof(why)) != PS_OK) {
			psi_note_drop_from(++n->dropped, "message", msg->src,
					   why);
			ps_msg_free(&msg);
			continue;
		}
		if (h_p->sender == 0) {
			n->last_heard_ms = ps_now_ms();
			if (h_p->type == PS_MSG_HEARTBEAT) {
				ps_msg_free(&msg);
				continue;
			}
			if (h_p->type == PS_MSG_ABORT) {
				if (ps_wire_reason_decode(
					    msg->payload, msg->payload_len,
					    n->abort_reason,
					    sizeof(n->abort_reason), why,
					    sizeof(why)) != PS_OK)
					snprintf(n->abort_reason,
						 sizeof(n->abort_reason),
						 "(unreadable reason: %s)", why);
				PS_ERROR("job aborted by the scheduler: %s",
					 n->abort_reason);
				ps_msg_free(&msg);
				return PS_EABORTED;
			}
		}
		*msg_p = msg;
		return PS_OK;
	}
}

/* A message received while connecting, kept for ps_node_recv. */
struct ps_node_kept {
	struct ps_node_kept *next;
	ps_msg *msg;
	ps_wire_header h;
};

int ps_node_recv(ps_node *n, int timeout_ms, ps_msg **msg_p,
		 ps_wire_header *h_p)
{
	struct ps_node_kept *k = n->kept_head;

	if (n->abort_reason[0]) /* aborted already: no more messages */
		return PS_EABORTED;
	if (!k)
		return recv_arrived(n, timeout_ms, msg_p, h_p);
	n->kept_head = k->next;
	if (!n->kept_head)
		n->kept_tail = NULL;
	n->kept_count--;
	n->kept_bytes -= k->msg->hdr_len + k->msg->payload_len;
	*msg_p = k->msg;
	*h_p = k->h;
	free(k);
	return PS_OK;
}

/* Takes what has arrived while connecting (see ps_node_connect_role):
 * PS_OK once nothing more is there, or once the messages kept reach the
 * bound of those kept before the WELCOME (PS_EARLY_MAX messages,
 * cluster.early_bytes_max bytes; one more is always taken): the rest
 * then wait in the transport, within its own bounds per peer, until the
 * node reads them; PS_ECLOSED on the scheduler's SHUTDOWN, PS_EABORTED,
 * PS_EAGAIN when woken, or an error. Heartbeats are sent as due. */
static int take_arrived(ps_node *n)
{
	for (;;) {
		struct ps_node_kept *k;
		ps_wire_header h;
		ps_msg *msg = NULL;
		int rc;

		if (n->kept_count >= PS_EARLY_MAX ||
		    n->kept_bytes >= n->cfg->cluster.early_bytes_max) {
			if (!n->kept_full)
				PS_INFO("%u messages (%llu bytes) came while "
					"connecting; the rest wait unread "
					"until the connections are made",
					n->kept_count,
					(unsigned long long)n->kept_bytes);
			n->kept_full = 1;
			ps_node_tick(n); /* heartbeats go on */
			return PS_OK;
		}
		rc = recv_arrived(n, 0, &msg, &h);

		if (rc == PS_ETIMEDOUT)
			return PS_OK;
		if (rc != PS_OK)
			return rc;
		if (h.sender == 0 && h.type == PS_MSG_SHUTDOWN) {
			PS_INFO("the job ended while this %s was still "
				"connecting to its peers",
				ps_role_name(n->role));
			ps_msg_free(&msg);
			return PS_ECLOSED;
		}
		k = malloc(sizeof(*k));
		if (!k) {
			PS_ERROR("out of memory keeping a %s that came while "
				 "connecting", ps_msg_type_name(h.type));
			ps_msg_free(&msg);
			return PS_ENOMEM;
		}
		*k = (struct ps_node_kept){.msg = msg, .h = h};
		if (n->kept_tail)
			n->kept_tail->next = k;
		else
			n->kept_head = k;
		n->kept_tail = k;
		n->kept_count++;
		n->kept_bytes += msg->hdr_len + msg->payload_len;
		atomic_fetch_add(&n->connect_kept, 1);
	}
}

/* Connecting to node id failed with rc (the transport said how): the
 * peer is named, unless the job ended meanwhile (its SHUTDOWN or ABORT
 * is there to read: that is the outcome then). */
static int connect_failed(ps_node *n, uint32_t id, int rc)
{
	const ps_node_info *info = &n->welcome.nodes[id];
	int end = take_arrived(n);

	if (end == PS_ECLOSED || end == PS_EABORTED)
		return end;
	PS_ERROR("cannot connect to %s %u at %s: %s", ps_role_name(info->role),
		 info->rank, info->endpoint, ps_strerror(rc));
	return rc;
}

int ps_node_connect_role(ps_node *n, uint32_t role)
{
	const int64_t interval = n->cfg->cluster.heartbeat_interval_ms;
	uint32_t id;
	int rc;

	if (n->abort_reason[0])
		return PS_EABORTED;
	/* every connection at once: they proceed in the background */
	for (id = 1; id < n->welcome.num_nodes; id++) {
		const ps_node_info *info = &n->welcome.nodes[id];

		if (info->role != role || n->connected[id])
			continue;
		rc = ps_transport_connect_start(
			n->transport, info->endpoint,
			n->cfg->cluster.connect_timeout_ms, &n->peers[id]);
		if (rc != PS_OK)
			return connect_failed(n, id, rc);
	}
	/* then each waited for, a heartbeat interval at a time: between
	 * the waits the node heartbeats and takes what came */
	for (id = 1; id < n->welcome.num_nodes;) {
		int64_t wait;

		if (n->welcome.nodes[id].role != role || n->connected[id]) {
			id++;
			continue;
		}
		if (ps_signal_pending())
			return PS_EINTR;
		wait = n->last_beat_ms + interval - ps_now_ms();
		rc = ps_transport_connect_wait(n->transport, n->peers[id],
					       wait < 1 ? 1
					       : wait > interval ? (int)interval
								 : (int)wait);
		if (rc == PS_OK)
			n->connected[id] = 1;
		else if (rc != PS_EAGAIN)
			return connect_failed(n, id, rc);
		rc = take_arrived(n);
		if (rc != PS_OK && rc != PS_EAGAIN)
			return rc;
	}
	return PS_OK;
}

void ps_node_wake(ps_node *n)
{
	if (n->transport)
		ps_transport_wake(n->transport);
}

static void drop_kept(void *msg, void *ud)
{
	ps_msg *m = msg;

	(void)ud;
	ps_msg_free(&m);
}

void ps_node_stop(ps_node *n, int linger_ms)
{
	ps_transport_stop(n->transport, linger_ms);
}

void ps_node_close(ps_node *n, int linger_ms)
{
	ps_signals_set_wake(NULL);
	ps_trace_close();
	ps_transport_destroy(&n->transport, linger_ms);
	ps_wire_welcome_clear(&n->welcome);
	free(n->peers);
	free(n->connected);
	n->peers = NULL;
	n->connected = NULL;
	while (n->kept_head) {
		struct ps_node_kept *k = n->kept_head;
		n->kept_head = k->next;
		ps_msg_free(&k->msg);
		free(k);
	}
	n->kept_tail = NULL;
	ps_join_destroy(&n->join, drop_kept, NULL);
}
