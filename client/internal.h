/*
 * client/internal.h - what ps-worker adds to the client library
 * (client/client.c) beyond the public API: the measures only a replay of
 * a model file makes (worker/replay.c), reported with the result at the
 * end. Not exported from libordo.so (cmake/ordo.map).
 */
#ifndef ORDO_CLIENT_INTERNAL_H
#define ORDO_CLIENT_INTERNAL_H

#include "ordo/ordo.h"

/* A replay's measures, for the job summary's replay lines and columns
 * (throughput, E, S, the straggler effect). */
typedef struct ps_replay_result {
	double wait_seconds;       /* the compute engine waited on parameters */
	double efficiency;         /* mean ordering efficiency E */
	double speedup_bound;      /* TicTac's S for the model and link */
	double samples_per_second; /* iterations done x batch / seconds */
} ps_replay_result;

/* ps_client_finish with a replay's measures (replay may be NULL: then it
 * is ps_client_finish). */
int psi_client_finish_replay(ps_client *c, const ps_client_result *result,
			     const ps_replay_result *replay);

#endif /* ORDO_CLIENT_INTERNAL_H */
