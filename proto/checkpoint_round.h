/*
 * proto/checkpoint_round.h - the scheduler's account of the checkpoints
 * being written: which servers have answered each (CKPT_DONE), as a
 * machine without I/O.
 *
 * A checkpoint of iteration i is complete when every server has answered
 * for i once: its shard written, or failed with a reason. Answers are
 * counted per server, not per message: a server that answers twice (a
 * bug, a replay, a member that lies) is told apart and counted once, so
 * the manifest that makes a checkpoint resumable is never written while
 * a shard may be missing.
 *
 * At most PS_CKPT_ROUNDS checkpoints are followed at once. A round that
 * completed is remembered (closed) until its place is needed, so that a
 * late repeat of an answer is recognised as one; when every place is
 * taken, a new round replaces the oldest closed one, else the oldest open
 * one, which is then abandoned (the caller says so).
 *
 * No socket, clock or thread: ps-scheduler (scheduler/checkpoints.c)
 * drives it with the servers' messages.
 *
 * Threads: plain data; a table belongs to one thread.
 */
#ifndef ORDO_PROTO_CHECKPOINT_ROUND_H
#define ORDO_PROTO_CHECKPOINT_ROUND_H

#include <stdint.h>

#define PS_CKPT_ROUNDS 4 /* checkpoints followed at once */
#define PS_CKPT_ROUND_MAX_SERVERS 4096 /* cluster.servers' bound */

typedef enum {
	PS_CKPT_ROUND_FREE = 0,
	PS_CKPT_ROUND_OPEN,   /* answers awaited */
	PS_CKPT_ROUND_CLOSED, /* every server answered */
} ps_ckpt_round_state;

typedef struct ps_ckpt_round {
	uint64_t iteration; /* 0 while free */
	int state;          /* ps_ckpt_round_state */
	uint32_t answers;   /* servers that answered */
	uint32_t written;   /* ... of which with their shard written */
	int failed;         /* a server's shard failed */
	uint64_t opened;    /* order of opening, for the oldest */
	uint64_t answered[PS_CKPT_ROUND_MAX_SERVERS / 64]; /* bit per rank */
} ps_ckpt_round;

enum {
	PS_CKPT_ROUND_FAULT_NONE = 0,
	PS_CKPT_ROUND_FAULT_PER_MESSAGE, /* answers counted per message, as
					    before they were per server
					    (tests/dst shows a manifest then
					    comes before every shard) */
};

typedef struct ps_ckpt_rounds {
	uint32_t servers;
	int fault; /* PS_CKPT_ROUND_FAULT_*: tests/dst only */
	uint64_t opened; /* rounds opened so far */
	ps_ckpt_round round[PS_CKPT_ROUNDS];
} ps_ckpt_rounds;

/* An empty table for `servers` servers: PS_EINVAL where that is 0 or
 * more than PS_CKPT_ROUND_MAX_SERVERS. */
int ps_ckpt_rounds_init(ps_ckpt_rounds *t, uint32_t servers);

/*
 * The round of checkpoint `iteration` (> 0), open or closed; one is opened
 * where there is none: *opened_p = 1 then (the caller may ask the servers
 * that hold nothing for their empty shards), and *abandoned_p the
 * iteration of the open round it replaced, or 0. NULL for iteration 0.
 */
ps_ckpt_round *ps_ckpt_round_of(ps_ckpt_rounds *t, uint64_t iteration,
				int *opened_p, uint64_t *abandoned_p);

typedef enum {
	PS_CKPT_ANSWER_COUNTED = 0, /* counted; others still awaited */
	PS_CKPT_ANSWER_COMPLETE,    /* counted, the last: the round is closed;
				     * resumable unless k->failed */
	PS_CKPT_ANSWER_REPEATED,    /* that server had answered this round:
				     * nothing counted */
	PS_CKPT_ANSWER_BAD_RANK,    /* no such server: nothing counted */
} ps_ckpt_answer;

/* Server `rank`'s answer to round k (of t): its shard written (ok) or
 * failed. */
ps_ckpt_answer ps_ckpt_round_answer(ps_ckpt_rounds *t, ps_ckpt_round *k,
				    uint32_t rank, int ok);

#endif /* ORDO_PROTO_CHECKPOINT_ROUND_H */
