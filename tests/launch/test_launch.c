/*
 * tests/launch/test_launch.c - ps-launch's placement: a rank from srun's,
 * Open MPI's or a PMI launcher's environment (launch/rank.h), the role of
 * a rank, and the host file of --hosts with its slots and addresses
 * (launch/hosts.h), and the shell quoting of the remote command.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "launch/hosts.h"
#include "launch/rank.h"
#include "ordo/error.h"
#include "support/tmpdir.h"

/* The fake environment: NAME=VALUE strings, NULL terminated. */
static const char *const *fake_env;

static const char *env_of(const char *name)
{
	size_t len = strlen(name);
	for (const char *const *e = fake_env; *e; e++)
		if (strncmp(*e, name, len) == 0 && (*e)[len] == '=')
			return *e + len + 1;
	return NULL;
}

static int rank_of(const char *const *env, ps_rank *r, char *why,
		   size_t whylen)
{
	fake_env = env;
	return ps_rank_from_env(env_of, r, why, whylen);
}

static void test_rank_each_launcher(void **state)
{
	(void)state;
	const char *slurm[] = {"SLURM_PROCID=3", "SLURM_NTASKS=5", NULL};
	const char *ompi[] = {"OMPI_COMM_WORLD_RANK=0",
			      "OMPI_COMM_WORLD_SIZE=9", NULL};
	const char *pmi[] = {"PMI_RANK=4", "PMI_SIZE=5", NULL};
	/* under srun an MPI-ish environment may be there too: srun's
	 * step wins */
	const char *both[] = {"PMI_RANK=1", "PMI_SIZE=2", "SLURM_PROCID=0",
			      "SLURM_NTASKS=2", NULL};
	char err[512];
	ps_rank r;

	assert_int_equal(rank_of(slurm, &r, err, sizeof(err)), PS_OK);
	assert_int_equal(r.rank, 3);
	assert_int_equal(r.size, 5);
	assert_string_equal(r.rank_var, "SLURM_PROCID");
	assert_int_equal(rank_of(ompi, &r, err, sizeof(err)), PS_OK);
	assert_int_equal(r.rank, 0);
	assert_int_equal(r.size, 9);
	assert_string_equal(r.size_var, "OMPI_COMM_WORLD_SIZE");
	assert_int_equal(rank_of(pmi, &r, err, sizeof(err)), PS_OK);
	assert_int_equal(r.rank, 4);
	assert_string_equal(r.rank_var, "PMI_RANK");
	assert_int_equal(rank_of(both, &r, err, sizeof(err)), PS_OK);
	assert_int_equal(r.rank, 0);
	assert_string_equal(r.rank_var, "SLURM_PROCID");
	/* torchrun / PyTorchJob's, after every other launcher's */
	const char *torch[] = {"RANK=2", "WORLD_SIZE=6", NULL};
	const char *torch_under_srun[] = {"RANK=2", "WORLD_SIZE=6",
					  "SLURM_PROCID=1", "SLURM_NTASKS=6",
					  NULL};
	assert_int_equal(rank_of(torch, &r, err, sizeof(err)), PS_OK);
	assert_int_equal(r.rank, 2);
	assert_int_equal(r.size, 6);
	assert_string_equal(r.rank_var, "RANK");
	assert_string_equal(r.size_var, "WORLD_SIZE");
	assert_int_equal(rank_of(torch_under_srun, &r, err, sizeof(err)),
			 PS_OK);
	assert_string_equal(r.rank_var, "SLURM_PROCID");
}

static void test_rank_errors(void **state)
{
	(void)state;
	const char *none[] = {"HOME=/root", NULL};
	const char *half[] = {"SLURM_PROCID=1", NULL};
	const char *word[] = {"PMI_RANK=one", "PMI_SIZE=2", NULL};
	const char *neg[] = {"PMI_RANK=-1", "PMI_SIZE=2", NULL};
	const char *past[] = {"OMPI_COMM_WORLD_RANK=5",
			      "OMPI_COMM_WORLD_SIZE=5", NULL};
	const char *zero[] = {"SLURM_PROCID=0", "SLURM_NTASKS=0", NULL};
	/* digits only: strtol would skip the white space */
	const char *space[] = {"SLURM_PROCID= 1", "SLURM_NTASKS=2", NULL};
	const char *minus0[] = {"RANK=\n-0", "WORLD_SIZE=2", NULL};
	char err[512];
	ps_rank r;

	assert_int_equal(rank_of(none, &r, err, sizeof(err)), PS_ENOENT);
	assert_non_null(strstr(err, "no rank in the environment"));
	assert_non_null(strstr(err, "SLURM_PROCID"));
	assert_non_null(strstr(err, "RANK, WORLD_SIZE"));
	assert_int_equal(rank_of(half, &r, err, sizeof(err)), PS_EINVAL);
	assert_string_equal(err, "SLURM_PROCID is set but SLURM_NTASKS is "
				 "not");
	assert_int_equal(rank_of(word, &r, err, sizeof(err)), PS_EINVAL);
	assert_string_equal(err, "PMI_RANK = 'one' is not a rank");
	assert_int_equal(rank_of(neg, &r, err, sizeof(err)), PS_EINVAL);
	assert_int_equal(rank_of(past, &r, err, sizeof(err)), PS_EINVAL);
	assert_string_equal(err, "OMPI_COMM_WORLD_RANK = 5 is not below "
				 "OMPI_COMM_WORLD_SIZE = 5");
	assert_int_equal(rank_of(zero, &r, err, sizeof(err)), PS_EINVAL);
	assert_int_equal(rank_of(space, &r, err, sizeof(err)), PS_EINVAL);
	assert_string_equal(err, "SLURM_PROCID = ' 1' is not a rank");
	assert_int_equal(rank_of(minus0, &r, err, sizeof(err)), PS_EINVAL);
}

static void test_roles(void **state)
{
	(void)state;
	uint32_t role;
	int idx;
	/* 2 servers, 3 workers: 0 | 1 2 | 3 4 5 */
	const struct {
		int rank;
		uint32_t role;
		int idx;
	} want[] = {{0, PS_ROLE_SCHEDULER, 0}, {1, PS_ROLE_SERVER, 0},
		    {2, PS_ROLE_SERVER, 1},    {3, PS_ROLE_WORKER, 0},
		    {5, PS_ROLE_WORKER, 2}};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_int_equal(ps_rank_role(want[i].rank, 2, 3, &role, &idx),
				 PS_OK);
		assert_int_equal(role, want[i].role);
		assert_int_equal(idx, want[i].idx);
	}
	assert_int_equal(ps_rank_role(6, 2, 3, &role, &idx), PS_EINVAL);
	assert_int_equal(ps_rank_role(-1, 2, 3, &role, &idx), PS_EINVAL);
	assert_string_equal(ps_role_name(PS_ROLE_WORKER), "worker");
}

static char dir[256];

static int setup(void **state)
{
	(void)state;
	return test_tmpdir_create(dir, sizeof(dir), "launch");
}

static int teardown(void **state)
{
	(void)state;
	return test_tmpdir_remove(dir);
}

static void test_hosts_file(void **state)
{
	(void)state;
	const char *path = test_write_file(dir, "hosts",
		"# the job's hosts\n"
		"\n"
		"localhost            # resolved here\n"
		"alice@node2 addr=10.0.0.2 slots=3\n"
		"  node3\taddr=10.0.0.3   \n");
	ps_host *h = NULL;
	int n = 0;
	char err[512];

	assert_non_null(path);
	assert_int_equal(ps_hosts_load(path, &h, &n, err, sizeof(err)), PS_OK);
	assert_int_equal(n, 3);
	assert_string_equal(h[0].dest, "localhost");
	assert_string_equal(h[0].addr, "127.0.0.1");
	assert_int_equal(h[0].slots, 1);
	assert_int_equal(h[0].line, 3);
	assert_string_equal(h[1].dest, "alice@node2");
	assert_string_equal(h[1].addr, "10.0.0.2");
	assert_int_equal(h[1].slots, 3);
	assert_string_equal(h[2].addr, "10.0.0.3");
	/* slots 0 | 1 2 3 | 4, then round again */
	const int want[] = {0, 1, 1, 1, 2, 0, 1, 1, 1, 2, 0};
	for (int r = 0; r < 11; r++)
		assert_int_equal(ps_hosts_place(h, n, r), want[r]);
	free(h);
}

/* The error for a file with text, or NULL when it loads. */
static const char *load_error(const char *text)
{
	static char err[512];
	const char *path = test_write_file(dir, "bad", text);
	ps_host *h = NULL;
	int n = 0;

	if (ps_hosts_load(path, &h, &n, err, sizeof(err)) == PS_OK) {
		free(h);
		return NULL;
	}
	/* without the directory: "bad:LINE: ..." */
	return strstr(err, "bad") ? strstr(err, "bad") : err;
}

static void test_hosts_errors(void **state)
{
	(void)state;
	char err[512];
	ps_host *h;
	int n;

	assert_string_equal(load_error("a addr=10.0.0.1\nb slots=0 "
				       "addr=10.0.0.2\n"),
			    "bad:2: slots = '0' is not a number in [1, 4096]");
	assert_string_equal(load_error("a addr=10.0.0.300\n"),
			    "bad:1: addr = '10.0.0.300' is not an IPv4 "
			    "address");
	assert_string_equal(load_error("a addr=10.0.0.1 cpus=4\n"),
			    "bad:1: unknown field 'cpus=4' (a line is: HOST "
			    "[slots=N] [addr=A.B.C.D])");
	assert_string_equal(load_error("-o addr=10.0.0.1\n"),
			    "bad:1: '-o' is not a host");
	assert_non_null(strstr(load_error("# only a comment\n\n"),
			       "no hosts in the file"));
	const char *e = load_error("no-such-host.invalid\n");
	assert_non_null(e);
	assert_non_null(strstr(e, "bad:1: cannot resolve "
				  "'no-such-host.invalid' to an IPv4 address "
				  "here"));
	assert_int_equal(ps_hosts_load("/nonexistent/hosts", &h, &n, err,
				       sizeof(err)),
			 PS_ENOENT);
	assert_string_equal(err, "--hosts /nonexistent/hosts: No such file "
				 "or directory");
}

/* The quoted length of s: 2 quotes, and ' as '\'' (4 bytes). */
static size_t quoted_len(const char *s)
{
	size_t n = 2;

	for (; *s; s++)
		n += *s == '\'' ? 4 : 1;
	return n;
}

/* The remote command for every working directory length a path can have
 * (a quote in every 7 bytes: quoting makes it longer), so that the
 * directory's end lands at every offset of the buffer: the command is
 * whole and nothing is written past its buffer (ASan). */
static void test_remote_command(void **state)
{
	const char *const env[] = {"ORDO_TRAIN_LR=0.1", "RANK=it's", NULL};
	const char *const argv[] = {"/opt/ordo/ps-server", "--config",
				    "/tmp/job's.ini", NULL};
	const char *wrapper = "exec \"$@\"; trap 'x' TERM";
	char cwd[4096];

	(void)state;
	for (size_t n = 1; n < sizeof(cwd); n++) {
		size_t want;
		char *cmd;

		for (size_t i = 0; i < n; i++)
			cwd[i] = i == 0 ? '/' : i % 7 == 3 ? '\'' : 'd';
		cwd[n] = '\0';
		cmd = ps_remote_command(cwd, n % 2 ? env : NULL, wrapper,
					argv);
		assert_non_null(cmd);
		want = strlen("cd ") + quoted_len(cwd) +
		       strlen(" 2>/dev/null; exec env") + strlen(" sh -c ") +
		       quoted_len(wrapper) + strlen(" ordo");
		for (int i = 0; n % 2 && env[i]; i++)
			want += 1 + quoted_len(env[i]);
		for (int i = 0; argv[i]; i++)
			want += 1 + quoted_len(argv[i]);
		assert_int_equal(strlen(cmd), want);
		assert_true(strncmp(cmd, "cd '/", 5) == 0);
		assert_non_null(strstr(cmd, " ordo '/opt/ordo/ps-server' "
					    "'--config' '/tmp/job'\\''s.ini'"));
		if (n % 2)
			assert_non_null(strstr(cmd, "exec env "
						    "'ORDO_TRAIN_LR=0.1' "
						    "'RANK=it'\\''s' sh -c "));
		free(cmd);
	}
}

static void test_shell_quote(void **state)
{
	(void)state;
	char out[64] = "x ";
	size_t len = 2;

	assert_int_equal(ps_shell_quote("it's $HOME", out, sizeof(out), &len),
			 PS_OK);
	assert_string_equal(out, "x 'it'\\''s $HOME'");
	assert_int_equal(len, strlen(out));
	char small[8];
	len = 0;
	assert_int_equal(ps_shell_quote("abcdefgh", small, sizeof(small),
					&len),
			 PS_EINVAL);
	len = 0;
	assert_int_equal(ps_shell_quote("", small, sizeof(small), &len),
			 PS_OK);
	assert_string_equal(small, "''");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rank_each_launcher),
		cmocka_unit_test(test_rank_errors),
		cmocka_unit_test(test_roles),
		cmocka_unit_test(test_hosts_file),
		cmocka_unit_test(test_hosts_errors),
		cmocka_unit_test(test_shell_quote),
		cmocka_unit_test(test_remote_command),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
