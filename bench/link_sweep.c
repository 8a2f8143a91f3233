/*
 * bench/link_sweep.c - measures the real transport for ps-sim's link model.
 *
 *   bench_link_sweep [--sizes 1K,16K,256K,4M] [--concurrency 1,2,4,8]
 *                    [--reps 20] [--transport tcp|rdma] [--host ADDR]
 *                    [--out SWEEP.csv]
 *
 * Two transport instances (the ZeroMQ backend by default) on ADDR
 * (default 127.0.0.1), in one thread (the backends' threads move the
 * bytes): for each message size
 * m and concurrency c, the sender hands c messages of m bytes to the
 * transport at once, the receiver takes all c and answers with one empty
 * message; the time from the first send to that answer is one sample. The
 * median of --reps samples (after one warm-up) is written as a CSV row
 *     bytes,concurrency,us,reps
 * which `ps-sim --fit SWEEP.csv` (sim/fit.h) turns into link.latency_us,
 * link.bandwidth_gbps and link.gamma. The answer's own fixed cost is part
 * of a: the model's a is what a message costs end to end. To fit shaped
 * links (tc/netem), run it between two hosts or namespaces on those links;
 * any tool that writes the same columns will do.
 *
 * --transport rdma needs a build configured with -DPS_WITH_RDMA=ON and
 * --host set to the IPv4 address an RDMA device's RoCE v2 GID carries
 * (ps-rdma-devices lists them; rdma_cm cannot use loopback): both
 * instances then run on that device, and the sweep fits ps-sim's rdma link
 * model (link.model = rdma, link.fit_file). Where the transport cannot be
 * had, it says why and exits 1. bench/perftest_sweep.py turns perftest's
 * ib_send_lat/ib_write_lat and ib_write_bw output into the same CSV.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "transport/transport.h"

#define MAX_LIST 32

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int parse_list(const char *s, uint64_t *v, int sizes)
{
	int n = 0;
	char buf[512], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok && n < MAX_LIST;
	     tok = strtok_r(NULL, ",", &save)) {
		char *end;
		double d = strtod(tok, &end);
		if (sizes && (*end == 'K' || *end == 'k'))
			d *= 1024, end++;
		else if (sizes && (*end == 'M' || *end == 'm'))
			d *= 1024 * 1024, end++;
		if (end == tok || *end || d < 1 || d > 1024.0 * 1024 * 1024)
			return -1;
		v[n++] = (uint64_t)d;
	}
	return n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int one_sample(ps_transport *a, ps_transport *b, ps_peer to_b,
		      ps_peer to_a, void *buf, uint64_t m, uint64_t c,
		      double *us_p)
{
	static const char hdr[8] = "sweep";
	double t0 = now_us();
	ps_msg *msg = NULL;
	int rc;

	for (uint64_t i = 0; i < c; i++) {
		rc = ps_transport_send(a, to_b, hdr, sizeof(hdr), buf, m, NULL,
				       NULL);
		if (rc != PS_OK)
			return rc;
	}
	for (uint64_t i = 0; i < c; i++) {
		rc = ps_transport_recv(b, 10000, &msg);
		if (rc != PS_OK)
			return rc;
		if (msg->payload_len != m) {
			ps_msg_free(&msg);
			return PS_EPROTO;
		}
		ps_msg_free(&msg);
	}
	rc = ps_transport_send(b, to_a, hdr, sizeof(hdr), NULL, 0, NULL, NULL);
	if (rc == PS_OK)
		rc = ps_transport_recv(a, 10000, &msg);
	if (rc != PS_OK)
		return rc;
	ps_msg_free(&msg);
	*us_p = now_us() - t0;
	return PS_OK;
}

int main(int argc, char **argv)
{
	uint64_t sizes[MAX_LIST], conc[MAX_LIST];
	int nsizes = parse_list("1K,16K,256K,1M,4M", sizes, 1);
	int nconc = parse_list("1,2,4,8", conc, 0);
	int reps = 20;
	const char *name = "tcp", *out = NULL, *host = "127.0.0.1";
	ps_transport_opts oa = {.id = 1, .send_timeout_ms = 10000,
				.connect_timeout_ms = 5000, .io_threads = 1,
				.rdma_gid_index = -1 /* automatic */};
	ps_transport_opts ob = oa;
	ps_transport *a = NULL, *b = NULL;
	char ea[256], eb[256];
	ps_peer to_b, to_a;
	void *buf = NULL;
	FILE *f = stdout;
	double *samples = NULL;
	int rc;

	for (int i = 1; i < argc; i++) {
		const char *arg = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(argv[i], "--sizes") && arg)
			nsizes = parse_list(argv[++i], sizes, 1);
		else if (!strcmp(argv[i], "--concurrency") && arg)
			nconc = parse_list(argv[++i], conc, 0);
		else if (!strcmp(argv[i], "--reps") && arg)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--transport") && arg)
			name = argv[++i];
		else if (!strcmp(argv[i], "--out") && arg)
			out = argv[++i];
		else if (!strcmp(argv[i], "--host") && arg)
			host = argv[++i];
		else {
			fprintf(stderr, "usage: %s [--sizes 1K,16K,...] "
				"[--concurrency 1,2,...] [--reps N] "
				"[--transport tcp|rdma] [--host ADDR] "
				"[--out FILE]\n", argv[0]);
			return 2;
		}
	}
	if (nsizes <= 0 || nconc <= 0 || reps < 1 || reps > 100000) {
		fprintf(stderr, "bench_link_sweep: bad --sizes, --concurrency "
			"or --reps\n");
		return 2;
	}
	ps_log_init("sweep", PS_LOG_WARN);
	ob.id = 2;
	if (!strcmp(name, "rdma") && !ps_transport_find("rdma")) {
		fprintf(stderr, "bench_link_sweep: transport rdma is not in "
			"this build (configure with -DPS_WITH_RDMA=ON, which "
			"needs rdma-core); built in: %s\n",
			ps_transport_names());
		return 1;
	}
	if (!strcmp(name, "rdma") && !strncmp(host, "127.", 4)) {
		fprintf(stderr, "bench_link_sweep: --transport rdma needs "
			"--host ADDR, the IPv4 address of an RDMA device's "
			"RoCE v2 GID (ps-rdma-devices lists them); rdma_cm "
			"cannot use loopback (%s)\n", host);
		return 2;
	}
	rc = ps_transport_create(name, &oa, &a);
	if (rc == PS_OK)
		rc = ps_transport_create(name, &ob, &b);
	if (rc == PS_ENOTSUP && !strcmp(name, "rdma")) {
		fprintf(stderr, "bench_link_sweep: transport rdma: no usable "
			"RDMA device here (%s; /sys/class/infiniband lists "
			"the devices, ps-rdma-devices their GIDs): fit ps-sim's "
			"rdma model where one exists, or use its published "
			"defaults (docs/sim.md)\n", ps_strerror(rc));
		goto out;
	}
	if (rc == PS_OK)
		rc = ps_transport_listen(a, host, 0, NULL, ea, sizeof(ea));
	if (rc == PS_OK)
		rc = ps_transport_listen(b, host, 0, NULL, eb, sizeof(eb));
	if (rc == PS_OK)
		rc = ps_transport_connect(a, eb, &to_b);
	if (rc == PS_OK)
		rc = ps_transport_connect(b, ea, &to_a);
	if (rc != PS_OK) {
		fprintf(stderr, "bench_link_sweep: transport %s on %s: %s\n",
			name, host, ps_strerror(rc));
		goto out;
	}
	uint64_t most = 0;
	for (int i = 0; i < nsizes; i++)
		if (sizes[i] > most)
			most = sizes[i];
	buf = calloc(1, most);
	samples = calloc((size_t)reps, sizeof(double));
	if (!buf || !samples) {
		rc = PS_ENOMEM;
		goto out;
	}
	if (out && !(f = fopen(out, "w"))) {
		perror(out);
		rc = PS_EIO;
		goto out;
	}
	fprintf(f, "# bench_link_sweep: transport %s on %s, median of "
		"%d\nbytes,concurrency,us,reps\n", name, host, reps);
	for (int s = 0; s < nsizes; s++)
		for (int k = 0; k < nconc; k++) {
			double warm;
			rc = one_sample(a, b, to_b, to_a, buf, sizes[s],
					conc[k], &warm);
			for (int r = 0; r < reps && rc == PS_OK; r++)
				rc = one_sample(a, b, to_b, to_a, buf,
						sizes[s], conc[k],
						&samples[r]);
			if (rc != PS_OK) {
				fprintf(stderr, "bench_link_sweep: %s\n",
					ps_strerror(rc));
				goto out;
			}
			qsort(samples, (size_t)reps, sizeof(double),
			      cmp_double);
			fprintf(f, "%llu,%llu,%.3f,%d\n",
				(unsigned long long)sizes[s],
				(unsigned long long)conc[k],
				samples[reps / 2], reps);
			fflush(f);
		}
out:
	if (f && f != stdout)
		fclose(f);
	ps_transport_destroy(&a, 0);
	ps_transport_destroy(&b, 0);
	free(buf);
	free(samples);
	return rc == PS_OK ? 0 : 1;
}
