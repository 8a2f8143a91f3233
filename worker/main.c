/*
 * worker/main.c - ps-worker: trains one model replica.
 */
#include "common/cli.h"
#include "common/log.h"
#include "common/signals.h"
#include "worker/trainer.h"

int main(int argc, char **argv)
{
	static const ps_cli_opt no_opts[] = {{NULL, NULL, NULL}};
	const ps_cli_info info = {
		.prog = "ps-worker",
		.summary = "Trains one model replica on its shard of the data: "
			   "pushes gradients, receives parameters.",
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
	ps_log_init("worker", cfg.log.level);
	return ps_trainer_run(&cfg);
}
