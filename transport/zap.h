/*
 * transport/zap.h - who may connect to a tcp node: the ZAP handler
 * (ZeroMQ RFC 27) of security.mode = secret and curve.
 *
 * secret: a node's listening ROUTER is a PLAIN server, every DEALER a
 * PLAIN client presenting the job's secret (transport/keys.h) as its
 * password, followed by the node's own token when it has one. The
 * handler admits a peer only if it presents that secret, and names the
 * connection by the token's key id (ps_token_kid; the ZAP "user id"),
 * which every message received on it carries: who sent a message is
 * then the token's holder, whatever routing id it claims. So
 * a process without it never gets a message into the node: nothing it
 * sends is buffered or decoded. The secret crosses the network in the
 * clear once per connection (PLAIN's handshake), so it keeps out those
 * who can reach the ports, not those who can read the traffic; after the
 * handshake the frames travel as in mode none, at no cost per byte.
 *
 * sealed: as secret, but the password is a proof that the connector
 * holds the secret (transport/seal.h), never the secret itself; the user
 * id names the connection by its token's key id and connection id, which
 * tcp.c's frames are sealed under.
 *
 * curve: the ROUTER is a CURVE server with the job's secret key, every
 * DEALER a CURVE client with the job's pair; ZeroMQ authenticates both
 * ends and encrypts every frame (Curve25519, XSalsa20-Poly1305,
 * per-connection short-term keys, so captured traffic replayed to a node
 * fails its handshake). A client is admitted only if its long-term public
 * key is the job's.
 *
 * The handler runs on a thread of its own, which also watches the
 * ROUTER's handshakes through a socket monitor, so every refusal is
 * logged: a wrong secret or key (with the peer's address; a presented
 * secret is never logged), a peer of another mechanism (mode none, or the
 * other mode), a damaged or replayed handshake. Refusals never reach the
 * node: the job goes on. Logging is bounded like dropped messages' (the
 * first 20 of each kind, then one line per 1000).
 *
 * Threads: start, stop and the socket setters on the transport's owner
 * thread; the handler thread owns its sockets until stop joins it.
 */
#ifndef ORDO_TRANSPORT_ZAP_H
#define ORDO_TRANSPORT_ZAP_H

#include "transport/keys.h"

typedef struct psi_zap psi_zap;

/* What a node admits: the job's secret (secret[0] != 0) or the job's
 * CURVE pair (keys->sec[0] != 0); exactly one of them. */
typedef struct psi_zap_job {
	const char *secret;       /* PS_SECRET_LEN hex digits, or "" */
	const char *token;        /* with secret: this node's (hex), or "" */
	int sealed;               /* with secret: security.mode = sealed */
	const ps_job_keys *keys;  /* or NULL */
} psi_zap_job;

/* Starts the ZAP handler in ctx and the monitor of router (a ROUTER not
 * yet bound, made a PLAIN or CURVE server here). */
int psi_zap_start(void *ctx, void *router, const psi_zap_job *job,
		  psi_zap **z_p);
/* Stops the handler thread and closes its sockets (NULL: nothing). */
void psi_zap_stop(psi_zap **z_p);
/* Makes sock (a DEALER, before connect) a client of the job: PLAIN with
 * the secret (sealed: with a proof for the connection id conn, which may
 * be NULL otherwise), or CURVE with the pair. */
int psi_zap_client(void *sock, const psi_zap_job *job,
		   const uint8_t *conn);

#endif /* ORDO_TRANSPORT_ZAP_H */
