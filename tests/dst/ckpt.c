/*
 * tests/dst/ckpt.c - checkpoints in the deterministic simulation (dst.c).
 *
 * In one seed of three (its own generator: the other seeds replay as
 * before) the job takes checkpoints: periodic ones every 1-3 iterations
 * (or none), one asked for on demand at a random step (or none), and,
 * where the seed has a tuner's stop, the stop's own. Each server runs the
 * real machine of its side (proto/checkpoint_take.h): it takes each
 * partition into the checkpoint being collected when the machine says so
 * (a copy of its values), writes the complete one on a disk that finishes
 * at a random step (an action of its own; in one such seed of four a
 * write fails now and then), answers CKPT_DONE, or CKPT_LATE where a
 * partition has passed the iteration asked, and, once every worker is
 * done, finishes its writes and answers FLUSH. The scheduler counts the
 * answers with the real machine of its side (proto/checkpoint_sched.h):
 * it asks the servers that hold nothing for their empty shards when a
 * round opens, asks again further on after a CKPT_LATE, writes a manifest
 * when every server has answered and ends the job once every FLUSH is
 * answered, as ps-scheduler does (scheduler/checkpoints.c).
 *
 * Checked:
 *  - every shard written holds each of its server's partitions at exactly
 *    the checkpoint's iteration: its version, and values exactly the
 *    closed form there (--fault ckpt-any-version, a machine that takes a
 *    partition at whatever version it has, shows the check can fail);
 *  - a manifest is written only when every server has its shard of that
 *    iteration on disk (--fault ckpt-per-message, rounds that count
 *    answers per message, so that a server's repeated answer stands in
 *    for another's, shows it can fail: 2 of the first 200 seeds);
 *  - the servers all flush, and nothing hangs;
 *  - where no write fails, no request is made and no stop asked, every
 *    periodic checkpoint up to the end has its manifest (or its round
 *    was given up for newer ones, as the scheduler says); where the job
 *    stops, the checkpoint it stops at has its manifest.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ordo/error.h"
#include "dst/dst.h"

static uint32_t sched_node(const job *j)
{
	return j->W + j->S;
}

static uint64_t bit(uint64_t it)
{
	return it < 64 ? 1ull << it : 0;
}

static void tensor_offsets(job *j)
{
	j->tensor_off[0] = 0;
	for (uint32_t t = 0; t < j->T; t++)
		j->tensor_off[t + 1] = j->tensor_off[t] + j->pl->tensors[t].numel;
}

int dst_ckpt_resume_base(job *j)
{
	tensor_offsets(j);
	j->base = calloc(j->P, sizeof(float *));
	if (!j->base)
		return PS_ENOMEM;
	for (uint32_t p = 0; p < j->P; p++) {
		uint64_t n = j->pl->parts[p].numel;
		j->base[p] = malloc(n * sizeof(float));
		if (!j->base[p])
			return PS_ENOMEM;
		for (uint64_t e = 0; e < n; e++) {
			uint32_t t;
			uint64_t o;
			dst_locate(j, p, e, &t, &o);
			j->base[p][e] = j->from[j->tensor_off[t] + o];
		}
	}
	return PS_OK;
}

int dst_ckpt_setup(job *j)
{
	tensor_offsets(j);
	j->krng = j->gen_seed ^ 0xc4ec4b01d5ull;
	int faulty = j->fault == FAULT_CKPT_ANY_VERSION ||
		     j->fault == FAULT_CKPT_PER_MESSAGE;

	if (rng_below(&j->krng, 3) != 0 && !faulty)
		return PS_OK;
	j->ckpt = 1;
	j->every = rng_below(&j->krng, 4);
	if (rng_below(&j->krng, 2) == 0)
		j->ckpt_at = 1 + rng_below(&j->krng, 200);
	j->disk_faults = rng_below(&j->krng, 4) == 0;
	if (faulty) {
		j->every = 1;
		j->disk_faults = 0;
	}
	if (ps_ckpt_sched_init(&j->cs, j->S) != PS_OK)
		return PS_ENOMEM;
	if (j->fault == FAULT_CKPT_PER_MESSAGE)
		j->cs.rounds.fault = PS_CKPT_ROUND_FAULT_PER_MESSAGE;
	for (uint32_t s = 0; s < j->S; s++) {
		srv *v = &j->s[s];
		uint32_t n = ps_sproto_nparts(v->sh);
		int rc = ps_ckpt_take_init(&v->ck, v->sh, j->W, 0, j->every);

		if (rc != PS_OK)
			return rc;
		if (j->fault == FAULT_CKPT_ANY_VERSION)
			v->ck.fault = PS_CKPT_TAKE_FAULT_ANY_VERSION;
		/* the checkpoint resumed from is not taken again */
		ps_ckpt_take_resumed(&v->ck, j->start);
		v->col = calloc(n + 1, sizeof(float *));
		v->wr = calloc(n + 1, sizeof(float *));
		v->col_version = calloc(n + 1, sizeof(uint64_t));
		v->wr_version = calloc(n + 1, sizeof(uint64_t));
		if (!v->col || !v->wr || !v->col_version || !v->wr_version)
			return PS_ENOMEM;
		for (uint32_t k = 0; k < n; k++) {
			size_t numel = ps_sproto_part_at(v->sh, k)->desc->numel;
			v->col[k] = calloc(numel, sizeof(float));
			v->wr[k] = calloc(numel, sizeof(float));
			if (!v->col[k] || !v->wr[k])
				return PS_ENOMEM;
		}
	}
	return PS_OK;
}

void dst_ckpt_teardown(job *j)
{
	ps_ckpt_sched_free(&j->cs);
	for (uint32_t p = 0; j->base && p < j->P; p++)
		free(j->base[p]);
	free(j->base);
	j->base = NULL;
	for (uint32_t s = 0; j->s && s < j->S; s++) {
		srv *v = &j->s[s];
		uint32_t n = v->sh ? ps_sproto_nparts(v->sh) : 0;

		for (uint32_t k = 0; k < n && v->col; k++) {
			free(v->col[k]);
			free(v->wr[k]);
		}
		free(v->col);
		free(v->wr);
		free(v->col_version);
		free(v->wr_version);
		ps_ckpt_take_free(&v->ck);
	}
}

/* ---- a server ----------------------------------------------------------- */

static int write_if_complete(job *j, uint32_t s)
{
	srv *v = &j->s[s];
	float **c = v->col;
	uint64_t *cv = v->col_version;

	if (!ps_ckpt_take_can_write(&v->ck))
		return PS_OK;
	/* the collected copies become the ones being written */
	v->col = v->wr;
	v->col_version = v->wr_version;
	v->wr = c;
	v->wr_version = cv;
	ps_ckpt_take_write(&v->ck);
	return PS_OK;
}

static int take_if_at(job *j, uint32_t s, uint32_t k)
{
	srv *v = &j->s[s];
	const ps_sproto_part *sp = ps_sproto_part_at(v->sh, k);

	if (!ps_ckpt_take_wants(&v->ck, k))
		return PS_OK;
	memcpy(v->col[k], v->values[k], sp->desc->numel * sizeof(float));
	v->col_version[k] = sp->version;
	ps_ckpt_take_took(&v->ck, k);
	return write_if_complete(j, s);
}

int dst_ckpt_writing(const job *j, uint32_t s)
{
	return j->ckpt && j->s[s].ck.writing != 0;
}

/* The write of server s's shard finishes (or fails): the copies must be
 * the checkpoint's iteration, exactly. */
int dst_ckpt_finish_write(job *j, uint32_t s)
{
	srv *v = &j->s[s];
	uint64_t it = v->ck.writing;
	int failed = j->disk_faults && rng_below(&j->krng, 4) == 0;

	for (uint32_t k = 0; k < ps_sproto_nparts(v->sh); k++) {
		const ps_sproto_part *sp = ps_sproto_part_at(v->sh, k);
		if (v->wr_version[k] != it)
			return fail(j, "server %u's shard of checkpoint %" PRIu64
				    " holds partition %u at version %" PRIu64,
				    s, it, sp->index, v->wr_version[k]);
		for (uint64_t e = 0; e < sp->desc->numel; e++)
			if ((double)v->wr[k][e] != expected(j, sp->index, e, it))
				return fail(j, "server %u's shard of checkpoint "
					    "%" PRIu64 ": partition %u element "
					    "%" PRIu64 " is %g, not %g", s, it,
					    sp->index, e, (double)v->wr[k][e],
					    expected(j, sp->index, e, it));
	}
	if (!failed && it < 64) {
		/* on disk, in tensor order (a resumed job reads it) */
		if (!j->disk[it])
			j->disk[it] = calloc(j->tensor_off[j->T] + 1,
					     sizeof(float));
		if (!j->disk[it])
			return PS_ENOMEM;
		for (uint32_t k = 0; k < ps_sproto_nparts(v->sh); k++) {
			const ps_sproto_part *sp = ps_sproto_part_at(v->sh, k);
			for (uint64_t e = 0; e < sp->desc->numel; e++) {
				uint32_t t;
				uint64_t o;
				dst_locate(j, sp->index, e, &t, &o);
				j->disk[it][j->tensor_off[t] + o] = v->wr[k][e];
			}
		}
		v->on_disk |= bit(it);
	}
	if (j->verbose)
		fprintf(stderr, "  step %" PRIu64 ": server %u's shard of "
			"checkpoint %" PRIu64 " %s\n", j->steps, s, it,
			failed ? "failed" : "written");
	ps_ckpt_take_written(&v->ck);
	int rc = send_msg(j, j->W + s, sched_node(j), M_CKPT_DONE, 0, it,
			  failed, NULL);
	return rc == PS_OK ? write_if_complete(j, s) : rc;
}

/* What the machine says of iteration it (due, or asked for), carried out
 * as server/snapshot.c does. */
static int server_step(job *j, uint32_t s, uint64_t it, int requested)
{
	srv *v = &j->s[s];
	uint64_t top;
	int rc;

	for (;;) {
		ps_ckpt_step st = requested
				      ? ps_ckpt_take_request(&v->ck, it, &top)
				      : ps_ckpt_take_due(&v->ck, it);
		switch (st) {
		case PS_CKPT_COLLECT:
			for (uint32_t k = 0; k < ps_sproto_nparts(v->sh); k++) {
				rc = take_if_at(j, s, k);
				if (rc != PS_OK)
					return rc;
			}
			return write_if_complete(j, s);
		case PS_CKPT_WAIT_WRITE:
			/* ps-server joins its writer: the write ends now */
			if (!v->ck.writing)
				return fail(j, "server %u: checkpoint %" PRIu64
					    " waits for a write, and none is "
					    "in progress", s, it);
			rc = dst_ckpt_finish_write(j, s);
			if (rc != PS_OK)
				return rc;
			continue;
		case PS_CKPT_LATE:
			return send_msg(j, j->W + s, sched_node(j), M_CKPT_LATE,
					0, top, 0, NULL);
		default: /* NOTHING, SKIPPED, JOINED */
			return PS_OK;
		}
	}
}

int dst_ckpt_updated(job *j, uint32_t s, uint32_t k)
{
	srv *v = &j->s[s];
	int rc;

	if (!j->ckpt)
		return PS_OK;
	rc = server_step(j, s, ps_sproto_part_at(v->sh, k)->version, 0);
	return rc == PS_OK ? take_if_at(j, s, k) : rc;
}

int dst_ckpt_server_receive(job *j, uint32_t s, const msg *m)
{
	srv *v = &j->s[s];
	int rc;

	if (!j->ckpt || m->from != sched_node(j))
		return fail(j, "server %u received %s from node %u", s,
			    msg_names[m->type], m->from);
	if (m->type == M_CKPT)
		return server_step(j, s, m->iteration, 1);
	/* FLUSH: the writes finish; one still collected is given up */
	while (v->ck.writing) {
		rc = dst_ckpt_finish_write(j, s);
		if (rc != PS_OK)
			return rc;
	}
	if (v->ck.collect) {
		uint64_t it = v->ck.collect;
		if (ps_ckpt_take_drop(&v->ck)) {
			rc = send_msg(j, j->W + s, sched_node(j), M_CKPT_DONE, 0,
				      it, 1, NULL);
			if (rc != PS_OK)
				return rc;
		}
	}
	return send_msg(j, j->W + s, sched_node(j), M_FLUSHED, 0, 0, 0, NULL);
}

/* ---- the scheduler ------------------------------------------------------ */

int dst_ckpt_send_asks(job *j, uint64_t v)
{
	int rc = PS_OK;

	for (uint32_t s = 0; j->ckpt && s < j->S && rc == PS_OK; s++)
		rc = send_msg(j, sched_node(j), j->W + s, M_CKPT, 0, v, 0, NULL);
	return rc;
}

static uint64_t highest_progress(const job *j)
{
	uint64_t highest = 0;

	for (uint32_t w = 0; w < j->W; w++)
		if (j->progress[w] > highest)
			highest = j->progress[w];
	return highest;
}

uint64_t dst_ckpt_ask_iteration(job *j, uint64_t late)
{
	return ps_ckpt_sched_ask(&j->cs, highest_progress(j), late);
}

int dst_ckpt_ask(job *j, uint64_t late)
{
	uint64_t v = dst_ckpt_ask_iteration(j, late);

	if (j->verbose)
		fprintf(stderr, "  step %" PRIu64 ": the scheduler asks for "
			"checkpoint %" PRIu64 " (heard %" PRIu64 ", late %" PRIu64
			")\n", j->steps, v, highest_progress(j), late);
	return v ? dst_ckpt_send_asks(j, v) : PS_OK; /* 0: given up */
}

/* A new round asks the servers that hold nothing for their empty shards
 * (again FLUSHed where the flush began), as scheduler/checkpoints.c. */
static int ask_empty(job *j, uint64_t it)
{
	int rc = PS_OK;

	for (uint32_t s = 0; s < j->S && rc == PS_OK; s++) {
		if (ps_sproto_nparts(j->s[s].sh) != 0)
			continue;
		rc = send_msg(j, sched_node(j), j->W + s, M_CKPT, 0, it, 0, NULL);
		if (rc == PS_OK && j->cs.flushing) {
			ps_ckpt_sched_reflush(&j->cs, s);
			rc = send_msg(j, sched_node(j), j->W + s, M_FLUSH, 0, 0, 0,
				      NULL);
		}
	}
	return rc;
}

static int shard_answered(job *j, uint32_t s, const msg *m)
{
	ps_ckpt_done d;
	int rc;

	if (ps_ckpt_sched_on_done(&j->cs, s, m->iteration, m->priority == 0,
				  &d) != PS_OK)
		return fail(j, "server %u answered checkpoint 0", s);
	j->abandoned |= bit(d.abandoned);
	rc = d.ask_empty ? ask_empty(j, m->iteration) : PS_OK;
	if (rc != PS_OK)
		return rc;
	if (d.answer == PS_CKPT_ANSWER_BAD_RANK)
		return fail(j, "the rounds refused server %u's rank", s);
	if (!d.manifest)
		return PS_OK; /* (REPEATED: written again, asked once more) */
	/* the manifest: every server's shard must be on disk */
	for (uint32_t r = 0; r < j->S; r++)
		if (!(j->s[r].on_disk & bit(m->iteration)))
			return fail(j, "the manifest of checkpoint %" PRIu64
				    " is written while server %u has no shard "
				    "of it on disk", m->iteration, r);
	if (j->verbose)
		fprintf(stderr, "  step %" PRIu64 ": checkpoint %" PRIu64
			" complete\n", j->steps, m->iteration);
	j->manifests |= bit(m->iteration);
	return PS_OK;
}

int dst_ckpt_sched_receive(job *j, const msg *m)
{
	uint32_t s = m->from - j->W;
	int rc;

	if (!j->ckpt)
		return fail(j, "the scheduler got %s without checkpoints",
			    msg_names[m->type]);
	switch (m->type) {
	case M_CKPT_DONE:
		return shard_answered(j, s, m);
	case M_CKPT_LATE:
		if (!ps_ckpt_sched_on_late(&j->cs, m->iteration))
			return PS_OK;
		return j->stopping ? sched_ask_stop(j, m->iteration)
				   : dst_ckpt_ask(j, m->iteration);
	default: /* FLUSHED */
		rc = ps_ckpt_sched_on_flushed(&j->cs, s);
		if (rc < 0)
			return fail(j, "server %u sent FLUSHED unasked", s);
		j->flushed = rc == 1;
		return PS_OK;
	}
}

int dst_ckpt_all_done(job *j)
{
	if (!j->ckpt)
		return PS_OK;
	ps_ckpt_sched_flush(&j->cs);
	for (uint32_t s = 0; s < j->S; s++) {
		int rc = send_msg(j, sched_node(j), j->W + s, M_FLUSH, 0, 0, 0,
				  NULL);
		if (rc != PS_OK)
			return rc;
	}
	return PS_OK;
}

int dst_ckpt_check_end(job *j, uint64_t end)
{
	if (!j->ckpt)
		return PS_OK;
	if (!j->flushed)
		return fail(j, "deadlock: nothing can happen, and the servers "
			    "have not all answered FLUSH");
	if (j->disk_faults)
		return PS_OK;
	if (end < j->K && !((j->manifests | j->abandoned) & bit(end)))
		return fail(j, "the job stopped before iteration %" PRIu64
			    ", and that checkpoint is not complete", end);
	if (j->ckpt_at || j->stop_at || !j->every)
		return PS_OK;
	/* (a resumed job's start and before were not its to take) */
	for (uint64_t it = (j->start / j->every + 1) * j->every; it <= end;
	     it += j->every)
		if (!((j->manifests | j->abandoned) & bit(it)))
			return fail(j, "periodic checkpoint %" PRIu64 " (every "
				    "%" PRIu64 ") is not complete at the end",
				    it, j->every);
	return PS_OK;
}

/* ---- a resumed job ------------------------------------------------------ */

void dst_ckpt_free_disk(job *j)
{
	for (int i = 0; i < 64; i++) {
		free(j->disk[i]);
		j->disk[i] = NULL;
	}
}

int dst_ckpt_run_resumed(const job *j, int (*run)(job *), job *r)
{
	uint64_t x = j->gen_seed ^ 0x2e5a3edull, v = 0;

	if (j->start || !j->ckpt || j->failure[0] || rng_below(&x, 2))
		return PS_OK;
	/* the newest complete checkpoint the job had not ended at */
	for (uint64_t it = 1; it < 64 && it < j->K; it++)
		if (j->manifests & bit(it) && j->disk[it])
			v = it;
	if (!v)
		return PS_OK;
	*r = (job){.seed = j->seed,
		   .fault = j->fault,
		   .verbose = j->verbose,
		   .start = v,
		   .from = j->disk[v],
		   .from_T = j->T,
		   .from_W = j->W};
	memcpy(r->from_numel, j->from_numel, sizeof(r->from_numel));
	if (j->verbose)
		fprintf(stderr, "seed %" PRIu64 ": a job resumed from checkpoint "
			"%" PRIu64 "\n", j->seed, v);
	return run(r);
}
