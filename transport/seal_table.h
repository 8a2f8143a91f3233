/*
 * transport/seal_table.h - a sealed node's receiving side: the key and
 * last counter of every connection it opens messages from (seal.h),
 * found by the connection's ZAP user id.
 *
 * Bounded: at most cap connections; past it the one seen first is
 * forgotten (its next message starts it again: it still opens, but a
 * replay of its earlier frames would open once too). A job's members
 * open a few connections each, so cap (PS_SEAL_TABLE_CAP) is far above
 * what they need; only a holder of the job's secret can add one.
 *
 * Threads: one, the transport's owner.
 */
#ifndef ORDO_TRANSPORT_SEAL_TABLE_H
#define ORDO_TRANSPORT_SEAL_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "transport/seal.h"

#define PS_SEAL_TABLE_CAP 65536

typedef struct psi_seal_table psi_seal_table;

/* A table for a node of the job whose secret is secret, holding at most
 * cap connections (>= 1). PS_OK or PS_ENOMEM. */
int psi_seal_table_new(const uint8_t secret[PS_SEAL_KEY_LEN], size_t cap,
		       psi_seal_table **t_p);
void psi_seal_table_free(psi_seal_table **t_p);

/* The connection whose ZAP user id is uid (16 hexadecimal digits of the
 * key id, 32 of the connection id), made on first sight. PS_OK with *s_p;
 * PS_EPROTO for a user id of another form; PS_ENOMEM, PS_EIO. */
int psi_seal_table_get(psi_seal_table *t, const char *uid, psi_seal **s_p);

/* How many connections it holds. */
size_t psi_seal_table_size(const psi_seal_table *t);

#endif /* ORDO_TRANSPORT_SEAL_TABLE_H */
