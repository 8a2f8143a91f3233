/*
 * tests/transport/conformance.c - one cmocka suite that every transport
 * backend must pass: `transport_conformance tcp` and `... rdma`.
 *
 * The suite uses only transport/transport.h, so a new backend runs the same
 * tests unchanged; the one exception is test_garbage, which speaks raw
 * ZeroMQ to the listener and runs for "tcp" only. Each test creates its own
 * transports in this process (a listener on ORDO_TEST_HOST, default
 * 127.0.0.1, port 0, and senders connecting to its endpoint); the test
 * thread owns them all, which the owner-thread rule allows since they are
 * separate objects. For rdma, ORDO_TEST_RDMA_GID_INDEX (default -1,
 * automatic) is every transport's opts.rdma_gid_index: with an index the
 * backend sets up its queue pairs itself (transport/rdma.c).
 *
 * Exit status 77 (CTest: skipped) when the named backend is not built or
 * reports its hardware absent (PS_ENOTSUP from create or listen).
 *
 * Time. No test asserts that something happens within a time: a busy
 * machine makes everything slower, so only lower bounds are checked (a
 * recv(100) does not return before ~100 ms). What must happen is waited
 * for with PATIENCE_MS, and a test that hangs is killed by the watchdog:
 * both only end a hang. "Does not wait" is checked by a setup in which
 * waiting would mean waiting forever.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h> /* test_garbage only (tcp) */

#include "support/loopback.h"
#include "transport/keys.h"
#include "transport/transport.h"

#define EP_CAP      256
#define WATCHDOG_S  240   /* a hung test is killed (SIGALRM): a failure */
#define PATIENCE_MS 60000 /* waits for what must happen: a hang guard */

static const char *backend = "tcp";
static const char *host = "127.0.0.1";
static int rdma_gid_index = -1; /* ORDO_TEST_RDMA_GID_INDEX (rdma only) */

#define assert_ps(expr, want)                                                  \
	do {                                                                   \
		int rc_ = (expr);                                              \
		if (rc_ != (want))                                             \
			fail_msg("%s: got \"%s\" (%d), want \"%s\"", #expr,    \
			         ps_strerror(rc_), rc_, ps_strerror(want));    \
	} while (0)

/* ---- helpers ------------------------------------------------------------ */

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* A node's options: id, PATIENCE_MS to send and connect, one I/O thread. */
static ps_transport_opts opts_of(uint64_t id)
{
	return (ps_transport_opts){
	    .id = id,
	    .send_timeout_ms = PATIENCE_MS,
	    .connect_timeout_ms = PATIENCE_MS,
	    .io_threads = 1,
	    .rdma_gid_index = rdma_gid_index,
	};
}

static ps_transport *make_with(uint64_t id, int send_timeout_ms,
                               int connect_timeout_ms, const char *secret,
                               const char *token)
{
	ps_transport_opts o = opts_of(id);

	o.send_timeout_ms = send_timeout_ms;
	o.connect_timeout_ms = connect_timeout_ms;
	snprintf(o.job_secret, sizeof(o.job_secret), "%s", secret);
	snprintf(o.job_token, sizeof(o.job_token), "%s", token);
	ps_transport *t = NULL;
	assert_ps(ps_transport_create(backend, &o, &t), PS_OK);
	assert_non_null(t);
	return t;
}

static ps_transport *make(uint64_t id, int send_timeout_ms,
                          int connect_timeout_ms)
{
	return make_with(id, send_timeout_ms, connect_timeout_ms, "", "");
}

static ps_transport *make_listener(uint64_t id, char *ep)
{
	ps_transport *t = make(id, PATIENCE_MS, PATIENCE_MS);
	assert_ps(ps_transport_listen(t, host, 0, NULL, ep, EP_CAP), PS_OK);
	assert_true(strlen(ep) > 0);
	return t;
}

static ps_peer connect_to(ps_transport *t, const char *ep)
{
	ps_peer p = UINT32_MAX;
	assert_ps(ps_transport_connect(t, ep, &p), PS_OK);
	return p;
}

/* ps_transport_connect_start, then its waits (10 ms at a time) until the
 * peer is connected. */
static ps_peer connect_in_background(ps_transport *t, const char *ep)
{
	ps_peer p = UINT32_MAX;
	int rc;

	assert_ps(ps_transport_connect_start(t, ep, -1, &p), PS_OK);
	while ((rc = ps_transport_connect_wait(t, p, 10)) == PS_EAGAIN)
		;
	assert_ps(rc, PS_OK);
	return p;
}

/* Receives a message that must come (waiting up to PATIENCE_MS). */
static ps_msg *recv_one(ps_transport *t)
{
	ps_msg *m = NULL;
	assert_ps(ps_transport_recv(t, PATIENCE_MS, &m), PS_OK);
	assert_non_null(m);
	/* transport.h: payload NULL iff empty, and 8-byte aligned. */
	if (m->payload_len == 0)
		assert_null(m->payload);
	else
		assert_true((uintptr_t)m->payload % 8 == 0);
	return m;
}

/* The port of an endpoint ("scheme://host:PORT"). */
static int endpoint_port(const char *ep)
{
	const char *c = strrchr(ep, ':');
	assert_non_null(c);
	return atoi(c + 1);
}

/* ep with its port replaced. */
static void endpoint_with_port(const char *ep, int port, char *out)
{
	const char *c = strrchr(ep, ':');
	assert_non_null(c);
	snprintf(out, EP_CAP, "%.*s:%d", (int)(c - ep), ep, port);
}

/* Counts free_fn calls (never frees). */
typedef struct counter {
	atomic_int calls;
} counter;

static void count_free(void *data, void *hint)
{
	(void)data;
	atomic_fetch_add(&((counter *)hint)->calls, 1);
}

static void count_and_free(void *data, void *hint)
{
	free(data);
	atomic_fetch_add(&((counter *)hint)->calls, 1);
}

/* Waits (up to ms) until c reaches want; returns the count. */
static int wait_calls_ms(counter *c, int want, int ms)
{
	int64_t end = now_ms() + ms;
	while (atomic_load(&c->calls) < want && now_ms() < end)
		sleep_ms(1);
	return atomic_load(&c->calls);
}

/* Waits (up to PATIENCE_MS) until c reaches want; returns the count. */
static int wait_calls(counter *c, int want)
{
	return wait_calls_ms(c, want, PATIENCE_MS);
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 31u + seed);
}

static bool check(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(i * 31u + seed))
			return false;
	return true;
}

/* A plain TCP socket listening on loopback (it never speaks ZeroMQ); its
 * endpoint in ep. */
static int bare_listener(char *ep, int backlog)
{
	int port, fd = test_loopback_socket(backlog, &port);

	assert_true(fd >= 0);
	snprintf(ep, EP_CAP, "tcp://127.0.0.1:%d", port);
	return fd;
}

static int setup(void **state)
{
	(void)state;
	alarm(WATCHDOG_S); /* SIGALRM kills a hung test: a failure */
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	alarm(0);
	return 0;
}

/* ---- 1. exchange both ways ---------------------------------------------- */

static void test_exchange(void **state)
{
	const uint64_t id_a = 0x0102030405060708ull;
	const uint64_t id_b = 0xFFEEDDCCBBAA9988ull; /* high bits set */
	char ep_a[EP_CAP], ep_b[EP_CAP];
	counter c = {0};
	(void)state;

	ps_transport *a = make_listener(id_a, ep_a);
	ps_transport *b = make_listener(id_b, ep_b);
	ps_peer a_to_b = connect_to(a, ep_b);
	ps_peer b_to_a = connect_to(b, ep_a);
	assert_int_equal(connect_to(a, ep_b), a_to_b); /* same peer again */

	for (int dir = 0; dir < 2; dir++) {
		ps_transport *from = dir ? b : a, *to = dir ? a : b;
		ps_peer peer = dir ? b_to_a : a_to_b;
		const char *hdr = dir ? "header from b" : "header from a";
		size_t len = 4099 + (size_t)dir;
		unsigned char *payload = malloc(len);
		assert_non_null(payload);
		fill(payload, len, 7u + (unsigned)dir);

		assert_ps(ps_transport_send(from, peer, hdr, strlen(hdr),
		                            payload, len, count_and_free, &c),
		          PS_OK);
		ps_msg *m = recv_one(to);
		assert_true(m->src == (dir ? id_b : id_a));
		assert_int_equal(m->hdr_len, strlen(hdr));
		assert_memory_equal(m->hdr, hdr, strlen(hdr));
		assert_int_equal(m->payload_len, len);
		assert_true(check(m->payload, len, 7u + (unsigned)dir));
		ps_msg_free(&m);
		assert_null(m);
	}
	assert_int_equal(wait_calls(&c, 2), 2);

	/* free_fn NULL: the caller keeps the payload (static here). */
	static unsigned char keep[100];
	fill(keep, sizeof(keep), 3);
	assert_ps(ps_transport_send(a, a_to_b, "k", 1, keep, sizeof(keep), NULL,
	                            NULL),
	          PS_OK);
	ps_msg *m = recv_one(b);
	assert_int_equal(m->payload_len, sizeof(keep));
	assert_true(check(m->payload, sizeof(keep), 3));
	ps_msg_free(&m);

	/* advertise_host replaces the bound host in the endpoint: another
	 * name of the listening address, "localhost" for 127.0.0.1; for any
	 * other ORDO_TEST_HOST (rdma: 192.0.2.1 in the Soft-RoCE VM, where
	 * localhost is not an RDMA address) its IPv4 address as one 32-bit
	 * number, which resolves to the same address. */
	char ep_c[EP_CAP], adv[32] = "localhost";
	struct in_addr in4;
	if (strcmp(host, "127.0.0.1") != 0 && inet_pton(AF_INET, host, &in4))
		snprintf(adv, sizeof(adv), "%u", (unsigned)ntohl(in4.s_addr));
	ps_transport *c3 = make(0xC3, PATIENCE_MS, PATIENCE_MS);
	assert_ps(ps_transport_listen(c3, host, 0, adv, ep_c, EP_CAP), PS_OK);
	assert_non_null(strstr(ep_c, adv));
	assert_null(strstr(ep_c, host));
	ps_peer a_to_c = connect_to(a, ep_c);
	assert_ps(ps_transport_send(a, a_to_c, "adv", 3, NULL, 0, NULL, NULL),
	          PS_OK);
	m = recv_one(c3);
	assert_true(m->src == id_a);
	ps_msg_free(&m);

	ps_transport_destroy(&c3, 0);
	ps_transport_destroy(&a, 0);
	ps_transport_destroy(&b, 0);
	assert_null(a);
	assert_null(b);
	assert_int_equal(atomic_load(&c.calls), 2); /* exactly once each */
}

/* ---- 2. header only ----------------------------------------------------- */

static void test_header_only(void **state)
{
	char ep[EP_CAP];
	counter c = {0};
	static char dummy[1];
	(void)state;

	ps_transport *r = make_listener(0x20, ep);
	ps_transport *s = make(0x21, PATIENCE_MS, PATIENCE_MS);
	ps_peer p = connect_to(s, ep);

	assert_ps(ps_transport_send(s, p, "H", 1, NULL, 0, count_free, &c),
	          PS_OK);
	ps_msg *m = recv_one(r);
	assert_true(m->src == 0x21);
	assert_int_equal(m->hdr_len, 1);
	assert_memory_equal(m->hdr, "H", 1);
	assert_null(m->payload);
	assert_int_equal(m->payload_len, 0);
	ps_msg_free(&m);

	/* A non-NULL payload of length 0 is not sent, but still handed back
	 * exactly once (transport.h). */
	assert_ps(ps_transport_send(s, p, "E", 1, dummy, 0, count_free, &c),
	          PS_OK);
	m = recv_one(r);
	assert_memory_equal(m->hdr, "E", 1);
	assert_int_equal(m->payload_len, 0);
	ps_msg_free(&m);

	/* "E" handed its payload back at once (transport.h); "H" had none
	 * and must never call free_fn: destroying the transports runs every
	 * callback still due, so the count is final after it. */
	assert_int_equal(atomic_load(&c.calls), 1);
	ps_transport_destroy(&s, 0);
	ps_transport_destroy(&r, 0);
	assert_int_equal(atomic_load(&c.calls), 1);
}

/* ---- 3. large payload --------------------------------------------------- */

static void test_large_payload(void **state)
{
	const size_t len = (size_t)256 << 20;
	const size_t words = len / sizeof(uint64_t);
	char ep[EP_CAP];
	counter c = {0};
	(void)state;

	uint64_t *buf = malloc(len);
	assert_non_null(buf);
	for (size_t i = 0; i < words; i++)
		buf[i] = i * 0x9E3779B97F4A7C15ull ^ 0x5555;

	ps_transport *r = make_listener(0x30, ep);
	ps_transport *s = make(0x31, PATIENCE_MS, PATIENCE_MS);
	ps_peer p = connect_to(s, ep);
	assert_ps(ps_transport_send(s, p, "big", 3, buf, len, count_free, &c),
	          PS_OK);

	ps_msg *m = recv_one(r);
	assert_memory_equal(m->hdr, "big", 3);
	assert_true(m->payload_len == len);
	const uint64_t *got = m->payload;
	size_t bad = words;
	for (size_t i = 0; i < words; i++) {
		if (got[i] != (i * 0x9E3779B97F4A7C15ull ^ 0x5555)) {
			bad = i;
			break;
		}
	}
	if (bad != words)
		fail_msg("payload differs at word %zu", bad);
	ps_msg_free(&m);

	assert_int_equal(wait_calls(&c, 1), 1);
	free(buf); /* ours again once free_fn fired */
	ps_transport_destroy(&s, 0);
	ps_transport_destroy(&r, 0);
	assert_int_equal(atomic_load(&c.calls), 1);
}

/* ---- 4. many small messages --------------------------------------------- */

static void test_many_small(void **state)
{
	enum { N = 100000, SZ = 64 };
	char ep[EP_CAP];
	counter c = {0};
	(void)state;

	unsigned char *bufs = malloc((size_t)N * SZ);
	assert_non_null(bufs);
	ps_transport *r = make_listener(0x40, ep);
	ps_transport *s = make(0x41, PATIENCE_MS, PATIENCE_MS);
	ps_peer p = connect_to(s, ep);

	for (uint32_t i = 0; i < N; i++) {
		unsigned char *b = bufs + (size_t)i * SZ;
		fill(b, SZ, i);
		assert_ps(ps_transport_send(s, p, &i, sizeof(i), b, SZ,
		                            count_free, &c),
		          PS_OK);
	}
	for (uint32_t i = 0; i < N; i++) {
		ps_msg *m = recv_one(r);
		uint32_t seq;
		assert_int_equal(m->hdr_len, sizeof(seq));
		memcpy(&seq, m->hdr, sizeof(seq));
		if (seq != i)
			fail_msg("message %u arrived as number %u", seq, i);
		assert_true(m->src == 0x41);
		assert_int_equal(m->payload_len, SZ);
		assert_true(check(m->payload, SZ, i));
		ps_msg_free(&m);
	}
	ps_msg *extra = NULL;
	assert_ps(ps_transport_recv(r, 100, &extra), PS_ETIMEDOUT);

	assert_int_equal(wait_calls(&c, N), N);
	ps_transport_destroy(&s, 0);
	ps_transport_destroy(&r, 0);
	assert_int_equal(atomic_load(&c.calls), N);
	free(bufs);
}

/* ---- 5. peer gone ------------------------------------------------------- */

typedef struct attempt {
	counter c;
	void *buf;
	int rc;
} attempt;

static void test_peer_gone(void **state)
{
	enum { MAX_TRIES = 10000 };
	char ep[EP_CAP];
	int tries = 0, ok = 0;
	bool failed = false;
	(void)state;

	attempt *at = calloc(MAX_TRIES, sizeof(*at));
	assert_non_null(at);
	ps_transport *r = make_listener(0x50, ep);
	ps_transport *s = make(0x51, 200, PATIENCE_MS);
	ps_peer p = connect_to(s, ep);
	assert_ps(ps_transport_send(s, p, "hi", 2, NULL, 0, NULL, NULL), PS_OK);
	ps_msg *m = recv_one(r);
	ps_msg_free(&m);

	ps_transport_destroy(&r, 0);

	/* Sends made before the loss is noticed may succeed (and are lost);
	 * then they must fail (after the 200 ms send timeout: a send that
	 * blocked for good would be caught by the watchdog). */
	int64_t end = now_ms() + PATIENCE_MS;
	while (!failed && tries < MAX_TRIES && now_ms() < end) {
		attempt *a = &at[tries++];
		a->buf = malloc(128);
		assert_non_null(a->buf);
		a->rc = ps_transport_send(s, p, "x", 1, a->buf, 128, count_free,
		                          &a->c);
		if (a->rc == PS_OK) {
			ok++;
			sleep_ms(10);
			continue;
		}
		if (a->rc != PS_ETIMEDOUT && a->rc != PS_ECLOSED)
			fail_msg("send to a dead peer: %s", ps_strerror(a->rc));
		failed = true;
	}
	assert_true(failed);

	/* Disconnected peer: PS_ECLOSED; disconnect is idempotent. */
	assert_ps(ps_transport_disconnect(s, p), PS_OK);
	assert_ps(ps_transport_send(s, p, "y", 1, NULL, 0, NULL, NULL),
	          PS_ECLOSED);
	assert_ps(ps_transport_disconnect(s, p), PS_OK);

	/* ... at once, without trying the connection: here sends wait
	 * forever (send timeout -1) and the peer is gone, so a send that
	 * tried it would succeed into the void (loss not yet noticed) or
	 * wait for good (the watchdog fails the test); only the
	 * disconnected check answers PS_ECLOSED. */
	ps_transport *r2 = make_listener(0x52, ep);
	ps_transport *f = make(0x53, -1, PATIENCE_MS);
	ps_peer q = connect_to(f, ep);
	assert_ps(ps_transport_send(f, q, "hi", 2, NULL, 0, NULL, NULL), PS_OK);
	m = recv_one(r2);
	ps_msg_free(&m);
	ps_transport_destroy(&r2, 0);
	assert_ps(ps_transport_disconnect(f, q), PS_OK);
	assert_ps(ps_transport_send(f, q, "y", 1, NULL, 0, NULL, NULL),
	          PS_ECLOSED);
	ps_transport_destroy(&f, 0);

	ps_transport_destroy(&s, 0);
	for (int i = 0; i < tries; i++) {
		/* success: handed back exactly once; failure: never. */
		int want = at[i].rc == PS_OK ? 1 : 0;
		if (atomic_load(&at[i].c.calls) != want)
			fail_msg("send %d (%s): free_fn called %d times", i,
			         ps_strerror(at[i].rc),
			         atomic_load(&at[i].c.calls));
		free(at[i].buf);
	}
	print_message("peer gone: %d sends succeeded before the failure\n", ok);
	free(at);
}

/* ---- 6. connection refused, bad endpoints ------------------------------- */

static int unused_port(void)
{
	int port, fd = test_loopback_socket(0, &port);

	assert_true(fd >= 0);
	close(fd);
	return port;
}

static void test_connect_refused(void **state)
{
	char ep[EP_CAP], dead[EP_CAP], noport[EP_CAP];
	ps_peer p;
	(void)state;

	ps_transport *r = make_listener(0x60, ep); /* for the endpoint form */
	ps_transport *s = make(0x61, PATIENCE_MS, 300);
	endpoint_with_port(ep, unused_port(), dead);

	/* gives up (after its 300 ms connect timeout) rather than hang */
	int rc = ps_transport_connect(s, dead, &p);
	if (rc != PS_ECONNREFUSED && rc != PS_ETIMEDOUT)
		fail_msg("connect to %s: %s", dead, ps_strerror(rc));

	assert_ps(ps_transport_connect(s, "not an endpoint", &p), PS_EINVAL);
	assert_ps(ps_transport_connect(s, "", &p), PS_EINVAL);
	snprintf(noport, sizeof(noport), "%.*s", (int)(strrchr(ep, ':') - ep),
	         ep);
	assert_ps(ps_transport_connect(s, noport, &p), PS_EINVAL);

	/* The transport still works after the failures. Its connect timeout
	 * (300 ms, for the refused port) may be too short for a handshake on
	 * a busy machine: a connect that times out is tried again. */
	int64_t end = now_ms() + PATIENCE_MS;
	while ((rc = ps_transport_connect(s, ep, &p)) == PS_ETIMEDOUT &&
	       now_ms() < end)
		;
	assert_ps(rc, PS_OK);
	assert_ps(ps_transport_send(s, p, "ok", 2, NULL, 0, NULL, NULL), PS_OK);
	ps_msg *m = recv_one(r);
	ps_msg_free(&m);

	ps_transport_destroy(&s, 0);
	ps_transport_destroy(&r, 0);
}

/* connect in two halves: connect_start returns the peer at once,
 * connect_wait says when it is connected (PS_EAGAIN until then; a backend
 * that connects in the start has it connected already) or how the attempt
 * ended. */
static void test_connect_in_background(void **state)
{
	char ep[EP_CAP], dead[EP_CAP];
	ps_peer p = UINT32_MAX, q = UINT32_MAX;
	int rc;
	(void)state;

	ps_transport *r = make_listener(0x62, ep);
	ps_transport *s = make(0x63, PATIENCE_MS, PATIENCE_MS);
	p = connect_in_background(s, ep);
	assert_ps(ps_transport_connect_wait(s, p, 0), PS_OK); /* it stays */
	/* the same endpoint again: the same peer, either way */
	assert_ps(ps_transport_connect_start(s, ep, -1, &q), PS_OK);
	assert_int_equal(q, p);
	assert_ps(ps_transport_connect(s, ep, &q), PS_OK);
	assert_int_equal(q, p);
	assert_ps(ps_transport_send(s, p, "ok", 2, NULL, 0, NULL, NULL), PS_OK);
	ps_msg *m = recv_one(r);
	assert_int_equal(m->hdr_len, 2);
	ps_msg_free(&m);

	/* nobody listens: the attempt ends at its deadline (300 ms) */
	endpoint_with_port(ep, unused_port(), dead);
	rc = ps_transport_connect_start(s, dead, 300, &q);
	if (rc == PS_OK)
		rc = ps_transport_connect_wait(s, q, -1);
	if (rc != PS_ECONNREFUSED && rc != PS_ETIMEDOUT)
		fail_msg("connect to %s: %s", dead, ps_strerror(rc));
	assert_ps(ps_transport_connect_start(s, "not an endpoint", -1, &q),
	          PS_EINVAL);

	if (strcmp(backend, "tcp") == 0) {
		/* a TCP listener that never answers the handshake: the
		 * attempt goes on, and the transport stops with it still
		 * connecting (the watchdog ends a hang) */
		char silent[EP_CAP];
		int fd = bare_listener(silent, 4);
		assert_ps(ps_transport_connect_start(s, silent, PATIENCE_MS, &q),
		          PS_OK);
		assert_int_not_equal(q, p);
		int c = accept(fd, NULL, NULL); /* it is connecting */
		assert_true(c >= 0);
		assert_ps(ps_transport_connect_wait(s, q, 0), PS_EAGAIN);
		assert_ps(ps_transport_connect_wait(s, q, 50), PS_EAGAIN);
		assert_ps(ps_transport_connect_wait(s, p, 0), PS_OK);
		ps_transport_destroy(&s, 0);
		close(c);
		close(fd);
	}
	ps_transport_destroy(&s, 0);
	ps_transport_destroy(&r, 0);
}

/* ---- 6b. flows over several connections per peer ---------------------- */

/* connections_per_peer = 3 (tcp: three connections, each on an I/O thread
 * of its own; another backend keeps one): every message arrives once,
 * from the sender's id and key id, and each flow's in the order sent
 * though the flows share the peer; the blocking connect makes one
 * connection, connect_start three (counted by a bare TCP listener). */
static void test_flows(void **state)
{
	enum { N = 3000, FLOWS = 7, SZ = 4096 };
	const char *secret = "00112233445566778899aabbccddeeff"
	                     "00112233445566778899aabbccddeeff";
	const char *token = "ffeeddccbbaa99887766554433221100"
	                    "ffeeddccbbaa99887766554433221100";
	uint32_t next[FLOWS] = {0};
	char ep[EP_CAP];
	counter c = {0};
	ps_peer p;
	(void)state;

	ps_transport *r = make_with(0x70, PATIENCE_MS, PATIENCE_MS, secret, "");
	assert_ps(ps_transport_listen(r, host, 0, NULL, ep, EP_CAP), PS_OK);
	ps_transport_opts o = opts_of(0x71);
	o.connections_per_peer = 3;
	snprintf(o.job_secret, sizeof(o.job_secret), "%s", secret);
	snprintf(o.job_token, sizeof(o.job_token), "%s", token);
	ps_transport *s = NULL;
	assert_ps(ps_transport_create(backend, &o, &s), PS_OK);
	p = connect_in_background(s, ep);

	unsigned char *bufs = malloc((size_t)N * SZ);
	assert_non_null(bufs);
	for (uint32_t i = 0; i < N; i++) {
		uint32_t flow = (i * 2654435761u) % FLOWS;
		uint32_t h[2] = {flow, next[flow]++};
		unsigned char *b = bufs + (size_t)i * SZ;
		fill(b, SZ, i);
		assert_ps(ps_transport_send_flow(s, p, flow, h, sizeof(h), b,
		                                 SZ, count_free, &c),
		          PS_OK);
	}
	uint32_t got[FLOWS] = {0};
	for (uint32_t i = 0; i < N; i++) {
		ps_msg *m = recv_one(r);
		uint32_t h[2];
		assert_int_equal(m->hdr_len, sizeof(h));
		memcpy(h, m->hdr, sizeof(h));
		assert_true(h[0] < FLOWS);
		if (h[1] != got[h[0]])
			fail_msg("flow %u: message %u arrived where %u was due",
			         h[0], h[1], got[h[0]]);
		got[h[0]]++;
		assert_true(m->src == 0x71);
		if (strcmp(backend, "tcp") == 0)
			assert_true(m->kid == ps_token_kid(token));
		assert_int_equal(m->payload_len, SZ);
		ps_msg_free(&m);
	}
	for (uint32_t f = 0; f < FLOWS; f++)
		assert_int_equal(got[f], next[f]);
	ps_msg *extra = NULL;
	assert_ps(ps_transport_recv(r, 100, &extra), PS_ETIMEDOUT);
	assert_int_equal(wait_calls(&c, N), N);

	if (strcmp(backend, "tcp") == 0) {
		/* a bare TCP listener counts the connections of each kind */
		char bare[EP_CAP];
		ps_peer q = UINT32_MAX;
		int fd = bare_listener(bare, 16), conns = 0;
		assert_ps(ps_transport_connect_start(s, bare, PATIENCE_MS, &q),
		          PS_OK);
		int fds[4];
		for (; conns < 3; conns++) { /* three come */
			fds[conns] = accept(fd, NULL, NULL);
			assert_true(fds[conns] >= 0);
		}
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		assert_int_equal(poll(&pf, 1, 200), 0); /* and no fourth */
		for (int i = 0; i < conns; i++)
			close(fds[i]);
		close(fd);
	}
	ps_transport_destroy(&s, 0);
	ps_transport_destroy(&r, 0);
	free(bufs);
}

/* ---- 7. port in use ----------------------------------------------------- */

static void test_port_in_use(void **state)
{
	char ep[EP_CAP], ep2[EP_CAP];
	(void)state;

	ps_transport *a = make_listener(0x70, ep);
	ps_transport *b = make(0x71, 200, 300);
	assert_ps(
	    ps_transport_listen(b, host, endpoint_port(ep), NULL, ep2, EP_CAP),
	    PS_EADDRINUSE);
	/* A transport listens once. */
	assert_true(ps_transport_listen(a, host, 0, NULL, ep2, EP_CAP) !=
	            PS_OK);
	ps_transport_destroy(&b, 0);
	ps_transport_destroy(&a, 0);
}

/* ---- 8. wake ------------------------------------------------------------ */

/* The main thread, about to block in recv(-1), and the thread that wakes
 * it: the waker waits until the main thread has said it calls recv and
 * is seen asleep (in recv's poll, where it blocks until the wake), then
 * notes that it wakes and wakes. recv must return PS_EAGAIN, and only
 * after that note: were it to return without the wake, the note would
 * not be there. No sleep stands in for an event. */
typedef struct wake_sync {
	ps_transport *t;
	pthread_t main;
	pid_t main_tid;
	atomic_int calling; /* the main thread calls recv(-1) now */
	atomic_int woken;   /* the waker (or the handler) is waking it */
} wake_sync;

static wake_sync ws;

/* Waits until thread tid is asleep (state S in /proc/self/task/TID/stat:
 * blocked in a system call), at most PATIENCE_MS. Where /proc cannot be
 * read it returns at once: the wake then may come before recv blocks,
 * which recv must honour just the same (the wake is kept). */
static void wait_asleep(pid_t tid)
{
	char path[64], buf[512];
	int64_t end = now_ms() + PATIENCE_MS;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	while (now_ms() < end) {
		FILE *f = fopen(path, "r");
		if (!f)
			return;
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = '\0';
		const char *st = strrchr(buf, ')'); /* the name may hold ')' */
		if (!st || (st[1] == ' ' && st[2] == 'S'))
			return;
		sleep_ms(1);
	}
}

static void wait_main_in_recv(void)
{
	while (!atomic_load(&ws.calling))
		sleep_ms(1);
	wait_asleep(ws.main_tid);
}

static void *waker(void *arg)
{
	(void)arg;
	wait_main_in_recv();
	atomic_store(&ws.woken, 1);
	ps_transport_wake(ws.t);
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	atomic_store(&ws.woken, 1); /* lock-free: async-signal-safe */
	ps_transport_wake(ws.t);    /* async-signal-safe */
}

static void *signaller(void *arg)
{
	(void)arg;
	wait_main_in_recv();
	pthread_kill(ws.main, SIGUSR1);
	return NULL;
}

/* Calls recv(-1) with a thread that wakes it: PS_EAGAIN, after the wake. */
static void recv_until_woken(void *(*wake_fn)(void *))
{
	pthread_t th;
	ps_msg *m = NULL;

	atomic_store(&ws.calling, 0);
	atomic_store(&ws.woken, 0);
	ws.main = pthread_self();
	ws.main_tid = (pid_t)syscall(SYS_gettid);
	assert_int_equal(pthread_create(&th, NULL, wake_fn, NULL), 0);
	atomic_store(&ws.calling, 1);
	assert_ps(ps_transport_recv(ws.t, -1, &m), PS_EAGAIN);
	assert_true(atomic_load(&ws.woken)); /* returned on the wake */
	assert_null(m);
	pthread_join(th, NULL);
}

static void test_wake(void **state)
{
	char ep[EP_CAP];
	ps_msg *m = NULL;
	(void)state;

	ps_transport *t = make_listener(0x80, ep);
	ws.t = t;

	/* From another thread, while recv(-1) blocks. */
	recv_until_woken(waker);

	/* A wake before recv makes the next recv return; only that one. */
	ps_transport_wake(t);
	assert_ps(ps_transport_recv(t, 0, &m), PS_EAGAIN);
	assert_ps(ps_transport_recv(t, 50, &m), PS_ETIMEDOUT);

	/* From a signal handler. */
	struct sigaction sa = {.sa_handler = on_usr1}, old;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	recv_until_woken(signaller);
	sigaction(SIGUSR1, &old, NULL);

	ps_transport_destroy(&t, 0);
}

/* ---- 9. recv timeout ---------------------------------------------------- */

static void test_recv_timeout(void **state)
{
	char ep[EP_CAP];
	ps_msg *m = NULL;
	(void)state;

	/* Not before its time (later is a busy machine's right). */
	ps_transport *t = make_listener(0x90, ep);
	int64_t t0 = now_ms();
	assert_ps(ps_transport_recv(t, 100, &m), PS_ETIMEDOUT);
	int64_t took = now_ms() - t0;
	if (took < 80)
		fail_msg("recv(100) returned after %lld ms", (long long)took);
	assert_null(m);

	/* recv(0) polls: nothing is ever sent to t and nothing wakes it, so
	 * a recv(0) that waited would wait forever (the watchdog). */
	assert_ps(ps_transport_recv(t, 0, &m), PS_ETIMEDOUT);
	assert_null(m);
	ps_transport_destroy(&t, 0);
}

/* ---- 10. registry and wrappers ------------------------------------------ */

static void test_registry(void **state)
{
	ps_transport_opts o = {.id = 1, .io_threads = 1,
	                       .rdma_gid_index = rdma_gid_index};
	ps_transport *t = NULL;
	(void)state;

	assert_null(ps_transport_find("nope"));
	assert_null(ps_transport_find(NULL));
	assert_ps(ps_transport_create("nope", &o, &t), PS_ENOTSUP);
	assert_null(t);
	assert_ps(ps_transport_create(NULL, &o, &t), PS_EINVAL);
	assert_ps(ps_transport_create(backend, NULL, &t), PS_EINVAL);

	const ps_transport_ops *ops = ps_transport_find(backend);
	assert_non_null(ops);
	assert_string_equal(ops->name, backend);

	/* backend is one of the comma-separated names. */
	char names[256];
	bool listed = false;
	snprintf(names, sizeof(names), "%s", ps_transport_names());
	for (char *save, *tok = strtok_r(names, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save))
		listed |= strcmp(tok, backend) == 0;
	assert_true(listed);

	/* A backend without operations: PS_ENOTSUP, never a NULL call. */
	static const ps_transport_ops empty = {.name = "empty"};
	struct ps_transport fake = {.ops = &empty};
	ps_transport *f = &fake;
	char ep[EP_CAP];
	ps_peer p;
	ps_msg *m = NULL;
	assert_ps(ps_transport_listen(f, host, 0, NULL, ep, EP_CAP),
	          PS_ENOTSUP);
	assert_ps(ps_transport_connect(f, "x://y:1", &p), PS_ENOTSUP);
	assert_ps(ps_transport_send(f, 0, "h", 1, NULL, 0, NULL, NULL),
	          PS_ENOTSUP);
	assert_ps(ps_transport_recv(f, 0, &m), PS_ENOTSUP);
	assert_ps(ps_transport_disconnect(f, 0), PS_ENOTSUP);
	ps_transport_wake(f);
	ps_transport_destroy(&f, 0);
	assert_null(f);

	/* Argument checks of the wrappers. */
	t = make(0xA0, 200, 300);
	assert_ps(ps_transport_send(t, 0, NULL, 4, NULL, 0, NULL, NULL),
	          PS_EINVAL);
	assert_ps(ps_transport_send(t, 0, "h", 1, NULL, 4, NULL, NULL),
	          PS_EINVAL);
	assert_ps(ps_transport_listen(t, host, 70000, NULL, ep, EP_CAP),
	          PS_EINVAL);
	assert_ps(ps_transport_recv(NULL, 0, &m), PS_EINVAL);
	assert_ps(ps_transport_send(t, 12345, "h", 1, NULL, 0, NULL, NULL),
	          PS_EINVAL); /* no such peer */
	ps_transport_wake(NULL);
	ps_transport_destroy(&t, 0);
	ps_transport_destroy(&t, 0); /* NULL: no-op */
	ps_transport_destroy(NULL, 0);
	ps_msg_free(&m);
	ps_msg_free(NULL);
}

/* ---- 11. capabilities and registered memory ---------------------------- */

static void test_caps_and_registration(void **state)
{
	char ep[EP_CAP];
	counter c = {0};
	ps_transport_caps caps;
	ps_mr *mr = NULL, *mr2 = NULL;
	size_t len = 1 << 20;
	(void)state;

	ps_transport *r = make_listener(0x11, ep);
	ps_transport *s = make(0x12, PATIENCE_MS, PATIENCE_MS);
	ps_peer to_r = connect_to(s, ep);

	ps_transport_caps_of(s, &caps);
	assert_true(caps.max_message >= len);
	assert_true(caps.recv_lend_max > 0);
	ps_transport_caps_of(NULL, &caps); /* zeros, no crash */
	assert_int_equal(caps.max_message, 0);

	/* A payload inside a registered region goes as any other. */
	unsigned char *arena = malloc(2 * len);
	assert_non_null(arena);
	fill(arena, 2 * len, 5);
	assert_ps(ps_transport_reg(s, arena, 2 * len, PS_MEM_HOST, &mr), PS_OK);
	assert_non_null(mr);
	assert_ps(ps_transport_send(s, to_r, "reg", 3, arena + len / 2, len,
	                            count_free, &c),
	          PS_OK);
	ps_msg *m = recv_one(r);
	assert_int_equal(m->payload_len, len);
	assert_memory_equal(m->payload, arena + len / 2, len);
	ps_msg_free(&m);
	assert_int_equal(wait_calls(&c, 1), 1);
	ps_transport_dereg(s, &mr);
	assert_null(mr);
	ps_transport_dereg(s, &mr); /* NULL: nothing */

	/* Bad registrations; a memory kind this build cannot use. */
	assert_ps(ps_transport_reg(s, arena, 0, PS_MEM_HOST, &mr), PS_EINVAL);
	assert_ps(ps_transport_reg(s, NULL, len, PS_MEM_HOST, &mr), PS_EINVAL);
	assert_ps(ps_transport_reg(s, arena, len, (ps_mem_kind)7, &mr),
	          PS_EINVAL);
	assert_ps(ps_transport_reg(s, arena, len, PS_MEM_CUDA, &mr),
	          PS_ENOTSUP);
	assert_null(mr);

	/* A registration left live is released at free (ASan: no leak). */
	assert_ps(ps_transport_reg(r, arena, len, PS_MEM_HOST, &mr2), PS_OK);
	ps_transport_destroy(&s, 0);
	ps_transport_destroy(&r, 0);
	free(arena);
}

/* ---- 12. teardown in two phases ----------------------------------------- */

static void test_stop_then_free(void **state)
{
	char ep[EP_CAP], ep2[EP_CAP];
	counter c = {0};
	ps_msg *m = NULL, *held;
	ps_peer p;
	(void)state;

	ps_transport *r = make_listener(0x21, ep);
	ps_transport *s = make(0x22, PATIENCE_MS, PATIENCE_MS);
	ps_peer to_r = connect_to(s, ep);

	/* a message received before the stop is held past the free */
	unsigned char *payload = malloc(70000);
	assert_non_null(payload);
	fill(payload, 70000, 9);
	assert_ps(ps_transport_send(s, to_r, "held", 4, payload, 70000,
	                            count_and_free, &c),
	          PS_OK);
	held = recv_one(r);

	/* sent before the stop: flushed within the linger, released once */
	for (int i = 0; i < 3; i++) {
		unsigned char *q = malloc(1000);
		assert_non_null(q);
		fill(q, 1000, (unsigned)i);
		assert_ps(ps_transport_send(s, to_r, "x", 1, q, 1000,
		                            count_and_free, &c),
		          PS_OK);
	}
	ps_transport_stop(s, PATIENCE_MS);
	assert_int_equal(atomic_load(&c.calls), 4); /* stop waited for them */
	ps_transport_stop(s, 0);                    /* twice: nothing */

	/* after the stop every operation says so, and none blocks */
	assert_ps(ps_transport_send(s, to_r, "y", 1, NULL, 0, NULL, NULL),
	          PS_ECLOSED);
	assert_ps(ps_transport_recv(s, -1, &m), PS_ECLOSED);
	assert_ps(ps_transport_connect(s, ep, &p), PS_ECLOSED);
	assert_ps(ps_transport_listen(s, host, 0, NULL, ep2, EP_CAP),
	          PS_ECLOSED);
	assert_ps(ps_transport_disconnect(s, to_r), PS_ECLOSED);
	{
		ps_mr *mr = NULL;
		assert_ps(ps_transport_reg(s, payload, 1, PS_MEM_HOST, &mr),
		          PS_ECLOSED);
	}
	ps_transport_wake(s); /* still safe */
	ps_transport_free(&s);
	assert_null(s);
	ps_transport_free(&s); /* NULL: nothing */

	/* the receiver's three messages, then its own stop and free */
	for (int i = 0; i < 3; i++) {
		m = recv_one(r);
		assert_true(check(m->payload, 1000, (unsigned)i));
		ps_msg_free(&m);
	}
	ps_transport_stop(r, 0);
	assert_ps(ps_transport_recv(r, 0, &m), PS_ECLOSED);
	ps_transport_free(&r);
	assert_int_equal(held->payload_len, 70000);
	assert_true(check(held->payload, 70000, 9));
	ps_msg_free(&held);
}

/* ---- 13. large payloads: registered, unregistered, in order ------------ */

/* Sizes around a rendezvous threshold (rdma: 64 KiB) and above it, from
 * a registered region and from plain heap memory, with small messages
 * between them: every payload arrives intact, in order, and each
 * free_fn runs once. */
static void test_large_registered(void **state)
{
	static const size_t sizes[] = {65535, 65536, 65537, 1 << 20,
	                               (4 << 20) + 3, 100, 200000};
	enum { NS = sizeof(sizes) / sizeof(sizes[0]) };
	const size_t arena_len = (size_t)16 << 20;
	char ep[EP_CAP];
	counter c = {0};
	ps_mr *mr = NULL;
	int sent = 0;
	(void)state;

	ps_transport *r = make_listener(0x60, ep);
	ps_transport *s = make(0x61, PATIENCE_MS, PATIENCE_MS);
	ps_peer p = connect_to(s, ep);
	unsigned char *arena = malloc(arena_len);
	assert_non_null(arena);
	assert_ps(ps_transport_reg(s, arena, arena_len, PS_MEM_HOST, &mr),
	          PS_OK);

	/* round 0: from the registered arena; round 1: heap buffers */
	unsigned char *heap[NS] = {0};
	size_t off = 0;
	for (int round = 0; round < 2; round++) {
		for (uint32_t i = 0; i < NS; i++) {
			uint32_t seq = round * NS + i;
			unsigned char *b;
			if (round == 0) {
				b = arena + off + 8 * i; /* odd offsets too */
				off += sizes[i] + 8 * i + 64;
				assert_true(off <= arena_len);
			} else {
				b = heap[i] = malloc(sizes[i]);
				assert_non_null(b);
			}
			fill(b, sizes[i], seq);
			assert_ps(ps_transport_send(s, p, &seq, sizeof(seq), b,
			                            sizes[i], count_free, &c),
			          PS_OK);
			sent++;
			/* a small message between the large ones */
			assert_ps(ps_transport_send(s, p, "s", 1, NULL, 0, NULL,
			                            NULL),
			          PS_OK);
		}
	}
	for (uint32_t k = 0; k < 2 * NS; k++) {
		ps_msg *m = recv_one(r);
		uint32_t seq;
		assert_int_equal(m->hdr_len, sizeof(seq));
		memcpy(&seq, m->hdr, sizeof(seq));
		if (seq != k)
			fail_msg("message %u arrived as number %u", seq, k);
		assert_int_equal(m->payload_len, sizes[k % NS]);
		if (!check(m->payload, m->payload_len, seq))
			fail_msg("payload %u (%zu bytes) differs", seq,
			         m->payload_len);
		ps_msg_free(&m);
		m = recv_one(r);
		assert_int_equal(m->hdr_len, 1);
		assert_memory_equal(m->hdr, "s", 1);
		ps_msg_free(&m);
	}
	assert_int_equal(wait_calls(&c, sent), sent);
	ps_transport_dereg(s, &mr);
	ps_transport_destroy(&s, 0);
	ps_transport_destroy(&r, 0);
	assert_int_equal(atomic_load(&c.calls), sent);
	for (int i = 0; i < NS; i++)
		free(heap[i]);
	free(arena);
}

/* ---- 14. holding many large messages ------------------------------------ */

/* The receiver holds more large messages than the backend lends
 * (recv_lend_max, when finite), then more arrive (holding never starves
 * the receives), then some are freed, the transports go, and the rest
 * are checked and freed after that (ASan: no use after free). */
static void test_hold_many(void **state)
{
	const size_t len = 256 * 1024 + 8;
	ps_transport_caps caps;
	char ep[EP_CAP];
	counter c = {0};
	(void)state;

	ps_transport *r = make_listener(0x70, ep);
	ps_transport *s = make(0x71, PATIENCE_MS, PATIENCE_MS);
	ps_peer p = connect_to(s, ep);
	ps_transport_caps_of(r, &caps);
	uint32_t n = 80;
	if (caps.recv_lend_max < 1000 && caps.recv_lend_max + 16 > n)
		n = caps.recv_lend_max + 16;
	uint32_t total = n + 8;
	ps_msg **held = calloc(total, sizeof(*held));
	assert_non_null(held);

	for (uint32_t round = 0; round < 2; round++) {
		uint32_t from = round ? n : 0, to = round ? total : n;
		for (uint32_t i = from; i < to; i++) {
			unsigned char *b = malloc(len);
			assert_non_null(b);
			fill(b, len, i);
			assert_ps(ps_transport_send(s, p, &i, sizeof(i), b, len,
			                            count_and_free, &c),
			          PS_OK);
		}
		for (uint32_t i = from; i < to; i++) {
			held[i] = recv_one(r); /* the first n stay held */
			uint32_t seq;
			memcpy(&seq, held[i]->hdr, sizeof(seq));
			assert_int_equal(seq, i);
			assert_int_equal(held[i]->payload_len, len);
		}
	}
	assert_int_equal(wait_calls(&c, (int)total), (int)total);
	/* freeing half, then more still come */
	for (uint32_t i = 0; i < total; i += 2) {
		assert_true(check(held[i]->payload, len, i));
		ps_msg_free(&held[i]);
	}
	unsigned char *b = malloc(len);
	assert_non_null(b);
	fill(b, len, 7777);
	assert_ps(ps_transport_send(s, p, "z", 1, b, len, count_and_free, &c),
	          PS_OK);
	ps_msg *m = recv_one(r);
	assert_true(check(m->payload, len, 7777));
	ps_msg_free(&m);

	ps_transport_destroy(&s, 0);
	ps_transport_destroy(&r, 0);
	for (uint32_t i = 1; i < total; i += 2) {
		if (!check(held[i]->payload, len, i))
			fail_msg("held message %u changed", i);
		ps_msg_free(&held[i]);
	}
	assert_int_equal(atomic_load(&c.calls), (int)total + 1);
	free(held);
}

/* ---- 15. stop with sends pending ---------------------------------------- */

/* Large and small sends still queued (or being read) when the sender
 * stops at once: each payload's free_fn has run exactly once when stop
 * returns, whatever was delivered. */
static void test_stop_pending(void **state)
{
	enum { N = 48 };
	const size_t big = (size_t)1 << 20;
	char ep[EP_CAP];
	counter c = {0};
	ps_mr *mr = NULL;
	(void)state;

	ps_transport *r = make_listener(0x80, ep);
	ps_transport *s = make(0x81, PATIENCE_MS, PATIENCE_MS);
	ps_peer p = connect_to(s, ep);
	unsigned char *arena = malloc(N / 2 * big);
	assert_non_null(arena);
	fill(arena, N / 2 * big, 3);
	assert_ps(ps_transport_reg(s, arena, N / 2 * big, PS_MEM_HOST, &mr),
	          PS_OK);
	for (int i = 0; i < N; i++) {
		void *b;
		size_t len = big;
		if (i % 3 == 0) {
			b = arena + (size_t)(i / 2) * big; /* registered */
			assert_ps(ps_transport_send(s, p, "r", 1, b, len,
			                            count_free, &c),
			          PS_OK);
			continue;
		}
		if (i % 3 == 2)
			len = 1000;
		b = malloc(len);
		assert_non_null(b);
		fill(b, len, (unsigned)i);
		assert_ps(ps_transport_send(s, p, "h", 1, b, len,
		                            count_and_free, &c),
		          PS_OK);
	}
	ps_transport_stop(s, 0);
	assert_int_equal(atomic_load(&c.calls), N);
	ps_transport_dereg(s, &mr);
	ps_transport_free(&s);
	assert_int_equal(atomic_load(&c.calls), N);

	/* whatever arrived is whole */
	ps_msg *m = NULL;
	while (ps_transport_recv(r, 300, &m) == PS_OK) {
		assert_int_equal(m->hdr_len, 1);
		assert_true(m->payload_len == big || m->payload_len == 1000);
		ps_msg_free(&m);
	}
	ps_transport_destroy(&r, 0);
	free(arena);
}

/* ---- 16. reconnecting to an endpoint ------------------------------------ */

/* The listener goes and comes back on the same port, several times: a
 * connect to the same endpoint gives the same peer handle again, and
 * messages sent after it reach the new listener (a backend frees the dead
 * connection's resources when it dies; the handle stays valid). */
static void test_reconnect(void **state)
{
	char ep[EP_CAP], ep2[EP_CAP];
	(void)state;

	ps_transport *r = make_listener(0x90, ep);
	ps_transport *s = make(0x91, PATIENCE_MS, PATIENCE_MS);
	ps_peer p = connect_to(s, ep);
	for (uint32_t round = 0; round < 5; round++) {
		assert_ps(ps_transport_send(s, p, &round, sizeof(round), NULL,
		                            0, NULL, NULL),
		          PS_OK);
		ps_msg *m = recv_one(r);
		uint32_t got;
		assert_int_equal(m->hdr_len, sizeof(got));
		memcpy(&got, m->hdr, sizeof(got));
		assert_int_equal(got, round);
		assert_true(m->src == 0x91);
		ps_msg_free(&m);
		ps_transport_destroy(&r, 0);

		/* the same port again (retried: the old one may linger) */
		ps_transport_opts o = opts_of(0x90);
		assert_ps(ps_transport_create(backend, &o, &r), PS_OK);
		int rc = PS_EADDRINUSE;
		for (int64_t end = now_ms() + PATIENCE_MS;
		     rc == PS_EADDRINUSE && now_ms() < end; sleep_ms(50))
			rc = ps_transport_listen(r, host, endpoint_port(ep),
			                         NULL, ep2, EP_CAP);
		assert_ps(rc, PS_OK);
		assert_string_equal(ep, ep2);
		ps_peer q = connect_to(s, ep);
		assert_int_equal(q, p);
	}
	ps_transport_destroy(&s, 0);
	ps_transport_destroy(&r, 0);
}

/* ---- 17. garbage (tcp only: raw ZeroMQ peers) --------------------------- */

static void *raw_dealer(void *ctx, const char *ep, const void *rid,
                        size_t rid_len)
{
	void *d = zmq_socket(ctx, ZMQ_DEALER);
	int zero = 0;
	assert_non_null(d);
	zmq_setsockopt(d, ZMQ_LINGER, &zero, sizeof(zero));
	if (rid)
		assert_int_equal(
		    zmq_setsockopt(d, ZMQ_ROUTING_ID, rid, rid_len), 0);
	assert_int_equal(zmq_connect(d, ep), 0);
	return d;
}

static void raw_send(void *d, int frames, const char *last)
{
	for (int i = 0; i < frames; i++) {
		const char *data = (i == frames - 1 && last) ? last : "junk";
		assert_true(zmq_send(d, data, strlen(data),
		                     i < frames - 1 ? ZMQ_SNDMORE : 0) >= 0);
	}
}

static void test_garbage(void **state)
{
	const unsigned char rid8[8] = {0x11, 0x22, 0x33, 0x44,
	                               0x55, 0x66, 0x77, 0x88};
	const uint64_t id8 = 0x8877665544332211ull; /* little-endian rid8 */
	char ep[EP_CAP];
	(void)state;

	if (strcmp(backend, "tcp") != 0) {
		print_message("garbage: raw ZeroMQ peers apply to tcp only\n");
		skip();
	}
	ps_transport *r = make_listener(0xB0, ep);
	ps_transport *s = make(0xB1, PATIENCE_MS, PATIENCE_MS);
	ps_peer p = connect_to(s, ep);

	void *ctx = zmq_ctx_new();
	assert_non_null(ctx);
	void *d_auto = raw_dealer(ctx, ep, NULL, 0); /* 5-byte auto id */
	void *d_short = raw_dealer(ctx, ep, "abc", 3);
	void *d8 = raw_dealer(ctx, ep, rid8, sizeof(rid8));

	raw_send(d_auto, 1, NULL);
	raw_send(d_auto, 2, NULL);
	raw_send(d_short, 1, NULL);
	raw_send(d8, 3, NULL);  /* id + 3 frames: too many */
	raw_send(d8, 4, NULL);  /* id + 4 frames */
	raw_send(d8, 10, NULL); /* id + 10 frames */
	raw_send(d8, 2, "good-payload");
	raw_send(d8, 1, "good-header-only");

	/* Not ZeroMQ at all: bytes on the port. */
	struct sockaddr_in sa = {.sin_family = AF_INET};
	sa.sin_port = htons((uint16_t)endpoint_port(ep));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	if (strcmp(host, "127.0.0.1") == 0 &&
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		static const char junk[] = "GET / HTTP/1.0\r\n\r\n\xff\x00\x01";
		ssize_t w = write(fd, junk, sizeof(junk));
		(void)w;
	}

	assert_ps(ps_transport_send(s, p, "final", 5, NULL, 0, NULL, NULL),
	          PS_OK);

	/* Exactly the three good messages arrive; d8's two in order. */
	int got_d8 = 0, got_final = 0;
	for (int i = 0; i < 3; i++) {
		ps_msg *m = recv_one(r);
		if (m->src == id8) {
			if (got_d8 == 0) {
				assert_int_equal(m->hdr_len, 4);
				assert_memory_equal(m->hdr, "junk", 4);
				assert_int_equal(m->payload_len, 12);
				assert_memory_equal(m->payload, "good-payload",
				                    12);
			} else {
				assert_int_equal(m->hdr_len, 16);
				assert_memory_equal(m->hdr, "good-header-only",
				                    16);
				assert_null(m->payload);
			}
			got_d8++;
		} else if (m->src == 0xB1) {
			assert_int_equal(m->hdr_len, 5);
			assert_memory_equal(m->hdr, "final", 5);
			got_final++;
		} else {
			fail_msg("unexpected message from %llx",
			         (unsigned long long)m->src);
		}
		ps_msg_free(&m);
	}
	assert_int_equal(got_d8, 2);
	assert_int_equal(got_final, 1);
	ps_msg *m = NULL;
	assert_ps(ps_transport_recv(r, 300, &m), PS_ETIMEDOUT);

	/* Still healthy. */
	assert_ps(ps_transport_send(s, p, "after", 5, NULL, 0, NULL, NULL),
	          PS_OK);
	m = recv_one(r);
	assert_memory_equal(m->hdr, "after", 5);
	ps_msg_free(&m);

	close(fd);
	zmq_close(d_auto);
	zmq_close(d_short);
	zmq_close(d8);
	zmq_ctx_term(ctx);
	ps_transport_destroy(&s, 0);
	ps_transport_destroy(&r, 0);
}

/* ---- who may connect: the job's secret --------------------------------- */

/* Does a transport of secret `client` ("" none) and token get a message
 * into a listener of secret `node`? A refused one fails to connect (or,
 * at worst, its message never arrives: waited for PATIENCE_MS). *kid:
 * the key id the message came with. */
static bool gets_in_as(const char *node, const char *client,
                       const char *token, uint64_t *kid)
{
	char ep[EP_CAP];
	ps_transport *n = make_with(1, PATIENCE_MS, PATIENCE_MS, node, "");
	ps_transport *c = make_with(2, PATIENCE_MS, 3000, client, token);
	ps_peer p;
	ps_msg *m = NULL;
	bool in = false;

	assert_ps(ps_transport_listen(n, host, 0, NULL, ep, EP_CAP), PS_OK);
	if (ps_transport_connect(c, ep, &p) == PS_OK &&
	    ps_transport_send(c, p, "hi", 2, NULL, 0, NULL, NULL) == PS_OK &&
	    ps_transport_recv(n, PATIENCE_MS, &m) == PS_OK && m) {
		in = m->hdr_len == 2 && memcmp(m->hdr, "hi", 2) == 0 &&
		     m->src == 2;
		*kid = m->kid;
		ps_msg_free(&m);
	}
	ps_transport_destroy(&c, 0);
	ps_transport_destroy(&n, 0);
	return in;
}

static bool gets_in(const char *node, const char *client)
{
	uint64_t kid;
	return gets_in_as(node, client, "", &kid);
}

/* security.mode = secret: a node admits exactly the peers presenting its
 * own secret, and a node without one only peers without one; a peer's
 * messages carry the key id of the token it presented. */
static void test_secret(void **state)
{
	(void)state;
	const char *a = "00112233445566778899aabbccddeeff"
	                "00112233445566778899aabbccddeeff";
	const char *b = "00112233445566778899aabbccddeeff"
	                "00112233445566778899aabbccddeef0";
	assert_true(gets_in(a, a));
	assert_false(gets_in(a, b));  /* another secret (one digit off) */
	assert_false(gets_in(a, "")); /* none, to a node of a secret */
	assert_false(gets_in("", a)); /* a secret, to a node of none */
	const char *t = "ffeeddccbbaa99887766554433221100"
	                "ffeeddccbbaa99887766554433221100";
	uint64_t kid = 0;
	assert_true(gets_in_as(a, a, t, &kid));
	assert_true(kid == ps_token_kid(t) && kid != 0);
	assert_true(gets_in_as(a, a, "", &kid));
	assert_true(kid == 0);
}

/* ---- 18. what one connection's messages may hold (rdma) ----------------- */

/* rdma_peer_recv_bytes: the receiver READs a connection's messages only
 * while those recv has not taken fit the budget; the rest wait unread
 * (the sender's payloads stay unread: their free_fn does not run), then
 * come in order as recv takes the first ones, through both the READ
 * (1 MiB) and the copy (40 KiB) paths. A message larger than the budget
 * still comes when the connection holds nothing else. */
static void test_recv_budget(void **state)
{
	const size_t big = (size_t)1 << 20, small = 40 * 1024;
	const uint32_t n = 24; /* even: READ, odd: copied */
	char ep[EP_CAP];
	counter bigs = {0}, smalls = {0};
	(void)state;

	if (strcmp(backend, "rdma") != 0) {
		print_message("recv budget: rdma's (ZeroMQ bounds a "
		              "connection's queue in messages)\n");
		skip();
	}
	ps_transport_opts o = opts_of(0x90);
	/* two READ messages and two copied ones, not a third READ */
	o.rdma_peer_recv_bytes = 3 * big + 64;
	ps_transport *r = NULL;
	assert_ps(ps_transport_create(backend, &o, &r), PS_OK);
	assert_ps(ps_transport_listen(r, host, 0, NULL, ep, EP_CAP), PS_OK);
	ps_transport *s = make(0x91, PATIENCE_MS, PATIENCE_MS);
	ps_peer p = connect_to(s, ep);

	for (uint32_t i = 0; i < n; i++) {
		size_t len = i % 2 ? small : big;
		unsigned char *b = malloc(len);
		assert_non_null(b);
		fill(b, len, i);
		assert_ps(ps_transport_send(s, p, &i, sizeof(i), b, len,
		                            count_and_free,
		                            i % 2 ? &smalls : &bigs),
		          PS_OK);
	}
	/* two READ messages fit; the third waits unread however long */
	assert_int_equal(wait_calls(&bigs, 2), 2);
	assert_int_equal(wait_calls_ms(&bigs, 3, 500), 2);

	uint32_t bigs_taken = 0;
	for (uint32_t i = 0; i < n; i++) {
		ps_msg *m = recv_one(r);
		uint32_t seq;
		assert_int_equal(m->hdr_len, sizeof(seq));
		memcpy(&seq, m->hdr, sizeof(seq));
		assert_int_equal(seq, i);
		size_t len = i % 2 ? small : big;
		assert_int_equal(m->payload_len, len);
		if (!check(m->payload, len, i))
			fail_msg("message %u changed", i);
		ps_msg_free(&m);
		bigs_taken += i % 2 == 0;
		/* never more read than taken plus what the budget holds */
		assert_true(atomic_load(&bigs.calls) <= (int)bigs_taken + 3);
	}
	assert_int_equal(wait_calls(&bigs, (int)n / 2), (int)n / 2);

	/* larger than the whole budget: comes, alone */
	size_t huge = 4 * big;
	unsigned char *b = malloc(huge);
	assert_non_null(b);
	fill(b, huge, 99);
	assert_ps(ps_transport_send(s, p, "h", 1, b, huge, count_and_free,
	                            &bigs),
	          PS_OK);
	ps_msg *m = recv_one(r);
	assert_int_equal(m->payload_len, huge);
	assert_true(check(m->payload, huge, 99));
	ps_msg_free(&m);

	ps_transport_destroy(&s, 0);
	ps_transport_destroy(&r, 0);
	assert_int_equal(atomic_load(&bigs.calls), (int)n / 2 + 1);
	assert_int_equal(atomic_load(&smalls.calls), (int)n / 2);
}

/* rdma_node_recv_bytes: what two connections' messages together hold of
 * the receiver before recv takes them stays within the node's budget,
 * though each connection's own budget would take more; then everything
 * comes, each connection's messages in order. */
static void test_node_recv_budget(void **state)
{
	const size_t big = (size_t)1 << 20;
	const uint32_t n = 4; /* per sender */
	char ep[EP_CAP];
	counter bigs = {0};
	(void)state;

	if (strcmp(backend, "rdma") != 0) {
		print_message("node recv budget: rdma's\n");
		skip();
	}
	ps_transport_opts o = opts_of(0x92);
	/* each connection could hold all its 4; the node takes 3 */
	o.rdma_peer_recv_bytes = 8 * big;
	o.rdma_node_recv_bytes = 3 * big + 64;
	ps_transport *r = NULL;
	assert_ps(ps_transport_create(backend, &o, &r), PS_OK);
	assert_ps(ps_transport_listen(r, host, 0, NULL, ep, EP_CAP), PS_OK);
	ps_transport *s[2] = {make(0x93, PATIENCE_MS, PATIENCE_MS),
	                      make(0x94, PATIENCE_MS, PATIENCE_MS)};
	ps_peer p[2] = {connect_to(s[0], ep), connect_to(s[1], ep)};

	for (uint32_t i = 0; i < 2 * n; i++) {
		unsigned char *b = malloc(big);
		assert_non_null(b);
		fill(b, big, i);
		assert_ps(ps_transport_send(s[i % 2], p[i % 2], &i, sizeof(i), b,
		                            big, count_and_free, &bigs),
		          PS_OK);
	}
	/* three are READ, from either sender; the fourth waits unread */
	assert_int_equal(wait_calls(&bigs, 3), 3);
	assert_int_equal(wait_calls_ms(&bigs, 4, 500), 3);

	uint32_t next[2] = {0, 1}; /* each sender's next sequence number */
	for (uint32_t k = 0; k < 2 * n; k++) {
		ps_msg *m = recv_one(r);
		uint32_t seq;
		assert_int_equal(m->hdr_len, sizeof(seq));
		memcpy(&seq, m->hdr, sizeof(seq));
		assert_int_equal(seq, next[seq % 2]);
		next[seq % 2] += 2;
		assert_int_equal(m->payload_len, big);
		if (!check(m->payload, big, seq))
			fail_msg("message %u changed", seq);
		ps_msg_free(&m);
		/* never more read than taken plus what the node's budget
		 * holds */
		assert_true(atomic_load(&bigs.calls) <= (int)k + 1 + 3);
	}
	assert_int_equal(wait_calls(&bigs, 2 * (int)n), 2 * (int)n);
	ps_transport_destroy(&s[0], 0);
	ps_transport_destroy(&s[1], 0);
	ps_transport_destroy(&r, 0);
}

/* ---- 17b. no takeover of a connection (tcp only: raw ZeroMQ peers) ---- */

/* A stranger connecting with a member's routing id (lane 0's 8 bytes, or
 * a lane's 9) while the member is connected neither replaces the member's
 * connection nor gets a message in under its id: what it sends never
 * arrives, and the member's messages keep arriving. */
static void test_no_takeover(void **state)
{
	char ep[EP_CAP];
	ps_peer p = UINT32_MAX;
	int rc;
	(void)state;

	if (strcmp(backend, "tcp") != 0) {
		print_message("takeover: raw ZeroMQ peers apply to tcp only\n");
		skip();
	}
	ps_transport *r = make_listener(0xC0, ep);
	ps_transport_opts o = opts_of(0xC1);
	o.connections_per_peer = 2;
	ps_transport *s = NULL;
	assert_ps(ps_transport_create(backend, &o, &s), PS_OK);
	p = connect_in_background(s, ep);
	for (uint32_t f = 0; f < 2; f++) { /* both lanes are connected */
		assert_ps(ps_transport_send_flow(s, p, f, "m", 1, NULL, 0,
		                                 NULL, NULL),
		          PS_OK);
		ps_msg *m = recv_one(r);
		assert_true(m->src == 0xC1);
		ps_msg_free(&m);
	}

	void *ctx = zmq_ctx_new();
	assert_non_null(ctx);
	unsigned char rid[9] = {0xC1, 0, 0, 0, 0, 0, 0, 0, 1};
	void *lane0 = raw_dealer(ctx, ep, rid, 8);
	void *lane1 = raw_dealer(ctx, ep, rid, 9);
	for (int i = 0; i < 20; i++) {
		raw_send(lane0, 1, "impostor");
		raw_send(lane1, 1, "impostor");
		for (uint32_t f = 0; f < 2; f++)
			assert_ps(ps_transport_send_flow(s, p, f, "member", 6,
			                                 NULL, 0, NULL, NULL),
			          PS_OK);
		for (int k = 0; k < 2; k++) {
			ps_msg *m = recv_one(r);
			if (m->hdr_len != 6 || memcmp(m->hdr, "member", 6))
				fail_msg("a stranger's message arrived as node "
				         "%#llx's", (unsigned long long)m->src);
			ps_msg_free(&m);
		}
	}
	ps_msg *extra = NULL;
	rc = ps_transport_recv(r, 200, &extra);
	if (rc == PS_OK)
		fail_msg("a stranger's message arrived as node %#llx's",
		         (unsigned long long)extra->src);
	assert_ps(rc, PS_ETIMEDOUT);
	zmq_close(lane0);
	zmq_close(lane1);
	zmq_ctx_term(ctx);
	ps_transport_destroy(&s, 0);
	ps_transport_destroy(&r, 0);
}

/* ---- main --------------------------------------------------------------- */

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	    T(test_exchange),    T(test_header_only), T(test_large_payload),
	    T(test_many_small),  T(test_peer_gone),   T(test_connect_refused),
	    T(test_connect_in_background), T(test_flows),
	    T(test_port_in_use), T(test_wake),        T(test_recv_timeout),
	    T(test_registry),    T(test_caps_and_registration),
	    T(test_stop_then_free), T(test_large_registered),
	    T(test_hold_many),   T(test_stop_pending), T(test_reconnect),
	    T(test_garbage),     T(test_no_takeover), T(test_secret),
	    T(test_recv_budget),
	    T(test_node_recv_budget),
#undef T
	};
	ps_transport_opts o = {.id = 1,
	                       .send_timeout_ms = 200,
	                       .connect_timeout_ms = 300,
	                       .io_threads = 1};
	ps_transport *t = NULL;
	char ep[EP_CAP];
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: %s BACKEND   (built in: %s)\n", argv[0],
		        ps_transport_names());
		return 2;
	}
	backend = argv[1];
	if (getenv("ORDO_TEST_HOST") && *getenv("ORDO_TEST_HOST"))
		host = getenv("ORDO_TEST_HOST");
	const char *gi = getenv("ORDO_TEST_RDMA_GID_INDEX");
	if (gi && *gi && strcmp(backend, "rdma") == 0) {
		char *end = NULL;
		long v = strtol(gi, &end, 10);
		if (!end || *end || v < -1 || v > 255) {
			fprintf(stderr, "ORDO_TEST_RDMA_GID_INDEX=%s: want -1 "
			        "to 255\n", gi);
			return 2;
		}
		rdma_gid_index = (int)v;
		printf("rdma: transport.rdma_gid_index = %d\n",
		       rdma_gid_index);
	}
	o.rdma_gid_index = rdma_gid_index;

	if (!ps_transport_find(backend)) {
		printf("SKIP: transport \"%s\" is not built in (built in: "
		       "%s)\n",
		       backend, ps_transport_names());
		return 77;
	}
	/* Probe: a backend whose hardware is absent says PS_ENOTSUP. */
	rc = ps_transport_create(backend, &o, &t);
	if (rc == PS_OK) {
		rc = ps_transport_listen(t, host, 0, NULL, ep, sizeof(ep));
		ps_transport_destroy(&t, 0);
	}
	if (rc == PS_ENOTSUP) {
		printf("SKIP: transport \"%s\" is unavailable on %s: %s\n",
		       backend, host, ps_strerror(rc));
		return 77;
	}
	if (rc != PS_OK) {
		fprintf(stderr, "transport \"%s\" fails its probe on %s: %s\n",
		        backend, host, ps_strerror(rc));
		return 1;
	}
	return cmocka_run_group_tests_name(backend, tests, NULL, NULL);
}
