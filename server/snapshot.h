/*
 * server/snapshot.h - a server's side of checkpoints.
 *
 * A checkpoint of iteration V holds every partition at version V. In
 * synchronous training a partition's version moves V-1 -> V when the last
 * worker's gradient of iteration V-1 is applied, and nothing of iteration
 * V can be applied before that: so the moment a partition reaches V, its
 * values and momentum are the checkpoint's, whatever the other partitions
 * are doing. The server takes each partition at that moment - a copy of
 * its values and momentum into buffers kept for checkpoints, their pages
 * faulted in once (taking a reference to the copy-on-write values instead
 * made the next update copy them into fresh pages: 1.2 s per checkpoint of
 * half of VGG16 on a 2-vCPU VM, against ~50 ms for the two copies) - and
 * training goes on. Memory: two copies of the shard per checkpoint slot,
 * the second slot allocated only when a write and a collection overlap.
 * Once every partition of the shard is taken, a thread writes the shard
 * file while the next iterations run; the loop is woken when it is done
 * and tells the scheduler (CKPT_DONE), which writes the manifest once
 * every server's shard is durable.
 *
 * Which V: every checkpoint.every iterations (each server knows), or the
 * V the scheduler asks for (CKPT, on SIGUSR1). A request for a V that a
 * partition has already passed is answered CKPT_LATE with the highest
 * version, and the scheduler asks again further ahead.
 *
 * One checkpoint is written while the next is collected: training does
 * not wait for the disk as long as a write takes less than
 * checkpoint.every iterations' time. When a third comes due with one
 * being written and the next complete behind it, the server waits for the
 * write (with a warning) rather than skip a checkpoint or hold more copies
 * in memory; so does a request in that state.
 *
 * Asynchronous mode: see ps_snapshot_on_push.
 *
 * Threads: the server's thread, except the writer thread, which reads
 * only the snapshot it was given and signals through snapshot.finished.
 */
#ifndef ORDO_SERVER_SNAPSHOT_H
#define ORDO_SERVER_SNAPSHOT_H

#include "server/state.h"

/* The checkpoint the job resumes from (the WELCOME's start_iteration > 0):
 * fills every local partition's values and momentum, sets its version and
 * marks it initialised. Errors are logged naming the file. */
int ps_snapshot_load(server *s);

/* The shard's checkpoint machine (proto/checkpoint_take.h); with
 * checkpoint.dir, the copy buffers of the first checkpoint allocated and
 * their pages faulted in, at start rather than while the first
 * checkpoint is taken. */
int ps_snapshot_init(server *s);

/* Partition p reached a new version by an update: takes it if a
 * checkpoint of that version is being collected, or starts a periodic one
 * (checkpoint.every). */
int ps_snapshot_on_update(server *s, shard_part *p);

/*
 * Asynchronous mode has no common boundary by itself: each push is applied
 * at once. A checkpoint of iteration V there holds, in every partition,
 * exactly the pushes of iterations before V from every worker. While one
 * is collected, a push of iteration V or later for a partition not yet
 * taken is held back (acknowledged, not applied) until the slower
 * workers' earlier pushes are in; then the partition is taken and the
 * held pushes applied in order (a PULL of the worker's meanwhile waits:
 * server.c, handle_pull). A push of iteration `iteration` is about
 * to be handled: ps_snapshot_on_push starts a periodic checkpoint that
 * comes due and takes p if it is at the checkpoint's iteration;
 * ps_snapshot_holds says whether the push must wait.
 */
int ps_snapshot_on_push(server *s, shard_part *p, uint64_t iteration);
int ps_snapshot_holds(const server *s, const shard_part *p,
		      uint64_t iteration);

/* The scheduler asks for a checkpoint of iteration (CKPT). */
int ps_snapshot_request(server *s, uint64_t iteration);

/* After the loop was woken: reports a finished write. */
void ps_snapshot_poll(server *s);

/* FLUSH: waits for a write in progress and reports it, abandons a
 * collection that cannot complete any more, then answers FLUSHED. */
int ps_snapshot_flush(server *s);

/* Joins a writer still running and frees the checkpoint buffers. */
void ps_snapshot_free(server *s);

#endif /* ORDO_SERVER_SNAPSHOT_H */
