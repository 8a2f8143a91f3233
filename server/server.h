/*
 * server/server.h - ps-server: one shard of the parameters.
 *
 * A server joins the job, takes the partitions the placement gives its
 * rank, and serves them until the scheduler shuts the job down.
 *
 * Synchronous mode: partition p holds parameters of version v. Each worker
 * pushes its gradient of iteration v once; when all W have arrived the sum
 * (in double) is averaged, SGD with momentum is applied, v becomes v + 1,
 * and the new values are sent to every worker unasked (no pull round trip).
 * A push for another iteration, a second push from the same worker, or a
 * push for a partition this server does not own is dropped with a reason.
 *
 * Asynchronous mode: each push is applied at once (v + 1 per push) and
 * PULL requests are answered with the current values.
 *
 * Every push is acknowledged (PUSH_ACK): the sender's credit window.
 */
#ifndef ORDO_SERVER_H
#define ORDO_SERVER_H

#include "common/config.h"

/* Runs a server to completion. Returns the process exit status: 0 after a
 * clean SHUTDOWN, 1 on failure or abort, 128 + signal when interrupted. */
int ps_server_run(const ps_config *cfg);

#endif /* ORDO_SERVER_H */
