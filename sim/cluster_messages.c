/*
 * sim/cluster_messages.c - the messages of the simulated cluster and how
 * the links carry them: a free list of messages, the payload each
 * carries, and a sender's hand-over to its links (link.sharing). fifo:
 * the sender's uplink, then the receiver's downlink, reserved in turn
 * (sim/link.h); an acknowledgement is then no message but an event a
 * later. fair: every message, acknowledgements too, enters its stream
 * (below).
 */
#include <stdlib.h>

#include "common/mix64.h"
#include "scheduling/placement.h"
#include "sim/cluster_state.h"
#include "sim/fair.h"
#include "sim/link.h"

static uint32_t msg_new(sim *s)
{
	uint32_t i;

	if (s->free_msg != NOMSG) {
		i = s->free_msg;
		s->free_msg = s->msgs[i].next_free;
		return i;
	}
	if (s->nmsgs == s->capmsgs) {
		uint32_t cap = s->capmsgs ? 2 * s->capmsgs : 1024;
		msg *v = realloc(s->msgs, (size_t)cap * sizeof(*v));
		if (v)
			s->msgs = v;
		if (v && !s->fair) {
			double *u = realloc(s->up_end, (size_t)cap * sizeof(*u));
			if (u)
				s->up_end = u;
			else
				v = NULL;
		}
		if (!v) {
			psi_cluster_fail(s, PS_ENOMEM);
			return NOMSG;
		}
		s->capmsgs = cap;
	}
	return s->nmsgs++;
}

void psi_cluster_msg_free(sim *s, uint32_t i)
{
	s->msgs[i].next_free = s->free_msg;
	s->free_msg = i;
}

static int msg_up(const msg *m) /* worker -> server */
{
	return m->kind == MSG_PUSH || m->kind == MSG_PARAMS_ACK;
}

static uint32_t msg_src(const sim *s, const msg *m)
{
	return msg_up(m) ? m->worker : s->W + s->pl->parts[m->part].server;
}

static uint32_t msg_dst(const sim *s, const msg *m)
{
	return msg_up(m) ? s->W + s->pl->parts[m->part].server : m->worker;
}

/* ---- fair sharing (sim/fair.h) -------------------------------------------
 *
 * Every (sender, receiver) pair has one stream that carries its messages
 * whole and in order (one ZeroMQ DEALER connection, one TCP stream, per
 * peer); the streams share the links max-min fairly (sim/fair.c). A
 * message arrives a after its last byte went (the fixed cost as latency).
 * Acknowledgements are messages without payload in the stream of their
 * direction: a PUSH_ACK queues behind the parameters the server already
 * handed to that worker's connection, as in the real server. */

void psi_cluster_fair_schedule(void *ud, double t, uint32_t node, uint64_t arg)
{
	psi_cluster_schedule(ud, t, EV_NET, node, arg);
}

/* With link.latency_jitter, message m's latency is drawn within
 * a (1 +- jitter), and it arrives no earlier than the message before it
 * in its stream (a TCP stream delivers in order). */
void psi_cluster_fair_sent(void *ud, uint32_t m, double t)
{
	sim *s = ud;
	double at = t + s->lm.a_us;

	if (s->stream_last) {
		const msg *g = &s->msgs[m];
		size_t k = ((size_t)msg_up(g) * s->W + g->worker) * s->S +
			   s->pl->parts[g->part].server;
		/* uniform in [0, 1), splitmix64 from a fixed seed */
		double u = (double)(ps_splitmix64(&s->jitter_rng) >> 11) *
			   0x1.0p-53;
		at = t + s->lm.a_us * (1.0 + s->cfg->link.latency_jitter *
						     (2.0 * u - 1.0));
		if (at < s->stream_last[k])
			at = s->stream_last[k];
		s->stream_last[k] = at;
	}
	psi_cluster_schedule_arrival(s, at, m);
}

/* The payload message m carries: its piece of its partition, or none
 * (an acknowledgement). */
uint64_t psi_cluster_msg_bytes(const sim *s, const msg *m)
{
	uint64_t piece_bytes, off, numel;

	if (m->kind != MSG_PARAMS && m->kind != MSG_PUSH)
		return 0;
	piece_bytes = m->kind == MSG_PUSH ? s->push_piece : s->params_piece;
	if (piece_bytes == 0)
		return s->part_bytes[m->part];
	ps_piece_span(&s->pl->parts[m->part], piece_bytes, m->piece, &off,
		      &numel);
	return numel * PS_ELEM_SIZE;
}

uint64_t psi_cluster_fair_bytes(void *ud, uint32_t m)
{
	const sim *s = ud;

	return psi_cluster_msg_bytes(s, &s->msgs[m]);
}

uint32_t psi_cluster_fair_next(void *ud, uint32_t m)
{
	return ((sim *)ud)->msgs[m].next_free;
}

void psi_cluster_fair_set_next(void *ud, uint32_t m, uint32_t next)
{
	((sim *)ud)->msgs[m].next_free = next;
}

static void net_send(sim *s, uint32_t i, double t)
{
	const msg *m = &s->msgs[i];
	int rc = ps_fair_send(s->net, msg_up(m), m->worker,
			      s->pl->parts[m->part].server, i, t);

	if (rc != PS_OK)
		psi_cluster_fail(s, rc);
}

/* The message starts on its sender's uplink: it queues on the receiver's
 * downlink, and arrives once both carried it. */
void psi_cluster_up_start(sim *s, uint32_t i, double t)
{
	msg *m = &s->msgs[i];
	double end_d;

	ps_link_reserve(&s->down[msg_dst(s, m)], &s->lm, t,
			psi_cluster_msg_bytes(s, m), &end_d);
	psi_cluster_schedule(s, end_d > s->up_end[i] ? end_d : s->up_end[i],
			     EV_ARRIVE, 0, i);
}

/* Fair sharing: an acknowledgement (no payload) enters its stream. */
void psi_cluster_send_ack(sim *s, int kind, uint32_t part, uint32_t piece,
			  uint32_t wrank, double t)
{
	uint32_t i = msg_new(s);

	if (i == NOMSG)
		return;
	s->msgs[i] = (msg){.part = part, .worker = wrank, .piece = piece,
			   .kind = kind, .next_free = NOMSG};
	net_send(s, i, t);
}

/* An acknowledgement event's argument: the partition and its piece. */
uint64_t psi_cluster_ack_arg(uint32_t part, uint32_t piece)
{
	return (uint64_t)piece << 32 | part;
}

/* A sender hands a message (a piece of a partition) to the transport at
 * t. */
void psi_cluster_hand_over(sim *s, int push, uint32_t part, uint32_t piece,
			   uint32_t wrank, uint64_t iteration, double t)
{
	uint32_t i = msg_new(s);
	double start, end;
	msg *m;

	if (i == NOMSG)
		return;
	m = &s->msgs[i];
	*m = (msg){.part = part, .worker = wrank, .piece = piece,
		   .iteration = (uint32_t)iteration, .kind = (uint32_t)push,
		   .next_free = NOMSG};
	if (s->fair) {
		s->messages++;
		net_send(s, i, t);
		return;
	}
	start = ps_link_reserve(&s->up[msg_src(s, m)], &s->lm, t,
				psi_cluster_msg_bytes(s, m), &end);
	s->up_end[i] = end;
	s->messages++;
	if (start <= t)
		psi_cluster_up_start(s, i, t);
	else
		psi_cluster_schedule(s, start, EV_UP_START, 0, i);
}
