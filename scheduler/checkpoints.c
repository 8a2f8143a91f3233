/*
 * scheduler/checkpoints.c - the job's checkpoints as the scheduler
 * coordinates them: the checkpoint.resume the job starts from and
 * checkpoint.dir, checked before the WELCOME; a checkpoint on demand
 * (SIGUSR1, or a tuner's stop, with the workers' STOP) a little ahead of
 * the fastest node, asked again further on when a server is already
 * past it (CKPT_LATE); each server's CKPT_DONE counted and the manifest
 * written once every server has answered; the servers' FLUSH once every
 * worker is done (the decisions are proto/checkpoint_sched.h's); and,
 * when the job fails, the checkpoint it can be resumed from.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/checkpoint.h"
#include "common/log.h"
#include "runtime/node.h"
#include "proto/wire.h"
#include "proto/checkpoint_sched.h"
#include "transport/transport.h"
#include "scheduler/state.h"

/* The checkpoint.resume the job starts from, checked before anyone is
 * WELCOMEd: the tensors the workers declared must be the checkpoint's. */
int psi_sched_open_resume(coord *c)
{
	const ps_config *cfg = c->cfg;
	char dir[PS_CKPT_PATH_MAX], why[PS_CKPT_PATH_MAX + 512];
	char reason[sizeof(why) + 64];
	const ps_ckpt_meta *m;
	ps_ckpt *ck = NULL;
	const char *mode = ps_config_enum_name("train.mode", cfg->train.mode);
	int rc;

	if (!cfg->checkpoint.resume[0])
		return PS_OK;
	if (strcmp(cfg->checkpoint.resume, "latest") == 0) {
		rc = ps_ckpt_latest(cfg->checkpoint.dir, dir, sizeof(dir),
				    NULL);
		if (rc != PS_OK) {
			snprintf(reason, sizeof(reason), "checkpoint.resume = "
				 "latest: no complete checkpoint under %s",
				 cfg->checkpoint.dir);
			psi_sched_abort_job(c, reason);
			return PS_EABORTED;
		}
	} else {
		snprintf(dir, sizeof(dir), "%s", cfg->checkpoint.resume);
	}
	rc = ps_ckpt_open(dir, &ck, why, sizeof(why));
	if (rc == PS_OK)
		rc = ps_ckpt_check_model(ck, c->tensors, c->ntensors, why,
					 sizeof(why));
	if (rc == PS_OK && strcmp(ps_ckpt_info(ck)->mode, mode) != 0) {
		snprintf(why, sizeof(why), "%s was written in train.mode = %s, "
			 "the job runs %s", dir, ps_ckpt_info(ck)->mode, mode);
		rc = PS_EINVAL;
	}
	if (rc == PS_OK && ps_ckpt_info(ck)->iteration == 0) {
		snprintf(why, sizeof(why), "%s holds iteration 0", dir);
		rc = PS_EINVAL;
	}
	if (rc != PS_OK) {
		ps_ckpt_close(&ck);
		snprintf(reason, sizeof(reason), "cannot resume: %s", why);
		psi_sched_abort_job(c, reason);
		return PS_EABORTED;
	}
	m = ps_ckpt_info(ck);
	c->start_iteration = m->iteration;
	printf("checkpoint: resuming at iteration %llu from %s (written by "
	       "%u worker(s) x %u server(s), partition %llu B, preset %s)\n",
	       (unsigned long long)m->iteration, dir, m->workers, m->servers,
	       (unsigned long long)m->partition_size, m->preset);
	fflush(stdout);
	ps_ckpt_close(&ck);
	return PS_OK;
}

/* checkpoint.dir before anything is written there: writable, no leftovers
 * of a run that died while writing, and no checkpoint of another history
 * newer than where this job starts (a crash of this run would otherwise
 * resume from it). */
int psi_sched_prepare_checkpoints(coord *c)
{
	const char *root = c->cfg->checkpoint.dir;
	char why[PS_CKPT_PATH_MAX + 512], reason[sizeof(why) + 400];
	uint64_t newer;
	uint32_t removed;

	if (!root[0])
		return PS_OK;
	if (ps_ckpt_prepare_root(root, c->start_iteration, &newer, &removed,
				 why, sizeof(why)) != PS_OK) {
		snprintf(reason, sizeof(reason), "checkpoint.dir: %s", why);
		psi_sched_abort_job(c, reason);
		return PS_EABORTED;
	}
	if (removed)
		PS_WARN("checkpoint.dir: removed %u incomplete checkpoint(s) "
			"above iteration %llu (a run died while writing them)",
			removed, (unsigned long long)c->start_iteration);
	if (newer) {
		snprintf(reason, sizeof(reason), "checkpoint.dir %s holds "
			 "checkpoint %llu, newer than the iteration this job "
			 "starts at (%llu): resume from it "
			 "(checkpoint.resume=latest), or move it away or use "
			 "another checkpoint.dir, so that two runs' checkpoints "
			 "are not mixed", root, (unsigned long long)newer,
			 (unsigned long long)c->start_iteration);
		psi_sched_abort_job(c, reason);
		return PS_EABORTED;
	}
	return PS_OK;
}

static void send_server(coord *c, uint32_t rank, uint32_t type,
			uint64_t iteration)
{
	psi_sched_send_iteration(c, c->members[1 + rank].peer, type, iteration);
}

static void send_servers(coord *c, uint32_t type, uint64_t iteration)
{
	for (uint32_t r = 0; r < c->servers; r++)
		send_server(c, r, type, iteration);
}

static void send_workers(coord *c, uint32_t type, uint64_t iteration)
{
	for (uint32_t r = 0; r < c->workers; r++)
		psi_sched_send_iteration(c,
					 c->members[1 + c->servers + r].peer,
					 type, iteration);
}

/* A tuner's stop: the workers are to stop before iteration v, each
 * waiting there until all are (proto/stop.h); PS_STOP_NEVER calls it
 * off. */
static void send_stops(coord *c, uint64_t v)
{
	if (v == PS_STOP_NEVER)
		ps_stop_round_cancel(&c->stop);
	else
		ps_stop_round_start(&c->stop, v);
	send_workers(c, PS_MSG_STOP, v);
	if (v != PS_STOP_NEVER)
		psi_sched_send_tuner(c, PS_MSG_STOP, v);
}

/* SIGUSR1 or a tuner's stop: a checkpoint a little ahead of the fastest
 * server and worker (with a stop, the workers stop there). */
void psi_sched_request_checkpoint(coord *c, uint64_t late)
{
	uint64_t highest = 0, last = c->ckpt.asked, v;
	uint32_t n = 1 + c->servers + c->workers;

	for (uint32_t i = 1; i < n; i++)
		if (c->members[i].progress > highest)
			highest = c->members[i].progress;
	v = ps_ckpt_sched_ask(&c->ckpt, highest, late);
	if (!v) {
		PS_ERROR("checkpoint: the %s keep passing the iteration asked "
			 "for (last %llu); giving up this request%s",
			 c->tuner.stopping ? "servers or workers" : "servers",
			 (unsigned long long)last,
			 c->tuner.stopping ? ", and the stop: the job goes on"
					   : "");
		if (c->tuner.stopping) {
			c->tuner.stopping = 0;
			send_stops(c, PS_STOP_NEVER);
		}
		return;
	}
	PS_INFO("checkpoint requested at iteration %llu%s",
		(unsigned long long)v,
		c->tuner.stopping ? "; the job stops there" : "");
	send_servers(c, PS_MSG_CKPT, v);
	if (c->tuner.stopping)
		send_stops(c, v);
}

void psi_sched_stop_answer(coord *c, const member *m,
			   const ps_wire_header *h)
{
	char why[256];
	int rc;

	if (h->type == PS_MSG_STOP_LATE) {
		/* a worker began the iteration asked: a later one, unless an
		 * answer to an older stop */
		if (c->tuner.stopping && !c->ckpt.flushing &&
		    ps_stop_round_on_late(&c->stop, h->iteration))
			psi_sched_request_checkpoint(c, h->iteration);
		return;
	}
	rc = ps_stop_round_on_ready(&c->stop, m->info.rank, h->iteration, why,
				    sizeof(why));
	if (rc == PS_EPROTO) {
		psi_note_drop(++c->dropped, "STOP_READY", why);
		return;
	}
	if (rc != 1)
		return;
	PS_INFO("every worker waits before iteration %llu: the job stops "
		"there", (unsigned long long)c->stop.target);
	send_workers(c, PS_MSG_STOP_NOW, c->stop.target);
}

static void write_manifest(coord *c, uint64_t iteration)
{
	const ps_config *cfg = c->cfg;
	char dir[PS_CKPT_PATH_MAX], why[PS_CKPT_PATH_MAX + 512];
	char *ini = NULL;
	size_t inilen = 0;
	FILE *f = open_memstream(&ini, &inilen);
	ps_ckpt_meta meta = {
		.iteration = iteration,
		.mode = ps_config_enum_name("train.mode", cfg->train.mode),
		.workers = c->workers,
		.servers = c->servers,
		.partition_size = cfg->scheduling.partition_size,
		.preset = ps_config_enum_name("scheduling.preset",
					      cfg->scheduling.preset),
		.seed = cfg->train.seed,
	};
	int rc;

	if (f) {
		ps_config_write_ini(cfg, f);
		fclose(f);
	}
	meta.config_ini = ini ? ini : "";
	rc = ps_ckpt_path(cfg->checkpoint.dir, iteration, dir, sizeof(dir));
	if (rc == PS_OK)
		rc = ps_ckpt_write_manifest(dir, &meta, c->tensors, c->ntensors,
					    c->servers, why, sizeof(why));
	free(ini);
	if (rc != PS_OK) {
		PS_ERROR("checkpoint %llu is not complete: %s",
			 (unsigned long long)iteration, why);
		return;
	}
	printf("checkpoint: iteration %llu complete in %s\n",
	       (unsigned long long)iteration, dir);
	fflush(stdout);
	if (ps_ckpt_prune(cfg->checkpoint.dir, (uint32_t)cfg->checkpoint.keep,
			  why, sizeof(why)) != PS_OK)
		PS_WARN("checkpoint.keep: %s", why);
}

/* Servers that hold no partition take no update, so nothing makes a
 * periodic checkpoint come due for them: they are asked for their
 * (empty) shards when its round opens, and FLUSHed again where the flush
 * began (they may have flushed already). */
static void ask_empty(coord *c, uint64_t iteration)
{
	for (uint32_t r = 0; r < c->servers; r++) {
		if (c->placement->server_bytes[r] != 0)
			continue;
		send_server(c, r, PS_MSG_CKPT, iteration);
		if (c->ckpt.flushing) {
			ps_ckpt_sched_reflush(&c->ckpt, r);
			send_server(c, r, PS_MSG_FLUSH, 0);
		}
	}
}

/* CKPT_DONE: a server's shard is durable (or failed). Counted once per
 * server: the manifest is written when every server has answered. */
static void shard_written(coord *c, const member *m, const ps_msg *msg,
			  const ps_wire_header *h)
{
	ps_ckpt_done d;

	if (ps_ckpt_sched_on_done(&c->ckpt, m->info.rank, h->iteration,
				  h->key == 0, &d) != PS_OK)
		return; /* checkpoint 0: none */
	if (d.abandoned)
		PS_WARN("checkpoint %llu abandoned: too many checkpoints in "
			"progress", (unsigned long long)d.abandoned);
	if (d.ask_empty)
		ask_empty(c, h->iteration);
	if (d.answer == PS_CKPT_ANSWER_REPEATED ||
	    d.answer == PS_CKPT_ANSWER_BAD_RANK) {
		psi_note_drop(++c->dropped, "CKPT_DONE",
			      "the server answered that checkpoint already");
		return;
	}
	if (h->key != 0) {
		char reason[PS_REASON_MAX], why[256];
		if (ps_wire_reason_decode(msg->payload, msg->payload_len,
					  reason, sizeof(reason), why,
					  sizeof(why)) != PS_OK)
			snprintf(reason, sizeof(reason), "(no reason)");
		PS_ERROR("checkpoint %llu failed on server %u: %s",
			 (unsigned long long)h->iteration, m->info.rank,
			 reason);
	}
	if (d.manifest)
		write_manifest(c, h->iteration);
}

/* Checkpoint messages from servers: PS_ECLOSED once every server has
 * flushed after the last worker finished. */
int psi_sched_handle_checkpoint(coord *c, member *m, const ps_msg *msg,
				const ps_wire_header *h)
{
	if (m->info.role != PS_ROLE_SERVER || !c->cfg->checkpoint.dir[0]) {
		psi_note_drop(++c->dropped, ps_msg_type_name(h->type),
			      "not a server, or no checkpoint.dir");
		return PS_OK;
	}
	switch (h->type) {
	case PS_MSG_CKPT_DONE:
		shard_written(c, m, msg, h);
		return PS_OK;
	case PS_MSG_CKPT_LATE:
		if (ps_ckpt_sched_on_late(&c->ckpt, h->iteration))
			psi_sched_request_checkpoint(c, h->iteration);
		return PS_OK;
	default: /* FLUSHED */
		switch (ps_ckpt_sched_on_flushed(&c->ckpt, m->info.rank)) {
		case 1:
			return PS_ECLOSED;
		case 0:
			return PS_OK;
		default:
			psi_note_drop(++c->dropped, "FLUSHED", "not asked for");
			return PS_OK;
		}
	}
}

/* Every worker is done: with checkpoints, servers finish writing first. */
int psi_sched_job_done(coord *c)
{
	if (!c->cfg->checkpoint.dir[0])
		return PS_ECLOSED;
	ps_ckpt_sched_flush(&c->ckpt);
	send_servers(c, PS_MSG_FLUSH, 0);
	return PS_OK;
}

/* A failed job: where a supervisor (Slurm's --requeue, systemd...) can
 * restart it from. */
void psi_sched_say_resume_from(const coord *c)
{
	char dir[PS_CKPT_PATH_MAX];
	uint64_t it;

	if (!c->cfg->checkpoint.dir[0])
		return;
	if (ps_ckpt_latest(c->cfg->checkpoint.dir, dir, sizeof(dir), &it) ==
	    PS_OK)
		PS_ERROR("to resume, start the job again with --set "
			 "checkpoint.resume=%s (iteration %llu) or "
			 "checkpoint.resume=latest", dir,
			 (unsigned long long)it);
	else
		PS_ERROR("no complete checkpoint under %s yet: a restart "
			 "starts from the beginning", c->cfg->checkpoint.dir);
}
