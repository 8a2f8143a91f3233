/*
 * tests/runtime/test_node.c - joining a job (runtime/node.c) against a
 * scheduler played by the test over real ZeroMQ sockets on loopback.
 *
 * The race it pins down: the scheduler sends its WELCOMEs one after the
 * other, so a peer that got its WELCOME first can send to a node that has
 * not got its own yet (ps-bench saw a server's first parameters reach a
 * worker before that worker's WELCOME; dropped, the worker waited for
 * them forever). Such a message must be kept and delivered once the node
 * knows the job, and still be checked then.
 *
 * The race is made certain, not hoped for: the scheduler played here sends
 * the WELCOME only once the node has kept every early message
 * (ps_node.early_kept), so they provably took the early path. Timeouts
 * (PATIENCE_MS) only end a hang.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "scheduler/link_probe.h"
#include "proto/join.h"
#include "runtime/node.h"
#include "scheduling/placement.h"
#include "support/loopback.h"

#define SCHED_ID 0x5c4ed00000000001ull
#define PEER_ID 0x9ee4000000000002ull
#define JOB_ID 0x0123456789abcdefull
#define PATIENCE_MS 60000 /* waits for what must happen: a hang guard */

typedef struct joiner {
	ps_config cfg;
	ps_node node;
	int rc;
} joiner;

static void *join_main(void *arg)
{
	joiner *j = arg;

	j->rc = ps_node_join(&j->node, &j->cfg, PS_ROLE_SERVER, NULL, 0);
	return NULL;
}

static void set(ps_config *cfg, const char *key, const char *value)
{
	char err[512];

	if (ps_config_set_kv(cfg, key, value, "--set", err, sizeof(err)) !=
	    PS_OK)
		fail_msg("%s=%s: %s", key, value, err);
}

static ps_transport *transport(uint64_t id)
{
	ps_transport_opts o = {.id = id,
			       .send_timeout_ms = PATIENCE_MS,
			       .connect_timeout_ms = PATIENCE_MS,
			       .io_threads = 1};
	ps_transport *t = NULL;

	assert_int_equal(ps_transport_create("tcp", &o, &t), PS_OK);
	return t;
}

/* iteration: the header's (a WELCOME's or ABORT's addressee) */
static void send_msg_at(ps_transport *t, ps_peer to, uint32_t type,
			uint64_t job, uint32_t sender, uint64_t iteration,
			void *body, size_t len)
{
	ps_wire_header h = {.type = type, .job_id = job, .sender = sender,
			    .iteration = iteration, .payload_len = len};
	unsigned char buf[PS_WIRE_HEADER_MAX];
	size_t hlen;

	assert_int_equal(ps_wire_header_encode(&h, buf, sizeof(buf), &hlen),
			 PS_OK);
	assert_int_equal(ps_transport_send(t, to, buf, hlen, body, len,
					   body ? ps_wire_free : NULL, NULL),
			 PS_OK);
}

static void send_msg(ps_transport *t, ps_peer to, uint32_t type,
		     uint64_t job, uint32_t sender, void *body, size_t len)
{
	send_msg_at(t, to, type, job, sender, 0, body, len);
}

/* Waits until the joining node has kept want early messages. */
static void wait_kept(ps_node *n, unsigned want)
{
	for (int ms = 0; atomic_load(&n->early_kept) < want; ms++) {
		if (ms == PATIENCE_MS)
			fail_msg("the node kept %u of %u early messages",
				 atomic_load(&n->early_kept), want);
		usleep(1000);
	}
}

/* Run by join_job just before the WELCOME, on the scheduler's transport
 * and its connection to the node (NULL: nothing). */
static void (*before_welcome)(ps_transport *sched, ps_peer to_node,
			      uint64_t node_tid);
/* The joining node and its endpoint, for before_welcome. */
static ps_node *joining;
static const char *joining_ep;
/* The worker's endpoint in the WELCOME, when not the peer's (NULL). */
static const char *worker_ep;

/* A job of one server (node 1, under test) and one worker (node 2, the
 * peer, played here as the scheduler is), once the node has joined. */
typedef struct fixture {
	ps_transport *sched, *peer;
	char ep[PS_ENDPOINT_MAX];
	ps_wire_register reg;
	ps_wire_welcome w;
	ps_peer peer_to_node;
	joiner *j;
} fixture;

/* The node joins. Before sending the WELCOME, the peer sends the node
 * `early` messages: PULLs from node 2 in this job, then one claiming a
 * job that is not this one. extra: more config (key, value, ..., NULL). */
static void join_job(fixture *f, int early, ...)
{
	char port[16], why[256], peer_ep[PS_ENDPOINT_MAX];
	ps_tensor_desc t;
	ps_peer to_node;
	ps_msg *msg = NULL;
	ps_wire_header h;
	static joiner j; /* not on the stack: the thread may outlive a failure */
	pthread_t th;
	void *body;
	size_t len;
	va_list ap;

	memset(f, 0, sizeof(*f));
	f->sched = transport(SCHED_ID);
	f->peer = transport(PEER_ID);
	f->j = &j;
	assert_int_equal(ps_transport_listen(f->sched, "127.0.0.1", 0, NULL,
					     f->ep, sizeof(f->ep)),
			 PS_OK);
	assert_int_equal(ps_transport_listen(f->peer, "127.0.0.1", 0, NULL,
					     peer_ep, sizeof(peer_ep)),
			 PS_OK);
	snprintf(port, sizeof(port), "%s", strrchr(f->ep, ':') + 1);
	memset(&j, 0, sizeof(j));
	ps_config_defaults(&j.cfg);
	set(&j.cfg, "cluster.scheduler_host", "127.0.0.1");
	set(&j.cfg, "cluster.scheduler_port", port);
	set(&j.cfg, "cluster.bind_host", "127.0.0.1");
	/* hang guards only: the node waits 2 x this for its WELCOME, and the
	 * scheduler played here sends no heartbeats */
	set(&j.cfg, "cluster.connect_timeout_ms", "60000");
	set(&j.cfg, "cluster.heartbeat_timeout_ms", "3600000");
	set(&j.cfg, "log.level", "error");
	va_start(ap, early);
	for (const char *k; (k = va_arg(ap, const char *));)
		set(&j.cfg, k, va_arg(ap, const char *));
	va_end(ap);
	assert_int_equal(pthread_create(&th, NULL, join_main, &j), 0);

	/* REGISTER: who the node is and where it listens */
	assert_int_equal(ps_transport_recv(f->sched, PATIENCE_MS, &msg),
			 PS_OK);
	assert_int_equal(ps_wire_header_decode(msg->hdr, msg->hdr_len, &h,
					       why, sizeof(why)),
			 PS_OK);
	assert_int_equal(h.type, PS_MSG_REGISTER);
	assert_int_equal(ps_wire_register_decode(msg->payload,
						 msg->payload_len, &f->reg,
						 why, sizeof(why)),
			 PS_OK);
	ps_msg_free(&msg);

	/* the peer, WELCOMEd first, sends before the node's WELCOME */
	assert_int_equal(ps_transport_connect(f->peer, f->reg.self.endpoint,
					      &f->peer_to_node),
			 PS_OK);
	for (int i = 0; i < early; i++)
		send_msg(f->peer, f->peer_to_node, PS_MSG_PULL, JOB_ID, 2,
			 NULL, 0);
	if (early)
		send_msg(f->peer, f->peer_to_node, PS_MSG_PULL, JOB_ID + 1, 2,
			 NULL, 0);
	/* the node has them all, kept, before its WELCOME is sent */
	wait_kept(&j.node, early ? (unsigned)early + 1 : 0);

	ps_wire_welcome *w = &f->w;
	w->your_id = 1;
	w->num_servers = 1;
	w->num_workers = 1;
	w->num_nodes = 3;
	w->nodes = calloc(3, sizeof(*w->nodes));
	assert_non_null(w->nodes);
	w->nodes[0] = (ps_node_info){.id = 0, .role = PS_ROLE_SCHEDULER,
				     .transport_id = SCHED_ID};
	snprintf(w->nodes[0].endpoint, sizeof(w->nodes[0].endpoint), "%s",
		 f->ep);
	w->nodes[1] = f->reg.self;
	w->nodes[1].id = 1;
	w->nodes[1].rank = 0;
	w->nodes[2] = (ps_node_info){.id = 2, .role = PS_ROLE_WORKER,
				     .transport_id = PEER_ID};
	snprintf(w->nodes[2].endpoint, sizeof(w->nodes[2].endpoint), "%s",
		 worker_ep ? worker_ep : peer_ep);
	memset(&t, 0, sizeof(t));
	snprintf(t.name, sizeof(t.name), "w");
	t.numel = 1024;
	assert_int_equal(ps_placement_compute(&t, 1, 4096, 0, 1,
					      PS_PLACE_BALANCED, &w->placement),
			 PS_OK);
	assert_int_equal(ps_wire_welcome_encode(w, &body, &len), PS_OK);
	assert_int_equal(ps_transport_connect(f->sched, f->reg.self.endpoint,
					      &to_node),
			 PS_OK);
	joining = &j.node;
	joining_ep = f->reg.self.endpoint;
	if (before_welcome)
		before_welcome(f->sched, to_node, f->reg.self.transport_id);
	send_msg_at(f->sched, to_node, PS_MSG_WELCOME, JOB_ID, 0,
		    f->reg.self.transport_id, body, len);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(j.rc, PS_OK);
	assert_int_equal(j.node.id, 1);
}

static void leave_job(fixture *f)
{
	ps_wire_register_clear(&f->reg);
	ps_wire_welcome_clear(&f->w);
	ps_node_close(&f->j->node, 0);
	ps_transport_destroy(&f->peer, 0);
	ps_transport_destroy(&f->sched, 0);
}

static void run_join(int early)
{
	fixture f;
	ps_wire_header h;

	join_job(&f, early, NULL);
	ps_node *n = &f.j->node;
	/* the early path, and only it, took them (none came after) */
	assert_int_equal(ps_join_kept(n->join), early ? early + 1 : 0);
	assert_int_equal(atomic_load(&n->early_kept), ps_join_kept(n->join));

	/* every early message of this job arrives, in order, and nothing
	 * else: the one of another job is checked and dropped */
	for (int i = 0; i < early; i++) {
		ps_msg *m = NULL;
		assert_int_equal(ps_node_recv(n, PATIENCE_MS, &m, &h), PS_OK);
		assert_int_equal(h.type, PS_MSG_PULL);
		assert_int_equal(h.sender, 2);
		ps_msg_free(&m);
	}
	{
		ps_msg *m = NULL;
		assert_int_equal(ps_node_recv(n, 300, &m, &h), PS_ETIMEDOUT);
	}
	{ /* all handed */
		void *left;
		assert_int_equal(ps_join_next_early(n->join, &left), 0);
	}
	assert_int_equal(n->dropped, early ? 1 : 0);
	leave_job(&f);
}

static void test_join(void **state)
{
	(void)state;
	run_join(0);
}

static void test_messages_before_welcome_are_kept(void **state)
{
	(void)state;
	run_join(3);
}

/* The node sends to the peer until a send fails (the peer is gone). */
typedef struct sender {
	ps_node *node;
	int rc;
} sender;

static void *send_until_failure(void *arg)
{
	sender *x = arg;

	for (int i = 0; i < PATIENCE_MS; i++) {
		ps_wire_header h = {.type = PS_MSG_PARAMS};
		x->rc = ps_node_send(x->node, 2, &h, NULL, 0, NULL, NULL);
		if (x->rc != PS_OK)
			return NULL;
		usleep(1000); /* sent into a connection not yet seen closed */
	}
	return NULL;
}

/* The next message to the played scheduler that is not a heartbeat. */
static ps_msg *next_to_scheduler(fixture *f, int timeout_ms,
				 ps_wire_header *h)
{
	char why[256];

	for (;;) {
		ps_msg *msg = NULL;
		int rc = ps_transport_recv(f->sched, timeout_ms, &msg);
		if (rc == PS_ETIMEDOUT)
			return NULL;
		assert_int_equal(rc, PS_OK);
		assert_int_equal(ps_wire_header_decode(msg->hdr, msg->hdr_len,
						       h, why, sizeof(why)),
				 PS_OK);
		if (h->type != PS_MSG_HEARTBEAT)
			return msg;
		ps_msg_free(&msg);
	}
}

/* A peer dies: the node's send to it fails, the node tells the scheduler
 * which node it lost (PEER_LOST) and returns only with the scheduler's
 * ABORT, heartbeating meanwhile (it must not look like the dead one). */
/* The scheduler measures the link before the WELCOME: the node answers
 * each PROBE at once, with its number and job. */
static void probe_the_node(ps_transport *sched, ps_peer to_node,
			   uint64_t node_tid)
{
	ps_link_probe r;
	uint64_t dropped = 0;
	char why[256];

	assert_int_equal(ps_link_probe_run(sched, JOB_ID, to_node, node_tid,
					   1 << 20, PATIENCE_MS, &r, &dropped,
					   why, sizeof(why)),
			 PS_OK);
	assert_int_equal(dropped, 0);
	assert_true(r.gbps > 0);
	assert_true(r.rtt_us > 0 && r.us > 0);
	/* three empty, then doubling from 256K up to the 1M limit at most,
	 * then two more at the last size */
	assert_true(r.bytes >= 256 << 10 && r.bytes <= 1 << 20);
	assert_true(r.sent >= 3 + 1 + 2 && r.sent <= 3 + 3 + 2);
}

static void test_probe_before_welcome(void **state)
{
	fixture f;

	(void)state;
	before_welcome = probe_the_node;
	join_job(&f, 0, NULL);
	before_welcome = NULL;
	/* the PROBEs were answered, not kept for after the WELCOME */
	assert_int_equal(ps_join_kept(f.j->node.join), 0);
	leave_job(&f);
}

/* Before its WELCOME a node takes a WELCOME or ABORT only when the header
 * names its transport id: an ABORT and a WELCOME of 1 MiB of 1s, addressed
 * to another id, from a stranger claiming to be the scheduler, are
 * dropped and counted, and the node joins. */
static void strangers_welcome(ps_transport *sched, ps_peer to_node,
			      uint64_t node_tid)
{
	ps_transport *t;
	ps_peer p;
	uint64_t other = node_tid ^ 1;
	size_t n = 1 << 20;
	unsigned char *ones = malloc(n + 5);
	void *body;
	size_t len;

	(void)sched;
	(void)to_node;
	assert_non_null(ones);
	ones[0] = 0xdd; /* array32 of n 1s */
	for (int i = 0; i < 4; i++)
		ones[1 + i] = (unsigned char)(n >> (24 - 8 * i));
	memset(ones + 5, 0x01, n);
	t = transport(0x5eed);
	assert_int_equal(ps_transport_connect(t, joining_ep, &p), PS_OK);
	assert_int_equal(ps_wire_reason_encode("go away", &body, &len), PS_OK);
	send_msg_at(t, p, PS_MSG_ABORT, JOB_ID, 0, other, body, len);
	send_msg_at(t, p, PS_MSG_WELCOME, JOB_ID, 0, other, ones, n + 5);
	/* both are in (dropped, or fatal) before the real WELCOME is sent */
	for (int ms = 0; atomic_load(&joining->dropped) < 2; ms++) {
		if (ms == PATIENCE_MS)
			fail_msg("the node dropped %llu of 2",
				 (unsigned long long)atomic_load(
					 &joining->dropped));
		usleep(1000);
	}
	ps_transport_destroy(&t, 1000);
}

static void test_stranger_before_welcome(void **state)
{
	fixture f;

	(void)state;
	before_welcome = strangers_welcome;
	join_job(&f, 0, NULL);
	before_welcome = NULL;
	assert_int_equal(f.j->node.id, 1);
	assert_int_equal(atomic_load(&f.j->node.dropped), 2);
	assert_string_equal(f.j->node.abort_reason, "");
	leave_job(&f);
}

/* A node that never answers: the probe gives up after its timeout with
 * a reason; what else arrives meanwhile is dropped and counted. */
static void test_probe_without_answer(void **state)
{
	ps_transport *sched = transport(SCHED_ID), *mute = transport(PEER_ID);
	char sched_ep[PS_ENDPOINT_MAX], mute_ep[PS_ENDPOINT_MAX], why[256];
	ps_peer to_mute, to_sched;
	ps_link_probe r;
	uint64_t dropped = 0;

	(void)state;
	assert_int_equal(ps_transport_listen(sched, "127.0.0.1", 0, NULL,
					     sched_ep, sizeof(sched_ep)),
			 PS_OK);
	assert_int_equal(ps_transport_listen(mute, "127.0.0.1", 0, NULL,
					     mute_ep, sizeof(mute_ep)),
			 PS_OK);
	assert_int_equal(ps_transport_connect(sched, mute_ep, &to_mute),
			 PS_OK);
	assert_int_equal(ps_transport_connect(mute, sched_ep, &to_sched),
			 PS_OK);
	/* not an answer: a PROBE_ACK of another job, and a heartbeat */
	send_msg(mute, to_sched, PS_MSG_PROBE_ACK, JOB_ID + 1, 1, NULL, 0);
	send_msg(mute, to_sched, PS_MSG_HEARTBEAT, JOB_ID, 1, NULL, 0);
	assert_int_equal(ps_link_probe_run(sched, JOB_ID, to_mute, PEER_ID,
					   1 << 20, 300, &r, &dropped, why,
					   sizeof(why)),
			 PS_ETIMEDOUT);
	assert_non_null(strstr(why, "no answer to a probe within 300 ms"));
	assert_int_equal(dropped, 2);
	ps_transport_destroy(&mute, 0);
	ps_transport_destroy(&sched, 0);
}

static void test_lost_peer_is_reported(void **state)
{
	fixture f;
	sender x;
	pthread_t th;
	ps_wire_header h;
	ps_msg *msg;
	char reason[PS_REASON_MAX], why[256];
	void *body;
	size_t len;
	ps_peer to_node;

	(void)state;
	/* sends to a peer without a connection time out after 100 ms */
	join_job(&f, 0, "cluster.heartbeat_interval_ms", "100", NULL);
	x.node = &f.j->node;
	assert_int_equal(ps_node_connect_role(x.node, PS_ROLE_WORKER), PS_OK);
	ps_transport_destroy(&f.peer, 0);
	assert_int_equal(pthread_create(&th, NULL, send_until_failure, &x),
			 0);

	msg = next_to_scheduler(&f, PATIENCE_MS, &h);
	assert_non_null(msg);
	assert_int_equal(h.type, PS_MSG_PEER_LOST);
	assert_int_equal(h.sender, 1);
	assert_int_equal(h.key, 2);
	assert_int_equal(ps_wire_reason_decode(msg->payload, msg->payload_len,
					       reason, sizeof(reason), why,
					       sizeof(why)),
			 PS_OK);
	assert_non_null(strstr(reason, "PARAMS send failed: "));
	ps_msg_free(&msg);
	/* still waiting: heartbeats go on until the ABORT */
	msg = NULL;
	do {
		ps_msg_free(&msg);
		assert_int_equal(ps_transport_recv(f.sched, PATIENCE_MS, &msg),
				 PS_OK);
		assert_int_equal(ps_wire_header_decode(msg->hdr, msg->hdr_len,
						       &h, why, sizeof(why)),
				 PS_OK);
	} while (h.type != PS_MSG_HEARTBEAT);
	ps_msg_free(&msg);

	assert_int_equal(ps_wire_reason_encode("worker 0 unreachable", &body,
					       &len),
			 PS_OK);
	assert_int_equal(ps_transport_connect(f.sched, f.reg.self.endpoint,
					      &to_node),
			 PS_OK);
	send_msg(f.sched, to_node, PS_MSG_ABORT, JOB_ID, 0, body, len);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(x.rc, PS_EABORTED);
	assert_string_equal(x.node->abort_reason, "worker 0 unreachable");

	/* aborted for good: receiving says so at once; another failed send
	 * is not reported again */
	assert_int_equal(ps_node_recv(x.node, PATIENCE_MS, &msg, &h),
			 PS_EABORTED);
	{
		ps_wire_header p = {.type = PS_MSG_PARAMS};
		assert_int_not_equal(ps_node_send(x.node, 2, &p, NULL, 0, NULL,
						  NULL),
				     PS_OK);
	}
	msg = next_to_scheduler(&f, 300, &h);
	if (msg)
		fail_msg("after the ABORT the node sent %s",
			 ps_msg_type_name(h.type));
	leave_job(&f);
}

/* A TCP listener on loopback that accepts and never says a word: a
 * worker whose endpoint never completes a handshake. Its fd; the endpoint
 * in ep, its port in *port_p. */
static int silent_listener(char *ep, size_t cap, int *port_p)
{
	int fd = test_loopback_socket(4, port_p);

	assert_true(fd >= 0);
	snprintf(ep, cap, "tcp://127.0.0.1:%d", *port_p);
	return fd;
}

/* The node's connection to the silent listener, once it is made. */
static int accept_node(int lfd)
{
	struct pollfd p = {.fd = lfd, .events = POLLIN};
	int fd;

	if (poll(&p, 1, PATIENCE_MS) != 1)
		fail_msg("the node did not connect to the worker's endpoint");
	fd = accept(lfd, NULL, NULL);
	assert_true(fd >= 0);
	return fd;
}

typedef struct connector {
	ps_node *node;
	int rc;
} connector;

static void *connect_workers(void *arg)
{
	connector *x = arg;

	x->rc = ps_node_connect_role(x->node, PS_ROLE_WORKER);
	return NULL;
}

/* The node as a server that connects to its worker, whose endpoint
 * accepts but never completes the handshake: it heartbeats meanwhile,
 * and the scheduler's SHUTDOWN (the job finished without it) or ABORT
 * (the job failed) ends its connecting at once. Without them it would
 * wait for an hour (cluster.connect_timeout_ms). */
static void run_end_while_connecting(uint32_t end)
{
	char ep[PS_ENDPOINT_MAX], why[256];
	fixture f;
	connector x;
	pthread_t th;
	ps_wire_header h;
	ps_msg *msg = NULL;
	ps_peer to_node;
	int port, lfd = silent_listener(ep, sizeof(ep), &port), cfd;

	worker_ep = ep;
	join_job(&f, 0, "cluster.heartbeat_interval_ms", "100",
		 "cluster.connect_timeout_ms", "3600000", NULL);
	worker_ep = NULL;
	x.node = &f.j->node;
	assert_int_equal(pthread_create(&th, NULL, connect_workers, &x), 0);
	cfd = accept_node(lfd);

	/* connecting, and heartbeating */
	assert_int_equal(ps_transport_recv(f.sched, PATIENCE_MS, &msg), PS_OK);
	assert_int_equal(ps_wire_header_decode(msg->hdr, msg->hdr_len, &h, why,
					       sizeof(why)),
			 PS_OK);
	assert_int_equal(h.type, PS_MSG_HEARTBEAT);
	assert_int_equal(h.sender, 1);
	ps_msg_free(&msg);

	assert_int_equal(ps_transport_connect(f.sched, f.reg.self.endpoint,
					      &to_node),
			 PS_OK);
	if (end == PS_MSG_ABORT) {
		void *body;
		size_t len;
		assert_int_equal(ps_wire_reason_encode("worker 0 is silent",
						       &body, &len),
				 PS_OK);
		send_msg(f.sched, to_node, PS_MSG_ABORT, JOB_ID, 0, body, len);
	} else {
		send_msg(f.sched, to_node, PS_MSG_SHUTDOWN, JOB_ID, 0, NULL, 0);
	}
	assert_int_equal(pthread_join(th, NULL), 0);
	if (end == PS_MSG_ABORT) {
		assert_int_equal(x.rc, PS_EABORTED);
		assert_string_equal(x.node->abort_reason, "worker 0 is silent");
	} else {
		assert_int_equal(x.rc, PS_ECLOSED);
		assert_string_equal(x.node->abort_reason, "");
	}
	assert_int_equal(x.node->connected[2], 0);
	close(cfd);
	close(lfd);
	leave_job(&f);
}

static void test_shutdown_while_connecting(void **state)
{
	(void)state;
	run_end_while_connecting(PS_MSG_SHUTDOWN);
}

static void test_abort_while_connecting(void **state)
{
	(void)state;
	run_end_while_connecting(PS_MSG_ABORT);
}

/* Joins with a worker at ep (lfd, silent: it never completes the
 * handshake) and starts connecting to it on a thread of its own; returns
 * the accepted connection. early_bytes_max: cluster.early_bytes_max. */
static int begin_connecting(fixture *f, connector *x, pthread_t *th,
			    char *ep, int lfd, const char *early_bytes_max)
{
	worker_ep = ep;
	join_job(f, 0, "cluster.heartbeat_interval_ms", "100",
		 "cluster.connect_timeout_ms", "3600000",
		 "cluster.early_bytes_max", early_bytes_max, NULL);
	worker_ep = NULL;
	x->node = &f->j->node;
	assert_int_equal(pthread_create(th, NULL, connect_workers, x), 0);
	return accept_node(lfd);
}

/* Waits until the connecting node has kept want messages. */
static void wait_connect_kept(ps_node *n, unsigned want)
{
	for (int ms = 0; atomic_load(&n->connect_kept) < want; ms++) {
		if (ms == PATIENCE_MS)
			fail_msg("the node kept %u of %u messages while "
				 "connecting",
				 atomic_load(&n->connect_kept), want);
		usleep(1000);
	}
}

/* The worker's endpoint comes to life on the silent one's port: the
 * connecting thread ends, connected. Returns the worker's transport. */
static ps_transport *worker_comes_up(int lfd, int cfd, int port,
				     pthread_t th, const connector *x)
{
	char wep[PS_ENDPOINT_MAX];
	ps_transport *w;

	close(cfd);
	close(lfd);
	w = transport(PEER_ID);
	assert_int_equal(ps_transport_listen(w, "127.0.0.1", port, NULL, wep,
					     sizeof(wep)),
			 PS_OK);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(x->rc, PS_OK);
	assert_int_equal(x->node->connected[2], 1);
	return w;
}

/* While the node connects to its worker, the worker (which connected to
 * the node itself) and the scheduler send to it: their messages are kept
 * and handed out, in order, once the connection is made - here when a
 * real listener takes the silent one's port. */
static void test_messages_while_connecting_are_kept(void **state)
{
	char ep[PS_ENDPOINT_MAX], why[256];
	fixture f;
	connector x;
	pthread_t th;
	ps_wire_header h;
	ps_msg *msg = NULL;
	ps_peer to_node;
	ps_transport *w;
	int port, lfd = silent_listener(ep, sizeof(ep), &port), cfd;
	uint64_t pulls = 0;
	int ckpts = 0;

	(void)state;
	cfd = begin_connecting(&f, &x, &th, ep, lfd, "1G");
	ps_node *n = &f.j->node;

	for (uint64_t i = 0; i < 3; i++)
		send_msg_at(f.peer, f.peer_to_node, PS_MSG_PULL, JOB_ID, 2, i,
			    NULL, 0);
	assert_int_equal(ps_transport_connect(f.sched, f.reg.self.endpoint,
					      &to_node),
			 PS_OK);
	send_msg_at(f.sched, to_node, PS_MSG_CKPT, JOB_ID, 0, 7, NULL, 0);
	wait_connect_kept(n, 4);

	/* the worker's endpoint comes to life on the same port */
	w = worker_comes_up(lfd, cfd, port, th, &x);

	/* the kept messages first, each once, the worker's in order */
	for (int i = 0; i < 4; i++) {
		assert_int_equal(ps_node_recv(n, PATIENCE_MS, &msg, &h), PS_OK);
		if (h.sender == 2) {
			assert_int_equal(h.type, PS_MSG_PULL);
			assert_int_equal(h.iteration, pulls++);
		} else {
			assert_int_equal(h.sender, 0);
			assert_int_equal(h.type, PS_MSG_CKPT);
			assert_int_equal(h.iteration, 7);
			ckpts++;
		}
		ps_msg_free(&msg);
	}
	assert_int_equal(pulls, 3);
	assert_int_equal(ckpts, 1);
	assert_int_equal(ps_node_recv(n, 300, &msg, &h), PS_ETIMEDOUT);
	assert_int_equal(atomic_load(&n->connect_kept), 4);

	/* and the connection works */
	{
		ps_wire_header p = {.type = PS_MSG_PARAMS};
		assert_int_equal(ps_node_send(n, 2, &p, NULL, 0, NULL, NULL),
				 PS_OK);
	}
	assert_int_equal(ps_transport_recv(w, PATIENCE_MS, &msg), PS_OK);
	assert_int_equal(ps_wire_header_decode(msg->hdr, msg->hdr_len, &h, why,
					       sizeof(why)),
			 PS_OK);
	assert_int_equal(h.type, PS_MSG_PARAMS);
	assert_int_equal(h.sender, 1);
	ps_msg_free(&msg);
	ps_transport_destroy(&w, 0);
	leave_job(&f);
}

/* Messages kept while connecting are bounded as those before the
 * WELCOME (cluster.early_bytes_max = 2500 here): of six 1000-byte PULLs
 * sent while the node connects, three are kept (the third passes the
 * bound), and the other three wait unread in the transport - two more of
 * the node's heartbeats come and no fourth is kept - until the
 * connection is made; then all six come, in order, each once. */
static void test_kept_while_connecting_bounded(void **state)
{
	char ep[PS_ENDPOINT_MAX], why[256];
	fixture f;
	connector x;
	pthread_t th;
	ps_wire_header h;
	ps_msg *msg = NULL;
	ps_transport *w;
	int port, lfd = silent_listener(ep, sizeof(ep), &port), cfd;

	(void)state;
	cfd = begin_connecting(&f, &x, &th, ep, lfd, "2500");
	ps_node *n = &f.j->node;

	for (uint64_t i = 0; i < 6; i++) {
		void *body = calloc(1, 1000);
		assert_non_null(body);
		send_msg_at(f.peer, f.peer_to_node, PS_MSG_PULL, JOB_ID, 2, i,
			    body, 1000);
	}
	wait_connect_kept(n, 3);
	/* two heartbeats later it has looked again, and kept no more */
	for (int beats = 0; beats < 2;) {
		assert_int_equal(ps_transport_recv(f.sched, PATIENCE_MS, &msg),
				 PS_OK);
		assert_int_equal(ps_wire_header_decode(msg->hdr, msg->hdr_len,
						       &h, why, sizeof(why)),
				 PS_OK);
		beats += h.type == PS_MSG_HEARTBEAT;
		ps_msg_free(&msg);
	}
	assert_int_equal(atomic_load(&n->connect_kept), 3);

	w = worker_comes_up(lfd, cfd, port, th, &x);
	for (uint64_t i = 0; i < 6; i++) {
		assert_int_equal(ps_node_recv(n, PATIENCE_MS, &msg, &h), PS_OK);
		assert_int_equal(h.sender, 2);
		assert_int_equal(h.type, PS_MSG_PULL);
		assert_int_equal(h.iteration, i);
		assert_int_equal(msg->payload_len, 1000);
		ps_msg_free(&msg);
	}
	assert_int_equal(ps_node_recv(n, 300, &msg, &h), PS_ETIMEDOUT);
	assert_int_equal(atomic_load(&n->connect_kept), 3);
	assert_int_equal(n->kept_count, 0);
	assert_true(n->kept_bytes == 0);
	ps_transport_destroy(&w, 0);
	leave_job(&f);
}

/* A worker whose endpoint never completes the handshake: connecting
 * fails once cluster.connect_timeout_ms has passed (300 ms here, set
 * after the join), with the transport's error. */
static void test_connect_deadline(void **state)
{
	char ep[PS_ENDPOINT_MAX];
	fixture f;
	int port, lfd = silent_listener(ep, sizeof(ep), &port);

	(void)state;
	worker_ep = ep;
	join_job(&f, 0, "cluster.heartbeat_interval_ms", "100", NULL);
	worker_ep = NULL;
	f.j->cfg.cluster.connect_timeout_ms = 300;
	assert_int_equal(ps_node_connect_role(&f.j->node, PS_ROLE_WORKER),
			 PS_ETIMEDOUT);
	assert_int_equal(f.j->node.connected[2], 0);
	close(lfd);
	leave_job(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_join),
		cmocka_unit_test(test_messages_before_welcome_are_kept),
		cmocka_unit_test(test_lost_peer_is_reported),
		cmocka_unit_test(test_probe_before_welcome),
		cmocka_unit_test(test_stranger_before_welcome),
		cmocka_unit_test(test_probe_without_answer),
		cmocka_unit_test(test_shutdown_while_connecting),
		cmocka_unit_test(test_abort_while_connecting),
		cmocka_unit_test(test_messages_while_connecting_are_kept),
		cmocka_unit_test(test_kept_while_connecting_bounded),
		cmocka_unit_test(test_connect_deadline),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
