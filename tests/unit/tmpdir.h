/*
 * tests/unit/tmpdir.h - a scratch directory for a test group.
 */
#ifndef ORDO_TESTS_TMPDIR_H
#define ORDO_TESTS_TMPDIR_H

#include <stddef.h>

/* Creates /tmp/ordo-test-TAG-XXXXXX into buf. 0 or -1. */
int test_tmpdir_create(char *buf, size_t cap, const char *tag);
/* Removes the files in dir (one level), then dir. 0 or -1. */
int test_tmpdir_remove(const char *dir);

#endif /* ORDO_TESTS_TMPDIR_H */
