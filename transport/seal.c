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

struct psi_seal {
	EVP_CIPHER_CTX *enc; /* sealing, keyed once */
	EVP_CIPHER_CTX *dec; /* opening, keyed once */
	uint64_t counter;    /* last sealed or opened */
};

_Static_assert(PS_SEAL_PROOF_HEX == 2 * PROOF_LEN, "proof length");

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
	uint8_t extra[8 + PS_SEAL_CONN_LEN], key[32];
	psi_seal *s = calloc(1, sizeof(*s));

	*s_p = NULL;
	if (!s)
		return PS_ENOMEM;
	put64(extra, kid);
	memcpy(extra + 8, conn, PS_SEAL_CONN_LEN);
	derive(secret, FRAMES_LABEL, extra, sizeof(extra), key);
	s->enc = gcm_ctx(key, 1);
	s->dec = gcm_ctx(key, 0);
	sodium_memzero(key, sizeof(key));
	if (!s->enc || !s->dec) {
		psi_seal_free(&s);
		return PS_EIO;
	}
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
	free(s);
	*s_p = NULL;
}

/* The nonce and additional data of a message: the counter (which is the
 * nonce's last 8 bytes), the header's and the payload's lengths. */
static void message_params(uint64_t counter, size_t hlen, size_t plen,
			   uint8_t nonce[NONCE_LEN], uint8_t aad[24])
{
	memset(nonce, 0, NONCE_LEN);
	put64(nonce + NONCE_LEN - 8, counter);
	put64(aad, counter);
	put64(aad + 8, hlen);
	put64(aad + 16, plen);
}

int psi_seal_message(psi_seal *s, const void *hdr, size_t hlen,
		     const void *payload, size_t plen, uint8_t *out_hdr,
		     uint8_t *out_payload)
{
	uint8_t nonce[NONCE_LEN], aad[24];
	uint8_t *ct = out_hdr + PS_SEAL_CTR_LEN;
	int got;

	if (s->counter == UINT64_MAX)
		return PS_EIO; /* never: 2^64 messages */
	uint64_t counter = s->counter + 1;
	message_params(counter, hlen, plen, nonce, aad);
	put64(out_hdr, counter);
	if (gcm_start(s->enc, nonce, aad, sizeof(aad)) != PS_OK ||
	    gcm_update(s->enc, hdr, hlen, ct) != PS_OK ||
	    gcm_update(s->enc, payload, plen, out_payload) != PS_OK ||
	    EVP_CipherFinal_ex(s->enc, ct + hlen, &got) != 1 ||
	    EVP_CIPHER_CTX_ctrl(s->enc, EVP_CTRL_GCM_GET_TAG, PS_SEAL_TAG_LEN,
				ct + hlen) != 1)
		return PS_EIO;
	s->counter = counter;
	return PS_OK;
}

int psi_seal_open(psi_seal *s, uint8_t *frame, size_t flen,
		  uint8_t *payload, size_t plen)
{
	uint8_t nonce[NONCE_LEN], aad[24];
	int got;

	if (flen < PS_SEAL_OVERHEAD)
		return PS_EPROTO;
	size_t hlen = flen - PS_SEAL_OVERHEAD;
	uint8_t *ct = frame + PS_SEAL_CTR_LEN;
	uint64_t counter = get64(frame);
	if (counter <= s->counter)
		return PS_EAGAIN;
	message_params(counter, hlen, plen, nonce, aad);
	if (gcm_start(s->dec, nonce, aad, sizeof(aad)) != PS_OK ||
	    gcm_update(s->dec, ct, hlen, ct) != PS_OK ||
	    gcm_update(s->dec, payload, plen, payload) != PS_OK ||
	    EVP_CIPHER_CTX_ctrl(s->dec, EVP_CTRL_GCM_SET_TAG, PS_SEAL_TAG_LEN,
				ct + hlen) != 1 ||
	    EVP_CipherFinal_ex(s->dec, ct + hlen, &got) != 1)
		return PS_EPROTO;
	s->counter = counter;
	return PS_OK;
}

uint64_t psi_seal_counter(const psi_seal *s)
{
	return s->counter;
}
