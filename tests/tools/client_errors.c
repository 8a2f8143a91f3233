/*
 * tests/tools/client_errors.c - a worker that makes the client calls fail
 * inside a running job and checks that ps_client_last_error names the
 * call and the problem (tests/integration/client_errors.sh). Only the
 * public API (include/ordo/ordo.h).
 *
 *   client_errors [--die-rank R] --config FILE --set KEY=VALUE...
 *
 * After ps_client_start: a declaration, a push of a tensor never
 * declared, a wait that times out, a broadcast from a root that is no
 * worker, a NaN learning rate, a second start. Then it trains
 * train.iterations iterations, finishes, and calls again: a push, a
 * second finish, a wait, a barrier after the job shut down. Prints
 * "client_errors: rank R: N failures, each explained" and exits 0.
 *
 * With --die-rank R, worker R exits (status 3) right after joining, and
 * the others' next wait fails when the scheduler ends the job: they print
 * "client_errors: rank R: the job failed: TEXT" and exit 0 when TEXT
 * starts with "ps_client_wait: the job failed: ".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ordo/ordo.h"

#define N 64

static int rank = -1, failures, wrong;

/* A call returned rc: it must be want, and the last error must start with
 * "fn: " and hold the words. */
static void expect(int rc, int want, const char *fn, const char *word1,
		   const char *word2)
{
	const char *e = ps_client_last_error();
	size_t n = strlen(fn);

	failures++;
	if (rc != want || strncmp(e, fn, n) != 0 || e[n] != ':' ||
	    (word1 && !strstr(e, word1)) || (word2 && !strstr(e, word2))) {
		printf("client_errors: rank %d: FAIL: %s returned %d (%s), "
		       "last error \"%s\"; expected %d (%s) and \"%s: ...%s"
		       "...%s...\"\n",
		       rank, fn, rc, ps_strerror(rc), e, want, ps_strerror(want),
		       fn, word1 ? word1 : "", word2 ? word2 : "");
		wrong++;
	}
}

int main(int argc, char **argv)
{
	static float w[N], g[N], other[N];
	ps_config *cfg = NULL;
	ps_client *c = NULL;
	char err[512];
	int die_rank = -1, rc;
	uint32_t t, t2;
	uint64_t it;

	if (ps_config_new(&cfg) != PS_OK)
		return 1;
	for (int i = 1; i + 1 < argc; i += 2) {
		rc = PS_OK;
		if (strcmp(argv[i], "--config") == 0)
			rc = ps_config_load(cfg, argv[i + 1], err, sizeof(err));
		else if (strcmp(argv[i], "--set") == 0)
			rc = ps_config_set(cfg, argv[i + 1], err, sizeof(err));
		else if (strcmp(argv[i], "--die-rank") == 0)
			die_rank = atoi(argv[i + 1]);
		if (rc != PS_OK) {
			fprintf(stderr, "client_errors: %s\n", err);
			return 2;
		}
	}
	for (int j = 0; j < N; j++)
		g[j] = 1.0f;
	if (ps_client_create(cfg, &c) != PS_OK ||
	    ps_client_declare(c, "w", N, w, &t) != PS_OK ||
	    ps_client_start(c) != PS_OK) {
		fprintf(stderr, "client_errors: %s\n", ps_client_last_error());
		return 1;
	}
	rank = ps_client_rank(c);
	if (rank == die_rank) {
		printf("client_errors: rank %d: leaving without a word\n", rank);
		fflush(stdout);
		_exit(3);
	}
	if (die_rank >= 0) { /* the job fails under this worker's wait */
		rc = ps_client_push(c, t, g, 0);
		if (rc == PS_OK)
			rc = ps_client_wait(c, t, 1, -1);
		const char *want = "ps_client_wait: the job failed: ";
		int ok = rc != PS_OK && strncmp(ps_client_last_error(), want,
						strlen(want)) == 0;
		printf("client_errors: rank %d: the job failed: %s\n", rank,
		       rc != PS_OK ? ps_client_last_error() : "(it did not)");
		ps_client_destroy(&c);
		ps_config_free(&cfg);
		return ok ? 0 : 1;
	}

	/* in the job */
	expect(ps_client_declare(c, "late", N, other, &t2), PS_ESTATE,
	       "ps_client_declare", "tensor 'late' declared after "
	       "ps_client_start", NULL);
	expect(ps_client_push(c, 5, g, 0), PS_EINVAL, "ps_client_push",
	       "tensor 5 is not declared", "(this client declared 1 tensor)");
	expect(ps_client_wait(c, t, 99, 50), PS_ETIMEDOUT, "ps_client_wait",
	       "tensor 'w': version 99 did not arrive within 50 ms", NULL);
	expect(ps_client_broadcast(c, 7, other, sizeof(other), -1), PS_EINVAL,
	       "ps_client_broadcast", "root 7 is not a worker's rank (0..1)",
	       NULL);
	expect(ps_client_set_lr(c, 0, NAN), PS_EINVAL, "ps_client_set_lr",
	       "is not a learning rate", NULL);
	expect(ps_client_start(c), PS_ESTATE, "ps_client_start",
	       "the client has started already", NULL);

	for (it = ps_client_start_iteration(c); ps_client_next_iteration(c, it);
	     it++) {
		if (ps_client_push(c, t, g, it) != PS_OK ||
		    ps_client_wait(c, t, it + 1, -1) != PS_OK) {
			printf("client_errors: rank %d: FAIL: training: %s\n",
			       rank, ps_client_last_error());
			return 1;
		}
	}
	if (ps_client_finish(c, &(ps_client_result){.iterations = it}) !=
	    PS_OK) {
		printf("client_errors: rank %d: FAIL: finish: %s\n", rank,
		       ps_client_last_error());
		return 1;
	}

	/* after the job */
	expect(ps_client_push(c, t, g, it), PS_ESTATE, "ps_client_push",
	       "the job has shut down", "ps_client_finish returned");
	expect(ps_client_finish(c, &(ps_client_result){.iterations = it}),
	       PS_ESTATE, "ps_client_finish", "called again",
	       "the job has shut down already");
	expect(ps_client_wait(c, t, it + 5, -1), PS_ESTATE, "ps_client_wait",
	       "the job has shut down", NULL);
	expect(ps_client_barrier(c, -1), PS_ESTATE, "ps_client_barrier",
	       "the job has shut down", NULL);

	ps_client_destroy(&c);
	ps_config_free(&cfg);
	if (wrong)
		return 1;
	printf("client_errors: rank %d: %d failures, each explained\n", rank,
	       failures);
	return 0;
}
