/*
 * common/signals.h - SIGINT/SIGTERM turned into a flag and a wake-up.
 *
 * Every binary installs these handlers first. A signal sets a flag that the
 * event loops poll, and wakes the registered transport so that a blocked
 * receive returns at once (ps_transport_wake is async-signal-safe).
 * SIGPIPE is ignored (errors come back as return codes).
 */
#ifndef ORDO_COMMON_SIGNALS_H
#define ORDO_COMMON_SIGNALS_H

#include "transport/transport.h"

void ps_signals_install(void);
/* The signal number received (SIGINT, SIGTERM), or 0. */
int ps_signal_pending(void);
/* Transport to wake on a signal (NULL: none). */
void ps_signals_set_wake(ps_transport *t);
/* Exit status for a process stopped by signal sig: 128 + sig. */
int ps_signal_exit_status(int sig);

#endif /* ORDO_COMMON_SIGNALS_H */
