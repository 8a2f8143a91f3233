/*
 * checkpoint/io.c - the file helpers of checkpoint/ (see internal.h):
 * whole transfers through EINTR and short reads/writes, crc32 of any
 * length, atomic replacement (tmp, fsync, rename, fsync of the directory),
 * messages that name the path and errno's text, and the ckpt-<12 digits>
 * directory scan.
 *
 * Threads: no shared state.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "checkpoint/internal.h"
#include "common/dirs.h"

#define CRC_PIECE (1u << 30) /* crc32() takes uInt lengths */
#define IO_PIECE  (1u << 30) /* one read/write call at most (Linux: 2 GiB) */

int psi_ckpt_sys_fail(char *why, size_t whylen, int errnum, const char *path,
                      const char *what)
{
	int err = ps_err_from_errno(errnum);

	ps_errf(why, whylen, err, "%s: %s: %s", path, what, strerror(errnum));
	return err == PS_OK ? PS_EIO : err;
}

int psi_ckpt_join(char *buf, size_t cap, char *why, size_t whylen,
                  const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, cap, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= cap)
		return ps_errf(why, whylen, PS_EINVAL,
		               "path too long (%d bytes, at most %zu): "
		               "%.64s...",
		               n, cap ? cap - 1 : 0, buf);
	return PS_OK;
}

uint32_t psi_ckpt_crc(uint32_t crc, const void *p, uint64_t n)
{
	const unsigned char *b = p;

	while (n > 0) {
		uInt piece = n > CRC_PIECE ? CRC_PIECE : (uInt)n;

		crc = (uint32_t)crc32(crc, b, piece);
		b += piece;
		n -= piece;
	}
	return crc;
}

int psi_ckpt_pwrite_all(int fd, const void *p, uint64_t n, uint64_t off)
{
	const char *b = p;

	while (n > 0) {
		size_t piece = n > IO_PIECE ? IO_PIECE : (size_t)n;
		ssize_t w = pwrite(fd, b, piece, (off_t)off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (w == 0) {
			errno = ENOSPC;
			return -1;
		}
		b += w;
		off += (uint64_t)w;
		n -= (uint64_t)w;
	}
	return 0;
}

int psi_ckpt_pread_all(int fd, void *p, uint64_t n, uint64_t off, uint64_t *got)
{
	char *b = p;
	uint64_t done = 0;

	while (done < n) {
		uint64_t left = n - done;
		size_t piece = left > IO_PIECE ? IO_PIECE : (size_t)left;
		ssize_t r = pread(fd, b + done, piece, (off_t)(off + done));

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0)
			break;
		done += (uint64_t)r;
	}
	if (got)
		*got = done;
	return done == n ? 0 : 1;
}

int psi_ckpt_read_at(int fd, void *p, uint64_t n, uint64_t off,
                     const char *path, char *why, size_t whylen)
{
	int r = psi_ckpt_pread_all(fd, p, n, off, NULL);

	if (r < 0)
		return psi_ckpt_sys_fail(why, whylen, errno, path, "read");
	if (r > 0)
		return ps_errf(why, whylen, PS_EPROTO,
		               "%s: truncated (short read at byte "
		               "%" PRIu64 ")",
		               path, off);
	return PS_OK;
}

int psi_ckpt_mkdirs(const char *dir, char *why, size_t whylen)
{
	char path[PS_CKPT_PATH_MAX];
	int rc, e;

	rc = psi_ckpt_join(path, sizeof(path), why, whylen, "%s", dir);
	if (rc)
		return rc;
	e = ps_make_dirs_at(path, 0755);
	if (e)
		return psi_ckpt_sys_fail(why, whylen, e, path,
		                         "cannot create the directory");
	return PS_OK;
}

int psi_ckpt_open_regular(const char *path, int *fd_p, char *why,
                          size_t whylen)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	int flags;

	*fd_p = -1;
	if (fd < 0) {
		if (errno == ENOENT)
			return PS_ENOENT;
		if (errno == ELOOP)
			return ps_errf(why, whylen, PS_EPROTO,
			               "%s: not a regular file (a symbolic "
			               "link)",
			               path);
		return psi_ckpt_sys_fail(why, whylen, errno, path, "open");
	}
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		return psi_ckpt_sys_fail(why, whylen, e, path, "fstat");
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return ps_errf(why, whylen, PS_EPROTO,
		               "%s: not a regular file (%s)", path,
		               S_ISFIFO(st.st_mode)  ? "a FIFO"
		               : S_ISDIR(st.st_mode) ? "a directory"
		               : S_ISSOCK(st.st_mode) ? "a socket"
		                                      : "a device");
	}
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
		int e = errno;
		close(fd);
		return psi_ckpt_sys_fail(why, whylen, e, path, "fcntl");
	}
	*fd_p = fd;
	return PS_OK;
}

int psi_ckpt_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc, e;

	if (fd < 0)
		return -1;
	rc = fsync(fd);
	e = errno;
	close(fd);
	/* some filesystems cannot fsync a directory: nothing to wait for */
	if (rc != 0 && e == EINVAL)
		rc = 0;
	errno = e;
	return rc;
}

int psi_ckpt_create_tmp(const char *tmp, int *err_p, char *why, size_t whylen)
{
	/* No fallocate(2): on ext4, writing into the unwritten extents it
	 * reserves measured up to 2x slower than plain writes; a full disk
	 * fails at the write instead, and the file is removed all the same.
	 * O_NOFOLLOW: never write through a symlink planted at tmp. */
	int flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW;
	int fd = open(tmp, flags, 0644);

	if (fd < 0)
		*err_p =
		    psi_ckpt_sys_fail(why, whylen, errno, tmp, "cannot create");
	return fd;
}

int psi_ckpt_abandon(int fd, const char *tmp, int err)
{
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return err;
}

int psi_ckpt_commit(int fd, const char *tmp, const char *path, char *why,
                    size_t whylen)
{
	char dir[PS_CKPT_PATH_MAX];
	const char *slash = strrchr(path, '/');
	int rc;

	if (fsync(fd) != 0) {
		rc = psi_ckpt_sys_fail(why, whylen, errno, tmp, "fsync");
		return psi_ckpt_abandon(fd, tmp, rc);
	}
	if (close(fd) != 0) {
		rc = psi_ckpt_sys_fail(why, whylen, errno, tmp, "close");
		return psi_ckpt_abandon(-1, tmp, rc);
	}
	if (rename(tmp, path) != 0) {
		rc = psi_ckpt_sys_fail(why, whylen, errno, path,
		                       "cannot rename the temporary file to");
		return psi_ckpt_abandon(-1, tmp, rc);
	}
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (psi_ckpt_fsync_dir(dir) != 0)
		return psi_ckpt_sys_fail(why, whylen, errno, dir,
		                         "fsync of the directory");
	return PS_OK;
}

int psi_ckpt_parse_name(const char *name, uint64_t *iteration_p)
{
	uint64_t v = 0;

	if (strncmp(name, "ckpt-", 5) != 0)
		return -1;
	name += 5;
	for (int i = 0; i < 12; i++) {
		if (name[i] < '0' || name[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(name[i] - '0');
	}
	if (name[12] != '\0')
		return -1;
	*iteration_p = v;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int psi_ckpt_scan(const char *root, uint64_t **iters_p, size_t *n_p, char *why,
                  size_t whylen)
{
	char path[PS_CKPT_PATH_MAX];
	DIR *d = opendir(root);
	struct dirent *de;
	uint64_t *iters = NULL, it;
	size_t n = 0, cap = 0;
	struct stat st;

	if (!d)
		return psi_ckpt_sys_fail(why, whylen, errno, root,
		                         "cannot read the directory");
	while ((de = readdir(d)) != NULL) {
		if (psi_ckpt_parse_name(de->d_name, &it) != 0)
			continue;
		/* lstat: a symlink named like a checkpoint is not one */
		if (snprintf(path, sizeof(path), "%s/%s", root, de->d_name) >=
		        (int)sizeof(path) ||
		    lstat(path, &st) != 0 || !S_ISDIR(st.st_mode))
			continue;
		if (n == cap) {
			uint64_t *more;

			cap = cap ? 2 * cap : 16;
			more = realloc(iters, cap * sizeof(*iters));
			if (!more) {
				free(iters);
				closedir(d);
				return ps_errf(why, whylen, PS_ENOMEM,
				               "%s: out of memory", root);
			}
			iters = more;
		}
		iters[n++] = it;
	}
	closedir(d);
	if (n)
		qsort(iters, n, sizeof(*iters), cmp_u64);
	*iters_p = iters;
	*n_p = n;
	return PS_OK;
}
