/*
 * tests/transport/test_seal.c - sealed frames (transport/seal.h) and the
 * receiving side's table of connections (transport/seal_table.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ordo/error.h"
#include "transport/seal.h"
#include "transport/seal_table.h"

static const uint8_t SECRET[PS_SEAL_KEY_LEN] = {1, 2, 3, 4, 5, 6, 7, 8};
static const uint8_t OTHER[PS_SEAL_KEY_LEN] = {1, 2, 3, 4, 5, 6, 7, 9};
static const uint8_t TOKEN[PS_SEAL_TOKEN_LEN] = {42};
static const uint8_t CONN[PS_SEAL_CONN_LEN] = {7, 7, 7};

/* The handshake: a proof opens to its token and connection id with the
 * secret it was made with, and not with another, nor altered anywhere,
 * nor cut. Two proofs of the same differ (a fresh nonce each). */
static void test_proof(void **state)
{
	(void)state;
	char proof[PS_SEAL_PROOF_HEX + 1], again[PS_SEAL_PROOF_HEX + 1];
	uint8_t token[PS_SEAL_TOKEN_LEN], conn[PS_SEAL_CONN_LEN];

	assert_int_equal(psi_seal_proof_make(SECRET, TOKEN, CONN, proof),
	                 PS_OK);
	assert_int_equal(strlen(proof), PS_SEAL_PROOF_HEX);
	assert_int_equal(
	    psi_seal_proof_open(SECRET, proof, strlen(proof), token, conn),
	    PS_OK);
	assert_memory_equal(token, TOKEN, sizeof(token));
	assert_memory_equal(conn, CONN, sizeof(conn));
	/* the token is not in it in the clear */
	char token_hex[2 * PS_SEAL_TOKEN_LEN + 1];
	for (int i = 0; i < PS_SEAL_TOKEN_LEN; i++)
		snprintf(token_hex + 2 * i, 3, "%02x", TOKEN[i]);
	assert_null(strstr(proof, token_hex));
	assert_int_equal(psi_seal_proof_make(SECRET, TOKEN, CONN, again),
	                 PS_OK);
	assert_string_not_equal(proof, again);

	assert_int_equal(
	    psi_seal_proof_open(OTHER, proof, strlen(proof), token, conn),
	    PS_EPROTO);
	for (size_t i = 0; i < PS_SEAL_PROOF_HEX; i++) {
		char bad[PS_SEAL_PROOF_HEX + 1];
		memcpy(bad, proof, sizeof(bad));
		bad[i] = bad[i] == '0' ? '1' : '0';
		assert_int_equal(
		    psi_seal_proof_open(SECRET, bad, strlen(bad), token, conn),
		    PS_EPROTO);
	}
	assert_int_equal(psi_seal_proof_open(
	                     SECRET, proof, PS_SEAL_PROOF_HEX - 2, token, conn),
	                 PS_EPROTO);
	proof[3] = 'x'; /* not hexadecimal */
	assert_int_equal(
	    psi_seal_proof_open(SECRET, proof, strlen(proof), token, conn),
	    PS_EPROTO);
}

typedef struct sealed {
	uint8_t frame[256 + PS_SEAL_OVERHEAD + PS_SEAL_TAG_LEN];
	size_t flen;
	uint8_t payload[5000];
	size_t plen;
} sealed;

static void seal_one(psi_seal *s, const char *hdr, const uint8_t *payload,
                     size_t plen, sealed *m)
{
	m->flen = psi_seal_frame_len(strlen(hdr), plen);
	m->plen = plen;
	assert_int_equal(psi_seal_message(s, NULL, hdr, strlen(hdr), payload,
	                                  plen, m->frame, m->payload),
	                 PS_OK);
}

/* A message opens, in place, to what was sealed, once: header and
 * payload encrypted (neither appears in the frames), the counter rising
 * from 1; an empty payload and an empty header too. */
static void test_round_trip(void **state)
{
	(void)state;
	psi_seal *tx, *rx;
	uint8_t payload[5000];
	size_t hlen = 0;
	sealed m;

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7);
	assert_int_equal(psi_seal_new(SECRET, 99, CONN, &tx), PS_OK);
	assert_int_equal(psi_seal_new(SECRET, 99, CONN, &rx), PS_OK);
	const char *hdrs[] = {"a header of the protocol", "h", ""};
	size_t plens[] = {sizeof(payload), 0, 17};
	for (int k = 0; k < 3; k++) {
		seal_one(tx, hdrs[k], payload, plens[k], &m);
		assert_int_equal(psi_seal_counter(tx), (uint64_t)k + 1);
		if (strlen(hdrs[k]) > 1)
			assert_memory_not_equal(m.frame + PS_SEAL_CTR_LEN,
			                        hdrs[k], strlen(hdrs[k]));
		if (plens[k] > 16)
			assert_memory_not_equal(m.payload, payload, 16);
		assert_int_equal(psi_seal_open(rx, NULL, m.frame, m.flen,
		                               m.payload, m.plen, &hlen),
		                 PS_OK);
		assert_int_equal(hlen, strlen(hdrs[k]));
		assert_memory_equal(m.frame + PS_SEAL_CTR_LEN, hdrs[k],
		                    strlen(hdrs[k]));
		assert_memory_equal(m.payload, payload, plens[k]);
		assert_int_equal(psi_seal_counter(rx), (uint64_t)k + 1);
	}
	psi_seal_free(&tx);
	psi_seal_free(&rx);
	assert_null(rx);
}

/* A payload of many chunks: sealed on a pool's helpers and opened on
 * none, and the other way round, to what was sealed; a byte altered in
 * any chunk, two chunks swapped (with their tags), or the payload cut by
 * a chunk do not open, on a pool or not. */
static void test_chunks(void **state)
{
	(void)state;
	const size_t plen = 4 * PS_SEAL_CHUNK + 123;
	const char *hdr = "a header";
	psi_seal_pool *pool;
	psi_seal *tx, *rx;
	uint8_t *payload = malloc(plen), *sealed_payload = malloc(plen),
	        *work = malloc(plen);
	size_t flen = psi_seal_frame_len(strlen(hdr), plen), hlen = 0;
	uint8_t frame[64 + PS_SEAL_OVERHEAD + 5 * PS_SEAL_TAG_LEN],
	    fwork[sizeof(frame)];

	assert_non_null(payload);
	assert_non_null(sealed_payload);
	assert_non_null(work);
	assert_int_equal(flen,
	                 strlen(hdr) + PS_SEAL_OVERHEAD + 5 * PS_SEAL_TAG_LEN);
	for (size_t i = 0; i < plen; i++)
		payload[i] = (uint8_t)(i * 31 + (i >> 12));
	assert_int_equal(psi_seal_pool_new(2, &pool), PS_OK);
	assert_int_equal(psi_seal_pool_helpers(pool), 2);
	psi_seal_pool *sealers[2] = {pool, NULL}, *openers[2] = {NULL, pool};
	for (int way = 0; way < 2; way++) {
		assert_int_equal(psi_seal_new(SECRET, 1, CONN, &tx), PS_OK);
		assert_int_equal(psi_seal_new(SECRET, 1, CONN, &rx), PS_OK);
		assert_int_equal(psi_seal_message(tx, sealers[way], hdr,
		                                  strlen(hdr), payload, plen,
		                                  frame, sealed_payload),
		                 PS_OK);
		assert_memory_not_equal(sealed_payload + 3 * PS_SEAL_CHUNK,
		                        payload + 3 * PS_SEAL_CHUNK, 64);
		/* altered in each chunk: refused, the counter unmoved */
		for (size_t k = 0; k < 5; k++) {
			memcpy(fwork, frame, flen);
			memcpy(work, sealed_payload, plen);
			work[k * PS_SEAL_CHUNK + 7] ^= 4;
			assert_int_equal(psi_seal_open(rx, openers[way], fwork,
			                               flen, work, plen, &hlen),
			                 PS_EPROTO);
		}
		/* chunks 1 and 2 swapped, with their tags */
		memcpy(fwork, frame, flen);
		memcpy(work, sealed_payload, plen);
		memcpy(work + PS_SEAL_CHUNK, sealed_payload + 2 * PS_SEAL_CHUNK,
		       PS_SEAL_CHUNK);
		memcpy(work + 2 * PS_SEAL_CHUNK, sealed_payload + PS_SEAL_CHUNK,
		       PS_SEAL_CHUNK);
		uint8_t *tags = fwork + PS_SEAL_CTR_LEN + strlen(hdr);
		memcpy(tags + 2 * PS_SEAL_TAG_LEN,
		       frame + PS_SEAL_CTR_LEN + strlen(hdr) +
		           3 * PS_SEAL_TAG_LEN,
		       PS_SEAL_TAG_LEN);
		memcpy(tags + 3 * PS_SEAL_TAG_LEN,
		       frame + PS_SEAL_CTR_LEN + strlen(hdr) +
		           2 * PS_SEAL_TAG_LEN,
		       PS_SEAL_TAG_LEN);
		assert_int_equal(psi_seal_open(rx, openers[way], fwork, flen,
		                               work, plen, &hlen),
		                 PS_EPROTO);
		/* the last chunk cut off, its tag with it */
		memcpy(fwork, frame, flen);
		memcpy(work, sealed_payload, plen);
		assert_int_equal(psi_seal_open(rx, openers[way], fwork,
		                               flen - PS_SEAL_TAG_LEN, work,
		                               4 * PS_SEAL_CHUNK, &hlen),
		                 PS_EPROTO);
		assert_int_equal(psi_seal_counter(rx), 0);
		/* whole: opens */
		memcpy(work, sealed_payload, plen);
		assert_int_equal(psi_seal_open(rx, openers[way], frame, flen,
		                               work, plen, &hlen),
		                 PS_OK);
		assert_int_equal(hlen, strlen(hdr));
		assert_memory_equal(frame + PS_SEAL_CTR_LEN, hdr, hlen);
		assert_memory_equal(work, payload, plen);
		psi_seal_free(&tx);
		psi_seal_free(&rx);
	}
	psi_seal_pool_free(&pool);
	assert_null(pool);
	free(payload);
	free(sealed_payload);
	free(work);
}

/* Nothing opens that was altered (any bit of counter, header, tag or
 * payload), cut, moved between header and payload, sealed for another
 * connection or with another secret; a replay or an older message is
 * refused as such, and none of these moves the counter. */
static void test_refusals(void **state)
{
	(void)state;
	psi_seal *tx, *rx, *other_conn, *other_secret, *other_kid;
	uint8_t payload[64], conn2[PS_SEAL_CONN_LEN] = {8};
	size_t hlen = 0;
	sealed m, c;

	memset(payload, 0xab, sizeof(payload));
	assert_int_equal(psi_seal_new(SECRET, 5, CONN, &tx), PS_OK);
	assert_int_equal(psi_seal_new(SECRET, 5, CONN, &rx), PS_OK);
	assert_int_equal(psi_seal_new(SECRET, 5, conn2, &other_conn), PS_OK);
	assert_int_equal(psi_seal_new(OTHER, 5, CONN, &other_secret), PS_OK);
	assert_int_equal(psi_seal_new(SECRET, 6, CONN, &other_kid), PS_OK);
	seal_one(tx, "header!", payload, sizeof(payload), &m);

	for (size_t byte = 0; byte < m.flen + m.plen; byte++) {
		c = m;
		uint8_t *p =
		    byte < m.flen ? &c.frame[byte] : &c.payload[byte - m.flen];
		*p ^= 0x10;
		int rc = psi_seal_open(rx, NULL, c.frame, c.flen, c.payload,
		                       c.plen, &hlen);
		/* a counter made lower reads as a replay */
		assert_true(rc == PS_EPROTO ||
		            (byte < PS_SEAL_CTR_LEN && rc == PS_EAGAIN));
		assert_int_equal(psi_seal_counter(rx), 0);
	}
	c = m; /* the payload cut short by a byte */
	assert_int_equal(psi_seal_open(rx, NULL, c.frame, c.flen, c.payload + 1,
	                               c.plen - 1, &hlen),
	                 PS_EPROTO);
	c = m; /* the payload frame dropped */
	assert_int_equal(
	    psi_seal_open(rx, NULL, c.frame, c.flen, NULL, 0, &hlen),
	    PS_EPROTO);
	c = m; /* a frame too short to be sealed */
	assert_int_equal(psi_seal_open(rx, NULL, c.frame, PS_SEAL_OVERHEAD - 1,
	                               NULL, 0, &hlen),
	                 PS_EPROTO);
	psi_seal *wrong[] = {other_conn, other_secret, other_kid};
	for (int k = 0; k < 3; k++) {
		c = m;
		assert_int_equal(psi_seal_open(wrong[k], NULL, c.frame, c.flen,
		                               c.payload, c.plen, &hlen),
		                 PS_EPROTO);
	}
	c = m;
	assert_int_equal(
	    psi_seal_open(rx, NULL, c.frame, c.flen, c.payload, c.plen, &hlen),
	    PS_OK);
	c = m; /* the same again */
	assert_int_equal(
	    psi_seal_open(rx, NULL, c.frame, c.flen, c.payload, c.plen, &hlen),
	    PS_EAGAIN);
	sealed second, third;
	seal_one(tx, "two", payload, 3, &second);
	seal_one(tx, "three", payload, 3, &third);
	assert_int_equal(psi_seal_open(rx, NULL, third.frame, third.flen,
	                               third.payload, third.plen, &hlen),
	                 PS_OK); /* a gap (a message lost) is fine */
	assert_int_equal(psi_seal_open(rx, NULL, second.frame, second.flen,
	                               second.payload, second.plen, &hlen),
	                 PS_EAGAIN); /* but not an older one after */
	assert_int_equal(psi_seal_counter(rx), 3);
	psi_seal_free(&tx);
	psi_seal_free(&rx);
	psi_seal_free(&other_conn);
	psi_seal_free(&other_secret);
	psi_seal_free(&other_kid);
}

static void uid_of(uint64_t kid, uint32_t n, char uid[49])
{
	snprintf(uid, 49, "%016llx%08x%024x", (unsigned long long)kid,
	         n * 2654435761u, n);
}

/* The table: a connection keeps its key and counter between messages; a
 * user id of another form is refused; past cap the connection seen first
 * is forgotten (its counter starts again), the others kept, found under
 * any pattern of collisions (a model checks 5000 random steps). */
static void test_table(void **state)
{
	(void)state;
	psi_seal_table *t;
	psi_seal *s, *again, *tx;
	char uid[49];
	size_t hlen = 0;
	sealed m;

	assert_int_equal(psi_seal_table_new(SECRET, 3, &t), PS_OK);
	assert_int_equal(psi_seal_table_get(t, "0123", &s), PS_EPROTO);
	assert_int_equal(psi_seal_table_get(t, NULL, &s), PS_EPROTO);
	memset(uid, 'z', 48);
	uid[48] = '\0';
	assert_int_equal(psi_seal_table_get(t, uid, &s), PS_EPROTO);
	assert_int_equal(psi_seal_table_size(t), 0);

	/* the key is the sender's: kid 0x1234..., connection id of 1 */
	uid_of(0x1234, 1, uid);
	assert_int_equal(psi_seal_table_get(t, uid, &s), PS_OK);
	uint8_t conn[PS_SEAL_CONN_LEN];
	for (int i = 0; i < PS_SEAL_CONN_LEN; i++)
		sscanf(uid + 16 + 2 * i, "%2hhx", &conn[i]);
	assert_int_equal(psi_seal_new(SECRET, 0x1234, conn, &tx), PS_OK);
	seal_one(tx, "hello", NULL, 0, &m);
	assert_int_equal(
	    psi_seal_open(s, NULL, m.frame, m.flen, NULL, 0, &hlen), PS_OK);
	assert_int_equal(psi_seal_table_get(t, uid, &again), PS_OK);
	assert_ptr_equal(again, s);
	for (uint32_t n = 2; n <= 4; n++) { /* 4 connections, cap 3 */
		char u[49];
		uid_of(0x1234, n, u);
		assert_int_equal(psi_seal_table_get(t, u, &s), PS_OK);
	}
	assert_int_equal(psi_seal_table_size(t), 3);
	assert_int_equal(psi_seal_table_get(t, uid, &s), PS_OK);
	assert_int_equal(psi_seal_counter(s), 0); /* forgotten, made again */
	psi_seal_free(&tx);
	psi_seal_table_free(&t);
	assert_null(t);

	/* a model: which of 40 ids the table should hold, cap 16 (32 index
	 * slots), ids that collide (the index hashes the connection id's
	 * first bytes: 24 homes for 40 ids, in runs), each given a counter
	 * to tell them apart */
	assert_int_equal(psi_seal_table_new(SECRET, 16, &t), PS_OK);
	uint32_t fifo[16], head = 0, held = 0;
	uint64_t seen_counter[40] = {0};
	srand(7);
	for (int step = 0; step < 5000; step++) {
		uint32_t n = (uint32_t)rand() % 40;
		char u[49];
		snprintf(u, sizeof(u), "%016x%02x%030x", 5u, n % 24, n);
		int in = 0;
		for (uint32_t k = 0; k < held; k++)
			in |= fifo[(head + k) % 16] == n;
		assert_int_equal(psi_seal_table_get(t, u, &s), PS_OK);
		if (in) {
			assert_int_equal(psi_seal_counter(s), seen_counter[n]);
		} else {
			assert_int_equal(psi_seal_counter(s), 0);
			if (held == 16) {
				head = (head + 1) % 16;
				held--;
			}
			fifo[(head + held++) % 16] = n;
		}
		/* open one message on it, so its counter tells it apart */
		uint8_t c[PS_SEAL_CONN_LEN];
		for (int i = 0; i < PS_SEAL_CONN_LEN; i++)
			sscanf(u + 16 + 2 * i, "%2hhx", &c[i]);
		assert_int_equal(psi_seal_new(SECRET, 5, c, &tx), PS_OK);
		for (uint64_t k = 0; k <= psi_seal_counter(s); k++)
			seal_one(tx, "x", NULL, 0, &m);
		assert_int_equal(
		    psi_seal_open(s, NULL, m.frame, m.flen, NULL, 0, &hlen),
		    PS_OK);
		seen_counter[n] = psi_seal_counter(s);
		psi_seal_free(&tx);
		assert_int_equal(psi_seal_table_size(t), held);
	}
	psi_seal_table_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_proof),  cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_chunks), cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
