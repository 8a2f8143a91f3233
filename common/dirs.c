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

static int fail(char *why, size_t whylen, const char *path, int e)
{
	snprintf(why, whylen, "cannot create the directory %s: %s", path,
		 strerror(e));
	return PS_EIO;
}

int ps_make_dirs(const char *dir, char *why, size_t whylen)
{
	char path[PATH_MAX];
	struct stat st;
	size_t len = strlen(dir);

	if (len == 0 || len >= sizeof(path)) {
		snprintf(why, whylen, "directory name %s", len ? "too long"
							      : "empty");
		return PS_EINVAL;
	}
	memcpy(path, dir, len + 1);
	/* each parent in turn, then the directory itself */
	for (size_t i = 1; i <= len; i++) {
		if (i < len && path[i] != '/')
			continue;
		path[i] = '\0';
		if (mkdir(path, 0777) != 0 && errno != EEXIST)
			return fail(why, whylen, path, errno);
		if (i < len)
			path[i] = '/';
	}
	if (stat(path, &st) != 0)
		return fail(why, whylen, path, errno);
	if (!S_ISDIR(st.st_mode))
		return fail(why, whylen, path, ENOTDIR);
	return PS_OK;
}
