/*
 * examples/worker.c - a whole worker program of ordo's C API
 * (include/ordo/ordo.h, whose comment shows the part between "example:
 * begin" and "example: end"; the test api_example checks that it is this
 * text, builds this file and runs it in a job).
 *
 * It trains one tensor of N floats on the loss 0.5 * |w|^2, whose
 * gradient is w itself, from w = 1 everywhere. Build it against an
 * installed ordo and run it as the workers of a job:
 *
 *     cc -o worker examples/worker.c $(pkg-config --cflags --libs ordo)
 *     ps-launch --worker ./worker --set train.iterations=3 \
 *         --set train.lr=0.5 --set train.momentum=0
 *
 * ps-launch passes every worker --config FILE and --set KEY=VALUE; each
 * worker prints "worker: 3 iterations, w1[0] = 0.125" (every iteration
 * halves w) and exits 0. On a failure it prints why
 * (ps_client_last_error) and exits 1.
 */
#include <stdio.h>
#include <string.h>

#include <ordo/ordo.h>

#define N 1000

/* The forward and backward pass: the gradient of 0.5 * |w|^2. */
static void gradient(const float *w, float *g, size_t n)
{
	for (size_t j = 0; j < n; j++)
		g[j] = w[j];
}

/* The job's configuration: the defaults, then --config FILE and --set
 * KEY=VALUE in the order given. */
static int load_config(int argc, char **argv, ps_config **cfg_p)
{
	char err[512];
	int rc = ps_config_new(cfg_p);

	for (int i = 1; rc == PS_OK && i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--config") == 0)
			rc = ps_config_load(*cfg_p, argv[i + 1], err,
					    sizeof(err));
		else if (strcmp(argv[i], "--set") == 0)
			rc = ps_config_set(*cfg_p, argv[i + 1], err,
					   sizeof(err));
		if (rc != PS_OK)
			fprintf(stderr, "worker: %s\n", err);
	}
	return rc;
}

/* A client call failed: says why, and frees everything. */
static int failed(ps_client **c, ps_config **cfg)
{
	fprintf(stderr, "worker: %s\n", ps_client_last_error());
	ps_client_destroy(c);
	ps_config_free(cfg);
	return 1;
}

int main(int argc, char **argv)
{
	static float w1[N], g1[N];
	ps_config *cfg = NULL;
	ps_client *c = NULL;
	uint32_t t1;
	uint64_t it;
	int rc;

	if (load_config(argc, argv, &cfg) != PS_OK) {
		ps_config_free(&cfg);
		return 2;
	}
	for (size_t j = 0; j < N; j++)
		w1[j] = 1.0f; /* worker 0's initial values are the job's */

	// example: begin
	if (ps_client_create(cfg, &c) != PS_OK ||
	    ps_client_declare(c, "fc1.weight", N, w1, &t1) != PS_OK ||
	    ps_client_start(c) != PS_OK)     // joins: w1 holds version 0
		return failed(&c, &cfg);
	for (it = ps_client_start_iteration(c);
	     ps_client_next_iteration(c, it); it++) {
		gradient(w1, g1, N);         // forward/backward into g1
		if (ps_client_push(c, t1, g1, it) != PS_OK ||  // each tensor
		    ps_client_wait(c, t1, it + 1, -1) != PS_OK) // w1: it + 1
			return failed(&c, &cfg);
	}
	ps_client_result r = {.iterations = it}; // for the job summary
	rc = ps_client_finish(c, &r);            // waits for the shutdown
	if (rc != PS_OK)
		return failed(&c, &cfg);
	ps_client_destroy(&c);
	// example: end

	printf("worker: %llu iterations, w1[0] = %g\n", (unsigned long long)it,
	       (double)w1[0]);
	ps_config_free(&cfg);
	return 0;
}
