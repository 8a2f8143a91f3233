/*
 * tests/fuzz/fuzz_wire.c - libFuzzer harness for the wire decoders
 * (proto/wire.h): what any process that reaches a node's port can send.
 *
 * The first byte picks the decoder (header, REGISTER, WELCOME, DONE, a
 * reason, a u64, a CREDIT, TIMINGS); the rest is its input. Besides ASan/UBSan,
 * the oracle is a round trip: whatever a decoder accepts, its encoder
 * writes and the decoder reads back to the same value (the header, DONE,
 * reason and u64 field by field; REGISTER's node and tensors; WELCOME's
 * counts, nodes and priorities).
 */
#include <math.h>
#include <string.h>

#include "fuzz_common.h"
#include "proto/wire.h"

static char why[512];

static void header(const uint8_t *d, size_t n)
{
	ps_wire_header h, again;
	unsigned char buf[PS_WIRE_HEADER_MAX];
	size_t len;

	if (ps_wire_header_decode(d, n, &h, why, sizeof(why)) != PS_OK)
		return;
	FUZZ_CHECK(ps_wire_header_encode(&h, buf, sizeof(buf), &len) == PS_OK,
		   "an accepted header does not encode");
	FUZZ_CHECK(ps_wire_header_decode(buf, len, &again, why,
					 sizeof(why)) == PS_OK,
		   "re-encoded header refused: %s", why);
	FUZZ_CHECK(h.version == again.version && h.type == again.type &&
			   h.job_id == again.job_id &&
			   h.sender == again.sender && h.key == again.key &&
			   h.partition == again.partition &&
			   h.iteration == again.iteration &&
			   h.payload_len == again.payload_len &&
			   h.priority == again.priority &&
			   h.piece == again.piece,
		   "header changed in a round trip");
}

static int node_eq(const ps_node_info *a, const ps_node_info *b)
{
	return a->role == b->role && a->pid == b->pid &&
	       a->transport_id == b->transport_id &&
	       strcmp(a->host, b->host) == 0 &&
	       strcmp(a->endpoint, b->endpoint) == 0;
}

static void reg(const uint8_t *d, size_t n)
{
	ps_wire_register r = {0}, again = {0};
	void *buf = NULL;
	size_t len;

	if (ps_wire_register_decode(d, n, &r, why, sizeof(why)) != PS_OK)
		return;
	FUZZ_CHECK(ps_wire_register_encode(&r, &buf, &len) == PS_OK,
		   "an accepted REGISTER does not encode");
	FUZZ_CHECK(ps_wire_register_decode(buf, len, &again, why,
					   sizeof(why)) == PS_OK,
		   "re-encoded REGISTER refused: %s", why);
	FUZZ_CHECK(node_eq(&r.self, &again.self) &&
			   r.num_tensors == again.num_tensors,
		   "REGISTER changed in a round trip");
	for (uint32_t i = 0; i < r.num_tensors; i++)
		FUZZ_CHECK(strcmp(r.tensors[i].name, again.tensors[i].name) ==
					   0 &&
				   r.tensors[i].numel == again.tensors[i].numel,
			   "tensor %u changed in a round trip", i);
	free(buf);
	ps_wire_register_clear(&r);
	ps_wire_register_clear(&again);
}

static void welcome(const uint8_t *d, size_t n)
{
	ps_wire_welcome w = {0}, again = {0};
	void *buf = NULL;
	size_t len;

	if (ps_wire_welcome_decode(d, n, &w, why, sizeof(why)) != PS_OK)
		return;
	FUZZ_CHECK(ps_wire_welcome_encode(&w, &buf, &len) == PS_OK,
		   "an accepted WELCOME does not encode");
	FUZZ_CHECK(ps_wire_welcome_decode(buf, len, &again, why,
					  sizeof(why)) == PS_OK,
		   "re-encoded WELCOME refused: %s", why);
	FUZZ_CHECK(w.your_id == again.your_id &&
			   w.num_servers == again.num_servers &&
			   w.num_workers == again.num_workers &&
			   w.num_nodes == again.num_nodes &&
			   w.start_iteration == again.start_iteration &&
			   !w.placement == !again.placement &&
			   !w.priority == !again.priority &&
			   (!w.has_sizes ||
			    (again.has_sizes &&
			     w.push_credit == again.push_credit &&
			     w.params_credit == again.params_credit &&
			     w.push_partition == again.push_partition &&
			     w.params_partition == again.params_partition)),
		   "WELCOME changed in a round trip");
	for (uint32_t i = 0; i < w.num_nodes; i++)
		FUZZ_CHECK(node_eq(&w.nodes[i], &again.nodes[i]) &&
				   w.nodes[i].id == again.nodes[i].id &&
				   w.nodes[i].rank == again.nodes[i].rank,
			   "node %u changed in a round trip", i);
	if (w.placement && w.priority)
		FUZZ_CHECK(memcmp(w.priority, again.priority,
				  w.placement->num_tensors *
					  sizeof(*w.priority)) == 0,
			   "priorities changed in a round trip");
	free(buf);
	ps_wire_welcome_clear(&w);
	ps_wire_welcome_clear(&again);
}

static int same_double(double a, double b)
{
	return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof(a)) == 0;
}

static void done(const uint8_t *d, size_t n)
{
	ps_wire_done x, y;
	void *buf = NULL;
	size_t len;

	if (ps_wire_done_decode(d, n, &x, why, sizeof(why)) != PS_OK)
		return;
	FUZZ_CHECK(ps_wire_done_encode(&x, &buf, &len) == PS_OK,
		   "an accepted DONE does not encode");
	FUZZ_CHECK(ps_wire_done_decode(buf, len, &y, why, sizeof(why)) ==
			   PS_OK,
		   "re-encoded DONE refused: %s", why);
	FUZZ_CHECK(x.iterations == y.iterations &&
			   x.bytes_pushed == y.bytes_pushed &&
			   x.bytes_received == y.bytes_received &&
			   same_double(x.seconds, y.seconds) &&
			   same_double(x.last_loss, y.last_loss) &&
			   same_double(x.wait_seconds, y.wait_seconds) &&
			   same_double(x.efficiency, y.efficiency) &&
			   same_double(x.speedup_bound, y.speedup_bound) &&
			   same_double(x.samples_per_second,
				       y.samples_per_second),
		   "DONE changed in a round trip");
	free(buf);
}

static void reason(const uint8_t *d, size_t n)
{
	char r[PS_REASON_MAX], again[PS_REASON_MAX];
	void *buf = NULL;
	size_t len;

	if (ps_wire_reason_decode(d, n, r, sizeof(r), why, sizeof(why)) !=
	    PS_OK)
		return;
	FUZZ_CHECK(strlen(r) < sizeof(r), "reason not terminated");
	FUZZ_CHECK(ps_wire_reason_encode(r, &buf, &len) == PS_OK,
		   "an accepted reason does not encode");
	FUZZ_CHECK(ps_wire_reason_decode(buf, len, again, sizeof(again), why,
					 sizeof(why)) == PS_OK &&
			   strcmp(r, again) == 0,
		   "reason changed in a round trip");
	free(buf);
}

static void u64(const uint8_t *d, size_t n)
{
	uint64_t v, again;
	void *buf = NULL;
	size_t len;

	if (ps_wire_u64_decode(d, n, &v, why, sizeof(why)) != PS_OK)
		return;
	FUZZ_CHECK(ps_wire_u64_encode(v, &buf, &len) == PS_OK &&
			   ps_wire_u64_decode(buf, len, &again, why,
					      sizeof(why)) == PS_OK &&
			   v == again,
		   "u64 changed in a round trip");
	free(buf);
}

/* A CREDIT: a header then its body, split at the header's own length
 * (the first input byte after the selector). */
static void credit(const uint8_t *d, size_t n)
{
	ps_wire_header h;
	uint64_t c;
	if (n < 1 || (size_t)d[0] + 1 > n)
		return;
	size_t hl = d[0];
	if (ps_wire_header_decode(d + 1, hl, &h, why, sizeof(why)) != PS_OK)
		return;
	if (ps_wire_credit_decode(&h, d + 1 + hl, n - 1 - hl, n & 1 ? 4096 : 0,
				  &c, why, sizeof(why)) == PS_OK)
		FUZZ_CHECK(c > 0, "a CREDIT of 0 accepted");
}

/* TIMINGS for 1..8 tensors (d[0]): what is accepted passes the checks
 * and survives a round trip bit for bit. */
static void timings(const uint8_t *d, size_t n)
{
	ps_timings x, y;
	void *buf = NULL;
	size_t len;

	if (n < 1 || ps_timings_init(&x, 1 + d[0] % 8) != PS_OK)
		return;
	FUZZ_CHECK(ps_timings_init(&y, x.ntensors) == PS_OK, "memory");
	if (ps_wire_timings_decode(d + 1, n - 1, &x, why, sizeof(why)) ==
	    PS_OK) {
		FUZZ_CHECK(ps_timings_check(&x, why, sizeof(why)) == PS_OK,
			   "accepted TIMINGS fail the checks: %s", why);
		FUZZ_CHECK(ps_wire_timings_encode(&x, &buf, &len) == PS_OK,
			   "accepted TIMINGS do not encode");
		FUZZ_CHECK(ps_wire_timings_decode(buf, len, &y, why,
						  sizeof(why)) == PS_OK &&
				   x.iterations == y.iterations &&
				   same_double(x.length_us, y.length_us) &&
				   memcmp(x.need_us, y.need_us,
					  x.ntensors * sizeof(float)) == 0 &&
				   memcmp(x.push_us, y.push_us,
					  x.ntensors * sizeof(float)) == 0,
			   "TIMINGS changed in a round trip");
		free(buf);
	}
	ps_timings_free(&x);
	ps_timings_free(&y);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const uint8_t *d = data + 1;
	size_t n = size - 1;
	switch (data[0] % 8) {
	case 0: header(d, n); break;
	case 1: reg(d, n); break;
	case 2: welcome(d, n); break;
	case 3: done(d, n); break;
	case 4: reason(d, n); break;
	case 5: u64(d, n); break;
	case 6: credit(d, n); break;
	default: timings(d, n); break;
	}
	return 0;
}
