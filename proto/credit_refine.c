/*
 * proto/credit_refine.c - the hill climb over credits during a job
 * (proto/credit_refine.h says how).
 */
#include <stdio.h>
#include <string.h>

#include "common/config.h"
#include "proto/credit_refine.h"

enum {
	REFINE_MEASURING = 0, /* trial[ntrials - 1] gathers samples */
	REFINE_APPLYING,      /* its credit asked for, the boundary not said */
	REFINE_DONE,
};

/* Iterations a trial needs from the change asked for: the boundary, the
 * one that settles, the ones measured, and the one whose start ends the
 * last measured. */
#define TRIAL_SPAN (1 + 1 + REFINE_MEASURE + 1)

int ps_refine_init(ps_refine *r, uint64_t credit, uint64_t partition,
		   uint64_t cap, uint64_t iterations)
{
	memset(r, 0, sizeof(*r));
	r->partition = partition;
	r->cap = cap;
	r->iterations = iterations;
	r->trial[0] = (ps_refine_trial){.credit = credit, .from = 0};
	r->ntrials = 1;
	r->state = REFINE_MEASURING;
	if (credit == 0 || iterations < REFINE_WARMUP + 3 * TRIAL_SPAN) {
		r->state = REFINE_DONE;
		return 0;
	}
	return 1;
}

/* The mean of the samples without the fastest and the slowest. */
static double trimmed_mean(const double *v, uint32_t n)
{
	double lo = v[0], hi = v[0], sum = 0.0;

	for (uint32_t i = 0; i < n; i++) {
		sum += v[i];
		if (v[i] < lo)
			lo = v[i];
		if (v[i] > hi)
			hi = v[i];
	}
	return n > 2 ? (sum - lo - hi) / (double)(n - 2) : sum / (double)n;
}

static int allowed(const ps_refine *r, uint64_t credit)
{
	if (credit < r->partition || credit > r->cap)
		return 0;
	for (uint32_t i = 0; i < r->ntrials; i++)
		if (r->trial[i].credit == credit)
			return 0;
	return 1;
}

/* The credit the next trial tries, or 0: none. The first three are the
 * credit in force, twice it and half it; then the climb goes on the way
 * that won while it keeps winning. */
static uint64_t next_credit(ps_refine *r)
{
	const ps_refine_trial *first = &r->trial[0], *best = &r->trial[r->best];
	uint64_t c;

	if (r->ntrials >= REFINE_MAX_TRIALS)
		return 0;
	if (r->ntrials == 1 && allowed(r, first->credit * 2))
		return first->credit * 2;
	if (r->ntrials <= 2 && allowed(r, first->credit / 2))
		return first->credit / 2;
	if (r->best == 0)
		return 0; /* the credit in force won both ways */
	if (r->direction == 0)
		r->direction = best->credit > first->credit ? 1 : -1;
	if (r->best != r->ntrials - 1 && r->ntrials > 3)
		return 0; /* the last step lost: the climb is over */
	c = r->direction > 0 ? best->credit * 2 : best->credit / 2;
	return allowed(r, c) ? c : 0;
}

static ps_refine_action finish(ps_refine *r, uint64_t *credit_p,
			       int *changed_p)
{
	const ps_refine_trial *in_force = &r->trial[r->ntrials - 1];

	r->state = REFINE_DONE;
	*credit_p = r->trial[r->best].credit;
	*changed_p = *credit_p != in_force->credit;
	return PS_REFINE_FINISHED;
}

/* The trial measuring now has its samples: scored, then the next. */
static ps_refine_action trial_done(ps_refine *r, uint64_t iteration,
				   uint64_t *credit_p, int *changed_p)
{
	ps_refine_trial *t = &r->trial[r->ntrials - 1];
	uint64_t c;

	t->iter_us = trimmed_mean(r->sample, r->nsample);
	r->nsample = 0;
	if (t->iter_us < r->trial[r->best].iter_us * (1.0 - REFINE_MARGIN))
		r->best = r->ntrials - 1;
	c = next_credit(r);
	if (c == 0 || iteration + TRIAL_SPAN >= r->iterations)
		return finish(r, credit_p, changed_p);
	r->trial[r->ntrials++] = (ps_refine_trial){.credit = c,
						   .from = UINT64_MAX};
	r->state = REFINE_APPLYING;
	*credit_p = c;
	*changed_p = 1;
	return PS_REFINE_APPLY;
}

ps_refine_action ps_refine_on_iteration(ps_refine *r, uint64_t iteration,
					double t_us, uint64_t *credit_p,
					int *changed_p)
{
	const ps_refine_trial *t = &r->trial[r->ntrials - 1];
	int consecutive = r->last != 0 && iteration == r->last;
	uint64_t ran = iteration - 1; /* the iteration that just ended */
	double took = t_us - r->begun_us;

	*changed_p = 0;
	*credit_p = t->credit;
	r->last = iteration + 1;
	r->begun_us = t_us;
	if (r->state != REFINE_MEASURING || !consecutive)
		return PS_REFINE_NOTHING;
	/* trial 0 after the warm-up; the others after one that settles */
	if (r->ntrials == 1 ? ran < REFINE_WARMUP : ran < t->from + 1)
		return PS_REFINE_NOTHING;
	r->sample[r->nsample++] = took;
	if (r->nsample < REFINE_MEASURE)
		return PS_REFINE_NOTHING;
	return trial_done(r, iteration, credit_p, changed_p);
}

void ps_refine_applied(ps_refine *r, uint64_t from)
{
	if (r->state != REFINE_APPLYING)
		return;
	r->trial[r->ntrials - 1].from = from;
	r->state = REFINE_MEASURING;
}

void ps_refine_describe(const ps_refine *r, char *buf, size_t cap)
{
	size_t n = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < r->ntrials && n < cap; i++) {
		const ps_refine_trial *t = &r->trial[i];
		char size[32];
		int w;

		if (t->iter_us <= 0)
			continue;
		ps_config_format_size(t->credit, size, sizeof(size));
		w = snprintf(buf + n, cap - n, "%s%s %.1f ms", n ? ", " : "",
			     size, t->iter_us / 1e3);
		if (w < 0)
			break;
		n += (size_t)w;
	}
	if (n < cap && r->state == REFINE_DONE) {
		char size[32];
		ps_config_format_size(r->trial[r->best].credit, size,
				      sizeof(size));
		snprintf(buf + n, cap - n, "%skept %s", n ? "; " : "", size);
	}
}
