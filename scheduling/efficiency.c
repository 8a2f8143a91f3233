/*
 * scheduling/efficiency.c - TicTac's E and S (efficiency.h).
 */
#include <math.h>

#include "scheduling/efficiency.h"

double ps_ordering_efficiency(double compute_us, double comm_us, double t_us)
{
	double sum = compute_us + 2.0 * comm_us;
	double lower = compute_us > comm_us ? compute_us : comm_us;

	/* With no room for ordering (S near 0) E divides noise by nearly
	 * nothing: it is undefined there. */
	if (sum - lower <= 0.01 * lower)
		return NAN;
	return (sum - t_us) / (sum - lower);
}

double ps_speedup_bound(double compute_us, double comm_us)
{
	double sum = compute_us + 2.0 * comm_us;
	double lower = compute_us > comm_us ? compute_us : comm_us;

	return lower > 0.0 ? (sum - lower) / lower : 0.0;
}
