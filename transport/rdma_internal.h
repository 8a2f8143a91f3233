/*
 * transport/rdma_internal.h - internal to the verbs (RDMA) transport
 * backend, not a public header (nothing outside transport/rdma*.c
 * includes it): the limits, the types (slots, the lending pool, queued
 * and received messages, connections, peer handles, the transport), the
 * globals, TRACE, and the calls from one of its files to another
 * (psi_rdma_*). The wire format is rdma_wire.h; the choice of device,
 * port and GID is rdma_device.h.
 *
 * The files: rdma.c (create, listen, connect, send, recv, stop, free,
 * the progress thread, the ops table), rdma_pool.c (the lending pool),
 * rdma_verbs.c (PD/CQ, queue pairs, receive buffers, a connection's
 * making, killing and freeing), rdma_send.c (sending), rdma_recv.c
 * (receiving) and rdma_cm.c (connection management: CM events, the
 * device's async events, the sweep). The design is docs/rdma.md, section
 * by section; comments name the section.
 *
 * Threads: everything here is under the transport's one mutex (rt->mu)
 * unless a function says otherwise (docs/rdma.md, "Threads").
 */
#ifndef ORDO_TRANSPORT_RDMA_INTERNAL_H
#define ORDO_TRANSPORT_RDMA_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "transport/rdma_wire.h"
#include "transport/transport.h"

#define BUF_SIZE             PS_RDMA_BUF_SIZE   /* rdma_wire.h */
#define RECV_DEPTH           PS_RDMA_RECV_DEPTH
#define CTRL_RESERVE         8            /* receive buffers for credit SENDs */
#define RECV_POSTED          (RECV_DEPTH + CTRL_RESERVE)
#define CREDIT_BATCH         (RECV_DEPTH / 2)
#define SEND_POOL            128 /* registered send buffers */
#define SEND_WR_MAX          (RECV_DEPTH + 16)
#define SEND_QUEUE_MAX       (1u << 20) /* queued messages per connection */
#define MAX_PAYLOAD          ((uint64_t)1 << 32)
#define MAX_HDR              ((uint32_t)16 << 20)
#define ENDPOINT_MAX         256
#define DEFAULT_CONNECT_MS   10000
#define DEFAULT_HANDSHAKE_MS 30000 /* opts.handshake_timeout_ms <= 0 */
#define RESOLVE_MS           2000
#define DISC_WAIT_MS         2000
#define DISCONNECT_LINGER_MS 1000
#define CQ_SIZE_MAX          65536
#define PROTO_MAGIC          PS_RDMA_MAGIC
#define PROTO_VERSION        PS_RDMA_VERSION
#define ACK_TIMEOUT          14
#define RETRY_COUNT          7
#define RNR_RETRY            0
#define ZC_MIN               (64u * 1024) /* payloads this large: READ */
#define ZC_HDR_MAX           (BUF_SIZE / 2) /* RTS: header in one SEND */
#define READ_CHUNK           (1u << 20)   /* bytes of one READ WR */
#define READ_SQ_RESERVE      8  /* send WRs READs leave to SENDs */
#define RD_ATOM_MAX          16 /* READs in flight per QP */
#define LEND_MAX             64 /* pool buffers lent at a time */
#define POOL_MIN_SHIFT       16 /* pool buffers: 64 KiB ... */
#define POOL_CLASSES         9  /* ... 16 MiB */
#define POOL_CACHE_MAX       ((size_t)64 << 20) /* idle pool bytes kept */
#define ASYNC_PENDING        64 /* async QP events queued per transport */
/* An unregistered payload >= ZC_MIN: registered for its one send (1), or
 * copied through the send buffers (0); measured: docs/rdma.md, "Zero
 * copy". */
#ifndef UNREG_ZC
#define UNREG_ZC             1
#endif

enum {
	FRAME_DATA = PS_RDMA_FRAME_DATA,
	FRAME_CREDIT = PS_RDMA_FRAME_CREDIT,
	FRAME_RTS = PS_RDMA_FRAME_RTS,
	FRAME_FIN = PS_RDMA_FRAME_FIN,
	FRAME_IDENT = PS_RDMA_FRAME_IDENT,
};

/* After an RTS frame's header (frame.len = sizeof(rts_desc) + hdr_len):
 * where the payload is for the receiver's READ, then the header bytes. A
 * FIN frame (len 0) carries the cookie in frame.offset. */
typedef struct rts_desc {
	uint64_t addr;
	uint32_t rkey;
	uint32_t pad; /* 0 */
	uint64_t cookie;
} rts_desc;

_Static_assert(sizeof(rts_desc) == 24, "rts descriptor is 24 bytes");

/* The frame header and the hello: rdma_wire.h. */
typedef ps_rdma_frame frame;
typedef ps_rdma_hello hello;
#define HELLO_REJ_QP     PS_RDMA_HELLO_REJ_QP
#define HELLO_SECRET     PS_RDMA_HELLO_SECRET
#define HELLO_REJ_SECRET PS_RDMA_HELLO_REJ_SECRET

enum conn_state {
	C_RESOLVING, /* address/route, then connect sent */
	C_UP,
	C_FAILED, /* connect failed (fail_event says how) */
	C_DEAD,   /* was up, then broken or disconnected */
};

typedef struct rdma_transport rdma_transport;
typedef struct conn conn;
typedef struct rmsg rmsg;

enum slot_kind { SLOT_SEND, SLOT_RECV, SLOT_READ };

/* wr_id of every work request: what the buffer is and whose. */
typedef struct slot {
	conn *c;
	unsigned char *buf;
	uint8_t kind;      /* enum slot_kind */
	struct slot *next; /* free list (send slots) */
	rmsg *m;           /* SLOT_READ: the message being read */
} slot;

/* The lending pool: registered receive buffers for READs, lent to the
 * receiver inside ps_msgs and reused when they are freed. It lives until
 * the transport and every lent buffer are gone (refs). */
typedef struct lpool lpool;
typedef struct lbuf {
	lpool *pool;
	struct lbuf *next, *prev; /* free list, or the lent list */
	unsigned char *mem;
	size_t cap;
	int cls;
	struct ibv_mr *mr; /* NULL once the transport stopped */
} lbuf;

struct lpool {
	pthread_mutex_t mu;
	int refs;         /* the transport's + one per lent buffer */
	bool dead;        /* the transport stopped: nothing is registered */
	uint32_t lent;
	size_t cached;    /* bytes in the free lists */
	lbuf *free[POOL_CLASSES];
	lbuf *lent_list;
	struct ibv_pd *pd;
};

/* A queued outgoing message. */
typedef struct sitem {
	struct sitem *next;
	void *hdr; /* copy */
	uint32_t hdr_len;
	void *payload;
	uint64_t payload_len;
	uint64_t off; /* bytes of the stream already copied */
	ps_free_fn *free_fn;
	void *hint;
	/* zero copy (READ rendezvous): RTS sent, payload read by the peer */
	bool zc;
	uint32_t rkey;
	struct ibv_mr *own_mr; /* registered for this one send */
	uint64_t cookie;
} sitem;

/* A received message. */
struct rmsg {
	ps_msg msg;
	struct rmsg *next;
	unsigned char *hdr;
	uint64_t got;
	uint64_t total;
	/* in order on its connection (a READ holds later ones back) */
	struct rmsg *in_next;
	bool ready;
	/* READ rendezvous */
	struct rmsg *rd_next; /* c's READs still to post */
	slot rd;              /* wr_id of its READs */
	uint64_t raddr;
	uint32_t rkey;
	uint32_t lkey;
	uint64_t cookie;
	uint64_t rd_off;       /* bytes posted */
	uint32_t rd_wrs;       /* READs posted, not completed */
	struct ibv_mr *rd_mr;  /* heap payload registered for its READ */
	lbuf *lb;              /* or a lent pool buffer */
	/* charged to from->rx_bytes until recv takes it (recv_budget), and
	 * to node->rx_total (node_budget); node is NULL once uncharged */
	conn *from;
	rdma_transport *node;
	uint64_t charged;
};

struct conn {
	rdma_transport *rt;
	conn *next; /* rt->conns: every connection, freed at stop */
	struct rdma_cm_id *id;
	struct ibv_qp *qp; /* id->qp, or our own (own_qp) */
	bool outbound;
	bool has_qp;
	bool own_qp;    /* explicit GID index: ibv_create_qp, moved by us */
	bool fatal;     /* connect failed for good (logged): no retry */
	uint8_t resp_res, init_depth; /* own QP, accepted: the accept's */
	bool disc_sent; /* we called rdma_disconnect */
	bool disc_seen; /* DISCONNECTED (or equivalent) came */
	bool closed;    /* user disconnect: sends fail PS_ECLOSED */
	bool broken;    /* an error: what it still receives is dropped */
	bool connecting; /* try_connect waits on it: not freed */
	uint32_t pins;  /* owner-thread waits on it: not freed */
	int32_t peer;   /* index in rt->peers, or -1 */
	enum conn_state state;
	int fail_event; /* RDMA_CM_EVENT_* of a failed connect */
	int fail_status;
	char endpoint[ENDPOINT_MAX];
	uint64_t peer_id;
	/* receive side */
	unsigned char *rbufs;
	struct ibv_mr *rmr;
	slot rslots[RECV_POSTED];
	bool recvs_posted;
	uint32_t recv_out; /* receive WRs not completed */
	uint32_t owed; /* data buffers reposted, not yet returned */
	rmsg *partial;
	rmsg *in_head, *in_tail; /* received, not yet for recv (order) */
	rmsg *rd_head, *rd_tail; /* RTS received, READs to post */
	uint64_t *fins;          /* cookies to return (FIN frames) */
	uint32_t nfins, cap_fins;
	/* bytes of this connection's messages allocated and not yet taken
	 * by recv (recv_budget); past the budget the receive buffers from
	 * the first message that does not fit on wait here, in order,
	 * their credit and FIN frames already applied (hold_slot) */
	uint64_t rx_bytes;
	struct held {
		slot *s;
		uint32_t len, pos;
	} held[RECV_POSTED];
	uint32_t held_head, nheld;
	/* send side */
	uint32_t credits;
	uint32_t send_posted; /* send and READ WRs not completed */
	sitem *sq_head, *sq_tail;
	uint32_t sq_len;
	sitem *zc_head, *zc_tail; /* RTS sent, waiting for its FIN */
	uint64_t next_cookie;
	/* who sent what arrives (security.mode = secret): an outbound
	 * connection owes its IDENT (this node's token) as its first frame;
	 * an inbound one has the key id of the IDENT it got (0: none yet) */
	bool ident_owed;
	uint64_t kid;
	bool had_data; /* a DATA or RTS frame came: an IDENT is late */
	/* inbound: when it was accepted, until it is established (0 then):
	 * a connector that never completes its handshake is ended after
	 * opts.handshake_timeout_ms (psi_rdma_end_half_open) */
	int64_t accepted_ms;
};

/* A peer handle: stays valid when its connection dies and is freed. */
typedef struct peer_slot {
	conn *c; /* NULL once the dead connection was freed */
	bool closed;
	char endpoint[ENDPOINT_MAX];
	/* connecting, from connect_start until connect_wait saw the end
	 * (docs/rdma.md, "Connections"): attempts until the deadline */
	bool pending;
	bool fresh;        /* the handle was made for it */
	bool refused;      /* an attempt was rejected or unreachable */
	conn *attempt;     /* in flight; NULL between attempts */
	struct sockaddr_in sa;
	int64_t deadline;  /* when connecting fails */
	int64_t retry_at;  /* the next attempt, between attempts */
	int64_t backoff;
	int timeout_ms;    /* the deadline's length, for messages */
} peer_slot;

struct rdma_transport {
	ps_transport base; /* must be first */
	ps_transport_opts opts;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* broadcast after every progress step */
	pthread_t thread;
	bool thread_started;
	bool quit;
	bool stopping; /* stop began: connect requests are rejected */
	int wake_fd;   /* ps_transport_wake */
	int ready_fd;  /* a message was queued for recv */
	int ctl_fd;    /* wakes the progress thread (quit) */
	struct rdma_event_channel *ech;
	struct rdma_cm_id *listen_id;
	/* verbs, from the first context seen */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	int cq_size;
	int cq_used;
	unsigned char *sbufs;
	struct ibv_mr *smr;
	slot sslots[SEND_POOL];
	slot *sfree;
	conn *conns;
	peer_slot *peers; /* outbound connections by ps_peer */
	uint32_t npeers, cap_peers;
	rmsg *rq_head, *rq_tail; /* completed, for recv */
	/* the bytes of every connection's messages charged to the node
	 * until recv takes them (node_budget) */
	uint64_t rx_total;
	lpool *pool;
	uint8_t rd_atom; /* READs in flight per QP (device limits) */
	/* the device: async events (all transports on one context see each
	 * event: qp_nums queued here by whichever thread read it) */
	struct rdma_transport *g_next; /* g_transports */
	uint32_t async_qp[ASYNC_PENDING];
	int async_type[ASYNC_PENDING];
	uint32_t nasync;
	char dev_name[64];
	bool dev_dead; /* removed or fatal: recv answers PS_EIO */
	bool has_secret;   /* the job's secret (opts.job_secret) */
	uint8_t secret[32];
	bool has_token;    /* this node's token (opts.job_token) */
	uint8_t token[PS_RDMA_TOKEN_LEN];
	uint64_t refused;  /* connections refused for their secret */
	uint64_t half_open; /* connections ended for no handshake */
	char dev_why[160];
	/* opts.rdma_gid_index >= 0: the GID checked (psi_rdma_check_gid) */
	bool gid_ok;
	char gid_dev[64];
	uint8_t gid_port;
	uint8_t gid_link_layer;
	char gid_desc[160]; /* "GID index 1 (::ffff:..., RoCE v2) of rxe0
	                     * port 1", for messages */
};

/* Every transport with a device: the async events of a verbs context
 * (librdmacm shares one per device in the process) go to whichever
 * progress thread reads them first, which queues them for all. Defined
 * in rdma.c. */
extern pthread_mutex_t g_async_mu;
extern rdma_transport *g_transports;

/* PS_RDMA_TRACE=1 in the environment: CM events, completions and
 * credit frames on stderr (read once, at the first create; rdma.c). */
extern int trace_on;
#define TRACE(...)                                                             \
	do {                                                                   \
		if (trace_on)                                                  \
			fprintf(stderr, "rdma-trace: " __VA_ARGS__);           \
	} while (0)

/* ---- the calls between the files ---------------------------------------- */

/* transport/rdma.c: eventfds */

/* Signals eventfd fd (any thread, async-signal-safe). */
void psi_rdma_efd_signal(int fd);
/* O_NONBLOCK on fd: 0, or -1 (errno set). */
int psi_rdma_set_nonblock(int fd);

/* transport/rdma_pool.c: the lending pool */

/* A pool on pd, with the transport's reference; NULL: no memory. */
lpool *psi_rdma_pool_new(struct ibv_pd *pd);
/* A registered buffer of at least len bytes to lend, or NULL (then the
 * caller registers a heap buffer for the one READ). */
lbuf *psi_rdma_pool_get(lpool *p, uint64_t len);
/* A lent buffer comes back (any thread, the transport maybe freed). */
void psi_rdma_pool_put(lbuf *b);
/* At stop, before the PD goes: every registration is released, and the
 * transport's reference. */
void psi_rdma_pool_shutdown(lpool *p);

/* transport/rdma_verbs.c: verbs resources and connections */

/* The PD, completion channel, CQ and send pool on ctx (the first context
 * seen); another device later is refused. */
int psi_rdma_ensure_verbs(rdma_transport *rt, struct ibv_context *ctx);
/* "connection to rdma://..." or "connection from node N" in buf. */
const char *psi_rdma_conn_what(const conn *c, char *buf, size_t len);
/* opts.rdma_gid_index >= 0: the index names a valid GID (else logged,
 * with every device, port and GID). */
int psi_rdma_check_gid(rdma_transport *rt, struct ibv_context *ctx,
                       uint8_t port, const char *addr, const char *what);
/* c's own QP (explicit GID index) to st; PS_EIO logged. */
int psi_rdma_qp_step(rdma_transport *rt, conn *c, enum ibv_qp_state st,
                     const char *what);
/* Destroys c's QP; no work request of it may be outstanding. */
void psi_rdma_qp_release(rdma_transport *rt, conn *c);
/* c's QP on the shared PD/CQ, through rdma_cm or (explicit GID index)
 * our own, moved to INIT. */
int psi_rdma_conn_create_qp(rdma_transport *rt, conn *c);
/* Posts receive buffer s of c. */
int psi_rdma_post_recv(conn *c, slot *s);
/* Allocates, registers and posts c's receive buffers. */
int psi_rdma_conn_post_recvs(rdma_transport *rt, conn *c);
/* A new connection in rt->conns; NULL: no memory (logged). */
conn *psi_rdma_conn_new(rdma_transport *rt, bool outbound);
/* Frees c and takes it out of rt->conns (nothing of it outstanding). */
void psi_rdma_conn_destroy(rdma_transport *rt, conn *c);
/* Moves a QP of our own to error: its work requests flush. */
void psi_rdma_qp_error(conn *c);
/* Moves c's QP, ours or rdma_cm's, to error: its work requests flush. */
void psi_rdma_qp_flush(conn *c);
/* Our half of the disconnect; the QP goes to error. */
void psi_rdma_conn_disconnect(conn *c);
/* The connection is broken (why logged; NULL: a quiet end): later sends
 * fail, queued messages drop. */
void psi_rdma_conn_kill(conn *c, const char *why);

/* transport/rdma_send.c: sending */

/* Hands one sent message's payload back (free_fn once). */
void psi_rdma_sitem_done(sitem *it);
/* Drops c's queued messages and those waiting for their READ. */
void psi_rdma_drop_queue(conn *c);
/* Send buffer s is free again. */
void psi_rdma_slot_put(rdma_transport *rt, slot *s);
/* Posts what c's credits and the free send buffers allow. */
void psi_rdma_pump(rdma_transport *rt, conn *c);
/* psi_rdma_pump on every connection. */
void psi_rdma_pump_all(rdma_transport *rt);

/* transport/rdma_recv.c: receiving */

/* Frees a received message (its lent buffer goes back to the pool). */
void psi_rdma_rmsg_free(rmsg *m);
/* The largest payload a peer may announce. */
uint64_t psi_rdma_max_payload(const rdma_transport *rt);
/* c's held receive buffers, as far as its budget now takes them. */
void psi_rdma_resume_held(rdma_transport *rt, conn *c);
/* Drains the CQ and re-arms it. */
void psi_rdma_drain_cq(rdma_transport *rt);

/* transport/rdma_cm.c: connection management */

/* Reads the device's async events, queued for every transport on it. */
void psi_rdma_read_async(rdma_transport *rt);
/* Handles the async events queued for rt. */
void psi_rdma_process_async(rdma_transport *rt);
/* Frees the connections that died and are quiet. */
void psi_rdma_sweep(rdma_transport *rt);
/* Ends the inbound connections accepted longer than the handshake
 * timeout ago and not yet established; returns the ms until the next
 * one is due (-1: none). */
int psi_rdma_end_half_open(rdma_transport *rt);
/* Handles every pending CM event. */
void psi_rdma_process_cm(rdma_transport *rt);

#endif
