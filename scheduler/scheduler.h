/*
 * scheduler/scheduler.h - ps-scheduler: membership, placement, barriers,
 * heartbeats and shutdown of one job.
 *
 * Life of a job, as the scheduler sees it (scheduler.c,
 * ps_scheduler_run):
 *  1. Registration: servers and workers REGISTER (role, endpoint,
 *     transport id, a worker's wanted rank, and for workers the tensors
 *     they declared; every worker must declare the first worker's). The
 *     membership machine (proto/membership.h) judges each REGISTER before
 *     the scheduler connects back to it: a node the job has no place for
 *     (one too many, a rank outside the job or taken) is refused and
 *     logged, and not told; a worker with other tensors aborts the job.
 *     An accepted node the scheduler cannot connect back to aborts the
 *     job, naming its endpoint. The scheduler waits up to
 *     cluster.register_timeout_ms for all S + W, and from
 *     cluster.connect_timeout_ms on says every 10 s whom it waits for.
 *  2. Ids: servers are ranked in registration order; workers get the rank
 *     they asked for (worker.rank), the others the ranks left in
 *     registration order; ids are 0 the scheduler, then servers, then
 *     workers, by rank.
 *  3. Before the WELCOME: the checkpoint to resume from is opened
 *     (checkpoint.resume), the sizes left auto are chosen (measuring the
 *     link to a node with PROBEs first where link.bandwidth_gbps is 0;
 *     link_probe.h, sim/auto_sizes.h), the partitions are placed on the
 *     servers and the transfer orders computed.
 *  4. Welcome: every node gets the node table, the placement, the orders,
 *     the sizes in force and the start iteration.
 *  5. Running: heartbeats both ways; a node silent for
 *     cluster.heartbeat_timeout_ms, or reported lost by a peer whose send
 *     to it failed (PEER_LOST), ends the job: every node gets an ABORT
 *     naming it and exits non-zero. Workers' barriers and progress,
 *     checkpoints (checkpoint.every, SIGUSR1), the credit refined during
 *     the job (scheduling.credit_refine) and ps-tune's live changes.
 *  6. End: when every worker reported DONE (and, with checkpoint.dir, the
 *     servers flushed their writes), the summary is printed and SHUTDOWN
 *     goes to all.
 */
#ifndef ORDO_SCHEDULER_SCHEDULER_H
#define ORDO_SCHEDULER_SCHEDULER_H

#include "common/config.h"

/* Runs the scheduler to the end of the job. If ready_fd >= 0, the bound
 * port is written there as "PORT\n" once listening (the local launcher
 * uses it with scheduler_port = 0), then "progress N\n" whenever every
 * worker has finished N iterations (ps-launch's progress line; dropped,
 * never waited for, when the pipe is full). ready_fd may be 1: ps-launch
 * --hosts reads the remote scheduler's stdout, where these lines are
 * told from the rest by their form. Returns the process exit
 * status: 0 when the job completed, 1 on failure, 128 + signal. */
int ps_scheduler_run(const ps_config *cfg, int ready_fd);

#endif /* ORDO_SCHEDULER_SCHEDULER_H */
