/*
 * tests/transport/test_job_secret.c - the job's secret
 * (transport/keys.h).
 *
 *  - ps_secret_make: 64 hexadecimal digits, a new value each time;
 *    ps_secret_valid accepts exactly that.
 *  - ps_secret_find: nothing, ORDO_JOB_SECRET, security.keys_dir's
 *    job.secret (which wins over the environment), and the errors for a
 *    malformed value, a job.secret others can read, a malformed file.
 *  - ps_keys_generate writes job.secret, private, beside the pair.
 * The handshake that checks the secret is the transports' own test
 * (tests/transport/conformance.c, test_secret: tcp and rdma).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ordo/error.h"
#include "support/tmpdir.h"
#include "transport/keys.h"

static char dir[256];

static int setup(void **state)
{
	(void)state;
	unsetenv(PS_SECRET_ENV);
	return test_tmpdir_create(dir, sizeof(dir), "secret");
}

static int teardown(void **state)
{
	(void)state;
	unsetenv(PS_SECRET_ENV);
	return test_tmpdir_remove(dir);
}

static void test_make_and_valid(void **state)
{
	char a[PS_SECRET_LEN + 1], b[PS_SECRET_LEN + 1], why[256];
	(void)state;
	assert_int_equal(ps_secret_make(a, why, sizeof(why)), PS_OK);
	assert_int_equal(ps_secret_make(b, why, sizeof(why)), PS_OK);
	assert_int_equal(strlen(a), PS_SECRET_LEN);
	assert_true(ps_secret_valid(a));
	assert_string_not_equal(a, b);
	assert_int_equal(strspn(a, "0123456789abcdef"), PS_SECRET_LEN);

	char s[PS_SECRET_LEN + 2];
	memset(s, 'A', PS_SECRET_LEN);
	s[PS_SECRET_LEN] = '\0';
	assert_true(ps_secret_valid(s)); /* upper case is hexadecimal too */
	s[PS_SECRET_LEN - 1] = '\0';
	assert_false(ps_secret_valid(s)); /* 63 digits */
	s[PS_SECRET_LEN - 1] = 'A';
	s[PS_SECRET_LEN] = 'A';
	s[PS_SECRET_LEN + 1] = '\0';
	assert_false(ps_secret_valid(s)); /* 65 */
	s[PS_SECRET_LEN] = '\0';
	s[10] = 'g';
	assert_false(ps_secret_valid(s));
	assert_false(ps_secret_valid(NULL));
}

static void test_find(void **state)
{
	char s[PS_SECRET_LEN + 1], from[512], why[1024];
	char mine[PS_SECRET_LEN + 1], other[PS_SECRET_LEN + 1];
	(void)state;
	assert_int_equal(ps_secret_make(mine, why, sizeof(why)), PS_OK);
	assert_int_equal(ps_secret_make(other, why, sizeof(why)), PS_OK);

	/* none anywhere: "" */
	assert_int_equal(ps_secret_find("", s, from, sizeof(from), why,
					 sizeof(why)),
			 PS_OK);
	assert_string_equal(s, "");

	/* the environment */
	setenv(PS_SECRET_ENV, mine, 1);
	assert_int_equal(ps_secret_find(NULL, s, from, sizeof(from), why,
					 sizeof(why)),
			 PS_OK);
	assert_string_equal(s, mine);
	assert_string_equal(from, PS_SECRET_ENV);

	/* a keys_dir without job.secret: still the environment */
	assert_int_equal(ps_secret_find(dir, s, from, sizeof(from), why,
					 sizeof(why)),
			 PS_OK);
	assert_string_equal(s, mine);

	/* job.secret in keys_dir wins over the environment */
	char line[PS_SECRET_LEN + 2];
	snprintf(line, sizeof(line), "%s\n", other);
	const char *path = test_write_file(dir, "job.secret", line);
	assert_non_null(path);
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(ps_secret_find(dir, s, from, sizeof(from), why,
					 sizeof(why)),
			 PS_OK);
	assert_string_equal(s, other);
	assert_non_null(strstr(from, "/job.secret"));

	/* a job.secret others can read */
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_not_equal(ps_secret_find(dir, s, from, sizeof(from), why,
					     sizeof(why)),
			     PS_OK);
	assert_non_null(strstr(why, "readable by others (mode 0644)"));

	/* a malformed job.secret */
	path = test_write_file(dir, "job.secret", "not a secret\n");
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_not_equal(ps_secret_find(dir, s, from, sizeof(from), why,
					     sizeof(why)),
			     PS_OK);
	assert_non_null(strstr(why, "job.secret: not a job secret (one line "
				    "of 64 hexadecimal digits"));
	unlink(path);

	/* a malformed ORDO_JOB_SECRET */
	setenv(PS_SECRET_ENV, "xyz", 1);
	assert_int_not_equal(ps_secret_find(NULL, s, from, sizeof(from), why,
					     sizeof(why)),
			     PS_OK);
	assert_non_null(strstr(why, "ORDO_JOB_SECRET is not a job secret"));
	assert_string_equal(s, "");
}

/* A token's key id: the same for the same token, different for another,
 * never 0, and not the token's own bytes. */
static void test_token_kid(void **state)
{
	char a[PS_SECRET_LEN + 1], b[PS_SECRET_LEN + 1], why[256];
	(void)state;
	assert_int_equal(ps_secret_make(a, why, sizeof(why)), PS_OK);
	assert_int_equal(ps_secret_make(b, why, sizeof(why)), PS_OK);
	uint64_t ka = ps_token_kid(a);
	assert_true(ka != 0);
	assert_true(ka == ps_token_kid(a));
	assert_true(ka != ps_token_kid(b));
	uint8_t raw[32];
	ps_secret_bytes(a, raw);
	uint64_t first = 0;
	for (int i = 7; i >= 0; i--)
		first = first << 8 | raw[i];
	assert_true(ka != first);
}

static void test_keygen_writes_secret(void **state)
{
	char keys[300], s[PS_SECRET_LEN + 1], from[512], why[1024];
	struct stat st;
	(void)state;
	snprintf(keys, sizeof(keys), "%s/keys", dir);
	assert_int_equal(ps_keys_generate(keys, 0, why, sizeof(why)), PS_OK);
	char path[400];
	snprintf(path, sizeof(path), "%s/job.secret", keys);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(ps_secret_find(keys, s, from, sizeof(from), why,
					 sizeof(why)),
			 PS_OK);
	assert_true(ps_secret_valid(s));
	const char *names[] = {"job.secret", "job.key", "job.pub"};
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", keys, names[i]);
		unlink(path);
	}
	rmdir(keys);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_make_and_valid),
	    cmocka_unit_test(test_token_kid),
	    cmocka_unit_test_setup_teardown(test_find, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_keygen_writes_secret, setup,
					    teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
