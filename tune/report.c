/*
 * tune/report.c - tune.csv, best.ini, tune.png (report.h).
 *
 * Files are written to NAME.tmp and renamed, so a reader (or a run
 * stopped half-way) sees a whole file, old or new.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "common/log.h"
#include "tune/report.h"

static FILE *open_tmp(const char *dir, const char *name, char *tmp,
		      size_t cap)
{
	FILE *f;

	snprintf(tmp, cap, "%s/%s.tmp", dir, name);
	f = fopen(tmp, "w");
	if (!f)
		PS_ERROR("cannot write %s: %s", tmp, strerror(errno));
	return f;
}

static int close_tmp(FILE *f, const char *dir, const char *name,
		     const char *tmp)
{
	char path[PS_CFG_STR + 64];
	int bad = ferror(f);

	if (fclose(f) != 0 || bad) {
		PS_ERROR("cannot write %s", tmp);
		remove(tmp);
		return PS_EIO;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (rename(tmp, path) != 0) {
		PS_ERROR("cannot rename %s to %s: %s", tmp, path,
			 strerror(errno));
		return PS_EIO;
	}
	return PS_OK;
}

static void num(FILE *f, double v, const char *fmt)
{
	if (isfinite(v))
		fprintf(f, fmt, v);
	fputc(',', f);
}

int tune_write_csv(tuner *t, const char *dir)
{
	char tmp[PS_CFG_STR + 64];
	FILE *f = open_tmp(dir, "tune.csv", tmp, sizeof(tmp));
	double best = -INFINITY;

	if (!f)
		return PS_EIO;
	fprintf(f, "trial,partition_bytes,credit_bytes,status,samples_per_s,"
		"mean,sd,ei,best_so_far,how,switch_s,first_iteration,"
		"last_iteration,note\n");
	for (uint32_t i = 0; i < tuner_count(t); i++) {
		const tune_trial *tr = tuner_trial(t, i);
		if (tr->ok && tr->samples_per_s > best)
			best = tr->samples_per_s;
		fprintf(f, "%u,%llu,%llu,%s,", tr->index,
			(unsigned long long)tr->pair.partition,
			(unsigned long long)tr->pair.credit,
			tr->ok ? "ok" : "failed");
		num(f, tr->ok ? tr->samples_per_s : NAN, "%.2f");
		num(f, tr->mean, "%.2f");
		num(f, tr->sd, "%.2f");
		num(f, tr->ei, "%.4g");
		num(f, best, "%.2f");
		fprintf(f, "%s,", tr->how);
		num(f, tr->switch_s, "%.3f");
		fprintf(f, "%llu,%llu,\"", (unsigned long long)tr->first,
			(unsigned long long)tr->last);
		for (const char *c = tr->note; *c; c++)
			fputs(*c == '"' ? "\"\"" : (char[]){*c, 0}, f);
		fputs("\"\n", f);
	}
	return close_tmp(f, dir, "tune.csv", tmp);
}

int tune_write_best(tuner *t, const char *dir, const char *backend)
{
	char tmp[PS_CFG_STR + 64], part[32], credit[32];
	double mean = NAN, sd = NAN, avg, spread;
	const tune_trial *b = tuner_best(t, &mean, &sd);
	uint32_t times;
	char spread_s[48] = "";
	FILE *f;

	if (!b)
		return PS_ENOENT;
	times = tuner_pair_measured(t, b->pair, &avg, &spread);
	if (times > 1)
		snprintf(spread_s, sizeof(spread_s), ", sd %.1f", spread);
	f = open_tmp(dir, "best.ini", tmp, sizeof(tmp));
	if (!f)
		return PS_EIO;
	ps_config_format_size(b->pair.partition, part, sizeof(part));
	ps_config_format_size(b->pair.credit, credit, sizeof(credit));
	fprintf(f, "; ps-tune (%s): the best of %u trials: the largest "
		"posterior mean among the measured pairs\n"
		"; model: %.1f samples/s (sd %.1f); measured %u time(s) "
		"(first at trial %u): mean %.1f samples/s%s\n"
		"; use it: copy these lines into the job's file, or --set "
		"scheduling.partition_size=%s --set scheduling.credit_size=%s\n"
		"[scheduling]\npartition_size = %s\ncredit_size = %s\n",
		backend, tuner_count(t), mean, sd, times, b->index, avg,
		spread_s, part, credit, part, credit);
	return close_tmp(f, dir, "best.ini", tmp);
}

int tune_write_plot(tuner *t, const char *dir)
{
	char cmd[PS_CFG_STR * 2 + 256];
	const tune_trial *b = tuner_best(t, NULL, NULL);
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "gnuplot 2>'%s/tune.gnuplot.log'", dir);
	if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
		PS_WARN("gnuplot is not installed: no tune.png (tune.csv has "
			"every number; apt-get install gnuplot-nox)");
		return PS_ENOTSUP;
	}
	p = popen(cmd, "w");
	if (!p)
		return PS_EIO;
	fprintf(p,
		"set terminal pngcairo size 1400,600 font ',10'\n"
		"set output '%s/tune.png'\n"
		"set datafile separator ','\n"
		"set key off\n"
		"set multiplot layout 1,2 title 'ps-tune: %u trials'\n"
		"set title 'trials (label: trial; colour: samples/s; "
		"black ring: best)'\n"
		"set logscale xy 2\n"
		"set xlabel 'partition size (bytes)'\n"
		"set ylabel 'credit size (bytes)'\n"
		"set format xy '%%.0b%%BB'\n"
		"set xrange [%llu:%llu]\nset yrange [%llu:%llu]\n"
		"set colorbox\n"
		"plot '%s/tune.csv' every ::1 using 2:3:5 with points pt 7 "
		"ps 2.5 lc palette, "
		"'' every ::1 using 2:3:1 with labels offset 0,1.4, "
		"'' every ::1 using 2:(strcol(4) eq \"failed\" ? $3 : NaN) "
		"with points pt 2 ps 2.5 lc rgb 'red'",
		dir, tuner_count(t),
		(unsigned long long)tuner_bound(t, 0),
		(unsigned long long)tuner_bound(t, 1),
		(unsigned long long)tuner_bound(t, 2),
		(unsigned long long)tuner_bound(t, 3), dir);
	if (b)
		fprintf(p, ", '+' every ::0::0 using (%llu):(%llu) with "
			"points pt 6 ps 4 lw 2 lc rgb 'black'",
			(unsigned long long)b->pair.partition,
			(unsigned long long)b->pair.credit);
	fprintf(p,
		"\nunset logscale\nset format xy '%%g'\n"
		"set title 'best measured so far'\n"
		"set xlabel 'trial'\nset ylabel 'samples/s'\n"
		"set xtics 1\n"
		"plot '%s/tune.csv' every ::1 using 1:9 with linespoints "
		"pt 7 lw 2, '' every ::1 using 1:5 with points pt 1 ps 1.5\n"
		"unset multiplot\n",
		dir);
	st = pclose(p);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		PS_WARN("gnuplot failed: no tune.png (see %s/tune.gnuplot.log)",
			dir);
		return PS_EIO;
	}
	return PS_OK;
}
