/*
 * server/gpu.h - the server's update path on a CUDA device
 * (server.device = cuda; PS_WITH_CUDA=ON builds only; docs/cuda.md).
 *
 * The shard's momentum and gradient sums live on the device, with a device
 * copy of the values; the host arenas keep what is sent and checkpointed:
 *
 *   push (not the last of its round): the payload is copied into a pinned
 *     staging buffer, then host -> device, and summed in (accum_set/add);
 *   the last push: the same, then sgd_apply_last on the device, and the new
 *     values are copied device -> host into the partition's writable values
 *     buffer (after make_writable), the stream synchronised before the
 *     server goes on, so the host values are complete when they are sent
 *     or checkpointed;
 *   INIT: the values the worker sent are uploaded;
 *   resume: the checkpoint's values and momentum are uploaded;
 *   checkpoint: the partition's momentum is copied device -> host into the
 *     host momentum arena when the checkpoint takes it (only then: between
 *     checkpoints the host momentum is stale and nothing reads it).
 *
 * Everything runs on one stream, created at setup, in the server's thread
 * (the thread ps_cuda_open made the device current in). Device errors are
 * logged with cudaGetErrorString and fatal to the server.
 */
#ifndef ORDO_SERVER_GPU_H
#define ORDO_SERVER_GPU_H

#ifdef PS_WITH_CUDA

#include "common/config.h"
#include "proto/server.h"
#include "server/state.h"

/* Opens server.cuda_device and logs what runs where. PS_OK or the error of
 * ps_cuda_open (logged). */
int ps_gpu_open(const ps_config *cfg);

/* After the shard's host arenas are set up: the device buffers (one
 * allocation each: values, momentum zeroed, sums, a push's gradient), the
 * pinned staging buffer and the stream. Out of device memory: an error
 * naming the bytes and the device's free and total memory. */
int ps_gpu_setup(server *s);

/* Host -> device: the partition's values, and its momentum too when
 * `momentum` (a resume). Returns once the copies are complete. */
int ps_gpu_upload(server *s, const shard_part *p, int momentum);

/* A push summed in on the device (the op's message). */
int ps_gpu_aggregate(server *s, const ps_sproto_op *op);

/* The last push of a round summed in and the step applied on the device;
 * the new values copied into p->values (which must be writable) before it
 * returns. */
int ps_gpu_update(server *s, const ps_sproto_op *op);

/* Device -> host: the partition's momentum into the host momentum arena
 * (a checkpoint is about to read it). */
int ps_gpu_momentum_to_host(server *s, const shard_part *p);

/* Frees the device state (NULL: nothing). */
void ps_gpu_free(server *s);

#endif /* PS_WITH_CUDA */
#endif /* ORDO_SERVER_GPU_H */
