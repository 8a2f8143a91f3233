/*
 * scheduler/link_probe.c - the link rate measured by timed PROBEs
 * (scheduler/link_probe.h says how).
 */
#include <stdio.h>
#include <stdlib.h>

#include "common/log.h"
#include "scheduler/link_probe.h"
#include "proto/wire.h"
#include "runtime/clock.h"
#include "runtime/node.h"
#include "runtime/signals.h"

static double now_us(void)
{
	return (double)ps_now_ns() * 1e-3;
}

typedef struct probe {
	ps_transport *t;
	uint64_t job_id, tid;
	ps_peer peer;
	int timeout_ms;
	uint32_t seq;
	uint64_t *dropped;
	char *why;
	size_t whylen;
} probe;

/* Waits for the PROBE_ACK of probe `seq`; drops everything else. */
static int await_ack(probe *p, double deadline_us)
{
	for (;;) {
		double left = deadline_us - now_us();
		ps_wire_header h;
		ps_msg *msg = NULL;
		char why[256];
		int rc, mine;

		if (ps_signal_pending()) {
			snprintf(p->why, p->whylen, "interrupted by signal %d",
				 ps_signal_pending());
			return PS_EINTR;
		}
		if (left <= 0) {
			snprintf(p->why, p->whylen,
				 "no answer to a probe within %d ms",
				 p->timeout_ms);
			return PS_ETIMEDOUT;
		}
		rc = ps_transport_recv(p->t, (int)(left / 1e3) + 1, &msg);
		if (rc == PS_ETIMEDOUT || rc == PS_EAGAIN)
			continue;
		if (rc != PS_OK) {
			snprintf(p->why, p->whylen, "receiving: %s",
				 ps_strerror(rc));
			return rc;
		}
		rc = ps_wire_header_decode(msg->hdr, msg->hdr_len, &h, why,
					   sizeof(why));
		mine = rc == PS_OK && h.type == PS_MSG_PROBE_ACK &&
		       msg->src == p->tid && h.job_id == p->job_id;
		if (mine && h.key == p->seq) {
			ps_msg_free(&msg);
			return PS_OK;
		}
		if (!mine) /* a late answer of ours is no news */
			psi_note_drop(++*p->dropped,
				      rc == PS_OK ? ps_msg_type_name(h.type)
						  : "message",
				      rc == PS_OK ? "not expected while the "
						    "scheduler measures the "
						    "link"
						  : why);
		ps_msg_free(&msg);
	}
}

/* One PROBE of `bytes` zeros; its round trip in *us. */
static int probe_once(probe *p, uint64_t bytes, double *us)
{
	ps_wire_header h = {.version = PS_WIRE_VERSION,
			    .type = PS_MSG_PROBE,
			    .job_id = p->job_id,
			    .sender = 0,
			    .key = ++p->seq,
			    .payload_len = bytes};
	uint8_t hdr[PS_WIRE_HEADER_MAX];
	size_t hlen;
	void *body = NULL;
	double t0;
	int rc;

	rc = ps_wire_header_encode(&h, hdr, sizeof(hdr), &hlen);
	if (rc == PS_OK && bytes > 0 && !(body = calloc(1, bytes)))
		rc = PS_ENOMEM;
	if (rc != PS_OK) {
		snprintf(p->why, p->whylen, "%s", ps_strerror(rc));
		return rc;
	}
	t0 = now_us();
	rc = ps_transport_send(p->t, p->peer, hdr, hlen, body, bytes,
			       body ? ps_wire_free : NULL, NULL);
	if (rc != PS_OK) {
		free(body);
		snprintf(p->why, p->whylen, "sending a probe: %s",
			 ps_strerror(rc));
		return rc;
	}
	rc = await_ack(p, t0 + p->timeout_ms * 1e3);
	*us = now_us() - t0;
	return rc;
}

/* The least round trip of n probes of `bytes`, the first given. */
static int least_of(probe *p, uint64_t bytes, int n, double *best)
{
	for (int i = 0; i < n; i++) {
		double us;
		int rc = probe_once(p, bytes, &us);
		if (rc != PS_OK)
			return rc;
		if (us < *best)
			*best = us;
	}
	return PS_OK;
}

int ps_link_probe_run(ps_transport *t, uint64_t job_id, ps_peer peer,
		      uint64_t tid, uint64_t max_bytes, int timeout_ms,
		      ps_link_probe *r, uint64_t *dropped, char *why,
		      size_t whylen)
{
	probe p = {.t = t,
		   .job_id = job_id,
		   .tid = tid,
		   .peer = peer,
		   .timeout_ms = timeout_ms,
		   .dropped = dropped,
		   .why = why,
		   .whylen = whylen};
	uint64_t bytes = PROBE_FIRST_BYTES;
	double rtt = 1e300, us = 1e300, moved;
	int rc;

	if (max_bytes < bytes)
		bytes = max_bytes;
	rc = least_of(&p, 0, 3, &rtt);
	for (;;) {
		if (rc != PS_OK)
			return rc;
		us = 1e300;
		rc = least_of(&p, bytes, 1, &us);
		if (rc != PS_OK)
			return rc;
		if (us >= PROBE_TARGET_US || 2 * bytes > max_bytes)
			break;
		bytes *= 2;
	}
	rc = least_of(&p, bytes, 2, &us);
	if (rc != PS_OK)
		return rc;
	/* the payload's share of the round trip; a link so fast that the
	 * empty round trip hides it counts the whole */
	moved = us - rtt > us * 0.05 ? us - rtt : us;
	r->gbps = (double)bytes * 8.0 / (moved * 1e3);
	r->bytes = bytes;
	r->rtt_us = rtt;
	r->us = us;
	r->sent = p.seq;
	return PS_OK;
}
