/*
 * common/output.h - files in a run's output.dir (CSV records).
 */
#ifndef ORDO_COMMON_OUTPUT_H
#define ORDO_COMMON_OUTPUT_H

#include <stdio.h>

#include "common/config.h"

/* Opens output.dir/NAME for writing; NULL when output.dir is empty or the
 * file cannot be created (then a warning is logged). */
FILE *ps_output_open(const ps_config *cfg, const char *name);

#endif /* ORDO_COMMON_OUTPUT_H */
