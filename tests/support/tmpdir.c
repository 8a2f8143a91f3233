/*
 * tests/support/tmpdir.c - see tmpdir.h.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/tmpdir.h"

int test_tmpdir_create(char *buf, size_t cap, const char *tag)
{
	snprintf(buf, cap, "/tmp/ordo-test-%s-XXXXXX", tag);
	return mkdtemp(buf) ? 0 : -1;
}

int test_tmpdir_remove(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[512];

	if (d) {
		while ((de = readdir(d)) != NULL) {
			if (strcmp(de->d_name, ".") == 0 ||
			    strcmp(de->d_name, "..") == 0)
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			unlink(path);
		}
		closedir(d);
	}
	return rmdir(dir);
}

const char *test_write_file(const char *dir, const char *name,
			    const char *text)
{
	static char paths[8][512];
	static int next;
	char *path = paths[next++ % 8];
	FILE *f;

	snprintf(path, sizeof(paths[0]), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return NULL;
	fputs(text, f);
	return fclose(f) == 0 ? path : NULL;
}

void *test_read_file(const char *path, size_t *len_p)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)n + 1);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		if (buf) {
			buf[n] = '\0';
			if (len_p)
				*len_p = (size_t)n;
		}
	}
	fclose(f);
	return buf;
}
