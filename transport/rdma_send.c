/*
 * transport/rdma_send.c - the verbs transport's sending side: queued
 * messages handed back (free_fn once), the send buffers, the READs of
 * the RTS frames received (docs/rdma.md, "Zero copy") and psi_rdma_pump, which
 * posts what a connection's credits and the free send buffers allow:
 * its IDENT, FIN frames, DATA and RTS frames, credit frames
 * ("Framing", "Flow control").
 *
 * Threads: everything under the transport's one mutex, as rdma.c says
 * (docs/rdma.md, "Threads").
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "transport/rdma_internal.h"

/* Hands one sent message's payload back (free_fn once). */
void psi_rdma_sitem_done(sitem *it)
{
	if (it->own_mr)
		ibv_dereg_mr(it->own_mr); /* before the caller reuses it */
	if (it->free_fn && it->payload)
		it->free_fn(it->payload, it->hint);
	free(it->hdr);
	free(it);
}

/* Drops c's queued messages and those waiting for their READ (the QP is
 * in error or gone: the peer reads them no more); each payload is handed
 * back once. */
void psi_rdma_drop_queue(conn *c)
{
	for (int q = 0; q < 2; q++) {
		sitem *it = q ? c->zc_head : c->sq_head;
		while (it) {
			sitem *next = it->next;
			psi_rdma_sitem_done(it);
			it = next;
		}
	}
	c->sq_head = c->sq_tail = NULL;
	c->sq_len = 0;
	c->zc_head = c->zc_tail = NULL;
}

static int post_send(conn *c, slot *s, uint32_t len)
{
	rdma_transport *rt = c->rt;
	struct ibv_sge sge = {(uintptr_t)s->buf, len, rt->smr->lkey};
	struct ibv_send_wr wr = {.wr_id = (uintptr_t)s,
	                         .sg_list = &sge,
	                         .num_sge = 1,
	                         .opcode = IBV_WR_SEND,
	                         .send_flags = IBV_SEND_SIGNALED},
	                   *bad;
	s->c = c;
	int err = ibv_post_send(c->qp, &wr, &bad);
	if (err) {
		PS_ERROR("rdma: ibv_post_send: %s", strerror(err));
		return PS_EIO;
	}
	c->send_posted++;
	return PS_OK;
}

static slot *slot_get(rdma_transport *rt)
{
	slot *s = rt->sfree;
	if (s)
		rt->sfree = s->next;
	return s;
}

void psi_rdma_slot_put(rdma_transport *rt, slot *s)
{
	s->c = NULL;
	s->next = rt->sfree;
	rt->sfree = s;
}

/* Posts the READs of the RTS frames received on c, in order, while
 * the send queue has room (READ_SQ_RESERVE stays for SENDs). */
static void post_reads(conn *c)
{
	while (c->rd_head && c->send_posted + READ_SQ_RESERVE < SEND_WR_MAX) {
		rmsg *m = c->rd_head;
		uint64_t left = m->msg.payload_len - m->rd_off;
		uint32_t n = left < READ_CHUNK ? (uint32_t)left : READ_CHUNK;
		struct ibv_sge sge = {
		    (uintptr_t)m->msg.payload + m->rd_off, n, m->lkey};
		struct ibv_send_wr wr = {.wr_id = (uintptr_t)&m->rd,
		                         .sg_list = &sge,
		                         .num_sge = 1,
		                         .opcode = IBV_WR_RDMA_READ,
		                         .send_flags = IBV_SEND_SIGNALED},
		                   *bad;
		wr.wr.rdma.remote_addr = m->raddr + m->rd_off;
		wr.wr.rdma.rkey = m->rkey;
		int err = ibv_post_send(c->qp, &wr, &bad);
		if (err) {
			PS_ERROR("rdma: ibv_post_send (READ): %s",
			         strerror(err));
			psi_rdma_conn_kill(c, "cannot post a READ");
			return;
		}
		c->send_posted++;
		m->rd_wrs++;
		m->rd_off += n;
		if (m->rd_off == m->msg.payload_len) {
			c->rd_head = m->rd_next;
			if (!c->rd_head)
				c->rd_tail = NULL;
		}
	}
}

/* Posts what c's credits and the free send buffers allow: data SENDs
 * (FIN frames first, then message frames: a payload >= ZC_MIN as one
 * RTS frame), then a credit-only SEND when CREDIT_BATCH are owed. */
void psi_rdma_pump(rdma_transport *rt, conn *c)
{
	if (c->state != C_UP || !c->recvs_posted)
		return;
	post_reads(c);
	if (c->state != C_UP)
		return;
	while ((c->sq_head || c->nfins) && c->credits > 0 &&
	       c->send_posted < SEND_WR_MAX) {
		slot *s = slot_get(rt);
		if (!s)
			return;
		uint32_t used = 0, nf = 0;
		bool first = true;
		if (c->ident_owed) {
			/* before anything else on the connection */
			frame f = {.type = FRAME_IDENT,
			           .credits = c->owed,
			           .len = PS_RDMA_TOKEN_LEN};
			memcpy(s->buf, &f, sizeof(f));
			memcpy(s->buf + sizeof(f), rt->token,
			       PS_RDMA_TOKEN_LEN);
			used = (uint32_t)sizeof(f) + PS_RDMA_TOKEN_LEN;
			c->owed = 0;
			c->ident_owed = false;
			first = false;
		}
		while (nf < c->nfins && BUF_SIZE - used >= sizeof(frame)) {
			frame f = {.type = FRAME_FIN,
			           .credits = first ? c->owed : 0,
			           .offset = c->fins[nf++]};
			memcpy(s->buf + used, &f, sizeof(f));
			used += (uint32_t)sizeof(f);
			if (first)
				c->owed = 0;
			first = false;
		}
		if (nf) {
			memmove(c->fins, c->fins + nf,
			        (c->nfins - nf) * sizeof(*c->fins));
			c->nfins -= nf;
		}
		while (c->sq_head && BUF_SIZE - used > sizeof(frame)) {
			sitem *it = c->sq_head;
			if (it->zc) {
				uint32_t need = (uint32_t)(sizeof(frame) +
				                           sizeof(rts_desc)) +
				                it->hdr_len;
				if (BUF_SIZE - used < need)
					break; /* the next buffer */
				frame f = {.type = FRAME_RTS,
				           .credits = first ? c->owed : 0,
				           .len = (uint32_t)sizeof(rts_desc) +
				                  it->hdr_len,
				           .hdr_len = it->hdr_len,
				           .payload_len = it->payload_len};
				rts_desc d = {.addr = (uintptr_t)it->payload,
				              .rkey = it->rkey,
				              .cookie = it->cookie};
				unsigned char *p = s->buf + used;
				memcpy(p, &f, sizeof(f));
				memcpy(p + sizeof(f), &d, sizeof(d));
				if (it->hdr_len)
					memcpy(p + sizeof(f) + sizeof(d),
					       it->hdr, it->hdr_len);
				used += need;
				if (first)
					c->owed = 0;
				first = false;
				c->sq_head = it->next;
				if (!c->sq_head)
					c->sq_tail = NULL;
				c->sq_len--;
				/* the payload is the peer's to read now */
				it->next = NULL;
				if (c->zc_tail)
					c->zc_tail->next = it;
				else
					c->zc_head = it;
				c->zc_tail = it;
				continue;
			}
			uint64_t total = it->hdr_len + it->payload_len;
			uint64_t left = total - it->off;
			uint32_t room =
			    BUF_SIZE - used - (uint32_t)sizeof(frame);
			uint32_t n = left < room ? (uint32_t)left : room;
			/* a small message is not split at a buffer's end */
			if (!first && n < left && n < 1024)
				break;
			frame f = {.type = FRAME_DATA,
			           .credits = first ? c->owed : 0,
			           .len = n,
			           .hdr_len = it->hdr_len,
			           .payload_len = it->payload_len,
			           .offset = it->off};
			unsigned char *p = s->buf + used;
			memcpy(p, &f, sizeof(f));
			p += sizeof(f);
			uint64_t off = it->off;
			uint32_t k = n;
			if (off < it->hdr_len) {
				uint32_t h = (uint32_t)(it->hdr_len - off);
				if (h > k)
					h = k;
				memcpy(p, (unsigned char *)it->hdr + off, h);
				p += h;
				off += h;
				k -= h;
			}
			if (k) {
				memcpy(p,
				       (unsigned char *)it->payload +
				           (off - it->hdr_len),
				       k);
			}
			it->off += n;
			used += (uint32_t)sizeof(f) + n;
			if (first)
				c->owed = 0;
			first = false;
			if (it->off == total) {
				c->sq_head = it->next;
				if (!c->sq_head)
					c->sq_tail = NULL;
				c->sq_len--;
				psi_rdma_sitem_done(it);
			} else {
				break; /* the buffer is full */
			}
		}
		if (post_send(c, s, used) != PS_OK) {
			psi_rdma_slot_put(rt, s);
			psi_rdma_conn_kill(c, "cannot post a send");
			return;
		}
		c->credits--;
	}
	if (c->owed >= CREDIT_BATCH && c->send_posted < SEND_WR_MAX) {
		slot *s = slot_get(rt);
		if (!s)
			return;
		frame f = {.type = FRAME_CREDIT, .credits = c->owed};
		TRACE("credit frame %u\n", c->owed);
		memcpy(s->buf, &f, sizeof(f));
		if (post_send(c, s, sizeof(f)) != PS_OK) {
			psi_rdma_slot_put(rt, s);
			psi_rdma_conn_kill(c, "cannot post a send");
			return;
		}
		c->owed = 0;
	}
}

void psi_rdma_pump_all(rdma_transport *rt)
{
	for (conn *c = rt->conns; c; c = c->next)
		psi_rdma_pump(rt, c);
}
