/*
 * scheduler/main.c - ps-scheduler: membership, placement and heartbeats.
 */
#include <stdlib.h>
#include <string.h>

#include "common/cli.h"
#include "common/log.h"
#include "runtime/signals.h"
#include "scheduler/scheduler.h"

static int on_opt(void *ud, const char *name, const char *arg, char *why,
		  size_t whylen)
{
	int *ready_fd = ud;
	char *end;
	long v;

	if (strcmp(name, "ready-fd") != 0)
		return PS_EINVAL;
	v = strtol(arg, &end, 10);
	if (*arg == '\0' || *end != '\0' || v < 0 || v > 65535) {
		snprintf(why, whylen, "--ready-fd: '%s' is not a file "
			 "descriptor number", arg);
		return PS_EINVAL;
	}
	*ready_fd = (int)v;
	return PS_OK;
}

int main(int argc, char **argv)
{
	static const ps_cli_opt opts[] = {
		{"ready-fd", "FD",
		 "write the bound port to FD once listening, then "
		 "\"progress N\" lines as the workers finish iterations "
		 "(used by ps-launch with cluster.scheduler_port = 0)"},
		{NULL, NULL, NULL},
	};
	int ready_fd = -1;
	const ps_cli_info info = {
		.prog = "ps-scheduler",
		.summary = "Coordinates one job: registration, shard "
			   "placement, barriers, heartbeats, shutdown.",
		.opts = opts,
		.on_opt = on_opt,
		.ud = &ready_fd,
	};
	ps_cli_status st;
	ps_config cfg;

	ps_signals_install();
	st = ps_cli_parse(argc, argv, &info, &cfg);
	if (st != PS_CLI_RUN)
		return ps_cli_exit_status(st);
	ps_log_init("scheduler", cfg.log.level);
	return ps_scheduler_run(&cfg, ready_fd);
}
