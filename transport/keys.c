/*
 * transport/keys.c - a job's keys: its secret and its CURVE pair (keys.h).
 */
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>
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
	char line[PS_SECRET_LEN + 2];
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
	char secret[PS_SECRET_LEN + 1];
	rc = ps_secret_make(secret, why, whylen);
	if (rc == PS_OK)
		rc = write_key(dir, dfd, "job.key", k.sec, 0600, force, why,
			       whylen);
	if (rc == PS_OK)
		rc = write_key(dir, dfd, "job.pub", k.pub, 0644, force, why,
			       whylen);
	if (rc == PS_OK)
		rc = write_key(dir, dfd, "job.secret", secret, 0600, force,
			       why, whylen);
	memset(k.sec, 0, sizeof(k.sec));
	memset(secret, 0, sizeof(secret));
	close(dfd);
	return rc;
}

/* One key from dir/name into key: a Z85 key (PS_KEY_Z85_LEN + 1 bytes),
 * or the secret (job.secret, PS_SECRET_LEN + 1 bytes). */
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
	int secret = strcmp(name, "job.secret") == 0;
	uint8_t bin[32];
	if (secret ? !ps_secret_valid(buf)
		   : strlen(buf) != PS_KEY_Z85_LEN || !zmq_z85_decode(bin, buf)) {
		memset(buf, 0, sizeof(buf));
		return ps_errf(why, whylen, PS_EINVAL,
		               "%s: not a %s (one line of %d %s, as ps-keygen "
		               "writes)",
		               path, secret ? "job secret" : "CURVE key",
		               secret ? PS_SECRET_LEN : PS_KEY_Z85_LEN,
		               secret ? "hexadecimal digits" : "Z85 characters");
	}
	memcpy(key, buf, (secret ? PS_SECRET_LEN : PS_KEY_Z85_LEN) + 1);
	memset(buf, 0, sizeof(buf));
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

int ps_secret_make(char *secret, char *why, size_t whylen)
{
	uint8_t raw[32];
	size_t got = 0;

	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return ps_errf(why, whylen, PS_EIO,
				       "cannot draw a job secret: getrandom: "
				       "%s", strerror(errno));
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(raw); i++) {
		secret[2 * i] = "0123456789abcdef"[raw[i] >> 4];
		secret[2 * i + 1] = "0123456789abcdef"[raw[i] & 15];
	}
	secret[PS_SECRET_LEN] = '\0';
	memset(raw, 0, sizeof(raw));
	return PS_OK;
}

int ps_secret_valid(const char *s)
{
	if (!s || strlen(s) != PS_SECRET_LEN)
		return 0;
	for (size_t i = 0; i < PS_SECRET_LEN; i++)
		if (!strchr("0123456789abcdefABCDEF", s[i]))
			return 0;
	return 1;
}

void ps_secret_bytes(const char *s, uint8_t out[32])
{
	for (size_t i = 0; i < 32; i++) {
		unsigned v = 0;
		for (int k = 0; k < 2; k++) {
			char c = s[2 * i + (size_t)k];
			v = v << 4 | (unsigned)(c <= '9'   ? c - '0'
						: c <= 'F' ? c - 'A' + 10
							   : c - 'a' + 10);
		}
		out[i] = (uint8_t)v;
	}
}

uint64_t ps_token_kid_bytes(const uint8_t token[32])
{
	uint8_t h[16];
	uint64_t kid = 0;

	crypto_generichash(h, sizeof(h), token, 32, NULL, 0);
	for (int i = 7; i >= 0; i--)
		kid = kid << 8 | h[i];
	return kid ? kid : 1;
}

uint64_t ps_token_kid(const char *token)
{
	uint8_t raw[32];

	ps_secret_bytes(token, raw);
	uint64_t kid = ps_token_kid_bytes(raw);
	memset(raw, 0, sizeof(raw));
	return kid;
}

int ps_secret_equal(const void *a, const void *b, size_t n)
{
	const volatile uint8_t *x = a, *y = b;
	uint8_t d = 0;
	for (size_t i = 0; i < n; i++)
		d |= (uint8_t)(x[i] ^ y[i]);
	return d == 0;
}

static void set_from(char *from, size_t fromlen, const char *fmt,
		     const char *a)
{
	if (from && fromlen)
		snprintf(from, fromlen, fmt, a);
}

int ps_secret_find(const char *dir, char *secret, char *from, size_t fromlen,
		   char *why, size_t whylen)
{
	secret[0] = '\0';
	set_from(from, fromlen, "%s", "");
	if (dir && *dir) {
		int dfd = -1, rc;
		struct stat st;

		rc = open_dir(dir, 0, &dfd, why, whylen);
		if (rc != PS_OK)
			return rc;
		if (fstatat(dfd, "job.secret", &st, AT_SYMLINK_NOFOLLOW) == 0) {
			rc = read_key(dir, dfd, "job.secret", 1, secret, why,
				      whylen);
			close(dfd);
			if (rc == PS_OK)
				set_from(from, fromlen, "%s/job.secret", dir);
			return rc;
		}
		close(dfd);
	}
	const char *env = getenv(PS_SECRET_ENV);
	if (!env || !*env)
		return PS_OK;
	if (!ps_secret_valid(env))
		return ps_errf(why, whylen, PS_EINVAL,
			       "%s is not a job secret (%d hexadecimal digits, "
			       "as `ps-keygen --secret` prints)",
			       PS_SECRET_ENV, PS_SECRET_LEN);
	memcpy(secret, env, PS_SECRET_LEN + 1);
	set_from(from, fromlen, "%s", PS_SECRET_ENV);
	return PS_OK;
}
