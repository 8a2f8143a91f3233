/*
 * tests/rdma/half_open.c - connections an rdma node accepts and the
 * connector never completes (half_open.sh runs it in the VM):
 *
 *   half_open listen ADDR TIMEOUT_MS  an rdma transport listening on ADDR
 *                                     with that handshake timeout: prints
 *                                     "port N", then waits for one
 *                                     message and prints "got it"
 *   half_open connect ADDR PORT N     N connection requests through
 *                                     rdma_cm with a valid ordo hello,
 *                                     never completed (this process
 *                                     takes no event after the connect:
 *                                     librdmacm sends the RTU only then);
 *                                     prints "sent N", holds them until
 *                                     its standard input closes
 *   half_open honest ADDR PORT        an rdma transport connects and sends
 *                                     one message
 *
 * Exit status 0 on success, 1 on a failure (said on stderr), 2 on usage.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "transport/rdma_wire.h"
#include "transport/transport.h"

static int die(const char *what)
{
	perror(what);
	return 1;
}

static int listen_mode(const char *addr, int timeout_ms)
{
	ps_transport_opts o = {.id = 0x4a1f,
			       .send_timeout_ms = 60000,
			       .connect_timeout_ms = 60000,
			       .io_threads = 1,
			       .handshake_timeout_ms = timeout_ms,
			       .rdma_gid_index = -1};
	ps_transport *t = NULL;
	char ep[256];
	ps_msg *m = NULL;

	if (ps_transport_create("rdma", &o, &t) != PS_OK ||
	    ps_transport_listen(t, addr, 0, NULL, ep, sizeof(ep)) != PS_OK) {
		fprintf(stderr, "half_open: cannot listen on %s\n", addr);
		return 1;
	}
	printf("port %s\n", strrchr(ep, ':') + 1);
	fflush(stdout);
	if (ps_transport_recv(t, 600000, &m) != PS_OK) {
		fprintf(stderr, "half_open: no message came\n");
		return 1;
	}
	printf("got it\n");
	fflush(stdout);
	ps_msg_free(&m);
	ps_transport_destroy(&t, 0);
	return 0;
}

/* Waits for one event of type `want` on ch. */
static int expect_event(struct rdma_event_channel *ch,
			enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev) != 0)
		return die("rdma_get_cm_event");
	enum rdma_cm_event_type got = ev->event;
	rdma_ack_cm_event(ev);
	if (got != want) {
		fprintf(stderr, "half_open: %s, not %s\n",
			rdma_event_str(got), rdma_event_str(want));
		return 1;
	}
	return 0;
}

static int connect_mode(const char *addr, const char *port, int n)
{
	struct rdma_addrinfo hints = {.ai_port_space = RDMA_PS_TCP}, *res;
	ps_rdma_hello h = {.magic = PS_RDMA_MAGIC,
			   .version = PS_RDMA_VERSION,
			   .id = 0x5a5a,
			   .depth = PS_RDMA_RECV_DEPTH,
			   .buf_size = PS_RDMA_BUF_SIZE};

	if (rdma_getaddrinfo(addr, port, &hints, &res) != 0)
		return die("rdma_getaddrinfo");
	for (int i = 0; i < n; i++) {
		/* a channel each: the events of one never wait on another's */
		struct rdma_event_channel *ch = rdma_create_event_channel();
		struct rdma_cm_id *id;
		struct ibv_qp_init_attr qa = {
		    .cap = {.max_send_wr = 4, .max_recv_wr = 4,
			    .max_send_sge = 1, .max_recv_sge = 1},
		    .qp_type = IBV_QPT_RC};
		struct rdma_conn_param cp = {.private_data = &h,
					     .private_data_len = sizeof(h),
					     .responder_resources = 1,
					     .initiator_depth = 1,
					     .retry_count = 7};
		if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) != 0)
			return die("rdma_create_id");
		if (rdma_resolve_addr(id, NULL, res->ai_dst_addr, 2000) != 0 ||
		    expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED) ||
		    rdma_resolve_route(id, 2000) != 0 ||
		    expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED))
			return die("resolving the address");
		if (rdma_create_qp(id, NULL, &qa) != 0)
			return die("rdma_create_qp");
		h.id++;
		if (rdma_connect(id, &cp) != 0)
			return die("rdma_connect");
		/* and no event more: the answer is never confirmed */
	}
	printf("sent %d\n", n);
	fflush(stdout);
	while (getchar() != EOF)
		;
	return 0;
}

static int honest_mode(const char *addr, const char *port)
{
	ps_transport_opts o = {.id = 0x4a20,
			       .send_timeout_ms = 60000,
			       .connect_timeout_ms = 60000,
			       .io_threads = 1,
			       .rdma_gid_index = -1};
	ps_transport *t = NULL;
	char ep[256];
	ps_peer p;

	snprintf(ep, sizeof(ep), "rdma://%s:%s", addr, port);
	if (ps_transport_create("rdma", &o, &t) != PS_OK ||
	    ps_transport_connect(t, ep, &p) != PS_OK ||
	    ps_transport_send(t, p, "hi", 2, NULL, 0, NULL, NULL) != PS_OK) {
		fprintf(stderr, "half_open: cannot send to %s\n", ep);
		return 1;
	}
	ps_transport_destroy(&t, 5000); /* the message goes first */
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "listen"))
		return listen_mode(argv[2], atoi(argv[3]));
	if (argc == 5 && !strcmp(argv[1], "connect"))
		return connect_mode(argv[2], argv[3], atoi(argv[4]));
	if (argc == 4 && !strcmp(argv[1], "honest"))
		return honest_mode(argv[2], argv[3]);
	fprintf(stderr, "usage: half_open listen ADDR TIMEOUT_MS | connect "
		"ADDR PORT N | honest ADDR PORT\n");
	return 2;
}
