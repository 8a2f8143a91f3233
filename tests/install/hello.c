/*
 * tests/install/hello.c - a worker built against an installed ordo (only
 * <ordo/ordo.h> and -lordo: tests/integration/install.sh builds it with
 * pkg-config and with find_package(ordo)). Started by the installed
 * ps-launch --worker with --config FILE and --set KEY=VALUE arguments,
 * it trains one tensor of 1000 floats: every worker pushes a gradient of
 * all ones for 3 iterations with lr 1 and momentum 0, so every value ends
 * at its initial value minus 3. Prints "hello: rank R exact" and exits 0
 * when it does.
 */
#include <stdio.h>
#include <string.h>

#include <ordo/ordo.h>

#define N 1000
#define ITERS 3

int main(int argc, char **argv)
{
	static float w[N], g[N];
	char err[512];
	ps_config *cfg = NULL;
	ps_client *c = NULL;
	uint32_t t;
	uint64_t it;
	int rc;

	if (ps_config_new(&cfg) != PS_OK)
		return 1;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--config") == 0)
			rc = ps_config_load(cfg, argv[i + 1], err, sizeof(err));
		else if (strcmp(argv[i], "--set") == 0)
			rc = ps_config_set(cfg, argv[i + 1], err, sizeof(err));
		else
			continue;
		if (rc != PS_OK) {
			fprintf(stderr, "hello: %s\n", err);
			return 2;
		}
	}
	for (int j = 0; j < N; j++)
		w[j] = (float)j, g[j] = 1.0f;
	if ((rc = ps_client_create(cfg, &c)) != PS_OK ||
	    (rc = ps_client_declare(c, "w", N, w, &t)) != PS_OK ||
	    (rc = ps_client_start(c)) != PS_OK) {
		fprintf(stderr, "hello: %s\n", ps_strerror(rc));
		return 1;
	}
	for (it = ps_client_start_iteration(c); ps_client_next_iteration(c, it);
	     it++) {
		if ((rc = ps_client_push(c, t, g, it)) != PS_OK ||
		    (rc = ps_client_wait(c, t, it + 1, -1)) != PS_OK) {
			fprintf(stderr, "hello: %s\n", ps_strerror(rc));
			return 1;
		}
	}
	int wrong = 0;
	for (int j = 0; j < N; j++)
		wrong += w[j] != (float)j - (float)it;
	int rank = ps_client_rank(c);
	rc = ps_client_finish(c, &(ps_client_result){.iterations = it});
	ps_client_destroy(&c);
	ps_config_free(&cfg);
	if (rc != PS_OK || wrong || it != ITERS) {
		fprintf(stderr, "hello: %d wrong values after %llu iterations "
			"(%s)\n", wrong, (unsigned long long)it, ps_strerror(rc));
		return 1;
	}
	printf("hello: rank %d exact\n", rank);
	return 0;
}
