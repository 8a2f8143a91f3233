/*
 * client/driving.c - who drives the node, and when: the communication
 * thread (it joins the job, sets the client up, then drives the node or
 * parks) and the application thread's own drives while it pushes or
 * waits, with the hand-over of the drive between them.
 *
 * DESIGN (driving). One thread at a time drives the node - receives,
 * sends, runs the protocol machine - as `driver` (under `mu`) says; a
 * hand-over through `mu` orders everything the last driver did before
 * what the next one does. The communication thread drives whenever
 * messages must be handled while the application is away from the
 * library: acknowledgements of a credit window, asynchronous training,
 * DONE waiting for its acknowledgements, commands queued. Otherwise
 * (synchronous training without a window, between pushes and waits) it
 * parks on `comm_cv`, waking once a heartbeat interval to send its
 * heartbeat and read what came, and the application thread drives the
 * node itself while it pushes or waits: a push goes to the transport
 * and the parameters come from it without a hand-off between threads
 * (a wake-up of a thread on another CPU costs ~22 us on the VMs here; the
 * two per iteration were a tenth of a 1 MiB round trip,
 * docs/benchmarks.md). What arrives while the application computes waits
 * in the transport until its next look - ps_client_try takes everything
 * that has arrived, a wait what it waits for - (its receive stamp too),
 * or the next heartbeat. While the communication thread drives, the application
 * queues commands and waits on `cv` as before. The application's drive
 * never closes the node: an error that ends the job (`drive_rc`) goes to
 * the communication thread, which ends it as it would its own.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "runtime/clock.h"
#include "runtime/node.h"
#include "runtime/signals.h"
#include "proto/worker.h"
#include "client/state.h"

/* The driver: whether the communication thread must drive while the
 * application is away from the library. */
static int comm_needed(const ps_client *c)
{
	return !c->unwindowed_sync || c->done_body != NULL;
}

/* A command and what it still owns (a broadcast's bytes not sent). */
void psi_client_cmd_free(cmd *k)
{
	free(k->payload);
	free(k);
}

/* The driver runs queued commands (all freed; after an error, only
 * freed). */
static int run_commands(ps_client *c, cmd *k, int rc)
{
	while (k) {
		cmd *next = k->next;
		if (rc == PS_OK)
			rc = psi_client_run_command(c, k);
		psi_client_cmd_free(k);
		k = next;
	}
	return rc;
}

/* The driver receives one message (at most timeout_ms: -1 forever, 0 no
 * wait) and handles it. PS_OK (also when woken), PS_ETIMEDOUT, PS_ECLOSED
 * on SHUTDOWN, or the error that ends the job. */
static int receive_one(ps_client *c, int timeout_ms)
{
	ps_wire_header h;
	ps_msg *msg = NULL;
	int rc;

	if (ps_signal_pending()) {
		PS_WARN("interrupted by signal %d", ps_signal_pending());
		return PS_EINTR;
	}
	rc = ps_node_recv(&c->node, timeout_ms, &msg, &h);
	if (rc == PS_EAGAIN)
		return PS_OK;
	return rc == PS_OK ? psi_client_handle(c, msg, &h) : rc;
}

/* The communication thread gives the drive back and sleeps until it is
 * needed: commands queued, the machine needs driving, the client stops or
 * failed, or a heartbeat interval passed with nobody driving. It has the
 * drive again when this returns. Caller holds mu. */
static void park(ps_client *c)
{
	int64_t interval = c->cfg.cluster.heartbeat_interval_ms;
	int64_t beat = ps_now_ms() + interval;

	c->driver = DRIVER_NONE;
	/* an application waiting on cv while this thread drove may drive now */
	pthread_cond_broadcast(&c->cv);
	for (;;) {
		int64_t now = ps_now_ms();
		struct timespec ts;

		if (c->driver == DRIVER_NONE &&
		    (c->stop || c->drive_rc != PS_OK || c->head ||
		     c->comm_needed || now >= beat))
			break;
		if (c->driver == DRIVER_APP && now >= beat)
			beat = now + interval; /* it sends the heartbeats */
		ts.tv_sec = beat / 1000;
		ts.tv_nsec = (beat % 1000) * 1000000L;
		pthread_cond_timedwait(&c->comm_cv, &c->mu, &ts);
	}
	c->driver = DRIVER_COMM;
}

/* The communication thread's loop: commands, the machine's messages,
 * one received message; parked while it is not needed. Returns what ended
 * it (PS_ECLOSED: SHUTDOWN, or the client stops). */
static int drive(ps_client *c)
{
	int rc = PS_OK, idle = 0, was_needed = -1;

	while (rc == PS_OK) {
		int needed;
		cmd *k;

		pthread_mutex_lock(&c->mu);
		if (idle) { /* only when not needed: say so (the application
			     * may have said otherwise since) */
			c->comm_needed = was_needed = 0;
			park(c);
		}
		k = c->head;
		c->head = c->tail = NULL;
		rc = c->stop ? PS_ECLOSED : c->drive_rc;
		pthread_mutex_unlock(&c->mu);
		rc = run_commands(c, k, rc);
		if (rc == PS_OK)
			rc = psi_client_send_msgs(c);
		if (rc != PS_OK)
			break;
		needed = comm_needed(c);
		if (needed != was_needed) { /* rarely changes: no lock else */
			pthread_mutex_lock(&c->mu);
			c->comm_needed = needed;
			pthread_mutex_unlock(&c->mu);
			was_needed = needed;
		}
		/* not needed: what came, then parked */
		rc = receive_one(c, needed ? -1 : 0);
		idle = rc == PS_ETIMEDOUT;
		if (idle)
			rc = PS_OK;
	}
	return rc;
}

void *psi_client_comm_main(void *arg)
{
	ps_client *c = arg;
	ps_tensor_desc *descs = calloc(c->ntensors, sizeof(*descs));
	int rc = descs ? PS_OK : PS_ENOMEM;
	unsigned long errors = ps_log_errors(); /* this thread's */

	for (uint32_t i = 0; i < c->ntensors && descs; i++) {
		memcpy(descs[i].name, c->tensors[i].name, PS_NAME_MAX);
		descs[i].numel = c->tensors[i].numel;
	}
	if (rc == PS_OK)
		rc = ps_node_join(&c->node, &c->cfg, PS_ROLE_WORKER, descs,
				  c->ntensors);
	free(descs);
	if (rc == PS_OK)
		rc = psi_client_setup_after_join(c);
	if (rc == PS_OK) {
		pthread_mutex_lock(&c->mu);
		c->state = ST_RUNNING;
		c->comm_alive = 1;
		c->driver = DRIVER_COMM;
		pthread_cond_broadcast(&c->cv);
		pthread_mutex_unlock(&c->mu);
		if (c->node.welcome.start_iteration == 0)
			rc = psi_client_send_initial_values(c);
	}
	if (rc == PS_OK)
		rc = drive(c);
	pthread_mutex_lock(&c->mu);
	if (rc == PS_ECLOSED && !c->stop)
		c->state = ST_SHUTDOWN;
	else if (rc == PS_ECLOSED) /* ps_client_destroy */
		psi_client_fail_locked(c, PS_ESTATE,
				       "the client was destroyed");
	else /* what the application's drive or this thread logged last */
		psi_client_fail_locked(
			c, rc,
			c->drive_rc != PS_OK && rc == c->drive_rc
				? c->drive_why
			: ps_log_errors() != errors ? ps_log_last_error()
						    : NULL);
	c->comm_alive = 0;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	if (c->proto) {
		ps_wproto_stats st;
		ps_wproto_get_stats(c->proto, &st);
		if (st.pushes)
			PS_INFO("gate: %llu pushes, %.0f ns each",
				(unsigned long long)st.pushes,
				(double)st.gate_ns / (double)st.pushes);
	}
	free(c->done_body); /* never sent: the job failed */
	c->done_body = NULL;
	ps_node_stop(&c->node, c->state == ST_SHUTDOWN ? 2000 : 200);
	for (uint32_t i = 0; i < c->ntensors; i++) {
		ps_transport_dereg(c->node.transport, &c->tensors[i].mr);
#ifdef PS_WITH_CUDA
		if (c->tensors[i].dev)
			ps_transport_dereg(c->node.transport,
					   &c->tensors[i].dev->dmr);
#endif
	}
	ps_node_close(&c->node, 0);
	return NULL;
}

/* ---- the application thread's drive ------------------------------------- */

/* The application takes the drive when nobody has it (caller holds mu):
 * 1, and the commands queued are its to run. */
int psi_client_app_take_drive(ps_client *c, cmd **queued_p)
{
	if (c->driver != DRIVER_NONE || c->state != ST_RUNNING ||
	    !c->comm_alive || c->drive_rc != PS_OK)
		return 0;
	c->driver = DRIVER_APP;
	*queued_p = c->head;
	c->head = c->tail = NULL;
	return 1;
}

/* The application gives the drive back, having ended with rc (called
 * without mu, returns holding it): the communication thread is woken when
 * it is needed now, or to end the job. errors: this thread's count of
 * logged errors when it took the drive (an error logged since says why
 * the job ends). */
static void app_give_drive(ps_client *c, int rc, unsigned long errors)
{
	int needed = comm_needed(c);

	pthread_mutex_lock(&c->mu);
	c->driver = DRIVER_NONE;
	if (rc != PS_OK && rc != PS_ETIMEDOUT && c->drive_rc == PS_OK) {
		c->drive_rc = rc;
		snprintf(c->drive_why, sizeof(c->drive_why), "%s",
			 ps_log_errors() != errors ? ps_log_last_error() : "");
	}
	c->comm_needed = needed;
	if (needed || c->head || c->drive_rc != PS_OK)
		pthread_cond_signal(&c->comm_cv);
}

/* The application drives: the commands queued (and k), the machine's
 * messages, then (timeout_ms >= -1) one received message, or
 * (APP_DRAIN) every message that has arrived. Called with mu held and the
 * drive taken; returns holding mu, the drive given back. */
int psi_client_app_drive(ps_client *c, cmd *queued, cmd *k, int timeout_ms)
{
	unsigned long errors = ps_log_errors();
	int rc;

	if (k) { /* after what was queued before it */
		cmd **end = &queued;
		while (*end)
			end = &(*end)->next;
		*end = k;
	}
	pthread_mutex_unlock(&c->mu);
	rc = run_commands(c, queued, PS_OK);
	if (rc == PS_OK)
		rc = psi_client_send_msgs(c);
	if (rc == PS_OK && timeout_ms >= -1)
		rc = receive_one(c, timeout_ms);
	while (rc == PS_OK && timeout_ms == APP_DRAIN)
		rc = receive_one(c, 0);
	if (timeout_ms == APP_DRAIN && rc == PS_ETIMEDOUT)
		rc = PS_OK; /* all there was */
	app_give_drive(c, rc, errors);
	return rc;
}
