/*
 * tests/fuzz/fuzz_rank.c - libFuzzer harness for ps-launch --rank's
 * reading of the launcher's environment (launch/rank.h:
 * ps_rank_from_env) and the role of a rank (ps_rank_role).
 *
 * Input: byte 0 says which of the eight variables are set (bit i: the
 * i-th of SLURM_PROCID, SLURM_NTASKS, OMPI_COMM_WORLD_RANK,
 * OMPI_COMM_WORLD_SIZE, PMI_RANK, PMI_SIZE, RANK, WORLD_SIZE); byte 1
 * splits the job into servers and workers; the rest is the values of the
 * set variables, in that order, separated by '\n'. The harness sets them
 * in its own environment (setenv; the others unset) and reads them with
 * getenv, as ps-launch does.
 *
 * Oracle: every error has a message, and an error is PS_ENOENT exactly
 * when no variable is set; a rank read is of the first launcher with a
 * variable set, both of its values are decimal digits only and
 * 0 <= rank < size; for a job of that size, ps_rank_role gives rank 0 the
 * scheduler, the next ranks the servers and the rest the workers, each
 * index within its kind, and refuses the ranks outside the job.
 */
#include <string.h>

#include "common/log.h"
#include "launch/rank.h"
#include "ordo/error.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

FUZZ_QUIET_INITIALIZE

static const char *const vars[8] = {
	"SLURM_PROCID",         "SLURM_NTASKS", "OMPI_COMM_WORLD_RANK",
	"OMPI_COMM_WORLD_SIZE", "PMI_RANK",     "PMI_SIZE",
	"RANK",                 "WORLD_SIZE",
};

/* ps-launch's: getenv */
static const char *env_get(const char *name)
{
	return getenv(name);
}

static int digits_only(const char *s, int v)
{
	char again[16];
	if (!*s || strspn(s, "0123456789") != strlen(s))
		return 0;
	s += strspn(s, "0"); /* leading zeros are allowed */
	snprintf(again, sizeof(again), "%d", v);
	return strcmp(*s ? s : "0", again) == 0;
}

static void check_roles(int rank, int size, unsigned split)
{
	/* a job of size processes: 1 scheduler, S servers, W workers */
	int servers = (int)((long)(size - 1) * (long)split / 255);
	int workers = size - 1 - servers;
	uint32_t role = 0;
	int index = -1;

	FUZZ_CHECK(ps_rank_role(rank, servers, workers, &role, &index) ==
			   PS_OK,
		   "rank %d of %d refused", rank, size);
	if (rank == 0)
		FUZZ_CHECK(role == PS_ROLE_SCHEDULER && index == 0,
			   "rank 0: role %u index %d", role, index);
	else if (rank <= servers)
		FUZZ_CHECK(role == PS_ROLE_SERVER && index == rank - 1 &&
				   index < servers,
			   "rank %d: role %u index %d", rank, role, index);
	else
		FUZZ_CHECK(role == PS_ROLE_WORKER &&
				   index == rank - 1 - servers &&
				   index < workers,
			   "rank %d: role %u index %d", rank, role, index);
	FUZZ_CHECK(ps_rank_role(size, servers, workers, &role, &index) ==
			       PS_EINVAL &&
		           ps_rank_role(-1, servers, workers, &role, &index) ==
			       PS_EINVAL,
		   "a rank outside a job of %d accepted", size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[1024];
	const char *values[8] = {0};
	ps_rank r;

	if (size < 2)
		return 0;
	unsigned set = data[0], split = data[1];
	char *buf = malloc(size - 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 2, size - 2);
	buf[size - 2] = '\0';
	char *p = buf;
	for (int i = 0; i < 8; i++) {
		if (!(set & (1u << i))) {
			unsetenv(vars[i]);
			continue;
		}
		values[i] = p;
		char *nl = strchr(p, '\n');
		if (nl) {
			*nl = '\0';
			p = nl + 1;
		} else {
			p += strlen(p);
		}
		setenv(vars[i], values[i], 1);
	}

	memset(&r, 0, sizeof(r));
	why[0] = '\0';
	int rc = ps_rank_from_env(env_get, &r, why, sizeof(why));
	if (rc != PS_OK) {
		FUZZ_CHECK(why[0] != '\0', "an error without a message");
		FUZZ_CHECK((rc == PS_ENOENT) == (set == 0),
			   "error %d with variables 0x%02x: %s", rc, set, why);
		FUZZ_CHECK(rc == PS_ENOENT || rc == PS_EINVAL, "error %d", rc);
		free(buf);
		return 0;
	}
	int first = 0;
	while (!(set & (3u << (2 * first))))
		first++;
	FUZZ_CHECK(strcmp(r.rank_var, vars[2 * first]) == 0 &&
			   strcmp(r.size_var, vars[2 * first + 1]) == 0,
		   "read %s/%s, not the first launcher's %s/%s", r.rank_var,
		   r.size_var, vars[2 * first], vars[2 * first + 1]);
	FUZZ_CHECK(r.rank >= 0 && r.size >= 1 && r.rank < r.size,
		   "rank %d of %d", r.rank, r.size);
	FUZZ_CHECK(digits_only(values[2 * first], r.rank),
		   "%s = '%s' read as %d", r.rank_var, values[2 * first],
		   r.rank);
	FUZZ_CHECK(digits_only(values[2 * first + 1], r.size),
		   "%s = '%s' read as %d", r.size_var, values[2 * first + 1],
		   r.size);
	check_roles(r.rank, r.size, split);
	free(buf);
	return 0;
}
