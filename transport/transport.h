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
 * handle for sending. Received messages carry the sender's id (`src`), which
 * the layer above checks against the node table.
 *
 * Backends register an ops table; a missing op is "not supported"
 * (PS_ENOTSUP) through the wrappers below, never a NULL call.
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

/* Called once when the transport is done with a payload it was given. */
typedef void ps_free_fn(void *data, void *hint);

typedef struct ps_transport_opts {
	uint64_t id;           /* this node's id, carried as msg->src */
	int send_timeout_ms;   /* a send blocked this long fails (ETIMEDOUT) */
	int connect_timeout_ms;/* ps_transport_connect() gives up after this */
	int io_threads;        /* backend threads (ZeroMQ I/O threads) */
} ps_transport_opts;

/* A received message. Owned by the caller of recv; free with
 * ps_msg_free(). hdr/payload stay valid until then. */
typedef struct ps_msg {
	uint64_t src;
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
	 * connect_timeout_ms (PS_ECONNREFUSED / PS_ETIMEDOUT). Connecting to
	 * the same endpoint twice returns the same peer. */
	int (*connect)(ps_transport *t, const char *endpoint, ps_peer *peer_p);
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
	/* Waits up to timeout_ms (-1: forever, 0: poll) for one message.
	 * PS_OK with *msg_p set, PS_ETIMEDOUT, or PS_EAGAIN after a wake. */
	int (*recv)(ps_transport *t, int timeout_ms, ps_msg **msg_p);
	/* Thread- and async-signal-safe wake-up of recv. */
	void (*wake)(ps_transport *t);
	/* Drops the connection to peer (later sends fail with PS_ECLOSED). */
	int (*disconnect)(ps_transport *t, ps_peer peer);
	/* Closes sockets (pending sends are flushed for at most linger_ms)
	 * and frees everything. */
	void (*destroy)(ps_transport *t, int linger_ms);
} ps_transport_ops;

/* Every backend's struct begins with this. */
struct ps_transport {
	const ps_transport_ops *ops;
};

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
int ps_transport_connect(ps_transport *t, const char *endpoint,
			 ps_peer *peer_p);
int ps_transport_send(ps_transport *t, ps_peer peer, const void *hdr,
		      size_t hdr_len, void *payload, size_t payload_len,
		      ps_free_fn *free_fn, void *hint);
int ps_transport_recv(ps_transport *t, int timeout_ms, ps_msg **msg_p);
void ps_transport_wake(ps_transport *t);
int ps_transport_disconnect(ps_transport *t, ps_peer peer);
/* Destroys *t_p and sets it to NULL. */
void ps_transport_destroy(ps_transport **t_p, int linger_ms);

#endif /* ORDO_TRANSPORT_H */
