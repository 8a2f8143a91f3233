/*
 * runtime/clock.h - the monotonic clock of real processes.
 *
 * Only the drivers (runtime/, transport/, the binaries) read a clock: the
 * core (proto/, scheduling/, sim/) is given time by whoever drives it
 * (docs/architecture.md).
 *
 * Threads: thread-safe.
 */
#ifndef ORDO_RUNTIME_CLOCK_H
#define ORDO_RUNTIME_CLOCK_H

#include <stdint.h>

/* Monotonic clock in nanoseconds / milliseconds. */
uint64_t ps_now_ns(void);
int64_t ps_now_ms(void);

#endif /* ORDO_RUNTIME_CLOCK_H */
