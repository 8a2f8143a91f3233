/*
 * tune/report.h - what ps-tune leaves in output.dir (docs/tune.md):
 * tune.csv (every trial), best.ini (a config snippet with the best pair)
 * and tune.png (gnuplot: the trials on the partition x credit plane, and
 * the best-so-far curve).
 */
#ifndef ORDO_TUNE_REPORT_H
#define ORDO_TUNE_REPORT_H

#include "tune/tuner.h"

/* tune.csv, rewritten whole (after every trial: a stopped run keeps what
 * it measured). */
int tune_write_csv(tuner *t, const char *dir);

/* best.ini; PS_ENOENT when no trial was measured. */
int tune_write_best(tuner *t, const char *dir, const char *backend);

/* tune.png with gnuplot; PS_ENOTSUP (and a warning) without gnuplot. */
int tune_write_plot(tuner *t, const char *dir);

#endif /* ORDO_TUNE_REPORT_H */
