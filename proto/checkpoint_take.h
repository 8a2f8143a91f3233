/*
 * proto/checkpoint_take.h - a server's side of checkpoints as a machine
 * without I/O: which checkpoint is being collected, which partitions are
 * taken into it, which pushes wait for it, when it is written and what the
 * scheduler is told.
 *
 * A checkpoint of iteration V holds every partition at exactly V:
 * synchronous, its version V; asynchronous, every worker's pushes of the
 * iterations before V applied and none after. A partition is taken (its
 * values and moments copied) the moment it is at V, and training goes on.
 * Once every partition is taken the checkpoint is complete and is written
 * (by a thread, in ps-server) while the next one is collected: one
 * written, one collected, never more. Each written shard, or each failure
 * of a checkpoint the scheduler asked for, is reported (CKPT_DONE).
 *
 * Which V: every `every` iterations (each server knows: the periodic
 * ones), or the V the scheduler asks for (CKPT). A request that a
 * partition has already passed is answered CKPT_LATE with the furthest
 * iteration reached, and the scheduler asks again further on. A periodic
 * one that comes due while another is still collected is skipped (only
 * asynchronous workers further apart than `every`, or a request, get
 * there); one that comes due with one written and the next complete
 * waits for the write rather than skip or hold a third copy.
 *
 * Asynchronous mode has no common boundary by itself: while a checkpoint
 * of V is collected, a push of iteration V or later to a partition not
 * yet taken is held back (ps_ckpt_take_holds) until the slower workers'
 * earlier pushes are in; then the partition is taken and the held pushes
 * applied in order.
 *
 * The driver (server/snapshot.c; tests/dst) does the copies and the
 * writes. Calls that would need the write in progress to have finished
 * answer PS_CKPT_WAIT_WRITE and change nothing: the driver finishes it
 * (ps_ckpt_take_written) and calls again.
 *
 * Threads: plain data; a machine belongs to one thread.
 */
#ifndef ORDO_PROTO_CHECKPOINT_TAKE_H
#define ORDO_PROTO_CHECKPOINT_TAKE_H

#include <stdint.h>

#include "proto/server.h"

typedef struct ps_ckpt_take {
	const ps_sproto *sh; /* the partitions' protocol state */
	uint32_t nparts;
	uint32_t workers;
	int async;
	uint64_t every; /* periodic checkpoints (0: none) */
	uint64_t last;  /* the highest iteration collected or skipped */
	/* the checkpoint being collected (0: none) */
	uint64_t collect;
	int requested; /* the scheduler asked for it: a failure is reported */
	int ready;     /* every partition taken */
	uint32_t missing;
	uint8_t *taken; /* per local partition */
	/* the checkpoint being written (0: none) */
	uint64_t writing;
	int fault; /* PS_CKPT_TAKE_FAULT_*: tests/dst only */
} ps_ckpt_take;

enum {
	PS_CKPT_TAKE_FAULT_NONE = 0,
	PS_CKPT_TAKE_FAULT_ANY_VERSION, /* a partition is taken whatever
					   its version (tests/dst shows the
					   checkpoint is then wrong) */
};

/* A machine for the partitions of sh (sync or async, `workers` workers),
 * with a periodic checkpoint every `every` iterations (0: none). */
int ps_ckpt_take_init(ps_ckpt_take *t, const ps_sproto *sh, uint32_t workers,
		      int async, uint64_t every);
void ps_ckpt_take_free(ps_ckpt_take *t);

typedef enum {
	PS_CKPT_NOTHING = 0, /* nothing to do */
	PS_CKPT_COLLECT,     /* a checkpoint of t->collect began: take each
				partition it wants (ps_ckpt_take_wants) */
	PS_CKPT_SKIPPED,     /* the periodic one due is skipped: t->collect
				is still being taken (say so) */
	PS_CKPT_WAIT_WRITE,  /* finish the write in progress first
				(ps_ckpt_take_written), then call again */
	PS_CKPT_LATE,        /* answer CKPT_LATE with *top */
	PS_CKPT_JOINED,      /* the request is the one being collected */
} ps_ckpt_step;

/* The job resumed from the checkpoint of `it`: it is not taken again. */
void ps_ckpt_take_resumed(ps_ckpt_take *t, uint64_t it);

/* The furthest iteration local partition k has reached: sync, its
 * version; async, its furthest worker's (its version counts every
 * worker's updates). */
uint64_t ps_ckpt_take_highest(const ps_ckpt_take *t, uint32_t k);

/* The furthest iteration any partition has reached. */
uint64_t ps_ckpt_take_top(const ps_ckpt_take *t);

/* Whether local partition k holds exactly iteration `it`. */
int ps_ckpt_take_is_at(const ps_ckpt_take *t, uint32_t k, uint64_t it);

/* Iteration `it` was reached (sync: a partition's new version; async: a
 * push of it is about to be handled, or a partition reached it): a
 * periodic checkpoint may come due. NOTHING, COLLECT, SKIPPED or
 * WAIT_WRITE. */
ps_ckpt_step ps_ckpt_take_due(ps_ckpt_take *t, uint64_t it);

/* The scheduler asks for a checkpoint of `it` (> 0). LATE (*top: the
 * furthest iteration reached), JOINED, COLLECT (a periodic one or an older
 * request being collected is given up for it) or WAIT_WRITE. */
ps_ckpt_step ps_ckpt_take_request(ps_ckpt_take *t, uint64_t it,
				  uint64_t *top);

/* Whether partition k is to be taken now: it is at the iteration being
 * collected and not taken yet. */
int ps_ckpt_take_wants(const ps_ckpt_take *t, uint32_t k);

/* Partition k was taken. */
void ps_ckpt_take_took(ps_ckpt_take *t, uint32_t k);

/* Whether the collected checkpoint is complete and nothing is being
 * written: start writing it (ps_ckpt_take_write). */
int ps_ckpt_take_can_write(const ps_ckpt_take *t);

/* The complete checkpoint goes to be written: its iteration. */
uint64_t ps_ckpt_take_write(ps_ckpt_take *t);

/* The write finished (report it to the scheduler, written or failed). */
void ps_ckpt_take_written(ps_ckpt_take *t);

/* The checkpoint being collected is given up (the driver could not take
 * a partition, or the job ends before it is complete): 1 where the
 * scheduler asked for it and must be told it failed. */
int ps_ckpt_take_drop(ps_ckpt_take *t);

/* Async: whether a push of `iteration` to partition k waits for the
 * checkpoint being collected. */
int ps_ckpt_take_holds(const ps_ckpt_take *t, uint32_t k, uint64_t iteration);

#endif /* ORDO_PROTO_CHECKPOINT_TAKE_H */
