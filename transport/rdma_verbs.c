/*
 * transport/rdma_verbs.c - the verbs transport's resources: the PD,
 * completion channel, CQ and send pool of its one device (docs/rdma.md,
 * "One device per transport"), the GID an explicit index names and the
 * queue pairs set up with it ("The source GID", "QP settings"), each
 * connection's receive buffers, and a connection's making, killing and
 * freeing ("Connections", "Dead connections").
 *
 * Threads: everything under the transport's one mutex, as rdma.c says
 * (docs/rdma.md, "Threads").
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "transport/rdma_device.h"
#include "transport/rdma_internal.h"

/* Creates the PD, completion channel, CQ and send pool on ctx (first
 * context seen); refuses another device later. */
int psi_rdma_ensure_verbs(rdma_transport *rt, struct ibv_context *ctx)
{
	struct ibv_device_attr attr;

	if (!ctx) {
		PS_ERROR("rdma: an rdma_cm id has no device");
		return PS_EIO;
	}
	if (rt->ctx) {
		if (rt->ctx == ctx)
			return PS_OK;
		PS_ERROR("rdma: a connection on device %s, but this transport "
		         "uses %s (one device per transport)",
		         ibv_get_device_name(ctx->device),
		         ibv_get_device_name(rt->ctx->device));
		return PS_EINVAL;
	}
	if (ibv_query_device(ctx, &attr) != 0) {
		PS_ERROR("rdma: ibv_query_device(%s): %s",
		         ibv_get_device_name(ctx->device), strerror(errno));
		return PS_EIO;
	}
	rt->cq_size = attr.max_cqe < CQ_SIZE_MAX ? attr.max_cqe : CQ_SIZE_MAX;
	{
		int a = RD_ATOM_MAX;
		if (attr.max_qp_rd_atom < a)
			a = attr.max_qp_rd_atom;
		if (attr.max_qp_init_rd_atom < a)
			a = attr.max_qp_init_rd_atom;
		rt->rd_atom = (uint8_t)(a > 0 ? a : 1);
	}
	if (psi_rdma_set_nonblock(ctx->async_fd) != 0)
		PS_WARN("rdma: the device's async event fd: %s",
		        strerror(errno));
	rt->pd = ibv_alloc_pd(ctx);
	if (!rt->pd) {
		PS_ERROR("rdma: ibv_alloc_pd: %s", strerror(errno));
		return PS_EIO;
	}
	rt->cch = ibv_create_comp_channel(ctx);
	if (!rt->cch || psi_rdma_set_nonblock(rt->cch->fd) != 0) {
		PS_ERROR("rdma: completion channel: %s", strerror(errno));
		goto dealloc_pd;
	}
	rt->cq = ibv_create_cq(ctx, rt->cq_size, rt, rt->cch, 0);
	if (!rt->cq) {
		PS_ERROR("rdma: ibv_create_cq(%d): %s", rt->cq_size,
		         strerror(errno));
		goto destroy_cch;
	}
	if (ibv_req_notify_cq(rt->cq, 0) != 0) {
		PS_ERROR("rdma: ibv_req_notify_cq: %s", strerror(errno));
		goto destroy_cq;
	}
	rt->sbufs = malloc((size_t)SEND_POOL * BUF_SIZE);
	if (!rt->sbufs) {
		PS_ERROR("rdma: out of memory for the send pool");
		goto destroy_cq;
	}
	rt->smr = ibv_reg_mr(rt->pd, rt->sbufs, (size_t)SEND_POOL * BUF_SIZE,
	                     IBV_ACCESS_LOCAL_WRITE);
	if (!rt->smr) {
		PS_ERROR("rdma: registering the send pool (%u KiB): %s",
		         SEND_POOL * BUF_SIZE / 1024, strerror(errno));
		goto free_sbufs;
	}
	rt->sfree = NULL;
	for (int i = SEND_POOL - 1; i >= 0; i--) {
		slot *s = &rt->sslots[i];
		s->c = NULL;
		s->buf = rt->sbufs + (size_t)i * BUF_SIZE;
		s->kind = SLOT_SEND;
		s->next = rt->sfree;
		rt->sfree = s;
	}
	rt->pool = psi_rdma_pool_new(rt->pd);
	if (!rt->pool) {
		PS_ERROR("rdma: out of memory for the receive pool");
		ibv_dereg_mr(rt->smr);
		rt->smr = NULL;
		goto free_sbufs;
	}
	rt->cq_used = SEND_POOL;
	rt->ctx = ctx;
	snprintf(rt->dev_name, sizeof(rt->dev_name), "%s",
	         ibv_get_device_name(ctx->device));
	pthread_mutex_lock(&g_async_mu);
	rt->g_next = g_transports;
	g_transports = rt;
	pthread_mutex_unlock(&g_async_mu);
	/* the progress thread polls the new fds */
	psi_rdma_efd_signal(rt->ctl_fd);
	return PS_OK;

free_sbufs:
	free(rt->sbufs);
	rt->sbufs = NULL;
destroy_cq:
	ibv_destroy_cq(rt->cq);
	rt->cq = NULL;
destroy_cch:
	if (rt->cch)
		ibv_destroy_comp_channel(rt->cch);
	rt->cch = NULL;
dealloc_pd:
	ibv_dealloc_pd(rt->pd);
	rt->pd = NULL;
	return PS_EIO;
}

/* "connection to rdma://..." or "connection from node N", for messages. */
const char *psi_rdma_conn_what(const conn *c, char *buf, size_t len)
{
	if (c->outbound)
		snprintf(buf, len, "connection to %s", c->endpoint);
	else
		snprintf(buf, len, "connection from node %" PRIx64,
		         c->peer_id);
	return buf;
}

/* opts.rdma_gid_index >= 0: checks that the index names a valid GID on
 * ctx's port (ctx NULL: on opts.rdma_device, or any device; addr, when
 * known, is preferred among several) and remembers it for messages;
 * otherwise logs "what: " and rdma_device.c's error, which lists every
 * device, port and GID. Once per device and port. mu held. */
int psi_rdma_check_gid(rdma_transport *rt, struct ibv_context *ctx,
                       uint8_t port, const char *addr, const char *what)
{
	int idx = rt->opts.rdma_gid_index;
	const char *dname = ctx ? ibv_get_device_name(ctx->device)
	                        : rt->opts.rdma_device;
	char gs[INET6_ADDRSTRLEN];

	if (rt->gid_ok && (!ctx || (strcmp(rt->gid_dev, dname) == 0 &&
	                            (!port || port == rt->gid_port))))
		return PS_OK;
	if (idx > 255) {
		PS_ERROR("rdma: %s: transport.rdma_gid_index = %d: a GID index "
		         "is at most 255",
		         what, idx);
		return PS_EINVAL;
	}
	char *err = malloc(PS_RDMA_ERR_LEN);
	if (!err) {
		PS_ERROR("rdma: %s: out of memory", what);
		return PS_ENOMEM;
	}
	ps_rdma_device_opts o = {.device = dname, .gid_index = idx,
	                         .addr = addr};
	ps_rdma_device dev;
	int rc = ps_rdma_device_open(&o, &dev, err, PS_RDMA_ERR_LEN);
	if (rc != PS_OK) {
		PS_ERROR("rdma: %s: %s", what, err);
		free(err);
		return rc == PS_ENOMEM ? PS_ENOMEM : PS_EINVAL;
	}
	union ibv_gid gid = dev.gid;
	enum ibv_gid_type type = dev.gid_type;
	if (port && dev.port != port) {
		/* valid on another port of the device: rdma_cm's counts */
		struct ibv_gid_entry e;
		if (ibv_query_gid_ex(ctx, port, (uint32_t)idx, &e, 0) != 0) {
			int n = snprintf(err, PS_RDMA_ERR_LEN,
			                 "GID index %d is valid on %s port %u but "
			                 "not on port %u, the port rdma_cm uses "
			                 "(transport.rdma_gid_index = %d).\n",
			                 idx, dev.name, dev.port, port, idx);
			if (n > 0 && n < PS_RDMA_ERR_LEN)
				ps_rdma_device_list(err + n,
				                    PS_RDMA_ERR_LEN - (size_t)n);
			PS_ERROR("rdma: %s: %s", what, err);
			ps_rdma_device_close(&dev);
			free(err);
			return PS_EINVAL;
		}
		gid = e.gid;
		type = (enum ibv_gid_type)e.gid_type;
		dev.port = port;
	}
	free(err);
	rt->gid_ok = true;
	snprintf(rt->gid_dev, sizeof(rt->gid_dev), "%s", dev.name);
	rt->gid_port = dev.port;
	rt->gid_link_layer = dev.link_layer;
	snprintf(rt->gid_desc, sizeof(rt->gid_desc),
	         "GID index %d (%s, %s) of %s port %u", idx,
	         ps_rdma_gid_str(&gid, gs, sizeof(gs)),
	         ps_rdma_gid_type_str(type), dev.name, dev.port);
	ps_rdma_device_close(&dev);
	PS_INFO("rdma: queue pairs use %s (transport.rdma_gid_index)",
	        rt->gid_desc);
	return PS_OK;
}

/* Moves c's own QP to st with rdma_cm's attributes for st; at RTR the
 * source GID is opts.rdma_gid_index, at RTS ack timeout, retry and
 * rnr_retry are this file's (the header). On failure logs why, naming the
 * GID, and returns PS_EIO. */
int psi_rdma_qp_step(rdma_transport *rt, conn *c, enum ibv_qp_state st,
                     const char *what)
{
	const char *name = st == IBV_QPS_INIT  ? "INIT"
	                   : st == IBV_QPS_RTR ? "RTR"
	                                       : "RTS";
	struct ibv_qp_attr a;
	int mask = 0, err;

	if (st == IBV_QPS_RTR) {
		/* INIT again first, as rdma_cm does with its QPs: only now
		 * (the peer's REQ or REP seen) do the access flags allow the
		 * peer's READs */
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_INIT;
		if (rdma_init_qp_attr(c->id, &a, &mask) != 0) {
			err = errno;
			PS_ERROR("rdma: %s: rdma_init_qp_attr(INIT): %s", what,
			         strerror(err));
			return PS_EIO;
		}
		if ((err = ibv_modify_qp(c->qp, &a, mask)) != 0) {
			PS_ERROR("rdma: %s: moving its queue pair to INIT "
			         "again: %s",
			         what, strerror(err));
			return PS_EIO;
		}
		mask = 0;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = st;
	if (rdma_init_qp_attr(c->id, &a, &mask) != 0) {
		err = errno;
		PS_ERROR("rdma: %s: rdma_init_qp_attr(%s): %s", what, name,
		         strerror(err));
		return PS_EIO;
	}
	if (st == IBV_QPS_RTR) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.sgid_index = (uint8_t)rt->opts.rdma_gid_index;
		if (c->resp_res)
			a.max_dest_rd_atomic = c->resp_res;
		/* librdmacm's workaround for old rdma_ucm kernels (its
		 * ucma_modify_qp_rtr): RoCE-only bits off on InfiniBand */
		if (rt->gid_link_layer == IBV_LINK_LAYER_INFINIBAND)
			mask &= (int)(UINT_MAX ^ 0xe00000u);
	} else if (st == IBV_QPS_RTS) {
		a.timeout = ACK_TIMEOUT;
		a.retry_cnt = RETRY_COUNT;
		a.rnr_retry = RNR_RETRY;
		if (c->init_depth)
			a.max_rd_atomic = c->init_depth;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY;
	}
	err = ibv_modify_qp(c->qp, &a, mask);
	if (err) {
		PS_ERROR("rdma: %s: moving its queue pair to %s with %s "
		         "(transport.rdma_gid_index) failed: %s",
		         what, name, rt->gid_desc, strerror(err));
		return PS_EIO;
	}
	return PS_OK;
}

/* Destroys c's QP; no work request of it may be outstanding. */
void psi_rdma_qp_release(rdma_transport *rt, conn *c)
{
	if (!c->has_qp)
		return;
	if (c->own_qp)
		ibv_destroy_qp(c->qp);
	else
		rdma_destroy_qp(c->id);
	c->qp = NULL;
	c->has_qp = false;
	rt->cq_used -= SEND_WR_MAX + RECV_POSTED;
}

/* Creates c's QP on the shared PD/CQ: through rdma_cm (rdma_create_qp:
 * rdma_cm moves it), or with an explicit GID index our own (ibv_create_qp,
 * moved to INIT here, to RTR and RTS by the caller). */
int psi_rdma_conn_create_qp(rdma_transport *rt, conn *c)
{
	/* before rt->cq is read */
	int rc = psi_rdma_ensure_verbs(rt, c->id->verbs);
	if (rc != PS_OK)
		return rc;
	if (rt->opts.rdma_gid_index >= 0 &&
	    (rc = psi_rdma_check_gid(
	         rt, c->id->verbs, c->id->port_num, NULL,
	         c->outbound ? "cannot connect"
	                     : "cannot accept a connection")) != PS_OK)
		return rc;
	struct ibv_qp_init_attr qa = {
	    .send_cq = rt->cq,
	    .recv_cq = rt->cq,
	    .cap = {.max_send_wr = SEND_WR_MAX,
	            .max_recv_wr = RECV_POSTED,
	            .max_send_sge = 1,
	            .max_recv_sge = 1},
	    .qp_context = c,
	    .qp_type = IBV_QPT_RC,
	    .sq_sig_all = 1,
	};
	if (rt->cq_used + SEND_WR_MAX + RECV_POSTED > rt->cq_size) {
		PS_ERROR("rdma: too many connections for one completion "
		         "queue of %d entries",
		         rt->cq_size);
		return PS_ENOMEM;
	}
	if (rt->opts.rdma_gid_index >= 0) {
		c->qp = ibv_create_qp(rt->pd, &qa);
		if (!c->qp) {
			PS_ERROR("rdma: ibv_create_qp: %s", strerror(errno));
			return PS_EIO;
		}
		c->own_qp = true;
		c->has_qp = true;
		rt->cq_used += SEND_WR_MAX + RECV_POSTED;
		char what[ENDPOINT_MAX + 32];
		return psi_rdma_qp_step(
		    rt, c, IBV_QPS_INIT,
		    psi_rdma_conn_what(c, what, sizeof(what)));
	}
	if (rdma_create_qp(c->id, rt->pd, &qa) != 0) {
		PS_ERROR("rdma: rdma_create_qp: %s", strerror(errno));
		return PS_EIO;
	}
	c->qp = c->id->qp;
	uint8_t tmo = ACK_TIMEOUT;
	if (rdma_set_option(c->id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
	                    &tmo, sizeof(tmo)) != 0)
		PS_DEBUG("rdma: cannot set the ack timeout: %s",
		         strerror(errno));
	rt->cq_used += SEND_WR_MAX + RECV_POSTED;
	c->has_qp = true;
	return PS_OK;
}

int psi_rdma_post_recv(conn *c, slot *s)
{
	struct ibv_sge sge = {(uintptr_t)s->buf, BUF_SIZE, c->rmr->lkey};
	struct ibv_recv_wr wr = {.wr_id = (uintptr_t)s,
	                         .sg_list = &sge,
	                         .num_sge = 1},
	                   *bad;
	int err = ibv_post_recv(c->qp, &wr, &bad);
	if (!err)
		c->recv_out++;
	return err;
}

/* Allocates, registers and posts c's receive buffers. */
int psi_rdma_conn_post_recvs(rdma_transport *rt, conn *c)
{
	size_t len = (size_t)RECV_POSTED * BUF_SIZE;
	c->rbufs = malloc(len);
	if (!c->rbufs) {
		PS_ERROR("rdma: out of memory for receive buffers");
		return PS_ENOMEM;
	}
	c->rmr = ibv_reg_mr(rt->pd, c->rbufs, len, IBV_ACCESS_LOCAL_WRITE);
	if (!c->rmr) {
		PS_ERROR("rdma: registering receive buffers: %s",
		         strerror(errno));
		free(c->rbufs);
		c->rbufs = NULL;
		return PS_EIO;
	}
	for (int i = 0; i < RECV_POSTED; i++) {
		slot *s = &c->rslots[i];
		s->c = c;
		s->buf = c->rbufs + (size_t)i * BUF_SIZE;
		s->kind = SLOT_RECV;
		int err = psi_rdma_post_recv(c, s);
		if (err) {
			PS_ERROR("rdma: ibv_post_recv: %s", strerror(err));
			return PS_EIO;
		}
	}
	c->recvs_posted = true;
	return PS_OK;
}

conn *psi_rdma_conn_new(rdma_transport *rt, bool outbound)
{
	conn *c = calloc(1, sizeof(*c));
	if (!c) {
		PS_ERROR("rdma: out of memory for a connection");
		return NULL;
	}
	c->rt = rt;
	c->outbound = outbound;
	c->ident_owed = outbound && rt->has_token;
	c->peer = -1;
	c->state = C_RESOLVING;
	c->next = rt->conns;
	rt->conns = c;
	return c;
}

/* Destroys c (no work request of it may be outstanding, or the CQ is
 * going away too) and takes it out of rt->conns. The QP goes first: no
 * READ or SEND touches a buffer after it is released. */
void psi_rdma_conn_destroy(rdma_transport *rt, conn *c)
{
	for (conn **p = &rt->conns; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	psi_rdma_qp_release(rt, c);
	if (c->id)
		rdma_destroy_id(c->id);
	for (rmsg *m = rt->rq_head; m; m = m->next)
		if (m->from == c)
			m->from = NULL; /* recv may still take it */
	psi_rdma_drop_queue(c);
	psi_rdma_rmsg_free(c->partial);
	while (c->in_head) {
		rmsg *m = c->in_head;
		c->in_head = m->in_next;
		psi_rdma_rmsg_free(m);
	}
	free(c->fins);
	if (c->peer >= 0 && rt->peers[c->peer].c == c)
		rt->peers[c->peer].c = NULL; /* the handle stays: closed */
	if (c->rmr)
		ibv_dereg_mr(c->rmr);
	free(c->rbufs);
	free(c);
}

/* Moves a QP of our own to error (rdma_cm does that only for the QPs
 * it made): its work requests flush. */
void psi_rdma_qp_error(conn *c)
{
	if (c->own_qp)
		psi_rdma_qp_flush(c);
}

void psi_rdma_qp_flush(conn *c)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
	if (c->qp)
		ibv_modify_qp(c->qp, &a, IBV_QP_STATE);
}

/* Our half of the disconnect; the QP goes to error (flushes). */
void psi_rdma_conn_disconnect(conn *c)
{
	c->disc_sent = true;
	rdma_disconnect(c->id);
	psi_rdma_qp_error(c);
}

/* The connection is broken: later sends fail, queued messages drop. */
void psi_rdma_conn_kill(conn *c, const char *why)
{
	if (why)
		c->broken = true;
	if (c->state == C_DEAD || c->state == C_FAILED)
		return;
	if (why)
		PS_WARN("rdma: connection %s %s (node %" PRIx64 "): %s",
		        c->outbound ? "to" : "from",
		        c->outbound ? c->endpoint : "peer", c->peer_id, why);
	c->state = c->state == C_UP ? C_DEAD : C_FAILED;
	if (c->has_qp && !c->disc_sent)
		psi_rdma_conn_disconnect(c); /* the QP goes to error: flushes */
	psi_rdma_drop_queue(c); /* after: no READ of a payload handed back */
}
