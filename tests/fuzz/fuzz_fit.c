/*
 * tests/fuzz/fuzz_fit.c - libFuzzer harness for ps-sim --fit's reader of
 * a link sweep (sim/fit.h: ps_link_fit_file, a CSV of bytes, concurrency,
 * us) and the least-squares fit behind it.
 *
 * Input: the CSV file.
 *
 * Oracle: every error has a message; a fit has a >= 0 and b > 0 (both
 * finite), gamma in [0.01, 100], r2 a number no larger than 1, at least
 * two rows at concurrency 1 and no more than the rows read. A fit whose
 * numbers are moderate is refitted from the times its own model predicts
 * (us = c*a + b*m*(1 + (c - 1)*gamma) at three sizes, concurrency 1, 2
 * and 4): the same a, b and gamma come back.
 */
#include <math.h>
#include <string.h>

#include "common/log.h"
#include "sim/fit.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

FUZZ_QUIET_INITIALIZE

/* x and y agree to 1e-6 of scale (or of themselves, when larger) */
static int close_to(double x, double y, double scale)
{
	return fabs(x - y) <= 1e-6 * fmax(scale, fmax(fabs(x), fabs(y)));
}

/* The model's own predictions fit to the same parameters. */
static void check_refit(const ps_link_fit *f)
{
	static const double sizes[3] = {1e3, 1e5, 1e7}, concs[3] = {1, 2, 4};
	double bytes[9], conc[9], us[9];
	char why[512];
	ps_link_fit g;

	if (!(f->a_us < 1e6 && f->b_us_per_byte > 1e-6 &&
	      f->b_us_per_byte < 1e3 && f->gamma > 0.01 && f->gamma < 100))
		return;
	for (int i = 0; i < 9; i++) {
		double m = sizes[i % 3], c = concs[i / 3];
		bytes[i] = m;
		conc[i] = c;
		us[i] = c * f->a_us +
			f->b_us_per_byte * m * (1 + (c - 1) * f->gamma);
	}
	FUZZ_CHECK(ps_link_fit_rows(bytes, conc, us, 9, &g, why,
				    sizeof(why)) == PS_OK,
		   "the model's own times do not fit: %s", why);
	/* a next to the longest time: the fit's rounding is relative to it */
	FUZZ_CHECK(close_to(g.a_us, f->a_us, us[8]) &&
			   close_to(g.b_us_per_byte, f->b_us_per_byte, 0) &&
			   close_to(g.gamma, f->gamma, 0),
		   "a %g b %g gamma %g refit as a %g b %g gamma %g", f->a_us,
		   f->b_us_per_byte, f->gamma, g.a_us, g.b_us_per_byte,
		   g.gamma);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], why[1024];
	ps_link_fit f;

	int fd = fuzz_memfd(data, size, path, sizeof(path));
	if (fd < 0)
		return 0;
	why[0] = '\0';
	int rc = ps_link_fit_file(path, &f, why, sizeof(why));
	close(fd);
	if (rc != PS_OK) {
		FUZZ_CHECK(why[0] != '\0', "an error without a message");
		return 0;
	}
	FUZZ_CHECK(isfinite(f.a_us) && f.a_us >= 0, "a = %g", f.a_us);
	FUZZ_CHECK(isfinite(f.b_us_per_byte) && f.b_us_per_byte > 0, "b = %g",
		   f.b_us_per_byte);
	FUZZ_CHECK(f.gamma >= 0.01 && f.gamma <= 100, "gamma = %g", f.gamma);
	FUZZ_CHECK(!isnan(f.r2) && f.r2 <= 1.0 + 1e-9, "r2 = %g", f.r2);
	FUZZ_CHECK(f.rows_single >= 2 && f.rows_single <= f.rows,
		   "%u rows at concurrency 1 of %u", f.rows_single, f.rows);
	check_refit(&f);
	return 0;
}
