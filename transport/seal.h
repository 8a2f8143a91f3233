/*
 * transport/seal.h - security.mode = sealed: every frame encrypted and
 * authenticated with AES-256-GCM under keys derived from the job's
 * secret, which never crosses the network.
 *
 * Why not CURVE: ZeroMQ's CURVE ciphers every frame on the I/O thread
 * that owns the connection, with XSalsa20-Poly1305 and two copies per
 * frame; a node then moves 0.3-0.85 GB/s where plain TCP moves 2-5
 * (docs/benchmarks.md, "What security costs"). Sealing here runs on the
 * node's own thread with the AES instructions of the CPU (OpenSSL's
 * AES-256-GCM), one pass per byte at each end.
 *
 * The handshake. A connecting lane (a DEALER) is a PLAIN client whose
 * password is a proof: AES-256-GCM under K_hs = BLAKE2b(key = secret,
 * "ordo sealed handshake 1") of the node's token and a random 16-byte
 * connection id C, under a random nonce (psi_seal_proof_make). The
 * listening node's ZAP handler opens it (psi_seal_proof_open): only a
 * holder of the secret can make one, and the secret itself is never sent.
 * The connection is named by the token's key id and C (the ZAP user id).
 *
 * The frames. Each connection direction has its own key, K = BLAKE2b(key
 * = secret, "ordo sealed frames 1" || kid || C), and a counter that
 * starts at 1 and never repeats under that key. A message is sealed in
 * pieces: piece 0 its header, piece k its payload's k-th chunk of
 * PS_SEAL_CHUNK bytes (so the pieces of a large payload are sealed and
 * opened on several cores at once, seal_pool.h). Piece k's nonce is k
 * (4 bytes, big-endian) and the counter (8, little-endian); its
 * additional data the counter, the header's and the payload's lengths
 * and k, which fix where each piece lies. A message's header frame
 * becomes counter (8 bytes) || encrypted header || the pieces' tags (16
 * bytes each, the header's first); its payload frame, the encrypted
 * payload, the same length. The receiver opens a message only if its
 * counter is above the last it opened on that connection id and every
 * piece opens: a frame altered, cut, moved between connections or
 * replayed (on this connection, or on another with the same handshake
 * replayed) is dropped before anything decodes it.
 *
 * What it does not do: forward secrecy (whoever later learns the secret
 * can open captured traffic); bind a connection to its destination (a
 * message captured on its way to one node and replayed to another opens
 * there, and that node's protocol refuses what it did not expect).
 */
#ifndef ORDO_TRANSPORT_SEAL_H
#define ORDO_TRANSPORT_SEAL_H

#include <stddef.h>
#include <stdint.h>

#include "transport/seal_pool.h"

#define PS_SEAL_KEY_LEN   32 /* the job's secret, decoded */
#define PS_SEAL_TOKEN_LEN 32 /* a node's token, decoded */
#define PS_SEAL_CONN_LEN  16 /* a connection id */
#define PS_SEAL_CTR_LEN   8
#define PS_SEAL_TAG_LEN   16
/* what sealing adds to a header frame besides its payload's tags */
#define PS_SEAL_OVERHEAD  (PS_SEAL_CTR_LEN + PS_SEAL_TAG_LEN)
/* the PLAIN user name of a sealed handshake */
#define PS_SEAL_USER      "ordo-sealed"
/* a proof in hexadecimal, and its terminating NUL */
#define PS_SEAL_PROOF_HEX (2 * (12 + PS_SEAL_TOKEN_LEN + PS_SEAL_CONN_LEN + \
				PS_SEAL_TAG_LEN))

/* A handshake proof for token and conn into hex (PS_SEAL_PROOF_HEX + 1
 * bytes): PS_OK, or PS_EIO if the cipher failed. */
int psi_seal_proof_make(const uint8_t secret[PS_SEAL_KEY_LEN],
			const uint8_t token[PS_SEAL_TOKEN_LEN],
			const uint8_t conn[PS_SEAL_CONN_LEN], char *hex);
/* Opens a proof of len characters: PS_OK with token and conn, or
 * PS_EPROTO (not a proof made with this secret). */
int psi_seal_proof_open(const uint8_t secret[PS_SEAL_KEY_LEN],
			const char *hex, size_t len,
			uint8_t token[PS_SEAL_TOKEN_LEN],
			uint8_t conn[PS_SEAL_CONN_LEN]);

/* One direction of one connection: its key, cipher context and counter.
 * Belongs to one thread. */
typedef struct psi_seal psi_seal;

/* The key of the connection named by kid (the sender token's key id) and
 * conn. PS_OK, PS_ENOMEM or PS_EIO. */
int psi_seal_new(const uint8_t secret[PS_SEAL_KEY_LEN], uint64_t kid,
		 const uint8_t conn[PS_SEAL_CONN_LEN], psi_seal **s_p);
void psi_seal_free(psi_seal **s_p);

/* The payload's chunks, each sealed on its own (a multiple of 64). A
 * fuzzing build (PS_FUZZ, never deployed: its nodes speak only to each
 * other) makes them 1 KiB, so that inputs of a few KiB span several
 * chunks and reach the helpers at thousands of executions a second. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define PS_SEAL_CHUNK 1024
#else
#define PS_SEAL_CHUNK (256 * 1024)
#endif

/* The length of a sealed header frame, for a header of hlen bytes and a
 * payload of plen. */
size_t psi_seal_frame_len(size_t hlen, size_t plen);

/* Seals hdr (hlen bytes) and payload (plen, may be 0) under the next
 * counter: out_hdr gets psi_seal_frame_len(hlen, plen) bytes, out_payload
 * plen (it may be payload itself). pool (or NULL): the helpers that seal
 * a large payload's chunks beside the caller. PS_OK or PS_EIO. */
int psi_seal_message(psi_seal *s, psi_seal_pool *pool, const void *hdr,
		     size_t hlen, const void *payload, size_t plen,
		     uint8_t *out_hdr, uint8_t *out_payload);

/* Opens a sealed message in place: frame (flen bytes, as sealed) and
 * payload (plen). PS_OK: the header is at frame + PS_SEAL_CTR_LEN,
 * *hlen_p bytes, the payload in place. PS_EPROTO: too short or not
 * authentic (the buffers then hold garbage); PS_EAGAIN: a counter not
 * above the last opened (a replay: nothing touched). */
int psi_seal_open(psi_seal *s, psi_seal_pool *pool, uint8_t *frame,
		  size_t flen, uint8_t *payload, size_t plen, size_t *hlen_p);

/* The counter of the last message sealed or opened (0: none). */
uint64_t psi_seal_counter(const psi_seal *s);

#endif /* ORDO_TRANSPORT_SEAL_H */
