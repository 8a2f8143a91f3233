/*
 * coordinator/coordinator.h - ps-scheduler: membership, placement, barriers,
 * heartbeats and shutdown of one job.
 *
 * Life of a job, as the scheduler sees it:
 *  1. Registration: servers and workers REGISTER (role, endpoint, transport
 *     id, and for workers the tensors they declared; every worker must
 *     declare the same tensors). The scheduler waits up to
 *     cluster.connect_timeout_ms for all S + W; a node beyond the expected
 *     count is refused with an ABORT naming why.
 *  2. Welcome: ids and ranks are assigned in registration order per role,
 *     the partitions are placed on the servers (printed with per-server
 *     bytes and the max/mean imbalance), and every node gets the node table
 *     and the placement.
 *  3. Running: heartbeats both ways; a node silent for
 *     cluster.heartbeat_timeout_ms is reported by name and the job is
 *     aborted (every node gets ABORT and exits non-zero). Worker barriers.
 *  4. End: when every worker reported DONE, SHUTDOWN goes to all, and the
 *     summary is printed.
 */
#ifndef ORDO_COORDINATOR_COORDINATOR_H
#define ORDO_COORDINATOR_COORDINATOR_H

#include "common/config.h"

/* Runs the scheduler to the end of the job. If ready_fd >= 0, the bound
 * port is written there as "PORT\n" once listening (the local launcher
 * uses it with scheduler_port = 0), then "progress N\n" whenever every
 * worker has finished N iterations (ps-launch's progress line; dropped,
 * never waited for, when the pipe is full). ready_fd may be 1: ps-launch
 * --hosts reads the remote scheduler's stdout, where these lines are
 * told from the rest by their form. Returns the process exit
 * status: 0 when the job completed, 1 on failure, 128 + signal. */
int ps_coordinator_run(const ps_config *cfg, int ready_fd);

#endif /* ORDO_COORDINATOR_COORDINATOR_H */
