/*
 * bench/seal_rate.c - how fast security.mode = sealed seals and opens one
 * message (transport/seal.h), by payload size and helper threads.
 *
 *   bench_seal_rate [--sizes 256K,1M,4M] [--helpers 0,1,3] [--messages N]
 *
 * For each size and number of helpers (0: the caller alone; the transport
 * uses up to 3, one fewer than the machine's cores), seals N messages
 * (default 200, after 20 not timed) with a 64-byte header into a frame
 * and a payload buffer, and opens each in place with the other end's key,
 * as a node does. Prints a Markdown table: the median microseconds of one
 * seal and one open, and the payload's GB/s at that median. The buffers
 * are reused, so they stay in cache: this is the cipher's rate on warm
 * memory, the best a node can get; in a job the payload comes from, and
 * goes to, the kernel's copies. Speed is measured here, never asserted in
 * tests.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ordo/error.h"
#include "runtime/clock.h"
#include "transport/seal.h"

#define LIST_MAX 16
#define WARMUP   20
#define HDR_LEN  64

/* "256K", "1M", "4096": bytes, or 0 when s is not a size. */
static size_t size_arg(const char *s)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return 0;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	return *end ? 0 : (size_t)v;
}

/* A comma-separated list into out (at most LIST_MAX); the count, or -1. */
static int list_arg(const char *arg, size_t *out, int sizes)
{
	char buf[256];
	int n = 0;

	if (strlen(arg) >= sizeof(buf))
		return -1;
	strcpy(buf, arg);
	for (char *save, *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *end;
		if (n == LIST_MAX)
			return -1;
		if (sizes) {
			out[n] = size_arg(tok);
			if (!out[n])
				return -1;
		} else {
			unsigned long v = strtoul(tok, &end, 10);
			if (*end || end == tok || v > 64)
				return -1;
			out[n] = v;
		}
		n++;
	}
	return n > 0 ? n : -1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static uint64_t median(uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

/* One row: seal and open `messages` messages of plen bytes. PS_OK, or an
 * error with the reason printed. */
static int measure(size_t plen, int helpers, int messages)
{
	uint8_t secret[PS_SEAL_KEY_LEN], conn[PS_SEAL_CONN_LEN], hdr[HDR_LEN];
	psi_seal *tx = NULL, *rx = NULL;
	psi_seal_pool *pool = NULL;
	size_t flen = psi_seal_frame_len(HDR_LEN, plen), hlen;
	uint8_t *payload = malloc(plen), *frame = malloc(flen),
		*sealed = malloc(plen);
	uint64_t *seal_ns = calloc((size_t)messages, sizeof(uint64_t));
	uint64_t *open_ns = calloc((size_t)messages, sizeof(uint64_t));
	int rc = PS_ENOMEM;

	memset(secret, 0x5a, sizeof(secret));
	memset(conn, 0xc3, sizeof(conn));
	memset(hdr, 0x11, sizeof(hdr));
	if (!payload || !frame || !sealed || !seal_ns || !open_ns)
		goto out;
	for (size_t i = 0; i < plen; i++)
		payload[i] = (uint8_t)(i * 131u);
	if ((rc = psi_seal_new(secret, 1, conn, &tx)) != PS_OK ||
	    (rc = psi_seal_new(secret, 1, conn, &rx)) != PS_OK ||
	    (helpers > 0 &&
	     (rc = psi_seal_pool_new(helpers, &pool)) != PS_OK))
		goto out;
	for (int i = -WARMUP; i < messages; i++) {
		uint64_t t0 = ps_now_ns();
		rc = psi_seal_message(tx, pool, hdr, HDR_LEN, payload, plen,
				      frame, sealed);
		uint64_t t1 = ps_now_ns();
		if (rc == PS_OK)
			rc = psi_seal_open(rx, pool, frame, flen, sealed, plen,
					   &hlen);
		uint64_t t2 = ps_now_ns();
		if (rc != PS_OK || hlen != HDR_LEN ||
		    memcmp(sealed, payload, plen) != 0) {
			fprintf(stderr, "bench_seal_rate: a %zu-byte message "
				"did not open as sealed\n", plen);
			rc = PS_EIO;
			goto out;
		}
		if (i >= 0) {
			seal_ns[i] = t1 - t0;
			open_ns[i] = t2 - t1;
		}
	}
	uint64_t s = median(seal_ns, messages), o = median(open_ns, messages);
	printf("| %zu %s | %d | %.1f | %.1f | %.2f | %.2f |\n",
	       plen % 1024 ? plen : plen >> 10, plen % 1024 ? "B" : "KiB",
	       helpers, s / 1e3, o / 1e3, (double)plen / (double)s,
	       (double)plen / (double)o);
out:
	if (rc == PS_ENOMEM)
		fprintf(stderr, "bench_seal_rate: out of memory for %zu "
			"bytes\n", plen);
	psi_seal_pool_free(&pool);
	psi_seal_free(&tx);
	psi_seal_free(&rx);
	free(payload);
	free(frame);
	free(sealed);
	free(seal_ns);
	free(open_ns);
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: bench_seal_rate [--sizes 256K,1M,4M] "
		   "[--helpers 0,1,3] [--messages N]\n"
		   "Times sealing and opening one message of each size "
		   "(security.mode = sealed) with that\nmany helper threads "
		   "beside the caller; prints a Markdown table.\n");
}

int main(int argc, char **argv)
{
	size_t sizes[LIST_MAX] = {256 << 10, 1 << 20, 4 << 20};
	size_t helpers[LIST_MAX] = {0, 1, 3};
	int nsizes = 3, nhelpers = 3, messages = 200;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		}
		if (!v) {
			fprintf(stderr, "bench_seal_rate: %s needs a value "
				"(or is not an option)\n", a);
			usage(stderr);
			return 2;
		}
		if (!strcmp(a, "--sizes"))
			nsizes = list_arg(v, sizes, 1);
		else if (!strcmp(a, "--helpers"))
			nhelpers = list_arg(v, helpers, 0);
		else if (!strcmp(a, "--messages"))
			messages = atoi(v);
		else {
			fprintf(stderr, "bench_seal_rate: no option %s\n", a);
			usage(stderr);
			return 2;
		}
		if (nsizes < 0 || nhelpers < 0 || messages < 1 ||
		    messages > 1000000) {
			fprintf(stderr, "bench_seal_rate: bad %s '%s' (sizes "
				"like 256K,1M; helpers 0-64; messages "
				"1-1000000)\n", a, v);
			return 2;
		}
		i++;
	}
	printf("| payload | helpers | seal us | open us | seal GB/s | "
	       "open GB/s |\n|---:|---:|---:|---:|---:|---:|\n");
	for (int s = 0; s < nsizes; s++)
		for (int h = 0; h < nhelpers; h++)
			if (measure(sizes[s], (int)helpers[h], messages) !=
			    PS_OK)
				return 1;
	printf("\nMedian of %d messages each (after %d not timed), a "
	       "64-byte header, buffers reused (warm).\n", messages, WARMUP);
	return 0;
}
