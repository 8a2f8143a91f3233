/*
 * launch/ps_keygen.c - ps-keygen: writes a job's CURVE key pair.
 *
 *   ps-keygen [--force] DIR
 *
 * DIR/job.key (the secret key, mode 0600) and DIR/job.pub (mode 0644),
 * DIR created with mode 0700 if missing (transport/keys.h). Copy DIR to
 * every machine of the job and set security.mode = curve and
 * security.keys_dir = DIR. ps-launch makes a pair per job by itself when
 * keys_dir is empty. Exit status: 0 written, 1 an error, 2 usage.
 */
#include <stdio.h>
#include <string.h>

#include "ordo/error.h"
#include "ordo/ordo.h"
#include "transport/keys.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: ps-keygen [--force] DIR\n"
		"Writes a job's CURVE key pair for security.mode = curve:\n"
		"DIR/job.key (secret, mode 0600) and DIR/job.pub, creating DIR\n"
		"(mode 0700) if needed. Copy DIR to every machine of the job\n"
		"and set security.keys_dir = DIR there.\n\n"
		"  --force    replace an existing pair\n"
		"  --help     this text\n"
		"  --version  print the version and exit\n\n"
		"Exit status: 0 written, 1 an error, 2 a usage error.\n");
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	int force = 0;
	char err[1024];

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 ||
		    strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(argv[i], "--version") == 0) {
			printf("ps-keygen (ordo %s)\n", ORDO_VERSION_STRING);
			return 0;
		} else if (strcmp(argv[i], "--force") == 0) {
			force = 1;
		} else if (argv[i][0] == '-' || dir) {
			fprintf(stderr, "ps-keygen: error: unexpected argument "
					"'%s'\n\n", argv[i]);
			usage(stderr);
			return 2;
		} else {
			dir = argv[i];
		}
	}
	if (!dir) {
		fprintf(stderr, "ps-keygen: error: no directory given\n\n");
		usage(stderr);
		return 2;
	}
	if (ps_keys_generate(dir, force, err, sizeof(err)) != PS_OK) {
		fprintf(stderr, "ps-keygen: error: %s\n", err);
		return 1;
	}
	printf("ps-keygen: wrote %s/job.key (secret, 0600) and %s/job.pub\n",
	       dir, dir);
	return 0;
}
