/*
 * tests/fuzz/fuzz_keys.c - libFuzzer harness for the loaders of a job's
 * keys (transport/keys.h, security.keys_dir): the CURVE key pair
 * (ps_keys_load), what every node of a security.mode = curve job reads,
 * and with flag bit 6 the job's secret (ps_secret_find), what every node
 * of a secret or auto job reads.
 *
 * Input: byte 0 (flags), byte 1 the length of job.key's bytes that
 * follow, the rest job.pub. Flags: bit 0 - write job.pub as the public
 * key of job.key's first line when that is a key (a fuzzer does not find
 * Curve25519 pairs by mutation: this reaches the loader's success);
 * bit 1 - job.key mode 0640 instead of 0600; bit 2 - the directory
 * group-writable (0770); bit 3 - no job.key; bit 4 - no job.pub; bit 5 -
 * job.pub a directory; bit 6 - job.key's bytes also as job.secret (mode
 * 0600, or 0640 with bit 1), read by ps_secret_find with
 * ORDO_JOB_SECRET unset. The files go into a directory of the harness's own
 * under $TMPDIR (made once, removed at exit). At start the harness also
 * loads a pair ps_keys_generate wrote (a round trip).
 *
 * Oracle: every error has a message; a loose job.key, a loose directory
 * or a missing file is refused; what loads is job.key's and job.pub's
 * first lines, 40 Z85 characters each, and the public key is job.key's.
 * A secret is found exactly when job.secret's first line is 64
 * hexadecimal digits in a private file and directory, and is that line.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include <zmq.h>

#include "common/log.h"
#include "ordo/error.h"
#include "transport/keys.h"
#include "fuzz_common.h"

enum {
	F_DERIVE = 1,
	F_KEY_LOOSE = 2,
	F_DIR_LOOSE = 4,
	F_NO_KEY = 8,
	F_NO_PUB = 16,
	F_PUB_DIR = 32,
	F_SECRET = 64,
};

static char dir[256], gen[300];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void remove_in(const char *d)
{
	char path[512];
	static const char *const names[] = {"job.key", "job.pub",
					    "job.secret"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", d, names[i]);
		if (unlink(path) != 0 && errno == EISDIR)
			rmdir(path);
	}
}

static void remove_dir(void)
{
	remove_in(gen);
	rmdir(gen);
	remove_in(dir);
	rmdir(dir);
}

/* A key loaded: 40 Z85 characters. */
static void check_z85(const char *what, const char *k)
{
	uint8_t bin[32];
	FUZZ_CHECK(strlen(k) == PS_KEY_Z85_LEN && zmq_z85_decode(bin, k),
		   "%s '%s' is not a Z85 key", what, k);
}

/* The pair ps_keys_generate writes loads, and is a pair. */
static void generate_and_load(void)
{
	char why[1024];
	ps_job_keys k, again;

	snprintf(gen, sizeof(gen), "%s/gen", dir);
	FUZZ_CHECK(ps_keys_generate(gen, 0, why, sizeof(why)) == PS_OK,
		   "ps_keys_generate: %s", why);
	FUZZ_CHECK(ps_keys_load(gen, &k, why, sizeof(why)) == PS_OK,
		   "a generated pair does not load: %s", why);
	check_z85("public key", k.pub);
	check_z85("secret key", k.sec);
	FUZZ_CHECK(ps_keys_generate(gen, 0, why, sizeof(why)) != PS_OK &&
			   why[0],
		   "ps_keys_generate replaced a pair without force");
	FUZZ_CHECK(ps_keys_generate(gen, 1, why, sizeof(why)) == PS_OK,
		   "ps_keys_generate --force: %s", why);
	FUZZ_CHECK(ps_keys_load(gen, &again, why, sizeof(why)) == PS_OK &&
			   strcmp(again.sec, k.sec) != 0,
		   "a forced pair does not load, or is the old one: %s", why);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	ps_log_init("fuzz", -1 /* nothing: errors are expected */);
	fuzz_private_dir(dir, sizeof(dir), "keys", remove_dir);
	generate_and_load();
	return 0;
}

static void write_file(const char *name, const void *p, size_t n,
		       mode_t mode)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	FUZZ_CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
	FUZZ_CHECK(fchmod(fd, mode) == 0, "fchmod %s", path);
	FUZZ_CHECK(write(fd, p, n) == (ssize_t)n, "write %s", path);
	close(fd);
}

/* The first line of a file as ps_keys_load reads it (127 bytes). */
static void first_line(const uint8_t *p, size_t n, char *out, size_t cap)
{
	n = n < cap - 1 ? n : cap - 1;
	memcpy(out, p, n);
	out[n] = '\0';
	out[strcspn(out, "\r\n")] = '\0';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[1024], key_line[128], pub_line[128];
	ps_job_keys k;

	if (size < 2)
		return 0;
	unsigned flags = data[0];
	size_t key_len = data[1] < size - 2 ? data[1] : size - 2;
	const uint8_t *key = data + 2, *pub = key + key_len;
	size_t pub_len = size - 2 - key_len;
	char derived[PS_KEY_Z85_LEN + 1];

	remove_in(dir);
	FUZZ_CHECK(chmod(dir, flags & F_DIR_LOOSE ? 0770 : 0700) == 0,
		   "chmod %s", dir);
	first_line(key, key_len, key_line, sizeof(key_line));
	if ((flags & F_DERIVE) && strlen(key_line) == PS_KEY_Z85_LEN &&
	    zmq_curve_public(derived, key_line) == 0) {
		pub = (const uint8_t *)derived;
		pub_len = PS_KEY_Z85_LEN;
	}
	first_line(pub, pub_len, pub_line, sizeof(pub_line));
	if (!(flags & F_NO_KEY))
		write_file("job.key", key, key_len,
			   flags & F_KEY_LOOSE ? 0640 : 0600);
	if (flags & F_PUB_DIR) {
		char path[512];
		snprintf(path, sizeof(path), "%s/job.pub", dir);
		FUZZ_CHECK(mkdir(path, 0700) == 0, "mkdir %s", path);
	} else if (!(flags & F_NO_PUB)) {
		write_file("job.pub", pub, pub_len, 0644);
	}

	if (flags & F_SECRET) {
		char s[PS_SECRET_LEN + 1], from[600];
		write_file("job.secret", key, key_len,
			   flags & F_KEY_LOOSE ? 0640 : 0600);
		unsetenv(PS_SECRET_ENV);
		why[0] = '\0';
		int src = ps_secret_find(dir, s, from, sizeof(from), why,
					 sizeof(why));
		int want = !(flags & (F_KEY_LOOSE | F_DIR_LOOSE)) &&
			   ps_secret_valid(key_line);
		FUZZ_CHECK(src == PS_OK ? want && strcmp(s, key_line) == 0
					: !want && why[0] != '\0',
			   "job.secret '%s' (flags 0x%02x): status %d, secret "
			   "'%s', why '%s'",
			   key_line, flags, src, s, why);
	}
	why[0] = '\0';
	int rc = ps_keys_load(dir, &k, why, sizeof(why));
	if (rc != PS_OK) {
		FUZZ_CHECK(why[0] != '\0', "an error without a message");
		return 0;
	}
	FUZZ_CHECK(!(flags & (F_KEY_LOOSE | F_DIR_LOOSE | F_NO_KEY |
			      F_NO_PUB | F_PUB_DIR)),
		   "loaded keys that must be refused (flags 0x%02x)", flags);
	check_z85("public key", k.pub);
	check_z85("secret key", k.sec);
	FUZZ_CHECK(strcmp(k.sec, key_line) == 0 && strcmp(k.pub, pub_line) == 0,
		   "loaded %s / %s from files %s / %s", k.sec, k.pub, key_line,
		   pub_line);
	FUZZ_CHECK(zmq_curve_public(derived, k.sec) == 0 &&
			   strcmp(derived, k.pub) == 0,
		   "%s is not the public key of %s", k.pub, k.sec);
	return 0;
}
