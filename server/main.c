/*
 * server/main.c - ps-server: holds a shard of the parameters.
 */
#include "common/cli.h"
#include "common/log.h"
#include "runtime/signals.h"
#include "server/server.h"

int main(int argc, char **argv)
{
	static const ps_cli_opt no_opts[] = {{NULL, NULL, NULL}};
	const ps_cli_info info = {
		.prog = "ps-server",
		.summary = "Holds a shard of the parameters: aggregates pushed "
			   "gradients, applies the optimizer, sends new "
			   "values to the workers.",
		.opts = no_opts,
	};
	ps_cli_status st;
	ps_config cfg;

	ps_signals_install();
	st = ps_cli_parse(argc, argv, &info, &cfg);
	if (st != PS_CLI_RUN)
		return ps_cli_exit_status(st);
	ps_log_init("server", cfg.log.level);
	return ps_server_run(&cfg);
}
