/*
 * transport/transport.h - one interface, several backends (tcp, later rdma).
 *
 * A transport moves messages of two parts between processes: a small
 * header (bytes the transport copies; the msgpack framing lives above, in
 * proto/wire.h) and an optional payload (bytes the transport sends without
 * copying and hands back through a free callback). Transports move bytes:
 * they never look inside a header.
 *
 * Addressing. Every transport instance has a 64-bit id chosen by its owner
 * (ps_transport_opts.id). A node listens on one endpoint and connects once
 * to each peer it sends to; ps_transport_connect() returns a small peer
 * handle for sending (ps_transport_connect_start() and _wait() do the same
 * in two halves, for a caller that must go on working while it connects).
 * Received messages carry the sender's id (`src`), which the layer above
 * checks against the node table.
 *
 * Backends register an ops table; a missing op is "not supported"
 * (PS_ENOTSUP) through the wrappers below, never a NULL call.
 *
 * DESIGN (made for registered memory). What verbs needs and
 * ZeroMQ does not, ZeroMQ implements trivially:
 *  - Capabilities (ps_transport_caps): the largest message, whether
 *    payloads leave from and arrive in the caller's / the transport's
 *    memory without a copy, whether memory must be registered for that.
 *  - Registration (ps_transport_reg/dereg) where buffers are born: a
 *    payload inside a registered region is sent without a copy where the
 *    backend needs registration; any other payload is still sent (the
 *    backend copies it through memory of its own, or registers it in a
 *    cache): registering is about speed, never about correctness. A
 *    memory kind says where the bytes live (host or CUDA device memory);
 *    device memory is the exception to "about speed" (next item).
 *  - Device memory (GPUDirect RDMA; docs/cuda.md). A PS_MEM_CUDA region
 *    is registered with ps_transport_reg_ex, which either registers it
 *    at once or fails with PS_ENOTSUP and a whole sentence saying why,
 *    for the caller to log and to fall back on (another way to register
 *    it, or staging through pinned host memory): the request gives a
 *    dma-buf of the memory (cuda/gpudirect.h: ps_cuda_dmabuf_fd) or none,
 *    when the device pointer is registered as it is (what the
 *    nvidia-peermem kernel module serves). ps_transport_reg refuses
 *    PS_MEM_CUDA, since it cannot hand the reason back. A payload inside
 *    a PS_MEM_CUDA registration is never read by the CPU: the backend
 *    lets the NIC take it from where it is, whatever its size, or the
 *    send fails; a payload sent with ps_transport_send_mem(...,
 *    PS_MEM_CUDA, ...) that lies in no such registration fails with
 *    PS_EINVAL (logged) rather than being read. Only rdma can do this
 *    (caps.device_memory); tcp refuses device memory, since ZeroMQ reads
 *    every payload with the CPU. When the rdma backend can register:
 *    once it has its RDMA device - its first listen on an RDMA device's
 *    address (not 0.0.0.0, which names no device) or its first connect -
 *    and until it stops; before that a PS_MEM_CUDA registration fails
 *    ("rdma: no RDMA device bound yet") instead of being deferred as
 *    host memory's is, because a registration that might fail later
 *    would leave the caller without a fallback when it matters.
 *  - Received buffers: a received ps_msg may be held as long as the
 *    receiver likes - the client's slots keep one per partition, a node
 *    keeps up to 4096 messages that came before its WELCOME - and it stays
 *    valid after the transport is freed. A backend whose receives land in
 *    pre-posted buffers lends at most caps.recv_lend_max of them at a
 *    time and hands out copies beyond that, so holding messages can never
 *    starve its receives; its buffer pool lives until the last lent
 *    message is freed.
 *  - Teardown in two phases (nng's close/free): ps_transport_stop ends all
 *    I/O - pending sends are flushed for at most linger_ms, then dropped
 *    (every payload's free callback still runs exactly once), and every
 *    later send, recv, listen or connect returns PS_ECLOSED instead of
 *    blocking - and ps_transport_free releases what is left (registrations
 *    still live are released too, with a warning). ps_transport_destroy is
 *    both.
 *
 * DESIGN (threads). A transport belongs to one thread, its owner: every
 * function here except ps_transport_wake() must be called from that thread.
 * ps_transport_wake() may be called from any thread and from a signal
 * handler; it makes a blocked (or the next) ps_transport_recv() return
 * PS_EAGAIN. Payload free callbacks may run on a backend thread (ZeroMQ's
 * I/O thread): they must be thread-safe and must not call into the
 * transport.
 */
#ifndef ORDO_TRANSPORT_H
#define ORDO_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "ordo/error.h"

typedef struct ps_transport ps_transport;
typedef uint32_t ps_peer; /* handle returned by connect, per transport */

/* Called once when the transport is done with a payload it was given
 * (sent, or dropped at stop: a send that cannot complete makes later sends
 * to that peer fail, which is how the sender learns of it). */
typedef void ps_free_fn(void *data, void *hint);

/* Where memory lives. */
typedef enum ps_mem_kind {
	PS_MEM_HOST = 0,
	PS_MEM_CUDA = 1, /* CUDA device memory (GPUDirect RDMA; DESIGN) */
} ps_mem_kind;

/* What ps_transport_reg_ex registers. A zeroed request has dmabuf_fd 0,
 * a real descriptor: callers set -1 when there is no dma-buf. */
typedef struct ps_reg_req {
	void *addr;      /* for PS_MEM_CUDA the device pointer, which is also
	                  * the address peers read the payloads at */
	size_t len;
	ps_mem_kind kind;
	/* PS_MEM_CUDA only: a dma-buf file descriptor exporting the memory
	 * (ps_cuda_dmabuf_fd), with addr at dmabuf_offset bytes into it; or
	 * -1: addr is registered as it is (ibv_reg_mr on the device pointer,
	 * which needs the nvidia-peermem module). The transport neither
	 * keeps nor closes the descriptor: the registration holds the
	 * dma-buf itself, so the caller may close it once the call returned. */
	int dmabuf_fd;
	uint64_t dmabuf_offset;
} ps_reg_req;

/* A registration (ps_transport_reg). Callers treat it as opaque; the
 * wrappers keep each transport's list, the backend its own data in priv. */
typedef struct ps_mr {
	void *addr;
	size_t len;
	ps_mem_kind kind;
	void *priv;          /* the backend's (an ibv_mr...) */
	struct ps_mr *next;  /* the transport's live registrations */
} ps_mr;

typedef struct ps_transport_caps {
	size_t max_message;      /* the largest payload of one send, bytes */
	int zero_copy_send;      /* payloads leave from the caller's memory */
	int zero_copy_recv;      /* received payloads are the transport's
				  * buffers, lent, not copied */
	int needs_registration;  /* zero-copy only from registered memory */
	uint32_t recv_lend_max;  /* received buffers lent at a time before
				  * copies are handed out (UINT32_MAX: no
				  * limit) */
	int device_memory;       /* PS_MEM_CUDA registrations can be tried
				  * (ps_transport_reg_ex), and payloads in
				  * them are sent without the CPU */
} ps_transport_caps;

/* tcp: the most connections to one peer (transport.connections_per_peer) */
#define PS_TCP_LANES_MAX 16

typedef struct ps_transport_opts {
	uint64_t id;           /* this node's id, carried as msg->src */
	int send_timeout_ms;   /* a send blocked this long fails (ETIMEDOUT) */
	int connect_timeout_ms;/* ps_transport_connect() gives up after this */
	int io_threads;        /* backend threads (ZeroMQ I/O threads) */
	/* tcp: connections to each peer connected with
	 * ps_transport_connect_start (1..PS_TCP_LANES_MAX; <= 0: 1; the
	 * blocking connects make one), each
	 * on an I/O thread of its own (io_threads is raised to it): a send's
	 * flow picks the connection, so messages of one flow stay in order
	 * while different flows' frames are framed and ciphered (curve) by
	 * different threads at once */
	int connections_per_peer;
	int handshake_timeout_ms; /* an accepted connection not through its
				   * handshake by then is closed (tcp:
				   * ZeroMQ's greeting and security; rdma:
				   * the connector's confirmation); <= 0:
				   * 30 s */
	/* the largest header or payload accepted from a peer; a peer that
	 * sends a larger one is disconnected before anything is allocated
	 * for it (0: the backend's own limit) */
	uint64_t max_message;
	/* who may connect: security.mode = secret, the job's secret (tcp:
	 * transport/zap.h; rdma: its hello); curve (tcp), the job's key
	 * pair (transport/keys.h); "" = anyone (at most one of the two) */
	char job_secret[65];
	/* with job_secret: this node's own token (64 hex digits, or ""),
	 * presented with the secret; peers learn only its key id
	 * (ps_token_kid), which each message it sends carries (msg->kid) */
	char job_token[65];
	/* with job_secret (tcp): every frame sealed under keys derived from
	 * it, the handshake a proof of it (security.mode = sealed,
	 * transport/seal.h) */
	int sealed;
	char curve_public[41];
	char curve_secret[41];
	/* rdma (transport/rdma_device.h): "" and -1 are automatic. An
	 * index >= 0 is the source GID of every queue pair (transport/
	 * rdma.c sets them up itself then); a zeroed struct asks for index
	 * 0: callers set -1 */
	char rdma_device[64];
	int rdma_gid_index;
	int rdma_busy_poll;    /* poll completions instead of waiting */
	/* rdma: the bytes (headers and payloads) of one connection's
	 * messages the node holds before recv has taken them (being READ,
	 * waiting for an earlier one, queued for recv); past it the
	 * connection's further messages wait, unread and unallocated, and
	 * its sender is held back by the receive credits. One message is
	 * always taken whatever its size (within max_message). 0 = twice
	 * the largest message (max_message, else the backend's limit) */
	uint64_t rdma_peer_recv_bytes;
	/* rdma: the same for all connections together: past it every
	 * connection's further messages wait (one message is always taken
	 * when the node holds none). 0 = 8 times the per-connection budget */
	uint64_t rdma_node_recv_bytes;
} ps_transport_opts;

/* A received message. Owned by the caller of recv; free with
 * ps_msg_free(). hdr/payload stay valid until then. */
typedef struct ps_msg {
	uint64_t src;
	/* the key id the message's connection was admitted with (the
	 * sender's token, transport/keys.h; security.mode = secret over
	 * tcp): who sent it, whatever src claims; 0 = not known */
	uint64_t kid;
	const void *hdr;
	size_t hdr_len;
	void *payload; /* NULL when payload_len == 0; else 8-byte aligned */
	size_t payload_len;
	/* backend-private release of the buffers */
	void (*release)(struct ps_msg *msg);
	void *priv;
} ps_msg;

void ps_msg_free(ps_msg **msg_p);

typedef struct ps_transport_ops {
	const char *name; /* "tcp" */
	int (*create)(const ps_transport_opts *opts, ps_transport **t_p);
	/* Binds host:port (port 0: ephemeral) and writes the endpoint that
	 * peers connect to (e.g. "tcp://127.0.0.1:40123") into endpoint.
	 * advertise_host replaces the bound host in that endpoint when not
	 * NULL/empty (binding 0.0.0.0 across machines). */
	int (*listen)(ps_transport *t, const char *host, int port,
		      const char *advertise_host, char *endpoint, size_t cap);
	/* Connects to a listening endpoint; waits until connected or
	 * timeout_ms (< 0: connect_timeout_ms) (PS_ECONNREFUSED /
	 * PS_ETIMEDOUT). Connecting to the same endpoint twice returns the
	 * same peer. */
	int (*connect)(ps_transport *t, const char *endpoint, int timeout_ms,
		       ps_peer *peer_p);
	/* connect in two halves, for a caller that must do other work while
	 * it connects (ps_transport_connect_start, _wait). NULL: the wrapper
	 * connects in the start, waiting as connect does. */
	int (*connect_start)(ps_transport *t, const char *endpoint,
			     int timeout_ms, ps_peer *peer_p);
	int (*connect_wait)(ps_transport *t, ps_peer peer, int wait_ms);
	/* Sends hdr (copied) and payload (not copied). On success the
	 * transport owns payload and calls free_fn(payload, hint) exactly once
	 * when done with it (free_fn may be NULL: caller keeps ownership and
	 * keeps it valid until ps_transport_destroy). On failure nothing was
	 * sent and the caller still owns payload. payload_len 0 sends no
	 * payload: free_fn(payload, hint) is then called at once on success
	 * if payload is non-NULL, and never if payload is NULL. */
	int (*send)(ps_transport *t, ps_peer peer, const void *hdr,
		    size_t hdr_len, void *payload, size_t payload_len,
		    ps_free_fn *free_fn, void *hint);
	/* send, with the payload's memory kind as the caller knows it
	 * (ps_transport_send_mem). NULL: the backend sends host memory only
	 * (the wrapper refuses PS_MEM_CUDA). */
	int (*send_mem)(ps_transport *t, ps_peer peer, const void *hdr,
			size_t hdr_len, void *payload, size_t payload_len,
			ps_mem_kind kind, ps_free_fn *free_fn, void *hint);
	/* send within a flow (ps_transport_send_flow). NULL: every flow is
	 * one, in the order sent (send). */
	int (*send_flow)(ps_transport *t, ps_peer peer, uint32_t flow,
			 const void *hdr, size_t hdr_len, void *payload,
			 size_t payload_len, ps_free_fn *free_fn, void *hint);
	/* Waits up to timeout_ms (-1: forever, 0: poll) for one message.
	 * PS_OK with *msg_p set, PS_ETIMEDOUT, or PS_EAGAIN after a wake. */
	int (*recv)(ps_transport *t, int timeout_ms, ps_msg **msg_p);
	/* Thread- and async-signal-safe wake-up of recv. */
	void (*wake)(ps_transport *t);
	/* Drops the connection to peer (later sends fail with PS_ECLOSED). */
	int (*disconnect)(ps_transport *t, ps_peer peer);
	/* What the backend can do (DESIGN above). */
	void (*caps)(const ps_transport *t, ps_transport_caps *caps);
	/* Registers mr->addr, mr->len of memory kind mr->kind (req: the
	 * whole request, its dma-buf), keeping what it needs in mr->priv:
	 * PS_OK; PS_ENOTSUP for a kind the backend cannot use, or device
	 * memory it could not register, with the reason in why (a whole
	 * sentence beginning with the backend's name; why is never NULL,
	 * whylen > 0); PS_ENOMEM. NULL: nothing to register (host memory). */
	int (*reg)(ps_transport *t, ps_mr *mr, const ps_reg_req *req,
		   char *why, size_t whylen);
	void (*dereg)(ps_transport *t, ps_mr *mr);
	/* Ends all I/O (DESIGN above); the transport stays allocated. The
	 * wrappers answer PS_ECLOSED for every operation after it. */
	void (*stop)(ps_transport *t, int linger_ms);
	/* Frees a stopped transport (its registrations are gone already). */
	void (*free)(ps_transport *t);
} ps_transport_ops;

/* Every backend's struct begins with this (zeroed but for ops). */
struct ps_transport {
	const ps_transport_ops *ops;
	int stopped;
	uint64_t kid; /* this node's key id (opts.job_token), or 0 */
	ps_mr *mrs; /* live registrations */
};

/* The key id this transport's messages carry to their receivers
 * (msg->kid there): ps_token_kid of opts.job_token over tcp, else 0. */
uint64_t ps_transport_kid(const ps_transport *t);

/* The backend registered under name ("tcp"), or NULL. */
const ps_transport_ops *ps_transport_find(const char *name);
/* Comma-separated names of the backends built in ("tcp,rdma"). */
const char *ps_transport_names(void);

/* PS_ENOTSUP when no backend has that name, or when the backend's hardware
 * is absent; PS_EINVAL for NULL arguments. */
int ps_transport_create(const char *name, const ps_transport_opts *opts,
			ps_transport **t_p);
int ps_transport_listen(ps_transport *t, const char *host, int port,
			const char *advertise_host, char *endpoint,
			size_t cap);
/* As ps_transport_connect, waiting at most timeout_ms instead of
 * connect_timeout_ms: for a peer that may not be there and must not hold
 * the caller long. */
int ps_transport_connect_within(ps_transport *t, const char *endpoint,
				int timeout_ms, ps_peer *peer_p);
int ps_transport_connect(ps_transport *t, const char *endpoint,
			 ps_peer *peer_p);
/* ps_transport_connect without the wait: starts connecting to endpoint
 * (the attempt gives up timeout_ms from now; < 0: connect_timeout_ms;
 * tcp: with opts.connections_per_peer connections, where the blocking
 * connects make one) and returns at once with *peer_p, its peer, which is connected once
 * ps_transport_connect_wait says so. An endpoint connected or being
 * connected already gives the same peer. A backend that cannot connect
 * in the background connects here, waiting as ps_transport_connect does
 * (its failures are returned here), so its peers are connected when
 * started. Errors for a bad endpoint are immediate. */
int ps_transport_connect_start(ps_transport *t, const char *endpoint,
			       int timeout_ms, ps_peer *peer_p);
/* Waits at most wait_ms (0: a look; < 0: until the attempt ends) for a
 * started peer's connection: PS_OK once it is connected (at once for a
 * connected peer); PS_EAGAIN while it is still connecting, nothing
 * logged; or the attempt's failure, logged as ps_transport_connect's
 * (PS_ECONNREFUSED, PS_ETIMEDOUT at its deadline, PS_EPROTO...), after
 * which the handle is no longer valid. Until it is connected, a send to
 * the peer waits as a send to a disconnected one does. */
int ps_transport_connect_wait(ps_transport *t, ps_peer peer, int wait_ms);
int ps_transport_send(ps_transport *t, ps_peer peer, const void *hdr,
		      size_t hdr_len, void *payload, size_t payload_len,
		      ps_free_fn *free_fn, void *hint);
/* ps_transport_send within a flow: messages sent to one peer in one flow
 * arrive in the order sent; a message of another flow may overtake them
 * (tcp with connections_per_peer > 1: flow % connections picks the
 * connection). ps_transport_send is flow 0. */
int ps_transport_send_flow(ps_transport *t, ps_peer peer, uint32_t flow,
			   const void *hdr, size_t hdr_len, void *payload,
			   size_t payload_len, ps_free_fn *free_fn,
			   void *hint);
/* ps_transport_send for a payload the caller knows to be of memory kind
 * `kind` (PS_MEM_HOST: the same as ps_transport_send). PS_MEM_CUDA: the
 * payload must lie inside one PS_MEM_CUDA registration of t, else
 * PS_EINVAL (logged; the CPU never touches it); PS_ENOTSUP from a backend
 * that cannot send device memory (tcp). A payload inside a PS_MEM_CUDA
 * registration is sent without the CPU whichever call sends it. */
int ps_transport_send_mem(ps_transport *t, ps_peer peer, const void *hdr,
			  size_t hdr_len, void *payload, size_t payload_len,
			  ps_mem_kind kind, ps_free_fn *free_fn, void *hint);
int ps_transport_recv(ps_transport *t, int timeout_ms, ps_msg **msg_p);
void ps_transport_wake(ps_transport *t);
int ps_transport_disconnect(ps_transport *t, ps_peer peer);
/* Fills *caps (zeros for a NULL transport). */
void ps_transport_caps_of(const ps_transport *t, ps_transport_caps *caps);
/* Host memory (PS_MEM_HOST): ps_transport_reg_ex without a dma-buf,
 * failures logged. PS_MEM_CUDA is refused (PS_ENOTSUP, logged): device
 * memory goes through ps_transport_reg_ex, whose reason the caller needs
 * to choose another path. */
int ps_transport_reg(ps_transport *t, void *addr, size_t len,
		     ps_mem_kind kind, ps_mr **mr_p);
/* Registers req's memory (DESIGN: device memory): PS_OK and *mr_p;
 * PS_ENOTSUP when the backend cannot use that memory, or cannot register
 * that device memory now, with a whole sentence in why[whylen] ("rdma: device
 * rxe0 cannot register dma-buf memory: ibv_reg_dmabuf_mr: Operation not
 * supported"); PS_EINVAL for a bad request (also said in why); PS_ECLOSED
 * after stop; PS_ENOMEM. why NULL: the reason is logged instead. */
int ps_transport_reg_ex(ps_transport *t, const ps_reg_req *req,
			ps_mr **mr_p, char *why, size_t whylen);
/* Releases *mr_p (NULL: nothing) and sets it to NULL; allowed after
 * ps_transport_stop, before ps_transport_free. */
void ps_transport_dereg(ps_transport *t, ps_mr **mr_p);
/* Ends all I/O; a second stop does nothing. */
void ps_transport_stop(ps_transport *t, int linger_ms);
/* Stops (linger 0) if not stopped, frees *t_p and sets it to NULL. */
void ps_transport_free(ps_transport **t_p);
/* ps_transport_stop, then ps_transport_free. */
void ps_transport_destroy(ps_transport **t_p, int linger_ms);

#endif /* ORDO_TRANSPORT_H */
