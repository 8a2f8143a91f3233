/*
 * tests/common/test_dirs.c - ps_make_dirs (common/dirs.h): mkdir -p,
 * and what it refuses, by name.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/dirs.h"
#include "ordo/error.h"
#include "support/tmpdir.h"

static int is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void test_parents(void **state)
{
	char tmp[256], path[512], why[512];

	(void)state;
	assert_int_equal(test_tmpdir_create(tmp, sizeof(tmp), "dirs"), 0);
	snprintf(path, sizeof(path), "%s/a/b/c", tmp);
	assert_int_equal(ps_make_dirs(path, why, sizeof(why)), PS_OK);
	assert_true(is_dir(path));
	/* again: an existing directory is fine, a trailing slash too */
	snprintf(path, sizeof(path), "%s/a/b/c/", tmp);
	assert_int_equal(ps_make_dirs(path, why, sizeof(why)), PS_OK);
	/* a file on the way is refused by name */
	assert_non_null(test_write_file(tmp, "f", "x"));
	snprintf(path, sizeof(path), "%s/f", tmp);
	assert_int_equal(ps_make_dirs(path, why, sizeof(why)), PS_EIO);
	assert_non_null(strstr(why, path));
	assert_non_null(strstr(why, "Not a directory"));
	snprintf(path, sizeof(path), "%s/f/g", tmp);
	assert_int_equal(ps_make_dirs(path, why, sizeof(why)), PS_EIO);
	assert_non_null(strstr(why, "cannot create the directory"));
	snprintf(path, sizeof(path), "%s/a/b/c", tmp);
	assert_int_equal(rmdir(path), 0);
	snprintf(path, sizeof(path), "%s/a/b", tmp);
	assert_int_equal(rmdir(path), 0);
	snprintf(path, sizeof(path), "%s/a", tmp);
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(test_tmpdir_remove(tmp), 0);
}

static void test_bad_names(void **state)
{
	static char longname[PATH_MAX + 8];
	char why[128];

	(void)state;
	assert_int_equal(ps_make_dirs("", why, sizeof(why)), PS_EINVAL);
	assert_non_null(strstr(why, "empty"));
	memset(longname, 'a', sizeof(longname) - 1);
	assert_int_equal(ps_make_dirs(longname, why, sizeof(why)), PS_EINVAL);
	assert_non_null(strstr(why, "too long"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parents),
		cmocka_unit_test(test_bad_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
