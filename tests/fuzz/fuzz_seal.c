/*
 * tests/fuzz/fuzz_seal.c - libFuzzer harness for what a sealed node
 * (security.mode = sealed, transport/seal.h) reads from a peer before
 * anything else: the handshake's proof, which its ZAP handler opens, and
 * a message's frames, which it opens before decoding them.
 *
 * Input byte 0 picks the path; the job's secret is fixed (SECRET).
 * Even: the rest is a proof (the PLAIN password). Odd: bytes 1-2 (little-
 * endian) are the header frame's length, and the rest after it is split
 * into that header frame and the payload frame; they are opened on a
 * fresh connection (kid 1, connection id CONN), once without helpers and
 * once on a pool of two.
 *
 * Oracle. A proof opens only if it is PS_SEAL_PROOF_HEX characters, and
 * then the token and connection id it gives make a proof that opens to
 * the same. A message opens the same way with and without helpers; when
 * it opens, its header lies within the frame, the counter moved to the
 * frame's, and the same message with any one bit of its frames flipped
 * does not open. Sealing the input's bytes as a header and a payload on
 * the connection, and opening them, gives them back.
 * Seeds (corpus/seal): a proof and a sealed message made with SECRET.
 */
#include <stdlib.h>
#include <string.h>

#include "ordo/error.h"
#include "transport/seal.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t SECRET[PS_SEAL_KEY_LEN] = {
    0x6f, 0x72, 0x64, 0x6f, 0x20, 0x66, 0x75, 0x7a, 0x7a, 0x20, 0x73,
    0x65, 0x63, 0x72, 0x65, 0x74};
static const uint8_t CONN[PS_SEAL_CONN_LEN] = {1, 2, 3, 4};

static psi_seal_pool *pool;

static void proof(const uint8_t *d, size_t n)
{
	uint8_t token[PS_SEAL_TOKEN_LEN], conn[PS_SEAL_CONN_LEN];
	uint8_t token2[PS_SEAL_TOKEN_LEN], conn2[PS_SEAL_CONN_LEN];
	char again[PS_SEAL_PROOF_HEX + 1];

	int rc = psi_seal_proof_open(SECRET, (const char *)d, n, token, conn);
	FUZZ_CHECK(rc == PS_OK || rc == PS_EPROTO, "proof: rc %d", rc);
	if (rc != PS_OK)
		return;
	FUZZ_CHECK(n == PS_SEAL_PROOF_HEX, "a proof of %zu characters opened",
		   n);
	FUZZ_CHECK(psi_seal_proof_make(SECRET, token, conn, again) == PS_OK &&
			   psi_seal_proof_open(SECRET, again, strlen(again),
					       token2, conn2) == PS_OK &&
			   memcmp(token, token2, sizeof(token)) == 0 &&
			   memcmp(conn, conn2, sizeof(conn)) == 0,
		   "a proof remade from an opened one does not open the same");
}

/* Opens frame/payload copies on a fresh connection; returns rc. */
static int open_copy(const uint8_t *f, size_t flen, const uint8_t *p,
		     size_t plen, psi_seal_pool *with, size_t *hlen,
		     uint64_t *counter, uint8_t *fout, uint8_t *pout)
{
	psi_seal *s;

	if (psi_seal_new(SECRET, 1, CONN, &s) != PS_OK)
		abort();
	memcpy(fout, f, flen);
	if (plen)
		memcpy(pout, p, plen);
	int rc = psi_seal_open(s, with, fout, flen, plen ? pout : NULL, plen,
			       hlen);
	*counter = psi_seal_counter(s);
	psi_seal_free(&s);
	return rc;
}

static void message(const uint8_t *d, size_t n)
{
	if (n < 2)
		return;
	size_t flen = (size_t)d[0] | (size_t)d[1] << 8;
	d += 2;
	n -= 2;
	if (flen > n)
		flen = n;
	const uint8_t *p = d + flen;
	size_t plen = n - flen, h1 = 0, h2 = 0;
	uint64_t c1, c2;
	uint8_t *f1 = malloc(flen + 1), *p1 = malloc(plen + 1),
		*f2 = malloc(flen + 1), *p2 = malloc(plen + 1);
	if (!f1 || !p1 || !f2 || !p2)
		abort();

	int rc = open_copy(d, flen, p, plen, NULL, &h1, &c1, f1, p1);
	int rc2 = open_copy(d, flen, p, plen, pool, &h2, &c2, f2, p2);
	FUZZ_CHECK(rc == rc2, "opened %d alone, %d on helpers", rc, rc2);
	FUZZ_CHECK(rc == PS_OK || rc == PS_EPROTO || rc == PS_EAGAIN,
		   "open: rc %d", rc);
	if (rc == PS_OK) {
		FUZZ_CHECK(h1 == h2 && h1 + PS_SEAL_OVERHEAD <= flen,
			   "header of %zu in a frame of %zu", h1, flen);
		FUZZ_CHECK(c1 > 0 && c1 == c2, "counter %llu",
			   (unsigned long long)c1);
		FUZZ_CHECK(memcmp(f1, f2, flen) == 0 &&
			       (plen == 0 || memcmp(p1, p2, plen) == 0),
			   "opened differently alone and on helpers");
		size_t bit = (size_t)c1 * 2654435761u % ((flen + plen) * 8);
		memcpy(f2, d, flen);
		if (plen)
			memcpy(p2, p, plen);
		uint8_t *b = bit / 8 < flen ? f2 + bit / 8
					    : p2 + (bit / 8 - flen);
		*b ^= (uint8_t)(1u << (bit % 8));
		rc = open_copy(f2, flen, p2, plen, NULL, &h1, &c1, f1, p1);
		FUZZ_CHECK(rc != PS_OK, "opened with bit %zu flipped", bit);
	}
	free(f1);
	free(p1);
	free(f2);
	free(p2);

	/* the input's bytes as a header (at most 200) and a payload */
	size_t hl = n < 200 ? n : 200, pl = n - hl;
	uint8_t *fs = malloc(psi_seal_frame_len(hl, pl)), *ps = malloc(pl + 1);
	psi_seal *tx, *rx;
	if (!fs || !ps || psi_seal_new(SECRET, 1, CONN, &tx) != PS_OK ||
	    psi_seal_new(SECRET, 1, CONN, &rx) != PS_OK)
		abort();
	FUZZ_CHECK(psi_seal_message(tx, pool, d, hl, d + hl, pl, fs, ps) ==
			   PS_OK,
		   "sealing %zu + %zu bytes failed", hl, pl);
	size_t got = 0;
	FUZZ_CHECK(psi_seal_open(rx, NULL, fs, psi_seal_frame_len(hl, pl),
				 pl ? ps : NULL, pl, &got) == PS_OK &&
			   got == hl &&
			   memcmp(fs + PS_SEAL_CTR_LEN, d, hl) == 0 &&
			   (pl == 0 || memcmp(ps, d + hl, pl) == 0),
		   "a sealed message did not open to itself");
	psi_seal_free(&tx);
	psi_seal_free(&rx);
	free(fs);
	free(ps);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!pool && psi_seal_pool_new(2, &pool) != PS_OK)
		abort();
	if (size < 1)
		return 0;
	if (data[0] % 2 == 0)
		proof(data + 1, size - 1);
	else
		message(data + 1, size - 1);
	return 0;
}
