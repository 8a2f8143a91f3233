/*
 * tests/fuzz/make_seeds.c - writes the wire harness's seed corpus:
 *   make_seeds DIR
 * One file per message kind, each a real encoding (proto/wire.h) behind
 * fuzz_wire.c's selector byte: headers of several types, a REGISTER with
 * tensors, a WELCOME with nodes, a placement (fused and cut partitions)
 * and priorities, a DONE, a reason, a u64 and CREDITs. Run once when the
 * wire format changes; the files are committed (corpus/wire).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"

static const char *dir;

static void put(const char *name, unsigned char sel, const void *p, size_t n)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fputc(sel, f) == EOF || fwrite(p, 1, n, f) != n ||
	    fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	unsigned char hb[PS_WIRE_HEADER_MAX], cb[PS_WIRE_HEADER_MAX + 64];
	size_t len, blen;
	void *buf;

	if (argc != 2) {
		fprintf(stderr, "usage: make_seeds DIR\n");
		return 2;
	}
	dir = argv[1];

	ps_wire_header h = {.version = PS_WIRE_VERSION, .type = PS_MSG_PUSH,
			    .job_id = 77, .sender = 5, .key = 3,
			    .partition = 9, .iteration = 12,
			    .payload_len = 4096, .priority = -2};
	ps_wire_header_encode(&h, hb, sizeof(hb), &len);
	put("header-push", 0, hb, len);
	h.piece = 3, h.has_lr = 1, h.lr = 0.5; /* a piece, a learning rate */
	ps_wire_header_encode(&h, hb, sizeof(hb), &len);
	put("header-push-piece", 0, hb, len);
	h.piece = 0, h.has_lr = 0;
	h.type = PS_MSG_REGISTER, h.job_id = 0, h.payload_len = 0;
	ps_wire_header_encode(&h, hb, sizeof(hb), &len);
	put("header-register", 0, hb, len);

	ps_tensor_desc t[3] = {{"conv1.weight", 1728}, {"conv1.bias", 64},
			       {"fc.weight", 10000}};
	ps_wire_register r = {.self = {.role = PS_ROLE_WORKER, .pid = 4242,
				       .transport_id = 0x1234,
				       .host = "127.0.0.1",
				       .endpoint = "tcp://127.0.0.1:40123"},
			      .num_tensors = 3, .tensors = t};
	ps_wire_register_encode(&r, &buf, &blen);
	put("register", 1, buf, blen);
	free(buf);

	ps_node_info nodes[3] = {
	    {.id = 0, .role = PS_ROLE_SCHEDULER, .host = "127.0.0.1",
	     .endpoint = "tcp://127.0.0.1:1"},
	    {.id = 1, .role = PS_ROLE_SERVER, .pid = 2, .host = "10.0.0.2",
	     .endpoint = "tcp://10.0.0.2:2"},
	    {.id = 2, .role = PS_ROLE_WORKER, .pid = 3, .host = "10.0.0.3",
	     .endpoint = "rdma://10.0.0.3:3"}};
	ps_placement *pl = NULL;
	if (ps_placement_compute(t, 3, 4096, 1, 1, 0, &pl) != PS_OK)
		return 1;
	uint32_t prio[3] = {2, 1, 0};
	ps_wire_welcome w = {.your_id = 2, .num_servers = 1, .num_workers = 1,
			     .num_nodes = 3, .nodes = nodes, .placement = pl,
			     .priority = prio, .start_iteration = 10,
			     .has_sizes = 1, .push_credit = 8192,
			     .params_credit = 0, .push_partition = 1024,
			     .params_partition = 4096};
	ps_wire_welcome_encode(&w, &buf, &blen);
	put("welcome", 2, buf, blen);
	free(buf);
	w.placement = NULL, w.priority = NULL;
	ps_wire_welcome_encode(&w, &buf, &blen);
	put("welcome-no-placement", 2, buf, blen);
	free(buf);
	ps_placement_free(&pl);

	ps_wire_done d = {.iterations = 10, .seconds = 1.5,
			  .bytes_pushed = 1 << 20, .bytes_received = 1 << 21,
			  .last_loss = 0.25, .efficiency = 0.9,
			  .samples_per_second = 1234.5};
	ps_wire_done_encode(&d, &buf, &blen);
	put("done", 3, buf, blen);
	free(buf);
	ps_wire_reason_encode("worker 2 (pid 3) silent for 5000 ms", &buf,
			      &blen);
	put("reason", 4, buf, blen);
	free(buf);
	ps_wire_u64_encode(1 << 20, &buf, &blen);
	put("u64", 5, buf, blen);

	/* CREDIT: header length, header, body */
	h.type = PS_MSG_CREDIT, h.sender = 0, h.job_id = 77;
	h.payload_len = blen;
	ps_wire_header_encode(&h, hb, sizeof(hb), &len);
	cb[0] = (unsigned char)len;
	memcpy(cb + 1, hb, len);
	memcpy(cb + 1 + len, buf, blen);
	put("credit", 6, cb, 1 + len + blen);
	free(buf);

	/* TIMINGS of 3 tensors (the harness's tensor-count byte first) */
	ps_timings tm;
	if (ps_timings_init(&tm, 3) != PS_OK)
		return 1;
	tm.iterations = 5;
	tm.length_us = 900;
	tm.need_us[0] = 0;
	tm.need_us[1] = 10;
	tm.push_us[0] = 800;
	tm.push_us[1] = 500;
	ps_wire_timings_encode(&tm, &buf, &blen);
	cb[0] = 2; /* 1 + 2 % 8 tensors */
	if (blen + 1 > sizeof(cb))
		return 1;
	memcpy(cb + 1, buf, blen);
	put("timings", 7, cb, 1 + blen);
	free(buf);
	ps_timings_free(&tm);
	return 0;
}
