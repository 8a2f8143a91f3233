/*
 * scheduler/progress.c - the workers' progress: the iteration every
 * worker has begun (PROGRESS), which the credit refinement steps on, the
 * tuner hears (its clock times the trials) and the launcher reads as
 * "progress N" lines on its pipe; and that pipe, which first carries the
 * port the scheduler listens on.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "scheduler/state.h"

/* PROGRESS from a worker: when every worker is past an iteration, the
 * tuner hears it (its clock times the trials). */
void psi_sched_worker_progress(coord *c, member *m, uint64_t iteration)
{
	uint64_t floor = UINT64_MAX;

	if (iteration > m->progress)
		m->progress = iteration;
	for (uint32_t r = 0; r < c->workers; r++) {
		uint64_t p = c->members[1 + c->servers + r].progress;
		if (p < floor)
			floor = p;
	}
	if (c->refining && floor != UINT64_MAX && floor > c->refine_floor) {
		/* a floor that jumped is a gap the refinement does not
		 * measure across */
		c->refine_floor = floor;
		psi_sched_refine_step(c, floor);
	}
	if (floor > c->tuner.told && floor != UINT64_MAX) {
		c->tuner.told = floor;
		psi_sched_send_tuner(c, PS_MSG_PROGRESS, floor);
	}
	if (c->progress_fd >= 0 && floor != UINT64_MAX &&
	    floor > c->progress_told) {
		/* the launcher's progress line; advisory: a full pipe (a
		 * launcher that stopped reading) drops it, never blocks.
		 * Polled rather than O_NONBLOCK: the fd may be stdout
		 * itself (ps-launch --hosts reads both through ssh), which
		 * must stay blocking; a pipe or socket with room takes a
		 * line this short whole. */
		char line[40];
		struct pollfd pfd = {.fd = c->progress_fd, .events = POLLOUT};
		int len = snprintf(line, sizeof(line), "progress %llu\n",
				   (unsigned long long)floor);
		c->progress_told = floor;
		if (poll(&pfd, 1, 0) != 1 || !(pfd.revents & POLLOUT))
			return;
		if (write(c->progress_fd, line, (size_t)len) != len &&
		    errno != EAGAIN) {
			close(c->progress_fd);
			c->progress_fd = -1;
		}
	}
}

/* "PORT\n" on the launcher's pipe; the pipe stays open for "progress
 * N\n" lines: every worker has finished N iterations. */
int psi_sched_announce_port(coord *c, int ready_fd)
{
	const char *colon = strrchr(c->self.endpoint, ':');
	char line[32];
	int len;

	if (ready_fd < 0)
		return PS_OK;
	len = snprintf(line, sizeof(line), "%s\n", colon ? colon + 1 : "0");
	if (write(ready_fd, line, (size_t)len) != len) {
		PS_ERROR("cannot write the port to fd %d: %s", ready_fd,
			 strerror(errno));
		close(ready_fd);
		return PS_EIO;
	}
	c->progress_fd = ready_fd;
	return PS_OK;
}
