/*
 * proto/checkpoint_sched.h - the scheduler's side of checkpoints as a
 * machine without I/O: the checkpoint asked for on demand and asked again
 * further on when a server is past it, each server's answer counted
 * (proto/checkpoint_round.h) and the manifest written once every server
 * has answered, the servers that hold nothing asked for their empty
 * shards, and the FLUSH at the end of the job.
 *
 * A checkpoint is asked for on demand (SIGUSR1, or a tuner's stop) a
 * little ahead of the furthest progress known (ps_stop_ask's margin). A
 * server that has passed it answers CKPT_LATE with how far it is, and
 * the checkpoint is asked again past that, the margin doubling, until
 * the servers are caught or it is given up. The servers also take
 * periodic checkpoints on their own (checkpoint.every). A round opens at
 * a checkpoint's first answer; servers that hold no partition see no
 * update that makes a periodic checkpoint due, so the driver asks them
 * then (unless every server was asked already). Once every worker is
 * done, every server is told to FLUSH (finish its writes) and the job
 * ends when each has answered every FLUSH it was sent.
 *
 * ps-scheduler (scheduler/checkpoints.c) and the deterministic simulation
 * (tests/dst/ckpt.c) drive it.
 *
 * Threads: plain data; a machine belongs to one thread.
 */
#ifndef ORDO_PROTO_CHECKPOINT_SCHED_H
#define ORDO_PROTO_CHECKPOINT_SCHED_H

#include <stdint.h>

#include "proto/checkpoint_round.h"

typedef struct ps_ckpt_sched {
	ps_ckpt_rounds rounds;
	uint32_t servers;
	uint64_t asked;  /* the checkpoint asked for on demand, 0: none */
	uint64_t margin; /* how far past the furthest progress it was */
	int flushing;    /* every worker is done: the servers flush */
	uint32_t *flush_wait; /* per server: FLUSHes not answered yet */
} ps_ckpt_sched;

/* PS_EINVAL for 0 servers or too many; PS_ENOMEM. */
int ps_ckpt_sched_init(ps_ckpt_sched *c, uint32_t servers);
void ps_ckpt_sched_free(ps_ckpt_sched *c);

/* A checkpoint is asked for (late: the iteration a CKPT_LATE named, 0 on
 * a first ask), `highest` the furthest progress known: the iteration to
 * ask every server for, now c->asked; 0 where the ask is given up (the
 * servers keep passing it). */
uint64_t ps_ckpt_sched_ask(ps_ckpt_sched *c, uint64_t highest, uint64_t late);

/* CKPT_LATE naming `it`: 1 where the checkpoint asked for must be asked
 * again past it; 0 for an answer to an older ask, or while flushing. */
int ps_ckpt_sched_on_late(const ps_ckpt_sched *c, uint64_t it);

typedef struct ps_ckpt_done {
	ps_ckpt_answer answer; /* REPEATED, BAD_RANK: nothing counted */
	const ps_ckpt_round *round;
	uint64_t abandoned; /* an open round given up for this one, or 0 */
	int ask_empty;      /* a new round: ask the servers that hold
			     * nothing for their shards (and where
			     * c->flushing, FLUSH them again:
			     * ps_ckpt_sched_reflush) */
	int manifest;       /* every server wrote its shard: write the
			     * manifest */
} ps_ckpt_done;

/* Server `rank` answered checkpoint `it` (> 0): its shard written (ok) or
 * failed. PS_EINVAL for it 0 (nothing counted). */
int ps_ckpt_sched_on_done(ps_ckpt_sched *c, uint32_t rank, uint64_t it,
			  int ok, ps_ckpt_done *d);

/* Every worker is done: every server is sent FLUSH. */
void ps_ckpt_sched_flush(ps_ckpt_sched *c);

/* Server `rank`, which holds nothing, is sent FLUSH again (after the
 * CKPT that ask_empty sends it). */
void ps_ckpt_sched_reflush(ps_ckpt_sched *c, uint32_t rank);

/* FLUSHED from server `rank`: 1 when every server has answered every
 * FLUSH (the job may end), 0 while some are awaited, PS_EPROTO where
 * none was asked of it. */
int ps_ckpt_sched_on_flushed(ps_ckpt_sched *c, uint32_t rank);

#endif /* ORDO_PROTO_CHECKPOINT_SCHED_H */
