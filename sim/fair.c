/*
 * sim/fair.c - fair sharing of the links between streams (fair.h).
 *
 * Resources: the uplink of host h is h, its downlink H + h (hosts: workers
 * 0..W-1, then servers W..W+S-1), the machine 2H. Streams: for worker w
 * and the r-th server that holds a partition, w * 2U + r (w to the server)
 * and w * 2U + U + r (the server to w).
 *
 * A resource is also a rate group: the active streams it fixed (its
 * members) all go at its share. The group keeps a virtual clock V (bytes
 * each member carried since the group was last empty, as of time tv) and a
 * min-heap of its members keyed by (F, stream): a member finishes its head
 * message when V reaches F. The heap deletes lazily: an entry whose stream
 * left the group since (ver) is skipped.
 *
 * Arithmetic that must be the same in the full and the incremental modes,
 * and is, because it depends only on a group's own history:
 *   V(t)      = V + rate * (t - tv)
 *   rebase    when the group's share changes (as a double): V = V(t),
 *             tv = t; when it is empty at a join: V = 0, tv = t
 *   join      F = V(t) + the head's bytes
 *   move      F' = V'(t) + (F - V(t))
 *   done      F - V(t) <= max(rate * 1e-3, 1e-6) (a ns at the rate)
 *   timer     t + max(0, F_min - V(t)) / rate, for each group whose share
 *             or members changed, from the time of the change
 * and per link, with token buckets (lazy, rebased when its carried rate
 * changes): tokens(t) = clamp(tok + (rate - use) * (t - ttok), 0, burst);
 * it holds tokens (carries burst_rate) from a computation that finds a
 * byte in it to its dry timer (tokens reach zero; they count as zero from
 * then on).
 *
 * The network event is at the earliest timer (never before the present),
 * and moved, with a new generation, after every change: every send to an
 * idle stream (or batch of them, ps_fair_hold) and every network event.
 *
 * Certification (no machine, no buckets: every link's capacity is `rate`):
 * each resource carries a ceiling >= its share, an integer number of units
 * of rate * 2^-40 with four significant bits, kept within [1, 1.4] x the
 * share; a certified link holds uhat = the sum of its streams' groups'
 * ceilings (exact in 64 bits) and stays certified while uhat < 2^40 *
 * (1 - 2^-16), i.e. while its streams' rates sum to less than its
 * capacity by that margin. Its streams are then private to their other
 * link; a stream never has two certified links. A link is certified when
 * a computation finds it unpicked and carrying less than 0.7 of its
 * capacity. Why that is exact: docs/sim.md, "Incremental sharing".
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ordo/error.h"
#include "sim/fair.h"

#define NONE UINT32_MAX
#define TOKEN_NODE 0x80000000u
#define KMAX 40
/* a certified link's ceilings stay below its capacity by 2^-16 of it */
#define THRESHOLD (((uint64_t)1 << KMAX) - ((uint64_t)1 << (KMAX - 16)))

enum { BATCH_SENT = 1 };

enum {
	COUNTED = 1, /* its group's ceiling is in its certified link's uhat */
	DUE = 2,     /* its head is done at this event, not yet delivered */
};

typedef struct fstream {
	double F;          /* finish of its head, in its group's bytes */
	uint32_t head, tail;
	uint32_t grp;      /* its group (the resource that fixed it), NONE
			    * when idle or not yet placed */
	uint32_t ngrp;     /* the group a computation gives it */
	uint32_t ver;      /* bumped when it leaves a group */
	uint32_t lpos[2];  /* positions in its uplink's, downlink's ids */
	uint32_t apos;     /* position in act, NONE when idle */
	uint32_t stamp;    /* fixed in computation number `stamp` */
	uint32_t flags;
} fstream;

typedef struct gentry {
	double F;
	uint32_t id, ver;
} gentry;

typedef struct fres {
	/* active streams through it: ids[0..nc) have both links in the
	 * computation (coupled), ids[nc..n) have the other link certified
	 * (private to this one); a certified link has nc = 0 */
	uint32_t *ids, n, nc, capids;
	/* its rate group */
	gentry *heap;
	uint32_t hn, hcap, members;
	double rate, V, tv;
	int has_rate;
	double T, TT;      /* timers: its group's next completion, its
			    * bucket's running dry (in the timer heap) */
	uint32_t tix, ttix;
	uint64_t cu;       /* ceiling, in units of rate * 2^-40 */
	/* certification */
	int cert;
	uint64_t uhat;
	uint32_t vstamp;
	/* a computation's scratch */
	uint32_t stamp, hidx, nrem, cstamp, tstamp;
	double crem, key, nshare, nuse;
	int picked;
	/* token bucket */
	double tok, ttok, use;
	int has;
} fres;

typedef struct vec {
	uint32_t *v;
	uint32_t n, cap;
} vec;

struct ps_fair {
	ps_fair_config c;
	uint32_t W, S, U, twoU, H, L, nres, M;
	uint32_t *srv_of; /* used rank -> server */
	uint32_t *rank_of; /* server -> used rank (NONE: none) */
	fstream *st;
	size_t nst;
	fres *r;
	double R;
	int bucket, machine, plain;
	uint32_t *act, nact, capact;
	uint32_t epoch, ustamp;
	vec changed, tchanged, seeds, region, fixed, fresh, rh, viol;
	vec timers;       /* heap of nodes (a group, TOKEN_NODE | a link) by
			   * their timer */
	vec due;          /* streams done at this event */
	vec scratch;      /* gtake_due's stack */
	vec later;        /* timers looked at too early */
	uint64_t *order;  /* due streams by position in act */
	uint32_t norder;
	uint64_t gen;     /* of the network event */
	int held, batch;  /* sends held (ps_fair_hold); what they did */
	double now;       /* of the computation in progress */
	/* the whole-cluster computation's scratch */
	double *gcap;
	uint32_t *gnfl, *groff, *grlist;
	uint8_t *gfz;
	size_t gcapn;
	int rc;
	ps_fair_stats stats;
};

/* ---- small helpers -------------------------------------------------- */

static int vpush(ps_fair *f, vec *v, uint32_t x)
{
	if (v->n == v->cap) {
		uint32_t cap = v->cap ? 2 * v->cap : 64;
		uint32_t *p = realloc(v->v, (size_t)cap * sizeof(*p));
		if (!p) {
			f->rc = PS_ENOMEM;
			return PS_ENOMEM;
		}
		v->v = p;
		v->cap = cap;
	}
	v->v[v->n++] = x;
	return PS_OK;
}

static void links_of(const ps_fair *f, uint32_t id, uint32_t *up,
		     uint32_t *dn)
{
	uint32_t w = id / f->twoU, rest = id - w * f->twoU;

	if (rest < f->U) {
		*up = w;
		*dn = f->H + f->W + f->srv_of[rest];
	} else {
		*up = f->W + f->srv_of[rest - f->U];
		*dn = f->H + w;
	}
}

static uint32_t other_link(const ps_fair *f, uint32_t id, uint32_t l)
{
	uint32_t up, dn;

	links_of(f, id, &up, &dn);
	return l == up ? dn : up;
}

static int side_of(const ps_fair *f, uint32_t l)
{
	return l >= f->H;
}

static double cap_of(const ps_fair *f, uint32_t l)
{
	if (l == f->M)
		return f->c.machine_cap;
	return f->bucket && f->r[l].has ? f->c.burst_rate : f->R;
}

/* The head's weight on the machine (relative to machine_cap). */
static double mw_of(const ps_fair *f, uint32_t id)
{
	uint64_t m = f->c.ops.bytes(f->c.ops.ud, f->st[id].head);

	return (f->c.small_bytes && m <= f->c.small_bytes ? f->c.small_w
							  : 1.0) +
	       (m > f->c.msg_min ? f->c.msg_bytes / (double)m : 0.0);
}

/* ---- a link's streams ------------------------------------------------ */

static void ids_put(ps_fair *f, uint32_t l, uint32_t pos, uint32_t id)
{
	f->r[l].ids[pos] = id;
	f->st[id].lpos[side_of(f, l)] = pos;
}

static int ids_add(ps_fair *f, uint32_t l, uint32_t id, int coupled)
{
	fres *r = &f->r[l];

	if (r->n == r->capids) {
		uint32_t cap = r->capids ? 2 * r->capids : 8;
		uint32_t *p = realloc(r->ids, (size_t)cap * sizeof(*p));
		if (!p)
			return f->rc = PS_ENOMEM;
		r->ids = p;
		r->capids = cap;
	}
	ids_put(f, l, r->n++, id);
	if (coupled) {
		uint32_t pos = r->n - 1;
		if (pos != r->nc) {
			ids_put(f, l, pos, r->ids[r->nc]);
			ids_put(f, l, r->nc, id);
		}
		r->nc++;
	}
	return PS_OK;
}

static void ids_remove(ps_fair *f, uint32_t l, uint32_t id)
{
	fres *r = &f->r[l];
	uint32_t pos = f->st[id].lpos[side_of(f, l)];

	if (pos < r->nc) {
		/* fill the hole from the end of the coupled part, then that
		 * from the end */
		if (pos != r->nc - 1)
			ids_put(f, l, pos, r->ids[r->nc - 1]);
		pos = --r->nc;
	}
	if (pos != r->n - 1)
		ids_put(f, l, pos, r->ids[r->n - 1]);
	r->n--;
}

/* Moves id into l's coupled part (coupled) or out of it. */
static void ids_set_coupled(ps_fair *f, uint32_t l, uint32_t id, int coupled)
{
	fres *r = &f->r[l];
	uint32_t pos = f->st[id].lpos[side_of(f, l)];

	if (coupled && pos >= r->nc) {
		if (pos != r->nc) {
			ids_put(f, l, pos, r->ids[r->nc]);
			ids_put(f, l, r->nc, id);
		}
		r->nc++;
	} else if (!coupled && pos < r->nc) {
		uint32_t last = r->nc - 1;
		if (pos != last) {
			ids_put(f, l, pos, r->ids[last]);
			ids_put(f, l, last, id);
		}
		r->nc--;
	}
}

/* ---- rate groups ------------------------------------------------------ */

static double vnow(const fres *g, double t)
{
	return g->V + g->rate * (t - g->tv);
}

static void mark_changed(ps_fair *f, uint32_t g)
{
	if (f->r[g].cstamp != f->ustamp) {
		f->r[g].cstamp = f->ustamp;
		vpush(f, &f->changed, g);
	}
}

static int gless(const gentry *a, const gentry *b)
{
	return a->F < b->F || (a->F == b->F && a->id < b->id);
}

static int glive(const ps_fair *f, const fres *g, const gentry *e)
{
	return f->st[e->id].ver == e->ver &&
	       f->st[e->id].grp == (uint32_t)(g - f->r);
}

/* Makes a heap of g's entries (bottom-up). */
static void gheapify(fres *g)
{
	uint32_t n = g->hn;

	for (uint32_t k = n / 2; k-- > 0;) {
		gentry x = g->heap[k];
		uint32_t i = k;
		for (;;) {
			uint32_t c = 2 * i + 1;
			if (c >= n)
				break;
			if (c + 1 < n && gless(&g->heap[c + 1], &g->heap[c]))
				c++;
			if (!gless(&g->heap[c], &x))
				break;
			g->heap[i] = g->heap[c];
			i = c;
		}
		g->heap[i] = x;
	}
}

/* Drops the stale entries of g's heap (members that left since) and
 * makes a heap of the others: the same first entry. */
static void gcompact(ps_fair *f, fres *g)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < g->hn; i++)
		if (glive(f, g, &g->heap[i]))
			g->heap[n++] = g->heap[i];
	g->hn = n;
	gheapify(g);
}

static int gpush(ps_fair *f, fres *g, double F, uint32_t id, uint32_t ver)
{
	uint32_t i;
	gentry e = {.F = F, .id = id, .ver = ver};

	if (g->hn == g->hcap && g->hn > 2 * g->members + 16)
		gcompact(f, g);
	if (g->hn == g->hcap) {
		uint32_t cap = g->hcap ? 2 * g->hcap : 8;
		gentry *p = realloc(g->heap, (size_t)cap * sizeof(*p));
		if (!p)
			return f->rc = PS_ENOMEM;
		g->heap = p;
		g->hcap = cap;
	}
	i = g->hn++;
	while (i > 0) {
		uint32_t up = (i - 1) / 2;
		if (!gless(&e, &g->heap[up]))
			break;
		g->heap[i] = g->heap[up];
		i = up;
	}
	g->heap[i] = e;
	return PS_OK;
}

static void gpop(fres *g)
{
	gentry last = g->heap[--g->hn];
	uint32_t i = 0;

	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= g->hn)
			break;
		if (c + 1 < g->hn && gless(&g->heap[c + 1], &g->heap[c]))
			c++;
		if (!gless(&g->heap[c], &last))
			break;
		g->heap[i] = g->heap[c];
		i = c;
	}
	if (g->hn)
		g->heap[i] = last;
}

/* The group's first live entry (stale ones dropped), or NULL. */
static const gentry *gtop(ps_fair *f, fres *g)
{
	while (g->hn) {
		const gentry *e = &g->heap[0];
		if (glive(f, g, e))
			return e;
		gpop(g);
	}
	return NULL;
}

static void rebase(fres *g, double t)
{
	if (g->members) {
		g->V = vnow(g, t);
		g->tv = t;
	}
}

static void join(ps_fair *f, uint32_t id, uint32_t gi, double F_rel,
		 double t)
{
	fres *g = &f->r[gi];
	fstream *s = &f->st[id];

	if (g->members == 0) {
		g->V = 0.0;
		g->tv = t;
	}
	s->F = vnow(g, t) + F_rel;
	s->grp = gi;
	g->members++;
	gpush(f, g, s->F, id, s->ver);
	mark_changed(f, gi);
}

static void leave(ps_fair *f, uint32_t id)
{
	fstream *s = &f->st[id];

	f->r[s->grp].members--;
	mark_changed(f, s->grp);
	s->ver++;
	s->grp = NONE;
}

static void move(ps_fair *f, uint32_t id, uint32_t gi, double t)
{
	fstream *s = &f->st[id];
	double rem = s->F - vnow(&f->r[s->grp], t);

	leave(f, id);
	join(f, id, gi, rem, t);
}

/* ---- timers: a heap of every group's next completion and every
 * bucket's running dry; the network event is at the earliest ---------- */

static double tkey(const ps_fair *f, uint32_t node)
{
	return node & TOKEN_NODE ? f->r[node & ~TOKEN_NODE].TT : f->r[node].T;
}

static uint32_t *tpos(ps_fair *f, uint32_t node)
{
	return node & TOKEN_NODE ? &f->r[node & ~TOKEN_NODE].ttix
				 : &f->r[node].tix;
}

static int tless(const ps_fair *f, uint32_t a, uint32_t b)
{
	double ka = tkey(f, a), kb = tkey(f, b);

	return ka < kb || (ka == kb && a < b);
}

static void tset_at(ps_fair *f, uint32_t i, uint32_t node)
{
	f->timers.v[i] = node;
	*tpos(f, node) = i;
}

static void t_up(ps_fair *f, uint32_t i)
{
	uint32_t x = f->timers.v[i];

	while (i > 0) {
		uint32_t up = (i - 1) / 2;
		if (!tless(f, x, f->timers.v[up]))
			break;
		tset_at(f, i, f->timers.v[up]);
		i = up;
	}
	tset_at(f, i, x);
}

static void t_down(ps_fair *f, uint32_t i)
{
	uint32_t x = f->timers.v[i], n = f->timers.n;

	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && tless(f, f->timers.v[c + 1], f->timers.v[c]))
			c++;
		if (!tless(f, f->timers.v[c], x))
			break;
		tset_at(f, i, f->timers.v[c]);
		i = c;
	}
	tset_at(f, i, x);
}

static void timer_clear(ps_fair *f, uint32_t node)
{
	uint32_t i = *tpos(f, node), last;

	if (i == NONE)
		return;
	*tpos(f, node) = NONE;
	last = f->timers.v[--f->timers.n];
	if (i == f->timers.n)
		return;
	tset_at(f, i, last);
	t_up(f, i);
	t_down(f, *tpos(f, last));
}

static void timer_set(ps_fair *f, uint32_t node, double T)
{
	uint32_t i = *tpos(f, node);

	if (node & TOKEN_NODE)
		f->r[node & ~TOKEN_NODE].TT = T;
	else
		f->r[node].T = T;
	if (i == NONE) {
		if (vpush(f, &f->timers, node) != PS_OK)
			return;
		i = f->timers.n - 1;
		tset_at(f, i, node);
	}
	t_up(f, i);
	t_down(f, *tpos(f, node));
}

/* Group gi's next completion, from t. */
static void time_group(ps_fair *f, uint32_t gi, double t)
{
	fres *g = &f->r[gi];
	const gentry *e = gtop(f, g);

	if (e && g->rate > 0) {
		double rem = e->F - vnow(g, t);
		if (rem < 0)
			rem = 0;
		timer_set(f, gi, t + rem / g->rate);
	} else {
		timer_clear(f, gi);
	}
}

/* ---- token buckets ---------------------------------------------------- */

static double tokens_at(const ps_fair *f, const fres *l, double t)
{
	double k = l->tok + (f->R - l->use) * (t - l->ttok);

	return k < 0 ? 0 : k > f->c.burst ? f->c.burst : k;
}

static void mark_token(ps_fair *f, uint32_t l)
{
	if (f->r[l].tstamp != f->ustamp) {
		f->r[l].tstamp = f->ustamp;
		vpush(f, &f->tchanged, l);
	}
}

/* Moves every live member of g done at t (as in net_event) to f->due
 * and makes a heap of the rest, in one pass: the done entries are a top
 * part of the heap (a parent finishes no later than its children). */
static void gtake_due(ps_fair *f, fres *g, double t)
{
	double V = vnow(g, t), tol = g->rate * 1e-3 > 1e-6 ? g->rate * 1e-3
							     : 1e-6;
	uint32_t keep = 0;

	/* depth first from the root, down to the entries not done (nothing
	 * below one is); stale entries on the way are dropped too */
	f->scratch.n = 0;
	if (g->hn && vpush(f, &f->scratch, 0) != PS_OK)
		return;
	while (f->scratch.n) {
		uint32_t i = f->scratch.v[--f->scratch.n];
		gentry *e = &g->heap[i];
		if (e->F - V > tol)
			continue;
		if (glive(f, g, e)) {
			f->st[e->id].flags |= DUE;
			vpush(f, &f->due, e->id);
		}
		e->ver = ~f->st[e->id].ver; /* taken: stale from now on */
		for (uint32_t c = 2 * i + 1; c <= 2 * i + 2 && c < g->hn; c++)
			vpush(f, &f->scratch, c);
	}
	for (uint32_t i = 0; i < g->hn; i++)
		if (glive(f, g, &g->heap[i]))
			g->heap[keep++] = g->heap[i];
	g->hn = keep;
	gheapify(g);
}

/* Link li's bucket runs dry (no tokens left: it carries the link's rate
 * again) when its carried rate exceeds the link's rate; it refills (holds
 * a byte again) lazily, when a computation looks at the link: only a link
 * that does not bind refills, and a link that does not bind changes no
 * rate with its capacity. */
static void time_token(ps_fair *f, uint32_t li, double t)
{
	fres *l = &f->r[li];

	if (l->has && l->use > f->R) {
		timer_set(f, TOKEN_NODE | li,
			  t + tokens_at(f, l, t) / (l->use - f->R));
	} else {
		timer_clear(f, TOKEN_NODE | li);
	}
}

/* A computation at t looks at link li: a bucket that holds a byte again
 * has its burst back. */
static void refill(ps_fair *f, uint32_t li)
{
	fres *l = &f->r[li];

	if (f->bucket && !l->has && li != f->M &&
	    tokens_at(f, l, f->now) >= 1.0) {
		l->has = 1;
		mark_token(f, li);
	}
}

/* ---- ceilings and certification ------------------------------------- */

/* Ceilings are integers in units of rate * 2^-40 with at most four
 * significant bits (so that sums of them are exact), and at least the
 * share they bound: for a share s (a double), need(s) = ceil(s / rate *
 * 2^40) + 1 units is at least s, whatever the rounding of the division
 * (the relative error of s / rate is below 2^-52, a unit above 2^-40 of
 * a share no larger than 2 * rate). A ceiling is set to need(s) * 9/8
 * rounded up to four bits (room for the share to grow), raised when the
 * share needs more, lowered when it needs less than a ceiling / 1.4: it
 * stays within [1, 1.4] x need(s). */
static uint64_t need_units(const ps_fair *f, double s)
{
	double u;

	if (!(s > 0))
		return 1;
	u = ldexp(s / f->R, KMAX);
	if (u > ldexp(1.0, KMAX + 1))
		u = ldexp(1.0, KMAX + 1);
	return (uint64_t)ceil(u) + 1;
}

static uint64_t round_up4(uint64_t c)
{
	int bits = 64 - __builtin_clzll(c);

	if (bits > 4) {
		uint64_t q = (uint64_t)1 << (bits - 4);
		c = (c + q - 1) / q * q;
	}
	return c;
}

static int ceiling_fits(uint64_t cu, uint64_t need)
{
	return need <= cu && need * 7 >= cu * 5;
}

static uint64_t ceiling_for(uint64_t need)
{
	return round_up4(need + need / 8);
}

static void uhat_add(ps_fair *f, uint32_t l, uint64_t add, uint64_t sub)
{
	fres *r = &f->r[l];

	r->uhat = r->uhat + add - sub;
	if (add > sub && r->uhat >= THRESHOLD && r->vstamp != f->epoch) {
		r->vstamp = f->epoch;
		vpush(f, &f->viol, l);
	}
}

/* Resource gi's ceiling becomes cu units: its private streams' links
 * follow. */
static void set_ceiling(ps_fair *f, uint32_t gi, uint64_t cu)
{
	fres *g = &f->r[gi];
	uint64_t was = g->cu;

	g->cu = cu;
	for (uint32_t i = g->nc; i < g->n; i++) {
		uint32_t id = g->ids[i];
		if (f->st[id].flags & COUNTED)
			uhat_add(f, other_link(f, id, gi), cu, was);
	}
}

/* l leaves the computation: its streams' ceilings need not be summed
 * there any more, and each of them has both links in it again. */
static void uncertify(ps_fair *f, uint32_t l)
{
	fres *r = &f->r[l];

	for (uint32_t i = 0; i < r->n; i++) {
		uint32_t id = r->ids[i];
		f->st[id].flags &= ~(uint32_t)COUNTED;
		ids_set_coupled(f, other_link(f, id, l), id, 1);
	}
	r->cert = 0;
	r->uhat = 0;
	r->nc = r->n;
	f->stats.uncertified++;
}

/* l was not picked (every stream through it is fixed elsewhere) and
 * carries less than 0.7 of its capacity (cap - crem, from the
 * computation): its streams' ceilings (at most 1.4 x their shares, 0.98
 * of the capacity) stay below it, so certify it. */
static void try_certify(ps_fair *f, uint32_t l)
{
	fres *r = &f->r[l];
	uint64_t sum = 0;

	if (!(f->R - r->crem < 0.7 * f->R) || r->nc != r->n)
		return;
	for (uint32_t i = 0; i < r->n && sum < THRESHOLD; i++)
		sum += f->r[f->st[r->ids[i]].grp].cu;
	if (sum >= THRESHOLD)
		return; /* cannot be */
	for (uint32_t i = 0; i < r->n; i++) {
		uint32_t id = r->ids[i];
		f->st[id].flags |= COUNTED;
		ids_set_coupled(f, other_link(f, id, l), id, 0);
	}
	r->cert = 1;
	r->uhat = sum;
	r->nc = 0;
	f->stats.certified++;
}

/* ---- progressive filling over a region ------------------------------ */

static int rh_less(const ps_fair *f, uint32_t a, uint32_t b)
{
	double ka = f->r[a].key, kb = f->r[b].key;

	return ka < kb || (ka == kb && a < b);
}

static void rh_set(ps_fair *f, uint32_t i, uint32_t l)
{
	f->rh.v[i] = l;
	f->r[l].hidx = i;
}

static void rh_up(ps_fair *f, uint32_t i)
{
	uint32_t l = f->rh.v[i];

	while (i > 0) {
		uint32_t up = (i - 1) / 2;
		if (!rh_less(f, l, f->rh.v[up]))
			break;
		rh_set(f, i, f->rh.v[up]);
		i = up;
	}
	rh_set(f, i, l);
}

static void rh_down(ps_fair *f, uint32_t i)
{
	uint32_t l = f->rh.v[i], n = f->rh.n;

	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && rh_less(f, f->rh.v[c + 1], f->rh.v[c]))
			c++;
		if (!rh_less(f, f->rh.v[c], l))
			break;
		rh_set(f, i, f->rh.v[c]);
		i = c;
	}
	rh_set(f, i, l);
}

static void rh_remove(ps_fair *f, uint32_t l)
{
	uint32_t i = f->r[l].hidx, last = f->rh.v[--f->rh.n];

	f->r[l].hidx = NONE;
	if (i == f->rh.n)
		return;
	rh_set(f, i, last);
	rh_up(f, i);
	rh_down(f, f->r[last].hidx);
}

/* The region: the links in the computation reachable from the seeds
 * through streams whose links are both in it. Progressive filling over
 * it, exactly as over the whole cluster (compute_all) for those links:
 * the same shares from the same numbers in the same order. */
static void compute_region(ps_fair *f)
{
	uint32_t ep = ++f->epoch;

	f->region.n = 0;
	f->fixed.n = 0;
	f->rh.n = 0;
	for (uint32_t i = 0; i < f->seeds.n; i++) {
		uint32_t l = f->seeds.v[i];
		if (f->r[l].stamp != ep && !f->r[l].cert) {
			f->r[l].stamp = ep;
			vpush(f, &f->region, l);
		}
	}
	for (uint32_t i = 0; i < f->region.n; i++) {
		uint32_t l = f->region.v[i];
		for (uint32_t k = 0; k < f->r[l].nc; k++) {
			uint32_t o = other_link(f, f->r[l].ids[k], l);
			if (f->r[o].stamp != ep) {
				f->r[o].stamp = ep;
				vpush(f, &f->region, o);
			}
		}
	}
	f->stats.updates++;
	f->stats.links += f->region.n;
	for (uint32_t i = 0; i < f->region.n; i++) {
		uint32_t l = f->region.v[i];
		fres *r = &f->r[l];
		refill(f, l);
		r->crem = cap_of(f, l);
		r->nrem = r->n;
		r->picked = 0;
		r->nuse = 0.0;
		r->hidx = NONE;
		if (r->nrem) {
			r->key = r->crem / r->nrem;
			if (vpush(f, &f->rh, l) != PS_OK)
				return;
			rh_up(f, f->rh.n - 1);
		}
	}
	while (f->rh.n) {
		uint32_t l = f->rh.v[0];
		fres *r = &f->r[l];
		double share = r->crem / r->nrem;
		rh_remove(f, l);
		if (share < 0)
			share = 0;
		r->picked = 1;
		r->nshare = share;
		if (f->bucket)
			for (uint32_t k = 0; k < r->nrem; k++)
				r->nuse += share;
		for (uint32_t k = 0; k < r->nc; k++) {
			uint32_t id = r->ids[k], o;
			fstream *s = &f->st[id];
			if (s->stamp == ep)
				continue;
			s->stamp = ep;
			s->ngrp = l;
			vpush(f, &f->fixed, id);
			o = other_link(f, id, l);
			fres *ro = &f->r[o];
			ro->crem -= share;
			ro->nrem--;
			if (f->bucket)
				ro->nuse += share;
			if (ro->nrem == 0) {
				rh_remove(f, o);
			} else {
				ro->key = ro->crem / ro->nrem;
				rh_up(f, ro->hidx);
				rh_down(f, ro->hidx);
			}
		}
		r->nrem = 0;
	}
	f->stats.coupled += f->fixed.n;
}

/* ---- progressive filling over everything (the reference) ------------ */

static uint32_t resources_of(const ps_fair *f, uint32_t id, uint32_t *r)
{
	links_of(f, id, &r[0], &r[1]);
	if (f->machine) {
		r[2] = f->M;
		return 3;
	}
	return 2;
}

static int grow_global(ps_fair *f)
{
	if (f->nact <= f->gcapn)
		return PS_OK;
	size_t n = f->gcapn ? 2 * f->gcapn : 1024;
	while (n < f->nact)
		n *= 2;
	uint8_t *fz = realloc(f->gfz, n);
	uint32_t *rl = realloc(f->grlist, 3 * n * sizeof(*rl));
	if (fz)
		f->gfz = fz;
	if (rl)
		f->grlist = rl;
	if (!fz || !rl)
		return f->rc = PS_ENOMEM;
	f->gcapn = n;
	return PS_OK;
}

/* Lists every resource's unfixed active streams, each list in the order
 * of act: groff[l]..groff[l + 1] in grlist. */
static void list_streams(ps_fair *f)
{
	uint32_t sum = 0, nres = f->nres;

	for (uint32_t l = 0; l < nres; l++) {
		f->groff[l] = sum;
		sum += f->gnfl[l];
	}
	for (uint32_t i = 0; i < f->nact; i++) {
		uint32_t r[3], n;
		if (f->gfz[i])
			continue;
		n = resources_of(f, f->act[i], r);
		for (uint32_t j = 0; j < n; j++)
			f->grlist[f->groff[r[j]]++] = i;
	}
	for (uint32_t l = nres; l > 0; l--)
		f->groff[l] = f->groff[l - 1];
	f->groff[0] = 0;
}

/* Progressive filling over every active stream and resource, rounds in
 * the order of act: what every update did before updates were
 * incremental, and what the machine needs (every stream crosses it, and
 * its weights make the order of a round's sums matter). */
static void compute_all(ps_fair *f)
{
	uint32_t nres = f->nres, left = f->nact;
	double mwsum = 0.0;
	int lists = 0;

	if (grow_global(f) != PS_OK)
		return;
	f->stats.updates++;
	f->stats.links += nres;
	f->stats.coupled += f->nact;
	for (uint32_t l = 0; l < nres; l++) {
		refill(f, l);
		f->gcap[l] = cap_of(f, l);
		f->gnfl[l] = 0;
		f->r[l].picked = 0;
		f->r[l].nuse = 0.0;
	}
	for (uint32_t i = 0; i < f->nact; i++) {
		uint32_t r[3], n = resources_of(f, f->act[i], r);
		for (uint32_t j = 0; j < n; j++)
			f->gnfl[r[j]]++;
		if (n == 3)
			mwsum += mw_of(f, f->act[i]);
		f->gfz[i] = 0;
	}
	while (left > 0) {
		uint32_t best = NONE;
		double share = 0.0;
		for (uint32_t l = 0; l < nres; l++) {
			double sh;
			if (!f->gnfl[l])
				continue;
			sh = l == f->M ? f->gcap[l] / mwsum
				       : f->gcap[l] / f->gnfl[l];
			if (best == NONE || sh < share) {
				best = l;
				share = sh;
			}
		}
		if (best == NONE)
			break; /* cannot be: an unfixed stream counts */
		if (share < 0)
			share = 0;
		f->r[best].picked = 1;
		f->r[best].nshare = share;
		int scan = f->gnfl[best] == left;
		if (!scan && !lists) {
			list_streams(f);
			lists = 1;
		}
		uint32_t k0 = scan ? 0 : f->groff[best];
		uint32_t k1 = scan ? f->nact : f->groff[best + 1];
		for (uint32_t k = k0; k < k1; k++) {
			uint32_t i = scan ? k : f->grlist[k], r[3], n, j;
			uint32_t id = f->act[i];
			if (f->gfz[i])
				continue;
			n = resources_of(f, id, r);
			f->gfz[i] = 1;
			left--;
			f->st[id].ngrp = best;
			f->r[r[0]].nuse += share;
			f->r[r[1]].nuse += share;
			for (j = 0; j < n; j++) {
				double mw = j == 2 ? mw_of(f, id) : 1.0;
				f->gcap[r[j]] -= share * mw;
				f->gnfl[r[j]]--;
			}
			if (n == 3)
				mwsum -= mw_of(f, id);
		}
	}
}

/* ---- updates ------------------------------------------------------------ */

/* The computed shares and groups take effect at t. all: compute_all ran
 * (every resource and active stream), else compute_region. */
static void apply(ps_fair *f, int all, double t)
{
	uint32_t nl = all ? f->nres : f->region.n;
	uint32_t ns = all ? f->nact : f->fixed.n;
	int skipped = 0;

	for (uint32_t i = 0; i < nl; i++) {
		uint32_t l = all ? i : f->region.v[i];
		fres *r = &f->r[l];
		if (r->picked && (!r->has_rate || r->rate != r->nshare)) {
			rebase(r, t);
			r->rate = r->nshare;
			r->has_rate = 1;
			mark_changed(f, l);
		}
		if (f->bucket && l != f->M && r->nuse != r->use) {
			r->tok = tokens_at(f, r, t);
			r->ttok = t;
			r->use = r->nuse;
			mark_token(f, l);
		}
	}
	for (uint32_t i = 0; i < ns; i++) {
		uint32_t id = all ? f->act[i] : f->fixed.v[i];
		fstream *s = &f->st[id];
		if (s->grp == NONE || s->grp == s->ngrp)
			continue;
		if (f->c.fault && !skipped) {
			skipped = 1; /* planted for the tests: a stream forgotten */
			continue;
		}
		move(f, id, s->ngrp, t);
	}
	for (uint32_t i = 0; i < f->fresh.n; i++) {
		uint32_t id = f->fresh.v[i], up, dn, g;
		fstream *s = &f->st[id];
		if (s->apos == NONE || s->grp != NONE)
			continue;
		if (all) {
			g = s->ngrp;
		} else {
			links_of(f, id, &up, &dn);
			g = f->r[up].cert ? dn
			    : f->r[dn].cert ? up
					    : s->ngrp;
		}
		join(f, id, g, (double)f->c.ops.bytes(f->c.ops.ud, s->head),
		     t);
	}
	f->fresh.n = 0;
}

/* The ceilings of the picked links in the region follow their new
 * shares; the streams that started count theirs on their certified link.
 * Adds the certified links whose bound fails to viol. */
static void ceilings(ps_fair *f)
{
	f->viol.n = 0;
	for (uint32_t i = 0; i < f->region.n; i++) {
		uint32_t l = f->region.v[i];
		if (f->r[l].picked) {
			uint64_t need = need_units(f, f->r[l].nshare);
			if (!ceiling_fits(f->r[l].cu, need))
				set_ceiling(f, l, ceiling_for(need));
		}
	}
	for (uint32_t i = 0; i < f->fresh.n; i++) {
		uint32_t id = f->fresh.v[i], up, dn, c, a;
		fstream *s = &f->st[id];
		if (s->apos == NONE || (s->flags & COUNTED))
			continue;
		links_of(f, id, &up, &dn);
		if (f->r[up].cert) {
			c = up;
			a = dn;
		} else if (f->r[dn].cert) {
			c = dn;
			a = up;
		} else {
			continue;
		}
		s->flags |= COUNTED;
		uhat_add(f, c, f->r[a].cu, 0);
	}
}

/* Recomputes what the seeds' changes can change and applies it at t. */
static void update(ps_fair *f, double t)
{
	f->now = t;
	if (f->c.full || f->machine) {
		compute_all(f);
		apply(f, 1, t);
		f->seeds.n = 0;
		return;
	}
	for (;;) {
		compute_region(f);
		if (!f->plain || f->rc != PS_OK)
			break;
		ceilings(f);
		int any = 0;
		for (uint32_t i = 0; i < f->viol.n; i++) {
			uint32_t l = f->viol.v[i];
			if (!f->r[l].cert || f->r[l].uhat < THRESHOLD)
				continue; /* back under by a later ceiling */
			uncertify(f, l);
			vpush(f, &f->seeds, l);
			any = 1;
		}
		if (!any)
			break;
	}
	apply(f, 0, t);
	f->seeds.n = 0;
	if (!f->plain)
		return;
	for (uint32_t i = 0; i < f->region.n; i++) {
		uint32_t l = f->region.v[i];
		fres *r = &f->r[l];
		if (r->picked || r->cert || r->n == 0 || l == f->M)
			continue;
		try_certify(f, l);
	}
}

/* The changed groups' and links' timers, from t. */
static void flush(ps_fair *f, double t)
{
	for (uint32_t i = 0; i < f->changed.n; i++)
		time_group(f, f->changed.v[i], t);
	f->changed.n = 0;
	for (uint32_t i = 0; i < f->tchanged.n; i++)
		time_token(f, f->tchanged.v[i], t);
	f->tchanged.n = 0;
}

/* The network event moves to the earliest timer (a new generation, as
 * after every change, whether or not the earliest moved). */
static void reschedule(ps_fair *f, double t)
{
	f->gen++;
	if (f->timers.n) {
		double T = tkey(f, f->timers.v[0]);
		/* a timer computed earlier may round below the present */
		f->c.ops.schedule(f->c.ops.ud, T > t ? T : t, 0, f->gen);
	}
}

/* ---- streams ------------------------------------------------------------ */

/* Acknowledgements at the head of stream id go through at t. */
static void pass_acks(ps_fair *f, fstream *s, double t)
{
	while (s->head != NONE &&
	       f->c.ops.bytes(f->c.ops.ud, s->head) == 0) {
		uint32_t m = s->head;
		s->head = f->c.ops.next(f->c.ops.ud, m);
		if (s->head == NONE)
			s->tail = NONE;
		f->c.ops.sent(f->c.ops.ud, m, t);
	}
}

static void add_seed(ps_fair *f, uint32_t l)
{
	if (!f->r[l].cert)
		vpush(f, &f->seeds, l);
}

static void activate(ps_fair *f, uint32_t id)
{
	fstream *s = &f->st[id];
	uint32_t up, dn;
	int coupled;

	links_of(f, id, &up, &dn);
	if (f->r[up].cert && f->r[dn].cert)
		/* a stream needs a link in the computation: the busier */
		uncertify(f, f->r[up].n > f->r[dn].n ? up : dn);
	coupled = !f->r[up].cert && !f->r[dn].cert;
	if (ids_add(f, up, id, coupled) != PS_OK ||
	    ids_add(f, dn, id, coupled) != PS_OK)
		return;
	if (f->nact == f->capact) {
		uint32_t cap = f->capact ? 2 * f->capact : 1024;
		uint32_t *p = realloc(f->act, (size_t)cap * sizeof(*p));
		if (!p) {
			f->rc = PS_ENOMEM;
			return;
		}
		f->act = p;
		f->capact = cap;
	}
	s->apos = f->nact;
	f->act[f->nact++] = id;
	s->flags = 0;
	vpush(f, &f->fresh, id);
	add_seed(f, up);
	add_seed(f, dn);
}

/* Stream id (no longer in a group) goes idle; g was its group. */
static void deactivate(ps_fair *f, uint32_t id, uint32_t g)
{
	fstream *s = &f->st[id];
	uint32_t up, dn, last;

	links_of(f, id, &up, &dn);
	if (s->flags & COUNTED) {
		uint32_t c = f->r[up].cert ? up : dn;
		uhat_add(f, c, 0, f->r[g].cu);
		s->flags &= ~(uint32_t)COUNTED;
	}
	ids_remove(f, up, id);
	ids_remove(f, dn, id);
	last = f->act[--f->nact];
	if (last != id) {
		f->act[s->apos] = last;
		f->st[last].apos = s->apos;
	}
	s->apos = NONE;
	add_seed(f, up);
	add_seed(f, dn);
}

/* The sends of a batch (ps_fair_hold) take effect together: one update,
 * one new network event, at its release. */
static void send_done(ps_fair *f, double t)
{
	if (f->fresh.n || ((f->batch & BATCH_SENT) && f->c.full))
		update(f, t);
	if (f->batch & BATCH_SENT) {
		flush(f, t);
		reschedule(f, t);
	}
	f->batch = 0;
}

int ps_fair_send(ps_fair *f, int up, uint32_t w, uint32_t srv, uint32_t m,
		 double t)
{
	uint32_t id = w * f->twoU + (up ? 0 : f->U) + f->rank_of[srv];
	fstream *s = &f->st[id];

	f->c.ops.set_next(f->c.ops.ud, m, NONE);
	if (s->head != NONE) {
		f->c.ops.set_next(f->c.ops.ud, s->tail, m);
		s->tail = m;
		return f->rc;
	}
	s->head = s->tail = m;
	if (!f->batch)
		f->ustamp++;
	f->batch |= BATCH_SENT;
	pass_acks(f, s, t);
	if (s->head != NONE)
		activate(f, id);
	if (!f->held)
		send_done(f, t);
	return f->rc;
}

void ps_fair_hold(ps_fair *f)
{
	f->held = 1;
}

int ps_fair_release(ps_fair *f, double t)
{
	f->held = 0;
	if (f->batch)
		send_done(f, t);
	return f->rc;
}

/* Sorts n keys (position in act << 32 | stream; positions are distinct)
 * by position: insertion sort when few, else radix sort on the position
 * (11 bits a pass) through tmp. */
static void sort_by_pos(uint64_t *v, uint64_t *tmp, uint32_t n,
			uint32_t maxpos)
{
	if (n <= 32) {
		for (uint32_t i = 1; i < n; i++) {
			uint64_t x = v[i];
			uint32_t j = i;
			for (; j > 0 && v[j - 1] > x; j--)
				v[j] = v[j - 1];
			v[j] = x;
		}
		return;
	}
	for (int shift = 32; shift < 64 && (maxpos >> (shift - 32)); shift += 11) {
		uint32_t count[2048] = {0};
		for (uint32_t i = 0; i < n; i++)
			count[(v[i] >> shift) & 2047]++;
		for (uint32_t d = 0, sum = 0; d < 2048; d++) {
			uint32_t c = count[d];
			count[d] = sum;
			sum += c;
		}
		for (uint32_t i = 0; i < n; i++)
			tmp[count[(v[i] >> shift) & 2047]++] = v[i];
		memcpy(v, tmp, (size_t)n * sizeof(*v));
	}
}

/* Stream id, done, delivers its head at t; its next message starts (it
 * goes to the end of act, as a stream that starts) or it goes idle. */
static void deliver(ps_fair *f, uint32_t id, double t)
{
	fstream *s = &f->st[id];
	uint32_t g = s->grp, m = s->head;

	s->flags &= ~(uint32_t)DUE;
	leave(f, id);
	s->head = f->c.ops.next(f->c.ops.ud, m);
	if (s->head == NONE)
		s->tail = NONE;
	f->c.ops.sent(f->c.ops.ud, m, t);
	pass_acks(f, s, t);
	if (s->head == NONE) {
		deactivate(f, id, g);
		return;
	}
	/* the same streams are active: the same rates (but a machine weighs
	 * the new head) */
	uint32_t last = f->act[f->nact - 1];
	f->act[s->apos] = last;
	f->st[last].apos = s->apos;
	s->apos = f->nact - 1;
	f->act[s->apos] = id;
	join(f, id, g, (double)f->c.ops.bytes(f->c.ops.ud, s->head), t);
}

/* The network event at t: buckets that run dry, and every stream whose
 * head is done (a ns at its rate from its last byte: every group due
 * within 2 ns is looked at), delivered in the order of act as the
 * whole-cluster scan found them: at position i, the stream there, then
 * the one the removal moved there. */
static void net_event(ps_fair *f, double t)
{
	int changed = 0;

	f->ustamp++;
	f->due.n = 0;
	f->later.n = 0;
	while (f->timers.n) {
		uint32_t node = f->timers.v[0];
		if (tkey(f, node) > t + 2e-3)
			break;
		timer_clear(f, node);
		if (node & TOKEN_NODE) {
			uint32_t li = node & ~TOKEN_NODE;
			fres *l = &f->r[li];
			if (l->TT > t) { /* not yet: back in afterwards */
				vpush(f, &f->later, node);
				continue;
			}
			l->tok = 0.0; /* a refill needs a byte again */
			l->ttok = t;
			l->has = 0;
			vpush(f, &f->seeds, li);
			mark_token(f, li);
			changed = 1;
			continue;
		}
		fres *g = &f->r[node];
		const gentry *e;
		mark_changed(f, node);
		uint32_t popped = 0;
		while ((e = gtop(f, g)) != NULL) {
			double rem = e->F - vnow(g, t);
			uint32_t id = e->id;
			if (rem > g->rate * 1e-3 && rem > 1e-6)
				break;
			if (++popped > 64) {
				/* many at once (thousands of streams that
				 * started together): take them all in one pass */
				gtake_due(f, g, t);
				break;
			}
			gpop(g);
			f->st[id].flags |= DUE;
			vpush(f, &f->due, id);
		}
	}
	for (uint32_t i = 0; i < f->later.n; i++)
		timer_set(f, f->later.v[i],
			  f->r[f->later.v[i] & ~TOKEN_NODE].TT);
	if (f->due.n) {
		uint64_t *order = f->order;
		if (f->due.n > f->norder) {
			/* keys, then the radix sort's room */
			order = realloc(f->order, 4 * (size_t)f->due.n *
							  sizeof(*order));
			if (!order) {
				f->rc = PS_ENOMEM;
				return;
			}
			f->order = order;
			f->norder = 2 * f->due.n;
		}
		for (uint32_t i = 0; i < f->due.n; i++)
			order[i] = (uint64_t)f->st[f->due.v[i]].apos << 32 |
				   f->due.v[i];
		sort_by_pos(order, order + f->norder, f->due.n, f->nact);
		for (uint32_t k = 0; k < f->due.n; k++) {
			uint32_t id = (uint32_t)order[k], p;
			if (!(f->st[id].flags & DUE))
				continue; /* delivered already */
			p = f->st[id].apos;
			while (p < f->nact) {
				uint32_t x = f->act[p];
				if (!(f->st[x].flags & DUE))
					break;
				deliver(f, x, t);
				if (f->st[x].apos == NONE)
					changed = 1;
			}
		}
	}
	/* (streams started by held sends are placed now too) */
	if (changed || f->fresh.n || f->c.full || f->machine)
		update(f, t);
	f->seeds.n = 0;
	flush(f, t);
	reschedule(f, t);
}

int ps_fair_event(ps_fair *f, uint32_t node, uint64_t arg, double t)
{
	(void)node;
	if (arg == f->gen)
		net_event(f, t);
	return f->rc;
}

/* ---- setup -------------------------------------------------------------- */

int ps_fair_create(const ps_fair_config *c, ps_fair **f_p)
{
	ps_fair *f;

	*f_p = NULL;
	if (!c->workers || !c->servers || !(c->rate > 0))
		return PS_EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return PS_ENOMEM;
	f->c = *c;
	f->W = c->workers;
	f->S = c->servers;
	f->H = f->W + f->S;
	f->L = 2 * f->H;
	f->R = c->rate;
	f->bucket = c->burst > 0;
	f->machine = c->machine_cap > 0;
	f->plain = !f->bucket && !f->machine && !c->full;
	f->nres = f->L + (f->machine ? 1 : 0);
	f->M = f->machine ? f->L : NONE;
	f->srv_of = calloc(f->S, sizeof(*f->srv_of));
	f->rank_of = calloc(f->S, sizeof(*f->rank_of));
	f->r = calloc(f->nres, sizeof(*f->r));
	f->gcap = calloc(f->nres, sizeof(*f->gcap));
	f->gnfl = calloc(f->nres, sizeof(*f->gnfl));
	f->groff = calloc((size_t)f->nres + 1, sizeof(*f->groff));
	if (!f->srv_of || !f->rank_of || !f->r || !f->gcap || !f->gnfl ||
	    !f->groff)
		goto nomem;
	for (uint32_t s = 0; s < f->S; s++) {
		f->rank_of[s] = NONE;
		if (!c->server_used || c->server_used[s]) {
			f->rank_of[s] = f->U;
			f->srv_of[f->U++] = s;
		}
	}
	f->twoU = 2 * f->U;
	f->nst = (size_t)f->W * f->twoU;
	if (f->nst >= NONE)
		goto nomem;
	f->st = malloc((f->nst ? f->nst : 1) * sizeof(*f->st));
	if (!f->st)
		goto nomem;
	for (size_t i = 0; i < f->nst; i++)
		f->st[i] = (fstream){.head = NONE, .tail = NONE, .grp = NONE,
				     .ngrp = NONE, .apos = NONE};
	for (uint32_t l = 0; l < f->nres; l++) {
		f->r[l].hidx = NONE;
		f->r[l].tix = f->r[l].ttix = NONE;
		f->r[l].cu = (uint64_t)1 << (KMAX + 1);
		f->r[l].tok = c->burst; /* idle links: full buckets */
		f->r[l].has = f->bucket && c->burst >= 1.0;
	}
	f->stats.streams = f->nst;
	*f_p = f;
	return PS_OK;
nomem:
	ps_fair_destroy(&f);
	return PS_ENOMEM;
}

void ps_fair_destroy(ps_fair **f_p)
{
	ps_fair *f = *f_p;

	if (!f)
		return;
	if (f->r)
		for (uint32_t l = 0; l < f->nres; l++) {
			free(f->r[l].ids);
			free(f->r[l].heap);
		}
	free(f->r);
	free(f->st);
	free(f->srv_of);
	free(f->rank_of);
	free(f->act);
	free(f->changed.v);
	free(f->tchanged.v);
	free(f->seeds.v);
	free(f->region.v);
	free(f->fixed.v);
	free(f->fresh.v);
	free(f->rh.v);
	free(f->viol.v);
	free(f->timers.v);
	free(f->due.v);
	free(f->scratch.v);
	free(f->later.v);
	free(f->order);
	free(f->gcap);
	free(f->gnfl);
	free(f->groff);
	free(f->grlist);
	free(f->gfz);
	free(f);
	*f_p = NULL;
}

void ps_fair_get_stats(const ps_fair *f, ps_fair_stats *s)
{
	*s = f->stats;
}
