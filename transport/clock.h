/*
 * transport/clock.h - the transports' reading of the monotonic clock, for
 * receive and connect deadlines. The transport sits below runtime/
 * (docs/architecture.md), whose runtime/clock.h the rest of a node uses.
 *
 * Threads: any.
 */
#ifndef ORDO_TRANSPORT_CLOCK_H
#define ORDO_TRANSPORT_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Milliseconds of CLOCK_MONOTONIC. */
static inline int64_t ps_transport_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif /* ORDO_TRANSPORT_CLOCK_H */
