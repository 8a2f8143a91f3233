/*
 * transport/seal_pool.h - helper threads that seal and open the chunks of
 * one large message at once (transport/seal.h), so its cipher runs on
 * more than the node's own core.
 *
 * One caller at a time (the transport's owner thread), which works on
 * the chunks too: psi_seal_pool_run returns once every chunk is done. The
 * helpers sleep on a condition variable between messages.
 */
#ifndef ORDO_TRANSPORT_SEAL_POOL_H
#define ORDO_TRANSPORT_SEAL_POOL_H

#include <stddef.h>

typedef struct psi_seal_pool psi_seal_pool;

/* A chunk's work: fn(arg, chunk, worker), worker in [0, helpers] (0: the
 * caller), so that each can keep scratch state of its own. */
typedef void psi_seal_chunk_fn(void *arg, size_t chunk, int worker);

/* A pool of `helpers` threads (>= 1). PS_OK, PS_ENOMEM or PS_EIO. */
int psi_seal_pool_new(int helpers, psi_seal_pool **p_p);
/* Stops and joins the helpers (NULL: nothing). */
void psi_seal_pool_free(psi_seal_pool **p_p);
/* How many helpers it has. */
int psi_seal_pool_helpers(const psi_seal_pool *p);
/* Runs fn over chunks 0..n-1 on the helpers and the calling thread;
 * returns when all are done. */
void psi_seal_pool_run(psi_seal_pool *p, psi_seal_chunk_fn *fn, void *arg,
		       size_t n);

#endif /* ORDO_TRANSPORT_SEAL_POOL_H */
