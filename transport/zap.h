/*
 * transport/curve.h - CURVE security for the tcp backend (security.mode =
 * curve; the job's key pair: transport/keys.h).
 *
 * A node's listening ROUTER is a CURVE server (its secret key: the job's),
 * every DEALER a CURVE client (the job's pair, the job's public key as the
 * server's): ZeroMQ authenticates both ends and encrypts every frame
 * (Curve25519, XSalsa20-Poly1305, per-connection short-term keys, so
 * captured traffic replayed to a node fails its handshake).
 *
 * psi_curve_start() runs the transport's ZAP handler (ZeroMQ RFC 27) on a
 * thread of its own: a client is admitted only if its long-term public key
 * is the job's. The same thread watches the ROUTER's handshakes through a
 * socket monitor, so every refusal is logged: a wrong key (ZAP, with the
 * peer's address and key), no CURVE at all or a damaged or replayed
 * handshake (the monitor's failure events). Refusals never reach the
 * node: the job goes on. Logging is bounded like dropped messages' (the
 * first 20 of each kind, then one line per 1000).
 *
 * Threads: start, stop and the socket setters on the transport's owner
 * thread; the handler thread owns its sockets until stop joins it.
 */
#ifndef ORDO_TRANSPORT_CURVE_H
#define ORDO_TRANSPORT_CURVE_H

#include "transport/keys.h"

typedef struct psi_curve psi_curve;

/* Starts the ZAP handler in ctx for the job's public key and the monitor
 * of router (a ROUTER not yet bound, made a CURVE server here). */
int psi_curve_start(void *ctx, void *router, const ps_job_keys *keys,
		    psi_curve **c_p);
/* Stops the handler thread and closes its sockets (NULL: nothing). */
void psi_curve_stop(psi_curve **c_p);
/* Makes sock (a DEALER, before connect) a CURVE client of the job. */
int psi_curve_client(void *sock, const ps_job_keys *keys);

#endif /* ORDO_TRANSPORT_CURVE_H */
