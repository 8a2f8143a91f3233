/*
 * bench/goodput.c - push+pull goodput of ordo against plain ZeroMQ.
 *
 *   bench_goodput [--sizes 64K,1M,16M,64M] [--bytes 512M] [--layouts 1x1,2x2]
 *                 [--rounds N] [--trace DIR] [--set SECTION.KEY=VALUE ...]
 *
 * --set applies to the ordo jobs (after the benchmark's own settings), e.g.
 * --set transport.type=rdma --set cluster.bind_host=192.0.2.1 --set
 * cluster.scheduler_host=192.0.2.1 for the verbs transport
 * (bench/rdma_goodput.sh); the plain-ZeroMQ side stays on loopback TCP.
 *
 * For each partition size P and layout W workers x S servers, on loopback:
 *  - ordo: a real job (scheduler, S servers, W workers; each a process) in
 *    synchronous mode. Every worker declares one tensor of S x P bytes with
 *    partition size P (one partition per server), and each iteration pushes
 *    it and waits for the new parameters: S x P bytes out and S x P back.
 *  - zmq: the same traffic with plain ZeroMQ: S echo processes (ROUTER)
 *    and W client processes (DEALER per echo process, zmq_send/zmq_recv of
 *    P bytes each way per iteration, i.e. with ZeroMQ's ordinary copies).
 * Goodput = payload bytes moved (both directions, all workers) / wall time
 * of the slowest worker, after one warm-up iteration. Both run in the same
 * invocation, interleaved per size (--rounds N: N times, alternating), so
 * machine noise hits them alike. Prints a Markdown table: per size and
 * layout the medians over the rounds, the median of the rounds' ratios
 * ordo / zmq and their range. Exits 1 if a run failed. With --trace DIR each
 * ordo job writes its timeline and metrics (output.dir) to
 * DIR/SIZEK-WxS/; bench/goodput_phases.py says where a 1 x 1 iteration's
 * time goes from them.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "common/config.h"
#include "common/log.h"
#include "ordo/ordo.h"
#include "scheduler/scheduler.h"
#include "runtime/clock.h"
#include "server/server.h"

#define MAX_SIZES 16

static const char *trace_dir; /* --trace: the ordo jobs' output.dir root */
/* --set SECTION.KEY=VALUE: applied to every ordo job's config last (e.g.
 * transport.type=rdma with the hosts on an RDMA device) */
static const char *sets[32];
static int nsets;

/* Applies the --set arguments to cfg: PS_OK, or PS_ECONFIG with the
 * reason printed. */
static int apply_sets(ps_config *cfg)
{
	char err[512];

	for (int i = 0; i < nsets; i++)
		if (ps_config_set(cfg, sets[i], err, sizeof(err)) != PS_OK) {
			fprintf(stderr, "bench_goodput: --%s\n", err);
			return PS_ECONFIG;
		}
	return PS_OK;
}

static uint64_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	switch (*end) {
	case 'K': case 'k': return (uint64_t)(v * 1024);
	case 'M': case 'm': return (uint64_t)(v * 1024 * 1024);
	case 'G': case 'g': return (uint64_t)(v * 1024 * 1024 * 1024);
	default: return (uint64_t)v;
	}
}

static int iterations_for(uint64_t per_iter, uint64_t budget)
{
	uint64_t k = budget / (per_iter ? per_iter : 1);
	return (int)(k < 5 ? 5 : k > 2000 ? 2000 : k);
}

/* Runs fn(arg, rank) in a child process; returns its pid. */
static pid_t fork_child(int (*fn)(void *, int), void *arg, int rank)
{
	pid_t pid = fork();
	if (pid == 0)
		_exit(fn(arg, rank));
	return pid;
}

static int wait_all(pid_t *pids, int n)
{
	int bad = 0;
	for (int i = 0; i < n; i++) {
		int st;
		if (waitpid(pids[i], &st, 0) < 0 || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			bad++;
	}
	return bad;
}

/* ---- ordo ------------------------------------------------------------- */

typedef struct job {
	ps_config cfg;
	uint64_t tensor_bytes;
	int iterations;
	int result_fd; /* workers write their elapsed ns here */
} job;

static int run_scheduler(void *arg, int fd)
{
	job *j = arg;
	/* its placement and summary would interleave with the table */
	if (!freopen("/dev/null", "w", stdout))
		return 1;
	return ps_scheduler_run(&j->cfg, fd);
}

static int run_server(void *arg, int rank)
{
	job *j = arg;
	(void)rank;
	return ps_server_run(&j->cfg);
}

static int run_worker(void *arg, int rank)
{
	job *j = arg;
	uint64_t n = j->tensor_bytes / sizeof(float);
	float *values = calloc(n, sizeof(float));
	float *grad = calloc(n, sizeof(float));
	ps_client *c = NULL;
	uint64_t t0 = 0;
	int rc;

	(void)rank;
	if (!values || !grad)
		return 1;
	rc = ps_client_create(&j->cfg, &c);
	if (rc == PS_OK)
		rc = ps_client_declare(c, "t", n, values, NULL);
	if (rc == PS_OK)
		rc = ps_client_start(c);
	for (int it = 0; rc == PS_OK && it <= j->iterations; it++) {
		if (it == 1)
			t0 = ps_now_ns(); /* iteration 0 is the warm-up */
		rc = ps_client_push(c, 0, grad, (uint64_t)it);
		if (rc == PS_OK)
			rc = ps_client_wait(c, 0, (uint64_t)it + 1, -1);
	}
	if (rc == PS_OK) {
		uint64_t ns = ps_now_ns() - t0;
		if (write(j->result_fd, &ns, sizeof(ns)) != sizeof(ns))
			rc = PS_EIO;
	}
	if (rc == PS_OK)
		rc = ps_client_finish(
		    c, &(ps_client_result){.iterations =
						 (uint64_t)j->iterations});
	ps_client_destroy(&c);
	free(values);
	free(grad);
	return rc == PS_OK ? 0 : 1;
}

/* Slowest worker's time in ns, or 0 on failure. */
static uint64_t collect(int fd, int workers)
{
	uint64_t worst = 0;
	for (int i = 0; i < workers; i++) {
		uint64_t ns;
		if (read(fd, &ns, sizeof(ns)) != sizeof(ns))
			return 0;
		if (ns > worst)
			worst = ns;
	}
	return worst;
}

static double bench_ordo(uint64_t psize, int W, int S, int iterations)
{
	job j;
	pid_t pids[64];
	int np = 0, ready[2], results[2];
	char port[32] = "";
	uint64_t ns;
	ssize_t n;

	ps_config_defaults(&j.cfg);
	j.cfg.cluster.servers = S;
	j.cfg.cluster.workers = W;
	j.cfg.cluster.scheduler_port = 0;
	j.cfg.cluster.heartbeat_timeout_ms = 60000;
	j.cfg.cluster.heartbeat_interval_ms = 500;
	ps_config_set_partition_size(&j.cfg, psize);
	j.cfg.train.lr = 0.0;
	j.cfg.train.momentum = 0.0;
	/* the warm-up and the measured ones: what the workers report in
	 * their heartbeats stays within the job's iterations */
	j.cfg.train.iterations = iterations + 1;
	j.cfg.log.level = PS_LOG_WARN;
	if (apply_sets(&j.cfg) != PS_OK)
		return 0;
	/* every process of the job starts here at once: one not registered
	 * within connect_timeout_ms has failed (unless --set says otherwise) */
	if (!ps_config_user_set(&j.cfg, "cluster.register_timeout_ms"))
		j.cfg.cluster.register_timeout_ms =
			j.cfg.cluster.connect_timeout_ms;
	if (trace_dir) {
		snprintf(j.cfg.output.dir, sizeof(j.cfg.output.dir),
			 "%s/%lluK-%dx%d", trace_dir,
			 (unsigned long long)(psize >> 10), W, S);
		if (mkdir(j.cfg.output.dir, 0755) != 0 && errno != EEXIST) {
			fprintf(stderr, "bench_goodput: mkdir %s: %s\n",
				j.cfg.output.dir, strerror(errno));
			return 0;
		}
	}
	j.tensor_bytes = psize * (uint64_t)S;
	j.iterations = iterations;
	if (pipe(ready) != 0 || pipe(results) != 0)
		return 0;
	j.result_fd = results[1];
	pids[np++] = fork_child(run_scheduler, &j, ready[1]);
	close(ready[1]);
	n = read(ready[0], port, sizeof(port) - 1);
	close(ready[0]);
	if (n <= 0)
		return 0;
	j.cfg.cluster.scheduler_port = atoi(port);
	for (int s = 0; s < S; s++)
		pids[np++] = fork_child(run_server, &j, s);
	for (int w = 0; w < W; w++)
		pids[np++] = fork_child(run_worker, &j, w);
	close(results[1]);
	ns = collect(results[0], W);
	close(results[0]);
	if (wait_all(pids, np) || ns == 0)
		return 0;
	return 2.0 * (double)j.tensor_bytes * W * iterations / (double)ns *
	       1e9;
}

/* ---- plain ZeroMQ ----------------------------------------------------- */

typedef struct zjob {
	uint64_t psize;
	int servers, iterations;
	char endpoints[16][64];
	int result_fd, endpoint_fd;
} zjob;

static int run_echo(void *arg, int rank)
{
	zjob *z = arg;
	void *ctx = zmq_ctx_new(), *s = zmq_socket(ctx, ZMQ_ROUTER);
	int hwm = 0;

	char ep[64] = "";
	size_t eplen = sizeof(ep);

	zmq_setsockopt(s, ZMQ_RCVHWM, &hwm, sizeof(hwm));
	zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof(hwm));
	/* a port the kernel picks: a fixed one may be taken (the clients
	 * then waited forever on an echo process that could not bind) */
	if (zmq_bind(s, "tcp://127.0.0.1:*") != 0 ||
	    zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, ep, &eplen) != 0)
		ep[0] = '\0';
	{
		char rec[68];
		memcpy(rec, &rank, sizeof(int));
		memcpy(rec + sizeof(int), ep, sizeof(ep));
		if (write(z->endpoint_fd, rec, sizeof(rec)) != sizeof(rec) ||
		    !ep[0])
			return 1;
	}
	for (;;) {
		zmq_msg_t id, body;
		zmq_msg_init(&id);
		zmq_msg_init(&body);
		if (zmq_msg_recv(&id, s, 0) < 0 || zmq_msg_recv(&body, s, 0) < 0)
			break;
		if (zmq_msg_size(&body) == 0) /* a client says goodbye */
			break;
		zmq_msg_send(&id, s, ZMQ_SNDMORE);
		zmq_msg_send(&body, s, 0);
	}
	zmq_close(s);
	zmq_ctx_term(ctx);
	return 0;
}

static int run_zclient(void *arg, int rank)
{
	zjob *z = arg;
	void *ctx = zmq_ctx_new(), *socks[16];
	char *buf = calloc(1, z->psize), *in = malloc(z->psize);
	uint64_t t0 = 0, ns;

	(void)rank;
	for (int s = 0; s < z->servers; s++) {
		socks[s] = zmq_socket(ctx, ZMQ_DEALER);
		zmq_connect(socks[s], z->endpoints[s]);
	}
	for (int it = 0; it <= z->iterations; it++) {
		if (it == 1)
			t0 = ps_now_ns();
		for (int s = 0; s < z->servers; s++)
			zmq_send(socks[s], buf, z->psize, 0);
		for (int s = 0; s < z->servers; s++)
			zmq_recv(socks[s], in, z->psize, 0);
	}
	ns = ps_now_ns() - t0;
	if (write(z->result_fd, &ns, sizeof(ns)) != sizeof(ns))
		return 1;
	for (int s = 0; s < z->servers; s++)
		zmq_close(socks[s]);
	zmq_ctx_term(ctx);
	free(buf);
	free(in);
	return 0;
}

static double bench_zmq(uint64_t psize, int W, int S, int iterations)
{
	zjob z = {.psize = psize, .servers = S, .iterations = iterations};
	pid_t pids[64];
	int np = 0, results[2], eps[2], found = 0;
	uint64_t ns;

	if (pipe(results) != 0)
		return 0;
	if (pipe(eps) != 0)
		return 0;
	z.result_fd = results[1];
	z.endpoint_fd = eps[1];
	for (int s = 0; s < S; s++)
		pids[np++] = fork_child(run_echo, &z, s);
	close(eps[1]);
	/* each echo process's endpoint, before any client starts */
	for (int s = 0; s < S; s++) {
		char rec[68];
		int r;
		if (read(eps[0], rec, sizeof(rec)) != sizeof(rec))
			break;
		memcpy(&r, rec, sizeof(int));
		if (r < 0 || r >= S || !rec[sizeof(int)])
			break;
		memcpy(z.endpoints[r], rec + sizeof(int), 64);
		found++;
	}
	close(eps[0]);
	if (found < S) {
		fprintf(stderr, "bench_goodput: an echo process could not "
			"listen\n");
		for (int i = 0; i < np; i++)
			kill(pids[i], SIGTERM);
		wait_all(pids, np);
		close(results[0]);
		close(results[1]);
		return 0;
	}
	for (int w = 0; w < W; w++)
		pids[np++] = fork_child(run_zclient, &z, w);
	close(results[1]);
	ns = collect(results[0], W);
	close(results[0]);
	/* one empty message per echo process ends it */
	{
		void *ctx = zmq_ctx_new();
		for (int s = 0; s < S; s++) {
			void *d = zmq_socket(ctx, ZMQ_DEALER);
			zmq_connect(d, z.endpoints[s]);
			zmq_send(d, "", 0, 0);
			zmq_close(d);
		}
		zmq_ctx_term(ctx);
	}
	if (wait_all(pids, np) || ns == 0)
		return 0;
	return 2.0 * (double)psize * S * W * iterations / (double)ns * 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The median of v[0..n) (sorts v). */
static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int usage(FILE *f)
{
	fprintf(f, "usage: bench_goodput [--sizes 64K,1M,...] "
		   "[--layouts 1x1,2x2] [--bytes 512M] [--rounds N] "
		   "[--trace DIR] [--set SECTION.KEY=VALUE ...]\n");
	return f == stdout ? 0 : 2;
}

#define MAX_ROUNDS 100

/* One size and layout, `rounds` times alternating zmq and ordo: its row.
 * 0, or 1 when a run failed. */
static int measure(uint64_t psize, int W, int S, uint64_t budget,
		   int rounds)
{
	double o[MAX_ROUNDS], z[MAX_ROUNDS], r[MAX_ROUNDS];
	int k = iterations_for(2 * psize * S * W, budget), failed = 0;

	for (int i = 0; i < rounds; i++) {
		z[i] = bench_zmq(psize, W, S, k);
		o[i] = bench_ordo(psize, W, S, k);
		failed |= !(z[i] > 0) || !(o[i] > 0);
		r[i] = z[i] > 0 ? o[i] / z[i] : 0.0;
	}
	if (failed) {
		printf("| %llu KiB | %dx%d | %d | %d | failed | | | |\n",
		       (unsigned long long)(psize >> 10), W, S, k, rounds);
		fflush(stdout);
		return 1;
	}
	double ro = median(o, rounds), rz = median(z, rounds);
	double rr = median(r, rounds); /* sorts r: r[0], r[rounds - 1] */
	printf("| %llu KiB | %dx%d | %d | %d | %.0f | %.0f | %.2f | "
	       "%.2f-%.2f |\n",
	       (unsigned long long)(psize >> 10), W, S, k, rounds, ro / 1e6,
	       rz / 1e6, rr, r[0], r[rounds - 1]);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	const char *sizes_arg = "64K,256K,1M,4M,16M,64M";
	const char *layouts_arg = "1x1,2x2";
	uint64_t sizes[MAX_SIZES], budget = 512ull << 20;
	int nsizes = 0, rounds = 1, failed = 0, layouts[32][2], nlayouts = 0;
	char *copy, *tok, *save, *end;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
			sizes_arg = argv[++i];
		else if (!strcmp(argv[i], "--layouts") && i + 1 < argc)
			layouts_arg = argv[++i];
		else if (!strcmp(argv[i], "--bytes") && i + 1 < argc)
			budget = parse_size(argv[++i]);
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
			long n = strtol(argv[++i], &end, 10);
			if (*end || n < 1 || n > MAX_ROUNDS) {
				fprintf(stderr, "bench_goodput: --rounds %s: "
					"want 1..%d\n", argv[i], MAX_ROUNDS);
				return 2;
			}
			rounds = (int)n;
		} else if (!strcmp(argv[i], "--trace") && i + 1 < argc)
			trace_dir = argv[++i];
		else if (!strcmp(argv[i], "--set") && i + 1 < argc) {
			ps_config probe;
			if (nsets == (int)(sizeof(sets) / sizeof(sets[0]))) {
				fprintf(stderr, "bench_goodput: at most %zu "
					"--set\n", sizeof(sets) / sizeof(sets[0]));
				return 2;
			}
			sets[nsets++] = argv[++i];
			ps_config_defaults(&probe);
			if (apply_sets(&probe) != PS_OK)
				return 2;
		} else
			return usage(strcmp(argv[i], "--help") ? stderr
							       : stdout);
	}
	if (budget == 0) {
		fprintf(stderr, "bench_goodput: --bytes must be a size > 0 "
			"(e.g. 512M)\n");
		return 2;
	}
	copy = strdup(sizes_arg);
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		uint64_t v = parse_size(tok);
		if (v < 4 || v % 4 || nsizes == MAX_SIZES) {
			fprintf(stderr, "bench_goodput: size '%s': want a "
				"multiple of 4 bytes (e.g. 64K, 1M), at most "
				"%d sizes\n", tok, MAX_SIZES);
			free(copy);
			return 2;
		}
		sizes[nsizes++] = v;
	}
	free(copy);
	copy = strdup(layouts_arg);
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		int W, S;
		char extra;
		if (sscanf(tok, "%dx%d%c", &W, &S, &extra) != 2 || W < 1 ||
		    S < 1 || W > 16 || S > 16 || nlayouts == 32) {
			fprintf(stderr, "bench_goodput: layout '%s': want "
				"WxS with 1..16 each (e.g. 2x2)\n", tok);
			free(copy);
			return 2;
		}
		layouts[nlayouts][0] = W;
		layouts[nlayouts++][1] = S;
	}
	free(copy);
	if (!nsizes || !nlayouts)
		return usage(stderr);
	ps_log_init("bench", PS_LOG_WARN);
	if (trace_dir && mkdir(trace_dir, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, "bench_goodput: mkdir %s: %s\n", trace_dir,
			strerror(errno));
		return 1;
	}
	printf("| partition | W x S | iterations | rounds | ordo MB/s | "
	       "zmq MB/s | ordo / zmq | range |\n"
	       "|---:|:---:|---:|---:|---:|---:|---:|---:|\n");
	fflush(stdout);
	for (int l = 0; l < nlayouts; l++)
		for (int i = 0; i < nsizes; i++)
			failed |= measure(sizes[i], layouts[l][0],
					  layouts[l][1], budget, rounds);
	return failed;
}
