/*
 * common/cli.h - the command line shared by every ordo binary.
 *
 * Every binary accepts:
 *   --config FILE          the job's INI file (optional: defaults apply)
 *   --set section.key=VAL  override one key (repeatable, applied last)
 *   --help                 usage, the binary's own options, then exit 0
 *   --help-config          the config reference (Markdown), then exit 0
 *   --version              "NAME ordo X.Y.Z", then exit 0
 * plus the binary's own options, declared in a ps_cli_opt table.
 *
 * Precedence: defaults < --config file < ORDO_* environment < --set.
 *
 * Threads: call from main() before starting any thread.
 */
#ifndef ORDO_COMMON_CLI_H
#define ORDO_COMMON_CLI_H

#include "common/config.h"

/* One binary-specific long option ("--ready-fd N"). */
typedef struct ps_cli_opt {
	const char *name;    /* without the leading "--" */
	const char *argname; /* NULL for a flag without an argument */
	const char *help;
} ps_cli_opt;

typedef struct ps_cli_info {
	const char *prog;          /* "ps-server" */
	const char *summary;       /* one line: what the binary is for */
	const ps_cli_opt *opts;    /* extra options, terminated by {NULL} */
	/* Called for each extra option seen (arg NULL for flags). Return PS_OK
	 * or an error after writing a message into why. */
	int (*on_opt)(void *ud, const char *name, const char *arg, char *why,
		      size_t whylen);
	void *ud;
	/* The job is simulated, not run (ps-sim): it is not held to a real
	 * job's limits (ps_config_validate_job). */
	int simulated;
} ps_cli_info;

typedef enum {
	PS_CLI_RUN = 0,  /* cfg is loaded and valid: go on */
	PS_CLI_EXIT_OK,  /* --help/--version printed: exit 0 */
	PS_CLI_EXIT_ERR, /* error printed to stderr: exit 2 */
} ps_cli_status;

/*
 * Parses argv, loads the config (defaults, file, environ, --set), validates
 * it (ps_config_validate, and ps_config_validate_job unless the binary
 * only simulates the job), and prints help/version/errors. Errors go to stderr as
 * "PROG: error: MESSAGE" and a hint to try --help.
 */
ps_cli_status ps_cli_parse(int argc, char **argv, const ps_cli_info *info,
			   ps_config *cfg);

/* The exit status a program returns for a status other than PS_CLI_RUN:
 * 0 after --help/--version, 2 after an error. */
static inline int ps_cli_exit_status(ps_cli_status st)
{
	return st == PS_CLI_EXIT_OK ? 0 : 2;
}

/* The directory of the running binary (ps-launch and ps-tune start the
 * binaries beside them). PS_EIO when /proc/self/exe cannot be read. */
int ps_cli_bin_dir(char *dir, size_t cap);

#endif /* ORDO_COMMON_CLI_H */
