/*
 * server/main.c - ps-server: holds a shard of the parameters.
 */
#include "common/cli.h"
#include "common/log.h"
#include "common/signals.h"
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
	ps_config cfg;

	ps_signals_install();
	switch (ps_cli_parse(argc, argv, &info, &cfg)) {
	case PS_CLI_EXIT_OK:
		return 0;
	case PS_CLI_EXIT_ERR:
		return 2;
	case PS_CLI_RUN:
		break;
	}
	ps_log_init("server", cfg.log.level);
	return ps_server_run(&cfg);
}
