/*
 * transport/rdma_cm.c - the verbs transport's connection management: the
 * hello in rdma_cm's private data and who it admits, connect requests
 * and responses, every CM event of the connection state machine
 * (docs/rdma.md, "Connections", "The source GID"), the device's async
 * events ("Device errors") and the sweep that frees dead connections
 * once they are quiet ("Dead connections").
 *
 * Threads: everything under the transport's one mutex, as rdma.c says
 * (docs/rdma.md, "Threads"); CM events are fetched, handled and acked
 * under it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "common/log.h"
#include "transport/clock.h"
#include "transport/keys.h"
#include "transport/rdma_internal.h"

static bool hello_ok(const void *data, uint8_t len, hello *h)
{
	return ps_rdma_hello_ok(data, len, h);
}

/* What this side says: a connector (outbound) presents the secret. */
static hello my_hello(const rdma_transport *rt, bool outbound)
{
	hello h = {.magic = PROTO_MAGIC,
	           .version = PROTO_VERSION,
	           .id = rt->opts.id,
	           .depth = RECV_DEPTH,
	           .buf_size = BUF_SIZE};
	if (outbound && rt->has_secret) {
		h.flags = HELLO_SECRET;
		memcpy(h.secret, rt->secret, sizeof(h.secret));
	}
	return h;
}

/* Does a connector's hello carry what this node admits (rdma_wire.h)?
 * Logs a refusal, bounded like dropped messages'. */
static bool hello_admits(rdma_transport *rt, struct rdma_cm_id *id,
                         const hello *h)
{
	bool presents = (h->flags & HELLO_SECRET) != 0;
	bool ok = rt->has_secret
	              ? presents && ps_secret_equal(h->secret, rt->secret,
	                                            sizeof(rt->secret))
	              : !presents;
	if (ok)
		return true;
	uint64_t n = ++rt->refused;
	if (n <= 20 || n % 1000 == 0) {
		char addr[INET6_ADDRSTRLEN] = "?";
		struct sockaddr *sa = rdma_get_peer_addr(id);
		if (sa && sa->sa_family == AF_INET)
			inet_ntop(AF_INET,
			          &((struct sockaddr_in *)(void *)sa)->sin_addr,
			          addr, sizeof(addr));
		PS_WARN("security: refused a peer at %s: %s (%" PRIu64
		        " of this kind so far)",
		        addr,
		        rt->has_secret ? "it did not present the job's secret"
		                       : "it presents a job secret, and this "
		                         "node has none",
		        n);
	}
	return false;
}

/* The device is gone or failed: every connection dies with the reason,
 * later sends fail and recv answers PS_EIO (the process exits with it).
 * Nothing is waited for: no DISCONNECTED comes from a dead device. */
static void fail_device(rdma_transport *rt, const char *why)
{
	if (rt->dev_dead)
		return;
	rt->dev_dead = true;
	snprintf(rt->dev_why, sizeof(rt->dev_why), "%s", why);
	PS_ERROR("rdma: %s", why);
	for (conn *c = rt->conns; c; c = c->next) {
		c->disc_seen = true;
		psi_rdma_conn_kill(c, why);
	}
	psi_rdma_efd_signal(rt->ready_fd); /* recv answers PS_EIO */
}

/* Reads the device's async events (any transport's thread; rt->mu held)
 * and queues them for every transport on that device. */
void psi_rdma_read_async(rdma_transport *rt)
{
	struct ibv_async_event ev;

	if (!rt->ctx)
		return;
	while (ibv_get_async_event(rt->ctx, &ev) == 0) {
		enum ibv_event_type type = ev.event_type;
		uint32_t qpn = 0;
		rdma_transport *only = NULL;
		bool queue = false;
		switch (type) {
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
		case IBV_EVENT_PATH_MIG_ERR:
			qpn = ev.element.qp->qp_num;
			queue = true;
			break;
		case IBV_EVENT_CQ_ERR:
			only = ev.element.cq->cq_context;
			queue = true;
			break;
		case IBV_EVENT_DEVICE_FATAL:
			queue = true;
			break;
		case IBV_EVENT_PORT_ERR:
			PS_WARN("rdma: device %s port %d went down",
			        rt->dev_name, ev.element.port_num);
			break;
		default:
			PS_DEBUG("rdma: device %s: async event %s",
			         rt->dev_name, ibv_event_type_str(type));
			break;
		}
		if (queue) {
			pthread_mutex_lock(&g_async_mu);
			for (rdma_transport *x = g_transports; x;
			     x = x->g_next) {
				if (x->ctx != rt->ctx || (only && x != only))
					continue;
				if (x->nasync < ASYNC_PENDING) {
					x->async_qp[x->nasync] = qpn;
					x->async_type[x->nasync] = (int)type;
					x->nasync++;
				} else if (type == IBV_EVENT_DEVICE_FATAL ||
				           type == IBV_EVENT_CQ_ERR) {
					x->async_qp[ASYNC_PENDING - 1] = 0;
					x->async_type[ASYNC_PENDING - 1] =
					    (int)type;
				}
				psi_rdma_efd_signal(x->ctl_fd);
			}
			pthread_mutex_unlock(&g_async_mu);
		}
		ibv_ack_async_event(&ev);
	}
}

/* Handles the async events queued for rt (rt->mu held). */
void psi_rdma_process_async(rdma_transport *rt)
{
	uint32_t qp[ASYNC_PENDING];
	int type[ASYNC_PENDING];
	uint32_t n;

	pthread_mutex_lock(&g_async_mu);
	n = rt->nasync;
	memcpy(qp, rt->async_qp, n * sizeof(*qp));
	memcpy(type, rt->async_type, n * sizeof(*type));
	rt->nasync = 0;
	pthread_mutex_unlock(&g_async_mu);
	for (uint32_t i = 0; i < n; i++) {
		char why[160];
		const char *what = ibv_event_type_str(type[i]);
		if (type[i] == IBV_EVENT_DEVICE_FATAL ||
		    type[i] == IBV_EVENT_CQ_ERR) {
			snprintf(why, sizeof(why), "device %s failed: %s",
			         rt->dev_name, what);
			fail_device(rt, why);
			continue;
		}
		for (conn *c = rt->conns; c; c = c->next) {
			if (!c->has_qp || c->qp->qp_num != qp[i])
				continue;
			snprintf(why, sizeof(why),
			         "QP to peer %.80s went to error state: %s",
			         c->outbound ? c->endpoint : "(accepted)",
			         what);
			psi_rdma_conn_kill(c, why);
		}
	}
}

/* Frees the connections that died and are quiet: both sides
 * disconnected (or the device is gone), no work request outstanding
 * (all flushed: none can complete later), nobody waiting on them. A
 * peer handle stays valid (transport.h): its sends fail PS_ECLOSED until
 * a connect to its endpoint replaces the connection. */
void psi_rdma_sweep(rdma_transport *rt)
{
	if (rt->stopping)
		return; /* stop frees them all */
	for (conn **p = &rt->conns; *p;) {
		conn *c = *p;
		if ((c->state == C_DEAD || c->state == C_FAILED) &&
		    !c->connecting && !c->pins && c->has_qp && c->disc_sent &&
		    c->disc_seen && !c->send_posted && !c->recv_out) {
			PS_DEBUG("rdma: freeing a dead connection %s %s",
			         c->outbound ? "to" : "from",
			         c->outbound ? c->endpoint : "a peer");
			TRACE("freeing dead conn %p out %d\n", (void *)c,
			      c->outbound);
			psi_rdma_conn_destroy(rt, c); /* unlinks *p */
			continue;
		}
		p = &c->next;
	}
}

int psi_rdma_end_half_open(rdma_transport *rt)
{
	int64_t now = ps_transport_now_ms(), next = -1;
	int64_t limit = rt->opts.handshake_timeout_ms > 0
	                    ? rt->opts.handshake_timeout_ms
	                    : DEFAULT_HANDSHAKE_MS;

	for (conn *c = rt->conns; c; c = c->next) {
		if (c->outbound || c->state != C_RESOLVING || !c->accepted_ms)
			continue;
		int64_t left = c->accepted_ms + limit - now;
		if (left > 0) {
			if (next < 0 || left < next)
				next = left;
			continue;
		}
		/* accepted, never established: the connector did not
		 * complete its handshake (rdma_cm's own timeout would take
		 * minutes, holding the QP and its buffers till then) */
		uint64_t n = ++rt->half_open;
		if (n <= 20 || n % 1000 == 0)
			PS_WARN("rdma: ended a connection from node %" PRIx64
			        " that did not complete its handshake within %"
			        PRId64 " ms (%" PRIu64 " so far)",
			        c->peer_id, limit, n);
		c->state = C_FAILED;
		c->fail_event = RDMA_CM_EVENT_CONNECT_ERROR;
		c->accepted_ms = 0;
		psi_rdma_qp_flush(c);
		c->disc_sent = c->disc_seen = true; /* the sweep frees it */
	}
	return next > INT32_MAX ? INT32_MAX : (int)next;
}

/* A CONNECT_REQUEST on the listening id: id is the new one. Returns true
 * when id must be destroyed (rejected) after the event is acked. */
static bool on_connect_request(rdma_transport *rt, struct rdma_cm_id *id,
                               const struct rdma_conn_param *p)
{
	hello h;
	if (!hello_ok(p->private_data, p->private_data_len, &h)) {
		PS_WARN("rdma: rejected a connection without an ordo hello "
		        "(%u bytes of private data)",
		        p->private_data_len);
		rdma_reject(id, NULL, 0);
		return true;
	}
	if (!hello_admits(rt, id, &h)) {
		hello no = my_hello(rt, false);
		no.flags = HELLO_REJ_SECRET;
		rdma_reject(id, &no, sizeof(no));
		memset(&h, 0, sizeof(h));
		return true;
	}
	memset(h.secret, 0, sizeof(h.secret));
	conn *c = psi_rdma_conn_new(rt, false);
	if (!c) {
		rdma_reject(id, NULL, 0);
		return true;
	}
	c->id = id;
	id->context = c;
	c->peer_id = h.id;
	c->credits = h.depth < RECV_DEPTH ? h.depth : RECV_DEPTH;
	hello mine = my_hello(rt, false);
	hello rej = mine; /* the reason, when our own QP cannot be set up */
	rej.flags = HELLO_REJ_QP;
	rej.depth = (uint32_t)rt->opts.rdma_gid_index;
	char what[ENDPOINT_MAX + 32];
	psi_rdma_conn_what(c, what, sizeof(what));
	if (psi_rdma_conn_create_qp(rt, c) != PS_OK)
		goto reject;
	/* this side READs (initiator), the connector is read */
	struct rdma_conn_param cp = {
	    .private_data = &mine,
	    .private_data_len = sizeof(mine),
	    .responder_resources = p->initiator_depth < rt->rd_atom
	                               ? p->initiator_depth
	                               : rt->rd_atom,
	    .initiator_depth = p->responder_resources < rt->rd_atom
	                           ? p->responder_resources
	                           : rt->rd_atom,
	    .retry_count = RETRY_COUNT,
	    .rnr_retry_count = RNR_RETRY};
	if (c->own_qp) {
		/* as rdma_accept does with rdma_cm's QP: RTR and RTS first,
		 * then the receives (none posted if a step fails) */
		c->resp_res = cp.responder_resources;
		c->init_depth = cp.initiator_depth;
		if (psi_rdma_qp_step(rt, c, IBV_QPS_RTR, what) != PS_OK ||
		    psi_rdma_qp_step(rt, c, IBV_QPS_RTS, what) != PS_OK)
			goto reject;
		cp.qp_num = c->qp->qp_num;
	}
	if (psi_rdma_conn_post_recvs(rt, c) != PS_OK)
		goto reject;
	if (rdma_accept(id, &cp) != 0) {
		PS_ERROR("rdma: rdma_accept: %s", strerror(errno));
		goto reject;
	}
	PS_DEBUG("rdma: accepted a connection from node %" PRIx64 "%s%s",
	         h.id, c->own_qp ? " with " : "",
	         c->own_qp ? rt->gid_desc : "");
	c->accepted_ms = ps_transport_now_ms();
	return false;

reject:
	if (rt->opts.rdma_gid_index >= 0)
		rdma_reject(id, &rej, sizeof(rej)); /* the connector stops */
	else
		rdma_reject(id, NULL, 0);
	c->state = C_FAILED;
	if (c->own_qp && !c->recv_out) /* nothing posted: nothing to flush */
		psi_rdma_qp_release(rt, c);
	if (c->has_qp) {
		/* flushes of posted receives may come: keep c (dead) until
		 * stop, or with our own QP (flushed here) until the sweep
		 * finds it quiet; the id is destroyed with c */
		if (c->own_qp) {
			psi_rdma_qp_error(c);
			c->disc_sent = c->disc_seen = true;
		}
		return false;
	}
	/* nothing of c can be in the CQ: it goes, its id with the event */
	c->id = NULL;
	psi_rdma_conn_destroy(rt, c);
	return true;
}

/* Our own QP (explicit GID index), connecting: the acceptor answered
 * (RDMA_CM_EVENT_CONNECT_RESPONSE, which rdma_cm turns into ESTABLISHED
 * only for its own QPs). RTR, RTS, the receives, then rdma_establish
 * (the RTU); no ESTABLISHED follows on this side. */
static void on_connect_response(rdma_transport *rt, conn *c,
                                struct rdma_cm_event *ev)
{
	char what[ENDPOINT_MAX + 32];
	hello h;

	psi_rdma_conn_what(c, what, sizeof(what));
	if (c->state != C_RESOLVING)
		return;
	if (!hello_ok(ev->param.conn.private_data,
	              ev->param.conn.private_data_len, &h)) {
		PS_WARN("rdma: %s accepted without an ordo hello", c->endpoint);
		c->fail_status = -EPROTO;
		goto fail;
	}
	c->peer_id = h.id;
	c->credits = h.depth < RECV_DEPTH ? h.depth : RECV_DEPTH;
	if (psi_rdma_qp_step(rt, c, IBV_QPS_RTR, what) != PS_OK ||
	    psi_rdma_qp_step(rt, c, IBV_QPS_RTS, what) != PS_OK) {
		c->fatal = true; /* logged, naming the GID: retrying is vain */
		goto fail;
	}
	if (psi_rdma_conn_post_recvs(rt, c) != PS_OK)
		goto fail;
	if (rdma_establish(c->id) != 0) {
		PS_ERROR("rdma: %s: rdma_establish: %s", what,
		         strerror(errno));
		goto fail;
	}
	PS_DEBUG("rdma: %s uses %s", what, rt->gid_desc);
	c->state = C_UP;
	return;

fail:
	/* the acceptor waits for our RTU: a REJ ends its side */
	rdma_reject(c->id, NULL, 0);
	psi_rdma_qp_error(c);
	c->fail_event = RDMA_CM_EVENT_CONNECT_ERROR;
	c->state = C_FAILED;
}

/* A REJECTED connect: an acceptor that could not set up its own QP with
 * its explicit GID index says so (HELLO_REJ_QP); retrying is vain. */
static void check_reject(const rdma_transport *rt, conn *c,
                         const struct rdma_cm_event *ev)
{
	hello h;

	if (!ev->param.conn.private_data ||
	    ev->param.conn.private_data_len < sizeof(h))
		return;
	memcpy(&h, ev->param.conn.private_data, sizeof(h));
	if (h.magic != PROTO_MAGIC || h.version != PROTO_VERSION)
		return;
	if (h.flags & HELLO_REJ_SECRET) {
		PS_ERROR("rdma: cannot connect to %s: the peer refused %s",
		         c->endpoint,
		         rt->has_secret
		             ? "this node's job secret (not this job's: "
		               "ORDO_JOB_SECRET or security.keys_dir's "
		               "job.secret?)"
		             : "this node, which has no job secret (security."
		               "mode none, or auto without a secret?)");
		c->fatal = true;
		return;
	}
	if (!(h.flags & HELLO_REJ_QP))
		return;
	PS_ERROR("rdma: cannot connect to %s: node %" PRIx64 " refused: it "
	         "cannot set up a queue pair with its GID index %u "
	         "(transport.rdma_gid_index; its log says why)",
	         c->endpoint, h.id, h.depth);
	c->fatal = true;
}

static void on_cm_event(rdma_transport *rt, struct rdma_cm_event *ev,
                        struct rdma_cm_id **destroy)
{
	struct rdma_cm_id *id = ev->id;
	conn *c = id->context;

	TRACE("cm %s status %d conn %p\n", rdma_event_str(ev->event),
	      ev->status, (void *)c);
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		if (rt->stopping ||
		    on_connect_request(rt, id, &ev->param.conn)) {
			if (rt->stopping)
				rdma_reject(id, NULL, 0);
			*destroy = id;
		}
		return;
	}
	if (ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL) {
		char why[128];
		snprintf(why, sizeof(why), "device %s removed",
		         id->verbs ? ibv_get_device_name(id->verbs->device)
		                   : rt->dev_name);
		if (c)
			c->disc_seen = true;
		fail_device(rt, why);
		return;
	}
	if (!c)
		return; /* the listening id */
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(id, RESOLVE_MS) != 0) {
			PS_DEBUG("rdma: rdma_resolve_route: %s",
			         strerror(errno));
			c->fail_event = RDMA_CM_EVENT_ROUTE_ERROR;
			c->state = C_FAILED;
		}
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED: {
		hello mine = my_hello(rt, true);
		if (psi_rdma_conn_create_qp(rt, c) != PS_OK) {
			c->fail_event = RDMA_CM_EVENT_CONNECT_ERROR;
			c->state = C_FAILED;
			/* an explicit GID index that does not fit: logged */
			c->fatal = rt->opts.rdma_gid_index >= 0;
			if (c->own_qp)
				psi_rdma_qp_release(rt, c); /* nothing posted */
			break;
		}
		/* rd_atom is known once the QP's device is */
		struct rdma_conn_param cp = {
		    .private_data = &mine,
		    .private_data_len = sizeof(mine),
		    .responder_resources = rt->rd_atom,
		    .initiator_depth = rt->rd_atom,
		    .retry_count = RETRY_COUNT,
		    .rnr_retry_count = RNR_RETRY};
		if (c->own_qp)
			cp.qp_num = c->qp->qp_num;
		if (rdma_connect(id, &cp) != 0) {
			PS_ERROR("rdma: rdma_connect: %s", strerror(errno));
			c->fail_event = RDMA_CM_EVENT_CONNECT_ERROR;
			c->state = C_FAILED;
		}
		break;
	}
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		if (c->own_qp)
			on_connect_response(rt, c, ev);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (c->outbound && !c->own_qp) {
			hello h;
			if (!hello_ok(ev->param.conn.private_data,
			              ev->param.conn.private_data_len, &h)) {
				PS_WARN("rdma: %s accepted without an ordo "
				        "hello",
				        c->endpoint);
				c->fail_event = RDMA_CM_EVENT_CONNECT_ERROR;
				c->fail_status = -EPROTO;
				c->state = C_FAILED;
				psi_rdma_conn_disconnect(c);
				break;
			}
			c->peer_id = h.id;
			c->credits =
			    h.depth < RECV_DEPTH ? h.depth : RECV_DEPTH;
			/* the peer sends credit frames only after our data:
			 * posting now is in time */
			if (psi_rdma_conn_post_recvs(rt, c) != PS_OK) {
				c->fail_event = RDMA_CM_EVENT_CONNECT_ERROR;
				c->state = C_FAILED;
				break;
			}
		}
		if (c->state == C_RESOLVING)
			c->state = C_UP;
		c->accepted_ms = 0;
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		if (c->state == C_RESOLVING) {
			c->fail_event = ev->event;
			c->fail_status = ev->status;
			c->state = C_FAILED;
			if (c->outbound && ev->event == RDMA_CM_EVENT_REJECTED)
				check_reject(rt, c, ev);
			if (c->own_qp || !c->outbound) {
				/* flushed (rdma_cm flushes only the QPs of
				 * its connecting side) */
				psi_rdma_qp_flush(c);
				/* accepted, then rejected or never
				 * confirmed: no DISCONNECTED will come, the
				 * sweep frees it once flushed */
				if (!c->outbound)
					c->disc_sent = c->disc_seen = true;
			}
			c->accepted_ms = 0;
		} else {
			psi_rdma_conn_kill(c, rdma_event_str(ev->event));
		}
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		c->disc_seen = true;
		if (c->state == C_UP)
			PS_DEBUG("rdma: connection %s %s disconnected",
			         c->outbound ? "to" : "from",
			         c->outbound ? c->endpoint : "a peer");
		if (!c->disc_sent)
			psi_rdma_conn_disconnect(c); /* both sides must */
		psi_rdma_conn_kill(c, NULL);
		break;
	default:
		break;
	}
}

/* Handles every pending CM event (mu held). */
void psi_rdma_process_cm(rdma_transport *rt)
{
	struct rdma_cm_event *ev;

	if (!rt->ech)
		return;
	while (rdma_get_cm_event(rt->ech, &ev) == 0) {
		struct rdma_cm_id *destroy = NULL;
		on_cm_event(rt, ev, &destroy);
		rdma_ack_cm_event(ev);
		if (destroy)
			rdma_destroy_id(destroy);
	}
}
