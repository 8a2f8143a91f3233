/*
 * tests/fuzz/fuzz_rdma.c - libFuzzer harness for what the verbs transport
 * reads from a peer first (transport/rdma_wire.h): the hello in
 * rdma_cm's private data, and the frame headers in a received SEND. Pure
 * functions: no device, no verbs, built with or without PS_WITH_RDMA.
 *
 * Input byte 0 picks the path. Even: the rest is a hello (private data:
 * at most 255 bytes, rdma_cm's length is a u8). Odd: the rest is one
 * receive buffer (at most PS_RDMA_BUF_SIZE bytes), walked frame by frame
 * as transport/rdma_recv.c's on_recv walks it.
 *
 * Oracle. Hello: accepted exactly when it is 56 bytes or more with the
 * magic, the version, a depth in [1, 64 * RECV_DEPTH] and the buffer
 * size at their offsets (little-endian), and then the id is the one at
 * offset 8; our own hello with the input's id is accepted. Frames: every
 * frame accepted is a known type with its fields at their offsets, no
 * more than RECV_DEPTH credits, its bytes inside the buffer (none for
 * CREDIT and FIN, a token's 32 for IDENT); the walk moves forward and ends at the buffer's end
 * or at the first frame refused, with fewer than 32 bytes left exactly
 * when it says truncated.
 */
#include <string.h>

#include "transport/rdma_wire.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void hello(const uint8_t *d, size_t n)
{
	ps_rdma_hello h;
	unsigned char mine[sizeof(h)];

	if (n > 255)
		n = 255;
	bool ok = ps_rdma_hello_ok(n ? d : NULL, n, &h);
	bool want = n >= sizeof(ps_rdma_hello) && le(d, 4) == PS_RDMA_MAGIC &&
		    le(d + 4, 2) == PS_RDMA_VERSION && le(d + 16, 4) >= 1 &&
		    le(d + 16, 4) <= 64 * PS_RDMA_RECV_DEPTH &&
		    le(d + 20, 4) == PS_RDMA_BUF_SIZE;
	FUZZ_CHECK(ok == want, "hello of %zu bytes: accepted %d, want %d", n,
		   ok, want);
	FUZZ_CHECK(!ok || h.id == le(d + 8, 8), "hello id %llu",
		   (unsigned long long)h.id);

	ps_rdma_hello m = {.magic = PS_RDMA_MAGIC,
			   .version = PS_RDMA_VERSION,
			   .id = n >= 8 ? le(d, 8) : 0,
			   .depth = PS_RDMA_RECV_DEPTH,
			   .buf_size = PS_RDMA_BUF_SIZE};
	memcpy(mine, &m, sizeof(m));
	FUZZ_CHECK(ps_rdma_hello_ok(mine, sizeof(mine), &h) && h.id == m.id,
		   "our own hello refused");
}

static void frames(const uint8_t *d, size_t n)
{
	if (n > PS_RDMA_BUF_SIZE)
		n = PS_RDMA_BUF_SIZE;
	/* a buffer of its own: ASan sees any read past the received bytes */
	unsigned char *buf = malloc(n ? n : 1);
	if (!buf)
		return;
	memcpy(buf, d, n);
	uint32_t len = (uint32_t)n, pos = 0;
	while (pos < len) {
		ps_rdma_frame f;
		uint32_t at = pos;
		int r = ps_rdma_frame_next(buf, len, &pos, &f);
		if (r == PS_RDMA_FRAME_TRUNCATED) {
			FUZZ_CHECK(len - at < 32 && pos == at,
				   "truncated with %u bytes left", len - at);
			break;
		}
		FUZZ_CHECK(len - at >= 32 && pos == at + 32,
			   "a header of %u bytes at %u", pos - at, at);
		const uint8_t *p = buf + at;
		FUZZ_CHECK(f.type == le(p, 2) && f.flags == le(p + 2, 2) &&
				   f.credits == le(p + 4, 4) &&
				   f.len == le(p + 8, 4) &&
				   f.hdr_len == le(p + 12, 4) &&
				   f.payload_len == le(p + 16, 8) &&
				   f.offset == le(p + 24, 8),
			   "the header at %u is not its bytes", at);
		bool good = f.type >= PS_RDMA_FRAME_DATA &&
			    f.type <= PS_RDMA_FRAME_IDENT &&
			    f.credits <= PS_RDMA_RECV_DEPTH &&
			    f.len <= len - pos &&
			    (f.type == PS_RDMA_FRAME_IDENT
				 ? f.len == PS_RDMA_TOKEN_LEN
				 : f.len == 0 || f.type == PS_RDMA_FRAME_DATA ||
				       f.type == PS_RDMA_FRAME_RTS);
		FUZZ_CHECK((r == PS_RDMA_FRAME_OK) == good,
			   "frame at %u (type %u, %u bytes, %u credits): %d", at,
			   f.type, f.len, f.credits, r);
		if (r != PS_RDMA_FRAME_OK)
			break;
		pos += f.len; /* on_recv: its bytes, then the next frame */
		FUZZ_CHECK(pos > at && pos <= len, "the walk went to %u", pos);
	}
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		frames(data + 1, size - 1);
	else
		hello(data + 1, size - 1);
	return 0;
}
