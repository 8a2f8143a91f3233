/*
 * common/cli.c - the command line shared by every ordo binary.
 *
 * Parsed by hand (no getopt state): argv is read in two passes, first to
 * recognise every argument (errors for unknown options, missing arguments
 * and stray positional arguments), then to act: help/version, the binary's
 * own options, and the configuration layers in precedence order: defaults,
 * --config file, ORDO_* environment, each --set in command-line order,
 * then ps_config_validate() and, unless the binary only simulates the job,
 * ps_config_validate_job().
 *
 * Threads: call from main() before starting any thread (reads environ).
 */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cli.h"

#define HELP_COL 28 /* column where option help starts */
#define WIDTH    79

typedef enum {
	ARG_CONFIG,
	ARG_SET,
	ARG_HELP,
	ARG_HELP_CONFIG,
	ARG_VERSION,
	ARG_EXTRA,
} arg_kind;

typedef struct builtin {
	const char *name;
	const char *argname;
	arg_kind kind;
	const char *help;
} builtin;

static const builtin builtins[] = {
    {"config", "FILE", ARG_CONFIG,
     "the job's INI file (without it the built-in defaults apply; if "
     "given twice, the last one is used)"},
    {"set", "SECTION.KEY=VALUE", ARG_SET,
     "override one key, e.g. --set train.lr=0.05 (repeatable, applied in "
     "order, after the file and the environment)"},
    {"help", NULL, ARG_HELP, "print this help and exit"},
    {"help-config", NULL, ARG_HELP_CONFIG,
     "print every configuration key (Markdown) and exit"},
    {"version", NULL, ARG_VERSION, "print the version and exit"},
    {NULL, NULL, 0, NULL},
};

typedef struct cli_arg {
	arg_kind kind;
	const char *name; /* option name without "--" */
	const char *arg;  /* NULL for flags */
} cli_arg;

static const char *prog_name(const ps_cli_info *info, int argc, char **argv)
{
	const char *slash;

	if (info && info->prog)
		return info->prog;
	if (argc > 0 && argv[0] && argv[0][0]) {
		slash = strrchr(argv[0], '/');
		return slash ? slash + 1 : argv[0];
	}
	return "ordo";
}

static void cli_error(const char *prog, const char *msg)
{
	fprintf(stderr, "%s: error: %s\nTry '%s --help'.\n", prog, msg, prog);
}

/* Prints text word-wrapped from column col (the cursor is at column at,
 * at most col). */
static void wrap(FILE *out, const char *text, int at, int col)
{
	const char *p = text;

	fprintf(out, "%*s", col - at, "");
	at = col;
	while (*p) {
		size_t w = strcspn(p, " ");

		if (at > col && at + 1 + (int)w > WIDTH) {
			fprintf(out, "\n%*s", col, "");
			at = col;
		} else if (at > col) {
			fputc(' ', out);
			at++;
		}
		fwrite(p, 1, w, out);
		at += (int)w;
		p += w;
		p += strspn(p, " ");
	}
	fputc('\n', out);
}

static void print_opt(FILE *out, const char *name, const char *argname,
                      const char *help)
{
	int n;

	if (argname)
		n = fprintf(out, "  --%s %s", name, argname);
	else
		n = fprintf(out, "  --%s", name);
	if (n < 0 || n + 2 > HELP_COL) {
		fputc('\n', out);
		n = 0;
	}
	wrap(out, help ? help : "", n, HELP_COL);
}

static void print_help(const char *prog, const ps_cli_info *info)
{
	FILE *out = stdout;
	bool own = info && info->opts && info->opts[0].name;

	fprintf(out,
	        "Usage: %s [--config FILE] [--set SECTION.KEY=VALUE]...%s\n",
	        prog, own ? " [OPTION]..." : "");
	if (info && info->summary)
		wrap(out, info->summary, 0, 0);
	fprintf(out, "\nCommon options:\n");
	for (const builtin *b = builtins; b->name; b++)
		print_opt(out, b->name, b->argname, b->help);
	if (own) {
		fprintf(out, "\nOptions of %s:\n", prog);
		for (const ps_cli_opt *o = info->opts; o->name; o++)
			print_opt(out, o->name, o->argname, o->help);
	}
	fprintf(out, "\nConfiguration precedence, lowest first:\n");
	wrap(out,
	     "built-in defaults < the --config file < ORDO_<SECTION>_<KEY> "
	     "environment variables (e.g. ORDO_TRAIN_LR for train.lr) < --set, "
	     "in command-line order. Any other variable starting with ORDO_ "
	     "is an error, but ORDO_JOB_SECRET: the job's secret "
	     "(security.mode).",
	     0, 2);
	fprintf(out, "\nRun '%s --help-config' for every configuration key.\n",
	        prog);
	fflush(out);
}

/* Finds the option named by name[0..len). */
static int lookup(const ps_cli_info *info, const char *name, size_t len,
                  arg_kind *kind_p, const char **argname_p,
                  const char **canon_p)
{
	for (const builtin *b = builtins; b->name; b++) {
		if (strlen(b->name) == len &&
		    strncmp(b->name, name, len) == 0) {
			*kind_p = b->kind;
			*argname_p = b->argname;
			*canon_p = b->name;
			return PS_OK;
		}
	}
	if (info && info->opts) {
		for (const ps_cli_opt *o = info->opts; o->name; o++) {
			if (strlen(o->name) == len &&
			    strncmp(o->name, name, len) == 0) {
				*kind_p = ARG_EXTRA;
				*argname_p = o->argname;
				*canon_p = o->name;
				return PS_OK;
			}
		}
	}
	return PS_ENOENT;
}

/* Pass 1: recognises every argument into args (nargs_p entries). */
static int scan(int argc, char **argv, const ps_cli_info *info, cli_arg *args,
                int *nargs_p, char *why, size_t whylen)
{
	int n = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *eq, *argname, *canon;
		arg_kind kind;
		size_t len;

		if (strcmp(a, "--") == 0) {
			if (i + 1 < argc) {
				snprintf(why, whylen,
				         "unexpected argument '%s' (no "
				         "positional arguments are taken)",
				         argv[i + 1]);
				return PS_EINVAL;
			}
			break;
		}
		if (strncmp(a, "--", 2) != 0) {
			if (a[0] == '-' && a[1] != '\0')
				snprintf(why, whylen, "unknown option '%s'", a);
			else
				snprintf(why, whylen,
				         "unexpected argument '%s' (no "
				         "positional arguments are taken)",
				         a);
			return PS_EINVAL;
		}
		a += 2;
		eq = strchr(a, '=');
		len = eq ? (size_t)(eq - a) : strlen(a);
		if (lookup(info, a, len, &kind, &argname, &canon) != PS_OK) {
			snprintf(why, whylen, "unknown option '--%.*s'",
			         (int)len, a);
			return PS_EINVAL;
		}
		args[n].kind = kind;
		args[n].name = canon;
		args[n].arg = NULL;
		if (!argname) {
			if (eq) {
				snprintf(why, whylen,
				         "option '--%s' takes no argument",
				         canon);
				return PS_EINVAL;
			}
		} else if (eq) {
			args[n].arg = eq + 1;
		} else if (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) {
			args[n].arg = argv[++i];
		} else {
			snprintf(why, whylen,
			         "option '--%s' needs an argument (%s)", canon,
			         argname);
			return PS_EINVAL;
		}
		n++;
	}
	*nargs_p = n;
	return PS_OK;
}

/* Applies the configuration layers in precedence order. */
static int load(const cli_arg *args, int nargs, int simulated, ps_config *cfg,
                char *why, size_t whylen)
{
	const char *path = NULL;
	int rc;

	ps_config_defaults(cfg);
	for (int i = 0; i < nargs; i++)
		if (args[i].kind == ARG_CONFIG)
			path = args[i].arg;
	if (path) {
		rc = ps_config_load_file(cfg, path, why, whylen);
		if (rc != PS_OK)
			return rc;
	}
	rc = ps_config_apply_env(cfg, environ, why, whylen);
	if (rc != PS_OK)
		return rc;
	for (int i = 0; i < nargs; i++) {
		const char *eq;
		char key[128];

		if (args[i].kind != ARG_SET)
			continue;
		eq = strchr(args[i].arg, '=');
		if (!eq || eq == args[i].arg) {
			snprintf(why, whylen,
			         "--set: '%s' is not of the form "
			         "section.key=value",
			         args[i].arg);
			return PS_ECONFIG;
		}
		snprintf(key, sizeof(key), "%.*s", (int)(eq - args[i].arg),
		         args[i].arg);
		rc = ps_config_set_kv(cfg, key, eq + 1, "--set", why, whylen);
		if (rc != PS_OK)
			return rc;
	}
	ps_config_finalize(cfg);
	rc = ps_config_validate(cfg, why, whylen);
	if (rc == PS_OK && !simulated)
		rc = ps_config_validate_job(cfg, why, whylen);
	return rc;
}

ps_cli_status ps_cli_parse(int argc, char **argv, const ps_cli_info *info,
                           ps_config *cfg)
{
	const char *prog = prog_name(info, argc, argv);
	ps_cli_status status = PS_CLI_EXIT_ERR;
	char err[1024] = "";
	cli_arg *args;
	ps_config *tmp;
	int nargs = 0;

	args = calloc((size_t)(argc > 0 ? argc : 1), sizeof(*args));
	tmp = malloc(sizeof(*tmp));
	if (!args || !tmp) {
		cli_error(prog, "out of memory");
		goto free_all;
	}
	if (scan(argc, argv, info, args, &nargs, err, sizeof(err)) != PS_OK) {
		cli_error(prog, err);
		goto free_all;
	}
	/* The first of --help, --help-config, --version wins. */
	for (int i = 0; i < nargs; i++) {
		switch (args[i].kind) {
		case ARG_HELP:
			print_help(prog, info);
			status = PS_CLI_EXIT_OK;
			goto free_all;
		case ARG_HELP_CONFIG:
			ps_config_write_reference(stdout);
			fflush(stdout);
			status = PS_CLI_EXIT_OK;
			goto free_all;
		case ARG_VERSION:
			printf("%s (ordo %s)\n", prog, ORDO_VERSION_STRING);
			fflush(stdout);
			status = PS_CLI_EXIT_OK;
			goto free_all;
		default:
			break;
		}
	}
	for (int i = 0; i < nargs; i++) {
		int rc;

		if (args[i].kind != ARG_EXTRA || !info->on_opt)
			continue;
		err[0] = '\0';
		rc = info->on_opt(info->ud, args[i].name, args[i].arg, err,
		                  sizeof(err));
		if (rc != PS_OK) {
			if (!err[0])
				snprintf(err, sizeof(err),
				         "invalid option '--%s': %s",
				         args[i].name, ps_strerror(rc));
			cli_error(prog, err);
			goto free_all;
		}
	}
	if (load(args, nargs, info->simulated, tmp, err, sizeof(err)) !=
	    PS_OK) {
		cli_error(prog, err);
		goto free_all;
	}
	*cfg = *tmp;
	status = PS_CLI_RUN;
free_all:
	free(tmp);
	free(args);
	return status;
}

int ps_cli_bin_dir(char *dir, size_t cap)
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
	char *slash;

	if (n <= 0)
		return PS_EIO;
	path[n] = '\0';
	slash = strrchr(path, '/');
	if (!slash)
		return PS_EIO;
	*slash = '\0';
	snprintf(dir, cap, "%s", path);
	return PS_OK;
}
