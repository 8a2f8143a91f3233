/*
 * transport/seal_pool.c - helper threads for sealing (seal_pool.h): one
 * job at a time, its chunks handed out under a mutex (a chunk is a
 * quarter of a MiB of cipher, so the lock is nothing beside it).
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

#include "ordo/error.h"
#include "transport/seal_pool.h"

struct psi_seal_pool {
	pthread_mutex_t mu;
	pthread_cond_t work; /* a job's chunks are there, or stop */
	pthread_cond_t idle; /* the job's last chunk is done */
	pthread_t *threads;
	int helpers, started, stop;
	psi_seal_chunk_fn *fn; /* the job: */
	void *arg;
	size_t n, next, done;
};

typedef struct helper_arg {
	psi_seal_pool *p;
	int worker;
} helper_arg;

static void *helper_main(void *a)
{
	helper_arg *h = a;
	psi_seal_pool *p = h->p;
	int worker = h->worker;

	free(h);
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->stop && p->next >= p->n)
			pthread_cond_wait(&p->work, &p->mu);
		if (p->stop)
			break;
		size_t k = p->next++;
		pthread_mutex_unlock(&p->mu);
		p->fn(p->arg, k, worker);
		pthread_mutex_lock(&p->mu);
		if (++p->done == p->n)
			pthread_cond_signal(&p->idle);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int psi_seal_pool_new(int helpers, psi_seal_pool **p_p)
{
	psi_seal_pool *p = calloc(1, sizeof(*p));
	sigset_t all, old;
	int rc = PS_OK;

	*p_p = NULL;
	if (!p || helpers < 1) {
		free(p);
		return p ? PS_EINVAL : PS_ENOMEM;
	}
	p->threads = calloc((size_t)helpers, sizeof(*p->threads));
	if (!p->threads) {
		free(p);
		return PS_ENOMEM;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->idle, NULL);
	p->helpers = helpers;
	/* the helpers take no signal: the process's handlers run on the
	 * threads that expect them */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (int i = 0; i < helpers && rc == PS_OK; i++) {
		helper_arg *h = malloc(sizeof(*h));
		if (!h) {
			rc = PS_ENOMEM;
			break;
		}
		*h = (helper_arg){p, i + 1};
		if (pthread_create(&p->threads[i], NULL, helper_main, h) != 0) {
			free(h);
			rc = PS_EIO;
			break;
		}
		p->started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != PS_OK) {
		psi_seal_pool_free(&p);
		return rc;
	}
	*p_p = p;
	return PS_OK;
}

void psi_seal_pool_free(psi_seal_pool **p_p)
{
	psi_seal_pool *p = *p_p;

	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->started; i++)
		pthread_join(p->threads[i], NULL);
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->idle);
	pthread_mutex_destroy(&p->mu);
	free(p->threads);
	free(p);
	*p_p = NULL;
}

int psi_seal_pool_helpers(const psi_seal_pool *p)
{
	return p->helpers;
}

void psi_seal_pool_run(psi_seal_pool *p, psi_seal_chunk_fn *fn, void *arg,
		       size_t n)
{
	pthread_mutex_lock(&p->mu);
	p->fn = fn;
	p->arg = arg;
	p->n = n;
	p->next = 0;
	p->done = 0;
	if (n > 1)
		pthread_cond_broadcast(&p->work);
	while (p->next < p->n) {
		size_t k = p->next++;
		pthread_mutex_unlock(&p->mu);
		fn(arg, k, 0);
		pthread_mutex_lock(&p->mu);
		p->done++;
	}
	while (p->done < p->n)
		pthread_cond_wait(&p->idle, &p->mu);
	p->n = p->next = p->done = 0;
	p->fn = NULL;
	p->arg = NULL;
	pthread_mutex_unlock(&p->mu);
}
