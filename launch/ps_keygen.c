/*
 * launch/ps_keygen.c - ps-keygen: makes a job's keys.
 *
 *   ps-keygen [--force] DIR
 *   ps-keygen --secret
 *
 * DIR/job.secret and DIR/job.key (mode 0600) and DIR/job.pub (mode 0644),
 * DIR created with mode 0700 if missing (transport/keys.h). Copy DIR to
 * every machine of the job and set security.keys_dir = DIR (the secret
 * serves security.mode = secret, sealed and auto, the pair curve). --secret
 * prints a fresh secret alone, for ORDO_JOB_SECRET. ps-launch makes what
 * a job needs by itself when keys_dir is empty. Exit status: 0 written,
 * 1 an error, 2 usage.
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
		"       ps-keygen --secret\n"
		"Writes a job's keys: DIR/job.secret (the job's secret, for\n"
		"security.mode = secret, sealed and auto), DIR/job.key and\n"
		"DIR/job.pub (its CURVE key pair, for security.mode = curve), the\n"
		"first two mode 0600, creating DIR (mode 0700) if needed. Copy DIR\n"
		"to every machine of the job and set security.keys_dir = DIR there.\n"
		"--secret prints a fresh secret instead, for the environment:\n"
		"  export ORDO_JOB_SECRET=$(ps-keygen --secret)\n\n"
		"  --force    replace existing keys\n"
		"  --secret   print a fresh job secret (64 hexadecimal digits)\n"
		"  --help     this text\n"
		"  --version  print the version and exit\n\n"
		"Exit status: 0 written, 1 an error, 2 a usage error.\n");
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	int force = 0, secret = 0;
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
		} else if (strcmp(argv[i], "--secret") == 0) {
			secret = 1;
		} else if (argv[i][0] == '-' || dir) {
			fprintf(stderr, "ps-keygen: error: unexpected argument "
					"'%s'\n\n", argv[i]);
			usage(stderr);
			return 2;
		} else {
			dir = argv[i];
		}
	}
	if (secret && (dir || force)) {
		fprintf(stderr, "ps-keygen: error: --secret prints a secret "
				"and takes no directory or --force\n\n");
		usage(stderr);
		return 2;
	}
	if (secret) {
		char s[PS_SECRET_LEN + 1];
		if (ps_secret_make(s, err, sizeof(err)) != PS_OK) {
			fprintf(stderr, "ps-keygen: error: %s\n", err);
			return 1;
		}
		printf("%s\n", s);
		memset(s, 0, sizeof(s));
		return 0;
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
	printf("ps-keygen: wrote %s/job.secret and %s/job.key (0600), and "
	       "%s/job.pub\n",
	       dir, dir, dir);
	return 0;
}
