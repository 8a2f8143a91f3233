/*
 * launch/rank.h - which process of a job this one is, when a cluster's
 * launcher started it (ps-launch --rank under srun or mpirun), and which
 * role a rank plays (also ps-launch --hosts's placement).
 *
 * The mapping, for a job of 1 + S + W processes (cluster.servers S,
 * cluster.workers W): rank 0 is the scheduler, ranks 1..S the servers
 * #0..#S-1, ranks S+1..S+W the workers #0..#W-1. Ranks are only how the
 * launcher's processes pick their roles: the scheduler still numbers the
 * servers and workers in registration order.
 *
 * Threads: no state.
 */
#ifndef ORDO_LAUNCH_RANK_H
#define ORDO_LAUNCH_RANK_H

#include <stddef.h>
#include <stdint.h>

#include "proto/wire.h" /* PS_ROLE_*, ps_role_name */

/* getenv, or a fake one in tests */
typedef const char *(*ps_getenv_fn)(const char *name);

typedef struct ps_rank {
	int rank, size;
	const char *rank_var, *size_var; /* "SLURM_PROCID", "SLURM_NTASKS" */
} ps_rank;

/*
 * This process's rank and the job's size, from the first pair of
 * variables present: SLURM_PROCID/SLURM_NTASKS (srun),
 * OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE (Open MPI's mpirun),
 * PMI_RANK/PMI_SIZE (MPICH's hydra, Intel MPI, other PMI launchers).
 * PS_ENOENT when none is there, PS_EINVAL for a value that is not a rank
 * (or a rank not below the size); why says which variable and why.
 */
int ps_rank_from_env(ps_getenv_fn env, ps_rank *out, char *why, size_t whylen);

/* The role of rank (0 <= rank < 1 + servers + workers: PS_ROLE_SCHEDULER,
 * _SERVER or _WORKER) and its index among its kind. PS_EINVAL for a rank
 * outside the job. */
int ps_rank_role(int rank, int servers, int workers, uint32_t *role,
		 int *index);

#endif /* ORDO_LAUNCH_RANK_H */
