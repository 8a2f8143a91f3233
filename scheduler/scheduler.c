/*
 * scheduler/scheduler.c - the scheduler's event loop (scheduler.h): the
 * job's start and end (ps_scheduler_run), the loop over the transport
 * while it runs, the checks and dispatch of every message from a
 * welcomed node, heartbeats and liveness, barriers and their broadcasts.
 * The rest of the scheduler's work is in the files beside it
 * (scheduler/state.h says which holds what).
 *
 * DESIGN. One thread, one loop over the transport. Who is in the job -
 * registration, ids, liveness, barriers, DONE - is the membership machine
 * (proto/membership.h); this loop feeds it messages and the clock, and
 * keeps per member what only a driver needs (its peer handle, its DONE
 * statistics, checkpoint answers): in registration order until the
 * WELCOME, then indexed by node id. Every message is checked before it
 * touches state: header, job id, and the sender's identity (the transport
 * id the message came from must be the one that node registered with).
 * Bad messages are dropped with a reason.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "runtime/clock.h"
#include "runtime/node.h"
#include "runtime/signals.h"
#include "proto/membership.h"
#include "proto/wire.h"
#include "scheduler/scheduler.h"
#include "scheduling/placement.h"
#include "model/dag.h"
#include "proto/checkpoint_round.h"
#include "transport/transport.h"
#include "scheduler/state.h"

/* A broadcast's bytes, sent to every worker from one buffer: freed by
 * the last send's release (the transport's threads may release). */
typedef struct bcast {
	atomic_int refs;
	size_t len;
	unsigned char data[];
} bcast;

static void bcast_unref(void *data, void *hint)
{
	bcast *b = hint;

	(void)data;
	if (atomic_fetch_sub(&b->refs, 1) == 1)
		free(b);
}

void psi_sched_describe(const member *m, char *buf, size_t cap)
{
	ps_membership_describe(&m->info, buf, cap);
}

/* BARRIER from worker m; with a payload, the data its root broadcasts
 * (ps_client_broadcast: one worker sends it, every worker gets it with
 * the BARRIER_DONE). */
static int barrier(coord *c, const member *m, const ps_msg *msg,
		   const ps_wire_header *h)
{
	char why[PS_REASON_MAX];
	int released;

	if (msg->payload_len && c->bcast) {
		char a[160], b[160];
		psi_sched_describe(&c->members[c->bcast_from], a, sizeof(a));
		psi_sched_describe(m, b, sizeof(b));
		snprintf(why, sizeof(why), "two workers broadcast as the root "
			 "of one broadcast (barrier %u): %s and %s: every "
			 "worker must name the same root", h->key, a, b);
		psi_sched_abort_job(c, why);
		return PS_EABORTED;
	}
	if (ps_membership_barrier(c->ms, h->sender, h->key, &released, why,
				  sizeof(why)) != PS_OK) {
		psi_note_drop(++c->dropped, "BARRIER", why);
		return PS_OK;
	}
	if (msg->payload_len) {
		c->bcast = malloc(sizeof(*c->bcast) + msg->payload_len);
		if (!c->bcast) {
			psi_sched_abort_job(
			    c, "out of memory holding a broadcast");
			return PS_EABORTED;
		}
		atomic_init(&c->bcast->refs, 1);
		c->bcast->len = msg->payload_len;
		memcpy(c->bcast->data, msg->payload, msg->payload_len);
		c->bcast_from = h->sender;
	}
	if (!released)
		return PS_OK;
	bcast *b = c->bcast;
	c->bcast = NULL;
	for (uint32_t r = 0; r < c->workers; r++) {
		ps_peer peer = c->members[1 + c->servers + r].peer;
		if (!b) {
			psi_sched_send_msg(c, peer, PS_MSG_BARRIER_DONE,
					   h->key, NULL, 0);
			continue;
		}
		atomic_fetch_add(&b->refs, 1);
		if (psi_sched_send_msg_with(c, peer, PS_MSG_BARRIER_DONE,
					    h->key, b->data, b->len,
					    bcast_unref, b) != PS_OK)
			bcast_unref(NULL, b);
	}
	if (b)
		bcast_unref(NULL, b);
	return PS_OK;
}

/* After SIGINT/SIGTERM: aborts the job and returns 1. */
int psi_sched_interrupted(coord *c)
{
	char why[64];

	if (!ps_signal_pending())
		return 0;
	snprintf(why, sizeof(why), "scheduler interrupted by signal %d",
		 ps_signal_pending());
	psi_sched_abort_job(c, why);
	return 1;
}

/* A node could not send to another (proto/membership.h): the job ends
 * now, naming the lost node. The reporter waits for this ABORT. */
static int peer_lost(coord *c, const ps_msg *msg, const ps_wire_header *h)
{
	char reason[PS_REASON_MAX], why[1400];

	if (ps_wire_reason_decode(msg->payload, msg->payload_len, reason,
				  sizeof(reason), why, sizeof(why)) != PS_OK) {
		psi_note_drop(++c->dropped, "PEER_LOST", why);
		return PS_OK;
	}
	if (ps_membership_lost(c->ms, h->sender, h->key, reason, ps_now_ms(),
			       why, sizeof(why)) != PS_EABORTED) {
		psi_note_drop(++c->dropped, "PEER_LOST", why);
		return PS_OK;
	}
	psi_sched_abort_job(c, why);
	psi_sched_say_resume_from(c);
	return PS_EABORTED;
}

/* A message that names member m as its sender and came on a connection
 * admitted with another key id (transport/zap.h): another member, or a
 * holder of the job's secret that is none, passing for m. The job ends
 * naming who did it, as far as the key id tells. */
static int impersonated(coord *c, const member *m, const ps_msg *msg,
			const ps_wire_header *h)
{
	uint32_t n = 1 + c->servers + c->workers;
	char victim[160], who[200], why[PS_REASON_MAX];

	psi_sched_describe(m, victim, sizeof(victim));
	snprintf(who, sizeof(who), "a holder of the job's secret that is no "
		 "node of the job (key id %016llx)",
		 (unsigned long long)msg->kid);
	for (uint32_t i = 1; i < n; i++)
		if (msg->kid && c->members[i].kid == msg->kid)
			psi_sched_describe(&c->members[i], who, sizeof(who));
	snprintf(why, sizeof(why), "%s sent a %s as %s (its transport id "
		 "%016llx): a member passing for another",
		 who, ps_msg_type_name(h->type), victim,
		 (unsigned long long)msg->src);
	psi_sched_abort_job(c, why);
	return PS_EABORTED;
}

/* Message from a welcomed node: PS_OK, PS_ECLOSED when the job is done. */
static int handle_running(coord *c, const ps_msg *msg,
			  const ps_wire_header *h)
{
	uint32_t n = 1 + c->servers + c->workers;
	member *m;
	char why[256];

	if ((c->tuner.state == 2 && msg->src == c->tuner.tid) ||
	    (c->tuner.state == 1 && h->type == PS_MSG_TUNE_HELLO)) {
		psi_sched_handle_tuner(c, msg, h);
		return PS_OK;
	}
	if (h->job_id != c->job_id || h->sender == 0 || h->sender >= n ||
	    c->members[h->sender].info.transport_id != msg->src ||
	    h->payload_len != msg->payload_len) {
		psi_note_drop(++c->dropped, ps_msg_type_name(h->type),
			      "wrong job, sender identity or length");
		return PS_OK;
	}
	m = &c->members[h->sender];
	if (m->kid && msg->kid != m->kid)
		return impersonated(c, m, msg, h);
	ps_membership_heard(c->ms, h->sender, ps_now_ms());
	if ((h->type == PS_MSG_HEARTBEAT || h->type == PS_MSG_PROGRESS ||
	     h->type == PS_MSG_STOP_LATE || h->type == PS_MSG_STOP_READY) &&
	    h->iteration > (uint64_t)c->cfg->train.iterations) {
		/* no node of this job reaches it: believed, it would move the
		 * iteration a checkpoint or a credit change is asked for
		 * past any (and its + 1 wrap) */
		snprintf(why, sizeof(why),
			 "iteration %llu beyond train.iterations (%d)",
			 (unsigned long long)h->iteration,
			 c->cfg->train.iterations);
		psi_note_drop(++c->dropped, ps_msg_type_name(h->type), why);
		return PS_OK;
	}
	switch (h->type) {
	case PS_MSG_HEARTBEAT:
		if (m->info.role == PS_ROLE_SERVER)
			m->progress = h->iteration;
		return PS_OK;
	case PS_MSG_CKPT_DONE:
	case PS_MSG_CKPT_LATE:
	case PS_MSG_FLUSHED:
		return psi_sched_handle_checkpoint(c, m, msg, h);
	case PS_MSG_PROGRESS:
	case PS_MSG_STOP_LATE:
	case PS_MSG_STOP_READY:
		if (m->info.role != PS_ROLE_WORKER) {
			psi_note_drop(++c->dropped, ps_msg_type_name(h->type),
				      "not from a worker");
			return PS_OK;
		}
		if (h->type == PS_MSG_PROGRESS)
			psi_sched_worker_progress(c, m, h->iteration);
		else
			psi_sched_stop_answer(c, m, h);
		return PS_OK;
	case PS_MSG_TIMINGS:
		return psi_sched_timings(c, m, msg);
	case PS_MSG_PEER_LOST:
		return peer_lost(c, msg, h);
	case PS_MSG_BARRIER:
		return barrier(c, m, msg, h);
	case PS_MSG_DONE: {
		ps_wire_done d;
		int all;
		if (m->info.role != PS_ROLE_WORKER ||
		    ps_wire_done_decode(msg->payload, msg->payload_len, &d,
					why, sizeof(why)) != PS_OK ||
		    ps_membership_done(c->ms, h->sender, &all, why,
				       sizeof(why)) != PS_OK) {
			psi_note_drop(++c->dropped, "DONE",
				      "not a worker, twice, or malformed");
			return PS_OK;
		}
		m->stats = d;
		PS_INFO("worker %u done: %llu iterations", m->info.rank,
			(unsigned long long)m->stats.iterations);
		return all ? psi_sched_job_done(c) : PS_OK;
	}
	default:
		psi_note_drop(++c->dropped, ps_msg_type_name(h->type),
			      "not expected by the scheduler");
		return PS_OK;
	}
}

/* Heartbeats out, silence detection in. PS_EABORTED when a node died. */
static int tick(coord *c)
{
	uint32_t n = 1 + c->servers + c->workers;
	char why[600];
	int beat;

	if (ps_membership_tick(c->ms, ps_now_ms(), &beat, why, sizeof(why)) !=
	    PS_OK) {
		psi_sched_abort_job(c, why);
		psi_sched_say_resume_from(c);
		return PS_EABORTED;
	}
	for (uint32_t i = 1; beat && i < n; i++)
		if (ps_membership_reachable(c->ms, i) &&
		    psi_sched_send_msg(c, c->members[i].peer,
				       PS_MSG_HEARTBEAT, 0, NULL, 0) != PS_OK)
			ps_membership_unreachable(c->ms, i);
	return PS_OK;
}

static int running(coord *c)
{
	if (psi_sched_tuner_connect(c) != PS_OK)
		return PS_EABORTED;
	for (;;) {
		ps_wire_header h;
		ps_msg *msg = NULL;
		char why[256];
		int rc;

		if (psi_sched_interrupted(c))
			return PS_EINTR;
		if (ps_signal_take_usr1()) {
			if (!c->cfg->checkpoint.dir[0])
				PS_WARN("SIGUSR1: no checkpoint.dir, no "
					"checkpoint");
			else if (c->ckpt.asked)
				PS_INFO("SIGUSR1: checkpoint %llu is already "
					"requested",
					(unsigned long long)c->ckpt.asked);
			else if (!c->ckpt.flushing)
				psi_sched_request_checkpoint(c, 0);
		}
		rc = tick(c);
		if (rc != PS_OK)
			return rc;
		rc = ps_transport_recv(c->t,
				       c->cfg->cluster.heartbeat_interval_ms,
				       &msg);
		if (rc == PS_ETIMEDOUT || rc == PS_EAGAIN)
			continue;
		if (rc != PS_OK)
			return rc;
		if (ps_wire_header_decode(msg->hdr, msg->hdr_len, &h, why,
					  sizeof(why)) != PS_OK) {
			psi_note_drop_from(++c->dropped, "message", msg->src,
					   why);
			ps_msg_free(&msg);
			continue;
		}
		rc = handle_running(c, msg, &h);
		ps_msg_free(&msg);
		if (rc == PS_ECLOSED)
			return PS_OK;
		if (rc == PS_EABORTED)
			return rc;
	}
}

int ps_scheduler_run(const ps_config *cfg, int ready_fd)
{
	coord c;
	int rc, status = 1;

	memset(&c, 0, sizeof(c));
	c.progress_fd = -1;
	c.in_force = *cfg;
	c.cfg = &c.in_force;
	c.given = cfg;
	c.servers = (uint32_t)cfg->cluster.servers;
	c.workers = (uint32_t)cfg->cluster.workers;
	c.job_id = ps_random_id();
	c.members = calloc(1 + c.servers + c.workers, sizeof(*c.members));
	if (!c.members || ps_ckpt_sched_init(&c.ckpt, c.servers) != PS_OK ||
	    ps_stop_round_init(&c.stop, c.workers) != PS_OK ||
	    ps_membership_create(
		    &(ps_membership_config){
			    .servers = c.servers,
			    .workers = c.workers,
			    .register_timeout_ms =
				    cfg->cluster.register_timeout_ms,
			    .heartbeat_interval_ms =
				    cfg->cluster.heartbeat_interval_ms,
			    .heartbeat_timeout_ms =
				    cfg->cluster.heartbeat_timeout_ms},
		    ps_now_ms(), &c.ms) != PS_OK) {
		ps_stop_round_free(&c.stop);
		ps_ckpt_sched_free(&c.ckpt);
		free(c.members);
		return 1;
	}
	rc = ps_job_transport_create(cfg, &c.self.transport_id, &c.t);
	if (rc != PS_OK)
		goto out;
	c.self.role = PS_ROLE_SCHEDULER;
	c.self.kid = ps_transport_kid(c.t);
	c.self.pid = (int32_t)getpid();
	gethostname(c.self.host, sizeof(c.self.host));
	c.self.host[sizeof(c.self.host) - 1] = '\0';
	rc = ps_transport_listen(c.t, cfg->cluster.scheduler_host,
				 cfg->cluster.scheduler_port, NULL,
				 c.self.endpoint, sizeof(c.self.endpoint));
	if (rc != PS_OK) {
		PS_ERROR("cannot listen on %s:%d: %s",
			 cfg->cluster.scheduler_host,
			 cfg->cluster.scheduler_port, ps_strerror(rc));
		goto out;
	}
	PS_INFO("job %016llx: listening on %s, waiting for %u server(s) and "
		"%u worker(s)", (unsigned long long)c.job_id, c.self.endpoint,
		c.servers, c.workers);
	if (psi_sched_announce_port(&c, ready_fd) != PS_OK)
		goto out;
	rc = psi_sched_registration(&c);
	if (rc == PS_OK)
		rc = psi_sched_assign_ids(&c);
	if (rc == PS_OK)
		rc = psi_sched_open_resume(&c);
	if (rc == PS_OK)
		rc = psi_sched_prepare_checkpoints(&c);
	if (rc == PS_OK)
		rc = psi_sched_load_model(&c);
	if (rc == PS_OK)
		rc = psi_sched_choose_sizes(&c);
	if (rc == PS_OK)
		rc = psi_sched_plan_job(&c);
	if (rc == PS_OK)
		psi_sched_say_orders(&c);
	if (rc == PS_OK)
		rc = psi_sched_send_welcomes(&c);
	if (rc != PS_OK) {
		if (rc != PS_EABORTED && rc != PS_ETIMEDOUT && rc != PS_EINTR)
			psi_sched_abort_job(
			    &c, "the scheduler failed to start the job");
		goto out;
	}
	c.started_ms = ps_now_ms();
	for (uint32_t i = 1; i <= c.servers + c.workers; i++)
		ps_membership_heard(c.ms, i, c.started_ms);
	psi_sched_start_refining(&c);
	psi_sched_timings_start(&c);
	rc = running(&c);
	if (rc != PS_OK)
		goto out;
	psi_sched_say_measured(&c);
	psi_sched_print_summary(&c);
	for (uint32_t i = 1; i <= c.servers + c.workers; i++)
		psi_sched_send_msg(&c, c.members[i].peer, PS_MSG_SHUTDOWN, 0,
				   NULL, 0);
	status = 0;
out:
	if (status != 0 && ps_signal_pending())
		status = ps_signal_exit_status(ps_signal_pending());
	ps_signals_set_wake(NULL);
	if (c.progress_fd > STDERR_FILENO) /* fd 1 under ps-launch --hosts */
		close(c.progress_fd);
	ps_transport_destroy(&c.t, 2000);
	ps_dag_free(&c.dag);
	ps_placement_free(&c.placement);
	free(c.priority);
	free(c.push_priority);
	ps_membership_destroy(&c.ms);
	if (c.bcast)
		bcast_unref(NULL, c.bcast);
	ps_stop_round_free(&c.stop);
	ps_ckpt_sched_free(&c.ckpt);
	psi_sched_measured_free(&c);
	free(c.members);
	return status;
}
