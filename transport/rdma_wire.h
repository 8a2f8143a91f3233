/*
 * transport/rdma_wire.h - what the verbs transport (transport/rdma.c)
 * reads from a peer before anything else: the hello in rdma_cm's private
 * data, and the header of each frame inside a received SEND
 * (docs/rdma.md, "Connections" and "Framing"). Pure functions over bytes,
 * with no verbs: tests/fuzz/fuzz_rdma.c calls them without a device, and
 * without PS_WITH_RDMA.
 *
 * Threads: pure functions.
 */
#ifndef ORDO_TRANSPORT_RDMA_WIRE_H
#define ORDO_TRANSPORT_RDMA_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PS_RDMA_MAGIC      0x4f52444du   /* "ORDM" */
#define PS_RDMA_VERSION    3
#define PS_RDMA_BUF_SIZE   (64u * 1024) /* one SEND / one receive buffer */
#define PS_RDMA_RECV_DEPTH 64           /* data credits per connection */

enum {
	PS_RDMA_FRAME_DATA = 1,
	PS_RDMA_FRAME_CREDIT = 2,
	PS_RDMA_FRAME_RTS = 3,
	PS_RDMA_FRAME_FIN = 4,
	PS_RDMA_FRAME_IDENT = 5, /* the connector's token (32 bytes), first */
};

#define PS_RDMA_TOKEN_LEN 32 /* an IDENT frame's bytes */

/* One frame inside a SEND; `len` bytes of the message stream follow. */
typedef struct ps_rdma_frame {
	uint16_t type;
	uint16_t flags; /* 0 */
	uint32_t credits;
	uint32_t len;
	uint32_t hdr_len;
	uint64_t payload_len;
	uint64_t offset;
} ps_rdma_frame;

_Static_assert(sizeof(ps_rdma_frame) == 32, "frame header is 32 bytes");

/* rdma_connect / rdma_accept private data (connect: at most 56 bytes);
 * also rdma_reject's when the acceptor could not set up its QP with its
 * explicit GID index (flags PS_RDMA_HELLO_REJ_QP, depth = that index) or
 * refused the connector's secret (PS_RDMA_HELLO_REJ_SECRET): the
 * connector then fails at once, naming it, instead of retrying. A
 * connector of a job with a secret (security.mode = secret, or auto with
 * one; transport/keys.h) presents it (PS_RDMA_HELLO_SECRET); an acceptor
 * admits a connector only if it presents the acceptor's own secret, or,
 * without one, none: as tcp's PLAIN handshake (transport/zap.h), the
 * secret crosses the network in the clear once per connection, and
 * nothing of a refused peer is read. */
typedef struct ps_rdma_hello {
	uint32_t magic;
	uint16_t version;
	uint16_t flags; /* PS_RDMA_HELLO_* */
	uint64_t id;
	uint32_t depth;
	uint32_t buf_size;
	uint8_t secret[32]; /* PS_RDMA_HELLO_SECRET: the job's; else zeros */
} ps_rdma_hello;

_Static_assert(sizeof(ps_rdma_hello) <= 56,
	       "a hello fits rdma_connect's 56 bytes of private data");

#define PS_RDMA_HELLO_REJ_QP     1
#define PS_RDMA_HELLO_SECRET     2
#define PS_RDMA_HELLO_REJ_SECRET 4

/* The len bytes at data (NULL: none) are an ordo hello of this version,
 * copied into *h: its magic, its version, a depth in [1, 64 * RECV_DEPTH]
 * and our buffer size. */
static inline bool ps_rdma_hello_ok(const void *data, size_t len,
				    ps_rdma_hello *h)
{
	if (!data || len < sizeof(*h))
		return false;
	memcpy(h, data, sizeof(*h));
	return h->magic == PS_RDMA_MAGIC && h->version == PS_RDMA_VERSION &&
	       h->depth > 0 && h->depth <= PS_RDMA_RECV_DEPTH * 64 &&
	       h->buf_size == PS_RDMA_BUF_SIZE;
}

/* ps_rdma_frame_next's answers */
enum {
	PS_RDMA_FRAME_OK = 0,
	PS_RDMA_FRAME_TRUNCATED = 1, /* less than a header left */
	PS_RDMA_FRAME_MALFORMED = 2, /* a header no sender writes */
};

/* The frame header at *pos of a received buffer of len bytes (*pos <
 * len), into *f; *pos moves past the header (to its f->len bytes) unless
 * truncated. Malformed: its bytes run past len, an unknown type, a
 * CREDIT or FIN with bytes, an IDENT of other than PS_RDMA_TOKEN_LEN,
 * more credits than RECV_DEPTH. */
static inline int ps_rdma_frame_next(const unsigned char *buf, uint32_t len,
				     uint32_t *pos, ps_rdma_frame *f)
{
	if (len - *pos < sizeof(*f))
		return PS_RDMA_FRAME_TRUNCATED;
	memcpy(f, buf + *pos, sizeof(*f));
	*pos += (uint32_t)sizeof(*f);
	if (f->len > len - *pos || f->type < PS_RDMA_FRAME_DATA ||
	    f->type > PS_RDMA_FRAME_IDENT ||
	    ((f->type == PS_RDMA_FRAME_CREDIT ||
	      f->type == PS_RDMA_FRAME_FIN) &&
	     f->len != 0) ||
	    (f->type == PS_RDMA_FRAME_IDENT && f->len != PS_RDMA_TOKEN_LEN) ||
	    f->credits > PS_RDMA_RECV_DEPTH)
		return PS_RDMA_FRAME_MALFORMED;
	return PS_RDMA_FRAME_OK;
}

#endif /* ORDO_TRANSPORT_RDMA_WIRE_H */
