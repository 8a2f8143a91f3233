/*
 * proto/wire.h - the wire format: msgpack headers, raw payloads.
 *
 * Every message is a header (a msgpack array, see ps_wire_header) and an
 * optional payload. Data messages (INIT, PUSH, PARAMS) carry raw float32
 * bytes as the payload, sent zero-copy; control messages that need a body
 * (REGISTER, WELCOME, DONE, ABORT) carry a msgpack body as the payload.
 *
 * Decoders never trust the network: every type, length and count is
 * checked before use; counts are bounded (placement.h limits) before any
 * allocation. A malformed message yields PS_EPROTO and a reason in `why`;
 * it never crashes or reads out of bounds.
 *
 * Header (msgpack array, in this order; decoders accept and ignore extra
 * trailing elements so that later versions may append fields):
 *   [version, type, job_id, sender, key, partition, iteration,
 *    payload_len, priority (, lr (, piece))]
 * lr (a float, finite and >= 0) only where a PUSH carries the learning
 * rate its update is to use; absent otherwise (nil is read as absent).
 * piece (uint < PS_MAX_PIECES) only where a data message or its
 * acknowledgement is about a piece other than the first of a partition
 * sent in pieces; absent (or nil): 0.
 * Version 2: a WELCOME's and an ABORT's iteration is the transport id of
 * the node they are for (a node before its WELCOME takes no other); a
 * node refuses a message of another version, so nodes of versions 1 and
 * 2 cannot form one job.
 *
 * Threads: pure functions, thread-safe.
 */
#ifndef ORDO_PROTO_WIRE_H
#define ORDO_PROTO_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "model/measured.h"
#include "ordo/error.h"
#include "scheduling/placement.h"

#define PS_WIRE_VERSION 2
#define PS_WIRE_HEADER_MAX 96 /* bytes an encoded header can take */
#define PS_HOST_MAX 64
#define PS_ENDPOINT_MAX 128
#define PS_REASON_MAX 512
#define PS_MAX_NODES 8192 /* = PS_JOB_MAX_NODES (common/config.h) */
#define PS_WIRE_SIZE_MAX ((uint64_t)1 << 40) /* scheduling.*_size */

typedef enum ps_msg_type {
	PS_MSG_REGISTER = 1, /* node -> scheduler: body ps_wire_register */
	PS_MSG_WELCOME,      /* scheduler -> node: body ps_wire_welcome;
				header iteration = the node's transport id */
	PS_MSG_HEARTBEAT,    /* both ways, no body */
	PS_MSG_BARRIER,      /* worker -> scheduler, key = barrier number */
	PS_MSG_BARRIER_DONE, /* scheduler -> workers, key = barrier number */
	PS_MSG_DONE,         /* worker -> scheduler: body ps_wire_done */
	PS_MSG_SHUTDOWN,     /* scheduler -> all: exit 0 */
	PS_MSG_ABORT,        /* scheduler -> all: body reason string; exit 1;
				header iteration = the node's transport id
				(a node before its WELCOME takes a WELCOME
				or ABORT only so addressed) */
	PS_MSG_INIT,         /* worker 0 -> server: initial values */
	PS_MSG_PUSH,         /* worker -> server: gradient partition */
	PS_MSG_PUSH_ACK,     /* server -> worker: push received (credit) */
	PS_MSG_PARAMS,       /* server -> worker: parameter partition */
	PS_MSG_PULL,         /* worker -> server (async): send me PARAMS */
	PS_MSG_PARAMS_ACK,   /* worker -> server: PARAMS received (credit) */
	/* checkpoints (checkpoint/checkpoint.h, docs/design-notes.md) */
	PS_MSG_CKPT,         /* scheduler -> servers: snapshot at iteration */
	PS_MSG_CKPT_DONE,    /* server -> scheduler: its shard of iteration is
			      * durable; key 1 = failed, body the reason */
	PS_MSG_CKPT_LATE,    /* server -> scheduler: a partition is already
			      * past the iteration asked; iteration = its
			      * highest version */
	PS_MSG_FLUSH,        /* scheduler -> servers: finish checkpoints */
	PS_MSG_FLUSHED,      /* server -> scheduler: nothing left to write */
	/* tuning (docs/tune.md): live credit, stop for a restart */
	PS_MSG_PROGRESS,     /* worker -> scheduler: iterations before
			      * `iteration` are done; scheduler -> tuner: done
			      * by every worker */
	PS_MSG_CREDIT,       /* tuner -> scheduler: body u64 credit (bytes);
			      * scheduler -> senders: that window from
			      * `iteration` on; scheduler -> tuner: the same,
			      * the iteration chosen */
	PS_MSG_STOP,         /* tuner -> scheduler: checkpoint and stop;
			      * scheduler -> workers: stop before `iteration`
			      * (checkpointed there) once every worker is
			      * there (STOP_READY, STOP_NOW; proto/stop.h);
			      * scheduler -> tuner: the iteration chosen */
	PS_MSG_STOP_LATE,    /* worker -> scheduler: already ran the
			      * iteration asked; iteration = the first it can
			      * still stop before */
	PS_MSG_TUNE_HELLO,   /* scheduler -> tuner: body its endpoint (str),
			      * iteration a nonce; tuner -> scheduler:
			      * attached, no body, the nonce it was sent */
	PS_MSG_PEER_LOST,    /* node -> scheduler: a send to node `key`
			      * failed (body: reason string); the node waits
			      * for the ABORT that names the lost one */
	PS_MSG_PROBE,        /* scheduler -> node, before the WELCOME: a
			      * payload of zeros timed to the answer
			      * (scheduler/link_probe.h); key = its number */
	PS_MSG_PROBE_ACK,    /* node -> scheduler: PROBE `key` arrived */
	PS_MSG_STOP_READY,   /* worker -> scheduler: waits before `iteration`,
			      * its stop (proto/stop.h) */
	PS_MSG_STOP_NOW,     /* scheduler -> workers: every worker waits
			      * before `iteration`: the job ends there */
	PS_MSG_TIMINGS,      /* worker -> scheduler: body ps_timings, what
			      * it measured of its first iterations
			      * (model/measured.h) */
	PS_MSG_TYPE_END
} ps_msg_type;

typedef enum ps_role {
	PS_ROLE_SCHEDULER = 0,
	PS_ROLE_SERVER = 1,
	PS_ROLE_WORKER = 2
} ps_role;

typedef struct ps_wire_header {
	uint32_t version;
	uint32_t type;       /* ps_msg_type */
	uint64_t job_id;     /* 0 only in REGISTER */
	uint32_t sender;     /* node id; scheduler is 0 */
	uint32_t key;        /* tensor index (barrier number for BARRIER) */
	uint32_t partition;  /* global partition index */
	uint64_t iteration;  /* parameter version / gradient iteration */
	uint64_t payload_len;/* must equal the payload frame's length */
	int32_t priority;    /* transfer priority (lower = sooner) */
	int has_lr;          /* PUSH: lr is given (else train.lr applies) */
	double lr;           /* PUSH: the learning rate of its update */
	uint32_t piece;      /* PUSH, PARAMS and their ACKs: the piece of
			      * the partition (placement.h, "Pieces"); 0
			      * for a partition sent whole */
} ps_wire_header;

typedef struct ps_node_info {
	uint32_t id;   /* 0 scheduler, 1..S servers, S+1..S+W workers */
	uint32_t role; /* ps_role */
	uint32_t rank; /* within the role */
	int32_t pid;
	uint64_t transport_id;
	char host[PS_HOST_MAX];
	char endpoint[PS_ENDPOINT_MAX];
	/* the key id its messages come with (security.mode = secret:
	 * transport/keys.h, msg->kid), as the scheduler saw it at its
	 * REGISTER; 0: not checked */
	uint64_t kid;
} ps_node_info;

typedef struct ps_wire_register {
	ps_node_info self;        /* id and rank are ignored */
	uint32_t want_rank;       /* workers: 1 + the rank asked for
				   * (worker.rank); 0: any */
	uint32_t num_tensors;     /* workers declare their tensors */
	ps_tensor_desc *tensors;
} ps_wire_register;

typedef struct ps_wire_welcome {
	uint32_t your_id;
	uint32_t num_servers;
	uint32_t num_workers;
	uint32_t num_nodes; /* 1 + servers + workers, indexed by id */
	ps_node_info *nodes;
	ps_placement *placement; /* NULL for the scheduler's own use */
	/* transfer priority per tensor of the placement, of the servers'
	 * parameter sends (scheduling.params_order) and of the workers'
	 * pushes (scheduling.push_order); NULL: every tensor 0. A WELCOME
	 * without the push element (older peers) means the same as
	 * priority. */
	uint32_t *priority;
	uint32_t *push_priority;
	/* iteration the job starts at: 0, or the checkpoint's it resumes */
	uint64_t start_iteration;
	/* the sizes in force, sent with a placement: each direction's
	 * credit window (bytes, 0 = unlimited) and partition size (the
	 * pieces it sends; at least the placement's: whole) - what the
	 * scheduler chose where the config says auto. has_sizes 0 (an older
	 * scheduler): each node keeps its config's. */
	int has_sizes;
	uint64_t push_credit, params_credit;
	uint64_t push_partition, params_partition;
} ps_wire_welcome;

typedef struct ps_wire_done {
	uint64_t iterations;
	double seconds;
	uint64_t bytes_pushed;
	uint64_t bytes_received;
	double last_loss;
	/* replay (worker.mode = replay); 0 in training mode */
	double wait_seconds;   /* compute engine waiting on parameters */
	double efficiency;     /* mean ordering efficiency E */
	double speedup_bound;  /* TicTac's S for the model and link */
	double samples_per_second;
} ps_wire_done;

/* "REGISTER", "PUSH"...; "UNKNOWN" for others. */
const char *ps_msg_type_name(uint32_t type);
const char *ps_role_name(uint32_t role);

/* Encodes h into buf (cap >= PS_WIRE_HEADER_MAX is always enough). */
int ps_wire_header_encode(const ps_wire_header *h, void *buf, size_t cap,
			  size_t *len_p);
/* Decodes and checks version and type range. */
int ps_wire_header_decode(const void *buf, size_t len, ps_wire_header *h_p,
			  char *why, size_t whylen);

/* Body encoders return a malloc'd buffer in *buf_p (free with free(), or
 * hand to a transport with ps_wire_free as the free callback). */
int ps_wire_register_encode(const ps_wire_register *r, void **buf_p,
			    size_t *len_p);
int ps_wire_register_decode(const void *buf, size_t len,
			    ps_wire_register *r_p, char *why, size_t whylen);
void ps_wire_register_clear(ps_wire_register *r);

int ps_wire_welcome_encode(const ps_wire_welcome *w, void **buf_p,
			   size_t *len_p);
int ps_wire_welcome_decode(const void *buf, size_t len, ps_wire_welcome *w_p,
			   char *why, size_t whylen);
void ps_wire_welcome_clear(ps_wire_welcome *w);

/* The sizes in force into a node's copy of the job's configuration: the
 * WELCOME's when it has them (the scheduler's choice where the config
 * says auto), else cfg's stay. */
void ps_wire_welcome_sizes(const ps_wire_welcome *w, ps_config *cfg);

/* TIMINGS: [iterations, length_us, need (bin: float32 per tensor, little
 * endian), push (the same)]. The decoder takes exactly ntensors tensors
 * (the job's: t is ps_timings_init'ed for them) and checks the numbers
 * (ps_timings_check); t->workers is 1. */
int ps_wire_timings_encode(const ps_timings *t, void **buf_p, size_t *len_p);
int ps_wire_timings_decode(const void *buf, size_t len, ps_timings *t,
			   char *why, size_t whylen);
int ps_wire_done_encode(const ps_wire_done *d, void **buf_p, size_t *len_p);
int ps_wire_done_decode(const void *buf, size_t len, ps_wire_done *d_p,
			char *why, size_t whylen);

/* Reason strings (ABORT): msgpack str, at most PS_REASON_MAX - 1 bytes. */
int ps_wire_reason_encode(const char *reason, void **buf_p, size_t *len_p);
int ps_wire_reason_decode(const void *buf, size_t len, char *reason,
			  size_t cap, char *why, size_t whylen);

/* One unsigned integer (CREDIT's window) as a msgpack body. */
int ps_wire_u64_encode(uint64_t value, void **buf_p, size_t *len_p);
int ps_wire_u64_decode(const void *buf, size_t len, uint64_t *value_p,
		       char *why, size_t whylen);

/* A CREDIT for a sender (worker or server): from the scheduler (sender
 * 0), a window > 0, and the sender had one from the start (`configured`
 * != 0: without a window workers send no PARAMS_ACK, so none could be
 * kept). PS_EPROTO with the reason in why otherwise. */
int ps_wire_credit_decode(const ps_wire_header *h, const void *buf,
			  size_t len, uint64_t configured, uint64_t *credit_p,
			  char *why, size_t whylen);

/* ps_free_fn-compatible free() of an encoder's buffer. */
void ps_wire_free(void *data, void *hint);

#endif /* ORDO_PROTO_WIRE_H */
