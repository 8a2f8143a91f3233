/*
 * transport/seal.c - sealed frames (seal.h): AES-256-GCM from OpenSSL's
 * libcrypto (AES-NI/VAES where the CPU has them), keys from libsodium's
 * BLAKE2b.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <sodium.h>

#include "ordo/error.h"
#include "transport/seal.h"

#define NONCE_LEN 12
#define PROOF_LEN (NONCE_LEN + PS_SEAL_TOKEN_LEN + PS_SEAL_CONN_LEN + \
		   PS_SEAL_TAG_LEN)
#define CHUNK_MAX (1 << 30) /* EVP takes int lengths */

static const char HANDSHAKE_LABEL[] = "ordo sealed handshake 1";
static const char FRAMES_LABEL[] = "ordo sealed frames 1";

/* A connection direction is only ever sealed (a lane) or only opened
 * (the receiving table), so each context is made on first use. */
struct psi_seal {
	uint8_t key[32];
	EVP_CIPHER_CTX *enc; /* sealing, keyed once, or NULL until used */
	EVP_CIPHER_CTX *dec; /* opening, keyed once, or NULL until used */
	uint64_t counter;    /* last sealed or opened */
};

_Static_assert(PS_SEAL_PROOF_HEX == 2 * PROOF_LEN, "proof length");
_Static_assert(PS_SEAL_CHUNK % 64 == 0 && PS_SEAL_CHUNK <= CHUNK_MAX,
	       "a chunk is whole AES blocks, within what EVP takes");

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* BLAKE2b-256 keyed with the secret over label || extra. */
static void derive(const uint8_t secret[PS_SEAL_KEY_LEN], const char *label,
		   const uint8_t *extra, size_t extra_len, uint8_t key[32])
{
	crypto_generichash_state st;

	crypto_generichash_init(&st, secret, PS_SEAL_KEY_LEN, 32);
	crypto_generichash_update(&st, (const uint8_t *)label, strlen(label));
	if (extra_len)
		crypto_generichash_update(&st, extra, extra_len);
	crypto_generichash_final(&st, key, 32);
}

/* A context for AES-256-GCM with key, encrypting or decrypting. */
static EVP_CIPHER_CTX *gcm_ctx(const uint8_t key[32], int encrypt)
{
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();

	if (!c)
		return NULL;
	if (EVP_CipherInit_ex(c, EVP_aes_256_gcm(), NULL, NULL, NULL,
			      encrypt) != 1 ||
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, NONCE_LEN,
				NULL) != 1 ||
	    EVP_CipherInit_ex(c, NULL, NULL, key, NULL, encrypt) != 1) {
		EVP_CIPHER_CTX_free(c);
		return NULL;
	}
	return c;
}

/* Runs the cipher over len bytes of in into out (in place allowed). */
static int gcm_update(EVP_CIPHER_CTX *c, const uint8_t *in, size_t len,
		      uint8_t *out)
{
	while (len > 0) {
		int n = len > CHUNK_MAX ? CHUNK_MAX : (int)len, got;
		if (EVP_CipherUpdate(c, out, &got, in, n) != 1 || got != n)
			return PS_EIO;
		in += n;
		out += n;
		len -= (size_t)n;
	}
	return PS_OK;
}

static int gcm_start(EVP_CIPHER_CTX *c, const uint8_t nonce[NONCE_LEN],
		     const uint8_t *aad, int aad_len)
{
	int got;

	if (EVP_CipherInit_ex(c, NULL, NULL, NULL, nonce, -1) != 1)
		return PS_EIO;
	if (aad_len &&
	    EVP_CipherUpdate(c, NULL, &got, aad, aad_len) != 1)
		return PS_EIO;
	return PS_OK;
}

int psi_seal_proof_make(const uint8_t secret[PS_SEAL_KEY_LEN],
			const uint8_t token[PS_SEAL_TOKEN_LEN],
			const uint8_t conn[PS_SEAL_CONN_LEN], char *hex)
{
	uint8_t key[32], proof[PROOF_LEN];
	uint8_t *body = proof + NONCE_LEN;
	EVP_CIPHER_CTX *c;
	int got, rc = PS_EIO;

	derive(secret, HANDSHAKE_LABEL, NULL, 0, key);
	c = gcm_ctx(key, 1);
	sodium_memzero(key, sizeof(key));
	if (!c)
		return PS_EIO;
	randombytes_buf(proof, NONCE_LEN);
	memcpy(body, token, PS_SEAL_TOKEN_LEN);
	memcpy(body + PS_SEAL_TOKEN_LEN, conn, PS_SEAL_CONN_LEN);
	if (gcm_start(c, proof, NULL, 0) == PS_OK &&
	    gcm_update(c, body, PS_SEAL_TOKEN_LEN + PS_SEAL_CONN_LEN, body) ==
		PS_OK &&
	    EVP_CipherFinal_ex(c, body, &got) == 1 &&
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, PS_SEAL_TAG_LEN,
				body + PS_SEAL_TOKEN_LEN + PS_SEAL_CONN_LEN) ==
		1) {
		sodium_bin2hex(hex, PS_SEAL_PROOF_HEX + 1, proof, PROOF_LEN);
		rc = PS_OK;
	}
	EVP_CIPHER_CTX_free(c);
	sodium_memzero(proof, sizeof(proof));
	return rc;
}

int psi_seal_proof_open(const uint8_t secret[PS_SEAL_KEY_LEN],
			const char *hex, size_t len,
			uint8_t token[PS_SEAL_TOKEN_LEN],
			uint8_t conn[PS_SEAL_CONN_LEN])
{
	uint8_t key[32], proof[PROOF_LEN];
	uint8_t *body = proof + NONCE_LEN;
	size_t bin_len = 0;
	EVP_CIPHER_CTX *c;
	int got, rc = PS_EPROTO;

	if (len != PS_SEAL_PROOF_HEX ||
	    sodium_hex2bin(proof, sizeof(proof), hex, len, NULL, &bin_len,
			   NULL) != 0 ||
	    bin_len != PROOF_LEN)
		return PS_EPROTO;
	derive(secret, HANDSHAKE_LABEL, NULL, 0, key);
	c = gcm_ctx(key, 0);
	sodium_memzero(key, sizeof(key));
	if (!c)
		return PS_EIO;
	if (gcm_start(c, proof, NULL, 0) == PS_OK &&
	    gcm_update(c, body, PS_SEAL_TOKEN_LEN + PS_SEAL_CONN_LEN, body) ==
		PS_OK &&
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, PS_SEAL_TAG_LEN,
				body + PS_SEAL_TOKEN_LEN +
				    PS_SEAL_CONN_LEN) == 1 &&
	    EVP_CipherFinal_ex(c, body, &got) == 1) {
		memcpy(token, body, PS_SEAL_TOKEN_LEN);
		memcpy(conn, body + PS_SEAL_TOKEN_LEN, PS_SEAL_CONN_LEN);
		rc = PS_OK;
	}
	EVP_CIPHER_CTX_free(c);
	sodium_memzero(proof, sizeof(proof));
	return rc;
}

int psi_seal_new(const uint8_t secret[PS_SEAL_KEY_LEN], uint64_t kid,
		 const uint8_t conn[PS_SEAL_CONN_LEN], psi_seal **s_p)
{
	uint8_t extra[8 + PS_SEAL_CONN_LEN];
	psi_seal *s = calloc(1, sizeof(*s));

	*s_p = NULL;
	if (!s)
		return PS_ENOMEM;
	put64(extra, kid);
	memcpy(extra + 8, conn, PS_SEAL_CONN_LEN);
	derive(secret, FRAMES_LABEL, extra, sizeof(extra), s->key);
	*s_p = s;
	return PS_OK;
}

void psi_seal_free(psi_seal **s_p)
{
	psi_seal *s = *s_p;

	if (!s)
		return;
	EVP_CIPHER_CTX_free(s->enc);
	EVP_CIPHER_CTX_free(s->dec);
	sodium_memzero(s->key, sizeof(s->key));
	free(s);
	*s_p = NULL;
}

size_t psi_seal_frame_len(size_t hlen, size_t plen)
{
	size_t chunks = (plen + PS_SEAL_CHUNK - 1) / PS_SEAL_CHUNK;
	return hlen + PS_SEAL_OVERHEAD + chunks * PS_SEAL_TAG_LEN;
}

/* One message's pieces (seal.h): piece 0 the header, piece k >= 1 the
 * payload's chunk k - 1. in and out may be the same memory. */
typedef struct message {
	EVP_CIPHER_CTX *ctx; /* the connection's, for this direction */
	int encrypt;
	uint64_t counter;
	size_t hlen, plen, pieces;
	const uint8_t *hdr_in, *payload_in;
	uint8_t *hdr_out, *payload_out;
	uint8_t *tags; /* pieces x PS_SEAL_TAG_LEN */
	int failed;    /* set (atomically) by a piece that failed */
} message;

/* Seals or opens piece k of m with c (a context with the key). */
static int run_piece(EVP_CIPHER_CTX *c, const message *m, size_t k)
{
	uint8_t nonce[NONCE_LEN], aad[32];
	uint8_t *tag = m->tags + k * PS_SEAL_TAG_LEN;
	const uint8_t *in = m->hdr_in;
	uint8_t *out = m->hdr_out;
	size_t len = m->hlen;
	int got;

	if (k > 0) {
		size_t off = (k - 1) * (size_t)PS_SEAL_CHUNK;
		in = m->payload_in + off;
		out = m->payload_out + off;
		len = m->plen - off < PS_SEAL_CHUNK ? m->plen - off
						    : PS_SEAL_CHUNK;
	}
	memset(nonce, 0, NONCE_LEN);
	for (int i = 0; i < 4; i++)
		nonce[i] = (uint8_t)(k >> (8 * (3 - i)));
	put64(nonce + 4, m->counter);
	put64(aad, m->counter);
	put64(aad + 8, m->hlen);
	put64(aad + 16, m->plen);
	put64(aad + 24, k);
	if (gcm_start(c, nonce, aad, sizeof(aad)) != PS_OK ||
	    gcm_update(c, in, len, out) != PS_OK)
		return PS_EIO;
	if (m->encrypt)
		return EVP_CipherFinal_ex(c, out + len, &got) == 1 &&
			       EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG,
						   PS_SEAL_TAG_LEN, tag) == 1
			   ? PS_OK
			   : PS_EIO;
	return EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, PS_SEAL_TAG_LEN,
				   tag) == 1 &&
		       EVP_CipherFinal_ex(c, out + len, &got) == 1
		   ? PS_OK
		   : PS_EPROTO;
}

/* A piece on a helper thread (seal_pool.h): on a copy of the
 * connection's context, which the other threads only read meanwhile. */
static void piece_on_helper(void *arg, size_t k, int worker)
{
	message *m = arg;
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();

	(void)worker;
	if (!c || EVP_CIPHER_CTX_copy(c, m->ctx) != 1 ||
	    run_piece(c, m, k) != PS_OK)
		__atomic_store_n(&m->failed, 1, __ATOMIC_RELAXED);
	EVP_CIPHER_CTX_free(c);
}

/* Every piece of m (its ctx: the connection's for m's direction): on
 * the pool's helpers and this thread when the payload has two chunks or
 * more, else here. */
static int run_message(message *m, psi_seal_pool *pool)
{
	if (pool && m->pieces > 2) {
		psi_seal_pool_run(pool, piece_on_helper, m, m->pieces);
		return __atomic_load_n(&m->failed, __ATOMIC_RELAXED)
			   ? (m->encrypt ? PS_EIO : PS_EPROTO)
			   : PS_OK;
	}
	for (size_t k = 0; k < m->pieces; k++) {
		int rc = run_piece(m->ctx, m, k);
		if (rc != PS_OK)
			return rc;
	}
	return PS_OK;
}

int psi_seal_message(psi_seal *s, psi_seal_pool *pool, const void *hdr,
		     size_t hlen, const void *payload, size_t plen,
		     uint8_t *out_hdr, uint8_t *out_payload)
{
	if (s->counter == UINT64_MAX)
		return PS_EIO; /* never: 2^64 messages */
	if (!s->enc && !(s->enc = gcm_ctx(s->key, 1)))
		return PS_EIO;
	message m = {.ctx = s->enc,
		     .encrypt = 1,
		     .counter = s->counter + 1,
		     .hlen = hlen,
		     .plen = plen,
		     .pieces = 1 + (plen + PS_SEAL_CHUNK - 1) / PS_SEAL_CHUNK,
		     .hdr_in = hdr,
		     .payload_in = payload,
		     .hdr_out = out_hdr + PS_SEAL_CTR_LEN,
		     .payload_out = out_payload,
		     .tags = out_hdr + PS_SEAL_CTR_LEN + hlen};
	put64(out_hdr, m.counter);
	int rc = run_message(&m, pool);
	if (rc == PS_OK)
		s->counter = m.counter;
	return rc;
}

int psi_seal_open(psi_seal *s, psi_seal_pool *pool, uint8_t *frame,
		  size_t flen, uint8_t *payload, size_t plen, size_t *hlen_p)
{
	size_t pieces = 1 + (plen + PS_SEAL_CHUNK - 1) / PS_SEAL_CHUNK;

	if (flen < PS_SEAL_CTR_LEN + pieces * PS_SEAL_TAG_LEN)
		return PS_EPROTO;
	size_t hlen = flen - PS_SEAL_CTR_LEN - pieces * PS_SEAL_TAG_LEN;
	if (!s->dec && !(s->dec = gcm_ctx(s->key, 0)))
		return PS_EPROTO;
	message m = {.ctx = s->dec,
		     .encrypt = 0,
		     .counter = get64(frame),
		     .hlen = hlen,
		     .plen = plen,
		     .pieces = pieces,
		     .hdr_in = frame + PS_SEAL_CTR_LEN,
		     .payload_in = payload,
		     .hdr_out = frame + PS_SEAL_CTR_LEN,
		     .payload_out = payload,
		     .tags = frame + PS_SEAL_CTR_LEN + hlen};
	if (m.counter <= s->counter)
		return PS_EAGAIN;
	int rc = run_message(&m, pool);
	if (rc != PS_OK)
		return PS_EPROTO;
	s->counter = m.counter;
	*hlen_p = hlen;
	return PS_OK;
}

uint64_t psi_seal_counter(const psi_seal *s)
{
	return s->counter;
}
