/*
 * model/ps_model.c - ps-model: checks model files and prints their stats.
 *
 *   ps-model check FILE                       "FILE: ok (N ops, M tensors)"
 *   ps-model stats FILE [--compute-scale X]   "key value" lines
 *
 * Exit status: 0 done, 1 the file is not a valid model, 2 usage error. The
 * tool reads model files only (no --config); arguments are parsed by hand.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/dag.h"
#include "ordo/ordo.h"

#define PROG "ps-model"

static void usage(FILE *out)
{
	fprintf(out,
	        "Usage: " PROG " COMMAND FILE [OPTIONS]\n"
	        "Checks an ordo model file (docs/model-format.md) and prints "
	        "its summary.\n"
	        "\n"
	        "Commands:\n"
	        "  check FILE              check the file; prints "
	        "\"FILE: ok (N ops, M tensors)\"\n"
	        "                          or the first error (exit 1)\n"
	        "  stats FILE              print the model's summary as "
	        "\"key value\" lines\n"
	        "\n"
	        "Options:\n"
	        "  --compute-scale X       multiply every op time by X (> 0; "
	        "default 1)\n"
	        "  --help                  this text, then exit\n"
	        "  --version               \"" PROG " (ordo X.Y.Z)\", then "
	        "exit\n");
}

static int usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* "ps-model: error: MESSAGE" and a hint; returns the exit status 2. */
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": error: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '" PROG " --help'.\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *command = NULL, *file = NULL, *scale_arg = NULL;
	double scale = 1.0;
	char err[1024];
	ps_dag *dag = NULL;
	int i, rc, options = 1;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (options && strcmp(a, "--") == 0) {
			options = 0;
		} else if (options && strcmp(a, "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (options && strcmp(a, "--version") == 0) {
			printf(PROG " (ordo " ORDO_VERSION_STRING ")\n");
			return 0;
		} else if (options && strcmp(a, "--compute-scale") == 0) {
			if (i + 1 >= argc)
				return usage_error("--compute-scale needs a "
				                   "value");
			scale_arg = argv[++i];
		} else if (options && strncmp(a, "--compute-scale=", 16) == 0) {
			scale_arg = a + 16;
		} else if (options && a[0] == '-' && a[1] != '\0') {
			return usage_error("unknown option '%s'", a);
		} else if (!command) {
			command = a;
		} else if (!file) {
			file = a;
		} else {
			return usage_error("unexpected argument '%s'", a);
		}
	}
	if (!command)
		return usage_error("no command given (check or stats)");
	if (strcmp(command, "check") != 0 && strcmp(command, "stats") != 0)
		return usage_error("unknown command '%s' (check or stats)",
		                   command);
	if (!file)
		return usage_error("%s: no model file given", command);
	if (scale_arg) {
		char *end;

		errno = 0;
		scale = strtod(scale_arg, &end);
		if (*scale_arg == '\0' || *end != '\0' || errno ||
		    !isfinite(scale) || scale <= 0)
			return usage_error("--compute-scale: '%s' is not a "
			                   "number > 0",
			                   scale_arg);
	}

	rc = ps_dag_load(file, scale, &dag, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "%s\n", err[0] ? err : ps_strerror(rc));
		return 1;
	}
	if (strcmp(command, "check") == 0)
		printf("%s: ok (%u ops, %u tensors)\n", file,
		       (unsigned)dag->nops, (unsigned)dag->ntensors);
	else
		ps_dag_print_stats(dag, stdout);
	ps_dag_free(&dag);
	if (fflush(stdout) != 0) {
		fprintf(stderr, PROG ": error: writing the output: %s\n",
		        strerror(errno));
		return 1;
	}
	return 0;
}
