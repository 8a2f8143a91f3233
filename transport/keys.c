/*
 * transport/keys.c - a job's CURVE key pair on disk (keys.h).
 */
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zmq.h>

#include "common/errbuf.h"
#include "ordo/error.h"
#include "transport/keys.h"

/* The keys directory, open as dfd, must be this user's (or root's) and
 * writable by no one else: whoever can write there can replace the keys. */
static int check_dir(const char *dir, int dfd, char *why, size_t whylen)
{
	struct stat st;

	if (fstat(dfd, &st) != 0)
		return ps_errf(why, whylen, ps_err_from_errno(errno), "%s: %s",
			       dir, strerror(errno));
	if (st.st_uid != geteuid() && st.st_uid != 0)
		return ps_errf(why, whylen, PS_EINVAL,
			       "%s: owned by uid %u, not by this user (uid "
			       "%u) or root: a keys directory must be the "
			       "user's own",
			       dir, (unsigned)st.st_uid, (unsigned)geteuid());
	if (st.st_mode & 022)
		return ps_errf(why, whylen, PS_EINVAL,
			       "%s: writable by %s (mode %04o): a keys "
			       "directory must be private (chmod 700 %s)",
			       dir,
			       (st.st_mode & 022) == 022 ? "group and others"
			       : (st.st_mode & 020)      ? "its group"
							 : "others",
			       (unsigned)(st.st_mode & 07777), dir);
	return PS_OK;
}

/* dir, created with mode 0700 if missing, open (O_DIRECTORY) in *dfd_p
 * and checked (check_dir). */
static int open_dir(const char *dir, int create, int *dfd_p, char *why,
		    size_t whylen)
{
	int dfd = -1, rc;

	if (create && mkdir(dir, 0700) != 0 && errno != EEXIST)
		return ps_errf(why, whylen, ps_err_from_errno(errno), "%s: %s",
			       dir, strerror(errno));
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return ps_errf(why, whylen, ps_err_from_errno(errno),
			       "%s: %s%s", dir, strerror(errno),
			       create ? ""
				      : " (security.keys_dir holds the job's "
					"keys: ps-keygen DIR writes them)");
	rc = check_dir(dir, dfd, why, whylen);
	if (rc != PS_OK) {
		close(dfd);
		return rc;
	}
	*dfd_p = dfd;
	return PS_OK;
}

/* dir/name, a new file (force: whatever was there, a symlink included, is
 * removed first, never followed). */
static int write_key(const char *dir, int dfd, const char *name,
		     const char *key, mode_t mode, int force, char *why,
		     size_t whylen)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (force && unlinkat(dfd, name, 0) != 0 && errno != ENOENT)
		return ps_errf(why, whylen, ps_err_from_errno(errno),
			       "%s: cannot replace it: %s", path,
			       strerror(errno));
	/* O_EXCL: never through a symlink, never an existing file */
	int fd = openat(dfd, name,
			O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			mode);
	if (fd < 0)
		return ps_errf(
		    why, whylen, ps_err_from_errno(errno), "%s: %s%s", path,
		    strerror(errno),
		    errno == EEXIST && !force
			? " (ps-keygen --force replaces it)"
			: "");
	char line[PS_KEY_Z85_LEN + 2];
	int n = snprintf(line, sizeof(line), "%s\n", key);
	int ok = fchmod(fd, mode) == 0 && write(fd, line, (size_t)n) == n &&
		 fsync(fd) == 0;
	int e = errno;
	if (close(fd) != 0 && ok) {
		ok = 0;
		e = errno;
	}
	if (!ok)
		return ps_errf(why, whylen, ps_err_from_errno(e), "%s: %s",
		               path, strerror(e));
	return PS_OK;
}

int ps_keys_generate(const char *dir, int force, char *why, size_t whylen)
{
	ps_job_keys k;
	int dfd = -1, rc;

	rc = open_dir(dir, 1, &dfd, why, whylen);
	if (rc != PS_OK)
		return rc;
	if (zmq_curve_keypair(k.pub, k.sec) != 0) {
		close(dfd);
		return ps_errf(why, whylen, PS_ENOTSUP,
		               "this libzmq cannot make CURVE keys (built "
		               "without libsodium?): %s",
		               zmq_strerror(errno));
	}
	rc = write_key(dir, dfd, "job.key", k.sec, 0600, force, why, whylen);
	if (rc == PS_OK)
		rc = write_key(dir, dfd, "job.pub", k.pub, 0644, force, why,
			       whylen);
	memset(k.sec, 0, sizeof(k.sec));
	close(dfd);
	return rc;
}

/* One Z85 key from dir/name into key (41 bytes). */
static int read_key(const char *dir, int dfd, const char *name,
		    int private_, char *key, char *why, size_t whylen)
{
	char path[4096], buf[128];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ps_errf(
		    why, whylen, ps_err_from_errno(errno),
		    "%s: %s (security.keys_dir holds the job's keys: "
		    "ps-keygen DIR writes them)",
		    path, strerror(errno));
	if (fstat(fd, &st) != 0) {
		close(fd);
		return ps_errf(why, whylen, PS_EIO, "%s: %s", path,
		               strerror(errno));
	}
	if (private_ && (st.st_mode & 077)) {
		close(fd);
		return ps_errf(why, whylen, PS_EINVAL,
		               "%s: readable by others (mode %04o): a secret "
		               "key must be private (chmod 600 %s)",
		               path, (unsigned)(st.st_mode & 07777), path);
	}
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return ps_errf(why, whylen, PS_EIO, "%s: %s", path,
		               strerror(errno));
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	uint8_t bin[32];
	if (strlen(buf) != PS_KEY_Z85_LEN || !zmq_z85_decode(bin, buf))
		return ps_errf(why, whylen, PS_EINVAL,
		               "%s: not a CURVE key (one line of %d Z85 "
		               "characters, as ps-keygen writes)",
		               path, PS_KEY_Z85_LEN);
	memcpy(key, buf, PS_KEY_Z85_LEN + 1);
	return PS_OK;
}

int ps_keys_load(const char *dir, ps_job_keys *k, char *why, size_t whylen)
{
	char derived[PS_KEY_Z85_LEN + 1];
	int rc, dfd = -1;

	if (!dir || !*dir)
		return ps_errf(
		    why, whylen, PS_EINVAL,
		    "security.mode = curve needs security.keys_dir, "
		    "the directory with the job's key pair (ps-keygen "
		    "DIR writes one; ps-launch makes one per job when "
		    "keys_dir is empty)");
	rc = open_dir(dir, 0, &dfd, why, whylen);
	if (rc != PS_OK)
		return rc;
	rc = read_key(dir, dfd, "job.key", 1, k->sec, why, whylen);
	if (rc == PS_OK)
		rc = read_key(dir, dfd, "job.pub", 0, k->pub, why, whylen);
	close(dfd);
	if (rc != PS_OK)
		return rc;
	if (zmq_curve_public(derived, k->sec) != 0 ||
	    strcmp(derived, k->pub) != 0)
		return ps_errf(why, whylen, PS_EINVAL,
		               "%s/job.pub is not the public key of job.key "
		               "(files from two different pairs?)",
		               dir);
	return PS_OK;
}
