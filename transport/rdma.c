/*
 * transport/rdma.c - the verbs (RDMA) transport backend: RC queue pairs
 * set up through rdma_cm; small messages copied through registered
 * buffers, large payloads read by the receiver where they are (zero
 * copy: a READ rendezvous).
 *
 * The design - zero copy, device memory (GPUDirect RDMA), connections,
 * dead connections, one device per transport, framing, flow control,
 * threads, teardown, device errors, the source GID, QP settings - is
 * docs/rdma.md, section by section; comments below name the section.
 *
 * This file: the transport's calls (create, listen, connect, send,
 * recv, wake, disconnect, caps, reg, stop, free; the ops table) and its
 * progress thread. The rest, with what they share in rdma_internal.h:
 * rdma_pool.c (the lending pool), rdma_verbs.c (verbs resources and
 * connections), rdma_send.c (sending), rdma_recv.c (receiving), rdma_cm.c
 * (connection management); rdma_device.c chooses the device and GID.
 *
 * Threads: one progress thread per transport and one mutex over all of
 * its state (docs/rdma.md, "Threads").
 * PS_RDMA_TRACE=1 traces CM events, completions and credit frames.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <fcntl.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "common/log.h"
#include "transport/clock.h"
#include "transport/keys.h"
#include "transport/rdma_device.h"
#include "transport/rdma_internal.h"
#include "transport/transport.h"

extern const ps_transport_ops psi_rdma_ops; /* defined at the end */

/* The globals of rdma_internal.h, defined once. */
pthread_mutex_t g_async_mu = PTHREAD_MUTEX_INITIALIZER;
rdma_transport *g_transports;
int trace_on;

static rdma_transport *rt_of(ps_transport *t)
{
	return (rdma_transport *)t;
}

/* Waits on rt->cv (mu held) until deadline_ms (monotonic; -1: forever). */
static void cv_wait_until(rdma_transport *rt, int64_t deadline_ms)
{
	if (deadline_ms < 0) {
		pthread_cond_wait(&rt->cv, &rt->mu);
		return;
	}
	struct timespec ts = {deadline_ms / 1000,
	                      (long)(deadline_ms % 1000) * 1000000L};
	pthread_cond_timedwait(&rt->cv, &rt->mu, &ts);
}

void psi_rdma_efd_signal(int fd)
{
	uint64_t one = 1;
	ssize_t rc = write(fd, &one, sizeof(one));
	(void)rc; /* EAGAIN: saturated, a signal is pending */
}

static void efd_drain(int fd)
{
	uint64_t v;
	while (read(fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
		;
}

int psi_rdma_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -1;
	return 0;
}

/* ---- the progress thread ------------------------------------------------- */

/* One progress step (mu held). */
static void progress(rdma_transport *rt)
{
	/* completions first: data that came before a DISCONNECTED */
	psi_rdma_read_async(rt);
	psi_rdma_process_async(rt);
	psi_rdma_drain_cq(rt);
	psi_rdma_process_cm(rt);
	psi_rdma_drain_cq(rt);
	for (conn *c = rt->conns; c; c = c->next)
		if (c->nheld)
			psi_rdma_resume_held(rt, c);
	psi_rdma_pump_all(rt);
	psi_rdma_sweep(rt);
	pthread_cond_broadcast(&rt->cv);
}

static void *progress_main(void *arg)
{
	rdma_transport *rt = arg;

	pthread_mutex_lock(&rt->mu);
	while (!rt->quit) {
		struct pollfd pf[4] = {
		    {rt->ctl_fd, POLLIN, 0},
		    {rt->ech->fd, POLLIN, 0},
		    {rt->cch ? rt->cch->fd : -1, POLLIN, 0},
		    {rt->ctx ? rt->ctx->async_fd : -1, POLLIN, 0},
		};
		int busy = rt->opts.rdma_busy_poll && rt->cq;
		int due = psi_rdma_end_half_open(rt); /* ms, or -1 */
		pthread_mutex_unlock(&rt->mu);
		int n = poll(pf, 4, busy ? 0 : due);
		if (n < 0 && errno != EINTR)
			PS_ERROR("rdma: poll: %s", strerror(errno));
		if (pf[0].revents & POLLIN)
			efd_drain(rt->ctl_fd);
		pthread_mutex_lock(&rt->mu);
		if (rt->quit)
			break;
		progress(rt);
	}
	pthread_mutex_unlock(&rt->mu);
	return NULL;
}

/* ---- create, listen ------------------------------------------------------ */

static void trace_init(void)
{
	const char *v = getenv("PS_RDMA_TRACE");
	trace_on = v && *v && strcmp(v, "0") != 0;
}

static int rdma_create_transport(const ps_transport_opts *opts,
                                 ps_transport **t_p)
{
	int ndev = 0;
	struct ibv_device **list = ibv_get_device_list(&ndev);
	if (list)
		ibv_free_device_list(list);
	if (!list || ndev == 0) {
		PS_ERROR("rdma: no RDMA device on this host%s%s",
		         list ? "" : ": ", list ? "" : strerror(errno));
		return PS_ENOTSUP;
	}

	static pthread_once_t trace_once = PTHREAD_ONCE_INIT;
	pthread_once(&trace_once, trace_init);
	rdma_transport *rt = calloc(1, sizeof(*rt));
	if (!rt) {
		PS_ERROR("rdma: out of memory creating a transport");
		return PS_ENOMEM;
	}
	rt->base.ops = &psi_rdma_ops;
	rt->opts = *opts;
	memset(rt->opts.job_secret, 0, sizeof(rt->opts.job_secret));
	memset(rt->opts.job_token, 0, sizeof(rt->opts.job_token));
	if (opts->job_secret[0]) {
		if (!ps_secret_valid(opts->job_secret) ||
		    (opts->job_token[0] && !ps_secret_valid(opts->job_token))) {
			free(rt);
			return PS_EINVAL;
		}
		ps_secret_bytes(opts->job_secret, rt->secret);
		rt->has_secret = true;
		if (opts->job_token[0]) {
			ps_secret_bytes(opts->job_token, rt->token);
			rt->has_token = true;
			rt->base.kid = ps_token_kid_bytes(rt->token);
		}
	}
	if (rt->opts.connect_timeout_ms <= 0)
		rt->opts.connect_timeout_ms = DEFAULT_CONNECT_MS;
	if (rt->opts.send_timeout_ms < 0)
		rt->opts.send_timeout_ms = -1;
	rt->wake_fd = rt->ready_fd = rt->ctl_fd = -1;

	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&rt->cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&rt->mu, NULL);

	rt->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	rt->ready_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	rt->ctl_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (rt->wake_fd < 0 || rt->ready_fd < 0 || rt->ctl_fd < 0) {
		PS_ERROR("rdma: eventfd: %s", strerror(errno));
		goto fail;
	}
	rt->ech = rdma_create_event_channel();
	if (!rt->ech) {
		int err = errno;
		PS_ERROR("rdma: rdma_create_event_channel: %s", strerror(err));
		if (err == ENODEV || err == ENOENT) {
			rt->ech = NULL;
			psi_rdma_ops.free(&rt->base);
			return PS_ENOTSUP;
		}
		goto fail;
	}
	if (psi_rdma_set_nonblock(rt->ech->fd) != 0) {
		PS_ERROR("rdma: event channel: %s", strerror(errno));
		goto fail;
	}
	if (pthread_create(&rt->thread, NULL, progress_main, rt) != 0) {
		PS_ERROR("rdma: cannot start the progress thread");
		goto fail;
	}
	rt->thread_started = true;
	*t_p = &rt->base;
	return PS_OK;

fail:
	psi_rdma_ops.free(&rt->base);
	return PS_EIO;
}

/* The listing error for an address no device fits. */
static void log_device_error(const rdma_transport *rt, const char *addr)
{
	ps_rdma_device_opts o = {.device = rt->opts.rdma_device,
	                         .gid_index = rt->opts.rdma_gid_index,
	                         .addr = addr};
	ps_rdma_device dev;
	char *err = malloc(PS_RDMA_ERR_LEN);
	if (!err) {
		PS_ERROR("rdma: no RDMA device carries %s", addr);
		return;
	}
	if (ps_rdma_device_open(&o, &dev, err, PS_RDMA_ERR_LEN) == PS_OK) {
		PS_ERROR("rdma: rdma_cm finds no RDMA device for %s, but "
		         "device %s port %u GID %d carries it",
		         addr, dev.name, dev.port, dev.gid_index);
		ps_rdma_device_close(&dev);
	} else {
		PS_ERROR("rdma: cannot listen on %s: %s", addr, err);
	}
	free(err);
}

static int resolve_ipv4(const char *host, int port, struct sockaddr_in *sa)
{
	struct addrinfo hints = {.ai_family = AF_INET,
	                         .ai_socktype = SOCK_STREAM},
	                *res = NULL;
	if (getaddrinfo(host, NULL, &hints, &res) != 0 || !res)
		return PS_EINVAL;
	memcpy(sa, res->ai_addr, sizeof(*sa));
	sa->sin_port = htons((uint16_t)port);
	freeaddrinfo(res);
	return PS_OK;
}

/* Whether sa's address (any port) can be bound: rdma_cm answers
 * EADDRNOTAVAIL both for an address on no device and for a port that a
 * wildcard bind holds. */
static bool address_usable(rdma_transport *rt, const struct sockaddr_in *sa)
{
	struct rdma_cm_id *id;
	struct sockaddr_in any = *sa;
	bool ok;

	any.sin_port = 0;
	if (rdma_create_id(rt->ech, &id, NULL, RDMA_PS_TCP) != 0)
		return false;
	ok = rdma_bind_addr(id, (struct sockaddr *)&any) == 0;
	rdma_destroy_id(id);
	return ok;
}

static int rdma_listen_(ps_transport *t, const char *host, int port,
                        const char *advertise_host, char *endpoint, size_t cap)
{
	rdma_transport *rt = rt_of(t);
	struct sockaddr_in sa;
	struct rdma_cm_id *id = NULL;
	char out[ENDPOINT_MAX];
	int rc;

	if (!host || !*host)
		host = "0.0.0.0";
	if (resolve_ipv4(host, port, &sa) != PS_OK) {
		PS_ERROR("rdma: cannot listen on %s: not an IPv4 address",
		         host);
		return PS_EINVAL;
	}
	pthread_mutex_lock(&rt->mu);
	if (rt->listen_id) {
		PS_ERROR("rdma: transport is already listening");
		rc = PS_ESTATE;
		goto unlock;
	}
	if (rdma_create_id(rt->ech, &id, NULL, RDMA_PS_TCP) != 0) {
		PS_ERROR("rdma: rdma_create_id: %s", strerror(errno));
		rc = PS_EIO;
		goto unlock;
	}
	if (rdma_bind_addr(id, (struct sockaddr *)&sa) != 0) {
		int err = errno;
		if (err == EADDRNOTAVAIL && port != 0 &&
		    address_usable(rt, &sa))
			err = EADDRINUSE; /* a wildcard bind holds the port */
		if (err == EADDRINUSE) {
			PS_ERROR("rdma: cannot listen on %s:%d: address "
			         "already in use",
			         host, port);
			rc = PS_EADDRINUSE;
		} else if (err == ENODEV || err == EADDRNOTAVAIL ||
		           err == EINVAL) {
			log_device_error(rt, host);
			rc = PS_EINVAL;
		} else {
			PS_ERROR("rdma: rdma_bind_addr(%s): %s", host,
			         strerror(err));
			rc = ps_err_from_errno(err);
		}
		goto destroy;
	}
	if (sa.sin_addr.s_addr != htonl(INADDR_ANY) && !id->verbs) {
		log_device_error(rt, host);
		rc = PS_EINVAL;
		goto destroy;
	}
	if (id->verbs && rt->opts.rdma_device[0] &&
	    strcmp(rt->opts.rdma_device,
	           ibv_get_device_name(id->verbs->device)) != 0) {
		log_device_error(rt, host);
		rc = PS_EINVAL;
		goto destroy;
	}
	if (rt->opts.rdma_gid_index >= 0) {
		/* the index must name a GID on the port rdma_cm bound (any
		 * device's for a wildcard address): else the listing */
		char what[ENDPOINT_MAX + 32];
		bool any = sa.sin_addr.s_addr == htonl(INADDR_ANY);
		snprintf(what, sizeof(what), "cannot listen on %s", host);
		rc = psi_rdma_check_gid(rt, id->verbs,
		                        id->verbs ? id->port_num : 0,
		                        any ? NULL : host, what);
		if (rc != PS_OK)
			goto destroy;
	}
	if (id->verbs && (rc = psi_rdma_ensure_verbs(rt, id->verbs)) != PS_OK)
		goto destroy;
	if (rdma_listen(id, 128) != 0) {
		int err = errno;
		PS_ERROR("rdma: rdma_listen(%s): %s", host, strerror(err));
		rc = err == EADDRINUSE ? PS_EADDRINUSE : PS_EIO;
		goto destroy;
	}
	int real_port = ntohs(rdma_get_src_port(id));
	int n =
	    snprintf(out, sizeof(out), "rdma://%s:%d",
	             advertise_host && *advertise_host ? advertise_host : host,
	             real_port);
	if (n < 0 || (size_t)n >= sizeof(out) || (size_t)n + 1 > cap) {
		PS_ERROR("rdma: endpoint for %s does not fit in %zu bytes",
		         host, cap);
		rc = PS_EINVAL;
		goto destroy;
	}
	memcpy(endpoint, out, (size_t)n + 1);
	rt->listen_id = id;
	PS_DEBUG("rdma: listening on %s:%d (peers use %s)", host, real_port,
	         out);
	pthread_mutex_unlock(&rt->mu);
	return PS_OK;

destroy:
	rdma_destroy_id(id);
unlock:
	pthread_mutex_unlock(&rt->mu);
	return rc;
}

/* ---- connect ------------------------------------------------------------- */

/* "rdma://host:port" -> host, port. */
static int parse_endpoint(const char *ep, char *host, size_t cap, int *port)
{
	if (strncmp(ep, "rdma://", 7) != 0 || strlen(ep) >= ENDPOINT_MAX)
		return PS_EINVAL;
	const char *h = ep + 7, *colon = strrchr(h, ':');
	if (!colon || colon == h || (size_t)(colon - h) >= cap)
		return PS_EINVAL;
	char *end = NULL;
	long p = strtol(colon + 1, &end, 10);
	if (!colon[1] || !end || *end || p <= 0 || p > 65535)
		return PS_EINVAL;
	memcpy(host, h, (size_t)(colon - h));
	host[colon - h] = '\0';
	*port = (int)p;
	return PS_OK;
}

static int grow_peers(rdma_transport *rt)
{
	if (rt->npeers < rt->cap_peers)
		return PS_OK;
	uint32_t cap = rt->cap_peers ? rt->cap_peers * 2 : 8;
	peer_slot *p = realloc(rt->peers, cap * sizeof(*p));
	if (!p) {
		PS_ERROR("rdma: out of memory for %u peers", cap);
		return PS_ENOMEM;
	}
	rt->peers = p;
	rt->cap_peers = cap;
	return PS_OK;
}

/* Starts one connection attempt of ps (mu held): address resolution
 * first, the rest follows in the progress thread. PS_OK, or an error
 * (logged). */
static int attempt_start(rdma_transport *rt, peer_slot *ps)
{
	conn *c = psi_rdma_conn_new(rt, true);

	if (!c)
		return PS_ENOMEM;
	snprintf(c->endpoint, sizeof(c->endpoint), "%s", ps->endpoint);
	c->connecting = true; /* the sweep leaves it to us */
	if (rdma_create_id(rt->ech, &c->id, c, RDMA_PS_TCP) != 0) {
		PS_ERROR("rdma: rdma_create_id: %s", strerror(errno));
		c->id = NULL;
		psi_rdma_conn_destroy(rt, c);
		return PS_EIO;
	}
	int64_t left = ps->deadline - ps_transport_now_ms();
	int tmo = left < RESOLVE_MS ? (int)(left > 1 ? left : 1) : RESOLVE_MS;
	if (rdma_resolve_addr(c->id, NULL, (struct sockaddr *)&ps->sa, tmo) !=
	    0) {
		PS_ERROR("rdma: rdma_resolve_addr(%s): %s", ps->endpoint,
		         strerror(errno));
		psi_rdma_conn_destroy(rt, c);
		return PS_EINVAL;
	}
	psi_rdma_efd_signal(rt->ctl_fd);
	ps->attempt = c;
	return PS_OK;
}

/* Ends ps's attempt in flight (mu held), up or not: PS_OK (the
 * connection is ps's now), PS_ECONNREFUSED (rejected or unreachable:
 * retry), PS_ETIMEDOUT (not through yet, or failed on its way: retry),
 * or another error. */
static int attempt_end(rdma_transport *rt, uint32_t peer)
{
	peer_slot *ps = &rt->peers[peer];
	conn *c = ps->attempt;
	int rc;

	ps->attempt = NULL;
	c->connecting = false;
	if (c->state == C_UP) {
		conn *old = ps->c;
		if (old)
			old->peer = -1; /* dead: swept */
		ps->c = c;
		c->peer = (int32_t)peer;
		PS_DEBUG("rdma: connected to %s (peer %u, node %" PRIx64 ")",
		         ps->endpoint, peer, c->peer_id);
		return PS_OK;
	}
	if (c->state == C_RESOLVING) {
		rc = PS_ETIMEDOUT;
	} else if (c->fatal) {
		rc = PS_EIO; /* logged: an explicit GID index that fails */
	} else if (c->fail_event == RDMA_CM_EVENT_REJECTED ||
	           c->fail_event == RDMA_CM_EVENT_UNREACHABLE) {
		rc = c->fail_status == -EPROTO ? PS_EPROTO : PS_ECONNREFUSED;
	} else if (c->fail_status == -EPROTO) {
		rc = PS_EPROTO;
	} else {
		rc = PS_ETIMEDOUT; /* address, route: retried */
	}
	/* No receive is posted before ESTABLISHED: nothing of c can be in
	 * the CQ, so it goes now, unless it was up (receives posted). */
	if (c->recvs_posted || c->disc_sent) {
		psi_rdma_conn_kill(c, NULL);
		c->state = C_FAILED;
	} else {
		psi_rdma_conn_destroy(rt, c);
	}
	return rc;
}

/* Connecting to ps failed for good (logged), its attempt ended: a
 * handle made for it goes when it is the last one, else stays, closed
 * (sends fail PS_ECLOSED); a reused one keeps its dead connection. */
static void connect_failed(rdma_transport *rt, uint32_t peer)
{
	peer_slot *ps = &rt->peers[peer];

	ps->pending = false;
	if (ps->fresh && peer + 1 == rt->npeers)
		rt->npeers--;
}

static int rdma_connect_start_(ps_transport *t, const char *endpoint,
                               int timeout_ms, ps_peer *peer_p)
{
	rdma_transport *rt = rt_of(t);
	char host[ENDPOINT_MAX];
	int port, rc;
	struct sockaddr_in sa;
	int wait_ms = timeout_ms >= 0 ? timeout_ms : rt->opts.connect_timeout_ms;

	if (parse_endpoint(endpoint, host, sizeof(host), &port) != PS_OK) {
		PS_ERROR("rdma: bad endpoint \"%s\" (want rdma://host:port)",
		         endpoint);
		return PS_EINVAL;
	}
	if (resolve_ipv4(host, port, &sa) != PS_OK) {
		PS_ERROR("rdma: cannot resolve \"%s\" (endpoint %s)", host,
		         endpoint);
		return PS_EINVAL;
	}
	pthread_mutex_lock(&rt->mu);
	uint32_t reuse = UINT32_MAX;
	if (rt->dev_dead) {
		PS_ERROR("rdma: cannot connect to %s: %s", endpoint,
		         rt->dev_why);
		rc = PS_EIO;
		goto unlock;
	}
	for (uint32_t i = 0; i < rt->npeers; i++) {
		peer_slot *ps = &rt->peers[i];
		conn *c = ps->c;
		if (ps->closed || strcmp(ps->endpoint, endpoint) != 0)
			continue;
		if (ps->pending || (c && c->state == C_UP)) {
			*peer_p = i;
			pthread_mutex_unlock(&rt->mu);
			return PS_OK;
		}
		reuse = i; /* died: reconnect under the same handle */
		break;
	}
	if (reuse == UINT32_MAX && (rc = grow_peers(rt)) != PS_OK)
		goto unlock;
	if (rt->opts.rdma_gid_index >= 0 && !rt->gid_ok) {
		/* not listening (or on a wildcard address): the index must
		 * name a GID on this transport's device, or on some device;
		 * the connection's own port is checked with its QP */
		char what[ENDPOINT_MAX + 32];
		snprintf(what, sizeof(what), "cannot connect to %s", endpoint);
		if ((rc = psi_rdma_check_gid(rt, rt->ctx, 0, NULL, what)) !=
		    PS_OK)
			goto unlock;
	}

	uint32_t peer = reuse != UINT32_MAX ? reuse : rt->npeers++;
	peer_slot *ps = &rt->peers[peer];
	if (reuse == UINT32_MAX) {
		*ps = (peer_slot){.fresh = true};
		snprintf(ps->endpoint, sizeof(ps->endpoint), "%s", endpoint);
	}
	ps->pending = true;
	ps->refused = false;
	ps->attempt = NULL;
	ps->sa = sa;
	ps->deadline = ps_transport_now_ms() + wait_ms;
	ps->retry_at = 0;
	ps->backoff = 10;
	ps->timeout_ms = wait_ms;
	rc = attempt_start(rt, ps);
	if (rc != PS_OK)
		connect_failed(rt, peer);
	else
		*peer_p = peer;
unlock:
	pthread_mutex_unlock(&rt->mu);
	return rc;
}

/* Attempts, each waited for until it is up or has failed, then the
 * next after a backoff (10 ms, doubling to 500 ms), until the deadline;
 * see DESIGN in docs/rdma.md, "Connections". */
static int rdma_connect_wait_(ps_transport *t, ps_peer peer, int wait_ms)
{
	rdma_transport *rt = rt_of(t);
	int rc;

	pthread_mutex_lock(&rt->mu);
	if (peer >= rt->npeers) {
		pthread_mutex_unlock(&rt->mu);
		PS_ERROR("rdma: connect_wait on unknown peer %u", peer);
		return PS_EINVAL;
	}
	peer_slot *ps = &rt->peers[peer];
	if (!ps->pending) {
		rc = !ps->closed && ps->c && ps->c->state == C_UP ? PS_OK
		                                                   : PS_ECLOSED;
		pthread_mutex_unlock(&rt->mu);
		return rc;
	}
	int64_t until = ps->deadline;
	if (wait_ms >= 0 && ps_transport_now_ms() + wait_ms < until)
		until = ps_transport_now_ms() + wait_ms;
	for (;;) {
		conn *c = ps->attempt;
		if (c) {
			while (c->state == C_RESOLVING &&
			       ps_transport_now_ms() < until && !rt->quit)
				cv_wait_until(rt, until);
			if (c->state == C_RESOLVING && !rt->quit &&
			    ps_transport_now_ms() < ps->deadline) {
				rc = PS_EAGAIN; /* in flight */
				break;
			}
			rc = attempt_end(rt, peer);
			if (rc == PS_OK) {
				ps->pending = false;
				break;
			}
			if (rc == PS_ECONNREFUSED)
				ps->refused = true;
			if (rc != PS_ECONNREFUSED && rc != PS_ETIMEDOUT) {
				connect_failed(rt, peer); /* logged */
				break;
			}
			if (ps_transport_now_ms() + ps->backoff >=
			        ps->deadline ||
			    rt->quit) {
				rc = ps->refused ? PS_ECONNREFUSED
				                 : PS_ETIMEDOUT;
				PS_ERROR("rdma: cannot connect to %s: %s "
				         "(retried for %d ms)",
				         ps->endpoint,
				         ps->refused ? "connection refused"
				                     : "timed out",
				         ps->timeout_ms);
				connect_failed(rt, peer);
				break;
			}
			ps->retry_at = ps_transport_now_ms() + ps->backoff;
			ps->backoff = ps->backoff * 2 > 500 ? 500
			                                    : ps->backoff * 2;
		}
		int64_t next = ps->retry_at < until ? ps->retry_at : until;
		while (ps_transport_now_ms() < next)
			cv_wait_until(rt, next);
		if (ps_transport_now_ms() < ps->retry_at) {
			rc = PS_EAGAIN; /* backing off */
			break;
		}
		rc = attempt_start(rt, ps);
		if (rc != PS_OK) {
			connect_failed(rt, peer); /* logged */
			break;
		}
	}
	pthread_mutex_unlock(&rt->mu);
	return rc;
}

static int rdma_connect_(ps_transport *t, const char *endpoint, int timeout_ms,
                         ps_peer *peer_p)
{
	ps_peer peer;
	int rc = rdma_connect_start_(t, endpoint, timeout_ms, &peer);

	if (rc == PS_OK)
		rc = rdma_connect_wait_(t, peer, -1);
	if (rc == PS_OK)
		*peer_p = peer;
	return rc;
}

/* ---- send, recv, wake, disconnect ---------------------------------------- */

/* The registration of t of memory kind `kind` holding [p, p + len), or
 * NULL. */
static ps_mr *find_mr(ps_transport *t, const void *p, size_t len,
                      ps_mem_kind kind)
{
	uintptr_t a = (uintptr_t)p;
	for (ps_mr *mr = t->mrs; mr; mr = mr->next) {
		uintptr_t b = (uintptr_t)mr->addr;
		if (mr->kind == kind && a >= b && len <= mr->len &&
		    a - b <= mr->len - len)
			return mr;
	}
	return NULL;
}

/* How a payload stands to the PS_MEM_CUDA registrations (owner thread:
 * t->mrs is the owner's; the payload is only compared as addresses, never
 * read): PS_OK with *dev set and *rkey when it lies inside one (it goes by
 * READ whatever its size: docs/rdma.md, "Device memory"); PS_OK with *dev
 * clear when it touches none and kind is PS_MEM_HOST, or is empty; PS_EINVAL
 * (logged) when kind says device memory but it lies in no registration,
 * when it runs past a registration's end (the part outside is no memory
 * the NIC may read, and the CPU may not read the part inside), or when
 * its header is too long for an RTS; PS_EIO when its registration was
 * released with the device. */
static int device_payload(rdma_transport *rt, const void *payload,
                          size_t len, size_t hdr_len, ps_mem_kind kind,
                          bool *dev, uint32_t *rkey)
{
	*dev = false;
	if (!len)
		return PS_OK; /* nothing to read */
	ps_mr *mr = find_mr(&rt->base, payload, len, PS_MEM_CUDA);
	if (!mr) {
		uintptr_t a = (uintptr_t)payload;
		for (ps_mr *o = rt->base.mrs; o; o = o->next) {
			uintptr_t b = (uintptr_t)o->addr;
			/* len and o->len are at most MAX_PAYLOAD and user
			 * addresses are < 2^63: no sum wraps */
			if (o->kind != PS_MEM_CUDA || a >= b + o->len ||
			    b >= a + len)
				continue;
			PS_ERROR("rdma: a payload of %zu bytes at %p runs past "
			         "the device-memory registration of %zu "
			         "bytes at %p: not sent (the NIC reads device "
			         "memory only inside one registration, and "
			         "the CPU never reads it)",
			         len, payload, o->len, o->addr);
			return PS_EINVAL;
		}
		if (kind != PS_MEM_CUDA)
			return PS_OK;
		PS_ERROR("rdma: a payload of %zu bytes at %p is said to be "
		         "CUDA device memory but lies in no device-memory "
		         "registration of this transport (ps_transport_reg_ex "
		         "with PS_MEM_CUDA): not sent, since only the NIC may "
		         "read it",
		         len, payload);
		return PS_EINVAL;
	}
	if (hdr_len > ZC_HDR_MAX) {
		PS_ERROR("rdma: a payload in device memory is sent by READ "
		         "rendezvous, whose header must fit in one SEND: "
		         "%zu header bytes, at most %u",
		         hdr_len, (unsigned)ZC_HDR_MAX);
		return PS_EINVAL;
	}
	if (!mr->priv) {
		PS_ERROR("rdma: the device-memory registration of %zu bytes at "
		         "%p was released (the device is gone): a payload in "
		         "it cannot be sent",
		         mr->len, mr->addr);
		return PS_EIO;
	}
	*rkey = ((struct ibv_mr *)mr->priv)->rkey;
	*dev = true;
	return PS_OK;
}

/* Decides how it's payload goes (owner thread, mu not held): a payload
 * >= ZC_MIN inside a registration (registered now if the device came
 * after ps_transport_reg) or registered for this send goes by READ;
 * anything else is copied. */
static void choose_zero_copy(rdma_transport *rt, sitem *it)
{
	if (it->payload_len < ZC_MIN || it->hdr_len > ZC_HDR_MAX)
		return;
	pthread_mutex_lock(&rt->mu);
	struct ibv_pd *pd = rt->dev_dead ? NULL : rt->pd;
	pthread_mutex_unlock(&rt->mu);
	if (!pd)
		return; /* pd lives until stop, on this thread */
	ps_mr *mr = find_mr(&rt->base, it->payload, (size_t)it->payload_len,
	                    PS_MEM_HOST);
	if (mr && !mr->priv)
		mr->priv = ibv_reg_mr(pd, mr->addr, mr->len,
		                      IBV_ACCESS_REMOTE_READ);
	if (mr && mr->priv) {
		it->rkey = ((struct ibv_mr *)mr->priv)->rkey;
		it->zc = true;
		return;
	}
	if (!UNREG_ZC)
		return;
	it->own_mr = ibv_reg_mr(pd, it->payload, (size_t)it->payload_len,
	                        IBV_ACCESS_REMOTE_READ);
	if (it->own_mr) {
		it->rkey = it->own_mr->rkey;
		it->zc = true;
	} else {
		PS_DEBUG("rdma: cannot register a payload of %" PRIu64
		         " bytes (%s): copied",
		         it->payload_len, strerror(errno));
	}
}

static int rdma_send_mem_(ps_transport *t, ps_peer peer, const void *hdr,
                          size_t hdr_len, void *payload, size_t payload_len,
                          ps_mem_kind kind, ps_free_fn *free_fn, void *hint)
{
	rdma_transport *rt = rt_of(t);
	int rc = PS_OK;
	conn *c = NULL;
	uint32_t dev_rkey = 0;
	bool dev;

	if (hdr_len > MAX_HDR || payload_len > MAX_PAYLOAD) {
		PS_ERROR("rdma: message too large (header %zu, payload %zu "
		         "bytes; at most %u and %" PRIu64 ")",
		         hdr_len, payload_len, MAX_HDR, MAX_PAYLOAD);
		return PS_EINVAL;
	}
	/* before anything else: device memory must never reach the copy
	 * path */
	rc = device_payload(rt, payload, payload_len, hdr_len, kind, &dev,
	                    &dev_rkey);
	if (rc != PS_OK)
		return rc; /* logged */
	sitem *it = calloc(1, sizeof(*it));
	if (!it || (hdr_len && !(it->hdr = malloc(hdr_len)))) {
		PS_ERROR("rdma: out of memory sending a message");
		free(it);
		return PS_ENOMEM;
	}
	if (hdr_len)
		memcpy(it->hdr, hdr, hdr_len);
	it->hdr_len = (uint32_t)hdr_len;
	it->payload = payload_len ? payload : NULL;
	it->payload_len = payload_len;
	it->free_fn = free_fn;
	it->hint = hint;
	if (dev) {
		/* in a device-memory registration: READ, whatever the size */
		it->rkey = dev_rkey;
		it->zc = true;
	} else if (peer < rt->npeers) { /* npeers changes on this thread */
		choose_zero_copy(rt, it);
	}

	pthread_mutex_lock(&rt->mu);
	if (peer >= rt->npeers) {
		PS_ERROR("rdma: send to unknown peer %u", peer);
		rc = PS_EINVAL;
		goto fail;
	}
	peer_slot *ps = &rt->peers[peer];
	c = ps->c;
	int64_t deadline = rt->opts.send_timeout_ms < 0
	                       ? -1
	                       : ps_transport_now_ms() + rt->opts.send_timeout_ms;
	if (c)
		c->pins++; /* not freed while we wait */
	while (c && !ps->closed && c->state == C_UP &&
	       c->sq_len >= SEND_QUEUE_MAX) {
		if (deadline >= 0 && ps_transport_now_ms() >= deadline) {
			PS_WARN("rdma: send to %s timed out after %d ms "
			        "(%u messages queued)",
			        ps->endpoint, rt->opts.send_timeout_ms,
			        c->sq_len);
			rc = PS_ETIMEDOUT;
			goto fail;
		}
		cv_wait_until(rt, deadline);
	}
	if (rt->dev_dead) {
		PS_DEBUG("rdma: send to peer %u: %s", peer, rt->dev_why);
		rc = PS_EIO;
		goto fail;
	}
	if (ps->closed || !c || c->state != C_UP) {
		PS_DEBUG("rdma: send to %s peer %u (%s)",
		         ps->closed ? "disconnected" : "broken", peer,
		         ps->endpoint);
		rc = PS_ECLOSED;
		goto fail;
	}
	c->pins--;
	it->cookie = ++c->next_cookie;
	if (c->sq_tail)
		c->sq_tail->next = it;
	else
		c->sq_head = it;
	c->sq_tail = it;
	c->sq_len++;
	psi_rdma_pump(rt, c);
	pthread_mutex_unlock(&rt->mu);
	/* an empty payload is handed back at once (transport.h) */
	if (!payload_len && payload && free_fn)
		free_fn(payload, hint);
	return PS_OK;

fail:
	if (c)
		c->pins--;
	pthread_mutex_unlock(&rt->mu);
	if (it->own_mr)
		ibv_dereg_mr(it->own_mr); /* the caller keeps the payload */
	free(it->hdr);
	free(it);
	return rc;
}

static int rdma_send_(ps_transport *t, ps_peer peer, const void *hdr,
                      size_t hdr_len, void *payload, size_t payload_len,
                      ps_free_fn *free_fn, void *hint)
{
	return rdma_send_mem_(t, peer, hdr, hdr_len, payload, payload_len,
	                      PS_MEM_HOST, free_fn, hint);
}

static int rdma_recv_(ps_transport *t, int timeout_ms, ps_msg **msg_p)
{
	rdma_transport *rt = rt_of(t);
	int64_t deadline = timeout_ms > 0 ? ps_transport_now_ms() + timeout_ms : 0;

	for (;;) {
		pthread_mutex_lock(&rt->mu);
		rmsg *m = rt->rq_head;
		if (m) {
			rt->rq_head = m->next;
			if (!rt->rq_head)
				rt->rq_tail = NULL;
			if (m->from) {
				/* its connection's budget has room again */
				m->from->rx_bytes -= m->charged;
				m->from = NULL;
			}
			if (m->node) {
				/* and the node's: any held connection may go on */
				rt->rx_total -= m->charged;
				m->node = NULL;
				for (conn *c = rt->conns; c; c = c->next)
					if (c->nheld) {
						psi_rdma_efd_signal(rt->ctl_fd);
						break;
					}
			}
		}
		bool dead = rt->dev_dead;
		pthread_mutex_unlock(&rt->mu);
		if (m) {
			m->next = NULL;
			*msg_p = &m->msg;
			return PS_OK;
		}
		if (dead)
			return PS_EIO; /* logged once: rt->dev_why */
		int wait = -1;
		if (timeout_ms >= 0) {
			int64_t left =
			    timeout_ms > 0 ? deadline - ps_transport_now_ms() : 0;
			wait = left > 0 ? (int)left : 0;
		}
		struct pollfd pf[2] = {{rt->wake_fd, POLLIN, 0},
		                       {rt->ready_fd, POLLIN, 0}};
		int n = poll(pf, 2, wait);
		if (n < 0) {
			if (errno == EINTR)
				continue; /* a handler's wake is on wake_fd */
			PS_ERROR("rdma: poll: %s", strerror(errno));
			return PS_EIO;
		}
		if (pf[0].revents & POLLIN) {
			efd_drain(rt->wake_fd);
			return PS_EAGAIN;
		}
		if (pf[1].revents & POLLIN) {
			efd_drain(rt->ready_fd);
			continue;
		}
		if (wait == 0)
			return PS_ETIMEDOUT;
	}
}

static void rdma_wake_(ps_transport *t)
{
	psi_rdma_efd_signal(rt_of(t)->wake_fd); /* async-signal-safe */
}

/* Waits (mu held) until c's queued and posted sends are gone or
 * deadline_ms. */
static void flush_conn(rdma_transport *rt, conn *c, int64_t deadline_ms)
{
	c->pins++;
	while (c->state == C_UP &&
	       (c->sq_head || c->zc_head || c->send_posted) &&
	       ps_transport_now_ms() < deadline_ms)
		cv_wait_until(rt, deadline_ms);
	c->pins--;
}

static int rdma_disconnect_(ps_transport *t, ps_peer peer)
{
	rdma_transport *rt = rt_of(t);

	pthread_mutex_lock(&rt->mu);
	if (peer >= rt->npeers) {
		pthread_mutex_unlock(&rt->mu);
		PS_ERROR("rdma: disconnect of unknown peer %u", peer);
		return PS_EINVAL;
	}
	peer_slot *ps = &rt->peers[peer];
	if (ps->pending) { /* still connecting: the attempt ends here (one
			    * that came up is ps's, and closed below) */
		if (ps->attempt)
			(void)attempt_end(rt, peer);
		ps->pending = false;
	}
	conn *c = ps->c;
	if (!ps->closed) {
		int linger = rt->opts.send_timeout_ms;
		if (linger < 0 || linger > DISCONNECT_LINGER_MS)
			linger = DISCONNECT_LINGER_MS;
		if (c)
			flush_conn(rt, c, ps_transport_now_ms() + linger);
		ps->closed = true;
		c = ps->c; /* still there: pinned while flushing */
		if (c) {
			c->closed = true;
			psi_rdma_conn_kill(c, NULL);
		}
		PS_DEBUG("rdma: disconnected from %s (peer %u)", ps->endpoint,
		         peer);
	}
	pthread_mutex_unlock(&rt->mu);
	return PS_OK;
}

static void rdma_caps_(const ps_transport *t, ps_transport_caps *caps)
{
	caps->max_message =
	    (size_t)psi_rdma_max_payload((const rdma_transport *)t);
	/* payloads >= ZC_MIN: read by the peer from where they are (a
	 * registration, or one made for the send); smaller ones are copied
	 * into the send buffers, which costs less than a rendezvous */
	caps->zero_copy_send = 1;
	caps->zero_copy_recv = 1; /* READ into lent pool buffers */
	caps->needs_registration = !UNREG_ZC;
	/* beyond LEND_MAX lent, a READ goes into a heap buffer registered
	 * for it alone: holding messages never starves the pool */
	caps->recv_lend_max = LEND_MAX;
	/* PS_MEM_CUDA registrations (dma-buf or by address), payloads in
	 * them READ by the peer whatever their size */
	caps->device_memory = 1;
}

/* Registers device memory (docs/rdma.md, "Device memory") at once on pd, or
 * says why not: PS_ENOTSUP and a sentence in why. dev: the device's name;
 * gone: why the device is gone ("" when it is not). */
static int reg_device(struct ibv_pd *pd, const char *dev, const char *gone,
                      ps_mr *mr, const ps_reg_req *req, char *why,
                      size_t whylen)
{
	struct ibv_mr *m;
	int err;

	if (gone[0]) {
		snprintf(why, whylen,
		         "rdma: device %s is gone (%s): device memory cannot "
		         "be registered",
		         dev, gone);
		return PS_ENOTSUP;
	}
	if (!pd) {
		snprintf(why, whylen, "rdma: no RDMA device bound yet: device "
		         "memory is registered at once, on the device of the "
		         "transport's first listen on an RDMA address or first "
		         "connect, so register it after that");
		return PS_ENOTSUP;
	}
	if (req->dmabuf_fd >= 0) {
		/* iova = the device pointer: peers READ at the addresses the
		 * RTS frames carry, the payloads' own */
		m = ibv_reg_dmabuf_mr(pd, req->dmabuf_offset, mr->len,
		                      (uint64_t)(uintptr_t)mr->addr,
		                      req->dmabuf_fd, IBV_ACCESS_REMOTE_READ);
		if (!m) {
			err = errno;
			snprintf(why, whylen, "rdma: device %s cannot register "
			         "dma-buf memory: ibv_reg_dmabuf_mr: %s",
			         dev, strerror(err));
			return PS_ENOTSUP;
		}
	} else {
		m = ibv_reg_mr(pd, mr->addr, mr->len, IBV_ACCESS_REMOTE_READ);
		if (!m) {
			err = errno;
			snprintf(why, whylen,
			         "rdma: device %s cannot register device "
			         "memory by its address (%zu bytes at %p): "
			         "ibv_reg_mr: %s (that needs the "
			         "nvidia-peermem kernel module; a dma-buf of "
			         "the memory needs none)",
			         dev, mr->len, mr->addr, strerror(err));
			return PS_ENOTSUP;
		}
	}
	mr->priv = m;
	PS_DEBUG("rdma: registered %zu bytes of device memory at %p on %s "
	         "(%s), rkey 0x%x",
	         mr->len, mr->addr, dev,
	         req->dmabuf_fd >= 0 ? "dma-buf" : "by address", m->rkey);
	return PS_OK;
}

/* Registers host memory for READs by peers (IBV_ACCESS_REMOTE_READ: an
 * rkey sent in an RTS frame). Without a device yet (nothing connected or
 * listening on a device address) nothing is registered now: the first
 * zero-copy send from the region registers it. Device memory: reg_device,
 * at once. */
static int rdma_reg_(ps_transport *t, ps_mr *mr, const ps_reg_req *req,
                     char *why, size_t whylen)
{
	rdma_transport *rt = rt_of(t);
	char dev[sizeof(rt->dev_name)], gone[sizeof(rt->dev_why)] = "";

	pthread_mutex_lock(&rt->mu);
	struct ibv_pd *pd = rt->dev_dead ? NULL : rt->pd;
	snprintf(dev, sizeof(dev), "%s", rt->dev_name);
	if (rt->dev_dead)
		snprintf(gone, sizeof(gone), "%s", rt->dev_why);
	pthread_mutex_unlock(&rt->mu);
	if (mr->kind == PS_MEM_CUDA)
		return reg_device(pd, dev, gone, mr, req, why, whylen);
	if (mr->kind != PS_MEM_HOST) {
		snprintf(why, whylen, "rdma: unknown memory kind %d",
		         (int)mr->kind);
		return PS_ENOTSUP;
	}
	if (!pd)
		return PS_OK;
	mr->priv = ibv_reg_mr(pd, mr->addr, mr->len, IBV_ACCESS_REMOTE_READ);
	if (!mr->priv)
		PS_WARN("rdma: cannot register %zu bytes (%s): payloads from "
		        "them are registered per send or copied",
		        mr->len, strerror(errno));
	return PS_OK; /* registering is about speed (transport.h) */
}

static void rdma_dereg_(ps_transport *t, ps_mr *mr)
{
	(void)t;
	if (mr->priv)
		ibv_dereg_mr(mr->priv);
	mr->priv = NULL;
}

/* ---- stop, free ---------------------------------------------------------- */

static void rdma_stop_(ps_transport *t, int linger_ms)
{
	rdma_transport *rt = rt_of(t);
	int64_t end = ps_transport_now_ms() + linger_ms;

	pthread_mutex_lock(&rt->mu);
	rt->stopping = true;
	for (conn *c = rt->conns; c; c = c->next)
		flush_conn(rt, c, end);
	bool waiting = false;
	for (conn *c = rt->conns; c; c = c->next) {
		if (c->has_qp && !c->disc_sent)
			psi_rdma_conn_disconnect(c);
		/* after: the QP is in error, nothing is read */
		psi_rdma_drop_queue(c);
		if (c->has_qp && c->disc_sent && !c->disc_seen)
			waiting = true;
		c->closed = true;
		if (c->state == C_UP)
			c->state = C_DEAD;
	}
	/* both sides disconnect: wait for the peers' answers */
	int64_t disc_end = ps_transport_now_ms() + DISC_WAIT_MS;
	while (waiting && ps_transport_now_ms() < disc_end) {
		cv_wait_until(rt, disc_end);
		waiting = false;
		for (conn *c = rt->conns; c; c = c->next)
			if (c->has_qp && !c->disc_seen &&
			    (c->state == C_DEAD || c->state == C_UP))
				waiting = true;
	}
	rt->quit = true;
	pthread_mutex_unlock(&rt->mu);
	psi_rdma_efd_signal(rt->ctl_fd);
	if (rt->thread_started) {
		pthread_join(rt->thread, NULL);
		rt->thread_started = false;
	}
	/* the thread is gone: no lock needed from here on */
	pthread_mutex_lock(&g_async_mu);
	for (rdma_transport **p = &g_transports; *p; p = &(*p)->g_next)
		if (*p == rt) {
			*p = rt->g_next;
			break;
		}
	pthread_mutex_unlock(&g_async_mu);
	psi_rdma_process_cm(rt); /* ack what came last */
	while (rt->conns)
		psi_rdma_conn_destroy(rt, rt->conns);
	if (rt->listen_id) {
		rdma_destroy_id(rt->listen_id);
		rt->listen_id = NULL;
	}
	/* registrations go before the PD (ps_transport_dereg may still
	 * come, and finds nothing to release) */
	for (ps_mr *mr = t->mrs; mr; mr = mr->next)
		rdma_dereg_(t, mr);
	psi_rdma_pool_shutdown(rt->pool);
	rt->pool = NULL;
	if (rt->smr)
		ibv_dereg_mr(rt->smr);
	rt->smr = NULL;
	free(rt->sbufs);
	rt->sbufs = NULL;
	if (rt->cq)
		ibv_destroy_cq(rt->cq);
	rt->cq = NULL;
	if (rt->cch)
		ibv_destroy_comp_channel(rt->cch);
	rt->cch = NULL;
	if (rt->pd)
		ibv_dealloc_pd(rt->pd);
	rt->pd = NULL;
	rt->ctx = NULL;
	if (rt->ech)
		rdma_destroy_event_channel(rt->ech);
	rt->ech = NULL;
}

static void rdma_free_(ps_transport *t)
{
	rdma_transport *rt = rt_of(t);

	if (rt->thread_started || rt->ech)
		rdma_stop_(t, 0); /* a failed create ends here too */
	while (rt->rq_head) {
		rmsg *m = rt->rq_head;
		rt->rq_head = m->next;
		psi_rdma_rmsg_free(m);
	}
	free(rt->peers);
	if (rt->pool) { /* a failed create: never shut down */
		psi_rdma_pool_shutdown(rt->pool);
		rt->pool = NULL;
	}
	if (rt->wake_fd >= 0)
		close(rt->wake_fd);
	if (rt->ready_fd >= 0)
		close(rt->ready_fd);
	if (rt->ctl_fd >= 0)
		close(rt->ctl_fd);
	pthread_cond_destroy(&rt->cv);
	pthread_mutex_destroy(&rt->mu);
	memset(rt->secret, 0, sizeof(rt->secret));
	memset(rt->token, 0, sizeof(rt->token));
	free(rt);
}

const ps_transport_ops psi_rdma_ops = {
    .name = "rdma",
    .create = rdma_create_transport,
    .listen = rdma_listen_,
    .connect = rdma_connect_,
    .connect_start = rdma_connect_start_,
    .connect_wait = rdma_connect_wait_,
    .send = rdma_send_,
    .send_mem = rdma_send_mem_,
    .recv = rdma_recv_,
    .wake = rdma_wake_,
    .disconnect = rdma_disconnect_,
    .caps = rdma_caps_,
    .reg = rdma_reg_,
    .dereg = rdma_dereg_,
    .stop = rdma_stop_,
    .free = rdma_free_,
};
