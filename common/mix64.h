/*
 * common/mix64.h - splitmix64's mixing function (Steele, Lea, Flood,
 * "Fast splittable pseudorandom number generators", OOPSLA 2014): a
 * 64-bit value to a well-scrambled one, for seeding and for small
 * deterministic shuffles.
 */
#ifndef ORDO_COMMON_MIX64_H
#define ORDO_COMMON_MIX64_H

#include <stdint.h>

#define PS_MIX64_GAMMA 0x9e3779b97f4a7c15ULL

/* splitmix64's output for state z (the state after its increment). */
static inline uint64_t ps_mix64(uint64_t z)
{
	z += PS_MIX64_GAMMA;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* The next value of a splitmix64 generator whose state is *x. */
static inline uint64_t ps_splitmix64(uint64_t *x)
{
	uint64_t r = ps_mix64(*x);

	*x += PS_MIX64_GAMMA;
	return r;
}

#endif
