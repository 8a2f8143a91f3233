/*
 * transport/keys.h - a job's CURVE key pair on disk (security.mode =
 * curve): DIR/job.pub and DIR/job.key, each one Z85 line of 40 characters
 * (ZeroMQ's encoding of a 32-byte Curve25519 key). `ps-keygen DIR` writes
 * them, ps-launch makes a fresh pair per local job, every node loads them.
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

#define PS_KEY_Z85_LEN 40

typedef struct ps_job_keys {
	char pub[PS_KEY_Z85_LEN + 1];
	char sec[PS_KEY_Z85_LEN + 1];
} ps_job_keys;

/* Writes a fresh pair into dir (created with mode 0700 if missing):
 * job.pub (0644) and job.key (0600). Refuses to replace existing files
 * unless force. PS_OK, or an error with the reason in why. */
int ps_keys_generate(const char *dir, int force, char *why, size_t whylen);

/* Loads and checks dir's pair: both files present, 40 Z85 characters,
 * job.key private to its owner, and job.pub the public key of job.key. */
int ps_keys_load(const char *dir, ps_job_keys *k, char *why, size_t whylen);

#endif /* ORDO_TRANSPORT_KEYS_H */
