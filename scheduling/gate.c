/*
 * scheduling/gate.c - the sender-side gate and credit window (gate.h).
 *
 * DESIGN. Every transfer gets an arrival sequence number (seq) when it
 * becomes ready; seq breaks every tie, so equal keys keep arrival order.
 *
 *  - FIFO: a ring buffer of pending transfers (power-of-two capacity,
 *    doubled when full): O(1) per ready and per release.
 *  - PRIORITY: one queue keyed by (priority, seq): O(log n).
 *  - COUNTER (TicTac §5.1): a "lane" per (receiver, iteration) holds the
 *    lane's counter (transfers of that receiver and iteration handed over
 *    so far) and the transfers that may not go yet (number > counter), by
 *    number: those that became ready in number order or in reverse order,
 *    give or take a few, in a sorted ring (the lane's "run"), the others
 *    in a min-heap. A transfer whose number is <= its lane's counter is
 *    eligible and sits in one gate-wide queue keyed by seq. Releasing a
 *    transfer bumps its lane's counter and moves the lane's newly eligible
 *    transfers (number <= counter) into the queue. Each transfer enters at
 *    most two of these once: O(log n) per ready and per release, the run's
 *    part O(1) (plus O(log L) to find the lane among the L lanes a
 *    receiver keeps, L small; O(1) when it is the lane found last).
 *
 *    A queue is a 4-ary min-heap and one node held in front of it, which
 *    spares the heap the transfer that goes next when it is the one that
 *    has just become ready or eligible (see "queue" below). Heaps and runs
 *    hold 16-byte nodes (seq, priority or number, index of the transfer's
 *    record in a pool whose free slots are reused), so a sift moves little
 *    memory, and a heap's four siblings share a cache line; the record is
 *    read once, when it is released, and fetched ahead of time.
 *
 *    Between receivers (and between the iterations of one receiver) the
 *    rule is ARRIVAL ORDER OF ELIGIBLE TRANSFERS: of all transfers whose
 *    counter has been reached, the one that became ready first goes first.
 *    A transfer that waited for its counter therefore goes before eligible
 *    transfers that arrived after it, whatever their receiver. (With
 *    numbers from ps_order_normalise, the eligible transfers of one lane
 *    always share one number, so arrival order within a lane is no
 *    choice.)
 *
 *    Counter lifetime: a sender never says that an iteration is complete,
 *    so per receiver the gate keeps the lanes of the newest ITER_WINDOW
 *    iterations it has seen for that receiver (iterations >= newest -
 *    ITER_WINDOW + 1, the "floor"), plus any older lane that still has
 *    pending transfers. A lane below the floor is dropped as soon as it has
 *    nothing pending. A transfer that arrives for an iteration below the
 *    floor whose lane is gone is stale (its receiver has already seen an
 *    iteration ITER_WINDOW or more ahead of it): it is eligible at once
 *    (in arrival order with the others) and counts against no counter,
 *    since waiting on a forgotten counter could block it forever. Each
 *    receiver's lanes are a small array sorted by iteration; dropped lanes
 *    keep their run and heap buffers as spares.
 *
 * Credit window: the transfer the gate would release next (ring head or
 * queue top) goes only if its bytes fit in credit - in_flight, or when
 * nothing is in flight (so a transfer larger than the whole window goes
 * alone and the window never deadlocks). Nothing behind it is considered
 * meanwhile: no head-of-line bypass.
 *
 * Memory: every array doubles when full. ps_gate_ready reserves all the
 * room its transfer will ever need (in the queue, its lane, and the lane's
 * run or heap) before it changes anything, so it fails cleanly with
 * PS_ENOMEM and ps_gate_next never allocates.
 *
 * Threads: a gate belongs to one thread (gate.h).
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "scheduling/gate.h"

/* Counter gate: lanes kept per receiver for the newest iterations seen. */
#define ITER_WINDOW 4u

#define INITIAL_CAP 16u

#define CACHE_LINE 64u
#define HEAP_PAD   3u /* nodes before e[0]: e[1] starts a cache line */

/* A hint to load the line holding p; it changes no result. */
#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)(p))
#endif

/* A pending transfer as given to ps_gate_ready. */
struct rec {
	uint64_t handle;
	uint64_t iteration;
	uint64_t bytes;
	uint32_t receiver;
	uint32_t priority; /* counter gate: its number */
};

/* Heap node: the keys and the record's index in the pool (16 bytes, so a
 * sift touches little memory). */
struct node {
	uint64_t seq;  /* arrival order */
	uint32_t prio; /* priority, or the counter gate's number */
	uint32_t idx;  /* in pool.rec */
};

/*
 * Heap orders. BY_PRIO and BY_SEQ are total (seq is unique). BY_NUM, for
 * a lane's waiting transfers, compares numbers only: all waiting transfers
 * whose number the counter reaches leave the lane together, into the
 * queue (BY_SEQ), so the order among equal numbers is never seen.
 */
enum { BY_PRIO = 0, BY_SEQ = 1, BY_NUM = 2 };

/* A 4-ary min-heap (see "4-ary heap" below). mem is the cache-line
 * aligned block and e = mem + HEAP_PAD, so that every group of four
 * siblings e[4i+1 .. 4i+4] fills one 64-byte line. */
struct heap {
	struct node *mem;
	struct node *e;
	uint32_t n, cap; /* cap: nodes from e on */
};

/* PRIORITY and COUNTER: records of pending transfers, free slots reused. */
struct pool {
	struct rec *rec;
	uint32_t *free; /* as large as rec */
	uint32_t used;  /* slots ever handed out (high-water mark) */
	uint32_t nfree, cap;
};

struct ring {
	struct rec *e;
	uint32_t head, n, cap; /* cap: 0 or a power of two */
};

/* Counter gate: a lane's waiting transfers that came in number order
 * (give or take RUN_REACH), sorted by number in a ring (cap 0 or a power
 * of two). */
struct run {
	struct node *e;
	uint32_t head, n, cap;
};

/* Counter gate: one (receiver, iteration). Its waiting transfers (number
 * > count) are in its run or, those that came too far out of order for
 * it, in its heap (BY_NUM). */
struct lane {
	uint64_t iteration;
	uint64_t count;   /* transfers handed over so far */
	uint32_t pending; /* ready, not released (waiting or eligible) */
	struct run run;
	struct heap wait;
};

struct rcv {
	struct lane *lanes; /* [0, n) sorted by iteration; [n, cap) spares */
	uint32_t n, cap;
	uint64_t newest; /* newest iteration seen for this receiver */
	/* Lanes last found by a ready and by a release (lane_find). */
	uint32_t hint_ready, hint_release;
};

/*
 * The transfers that may go (PRIORITY: all pending; COUNTER: the eligible
 * ones): a heap, and one node held in front of it. A push keeps the
 * earlier (in the heap's order) of the new node and the front node in
 * front and puts the other in the heap; a release takes the earlier of the
 * front node and the heap's top. The set and its order are those of the
 * heap alone; what the front node saves is heap work when the transfer
 * that has just become ready (PRIORITY: in a backward pass, the gradient
 * of an earlier layer, more urgent) or eligible (COUNTER: it has waited,
 * so it is old) is the next to go, which is common: it goes without
 * entering the heap, whose top stays where it is.
 */
struct queue {
	struct heap heap;
	struct node front;
	int has_front;
};

struct ps_gate {
	ps_gate_kind kind;
	uint64_t credit;    /* 0 = unlimited */
	uint64_t in_flight; /* bytes handed over, not acknowledged */
	uint64_t seq;       /* next arrival number */
	uint32_t receivers;
	uint32_t pending;
	struct ring fifo; /* FIFO */
	struct pool pool; /* PRIORITY, COUNTER */
	struct queue q;   /* PRIORITY: all pending; COUNTER: eligible */
	struct rcv *rcv;  /* COUNTER: receivers entries */
};

/* ---- growth ------------------------------------------------------------- */

/* Capacity >= need, doubling from INITIAL_CAP (at most UINT32_MAX), for
 * elements of size bytes. */
static int grow_cap(uint32_t cap, uint32_t need, size_t size, uint32_t *cap_p)
{
	uint64_t c = cap ? cap : INITIAL_CAP;

	while (c < need)
		c *= 2;
	if (c > UINT32_MAX)
		c = UINT32_MAX;
	if (c > SIZE_MAX / size)
		return PS_ENOMEM;
	*cap_p = (uint32_t)c;
	return PS_OK;
}

/* Cache-line aligned block of bytes (a multiple of CACHE_LINE, as
 * aligned_alloc wants), or NULL. */
static void *line_alloc(size_t bytes)
{
	if (bytes > SIZE_MAX - (CACHE_LINE - 1))
		return NULL;
	bytes = (bytes + CACHE_LINE - 1) / CACHE_LINE * CACHE_LINE;
	return aligned_alloc(CACHE_LINE, bytes ? bytes : CACHE_LINE);
}

static int heap_reserve(struct heap *h, uint32_t need)
{
	struct node *mem;
	uint32_t cap;

	if (need <= h->cap)
		return PS_OK;
	if (grow_cap(h->cap, need, sizeof(*mem), &cap) != PS_OK ||
	    (size_t)cap + HEAP_PAD > SIZE_MAX / sizeof(*mem))
		return PS_ENOMEM;
	/* No aligned realloc: copy into a new block. */
	mem = line_alloc(((size_t)cap + HEAP_PAD) * sizeof(*mem));
	if (!mem)
		return PS_ENOMEM;
	if (h->n > 0)
		memcpy(mem + HEAP_PAD, h->e, (size_t)h->n * sizeof(*mem));
	free(h->mem);
	h->mem = mem;
	h->e = mem + HEAP_PAD;
	h->cap = cap;
	return PS_OK;
}

/* Room for one more record; the free list always has room for all. */
static int pool_reserve(struct pool *p)
{
	struct rec *rec;
	uint32_t *fr;
	uint32_t cap;

	if (p->nfree > 0 || p->used < p->cap)
		return PS_OK;
	if (grow_cap(p->cap, p->cap + 1, sizeof(*rec), &cap) != PS_OK)
		return PS_ENOMEM;
	/* Aligned, so that no 32-byte record straddles two cache lines. */
	rec = line_alloc((size_t)cap * sizeof(*rec));
	if (!rec)
		return PS_ENOMEM;
	if (p->used > 0)
		memcpy(rec, p->rec, (size_t)p->used * sizeof(*rec));
	free(p->rec);
	p->rec = rec;
	fr = realloc(p->free, (size_t)cap * sizeof(*fr));
	if (!fr)
		return PS_ENOMEM; /* the larger rec array is harmless */
	p->free = fr;
	p->cap = cap;
	return PS_OK;
}

/* A slot for one record; room reserved by pool_reserve. */
static uint32_t pool_get(struct pool *p)
{
	return p->nfree > 0 ? p->free[--p->nfree] : p->used++;
}

static void pool_put(struct pool *p, uint32_t idx)
{
	p->free[p->nfree++] = idx;
}

/* A ring buffer (*e_p, *cap_p: 0 or a power of two; n elements of size
 * bytes from head on) grown to hold need. */
static int ring_grow(void **e_p, uint32_t *cap_p, uint32_t head, uint32_t n,
                     uint32_t need, size_t size)
{
	uint32_t cap, old = *cap_p;
	char *e;

	if (need <= old)
		return PS_OK;
	if (grow_cap(old, need, size, &cap) != PS_OK || (cap & (cap - 1)) != 0)
		return PS_ENOMEM; /* only past 2^31 entries */
	e = realloc(*e_p, (size_t)cap * size);
	if (!e)
		return PS_ENOMEM;
	/* Unwrap: the part that wrapped round to 0 moves behind the old end. */
	if (old && head + n > old)
		memcpy(e + (size_t)old * size, e,
		       (size_t)(head + n - old) * size);
	*e_p = e;
	*cap_p = cap;
	return PS_OK;
}

static int ring_reserve(struct ring *r, uint32_t need)
{
	void *e = r->e;
	int rc = ring_grow(&e, &r->cap, r->head, r->n, need, sizeof(*r->e));

	r->e = e;
	return rc;
}

static int run_reserve(struct run *r, uint32_t need)
{
	void *e = r->e;
	int rc = ring_grow(&e, &r->cap, r->head, r->n, need, sizeof(*r->e));

	r->e = e;
	return rc;
}

static int lanes_reserve(struct rcv *r, uint32_t need)
{
	struct lane *l;
	uint64_t cap = r->cap ? r->cap : 4;

	if (need <= r->cap)
		return PS_OK;
	while (cap < need)
		cap *= 2;
	if (cap > UINT32_MAX || cap > SIZE_MAX / sizeof(*l))
		return PS_ENOMEM;
	l = realloc(r->lanes, (size_t)cap * sizeof(*l));
	if (!l)
		return PS_ENOMEM;
	memset(l + r->cap, 0, (size_t)(cap - r->cap) * sizeof(*l));
	r->lanes = l;
	r->cap = (uint32_t)cap;
	return PS_OK;
}

/* ---- 4-ary heap --------------------------------------------------------- */

/*
 * The children of node i are 4i+1 .. 4i+4, its parent (i-1)/4. Against a
 * binary heap, a sift crosses half as many levels (9 instead of 17 for
 * 10^5 nodes), and the four children compared at each level lie in one
 * cache line: with 10^5 pending transfers the heap outgrows the L2 cache,
 * and the loads of a sift's lower levels, each waiting on the one before,
 * are what a decision costs.
 */

/* a goes before b. Written without && and || so that the compiler need
 * not branch: with many ties the branches would be guessed wrong often. */
static inline int before(const struct node *a, const struct node *b, int by)
{
	if (by == BY_SEQ)
		return a->seq < b->seq;
	if (by == BY_NUM)
		return a->prio < b->prio;
	return (a->prio < b->prio) | ((a->prio == b->prio) & (a->seq < b->seq));
}

/* The first of the (up to four) children c .. c+3 of a node in order; c <
 * h->n. */
static inline size_t min_child(const struct heap *h, size_t c, int by)
{
	const struct node *e = h->e;
	size_t m, k;

	if (c + 3 < h->n) {
		/* All four: a two-round tournament, in arithmetic rather
		 * than branches, which equal keys would make unpredictable. */
		size_t a = c + (size_t)before(&e[c + 1], &e[c], by);
		size_t b = c + 2 + (size_t)before(&e[c + 3], &e[c + 2], by);
		size_t b_wins = (size_t)before(&e[b], &e[a], by);

		return a + (b - a) * b_wins;
	}
	for (m = c, k = c + 1; k < h->n; k++)
		if (before(&e[k], &e[m], by))
			m = k;
	return m;
}

/* Room for one more must have been reserved. */
static inline void heap_push(struct heap *h, const struct node *x, int by)
{
	size_t i = h->n++;

	while (i > 0) {
		size_t parent = (i - 1) / 4;

		if (!before(x, &h->e[parent], by))
			break;
		h->e[i] = h->e[parent];
		i = parent;
	}
	h->e[i] = *x;
}

/*
 * Floyd's pop: the hole left by the top walks down to a leaf along the
 * first child in order (three comparisons per level), then the last node
 * sifts up from there; it rarely rises far. Keys are unique (seq) except
 * under BY_NUM, whose ties nobody sees, so the order of pops is that of
 * any heap. While the hole is at i, the groups of
 * its grandchildren (16i+5 .. 16i+20, four lines) are prefetched: the
 * next level's load then overlaps this one's.
 */
static inline void heap_pop(struct heap *h, int by)
{
	struct node last = h->e[--h->n];
	size_t n = h->n, i = 0, c;

	if (n == 0)
		return;
	while ((c = 4 * i + 1) < n) {
		size_t gc = 4 * c + 1;

		if (gc + 15 < n) {
			PREFETCH(&h->e[gc]);
			PREFETCH(&h->e[gc + 4]);
			PREFETCH(&h->e[gc + 8]);
			PREFETCH(&h->e[gc + 12]);
		}
		c = min_child(h, c, by);
		h->e[i] = h->e[c];
		i = c;
	}
	while (i > 0) {
		size_t parent = (i - 1) / 4;

		if (!before(&last, &h->e[parent], by))
			break;
		h->e[i] = h->e[parent];
		i = parent;
	}
	h->e[i] = last;
}

/* ---- queue: a heap and its front node ---------------------------------- */

/* Room for one more in the heap must have been reserved. */
static inline void queue_push(struct queue *q, const struct node *x, int by)
{
	if (!q->has_front) {
		q->front = *x;
		q->has_front = 1;
	} else if (before(x, &q->front, by)) {
		heap_push(&q->heap, &q->front, by);
		q->front = *x;
	} else {
		heap_push(&q->heap, x, by);
	}
}

/* The node that goes first, or NULL when the queue is empty. */
static inline const struct node *queue_top(const struct queue *q, int by)
{
	if (q->has_front &&
	    (q->heap.n == 0 || before(&q->front, &q->heap.e[0], by)))
		return &q->front;
	return q->heap.n > 0 ? &q->heap.e[0] : NULL;
}

/* Removes top, which queue_top has just returned. */
static inline void queue_pop(struct queue *q, const struct node *top, int by)
{
	if (top == &q->front)
		q->has_front = 0;
	else
		heap_pop(&q->heap, by);
}

/* ---- run: a sorted ring ------------------------------------------------ */

/*
 * A lane's waiting transfers mostly become ready in the order of their
 * numbers or in the reverse order (a backward pass), give or take a few.
 * Those go into the lane's run, sorted by number, at its front, its back,
 * or at most RUN_REACH places before its back; the counter then takes them
 * from the front: O(1) each, where a heap would pay a sift. Transfers that
 * come further out of order go into the lane's heap, so no order of
 * arrival costs more than O(log n). Equal numbers need no order (BY_NUM).
 */
#define RUN_REACH 16u

static inline struct node *run_at(const struct run *r, uint32_t i)
{
	return &r->e[(r->head + i) & (r->cap - 1)];
}

/* Whether a transfer of number v has its place in the run (see above).
 * The back is looked at first: it is in the cache, the front may not be. */
static int run_takes(const struct run *r, uint32_t v)
{
	uint32_t back = r->n > RUN_REACH ? r->n - RUN_REACH : 0;

	return r->n == 0 || v >= run_at(r, back)->prio ||
	       v <= run_at(r, 0)->prio;
}

/* x, which run_takes, into its place; room reserved. */
static void run_insert(struct run *r, const struct node *x)
{
	uint32_t i = r->n;

	if (i > 0 && x->prio < run_at(r, i - 1)->prio &&
	    x->prio <= run_at(r, 0)->prio) {
		r->head = (r->head - 1) & (r->cap - 1);
		r->n++;
		*run_at(r, 0) = *x;
		return;
	}
	/* At the back, or at most RUN_REACH places before it. */
	for (r->n++; i > 0 && run_at(r, i - 1)->prio > x->prio; i--)
		*run_at(r, i) = *run_at(r, i - 1);
	*run_at(r, i) = *x;
}

static void run_pop(struct run *r)
{
	r->head = (r->head + 1) & (r->cap - 1);
	r->n--;
}

/* ---- counter lanes ------------------------------------------------------ */

static uint64_t iter_floor(uint64_t newest)
{
	return newest >= ITER_WINDOW - 1 ? newest - (ITER_WINDOW - 1) : 0;
}

/* Index of the first lane with iteration >= it; 1 if it is that lane.
 * *hint_p, where a lane was found before, is tried first (lanes shift as
 * others come and go, so it is checked): readies mostly go to the newest
 * lane and releases to the oldest, so each keeps its own hint. */
static int lane_find(struct rcv *r, uint64_t it, uint32_t *hint_p,
                     uint32_t *pos_p)
{
	uint32_t lo = 0, hi = r->n;

	if (*hint_p < r->n && r->lanes[*hint_p].iteration == it) {
		*pos_p = *hint_p;
		return 1;
	}
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (r->lanes[mid].iteration < it)
			lo = mid + 1;
		else
			hi = mid;
	}
	*pos_p = lo;
	if (lo < r->n && r->lanes[lo].iteration == it) {
		*hint_p = lo;
		return 1;
	}
	return 0;
}

static void lane_swap(struct lane *a, struct lane *b)
{
	struct lane t = *a;

	*a = *b;
	*b = t;
}

/* New lane at pos from the spare at n (room reserved by the caller). */
static void lane_insert(struct rcv *r, uint32_t pos, uint64_t it)
{
	struct lane l = r->lanes[r->n];

	memmove(&r->lanes[pos + 1], &r->lanes[pos],
	        (size_t)(r->n - pos) * sizeof(l));
	l.iteration = it;
	l.count = 0;
	l.pending = 0;
	l.run.head = 0;
	l.run.n = 0;
	l.wait.n = 0;
	r->lanes[pos] = l;
	r->n++;
}

/* Drops lane pos; its buffers become a spare's. */
static void lane_remove(struct rcv *r, uint32_t pos)
{
	struct lane l = r->lanes[pos];

	memmove(&r->lanes[pos], &r->lanes[pos + 1],
	        (size_t)(r->n - pos - 1) * sizeof(l));
	r->lanes[--r->n] = l;
}

/* Drops every lane below lowest with nothing pending (order kept). */
static void lanes_prune(struct rcv *r, uint64_t lowest)
{
	uint32_t i, j = 0;

	for (i = 0; i < r->n; i++) {
		if (r->lanes[i].iteration < lowest && r->lanes[i].pending == 0)
			continue;
		if (i != j)
			lane_swap(&r->lanes[i], &r->lanes[j]);
		j++;
	}
	r->n = j;
}

/* x: the transfer, nd: its node. ps_gate_ready has reserved room for one
 * more in the pool and in the queue; the rest is reserved here before
 * anything changes. */
static int counter_ready(ps_gate *g, const struct rec *x, const struct node *nd)
{
	struct rcv *r = &g->rcv[x->receiver];
	uint64_t newest = r->newest > x->iteration ? r->newest : x->iteration;
	uint32_t pos;
	int found = lane_find(r, x->iteration, &r->hint_ready, &pos);
	int fresh = !found && x->iteration >= iter_floor(newest);
	struct lane *l;

	/* Reserve first: nothing changes unless all succeeds. */
	if (fresh) {
		if (lanes_reserve(r, r->n + 1) != PS_OK)
			return PS_ENOMEM;
		if (x->priority > 0 &&
		    run_reserve(&r->lanes[r->n].run, 1) != PS_OK)
			return PS_ENOMEM; /* a new lane's run takes it */
	} else if (found && x->priority > r->lanes[pos].count) {
		l = &r->lanes[pos];
		if (run_takes(&l->run, x->priority)
		        ? run_reserve(&l->run, l->run.n + 1) != PS_OK
		        : heap_reserve(&l->wait, l->wait.n + 1) != PS_OK)
			return PS_ENOMEM;
	}

	if (fresh) {
		lane_insert(r, pos, x->iteration);
		found = 1;
	}
	if (found) {
		l = &r->lanes[pos];
		l->pending++;
		if (x->priority <= l->count)
			queue_push(&g->q, nd, BY_SEQ);
		else if (run_takes(&l->run, x->priority))
			run_insert(&l->run, nd);
		else
			heap_push(&l->wait, nd, BY_NUM);
	} else {
		queue_push(&g->q, nd, BY_SEQ); /* stale: no counter left */
	}
	if (newest != r->newest) {
		r->newest = newest;
		lanes_prune(r, iter_floor(newest));
	}
	return PS_OK;
}

/* x was handed over: its lane's counter moves on. */
static void counter_released(ps_gate *g, const struct rec *x)
{
	struct rcv *r = &g->rcv[x->receiver];
	struct lane *l;
	uint32_t pos;

	if (!lane_find(r, x->iteration, &r->hint_release, &pos))
		return; /* stale */
	l = &r->lanes[pos];
	l->count++;
	l->pending--;
	/* Every waiting transfer the counter has reached becomes eligible;
	 * the queue orders them (by seq), so whether the run's or the
	 * heap's go first makes no difference. Room: reserved at ready. */
	while (l->run.n > 0 && run_at(&l->run, 0)->prio <= l->count) {
		queue_push(&g->q, run_at(&l->run, 0), BY_SEQ);
		run_pop(&l->run);
	}
	while (l->wait.n > 0 && l->wait.e[0].prio <= l->count) {
		struct node m = l->wait.e[0];

		heap_pop(&l->wait, BY_NUM);
		queue_push(&g->q, &m, BY_SEQ);
	}
	/* The run's first two are likely the lane's next to become eligible
	 * and go: start loading their records, read when they are released
	 * (the second's a release ahead, long enough to hide the load). */
	if (l->run.n > 0)
		PREFETCH(&g->pool.rec[run_at(&l->run, 0)->idx]);
	if (l->run.n > 1)
		PREFETCH(&g->pool.rec[run_at(&l->run, 1)->idx]);
	if (l->pending == 0 && l->iteration < iter_floor(r->newest))
		lane_remove(r, pos);
}

/* ---- credit ------------------------------------------------------------- */

static int fits(const ps_gate *g, uint64_t bytes)
{
	if (g->in_flight == 0)
		return 1;
	if (g->credit == 0)
		return bytes <= UINT64_MAX - g->in_flight;
	return g->in_flight <= g->credit && bytes <= g->credit - g->in_flight;
}

/* ---- public ------------------------------------------------------------- */

const char *ps_gate_name(ps_gate_kind kind)
{
	switch (kind) {
	case PS_GATE_FIFO:
		return "fifo";
	case PS_GATE_PRIORITY:
		return "priority";
	case PS_GATE_COUNTER:
		return "counter";
	default:
		return "unknown";
	}
}

int ps_gate_create(ps_gate_kind kind, uint64_t credit, uint32_t receivers,
                   ps_gate **gate_p)
{
	ps_gate *g;

	if (!gate_p || (unsigned)kind >= PS_GATE_COUNT || receivers == 0) {
		PS_ERROR("gate: bad arguments (kind %d, %u receivers)",
		         (int)kind, receivers);
		return PS_EINVAL;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		return PS_ENOMEM;
	g->kind = kind;
	g->credit = credit;
	g->receivers = receivers;
	if (kind == PS_GATE_COUNTER) {
		g->rcv = calloc(receivers, sizeof(*g->rcv));
		if (!g->rcv) {
			free(g);
			return PS_ENOMEM;
		}
	}
	*gate_p = g;
	return PS_OK;
}

void ps_gate_destroy(ps_gate **gate_p)
{
	ps_gate *g;

	if (!gate_p || !*gate_p)
		return;
	g = *gate_p;
	if (g->rcv) {
		for (uint32_t i = 0; i < g->receivers; i++) {
			struct rcv *r = &g->rcv[i];

			for (uint32_t j = 0; j < r->cap; j++) {
				free(r->lanes[j].run.e);
				free(r->lanes[j].wait.mem);
			}
			free(r->lanes);
		}
		free(g->rcv);
	}
	free(g->q.heap.mem);
	free(g->pool.rec);
	free(g->pool.free);
	free(g->fifo.e);
	free(g);
	*gate_p = NULL;
}

int ps_gate_ready(ps_gate *g, const ps_xfer *x)
{
	struct rec e;
	struct node nd;
	int rc;

	if (!g || !x)
		return PS_EINVAL;
	if (x->receiver >= g->receivers) {
		PS_ERROR("gate: receiver %u out of range (%u receivers)",
		         x->receiver, g->receivers);
		return PS_EINVAL;
	}
	if (g->pending == UINT32_MAX)
		return PS_ENOMEM;
	e.handle = x->handle;
	e.iteration = x->iteration;
	e.bytes = x->bytes;
	e.receiver = x->receiver;
	e.priority = x->priority;
	if (g->kind == PS_GATE_FIFO) {
		rc = ring_reserve(&g->fifo, g->fifo.n + 1);
		if (rc == PS_OK) {
			uint32_t at =
			    (g->fifo.head + g->fifo.n) & (g->fifo.cap - 1);

			g->fifo.e[at] = e;
			g->fifo.n++;
		}
	} else {
		/* The queue holds at most every pending transfer. */
		rc = pool_reserve(&g->pool);
		if (rc == PS_OK)
			rc = heap_reserve(&g->q.heap, g->pending + 1);
		nd.seq = g->seq;
		nd.prio = e.priority;
		nd.idx = 0;
		if (rc == PS_OK && g->kind == PS_GATE_PRIORITY) {
			nd.idx = pool_get(&g->pool);
			g->pool.rec[nd.idx] = e;
			queue_push(&g->q, &nd, BY_PRIO);
		} else if (rc == PS_OK) {
			/* Reserved slot: counter_ready may still fail. */
			nd.idx = g->pool.nfree > 0
			             ? g->pool.free[g->pool.nfree - 1]
			             : g->pool.used;
			rc = counter_ready(g, &e, &nd);
			if (rc == PS_OK) {
				(void)pool_get(&g->pool);
				g->pool.rec[nd.idx] = e;
			}
		}
	}
	if (rc != PS_OK) {
		PS_ERROR("gate: out of memory with %u transfers pending",
		         g->pending);
		return rc;
	}
	g->seq++;
	g->pending++;
	return PS_OK;
}

/* PRIORITY (by BY_PRIO) and COUNTER (BY_SEQ): takes the queue's top into
 * *e_p if it may go now; 1 if it did. */
static inline int queue_next(ps_gate *g, int by, struct rec *e_p)
{
	const struct node *top = queue_top(&g->q, by);
	uint32_t idx;

	if (!top)
		return 0; /* counter: all wait for their counters */
	idx = top->idx;
	*e_p = g->pool.rec[idx];
	if (!fits(g, e_p->bytes))
		return 0;
	queue_pop(&g->q, top, by);
	if (g->kind == PS_GATE_COUNTER)
		counter_released(g, e_p);
	pool_put(&g->pool, idx);
	/* The next decision reads the new top's record: start loading it now
	 * (with many pending it is rarely in the cache). */
	top = queue_top(&g->q, by);
	if (top)
		PREFETCH(&g->pool.rec[top->idx]);
	return 1;
}

int ps_gate_next(ps_gate *g, ps_xfer *x_p)
{
	struct rec e;

	if (!g || !x_p || g->pending == 0)
		return 0;
	if (g->kind == PS_GATE_FIFO) {
		e = g->fifo.e[g->fifo.head];
		if (!fits(g, e.bytes))
			return 0;
		g->fifo.head = (g->fifo.head + 1) & (g->fifo.cap - 1);
		g->fifo.n--;
	} else if (g->kind == PS_GATE_PRIORITY) {
		if (!queue_next(g, BY_PRIO, &e))
			return 0;
	} else {
		if (!queue_next(g, BY_SEQ, &e))
			return 0;
	}
	g->pending--;
	g->in_flight += e.bytes;
	x_p->handle = e.handle;
	x_p->receiver = e.receiver;
	x_p->iteration = e.iteration;
	x_p->priority = e.priority;
	x_p->bytes = e.bytes;
	return 1;
}

int ps_gate_acked(ps_gate *g, uint64_t bytes)
{
	if (!g)
		return PS_EINVAL;
	if (bytes > g->in_flight) {
		PS_ERROR("gate: %llu bytes acknowledged, %llu in flight",
		         (unsigned long long)bytes,
		         (unsigned long long)g->in_flight);
		return PS_EINVAL;
	}
	g->in_flight -= bytes;
	return PS_OK;
}

int ps_gate_set_credit(ps_gate *g, uint64_t credit)
{
	if (!g)
		return PS_EINVAL;
	g->credit = credit;
	return PS_OK;
}

uint64_t ps_gate_credit(const ps_gate *g)
{
	return g ? g->credit : 0;
}

void ps_gate_foreach_pending(const ps_gate *g,
                             void (*fn)(uint64_t handle, void *ud), void *ud)
{
	uint8_t *unused;

	if (!g || !fn)
		return;
	if (g->kind == PS_GATE_FIFO) {
		for (uint32_t i = 0; i < g->fifo.n; i++)
			fn(g->fifo.e[(g->fifo.head + i) & (g->fifo.cap - 1)]
			       .handle,
			   ud);
		return;
	}
	/* pool slots in use: handed out and not on the free list */
	unused = calloc(g->pool.used ? g->pool.used : 1, 1);
	if (!unused)
		return;
	for (uint32_t i = 0; i < g->pool.nfree; i++)
		unused[g->pool.free[i]] = 1;
	for (uint32_t i = 0; i < g->pool.used; i++)
		if (!unused[i])
			fn(g->pool.rec[i].handle, ud);
	free(unused);
}

uint64_t ps_gate_in_flight(const ps_gate *g)
{
	return g ? g->in_flight : 0;
}

uint32_t ps_gate_pending(const ps_gate *g)
{
	return g ? g->pending : 0;
}
