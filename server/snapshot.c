/*
 * server/snapshot.c - a server's side of checkpoints (snapshot.h).
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/memory.h"
#include "runtime/clock.h"
#ifdef PS_WITH_CUDA
#include "server/gpu.h"
#endif
#include "server/snapshot.h"

static int async(const server *s)
{
	return s->cfg->train.mode == PS_MODE_ASYNC;
}

/* The directory of the checkpoint the job resumes from. */
static int resume_dir(const server *s, uint64_t iteration, char *buf,
		      size_t cap)
{
	const ps_config *cfg = s->cfg;

	if (strcmp(cfg->checkpoint.resume, "latest") == 0)
		return ps_ckpt_path(cfg->checkpoint.dir, iteration, buf, cap);
	if ((size_t)snprintf(buf, cap, "%s", cfg->checkpoint.resume) >= cap)
		return PS_EINVAL;
	return PS_OK;
}

/* The pieces of tensors a partition holds: one, or one per fused tensor.
 * Calls fn(ud, tensor, offset in the tensor, offset in the partition,
 * numel) for each. */
typedef int piece_fn(void *ud, uint32_t tensor, uint64_t tensor_offset,
		     uint64_t part_offset, uint64_t numel);

static int for_each_piece(const ps_placement *pl, const ps_partition *d,
			  piece_fn *fn, void *ud)
{
	int rc = PS_OK;

	if (d->ntensors <= 1)
		return fn(ud, d->tensor, d->offset, 0, d->numel);
	for (uint32_t t = d->tensor; t < d->tensor + d->ntensors && rc == PS_OK;
	     t++)
		rc = fn(ud, t, 0, pl->tensor_base[t], pl->tensors[t].numel);
	return rc;
}

typedef struct load_ctx {
	ps_ckpt_range *ranges;
	size_t n;
	float *values, *momentum, *second; /* the partition's (second may be
					    * NULL: not kept) */
} load_ctx;

static int add_range(void *ud, uint32_t tensor, uint64_t tensor_offset,
		     uint64_t part_offset, uint64_t numel)
{
	load_ctx *l = ud;

	l->ranges[l->n++] = (ps_ckpt_range){
		.tensor = tensor,
		.offset = tensor_offset,
		.numel = numel,
		.values = l->values + part_offset,
		.momentum = l->momentum + part_offset,
		.second = l->second ? l->second + part_offset : NULL,
	};
	return PS_OK;
}

static size_t count_pieces(const server *s)
{
	size_t n = 0;

	for (uint32_t k = 0; k < s->nparts; k++)
		n += s->parts[k].desc->ntensors > 1 ? s->parts[k].desc->ntensors
						    : 1;
	return n;
}

int ps_snapshot_load(server *s)
{
	const ps_placement *pl = s->node.welcome.placement;
	uint64_t it = s->node.welcome.start_iteration;
	char dir[PS_CKPT_PATH_MAX], why[PS_CKPT_PATH_MAX + 512];
	load_ctx l = {0};
	ps_ckpt *ck = NULL;
	int rc;

	rc = resume_dir(s, it, dir, sizeof(dir));
	if (rc != PS_OK) {
		PS_ERROR("checkpoint.resume: path too long");
		return rc;
	}
	rc = ps_ckpt_open(dir, &ck, why, sizeof(why));
	if (rc == PS_OK && ps_ckpt_info(ck)->iteration != it) {
		snprintf(why, sizeof(why), "%s holds iteration %llu, the "
			 "scheduler resumes at %llu", dir,
			 (unsigned long long)ps_ckpt_info(ck)->iteration,
			 (unsigned long long)it);
		rc = PS_EINVAL;
	}
	if (rc == PS_OK)
		rc = ps_ckpt_check_model(ck, pl->tensors, pl->num_tensors, why,
					 sizeof(why));
	if (rc == PS_OK) {
		l.ranges = calloc(count_pieces(s) + 1, sizeof(*l.ranges));
		rc = l.ranges ? PS_OK : PS_ENOMEM;
		snprintf(why, sizeof(why), "out of memory");
	}
	for (uint32_t k = 0; k < s->nparts && rc == PS_OK; k++) {
		shard_part *p = &s->parts[k];
		l.values = p->values->data;
		l.momentum = p->momentum;
		l.second = p->second;
		rc = for_each_piece(pl, p->desc, add_range, &l);
	}
	if (rc == PS_OK)
		rc = ps_ckpt_read_ranges(ck, l.ranges, l.n, why, sizeof(why));
	for (size_t i = 0; i < l.n && rc == PS_OK && !async(s); i++)
		if (l.ranges[i].version != it) {
			snprintf(why, sizeof(why), "%s: tensor %u elements "
				 "%llu.. are at version %llu, not %llu", dir,
				 l.ranges[i].tensor,
				 (unsigned long long)l.ranges[i].offset,
				 (unsigned long long)l.ranges[i].version,
				 (unsigned long long)it);
			rc = PS_EPROTO;
		}
	if (rc == PS_OK) {
		/* ranges are in partition order: a partition's version is the
		 * smallest of its pieces' (async: updates applied) */
		size_t i = 0;
		for (uint32_t k = 0; k < s->nparts; k++) {
			shard_part *p = &s->parts[k];
			uint32_t n = p->desc->ntensors > 1 ? p->desc->ntensors
							   : 1;
			uint64_t v = UINT64_MAX;
			for (uint32_t j = 0; j < n; j++, i++)
				if (l.ranges[i].version < v)
					v = l.ranges[i].version;
			ps_sproto_resume(s->shard, k, async(s) ? v : it, it);
		}
	}
	free(l.ranges);
	ps_ckpt_close(&ck);
	if (rc != PS_OK) {
		PS_ERROR("cannot resume from checkpoint: %s", why);
		return rc;
	}
	s->node.progress = it;
	ps_ckpt_take_resumed(&s->snap.m, it);
	PS_INFO("resumed %u partitions at iteration %llu from %s", s->nparts,
		(unsigned long long)it, dir);
	return PS_OK;
}

/* ---- collecting --------------------------------------------------------- */

static void send_done(server *s, uint64_t iteration, int rc, const char *why)
{
	ps_wire_header h = {.type = PS_MSG_CKPT_DONE,
			    .key = rc == PS_OK ? 0 : 1,
			    .iteration = iteration};
	void *body = NULL;
	size_t len = 0;

	if (rc != PS_OK && ps_wire_reason_encode(why, &body, &len) != PS_OK)
		body = NULL, len = 0;
	rc = ps_node_send(&s->node, 0, &h, body, len,
			  body ? ps_wire_free : NULL, NULL);
	if (rc != PS_OK)
		PS_WARN("cannot report checkpoint %llu to the scheduler: %s",
			(unsigned long long)iteration, ps_strerror(rc));
}

/* Ends a snap's use; keeps its arrays and copy buffers. */
static void clear(snap *c)
{
	free(c->segs);
	c->segs = NULL;
	c->nsegs = 0;
}

/* A slot's arrays and copy buffers, allocated once and touched so that
 * their pages are faulted in here (seconds per GiB on a virtual
 * machine), not while a checkpoint is taken. */
static int prepare_slot(server *s, snap *c)
{
	size_t bytes = s->arena_numel * sizeof(float);

	if (!c->version) {
		c->version = calloc(s->nparts + 1, sizeof(*c->version));
		if (!c->version)
			return PS_ENOMEM;
	}
	if (!c->values && bytes > 0) {
		c->values = ps_alloc_big(bytes);
		c->momentum = ps_alloc_big(bytes);
		if (!c->values || !c->momentum)
			return PS_ENOMEM;
		memset(c->values, 0, bytes);
		memset(c->momentum, 0, bytes);
		if (ps_server_has_second(s)) {
			c->second = ps_alloc_big(bytes);
			if (!c->second)
				return PS_ENOMEM;
			memset(c->second, 0, bytes);
		}
	}
	return PS_OK;
}

int ps_snapshot_init(server *s)
{
	const ps_config *cfg = s->cfg;
	int every = cfg->checkpoint.dir[0] ? cfg->checkpoint.every : 0;
	int rc = ps_ckpt_take_init(&s->snap.m, s->shard, s->workers,
				   cfg->train.mode == PS_MODE_ASYNC,
				   every > 0 ? (uint64_t)every : 0);

	if (rc != PS_OK || !cfg->checkpoint.dir[0])
		return rc;
	rc = prepare_slot(s, &s->snap.slot[0]);
	if (rc != PS_OK)
		PS_ERROR("checkpoints: out of memory for a copy of the shard "
			 "(%.1f MiB)", 2.0 * (double)s->arena_numel *
						sizeof(float) / 1048576.0);
	return rc;
}

typedef struct seg_ctx {
	snap *c;
	uint64_t version;
	const float *values, *momentum, *second; /* second: NULL if not kept */
} seg_ctx;

static int add_segment(void *ud, uint32_t tensor, uint64_t tensor_offset,
		       uint64_t part_offset, uint64_t numel)
{
	seg_ctx *g = ud;

	g->c->segs[g->c->nsegs++] = (ps_ckpt_segment){
		.tensor = tensor,
		.offset = tensor_offset,
		.numel = numel,
		.version = g->version,
		.values = g->values + part_offset,
		.momentum = g->momentum + part_offset,
		.second = g->second ? g->second + part_offset : NULL,
	};
	return PS_OK;
}

static void *writer_main(void *arg)
{
	server *s = arg;
	snap *w = s->snap.write;
	uint64_t t0 = ps_now_ns();

	w->rc = ps_ckpt_write_shard(w->dir, s->node.rank, w->iteration,
				    w->segs, w->nsegs, w->why, sizeof(w->why));
	w->write_ns = ps_now_ns() - t0;
	atomic_store_explicit(&s->snap.finished, 1, memory_order_release);
	ps_node_wake(&s->node);
	return NULL;
}

/* The complete checkpoint goes to a writer thread (none is running). */
static int start_writing(server *s)
{
	const ps_placement *pl = s->node.welcome.placement;
	snapshot *sn = &s->snap;
	snap *c = sn->collect;
	int rc;

	c->segs = calloc(count_pieces(s) + 1, sizeof(*c->segs));
	if (!c->segs)
		return PS_ENOMEM;
	c->nsegs = 0;
	for (uint32_t k = 0; k < s->nparts; k++) {
		size_t at = (size_t)(s->parts[k].momentum - s->momentum_arena);
		seg_ctx g = {.c = c,
			     .version = c->version[k],
			     .values = c->values + at,
			     .momentum = c->momentum + at,
			     .second = c->second ? c->second + at : NULL};
		for_each_piece(pl, s->parts[k].desc, add_segment, &g);
	}
	rc = ps_ckpt_path(s->cfg->checkpoint.dir, c->iteration, c->dir,
			  sizeof(c->dir));
	if (rc != PS_OK)
		return rc;
	atomic_store(&sn->finished, 0);
	sn->write = c;
	if (pthread_create(&sn->writer, NULL, writer_main, s) != 0) {
		sn->write = NULL;
		return PS_ENOMEM;
	}
	sn->collect = NULL;
	ps_ckpt_take_write(&sn->m);
	return PS_OK;
}

/* The checkpoint being collected is given up: training goes on without
 * it. */
static int fail_collecting(server *s, int rc)
{
	snapshot *sn = &s->snap;
	char why[128];

	snprintf(why, sizeof(why), "server %u: %s", s->node.rank,
		 ps_strerror(rc));
	PS_ERROR("checkpoint %llu: %s", (unsigned long long)sn->m.collect,
		 why);
	if (ps_ckpt_take_drop(&sn->m))
		send_done(s, sn->collect->iteration, rc, why);
	if (sn->collect)
		clear(sn->collect);
	sn->collect = NULL;
	return PS_OK;
}

/* Writes the collected checkpoint if it is complete and the disk free. */
static int write_if_complete(server *s)
{
	int rc;

	if (!ps_ckpt_take_can_write(&s->snap.m))
		return PS_OK;
	rc = start_writing(s);
	return rc == PS_OK ? PS_OK : fail_collecting(s, rc);
}

/* Joins the writer and reports its checkpoint; a complete one that
 * waited for it starts being written. */
static void reap(server *s)
{
	snapshot *sn = &s->snap;
	snap *w = sn->write;

	pthread_join(sn->writer, NULL);
	/* what a checkpoint costs: the loop's time taking the partitions
	 * (ps-bench's and bench/checkpoint.sh's stall), the thread's write */
	if (w->rc == PS_OK)
		PS_INFO("checkpoint %llu: shard %u written, %.1f MiB in %.3f s "
			"(%.0f MB/s); taking it held the loop %.3f ms",
			(unsigned long long)w->iteration, s->node.rank,
			(double)w->bytes / 1048576.0, (double)w->write_ns / 1e9,
			w->write_ns ? (double)w->bytes * 1e3 / (double)w->write_ns
				    : 0.0,
			(double)w->take_ns / 1e6);
	else
		PS_ERROR("checkpoint %llu: %s",
			 (unsigned long long)w->iteration, w->why);
	send_done(s, w->iteration, w->rc, w->why);
	clear(w);
	sn->write = NULL;
	ps_ckpt_take_written(&sn->m);
	write_if_complete(s);
}

/* Takes local partition k at its current version. */
static int take(server *s, uint32_t k)
{
	snap *c = s->snap.collect;
	shard_part *p = &s->parts[k];
	size_t at = (size_t)(p->momentum - s->momentum_arena);
	uint64_t t0 = ps_now_ns();

#ifdef PS_WITH_CUDA
	/* server.device = cuda: the moments live on the device; the host
	 * arena is brought up to date here only (server/gpu.h). The values
	 * are on the host after every update already. */
	if (s->gpu) {
		int rc = ps_gpu_momentum_to_host(s, p);
		if (rc != PS_OK)
			return rc;
	}
#endif
	c->version[k] = ps_sproto_part_at(s->shard, k)->version;
	memcpy(c->values + at, p->values->data, p->desc->numel * sizeof(float));
	memcpy(c->momentum + at, p->momentum, p->desc->numel * sizeof(float));
	if (c->second)
		memcpy(c->second + at, p->second,
		       p->desc->numel * sizeof(float));
	c->bytes += (c->second ? 3 : 2) * p->desc->numel * sizeof(float);
	c->take_ns += ps_now_ns() - t0;
	ps_ckpt_take_took(&s->snap.m, k);
	return PS_OK;
}

/* Takes local partition k if the checkpoint being collected wants it,
 * and writes the checkpoint once it is complete. */
static int take_if_at(server *s, uint32_t k)
{
	int rc;

	if (!ps_ckpt_take_wants(&s->snap.m, k))
		return PS_OK;
	rc = take(s, k);
	if (rc != PS_OK)
		return fail_collecting(s, rc);
	return write_if_complete(s);
}

/* A checkpoint of m.collect began: into the slot not being written,
 * with every partition already at its iteration taken. */
static int begin(server *s)
{
	snapshot *sn = &s->snap;
	snap *c = sn->write == &sn->slot[0] ? &sn->slot[1] : &sn->slot[0];
	int rc;

	if (sn->collect)
		clear(sn->collect); /* a periodic one, or an older request */
	sn->collect = c;
	rc = prepare_slot(s, c);
	if (rc != PS_OK)
		return fail_collecting(s, rc);
	c->take_ns = c->write_ns = c->bytes = 0;
	c->iteration = sn->m.collect;
	for (uint32_t k = 0; k < s->nparts && sn->collect == c &&
			     sn->m.collect == c->iteration;
	     k++) {
		rc = take_if_at(s, k);
		if (rc != PS_OK)
			return rc;
	}
	return write_if_complete(s);
}

/* Carries out what the machine said of iteration it (ps_ckpt_take_due or
 * _request), waiting for the disk where it must. */
static int step(server *s, uint64_t it, int requested)
{
	snapshot *sn = &s->snap;
	uint64_t top;

	for (;;) {
		ps_ckpt_step st = requested
				      ? ps_ckpt_take_request(&sn->m, it, &top)
				      : ps_ckpt_take_due(&sn->m, it);
		switch (st) {
		case PS_CKPT_COLLECT:
			return begin(s);
		case PS_CKPT_WAIT_WRITE:
			PS_WARN("checkpoint %llu waits for checkpoint %llu to "
				"reach the disk%s", (unsigned long long)it,
				(unsigned long long)sn->m.writing,
				requested ? ""
					  : " (checkpoint.every is shorter "
					    "than two writes)");
			if (sn->write)
				reap(s);
			else /* the complete one never went: it does now */
				write_if_complete(s);
			continue;
		case PS_CKPT_SKIPPED:
			PS_WARN("checkpoint %llu skipped: checkpoint %llu is "
				"still being taken%s", (unsigned long long)it,
				(unsigned long long)sn->m.collect,
				async(s) ? " (workers more than "
					      "checkpoint.every iterations "
					      "apart)"
					    : "");
			return PS_OK;
		case PS_CKPT_LATE: {
			/* the scheduler asks again further ahead */
			ps_wire_header h = {.type = PS_MSG_CKPT_LATE,
					    .iteration = top};
			if (ps_node_send(&s->node, 0, &h, NULL, 0, NULL,
					 NULL) != PS_OK)
				PS_WARN("cannot answer a checkpoint request");
			return PS_OK;
		}
		default: /* NOTHING, JOINED */
			return PS_OK;
		}
	}
}

int ps_snapshot_on_update(server *s, shard_part *p)
{
	uint32_t k = (uint32_t)(p - s->parts);
	uint64_t h = ps_ckpt_take_highest(&s->snap.m, k);
	int rc;

	if (h > s->node.progress)
		s->node.progress = h;
	/* async: due once a first worker has pushed iteration V - 1 */
	rc = step(s, h, 0);
	return rc == PS_OK ? take_if_at(s, k) : rc;
}

int ps_snapshot_on_push(server *s, shard_part *p, uint64_t iteration)
{
	int rc = step(s, iteration, 0);

	return rc == PS_OK ? take_if_at(s, (uint32_t)(p - s->parts)) : rc;
}

int ps_snapshot_holds(const server *s, const shard_part *p,
		      uint64_t iteration)
{
	return ps_ckpt_take_holds(&s->snap.m, (uint32_t)(p - s->parts),
				  iteration);
}

int ps_snapshot_request(server *s, uint64_t iteration)
{
	return step(s, iteration, 1);
}

void ps_snapshot_poll(server *s)
{
	if (s->snap.write &&
	    atomic_load_explicit(&s->snap.finished, memory_order_acquire))
		reap(s);
}

int ps_snapshot_flush(server *s)
{
	ps_wire_header h = {.type = PS_MSG_FLUSHED};
	snapshot *sn = &s->snap;

	/* the last checkpoints are worth the wait: a write in progress and
	 * a complete one behind it */
	while (sn->write)
		reap(s);
	if (sn->collect) {
		char why[160];
		snprintf(why, sizeof(why), "the job ended before every "
			 "partition of server %u reached iteration %llu",
			 s->node.rank,
			 (unsigned long long)sn->collect->iteration);
		if (ps_ckpt_take_drop(&sn->m))
			send_done(s, sn->collect->iteration, PS_ESTATE, why);
		clear(sn->collect);
		sn->collect = NULL;
	}
	return ps_node_send(&s->node, 0, &h, NULL, 0, NULL, NULL);
}

void ps_snapshot_free(server *s)
{
	snapshot *sn = &s->snap;

	if (sn->write) {
		pthread_join(sn->writer, NULL);
		clear(sn->write);
		sn->write = NULL;
	}
	if (sn->collect)
		clear(sn->collect);
	sn->collect = NULL;
	ps_ckpt_take_free(&sn->m);
	for (int i = 0; i < 2; i++) {
		snap *c = &sn->slot[i];
		ps_free_big(c->values, s->arena_numel * sizeof(float));
		ps_free_big(c->momentum, s->arena_numel * sizeof(float));
		ps_free_big(c->second, s->arena_numel * sizeof(float));
		free(c->version);
		*c = (snap){0};
	}
}
