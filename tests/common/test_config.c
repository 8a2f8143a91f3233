/*
 * tests/common/test_config.c - the configuration table, its loaders (file,
 * environment, --set), validation, the INI writer and reference, and the
 * shared command line (ps_cli_parse).
 *
 * Temporary files live in one mkdtemp() directory, removed at the end.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "support/tmpdir.h"

/* The config sections, as error messages list them. */
#define SECTIONS                                                               \
	"cluster, transport, security, model, worker, server, train, "         \
	"scheduling, log, output, checkpoint, fault, metrics, link, sim, tune"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cli.h"
#include "common/config.h"
#include "scheduling/gate.h"
#include "scheduling/order.h"

static char tmpdir[64];

/* ---- helpers ---------------------------------------------------------- */

/* Writes text to tmpdir/name; returns the path (static, one per call). */
static const char *write_file(const char *name, const char *text)
{
	const char *path = test_write_file(tmpdir, name, text);

	assert_non_null(path);
	return path;
}


/* Loads text as a file named name into cfg (over defaults). */
static int load_text(ps_config *cfg, const char *name, const char *text,
                     char *why, size_t whylen, const char **path_p)
{
	const char *path = write_file(name, text);

	if (path_p)
		*path_p = path;
	ps_config_defaults(cfg);
	return ps_config_load_file(cfg, path, why, whylen);
}

/* Asserts that loading text fails with exactly "PATH:LINE: rest". */
static void expect_file_error(const char *text, int line, const char *rest)
{
	char err[1024], want[1200];
	const char *path;
	ps_config cfg, before;

	assert_int_equal(
	    load_text(&cfg, "bad.ini", text, err, sizeof(err), &path),
	    PS_ECONFIG);
	snprintf(want, sizeof(want), "%s:%d: %s", path, line, rest);
	assert_string_equal(err, want);
	/* cfg is untouched on error */
	ps_config_defaults(&before);
	assert_memory_equal(&cfg, &before, sizeof(cfg));
}

static void expect_set_error(const char *key, const char *value,
                             const char *want)
{
	ps_config cfg;
	char err[1024];

	ps_config_defaults(&cfg);
	assert_int_equal(
	    ps_config_set_kv(&cfg, key, value, "--set", err, sizeof(err)),
	    PS_ECONFIG);
	assert_string_equal(err, want);
}

static void expect_invalid(const ps_config *cfg, const char *want)
{
	char err[1024];

	assert_int_equal(ps_config_validate(cfg, err, sizeof(err)), PS_ECONFIG);
	assert_string_equal(err, want);
}

/* ... with a reason that contains `part`. */
static void expect_invalid_with(const ps_config *cfg, const char *part)
{
	char err[1024];

	assert_int_equal(ps_config_validate(cfg, err, sizeof(err)), PS_ECONFIG);
	if (!strstr(err, part))
		fail_msg("\"%s\" lacks \"%s\"", err, part);
}

static char *config_to_string(const ps_config *cfg, int reference)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	if (reference)
		ps_config_write_reference(f);
	else
		ps_config_write_ini(cfg, f);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* Runs ps_cli_parse with stdout and stderr captured. */
typedef struct cli_run {
	ps_cli_status status;
	char *out;
	char *err;
} cli_run;

static cli_run run_cli(const ps_cli_info *info, ps_config *cfg, ...)
{
	char *argv[32];
	char out_path[128], err_path[128];
	int argc = 0, saved_out, saved_err, fo, fe;
	cli_run r;
	va_list ap;

	argv[argc++] = "test-prog";
	va_start(ap, cfg);
	while ((argv[argc] = va_arg(ap, char *)) != NULL)
		argc++;
	va_end(ap);

	snprintf(out_path, sizeof(out_path), "%s/stdout.txt", tmpdir);
	snprintf(err_path, sizeof(err_path), "%s/stderr.txt", tmpdir);
	fflush(stdout);
	fflush(stderr);
	saved_out = dup(STDOUT_FILENO);
	saved_err = dup(STDERR_FILENO);
	fo = open(out_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	fe = open(err_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(saved_out >= 0 && saved_err >= 0 && fo >= 0 && fe >= 0);
	dup2(fo, STDOUT_FILENO);
	dup2(fe, STDERR_FILENO);

	r.status = ps_cli_parse(argc, argv, info, cfg);

	fflush(stdout);
	fflush(stderr);
	dup2(saved_out, STDOUT_FILENO);
	dup2(saved_err, STDERR_FILENO);
	close(saved_out);
	close(saved_err);
	close(fo);
	close(fe);
	r.out = test_read_file(out_path, NULL);
	r.err = test_read_file(err_path, NULL);
	assert_non_null(r.out);
	assert_non_null(r.err);
	return r;
}

static void cli_run_free(cli_run *r)
{
	free(r->out);
	free(r->err);
}

/* ---- fixtures --------------------------------------------------------- */

static int group_setup(void **state)
{
	char *names[64];
	int n = 0;

	(void)state;
	if (test_tmpdir_create(tmpdir, sizeof(tmpdir), "config") != 0)
		return -1;
	/* ps_cli_parse reads environ: start without any ORDO_ variable. */
	for (char **e = environ; *e && n < 64; e++)
		if (strncmp(*e, "ORDO_", 5) == 0)
			names[n++] = strndup(*e, strcspn(*e, "="));
	for (int i = 0; i < n; i++) {
		unsetenv(names[i]);
		free(names[i]);
	}
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	return test_tmpdir_remove(tmpdir);
}

/* ---- defaults and files ----------------------------------------------- */

static void test_defaults(void **state)
{
	ps_config cfg, *pcfg = NULL;
	char err[256];

	(void)state;
	ps_config_defaults(&cfg);
	assert_string_equal(cfg.cluster.scheduler_host, "127.0.0.1");
	assert_int_equal(cfg.cluster.scheduler_port, 9200);
	assert_int_equal(cfg.cluster.servers, 1);
	assert_int_equal(cfg.cluster.workers, 1);
	assert_string_equal(cfg.cluster.bind_host, "127.0.0.1");
	assert_string_equal(cfg.cluster.advertise_host, "");
	assert_int_equal(cfg.cluster.heartbeat_interval_ms, 500);
	assert_int_equal(cfg.cluster.heartbeat_timeout_ms, 5000);
	assert_int_equal(cfg.cluster.connect_timeout_ms, 10000);
	assert_int_equal(cfg.transport.type, PS_TRANSPORT_TCP);
	assert_int_equal(cfg.transport.send_timeout_ms, 10000);
	assert_int_equal(cfg.transport.io_threads, 1);
	assert_int_equal(cfg.transport.connections_per_peer, 0);
	assert_int_equal(cfg.model.name, PS_MODEL_MLP);
	assert_int_equal(cfg.model.input_dim, 32);
	assert_int_equal(cfg.model.hidden, 64);
	assert_int_equal(cfg.model.classes, 10);
	assert_int_equal(cfg.model.samples_per_worker, 1024);
	assert_int_equal(cfg.train.iterations, 20);
	assert_int_equal(cfg.train.batch, 32);
	assert_true(cfg.train.lr == 0.1);
	assert_true(cfg.train.momentum == 0.9);
	assert_int_equal(cfg.train.mode, PS_MODE_SYNC);
	assert_int_equal(cfg.train.seed, 1);
	assert_string_equal(cfg.train.dump_params, "");
	assert_int_equal(cfg.scheduling.preset, PS_PRESET_ORDO);
	/* the defaults are the ordo preset: sizes chosen at the start, tail
	 * priority both ways, fusion */
	assert_true(cfg.scheduling.partition_size == PS_SIZE_AUTO);
	assert_true(cfg.scheduling.push.credit_size == PS_SIZE_AUTO);
	assert_true(cfg.scheduling.params.credit_size == PS_SIZE_AUTO);
	assert_int_equal(cfg.scheduling.push.order, PS_ORDER_TAIL);
	assert_int_equal(cfg.scheduling.params.order, PS_ORDER_TAIL);
	assert_int_equal(cfg.scheduling.push.gate, PS_GATE_PRIORITY);
	assert_int_equal(cfg.scheduling.params.gate, PS_GATE_PRIORITY);
	assert_int_equal(cfg.scheduling.fusion, 1);
	assert_int_equal(cfg.scheduling.params_barrier, 0);
	assert_int_equal(cfg.scheduling.placement, PS_PLACE_BALANCED);
	{
		/* every key's default is what the default preset sets */
		ps_config with;
		ps_config_defaults(&with);
		assert_int_equal(ps_config_apply_preset(&with, PS_PRESET_ORDO,
		                                        err, sizeof(err)),
		                 PS_OK);
		assert_memory_equal(&with.scheduling, &cfg.scheduling,
		                    sizeof(cfg.scheduling));
	}
	assert_int_equal(cfg.log.level, PS_LOG_INFO);
	assert_int_equal(ps_config_validate(&cfg, err, sizeof(err)), PS_OK);

	/* public API */
	assert_int_equal(ps_config_new(&pcfg), PS_OK);
	assert_non_null(pcfg);
	assert_memory_equal(pcfg, &cfg, sizeof(cfg));
	assert_int_equal(ps_config_set(pcfg, "train.lr=0.5", err, sizeof(err)),
	                 PS_OK);
	assert_true(pcfg->train.lr == 0.5);
	assert_int_equal(ps_config_set(pcfg, "train.lr", err, sizeof(err)),
	                 PS_ECONFIG);
	assert_string_equal(err, "set: 'train.lr' is not of the form "
	                         "section.key=value");
	ps_config_free(&pcfg);
	assert_null(pcfg);
	ps_config_free(&pcfg); /* NULL is fine */
}

static void test_good_file(void **state)
{
	ps_config cfg;
	char err[1024];
	const char *path;

	(void)state;
	assert_int_equal(load_text(&cfg, "good.ini",
	                           "# a comment\n"
	                           "; another\n"
	                           "[cluster]\n"
	                           "servers = 3\n"
	                           "workers=4   ; inline comment\n"
	                           "scheduler_host = \"  spaced  \"\n"
	                           "\n"
	                           "[train]\n"
	                           "lr = 0.05\n"
	                           "lr = 0.025\n" /* duplicate: last wins */
	                           "mode = ASYNC\n"
	                           "seed = 9223372036854775807\n"
	                           "dump_params = /tmp/params.bin\n"
	                           "[scheduling]\n"
	                           "partition_size = 160k\n"
	                           "credit_size = 1M\n"
	                           "placement = round-robin\n"
	                           "[log]\n"
	                           "level = debug\n",
	                           err, sizeof(err), &path),
	                 PS_OK);
	assert_int_equal(cfg.cluster.servers, 3);
	assert_int_equal(cfg.cluster.workers, 4);
	assert_string_equal(cfg.cluster.scheduler_host, "  spaced  ");
	assert_true(cfg.train.lr == 0.025);
	assert_int_equal(cfg.train.mode, PS_MODE_ASYNC);
	assert_true(cfg.train.seed == INT64_MAX);
	assert_string_equal(cfg.train.dump_params, "/tmp/params.bin");
	assert_int_equal(cfg.scheduling.partition_size, 160 * 1024);
	assert_int_equal(cfg.scheduling.push.credit_size, 1024 * 1024);
	assert_int_equal(cfg.scheduling.placement, PS_PLACE_ROUND_ROBIN);
	assert_int_equal(cfg.log.level, PS_LOG_DEBUG);
	/* untouched keys keep their defaults */
	assert_int_equal(cfg.train.iterations, 20);
	assert_int_equal(ps_config_validate(&cfg, err, sizeof(err)), PS_OK);

	/* the public loader is the same */
	ps_config_defaults(&cfg);
	assert_int_equal(ps_config_load(&cfg, path, err, sizeof(err)), PS_OK);
	assert_int_equal(cfg.cluster.workers, 4);
}

static void test_demo_config(void **state)
{
	char path[1024], err[1024];
	const char *slash = strrchr(__FILE__, '/');
	ps_config cfg;

	(void)state;
	/* __FILE__ is tests/common/test_config.c, absolute under CMake */
	snprintf(path, sizeof(path), "%.*s/../../conf/local.ini",
	         slash ? (int)(slash - __FILE__) : 1, slash ? __FILE__ : ".");
	ps_config_defaults(&cfg);
	assert_int_equal(ps_config_load_file(&cfg, path, err, sizeof(err)),
	                 PS_OK);
	assert_int_equal(ps_config_validate(&cfg, err, sizeof(err)), PS_OK);
	assert_int_equal(cfg.cluster.servers, 2);
	assert_int_equal(cfg.cluster.workers, 2);
	assert_int_equal(cfg.model.name, PS_MODEL_MLP);
	assert_int_equal(cfg.train.iterations, 30);
}

static void test_file_errors(void **state)
{
	(void)state;
	expect_file_error("; comment\n[train]\nlrr = 0.1\n", 3,
	                  "unknown key 'train.lrr'; keys in section 'train': "
	                  "iterations, batch, lr, momentum, beta1, beta2, "
	                  "eps, weight_decay, mode, seed, dump_params");
	expect_file_error("[cluster]\nservers = 2\n\n\n\n[trian]\nlr = 0.1\n",
	                  7,
	                  "unknown key 'trian.lr' (section 'trian'); known "
	                  "sections: " SECTIONS);
	expect_file_error("# top\nlr = 0.1\n[train]\n", 2,
	                  "key 'lr' is outside any section; put it under a "
	                  "[section] header (known sections: " SECTIONS ")");
	expect_file_error("[train]\niterations = 3\n\n\n\n\n\n\nmode = fast\n",
	                  9, "train.mode: 'fast' is not one of: sync, async");
	expect_file_error("[cluster]\nscheduler_port = 70000\n", 2,
	                  "cluster.scheduler_port: '70000' is out of range "
	                  "[0, 65535]");
	expect_file_error("[cluster]\nservers = 2x\n", 2,
	                  "cluster.servers: '2x' is not an integer");
	expect_file_error("[cluster]\nservers = 99999999999999999999\n", 2,
	                  "cluster.servers: '99999999999999999999' is out of "
	                  "range [1, 4096]");
	expect_file_error("[train]\nmomentum = 1\n", 2,
	                  "train.momentum: '1' is out of range [0, 1)");
	expect_file_error("[train]\nlr = 100.5\n", 2,
	                  "train.lr: '100.5' is out of range [0, 100]");
	expect_file_error("[train]\nlr = nan\n", 2,
	                  "train.lr: 'nan' is not a number");
	expect_file_error(
	    "[scheduling]\npartition_size = 4MB\n", 2,
	    "scheduling.partition_size: '4MB' is not a size "
	    "(bytes: digits with an optional K, M, G or T suffix, "
	    "e.g. 4M)");
	expect_file_error("[scheduling]\npartition_size = 2\n", 2,
	                  "scheduling.partition_size: '2' is out of range "
	                  "[4, 1T]");
	expect_file_error("[scheduling]\ncredit_size = 16777216T\n", 2,
	                  "scheduling.credit_size: '16777216T' is too large "
	                  "(does not fit in 64 bits; allowed [0, 1T])");
	/* libinih syntax errors keep their line number */
	expect_file_error("[train]\nlr = 0.1\njust words\n", 3,
	                  "syntax error: expected '[section]', 'key = value' "
	                  "or a comment");
	/* the first error wins */
	expect_file_error("[train]\nmode = x\nlr = y\n", 2,
	                  "train.mode: 'x' is not one of: sync, async");
	/* an indented line continues the previous value in libinih */
	expect_file_error("[train]\niterations = 3\n  batch = 8\n", 3,
	                  "indented line 'batch = 8' would continue the value "
	                  "of 'train.iterations'; start keys at column 1 "
	                  "(continuation lines are not supported)");
}

static void test_size_values(void **state)
{
	static const struct {
		const char *text;
		uint64_t bytes;
	} good[] = {
	    {"4", 4},
	    {"1000", 1000},
	    {"160K", 160 * 1024},
	    {"160k", 160 * 1024},
	    {"4M", 4ULL << 20},
	    {"2g", 2ULL << 30},
	    {"1T", 1ULL << 40},
	    {"1099511627776", 1ULL << 40},
	};
	static const char *const bad[] = {"",      "-1", "+4",   "4MB", "4 M",
	                                  "4MB x", "M",  "0x10", "4.5M"};
	ps_config cfg;
	char err[512], want[512], buf[32];

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ps_config_defaults(&cfg);
		assert_int_equal(
		    ps_config_set_kv(&cfg, "scheduling.partition_size",
		                     good[i].text, "--set", err, sizeof(err)),
		    PS_OK);
		assert_true(cfg.scheduling.partition_size == good[i].bytes);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(want, sizeof(want),
		         "--set: scheduling.partition_size: '%s' is not a size "
		         "(bytes: digits with an optional K, M, G or T suffix, "
		         "e.g. 4M)",
		         bad[i]);
		expect_set_error("scheduling.partition_size", bad[i], want);
	}
	expect_set_error("scheduling.partition_size", "2T",
	                 "--set: scheduling.partition_size: '2T' is out of "
	                 "range [4, 1T]");
	expect_set_error(
	    "scheduling.credit_size", "18446744073709551616",
	    "--set: scheduling.credit_size: '18446744073709551616' "
	    "is too large (does not fit in 64 bits; allowed "
	    "[0, 1T])");

	ps_config_format_size(0, buf, sizeof(buf));
	assert_string_equal(buf, "0");
	ps_config_format_size(1000, buf, sizeof(buf));
	assert_string_equal(buf, "1000");
	ps_config_format_size(160 * 1024, buf, sizeof(buf));
	assert_string_equal(buf, "160K");
	ps_config_format_size(4ULL << 20, buf, sizeof(buf));
	assert_string_equal(buf, "4M");
	ps_config_format_size((4ULL << 20) + 4, buf, sizeof(buf));
	assert_string_equal(buf, "4194308");
	ps_config_format_size(3ULL << 30, buf, sizeof(buf));
	assert_string_equal(buf, "3G");
	ps_config_format_size(1ULL << 50, buf, sizeof(buf));
	assert_string_equal(buf, "1024T");
}

static void test_strings(void **state)
{
	char long_value[200], want[512], err[512], line[400];
	ps_config cfg;
	const char *path;

	(void)state;
	memset(long_value, 'h', 161);
	long_value[161] = '\0';
	expect_set_error("cluster.bind_host", long_value,
	                 "--set: cluster.bind_host: value of 161 characters is "
	                 "too long (at most 160)");
	long_value[160] = '\0';
	ps_config_defaults(&cfg);
	assert_int_equal(ps_config_set_kv(&cfg, "cluster.bind_host", long_value,
	                                  "--set", err, sizeof(err)),
	                 PS_OK);
	assert_string_equal(cfg.cluster.bind_host, long_value);
	expect_set_error("cluster.bind_host", "a ;b",
	                 "--set: cluster.bind_host: value contains a blank "
	                 "before ';', which an INI file reads as a comment");
	expect_set_error("cluster.bind_host", "a\nb",
	                 "--set: cluster.bind_host: value contains a control "
	                 "character");

	/* a line longer than libinih's buffer is refused, not split */
	memset(long_value, 'x', 190);
	long_value[190] = '\0';
	snprintf(line, sizeof(line), "[train]\ndump_params = %s\n", long_value);
	assert_int_equal(
	    load_text(&cfg, "long.ini", line, err, sizeof(err), &path),
	    PS_ECONFIG);
	snprintf(want, sizeof(want),
	         "%s:2: line is too long (204 characters; at most 199)", path);
	assert_string_equal(err, want);

	/* quotes keep an empty value */
	assert_int_equal(load_text(&cfg, "q.ini",
	                           "[cluster]\nbind_host = \"\"\n", err,
	                           sizeof(err), NULL),
	                 PS_OK);
	assert_string_equal(cfg.cluster.bind_host, "");
}

static void test_missing_file(void **state)
{
	ps_config cfg, before;
	char path[256], err[512], want[512];

	(void)state;
	snprintf(path, sizeof(path), "%s/missing.ini", tmpdir);
	snprintf(want, sizeof(want),
	         "%s: cannot open file: No such file or directory", path);
	ps_config_defaults(&cfg);
	before = cfg;
	assert_int_equal(ps_config_load_file(&cfg, path, err, sizeof(err)),
	                 PS_ENOENT);
	assert_string_equal(err, want);
	assert_memory_equal(&cfg, &before, sizeof(cfg));
	/* a directory opens but cannot be read */
	assert_int_equal(ps_config_load_file(&cfg, tmpdir, err, sizeof(err)),
	                 PS_EIO);
	snprintf(want, sizeof(want), "%s: cannot read file: Is a directory",
	         tmpdir);
	assert_string_equal(err, want);
}

static void test_set_errors(void **state)
{
	(void)state;
	expect_set_error("train.lr", "-1",
	                 "--set: train.lr: '-1' is out of range [0, 100]");
	expect_set_error(
	    "train.lrr", "1",
	    "--set: unknown key 'train.lrr'; keys in section "
	    "'train': iterations, batch, lr, momentum, beta1, beta2, eps, "
	    "weight_decay, mode, seed, dump_params");
	expect_set_error("trian.lr", "1",
	                 "--set: unknown key 'trian.lr' (section 'trian'); "
	                 "known sections: " SECTIONS);
	expect_set_error("lr", "1",
	                 "--set: 'lr' is not of the form section.key "
	                 "(sections: " SECTIONS ")");
	expect_set_error("transport.type", "udp",
	                 "--set: transport.type: 'udp' is not one of: tcp, "
	                 "rdma");
	expect_set_error("train.seed", "-1",
	                 "--set: train.seed: '-1' is out of range [0, "
	                 "9223372036854775807]");
	expect_set_error("train.iterations", " 5",
	                 "--set: train.iterations: ' 5' is not an integer");
	expect_set_error("transport.rdma_gid_index", "-2",
	                 "--set: transport.rdma_gid_index: '-2' is out of "
	                 "range [-1, 255]");
	expect_set_error("transport.rdma_gid_index", "256",
	                 "--set: transport.rdma_gid_index: '256' is out of "
	                 "range [-1, 255]");
	expect_set_error("transport.rdma_poll", "spin",
	                 "--set: transport.rdma_poll: 'spin' is not one of: "
	                 "event, busy");
}

/* ---- environment and precedence --------------------------------------- */

static void test_env(void **state)
{
	char *good[] = {"HOME=/root",
	                "ORDO_TRAIN_LR=0.5",
	                "ORDO_CLUSTER_HEARTBEAT_TIMEOUT_MS=7000",
	                "ORDO_SCHEDULING_PARTITION_SIZE=8M",
	                "NOT_ORDO_X=1",
	                NULL};
	char *unknown[] = {"ORDO_TRAIN_LR=0.5", "ORDO_TRAIN_LRX=1", NULL};
	char *badval[] = {"ORDO_TRAIN_LR=abc", NULL};
	ps_config cfg, before;
	char err[1024];

	(void)state;
	ps_config_defaults(&cfg);
	assert_int_equal(ps_config_apply_env(&cfg, good, err, sizeof(err)),
	                 PS_OK);
	assert_true(cfg.train.lr == 0.5);
	assert_int_equal(cfg.cluster.heartbeat_timeout_ms, 7000);
	assert_int_equal(cfg.scheduling.partition_size, 8 << 20);

	ps_config_defaults(&cfg);
	before = cfg;
	assert_int_equal(ps_config_apply_env(&cfg, unknown, err, sizeof(err)),
	                 PS_ECONFIG);
	assert_string_equal(
	    err, "environment ORDO_TRAIN_LRX: names no configuration "
	         "key (variables starting with ORDO_ are reserved "
	         "for ORDO_<SECTION>_<KEY>, e.g. ORDO_TRAIN_LR for "
	         "train.lr; sections: " SECTIONS ")");
	/* nothing applied on error */
	assert_memory_equal(&cfg, &before, sizeof(cfg));

	assert_int_equal(ps_config_apply_env(&cfg, badval, err, sizeof(err)),
	                 PS_ECONFIG);
	assert_string_equal(err, "environment ORDO_TRAIN_LR: train.lr: 'abc' "
	                         "is not a number");
}

static void test_precedence(void **state)
{
	char *env[] = {"ORDO_TRAIN_LR=0.3", "ORDO_TRAIN_ITERATIONS=6", NULL};
	ps_config cfg;
	char err[1024];
	const char *path;

	(void)state;
	assert_int_equal(load_text(&cfg, "prec.ini",
	                           "[train]\nlr = 0.2\niterations = 5\n"
	                           "batch = 16\n",
	                           err, sizeof(err), &path),
	                 PS_OK);
	assert_true(cfg.train.lr == 0.2);
	assert_int_equal(ps_config_apply_env(&cfg, env, err, sizeof(err)),
	                 PS_OK);
	assert_int_equal(ps_config_set_kv(&cfg, "train.lr", "0.4", "--set", err,
	                                  sizeof(err)),
	                 PS_OK);
	assert_true(cfg.train.lr == 0.4);          /* --set */
	assert_int_equal(cfg.train.iterations, 6); /* environment */
	assert_int_equal(cfg.train.batch, 16);     /* file */
	assert_int_equal(cfg.train.seed, 1);       /* default */

	/* the same through ps_cli_parse, with the real environment */
	{
		ps_config_defaults(&cfg);
		setenv("ORDO_TRAIN_LR", "0.3", 1);
		setenv("ORDO_TRAIN_ITERATIONS", "6", 1);
		cli_run r = run_cli(&(ps_cli_info){.prog = "test-prog"}, &cfg,
		                    "--set", "train.lr=0.5", "--config",
		                    (char *)path, "--set=train.lr=0.4", NULL);
		unsetenv("ORDO_TRAIN_LR");
		unsetenv("ORDO_TRAIN_ITERATIONS");
		assert_int_equal(r.status, PS_CLI_RUN);
		assert_string_equal(r.err, "");
		assert_string_equal(r.out, "");
		assert_true(cfg.train.lr == 0.4); /* last --set wins */
		assert_int_equal(cfg.train.iterations, 6);
		assert_int_equal(cfg.train.batch, 16);
		cli_run_free(&r);
	}
	{
		setenv("ORDO_BOGUS", "1", 1);
		cli_run r =
		    run_cli(&(ps_cli_info){.prog = "test-prog"}, &cfg, NULL);
		unsetenv("ORDO_BOGUS");
		assert_int_equal(r.status, PS_CLI_EXIT_ERR);
		assert_non_null(strstr(r.err, "test-prog: error: environment "
		                              "ORDO_BOGUS: names no "
		                              "configuration key"));
		cli_run_free(&r);
	}
}

/* ---- validation ------------------------------------------------------- */

static void test_validate(void **state)
{
	ps_config cfg;

	(void)state;
	ps_config_defaults(&cfg);
	cfg.cluster.heartbeat_interval_ms = 1000;
	cfg.cluster.heartbeat_timeout_ms = 2000;
	expect_invalid(&cfg, "cluster.heartbeat_timeout_ms (2000) must be "
	                     "greater than 2 * cluster.heartbeat_interval_ms "
	                     "(2 * 1000 = 2000)");

	ps_config_defaults(&cfg);
	ps_config_set_partition_size(&cfg, 4 << 20);
	cfg.scheduling.push.credit_size = 1 << 20;
	expect_invalid(&cfg, "scheduling.push_credit_size (1M) must be 0 "
	                     "(unlimited) or at least "
	                     "scheduling.push_partition_size (4M)");
	cfg.scheduling.push.credit_size = 4 << 20;
	assert_int_equal(ps_config_validate(&cfg, NULL, 0), PS_OK);
	cfg.scheduling.params.credit_size = 2 << 20;
	expect_invalid(&cfg, "scheduling.params_credit_size (2M) must be 0 "
	                     "(unlimited) or at least "
	                     "scheduling.params_partition_size (4M)");
	/* each direction's credit counts in its own pieces */
	ps_config_set_partition_sizes(&cfg, 4 << 20, 1 << 20);
	assert_int_equal(cfg.scheduling.partition_size, 4 << 20);
	assert_int_equal(ps_config_validate(&cfg, NULL, 0), PS_OK);
	cfg.scheduling.params.credit_size = 0;
	cfg.scheduling.params_barrier = 1;
	assert_int_equal(ps_config_validate(&cfg, NULL, 0), PS_OK);
	cfg.scheduling.placement = PS_PLACE_MXNET;
	cfg.scheduling.fusion = 1;
	expect_invalid(&cfg, "scheduling.placement = mxnet places every "
	                     "tensor by itself, as MXNet's KVStore does: it "
	                     "needs scheduling.fusion = off");
	cfg.scheduling.fusion = 0;
	assert_int_equal(ps_config_validate(&cfg, NULL, 0), PS_OK);
	cfg.train.mode = PS_MODE_ASYNC;
	expect_invalid(&cfg, "scheduling.params_barrier = on needs "
	                     "train.mode = sync (the barrier waits for an "
	                     "iteration's updates; asynchronous training has "
	                     "no iteration to wait for)");

	/* ps-tune's bounds */
	ps_config_defaults(&cfg);
	cfg.tune.partition_min = 8 << 20;
	cfg.tune.partition_max = 1 << 20;
	expect_invalid(&cfg, "tune.partition_min (8M) is larger than "
	                     "tune.partition_max (1M)");
	ps_config_defaults(&cfg);
	cfg.tune.credit_min = 64 << 20;
	cfg.tune.credit_max = 32 << 20;
	expect_invalid(&cfg, "tune.credit_min (64M) is larger than "
	                     "tune.credit_max (32M)");
	ps_config_defaults(&cfg);
	cfg.tune.credit_max = 16 << 20;
	expect_invalid(&cfg, "tune.credit_max (16M) must be at least "
	                     "tune.partition_max (64M): a credit is never "
	                     "below the partition size");
	ps_config_defaults(&cfg);
	cfg.tune.partition_min = 1026;
	expect_invalid(&cfg, "tune.partition_min and tune.partition_max "
	                     "must be multiples of 4 bytes");

	ps_config_defaults(&cfg);
	ps_config_set_partition_size(&cfg, 1026);
	expect_invalid(&cfg, "scheduling.push_partition_size (1026) must be a "
	                     "multiple of 4 bytes (whole float32 elements)");
	ps_config_set_partition_sizes(&cfg, 1024, 1026);
	expect_invalid(&cfg, "scheduling.params_partition_size (1026) must "
	                     "be a multiple of 4 bytes (whole float32 "
	                     "elements)");

	/* what a direction in pieces cannot be combined with */
	ps_config_defaults(&cfg);
	ps_config_set_partition_sizes(&cfg, 256 << 10, 1 << 20);
	assert_int_equal(ps_config_validate(&cfg, NULL, 0), PS_OK);
	cfg.scheduling.push.gate = 2; /* counter */
	expect_invalid(&cfg, "scheduling.push_gate = counter releases whole "
	                     "partitions, one number each: it needs "
	                     "push_partition_size (256K) at least "
	                     "params_partition_size (1M)");
	cfg.scheduling.push.gate = 1;
	cfg.train.mode = PS_MODE_ASYNC;
	expect_invalid(&cfg, "scheduling.push_partition_size (256K) below "
	                     "params_partition_size (1M) pushes each "
	                     "partition in pieces, which a server sums into "
	                     "its round: train.mode = sync only");
	cfg.train.mode = PS_MODE_SYNC;
	cfg.server.device = PS_DEVICE_CUDA;
	/* (a build without CUDA refuses it before: either way, refused) */
	expect_invalid_with(&cfg, "server.device = cuda");
	cfg.server.device = PS_DEVICE_CPU;
	/* parameters in pieces: asynchronous training too, not counter */
	ps_config_set_partition_sizes(&cfg, 1 << 20, 256 << 10);
	cfg.train.mode = PS_MODE_ASYNC;
	assert_int_equal(ps_config_validate(&cfg, NULL, 0), PS_OK);
	cfg.scheduling.params.gate = 2;
	expect_invalid_with(&cfg, "scheduling.params_gate = counter "
	                          "releases whole partitions");
	/* auto for both or neither */
	ps_config_defaults(&cfg);
	ps_config_set_partition_sizes(&cfg, PS_SIZE_AUTO, 1 << 20);
	assert_true(cfg.scheduling.partition_size == PS_SIZE_AUTO);
	expect_invalid_with(&cfg, "scheduling.push_partition_size and "
	                          "params_partition_size are chosen "
	                          "together");

	/* a GID index is accepted (whether the device has it is the
	 * transport's check, at listen/connect); beyond 255 it is not */
	for (int gi = 0; gi <= 255; gi += 85) {
		ps_config_defaults(&cfg);
		cfg.transport.rdma_gid_index = gi;
		assert_int_equal(ps_config_validate(&cfg, NULL, 0), PS_OK);
	}
	ps_config_defaults(&cfg);
	cfg.transport.rdma_gid_index = 256;
	expect_invalid(&cfg, "transport.rdma_gid_index: 256 is out of range "
	                     "[-1, 255]");
	ps_config_defaults(&cfg);
	cfg.transport.rdma_gid_index = -2;
	expect_invalid(&cfg, "transport.rdma_gid_index: -2 is out of range "
	                     "[-1, 255]");

#ifndef PS_WITH_RDMA
	ps_config_defaults(&cfg);
	cfg.transport.type = PS_TRANSPORT_RDMA;
	expect_invalid(&cfg, "transport.type: 'rdma' is not in this build "
	                     "(configure with -DPS_WITH_RDMA=ON, which needs "
	                     "rdma-core); allowed: tcp");
#endif
#ifdef PS_WITH_RDMA
	/* curve and sealed are tcp's own */
	ps_config_defaults(&cfg);
	cfg.transport.type = PS_TRANSPORT_RDMA;
	cfg.security.mode = PS_SECURITY_SEALED;
	expect_invalid_with(&cfg, "security.mode = sealed: only the tcp "
	                          "transport seals frames");
	cfg.security.mode = PS_SECURITY_CURVE;
	expect_invalid_with(&cfg, "security.mode = curve: only the tcp "
	                          "transport has CURVE");
#endif

	/* server.device = cuda needs a CUDA build; the index is bounded */
	ps_config_defaults(&cfg);
	assert_int_equal(cfg.server.device, PS_DEVICE_CPU);
	assert_int_equal(cfg.server.cuda_device, 0);
	cfg.server.device = PS_DEVICE_CUDA;
#ifndef PS_WITH_CUDA
	expect_invalid(&cfg, "server.device = cuda: this build has no CUDA "
	                     "support (configure with -DPS_WITH_CUDA=ON)");
#else
	{
		char e[256];
		assert_int_equal(ps_config_validate(&cfg, e, sizeof(e)), PS_OK);
	}
#endif
	/* server.optimizer: sgd by default, none parsed */
	ps_config_defaults(&cfg);
	assert_int_equal(cfg.server.optimizer, PS_OPTIMIZER_SGD);
	{
		char e[256];
		assert_int_equal(ps_config_set(&cfg, "server.optimizer=none", e,
		                               sizeof(e)),
		                 PS_OK);
		assert_int_equal(cfg.server.optimizer, PS_OPTIMIZER_NONE);
		assert_int_equal(ps_config_set(&cfg, "server.optimizer=adamw",
		                               e, sizeof(e)),
		                 PS_OK);
		assert_int_equal(cfg.server.optimizer, PS_OPTIMIZER_ADAMW);
		assert_int_not_equal(ps_config_set(&cfg,
		                                   "server.optimizer=rmsprop", e,
		                                   sizeof(e)),
		                     PS_OK);
		assert_non_null(strstr(e, "sgd, none, adam, adamw"));
	}
	/* ps_config_get: values as ps_config_set takes them */
	{
		char v[64];
		ps_config_defaults(&cfg);
		assert_int_equal(ps_config_get(&cfg, "server.optimizer", v,
		                               sizeof(v)),
		                 PS_OK);
		assert_string_equal(v, "sgd");
		assert_int_equal(ps_config_set(&cfg, "train.lr=0.25", v,
		                               sizeof(v)),
		                 PS_OK);
		assert_int_equal(ps_config_get(&cfg, "train.lr", v, sizeof(v)),
		                 PS_OK);
		assert_string_equal(v, "0.25");
		/* what was set, against what holds its default */
		assert_int_equal(ps_config_user_set(&cfg, "train.lr"), 1);
		assert_int_equal(
		    ps_config_user_set(&cfg, "cluster.register_timeout_ms"), 0);
		assert_int_equal(ps_config_user_set(&cfg, "train.nosuch"), 0);
		assert_int_equal(ps_config_get(&cfg, "train.nosuch", v,
		                               sizeof(v)),
		                 PS_ENOENT);
		assert_non_null(strstr(v, "no such key"));
		assert_int_equal(ps_config_get(&cfg, "nodot", v, sizeof(v)),
		                 PS_ENOENT);
		assert_int_equal(ps_config_get(&cfg, "server.optimizer", v, 2),
		                 PS_EINVAL);
	}
	/* worker.gradients = cuda: a CUDA build, and replay only */
	ps_config_defaults(&cfg);
	assert_int_equal(cfg.worker.gradients, PS_DEVICE_CPU);
	assert_int_equal(cfg.worker.cuda_device, 0);
	cfg.worker.gradients = PS_DEVICE_CUDA;
	cfg.worker.mode = PS_WORKER_REPLAY;
	strcpy(cfg.model.file, "m.json");
#ifndef PS_WITH_CUDA
	expect_invalid(&cfg, "worker.gradients = cuda: this build has no "
	                     "CUDA support (configure with -DPS_WITH_CUDA=ON)");
#else
	{
		char e[256];
		assert_int_equal(ps_config_validate(&cfg, e, sizeof(e)), PS_OK);
	}
	cfg.worker.mode = PS_WORKER_TRAIN;
	expect_invalid(&cfg, "worker.gradients = cuda: only replaying "
	                     "workers (worker.mode = replay) hold gradients in "
	                     "device memory; a program of your own declares "
	                     "device tensors with ps_client_declare_cuda");
#endif
	ps_config_defaults(&cfg);
	cfg.worker.cuda_device = 256;
	expect_invalid(&cfg, "worker.cuda_device: 256 is out of range "
	                     "[0, 255]");

	ps_config_defaults(&cfg);
	cfg.server.cuda_device = 256;
	expect_invalid(&cfg, "server.cuda_device: 256 is out of range "
	                     "[0, 255]");

	ps_config_defaults(&cfg);
	cfg.train.batch = 64;
	cfg.model.samples_per_worker = 32;
	expect_invalid(&cfg, "train.batch (64) must be at most "
	                     "model.samples_per_worker (32)");

	/* checkpoints need a place */
	ps_config_defaults(&cfg);
	cfg.checkpoint.every = 10;
	expect_invalid(&cfg, "checkpoint.every = 10 needs checkpoint.dir "
	                     "(where to write them)");
	ps_config_defaults(&cfg);
	strcpy(cfg.checkpoint.resume, "latest");
	expect_invalid(&cfg, "checkpoint.resume = latest needs checkpoint.dir "
	                     "(where to look for the latest checkpoint)");
	ps_config_defaults(&cfg);
	cfg.fault.restarts = 2;
	expect_invalid(&cfg, "fault.restarts = 2 needs checkpoint.dir (a "
	                     "restart resumes from the latest checkpoint "
	                     "there)");
	strcpy(cfg.checkpoint.dir, "/tmp/ckpt");
	assert_int_equal(ps_config_validate(&cfg, NULL, 0), PS_OK);

	/* fields set directly are checked against the table too */
	ps_config_defaults(&cfg);
	cfg.cluster.workers = 0;
	expect_invalid(&cfg, "cluster.workers: 0 is out of range [1, 8192]");
	ps_config_defaults(&cfg);
	cfg.train.mode = 7;
	expect_invalid(&cfg, "train.mode: 7 is not a valid value");
}

/* ---- output ----------------------------------------------------------- */

#define SAME(field)     assert_true(a->field == b->field)
#define SAME_STR(field) assert_string_equal(a->field, b->field)

static void assert_same_config(const ps_config *a, const ps_config *b)
{
	SAME_STR(cluster.scheduler_host);
	SAME(cluster.scheduler_port);
	SAME_STR(checkpoint.dir);
	SAME(checkpoint.every);
	SAME(checkpoint.keep);
	SAME_STR(checkpoint.resume);
	SAME(fault.restarts);
	SAME(cluster.servers);
	SAME(cluster.workers);
	SAME_STR(cluster.bind_host);
	SAME_STR(cluster.advertise_host);
	SAME_STR(cluster.interface);
	SAME(cluster.heartbeat_interval_ms);
	SAME(cluster.heartbeat_timeout_ms);
	SAME(cluster.connect_timeout_ms);
	SAME(cluster.early_bytes_max);
	SAME(transport.type);
	SAME(transport.max_message);
	SAME(security.mode);
	SAME_STR(security.keys_dir);
	SAME(transport.send_timeout_ms);
	SAME(transport.io_threads);
	SAME(transport.connections_per_peer);
	SAME(model.name);
	SAME(model.input_dim);
	SAME(model.hidden);
	SAME(model.classes);
	SAME(model.samples_per_worker);
	SAME(train.iterations);
	SAME(train.batch);
	assert_memory_equal(&a->train.lr, &b->train.lr, sizeof(double));
	assert_memory_equal(&a->train.momentum, &b->train.momentum,
	                    sizeof(double));
	SAME(train.mode);
	SAME(train.seed);
	SAME_STR(train.dump_params);
	SAME(scheduling.preset);
	SAME(scheduling.partition_size);
	SAME(scheduling.push.credit_size);
	SAME(scheduling.params.credit_size);
	SAME(scheduling.push.order);
	SAME(scheduling.params.gate);
	SAME(scheduling.params_barrier);
	SAME(scheduling.placement);
	SAME(log.level);
}

static void roundtrip(const ps_config *cfg)
{
	char *text = config_to_string(cfg, 0);
	const char *path = write_file("roundtrip.ini", text);
	ps_config back;
	char err[1024];

	ps_config_defaults(&back);
	if (ps_config_load_file(&back, path, err, sizeof(err)) != PS_OK)
		fail_msg("reload failed: %s\n%s", err, text);
	assert_same_config(cfg, &back);
	free(text);
}

static void test_write_ini(void **state)
{
	static const char *const sets[][2] = {
	    {"cluster.scheduler_host", " lead and trail "},
	    {"cluster.bind_host", ";starts with semicolon"},
	    {"cluster.advertise_host", "\"\"quoted\"\""},
	    {"cluster.scheduler_port", "0"},
	    {"cluster.workers", "4096"},
	    {"transport.type", "rdma"},
	    {"model.name", "softmax"},
	    {"train.lr", "0.30000000000000004"},
	    {"train.momentum", "0.99999999999999989"},
	    {"train.mode", "async"},
	    {"train.seed", "9223372036854775807"},
	    {"train.dump_params", "/tmp/a b=c#d:e"},
	    {"scheduling.partition_size", "160K"},
	    {"scheduling.credit_size", "1099511627772"},
	    {"scheduling.placement", "round-robin"},
	    {"log.level", "error"},
	};
	ps_config cfg;
	char err[512];
	char *text;

	(void)state;
	ps_config_defaults(&cfg);
	roundtrip(&cfg);
	text = config_to_string(&cfg, 0);
	assert_non_null(
	    strstr(text, "[cluster]\nscheduler_host = 127.0.0.1\n"));
	assert_non_null(strstr(text, "advertise_host = \"\"\n"));
	assert_non_null(strstr(text, "partition_size = auto\n"));
	assert_non_null(strstr(text, "lr = 0.1\n"));
	assert_non_null(strstr(text, "[log]\nlevel = info\n"));
	free(text);

	for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++)
		assert_int_equal(ps_config_set_kv(&cfg, sets[i][0], sets[i][1],
		                                  "--set", err, sizeof(err)),
		                 PS_OK);
	assert_string_equal(cfg.cluster.advertise_host, "\"quoted\"");
	roundtrip(&cfg);
	/* a long value still fits on one line */
	memset(cfg.cluster.advertise_host, 'a', 160);
	cfg.cluster.advertise_host[160] = '\0';
	cfg.cluster.advertise_host[0] = ' ';
	roundtrip(&cfg);
}

static void test_reference(void **state)
{
	static const char *const keys[] = {"scheduler_host",
	                                   "scheduler_port",
	                                   "servers",
	                                   "workers",
	                                   "bind_host",
	                                   "advertise_host",
	                                   "interface",
	                                   "heartbeat_interval_ms",
	                                   "heartbeat_timeout_ms",
	                                   "connect_timeout_ms",
	                                   "register_timeout_ms",
	                                   "early_bytes_max",
	                                   "type",
	                                   "send_timeout_ms",
	                                   "io_threads",
	                                   "connections_per_peer",
	                                   "rdma_device",
	                                   "rdma_gid_index",
	                                   "max_message",
	                                   "handshake_timeout_ms",
	                                   "rdma_poll",
	                                   "mode", /* security.mode */
	                                   "keys_dir",
	                                   "name",
	                                   "input_dim",
	                                   "hidden",
	                                   "classes",
	                                   "samples_per_worker",
	                                   "file",
	                                   "compute_scale",
	                                   "measure_iterations",
	                                   "mode", /* worker.mode */
	                                   "compute",
	                                   "gradients",
	                                   "cuda_device",
	                                   "rank",
	                                   "device", /* [server] */
	                                   "optimizer",
	                                   "cuda_device",
	                                   "dir",
	                                   "bandwidth_gbps",
	                                   "iterations",
	                                   "batch",
	                                   "lr",
	                                   "momentum",
	                                   "beta1",
	                                   "beta2",
	                                   "eps",
	                                   "weight_decay",
	                                   "mode",
	                                   "seed",
	                                   "dump_params",
	                                   "preset",
	                                   "order",
	                                   "gate",
	                                   "credit_size",
	                                   "push_order",
	                                   "push_gate",
	                                   "push_credit_size",
	                                   "params_order",
	                                   "params_gate",
	                                   "params_credit_size",
	                                   "params_barrier",
	                                   "partition_size",
	                                   "push_partition_size",
	                                   "params_partition_size",
	                                   "fusion",
	                                   "placement",
	                                   "credit_refine",
	                                   "level",
	                                   "dir", /* [checkpoint] */
	                                   "every",
	                                   "keep",
	                                   "resume",
	                                   "restarts", /* [fault] */
	                                   "bandwidth_gbps", /* [link] */
	                                   "latency_us",
	                                   "latency_jitter",
	                                   "gamma",
	                                   "fit_file",
	                                   "sharing",
	                                   "burst_bytes",
	                                   "burst_gbps",
	                                   "model",
	                                   "efficiency",
	                                   "rdma_latency_us",
	                                   "rdma_efficiency",
	                                   "rdma_gamma",
	                                   "aggregate_ns_per_byte",
	                                   "update_ns_per_byte",
	                                   "trace_workers",
	                                   "op_overhead_us",
	                                   "machine_gbps",
	                                   "machine_small_bytes",
	                                   "machine_small_gbps",
	                                   "machine_message_us",
	                                   "machine_message_min_bytes",
	                                   "trials", /* [tune] */
	                                   "warmup_iterations",
	                                   "measure_iterations",
	                                   "partition_min",
	                                   "partition_max",
	                                   "credit_min",
	                                   "credit_max",
	                                   "then",
	                                   "prior",
	                                   "seed",
	                                   "endpoint"};
	char *ref = config_to_string(NULL, 1), *again;
	char *ini = NULL;
	ps_config cfg;
	char needle[128];
	int rows = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		snprintf(needle, sizeof(needle), "| `%s` |", keys[i]);
		if (!strstr(ref, needle))
			fail_msg("reference lacks %s", keys[i]);
	}
	for (const char *p = ref; (p = strstr(p, "\n| `")) != NULL; p++)
		rows++;
	assert_int_equal(rows, (int)(sizeof(keys) / sizeof(keys[0])));
	assert_non_null(strstr(ref, "### [cluster]\n\n| key | type | default "
	                            "| allowed | description |\n"));
	assert_non_null(strstr(ref, "| `mode` | enum | `sync` | `sync`, "
	                            "`async` |"));
	assert_non_null(
	    strstr(ref, "| `momentum` | double | `0.9` | [0, 1) |"));
	assert_non_null(strstr(ref, "| `push_partition_size` | size | `auto` "
	                            "| [4, 1T] bytes"));
	assert_non_null(strstr(ref, "| `partition_size` | size | (its two "
	                            "keys') | [4, 1T] bytes"));
	assert_non_null(strstr(ref, "### [log]"));
	/* deterministic */
	again = config_to_string(NULL, 1);
	assert_string_equal(ref, again);
	free(again);
	/* every key the INI writer writes is in the reference */
	ps_config_defaults(&cfg);
	ini = config_to_string(&cfg, 0);
	for (char *line = strtok(ini, "\n"); line; line = strtok(NULL, "\n")) {
		char *eq = strstr(line, " = ");
		if (!eq)
			continue;
		snprintf(needle, sizeof(needle), "| `%.*s` |", (int)(eq - line),
		         line);
		assert_non_null(strstr(ref, needle));
	}
	free(ini);
	free(ref);
}

static void test_enum_name(void **state)
{
	(void)state;
	assert_string_equal(ps_config_enum_name("train.mode", PS_MODE_SYNC),
	                    "sync");
	assert_string_equal(ps_config_enum_name("train.mode", PS_MODE_ASYNC),
	                    "async");
	assert_string_equal(
	    ps_config_enum_name("transport.type", PS_TRANSPORT_RDMA), "rdma");
	assert_string_equal(
	    ps_config_enum_name("scheduling.placement", PS_PLACE_ROUND_ROBIN),
	    "round-robin");
	assert_string_equal(ps_config_enum_name("log.level", PS_LOG_DEBUG),
	                    "debug");
	assert_string_equal(ps_config_enum_name("model.name", PS_MODEL_SOFTMAX),
	                    "softmax");
	assert_null(ps_config_enum_name("train.mode", 2));
	assert_null(ps_config_enum_name("train.mode", -1));
	assert_null(ps_config_enum_name("train.lr", 0));
	assert_null(ps_config_enum_name("mode", 0));
	assert_null(ps_config_enum_name(NULL, 0));
}

/* ---- command line ----------------------------------------------------- */

typedef struct opt_log {
	int calls;
	char seen[256];
} opt_log;

static int on_opt(void *ud, const char *name, const char *arg, char *why,
                  size_t whylen)
{
	opt_log *l = ud;
	size_t n = strlen(l->seen);

	l->calls++;
	snprintf(l->seen + n, sizeof(l->seen) - n, "%s%s=%s", n ? " " : "",
	         name, arg ? arg : "(null)");
	if (strcmp(name, "fail") == 0) {
		snprintf(why, whylen, "--fail: '%s' is not accepted", arg);
		return PS_EINVAL;
	}
	return PS_OK;
}

static const ps_cli_opt test_opts[] = {
    {"ready-fd", "N", "write the bound port to file descriptor N"},
    {"dry-run", NULL, "check the configuration and exit"},
    {"fail", "X", "always fails"},
    {NULL, NULL, NULL},
};

static void test_cli_help_version(void **state)
{
	opt_log log = {0};
	ps_cli_info info = {.prog = "test-prog",
	                    .summary = "Does test things.",
	                    .opts = test_opts,
	                    .on_opt = on_opt,
	                    .ud = &log};
	ps_config cfg;
	cli_run r;

	(void)state;
	r = run_cli(&info, &cfg, "--version", NULL);
	assert_int_equal(r.status, PS_CLI_EXIT_OK);
	assert_string_equal(r.out,
	                    "test-prog (ordo " ORDO_VERSION_STRING ")\n");
	assert_string_equal(r.err, "");
	cli_run_free(&r);

	r = run_cli(&info, &cfg, "--ready-fd", "3", "--help", NULL);
	assert_int_equal(r.status, PS_CLI_EXIT_OK);
	assert_string_equal(r.err, "");
	assert_non_null(strstr(r.out, "Usage: test-prog [--config FILE]"));
	assert_non_null(strstr(r.out, "Does test things."));
	assert_non_null(strstr(r.out, "  --config FILE"));
	assert_non_null(strstr(r.out, "  --set SECTION.KEY=VALUE"));
	assert_non_null(strstr(r.out, "  --help-config"));
	assert_non_null(strstr(r.out, "  --version"));
	assert_non_null(strstr(r.out, "Options of test-prog:"));
	assert_non_null(strstr(r.out, "  --ready-fd N"));
	assert_non_null(strstr(r.out, "write the bound port"));
	assert_non_null(strstr(r.out, "  --dry-run "));
	assert_non_null(strstr(r.out, "precedence"));
	assert_non_null(strstr(r.out, "ORDO_TRAIN_LR"));
	assert_non_null(strstr(r.out, "'test-prog --help-config'"));
	for (const char *p = r.out; *p;) {
		size_t len = strcspn(p, "\n");
		assert_true(len <= 79);
		p += len + (p[len] == '\n');
	}
	assert_int_equal(log.calls, 0); /* help exits before acting */
	cli_run_free(&r);

	r = run_cli(&info, &cfg, "--help-config", NULL);
	assert_int_equal(r.status, PS_CLI_EXIT_OK);
	assert_non_null(strstr(r.out, "### [train]"));
	assert_non_null(strstr(r.out, "| `heartbeat_timeout_ms` |"));
	cli_run_free(&r);
}

/* The keys allow 8192 workers with any number of servers (ps-sim
 * simulates that); a job to run has at most PS_JOB_MAX_NODES nodes, the
 * scheduler included, and is refused naming the keys. */
static void test_job_nodes(void **state)
{
	ps_cli_info info = {.prog = "test-prog", .summary = "Does things."};
	ps_config cfg;
	char err[512];
	cli_run r;

	(void)state;
	ps_config_defaults(&cfg);
	cfg.cluster.workers = 8192;
	cfg.cluster.servers = 512;
	assert_int_equal(ps_config_validate(&cfg, err, sizeof(err)), PS_OK);
	assert_int_equal(ps_config_validate_job(&cfg, err, sizeof(err)),
	                 PS_ECONFIG);
	assert_string_equal(err, "cluster.workers (8192) + cluster.servers "
	                         "(512) + the scheduler = 8705 nodes: a job "
	                         "runs at most 8192 (ps-sim can simulate it)");
	cfg.cluster.workers = PS_JOB_MAX_NODES - 1 - 512;
	assert_int_equal(ps_config_validate_job(&cfg, err, sizeof(err)), PS_OK);
	cfg.cluster.workers++;
	assert_int_equal(ps_config_validate_job(&cfg, err, sizeof(err)),
	                 PS_ECONFIG);
	cfg.cluster.workers = 8193;
	expect_invalid(&cfg, "cluster.workers: 8193 is out of range [1, "
	                     "8192]");

	/* the command line of a binary that runs the job refuses it... */
	r = run_cli(&info, &cfg, "--set", "cluster.workers=8192", "--set",
	            "cluster.servers=512", NULL);
	assert_int_equal(r.status, PS_CLI_EXIT_ERR);
	assert_non_null(strstr(r.err, "test-prog: error: cluster.workers "
	                              "(8192) + cluster.servers (512)"));
	cli_run_free(&r);
	/* ... one that simulates it (ps-sim) takes it */
	info.simulated = 1;
	r = run_cli(&info, &cfg, "--set", "cluster.workers=8192", "--set",
	            "cluster.servers=512", NULL);
	assert_int_equal(r.status, PS_CLI_RUN);
	assert_int_equal(cfg.cluster.workers, 8192);
	cli_run_free(&r);
}

static void test_cli_parse(void **state)
{
	opt_log log = {0};
	ps_cli_info info = {.prog = "test-prog",
	                    .summary = "Does test things.",
	                    .opts = test_opts,
	                    .on_opt = on_opt,
	                    .ud = &log};
	const char *path = write_file("cli.ini", "[cluster]\nworkers = 3\n"
	                                         "[train]\nlr = 0.2\n");
	ps_config cfg, before;
	cli_run r;

	(void)state;
	/* no arguments: defaults */
	memset(&cfg, 0xff, sizeof(cfg));
	r = run_cli(&info, &cfg, NULL);
	assert_int_equal(r.status, PS_CLI_RUN);
	ps_config_defaults(&before);
	assert_memory_equal(&cfg, &before, sizeof(cfg));
	cli_run_free(&r);

	r = run_cli(&info, &cfg, "--config=", NULL);
	assert_int_equal(r.status, PS_CLI_EXIT_ERR);
	assert_string_equal(r.err, "test-prog: error: : cannot open file: No "
	                           "such file or directory\n"
	                           "Try 'test-prog --help'.\n");
	cli_run_free(&r);

	r = run_cli(&info, &cfg, "--config", (char *)path, "--set",
	            "train.mode=async", "--dry-run", "--ready-fd=7", "--set",
	            "cluster.workers=5", NULL);
	assert_int_equal(r.status, PS_CLI_RUN);
	assert_string_equal(r.err, "");
	assert_int_equal(cfg.cluster.workers, 5);
	assert_true(cfg.train.lr == 0.2);
	assert_int_equal(cfg.train.mode, PS_MODE_ASYNC);
	assert_int_equal(log.calls, 2);
	assert_string_equal(log.seen, "dry-run=(null) ready-fd=7");
	cli_run_free(&r);

	/* errors: cfg is left alone */
	before = cfg;
	r = run_cli(&info, &cfg, "--bogus", NULL);
	assert_int_equal(r.status, PS_CLI_EXIT_ERR);
	assert_string_equal(r.err, "test-prog: error: unknown option "
	                           "'--bogus'\nTry 'test-prog --help'.\n");
	assert_string_equal(r.out, "");
	cli_run_free(&r);

	r = run_cli(&info, &cfg, "-x", NULL);
	assert_string_equal(r.err, "test-prog: error: unknown option '-x'\n"
	                           "Try 'test-prog --help'.\n");
	cli_run_free(&r);

	r = run_cli(&info, &cfg, "--config", NULL);
	assert_int_equal(r.status, PS_CLI_EXIT_ERR);
	assert_string_equal(r.err, "test-prog: error: option '--config' needs "
	                           "an argument (FILE)\n"
	                           "Try 'test-prog --help'.\n");
	cli_run_free(&r);

	r = run_cli(&info, &cfg, "--ready-fd", "--dry-run", NULL);
	assert_int_equal(r.status, PS_CLI_EXIT_ERR);
	assert_non_null(strstr(r.err, "option '--ready-fd' needs an argument "
	                              "(N)"));
	cli_run_free(&r);

	r = run_cli(&info, &cfg, "--dry-run=yes", NULL);
	assert_int_equal(r.status, PS_CLI_EXIT_ERR);
	assert_non_null(strstr(r.err, "option '--dry-run' takes no argument"));
	cli_run_free(&r);

	r = run_cli(&info, &cfg, "stray", NULL);
	assert_int_equal(r.status, PS_CLI_EXIT_ERR);
	assert_string_equal(r.err, "test-prog: error: unexpected argument "
	                           "'stray' (no positional arguments are "
	                           "taken)\nTry 'test-prog --help'.\n");
	cli_run_free(&r);

	r = run_cli(&info, &cfg, "--set", "train.lr=-1", NULL);
	assert_int_equal(r.status, PS_CLI_EXIT_ERR);
	assert_string_equal(r.err, "test-prog: error: --set: train.lr: '-1' "
	                           "is out of range [0, 100]\n"
	                           "Try 'test-prog --help'.\n");
	cli_run_free(&r);

	r = run_cli(&info, &cfg, "--set", "train.lr", NULL);
	assert_int_equal(r.status, PS_CLI_EXIT_ERR);
	assert_non_null(strstr(r.err, "--set: 'train.lr' is not of the form "
	                              "section.key=value"));
	cli_run_free(&r);

	/* validation runs after every layer */
	r = run_cli(&info, &cfg, "--set", "train.batch=2048", NULL);
	assert_int_equal(r.status, PS_CLI_EXIT_ERR);
	assert_non_null(strstr(r.err, "test-prog: error: train.batch (2048) "
	                              "must be at most "
	                              "model.samples_per_worker (1024)"));
	cli_run_free(&r);

	/* the binary's own option handler can refuse */
	log.calls = 0;
	r = run_cli(&info, &cfg, "--fail", "now", NULL);
	assert_int_equal(r.status, PS_CLI_EXIT_ERR);
	assert_int_equal(log.calls, 1);
	assert_string_equal(r.err, "test-prog: error: --fail: 'now' is not "
	                           "accepted\nTry 'test-prog --help'.\n");
	cli_run_free(&r);

	assert_memory_equal(&cfg, &before, sizeof(cfg));

	/* a binary without options of its own */
	r = run_cli(&(ps_cli_info){.prog = "plain"}, &cfg, "--ready-fd", "3",
	            NULL);
	assert_int_equal(r.status, PS_CLI_EXIT_ERR);
	assert_string_equal(r.err, "plain: error: unknown option "
	                           "'--ready-fd'\nTry 'plain --help'.\n");
	cli_run_free(&r);
}

/* A preset fills in order, gate, partition_size and credit_size, but only
 * those not set explicitly, whatever the order they are given in. */
static void test_presets(void **state)
{
	ps_config cfg;
	char err[512], line[256];

	(void)state;
	ps_config_defaults(&cfg);
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.preset", "p3",
	                                  "--set", err, sizeof(err)),
	                 PS_OK);
	assert_int_equal(cfg.scheduling.push.order, 1); /* layer */
	assert_int_equal(cfg.scheduling.push.gate, 1);  /* priority */
	assert_int_equal(cfg.scheduling.partition_size, 160 * 1024);
	assert_int_equal(cfg.scheduling.push.credit_size, 160 * 1024);
	ps_config_describe_scheduling(&cfg, line, sizeof(line));
	assert_string_equal(line, "preset p3: order layer, gate priority, "
	                          "partition 160K, credit 160K, fusion off");

	/* explicit before the preset */
	ps_config_defaults(&cfg);
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.partition_size",
	                                  "1M", "--set", err, sizeof(err)),
	                 PS_OK);
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.preset",
	                                  "tictac-tao", "--set", err,
	                                  sizeof(err)),
	                 PS_OK);
	/* TicTac ordered the parameters at the PS; pushes as produced */
	assert_int_equal(cfg.scheduling.params.order, 3); /* tao */
	assert_int_equal(cfg.scheduling.params.gate, 2);  /* counter */
	assert_int_equal(cfg.scheduling.params_barrier, 1);
	assert_int_equal(cfg.scheduling.push.order, 0); /* fifo */
	assert_int_equal(cfg.scheduling.push.gate, 0);
	assert_int_equal(cfg.scheduling.partition_size, 1 << 20);
	ps_config_describe_scheduling(&cfg, line, sizeof(line));
	assert_string_equal(line, "preset tictac-tao: pushes order fifo, gate "
	                          "fifo, credit unlimited; parameters after a "
	                          "barrier, order tao, gate counter, credit "
	                          "unlimited; partition 1M, fusion off");
	/* explicit after the preset, then another preset */
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.gate", "fifo",
	                                  "--set", err, sizeof(err)),
	                 PS_OK);
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.preset",
	                                  "bytescheduler", "--set", err,
	                                  sizeof(err)),
	                 PS_OK);
	assert_int_equal(cfg.scheduling.push.order, 1);         /* layer */
	assert_int_equal(cfg.scheduling.params.order, 1);
	assert_int_equal(cfg.scheduling.push.gate, 0);          /* kept: fifo */
	assert_int_equal(cfg.scheduling.params.gate, 0);
	assert_int_equal(cfg.scheduling.params_barrier, 0); /* its own */
	assert_int_equal(cfg.scheduling.partition_size, 1 << 20); /* kept */
	ps_config_finalize(&cfg);
	assert_int_equal(cfg.scheduling.push.credit_size, 2 << 20); /* 2 x 1M */
	assert_int_equal(ps_config_validate(&cfg, err, sizeof(err)), PS_OK);
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.preset", "p4",
	                                  "--set", err, sizeof(err)),
	                 PS_ECONFIG);
	assert_non_null(strstr(err, "baseline, tensorflow, mxnet, p3, "
	                            "tictac-tio, tictac-tao, bytescheduler, "
	                            "ordo"));

	/* under the default preset, what the user sets leads what it left
	 * beside: one direction's partition size is the other's, and
	 * MXNet's placement turns its fusion off */
	ps_config_defaults(&cfg);
	assert_int_equal(ps_config_set_kv(&cfg,
	                                  "scheduling.push_partition_size",
	                                  "256K", "--set", err, sizeof(err)),
	                 PS_OK);
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.placement",
	                                  "mxnet", "--set", err, sizeof(err)),
	                 PS_OK);
	ps_config_finalize(&cfg);
	assert_int_equal(cfg.scheduling.params.partition_size, 256 << 10);
	assert_int_equal(cfg.scheduling.partition_size, 256 << 10);
	assert_int_equal(cfg.scheduling.fusion, 0);
	assert_true(cfg.scheduling.push.credit_size == PS_SIZE_AUTO);
	assert_int_equal(ps_config_validate(&cfg, err, sizeof(err)), PS_OK);
	/* ... but auto written for one direction is still refused */
	ps_config_defaults(&cfg);
	assert_int_equal(ps_config_set_kv(&cfg,
	                                  "scheduling.push_partition_size",
	                                  "256K", "--set", err, sizeof(err)),
	                 PS_OK);
	assert_int_equal(ps_config_set_kv(&cfg,
	                                  "scheduling.params_partition_size",
	                                  "auto", "--set", err, sizeof(err)),
	                 PS_OK);
	ps_config_finalize(&cfg);
	assert_int_equal(ps_config_validate(&cfg, err, sizeof(err)),
	                 PS_ECONFIG);
	assert_non_null(strstr(err, "chosen together"));
	/* and fusion asked for beside MXNet's placement too */
	ps_config_defaults(&cfg);
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.placement",
	                                  "mxnet", "--set", err, sizeof(err)),
	                 PS_OK);
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.fusion", "on",
	                                  "--set", err, sizeof(err)),
	                 PS_OK);
	ps_config_finalize(&cfg);
	assert_int_equal(ps_config_validate(&cfg, err, sizeof(err)),
	                 PS_ECONFIG);
	assert_non_null(strstr(err, "fusion = off"));

	/* ordo fuses small tensors unless told not to; baseline does not */
	ps_config_defaults(&cfg);
	assert_int_equal(cfg.scheduling.fusion, 1);
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.preset",
	                                  "baseline", "--set", err,
	                                  sizeof(err)),
	                 PS_OK);
	assert_int_equal(cfg.scheduling.fusion, 0);
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.preset", "ordo",
	                                  "--set", err, sizeof(err)),
	                 PS_OK);
	assert_int_equal(cfg.scheduling.fusion, 1);
	ps_config_defaults(&cfg);
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.fusion", "off",
	                                  "--set", err, sizeof(err)),
	                 PS_OK);
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.preset", "ordo",
	                                  "--set", err, sizeof(err)),
	                 PS_OK);
	assert_int_equal(cfg.scheduling.fusion, 0);
	ps_config_finalize(&cfg);
	ps_config_describe_scheduling(&cfg, line, sizeof(line));
	assert_string_equal(line, "preset ordo: order tail, gate priority, "
	                          "partition auto, credit auto, fusion off");
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.fusion", "maybe",
	                                  "--set", err, sizeof(err)),
	                 PS_ECONFIG);
	assert_non_null(strstr(err, "off, on"));
}

/* Each direction has its own order, gate and credit; scheduling.order,
 * gate and credit_size set both, in the order the layers give them. */
static void test_directions(void **state)
{
	ps_config cfg;
	char err[512], line[320], v[256];
	char *text;

	(void)state;
	ps_config_defaults(&cfg);
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.order", "tio",
	                                  "--set", err, sizeof(err)),
	                 PS_OK);
	assert_int_equal(cfg.scheduling.push.order, 2);
	assert_int_equal(cfg.scheduling.params.order, 2);
	assert_int_equal(ps_config_get(&cfg, "scheduling.order", v, sizeof(v)),
	                 PS_OK);
	assert_string_equal(v, "tio");
	/* the specific key after the shorthand wins for its direction */
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.push_order",
	                                  "fifo", "--set", err, sizeof(err)),
	                 PS_OK);
	assert_int_equal(cfg.scheduling.push.order, 0);
	assert_int_equal(cfg.scheduling.params.order, 2);
	assert_int_equal(ps_config_get(&cfg, "scheduling.order", v, sizeof(v)),
	                 PS_EINVAL);
	assert_string_equal(v, "scheduling.order: push_order = fifo but "
	                       "params_order = tio: ask for one of them");
	assert_int_equal(ps_config_get(&cfg, "scheduling.params_order", v,
	                               sizeof(v)),
	                 PS_OK);
	assert_string_equal(v, "tio");
	/* ...and the shorthand after it sets both again */
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.order", "layer",
	                                  "--set", err, sizeof(err)),
	                 PS_OK);
	assert_int_equal(cfg.scheduling.push.order, 1);
	assert_int_equal(cfg.scheduling.params.order, 1);
	/* the shorthand is a key of its own for the user, not in the INI */
	assert_int_equal(ps_config_user_set(&cfg, "scheduling.order"), 1);
	assert_int_equal(ps_config_user_set(&cfg, "scheduling.push_order"), 1);
	text = config_to_string(&cfg, 0);
	assert_null(strstr(text, "\norder ="));
	assert_non_null(strstr(text, "\npush_order = layer\n"));
	assert_non_null(strstr(text, "\nparams_order = layer\n"));

	/* partition sizes: the shorthand, a direction's own after it, the
	 * partition (the larger) kept in step by every setter */
	{
		ps_config c2;
		char *t2;
		ps_config_defaults(&c2);
		assert_int_equal(ps_config_set_kv(&c2, "scheduling.partition_size",
		                                  "1M", "--set", err, sizeof(err)),
		                 PS_OK);
		assert_int_equal(c2.scheduling.push.partition_size, 1 << 20);
		assert_int_equal(c2.scheduling.params.partition_size, 1 << 20);
		assert_int_equal(c2.scheduling.partition_size, 1 << 20);
		assert_int_equal(ps_config_set_kv(&c2,
		                                  "scheduling.push_partition_size",
		                                  "256K", "--set", err,
		                                  sizeof(err)),
		                 PS_OK);
		assert_int_equal(c2.scheduling.push.partition_size, 256 << 10);
		assert_int_equal(c2.scheduling.partition_size, 1 << 20);
		assert_int_equal(ps_config_pieces_size(&c2, 0), 256 << 10);
		assert_int_equal(ps_config_pieces_size(&c2, 1), 0);
		assert_int_equal(ps_config_get(&c2, "scheduling.partition_size",
		                               v, sizeof(v)),
		                 PS_EINVAL);
		assert_int_equal(ps_config_set_kv(&c2,
		                                  "scheduling.params_partition_size",
		                                  "128K", "--set", err,
		                                  sizeof(err)),
		                 PS_OK);
		assert_int_equal(c2.scheduling.partition_size, 256 << 10);
		assert_int_equal(ps_config_pieces_size(&c2, 0), 0);
		assert_int_equal(ps_config_pieces_size(&c2, 1), 128 << 10);
		t2 = config_to_string(&c2, 0);
		assert_non_null(strstr(t2, "\npush_partition_size = 256K\n"));
		assert_non_null(strstr(t2, "\nparams_partition_size = 128K\n"));
		assert_null(strstr(t2, "\npartition_size ="));
		free(t2);
		/* a preset keeps a direction's size the user set */
		assert_int_equal(ps_config_set_kv(&c2, "scheduling.preset", "p3",
		                                  "--set", err, sizeof(err)),
		                 PS_OK);
		assert_int_equal(c2.scheduling.push.partition_size, 256 << 10);
		assert_int_equal(c2.scheduling.params.partition_size, 128 << 10);
		/* an older config.ini's partition_size still reads */
		assert_int_equal(ps_config_set_kv(&c2, "scheduling.partition_size",
		                                  "2M", "conf.ini:3", err,
		                                  sizeof(err)),
		                 PS_OK);
		assert_int_equal(c2.scheduling.partition_size, 2 << 20);
		assert_int_equal(ps_config_set_kv(&c2, "scheduling.partition_size",
		                                  "3", "--set", err, sizeof(err)),
		                 PS_ECONFIG);
		assert_non_null(strstr(err, "scheduling.partition_size: '3' is "
		                            "out of range"));
	}
	free(text);
	/* errors name the key given */
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.gate", "random",
	                                  "--set", err, sizeof(err)),
	                 PS_ECONFIG);
	assert_string_equal(err, "--set: scheduling.gate: 'random' is not one "
	                         "of: fifo, priority, counter");
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.credit_size", "-1",
	                                  "--set", err, sizeof(err)),
	                 PS_ECONFIG);
	assert_non_null(strstr(err, "--set: scheduling.credit_size: "));

	/* a direction's credit set explicitly survives a preset; the other
	 * direction's follows the preset's BDP rule */
	ps_config_defaults(&cfg);
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.params_credit_size",
	                                  "0", "--set", err, sizeof(err)),
	                 PS_OK);
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.preset",
	                                  "bytescheduler", "--set", err,
	                                  sizeof(err)),
	                 PS_OK);
	ps_config_finalize(&cfg);
	assert_int_equal(cfg.scheduling.push.credit_size, 8 << 20);
	assert_int_equal(cfg.scheduling.params.credit_size, 0);
	ps_config_describe_scheduling(&cfg, line, sizeof(line));
	assert_string_equal(line, "preset bytescheduler: pushes order layer, "
	                          "gate priority, credit 8M; parameters order "
	                          "layer, gate priority, credit unlimited; "
	                          "partition 4M, fusion off");
	assert_int_equal(ps_config_validate(&cfg, err, sizeof(err)), PS_OK);

	/* the environment takes the shorthand too */
	{
		char *envp[] = {"ORDO_SCHEDULING_GATE=counter",
		                "ORDO_SCHEDULING_PARAMS_BARRIER=on", NULL};
		ps_config_defaults(&cfg);
		assert_int_equal(ps_config_apply_env(&cfg, envp, err,
		                                     sizeof(err)),
		                 PS_OK);
		assert_int_equal(cfg.scheduling.push.gate, 2);
		assert_int_equal(cfg.scheduling.params.gate, 2);
		assert_int_equal(cfg.scheduling.params_barrier, 1);
	}

	/* every preset, direction by direction (docs/presets.md) */
	{
		static const struct {
			const char *preset;
			int up_order, up_gate, down_order, down_gate, barrier,
			    placement;
		} want[] = {
		    {"baseline", 0, 0, 0, 0, 0, PS_PLACE_BALANCED},
		    {"tensorflow", 0, 0, 0, 0, 1, PS_PLACE_ROUND_ROBIN},
		    {"mxnet", 0, 0, 0, 0, 0, PS_PLACE_MXNET},
		    {"p3", 1, 1, 1, 1, 0, PS_PLACE_BALANCED},
		    {"tictac-tio", 0, 0, 2, 2, 1, PS_PLACE_ROUND_ROBIN},
		    {"tictac-tao", 0, 0, 3, 2, 1, PS_PLACE_ROUND_ROBIN},
		    {"bytescheduler", 1, 1, 1, 1, 0, PS_PLACE_BALANCED},
		    {"ordo", 4, 1, 4, 1, 0, PS_PLACE_BALANCED},
		};
		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			ps_config_defaults(&cfg);
			assert_int_equal(
			    ps_config_set_kv(&cfg, "scheduling.preset",
			                     want[i].preset, "--set", err,
			                     sizeof(err)),
			    PS_OK);
			assert_int_equal(cfg.scheduling.push.order,
			                 want[i].up_order);
			assert_int_equal(cfg.scheduling.push.gate,
			                 want[i].up_gate);
			assert_int_equal(cfg.scheduling.params.order,
			                 want[i].down_order);
			assert_int_equal(cfg.scheduling.params.gate,
			                 want[i].down_gate);
			assert_int_equal(cfg.scheduling.params_barrier,
			                 want[i].barrier);
			assert_int_equal(cfg.scheduling.placement,
			                 want[i].placement);
			ps_config_finalize(&cfg);
			assert_int_equal(ps_config_validate(&cfg, err,
			                                    sizeof(err)),
			                 PS_OK);
		}
	}
}

/* A preset's credit follows the bandwidth-delay product, worked out when
 * every layer is in (the bandwidth may come after the preset); an
 * explicit credit_size, before or after the preset, wins. */
static void test_bdp_credit(void **state)
{
	ps_config cfg;
	char err[512];

	(void)state;
	ps_config_defaults(&cfg);
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.preset",
	                                  "bytescheduler", "--set", err,
	                                  sizeof(err)),
	                 PS_OK);
	assert_int_equal(cfg.scheduling.push.credit_bdp, 1);
	/* 10 Gbit/s x 2 x 20 us = 50 kB < 4M: two partitions */
	ps_config_finalize(&cfg);
	assert_int_equal(cfg.scheduling.push.credit_size, 8 << 20);
	/* 400 Gbit/s x 2 x 100 us = 10 MB = 2.38 partitions: 1 + 3 */
	assert_int_equal(ps_config_set_kv(&cfg, "metrics.bandwidth_gbps",
	                                  "400", "--set", err, sizeof(err)),
	                 PS_OK);
	assert_int_equal(ps_config_set_kv(&cfg, "link.latency_us", "100",
	                                  "--set", err, sizeof(err)),
	                 PS_OK);
	ps_config_finalize(&cfg);
	assert_int_equal(cfg.scheduling.push.credit_size, 16 << 20);
	ps_config_finalize(&cfg); /* idempotent */
	assert_int_equal(cfg.scheduling.push.credit_size, 16 << 20);
	/* link.bandwidth_gbps, when set, is the link's */
	assert_int_equal(ps_config_set_kv(&cfg, "link.bandwidth_gbps", "40",
	                                  "--set", err, sizeof(err)),
	                 PS_OK);
	ps_config_finalize(&cfg);
	assert_int_equal(cfg.scheduling.push.credit_size, 8 << 20);
	/* smaller partitions, more of them */
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.partition_size",
	                                  "256K", "--set", err, sizeof(err)),
	                 PS_OK);
	ps_config_finalize(&cfg);
	assert_int_equal(cfg.scheduling.push.credit_size, 5 * (256 << 10));
	assert_int_equal(ps_config_validate(&cfg, err, sizeof(err)), PS_OK);
	/* explicit after the preset */
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.credit_size", "8M",
	                                  "--set", err, sizeof(err)),
	                 PS_OK);
	ps_config_finalize(&cfg);
	assert_int_equal(cfg.scheduling.push.credit_size, 8 << 20);
	/* explicit before the preset */
	ps_config_defaults(&cfg);
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.credit_size", "3M",
	                                  "--set", err, sizeof(err)),
	                 PS_OK);
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.preset",
	                                  "bytescheduler", "--set", err,
	                                  sizeof(err)),
	                 PS_OK);
	ps_config_finalize(&cfg);
	assert_int_equal(cfg.scheduling.push.credit_size, 3 << 20);
	/* another preset after it: its own credit */
	ps_config_defaults(&cfg);
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.preset", "bytescheduler",
	                                  "--set", err, sizeof(err)),
	                 PS_OK);
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.preset", "p3",
	                                  "--set", err, sizeof(err)),
	                 PS_OK);
	ps_config_finalize(&cfg);
	assert_int_equal(cfg.scheduling.push.credit_size, 160 << 10);
	/* whole tensors: nothing to count in, unlimited */
	ps_config_defaults(&cfg);
	cfg.scheduling.partition_size = 1ull << 40;
	assert_int_equal(ps_config_bdp_credit(&cfg), 0);
}


/* "auto" sizes: the partition and the credits (each direction, and the
 * shorthand) may be left to the job's start; no other size may. */
static void test_auto_sizes(void **state)
{
	ps_config cfg;
	char err[512], *ini = NULL;
	size_t inilen = 0;
	FILE *f;

	(void)state;
	ps_config_defaults(&cfg);
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.partition_size",
	                                  "auto", "--set", err, sizeof(err)),
	                 PS_OK);
	assert_true(cfg.scheduling.partition_size == PS_SIZE_AUTO);
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.credit_size",
	                                  "auto", "--set", err, sizeof(err)),
	                 PS_OK);
	assert_true(cfg.scheduling.push.credit_size == PS_SIZE_AUTO);
	assert_true(cfg.scheduling.params.credit_size == PS_SIZE_AUTO);
	assert_int_equal(ps_config_validate(&cfg, err, sizeof(err)), PS_OK);
	/* every node accepts the largest partition auto may choose */
	assert_int_equal(ps_config_max_message(&cfg),
	                 PS_CONTROL_MESSAGE_MAX > PS_AUTO_PARTITION_MAX
	                     ? PS_CONTROL_MESSAGE_MAX
	                     : PS_AUTO_PARTITION_MAX);
	/* a fixed credit beside an auto partition: valid (the choice fits
	 * the partition under it) */
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.params_credit_size",
	                                  "16K", "--set", err, sizeof(err)),
	                 PS_OK);
	assert_int_equal(ps_config_validate(&cfg, err, sizeof(err)), PS_OK);
	f = open_memstream(&ini, &inilen);
	assert_non_null(f);
	ps_config_write_ini(&cfg, f);
	fclose(f);
	assert_non_null(strstr(ini, "partition_size = auto\n"));
	assert_non_null(strstr(ini, "push_credit_size = auto\n"));
	assert_non_null(strstr(ini, "params_credit_size = 16K\n"));
	free(ini);
	/* no other size */
	assert_int_equal(ps_config_set_kv(&cfg, "transport.max_message",
	                                  "auto", "--set", err, sizeof(err)),
	                 PS_ECONFIG);
	assert_non_null(strstr(err, "transport.max_message: 'auto' is not a "
	                            "size"));
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.partition_size",
	                                  "automatic", "--set", err,
	                                  sizeof(err)),
	                 PS_ECONFIG);
	/* presets: ordo leaves both sizes to the start, p3 fixes them */
	assert_true(ps_config_preset_has_auto(PS_PRESET_ORDO));
	assert_false(ps_config_preset_has_auto(PS_PRESET_P3));
	ps_config_defaults(&cfg);
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.partition_size",
	                                  "2M", "--set", err, sizeof(err)),
	                 PS_OK);
	assert_int_equal(ps_config_set_kv(&cfg, "scheduling.preset", "ordo",
	                                  "--set", err, sizeof(err)),
	                 PS_OK);
	assert_int_equal(cfg.scheduling.partition_size, 2 << 20); /* kept */
	assert_true(cfg.scheduling.push.credit_size == PS_SIZE_AUTO);
	/* applying a preset sets all of its keys, the user's too */
	assert_int_equal(ps_config_apply_preset(&cfg, PS_PRESET_P3, err,
	                                        sizeof(err)),
	                 PS_OK);
	assert_int_equal(cfg.scheduling.preset, PS_PRESET_P3);
	assert_int_equal(cfg.scheduling.partition_size, 160 << 10);
	assert_int_equal(cfg.scheduling.push.credit_size, 160 << 10);
	assert_int_equal(ps_config_apply_preset(&cfg, PS_PRESET_COUNT, err,
	                                        sizeof(err)),
	                 PS_ECONFIG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_bdp_credit),
	    cmocka_unit_test(test_auto_sizes),
	    cmocka_unit_test(test_good_file),
	    cmocka_unit_test(test_demo_config),
	    cmocka_unit_test(test_file_errors),
	    cmocka_unit_test(test_size_values),
	    cmocka_unit_test(test_strings),
	    cmocka_unit_test(test_missing_file),
	    cmocka_unit_test(test_set_errors),
	    cmocka_unit_test(test_env),
	    cmocka_unit_test(test_precedence),
	    cmocka_unit_test(test_validate),
	    cmocka_unit_test(test_write_ini),
	    cmocka_unit_test(test_reference),
	    cmocka_unit_test(test_presets),
	    cmocka_unit_test(test_directions),
	    cmocka_unit_test(test_enum_name),
	    cmocka_unit_test(test_cli_help_version),
	    cmocka_unit_test(test_cli_parse),
	    cmocka_unit_test(test_job_nodes),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
