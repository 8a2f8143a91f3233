/*
 * transport/rdma_recv.c - the verbs transport's receiving side: the
 * frames of a receive buffer (DATA, RTS, FIN, IDENT, credits;
 * docs/rdma.md, "Framing"), messages reassembled or READ into a lent
 * buffer ("Zero copy") and handed to recv in each connection's order,
 * the per-connection budget that holds receive buffers unread ("Flow
 * control"), and the completions (on_wc, psi_rdma_drain_cq).
 *
 * Threads: everything under the transport's one mutex, as rdma.c says
 * (docs/rdma.md, "Threads"); a received message is freed on any thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "transport/keys.h"
#include "transport/rdma_internal.h"

void psi_rdma_rmsg_free(rmsg *m)
{
	if (!m)
		return;
	if (m->node) /* never taken by recv (its connection ended) */
		m->node->rx_total -= m->charged;
	free(m->hdr);
	if (m->rd_mr)
		ibv_dereg_mr(m->rd_mr);
	if (m->lb)
		psi_rdma_pool_put(m->lb);
	else
		free(m->msg.payload);
	free(m);
}

static void rmsg_release(ps_msg *msg)
{
	psi_rdma_rmsg_free(msg->priv);
}

static void deliver(rdma_transport *rt, rmsg *m)
{
	m->next = NULL;
	if (rt->rq_tail)
		rt->rq_tail->next = m;
	else
		rt->rq_head = m;
	rt->rq_tail = m;
	psi_rdma_efd_signal(rt->ready_fd);
}

/* A message of frame f could not be allocated: m (partial) goes. */
static int msg_nomem(const frame *f, rmsg *m)
{
	PS_ERROR("rdma: out of memory for a message of %" PRIu64 " bytes",
	         f->hdr_len + f->payload_len);
	psi_rdma_rmsg_free(m);
	return PS_ENOMEM;
}

/* m came on c: it goes to recv in c's order, after every earlier message
 * of c (one still being READ holds the later ones back). */
static void inbox_add(rdma_transport *rt, conn *c, rmsg *m)
{
	if (m->ready && !c->in_head) {
		deliver(rt, m);
		return;
	}
	m->in_next = NULL;
	if (c->in_tail)
		c->in_tail->in_next = m;
	else
		c->in_head = m;
	c->in_tail = m;
}

static void inbox_flush(rdma_transport *rt, conn *c)
{
	while (c->in_head && c->in_head->ready) {
		rmsg *m = c->in_head;
		c->in_head = m->in_next;
		if (!c->in_head)
			c->in_tail = NULL;
		deliver(rt, m);
	}
}

static int queue_fin(conn *c, uint64_t cookie)
{
	if (c->nfins == c->cap_fins) {
		uint32_t cap = c->cap_fins ? c->cap_fins * 2 : 16;
		uint64_t *f = realloc(c->fins, cap * sizeof(*f));
		if (!f)
			return PS_ENOMEM;
		c->fins = f;
		c->cap_fins = cap;
	}
	c->fins[c->nfins++] = cookie;
	return PS_OK;
}

/* The largest payload a peer may announce: opts.max_message (the job's
 * transport.max_message) within the frame format's own bound. A peer that
 * announces more loses its connection before anything is allocated. */
uint64_t psi_rdma_max_payload(const rdma_transport *rt)
{
	uint64_t m = rt->opts.max_message;
	return m && m < MAX_PAYLOAD ? m : MAX_PAYLOAD;
}

/* What one connection's messages may hold of this node before recv takes
 * them (transport.h, rdma_peer_recv_bytes). */
static uint64_t recv_budget(const rdma_transport *rt)
{
	uint64_t b = rt->opts.rdma_peer_recv_bytes;
	return b ? b : 2 * psi_rdma_max_payload(rt);
}

/* What all connections' messages together may hold of this node before
 * recv takes them (transport.h, rdma_node_recv_bytes). */
static uint64_t node_budget(const rdma_transport *rt)
{
	uint64_t b = rt->opts.rdma_node_recv_bytes;
	return b ? b : 8 * recv_budget(rt);
}

/* Whether `len` more bytes pass a budget of which `held` is taken: a
 * first message always does, whatever its size. */
static bool fits(uint64_t held, uint64_t len, uint64_t budget)
{
	return !held || (len <= budget && held <= budget - len);
}

/* f starts a message (an RTS, or a DATA frame with none partly here)
 * that c's budget, or the node's, cannot take now: c's frames wait from
 * f on. A message is always taken when c holds none and the node holds
 * none, so one of any size passes. */
static bool over_budget(const rdma_transport *rt, const conn *c,
                        const frame *f)
{
	bool starts = f->type == FRAME_RTS ||
	              (f->type == FRAME_DATA && !c->partial);
	uint64_t len = (uint64_t)f->hdr_len + f->payload_len;
	return starts && (!fits(c->rx_bytes, len, recv_budget(rt)) ||
	                  !fits(rt->rx_total, len, node_budget(rt)));
}

/* m (of f) is c's until recv takes it. */
static void charge(conn *c, rmsg *m, const frame *f)
{
	m->from = c;
	m->node = c->rt;
	m->charged = (uint64_t)f->hdr_len + f->payload_len;
	c->rx_bytes += m->charged;
	c->rt->rx_total += m->charged;
}

/* An RTS frame: the message's header is here, its payload is READ from
 * the sender into a lent pool buffer (or a heap buffer registered for
 * this READ when LEND_MAX are lent or it is larger than the pool's). */
static int on_rts(rdma_transport *rt, conn *c, const frame *f,
                  const unsigned char *p)
{
	rts_desc d;

	if (c->partial || f->offset != 0 || f->hdr_len > ZC_HDR_MAX ||
	    f->len != sizeof(d) + f->hdr_len || f->payload_len == 0 ||
	    f->payload_len > psi_rdma_max_payload(rt)) {
		PS_WARN("rdma: bad RTS frame (header %u, payload %" PRIu64
		        " bytes)",
		        f->hdr_len, f->payload_len);
		return PS_EPROTO;
	}
	memcpy(&d, p, sizeof(d));
	rmsg *m = calloc(1, sizeof(*m));
	if (!m || (f->hdr_len && !(m->hdr = malloc(f->hdr_len))))
		goto nomem;
	if (f->hdr_len)
		memcpy(m->hdr, p + sizeof(d), f->hdr_len);
	size_t len = (size_t)f->payload_len;
	m->lb = psi_rdma_pool_get(rt->pool, len);
	if (m->lb) {
		m->msg.payload = m->lb->mem;
		m->lkey = m->lb->mr->lkey;
	} else {
		m->msg.payload = aligned_alloc(64, (len + 63) & ~(size_t)63);
		if (!m->msg.payload)
			goto nomem;
		m->rd_mr = ibv_reg_mr(rt->pd, m->msg.payload, len,
		                      IBV_ACCESS_LOCAL_WRITE);
		if (!m->rd_mr) {
			PS_ERROR("rdma: cannot register %zu bytes to READ a "
			         "message into: %s",
			         len, strerror(errno));
			psi_rdma_rmsg_free(m);
			return PS_EIO;
		}
		m->lkey = m->rd_mr->lkey;
	}
	m->msg.src = c->peer_id;
	m->msg.kid = c->kid;
	m->msg.hdr = m->hdr;
	m->msg.hdr_len = f->hdr_len;
	m->msg.payload_len = len;
	m->msg.release = rmsg_release;
	m->msg.priv = m;
	m->raddr = d.addr;
	m->rkey = d.rkey;
	m->cookie = d.cookie;
	m->rd.c = c;
	m->rd.kind = SLOT_READ;
	m->rd.m = m;
	charge(c, m, f);
	inbox_add(rt, c, m);
	if (c->rd_tail)
		c->rd_tail->rd_next = m;
	else
		c->rd_head = m;
	c->rd_tail = m;
	return PS_OK;

nomem:
	return msg_nomem(f, m);
}

/* The last READ of m completed: m is ready, its sender gets the FIN. */
static void read_done(rdma_transport *rt, conn *c, rmsg *m)
{
	if (m->rd_mr) {
		ibv_dereg_mr(m->rd_mr);
		m->rd_mr = NULL;
	}
	m->ready = true;
	if (queue_fin(c, m->cookie) != PS_OK) {
		psi_rdma_conn_kill(c, "out of memory for a FIN");
		return;
	}
	inbox_flush(rt, c);
}

/* A FIN frame: the peer has read the payload of the RTS with cookie. */
static int on_fin(conn *c, uint64_t cookie)
{
	sitem *prev = NULL;
	for (sitem *it = c->zc_head; it; prev = it, it = it->next) {
		if (it->cookie != cookie)
			continue;
		if (prev)
			prev->next = it->next;
		else
			c->zc_head = it->next;
		if (c->zc_tail == it)
			c->zc_tail = prev;
		psi_rdma_sitem_done(it);
		return PS_OK;
	}
	PS_WARN("rdma: FIN for an unknown message (cookie %" PRIu64 ")",
	        cookie);
	return PS_EPROTO;
}

/* One data frame of len bytes at p. PS_OK, or PS_EPROTO (logged). */
static int on_data(rdma_transport *rt, conn *c, const frame *f,
                   const unsigned char *p)
{
	rmsg *m = c->partial;
	if (!m) {
		if (f->offset != 0 || f->hdr_len > MAX_HDR ||
		    f->payload_len > psi_rdma_max_payload(rt)) {
			PS_WARN("rdma: bad first frame (offset %" PRIu64
			        ", header %u, payload %" PRIu64 " bytes)",
			        f->offset, f->hdr_len, f->payload_len);
			return PS_EPROTO;
		}
		m = calloc(1, sizeof(*m));
		if (!m)
			goto nomem;
		m->total = f->hdr_len + f->payload_len;
		if (f->hdr_len && !(m->hdr = malloc(f->hdr_len)))
			goto nomem;
		if (f->payload_len &&
		    !(m->msg.payload = malloc((size_t)f->payload_len)))
			goto nomem;
		m->msg.src = c->peer_id;
		m->msg.kid = c->kid;
		m->msg.hdr = m->hdr;
		m->msg.hdr_len = f->hdr_len;
		m->msg.payload_len = (size_t)f->payload_len;
		m->msg.release = rmsg_release;
		m->msg.priv = m;
		charge(c, m, f);
		c->partial = m;
	} else if (f->offset != m->got || f->hdr_len != m->msg.hdr_len ||
	           f->payload_len != m->msg.payload_len) {
		PS_WARN("rdma: frame out of sequence (offset %" PRIu64
		        ", want %" PRIu64 ")",
		        f->offset, m->got);
		return PS_EPROTO;
	}
	if (f->len > m->total - m->got) {
		PS_WARN("rdma: frame past the end of its message");
		return PS_EPROTO;
	}
	uint64_t off = m->got;
	uint32_t k = f->len;
	if (off < f->hdr_len) {
		uint32_t h = (uint32_t)(f->hdr_len - off);
		if (h > k)
			h = k;
		memcpy(m->hdr + off, p, h);
		p += h;
		off += h;
		k -= h;
	}
	if (k)
		memcpy((unsigned char *)m->msg.payload + (off - f->hdr_len), p,
		       k);
	m->got += f->len;
	if (m->got == m->total) {
		c->partial = NULL;
		m->ready = true;
		inbox_add(rt, c, m);
	}
	return PS_OK;

nomem:
	return msg_nomem(f, m);
}

/* Reposts receive buffer s of c; data: one of the peer's credits came
 * in it (owed back). */
static void repost(conn *c, slot *s, bool data)
{
	if (c->state != C_UP && c->state != C_RESOLVING)
		return; /* the QP is in error: no repost */
	int err = psi_rdma_post_recv(c, s);
	if (err) {
		PS_ERROR("rdma: ibv_post_recv: %s", strerror(err));
		psi_rdma_conn_kill(c, "cannot repost a receive");
		return;
	}
	if (data)
		c->owed++;
}

/* The credits frame f returns to c; false when the peer returned more
 * than it was given (c is killed). */
static bool take_credits(conn *c, const frame *f)
{
	c->credits += f->credits;
	if (c->credits <= RECV_DEPTH)
		return true;
	psi_rdma_conn_kill(c, "peer returned too many credits");
	return false;
}

enum parse_end { PARSED, PARSE_HELD, PARSE_KILLED };

/* Parses the frames of receive buffer s (len bytes) from *pos. held: the
 * buffer waited (hold_slot), its credit and FIN frames already applied.
 * PARSE_HELD: a message over c's budget at *pos (its frame not
 * applied). *data: a frame that took one of the peer's credits. */
static enum parse_end parse_frames(rdma_transport *rt, conn *c, slot *s,
                                   uint32_t len, uint32_t *pos, bool held,
                                   bool *data)
{
	while (*pos < len) {
		frame f;
		uint32_t at = *pos;
		int fr = ps_rdma_frame_next(s->buf, len, pos, &f);
		if (fr == PS_RDMA_FRAME_TRUNCATED) {
			psi_rdma_conn_kill(c, "truncated frame");
			return PARSE_KILLED;
		}
		if (fr != PS_RDMA_FRAME_OK) {
			PS_WARN("rdma: malformed frame: type %u, %u bytes of "
			        "%u left, %u credits",
			        f.type, f.len, len - *pos, f.credits);
			psi_rdma_conn_kill(c, "malformed frame");
			return PARSE_KILLED;
		}
		if (over_budget(rt, c, &f)) {
			*pos = at;
			return PARSE_HELD;
		}
		if (!held && !take_credits(c, &f))
			return PARSE_KILLED;
		if (f.type == FRAME_DATA || f.type == FRAME_RTS)
			c->had_data = true;
		if (f.type == FRAME_DATA) {
			*data = true;
			if (on_data(rt, c, &f, s->buf + *pos) != PS_OK) {
				psi_rdma_conn_kill(c, "bad message data");
				return PARSE_KILLED;
			}
		} else if (f.type == FRAME_RTS) {
			*data = true;
			if (on_rts(rt, c, &f, s->buf + *pos) != PS_OK) {
				psi_rdma_conn_kill(c, "bad or unreadable RTS");
				return PARSE_KILLED;
			}
		} else if (f.type == FRAME_FIN) {
			*data = true;
			if (!held && on_fin(c, f.offset) != PS_OK) {
				psi_rdma_conn_kill(c, "bad FIN");
				return PARSE_KILLED;
			}
		} else if (f.type == FRAME_IDENT) {
			*data = true;
			if (c->outbound || c->kid || c->had_data) {
				psi_rdma_conn_kill(c,
				                   "an IDENT not first on its "
				                   "connection");
				return PARSE_KILLED;
			}
			c->kid = rt->has_secret
			             ? ps_token_kid_bytes(s->buf + *pos)
			             : 0;
		}
		*pos += f.len;
	}
	return PARSED;
}

/* Receive buffer s of c waits, from pos, behind c's budget. Its credit
 * and FIN frames are applied now (they concern this node's own sends,
 * which must not wait for its receives), its messages later in order
 * (psi_rdma_resume_held). A buffer of credits and FINs alone is reposted at
 * once, so the peer's credit returns never find no buffer posted. */
static void hold_slot(conn *c, slot *s, uint32_t len, uint32_t pos)
{
	bool data = false, messages = false;
	for (uint32_t p = pos; p < len;) {
		frame f;
		int fr = ps_rdma_frame_next(s->buf, len, &p, &f);
		if (fr != PS_RDMA_FRAME_OK) {
			psi_rdma_conn_kill(c, fr == PS_RDMA_FRAME_TRUNCATED
			                          ? "truncated frame"
			                          : "malformed frame");
			return;
		}
		if (!take_credits(c, &f))
			return;
		if (f.type == FRAME_FIN) {
			data = true;
			if (on_fin(c, f.offset) != PS_OK) {
				psi_rdma_conn_kill(c, "bad FIN");
				return;
			}
		} else if (f.type != FRAME_CREDIT) {
			messages = true;
		}
		p += f.len;
	}
	if (!messages) {
		repost(c, s, data);
		return;
	}
	struct held *h = &c->held[(c->held_head + c->nheld) % RECV_POSTED];
	h->s = s;
	h->len = len;
	h->pos = pos;
	c->nheld++;
}

/* c's held receive buffers, in order, as far as its budget now takes
 * them (recv took some of its messages). */
void psi_rdma_resume_held(rdma_transport *rt, conn *c)
{
	if (c->broken || c->state == C_FAILED || c->state == C_DEAD) {
		c->nheld = 0;
		return;
	}
	while (c->nheld) {
		struct held *h = &c->held[c->held_head];
		bool data = true; /* a held buffer carries a message */
		enum parse_end e =
		    parse_frames(rt, c, h->s, h->len, &h->pos, true, &data);
		if (e == PARSE_KILLED) {
			c->nheld = 0;
			return;
		}
		if (e == PARSE_HELD)
			return;
		slot *s = h->s;
		c->held_head = (c->held_head + 1) % RECV_POSTED;
		c->nheld--;
		repost(c, s, true);
	}
}

/* A receive completed: parse its frames, repost the buffer (or hold it
 * while c is over its budget). */
static void on_recv(rdma_transport *rt, conn *c, slot *s, uint32_t len)
{
	uint32_t pos = 0;
	bool data = false;

	/* A disconnected connection's last messages still count: their
	 * completions may be polled after the DISCONNECTED event. */
	if (c->broken || c->state == C_FAILED)
		return;
	if (c->nheld) {
		hold_slot(c, s, len, 0); /* behind the held ones */
		return;
	}
	switch (parse_frames(rt, c, s, len, &pos, false, &data)) {
	case PARSE_KILLED:
		return;
	case PARSE_HELD:
		hold_slot(c, s, len, pos);
		return;
	case PARSED:
		repost(c, s, data);
		return;
	}
}

static void on_wc(rdma_transport *rt, const struct ibv_wc *wc)
{
	slot *s = (slot *)(uintptr_t)wc->wr_id;
	conn *c = s->c;
	static const char *const kinds[] = {"send", "receive", "READ"};

	TRACE("wc %s status %d len %u conn %p out %d\n", kinds[s->kind],
	      wc->status, wc->byte_len, (void *)c, c ? c->outbound : -1);
	switch (s->kind) {
	case SLOT_SEND:
		psi_rdma_slot_put(rt, s);
		if (c)
			c->send_posted--;
		break;
	case SLOT_READ:
		c->send_posted--;
		s->m->rd_wrs--;
		break;
	default:
		c->recv_out--;
		break;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		if (c && wc->status != IBV_WC_WR_FLUSH_ERR) {
			char why[96];
			snprintf(why, sizeof(why), "%s completion: %s",
			         kinds[s->kind], ibv_wc_status_str(wc->status));
			psi_rdma_conn_kill(c, why);
		} else if (c) {
			psi_rdma_conn_kill(c, NULL);
		}
		return;
	}
	if (s->kind == SLOT_RECV && c)
		on_recv(rt, c, s, wc->byte_len);
	else if (s->kind == SLOT_READ && !s->m->rd_wrs &&
	         s->m->rd_off == s->m->msg.payload_len && !c->broken)
		read_done(rt, c, s->m);
}

/* Drains the CQ (the event was got and acked, or none came); re-arms. */
void psi_rdma_drain_cq(rdma_transport *rt)
{
	struct ibv_wc wc[32];
	void *ev_ctx;
	struct ibv_cq *ev_cq;

	if (!rt->cq)
		return;
	while (ibv_get_cq_event(rt->cch, &ev_cq, &ev_ctx) == 0)
		ibv_ack_cq_events(ev_cq, 1);
	for (int armed = 0;;) {
		int n = ibv_poll_cq(rt->cq, 32, wc);
		if (n < 0) {
			PS_ERROR("rdma: ibv_poll_cq failed");
			return;
		}
		for (int i = 0; i < n; i++)
			on_wc(rt, &wc[i]);
		if (n > 0)
			continue;
		if (armed)
			break;
		ibv_req_notify_cq(rt->cq, 0);
		armed = 1; /* poll once more: a completion may have come
		              before the re-arm */
	}
}
