/*
 * bench/gate_decisions.c - cost of one gate decision (scheduling/gate.h).
 *
 *   bench_gate [--quick]
 *
 * For each gate kind, each number of pending transfers (10^2 .. 10^5) and
 * each credit window (unlimited; 4 MiB with transfers of 4 KiB .. 1 MiB),
 * the gate is filled with that many pending transfers, then driven in a
 * steady state: one ps_gate_ready, then ps_gate_next (acknowledging the
 * oldest in-flight transfer while the window is full), and an ack once
 * more than IN_FLIGHT_MAX transfers are in flight. A decision is one
 * released transfer; the time reported is wall time / decisions, so it
 * covers one ready, one next (plus the failed ones) and one ack; each
 * configuration runs REPEATS times (once with --quick) and the fastest
 * run is reported, the least disturbed by other load. The transfers are
 * generated before timing:
 *  - fifo, priority: 8 receivers, priorities uniform in [0, 1000);
 *  - counter: 8 receivers, per receiver iterations of 1024 transfers with
 *    numbers 0,0,2,2,4,4,... (pairs tie, as ps_order_normalise makes
 *    them), ready order shuffled within blocks of 8, so some transfers
 *    wait for their counter; receivers interleaved at random.
 * Prints a Markdown table. Speed is measured here, never asserted in tests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "runtime/clock.h"
#include "scheduling/gate.h"

#define RECEIVERS     8u
#define GROUP         1024u /* counter gate: transfers per iteration */
#define BLOCK         8u    /* counter gate: ready order shuffled within */
#define LIMITED       (4ull << 20)
#define MIN_BYTES     (4ull << 10)
#define MAX_BYTES     (1ull << 20)
#define IN_FLIGHT_MAX 16u
#define RING          1024u /* > any number of transfers in flight */
#define REPEATS       3

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ull;
}

static uint64_t rnd_below(uint64_t n)
{
	return rnd() % n;
}

static uint64_t rnd_bytes(void)
{
	return MIN_BYTES + rnd_below(MAX_BYTES - MIN_BYTES + 1);
}

/* Counter gate: one receiver's sequence of (iteration, number); len is a
 * multiple of BLOCK. */
static void counter_sequence(ps_xfer *seq, uint32_t len)
{
	uint32_t order[BLOCK];

	for (uint32_t b = 0; b < len; b += BLOCK) {
		for (uint32_t i = 0; i < BLOCK; i++)
			order[i] = i;
		for (uint32_t i = BLOCK - 1; i > 0; i--) {
			uint32_t j = (uint32_t)rnd_below(i + 1), t = order[i];

			order[i] = order[j];
			order[j] = t;
		}
		for (uint32_t i = 0; i < BLOCK; i++) {
			uint32_t c = b + order[i];

			seq[b + i].iteration = c / GROUP;
			seq[b + i].priority = (c % GROUP) / 2 * 2;
		}
	}
}

/* The ready sequence for one run: n transfers. */
static int make_stream(ps_gate_kind kind, uint32_t n, ps_xfer *xs)
{
	ps_xfer *per[RECEIVERS];
	uint32_t cur[RECEIVERS] = {0};
	uint32_t len = (n / RECEIVERS * 2 + GROUP) / BLOCK * BLOCK;
	int rc = 0;

	memset(per, 0, sizeof(per));
	if (kind == PS_GATE_COUNTER) {
		for (uint32_t r = 0; r < RECEIVERS; r++) {
			per[r] = calloc(len, sizeof(ps_xfer));
			if (!per[r]) {
				rc = -1;
				goto out;
			}
			counter_sequence(per[r], len);
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t r = (uint32_t)rnd_below(RECEIVERS);

		xs[i].handle = i;
		xs[i].receiver = r;
		xs[i].bytes = rnd_bytes();
		if (kind == PS_GATE_COUNTER) {
			if (cur[r] == len) {
				rc = -1;
				goto out;
			}
			xs[i].iteration = per[r][cur[r]].iteration;
			xs[i].priority = per[r][cur[r]].priority;
			cur[r]++;
		} else {
			xs[i].iteration = 0;
			xs[i].priority = (uint32_t)rnd_below(1000);
		}
	}
out:
	for (uint32_t r = 0; r < RECEIVERS; r++)
		free(per[r]);
	return rc;
}

typedef struct result {
	double ns;
	uint64_t decisions;
} result;

static int run(ps_gate_kind kind, uint64_t credit, uint32_t pending,
               uint64_t decisions, result *res_p)
{
	uint32_t n = pending + (uint32_t)(decisions + decisions / 4) + 4096;
	ps_xfer *xs = malloc((size_t)n * sizeof(*xs));
	uint64_t ring[RING];
	uint32_t head = 0, nin = 0, i = 0;
	uint64_t released = 0, t0, t1;
	ps_gate *g = NULL;
	ps_xfer x;
	int rc = -1;

	if (!xs || make_stream(kind, n, xs) != 0)
		goto out;
	if (ps_gate_create(kind, credit, RECEIVERS, &g) != PS_OK)
		goto out;
	for (; i < pending; i++)
		if (ps_gate_ready(g, &xs[i]) != PS_OK)
			goto out;
	t0 = ps_now_ns();
	while (released < decisions && i < n) {
		if (ps_gate_ready(g, &xs[i++]) != PS_OK)
			goto out;
		for (;;) {
			if (ps_gate_next(g, &x)) {
				ring[(head + nin++) % RING] = x.bytes;
				released++;
				break;
			}
			if (nin == 0)
				break; /* counter gate: waits for readies */
			ps_gate_acked(g, ring[head]);
			head = (head + 1) % RING;
			nin--;
		}
		if (nin > IN_FLIGHT_MAX) {
			ps_gate_acked(g, ring[head]);
			head = (head + 1) % RING;
			nin--;
		}
	}
	t1 = ps_now_ns();
	res_p->decisions = released;
	res_p->ns = released ? (double)(t1 - t0) / (double)released : 0;
	rc = 0;
out:
	ps_gate_destroy(&g);
	free(xs);
	return rc;
}

/* Best of reps runs. */
static int measure(ps_gate_kind kind, uint64_t credit, uint32_t pending,
                   uint64_t decisions, int reps, result *res_p)
{
	result best = {0, 0}, r;

	for (int i = 0; i < reps; i++) {
		if (run(kind, credit, pending, decisions, &r) != 0)
			return -1;
		if (i == 0 || r.ns < best.ns)
			best = r;
	}
	*res_p = best;
	return 0;
}

int main(int argc, char **argv)
{
	static const uint32_t sizes[] = {100, 1000, 10000, 100000};
	static const uint64_t credits[] = {0, LIMITED};
	uint64_t decisions = 1000000;
	int reps = REPEATS;

	for (int a = 1; a < argc; a++) {
		if (strcmp(argv[a], "--quick") == 0) {
			decisions = 20000;
			reps = 1;
		} else {
			fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
			return 2;
		}
	}
	printf("| gate | pending | credit | ns/decision | Mdecisions/s |"
	       " decisions |\n");
	printf("|---|---:|---|---:|---:|---:|\n");
	for (int k = 0; k < PS_GATE_COUNT; k++) {
		for (size_t c = 0; c < sizeof(credits) / sizeof(*credits);
		     c++) {
			for (size_t s = 0; s < sizeof(sizes) / sizeof(*sizes);
			     s++) {
				result res;

				if (measure((ps_gate_kind)k, credits[c],
				            sizes[s], decisions, reps,
				            &res) != 0) {
					fprintf(stderr, "bench_gate: run "
					                "failed\n");
					return 1;
				}
				printf("| %s | %u | %s | %.1f | %.2f | %llu "
				       "|\n",
				       ps_gate_name((ps_gate_kind)k), sizes[s],
				       credits[c] ? "4 MiB" : "unlimited",
				       res.ns, res.ns > 0 ? 1e3 / res.ns : 0,
				       (unsigned long long)res.decisions);
			}
		}
	}
	return 0;
}
