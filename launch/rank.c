/*
 * launch/rank.c - a process's rank from its launcher's environment, and
 * the role of a rank (rank.h).
 */
#include "launch/rank.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "ordo/error.h"

static const struct {
	const char *rank, *size;
} launchers[] = {
	{"SLURM_PROCID", "SLURM_NTASKS"},
	{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
	{"PMI_RANK", "PMI_SIZE"},
	/* torchrun, and Kubeflow's PyTorchJob (examples/kubernetes/): last,
	 * so that a launcher above wins where a program sets these too */
	{"RANK", "WORLD_SIZE"},
};

/* A non-negative decimal int, the whole string: digits only (strtol
 * alone would also take leading white space, " 3" or "\n-0"). */
static int parse_count(const char *s, int *out)
{
	char *end;
	long v;

	if (!s || *s < '0' || *s > '9')
		return PS_EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 0 || v > INT_MAX)
		return PS_EINVAL;
	*out = (int)v;
	return PS_OK;
}

int ps_rank_from_env(ps_getenv_fn env, ps_rank *out, char *why, size_t whylen)
{
	for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++) {
		const char *r = env(launchers[i].rank);
		const char *s = env(launchers[i].size);
		if (!r && !s)
			continue;
		out->rank_var = launchers[i].rank;
		out->size_var = launchers[i].size;
		if (!r || !s) {
			snprintf(why, whylen, "%s is set but %s is not",
				 r ? launchers[i].rank : launchers[i].size,
				 r ? launchers[i].size : launchers[i].rank);
			return PS_EINVAL;
		}
		if (parse_count(r, &out->rank) != PS_OK) {
			snprintf(why, whylen, "%s = '%s' is not a rank",
				 launchers[i].rank, r);
			return PS_EINVAL;
		}
		if (parse_count(s, &out->size) != PS_OK || out->size < 1) {
			snprintf(why, whylen, "%s = '%s' is not a number of "
				 "processes", launchers[i].size, s);
			return PS_EINVAL;
		}
		if (out->rank >= out->size) {
			snprintf(why, whylen, "%s = %d is not below %s = %d",
				 launchers[i].rank, out->rank,
				 launchers[i].size, out->size);
			return PS_EINVAL;
		}
		return PS_OK;
	}
	snprintf(why, whylen, "no rank in the environment: --rank is for "
		 "processes started by srun (SLURM_PROCID, SLURM_NTASKS), "
		 "Open MPI's mpirun (OMPI_COMM_WORLD_RANK, "
		 "OMPI_COMM_WORLD_SIZE), a PMI launcher (PMI_RANK, "
		 "PMI_SIZE) or torchrun / a Kubernetes PyTorchJob (RANK, "
		 "WORLD_SIZE)");
	return PS_ENOENT;
}

int ps_rank_role(int rank, int servers, int workers, uint32_t *role,
		 int *index)
{
	if (rank < 0 || servers < 0 || workers < 0 ||
	    rank > servers + workers)
		return PS_EINVAL;
	if (rank == 0) {
		*role = PS_ROLE_SCHEDULER;
		*index = 0;
	} else if (rank <= servers) {
		*role = PS_ROLE_SERVER;
		*index = rank - 1;
	} else {
		*role = PS_ROLE_WORKER;
		*index = rank - 1 - servers;
	}
	return PS_OK;
}
