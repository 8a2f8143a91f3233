/*
 * common/dirs.h - creating a directory and its parents (mkdir -p).
 */
#ifndef ORDO_COMMON_DIRS_H
#define ORDO_COMMON_DIRS_H

#include <stddef.h>
#include <sys/types.h>

/* mkdir -p in place: creates path (trailing slashes dropped) and every
 * missing parent with mode (less the umask), and checks it is a
 * directory. 0, or the errno of the step that failed with path cut
 * to the part that could not be created. */
int ps_make_dirs_at(char *path, mode_t mode);

/* Creates dir and every missing parent (mode 0777 less the umask). An
 * existing directory is fine; an existing file of another kind is not.
 * PS_OK, or PS_EINVAL (a path longer than PATH_MAX) or PS_EIO with why
 * naming the path that failed and the system's reason. */
int ps_make_dirs(const char *dir, char *why, size_t whylen);

#endif /* ORDO_COMMON_DIRS_H */
