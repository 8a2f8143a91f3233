/*
 * proto/stop.h - a job's stop at an iteration every worker agrees on (a
 * tuner's stop for a restart, docs/tune.md), as machines without I/O.
 *
 * The scheduler picks an iteration V a little ahead of the furthest
 * progress it knows (ps_stop_ask), asks the servers for a checkpoint at V
 * and tells every worker to stop before V (STOP). A worker that has begun
 * V already cannot: it answers STOP_LATE with the first iteration it can
 * still stop before, and the scheduler picks a later V. A worker that
 * reaches V does not end on its own: another may turn out late, and it
 * would then wait for the ended worker's gradients for ever. So it says
 * it is there (STOP_READY) and waits; once every worker is ready at the
 * same V, the scheduler says so (STOP_NOW) and they all end before V,
 * where the checkpoint is. A later V instead lets the waiting workers run
 * on to it. Every worker thus ends after the same iteration, or the job
 * goes on.
 *
 * Worker: ps_stop_worker, asked before each iteration (ps_stop_worker_next)
 * and told of STOP and STOP_NOW. Scheduler: ps_stop_round, told of the
 * workers' STOP_READY and STOP_LATE. ps-worker (client/) and ps-scheduler
 * (scheduler/) drive them; so does the deterministic simulation
 * (tests/dst), which shows a worker that ends on its own at V can leave
 * the job waiting for ever (--fault stop-alone).
 *
 * Threads: plain data; each belongs to one thread (or its caller's lock).
 */
#ifndef ORDO_PROTO_STOP_H
#define ORDO_PROTO_STOP_H

#include <stddef.h>
#include <stdint.h>

/* ps_stop_ask's margin doubles while asks come too late; past this the
 * ask is given up. */
#define PS_STOP_MARGIN_MAX 1024

/* What the scheduler asks for when an ask must be called off: an
 * iteration no worker reaches (STOP with it lets every waiting worker run
 * on). */
#define PS_STOP_NEVER UINT64_MAX

/* The iteration a checkpoint or a stop is asked for: *margin iterations
 * past the furthest progress known (highest) and past `late` (an
 * iteration some node already passed: 0 on a first ask). *margin is 2 on
 * a first ask and doubles on each late one; 0 when it would pass
 * PS_STOP_MARGIN_MAX (give up). */
uint64_t ps_stop_ask(uint64_t highest, uint64_t late, uint64_t *margin);

/* ---- a worker ----------------------------------------------------------- */

typedef enum {
	PS_STOP_RUN,  /* begin the iteration */
	PS_STOP_WAIT, /* at the stop, waiting for STOP_NOW or a later one */
	PS_STOP_END,  /* every worker stops here: the job ends */
} ps_stop_next;

enum {
	PS_STOP_FAULT_NONE = 0,
	PS_STOP_FAULT_ALONE, /* a worker ends at its stop without waiting
				for the others (tests/dst shows the job can
				then hang) */
};

typedef struct ps_stop_worker {
	uint64_t begun;  /* iterations begun: the next to begin is `begun` */
	uint64_t target; /* end before this iteration (0: no stop asked) */
	int ready_sent;  /* STOP_READY for target is out */
	int now;         /* STOP_NOW for target came */
	int fault;       /* PS_STOP_FAULT_*: tests/dst only */
} ps_stop_worker;

/* STOP before iteration v came. PS_OK: the worker stops there (or keeps
 * the stop it has, when v is older). 1: it began v already; *late is the
 * first iteration it can stop before (STOP_LATE's). PS_EPROTO with why
 * for v = 0. */
int ps_stop_worker_on_stop(ps_stop_worker *s, uint64_t v, uint64_t *late,
			   char *why, size_t whylen);

/* STOP_NOW for v came: every worker is ready there. PS_EPROTO with why
 * where this worker does not wait at v. */
int ps_stop_worker_on_now(ps_stop_worker *s, uint64_t v, char *why,
			  size_t whylen);

/* The application asks to begin iteration `it`. *send_ready: STOP_READY
 * (for s->target) is to be sent now (once per stop). */
ps_stop_next ps_stop_worker_next(ps_stop_worker *s, uint64_t it,
				 int *send_ready);

/* ---- the scheduler ------------------------------------------------------ */

typedef struct ps_stop_round {
	uint32_t workers;
	uint64_t target;  /* the stop asked for (0: none) */
	uint32_t nready;  /* workers ready at target */
	uint8_t *ready;   /* per worker rank */
	int ended;        /* STOP_NOW went: the job ends before target */
} ps_stop_round;

int ps_stop_round_init(ps_stop_round *r, uint32_t workers);
void ps_stop_round_free(ps_stop_round *r);

/* The workers are told to stop before v (a first stop, or a later one
 * after a STOP_LATE): readiness starts over. */
void ps_stop_round_start(ps_stop_round *r, uint64_t v);

/* The ask is called off (given up): no stop, nobody waits. */
void ps_stop_round_cancel(ps_stop_round *r);

/* STOP_READY from worker `rank` for v. 1: every worker is ready at the
 * target (send STOP_NOW for it; the round has ended); 0: not yet, or a
 * ready for an older or called-off stop, or said again (ignored);
 * PS_EPROTO with why for a rank out of range. */
int ps_stop_round_on_ready(ps_stop_round *r, uint32_t rank, uint64_t v,
			   char *why, size_t whylen);

/* STOP_LATE: a worker can stop before `late` at the earliest. 1: the
 * stop must move (ask again past late); 0: the target is past it already
 * (an answer to an older stop), or the round ended. */
int ps_stop_round_on_late(const ps_stop_round *r, uint64_t late);

#endif /* ORDO_PROTO_STOP_H */
