/*
 * server/state.h - a server's state, shared by its event loop (server.c)
 * and its side of checkpoints (snapshot.c). Internal to ps-server.
 *
 * Threads: everything here belongs to the server's one thread, except
 * pbuf reference counts (dropped by the transport's I/O thread and by the
 * checkpoint writer thread) and the snapshot's writer fields named in
 * snapshot.h.
 */
#ifndef ORDO_SERVER_STATE_H
#define ORDO_SERVER_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "checkpoint/checkpoint.h"
#include "common/config.h"
#include "proto/checkpoint_take.h"
#include "proto/server.h"
#include "runtime/node.h"
#include "server/optimizer.h"

/* Elements processed between two heartbeat checks (16 MiB of float32). */
#define SLICE ((size_t)4 << 20)

/* Parameter values as sent: reference-counted. The first buffer of every
 * partition lives in the shard's arena; copies made by copy-on-write carry
 * their memory in mem[]. */
typedef struct pbuf {
	atomic_int refs;
	size_t numel;
	float *data;
	float mem[];
} pbuf;

/* A local partition's memory; its protocol state (version, pushes in)
 * is the machine's (proto/server.h), at the same index. */
typedef struct shard_part {
	const ps_partition *desc;
	uint32_t index; /* global partition index */
	pbuf *values;
	float *momentum; /* sgd: the velocity; adam, adamw: the first moment */
	float *second;   /* adam, adamw: the second moment; else NULL */
	double *acc;
	/* the learning rate of the round being summed: the lowest-ranked
	 * worker's push's (has_lr 0: train.lr) */
	uint32_t lr_rank;
	int has_lr;
	double lr;
	/* asynchronous mode: pushes held back while a checkpoint waits for
	 * the other workers' earlier ones (snapshot.h) */
	struct held *held;
	uint32_t nheld, held_cap;
	/* per worker rank: its PULL of this partition waits until its held
	 * pushes are applied (NULL until one does) */
	uint8_t *pull_waits;
} shard_part;

/* Async: pushes of one worker to one partition a checkpoint may hold. An
 * honest worker pulls a partition before it pushes it again, and that
 * pull waits while its push is held: it never has more than one. */
#define PS_HELD_PER_WORKER 2

/* A push held back, with its checked header. */
typedef struct held {
	ps_msg *msg;
	ps_wire_header h;
} held;

/* One checkpoint's state, taken from the shard partition by partition
 * (snapshot.c). */
typedef struct snap {
	uint64_t iteration;
	uint64_t *version; /* per local partition */
	/* copies of the values and moments, laid out as the arenas; kept
	 * (their pages faulted in) from one checkpoint to the next */
	float *values, *momentum, *second;
	ps_ckpt_segment *segs;
	uint32_t nsegs;
	char dir[PS_CKPT_PATH_MAX];
	uint64_t take_ns;  /* the loop's time taking partitions */
	uint64_t write_ns; /* the writer thread's, start to rename */
	uint64_t bytes;    /* values and momentum written */
	int rc;
	char why[PS_CKPT_PATH_MAX + 512];
} snap;

/* Checkpoints on their way to disk: one collected while the one before is
 * written by a thread, which sets `finished` (release) and wakes the
 * loop; the loop joins it. What is collected, taken and written when is
 * the machine's (proto/checkpoint_take.h); the slots hold the copies. */
typedef struct snapshot {
	ps_ckpt_take m;
	snap slot[2];
	snap *collect; /* the slot m.collect is taken into; or NULL */
	snap *write;   /* the slot being written; or NULL */
	pthread_t writer;
	atomic_int finished;
} snapshot;

typedef struct server {
	const ps_config *cfg; /* &in_force */
	/* the job's configuration, with the credit windows in force (the
	 * WELCOME's: the scheduler chose them where the config says auto) */
	ps_config in_force;
	ps_node node;
	uint32_t workers;
	ps_sproto *shard; /* the protocol (proto/server.h) */
	uint32_t nparts;
	shard_part *parts; /* as the machine's local partitions */
	/* one huge-page arena each for the shard's values, momentum and
	 * accumulators (see common/memory.h); partitions point into them */
	float *values_arena, *momentum_arena;
	float *second_arena; /* adam, adamw only */
	double *acc_arena;
	size_t arena_numel;
	/* the values arena registered with the transport, whence parameters
	 * are sent (transport/transport.h: copy-on-write copies are not, and
	 * go through the backend's own memory where it needs registration) */
	struct ps_mr *values_mr;
	float *scratch; /* aligned copy of a misaligned payload */
	size_t scratch_cap;
	uint64_t bytes_in, bytes_out;
	uint64_t nheld;     /* pushes held back, all partitions */
	uint64_t held_max;  /* ... at most at once */
	uint64_t pulls_waited; /* PULLs that waited for held pushes */
	/* the checkpoint the last PULL waited for, and whether the waiting
	 * ones were answered since (each said once per checkpoint) */
	uint64_t pull_wait_for;
	int pull_wait_answered;
	/* the push being run (push_now): its sender's rank and learning
	 * rate, for the ops it starts */
	uint32_t push_rank;
	int push_has_lr;
	double push_lr;
	uint64_t cow_ns; /* time copying values a send or snapshot held */
	snapshot snap;
#ifdef PS_WITH_CUDA
	/* server.device = cuda: the device side (server/gpu.c); NULL on the
	 * CPU path */
	struct ps_gpu *gpu;
#endif
} server;

void pbuf_unref(void *data, void *hint);

/* Whether the server's optimizer keeps a second moment (adam, adamw). */
int ps_server_has_second(const server *s);
/* The learning rate of the round an update of p completes. */
double ps_server_round_lr(const server *s, const shard_part *p);
/* The Adam/AdamW step an update of p makes now (its version + 1). */
void ps_server_adam(const server *s, const shard_part *p, ps_adam *a);

#endif /* ORDO_SERVER_STATE_H */
