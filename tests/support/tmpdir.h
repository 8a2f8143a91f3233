/*
 * tests/support/tmpdir.h - a scratch directory for a test group.
 */
#ifndef ORDO_TESTS_TMPDIR_H
#define ORDO_TESTS_TMPDIR_H

#include <stddef.h>

/* Creates /tmp/ordo-test-TAG-XXXXXX into buf. 0 or -1. */
int test_tmpdir_create(char *buf, size_t cap, const char *tag);
/* Removes the files in dir (one level), then dir. 0 or -1. */
int test_tmpdir_remove(const char *dir);

/* Writes text to dir/name; returns the path (static storage, valid for
 * the next 7 calls too), or NULL if the file cannot be written. */
const char *test_write_file(const char *dir, const char *name,
			    const char *text);

/* The whole file at path, with a NUL after it (free()); its length into
 * *len_p (may be NULL). NULL if it cannot be read. */
void *test_read_file(const char *path, size_t *len_p);

#endif /* ORDO_TESTS_TMPDIR_H */
