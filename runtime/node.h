/*
 * runtime/node.h - a server's or worker's membership in a job.
 *
 * ps_node_join() does what every non-scheduler process does first: create
 * the transport, listen, connect to the scheduler (retrying until
 * cluster.connect_timeout_ms), REGISTER, and wait for the WELCOME that
 * carries this node's id and rank, the node table and the shard placement.
 * ps_node_recv() is then the node's only way to receive: it decodes and
 * checks every header (version, job id, sender identity against the node
 * table, payload length), drops bad messages with a logged reason and a
 * counter, answers the heartbeat protocol (sends one every
 * heartbeat_interval_ms; fails with PS_EABORTED when the scheduler is silent
 * for heartbeat_timeout_ms), and turns ABORT into PS_EABORTED.
 *
 * Threads: a ps_node belongs to one thread at a time (it owns the
 * transport; the client library hands it between its threads under a lock,
 * client/driving.c), except ps_node_wake(), callable from any thread or a
 * signal handler.
 */
#ifndef ORDO_RUNTIME_NODE_H
#define ORDO_RUNTIME_NODE_H

#include <stdatomic.h>
#include <stdint.h>

#include "common/config.h"
#include "proto/wire.h"
#include "transport/transport.h"

typedef struct ps_node {
	const ps_config *cfg;
	uint32_t role;
	ps_transport *transport;
	uint64_t transport_id;
	char endpoint[PS_ENDPOINT_MAX];
	ps_peer scheduler;

	/* from the WELCOME */
	uint64_t job_id;
	uint32_t id;
	uint32_t rank;
	ps_wire_welcome welcome; /* nodes[], placement */
	ps_peer *peers;          /* by node id; valid where connected[] */
	uint8_t *connected;

	int64_t last_heard_ms;   /* last message from the scheduler */
	int64_t last_beat_ms;    /* last heartbeat sent */
	_Atomic uint64_t dropped; /* malformed or unexpected messages */
	uint64_t progress;       /* sent in heartbeats' iteration field: a
				  * server's highest parameter version */
	/* joining (proto/join.h): messages from peers that came before the
	 * WELCOME (a peer that got its WELCOME first may send at once) are
	 * kept, and checked and delivered by ps_node_recv once this node
	 * knows the job */
	struct ps_join *join;
	/* how many messages were kept so: atomic, for a test may watch it
	 * from another thread while ps_node_join waits for the WELCOME */
	atomic_uint early_kept;
	/* messages that came while ps_node_connect_role waited for its
	 * connections, checked, for ps_node_recv first */
	struct ps_node_kept *kept_head, *kept_tail;
	/* what they hold now (at most as many as before the WELCOME, then
	 * the rest wait unread: ps_node_connect_role), and whether that
	 * bound was met (said once) */
	uint32_t kept_count;
	uint64_t kept_bytes;
	int kept_full;
	/* how many were kept so (atomic, for a test may watch it) */
	atomic_uint connect_kept;
	char abort_reason[PS_REASON_MAX];
	int lost_reported; /* a PEER_LOST went to the scheduler */
} ps_node;

/* Joins the job. tensors: the worker's declared tensors (NULL/0 for a
 * server). On failure logs the reason and returns the error. */
int ps_node_join(ps_node *n, const ps_config *cfg, uint32_t role,
		 const ps_tensor_desc *tensors, uint32_t ntensors);

/*
 * Connects to every node of the given role (servers connect to workers and
 * workers to servers), all at once, each given cluster.connect_timeout_ms.
 * It stays a member meanwhile: heartbeats go out, and what arrives is
 * received - the scheduler's ABORT, or its silence, ends the wait
 * (PS_EABORTED, as in ps_node_recv), and so does its SHUTDOWN (PS_ECLOSED:
 * the job is over, ended cleanly without this node's connections); every
 * other message is kept, in order, for ps_node_recv to hand out before
 * anything received later - up to as many as before the WELCOME (4096
 * messages, cluster.early_bytes_max bytes): past that the rest are left
 * unread in the transport (within its bounds per peer) until the wait
 * ends, so a peer's flood cannot grow the node without bound (an ABORT
 * behind it is then read once the connections are made). PS_EINTR when
 * a signal (SIGINT/SIGTERM) came.
 * A peer that cannot be reached in time is named in the log, and the
 * transport's error returned.
 */
int ps_node_connect_role(ps_node *n, uint32_t role);

/* Node id of the rank-th server / worker. */
uint32_t ps_node_server_id(const ps_node *n, uint32_t rank);
uint32_t ps_node_worker_id(const ps_node *n, uint32_t rank);

/* Sends to a node id (the scheduler is 0). Fills version, job id, sender and
 * payload_len into *h. Payload ownership as in ps_transport_send.
 * A send to a server or worker that times out (not connected) or finds
 * it closed ends the job: the scheduler is told (PEER_LOST) and this call
 * returns only once its ABORT came (PS_EABORTED, the reason in
 * abort_reason), at most 2 * cluster.heartbeat_timeout_ms later. */
int ps_node_send(ps_node *n, uint32_t to, ps_wire_header *h, void *payload,
		 size_t payload_len, ps_free_fn *free_fn, void *hint);

/*
 * Receives one checked message, waiting at most timeout_ms (-1: forever;
 * 0: takes what has arrived, without waiting) while keeping heartbeats
 * going. Heartbeats from the scheduler are consumed
 * here. Returns PS_OK (msg and header set), PS_ETIMEDOUT, PS_EAGAIN (woken),
 * PS_EABORTED (ABORT received or scheduler silent; reason in
 * n->abort_reason; from then on every call returns it at once), or a
 * transport error.
 */
int ps_node_recv(ps_node *n, int timeout_ms, ps_msg **msg_p,
		 ps_wire_header *h_p);

void ps_node_wake(ps_node *n);

/* Sends a heartbeat if one is due: for long computations between
 * receives (a server updating a 400 MB tensor), so the node is not taken
 * for dead. */
void ps_node_tick(ps_node *n);

/* Ends the transport's I/O, flushing pending sends for at most linger_ms
 * (transport.h: registrations may be released after this, before the
 * close). */
void ps_node_stop(ps_node *n, int linger_ms);
/* Stops (when not stopped yet), closes the transport and frees. */
void ps_node_close(ps_node *n, int linger_ms);

/*
 * The send timeout a process uses: transport.send_timeout_ms, but at most
 * one heartbeat interval. With ZMQ_IMMEDIATE a send blocks only while its
 * peer is disconnected (a dead node), and a process must not stop its own
 * heartbeats that long, or the scheduler blames it instead of the dead one.
 */
int ps_send_timeout_ms(const ps_config *cfg);

/* Creates the transport of this job's config (transport.type, timeouts)
 * with a fresh random id, registered for wake-up on SIGINT/SIGTERM. */
int ps_job_transport_create(const ps_config *cfg, uint64_t *id_p,
			    ps_transport **t_p);

/* For a process that starts a job (ps-launch, ps-tune), before it
 * creates its own transport: under security.mode = auto or secret, a job without a secret (transport/keys.h: job.secret in keys_dir,
 * ORDO_JOB_SECRET) gets a fresh one in ORDO_JOB_SECRET, which the job's
 * processes inherit (*made = 1), unless may_make is 0 (an error saying
 * how to give one). env_secret (PS_SECRET_LEN + 1 bytes, or NULL) gets
 * the secret when it is in the environment (found or made), else "". */
int ps_job_secret_ensure(const ps_config *cfg, int may_make,
			 char *env_secret, int *made, char *why,
			 size_t whylen);

/* Logs a dropped message (rate-limited by its running count). */
void psi_note_drop(uint64_t count, const char *what, const char *why);

/* The same, naming the sender by the transport id it came with (msg->src:
 * for tcp, the routing id of the connection it arrived on). */
void psi_note_drop_from(uint64_t count, const char *what, uint64_t src,
			const char *why);

/* A random nonzero 64-bit id (getrandom, falling back to time and pid). */
uint64_t ps_random_id(void);

#endif /* ORDO_RUNTIME_NODE_H */
