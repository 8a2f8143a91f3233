/*
 * transport/rdma_pool.c - the verbs transport's lending pool: registered
 * buffers in power-of-two sizes from 64 KiB to 16 MiB that READs land in,
 * lent to the receiver inside its ps_msgs and reused when those are freed
 * (docs/rdma.md, "Zero copy"; at stop, "Teardown"). The pool outlives the
 * transport while buffers are lent: a reference per lent buffer.
 *
 * Threads: buffers are taken on the progress thread, under the
 * transport's one mutex as everything else (docs/rdma.md, "Threads"), and
 * come back on any thread, the transport maybe freed: the pool has a
 * mutex of its own (p->mu).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "transport/rdma_internal.h"

lpool *psi_rdma_pool_new(struct ibv_pd *pd)
{
	lpool *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	pthread_mutex_init(&p->mu, NULL);
	p->refs = 1; /* the transport's */
	p->pd = pd;
	return p;
}

static void buf_free(lbuf *b)
{
	if (b->mr)
		ibv_dereg_mr(b->mr);
	free(b->mem);
	free(b);
}

/* Drops one reference (pool mu held); true when the pool must go. */
static bool pool_unref_locked(lpool *p)
{
	return --p->refs == 0;
}

static void pool_destroy(lpool *p)
{
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* A registered buffer of at least len bytes to lend, or NULL (LEND_MAX
 * lent, too large for the pool, no memory): the caller then registers a
 * heap buffer for the one READ. Progress thread (rt->mu held). */
lbuf *psi_rdma_pool_get(lpool *p, uint64_t len)
{
	int cls = 0;
	while (cls < POOL_CLASSES && ((uint64_t)1 << (POOL_MIN_SHIFT + cls)) < len)
		cls++;
	if (!p || cls == POOL_CLASSES)
		return NULL;
	pthread_mutex_lock(&p->mu);
	if (p->dead || p->lent >= LEND_MAX) {
		pthread_mutex_unlock(&p->mu);
		return NULL;
	}
	lbuf *b = p->free[cls];
	if (b) {
		p->free[cls] = b->next;
		p->cached -= b->cap;
	} else {
		pthread_mutex_unlock(&p->mu);
		size_t cap = (size_t)1 << (POOL_MIN_SHIFT + cls);
		b = calloc(1, sizeof(*b));
		if (!b)
			return NULL;
		b->mem = aligned_alloc(4096, cap);
		b->mr = b->mem ? ibv_reg_mr(p->pd, b->mem, cap,
		                            IBV_ACCESS_LOCAL_WRITE)
		               : NULL;
		if (!b->mr) {
			PS_DEBUG("rdma: pool buffer of %zu bytes: %s", cap,
			         strerror(errno));
			free(b->mem);
			free(b);
			return NULL;
		}
		b->pool = p;
		b->cap = cap;
		b->cls = cls;
		pthread_mutex_lock(&p->mu);
		if (p->dead) { /* cannot happen: stop joins this thread */
			pthread_mutex_unlock(&p->mu);
			buf_free(b);
			return NULL;
		}
	}
	b->prev = NULL;
	b->next = p->lent_list;
	if (p->lent_list)
		p->lent_list->prev = b;
	p->lent_list = b;
	p->lent++;
	p->refs++;
	pthread_mutex_unlock(&p->mu);
	return b;
}

/* A lent buffer comes back (any thread, the transport maybe freed). */
void psi_rdma_pool_put(lbuf *b)
{
	lpool *p = b->pool;
	bool keep, gone;

	pthread_mutex_lock(&p->mu);
	if (b->prev)
		b->prev->next = b->next;
	else
		p->lent_list = b->next;
	if (b->next)
		b->next->prev = b->prev;
	p->lent--;
	keep = !p->dead && p->cached + b->cap <= POOL_CACHE_MAX;
	if (keep) {
		b->next = p->free[b->cls];
		p->free[b->cls] = b;
		p->cached += b->cap;
	}
	gone = pool_unref_locked(p);
	pthread_mutex_unlock(&p->mu);
	if (!keep)
		buf_free(b); /* deregisters: thread-safe in verbs */
	if (gone)
		pool_destroy(p);
}

/* At stop, before the PD goes: every registration is released; lent
 * buffers keep their memory until their messages are freed. */
void psi_rdma_pool_shutdown(lpool *p)
{
	lbuf *idle = NULL;

	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->dead = true;
	for (int i = 0; i < POOL_CLASSES; i++) {
		while (p->free[i]) {
			lbuf *b = p->free[i];
			p->free[i] = b->next;
			b->next = idle;
			idle = b;
		}
	}
	p->cached = 0;
	for (lbuf *b = p->lent_list; b; b = b->next)
		if (b->mr) {
			ibv_dereg_mr(b->mr);
			b->mr = NULL;
		}
	bool gone = pool_unref_locked(p);
	pthread_mutex_unlock(&p->mu);
	while (idle) {
		lbuf *b = idle;
		idle = b->next;
		buf_free(b);
	}
	if (gone)
		pool_destroy(p);
}
