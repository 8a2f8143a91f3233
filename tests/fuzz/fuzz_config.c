/*
 * tests/fuzz/fuzz_config.c - libFuzzer harness for the configuration
 * parser (common/config.h): INI files (--config) and --set SECTION.KEY=VALUE.
 *
 * Input byte 0 picks the path. INI: the rest is a file; when it loads,
 * the oracle is that writing the configuration out and loading that again
 * gives the same text (ps_config_write_ini is what checkpoints and the
 * tuner store, so it must read back exactly). --set: the rest is lines of
 * "key=value", each given to ps_config_set_kv as --set would; then the
 * cross-field checks and the settling of presets run.
 */
#include <string.h>

#include "common/config.h"
#include "common/log.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

FUZZ_QUIET_INITIALIZE

/* The configuration written out as INI text (malloc'd) in *text_p. */
static size_t ini_text(const ps_config *cfg, char **text_p)
{
	size_t len = 0;
	FILE *f = open_memstream(text_p, &len);
	FUZZ_CHECK(f != NULL, "open_memstream");
	ps_config_write_ini(cfg, f);
	fclose(f);
	return len;
}

static void ini(const uint8_t *d, size_t n)
{
	char path[64], err[1024];
	ps_config cfg, again;
	int fd = fuzz_memfd(d, n, path, sizeof(path));
	if (fd < 0)
		return;
	ps_config_defaults(&cfg);
	int rc = ps_config_load_file(&cfg, path, err, sizeof(err));
	close(fd);
	if (rc != PS_OK) {
		FUZZ_CHECK(err[0] != '\0', "an error without a message");
		return;
	}
	(void)ps_config_validate(&cfg, err, sizeof(err));

	char *text = NULL, *text2 = NULL;
	size_t len = ini_text(&cfg, &text);
	fd = fuzz_memfd(text, len, path, sizeof(path));
	FUZZ_CHECK(fd >= 0, "memfd");
	ps_config_defaults(&again);
	rc = ps_config_load_file(&again, path, err, sizeof(err));
	close(fd);
	FUZZ_CHECK(rc == PS_OK, "the written configuration does not load: "
				"%s\n%s",
		   err, text);
	size_t len2 = ini_text(&again, &text2);
	FUZZ_CHECK(len == len2 && memcmp(text, text2, len) == 0,
		   "written, loaded and written again, the text differs");
	free(text);
	free(text2);
}

static void set(const uint8_t *d, size_t n)
{
	char err[1024];
	ps_config cfg;
	char *buf = malloc(n + 1);
	if (!buf)
		return;
	memcpy(buf, d, n);
	buf[n] = '\0';
	ps_config_defaults(&cfg);
	char *save = NULL;
	for (char *line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = '\0';
		if (ps_config_set_kv(&cfg, line, eq + 1, "--set", err,
				     sizeof(err)) != PS_OK)
			FUZZ_CHECK(err[0] != '\0', "an error without a message");
	}
	if (ps_config_validate(&cfg, err, sizeof(err)) == PS_OK)
		ps_config_finalize(&cfg);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		set(data + 1, size - 1);
	else
		ini(data + 1, size - 1);
	return 0;
}
