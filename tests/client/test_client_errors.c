/*
 * tests/client/test_client_errors.c - ps_client_last_error (ordo.h): the
 * client calls that fail without a job (bad arguments, bad declarations,
 * calls before ps_client_start, a start whose scheduler never answers)
 * leave a text that names the call and the problem; the text is per
 * thread and a call that succeeds leaves it. The failures inside a
 * running job: tests/integration/client_errors.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/log.h"
#include "ordo/ordo.h"

/* The last error names fn and every one of the words. */
static void expect_error(const char *fn, const char *word1,
			 const char *word2)
{
	const char *e = ps_client_last_error();

	if (strncmp(e, fn, strlen(fn)) != 0 || e[strlen(fn)] != ':' ||
	    (word1 && !strstr(e, word1)) || (word2 && !strstr(e, word2)))
		fail_msg("ps_client_last_error() is \"%s\": expected \"%s: "
			 "...%s...%s...\"", e, fn, word1 ? word1 : "",
			 word2 ? word2 : "");
}

static ps_client *new_client(ps_config **cfg_p)
{
	ps_client *c = NULL;

	assert_int_equal(ps_config_new(cfg_p), PS_OK);
	assert_int_equal(ps_client_create(*cfg_p, &c), PS_OK);
	return c;
}

static void test_create(void **state)
{
	ps_config *cfg;
	ps_client *c = NULL;
	char err[256];

	(void)state;
	assert_string_equal(ps_client_last_error(), "");
	assert_int_equal(ps_client_create(NULL, &c), PS_EINVAL);
	expect_error("ps_client_create", "cfg is NULL", NULL);
	assert_int_equal(ps_config_new(&cfg), PS_OK);
	assert_int_equal(ps_client_create(cfg, NULL), PS_EINVAL);
	expect_error("ps_client_create", "client_p is NULL", NULL);
	assert_int_equal(ps_config_set(cfg, "cluster.workers=8192", err,
				       sizeof(err)),
			 PS_OK);
	assert_int_equal(ps_client_create(cfg, &c), PS_ECONFIG);
	expect_error("ps_client_create", "invalid configuration",
		     "cluster.workers (8192)");
	assert_null(c);
	ps_config_free(&cfg);
}

static void test_declare(void **state)
{
	static float v[4];
	char longname[300];
	ps_config *cfg;
	ps_client *c = new_client(&cfg);
	uint32_t t;

	(void)state;
	assert_int_equal(ps_client_declare(NULL, "w", 4, v, &t), PS_EINVAL);
	expect_error("ps_client_declare", "the client is NULL", NULL);
	assert_int_equal(ps_client_declare(c, NULL, 4, v, &t), PS_EINVAL);
	expect_error("ps_client_declare", "name is NULL", NULL);
	assert_int_equal(ps_client_declare(c, "", 4, v, &t), PS_EINVAL);
	expect_error("ps_client_declare", "is 0 bytes", NULL);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(ps_client_declare(c, longname, 4, v, &t), PS_EINVAL);
	expect_error("ps_client_declare", "is 299 bytes", "a name is 1 to");
	assert_int_equal(ps_client_declare(c, "w", 0, v, &t), PS_EINVAL);
	expect_error("ps_client_declare", "tensor 'w' has 0 elements", NULL);
	assert_int_equal(ps_client_declare(c, "w", 4, NULL, &t), PS_EINVAL);
	expect_error("ps_client_declare", "tensor 'w': values is NULL", NULL);
	assert_int_equal(ps_client_declare(c, "w", 4, v, &t), PS_OK);
	assert_int_equal(ps_client_declare(c, "w", 4, v, &t), PS_EINVAL);
	expect_error("ps_client_declare", "tensor 'w' is declared already",
		     "(tensor 0)");
	ps_client_destroy(&c);
	ps_config_free(&cfg);
}

/* Calls that need the job, before ps_client_start. */
static void test_before_start(void **state)
{
	static float v[4], g[4];
	ps_config *cfg;
	ps_client *c = new_client(&cfg);
	uint64_t seen = 0;
	uint32_t t;

	(void)state;
	assert_int_equal(ps_client_start(c), PS_ESTATE);
	expect_error("ps_client_start", "no tensor declared", NULL);
	assert_int_equal(ps_client_declare(c, "w", 4, v, &t), PS_OK);
	assert_int_equal(ps_client_push(c, t, g, 0), PS_ESTATE);
	expect_error("ps_client_push", "has not joined a job",
		     "call ps_client_start first");
	assert_int_equal(ps_client_push(c, 7, g, 0), PS_EINVAL);
	expect_error("ps_client_push", "tensor 7 is not declared",
		     "declared 1 tensor)");
	assert_int_equal(ps_client_push(c, t, NULL, 0), PS_EINVAL);
	expect_error("ps_client_push", "tensor 'w': grad is NULL", NULL);
	assert_int_equal(ps_client_push(NULL, t, g, 0), PS_EINVAL);
	expect_error("ps_client_push", "the client is NULL", NULL);
	assert_int_equal(ps_client_wait(c, t, 1, 0), PS_ESTATE);
	expect_error("ps_client_wait", "has not joined a job", NULL);
	assert_int_equal(ps_client_try(c, t, 1), PS_ESTATE);
	expect_error("ps_client_try", "has not joined a job", NULL);
	assert_int_equal(ps_client_wait_any(c, NULL, 0), PS_EINVAL);
	expect_error("ps_client_wait_any", "seen is NULL", NULL);
	(void)seen;
	assert_int_equal(ps_client_pull(c, t, 0), PS_ESTATE);
	expect_error("ps_client_pull", "has not joined a job", NULL);
	assert_int_equal(ps_client_barrier(c, 0), PS_ESTATE);
	expect_error("ps_client_barrier", "has not joined a job", NULL);
	assert_int_equal(ps_client_broadcast(c, 0, v, sizeof(v), 0),
			 PS_ESTATE);
	expect_error("ps_client_broadcast", "has not joined a job", NULL);
	assert_int_equal(ps_client_rank(c), -1);
	expect_error("ps_client_rank", "has not joined a job", NULL);
	assert_int_equal(ps_client_num_workers(c), -1);
	expect_error("ps_client_num_workers", "has not joined a job", NULL);
	assert_int_equal(ps_client_next_iteration(c, 0), 0);
	expect_error("ps_client_next_iteration", "has not joined a job",
		     NULL);
	assert_int_equal(ps_client_finish(c, &(ps_client_result){0}),
			 PS_ESTATE);
	expect_error("ps_client_finish", "has not joined a job", NULL);
	assert_int_equal(ps_client_finish(c, NULL), PS_EINVAL);
	expect_error("ps_client_finish", "result is NULL", NULL);
#ifndef PS_WITH_CUDA
	assert_int_equal(ps_client_declare_cuda(c, "d", 4, v, 0, &t),
			 PS_ENOTSUP);
	expect_error("ps_client_declare_cuda", "no CUDA support", NULL);
#endif
	assert_int_equal(ps_client_set_lr(c, 0, -1.0), PS_EINVAL);
	expect_error("ps_client_set_lr", "-1 is not a learning rate", NULL);
	/* like errno: a call that succeeds leaves the text */
	assert_int_equal(ps_client_set_lr(c, 0, 0.5), PS_OK);
	expect_error("ps_client_set_lr", "-1 is not a learning rate", NULL);
	ps_client_destroy(&c);
	ps_config_free(&cfg);
}

/* A start whose scheduler never answers fails with what the
 * communication thread logged; later calls say the job failed. */
static void test_start_fails(void **state)
{
	static float v[4];
	ps_config *cfg;
	ps_client *c;
	char err[256];
	uint32_t t;

	(void)state;
	assert_int_equal(ps_config_new(&cfg), PS_OK);
	const char *sets[] = {"cluster.scheduler_host=127.0.0.1",
			      "cluster.scheduler_port=1",
			      "cluster.connect_timeout_ms=100",
			      "cluster.register_timeout_ms=100"};
	for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++)
		assert_int_equal(ps_config_set(cfg, sets[i], err, sizeof(err)),
				 PS_OK);
	assert_int_equal(ps_client_create(cfg, &c), PS_OK);
	assert_int_equal(ps_client_declare(c, "w", 4, v, &t), PS_OK);
	assert_int_not_equal(ps_client_start(c), PS_OK);
	expect_error("ps_client_start", "the job failed: scheduler ",
		     "127.0.0.1:1 unreachable");
	assert_int_not_equal(ps_client_start(c), PS_OK);
	expect_error("ps_client_start", "the job failed: scheduler ",
		     "127.0.0.1:1 unreachable");
	assert_int_not_equal(ps_client_wait(c, t, 1, -1), PS_OK);
	expect_error("ps_client_wait", "the job failed: ", NULL);
	assert_int_equal(ps_client_declare(c, "w2", 4, v, &t), PS_ESTATE);
	expect_error("ps_client_declare", "declared after ps_client_start",
		     NULL);
	ps_client_destroy(&c);
	ps_config_free(&cfg);
}

static void *fail_on_thread(void *arg)
{
	(void)arg;
	if (ps_client_create(NULL, NULL) != PS_EINVAL)
		return "ps_client_create(NULL, NULL) did not fail";
	if (!strstr(ps_client_last_error(), "cfg is NULL"))
		return "the other thread's text is not its own";
	return NULL;
}

/* The text is the calling thread's. */
static void test_per_thread(void **state)
{
	static float v[4];
	ps_config *cfg;
	ps_client *c = new_client(&cfg);
	pthread_t th;
	void *res;
	uint32_t t;

	(void)state;
	assert_int_equal(ps_client_declare(c, "w", 4, v, &t), PS_OK);
	assert_int_equal(ps_client_declare(c, "w", 4, v, &t), PS_EINVAL);
	assert_int_equal(pthread_create(&th, NULL, fail_on_thread, NULL), 0);
	assert_int_equal(pthread_join(th, &res), 0);
	if (res)
		fail_msg("%s", (const char *)res);
	expect_error("ps_client_declare", "tensor 'w' is declared already",
		     NULL);
	ps_client_destroy(&c);
	ps_config_free(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create),
		cmocka_unit_test(test_declare),
		cmocka_unit_test(test_before_start),
		cmocka_unit_test(test_start_fails),
		cmocka_unit_test(test_per_thread),
	};

	ps_log_init("worker", PS_LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
