/*
 * tests/rdma/verbs_pair.c - a verbs sanity check for scripts/rdma-vm: two
 * processes, an RC queue pair each, connected through rdma_cm on
 * 192.0.2.1 (rxe0), doing one SEND/RECV each way and one RDMA WRITE.
 *
 *   verbs_pair [ADDR [PORT]]        (default 192.0.2.1 7471)
 *
 * DESIGN. The parent forks the server before it touches verbs (a verbs
 * process must not fork). The server listens, then says so on a pipe; the
 * client connects only after reading that byte: no sleep, no retry loop.
 *
 *   client                               server
 *                                        listen; "L" on the pipe
 *   connect (ack timeout 14, retry 7,    accept (RECV posted first)
 *            rnr retry 7)
 *   SEND "hello"                  --->   RECV: checks the text
 *   RECV: target address, rkey    <---   SEND {addr, rkey, len} of a buffer
 *                                        registered for remote write
 *   RDMA WRITE LEN pattern bytes  --->   (no completion on this side)
 *   SEND "written"                --->   RECV: checks every byte written
 *   disconnect, wait DISCONNECTED        disconnect, wait DISCONNECTED
 *
 * Both sides call rdma_disconnect() and wait for RDMA_CM_EVENT_DISCONNECTED
 * (a side that destroys its id while the peer never answers the DREQ
 * blocks ~70 s). Completions come through completion channels
 * (rdma_get_*_comp block on events): no busy polling, which starves rxe's
 * softirq work on a small VM. alarm() ends a hang in either process with
 * a message; the parent reaps the server, so nothing is left running.
 * Exit 0 when both sides passed.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define LEN     (1u << 20) /* bytes of the RDMA WRITE */
#define HANG_S  60         /* alarm: a step this slow is a hang */
#define MSG_LEN 64

typedef struct target {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
} target;

static const char *who = "verbs_pair";
static pid_t server_pid; /* in the client: the server to stop on failure */

/* Ends this process after a failed check; the client takes the server
 * with it, so nothing is left running. */
static void fail_exit(void)
{
	if (server_pid > 0) {
		kill(server_pid, SIGKILL);
		waitpid(server_pid, NULL, 0);
	}
	exit(1);
}

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			int e_ = errno;                                        \
			fprintf(stderr, "%s: FAIL: ", who);                    \
			fprintf(stderr, __VA_ARGS__);                          \
			fprintf(stderr, " (errno %d: %s)\n", e_,               \
			        strerror(e_));                                 \
			fail_exit();                                           \
		}                                                              \
	} while (0)

static void on_alarm(int sig)
{
	(void)sig;
	static const char m[] = "verbs_pair: FAIL: a step hung for 60 s\n";
	ssize_t r = write(2, m, sizeof(m) - 1);
	(void)r;
	if (server_pid > 0)
		kill(server_pid, SIGKILL); /* the parent reaps nothing now:
		                            * init does, the VM powers off */
	_exit(1);
}

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 131 + (i >> 8) + 7);
}

static void wait_comp(struct rdma_cm_id *id, bool send, const char *what)
{
	struct ibv_wc wc;
	int n =
	    send ? rdma_get_send_comp(id, &wc) : rdma_get_recv_comp(id, &wc);
	CHECK(n == 1, "%s: no completion (%d)", what, n);
	CHECK(wc.status == IBV_WC_SUCCESS, "%s: completion status %s", what,
	      ibv_wc_status_str(wc.status));
}

/*
 * Disconnects and waits for RDMA_CM_EVENT_DISCONNECTED. A synchronous id
 * (no channel of ours) has a channel that librdmacm made for it; some
 * librdmacm versions wait for the event inside rdma_disconnect() and leave
 * it in id->event, others leave it on the channel.
 */
static void disconnect(struct rdma_cm_id *id)
{
	CHECK(rdma_disconnect(id) == 0, "rdma_disconnect");
	if (id->event && id->event->event == RDMA_CM_EVENT_DISCONNECTED)
		return;
	struct pollfd p = {.fd = id->channel->fd, .events = POLLIN};
	CHECK(poll(&p, 1, HANG_S * 1000) == 1,
	      "no RDMA_CM_EVENT_DISCONNECTED within %d s", HANG_S);
	struct rdma_cm_event *ev;
	CHECK(rdma_get_cm_event(id->channel, &ev) == 0, "rdma_get_cm_event");
	enum rdma_cm_event_type type = ev->event;
	rdma_ack_cm_event(ev);
	CHECK(type == RDMA_CM_EVENT_DISCONNECTED,
	      "expected RDMA_CM_EVENT_DISCONNECTED, got %s",
	      rdma_event_str(type));
}

static struct rdma_addrinfo *resolve(const char *addr, const char *port,
                                     bool passive)
{
	struct rdma_addrinfo hints = {.ai_port_space = RDMA_PS_TCP,
	                              .ai_flags = passive ? RAI_PASSIVE : 0};
	struct rdma_addrinfo *res = NULL;
	CHECK(rdma_getaddrinfo(addr, port, &hints, &res) == 0 && res,
	      "rdma_getaddrinfo %s:%s", addr, port);
	return res;
}

static struct ibv_qp_init_attr qp_attr(void)
{
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_RC,
	                              .cap = {.max_send_wr = 4,
	                                      .max_recv_wr = 4,
	                                      .max_send_sge = 1,
	                                      .max_recv_sge = 1}};
	return qa;
}

static int server(const char *addr, const char *port, int ready_fd)
{
	who = "verbs_pair server";
	struct rdma_addrinfo *res = resolve(addr, port, true);
	struct ibv_qp_init_attr qa = qp_attr();
	struct rdma_cm_id *lid, *id;
	CHECK(rdma_create_ep(&lid, res, NULL, &qa) == 0, "rdma_create_ep");
	CHECK(rdma_listen(lid, 1) == 0, "rdma_listen %s:%s", addr, port);
	CHECK(write(ready_fd, "L", 1) == 1, "write to the ready pipe");
	close(ready_fd);

	CHECK(rdma_get_request(lid, &id) == 0, "rdma_get_request");
	CHECK(id->qp, "the request came without a QP");
	char rx[MSG_LEN] = "", tx[MSG_LEN];
	uint8_t *buf = aligned_alloc(4096, LEN);
	CHECK(buf, "aligned_alloc");
	memset(buf, 0, LEN);
	struct ibv_mr *rx_mr = rdma_reg_msgs(id, rx, sizeof(rx));
	struct ibv_mr *tx_mr = rdma_reg_msgs(id, tx, sizeof(tx));
	struct ibv_mr *buf_mr = rdma_reg_write(id, buf, LEN);
	CHECK(rx_mr && tx_mr && buf_mr, "register memory");

	CHECK(rdma_post_recv(id, NULL, rx, sizeof(rx), rx_mr) == 0,
	      "post RECV (hello)");
	struct rdma_conn_param cp = {.responder_resources = 1,
	                             .initiator_depth = 1,
	                             .retry_count = 7,
	                             .rnr_retry_count = 7};
	CHECK(rdma_accept(id, &cp) == 0, "rdma_accept");
	wait_comp(id, false, "RECV hello");
	CHECK(strcmp(rx, "hello over rdma_cm") == 0, "RECV got \"%.*s\"",
	      MSG_LEN, rx);
	printf("server: SEND/RECV ok: \"%s\"\n", rx);

	memset(rx, 0, sizeof(rx));
	CHECK(rdma_post_recv(id, NULL, rx, sizeof(rx), rx_mr) == 0,
	      "post RECV (written)");
	target t = {(uintptr_t)buf, buf_mr->rkey, LEN};
	memcpy(tx, &t, sizeof(t));
	CHECK(rdma_post_send(id, NULL, tx, sizeof(t), tx_mr,
	                     IBV_SEND_SIGNALED) == 0,
	      "post SEND (target)");
	wait_comp(id, true, "SEND target");
	wait_comp(id, false, "RECV written");
	CHECK(strcmp(rx, "written") == 0, "RECV got \"%.*s\"", MSG_LEN, rx);
	for (size_t i = 0; i < LEN; i++)
		CHECK(buf[i] == pattern(i),
		      "RDMA WRITE: byte %zu is %u, expected %u", i, buf[i],
		      pattern(i));
	printf("server: RDMA WRITE of %u bytes verified\n", LEN);

	disconnect(id);
	rdma_dereg_mr(buf_mr);
	rdma_dereg_mr(tx_mr);
	rdma_dereg_mr(rx_mr);
	rdma_destroy_ep(id);
	rdma_destroy_ep(lid);
	rdma_freeaddrinfo(res);
	free(buf);
	printf("server: disconnected\n");
	return 0;
}

static void client(const char *addr, const char *port)
{
	who = "verbs_pair client";
	struct rdma_addrinfo *res = resolve(addr, port, false);
	struct ibv_qp_init_attr qa = qp_attr();
	struct rdma_cm_id *id;
	CHECK(rdma_create_ep(&id, res, NULL, &qa) == 0, "rdma_create_ep");
	uint8_t ack_timeout = 14; /* 4.096 us * 2^14 = 67 ms: TCG tails */
	CHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
	                      &ack_timeout, sizeof(ack_timeout)) == 0,
	      "rdma_set_option ACK_TIMEOUT");

	char rx[MSG_LEN] = "", tx[MSG_LEN] = "hello over rdma_cm";
	uint8_t *buf = aligned_alloc(4096, LEN);
	CHECK(buf, "aligned_alloc");
	for (size_t i = 0; i < LEN; i++)
		buf[i] = pattern(i);
	struct ibv_mr *rx_mr = rdma_reg_msgs(id, rx, sizeof(rx));
	struct ibv_mr *tx_mr = rdma_reg_msgs(id, tx, sizeof(tx));
	struct ibv_mr *buf_mr = rdma_reg_msgs(id, buf, LEN);
	CHECK(rx_mr && tx_mr && buf_mr, "register memory");
	CHECK(rdma_post_recv(id, NULL, rx, sizeof(rx), rx_mr) == 0,
	      "post RECV (target)");

	struct rdma_conn_param cp = {.responder_resources = 1,
	                             .initiator_depth = 1,
	                             .retry_count = 7,
	                             .rnr_retry_count = 7};
	CHECK(rdma_connect(id, &cp) == 0, "rdma_connect to %s:%s", addr, port);
	printf("client: connected to %s:%s (QP %u)\n", addr, port,
	       id->qp->qp_num);

	CHECK(rdma_post_send(id, NULL, tx, strlen(tx) + 1, tx_mr,
	                     IBV_SEND_SIGNALED) == 0,
	      "post SEND (hello)");
	wait_comp(id, true, "SEND hello");
	wait_comp(id, false, "RECV target");
	target t;
	memcpy(&t, rx, sizeof(t));
	CHECK(t.len == LEN && t.addr && t.rkey,
	      "bad target {%" PRIx64 ", %u, %u}", t.addr, t.rkey, t.len);

	CHECK(rdma_post_write(id, NULL, buf, LEN, buf_mr, IBV_SEND_SIGNALED,
	                      t.addr, t.rkey) == 0,
	      "post RDMA WRITE");
	wait_comp(id, true, "RDMA WRITE");
	snprintf(tx, sizeof(tx), "written");
	CHECK(rdma_post_send(id, NULL, tx, strlen(tx) + 1, tx_mr,
	                     IBV_SEND_SIGNALED) == 0,
	      "post SEND (written)");
	wait_comp(id, true, "SEND written");
	printf("client: RDMA WRITE of %u bytes and SEND done\n", LEN);

	disconnect(id);
	rdma_dereg_mr(buf_mr);
	rdma_dereg_mr(tx_mr);
	rdma_dereg_mr(rx_mr);
	rdma_destroy_ep(id);
	rdma_freeaddrinfo(res);
	free(buf);
	printf("client: disconnected\n");
}

int main(int argc, char **argv)
{
	const char *addr = argc > 1 ? argv[1] : "192.0.2.1";
	const char *port = argc > 2 ? argv[2] : "7471";
	const char *vm = getenv("ORDO_RDMA_VM");
	if (!vm || strcmp(vm, "1") != 0) {
		printf("SKIP: runs only inside scripts/rdma-vm, or where "
		       "ORDO_RDMA_VM=1 says %s is an RDMA address here\n",
		       addr);
		return 77;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGALRM, on_alarm);

	int ready[2];
	CHECK(pipe(ready) == 0, "pipe");
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		close(ready[0]);
		alarm(HANG_S);
		_exit(server(addr, port, ready[1]));
	}
	server_pid = pid;
	close(ready[1]);
	alarm(HANG_S);
	char c;
	ssize_t n = read(ready[0], &c, 1);
	close(ready[0]);
	if (n != 1) { /* the server died before listening */
		int st;
		waitpid(pid, &st, 0);
		fprintf(stderr,
		        "%s: FAIL: the server exited before it "
		        "listened\n",
		        who);
		return 1;
	}
	client(addr, port);

	int st;
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	server_pid = 0;
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "the server failed (status 0x%x)", st);
	printf("verbs_pair: PASS (RC SEND/RECV both ways, RDMA WRITE %u "
	       "bytes, both sides disconnected)\n",
	       LEN);
	return 0;
}
