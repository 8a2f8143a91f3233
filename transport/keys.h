/*
 * transport/keys.h - a job's keys: its secret (security.mode = secret,
 * and auto where the job has one) and its CURVE key pair (security.mode =
 * curve). Each is one line in a file: DIR/job.secret (32 random bytes in
 * 64 hexadecimal digits), DIR/job.pub and DIR/job.key (Z85, ZeroMQ's
 * encoding of a 32-byte Curve25519 key, 40 characters), which
 * `ps-keygen DIR` writes; the secret may instead come in the environment
 * variable ORDO_JOB_SECRET, which is how ps-launch hands the secret it
 * makes for each job to its processes (locally by inheritance, to other
 * hosts through ssh's standard input, never on a command line).
 *
 * DESIGN: one key pair per job, held by every node. Every node's listening
 * socket is a CURVE server with the job's secret key, every connecting
 * socket a CURVE client with the job's pair, and the ZAP handler
 * (transport/curve.h) admits a client only if its public key is the
 * job's: a process without job.key can neither connect nor read what
 * travels. A key pair per node would also bind each node's identity to
 * its key; with one pair, a holder of job.key is trusted as any member
 * (as is any holder of ps-launch's command line today).
 *
 * job.key must be readable by its owner only (mode 0600 or stricter): a
 * looser one is refused, naming the file and the chmod. The directory
 * must belong to the user (or root) and be writable by no one else, when
 * written and when loaded: whoever can write there can replace the keys.
 * Writing never follows a symlink (--force removes what is there first,
 * then creates the file with O_EXCL).
 *
 * Threads: no shared state.
 */
#ifndef ORDO_TRANSPORT_KEYS_H
#define ORDO_TRANSPORT_KEYS_H

#include <stddef.h>
#include <stdint.h>

#define PS_KEY_Z85_LEN 40
#define PS_SECRET_LEN 64 /* hexadecimal digits */
#define PS_SECRET_ENV "ORDO_JOB_SECRET"

typedef struct ps_job_keys {
	char pub[PS_KEY_Z85_LEN + 1];
	char sec[PS_KEY_Z85_LEN + 1];
} ps_job_keys;

/* Writes a fresh pair and secret into dir (created with mode 0700 if
 * missing): job.pub (0644), job.key and job.secret (0600). Refuses to
 * replace existing files unless force. PS_OK, or an error with the reason
 * in why. */
int ps_keys_generate(const char *dir, int force, char *why, size_t whylen);

/* Loads and checks dir's pair: both files present, 40 Z85 characters,
 * job.key private to its owner, and job.pub the public key of job.key. */
int ps_keys_load(const char *dir, ps_job_keys *k, char *why, size_t whylen);

/* A fresh secret (32 random bytes) in hexadecimal into secret
 * (PS_SECRET_LEN + 1 bytes). */
int ps_secret_make(char *secret, char *why, size_t whylen);

/* Is s a job secret: PS_SECRET_LEN hexadecimal digits? */
int ps_secret_valid(const char *s);

/* The secret's 32 bytes (s: ps_secret_valid). */
void ps_secret_bytes(const char *s, uint8_t out[32]);

/* a == b over n bytes, in a time that does not depend on where they
 * differ (for a presented secret). */
int ps_secret_equal(const void *a, const void *b, size_t n);

/* A node's key id: the first 8 bytes (little-endian) of a 128-bit
 * BLAKE2b hash of its token's 32 bytes (token: ps_secret_valid, as a
 * node makes with ps_secret_make). One-way: knowing a node's key id does
 * not let another present its token. Never 0. */
uint64_t ps_token_kid(const char *token);
/* The same from the token's 32 bytes. */
uint64_t ps_token_kid_bytes(const uint8_t token[32]);

/* The job's secret, if it has one: dir/job.secret when dir is set and
 * holds that file (private to its owner, as job.key), else the
 * environment's ORDO_JOB_SECRET. PS_OK with secret set and *from naming
 * where it came from ("DIR/job.secret" or "ORDO_JOB_SECRET"); PS_OK with
 * secret "" when there is none; an error (with why) for one that is
 * there but not a secret, or a keys directory or file that is not
 * private. from: a buffer of fromlen bytes, or NULL. */
int ps_secret_find(const char *dir, char *secret, char *from, size_t fromlen,
		   char *why, size_t whylen);

#endif /* ORDO_TRANSPORT_KEYS_H */
