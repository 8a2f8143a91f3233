/*
 * tests/tools/fuzz_sender.c - throws malformed messages at a running node.
 *
 *   fuzz_sender ENDPOINT COUNT SEED
 *   fuzz_sender ENDPOINT big BYTES
 *   fuzz_sender ENDPOINT flood COUNT BYTES
 *   fuzz_sender ENDPOINT curve SERVER_PUB_FILE CLIENT_KEY_DIR COUNT SEED
 *   fuzz_sender ENDPOINT secret SECRET COUNT SEED
 *   fuzz_sender ENDPOINT sealed SECRET COUNT SEED
 *   fuzz_sender ENDPOINT impersonate SECRET JOB_ID SENDER TRANSPORT_ID
 *   fuzz_sender ENDPOINT register ROLE NODE_ENDPOINT
 *   fuzz_sender ENDPOINT forge JOB_ID COUNT SEED
 *   fuzz_sender ENDPOINT tuner FORGED GENUINE
 *
 * Connects raw ZeroMQ DEALER sockets (one with an 8-byte identity like a
 * real node, one with a short one) to ENDPOINT and sends COUNT messages
 * drawn from: random frames; truncated headers; well-formed headers with
 * random fields (types, job ids, senders, partitions, lengths) and random
 * payloads; headers whose payload_len disagrees with the payload; REGISTER
 * with garbage bodies; too many frames. The target must drop all of them
 * and go on serving; the test around this program checks that it did.
 *
 * big: one well-formed PUSH header followed by a payload frame of BYTES;
 * exits 0 once the target has dropped the connection (seen through a
 * socket monitor: ZMQ_MAXMSGSIZE at work), 1 if the connection is still
 * up after 120 s (a hang guard: the target accepted the frame).
 * flood: COUNT well-formed PUSH messages of BYTES payload each (a node
 * before its WELCOME keeps such messages up to its bounds), then exits 0
 * once all have left.
 * curve: a CURVE client (security.mode = curve) with the key pair in
 * CLIENT_KEY_DIR (job.pub, job.key) and the server key in SERVER_PUB_FILE;
 * prints "handshake succeeded" and sends COUNT random messages, or prints
 * "handshake refused" when the server's ZAP handler says no (exit 0 both
 * ways: the test reads which).
 * secret: the same as a PLAIN client presenting SECRET (security.mode =
 * secret), as a node of the job does.
 * sealed: a sealed client (security.mode = sealed, transport/seal.h)
 * proving SECRET with a token of its own; prints "handshake succeeded"
 * or "handshake refused". Admitted, it sends COUNT well-formed headers
 * with random fields, each sealed as a node seals (the node opens them,
 * and its protocol drops them), then three that must not open: one
 * whose tag has a bit flipped ("altered"), the last sealed one again
 * ("replayed"), and one not sealed at all ("unsealed"); exits 0 once all
 * have left.
 * impersonate: a holder of the job's SECRET with a token of its own
 * passing for node SENDER (decimal) of job JOB_ID (hex): the routing id
 * of that node's TRANSPORT_ID (hex) on a lane the node does not use (its
 * own connection's id is refused while it is connected), one HEARTBEAT
 * in its name; prints "handshake succeeded" and exits 0 once the message
 * has left.
 * register: a well-formed REGISTER of a ROLE (server or worker) node that
 * says it listens on NODE_ENDPOINT (say, one nobody listens on), from a
 * routing id that matches its transport id, as a real node's would; exits
 * 0 once it has left.
 * forge: COUNT well-formed messages of the running job JOB_ID (hex) that
 * claim to come from its nodes 0-4: acknowledgements (PUSH_ACK,
 * PARAMS_ACK), CREDITs, PARAMS and PUSHes with matching payloads, i.e.
 * what could enlarge a credit window or corrupt values if believed, and
 * TIMINGS (what would make the scheduler's measured model).
 * tuner FORGED GENUINE: a tuner at ENDPOINT (bound, for a job started
 * with tune.endpoint = ENDPOINT): waits for the scheduler's TUNE_HELLO,
 * then, from a connection of its own, answers as a member could (the job
 * id right, the hello's nonce wrong) and sends CREDIT FORGED; reads a
 * line from stdin (the test's go, once the scheduler logged the drop),
 * then answers as the tuner (the nonce it was sent) and sends CREDIT
 * GENUINE; exits 0 once the scheduler has confirmed that CREDIT.
 * bomb KIND BYTES [COUNT]: one message built to make its receiver
 * allocate or hold much more than it is worth, then exits 0 once it has
 * left:
 *   header    a header frame of BYTES: a msgpack array of 1s (1 byte
 *             each; decoding it would allocate a 24-byte object for each)
 *   register  a REGISTER header and a body of BYTES: an array of 1s
 *   welcome   a WELCOME header (from node 0) and a body of BYTES: the same
 *   frames    a PUSH header then COUNT frames of BYTES each (ZeroMQ
 *             delivers a message only once all its frames are in)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "proto/wire.h"
#include "transport/keys.h"
#include "transport/seal.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* splitmix64: deterministic for a seed */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void fill(uint8_t *buf, size_t n)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = (uint8_t)rnd();
}

static void send_frames(void *sock, uint8_t **frames, size_t *lens, int n)
{
	for (int i = 0; i < n; i++)
		zmq_send(sock, frames[i], lens[i],
			 (i + 1 < n ? ZMQ_SNDMORE : 0) | ZMQ_DONTWAIT);
}

static void one_message(void *sock)
{
	static uint8_t hdr[PS_WIRE_HEADER_MAX], payload[70000], extra[64];
	uint8_t *frames[4] = {hdr, payload, extra, extra};
	size_t lens[4] = {0, 0, sizeof(extra), 1};
	ps_wire_header h;
	size_t hlen = 0;
	int kind = (int)(rnd() % 6);

	memset(&h, 0, sizeof(h));
	h.version = rnd() % 8 ? PS_WIRE_VERSION : (uint32_t)rnd();
	h.type = (uint32_t)(rnd() % (PS_MSG_TYPE_END + 2));
	h.job_id = rnd() % 4 ? rnd() : 0;
	h.sender = (uint32_t)(rnd() % 8);
	h.key = (uint32_t)(rnd() % 8);
	h.partition = (uint32_t)(rnd() % 64);
	h.iteration = rnd() % 4;
	h.priority = (int32_t)rnd();
	lens[1] = rnd() % 3 ? rnd() % 4096 : rnd() % sizeof(payload);
	fill(payload, lens[1]);
	h.payload_len = rnd() % 2 ? lens[1] : rnd();
	if (h.version == PS_WIRE_VERSION && h.type >= PS_MSG_TYPE_END)
		h.type = PS_MSG_PUSH;
	ps_wire_header_encode(&h, hdr, sizeof(hdr), &hlen);
	lens[0] = hlen;
	switch (kind) {
	case 0: /* random bytes as header */
		lens[0] = rnd() % sizeof(hdr);
		fill(hdr, lens[0]);
		send_frames(sock, frames, lens, 1 + (int)(rnd() % 2));
		break;
	case 1: /* truncated header */
		lens[0] = hlen ? rnd() % hlen : 0;
		send_frames(sock, frames, lens, 2);
		break;
	case 2: /* well-formed header, random payload */
		send_frames(sock, frames, lens, 2);
		break;
	case 3: /* header only */
		send_frames(sock, frames, lens, 1);
		break;
	case 4: /* too many frames */
		send_frames(sock, frames, lens, 4);
		break;
	default: /* REGISTER with a garbage body */
		h.type = PS_MSG_REGISTER;
		h.job_id = 0;
		h.payload_len = lens[1];
		ps_wire_header_encode(&h, hdr, sizeof(hdr), &hlen);
		lens[0] = hlen;
		send_frames(sock, frames, lens, 2);
		break;
	}
}

/* Waits (up to timeout_ms, -1: forever) for one of the events in mask
 * on the monitor socket; returns the event or 0. */
static int wait_event(void *mon, int mask, int timeout_ms)
{
	zmq_pollitem_t it = {.socket = mon, .events = ZMQ_POLLIN};
	while (zmq_poll(&it, 1, timeout_ms) == 1) {
		uint8_t ev[6];
		char addr[256];
		int n = zmq_recv(mon, ev, sizeof(ev), 0);
		zmq_recv(mon, addr, sizeof(addr), 0);
		if (n >= 2 && ((ev[0] | ev[1] << 8) & mask))
			return ev[0] | ev[1] << 8;
	}
	return 0;
}

/* A PUSH header for a payload of len bytes from a made-up worker. */
static size_t push_header(uint8_t *hdr, size_t len)
{
	ps_wire_header h = {.version = PS_WIRE_VERSION, .type = PS_MSG_PUSH,
			    .job_id = rnd() | 1, .sender = 3, .key = 0,
			    .partition = 0, .iteration = 0,
			    .payload_len = len};
	size_t hlen = 0;
	ps_wire_header_encode(&h, hdr, PS_WIRE_HEADER_MAX, &hlen);
	return hlen;
}

static int big_or_flood(const char *ep, int big, long count, size_t bytes)
{
	void *ctx = zmq_ctx_new(), *sock = zmq_socket(ctx, ZMQ_DEALER),
	     *mon = zmq_socket(ctx, ZMQ_PAIR);
	uint8_t id[8], hdr[PS_WIRE_HEADER_MAX];
	int linger = -1, rc = 0;
	uint8_t *payload = calloc(1, bytes ? bytes : 1);

	fill(id, sizeof(id));
	zmq_setsockopt(sock, ZMQ_ROUTING_ID, id, sizeof(id));
	zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger));
	if (!payload ||
	    zmq_socket_monitor(sock, "inproc://fuzz-sender-monitor",
			       ZMQ_EVENT_HANDSHAKE_SUCCEEDED |
				   ZMQ_EVENT_DISCONNECTED) != 0 ||
	    zmq_connect(mon, "inproc://fuzz-sender-monitor") != 0 ||
	    zmq_connect(sock, ep) != 0) {
		fprintf(stderr, "fuzz_sender: cannot connect to %s: %s\n", ep,
			zmq_strerror(zmq_errno()));
		return 1;
	}
	wait_event(mon, ZMQ_EVENT_HANDSHAKE_SUCCEEDED, -1);
	for (long i = 0; i < count; i++) {
		size_t hlen = push_header(hdr, bytes);
		zmq_send(sock, hdr, hlen, ZMQ_SNDMORE);
		zmq_send(sock, payload, bytes, 0);
	}
	if (big) {
		if (wait_event(mon, ZMQ_EVENT_DISCONNECTED, 120000)) {
			printf("fuzz_sender: %s dropped the connection after "
			       "a %zu-byte frame\n", ep, bytes);
		} else {
			printf("fuzz_sender: %s took a %zu-byte frame (still "
			       "connected after 120 s)\n", ep, bytes);
			rc = 1;
		}
		linger = 0;
		zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger));
	} else {
		printf("fuzz_sender: %ld messages of %zu bytes sent to %s\n",
		       count, bytes, ep);
	}
	zmq_close(sock);
	zmq_close(mon);
	zmq_ctx_term(ctx); /* flood: returns once every message has left */
	free(payload);
	return rc;
}

/* The first line of a key file (Z85) into key[41]. */
static int read_key_file(const char *path, char *key)
{
	FILE *f = fopen(path, "r");
	if (!f || !fgets(key, 41, f)) {
		fprintf(stderr, "fuzz_sender: cannot read %s\n", path);
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	key[40] = '\0';
	return 0;
}

/* A client of a node that checks who connects: PLAIN with secret, or
 * else CURVE with the server's public key and the pair in dir. */
/* Connects sock (its security set) to ep, watched by mon (a PAIR in
 * sock's context): the handshake's first event, said on stdout when it
 * succeeded; -1 if ep is no endpoint. */
static int handshake(void *sock, void *mon, const char *ep)
{
	static unsigned seq;
	char addr[64];

	snprintf(addr, sizeof(addr), "inproc://fuzz-sender-monitor-%u", seq++);
	zmq_socket_monitor(sock, addr,
			   ZMQ_EVENT_HANDSHAKE_SUCCEEDED |
			       ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
			       ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
			       ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL);
	zmq_connect(mon, addr);
	if (zmq_connect(sock, ep) != 0) {
		fprintf(stderr, "fuzz_sender: cannot connect to %s\n", ep);
		return -1;
	}
	int ev = wait_event(mon, 0xffff, -1);
	if (ev == ZMQ_EVENT_HANDSHAKE_SUCCEEDED)
		printf("fuzz_sender: %s: handshake succeeded\n", ep);
	return ev;
}

static int secure_client(const char *ep, const char *secret,
			 const char *server_pub, const char *dir, long count)
{
	char spub[41], cpub[41], csec[41], path[4096];
	if (!secret) {
		snprintf(path, sizeof(path), "%s/job.pub", dir);
		if (read_key_file(server_pub, spub) ||
		    read_key_file(path, cpub))
			return 1;
		snprintf(path, sizeof(path), "%s/job.key", dir);
		if (read_key_file(path, csec))
			return 1;
	}
	void *ctx = zmq_ctx_new(), *sock = zmq_socket(ctx, ZMQ_DEALER),
	     *mon = zmq_socket(ctx, ZMQ_PAIR);
	uint8_t id[8];
	int linger = 1000;
	fill(id, sizeof(id));
	zmq_setsockopt(sock, ZMQ_ROUTING_ID, id, sizeof(id));
	zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger));
	if (secret) {
		zmq_setsockopt(sock, ZMQ_PLAIN_USERNAME, "ordo", 4);
		zmq_setsockopt(sock, ZMQ_PLAIN_PASSWORD, secret,
			       strlen(secret));
	} else {
		zmq_setsockopt(sock, ZMQ_CURVE_SERVERKEY, spub, 40);
		zmq_setsockopt(sock, ZMQ_CURVE_PUBLICKEY, cpub, 40);
		zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, csec, 40);
	}
	int ev = handshake(sock, mon, ep);
	if (ev < 0)
		return 1;
	if (ev == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
		for (long i = 0; i < count; i++)
			one_message(sock);
	} else {
		printf("fuzz_sender: %s: handshake refused (event 0x%x)\n", ep,
		       (unsigned)ev);
		linger = 0;
		zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger));
	}
	zmq_close(sock);
	zmq_close(mon);
	zmq_ctx_term(ctx);
	return 0;
}

/* Sends one message sealed by seal (sealed_client): a random
 * well-formed header, a random payload; with flip, its tag altered. */
static void send_sealed(void *sock, psi_seal *seal, int flip,
			uint8_t *frames[2], size_t lens[2])
{
	static uint8_t hdr[PS_WIRE_HEADER_MAX], payload[4096];
	ps_wire_header h = {.version = PS_WIRE_VERSION,
			    .type = (uint32_t)(rnd() % PS_MSG_TYPE_END),
			    .job_id = rnd(),
			    .sender = (uint32_t)(rnd() % 8),
			    .partition = (uint32_t)(rnd() % 64),
			    .iteration = rnd() % 4};
	size_t hlen = 0, plen = rnd() % sizeof(payload);

	fill(payload, plen);
	h.payload_len = plen;
	ps_wire_header_encode(&h, hdr, sizeof(hdr), &hlen);
	lens[0] = psi_seal_frame_len(hlen, plen);
	lens[1] = plen;
	psi_seal_message(seal, NULL, hdr, hlen, payload, plen, frames[0],
			 frames[1]);
	if (flip)
		frames[0][lens[0] - 1] ^= 1;
	send_frames(sock, frames, lens, plen ? 2 : 1);
}

static int sealed_client(const char *ep, const char *secret_hex, long count)
{
	static uint8_t sealed_hdr[PS_WIRE_HEADER_MAX + PS_SEAL_OVERHEAD +
				  PS_SEAL_TAG_LEN],
	    sealed_payload[4096];
	uint8_t secret[PS_SEAL_KEY_LEN], token[PS_SEAL_TOKEN_LEN],
	    conn[PS_SEAL_CONN_LEN], id[8], *frames[2] = {sealed_hdr,
							 sealed_payload};
	char proof[PS_SEAL_PROOF_HEX + 1];
	size_t lens[2];
	psi_seal *seal;
	int linger = 2000;

	if (!ps_secret_valid(secret_hex)) {
		fprintf(stderr, "fuzz_sender: SECRET is not 64 hexadecimal "
			"digits\n");
		return 2;
	}
	ps_secret_bytes(secret_hex, secret);
	fill(token, sizeof(token));
	fill(conn, sizeof(conn));
	if (psi_seal_proof_make(secret, token, conn, proof) != 0 ||
	    psi_seal_new(secret, ps_token_kid_bytes(token), conn, &seal) != 0) {
		fprintf(stderr, "fuzz_sender: cannot seal\n");
		return 1;
	}
	void *ctx = zmq_ctx_new(), *sock = zmq_socket(ctx, ZMQ_DEALER),
	     *mon = zmq_socket(ctx, ZMQ_PAIR);
	fill(id, sizeof(id));
	zmq_setsockopt(sock, ZMQ_ROUTING_ID, id, sizeof(id));
	zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger));
	zmq_setsockopt(sock, ZMQ_PLAIN_USERNAME, PS_SEAL_USER,
		       strlen(PS_SEAL_USER));
	zmq_setsockopt(sock, ZMQ_PLAIN_PASSWORD, proof, strlen(proof));
	int ev = handshake(sock, mon, ep);
	if (ev < 0)
		return 1;
	if (ev == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
		for (long i = 0; i < count; i++)
			send_sealed(sock, seal, 0, frames, lens);
		send_sealed(sock, seal, 1, frames, lens);  /* altered */
		send_sealed(sock, seal, 0, frames, lens);
		send_frames(sock, frames, lens, lens[1] ? 2 : 1); /* replayed */
		ps_wire_header h = {.version = PS_WIRE_VERSION,
				    .type = PS_MSG_HEARTBEAT}; /* unsealed */
		ps_wire_header_encode(&h, sealed_hdr, PS_WIRE_HEADER_MAX,
				      &lens[0]);
		send_frames(sock, frames, lens, 1);
	} else {
		printf("fuzz_sender: %s: handshake refused (event 0x%x)\n", ep,
		       (unsigned)ev);
		linger = 0;
		zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger));
	}
	psi_seal_free(&seal);
	zmq_close(sock);
	zmq_close(mon);
	zmq_ctx_term(ctx);
	return 0;
}

static int send_register(const char *ep, const char *role,
			 const char *node_ep)
{
	void *ctx = zmq_ctx_new(), *sock = zmq_socket(ctx, ZMQ_DEALER);
	uint64_t tid = rnd();
	uint8_t id[8], hdr[PS_WIRE_HEADER_MAX];
	int linger = -1;
	ps_tensor_desc t = {"fuzz.weight", 10};
	ps_wire_register r = {.self = {.role = strcmp(role, "server") == 0
						    ? PS_ROLE_SERVER
						    : PS_ROLE_WORKER,
				       .pid = 99999,
				       .transport_id = tid,
				       .host = "intruder"},
			      .num_tensors = 1,
			      .tensors = &t};
	void *body;
	size_t blen, hlen;

	snprintf(r.self.endpoint, sizeof(r.self.endpoint), "%s", node_ep);
	if (r.self.role == PS_ROLE_SERVER)
		r.num_tensors = 0, r.tensors = NULL;
	for (int i = 0; i < 8; i++)
		id[i] = (uint8_t)(tid >> (8 * i));
	zmq_setsockopt(sock, ZMQ_ROUTING_ID, id, sizeof(id));
	zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger));
	if (ps_wire_register_encode(&r, &body, &blen) != PS_OK ||
	    zmq_connect(sock, ep) != 0)
		return 1;
	ps_wire_header h = {.version = PS_WIRE_VERSION,
			    .type = PS_MSG_REGISTER,
			    .payload_len = blen};
	ps_wire_header_encode(&h, hdr, sizeof(hdr), &hlen);
	zmq_send(sock, hdr, hlen, ZMQ_SNDMORE);
	zmq_send(sock, body, blen, 0);
	zmq_close(sock);
	zmq_ctx_term(ctx); /* returns once the REGISTER has left */
	free(body);
	printf("fuzz_sender: a %s's REGISTER (listening on %s) sent to %s\n",
	       role, node_ep, ep);
	return 0;
}

static int forge(const char *ep, uint64_t job, long count)
{
	static const uint32_t types[] = {PS_MSG_PUSH_ACK, PS_MSG_PARAMS_ACK,
					 PS_MSG_CREDIT, PS_MSG_PARAMS,
					 PS_MSG_PUSH, PS_MSG_TIMINGS};
	void *ctx = zmq_ctx_new(), *sock = zmq_socket(ctx, ZMQ_DEALER);
	uint8_t id[8], hdr[PS_WIRE_HEADER_MAX], payload[4096];
	int linger = -1;

	fill(id, sizeof(id));
	zmq_setsockopt(sock, ZMQ_ROUTING_ID, id, sizeof(id));
	zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger));
	if (zmq_connect(sock, ep) != 0)
		return 1;
	for (long i = 0; i < count; i++) {
		ps_wire_header h = {.version = PS_WIRE_VERSION,
				    .type = types[rnd() % 6],
				    .job_id = job,
				    .sender = (uint32_t)(rnd() % 5),
				    .key = (uint32_t)(rnd() % 2),
				    .partition = (uint32_t)(rnd() % 2),
				    .iteration = rnd() % 8};
		size_t plen = h.type == PS_MSG_PARAMS ||
					      h.type == PS_MSG_PUSH ||
					      h.type == PS_MSG_TIMINGS
				      ? 4 * (1 + rnd() % 1000)
				      : 0;
		void *body = NULL;
		size_t blen = 0, hlen;
		if (h.type == PS_MSG_CREDIT) {
			ps_wire_u64_encode(1ull << 40, &body, &blen);
			plen = blen;
		} else {
			fill(payload, plen);
		}
		h.payload_len = plen;
		ps_wire_header_encode(&h, hdr, sizeof(hdr), &hlen);
		zmq_send(sock, hdr, hlen, plen ? ZMQ_SNDMORE : 0);
		if (plen)
			zmq_send(sock, body ? body : payload, plen, 0);
		free(body);
	}
	zmq_close(sock);
	zmq_ctx_term(ctx);
	printf("fuzz_sender: %ld forged messages of job %016llx sent to %s\n",
	       count, (unsigned long long)job, ep);
	return 0;
}

/* BYTES of msgpack: an array32 of BYTES - 5 positive fixints 1. */
static uint8_t *ones_array(size_t bytes)
{
	uint8_t *b = malloc(bytes);
	uint32_t n = (uint32_t)(bytes - 5);

	if (!b)
		return NULL;
	b[0] = 0xdd;
	for (int i = 0; i < 4; i++)
		b[1 + i] = (uint8_t)(n >> (24 - 8 * i));
	memset(b + 5, 0x01, bytes - 5);
	return b;
}

static int bomb(const char *ep, const char *kind, size_t bytes, long count)
{
	void *ctx = zmq_ctx_new(), *sock = zmq_socket(ctx, ZMQ_DEALER);
	uint8_t id[8], hdr[PS_WIRE_HEADER_MAX], *big = NULL;
	int linger = -1, rc = 0;
	size_t hlen = 0;

	if ((strcmp(kind, "frames") != 0 && bytes < 5) || bytes > UINT32_MAX) {
		fprintf(stderr, "fuzz_sender: bomb: BYTES from 5 to 2^32-1\n");
		return 2;
	}
	fill(id, sizeof(id));
	zmq_setsockopt(sock, ZMQ_ROUTING_ID, id, sizeof(id));
	zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger));
	if (zmq_connect(sock, ep) != 0) {
		fprintf(stderr, "fuzz_sender: cannot connect to %s: %s\n", ep,
			zmq_strerror(zmq_errno()));
		return 1;
	}
	if (strcmp(kind, "header") == 0) {
		big = ones_array(bytes);
		if (!big || zmq_send(sock, big, bytes, 0) < 0)
			rc = 1;
	} else if (strcmp(kind, "register") == 0 ||
		   strcmp(kind, "welcome") == 0) {
		ps_wire_header h = {.version = PS_WIRE_VERSION,
				    .type = kind[0] == 'r' ? PS_MSG_REGISTER
							   : PS_MSG_WELCOME,
				    .job_id = kind[0] == 'r' ? 0 : rnd() | 1,
				    .payload_len = bytes};
		big = ones_array(bytes);
		ps_wire_header_encode(&h, hdr, sizeof(hdr), &hlen);
		if (!big || zmq_send(sock, hdr, hlen, ZMQ_SNDMORE) < 0 ||
		    zmq_send(sock, big, bytes, 0) < 0)
			rc = 1;
	} else if (strcmp(kind, "frames") == 0 && count > 0) {
		big = calloc(1, bytes);
		hlen = push_header(hdr, bytes);
		if (!big || zmq_send(sock, hdr, hlen, ZMQ_SNDMORE) < 0)
			rc = 1;
		for (long i = 0; rc == 0 && i < count; i++) {
			/* zero-copy: one buffer for every frame */
			zmq_msg_t m;
			zmq_msg_init_data(&m, big, bytes, NULL, NULL);
			if (zmq_msg_send(&m, sock,
					 i + 1 < count ? ZMQ_SNDMORE : 0) < 0) {
				zmq_msg_close(&m);
				rc = 1;
			}
		}
	} else {
		fprintf(stderr, "fuzz_sender: bomb: KIND is header, register, "
			"welcome or frames (with a COUNT)\n");
		rc = 2;
	}
	zmq_close(sock);
	zmq_ctx_term(ctx); /* returns once the message has left */
	if (rc == 0)
		printf("fuzz_sender: bomb %s of %zu bytes%s sent to %s\n",
		       kind, bytes, count > 0 ? " per frame" : "", ep);
	else if (rc == 1)
		fprintf(stderr, "fuzz_sender: bomb %s: %s\n", kind,
			big ? zmq_strerror(zmq_errno()) : "out of memory");
	free(big);
	return rc;
}

/* A TUNE_HELLO carrying `nonce`, then a CREDIT of `credit`, from a new
 * connection to the scheduler at ep. */
static int tuner_answer(void *ctx, const char *ep, uint64_t job,
			uint64_t nonce, uint64_t credit)
{
	void *sock = zmq_socket(ctx, ZMQ_DEALER), *body = NULL;
	uint8_t id[8], hdr[PS_WIRE_HEADER_MAX];
	size_t hlen, blen;
	int linger = -1;
	ps_wire_header hello = {.version = PS_WIRE_VERSION,
				.type = PS_MSG_TUNE_HELLO,
				.job_id = job,
				.iteration = nonce};
	ps_wire_header cr = {.version = PS_WIRE_VERSION,
			     .type = PS_MSG_CREDIT,
			     .job_id = job};

	fill(id, sizeof(id));
	zmq_setsockopt(sock, ZMQ_ROUTING_ID, id, sizeof(id));
	zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger));
	if (zmq_connect(sock, ep) != 0 ||
	    ps_wire_u64_encode(credit, &body, &blen) != PS_OK)
		return 1;
	cr.payload_len = blen;
	ps_wire_header_encode(&hello, hdr, sizeof(hdr), &hlen);
	zmq_send(sock, hdr, hlen, 0);
	ps_wire_header_encode(&cr, hdr, sizeof(hdr), &hlen);
	zmq_send(sock, hdr, hlen, ZMQ_SNDMORE);
	zmq_send(sock, body, blen, 0);
	free(body);
	zmq_close(sock); /* lingers: the context's end waits for it */
	return 0;
}

static int fake_tuner(const char *ep, uint64_t forged, uint64_t genuine)
{
	void *ctx = zmq_ctx_new(), *router = zmq_socket(ctx, ZMQ_ROUTER);
	uint8_t id[256], hdr[PS_WIRE_HEADER_MAX], body[PS_REASON_MAX + 64];
	char sched_ep[PS_REASON_MAX], why[256], line[16];
	ps_wire_header h;
	int n, bn;

	if (zmq_bind(router, ep) != 0) {
		fprintf(stderr, "fuzz_sender: tuner: cannot bind %s: %s\n", ep,
			zmq_strerror(zmq_errno()));
		return 1;
	}
	printf("fuzz_sender: tuner: listening on %s\n", ep);
	fflush(stdout);
	/* the scheduler's hello: its routing id, the header, its endpoint */
	if (zmq_recv(router, id, sizeof(id), 0) < 0)
		return 1;
	n = zmq_recv(router, hdr, sizeof(hdr), 0);
	bn = zmq_recv(router, body, sizeof(body), 0);
	if (n < 0 || bn < 0 ||
	    ps_wire_header_decode(hdr, (size_t)n, &h, why, sizeof(why)) !=
		PS_OK ||
	    h.type != PS_MSG_TUNE_HELLO ||
	    ps_wire_reason_decode(body, (size_t)bn, sched_ep, sizeof(sched_ep),
				  why, sizeof(why)) != PS_OK) {
		fprintf(stderr, "fuzz_sender: tuner: not a TUNE_HELLO\n");
		return 1;
	}
	printf("fuzz_sender: tuner: hello from job %016llx at %s\n",
	       (unsigned long long)h.job_id, sched_ep);
	if (tuner_answer(ctx, sched_ep, h.job_id, h.iteration ^ 1, forged))
		return 1;
	printf("fuzz_sender: tuner: forged TUNE_HELLO and CREDIT %llu sent\n",
	       (unsigned long long)forged);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	if (tuner_answer(ctx, sched_ep, h.job_id, h.iteration, genuine))
		return 1;
	printf("fuzz_sender: tuner: TUNE_HELLO and CREDIT %llu sent\n",
	       (unsigned long long)genuine);
	fflush(stdout);
	/* stay attached until the scheduler confirms the CREDIT (a CREDIT
	 * back, naming the iteration it applies from): a tuner gone earlier
	 * is dropped, and its CREDIT with it (120 s: a hang guard) */
	int timeout = 120000;
	zmq_setsockopt(router, ZMQ_RCVTIMEO, &timeout, sizeof(timeout));
	for (;;) {
		int more;
		size_t ml = sizeof(more);

		if (zmq_recv(router, id, sizeof(id), 0) < 0)
			return 1;
		n = zmq_recv(router, hdr, sizeof(hdr), 0);
		zmq_getsockopt(router, ZMQ_RCVMORE, &more, &ml);
		while (more) {
			(void)zmq_recv(router, body, sizeof(body), 0);
			zmq_getsockopt(router, ZMQ_RCVMORE, &more, &ml);
		}
		if (n > 0 &&
		    ps_wire_header_decode(hdr, (size_t)n, &h, why,
					  sizeof(why)) == PS_OK &&
		    h.type == PS_MSG_CREDIT)
			break;
	}
	printf("fuzz_sender: tuner: the scheduler applies it from iteration "
	       "%llu\n",
	       (unsigned long long)h.iteration);
	zmq_close(router);
	zmq_ctx_term(ctx);
	return 0;
}

static int impersonate(const char *ep, const char *secret, uint64_t job,
		       uint32_t sender, uint64_t tid)
{
	void *ctx = zmq_ctx_new(), *sock = zmq_socket(ctx, ZMQ_DEALER),
	     *mon = zmq_socket(ctx, ZMQ_PAIR);
	uint8_t id[9], hdr[PS_WIRE_HEADER_MAX];
	char pw[129];
	int linger = -1;
	size_t hlen;

	/* the member's routing id on a lane it does not use (15): the one
	 * it uses is refused while the member is connected (tcp.c) */
	for (int i = 0; i < 8; i++)
		id[i] = (uint8_t)(tid >> (8 * i));
	id[8] = 15;
	/* the secret, then a token of its own (any 64 hex digits) */
	snprintf(pw, sizeof(pw), "%s%016llx%016llx%016llx%016llx", secret,
		 (unsigned long long)rnd(), (unsigned long long)rnd(),
		 (unsigned long long)rnd(), (unsigned long long)rnd());
	zmq_setsockopt(sock, ZMQ_ROUTING_ID, id, sizeof(id));
	zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger));
	zmq_setsockopt(sock, ZMQ_PLAIN_USERNAME, "ordo", 4);
	zmq_setsockopt(sock, ZMQ_PLAIN_PASSWORD, pw, strlen(pw));
	zmq_socket_monitor(sock, "inproc://fuzz-sender-imp",
			   ZMQ_EVENT_HANDSHAKE_SUCCEEDED |
			       ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
			       ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
			       ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL);
	zmq_connect(mon, "inproc://fuzz-sender-imp");
	if (zmq_connect(sock, ep) != 0)
		return 1;
	if (wait_event(mon, 0xffff, -1) != ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
		printf("fuzz_sender: %s: handshake refused\n", ep);
		return 1;
	}
	printf("fuzz_sender: %s: handshake succeeded\n", ep);
	ps_wire_header h = {.version = PS_WIRE_VERSION,
			    .type = PS_MSG_HEARTBEAT,
			    .job_id = job,
			    .sender = sender,
			    .iteration = 1};
	ps_wire_header_encode(&h, hdr, sizeof(hdr), &hlen);
	zmq_send(sock, hdr, hlen, 0);
	zmq_close(sock);
	zmq_close(mon);
	zmq_ctx_term(ctx); /* returns once the message has left */
	return 0;
}

int main(int argc, char **argv)
{
	void *ctx, *socks[2];
	long count;
	int linger = 2000;

	if (argc == 4 && strcmp(argv[2], "big") == 0)
		return big_or_flood(argv[1], 1, 1, strtoull(argv[3], NULL, 10));
	if (argc == 6 && strcmp(argv[2], "forge") == 0) {
		rng_state = strtoull(argv[5], NULL, 10);
		return forge(argv[1], strtoull(argv[3], NULL, 16),
			     strtol(argv[4], NULL, 10));
	}
	if (argc == 5 && strcmp(argv[2], "register") == 0) {
		rng_state = (uint64_t)getpid();
		return send_register(argv[1], argv[3], argv[4]);
	}
	if (argc == 7 && strcmp(argv[2], "curve") == 0) {
		rng_state = strtoull(argv[6], NULL, 10);
		return secure_client(argv[1], NULL, argv[3], argv[4],
				     strtol(argv[5], NULL, 10));
	}
	if (argc == 7 && strcmp(argv[2], "impersonate") == 0) {
		rng_state = (uint64_t)getpid();
		return impersonate(argv[1], argv[3],
				   strtoull(argv[4], NULL, 16),
				   (uint32_t)strtoul(argv[5], NULL, 10),
				   strtoull(argv[6], NULL, 16));
	}
	if (argc == 6 && strcmp(argv[2], "secret") == 0) {
		rng_state = strtoull(argv[5], NULL, 10);
		return secure_client(argv[1], argv[3], NULL, NULL,
				     strtol(argv[4], NULL, 10));
	}
	if (argc == 6 && strcmp(argv[2], "sealed") == 0 &&
	    strlen(argv[3]) == 2 * PS_SEAL_KEY_LEN) {
		rng_state = strtoull(argv[5], NULL, 10);
		return sealed_client(argv[1], argv[3],
				     strtol(argv[4], NULL, 10));
	}
	if ((argc == 5 || argc == 6) && strcmp(argv[2], "bomb") == 0) {
		rng_state = (uint64_t)getpid();
		return bomb(argv[1], argv[3], strtoull(argv[4], NULL, 10),
			    argc == 6 ? strtol(argv[5], NULL, 10) : 0);
	}
	if (argc == 5 && strcmp(argv[2], "tuner") == 0) {
		rng_state = (uint64_t)getpid();
		return fake_tuner(argv[1], strtoull(argv[3], NULL, 10),
				  strtoull(argv[4], NULL, 10));
	}
	if (argc == 5 && strcmp(argv[2], "flood") == 0)
		return big_or_flood(argv[1], 0, strtol(argv[3], NULL, 10),
				    strtoull(argv[4], NULL, 10));
	if (argc != 4) {
		fprintf(stderr, "usage: fuzz_sender ENDPOINT COUNT SEED | "
			"ENDPOINT big BYTES | ENDPOINT flood COUNT BYTES | "
			"ENDPOINT curve SERVER_PUB CLIENT_DIR COUNT SEED | "
			"ENDPOINT secret SECRET COUNT SEED | "
			"ENDPOINT sealed SECRET COUNT SEED | "
			"ENDPOINT impersonate SECRET JOB_ID SENDER TID | "
			"ENDPOINT register ROLE NODE_ENDPOINT | "
			"ENDPOINT forge JOB_ID COUNT SEED | "
			"ENDPOINT tuner FORGED GENUINE | "
			"ENDPOINT bomb KIND BYTES [COUNT]\n");
		return 2;
	}
	count = strtol(argv[2], NULL, 10);
	rng_state = strtoull(argv[3], NULL, 10);
	ctx = zmq_ctx_new();
	for (int i = 0; i < 2; i++) {
		uint8_t id[8];
		fill(id, sizeof(id));
		socks[i] = zmq_socket(ctx, ZMQ_DEALER);
		zmq_setsockopt(socks[i], ZMQ_ROUTING_ID, id, i ? 5 : 8);
		zmq_setsockopt(socks[i], ZMQ_LINGER, &linger, sizeof(linger));
		if (zmq_connect(socks[i], argv[1]) != 0) {
			fprintf(stderr, "fuzz_sender: cannot connect to %s: "
				"%s\n", argv[1], zmq_strerror(zmq_errno()));
			return 1;
		}
	}
	for (long i = 0; i < count; i++)
		one_message(socks[rnd() % 2]);
	for (int i = 0; i < 2; i++)
		zmq_close(socks[i]);
	zmq_ctx_term(ctx);
	printf("fuzz_sender: %ld messages sent to %s\n", count, argv[1]);
	return 0;
}
