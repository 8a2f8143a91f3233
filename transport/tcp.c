/*
 * transport/tcp.c - the ZeroMQ (TCP) transport backend.
 *
 * DESIGN. One ZeroMQ context per transport. A node that listens owns one
 * ROUTER socket bound to tcp://host:port; every message it receives starts
 * with the sender's routing id. Each peer it sends to gets one DEALER socket
 * per lane (opts.connections_per_peer, default 1), each its own TCP
 * connection; lane 0's routing id is the 8-byte opts.id (little-endian),
 * lane l > 0's the same followed by the byte l, so the receiving ROUTER's
 * identity frame is the sender's id (msg->src) whichever lane it came by.
 * On the wire a message is, as the ROUTER sees it:
 *
 *     [identity: 8 or 9 bytes] [header] [payload]   (payload frame optional)
 *
 * Anything else (other identity sizes, more frames) is dropped with a
 * warning; a malformed sender never crashes or confuses a receiver.
 *
 * Lanes. A peer connected with connect_start() gets opts.connections_per_peer
 * lanes (a job's workers and servers, whose partitions spread over them);
 * one connected with connect() gets one (the scheduler and the tuner,
 * whose messages are all of one flow). send_flow() sends on lane
 * flow % lanes: one flow's messages keep
 * their order (one connection), different flows' may overtake each other.
 * ZeroMQ gives each connection to one of its I/O threads (the least
 * loaded), and that thread alone frames it and, under curve, ciphers
 * every frame of it; so with one connection per peer pair CURVE's cipher
 * runs on one core per direction, and with L lanes on up to L (the
 * context gets at least L I/O threads).
 *
 * DEALER options: ZMQ_IMMEDIATE=1 (never queue for a peer that is not, or no
 * longer, connected: such a send blocks for send_timeout_ms and fails with
 * PS_ETIMEDOUT), ZMQ_SNDHWM/RCVHWM=0 (unlimited: a burst of many partitions
 * never blocks on a high-water mark), ZMQ_SNDTIMEO=send_timeout_ms,
 * ZMQ_LINGER set when closing. The ROUTER refuses a connection whose
 * routing id is in use by another (no ZMQ_ROUTER_HANDOVER: whoever
 * chooses a member's id cannot replace the member's connection), and
 * PINGs every connection each ZMTP_HEARTBEAT_IVL_MS, closing one silent
 * for ZMTP_HEARTBEAT_TIMEOUT_MS (PONGs come from the peer's I/O thread,
 * however busy its application): a peer that lost its connection and
 * reconnects with the same id is taken once the old one is closed. Both set
 * ZMQ_MAXMSGSIZE from opts.max_message (a peer announcing a larger frame
 * is disconnected before ZeroMQ allocates it). The ROUTER's receive
 * high-water mark is finite (RCVHWM_PER_PEER messages per connection):
 * a full inbound pipe stops ZeroMQ reading that peer's socket, so a peer
 * that floods is held back by TCP rather than queued without bound, while
 * the job's own traffic only waits (nothing inbound is dropped). The
 * DEALERs' send HWM stays unlimited: those are this node's own messages,
 * bounded by the credit window (scheduling.credit_size) or by one
 * iteration's partitions.
 *
 * connect_start() creates the peer's DEALERs and their zmq_connect
 * (ZeroMQ connects in its I/O threads) and returns; connect_wait() watches
 * each DEALER with zmq_socket_monitor over an inproc PAIR socket for as
 * long as its caller allows: HANDSHAKE_SUCCEEDED on every lane is
 * success; when the attempt's deadline (connect_timeout_ms after its
 * start) passes it fails with
 * PS_ECONNREFUSED if only refused attempts (CONNECT_RETRIED) were seen,
 * PS_EPROTO if the peer failed the handshake, PS_ETIMEDOUT otherwise. What
 * it saw is kept with the peer between calls. connect() is the two, waiting
 * until the attempt ends.
 *
 * Payloads. send() passes the payload to zmq_msg_init_data() (no copy)
 * through a small adapter that calls the user's free_fn(payload, hint)
 * exactly once, from a ZeroMQ I/O thread, when ZeroMQ is done with it. If a
 * send fails, the adapter is marked cancelled before the message is closed,
 * so free_fn is not called and the caller still owns payload. payload_len 0
 * means "no payload": no payload frame is sent; if payload is non-NULL and
 * free_fn is set, free_fn is called once, on the calling thread, after the
 * header was sent (payload NULL: free_fn is never called).
 *
 * Sealed (security.mode = sealed, transport/seal.h). Each lane has its
 * own connection id, key and counter; send() seals header and payload
 * into frames of ZeroMQ's own (so the caller's payload is done with, and
 * freed, once they are queued), recv() opens them in place before the
 * message is handed out, and drops (logged, counted) what does not open.
 * A payload of several 256 KiB chunks is sealed and opened on helper
 * threads beside the owner (transport/seal_pool.h).
 *
 * recv() keeps the received zmq_msg_t frames inside the ps_msg (priv), so
 * header and payload are not copied; ps_msg_free() closes them. Payloads are
 * handed out 8-byte aligned (a small payload that ZeroMQ placed unaligned
 * in its receive buffer is copied), so arrays of floats/doubles can be read
 * in place.
 *
 * Dead peers. ZeroMQ notices a dead TCP connection asynchronously: sends made
 * before that succeed and the messages are dropped (free_fn still runs once);
 * after it, with ZMQ_IMMEDIATE, sends fail with PS_ETIMEDOUT after
 * send_timeout_ms. The DEALER keeps reconnecting in the background.
 *
 * Options: send_timeout_ms < 0 waits forever, 0 never waits;
 * connect_timeout_ms <= 0 means 10 s; io_threads <= 0 means 1.
 *
 * Threads. Everything here except tcp_wake() belongs to the transport's
 * owner thread. tcp_wake() only write()s to an eventfd, so it is thread- and
 * async-signal-safe; recv() polls that eventfd beside the ROUTER. Payload
 * free callbacks run on ZeroMQ I/O threads.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>
#include <zmq.h>

#include "common/log.h"
#include "transport/clock.h"
#include "transport/seal.h"
#include "transport/seal_table.h"
#include "transport/zap.h"
#include "transport/transport.h"

/* ThreadSanitizer cannot see libzmq's own synchronisation (the library is
 * not instrumented): a payload handed to ZeroMQ on the owner thread and
 * released by its I/O thread is ordered by ZeroMQ's queues, and these
 * annotations say so (tests/tsan.supp ignores what happens inside
 * libzmq). Nothing without -fsanitize=thread. */
#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define TSAN_RELEASE(p) __tsan_release(p)
#define TSAN_ACQUIRE(p) __tsan_acquire(p)
#else
#define TSAN_RELEASE(p) ((void)(p))
#define TSAN_ACQUIRE(p) ((void)(p))
#endif

#define ID_LEN               8
#define ENDPOINT_MAX         512
#define DEFAULT_CONNECT_MS   10000
#define DEFAULT_HANDSHAKE_MS 30000
#define PAYLOAD_ALIGN        8
#define DISCONNECT_LINGER_MS 1000
#define RCVHWM_PER_PEER      65536 /* inbound messages queued per peer */
#define SEAL_HELPERS_MAX     3     /* threads sealing beside the owner */
#define ZMTP_HEARTBEAT_IVL_MS     1000  /* the ROUTER's PINGs */
#define ZMTP_HEARTBEAT_TIMEOUT_MS 10000 /* silent this long: closed */

typedef struct tcp_peer {
	char *endpoint; /* as given to connect */
	/* one DEALER per lane (transport.connections_per_peer); lane[0]
	 * NULL once disconnected or failed */
	void *lane[PS_TCP_LANES_MAX];
	psi_seal *seal[PS_TCP_LANES_MAX]; /* sealed: each lane's sealing */
	uint32_t nlanes;
	/* connecting (connect_start until connect_wait saw it end): */
	void *mon[PS_TCP_LANES_MAX]; /* each lane's monitor PAIR; NULL once
	                              * that lane is connected */
	int64_t deadline; /* when the attempt fails */
	int timeout_ms;   /* its length, for messages */
	bool retried, connected, proto; /* what the monitors told so far */
} tcp_peer;

typedef struct tcp_transport {
	ps_transport base; /* must be first */
	ps_transport_opts opts;
	void *ctx;
	void *router; /* NULL until listen */
	int wake_fd;  /* eventfd */
	tcp_peer *peers;
	uint32_t npeers;
	uint32_t cap_peers;
	uint32_t lanes; /* connections per peer, 1..PS_TCP_LANES_MAX */
	unsigned monitor_seq;
	ps_job_keys keys; /* security.mode = curve; keys.sec "" otherwise */
	char secret[PS_SECRET_LEN + 1]; /* security.mode = secret, or "" */
	char token[PS_SECRET_LEN + 1];  /* this node's, with secret, or "" */
	psi_zap_job job;  /* who may connect: secret or keys, or neither */
	psi_zap *zap;     /* the ZAP handler, once listening */
	/* security.mode = sealed (transport/seal.h): the secret decoded,
	 * and the connections messages are opened from */
	uint8_t secret_bin[PS_SEAL_KEY_LEN];
	psi_seal_table *opened;
	psi_seal_pool *sealers; /* helpers for large payloads, or NULL */
	uint64_t refused_seals; /* messages that did not open */
} tcp_transport;

/* Adapter between ZeroMQ's free callback and the user's. */
typedef struct payload_ref {
	ps_free_fn *fn;
	void *hint;
	bool cancelled; /* set before a failed send's zmq_msg_close */
} payload_ref;

/* A received message: the frames live here, the ps_msg points into them. */
typedef struct tcp_msg {
	ps_msg msg;
	zmq_msg_t hdr;
	zmq_msg_t payload;
	bool has_payload;
	void *payload_copy; /* aligned copy of a small unaligned payload */
} tcp_msg;

extern const ps_transport_ops psi_tcp_ops; /* defined at the end */

static tcp_transport *tcp_of(ps_transport *t)
{
	return (tcp_transport *)t;
}

static void id_encode(uint64_t id, unsigned char out[ID_LEN])
{
	for (int i = 0; i < ID_LEN; i++)
		out[i] = (unsigned char)(id >> (8 * i));
}

static uint64_t id_decode(const unsigned char in[ID_LEN])
{
	uint64_t id = 0;
	for (int i = 0; i < ID_LEN; i++)
		id |= (uint64_t)in[i] << (8 * i);
	return id;
}

static int set_int(void *sock, int option, int value)
{
	return zmq_setsockopt(sock, option, &value, sizeof(value));
}

/* ZMQ_MAXMSGSIZE from opts.max_message (0: none): ZeroMQ checks every
 * frame's size as it reads the frame's header and drops the connection of
 * a peer that announces a larger one, before allocating for it. */
static int set_max_message(const tcp_transport *tt, void *sock)
{
	int64_t max = tt->opts.max_message ? (int64_t)tt->opts.max_message
					   : -1;
	return zmq_setsockopt(sock, ZMQ_MAXMSGSIZE, &max, sizeof(max));
}

static void close_socket(void *sock, int linger_ms)
{
	if (!sock)
		return;
	set_int(sock, ZMQ_LINGER, linger_ms < 0 ? -1 : linger_ms);
	zmq_close(sock);
}

/* "tcp://host:port"; IPv6 literals get brackets. */
static int format_endpoint(char *buf, size_t cap, const char *host,
                           const char *port)
{
	bool v6 = strchr(host, ':') && host[0] != '[';
	int n = snprintf(buf, cap, v6 ? "tcp://[%s]:%s" : "tcp://%s:%s", host,
	                 port);
	return (n < 0 || (size_t)n >= cap) ? -1 : 0;
}

/* security.mode = sealed: the secret decoded, the table of connections
 * (transport/seal_table.h). Needs the secret and this node's token. */
static int create_sealed(tcp_transport *tt)
{
	if (!ps_secret_valid(tt->secret) || !tt->base.kid) {
		PS_ERROR("tcp: sealed frames need the job's secret and this "
			 "node's token");
		return PS_EINVAL;
	}
	ps_secret_bytes(tt->secret, tt->secret_bin);
	if (psi_seal_table_new(tt->secret_bin, PS_SEAL_TABLE_CAP,
			       &tt->opened) != PS_OK) {
		PS_ERROR("tcp: out of memory for sealed connections");
		sodium_memzero(tt->secret_bin, sizeof(tt->secret_bin));
		return PS_ENOMEM;
	}
	/* a large payload's chunks are sealed on up to SEAL_HELPERS_MAX
	 * more cores; none on a machine of one */
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int helpers = cores - 1 > SEAL_HELPERS_MAX ? SEAL_HELPERS_MAX
						   : (int)cores - 1;
	if (helpers > 0 && psi_seal_pool_new(helpers, &tt->sealers) != PS_OK)
		PS_WARN("tcp: no helper threads for sealing: large messages "
			"are sealed on the node's thread alone");
	return PS_OK;
}

static int tcp_create(const ps_transport_opts *opts, ps_transport **t_p)
{
	tcp_transport *tt = calloc(1, sizeof(*tt));
	if (!tt) {
		PS_ERROR("tcp: out of memory creating a transport");
		return PS_ENOMEM;
	}
	tt->base.ops = &psi_tcp_ops;
	tt->opts = *opts;
	memcpy(tt->keys.pub, opts->curve_public, sizeof(tt->keys.pub));
	memcpy(tt->keys.sec, opts->curve_secret, sizeof(tt->keys.sec));
	tt->keys.pub[PS_KEY_Z85_LEN] = tt->keys.sec[PS_KEY_Z85_LEN] = '\0';
	memcpy(tt->secret, opts->job_secret, sizeof(tt->secret));
	tt->secret[PS_SECRET_LEN] = '\0';
	memcpy(tt->token, opts->job_token, sizeof(tt->token));
	tt->token[PS_SECRET_LEN] = '\0';
	if (tt->secret[0] && ps_secret_valid(tt->token))
		tt->base.kid = ps_token_kid(tt->token);
	memset(tt->opts.job_token, 0, sizeof(tt->opts.job_token));
	memset(tt->opts.curve_secret, 0, sizeof(tt->opts.curve_secret));
	memset(tt->opts.job_secret, 0, sizeof(tt->opts.job_secret));
	tt->job = (psi_zap_job){.secret = tt->secret,
				.token = tt->token,
				.sealed = opts->sealed && tt->secret[0],
				.keys = tt->keys.sec[0] ? &tt->keys : NULL};
	if (opts->sealed && create_sealed(tt) != PS_OK) {
		free(tt);
		return PS_EINVAL;
	}
	tt->lanes = opts->connections_per_peer <= 0
	                ? 1
	                : opts->connections_per_peer > PS_TCP_LANES_MAX
	                      ? PS_TCP_LANES_MAX
	                      : (uint32_t)opts->connections_per_peer;
	/* a lane's frames are framed (and, with curve, ciphered) by the
	 * I/O thread its connection is on: one thread per lane at least */
	if (tt->opts.io_threads < (int)tt->lanes)
		tt->opts.io_threads = (int)tt->lanes;
	if (tt->opts.connect_timeout_ms <= 0)
		tt->opts.connect_timeout_ms = DEFAULT_CONNECT_MS;
	if (tt->opts.send_timeout_ms < 0)
		tt->opts.send_timeout_ms = -1;

	tt->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (tt->wake_fd < 0) {
		int err = errno;
		PS_ERROR("tcp: eventfd: %s", strerror(err));
		psi_seal_table_free(&tt->opened);
		psi_seal_pool_free(&tt->sealers);
		free(tt);
		return ps_err_from_errno(err);
	}
	tt->ctx = zmq_ctx_new();
	if (!tt->ctx) {
		PS_ERROR("tcp: zmq_ctx_new: %s", zmq_strerror(errno));
		goto close_fd;
	}
	if (zmq_ctx_set(tt->ctx, ZMQ_IO_THREADS, tt->opts.io_threads) != 0) {
		PS_ERROR("tcp: cannot use %d I/O threads: %s",
		         tt->opts.io_threads, zmq_strerror(errno));
		goto term_ctx;
	}
	*t_p = &tt->base;
	return PS_OK;

term_ctx:
	zmq_ctx_term(tt->ctx);
close_fd:
	close(tt->wake_fd);
	psi_seal_table_free(&tt->opened);
	psi_seal_pool_free(&tt->sealers);
	sodium_memzero(tt->secret_bin, sizeof(tt->secret_bin));
	free(tt);
	return PS_EIO;
}

static int tcp_listen(ps_transport *t, const char *host, int port,
                      const char *advertise_host, char *endpoint, size_t cap)
{
	tcp_transport *tt = tcp_of(t);
	char addr[ENDPOINT_MAX], last[ENDPOINT_MAX], portstr[16],
	    out[ENDPOINT_MAX];
	size_t last_len = sizeof(last);
	void *router;
	int rc;

	if (tt->router) {
		PS_ERROR("tcp: transport is already listening");
		return PS_ESTATE;
	}
	if (!host || !*host)
		host = "0.0.0.0";
	if (port == 0)
		snprintf(portstr, sizeof(portstr), "*");
	else
		snprintf(portstr, sizeof(portstr), "%d", port);
	if (format_endpoint(addr, sizeof(addr), host, portstr) != 0) {
		PS_ERROR("tcp: listen host too long: %s", host);
		return PS_EINVAL;
	}

	router = zmq_socket(tt->ctx, ZMQ_ROUTER);
	if (!router) {
		PS_ERROR("tcp: zmq_socket(ROUTER): %s", zmq_strerror(errno));
		return PS_EIO;
	}
	set_int(router, ZMQ_RCVHWM, RCVHWM_PER_PEER);
	/* no handover: a second connection with a routing id in use is
	 * refused (a stranger cannot replace a member's connection);
	 * ZeroMQ's own heartbeats close a dead one, so that its peer's
	 * reconnection is taken soon after */
	set_int(router, ZMQ_HEARTBEAT_IVL, ZMTP_HEARTBEAT_IVL_MS);
	set_int(router, ZMQ_HEARTBEAT_TIMEOUT, ZMTP_HEARTBEAT_TIMEOUT_MS);
	/* a peer that connects and says nothing is closed: its fd is held
	 * this long at most (ZeroMQ's default is 30 s) */
	set_int(router, ZMQ_HANDSHAKE_IVL,
	        tt->opts.handshake_timeout_ms > 0 ? tt->opts.handshake_timeout_ms
	                                          : DEFAULT_HANDSHAKE_MS);
	set_max_message(tt, router);
	if (strchr(host, ':'))
		set_int(router, ZMQ_IPV6, 1);
	if ((tt->secret[0] || tt->keys.sec[0]) &&
	    (rc = psi_zap_start(tt->ctx, router, &tt->job, &tt->zap)) != PS_OK)
		goto close_router;

	if (zmq_bind(router, addr) != 0) {
		int err = errno;
		if (err == EADDRINUSE) {
			PS_ERROR("tcp: cannot listen on %s: %s", addr,
			         "address already in use");
			rc = PS_EADDRINUSE;
		} else if (err == EINVAL || err == EADDRNOTAVAIL ||
		           err == ENODEV || err == EPROTONOSUPPORT) {
			PS_ERROR("tcp: cannot listen on %s: %s", addr,
			         zmq_strerror(err));
			rc = PS_EINVAL;
		} else {
			PS_ERROR("tcp: cannot listen on %s: %s", addr,
			         zmq_strerror(err));
			rc = ps_err_from_errno(err);
		}
		goto close_router;
	}

	/* The real port, when port was 0. */
	if (zmq_getsockopt(router, ZMQ_LAST_ENDPOINT, last, &last_len) != 0) {
		PS_ERROR("tcp: ZMQ_LAST_ENDPOINT of %s: %s", addr,
		         zmq_strerror(errno));
		rc = PS_EIO;
		goto close_router;
	}
	last[sizeof(last) - 1] = '\0';
	const char *colon = strrchr(last, ':');
	char *end = NULL;
	long real_port = colon ? strtol(colon + 1, &end, 10) : -1;
	if (!colon || !end || *end != '\0' || real_port <= 0 ||
	    real_port > 65535) {
		PS_ERROR("tcp: cannot read the port bound by %s (got \"%s\")",
		         addr, last);
		rc = PS_EIO;
		goto close_router;
	}
	snprintf(portstr, sizeof(portstr), "%ld", real_port);
	if (format_endpoint(out, sizeof(out),
	                    advertise_host && *advertise_host ? advertise_host
	                                                      : host,
	                    portstr) != 0 ||
	    strlen(out) + 1 > cap) {
		PS_ERROR("tcp: endpoint of %s does not fit in %zu bytes", addr,
		         cap);
		rc = PS_EINVAL;
		goto close_router;
	}
	memcpy(endpoint, out, strlen(out) + 1);
	tt->router = router;
	PS_DEBUG("tcp: listening on %s (peers use %s)", last, out);
	return PS_OK;

close_router:
	close_socket(router, 0);
	psi_zap_stop(&tt->zap);
	return rc;
}

/* Reads one monitor event; returns the event number or -1. */
static int read_monitor_event(void *mon)
{
	zmq_msg_t frame;
	uint16_t ev = 0;
	int more, result = -1;

	zmq_msg_init(&frame);
	if (zmq_msg_recv(&frame, mon, ZMQ_DONTWAIT) < 0) {
		zmq_msg_close(&frame);
		return -1;
	}
	if (zmq_msg_size(&frame) >= sizeof(ev)) {
		memcpy(&ev, zmq_msg_data(&frame), sizeof(ev));
		result = ev;
	}
	more = zmq_msg_more(&frame);
	zmq_msg_close(&frame);
	while (more) { /* the endpoint frame */
		zmq_msg_init(&frame);
		if (zmq_msg_recv(&frame, mon, ZMQ_DONTWAIT) < 0) {
			zmq_msg_close(&frame);
			break;
		}
		more = zmq_msg_more(&frame);
		zmq_msg_close(&frame);
	}
	return result;
}

static int grow_peers(tcp_transport *tt)
{
	if (tt->npeers < tt->cap_peers)
		return PS_OK;
	if (tt->cap_peers >= UINT32_MAX / 2) {
		PS_ERROR("tcp: too many peers");
		return PS_ENOMEM;
	}
	uint32_t cap = tt->cap_peers ? tt->cap_peers * 2 : 8;
	tcp_peer *p = realloc(tt->peers, cap * sizeof(*p));
	if (!p) {
		PS_ERROR("tcp: out of memory for %u peers", cap);
		return PS_ENOMEM;
	}
	tt->peers = p;
	tt->cap_peers = cap;
	return PS_OK;
}

/* The monitor of one lane of a connecting peer is no longer needed. */
static void end_lane_monitor(tcp_peer *p, uint32_t l)
{
	if (!p->mon[l])
		return;
	zmq_socket_monitor(p->lane[l], NULL, 0);
	close_socket(p->mon[l], 0);
	p->mon[l] = NULL;
}

static void end_monitors(tcp_peer *p)
{
	for (uint32_t l = 0; l < p->nlanes; l++)
		end_lane_monitor(p, l);
}

/* Whether any lane of a peer is still connecting. */
static bool connecting(const tcp_peer *p)
{
	for (uint32_t l = 0; l < p->nlanes; l++)
		if (p->mon[l])
			return true;
	return false;
}

/* Closes every lane of a peer (its monitors first). */
static void close_lanes(tcp_peer *p, int linger_ms)
{
	end_monitors(p);
	for (uint32_t l = 0; l < p->nlanes; l++) {
		close_socket(p->lane[l], linger_ms);
		p->lane[l] = NULL;
		psi_seal_free(&p->seal[l]);
	}
}

/* A connection attempt failed (logged): its sockets go, and the handle
 * with them (the last one is reused; an earlier one stays, closed: sends
 * to it fail with PS_ECLOSED). */
static void fail_peer(tcp_transport *tt, ps_peer peer)
{
	tcp_peer *p = &tt->peers[peer];

	close_lanes(p, 0);
	if (peer + 1 == tt->npeers) {
		free(p->endpoint);
		tt->npeers--;
	}
}

/* One lane's DEALER to endpoint, its options set, watched by a monitor
 * PAIR, connecting (ZeroMQ connects in its I/O thread). Lane 0's routing
 * id is the node's 8-byte id; lane l > 0 adds a ninth byte, l, so that
 * the peer's ROUTER keeps the lanes apart (read_message). */
static int open_lane(tcp_transport *tt, const char *endpoint, uint32_t l,
		     void **dealer_p, void **mon_p, psi_seal **seal_p)
{
	unsigned char id[ID_LEN + 1];
	uint8_t conn[PS_SEAL_CONN_LEN];
	size_t id_len = ID_LEN;
	char mon_addr[64];
	void *dealer, *mon = NULL;
	int rc;

	dealer = zmq_socket(tt->ctx, ZMQ_DEALER);
	if (!dealer) {
		PS_ERROR("tcp: zmq_socket(DEALER): %s", zmq_strerror(errno));
		return PS_EIO;
	}
	id_encode(tt->opts.id, id);
	if (l > 0)
		id[id_len++] = (unsigned char)l;
	/* sealed: the connection's own id, and its frames' key */
	if (tt->opened) {
		randombytes_buf(conn, sizeof(conn));
		if (psi_seal_new(tt->secret_bin, tt->base.kid, conn,
				 seal_p) != PS_OK) {
			PS_ERROR("tcp: cannot key a sealed connection to %s",
				 endpoint);
			rc = PS_EIO;
			goto close_dealer;
		}
	}
	if (zmq_setsockopt(dealer, ZMQ_ROUTING_ID, id, id_len) != 0 ||
	    set_max_message(tt, dealer) != 0 ||
	    ((tt->secret[0] || tt->keys.sec[0]) &&
	     psi_zap_client(dealer, &tt->job, conn) != 0) ||
	    set_int(dealer, ZMQ_IMMEDIATE, 1) != 0 ||
	    set_int(dealer, ZMQ_SNDHWM, 0) != 0 ||
	    set_int(dealer, ZMQ_RCVHWM, 0) != 0 ||
	    set_int(dealer, ZMQ_SNDTIMEO, tt->opts.send_timeout_ms) != 0 ||
	    (strchr(endpoint, '[') && set_int(dealer, ZMQ_IPV6, 1) != 0)) {
		PS_ERROR("tcp: setting DEALER options for %s: %s", endpoint,
		         zmq_strerror(errno));
		rc = PS_EIO;
		goto close_dealer;
	}

	/* The monitor PAIR connects before zmq_connect so no event is lost
	 * (inproc connects synchronously to the bound monitor). */
	snprintf(mon_addr, sizeof(mon_addr), "inproc://ordo-tcp-mon-%p-%u",
	         (void *)tt, tt->monitor_seq++);
	if (zmq_socket_monitor(dealer, mon_addr,
	                       ZMQ_EVENT_CONNECTED | ZMQ_EVENT_CONNECT_RETRIED |
	                           ZMQ_EVENT_HANDSHAKE_SUCCEEDED |
	                           ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
	                           ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
	                           ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) != 0) {
		PS_ERROR("tcp: zmq_socket_monitor: %s", zmq_strerror(errno));
		rc = PS_EIO;
		goto close_dealer;
	}
	mon = zmq_socket(tt->ctx, ZMQ_PAIR);
	if (!mon || zmq_connect(mon, mon_addr) != 0) {
		PS_ERROR("tcp: monitor socket: %s", zmq_strerror(errno));
		rc = PS_EIO;
		goto close_mon;
	}
	if (zmq_connect(dealer, endpoint) != 0) {
		PS_ERROR("tcp: bad endpoint \"%s\": %s", endpoint,
		         zmq_strerror(errno));
		rc = PS_EINVAL;
		goto close_mon;
	}
	*dealer_p = dealer;
	*mon_p = mon;
	return PS_OK;

close_mon:
	zmq_socket_monitor(dealer, NULL, 0);
	close_socket(mon, 0);
close_dealer:
	close_socket(dealer, 0);
	psi_seal_free(seal_p);
	return rc;
}

/* Starts connecting `lanes` connections to endpoint (see DESIGN). */
static int start_lanes(tcp_transport *tt, const char *endpoint,
		       int timeout_ms, uint32_t lanes, ps_peer *peer_p)
{
	int rc;

	if (strncmp(endpoint, "tcp://", 6) != 0 ||
	    strlen(endpoint) >= ENDPOINT_MAX) {
		PS_ERROR("tcp: bad endpoint \"%s\" (want tcp://host:port)",
		         endpoint);
		return PS_EINVAL;
	}
	for (uint32_t i = 0; i < tt->npeers; i++) {
		if (tt->peers[i].lane[0] &&
		    strcmp(tt->peers[i].endpoint, endpoint) == 0) {
			*peer_p = i;
			return PS_OK;
		}
	}
	rc = grow_peers(tt);
	if (rc != PS_OK)
		return rc;
	int timeout = timeout_ms >= 0 ? timeout_ms : tt->opts.connect_timeout_ms;
	tcp_peer *p = &tt->peers[tt->npeers];
	*p = (tcp_peer){
	    .endpoint = strdup(endpoint),
	    .nlanes = lanes,
	    .deadline = ps_transport_now_ms() + timeout,
	    .timeout_ms = timeout,
	};
	if (!p->endpoint) {
		PS_ERROR("tcp: out of memory connecting to %s", endpoint);
		return PS_ENOMEM;
	}
	for (uint32_t l = 0; l < p->nlanes; l++) {
		rc = open_lane(tt, endpoint, l, &p->lane[l], &p->mon[l],
			       &p->seal[l]);
		if (rc != PS_OK) {
			close_lanes(p, 0);
			free(p->endpoint);
			return rc;
		}
	}
	*peer_p = tt->npeers++;
	return PS_OK;
}

static int tcp_connect_start(ps_transport *t, const char *endpoint,
			     int timeout_ms, ps_peer *peer_p)
{
	tcp_transport *tt = tcp_of(t);

	return start_lanes(tt, endpoint, timeout_ms, tt->lanes, peer_p);
}

/* How a connection attempt ended at its deadline (see DESIGN), logged. */
static int attempt_failed(const tcp_transport *tt, const tcp_peer *p)
{
	if (p->proto) {
		PS_ERROR("tcp: cannot connect to %s: the peer failed the "
		         "ZeroMQ handshake (not an ordo node, or its "
		         "security.mode is not %s?)",
		         p->endpoint,
		         tt->secret[0] ? "secret (or auto with the job's secret)"
		         : tt->keys.sec[0] ? "curve"
		                           : "none (or auto without a secret)");
		return PS_EPROTO;
	}
	if (p->retried && !p->connected) {
		PS_ERROR("tcp: cannot connect to %s: connection refused "
		         "(retried for %d ms)",
		         p->endpoint, p->timeout_ms);
		return PS_ECONNREFUSED;
	}
	PS_ERROR("tcp: cannot connect to %s: timed out after %d ms%s",
	         p->endpoint, p->timeout_ms,
	         p->connected ? " (connected, but no handshake)" : "");
	return PS_ETIMEDOUT;
}

/* Reads what one lane's monitor says; PS_OK once it handshook, PS_EPROTO
 * when the peer refused this node (logged, the peer failed), PS_EAGAIN
 * otherwise (what it saw noted in p). */
static int lane_event(tcp_transport *tt, ps_peer peer, uint32_t l)
{
	tcp_peer *p = &tt->peers[peer];

	switch (read_monitor_event(p->mon[l])) {
	case ZMQ_EVENT_HANDSHAKE_SUCCEEDED:
		end_lane_monitor(p, l);
		return PS_OK;
	case ZMQ_EVENT_CONNECTED:
		p->connected = true;
		break;
	case ZMQ_EVENT_CONNECT_RETRIED:
		p->retried = true;
		break;
	case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
		/* the peer's ZAP handler said no: retrying cannot help */
		PS_ERROR("tcp: cannot connect to %s: the peer refused %s",
		         p->endpoint,
		         tt->secret[0]
		             ? "this node's job secret (not this job's: "
		               "ORDO_JOB_SECRET or security.keys_dir's "
		               "job.secret?)"
		             : "this node's CURVE key (security.keys_dir: not "
		               "this job's key pair?)");
		fail_peer(tt, peer);
		return PS_EPROTO;
	case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
	case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
		p->proto = true;
		break;
	default:
		break;
	}
	return PS_EAGAIN;
}

/* Watches the lanes' handshakes for wait_ms at most; see DESIGN. The
 * peer is connected once every lane is. */
static int tcp_connect_wait(ps_transport *t, ps_peer peer, int wait_ms)
{
	tcp_transport *tt = tcp_of(t);

	if (peer >= tt->npeers) {
		PS_ERROR("tcp: connect_wait on unknown peer %u", peer);
		return PS_EINVAL;
	}
	tcp_peer *p = &tt->peers[peer];
	if (!p->lane[0])
		return PS_ECLOSED;
	int64_t until = p->deadline;
	if (wait_ms >= 0 && ps_transport_now_ms() + wait_ms < until)
		until = ps_transport_now_ms() + wait_ms;
	while (connecting(p)) {
		zmq_pollitem_t items[PS_TCP_LANES_MAX];
		uint32_t lanes[PS_TCP_LANES_MAX], n = 0;
		int64_t left = until - ps_transport_now_ms();

		for (uint32_t l = 0; l < p->nlanes; l++)
			if (p->mon[l]) {
				items[n] = (zmq_pollitem_t){p->mon[l], 0,
				                            ZMQ_POLLIN, 0};
				lanes[n++] = l;
			}
		int rc = zmq_poll(items, (int)n, left > 0 ? (long)left : 0);
		if (rc < 0 && errno != EINTR) {
			PS_ERROR("tcp: connect to %s: zmq_poll: %s",
			         p->endpoint, zmq_strerror(errno));
			fail_peer(tt, peer);
			return PS_EIO;
		}
		if (rc > 0) {
			for (uint32_t i = 0; i < n; i++)
				if ((items[i].revents & ZMQ_POLLIN) &&
				    lane_event(tt, peer, lanes[i]) == PS_EPROTO)
					return PS_EPROTO;
			continue; /* the events already queued, then the time */
		}
		if (ps_transport_now_ms() >= p->deadline) {
			rc = attempt_failed(tt, p);
			fail_peer(tt, peer);
			return rc;
		}
		if (ps_transport_now_ms() >= until)
			return PS_EAGAIN;
	}
	PS_DEBUG("tcp: connected to %s (peer %u, %u connection%s)",
	         p->endpoint, peer, p->nlanes, p->nlanes == 1 ? "" : "s");
	return PS_OK;
}

static int tcp_connect(ps_transport *t, const char *endpoint, int timeout_ms,
		       ps_peer *peer_p)
{
	ps_peer peer;
	int rc = start_lanes(tcp_of(t), endpoint, timeout_ms, 1, &peer);

	if (rc == PS_OK)
		rc = tcp_connect_wait(t, peer, -1);
	if (rc == PS_OK)
		*peer_p = peer;
	return rc;
}

/* ZeroMQ's free callback (an I/O thread, or the owner on a failed send). */
static void payload_done(void *data, void *hint)
{
	payload_ref *ref = hint;
	TSAN_ACQUIRE(ref); /* handed over in tcp_send */
	if (!ref->cancelled)
		ref->fn(data, ref->hint);
	free(ref);
}

static int send_error(const tcp_transport *tt, const tcp_peer *p, int err)
{
	if (err == EAGAIN) {
		PS_WARN("tcp: send to %s timed out after %d ms (not connected)",
		        p->endpoint, tt->opts.send_timeout_ms);
		return PS_ETIMEDOUT;
	}
	if (err == EINTR) {
		PS_WARN("tcp: send to %s interrupted", p->endpoint);
		return PS_EINTR;
	}
	/* EFAULT: the connection dropped between the frames (rolled back);
	 * EHOSTUNREACH, ETERM: gone. */
	PS_WARN("tcp: send to %s failed: %s", p->endpoint, zmq_strerror(err));
	return PS_ECLOSED;
}

/* security.mode = sealed: the message sealed into frames of ZeroMQ's
 * (transport/seal.h), so the caller's payload is done with once they are
 * sent (free_fn called here); on failure the caller still owns it. */
static int send_sealed(tcp_transport *tt, tcp_peer *p, uint32_t lane,
		       const void *hdr, size_t hdr_len, void *payload,
		       size_t payload_len, ps_free_fn *free_fn, void *hint)
{
	zmq_msg_t hmsg, pmsg;
	bool with_payload = payload_len > 0;
	void *sock = p->lane[lane];
	int rc;

	if (zmq_msg_init_size(&hmsg, psi_seal_frame_len(hdr_len,
							payload_len)) != 0) {
		PS_ERROR("tcp: out of memory for a %zu-byte header", hdr_len);
		return PS_ENOMEM;
	}
	if (zmq_msg_init_size(&pmsg, payload_len) != 0) {
		PS_ERROR("tcp: out of memory for a %zu-byte payload",
			 payload_len);
		zmq_msg_close(&hmsg);
		return PS_ENOMEM;
	}
	rc = psi_seal_message(p->seal[lane], tt->sealers, hdr, hdr_len,
			      payload, payload_len, zmq_msg_data(&hmsg),
			      zmq_msg_data(&pmsg));
	if (rc != PS_OK) {
		PS_ERROR("tcp: sealing a message to %s failed", p->endpoint);
		goto close;
	}
	if (zmq_msg_send(&hmsg, sock, with_payload ? ZMQ_SNDMORE : 0) < 0) {
		rc = send_error(tt, p, errno);
		goto close;
	}
	if (with_payload && zmq_msg_send(&pmsg, sock, 0) < 0) {
		rc = send_error(tt, p, errno);
		zmq_msg_close(&pmsg);
		return rc;
	}
	zmq_msg_close(&pmsg);
	if (payload && free_fn)
		free_fn(payload, hint);
	return PS_OK;

close:
	zmq_msg_close(&hmsg);
	zmq_msg_close(&pmsg);
	return rc;
}

static int tcp_send_flow(ps_transport *t, ps_peer peer, uint32_t flow,
                         const void *hdr, size_t hdr_len, void *payload,
                         size_t payload_len, ps_free_fn *free_fn, void *hint)
{
	tcp_transport *tt = tcp_of(t);
	zmq_msg_t hmsg, pmsg;
	payload_ref *ref = NULL;
	bool with_payload = payload_len > 0;
	int rc;

	if (peer >= tt->npeers) {
		PS_ERROR("tcp: send to unknown peer %u", peer);
		return PS_EINVAL;
	}
	tcp_peer *p = &tt->peers[peer];
	if (!p->lane[0]) {
		PS_DEBUG("tcp: send to disconnected peer %u (%s)", peer,
		         p->endpoint);
		return PS_ECLOSED;
	}
	void *sock = p->lane[flow % p->nlanes];
	if (p->seal[flow % p->nlanes])
		return send_sealed(tt, p, flow % p->nlanes, hdr, hdr_len,
				   payload, payload_len, free_fn, hint);

	/* Prepare everything that can fail before sending a frame. */
	if (with_payload) {
		if (free_fn) {
			ref = malloc(sizeof(*ref));
			if (!ref) {
				PS_ERROR("tcp: out of memory sending to %s",
				         p->endpoint);
				return PS_ENOMEM;
			}
			ref->fn = free_fn;
			ref->hint = hint;
			ref->cancelled = false;
		}
		if (zmq_msg_init_data(&pmsg, payload, payload_len,
		                      ref ? payload_done : NULL, ref) != 0) {
			PS_ERROR("tcp: zmq_msg_init_data: %s",
			         zmq_strerror(errno));
			free(ref);
			return PS_ENOMEM;
		}
	}
	if (zmq_msg_init_size(&hmsg, hdr_len) != 0) {
		PS_ERROR("tcp: out of memory for a %zu-byte header", hdr_len);
		rc = PS_ENOMEM;
		goto cancel_payload;
	}
	if (hdr_len)
		memcpy(zmq_msg_data(&hmsg), hdr, hdr_len);

	/* The header may block for send_timeout_ms (ZMQ_IMMEDIATE, no
	 * connection). The payload frame never waits: the high-water mark
	 * counts whole messages only, and if the connection drops between
	 * the frames ZeroMQ rolls the first back (EFAULT): nothing arrives. */
	if (zmq_msg_send(&hmsg, sock, with_payload ? ZMQ_SNDMORE : 0) < 0) {
		rc = send_error(tt, p, errno);
		zmq_msg_close(&hmsg);
		goto cancel_payload;
	}
	if (with_payload) {
		/* the payload and its ref go to the I/O thread */
		TSAN_RELEASE(ref);
		if (zmq_msg_send(&pmsg, sock, 0) < 0) {
			rc = send_error(tt, p, errno);
			goto cancel_payload;
		}
	} else if (payload && free_fn) {
		free_fn(payload, hint); /* empty payload: done with it now */
	}
	return PS_OK;

cancel_payload:
	if (with_payload) {
		/* Not taken by ZeroMQ: close without calling free_fn. */
		if (ref)
			ref->cancelled = true;
		zmq_msg_close(&pmsg);
	}
	return rc;
}

static int tcp_send(ps_transport *t, ps_peer peer, const void *hdr,
                    size_t hdr_len, void *payload, size_t payload_len,
                    ps_free_fn *free_fn, void *hint)
{
	return tcp_send_flow(t, peer, 0, hdr, hdr_len, payload, payload_len,
	                     free_fn, hint);
}

static void msg_release(ps_msg *msg)
{
	tcp_msg *m = msg->priv;
	zmq_msg_close(&m->hdr);
	if (m->has_payload)
		zmq_msg_close(&m->payload);
	free(m->payload_copy);
	free(m);
}

static void drain_wake(tcp_transport *tt)
{
	uint64_t v;
	while (read(tt->wake_fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
		;
}

/* Counts and logs a message dropped for its seal (bounded, as every
 * drop is: the first 20, then one in 1000). */
static void refuse_seal(tcp_transport *tt, const tcp_msg *m, const char *why)
{
	uint64_t n = ++tt->refused_seals;
	if (n <= 20 || n % 1000 == 0)
		PS_WARN("tcp: dropped a message from transport id %016" PRIx64
			" (key id %016" PRIx64 "): %s (%" PRIu64 " so far)",
			m->msg.src, m->msg.kid, why, n);
}

/* security.mode = sealed: opens m's frames in place (transport/seal.h),
 * its header then after the counter. PS_OK, or PS_EPROTO when dropped
 * (logged). */
static int open_sealed(tcp_transport *tt, tcp_msg *m, const char *uid)
{
	psi_seal *seal;
	uint8_t *payload = m->has_payload ? zmq_msg_data(&m->payload) : NULL;
	size_t plen = m->has_payload ? zmq_msg_size(&m->payload) : 0;
	int rc = psi_seal_table_get(tt->opened, uid, &seal);

	if (rc == PS_EPROTO) {
		refuse_seal(tt, m, "its connection was not admitted sealed");
		return PS_EPROTO;
	}
	if (rc != PS_OK) {
		refuse_seal(tt, m, "out of memory for its connection's key");
		return PS_EPROTO;
	}
	size_t hlen = 0;
	rc = psi_seal_open(seal, tt->sealers, zmq_msg_data(&m->hdr),
			   zmq_msg_size(&m->hdr), payload, plen, &hlen);
	if (rc == PS_EAGAIN) {
		refuse_seal(tt, m, "a replayed or reordered frame (its "
			    "counter is not above the last one opened)");
		return PS_EPROTO;
	}
	if (rc != PS_OK) {
		refuse_seal(tt, m, "its frames do not open: altered, or not "
			    "sealed with this job's secret");
		return PS_EPROTO;
	}
	m->msg.hdr_len = hlen;
	m->msg.hdr = m->msg.hdr_len
			 ? (uint8_t *)zmq_msg_data(&m->hdr) + PS_SEAL_CTR_LEN
			 : NULL;
	return PS_OK;
}

/* Reads one whole message from the ROUTER. PS_OK with *msg_p, PS_EAGAIN when
 * nothing was there, PS_EPROTO when it was dropped (logged). */
static int read_message(tcp_transport *tt, ps_msg **msg_p)
{
	zmq_msg_t idf;
	unsigned char id[ID_LEN + 1];
	size_t id_len, frames = 1;
	int more, rc = PS_EPROTO;

	zmq_msg_init(&idf);
	if (zmq_msg_recv(&idf, tt->router, ZMQ_DONTWAIT) < 0) {
		int err = errno;
		zmq_msg_close(&idf);
		if (err == EAGAIN || err == EINTR)
			return PS_EAGAIN;
		PS_ERROR("tcp: receive: %s", zmq_strerror(err));
		return PS_EIO;
	}
	id_len = zmq_msg_size(&idf);
	if (id_len == ID_LEN || id_len == ID_LEN + 1)
		memcpy(id, zmq_msg_data(&idf), id_len);
	/* a lane's ninth byte names the lane (open_lane) */
	bool id_ok = id_len == ID_LEN ||
	             (id_len == ID_LEN + 1 && id[ID_LEN] > 0 &&
	              id[ID_LEN] < PS_TCP_LANES_MAX);
	more = zmq_msg_more(&idf);
	zmq_msg_close(&idf);

	tcp_msg *m = calloc(1, sizeof(*m));
	if (!m) {
		PS_ERROR("tcp: out of memory receiving a message");
		rc = PS_ENOMEM;
	}
	zmq_msg_t *dst[2] = {m ? &m->hdr : NULL, m ? &m->payload : NULL};
	size_t kept = 0;
	/* Read every frame of the message (multipart messages arrive whole),
	 * keeping the first two after the identity. */
	while (more) {
		zmq_msg_t junk,
		    *f = (kept < 2 && dst[kept]) ? dst[kept] : &junk;
		zmq_msg_init(f);
		if (zmq_msg_recv(f, tt->router, ZMQ_DONTWAIT) < 0) {
			PS_WARN("tcp: message cut short: %s",
			        zmq_strerror(errno));
			zmq_msg_close(f);
			frames = 0; /* drop */
			break;
		}
		more = zmq_msg_more(f);
		frames++;
		if (f == &junk)
			zmq_msg_close(f);
		else
			kept++;
	}
	if (rc == PS_ENOMEM)
		goto drop;
	if (!id_ok) {
		PS_WARN("tcp: dropped a message whose sender identity has %zu "
		        "bytes (want %d, or %d naming a lane under %d): not an "
		        "ordo transport",
		        id_len, ID_LEN, ID_LEN + 1, PS_TCP_LANES_MAX);
		goto drop;
	}
	if (frames == 0)
		goto drop;
	if (frames < 2 || frames > 3) {
		PS_WARN("tcp: dropped a message of %zu frames from node "
		        "%" PRIu64 " (want identity, header, optional payload)",
		        frames, id_decode(id));
		goto drop;
	}

	m->msg.src = id_decode(id);
	/* the key id the connection was admitted with (zap.c), first in
	 * its user id */
	const char *uid = zmq_msg_gets(&m->hdr, "User-Id");
	if (uid && strlen(uid) >= 16) {
		char kid[17];
		memcpy(kid, uid, 16);
		kid[16] = '\0';
		m->msg.kid = strtoull(kid, NULL, 16);
	}
	m->has_payload = frames == 3;
	m->msg.hdr_len = zmq_msg_size(&m->hdr);
	m->msg.hdr = m->msg.hdr_len ? zmq_msg_data(&m->hdr) : NULL;
	if (tt->opened && open_sealed(tt, m, uid) != PS_OK)
		goto drop;
	if (m->has_payload && zmq_msg_size(&m->payload) > 0) {
		void *data = zmq_msg_data(&m->payload);
		size_t len = zmq_msg_size(&m->payload);
		if ((uintptr_t)data % PAYLOAD_ALIGN != 0) {
			m->payload_copy = malloc(len);
			if (!m->payload_copy) {
				PS_ERROR("tcp: out of memory (%zu bytes)", len);
				rc = PS_ENOMEM;
				goto drop;
			}
			memcpy(m->payload_copy, data, len);
			data = m->payload_copy;
		}
		m->msg.payload = data;
		m->msg.payload_len = len;
	}
	m->msg.release = msg_release;
	m->msg.priv = m;
	*msg_p = &m->msg;
	return PS_OK;

drop:
	if (m) {
		for (size_t i = 0; i < kept; i++)
			zmq_msg_close(dst[i]);
		free(m);
	}
	return rc;
}

static int tcp_recv(ps_transport *t, int timeout_ms, ps_msg **msg_p)
{
	tcp_transport *tt = tcp_of(t);
	int64_t deadline = timeout_ms > 0 ? ps_transport_now_ms() + timeout_ms : 0;

	for (;;) {
		zmq_pollitem_t items[2] = {
		    {NULL, tt->wake_fd, ZMQ_POLLIN, 0},
		    {tt->router, 0, ZMQ_POLLIN, 0},
		};
		long wait = -1;
		if (timeout_ms >= 0) {
			int64_t left =
			    timeout_ms > 0 ? deadline - ps_transport_now_ms() : 0;
			wait = left > 0 ? (long)left : 0;
		}
		int n = zmq_poll(items, tt->router ? 2 : 1, wait);
		if (n < 0) {
			if (errno == EINTR)
				continue; /* a handler that woke us shows up
				             on the eventfd */
			PS_ERROR("tcp: zmq_poll: %s", zmq_strerror(errno));
			return PS_EIO;
		}
		if (items[0].revents & ZMQ_POLLIN) {
			drain_wake(tt);
			return PS_EAGAIN;
		}
		if (n > 0 && (items[1].revents & ZMQ_POLLIN)) {
			int rc = read_message(tt, msg_p);
			if (rc == PS_OK || rc == PS_EIO || rc == PS_ENOMEM)
				return rc;
			continue; /* dropped or spurious: keep waiting */
		}
		if (wait == 0)
			return PS_ETIMEDOUT;
	}
}

static void tcp_wake(ps_transport *t)
{
	tcp_transport *tt = tcp_of(t);
	uint64_t one = 1;
	ssize_t rc = write(tt->wake_fd, &one, sizeof(one));
	(void)rc; /* EAGAIN: the counter is saturated, a wake is pending */
}

static int tcp_disconnect(ps_transport *t, ps_peer peer)
{
	tcp_transport *tt = tcp_of(t);
	if (peer >= tt->npeers) {
		PS_ERROR("tcp: disconnect of unknown peer %u", peer);
		return PS_EINVAL;
	}
	tcp_peer *p = &tt->peers[peer];
	if (!p->lane[0])
		return PS_OK;
	/* Messages already sent get a bounded chance to leave; an attempt
	 * still connecting ends here. */
	int linger = tt->opts.send_timeout_ms;
	if (linger < 0 || linger > DISCONNECT_LINGER_MS)
		linger = DISCONNECT_LINGER_MS;
	close_lanes(p, linger);
	PS_DEBUG("tcp: disconnected from %s (peer %u)", p->endpoint, peer);
	return PS_OK;
}

static void tcp_caps(const ps_transport *t, ps_transport_caps *caps)
{
	const tcp_transport *tt = (const tcp_transport *)t;
	caps->max_message = tt->opts.max_message ? (size_t)tt->opts.max_message
						 : SIZE_MAX; /* ZMQ_MAXMSGSIZE */
	caps->zero_copy_send = 1;     /* zmq_msg_init_data */
	caps->zero_copy_recv = 1;     /* ZeroMQ's own buffers, lent */
	caps->needs_registration = 0;
	caps->recv_lend_max = UINT32_MAX; /* allocated per message */
	caps->device_memory = 0;          /* tcp_reg */
}

/* Host memory needs no registration. Device memory is refused: ZeroMQ
 * hands every payload to the kernel's socket layer, which reads it with
 * the CPU (and a CUDA device pointer is no address the CPU can read). */
static int tcp_reg(ps_transport *t, ps_mr *mr, const ps_reg_req *req,
		   char *why, size_t whylen)
{
	(void)t;
	(void)req;
	if (mr->kind == PS_MEM_HOST)
		return PS_OK;
	snprintf(why, whylen,
		 "tcp: the tcp transport cannot send CUDA device memory "
		 "(%zu bytes at %p): ZeroMQ reads every payload with the "
		 "CPU; copy it to host memory, or use transport.type = rdma "
		 "(GPUDirect RDMA)",
		 mr->len, mr->addr);
	return PS_ENOTSUP;
}

/* Closes the sockets, flushing pending sends for at most linger_ms, and
 * ends the context: ZeroMQ has then sent or dropped every message and run
 * every payload free callback. Received messages stay valid (their frames
 * are reference-counted apart from the context). */
static void tcp_stop(ps_transport *t, int linger_ms)
{
	tcp_transport *tt = tcp_of(t);

	for (uint32_t i = 0; i < tt->npeers; i++)
		close_lanes(&tt->peers[i], linger_ms);
	close_socket(tt->router, 0);
	tt->router = NULL;
	psi_zap_stop(&tt->zap);
	while (zmq_ctx_term(tt->ctx) != 0 && errno == EINTR)
		;
	tt->ctx = NULL;
}

static void tcp_free(ps_transport *t)
{
	tcp_transport *tt = tcp_of(t);

	for (uint32_t i = 0; i < tt->npeers; i++)
		free(tt->peers[i].endpoint);
	free(tt->peers);
	close(tt->wake_fd);
	memset(tt->keys.sec, 0, sizeof(tt->keys.sec));
	memset(tt->secret, 0, sizeof(tt->secret));
	memset(tt->token, 0, sizeof(tt->token));
	sodium_memzero(tt->secret_bin, sizeof(tt->secret_bin));
	psi_seal_table_free(&tt->opened);
	psi_seal_pool_free(&tt->sealers);
	free(tt);
}

const ps_transport_ops psi_tcp_ops = {
    .name = "tcp",
    .create = tcp_create,
    .listen = tcp_listen,
    .connect = tcp_connect,
    .connect_start = tcp_connect_start,
    .connect_wait = tcp_connect_wait,
    .send = tcp_send,
    .send_flow = tcp_send_flow,
    .recv = tcp_recv,
    .wake = tcp_wake,
    .disconnect = tcp_disconnect,
    .caps = tcp_caps,
    .reg = tcp_reg,
    .stop = tcp_stop,
    .free = tcp_free,
};
