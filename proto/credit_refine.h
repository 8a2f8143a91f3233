/*
 * proto/credit_refine.h - the credit window refined during a job from
 * measured iterations (scheduling.credit_refine).
 *
 * The sizes chosen at the start (sim/auto_sizes.h) rest on a model of the
 * job; the job itself says how fast it runs. After a warm-up, the
 * scheduler tries credits around the one in force, each for a few
 * iterations, and keeps the fastest: a hill climb by factors of two.
 *
 *   1. Warm-up: WARMUP iterations are not measured (first iterations pay
 *      for connections, allocations, caches).
 *   2. The credit in force, then twice it, then half it (never below the
 *      partition size): each measured over MEASURE iterations after one
 *      that settles (the change takes effect at an iteration boundary,
 *      and the first iteration under it still drains the old window).
 *      An iteration's time is the time between the slowest worker
 *      beginning it and beginning the next (PROGRESS); a trial's, the
 *      mean of its iterations without the fastest and the slowest.
 *   3. Where twice or half won by more than MARGIN, the climb goes on
 *      that way (four times, a quarter, ...) while it keeps winning and
 *      stays within [partition, cap].
 *   4. The best is put in force for the rest of the job.
 *
 * The machine is pure: it is told when iterations begin (the slowest
 * worker's) and answers with the credit to put in force and when; the
 * scheduler sends the CREDITs and says from which iteration they apply.
 *
 * Threads: none; the caller serialises.
 */
#ifndef ORDO_PROTO_CREDIT_REFINE_H
#define ORDO_PROTO_CREDIT_REFINE_H

#include <stddef.h>
#include <stdint.h>

#define REFINE_WARMUP 3
#define REFINE_MEASURE 5
#define REFINE_MARGIN 0.02  /* a trial must be this much faster to win */
#define REFINE_MAX_TRIALS 8

typedef struct ps_refine_trial {
	uint64_t credit;
	uint64_t from;  /* the first iteration under it */
	double iter_us; /* its measured time per iteration; 0: not yet */
} ps_refine_trial;

typedef struct ps_refine {
	uint64_t partition, cap; /* the credits allowed */
	uint64_t iterations;     /* the job's */
	int state;               /* REFINE_* (credit_refine.c) */
	int direction;           /* the climb: +1 doubling, -1 halving */
	ps_refine_trial trial[REFINE_MAX_TRIALS];
	uint32_t ntrials;
	uint32_t best;           /* index into trial */
	double begun_us;         /* when the last iteration began */
	uint64_t last;           /* which iteration that was, +1; 0: none */
	double sample[REFINE_MEASURE];
	uint32_t nsample;
} ps_refine;

/* What the caller does after an iteration began. */
typedef enum ps_refine_action {
	PS_REFINE_NOTHING = 0,
	PS_REFINE_APPLY,    /* put *credit_p in force from the next boundary,
			     * then ps_refine_applied */
	PS_REFINE_FINISHED, /* done: *credit_p is in force (or applied with
			     * this last change when it differs) */
} ps_refine_action;

/*
 * Starts a refinement of `credit` (in force from iteration 0) for a job
 * of `iterations`, credits within [partition, cap]. Returns 0 when the
 * job is too short to measure the three first trials (nothing to do).
 */
int ps_refine_init(ps_refine *r, uint64_t credit, uint64_t partition,
		   uint64_t cap, uint64_t iterations);

/*
 * Iteration `iteration` began (every worker began it) at t_us. When the
 * answer is PS_REFINE_APPLY or PS_REFINE_FINISHED with a credit that
 * differs from the one in force, *credit_p is the credit to put in force;
 * *changed_p says whether it differs.
 */
ps_refine_action ps_refine_on_iteration(ps_refine *r, uint64_t iteration,
					double t_us, uint64_t *credit_p,
					int *changed_p);

/* The credit asked for applies from iteration `from` on. */
void ps_refine_applied(ps_refine *r, uint64_t from);

/* One line: every trial and the choice, for the log. */
void ps_refine_describe(const ps_refine *r, char *buf, size_t cap);

#endif /* ORDO_PROTO_CREDIT_REFINE_H */
