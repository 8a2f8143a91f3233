/*
 * worker/main.c - ps-worker: trains one model replica.
 */
#include "common/cli.h"
#include "common/log.h"
#include "runtime/signals.h"
#include "worker/replay.h"
#include "worker/trainer.h"

int main(int argc, char **argv)
{
	static const ps_cli_opt no_opts[] = {{NULL, NULL, NULL}};
	const ps_cli_info info = {
		.prog = "ps-worker",
		.summary = "Trains one model replica on its shard of the data "
			   "(worker.mode = train) or replays a model file "
			   "(worker.mode = replay): pushes gradients, receives "
			   "parameters.",
		.opts = no_opts,
	};
	ps_cli_status st;
	ps_config cfg;

	ps_signals_install();
	st = ps_cli_parse(argc, argv, &info, &cfg);
	if (st != PS_CLI_RUN)
		return ps_cli_exit_status(st);
	ps_log_init("worker", cfg.log.level);
	/* the built-in model takes what comes back as its parameters */
	if (cfg.worker.mode == PS_WORKER_TRAIN &&
	    cfg.server.optimizer == PS_OPTIMIZER_NONE) {
		PS_ERROR("server.optimizer = none sends the averaged gradient "
			 "back, for a worker program that steps its own "
			 "optimizer (ordo.torch); ps-worker's built-in model "
			 "(worker.mode = train) needs server.optimizer = sgd");
		return 2;
	}
	return cfg.worker.mode == PS_WORKER_REPLAY ? ps_replay_run(&cfg)
						   : ps_trainer_run(&cfg);
}
