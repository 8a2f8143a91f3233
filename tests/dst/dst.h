/*
 * tests/dst/dst.h - the deterministic simulation's job, nodes and
 * messages (dst.c runs them; ckpt.c adds checkpoints). See dst.c.
 */
#ifndef ORDO_TESTS_DST_H
#define ORDO_TESTS_DST_H

#include <stdint.h>

#include "proto/checkpoint_sched.h"
#include "proto/checkpoint_take.h"
#include "proto/join.h"
#include "proto/membership.h"
#include "proto/server.h"
#include "proto/stop.h"
#include "proto/worker.h"
#include "scheduling/placement.h"

/* Deliberate bugs (--fault), each in the machine that has it. */
enum {
	FAULT_NONE,
	FAULT_CREDIT_LEAK,  /* proto/server.h: PARAMS_ACK loses credit */
	FAULT_VERSION_SKIP, /* proto/server.h: an update skips a version */
	FAULT_DROP_EARLY,   /* proto/join.h: messages before the WELCOME are
			       lost, the race test_node pins down */
	FAULT_BLIND,        /* proto/membership.h: a silent node is never
			       noticed */
	FAULT_BLAME_REPORTER, /* proto/membership.h: the node that reports
				 a lost peer is named as the lost one */
	FAULT_FORGED_SENDER, /* the harness's transport: a malicious member's
				message is taken as from the node it names */
	FAULT_PULL_FLOOD,    /* proto/server.h: a PULL is answered while a
				send to that worker waits in the gate */
	FAULT_CREDIT_EARLY,  /* proto/server.h: a credit change takes effect
				when it arrives, not at its version */
	FAULT_STOP_ALONE,    /* proto/stop.h: a worker ends at its stop
				without waiting for the others */
	FAULT_CKPT_ANY_VERSION, /* proto/checkpoint_take.h: a partition is
				   taken into a checkpoint at whatever
				   version it has */
	FAULT_CKPT_PER_MESSAGE, /* proto/checkpoint_round.h: answers counted
				   per message, not per server */
	FAULT_LANE_PER_MESSAGE, /* the transport: every seed has lanes, and
				   a partition's messages take any of them
				   (not one flow per partition) */
	FAULT_COUNT
};
#define JOIN_MAX 4096 /* as runtime/node.c */

enum {
	M_PUSH,
	M_PUSH_ACK,
	M_PARAMS,
	M_PARAMS_ACK,
	M_INIT,
	M_WELCOME,
	M_PULL,
	/* a stop (proto/stop.h), between the workers and the scheduler */
	M_PROGRESS,
	M_STOP,
	M_STOP_LATE,
	M_STOP_READY,
	M_STOP_NOW,
	/* checkpoints (ckpt.c), between the servers and the scheduler */
	M_CKPT,
	M_CKPT_DONE,
	M_CKPT_LATE,
	M_FLUSH,
	M_FLUSHED,
	M_TYPES
};
extern const char *const msg_names[];

typedef struct msg {
	int type;
	uint32_t from; /* node */
	uint32_t part;
	uint32_t piece; /* PUSH, PARAMS and their ACKs */
	uint64_t iteration;
	int32_t priority; /* CKPT_DONE: 1 where the shard failed */
	float *payload; /* PUSH, PARAMS */
	/* a malicious member's: the bytes it claims (its payload holds as
	 * many floats as the piece has, at most), and the node it names as
	 * its sender (a worker's or server's rank; the harness's transport
	 * takes the connection's, but under --fault forged-sender) */
	int hostile;
	uint64_t bytes;
	uint32_t claimed;
	struct msg *next;
} msg;

typedef struct channel {
	msg *head, *tail;
	uint32_t weight; /* slow channels are picked less often */
} channel;

/* What a checker knows of one gate: transfers ready and not released.
 * A machine's gate may release a transfer well before the driver takes
 * the message (the server's barrier readies a version's sends one after
 * another, the gate releasing some as each comes): each transfer notes
 * how many the gate had released when it became ready (the machine's
 * counter), so a release is checked only against the transfers ready
 * before it. */
typedef struct shadow {
	struct pend {
		uint32_t part, piece, receiver;
		uint64_t iteration, seq;
		uint64_t after; /* the gate's releases before it was ready */
		uint32_t number;
	} *v;
	uint32_t n, cap;
	uint64_t seq;
	uint64_t released;  /* releases taken from the machine */
	uint64_t in_flight; /* released - acknowledged, from the messages */
	uint32_t *last;     /* counter: per receiver, last number released */
	uint64_t *last_it;  /* ... and its iteration */
	int kind;           /* the gate's (its direction's) kind */
	int server;         /* a server's (its receivers are workers) */
	uint64_t credit;    /* and window */
	/* a live credit change (credit_change): the window for iteration
	 * or version credit_from on, in force from the first transfer of
	 * such an iteration or version made ready */
	int credit_pending;
	uint64_t credit_next, credit_from;
	uint64_t credit_before;    /* the window at the previous check */
	uint64_t checked_released; /* releases at the previous check */
} shadow;

typedef struct wk {
	ps_join *join;     /* joining (proto/join.h) */
	ps_wproto *proto;  /* the real worker machine (proto/worker.h) */
	shadow sh;
	uint64_t it;       /* iteration being computed or waited for */
	int pushed;        /* iteration it's pushes are in */
	int done_sent;     /* its DONE went out */
	uint32_t weight;   /* stragglers compute less often */
	uint64_t params_in, params_acks; /* PARAMS received, acknowledged */
	/* its application's stop (proto/stop.h): it waits to begin
	 * iteration `asking`, or ends after end_at (0: at K) */
	ps_stop_worker stop;
	int waiting;
	uint64_t asking, end_at;
} wk;

typedef struct srv {
	ps_join *join;
	ps_sproto *sh;
	shadow shd;
	uint32_t *hold_next; /* per local partition x worker: the piece its
			      * next hold() is for (pieces are readied in
			      * order) */
	float **values, **mom; /* per local partition */
	double **acc;
	int running;
	ps_sproto_op op;
	msg *op_msg; /* the message the running op reads */
	/* what it may hold (check_bounds): sends waiting in its gate, ops */
	uint64_t bound_pending, bound_ops;
	/* checkpoints (ckpt.c): the real machine; per local partition the
	 * values taken into the checkpoint collected and into the one being
	 * written, with their versions; the iterations whose shard is on
	 * disk (bit i: iteration i) */
	ps_ckpt_take ck;
	float **col, **wr;
	uint64_t *col_version, *wr_version;
	uint64_t on_disk;
} srv;

typedef struct job {
	uint64_t seed, rng;
	int fault;
	int verbose;
	uint32_t W, S, T, K, P;
	/* per direction: the workers' pushes, the servers' parameter sends */
	int push_gate, params_gate;
	uint64_t push_credit, params_credit;
	uint32_t *push_numbers, *params_numbers; /* per partition */
	int barrier; /* the servers' (proto/server.h) */
	uint64_t partition_size;
	/* per direction: the pieces a partition goes in (bytes; 0: whole) */
	uint64_t push_piece, params_piece;
	int fuse;
	ps_placement *pl;
	wk *w;
	srv *s;
	channel *ch; /* [from * N + to], nodes: workers, then servers */
	uint32_t N;
	uint64_t steps;
	/* the scheduler's membership (proto/membership.h), on a simulated
	 * clock (ms): each step takes 1-4 ms, live nodes are heard every
	 * HB_INTERVAL; a node may die */
	ps_membership *ms;
	int64_t now;
	int64_t *last_hb; /* per node */
	int32_t dead;     /* node, or -1 */
	uint64_t kill_at; /* the step it dies at; 0: none */
	/* where kill_at is even, a live node's send to the dead one fails
	 * (as TCP's does once the connection is gone) and it reports the
	 * lost peer (PEER_LOST) */
	int report_lost, lost_reported;
	int all_done;
	/* a malicious member (see the header): the extra node X = W + S + 1,
	 * or worker `hostile` turned hostile */
	int adversary;
	int32_t hostile;  /* worker, or -1: the extra node */
	uint32_t X;       /* the extra node's index (adversary, hostile < 0) */
	uint64_t arng;    /* its own generator: seeds without it replay as
			     before */
	uint32_t budget;  /* messages it may still send */
	/* a live credit change (see the header), at step change_at (0:
	 * none) to change_push / change_params (0: that direction keeps its
	 * window); its own generator, as the adversary's */
	uint64_t crng;
	uint64_t change_at, change_push, change_params;
	/* connections per peer pair (tcp's transport.connections_per_peer):
	 * in one seed of three 2 or 3, else 1; a channel's messages then
	 * keep their order only within a lane (dst_lane_of); its own
	 * generator, as the adversary's */
	uint64_t lrng;
	uint32_t lanes;
	uint64_t overtakes; /* deliveries past an earlier message */
	int changed;         /* the change was told */
	uint32_t changes_in; /* gates that took it (at their boundary) */
	/* a tuner's stop (see the header): asked at step stop_at (0: none);
	 * the scheduler's round, margin and what it knows of the workers'
	 * progress; every iteration it asked a stop before */
	uint64_t srng;
	uint64_t stop_at;
	int stopping;
	ps_stop_round sr;
	uint64_t margin;
	uint64_t *progress;
	uint64_t asked[32];
	uint32_t nasked;
	int stop_now; /* STOP_NOW went */
	/* checkpoints (ckpt.c): in one seed of three (its own generator)
	 * periodic ones every `every` iterations (0: none), one asked for at
	 * step ckpt_at (0: none), and the scheduler's side
	 * (proto/checkpoint_sched.h); whether every server answered its
	 * FLUSH; the iterations whose manifest is written or whose round
	 * was abandoned (bit i) */
	uint64_t krng;
	int ckpt;
	uint64_t every, ckpt_at;
	int disk_faults; /* a write may fail */
	ps_ckpt_sched cs;
	int flushed;
	uint64_t manifests, abandoned;
	/* what is on disk, per iteration (< 64), in tensor order: every
	 * tensor's elements back to back (tensor t from tensor_off[t]) */
	float *disk[64];
	uint64_t tensor_off[9];
	/* a resumed job (ckpt.c): it starts at iteration `start` from the
	 * checkpoint's values (from, in tensor order) under a layout of its
	 * own; base holds them per partition of that layout. Its
	 * generators start from gen_seed (the seed, or for a resumed job
	 * one derived from it) */
	uint64_t gen_seed;
	uint64_t start;
	const float *from;
	float **base;
	uint32_t from_T, from_W;
	uint64_t from_numel[8];
	msg *seen[8];     /* honest messages it may replay (copies) */
	uint32_t nseen;
	int pulling;      /* a hostile PULL is being answered */
	int injecting;    /* a hostile message is being sent */
	char failure[512];
} job;

/* dst.c's, for ckpt.c */
int fail(job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int send_msg(job *j, uint32_t from, uint32_t to, int type, uint32_t part,
	     uint64_t iteration, int32_t priority, float *payload);
double expected(const job *j, uint32_t p, uint64_t e, uint64_t v);
/* Partition p's element e: element *o of tensor *t. */
void dst_locate(const job *j, uint32_t p, uint64_t e, uint32_t *t,
		uint64_t *o);
uint64_t rng_next(uint64_t *x);
uint32_t rng_below(uint64_t *x, uint32_t n);
int sched_ask_stop(job *j, uint64_t late);

/* ---- checkpoints (ckpt.c) ---------------------------------------------- */

/* Draws the seed's checkpoints; the servers' machines (after theirs). */
int dst_ckpt_setup(job *j);
void dst_ckpt_teardown(job *j);
/* Server s's local partition k reached a new version by an update. */
int dst_ckpt_updated(job *j, uint32_t s, uint32_t k);
/* CKPT or FLUSH reaches server s. */
int dst_ckpt_server_receive(job *j, uint32_t s, const msg *m);
/* CKPT_DONE, CKPT_LATE or FLUSHED reaches the scheduler. */
int dst_ckpt_sched_receive(job *j, const msg *m);
/* Whether server s has a write in progress, and finishing it. */
int dst_ckpt_writing(const job *j, uint32_t s);
int dst_ckpt_finish_write(job *j, uint32_t s);
/* The scheduler asks for a checkpoint (late: after a CKPT_LATE);
 * dst_ckpt_ask_iteration only picks it (0: given up). */
int dst_ckpt_ask(job *j, uint64_t late);
uint64_t dst_ckpt_ask_iteration(job *j, uint64_t late);
/* The scheduler's CKPT of v to every server (a request or a stop's). */
int dst_ckpt_send_asks(job *j, uint64_t v);
/* A resumed job: each partition's values at j->start (j->base), from
 * j->from, once the layout is placed. */
int dst_ckpt_resume_base(job *j);
/* After a job that passed: a job resumed from one of its complete
 * checkpoints (in one of two such seeds, the newest before its end),
 * under another layout. PS_OK when none is to run or it passed; else
 * PS_EPROTO with the failure in *r. */
int dst_ckpt_run_resumed(const job *j, int (*run)(job *), job *r);
/* What ckpt.c keeps of a job past its teardown (the disk). */
void dst_ckpt_free_disk(job *j);

/* Every worker is done: the servers flush. */
int dst_ckpt_all_done(job *j);
/* At the end: every server flushed; the checkpoints that must exist do. */
int dst_ckpt_check_end(job *j, uint64_t end);

#endif /* ORDO_TESTS_DST_H */
