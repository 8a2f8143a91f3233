/*
 * tests/rdma/removal.c - `rdma_removal ADDR DEVICE NETDEV`: the rdma
 * transport when its device goes away. Guest only (the
 * Soft-RoCE VM, ORDO_RDMA_VM=1): it deletes DEVICE and adds it back.
 *
 * A child process holds two transports on ADDR (a listener and a sender
 * connected to it), one large received message lent by the transport,
 * and tells the parent it is ready. The parent runs `rdma link delete
 * DEVICE`. The child must then see recv() answer PS_EIO (not block), a
 * send fail, and both transports stop and free; the held message stays
 * readable. The parent reports when the delete returned and when the
 * child exited (in the VM: the delete waits until the child has freed its
 * transports, not until it exits), then adds the device back
 * (`rdma link add DEVICE type rxe netdev NETDEV`) and waits for its GID
 * index 1, so that later guest tests find it as before.
 *
 * Exit 0: as expected; 1: a failure (said on stderr); 77: not in the VM.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/clock.h"
#include "transport/transport.h"

#define PATIENCE_MS 60000

#define now_ms ps_now_ms

/* Polling for a condition (the device coming back), never to order
 * events. */
static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "removal: FAIL: " __VA_ARGS__);        \
			fprintf(stderr, "\n");                                 \
			_exit(1);                                              \
		}                                                              \
	} while (0)

static void no_free(void *data, void *hint)
{
	(void)data;
	(void)hint;
}

/* The child: transports on addr; writes 'R' to fd once ready. */
static int child(const char *addr, int fd)
{
	ps_transport_opts o = {.id = 0x71, .send_timeout_ms = 2000,
	                       .connect_timeout_ms = PATIENCE_MS,
	                       .io_threads = 1, .rdma_gid_index = -1};
	ps_transport *r = NULL, *s = NULL;
	char ep[256];
	ps_peer p;
	ps_msg *m = NULL, *held = NULL;
	size_t len = (size_t)1 << 20;
	static unsigned char big[1 << 20];
	int rc;

	for (size_t i = 0; i < len; i++)
		big[i] = (unsigned char)(i * 7);
	CHECK(ps_transport_create("rdma", &o, &r) == PS_OK, "create");
	CHECK(ps_transport_listen(r, addr, 0, NULL, ep, sizeof(ep)) == PS_OK,
	      "listen on %s", addr);
	o.id = 0x72;
	CHECK(ps_transport_create("rdma", &o, &s) == PS_OK, "create");
	CHECK(ps_transport_connect(s, ep, &p) == PS_OK, "connect");
	CHECK(ps_transport_send(s, p, "big", 3, big, len, no_free, NULL) ==
	          PS_OK,
	      "send");
	CHECK(ps_transport_recv(r, PATIENCE_MS, &held) == PS_OK, "recv");
	CHECK(held->payload_len == len &&
	          memcmp(held->payload, big, len) == 0,
	      "the large message differs");

	CHECK(write(fd, "R", 1) == 1, "pipe");
	int64_t t0 = now_ms();
	rc = ps_transport_recv(r, PATIENCE_MS, &m);
	fprintf(stderr, "removal: recv answered \"%s\" after %lld ms\n",
	        ps_strerror(rc), (long long)(now_ms() - t0));
	CHECK(rc == PS_EIO, "recv on a removed device: got \"%s\", want "
	                    "\"%s\"",
	      ps_strerror(rc), ps_strerror(PS_EIO));
	/* r saw the removal; s (the sending transport, its own progress
	 * thread and events) learns of it on its own: its sends must start
	 * failing. Polling for that condition, bounded by PATIENCE_MS. */
	int64_t until = now_ms() + PATIENCE_MS;
	do {
		rc = ps_transport_send(s, p, "x", 1, NULL, 0, NULL, NULL);
		if (rc == PS_OK)
			sleep_ms(10);
	} while (rc == PS_OK && now_ms() < until);
	fprintf(stderr, "removal: send answered \"%s\"\n", ps_strerror(rc));
	CHECK(rc == PS_EIO || rc == PS_ECLOSED, "send on a removed device");
	t0 = now_ms();
	fprintf(stderr, "removal: freeing the transports at t=%lld ms\n",
	        (long long)t0);
	ps_transport_destroy(&s, 0);
	ps_transport_destroy(&r, 0);
	fprintf(stderr, "removal: both transports freed in %lld ms\n",
	        (long long)(now_ms() - t0));
	CHECK(memcmp(held->payload, big, len) == 0, "the held message changed");
	ps_msg_free(&held);
	return 0;
}

static int gid1_ready(const char *dev)
{
	char path[256], line[128] = "";
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/gids/1",
	         dev);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	/* ::ffff:192.0.2.1 begins with zeros too: all zeros is "none" */
	return line[0] &&
	       strncmp(line, "0000:0000:0000:0000:0000:0000:0000:0000", 39) != 0;
}

int main(int argc, char **argv)
{
	char path[256], cmd[512];
	int fds[2], status;

	if (argc != 4) {
		fprintf(stderr, "usage: %s ADDR DEVICE NETDEV\n", argv[0]);
		return 2;
	}
	const char *addr = argv[1], *dev = argv[2], *netdev = argv[3];
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s", dev);
	if (!getenv("ORDO_RDMA_VM") || strcmp(getenv("ORDO_RDMA_VM"), "1") ||
	    access(path, F_OK) != 0) {
		printf("SKIP: needs the Soft-RoCE VM (ORDO_RDMA_VM=1, %s)\n",
		       dev);
		return 77;
	}
	alarm(280);
	CHECK(pipe(fds) == 0, "pipe");
	pid_t kid = fork();
	CHECK(kid >= 0, "fork");
	if (kid == 0) {
		close(fds[0]);
		_exit(child(addr, fds[1]));
	}
	close(fds[1]);
	char c;
	CHECK(read(fds[0], &c, 1) == 1, "the child died before it was ready");

	int64_t t0 = now_ms();
	fprintf(stderr, "removal: `rdma link delete %s` at t=%lld ms\n", dev,
	        (long long)t0);
	pid_t del = fork();
	CHECK(del >= 0, "fork");
	if (del == 0) {
		execlp("rdma", "rdma", "link", "delete", dev, (char *)NULL);
		_exit(127);
	}
	/* the delete returns once the child has let go of the device */
	CHECK(waitpid(kid, &status, 0) == kid, "waitpid");
	int64_t t_kid = now_ms();
	CHECK(waitpid(del, NULL, 0) == del, "waitpid");
	fprintf(stderr,
	        "removal: the transport process exited at t=%lld ms, `rdma "
	        "link delete %s` returned at t=%lld ms\n",
	        (long long)t_kid, dev, (long long)now_ms());
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the transport process failed (status %d)", status);

	snprintf(cmd, sizeof(cmd), "rdma link add %s type rxe netdev %s", dev,
	         netdev);
	CHECK(system(cmd) == 0, "%s", cmd);
	int64_t end = now_ms() + 30000;
	while (!gid1_ready(dev) && now_ms() < end)
		sleep_ms(100);
	CHECK(gid1_ready(dev), "%s came back without GID index 1", dev);
	fprintf(stderr, "removal: %s is back\n", dev);
	return 0;
}
