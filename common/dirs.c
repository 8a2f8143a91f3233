/*
 * common/dirs.c - see dirs.h.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/dirs.h"
#include "ordo/error.h"

int ps_make_dirs_at(char *path, mode_t mode)
{
	struct stat st;
	size_t len = strlen(path);

	while (len > 1 && path[len - 1] == '/')
		path[--len] = '\0';
	/* each parent in turn, then the directory itself */
	for (size_t i = 1; i <= len; i++) {
		if (i < len && path[i] != '/')
			continue;
		path[i] = '\0';
		if (mkdir(path, mode) != 0 && errno != EEXIST)
			return errno;
		if (i < len)
			path[i] = '/';
	}
	if (stat(path, &st) != 0)
		return errno;
	return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
}

int ps_make_dirs(const char *dir, char *why, size_t whylen)
{
	char path[PATH_MAX];
	size_t len = strlen(dir);
	int e;

	if (len == 0 || len >= sizeof(path)) {
		snprintf(why, whylen, "directory name %s", len ? "too long"
							      : "empty");
		return PS_EINVAL;
	}
	memcpy(path, dir, len + 1);
	e = ps_make_dirs_at(path, 0777);
	if (e == 0)
		return PS_OK;
	snprintf(why, whylen, "cannot create the directory %s: %s", path,
		 strerror(e));
	return PS_EIO;
}
