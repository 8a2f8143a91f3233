/*
 * transport/transport.c - the registry of transport backends and the
 * wrappers every caller goes through.
 *
 * Backends are found by name in a static table of ops tables (no string
 * if-chain at the call sites). The wrappers check their arguments and that
 * the backend has the operation: a missing op is PS_ENOTSUP, never a NULL
 * call, so callers can test capabilities.
 *
 * Threads: the registry is read-only; ps_transport_find() and
 * ps_transport_names() are thread-safe. The other wrappers follow the
 * owner-thread rule of transport.h (ps_transport_wake: any thread, signal
 * handlers included).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "common/log.h"
#include "transport/transport.h"

/* Defined by the backends. */
extern const ps_transport_ops psi_tcp_ops; /* transport/tcp.c */
#ifdef PS_WITH_RDMA
extern const ps_transport_ops psi_rdma_ops; /* transport/rdma.c */
#endif

static const ps_transport_ops *const backends[] = {
    &psi_tcp_ops,
#ifdef PS_WITH_RDMA
    /* ---- the RDMA (verbs) backend registers here ---- */
    &psi_rdma_ops,
#endif
};

#define NBACKENDS (sizeof(backends) / sizeof(backends[0]))

static char names[128];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void build_names(void)
{
	size_t off = 0;
	for (size_t i = 0; i < NBACKENDS; i++) {
		int n = snprintf(names + off, sizeof(names) - off, "%s%s",
		                 i ? "," : "", backends[i]->name);
		if (n < 0 || (size_t)n >= sizeof(names) - off)
			break;
		off += (size_t)n;
	}
}

const ps_transport_ops *ps_transport_find(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < NBACKENDS; i++)
		if (strcmp(backends[i]->name, name) == 0)
			return backends[i];
	return NULL;
}

const char *ps_transport_names(void)
{
	pthread_once(&names_once, build_names);
	return names;
}

int ps_transport_create(const char *name, const ps_transport_opts *opts,
                        ps_transport **t_p)
{
	ps_transport *t = NULL;
	const ps_transport_ops *ops;
	int rc;

	if (!name || !opts || !t_p) {
		PS_ERROR("transport: create: missing argument");
		return PS_EINVAL;
	}
	ops = ps_transport_find(name);
	if (!ops) {
		PS_ERROR("transport: unknown transport \"%s\" (built in: %s)",
		         name, ps_transport_names());
		return PS_ENOTSUP;
	}
	if (!ops->create) {
		PS_ERROR("transport: %s cannot create transports", name);
		return PS_ENOTSUP;
	}
	rc = ops->create(opts, &t);
	if (rc != PS_OK)
		return rc;
	*t_p = t;
	return PS_OK;
}

int ps_transport_listen(ps_transport *t, const char *host, int port,
                        const char *advertise_host, char *endpoint, size_t cap)
{
	if (!t || !t->ops || !endpoint || cap == 0 || port < 0 ||
	    port > 65535) {
		PS_ERROR("transport: listen: invalid argument (port %d)", port);
		return PS_EINVAL;
	}
	if (t->stopped)
		return PS_ECLOSED;
	if (!t->ops->listen)
		return PS_ENOTSUP;
	return t->ops->listen(t, host, port, advertise_host, endpoint, cap);
}

/* What every connect checks first: PS_OK, PS_EINVAL or PS_ECLOSED. */
static int connect_args(const ps_transport *t, const char *endpoint,
			const ps_peer *peer_p)
{
	if (!t || !t->ops || !endpoint || !peer_p) {
		PS_ERROR("transport: connect: missing argument");
		return PS_EINVAL;
	}
	return t->stopped ? PS_ECLOSED : PS_OK;
}

int ps_transport_connect_within(ps_transport *t, const char *endpoint,
				int timeout_ms, ps_peer *peer_p)
{
	int rc = connect_args(t, endpoint, peer_p);

	if (rc != PS_OK)
		return rc;
	if (!t->ops->connect)
		return PS_ENOTSUP;
	return t->ops->connect(t, endpoint, timeout_ms, peer_p);
}

int ps_transport_connect(ps_transport *t, const char *endpoint, ps_peer *peer_p)
{
	return ps_transport_connect_within(t, endpoint, -1, peer_p);
}

int ps_transport_connect_start(ps_transport *t, const char *endpoint,
			       int timeout_ms, ps_peer *peer_p)
{
	int rc = connect_args(t, endpoint, peer_p);

	if (rc != PS_OK)
		return rc;
	if (!t->ops->connect_start || !t->ops->connect_wait)
		return ps_transport_connect_within(t, endpoint, timeout_ms,
						   peer_p);
	return t->ops->connect_start(t, endpoint, timeout_ms, peer_p);
}

int ps_transport_connect_wait(ps_transport *t, ps_peer peer, int wait_ms)
{
	if (!t || !t->ops) {
		PS_ERROR("transport: connect_wait: missing transport");
		return PS_EINVAL;
	}
	if (t->stopped)
		return PS_ECLOSED;
	if (!t->ops->connect_start || !t->ops->connect_wait)
		return PS_OK; /* connected in the start */
	return t->ops->connect_wait(t, peer, wait_ms);
}

/* What every send checks first: whether its arguments are whole
 * (logged when not). */
static bool send_args_ok(const ps_transport *t, const void *hdr,
			 size_t hdr_len, const void *payload,
			 size_t payload_len)
{
	if (!t || !t->ops || (!hdr && hdr_len) || (!payload && payload_len)) {
		PS_ERROR("transport: send: invalid argument");
		return false;
	}
	return true;
}

int ps_transport_send(ps_transport *t, ps_peer peer, const void *hdr,
                      size_t hdr_len, void *payload, size_t payload_len,
                      ps_free_fn *free_fn, void *hint)
{
	if (!send_args_ok(t, hdr, hdr_len, payload, payload_len))
		return PS_EINVAL;
	if (t->stopped)
		return PS_ECLOSED;
	if (!t->ops->send)
		return PS_ENOTSUP;
	return t->ops->send(t, peer, hdr, hdr_len, payload, payload_len,
	                    free_fn, hint);
}

int ps_transport_send_flow(ps_transport *t, ps_peer peer, uint32_t flow,
			   const void *hdr, size_t hdr_len, void *payload,
			   size_t payload_len, ps_free_fn *free_fn, void *hint)
{
	if (!send_args_ok(t, hdr, hdr_len, payload, payload_len))
		return PS_EINVAL;
	if (!t->ops->send_flow) /* one connection: every flow in order */
		return ps_transport_send(t, peer, hdr, hdr_len, payload,
					 payload_len, free_fn, hint);
	if (t->stopped)
		return PS_ECLOSED;
	return t->ops->send_flow(t, peer, flow, hdr, hdr_len, payload,
				 payload_len, free_fn, hint);
}

int ps_transport_send_mem(ps_transport *t, ps_peer peer, const void *hdr,
			  size_t hdr_len, void *payload, size_t payload_len,
			  ps_mem_kind kind, ps_free_fn *free_fn, void *hint)
{
	if (!send_args_ok(t, hdr, hdr_len, payload, payload_len))
		return PS_EINVAL;
	if (kind != PS_MEM_HOST && kind != PS_MEM_CUDA) {
		PS_ERROR("transport: send: unknown memory kind %d", (int)kind);
		return PS_EINVAL;
	}
	if (t->stopped)
		return PS_ECLOSED;
	if (t->ops->send_mem)
		return t->ops->send_mem(t, peer, hdr, hdr_len, payload,
					payload_len, kind, free_fn, hint);
	if (kind == PS_MEM_CUDA) {
		/* the backend would read the payload with the CPU */
		PS_ERROR("transport: %s cannot send CUDA device memory (a "
			 "payload of %zu bytes at %p): copy it to host memory "
			 "first, or use the rdma transport",
			 t->ops->name, payload_len, payload);
		return PS_ENOTSUP;
	}
	if (!t->ops->send)
		return PS_ENOTSUP;
	return t->ops->send(t, peer, hdr, hdr_len, payload, payload_len,
			    free_fn, hint);
}

int ps_transport_recv(ps_transport *t, int timeout_ms, ps_msg **msg_p)
{
	if (!t || !t->ops || !msg_p) {
		PS_ERROR("transport: recv: missing argument");
		return PS_EINVAL;
	}
	if (t->stopped)
		return PS_ECLOSED;
	if (!t->ops->recv)
		return PS_ENOTSUP;
	return t->ops->recv(t, timeout_ms < 0 ? -1 : timeout_ms, msg_p);
}

/* Async-signal-safe: no logging here. */
void ps_transport_wake(ps_transport *t)
{
	if (t && t->ops && t->ops->wake)
		t->ops->wake(t);
}

int ps_transport_disconnect(ps_transport *t, ps_peer peer)
{
	if (!t || !t->ops) {
		PS_ERROR("transport: disconnect: missing transport");
		return PS_EINVAL;
	}
	if (t->stopped)
		return PS_ECLOSED;
	if (!t->ops->disconnect)
		return PS_ENOTSUP;
	return t->ops->disconnect(t, peer);
}

uint64_t ps_transport_kid(const ps_transport *t)
{
	return t ? t->kid : 0;
}

void ps_transport_caps_of(const ps_transport *t, ps_transport_caps *caps)
{
	if (!caps)
		return;
	memset(caps, 0, sizeof(*caps));
	if (t && t->ops && t->ops->caps)
		t->ops->caps(t, caps);
}

static int reg_ex(ps_transport *t, const ps_reg_req *req, ps_mr **mr_p,
		  char *why, size_t whylen);

int ps_transport_reg_ex(ps_transport *t, const ps_reg_req *req,
			ps_mr **mr_p, char *why, size_t whylen)
{
	/* the backend always gets a buffer: the caller's, or this one,
	 * logged (the caller did not ask for the reason) */
	char own[512];
	int rc;

	if (!why || !whylen) {
		why = own;
		whylen = sizeof(own);
	}
	why[0] = '\0';
	if (mr_p)
		*mr_p = NULL;
	rc = reg_ex(t, req, mr_p, why, whylen);
	if (rc != PS_OK && rc != PS_ECLOSED && why == own)
		PS_ERROR("%s", why);
	return rc;
}

/* ps_transport_reg_ex with a reason buffer (why[0] == '\0'). */
static int reg_ex(ps_transport *t, const ps_reg_req *req, ps_mr **mr_p,
		  char *why, size_t whylen)
{
	ps_mr *mr;
	int rc;

	if (!t || !t->ops || !req || !req->addr || req->len == 0 || !mr_p)
		return ps_errf(why, whylen, PS_EINVAL,
		               "transport: reg: invalid argument (%zu bytes at "
		               "%p)",
		               req ? req->len : 0, req ? req->addr : NULL);
	if (t->stopped)
		return ps_errf(why, whylen, PS_ECLOSED,
		               "transport: reg: the %s transport is stopped",
		               t->ops->name);
	if (req->kind != PS_MEM_HOST && req->kind != PS_MEM_CUDA)
		return ps_errf(why, whylen, PS_EINVAL,
		               "transport: reg: unknown memory kind %d",
		               (int)req->kind);
	if (req->dmabuf_fd >= 0 && req->kind != PS_MEM_CUDA)
		return ps_errf(why, whylen, PS_EINVAL,
		               "transport: reg: a dma-buf (descriptor %d) is "
		               "registered as device memory (PS_MEM_CUDA) only",
		               req->dmabuf_fd);
	if (!t->ops->reg && req->kind != PS_MEM_HOST)
		return ps_errf(
		    why, whylen, PS_ENOTSUP,
		    "transport: %s cannot register CUDA device memory",
		    t->ops->name);
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return ps_errf(why, whylen, PS_ENOMEM,
		               "transport: reg: out of memory");
	mr->addr = req->addr;
	mr->len = req->len;
	mr->kind = req->kind;
	rc = t->ops->reg ? t->ops->reg(t, mr, req, why, whylen) : PS_OK;
	if (rc != PS_OK) {
		if (!why[0])
			ps_errf(why, whylen, rc,
			        "transport: %s cannot register %zu "
			        "bytes of %s memory (%s)",
			        t->ops->name, req->len,
			        req->kind == PS_MEM_CUDA ? "CUDA" : "host",
			        ps_strerror(rc));
		free(mr);
		return rc;
	}
	mr->next = t->mrs;
	t->mrs = mr;
	*mr_p = mr;
	return PS_OK;
}

int ps_transport_reg(ps_transport *t, void *addr, size_t len,
		     ps_mem_kind kind, ps_mr **mr_p)
{
	ps_reg_req req = {.addr = addr, .len = len, .kind = kind,
			  .dmabuf_fd = -1};

	if (mr_p)
		*mr_p = NULL;
	if (kind == PS_MEM_CUDA && t && t->ops && !t->stopped && addr &&
	    len && mr_p) {
		PS_ERROR("transport: ps_transport_reg registers host memory "
			 "only: register CUDA device memory with "
			 "ps_transport_reg_ex, which says why a registration "
			 "failed");
		return PS_ENOTSUP;
	}
	return ps_transport_reg_ex(t, &req, mr_p, NULL, 0); /* logs */
}

/* Takes mr out of t's list and lets the backend release it. */
static void dereg(ps_transport *t, ps_mr *mr)
{
	for (ps_mr **p = &t->mrs; *p; p = &(*p)->next)
		if (*p == mr) {
			*p = mr->next;
			break;
		}
	if (t->ops->dereg)
		t->ops->dereg(t, mr);
	free(mr);
}

void ps_transport_dereg(ps_transport *t, ps_mr **mr_p)
{
	if (!mr_p || !*mr_p)
		return;
	ps_mr *mr = *mr_p;
	*mr_p = NULL;
	if (t && t->ops)
		dereg(t, mr);
}

void ps_transport_stop(ps_transport *t, int linger_ms)
{
	if (!t || !t->ops || t->stopped)
		return;
	t->stopped = 1;
	if (t->ops->stop)
		t->ops->stop(t, linger_ms < 0 ? 0 : linger_ms);
}

void ps_transport_free(ps_transport **t_p)
{
	unsigned left = 0;

	if (!t_p || !*t_p)
		return;
	ps_transport *t = *t_p;
	*t_p = NULL;
	ps_transport_stop(t, 0); /* nothing when stopped already */
	while (t->mrs) {
		dereg(t, t->mrs);
		left++;
	}
	if (left)
		PS_WARN("transport: %u memory registration(s) still live when "
			"the transport was freed: released", left);
	if (t->ops && t->ops->free)
		t->ops->free(t);
}

void ps_transport_destroy(ps_transport **t_p, int linger_ms)
{
	if (!t_p || !*t_p)
		return;
	ps_transport_stop(*t_p, linger_ms);
	ps_transport_free(t_p);
}

void ps_msg_free(ps_msg **msg_p)
{
	if (!msg_p || !*msg_p)
		return;
	ps_msg *msg = *msg_p;
	*msg_p = NULL;
	if (msg->release)
		msg->release(msg);
}
