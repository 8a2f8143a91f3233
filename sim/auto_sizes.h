/*
 * sim/auto_sizes.h - the partition and credit sizes chosen at a job's
 * start (scheduling.partition_size = auto, *_credit_size = auto).
 *
 * The scheduler (and ps-sim, so that a prediction is of the job that will
 * run) simulates the job's own model on its own links for every candidate
 * pair and keeps the one of least regret (below):
 *
 *   partition  64K, 128K, ... 64M (powers of two) from the smallest
 *              that cuts the model into at most AUTO_MAX_PARTITIONS
 *              (below it, per-message costs dominate and the simulation
 *              grows with the messages), or the config's when it is
 *              fixed; at most a fixed credit
 *   credit     the push window: 4, 8 and 16 partitions, and unlimited,
 *              or the config's when it is fixed; unlimited only counts
 *              towards the best pair, and is chosen only where no window
 *              can be (whole tensors); an auto params credit is
 *              unlimited (see "The parameters' window")
 *
 * Each candidate is ps-sim (sim/cluster.h) over AUTO_ITERATIONS
 * iterations with fair sharing (link.sharing = fair: a message's latency
 * is a delay a window hides, as TCP's), scored by the mean iteration
 * after the first (the steady state), twice: with the link model's
 * latency and with AUTO_LATENCY_FACTOR times it. A real round trip
 * (wake-ups, the receiver's turn, the acknowledgement's way back) is
 * known only within such a factor (20 us is ps-sim's default; 81 us was
 * measured at 10 Gbit/s on a 16-core machine), and the pair the model
 * finds fastest at one latency can stall the link at another. The pair
 * chosen is the one of least regret: whose slowdown against the best
 * pair, at whichever of the two latencies is worse for it, is least. A cluster of more than AUTO_MAX_WORKERS workers is simulated
 * at that many workers and servers in the same ratio: a worker's and a
 * server's links carry the same bytes per iteration as in the full job,
 * at a fraction of the simulation's cost. The choice is a pure function
 * of (config, model, link model): every run of a job chooses the same.
 *
 * The parameters' window. An auto params credit is unlimited in the job
 * (the push credit is the window chosen), and the candidates are
 * simulated so, as the job will run. The window on the servers' sends
 * returns credit only when the worker's PARAMS_ACK is back, and that
 * acknowledgement rides behind the worker's pushes to the same server
 * and through the links' queues, which TCP keeps full: a round trip
 * several times what ps-sim sees. Measured (docs/benchmarks.md, "The
 * parameters' window"), the same partition and push window ran faster
 * without it on 13 of 15 rows, by up to 12 % (0.6 % slower on one); the
 * order it keeps costs little to lose: the servers' parameters become
 * ready in the order the pushes arrive, which the push window keeps.
 * Ranked with the window both ways instead, the choice goes wrong where
 * a server sends to more workers than a worker to servers (3 x 2,
 * 2 x 1): a server's window then makes every small partition look slow,
 * and that ranking picks 4-16M partitions that run 1.2-1.5x slower than
 * 64K (docs/benchmarks.md, "More workers than servers").
 *
 * Beside the choice, every preset that fixes its sizes is simulated on
 * the same job, and the fastest of them is reported as the runner-up, so
 * that the start-up line says what the choice is expected to gain.
 *
 * Without a model's timings (training through the client API, where the
 * scheduler has only the declared tensors) there is nothing to simulate:
 * the fallback is stated, AUTO_FALLBACK_PARTITION (smaller for a model too
 * small to give every server two) and a push credit of the
 * bandwidth-delay product (ps_config_bdp_credit), at least
 * AUTO_MIN_WINDOW partitions; the parameters without a window.
 *
 * Threads: none; a call owns what it allocates.
 */
#ifndef ORDO_SIM_AUTO_SIZES_H
#define ORDO_SIM_AUTO_SIZES_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "model/dag.h"
#include "sim/link.h"

#define AUTO_ITERATIONS 3
#define AUTO_MAX_WORKERS 4
#define AUTO_MIN_PARTITION ((uint64_t)64 << 10)
#define AUTO_MAX_PARTITIONS 2048
#define AUTO_FALLBACK_PARTITION ((uint64_t)1 << 20)
#define AUTO_MIN_WINDOW 4 /* partitions: the smallest credit window */
#define AUTO_LATENCY_FACTOR 4.0 /* the latency's other guess: this x */

typedef struct ps_auto_choice {
	int chosen;              /* 0: the config had no auto size */
	int fallback;            /* 1: no timings, the fallback sizes */
	int partition_auto;      /* the fallback chose the partition too */
	uint64_t partition_size; /* the sizes in force after the choice */
	uint64_t push_credit, params_credit;
	double iteration_us;     /* predicted (0 with the fallback) */
	double regret;           /* its slowdown against the best pair at
				  * the worse of the two latencies (>= 1) */
	double latency_us;       /* the link model's latency (the guesses:
				  * it and AUTO_LATENCY_FACTOR x it) */
	uint32_t candidates;     /* pairs simulated */
	uint32_t sim_workers, sim_servers;
	int runner_up;           /* a ps_preset, or -1 */
	double runner_up_us;
	double link_gbps;        /* the link rate the choice assumed */
	int link_from_metrics;   /* it is metrics.bandwidth_gbps's
				  * (link.bandwidth_gbps is 0) */
	char link_how[384];      /* where the rate came from, when the
				  * caller knows better (a measurement):
				  * filled by the caller, "" = the keys */
	double seconds;          /* spent choosing (wall clock of the
				  * caller's: filled by the caller) */
} ps_auto_choice;

/* Whether cfg leaves a size to be chosen. */
int ps_auto_sizes_wanted(const ps_config *cfg);

/*
 * Chooses cfg's auto sizes by simulating dag (loaded with
 * model.compute_scale) on lm, and writes them into cfg (finalized: a
 * preset's bandwidth-delay credit follows the chosen partition). A config
 * without auto sizes is left as it is (c->chosen = 0). Errors: PS_EINVAL /
 * PS_ENOMEM with a reason in why (no candidate could be simulated).
 */
int ps_auto_sizes_choose(ps_config *cfg, const ps_dag *dag,
			 const ps_link_model *lm, ps_auto_choice *c,
			 char *why, size_t whylen);

/* ps-sim's steady-state iteration time (us) of cfg's sizes (none auto) on
 * dag, simulated as a candidate is (fair sharing, at the link model's
 * latency, a large cluster at AUTO_MAX_WORKERS): what a choice is
 * compared with. PS_EINVAL with why. */
int ps_auto_sizes_predict(const ps_config *cfg, const ps_dag *dag,
			  const ps_link_model *lm, double *us_p, char *why,
			  size_t whylen);

/* The stated fallback without timings, for a model of model_bytes (the
 * declared tensors): AUTO_FALLBACK_PARTITION, halved (down to
 * AUTO_MIN_PARTITION) while the model is smaller than two partitions per
 * server, so that every server has a share; writes it into cfg. */
void ps_auto_sizes_fallback(ps_config *cfg, uint64_t model_bytes,
			    ps_auto_choice *c);

/* "credit 2M", or "push credit 2M, params credit unlimited" where the
 * directions differ. */
void ps_auto_describe_credits(uint64_t push, uint64_t params, char *buf,
			      size_t cap);

/* One line: what was chosen, the prediction, the runner-up preset
 * ("auto sizes: partition 256K, credit 2M (ps-sim: 87.1 ms per iteration,
 * 0.7 % behind the best of 44 pairs at 20 or 80 us of latency, on 2 x 2
 * at 10 Gbit/s; runner-up preset p3: 107.4 ms)"). */
void ps_auto_choice_describe(const ps_auto_choice *c, char *buf,
			     size_t cap);

#endif /* ORDO_SIM_AUTO_SIZES_H */
