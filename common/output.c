/*
 * common/output.c - see output.h.
 */
#include <errno.h>
#include <string.h>

#include "common/log.h"
#include "common/output.h"

FILE *ps_output_open(const ps_config *cfg, const char *name)
{
	char path[PS_CFG_STR + 64];
	FILE *f;

	if (!cfg->output.dir[0])
		return NULL;
	snprintf(path, sizeof(path), "%s/%s", cfg->output.dir, name);
	f = fopen(path, "w");
	if (!f)
		PS_WARN("cannot write %s: %s", path, strerror(errno));
	return f;
}
