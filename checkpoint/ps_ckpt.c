/*
 * checkpoint/ps_ckpt.c - ps-ckpt: lists, shows, verifies and exports
 * checkpoints (docs/checkpoint-format.md).
 *
 *   ps-ckpt list ROOT                      one line per ckpt-* directory
 *   ps-ckpt show DIR [--config]            the manifest's record
 *   ps-ckpt verify DIR                     every byte, every checksum
 *   ps-ckpt export DIR TENSOR FILE.npy [--momentum | --second]
 *
 * DIR is a checkpoint directory or a root holding ckpt-* directories (the
 * newest complete one is used). Exit status: 0 done, 1 a bad or missing
 * checkpoint (or an export that failed), 2 usage error. Arguments are
 * parsed by hand: the tool reads no configuration.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "checkpoint/internal.h"
#include "ordo/ordo.h"

#define PROG    "ps-ckpt"
#define MAX_POS 3 /* positional arguments after the command */

typedef struct command {
	const char *name;
	const char *args; /* synopsis after the name */
	int npos;         /* positional arguments */
	/* its options (without "--"), which exclude each other: a list
	 * ending in NULL, or NULL */
	const char *const *flags;
	const char *summary; /* one line for --help */
	const char *help;    /* what it does (several lines) */
	/* flag: 1 + the index in flags of the option given; 0: none */
	int (*run)(char **pos, int flag);
} command;

static int cmd_list(char **pos, int flag);
static int cmd_show(char **pos, int flag);
static int cmd_verify(char **pos, int flag);
static int cmd_export(char **pos, int flag);

static const char *const show_flags[] = {"config", NULL};
/* 1 + the index: ps_ckpt_array's PS_CKPT_MOMENTUM, PS_CKPT_SECOND */
static const char *const export_flags[] = {"momentum", "second", NULL};

static const command commands[] = {
    {"list", "ROOT", 1, NULL,
     "the ckpt-* directories in ROOT: complete or why not",
     "Every ckpt-<12 digits> directory under ROOT, oldest first: the\n"
     "iteration, 'complete' or 'incomplete' and why (one line), the\n"
     "bytes of its files and the time it was written (UTC).\n",
     cmd_list},
    {"show", "DIR [--config]", 1, show_flags,
     "the record: iteration, layout, seed, tensors, shards",
     "The checkpoint's record: iteration, mode, layout, seed, tensors\n"
     "(index, name, elements) and shards (file, bytes, segments).\n"
     "--config prints only the configuration (INI) it was written with.\n",
     cmd_show},
    {"verify", "DIR", 1, NULL, "read every byte and check every checksum",
     "Reads every byte of every shard and checks every checksum, the\n"
     "manifest's included. Prints 'ok: ...' or the first problem (exit "
     "1).\n",
     cmd_verify},
    {"export", "DIR TENSOR FILE.npy [--momentum | --second]", 3, export_flags,
     "a tensor's values (or optimizer state) as NumPy .npy",
     "Writes a tensor (by name, or by index) as NumPy .npy (format 1.0,\n"
     "'<f4', shape (numel,)): its values; --momentum: its optimizer\n"
     "momentum (first moment); --second: its second moment (Adam,\n"
     "AdamW). What a checkpoint does not store is exported as zeros.\n",
     cmd_export},
    {NULL, NULL, 0, NULL, NULL, NULL, NULL},
};

static void usage(FILE *out)
{
	fprintf(out, "Usage: " PROG " COMMAND ARGS... [OPTIONS]\n"
	             "Lists, shows, verifies and exports ordo checkpoints "
	             "(docs/checkpoint-format.md).\n\nCommands:\n");
	for (const command *c = commands; c->name; c++) {
		int n = fprintf(out, "  %s %s", c->name, c->args);

		if (n > 26)
			fprintf(out, "\n%28s%s\n", "", c->summary);
		else
			fprintf(out, "%*s%s\n", 28 - n, "", c->summary);
	}
	fprintf(out,
	        "\nDIR is a checkpoint directory (ROOT/ckpt-<12 digits>) or "
	        "a ROOT holding\nsuch directories: then the newest complete "
	        "checkpoint in it.\n"
	        "\nOptions:\n"
	        "  --help      this text; after a command, that command's "
	        "help\n"
	        "  --version   \"" PROG " (ordo X.Y.Z)\", then exit\n"
	        "\nExit status: 0 done, 1 a bad or missing checkpoint (or a "
	        "failed export),\n2 a usage error.\n");
}

static void command_usage(const command *c)
{
	printf("Usage: " PROG " %s %s\n\n%s", c->name, c->args, c->help);
	if (c->npos > 0 && strcmp(c->name, "list") != 0)
		printf("\nDIR may also be a ROOT holding ckpt-* directories: "
		       "the newest complete\none is used.\n");
}

/* "ps-ckpt: error: MESSAGE" (and, for a usage error, a hint). */
static int report(int status, const char *fmt, va_list ap)
{
	fprintf(stderr, PROG ": error: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, status == 2 ? "\nTry '" PROG " --help'.\n" : "\n");
	return status;
}

static int usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static int failure(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A usage error: returns the exit status 2. */
static int usage_error(const char *fmt, ...)
{
	va_list ap;
	int st;

	va_start(ap, fmt);
	st = report(2, fmt, ap);
	va_end(ap);
	return st;
}

/* A bad checkpoint or a failed command: returns the exit status 1. */
static int failure(const char *fmt, ...)
{
	va_list ap;
	int st;

	va_start(ap, fmt);
	st = report(1, fmt, ap);
	va_end(ap);
	return st;
}

static const char *human(uint64_t bytes, char *buf, size_t cap)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, cap, "%" PRIu64 " B", bytes);
	else
		snprintf(buf, cap, "%.1f %s", v, units[u]);
	return buf;
}

/* ---- DIR: a checkpoint, or a root of checkpoints ------------------------ */

/* The checkpoint directory DIR stands for, into buf; 0, or the exit
 * status after a message. */
static int resolve(const char *dir, char *buf, size_t cap)
{
	char path[PS_CKPT_PATH_MAX], why[PS_CKPT_PATH_MAX + 256];
	const char *base = strrchr(dir, '/');
	uint64_t it, *iters;
	struct stat st;
	size_t n;
	int rc;

	base = base ? base + 1 : dir;
	snprintf(path, sizeof(path), "%s/%s", dir, PS_CKPT_MANIFEST);
	if (stat(path, &st) == 0 || psi_ckpt_parse_name(base, &it) == 0 ||
	    stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(buf, cap, "%s",
		         dir); /* opening it says what is wrong */
		return 0;
	}
	rc = psi_ckpt_scan(dir, &iters, &n, why, sizeof(why));
	if (rc)
		return failure("%s", why);
	free(iters);
	if (n == 0)
		return failure("%s: not a checkpoint (no %s) and no ckpt-* "
		               "directory in it",
		               dir, PS_CKPT_MANIFEST);
	if (ps_ckpt_latest(dir, buf, cap, NULL) != PS_OK)
		return failure("%s: none of its %zu ckpt-* directories is a "
		               "complete checkpoint ('" PROG " list %s' says "
		               "why)",
		               dir, n, dir);
	return 0;
}

/* Opens DIR (resolved); 0, or the exit status after a message. */
static int open_dir(const char *dir, ps_ckpt **ck_p)
{
	char path[PS_CKPT_PATH_MAX], why[PS_CKPT_PATH_MAX + 256];
	int st = resolve(dir, path, sizeof(path));

	if (st)
		return st;
	if (ps_ckpt_open(path, ck_p, why, sizeof(why)) != PS_OK)
		return failure("%s", why);
	return 0;
}

/* ---- list --------------------------------------------------------------- */

/* Bytes of the regular files in dir, and the newest modification time. */
static uint64_t dir_size(const char *dir, time_t *mtime)
{
	char path[PS_CKPT_PATH_MAX];
	uint64_t total = 0;
	struct dirent *de;
	struct stat st;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >=
		        (int)sizeof(path) ||
		    lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		total += (uint64_t)st.st_size;
		if (st.st_mtime > *mtime)
			*mtime = st.st_mtime;
	}
	closedir(d);
	return total;
}

static int cmd_list(char **pos, int flag)
{
	char path[PS_CKPT_PATH_MAX], why[PS_CKPT_PATH_MAX + 256];
	const char *root = pos[0];
	size_t rootlen = strlen(root), n;
	uint64_t *iters;
	int rc;

	(void)flag;
	rc = psi_ckpt_scan(root, &iters, &n, why, sizeof(why));
	if (rc)
		return failure("%s", why);
	if (n == 0)
		printf("no checkpoints under %s\n", root);
	else
		printf("%-14s %-10s %10s  %-19s  %s\n", "iteration", "status",
		       "size", "written (UTC)", "(why incomplete)");
	for (size_t i = 0; i < n; i++) {
		char size[32], date[32] = "-";
		const char *problem = "";
		time_t mtime = 0;
		struct tm tm;
		uint64_t bytes;

		ps_ckpt_path(root, iters[i], path, sizeof(path));
		rc = psi_ckpt_probe(path, iters[i], why, sizeof(why));
		if (rc) {
			/* the message relative to the root */
			problem = why;
			if (strncmp(why, root, rootlen) == 0 &&
			    why[rootlen] == '/')
				problem = why + rootlen + 1;
		}
		bytes = dir_size(path, &mtime);
		if (mtime && gmtime_r(&mtime, &tm))
			strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S", &tm);
		printf("%-14" PRIu64 " %-10s %10s  %s%s%s\n", iters[i],
		       rc ? "incomplete" : "complete",
		       human(bytes, size, sizeof(size)), date, rc ? "  " : "",
		       problem);
	}
	free(iters);
	return 0;
}

/* ---- show, verify ------------------------------------------------------- */

static int cmd_show(char **pos, int config_only)
{
	const ps_ckpt_meta *m;
	const ps_tensor_desc *t;
	uint64_t total = 0;
	char size[32];
	ps_ckpt *ck;
	int st = open_dir(pos[0], &ck);

	if (st)
		return st;
	m = ps_ckpt_info(ck);
	if (config_only) {
		fputs(m->config_ini, stdout);
		ps_ckpt_close(&ck);
		return 0;
	}
	t = ps_ckpt_tensors(ck);
	for (uint32_t i = 0; i < ck->ntensors; i++)
		total += t[i].numel;
	printf("checkpoint  %s\n", ps_ckpt_dir(ck));
	printf("iteration   %" PRIu64 "\n", m->iteration);
	printf("mode        %s\n", m->mode);
	printf("layout      %u workers, %u servers, partition size %" PRIu64
	       " bytes, preset %s\n",
	       m->workers, m->servers, m->partition_size,
	       m->preset[0] ? m->preset : "(none)");
	printf("seed        %" PRId64 "\n", m->seed);
	printf("tensors     %u (%" PRIu64 " elements, %s)\n", ck->ntensors,
	       total, human(total * PS_ELEM_SIZE, size, sizeof(size)));
	for (uint32_t i = 0; i < ck->ntensors; i++)
		printf("  %-6u %-40s %" PRIu64 "\n", i, t[i].name, t[i].numel);
	printf("shards      %u\n", ck->nshards);
	for (uint32_t i = 0; i < ck->nshards; i++) {
		const psi_ckpt_shard *sh = &ck->shards[i];
		const char *name = strrchr(sh->path, '/');

		printf("  %-16s %14" PRIu64 " bytes %8u segments\n",
		       name ? name + 1 : sh->path, sh->bytes, sh->nsegs);
	}
	ps_ckpt_close(&ck);
	return 0;
}

static int cmd_verify(char **pos, int flag)
{
	char why[PS_CKPT_PATH_MAX + 256], size[32];
	uint64_t bytes = 0;
	ps_ckpt *ck;
	int st = open_dir(pos[0], &ck);

	(void)flag;
	if (st)
		return st;
	if (ps_ckpt_verify(ck, why, sizeof(why)) != PS_OK) {
		ps_ckpt_close(&ck);
		return failure("%s", why);
	}
	for (uint32_t i = 0; i < ck->nshards; i++)
		bytes += ck->shards[i].bytes;
	printf("ok: %s: iteration %" PRIu64 ", %u tensors, %u shards, "
	       "%zu segments, %s checked\n",
	       ps_ckpt_dir(ck), ck->meta.iteration, ck->ntensors, ck->nshards,
	       ck->nsegs, human(bytes, size, sizeof(size)));
	ps_ckpt_close(&ck);
	return 0;
}

/* ---- export ------------------------------------------------------------- */

/* The index of tensor `name` (a name, or else a decimal index), or -1. */
static int64_t find_tensor(const ps_ckpt *ck, const char *name)
{
	char *end;
	unsigned long long v;

	for (uint32_t i = 0; i < ck->ntensors; i++)
		if (strcmp(ck->tensors[i].name, name) == 0)
			return i;
	errno = 0;
	v = strtoull(name, &end, 10);
	if (name[0] >= '0' && name[0] <= '9' && *end == '\0' && !errno &&
	    v < ck->ntensors)
		return (int64_t)v;
	return -1;
}

static int cmd_export(char **pos, int flag)
{
	ps_ckpt_array array = (ps_ckpt_array)flag; /* see export_flags */
	char why[PS_CKPT_PATH_MAX + 256], names[512] = "";
	int64_t t;
	ps_ckpt *ck;
	int st = open_dir(pos[0], &ck);

	if (st)
		return st;
	t = find_tensor(ck, pos[1]);
	if (t < 0) {
		size_t len = 0;
		uint32_t shown = ck->ntensors < 8 ? ck->ntensors : 8;

		for (uint32_t i = 0; i < shown && len < sizeof(names); i++)
			len += (size_t)snprintf(
			    names + len, sizeof(names) - len, "%s'%s'",
			    i ? ", " : "", ck->tensors[i].name);
		st = failure("%s has no tensor '%s' (its %u tensors: %s%s)",
		             ps_ckpt_dir(ck), pos[1], ck->ntensors, names,
		             ck->ntensors > shown ? ", ..." : "");
		ps_ckpt_close(&ck);
		return st;
	}
	if (ps_ckpt_export_npy(ck, (uint32_t)t, array, pos[2], why,
	                       sizeof(why)) != PS_OK) {
		ps_ckpt_close(&ck);
		return failure("%s", why);
	}
	printf("ok: %s: tensor %" PRId64 " '%s' (%" PRIu64 " elements, %s)\n",
	       pos[2], t, ck->tensors[t].name, ck->tensors[t].numel,
	       psi_ckpt_array_name(array));
	ps_ckpt_close(&ck);
	return 0;
}

/* ---- main --------------------------------------------------------------- */

/* 1 + the index of c's option `name` (without "--"); 0: none such. */
static int find_flag(const command *c, const char *name)
{
	for (int f = 0; c->flags && c->flags[f]; f++)
		if (strcmp(name, c->flags[f]) == 0)
			return f + 1;
	return 0;
}

int main(int argc, char **argv)
{
	const command *cmd = NULL;
	char *pos[MAX_POS + 1];
	bool options = true, help = false;
	int npos = 0, flag = 0, st;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (options && strcmp(a, "--") == 0) {
			options = false;
		} else if (options && strcmp(a, "--help") == 0) {
			help = true;
		} else if (options && strcmp(a, "--version") == 0) {
			printf(PROG " (ordo " ORDO_VERSION_STRING ")\n");
			return 0;
		} else if (options && a[0] == '-' && a[1] == '-' && cmd &&
		           find_flag(cmd, a + 2) > 0) {
			int f = find_flag(cmd, a + 2);

			if (flag && flag != f)
				return usage_error("%s: --%s and --%s exclude "
				                   "each other",
				                   cmd->name,
				                   cmd->flags[flag - 1],
				                   cmd->flags[f - 1]);
			flag = f;
		} else if (options && a[0] == '-' && a[1] != '\0') {
			return usage_error("unknown option '%s'%s%s", a,
			                   cmd ? " for " : "",
			                   cmd ? cmd->name : "");
		} else if (!cmd) {
			for (const command *c = commands; c->name; c++)
				if (strcmp(a, c->name) == 0)
					cmd = c;
			if (!cmd)
				return usage_error("unknown command '%s' "
				                   "(list, show, verify or "
				                   "export)",
				                   a);
		} else if (npos < cmd->npos) {
			pos[npos++] = argv[i];
		} else {
			return usage_error("%s: unexpected argument '%s'",
			                   cmd->name, a);
		}
	}
	if (help) {
		if (cmd)
			command_usage(cmd);
		else
			usage(stdout);
		return 0;
	}
	if (!cmd)
		return usage_error("no command given (list, show, verify or "
		                   "export)");
	if (npos < cmd->npos)
		return usage_error("%s needs %s", cmd->name, cmd->args);
	pos[npos] = NULL;
	st = cmd->run(pos, flag);
	if (fflush(stdout) != 0) {
		fprintf(stderr, PROG ": error: writing the output: %s\n",
		        strerror(errno));
		return 1;
	}
	return st;
}
