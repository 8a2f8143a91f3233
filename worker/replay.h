/*
 * worker/replay.h - ps-worker's replay of a model file (worker.mode =
 * replay).
 *
 * One compute engine, like a GPU stream, runs the ops of model.file one at
 * a time for their (scaled) times, sleeping or spinning. Among the ops
 * whose dependencies are done it runs the lowest-indexed one that can run:
 * a forward op of iteration i needs version i of every tensor it reads.
 * When no op can run, the engine waits for parameters (that time is the
 * iteration's "wait"). A backward op pushes the gradients it produces as
 * soon as it finishes; the bytes are the model's real bytes (zeros), which
 * the servers really aggregate. There is no barrier between iterations:
 * the next iteration's first forward ops start as soon as their own
 * parameters are back, while later layers' parameters are still coming.
 *
 * Per iteration it prints a progress line and, with output.dir, writes a
 * CSV row: iteration time, samples/s, compute, wait, and TicTac's ordering
 * efficiency E (scheduling/efficiency.h) with compute measured per op;
 * S is computed from the model's op times (it depends on G and Time only).
 */
#ifndef ORDO_WORKER_REPLAY_H
#define ORDO_WORKER_REPLAY_H

#include "common/config.h"

/* Returns the process exit status (0, 1, 128 + signal). */
int ps_replay_run(const ps_config *cfg);

#endif /* ORDO_WORKER_REPLAY_H */
